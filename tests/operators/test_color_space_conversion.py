"""fn.color_space_conversion against independent references on real photos: Pillow's
``convert("L")`` and a NumPy float64 BT.601 luma for GRAY, the BT.601 limited-range formulas in
float64 for YCbCr (and Pillow's full-range YCbCr rescaled), channel swaps, round trips, float
inputs, volumes and sequences (channels last), and bad arguments and inputs."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import augkit.eager
from augkit import types
from augkit.errors import ArgumentError, OperatorError
from augkit.tensors import TensorList
from tests.operator_check import check_operator

YCBCR = (
    np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]])
    / 255.0
)
OFFSET = np.array([16.0, 128.0, 128.0])


def convert(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return augkit.eager.color_space_conversion(
        x, image_type=getattr(types, src), output_type=getattr(types, dst)
    )


def luma64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]


def test_gray_is_bt601_luma_like_pillow(photos: list[np.ndarray]) -> None:
    for photo in photos[:3]:
        gray = convert(photo, "RGB", "GRAY")
        assert gray.shape == (*photo.shape[:2], 1) and gray.dtype == np.uint8
        pillow = np.asarray(Image.fromarray(photo).convert("L"))
        diff = np.abs(gray[..., 0].astype(int) - pillow)
        assert diff.max() <= 1 and diff.mean() < 0.05
        exact = np.abs(gray[..., 0] - luma64(photo))
        assert exact.max() <= 0.51


def test_bgr_to_gray_swaps_the_weights(photos: list[np.ndarray]) -> None:
    photo = photos[0]
    np.testing.assert_array_equal(
        convert(photo[..., ::-1].copy(), "BGR", "GRAY"), convert(photo, "RGB", "GRAY")
    )


def test_ycbcr_is_limited_range_bt601(photos: list[np.ndarray]) -> None:
    check_operator(
        "color_space_conversion",
        [[p[::3, ::3] for p in photos[:3]]],
        lambda x, **_: np.clip(
            np.floor(x.astype(np.float64) @ YCBCR.T + OFFSET + 0.5), 0, 255
        ).astype(np.uint8),
        layout="HWC",
        args={"image_type": types.RGB, "output_type": types.YCbCr},
        atol=1,
        mean_atol=0.01,
    )
    corners = np.array([[[0, 0, 0], [255, 255, 255], [255, 0, 0]]], np.uint8)
    np.testing.assert_array_equal(
        convert(corners, "RGB", "YCbCr"), [[[16, 128, 128], [235, 128, 128], [81, 90, 240]]]
    )


def test_ycbcr_luma_matches_pillows_full_range_rescaled(photos: list[np.ndarray]) -> None:
    photo = photos[1]
    ours = convert(photo, "RGB", "YCbCr").astype(np.float64)
    full = np.asarray(Image.fromarray(photo).convert("YCbCr")).astype(np.float64)
    np.testing.assert_allclose(ours[..., 0], 16 + full[..., 0] * 219 / 255, atol=1.5)
    np.testing.assert_allclose(ours[..., 1:], 128 + (full[..., 1:] - 128) * 224 / 255, atol=1.5)


def test_ycbcr_round_trip_and_inverse(photos: list[np.ndarray]) -> None:
    photo = photos[2]
    back = convert(convert(photo, "RGB", "YCbCr"), "YCbCr", "RGB")
    assert np.abs(back.astype(int) - photo).max() <= 3
    bgr = convert(convert(photo, "RGB", "YCbCr"), "YCbCr", "BGR")
    np.testing.assert_array_equal(bgr, back[..., ::-1])
    y = convert(photo, "RGB", "YCbCr")
    gray = convert(y, "YCbCr", "GRAY")[..., 0].astype(np.float64)
    np.testing.assert_allclose(gray, np.clip((y[..., 0] - 16.0) * 255 / 219, 0, 255), atol=0.51)


def test_gray_to_colour_spaces(photos: list[np.ndarray]) -> None:
    gray = convert(photos[0], "RGB", "GRAY")
    rgb = convert(gray, "GRAY", "RGB")
    np.testing.assert_array_equal(rgb, np.repeat(gray, 3, axis=2))
    np.testing.assert_array_equal(convert(gray, "GRAY", "BGR"), rgb)
    ycc = convert(gray, "GRAY", "YCbCr")
    np.testing.assert_array_equal(ycc[..., 1:], 128)
    want = 16 + gray[..., 0].astype(np.float64) * 219 / 255
    assert np.abs(ycc[..., 0] - want).max() <= 0.51


def test_channel_swap_and_same_space(photos: list[np.ndarray]) -> None:
    photo = photos[0]
    np.testing.assert_array_equal(convert(photo, "RGB", "BGR"), photo[..., ::-1])
    same = convert(photo, "RGB", "RGB")
    np.testing.assert_array_equal(same, photo)


def test_float_inputs_use_unit_range(photos: list[np.ndarray]) -> None:
    x = photos[0][::4, ::4].astype(np.float32) / 255
    out = convert(x, "RGB", "YCbCr")
    assert out.dtype == np.float32
    want = x.astype(np.float64) @ YCBCR.T + OFFSET / 255
    np.testing.assert_allclose(out, want, atol=1e-5)
    np.testing.assert_allclose(convert(x, "RGB", "GRAY")[..., 0], luma64(x), atol=1e-5)


def test_sequences_and_volumes_convert_frame_by_frame(photos: list[np.ndarray]) -> None:
    frames = np.stack([photos[0][:40, :50], photos[1][:40, :50]])
    out = augkit.eager.color_space_conversion(
        TensorList([frames], "FHWC"), image_type=types.RGB, output_type=types.GRAY
    )
    out = np.asarray(out._samples[0])
    assert out.shape == (2, 40, 50, 1)
    for k in range(2):
        np.testing.assert_array_equal(out[k], convert(frames[k], "RGB", "GRAY"))


def test_bad_arguments_and_inputs() -> None:
    rgb = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ArgumentError, match="ColorSpaceConversion: argument 'output_type'"):
        augkit.eager.color_space_conversion(rgb, image_type=types.RGB, output_type=types.ANY_DATA)
    with pytest.raises(ArgumentError, match="image_type"):
        augkit.eager.color_space_conversion(rgb, output_type=types.GRAY)
    with pytest.raises(OperatorError, match="needs 3 channel"):
        convert(np.zeros((4, 4, 1), np.uint8), "RGB", "GRAY")
    with pytest.raises(OperatorError, match="takes uint8"):
        convert(np.zeros((4, 4, 3), np.int16), "RGB", "GRAY")
    with pytest.raises(OperatorError, match="channels last"):
        augkit.eager.color_space_conversion(
            TensorList([np.zeros((3, 4, 4), np.uint8)], "CHW"),
            image_type=types.RGB,
            output_type=types.GRAY,
        )


def test_uint8_rounding_is_half_away_from_zero_with_saturation() -> None:
    """The fast uint8 rounding of the transform path against ``convert_sat`` on the float32
    values where rounding is delicate (0.49999997, halves, saturation), made exactly by a
    diagonal matrix on inputs of 1."""
    from augkit.operators.color.cast import convert_sat
    from augkit.operators.color.color_space_conversion import ColorSpaceConversion
    from augkit.operators.registry import REGISTRY

    schema = REGISTRY["color_space_conversion"]
    args = {**schema.defaults(), "image_type": types.RGB, "output_type": types.YCbCr}
    impl = ColorSpaceConversion(schema, args, "csc", 0, "cpu", 1)
    below_half = np.nextafter(np.float32(0.5), np.float32(0))
    delicate = [below_half, 0.5, 1.5, 2.5, -0.5, -0.49, 254.5, 255.5, 1000.0, -3.0, 0.0, 0.25]
    values = np.array(delicate, np.float32)
    for start in range(0, len(values), 3):
        chunk = np.zeros(3, np.float32)
        part = values[start : start + 3]
        chunk[: len(part)] = part
        impl.matrices[255.0] = np.concatenate([np.diag(chunk), np.zeros((3, 1))], axis=1)
        out = impl.cpu(np.ones((1, 1, 3), np.uint8))
        np.testing.assert_array_equal(out[0, 0], convert_sat(chunk, np.uint8))
