"""fn.hsv, fn.hue, fn.saturation and fn.color_twist on real photos, against the YIQ maths written
out in NumPy float64 (within one level: DALI's float32 rounds near halves), DALI's exact float32
recipe (bit for bit), and the documented edge cases: identity settings, grey at saturation 0,
hue wrapping around, the offset's half of 128 for every integer type, dtype defaults (hsv:
UINT8), sequences, NaN, and bad arguments and inputs that name the operator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import augkit.eager
from augkit import types
from augkit.errors import ArgumentError, GraphError, OperatorError
from augkit.operators.color.cast import convert_sat
from augkit.operators.color.color_twist import YIQ_TO_RGB, _to_uint8, color_matrix
from tests.operator_check import check_operator, run_operator

RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])


def yiq_matrix(
    hue: float = 0.0,
    saturation: float = 1.0,
    value: float = 1.0,
    brightness: float = 1.0,
    contrast: float = 1.0,
) -> np.ndarray:
    """The documented transform in float64: back from YIQ after rotating I and Q by ``hue``
    degrees and scaling them by ``saturation``, all scaled by value, brightness and contrast."""
    h = math.radians(hue)
    rotate = np.array(
        [[1, 0, 0], [0, math.cos(h), math.sin(h)], [0, -math.sin(h), math.cos(h)]], np.float64
    )
    scale = np.diag([1.0, saturation, saturation])
    yiq_to_rgb = np.linalg.inv(RGB_TO_YIQ)
    return brightness * contrast * value * (yiq_to_rgb @ rotate @ scale @ RGB_TO_YIQ)


def apply(
    x: np.ndarray,
    matrix: np.ndarray,
    offset: float = 0.0,
    out: Any = np.uint8,
) -> np.ndarray:
    values = np.asarray(x, np.float64) @ matrix.T + offset
    if np.dtype(out).kind == "f":
        return values.astype(out)
    info = np.iinfo(out)
    rounded = np.where(values >= 0, np.floor(values + 0.5), np.ceil(values - 0.5))
    return np.clip(rounded, info.min, info.max).astype(out)


def in_float32(x: np.ndarray, matrix: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """DALI's per-pixel float32 evaluation: ((m0*r + m1*g) + m2*b) + offset, halves away."""
    f = np.float32(x)
    out = np.stack(
        [
            ((matrix[i, 0] * f[..., 0] + matrix[i, 1] * f[..., 1]) + matrix[i, 2] * f[..., 2])
            + np.float32(offset)
            for i in range(3)
        ],
        axis=-1,
    )
    return np.clip(np.floor(out.astype(np.float64) + 0.5), 0, 255).astype(np.uint8)


def test_dalis_inverse_is_the_float32_inverse() -> None:
    # DALI inverts Rgb2Yiq in float32: within float32 rounding of the exact inverse (the
    # textbook 3-digit inverse [[1, .956, .621], ...] is off by up to 3e-3).
    exact = np.linalg.inv(RGB_TO_YIQ.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(YIQ_TO_RGB, exact, rtol=0, atol=4e-7)
    assert YIQ_TO_RGB.dtype == np.float32


@pytest.mark.parametrize("name", ["hue", "saturation", "hsv", "color_twist"])
def test_identity_settings_give_the_input(photos: list[np.ndarray], name: str) -> None:
    check_operator(name, [photos], lambda x, **_: x, layout="HWC", expected_layout="HWC")


def test_hue_per_sample_against_yiq_maths(photos: list[np.ndarray]) -> None:
    hues = [np.float32(v) for v in (-170.0, -30.0, 12.5, 60.0, 135.0, 400.0)][: len(photos)]
    check_operator(
        "hue",
        [photos],
        lambda x, hue, **_: apply(x, yiq_matrix(hue=float(hue))),
        layout="HWC",
        arg_inputs={"hue": hues},
        atol=1,
        mean_atol=0.01,
    )


def test_hue_is_dalis_float32_recipe_bit_for_bit(photos: list[np.ndarray]) -> None:
    hues = [np.float32(v) for v in (-170.0, -30.0, 12.5, 60.0, 135.0, 400.0)][: len(photos)]
    check_operator(
        "hue",
        [photos],
        lambda x, hue, **_: in_float32(x, color_matrix(hue=float(hue))),
        layout="HWC",
        arg_inputs={"hue": hues},
    )


def test_hue_wraps_around(photos: list[np.ndarray]) -> None:
    a = augkit.eager.hue(photos[0], hue=-90.0)
    b = augkit.eager.hue(photos[0], hue=270.0)
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1
    full = augkit.eager.hue(photos[0], hue=360.0)
    assert np.abs(full.astype(int) - photos[0].astype(int)).max() <= 1


def test_saturation_per_sample_against_yiq_maths(photos: list[np.ndarray]) -> None:
    factors = [np.float32(v) for v in (0.0, 0.25, 0.5, 1.5, 2.0, 3.0)][: len(photos)]
    check_operator(
        "saturation",
        [photos],
        lambda x, saturation, **_: apply(x, yiq_matrix(saturation=float(saturation))),
        layout="HWC",
        arg_inputs={"saturation": factors},
        atol=1,
        mean_atol=0.01,
    )


def test_zero_saturation_is_grey(photos: list[np.ndarray]) -> None:
    grey = augkit.eager.saturation(photos[2], saturation=0.0).astype(np.float64)
    luma = photos[2].astype(np.float64) @ RGB_TO_YIQ[0]
    # Channel k is Yiq2Rgb[k][0] * Y: 0.99966 Y, 0.99962 Y and 1.0028 Y (saturated at 255).
    for k in range(3):
        expected = np.clip(np.linalg.inv(RGB_TO_YIQ)[k, 0] * luma, 0, 255)
        assert np.abs(grey[..., k] - expected).max() <= 0.51
    assert np.abs(grey[..., 0] - grey[..., 1]).max() <= 1


def test_hsv_per_sample_against_yiq_maths(photos: list[np.ndarray]) -> None:
    n = len(photos)
    hue = [np.float32(40.0 * i - 90) for i in range(n)]
    saturation = [np.float32(0.4 * i) for i in range(n)]
    value = [np.float32(0.6 + 0.15 * i) for i in range(n)]

    def reference(x: np.ndarray, hue: Any, saturation: Any, value: Any, **_: Any) -> np.ndarray:
        return apply(x, yiq_matrix(float(hue), float(saturation), float(value)))

    check_operator(
        "hsv",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"hue": hue, "saturation": saturation, "value": value},
        atol=1,
        mean_atol=0.01,
    )


