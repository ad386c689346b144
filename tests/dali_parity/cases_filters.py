"""Parity cases of the filters: ``fn.gaussian_blur``, ``fn.laplacian`` and ``fn.filter``.

(``fn.experimental.median_blur``, ``dilate`` and ``erode`` run on DALI's GPU only: their
references are scipy.ndimage, in ``tests/operators/test_morphology.py``.)
"""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

# uint8 gaussian blurs: a level on at most 2 pixels a sample, on any CPU (see base.py).
_ROUNDING = {
    "max_diff": 1,
    "differing": 2,
    "reason": "float32 sums in OpenCV's order (sepFilter2D), not DALI's loop: a level where a "
    "value is next to a half. Which pixels depends on the CPU's dispatch: the window's float32 "
    "exp is NumPy's SIMD loop (its AVX2/AVX-512 and baseline loops differ in the last bit), and "
    "sepFilter2D fuses multiply-adds with AVX2, not with SSE4.x; seen: at most 2 pixels a sample "
    "(gaussian_chw with NumPy's baseline loops), 1 here",
}
_FLOAT_SUMS = (
    "float32 sums in OpenCV's order (sepFilter2D), not DALI's loop; the last bits move with the "
    "CPU's dispatch (FMA with AVX2, NumPy's exp for the window), within the bound on every one"
)


def _kernels(fn, shapes_and_seeds):
    """Per-sample float32 filters, drawn from fixed seeds (the same in both libraries)."""
    filters = []
    for shape, seed in shapes_and_seeds:
        values = np.random.default_rng(seed).uniform(-0.5, 1.0, shape)
        filters.append((values / values.sum()).astype(np.float32))
    return per_sample(fn, filters)


_BOX3 = [((3, 3), 1), ((3, 3), 2), ((3, 3), 3), ((3, 3), 4)]
_MIXED = [((3, 5), 5), ((5, 3), 6), ((1, 7), 7), ((4, 4), 8)]


