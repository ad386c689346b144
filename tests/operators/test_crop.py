"""fn.crop against NumPy slicing on real photos, DALI's window rules (truncated sizes, anchors
rounded half away from zero), the out-of-bounds policies, and GPU = CPU."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from augkit import fn, types
from augkit.errors import OperatorError
from augkit.operators.geometric.crop import crop_anchor, crop_window
from tests.operator_check import check_operator, gpu_matches_cpu, run_operator


def window(extent: int, size: int, pos: float) -> int:
    """The reference anchor: pos (read as float32, as DALI reads it) * (extent - size), rounded
    half away from zero (negative when the window is larger than the image)."""
    exact = float(np.float32(pos)) * (extent - size)
    return int(math.copysign(math.floor(abs(exact) + 0.5), exact))


def sliced(image: np.ndarray, crop_hw: tuple[int, int], pos_xy=(0.5, 0.5)) -> np.ndarray:
    (h, w), (px, py) = crop_hw, pos_xy
    y, x = window(image.shape[0], h, py), window(image.shape[1], w, px)
    return image[y : y + h, x : x + w]


def test_centre_crop_matches_slicing(photos: list[np.ndarray]) -> None:
    check_operator(
        "crop",
        [photos],
        lambda image, crop, **_: sliced(image, crop),
        layout="HWC",
        args={"crop": (223, 201)},
        expected_layout="HWC",
    )


def test_crop_h_w_with_per_sample_positions(photos: list[np.ndarray]) -> None:
    xs = [np.float32(v) for v in (0.0, 1.0, 0.25, 0.7, 0.33, 0.5, 0.9)][: len(photos)]
    ys = [np.float32(v) for v in (1.0, 0.0, 0.5, 0.1, 0.9, 0.45, 0.05)][: len(photos)]
    check_operator(
        "crop",
        [photos],
        lambda image, crop_pos_x, crop_pos_y, **_: sliced(
            image, (150, 170), (crop_pos_x, crop_pos_y)
        ),
        layout="HWC",
        args={"crop_h": 150, "crop_w": 170},
        arg_inputs={"crop_pos_x": xs, "crop_pos_y": ys},
    )


def test_per_sample_window_size(photos: list[np.ndarray]) -> None:
    sizes = [np.array([100 + 10 * i, 120 - 5 * i], np.float32) for i in range(len(photos))]
    check_operator(
        "crop",
        [photos],
        lambda image, crop, **_: sliced(image, tuple(int(v) for v in crop)),
        layout="HWC",
        arg_inputs={"crop": sizes},
    )


def test_chw_layout_crops_the_last_two_axes(photos: list[np.ndarray]) -> None:
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos]
    check_operator(
        "crop",
        [chw],
        lambda image, **_: sliced(image.transpose(1, 2, 0), (99, 130), (0.2, 0.8)).transpose(
            2, 0, 1
        ),
        layout="CHW",
        args={"crop": (99, 130), "crop_pos_x": 0.2, "crop_pos_y": 0.8},
        expected_layout="CHW",
    )


def test_unlabelled_gray_image_is_hw(photos: list[np.ndarray]) -> None:
    gray = [np.ascontiguousarray(p[..., 1]) for p in photos]
    check_operator(
        "crop",
        [gray],
        lambda image, **_: sliced(image, (64, 80), (0.9, 0.1)),
        args={"crop": (64, 80), "crop_pos_x": 0.9, "crop_pos_y": 0.1},
        expected_layout="",
    )


@pytest.mark.parametrize(
    ("extent", "size", "pos", "rounding", "anchor"),
    [
        (301, 100, 0.5, "round", 101),  # 100.5 -> 101: half away from zero, not to even
        (301, 100, 0.5, "truncate", 100),
        (303, 100, 0.5, "round", 102),  # 101.5 -> 102
        (300, 100, 0.5, "round", 100),
        (301, 100, 0.25, "round", 50),  # 50.25
        (301, 100, 0.75, "round", 151),  # 150.75
        (301, 100, 0.75, "truncate", 150),
        (301, 100, 1.0, "round", 201),
        (301, 301, 0.3, "round", 0),
        (101, 104, 0.5, "round", -2),  # -1.5 -> -2 (away from zero)
        (101, 104, 0.5, "truncate", -1),  # toward zero
    ],
)
def test_anchor_rounding_table(
    extent: int, size: int, pos: float, rounding: str, anchor: int
) -> None:
    assert crop_anchor(extent, size, pos, rounding) == anchor


@pytest.mark.parametrize(
    ("pos", "rounding", "anchor"),
    [(0.5, "round", 101), (0.5, "truncate", 100), (0.75, "round", 151)],
)
def test_anchor_rounding_through_the_operator(
    photos: list[np.ndarray], pos: float, rounding: str, anchor: int
) -> None:
    narrow = [np.ascontiguousarray(p[:120, :301]) for p in photos]
    check_operator(
        "crop",
        [narrow],
        lambda image, **_: image[10:110, anchor : anchor + 100],
        layout="HWC",
        args={"crop": (100, 100), "crop_pos_x": pos, "rounding": rounding},
        iterations=1,
    )


def test_window_size_is_truncated(photos: list[np.ndarray]) -> None:
    out = run_operator(
        "crop", [photos[:2]], layout="HWC", args={"crop_h": 100.9, "crop_w": 50.999}
    )[0][0]
    assert out.shape() == [(100, 50, 3), (100, 50, 3)]


def test_window_of_zero_keeps_that_axis(photos: list[np.ndarray]) -> None:
    assert crop_window((300, 451, 3), "HWC", {"H": (0, 0.9), "W": (100, 0.5)}, "round") == (
        (0, 176, 0),
        (300, 100, 3),
    )


def padded_reference(
    image: np.ndarray, crop_hw: tuple[int, int], fill: tuple[float, ...]
) -> np.ndarray:
    """A canvas of ``fill`` with the image pasted where the centred window overlaps it."""
    (h, w), (height, width) = crop_hw, image.shape[:2]
    y0, x0 = window(height, h, 0.5), window(width, w, 0.5)
    out = np.empty((h, w, 3), image.dtype)
    out[...] = np.asarray(fill, image.dtype)
    ys, xs = slice(max(y0, 0), min(y0 + h, height)), slice(max(x0, 0), min(x0 + w, width))
    out[ys.start - y0 : ys.stop - y0, xs.start - x0 : xs.stop - x0] = image[ys, xs]
    return out


def test_pad_fills_outside_with_per_channel_values(photos: list[np.ndarray]) -> None:
    fill = (118.0, 185.0, 7.0)
    check_operator(
        "crop",
        [photos],
        lambda image, **_: padded_reference(image, (901, 455), fill),
        layout="HWC",
        args={"crop": (901, 455), "out_of_bounds_policy": "pad", "fill_values": fill},
        iterations=1,
    )


def test_pad_with_one_fill_value_and_float_output(photos: list[np.ndarray]) -> None:
    small = [np.ascontiguousarray(p[:40, :50]) for p in photos]

    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        out = np.full((44, 60, 3), -1.5, np.float32)
        out[2:42, 5:55] = image
        return out

    check_operator(
        "crop",
        [small],
        reference,
        layout="HWC",
        args={
            "crop": (44, 60),
            "out_of_bounds_policy": "pad",
            "fill_values": -1.5,
            "dtype": types.FLOAT,
        },
    )


def test_trim_to_shape_cuts_the_window(photos: list[np.ndarray]) -> None:
    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        h, w = image.shape[:2]
        y0, x0 = window(h, 700, 0.3), window(w, 480, 0.6)
        return image[max(y0, 0) : min(y0 + 700, h), max(x0, 0) : min(x0 + 480, w)]

    check_operator(
        "crop",
        [photos],
        reference,
        layout="HWC",
        args={
            "crop": (700, 480),
            "crop_pos_x": 0.6,
            "crop_pos_y": 0.3,
            "out_of_bounds_policy": "trim_to_shape",
        },
        iterations=1,
    )


def test_out_of_bounds_error_names_the_sample_and_window(photos: list[np.ndarray]) -> None:
    by_height = sorted(photos, key=lambda p: p.shape[0])
    batch = [by_height[-1], by_height[0]]  # only the second is too short for the window
    crop_h = by_height[0].shape[0] + 1
    with pytest.raises(OperatorError) as info:
        run_operator("crop", [batch], layout="HWC", args={"crop": (crop_h, 10)})
    message = str(info.value)
    assert "sample #1" in message
    assert str(tuple(batch[1].shape)) in message
    assert f"shape ({crop_h}, 10, 3)" in message
    assert "out_of_bounds_policy" in message


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"crop": (10, 10), "crop_h": 5, "crop_w": 5}, "cannot be combined"),
        ({"crop_w": 10}, "must be given together"),
        ({"crop": (1, 2, 3, 4)}, "takes 2 values"),
    ],
)
def test_argument_combinations_are_refused(
    photos: list[np.ndarray], args: dict[str, Any], match: str
) -> None:
    with pytest.raises(OperatorError, match=match):
        run_operator("crop", [photos[:1]], layout="HWC", args=args)


def test_position_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="crop_pos_x"):
        fn.crop(None, crop_pos_x=1.5)


def test_layout_without_h_and_w_is_refused(photos: list[np.ndarray]) -> None:
    with pytest.raises(OperatorError, match='"ABC" does not match any of the allowed layouts'):
        run_operator("crop", [photos[:1]], layout="ABC", args={"crop": (10, 10)})


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    gpu_matches_cpu(
        "crop",
        photos,
        layout="HWC",
        args={"crop": (500, 480), "out_of_bounds_policy": "pad", "fill_values": (1, 2, 3)},
        arg_inputs={"crop_pos_x": [np.float32(0.1 * i) for i in range(len(photos))]},
    )