def test_color_twist_per_sample_against_yiq_maths(photos: list[np.ndarray]) -> None:
    n = len(photos)
    args = {
        "hue": [np.float32(25.0 * i - 60) for i in range(n)],
        "saturation": [np.float32(0.3 + 0.3 * i) for i in range(n)],
        "brightness": [np.float32(1.4 - 0.15 * i) for i in range(n)],
        "contrast": [np.float32(0.5 + 0.2 * i) for i in range(n)],
    }

    def reference(x: np.ndarray, hue: Any, saturation: Any, brightness: Any, contrast: Any):
        b, c = float(brightness), float(contrast)
        matrix = yiq_matrix(float(hue), float(saturation), brightness=b, contrast=c)
        return apply(x, matrix, offset=(128 - 128 * c) * b)

    check_operator(
        "color_twist", [photos], reference, layout="HWC", arg_inputs=args, atol=1, mean_atol=0.01
    )


def test_color_twist_zero_contrast_is_uniform_grey_128(photos: list[np.ndarray]) -> None:
    check_operator(
        "color_twist",
        [photos],
        lambda x, **_: np.full_like(x, 128),
        layout="HWC",
        args={"contrast": 0.0, "hue": 33.0},
    )


def test_integer_inputs_centre_on_128_floats_on_half(photos: list[np.ndarray]) -> None:
    wide = photos[0].astype(np.int16) * 100
    out = augkit.eager.color_twist(wide, contrast=0.0)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, np.full_like(wide, 128))  # DALI: 128, not 16384
    floats = photos[0].astype(np.float32) / 255
    out = augkit.eager.color_twist(floats, contrast=0.0, brightness=0.5)
    np.testing.assert_allclose(out, np.full_like(floats, 0.25), atol=1e-7)


def test_float_inputs_and_outputs(photos: list[np.ndarray]) -> None:
    floats = [p.astype(np.float32) / np.float32(255) for p in photos]
    check_operator(
        "hue",
        [floats],
        lambda x, **_: apply(x, yiq_matrix(hue=70.0), out=np.float32),
        layout="HWC",
        args={"hue": 70.0},
        atol=2e-6,
    )
    check_operator(
        "color_twist",
        [photos],
        lambda x, **_: apply(x, yiq_matrix(saturation=1.3, contrast=1.5), -64.0, np.float32),
        layout="HWC",
        args={"saturation": 1.3, "contrast": 1.5, "dtype": types.FLOAT},
        atol=1e-3,
    )


