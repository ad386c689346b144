"""fn.grid_mask against a pixel-by-pixel reference of DALI's float32 geometry on real photos,
the blanked fraction (ratio squared), per-sample arguments, layouts, types and errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import augkit.eager
from augkit.errors import ArgumentError, OperatorError
from tests.operator_check import check_operator, run_operator


def _f(value: float) -> float:
    return float(np.float32(value))


def reference_keep(h: int, w: int, tile: int, ratio: float, angle: float, sx: float, sy: float):
    """DALI's kernel, one pixel at a time, every operation rounded to float32."""
    angle = _f(angle)
    ca, sa = _f(_f(math.cos(angle)) / tile), _f(_f(math.sin(angle)) / tile)
    sx, sy, ratio = _f(_f(sx) / tile), _f(_f(sy) / tile), _f(ratio)
    keep = np.zeros((h, w), bool)
    for y in range(h):
        fxy = _f(-sx + _f(y * -sa))
        fyy = _f(-sy + _f(y * ca))
        for x in range(w):
            fx = _f(fxy + _f(x * ca))
            fy = _f(fyy + _f(x * sa))
            keep[y, x] = _f(fx - math.floor(fx)) >= ratio or _f(fy - math.floor(fy)) >= ratio
    return keep


@pytest.fixture(scope="module")
def crops(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(p[10 : 10 + 37 + 5 * i, 20 : 20 + 45 - 3 * i]) for i, p in
            enumerate(photos[:4])]  # fmt: skip


@pytest.mark.parametrize(
    "params",
    [
        {"tile": 10},
        {"tile": 7, "ratio": 0.3},
        {"tile": 16, "ratio": 0.6, "angle": 0.5},
        {"tile": 13, "ratio": 0.45, "angle": -1.2, "shift_x": 3.3, "shift_y": -7.1},
        {"tile": 9, "angle": 3.0, "shift_x": 100.0},
    ],
)
def test_matches_dalis_geometry(crops: list[np.ndarray], params: dict[str, Any]) -> None:
    full = {"ratio": 0.5, "angle": 0.0, "shift_x": 0.0, "shift_y": 0.0, **params}

    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        keep = reference_keep(image.shape[0], image.shape[1], full["tile"], full["ratio"],
                              full["angle"], full["shift_x"], full["shift_y"])  # fmt: skip
        return image * keep[..., None].astype(np.uint8)

    check_operator("grid_mask", [crops], reference, layout="HWC", args=params,
                   expected_layout="HWC")  # fmt: skip


def test_per_sample_arguments(crops: list[np.ndarray]) -> None:
    values = {
        "tile": [np.int32(t) for t in (5, 17, 8, 11)],
        "ratio": [np.float32(r) for r in (0.2, 0.5, 0.8, 0.45)],
        "angle": [np.float32(a) for a in (0.1, -0.7, 2.2, 0.785398)],
        "shift_x": [np.float32(s) for s in (0.0, 3.5, -10.0, 2.0)],
        "shift_y": [np.float32(s) for s in (1.0, -2.5, 40.0, 0.0)],
    }

    def reference(image: np.ndarray, tile, ratio, angle, shift_x, shift_y) -> np.ndarray:
        keep = reference_keep(*image.shape[:2], int(tile), ratio, angle, shift_x, shift_y)
        return image * keep[..., None].astype(np.uint8)

    check_operator("grid_mask", [crops], reference, layout="HWC", arg_inputs=values)


@pytest.mark.parametrize(("ratio", "angle"), [(0.5, 0.0), (0.3, 0.0), (0.6, 0.7), (0.4, -2.0)])
def test_blanked_fraction_is_ratio_squared(ratio: float, angle: float) -> None:
    image = np.full((400, 400, 1), 9, np.uint8)
    out = augkit.eager.grid_mask([image], tile=20, ratio=ratio, angle=angle)[0]
    blanked = float(np.mean(out == 0))
    assert abs(blanked - ratio**2) < 0.01, (blanked, ratio**2)


def test_squares_start_at_the_origin_and_limits() -> None:
    image = np.full((20, 20, 3), 200, np.uint8)
    out = augkit.eager.grid_mask([image], tile=10, ratio=0.5)[0]
    assert (out[:5, :5] == 0).all() and (out[:5, 5:10] == 200).all()
    assert (out[5:10, :] == 200).all() and (out[10:15, 10:15] == 0).all()
    assert (augkit.eager.grid_mask([image], tile=10, ratio=0.0)[0] == 200).all()
    assert (augkit.eager.grid_mask([image], tile=10, ratio=1.0)[0] == 0).all()


def test_float_blanking_multiplies_by_zero() -> None:
    image = np.full((8, 8, 2), -1.5, np.float32)
    image[0, 0, 0] = np.nan
    out = augkit.eager.grid_mask([image], tile=4, ratio=0.5)[0]
    assert out.dtype == np.float32
    assert np.isnan(out[0, 0, 0]) and np.signbit(out[0, 0, 1]) and out[0, 0, 1] == 0
    assert out[0, 3, 0] == -1.5


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float32])
def test_types_are_kept(crops: list[np.ndarray], dtype: Any) -> None:
    images = [c.astype(dtype) - 50 for c in crops]

    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        keep = reference_keep(*image.shape[:2], 12, 0.5, 0.3, 0.0, 0.0)
        return image * keep[..., None].astype(dtype)

    check_operator("grid_mask", [images], reference, layout="HWC", args={"tile": 12, "angle": 0.3})


def test_chw_and_hw_are_masked_along_h_and_w(crops: list[np.ndarray]) -> None:
    hwc = run_operator("grid_mask", [crops], layout="HWC", args={"tile": 8, "angle": 0.4})[0][0]
    chw = [np.ascontiguousarray(c.transpose(2, 0, 1)) for c in crops]
    out = run_operator("grid_mask", [chw], layout="CHW", args={"tile": 8, "angle": 0.4})[0][0]
    gray = [np.ascontiguousarray(c[..., 0]) for c in crops]
    out_hw = run_operator("grid_mask", [gray], layout="HW", args={"tile": 8, "angle": 0.4})[0][0]
    for i in range(len(crops)):
        np.testing.assert_array_equal(out.at(i), hwc.at(i).transpose(2, 0, 1))
        np.testing.assert_array_equal(out_hw.at(i), hwc.at(i)[..., 0])


@pytest.mark.parametrize("tile", [0, -3])
def test_tile_must_be_positive(tile: int) -> None:
    with pytest.raises(ArgumentError, match=r"GridMask.*tile"):
        augkit.eager.grid_mask([np.zeros((4, 4, 3), np.uint8)], tile=tile)


def test_unsupported_type_is_refused() -> None:
    with pytest.raises(OperatorError, match=r"grid_mask.*uint16"):
        augkit.eager.grid_mask([np.zeros((4, 4, 3), np.uint16)])
