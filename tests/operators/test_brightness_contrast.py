"""fn.brightness_contrast, fn.brightness and fn.contrast against DALI's formula on real photos:
the contrast centre by input type (128 for uint8), the output range by output type, rounding
half away from zero, per-sample arguments (contrast_center too), the 256-entry table of uint8
inputs against the element-wise formula, bad arguments and inputs, and GPU = CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import augkit.eager
from augkit import types
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.color.brightness_contrast import level_table
from augkit.operators.color.cast import convert_sat
from tests.operator_check import check_operator, gpu_matches_cpu, run_operator


def formula(
    x: np.ndarray,
    brightness: float = 1.0,
    brightness_shift: float = 0.0,
    contrast: float = 1.0,
    center: float = 128.0,
    out_range: float = 255.0,
) -> np.ndarray:
    """DALI's documented formula, in float64."""
    x = np.asarray(x, np.float64)
    return brightness_shift * out_range + brightness * (center + contrast * (x - center))


def in_float32(
    x: np.ndarray,
    brightness: float,
    brightness_shift: float,
    contrast: float,
    center: float = 128.0,
    out_range: float = 255.0,
) -> np.ndarray:
    """The formula as DALI evaluates it (section 6 of docs/dali_facts.md): ``x * mul + add`` in
    float32, ``mul = b * c``, ``add = shift * range + b * (center - c * center)``. Where the exact
    result is a half, float32 decides the side, so this is the reference for arbitrary values."""
    f = np.float32
    mul = f(brightness) * f(contrast)
    add = f(brightness_shift) * f(out_range) + f(brightness) * (f(center) - f(contrast) * f(center))
    return np.asarray(x).astype(np.float32) * mul + add


def to_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(values + 0.5), 0, 255).astype(np.uint8)


def test_zero_contrast_gives_the_uint8_centre_128(photos: list[np.ndarray]) -> None:
    check_operator(
        "brightness_contrast",
        [photos],
        lambda x, **_: np.full_like(x, 128),
        layout="HWC",
        args={"contrast": 0.0},
        expected_layout="HWC",
    )


def test_halves_round_away_from_zero(photos: list[np.ndarray]) -> None:
    # 128 + 0.5 * (x - 128) = 64 + x / 2: every odd pixel lands on a half.
    check_operator(
        "brightness_contrast",
        [photos],
        lambda x, **_: to_uint8(formula(x, contrast=0.5)),
        layout="HWC",
        args={"contrast": 0.5},
    )


def test_per_sample_brightness_contrast_and_shift(photos: list[np.ndarray]) -> None:
    n = len(photos)
    brightness = [np.float32(0.6 + 0.2 * i) for i in range(n)]
    contrast = [np.float32(1.4 - 0.15 * i) for i in range(n)]
    shift = [np.float32(0.05 * (i - 2)) for i in range(n)]

    def reference(x: np.ndarray, brightness: Any, contrast: Any, brightness_shift: Any, **_: Any):
        return to_uint8(in_float32(x, brightness, brightness_shift, contrast))

    check_operator(
        "brightness_contrast",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"brightness": brightness, "contrast": contrast, "brightness_shift": shift},
    )


def test_float_input_uses_centre_half_and_range_one(photos: list[np.ndarray]) -> None:
    floats = [p.astype(np.float32) / np.float32(255) for p in photos]
    check_operator(
        "brightness_contrast",
        [floats],
        lambda x, **_: formula(x, 1.1, 0.05, 1.7, center=0.5, out_range=1.0).astype(np.float32),
        layout="HWC",
        args={"brightness": 1.1, "brightness_shift": 0.05, "contrast": 1.7},
        atol=1e-5,
    )


def test_uint8_to_float_is_not_rescaled(photos: list[np.ndarray]) -> None:
    check_operator(
        "brightness_contrast",
        [photos],
        lambda x, **_: formula(x, 0.9, 0.25, 1.2, out_range=1.0).astype(np.float32),
        layout="HWC",
        args={"brightness": 0.9, "brightness_shift": 0.25, "contrast": 1.2, "dtype": types.FLOAT},
        atol=1e-4,
    )


