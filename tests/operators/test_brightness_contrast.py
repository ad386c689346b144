"""fn.brightness_contrast against DALI's formula on real photos: the contrast centre by input
type (128 for uint8), the output range by output type, rounding half away from zero, per-sample
arguments, and GPU = CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import types
from tests.operator_check import check_operator, gpu_matches_cpu


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


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    gpu_matches_cpu(
        "brightness_contrast",
        photos,
        layout="HWC",
        args={"contrast": 0.5, "brightness_shift": 0.1},
        arg_inputs={"brightness": [np.float32(0.5 + 0.1 * i) for i in range(len(photos))]},
    )