CASES = [
    # --- gaussian_blur
    ParityCase(
        "gaussian_sigma1",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.0),
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_sigma_per_axis",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=(0.7, 2.3)),
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_only",
        lambda fn, types, x: fn.gaussian_blur(x, window_size=5),
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_and_sigma",
        lambda fn, types, x: fn.gaussian_blur(x, window_size=(3, 7), sigma=(1.5, 0.5)),
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_float_output",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.2, dtype=types.FLOAT),
        max_diff=1e-4,
        mean_diff=1e-5,
        reason=_FLOAT_SUMS,
    ),
    ParityCase(
        "gaussian_float_input",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=2.0),
        input="float",
        max_diff=5e-7,
        mean_diff=5e-8,
        reason=_FLOAT_SUMS,
    ),
    ParityCase(
        "gaussian_chw",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.5),
        input="chw",
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_per_sample_sigma",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=per_sample(fn, [0.5, 1.0, 2.0, 3.5])),
        input="gray",
        **_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_beyond_image",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=3.0),
        input="matrices",
        max_diff=5e-7,
        mean_diff=2e-7,
        reason=_FLOAT_SUMS,
        note="no layout: 2 data axes; 19 taps on 2..5 pixels reflect many times",
    ),
    ParityCase(
        "gaussian_vectors",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.0),
        input="vectors",
        max_diff=5e-7,
        mean_diff=1e-7,
        reason=_FLOAT_SUMS,
        note="1 data axis",
    ),
    # --- laplacian
    ParityCase(
        "laplacian_default",
        lambda fn, types, x: fn.laplacian(x),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_float_output",
        lambda fn, types, x: fn.laplacian(x, window_size=5, dtype=types.FLOAT),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_no_smoothing",
        lambda fn, types, x: fn.laplacian(x, smoothing_size=1, dtype=types.FLOAT),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_smoothing_per_axis",
        lambda fn, types, x: fn.laplacian(
            x, window_size=(3, 7), smoothing_size=(5, 1), dtype=types.FLOAT
        ),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_normalized",
        lambda fn, types, x: fn.laplacian(x, window_size=5, normalized_kernel=True),
        note="power-of-two scales: exact",
    ),
    ParityCase(
        "laplacian_scale_float",
        lambda fn, types, x: fn.laplacian(x, scale=(0.5, 2.0)),
        input="float",
        max_diff=2e-6,
        mean_diff=2e-7,
        reason="float32 sums in OpenCV's order (sepFilter2D), not DALI's loop; OpenCV fuses the "
        "multiply-adds with AVX2, not with SSE4.x: within the bound on either",
    ),
    ParityCase(
        "laplacian_per_sample_window",
        lambda fn, types, x: fn.laplacian(
            x, window_size=per_sample(fn, [3, 5, 7, 9], np.int32), dtype=types.FLOAT
        ),
        input="gray",
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_chw",
        lambda fn, types, x: fn.laplacian(x, window_size=3, scale=0.25),
        input="chw",
        note="integer windows, power-of-two scale: exact",
    ),
    # --- filter (the _MIXED uint8 cases run filter2D's direct loop, whose multiply-adds depend
    # on the CPU's dispatch as filter_per_sample_3x3's do, but no value of theirs is next to a
    # half: bit for bit DALI's on every dispatch measured, see base.py)
    ParityCase(
        "filter_per_sample_3x3",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _BOX3)),
        max_diff=1,
        differing=1,
        reason="cv2.filter2D, as DALI's CPU filter, whose float32 multiply-adds depend on the "
        "CPU's dispatch: fused (FMA) with AVX2 or AVX-512: bit for bit DALI's; "
        "not fused with SSE4.x/AVX (or cv2.setUseOptimized(False)): 1 pixel a level off",
    ),
    ParityCase(
        "filter_shapes_float_output",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), dtype=types.FLOAT),
        max_diff=1.25e-4,
        mean_diff=3e-5,
        reason="cv2.filter2D, as DALI's CPU filter, into float32: whether its multiply-adds are "
        "fused (FMA) follows the CPU's dispatch and, run to run, the arrays' alignment (the "
        "vector loop's first element): an ulp of the output (3.05e-5 at 256) on some values "
        "(seen in one of two runs on one AMD EPYC, and under the AVX2 dispatch)",
    ),
    ParityCase(
        "filter_anchor",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED[:1] * 4), anchor=(0, 3)),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_reflect_1001",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="reflect_1001"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_wrap",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="wrap"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_clamp",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="clamp"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_constant_zero",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="constant"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_constant_fill",
        lambda fn, types, x: fn.filter(
            x,
            _kernels(fn, _MIXED),
            per_sample(fn, [0, 100, 200, 255], np.uint8),
            border="constant",
        ),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_valid",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), mode="valid"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_float_input",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _BOX3), border="wrap"),
        input="float",
        max_diff=6e-7,
        mean_diff=5e-8,
        reason="cv2.filter2D, as DALI's CPU filter, with its float32 multiply-adds fused (FMA) or "
        "not by the CPU's dispatch: with AVX2 or AVX-512 an ulp or two off DALI's on 1% "
        "of the values, without FMA (SSE4.x/AVX) 6e-7 at most, on up to 56%, mean 4.2e-8",
    ),
    ParityCase(
        "filter_chw",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED)),
        input="chw",
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_gray_large",
        lambda fn, types, x: fn.filter(x, _kernels(fn, [((15, 11), 9)] * 4)),
        input="gray",
        max_diff=1,
        differing=1,
        reason="cv2.filter2D, as DALI's CPU filter, correlates 130 taps or more through a DFT, "
        "whose float32 rounding follows the CPU dispatch of the Intel IPP inside OpenCV: "
        "AVX-512 IPP (k0) or no IPP: bit for bit DALI's; AVX2 (l9, an AVX2-only CPU) or "
        "SSE4.2 (y8) IPP: 1 pixel a level off (118.500015 becomes 118.5, rounded to even)",
    ),
]