@pytest.mark.parametrize(("dtype", "center"), [(np.int16, 16384.0), (np.int32, 2.0**30)])
def test_integer_centres_and_ranges(photos: list[np.ndarray], dtype: type, center: float) -> None:
    data = [(p.astype(np.int64) * 97).astype(dtype) for p in photos]
    top = float(np.iinfo(dtype).max)

    def reference(x: np.ndarray, **_: Any) -> np.ndarray:
        values = in_float32(x, 1.0, 0.01, 0.5, center=center, out_range=top)
        return np.clip(np.floor(values.astype(np.float64) + 0.5), 0, top).astype(dtype)

    check_operator(
        "brightness_contrast",
        [data],
        reference,
        args={"brightness_shift": 0.01, "contrast": 0.5},
    )


def test_explicit_contrast_center(photos: list[np.ndarray]) -> None:
    check_operator(
        "brightness_contrast",
        [photos],
        lambda x, **_: to_uint8(formula(x, contrast=2.0, center=100.0)),
        layout="HWC",
        args={"contrast": 2.0, "contrast_center": 100.0},
    )


def test_per_sample_contrast_center(photos: list[np.ndarray]) -> None:
    centers = [np.float32(v) for v in (0.0, 64.0, 127.5, 200.0, 255.0, 31.25)][: len(photos)]

    def reference(x: np.ndarray, contrast_center: Any, **_: Any) -> np.ndarray:
        return to_uint8(in_float32(x, 1.0, 0.0, 1.8, center=contrast_center))

    check_operator(
        "brightness_contrast",
        [photos],
        reference,
        layout="HWC",
        args={"contrast": 1.8},
        arg_inputs={"contrast_center": centers},
    )


@pytest.mark.parametrize(
    "dtype",
    [
        types.UINT8,
        types.INT8,
        types.INT16,
        types.INT32,
        types.UINT32,
        types.INT64,
        types.FLOAT,
        types.FLOAT64,
    ],
)
def test_uint8_table_equals_the_element_wise_formula(photos: list[np.ndarray], dtype: Any) -> None:
    # uint8 inputs go through a 256-entry table (cv2.LUT for uint8 outputs): every value it can
    # take must be what the float32 formula gives element by element, halves and saturation
    # included.
    levels = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    settings = dict(brightness=1.37, brightness_shift=-0.11, contrast=2.3, contrast_center=99.5)
    out = augkit.eager.brightness_contrast(levels, dtype=dtype, **settings)
    kind = np.dtype(dtype.numpy).kind
    top = 1.0 if kind == "f" else float(np.iinfo(dtype.numpy).max)
    exact = in_float32(levels, 1.37, -0.11, 2.3, center=99.5, out_range=top)
    np.testing.assert_array_equal(out, convert_sat(exact, dtype.numpy))
    assert out.dtype == dtype.numpy


@pytest.mark.parametrize(
    ("mul", "add"),
    [
        *[(0.5, 64.0), (1.0, 0.5), (1.0, -0.5), (0.5, 0.49999997), (-1.0, 255.5)],
        *[(3.7, -300.2), (1e30, 0.0), (-1e30, 5.0), (np.inf, 0.0), (0.0, np.nan), (2.0, -np.inf)],
    ],
)
def test_uint8_level_table_is_convert_sat(mul: float, add: float) -> None:
    levels = np.arange(256, dtype=np.float32)
    with np.errstate(all="ignore"):
        expected = convert_sat(levels * np.float32(mul) + np.float32(add), np.uint8)
        got = level_table(np.float32(mul), np.float32(add), np.dtype(np.uint8))
    np.testing.assert_array_equal(got, expected)


def test_brightness_alone(photos: list[np.ndarray]) -> None:
    n = len(photos)
    brightness = [np.float32(0.5 + 0.3 * i) for i in range(n)]
    shift = [np.float32(0.1 * i - 0.2) for i in range(n)]

    def reference(x: np.ndarray, brightness: Any, brightness_shift: Any, **_: Any) -> np.ndarray:
        # out = shift * 255 + brightness * in (contrast 1: centre - 1 * centre = 0), in float32:
        # the float64 formula lands on the other side of a half where float32 rounds.
        return to_uint8(in_float32(x, brightness, brightness_shift, 1.0))

    check_operator(
        "brightness",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"brightness": brightness, "brightness_shift": shift},
        expected_layout="HWC",
    )


