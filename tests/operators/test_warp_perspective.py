"""fn.experimental.warp_perspective: pixels against a float64 homography written here (every
border mode, both pixel origins, inverse_map), the matrix forms, an affine homography against
fn.warp_affine, HW inputs, types and errors."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import OperatorError, fn, types
from augkit.errors import ArgumentError, GraphError
from tests.operator_check import check_operator, run_operator
from tests.operators.test_warp_affine import round_sat

H1 = np.array([[0.95, 0.08, 3.0], [-0.05, 1.05, 2.0], [0.0004, -0.0003, 1.0]])
H2 = np.array([[1.1, -0.2, 20.0], [0.15, 0.9, -10.0], [-0.0005, 0.0006, 1.0]])


def _index(i: np.ndarray, n: int, mode: str) -> np.ndarray:
    """OpenCV's border modes as index maps (``None`` marks a constant-border tap)."""
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "reflect":  # fedcba|abcdefgh|hgfedcb
        period = 2 * n
        j = np.mod(i, period)
        return np.where(j < n, j, period - 1 - j)
    if mode == "reflect_101":  # gfedcb|abcdefgh|gfedcba
        if n == 1:
            return np.zeros_like(i)
        period = 2 * n - 2
        j = np.mod(i, period)
        return np.where(j < n, j, period - j)
    if mode == "wrap":
        return np.mod(i, n)
    raise ValueError(mode)


def perspective64(
    image,
    matrix,
    out_hw=None,
    *,
    mode="constant",
    fill=0.0,
    nearest=False,
    origin="corner",
    inverse=True,
):
    """The reference: output pixel (x, y) reads the input at ``H @ (x, y, 1)`` (pixel centres:
    ``x + 0.5`` with corner origins), in float64."""
    m = np.asarray(matrix, np.float64)
    if not inverse:
        m = np.linalg.inv(m)
    oh, ow = out_hw or image.shape[:2]
    shift = 0.5 if origin == "corner" else 0.0
    ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float64) + shift
    w = m[2, 0] * xs + m[2, 1] * ys + m[2, 2]
    sx = (m[0, 0] * xs + m[0, 1] * ys + m[0, 2]) / w - shift
    sy = (m[1, 0] * xs + m[1, 1] * ys + m[1, 2]) / w - shift  # pixel-centre coordinates
    data = image.astype(np.float64).reshape(*image.shape[:2], -1)
    h, wd = image.shape[:2]
    border = np.broadcast_to(np.asarray(fill, np.float64), (data.shape[2],))

    def tap(ix, iy):
        if mode == "constant":
            inside = (ix >= 0) & (ix < wd) & (iy >= 0) & (iy < h)
            values = data[np.clip(iy, 0, h - 1), np.clip(ix, 0, wd - 1)]
            return np.where(inside[..., None], values, border)
        return data[_index(iy, h, mode), _index(ix, wd, mode)]

    if nearest:
        out = tap(np.round(sx).astype(np.int64), np.round(sy).astype(np.int64))
    else:
        x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
        qx, qy = (sx - x0)[..., None], (sy - y0)[..., None]
        top = tap(x0, y0) * (1 - qx) + tap(x0 + 1, y0) * qx
        bottom = tap(x0, y0 + 1) * (1 - qx) + tap(x0 + 1, y0 + 1) * qx
        out = top * (1 - qy) + bottom * qy
    return round_sat(out, image.dtype).reshape(oh, ow, *image.shape[2:])


# OpenCV 5's warpPerspective (DALI's CPU kernel is the same function) computes in float32:
# against float64, 1 level where a value lands next to .5.
ATOL, MEAN = 1, 0.002