def test_hsv_defaults_to_uint8_the_others_to_the_input_type() -> None:
    floats = np.linspace(0, 1, 4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    assert augkit.eager.hsv(floats, hue=10.0).dtype == np.uint8
    assert augkit.eager.hsv(floats, hue=10.0, dtype=types.FLOAT).dtype == np.float32
    for name in ("hue", "saturation", "color_twist"):
        assert getattr(augkit.eager, name)(floats).dtype == np.float32, name
    half = floats.astype(np.float16)
    assert augkit.eager.hue(half, hue=5.0).dtype == np.float16


def test_sequences_and_no_layout(photos: list[np.ndarray]) -> None:
    frames = np.stack([photos[0], photos[1][: photos[0].shape[0], : photos[0].shape[1]]])
    out = run_operator("hue", [[frames]], layout="FHWC", args={"hue": 45.0})[0][0]
    assert out.layout() == "FHWC"
    for k in range(2):
        np.testing.assert_array_equal(out.at(0)[k], augkit.eager.hue(frames[k], hue=45.0))
    plain = run_operator("saturation", [[photos[0]]], args={"saturation": 0.5})[0][0]
    np.testing.assert_array_equal(plain.at(0), augkit.eager.saturation(photos[0], saturation=0.5))


def test_uint8_rounding_is_convert_sat() -> None:
    f = np.float32
    below = np.nextafter(f(0.5), f(0))
    edges = [below, 0.5, 1.5, 2.5, 127.5, 254.5, 255.49998, 255.5, 300.0, -0.5, -below, -3.0]
    values = np.array([*edges, np.inf, -np.inf, np.nan], np.float32)
    noise = np.random.default_rng(7).uniform(-2, 258, 100_000).astype(np.float32)
    for v in (values, noise, np.floor(noise) + f(0.5)):
        np.testing.assert_array_equal(_to_uint8(v.copy(), has_nan=True), convert_sat(v, np.uint8))


def test_alpha_and_further_channels_are_kept(photos: list[np.ndarray]) -> None:
    rgb = photos[1]
    alpha = (np.arange(rgb[..., 0].size) % 256).astype(np.uint8).reshape(rgb.shape[:2])
    rgba = np.dstack([rgb, alpha, 255 - alpha])
    out = augkit.eager.color_twist(rgba, hue=50.0, saturation=0.7, contrast=1.2)
    assert out.shape == rgba.shape
    expected_rgb = augkit.eager.color_twist(rgb, hue=50.0, saturation=0.7, contrast=1.2)
    np.testing.assert_array_equal(out[..., :3], expected_rgb)
    np.testing.assert_array_equal(out[..., 3], alpha)
    np.testing.assert_array_equal(out[..., 4], 255 - alpha)
    as_float = augkit.eager.hue(rgba, hue=10.0, dtype=types.FLOAT)
    np.testing.assert_array_equal(as_float[..., 3], alpha.astype(np.float32))


def test_nan_gives_zero_without_warnings() -> None:
    x = np.full((2, 2, 3), np.nan, np.float32)
    with np.errstate(all="raise"):
        out = augkit.eager.hsv(x, hue=10.0)
    np.testing.assert_array_equal(out, np.zeros((2, 2, 3), np.uint8))
    # a hue beyond float32's range makes the matrix NaN (C's cos(inf)): zeros, no error
    photo = np.full((2, 2, 3), 100, np.uint8)
    with np.errstate(all="raise"):
        out = augkit.eager.hue(photo, hue=1e300)
    np.testing.assert_array_equal(out, np.zeros_like(photo))


@pytest.mark.parametrize(
    ("sample", "layout", "message"),
    [
        (np.zeros((4, 4, 1), np.uint8), "HWC", "hue needs RGB images with 3 channels"),
        (np.zeros((4, 4, 2), np.uint8), "HWC", "hue needs RGB images with 3 channels"),
        (np.zeros((3, 4, 4), np.uint8), "CHW", 'hue needs channel-last RGB images.*"CHW"'),
        (np.zeros((4, 3), np.uint8), "", "hue needs RGB images with 3 channels"),
        (np.zeros((4, 4, 3), bool), "HWC", "hue needs numbers, got bool data"),
    ],
)
def test_bad_inputs_are_refused(sample: np.ndarray, layout: str, message: str) -> None:
    with pytest.raises((OperatorError, GraphError), match=message):
        run_operator("hue", [[sample]], layout=layout, args={"hue": 10.0})


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("hue", {"hue": "red"}, "Hue: argument 'hue': expected a number"),
        ("saturation", {"saturation": float("inf")}, "argument 'saturation': expected a finite"),
        ("hsv", {"dtype": types.BOOL}, "Hsv: argument 'dtype': the output must be numbers"),
        ("color_twist", {"image_type": "XYZ"}, "ColorTwist: argument 'image_type'"),
        ("hue", {"value": 2.0}, "Hue: unknown argument 'value'"),
        ("color_twist", {"value": 2.0}, "ColorTwist: unknown argument 'value'"),
    ],
)
def test_bad_arguments_are_named(
    photos: list[np.ndarray], name: str, args: dict, message: str
) -> None:
    with pytest.raises(ArgumentError, match=message):
        run_operator(name, [photos[:1]], layout="HWC", args=args)