def test_brightness_to_float_keeps_the_levels(photos: list[np.ndarray]) -> None:
    check_operator(
        "brightness",
        [photos],
        lambda x, **_: np.float32(1.5) * x.astype(np.float32) + np.float32(0.5),
        layout="HWC",
        args={"brightness": 1.5, "brightness_shift": 0.5, "dtype": types.FLOAT},
    )


def test_contrast_alone_per_sample(photos: list[np.ndarray]) -> None:
    n = len(photos)
    contrast = [np.float32(0.25 + 0.5 * i) for i in range(n)]
    centers = [np.float32(30.0 + 40 * i) for i in range(n)]

    def reference(x: np.ndarray, contrast: Any, contrast_center: Any, **_: Any) -> np.ndarray:
        return to_uint8(in_float32(x, 1.0, 0.0, contrast, center=contrast_center))

    check_operator(
        "contrast",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"contrast": contrast, "contrast_center": centers},
    )


def test_contrast_of_floats_centres_on_half() -> None:
    x = np.linspace(0, 1, 60, dtype=np.float32).reshape(4, 5, 3)
    out = augkit.eager.contrast(x, contrast=0.0)
    np.testing.assert_array_equal(out, np.full_like(x, 0.5))


def test_separate_operators_take_only_their_arguments(photos: list[np.ndarray]) -> None:
    with pytest.raises(ArgumentError, match="Brightness: unknown argument 'contrast'"):
        augkit.eager.brightness(photos[0], contrast=0.5)
    with pytest.raises(ArgumentError, match="Contrast: unknown argument 'brightness'"):
        augkit.eager.contrast(photos[0], brightness=0.5)


