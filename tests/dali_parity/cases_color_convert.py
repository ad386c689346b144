"""Parity cases of the colour-conversion family: ``fn.normalize``, ``fn.color_space_conversion``,
``fn.lookup_table``, ``fn.equalize`` and ``fn.clahe``."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

_MEANS = [[[[120.0, 110.0, 100.0]]], [[[10.0, 20.0, 30.0]]], [[[200.0, 0.0, 90.0]]], [[[0.0] * 3]]]

CASES = [
    ParityCase(
        "normalize_default",
        lambda fn, types, x: fn.normalize(x),
        max_diff=1e-6,
        mean_diff=2.5e-7,
        reason="float32 sums (DALI) vs float64 (augkit), DALI's approximate rsqrt",
    ),
    ParityCase(
        "normalize_per_channel",
        lambda fn, types, x: fn.normalize(x, axis_names="HW"),
        max_diff=2e-6,
        mean_diff=1.5e-7,
        reason="float32 sums (DALI) vs float64 (augkit), DALI's approximate rsqrt",
    ),
    ParityCase(
        "normalize_ddof_epsilon_scale_shift",
        lambda fn, types, x: fn.normalize(
            x, axes=(0, 1), ddof=1, epsilon=0.01, scale=2.0, shift=1.0
        ),
        input="float",
        max_diff=2e-6,
        mean_diff=5e-7,
        reason="float32 sums (DALI) vs float64 (augkit), DALI's approximate rsqrt",
    ),
    ParityCase(
        "normalize_given_uint8",
        lambda fn, types, x: fn.normalize(
            x, mean=100.0, stddev=50.0, scale=64.0, shift=128.0, dtype=types.UINT8
        ),
    ),
    ParityCase(
        "normalize_given_mean_int16",
        lambda fn, types, x: fn.normalize(x, mean=127.5, scale=1000.0, dtype=types.INT16),
        max_diff=0,
        mean_diff=0.0,
        note="computed stddev: exact on these inputs",
    ),
    ParityCase(
        "normalize_tensor_mean",
        lambda fn, types, x: fn.normalize(x, mean=per_sample(fn, _MEANS), stddev=64.0),
        max_diff=0,
        mean_diff=0.0,
        note="float32 arithmetic in DALI's order",
    ),
    ParityCase(
        "normalize_batch",
        lambda fn, types, x: fn.normalize(x, batch=True, axis_names="HW"),
        input="float",
        max_diff=1e-6,
        mean_diff=1e-7,
        reason="float32 sums (DALI) vs float64 (augkit), DALI's approximate rsqrt",
    ),
    ParityCase(
        "normalize_vectors",
        lambda fn, types, x: fn.normalize(x, epsilon=1.0),
        input="vectors",
        max_diff=5e-7,
        mean_diff=2e-7,
        reason="float32 sums (DALI) vs float64 (augkit), DALI's approximate rsqrt",
    ),
]

_LUT_KEYS = list(range(0, 256, 3))
_LUT_VALUES = [((k * 37) % 256) - 20.5 for k in _LUT_KEYS]


_YCBCR = (
    "BT.601 in float32 (luma: OpenCV's fixed point); YCbCr: a level at 1-2 near-ties in 15,000 "
    "pixels (DALI's order of float32 operations; cv2.transform fuses multiply-adds with AVX2, "
    "not with SSE4.x, which moves one of them)"
)


def _csc(src: str, dst: str, input: str = "images", max_diff: int = 0) -> ParityCase:
    return ParityCase(
        f"color_space_{src}_to_{dst}",
        lambda fn, types, x: fn.color_space_conversion(
            x, image_type=getattr(types, src), output_type=getattr(types, dst)
        ),
        input=input,
        max_diff=max_diff,
        mean_diff=2e-4 if max_diff else None,
        reason=_YCBCR if max_diff else "",
        note="" if max_diff else "BT.601 (luma: OpenCV's fixed point)",
    )


CASES += [
    _csc("RGB", "BGR"),
    _csc("BGR", "RGB"),
    _csc("RGB", "GRAY"),
    _csc("BGR", "GRAY"),
    _csc("RGB", "YCbCr", max_diff=1),
    _csc("BGR", "YCbCr"),
    _csc("YCbCr", "RGB", max_diff=1),
    _csc("YCbCr", "BGR", max_diff=1),
    _csc("YCbCr", "GRAY"),
    _csc("GRAY", "RGB", "gray"),
    _csc("GRAY", "BGR", "gray"),
    _csc("GRAY", "YCbCr", "gray"),
    ParityCase(
        "lookup_table_float",
        lambda fn, types, x: fn.lookup_table(
            x, keys=_LUT_KEYS, values=_LUT_VALUES, default_value=-1.25
        ),
    ),
    ParityCase(
        "lookup_table_uint8_saturated",
        lambda fn, types, x: fn.lookup_table(
            x,
            keys=[0, 10, 100, 10, 200],
            values=[2.5, 300.0, -7.5, 3.5, 128.0],
            default_value=7.5,
            dtype=types.UINT8,
        ),
        note="the last value of a repeated key wins; values rounded half away and saturated",
    ),
    ParityCase(
        "lookup_table_int16_chw",
        lambda fn, types, x: fn.lookup_table(
            x, keys=list(range(128)), values=[-k * 100.0 for k in range(128)], dtype=types.INT16
        ),
        input="chw",
    ),
    ParityCase("equalize_hwc", lambda fn, types, x: fn.equalize(x)),
    ParityCase("equalize_gray", lambda fn, types, x: fn.equalize(x), input="gray"),
    ParityCase("equalize_chw", lambda fn, types, x: fn.equalize(x), input="chw"),
    ParityCase(
        "clahe_luma",
        lambda fn, types, x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0),
        note="OpenCV's CLAHE on the L of Lab, as DALI's CPU kernel",
    ),
    ParityCase(
        "clahe_per_channel",
        lambda fn, types, x: fn.clahe(x, tiles_x=4, tiles_y=3, clip_limit=3.0, luma_only=False),
    ),
    ParityCase(
        "clahe_gray_bins",
        lambda fn, types, x: fn.clahe(x, tiles_x=5, tiles_y=7, clip_limit=1.5, bins=128),
        input="gray",
        note="bins does not change DALI's CPU output",
    ),
    ParityCase(
        "clahe_unclipped",
        lambda fn, types, x: fn.clahe(x, tiles_x=2, tiles_y=3, clip_limit=0.0),
    ),
]