@pytest.mark.parametrize("mode", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_border_modes_match_float64_reference(photos, mode):
    images = photos[:2]
    args = {"border_mode": mode}
    if mode == "constant":
        args["fill_value"] = (10.0, 200.0, 30.0)
    check_operator(
        "experimental.warp_perspective",
        [images],
        lambda image, matrix, **_: perspective64(
            image, matrix, mode=mode, fill=args.get("fill_value", 0.0)
        ),
        layout="HWC",
        args=args,
        arg_inputs={"matrix": [H1.astype(np.float32), H2.astype(np.float32)]},
        atol=ATOL,
        mean_atol=MEAN,
        expected_layout="HWC",
    )


def test_center_origin_and_forward_map(photos):
    image = photos[3]
    for origin in ("corner", "center"):
        for inverse in (True, False):
            (out,) = run_operator(
                "experimental.warp_perspective",
                [[image]],
                layout="HWC",
                args={"matrix": H2, "pixel_origin": origin, "inverse_map": inverse},
            )[0]
            expected = perspective64(image, H2, origin=origin, inverse=inverse)
            diff = np.abs(out.at(0).astype(int) - expected)
            assert diff.max() <= ATOL and diff.mean() < MEAN, (origin, inverse)


def test_nearest_and_cubic(photos):
    image = photos[1]
    (nearest,) = run_operator(
        "experimental.warp_perspective",
        [[image]],
        layout="HWC",
        args={"matrix": H1, "interp_type": types.INTERP_NN},
    )[0]
    expected = perspective64(image, H1, nearest=True)
    # float32 points against float64: a pick flips where a point is a hair from a pixel edge
    assert (nearest.at(0) != expected).any(axis=-1).mean() < 1e-3
    (cubic,) = run_operator(
        "experimental.warp_perspective",
        [[image]],
        layout="HWC",
        args={"matrix": H1, "interp_type": types.INTERP_CUBIC},
    )[0]
    linear = perspective64(image, H1)
    assert np.abs(cubic.at(0).astype(int) - linear).mean() < 3  # close to linear, not equal
    assert not np.array_equal(cubic.at(0), linear)


def test_affine_homography_is_warp_affine(photos):
    image = photos[0]
    affine = np.array([[0.9, -0.25, 30.0], [0.2, 1.05, -12.0]])
    (persp,) = run_operator(
        "experimental.warp_perspective",
        [[image]],
        layout="HWC",
        args={"matrix": np.vstack([affine, [0, 0, 1]]), "fill_value": 0.0},
    )[0]
    (warped,) = run_operator(
        "warp_affine", [[image]], layout="HWC", args={"matrix": affine, "fill_value": 0}
    )[0]
    diff = np.abs(persp.at(0).astype(int) - warped.at(0))
    # both float32, with other points (OpenCV's against DALI's running sums): ties at round
    # decimals go either way
    assert diff.max() <= 1 and diff.mean() < 0.02


def test_matrix_forms_agree(photos):
    image = photos[2]
    m = H1.astype(np.float32)
    outs = [
        run_operator("experimental.warp_perspective", [[image]], layout="HWC", **kw)[0][0].at(0)
        for kw in (
            {"args": {"matrix": m.reshape(-1).tolist()}},
            {"args": {"matrix": m}},
            {"arg_inputs": {"matrix": [m]}},
        )
    ]
    outs.append(
        run_operator("experimental.warp_perspective", [[image], [m]], layout=["HWC", ""])[0][0].at(
            0
        )
    )
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0], other)


def test_size_gray_hw_and_types():
    rng = np.random.default_rng(1)
    for dtype in (np.uint8, np.uint16, np.int16, np.float32):
        image = (rng.random((33, 47)) * 1000 - (300 if dtype == np.int16 else 0)).astype(dtype)
        (out,) = run_operator(
            "experimental.warp_perspective",
            [[image]],
            layout="HW",
            args={"matrix": H1, "size": (20.4, 30.6), "border_mode": "replicate"},
        )[0]
        got = out.at(0)
        assert got.shape == (20, 31) and got.dtype == dtype and out.layout() == "HW"
        expected = perspective64(image, H1, (20, 31), mode="replicate")
        tolerance = 1e-3 * 1000 * 8 if dtype == np.float32 else 40
        assert np.abs(got.astype(np.float64) - expected).max() <= tolerance
    gray = rng.integers(0, 256, (20, 20, 1), dtype=np.uint8)
    (out,) = run_operator(
        "experimental.warp_perspective", [[gray]], layout="HWC", args={"matrix": H1}
    )[0]
    assert out.at(0).shape == (20, 20, 1)


# --- errors ----------------------------------------------------------------------------------


def test_refused_inputs():
    image = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(OperatorError, match="should not be provided at the same time"):
        run_operator(
            "experimental.warp_perspective",
            [[image], [np.eye(3, dtype=np.float32)]],
            layout=["HWC", ""],
            args={"matrix": H1},
        )
    with pytest.raises(OperatorError, match="a `matrix` argument or a matrix input"):
        run_operator("experimental.warp_perspective", [[image]], layout="HWC")
    with pytest.raises(OperatorError, match="more than 4 channels"):
        run_operator(
            "experimental.warp_perspective",
            [[np.zeros((8, 8, 5), np.uint8)]],
            layout="HWC",
            args={"matrix": H1},
        )
    with pytest.raises(OperatorError, match="fill_value should match the number of channels"):
        run_operator(
            "experimental.warp_perspective",
            [[image]],
            layout="HWC",
            args={"matrix": H1, "fill_value": (1.0, 2.0)},
        )
    with pytest.raises(OperatorError, match="takes images of type uint8, uint16, int16, float32"):
        run_operator(
            "experimental.warp_perspective",
            [[np.zeros((8, 8, 3), np.int32)]],
            layout="HWC",
            args={"matrix": H1},
        )
    with pytest.raises(GraphError, match="HWC or HW"):
        run_operator(
            "experimental.warp_perspective",
            [[np.zeros((3, 8, 8), np.uint8)]],
            layout="CHW",
            args={"matrix": H1},
        )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"matrix": [1, 0, 0, 0, 1, 0]}, r"'matrix'.*3x3"),
        ({"matrix": [1, 0, 0, 0, 1, 0, 0, 0, float("inf")]}, r"'matrix'.*finite"),
        ({"border_mode": "mirror"}, r"'border_mode'.*must be one of"),
        ({"pixel_origin": "middle"}, r"'pixel_origin'"),
        ({"interp_type": types.INTERP_LANCZOS3}, "INTERP_CUBIC are supported"),
        ({"size": (5, -1)}, "must be positive"),
    ],
)
def test_invalid_arguments(args, message):
    with pytest.raises(ArgumentError, match=message) as info:
        fn.experimental.warp_perspective(**{"matrix": H1, **args})
    assert "WarpPerspective" in str(info.value)