def test_empty_and_non_contiguous_inputs(photos: list[np.ndarray]) -> None:
    empty = np.zeros((0, 4, 3), np.uint8)
    assert augkit.eager.brightness_contrast(empty, contrast=2.0).shape == (0, 4, 3)
    view = photos[0][::2, ::-3]
    out = augkit.eager.brightness_contrast(view, contrast=0.5)
    np.testing.assert_array_equal(out, to_uint8(formula(view, contrast=0.5)))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"brightness": "bright"}, "BrightnessContrast: argument 'brightness': expected a number"),
        ({"contrast": float("nan")}, "argument 'contrast': expected a finite number"),
        ({"dtype": types.BOOL}, "argument 'dtype': the output must be numbers"),
        ({"contrast_center": [1, 2]}, "argument 'contrast_center'"),
    ],
)
def test_bad_arguments_are_named(photos: list[np.ndarray], args: dict, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        run_operator("brightness_contrast", [photos[:1]], layout="HWC", args=args)


def test_non_numeric_input_is_refused() -> None:
    flags = [np.ones((4, 4, 3), bool)]
    with pytest.raises(OperatorError, match="brightness needs numbers, got bool data"):
        run_operator("brightness", [flags], layout="HWC", args={"brightness": 2.0})


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    gpu_matches_cpu(
        "brightness_contrast",
        photos,
        layout="HWC",
        args={"contrast": 0.5, "brightness_shift": 0.1},
        arg_inputs={"brightness": [np.float32(0.5 + 0.1 * i) for i in range(len(photos))]},
    )


# --- the fast paths: convertScaleAbs where it is exact, the batch kernel -----------------------


def _run_batch(name: str, batch: Any, args: dict, draws: dict, threads: int = 2) -> list:
    """``name`` in a pipeline whose source gives ``batch`` (an array: a dense batch, the batch
    kernel; a list: the per-sample kernel), with per-sample uniform draws for ``draws``."""
    from augkit import fn
    from augkit.pipeline import Pipeline

    n = len(batch)
    pipe = Pipeline(batch_size=n, num_threads=threads, device_id=None, seed=7)
    with pipe:
        x = fn.external_source(source=lambda: batch, batch=True, layout="HWC")
        drawn = {k: fn.random.uniform(range=r) for k, r in draws.items()}
        pipe.set_outputs(getattr(fn, name)(x, **args, **drawn))
    pipe.build()
    (out,) = pipe.run()
    return [np.asarray(out[i]) for i in range(n)]


@pytest.mark.parametrize(
    ("name", "args", "draws"),
    [
        ("brightness", {}, {"brightness": (0.8, 1.2)}),
        ("contrast", {}, {"contrast": (0.0, 2.0)}),
        ("brightness_contrast", {}, {"brightness": (-1.0, 2.0), "contrast": (-1.0, 2.0)}),
        ("brightness_contrast", {"contrast": 0.5}, {"brightness_shift": (-0.3, 0.3)}),
        ("brightness_contrast", {"brightness": 0.5}, {"contrast_center": (0.0, 255.0)}),
        ("brightness", {"dtype": types.FLOAT}, {"brightness": (0.5, 1.5)}),
        ("contrast", {"dtype": types.INT16}, {"contrast": (0.0, 3.0)}),
        ("brightness", {"brightness": 1e300, "dtype": types.FLOAT}, {}),
    ],
)
def test_batch_kernel_equals_per_sample_kernel(
    photos: list[np.ndarray], name: str, args: dict, draws: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from augkit.operators.color.brightness_contrast import BrightnessContrast

    taken: list[bool] = []
    batch_kernel = BrightnessContrast.cpu_batch

    def spy(self, ctx, inputs, arg_inputs):
        out = batch_kernel(self, ctx, inputs, arg_inputs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(BrightnessContrast, "cpu_batch", spy)
    side = min(min(p.shape[:2]) for p in photos)
    batch = np.stack([p[:side, :side] for p in photos] * 2)
    single = _run_batch(name, list(batch), args, draws, threads=1)
    assert not any(taken)  # a list of samples: the per-sample kernel
    taken.clear()
    dense = _run_batch(name, batch, args, draws)
    assert taken and all(taken)  # a dense batch: the batch kernel
    for a, b in zip(dense, single, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    if "dtype" not in args and not draws.keys() & {"contrast_center"}:
        assert any(not np.array_equal(a, p) for a, p in zip(dense, batch, strict=True))


def test_scale_abs_plan_gives_exactly_the_table() -> None:
    """convertScaleAbs, where the plan takes it, is the table for every level, through its SIMD
    body and its scalar tail (odd lengths), for ties, darkening shifts and high contrast; the
    plan declines what it cannot match (decreasing tables)."""
    from augkit.operators.color.brightness_contrast import BrightnessContrast, multiply_add
    from augkit.operators.registry import resolve

    impl = BrightnessContrast(resolve("brightness_contrast"), {}, "bc", 0, "cpu", 1)
    rng = np.random.default_rng(5)
    levels = np.tile(np.arange(256, dtype=np.uint8), 37)[:9001]
    taken = 0
    for _ in range(1500):
        b = float(rng.choice([rng.uniform(0, 2), 0.5, 1.5, rng.integers(0, 9) / 4]))
        c = float(rng.choice([rng.uniform(0, 2), 0.5, 1.25, rng.integers(0, 9) / 4]))
        shift = float(rng.choice([0.0, rng.uniform(-0.3, 0.3), -0.125]))
        mul, add = multiply_add(np.uint8, np.uint8, b, shift, c, None)
        table = level_table(mul, add, np.dtype(np.uint8))
        if impl.scale_abs_plan(mul, add, table) is None:
            continue
        taken += 1
        out = impl.apply(levels, mul, add, table)
        np.testing.assert_array_equal(out, table[levels])
        into = np.empty_like(levels)
        assert np.shares_memory(impl.apply(levels, mul, add, table, into), into)
        np.testing.assert_array_equal(into, table[levels])
    assert taken > 1000
    mul, add = multiply_add(np.uint8, np.uint8, -1.0, 0.0, 1.0, None)
    assert impl.scale_abs_plan(mul, add, level_table(mul, add, np.dtype(np.uint8))) is None
