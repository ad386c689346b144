"""fn.warp_affine / ops.WarpAffine: pixels against a float64 inverse-mapping reference on real
photos, the matrix as argument, per-sample argument and second input, inverse_map, sizes,
types, the OpenCV path against the exact NumPy sampler, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import OperatorError, types
from augkit.errors import ArgumentError, GraphError
from augkit.operators.geometric import warp
from augkit.operators.geometric.rotate import rotation_matrix
from tests.operator_check import check_operator, run_operator

# Destination-to-source matrices (x, y order) of a few kinds: a rotation with a shift, a shear,
# a zoom, an anisotropic shrink.
MATRICES = [
    np.array([[0.93, -0.37, 40.0], [0.37, 0.93, -60.0]], np.float32),
    np.array([[1.0, 0.42, -30.0], [0.11, 1.0, 5.5]], np.float32),
    np.array([[0.55, 0.0, 80.0], [0.0, 0.6, 40.0]], np.float32),
    np.array([[1.7, 0.1, -10.0], [-0.2, 1.3, 0.0]], np.float32),
]


def round_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round half away from zero and saturate (DALI's ConvertSat), or a float cast."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.copysign(np.floor(np.abs(values) + 0.5), values), info.min, info.max).astype(
        dtype
    )


def sample64(
    image: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    *,
    nearest: bool,
    fill: float | None,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """DALI's sampler written out in float64: the image read at corner coordinates (sx, sy):
    nearest takes ``floor``; linear interpolates the four pixels around ``p - 0.5``; a tap
    outside the image reads ``fill`` (saturated to the type) or the nearest edge pixel."""
    h, w = image.shape[:2]
    data = image.astype(np.float64)
    border = None if fill is None else float(round_sat(np.float64(fill), image.dtype))

    def tap(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        values = data[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
        if border is not None:
            values = np.where(inside[..., None], values, border)
        return values

    if nearest:
        out = tap(np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64))
    else:
        x, y = sx - 0.5, sy - 0.5
        x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
        qx, qy = (x - x0)[..., None], (y - y0)[..., None]
        top = tap(x0, y0) * (1 - qx) + tap(x0 + 1, y0) * qx
        bottom = tap(x0, y0 + 1) * (1 - qx) + tap(x0 + 1, y0 + 1) * qx
        out = top * (1 - qy) + bottom * qy
    return round_sat(out, dtype or image.dtype)


def affine64(image, matrix, out_hw=None, *, nearest=False, fill=None, dtype=None):
    """The reference warp: output pixel (x, y) reads ``matrix @ (x + 0.5, y + 0.5, 1)``."""
    m = np.asarray(matrix, np.float64).reshape(2, 3)
    oh, ow = out_hw or image.shape[:2]
    ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float64) + 0.5
    sx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    sy = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]
    return sample64(image, sx, sy, nearest=nearest, fill=fill, dtype=dtype)


# --- pixels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", [None, 0.0, 170.0])
def test_linear_matches_float64_reference(photos, fill):
    """At most 1 level off (float32 points and OpenCV's float interpolation against float64),
    and that at very few pixels."""
    images = photos[:4]
    check_operator(
        "warp_affine",
        [images],
        lambda image, matrix, **_: affine64(image, matrix, fill=fill),
        layout="HWC",
        args={} if fill is None else {"fill_value": fill},
        arg_inputs={"matrix": MATRICES},
        atol=1,
        mean_atol=0.01,
        expected_layout="HWC",
    )


def test_nearest_matches_float64_reference(photos):
    """Matrices of round decimals put many points exactly on pixel edges in exact arithmetic,
    where float32 (DALI's running sums) and float64 round either way; on matrices of arbitrary
    values a pick flips only where a point is a hair from an edge."""
    images = photos[:4]
    rng = np.random.default_rng(11)
    matrices = [m + rng.uniform(-0.01, 0.01, m.shape).astype(np.float32) for m in MATRICES]
    (out,) = run_operator(
        "warp_affine",
        [images],
        layout="HWC",
        args={"interp_type": types.INTERP_NN, "fill_value": 0},
        arg_inputs={"matrix": matrices},
    )[0]
    for i, image in enumerate(images):
        expected = affine64(image, matrices[i], nearest=True, fill=0)
        # DALI's running float32 sums drift by up to ~0.01 pixel over a row: picks within that
        # of a pixel edge may differ from float64's.
        assert (out.at(i) != expected).any(axis=-1).mean() < 5e-3


def test_matrix_forms_agree(photos):
    """A constant (6 numbers or 2x3), a per-sample argument and a second input: the same."""
    image = photos[0]
    matrix = MATRICES[0]
    outs = [
        run_operator("warp_affine", [[image]], layout="HWC", args={"matrix": m})[0][0].at(0)
        for m in (matrix.reshape(-1).tolist(), matrix)
    ]
    outs.append(
        run_operator("warp_affine", [[image]], layout="HWC", arg_inputs={"matrix": [matrix]})[0][
            0
        ].at(0)
    )
    outs.append(run_operator("warp_affine", [[image], [matrix]], layout=["HWC", ""])[0][0].at(0))
    for other in outs[1:]:
        np.testing.assert_array_equal(outs[0], other)


def test_input_matrix_wins_over_the_argument(photos):
    """As in DALI, the second input is used when both are given."""
    image = photos[1]
    (both,) = run_operator(
        "warp_affine", [[image], [MATRICES[1]]], layout=["HWC", ""], args={"matrix": MATRICES[0]}
    )[0]
    (alone,) = run_operator("warp_affine", [[image], [MATRICES[1]]], layout=["HWC", ""])[0]
    np.testing.assert_array_equal(both.at(0), alone.at(0))


def test_forward_map_is_the_inverse(photos):
    image = photos[2]
    forward = np.array([[1.1, 0.2, -15.0], [-0.1, 0.9, 20.0]])
    inverse = np.linalg.inv(np.vstack([forward, [0, 0, 1]]))[:2]
    (out,) = run_operator(
        "warp_affine", [[image]], layout="HWC", args={"matrix": forward, "inverse_map": False}
    )[0]
    expected = affine64(image, inverse)
    diff = np.abs(out.at(0).astype(int) - expected)
    # float32 (the inverse, the running sums) against float64: ties at round decimals
    assert diff.max() <= 1 and diff.mean() < 0.03


def test_rotation_transform_gives_rotate(photos):
    """fn.transforms.rotation about the centre, as a destination-to-source matrix, is
    fn.rotate with keep_size (DALI's rotate samples [[cos, -sin], [sin, cos]])."""
    image = photos[3]
    h, w = image.shape[:2]
    (rotated,) = run_operator(
        "rotate", [[image]], layout="HWC", args={"angle": 23.0, "keep_size": True}
    )[0]
    (matrix,) = run_operator(
        "transforms.rotation", [], args={"angle": 23.0, "center": (w / 2, h / 2)}, batch_size=1
    )[0]
    (warped,) = run_operator("warp_affine", [[image], [matrix.at(0)]], layout=["HWC", ""])[0]
    diff = np.abs(warped.at(0).astype(int) - rotated.at(0))
    # The translations are rounded in float32 in other orders (c - R @ c against DALI's
    # T(in/2) R T(-out/2)); on an even-sided image many points are half pixels: ties.
    assert diff.max() <= 1 and diff.mean() < 0.03


def test_half_pixel_shift_ties():
    """A shift by half a pixel averages neighbours: 10.5, 15.5, 21.5. DALI's ConvertSat rounds
    them half away from zero (11, 16, 22); augkit's uint8 -> uint8 linear kernel is
    cv2.warpAffine, which rounds ties half to even (10, 16, 22): a level off at most. Another
    output type takes the exact path."""
    image = np.array([[[10], [11], [20], [23]]], np.uint8)
    args = {"matrix": [1, 0, 0.5, 0, 1, 0]}
    (out,) = run_operator("warp_affine", [[image]], layout="HWC", args=args)[0]
    assert out.at(0)[0, :, 0].tolist() == [10, 16, 22, 23]
    (out,) = run_operator(
        "warp_affine", [[image]], layout="HWC", args={**args, "dtype": types.INT16}
    )[0]
    assert out.at(0)[0, :, 0].tolist() == [11, 16, 22, 23]


def test_fill_saturates_and_blends_the_edge():
    image = np.full((4, 4, 3), 100, np.uint8)
    (out,) = run_operator(
        "warp_affine",
        [[image]],
        layout="HWC",
        args={"matrix": [1, 0, 0.5, 0, 1, 0], "fill_value": 300},
    )[0]
    # the last column reads half the image (100), half the fill (saturated to 255)
    assert out.at(0)[:, -1].tolist() == [[178] * 3] * 4
    assert (out.at(0)[:, :-1] == 100).all()


@pytest.mark.parametrize("channels", [1, 2, 5, 9])
def test_any_number_of_channels(channels):
    rng = np.random.default_rng(channels)
    image = rng.integers(0, 256, (37, 29, channels), dtype=np.uint8)
    check_operator(
        "warp_affine",
        [[image]],
        lambda image, **_: affine64(image, MATRICES[1], fill=33.0),
        layout="HWC",
        args={"matrix": MATRICES[1], "fill_value": 33.0},
        atol=1,
        mean_atol=0.01,
    )


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int16, np.int32, np.float32])
def test_types(dtype):
    rng = np.random.default_rng(3)
    matrix = MATRICES[3] + rng.uniform(-0.01, 0.01, (2, 3)).astype(np.float32)
    if np.dtype(dtype).kind == "f":
        image = rng.standard_normal((30, 41, 3)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        image = rng.integers(info.min, info.max, (30, 41, 3), endpoint=True).astype(dtype)
    for nearest in (False, True):
        (out,) = run_operator(
            "warp_affine",
            [[image]],
            layout="HWC",
            args={
                "matrix": matrix,
                "fill_value": -7.0,
                "interp_type": types.INTERP_NN if nearest else types.INTERP_LINEAR,
            },
        )[0]
        expected = affine64(image, matrix, nearest=nearest, fill=-7.0)
        assert out.at(0).dtype == image.dtype
        # float32 points: about 1e-5 pixel off float64's, times neighbour differences as large
        # as the type's range.
        scale = 1e-4 * float(np.abs(image.astype(np.float64)).max())
        tolerance = 0 if nearest else (max(1.0, scale) if image.dtype.kind != "f" else 1e-4)
        np.testing.assert_allclose(
            out.at(0).astype(np.float64), expected.astype(np.float64), rtol=0, atol=tolerance
        )


def test_dtype_float_keeps_the_fraction(photos):
    image = photos[0]
    args = {"matrix": MATRICES[0]}
    (as_uint8,) = run_operator("warp_affine", [[image]], layout="HWC", args=args)[0]
    (as_float,) = run_operator(
        "warp_affine", [[image]], layout="HWC", args={**args, "dtype": types.FLOAT}
    )[0]
    got = as_float.at(0)
    assert got.dtype == np.float32
    exact = warp.warp_affine(image, MATRICES[0], image.shape[:2], dtype=np.float32)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-3)
    # float32 running sums drift by up to ~0.01 pixel along a row, times gradients of photos
    np.testing.assert_allclose(got, affine64(image, MATRICES[0], dtype=np.float64), atol=3)
    # uint8 output: cv2.warpAffine, a level at most off the float output rounded
    diff = np.abs(round_sat(got, np.uint8).astype(int) - as_uint8.at(0))
    assert diff.max() <= 1 and diff.mean() < 0.03


def test_opencv_path_against_the_exact_numpy_sampler(photos):
    """warp.affine against warp.warp_affine (DALI's formulas in NumPy): nearest equal; linear
    on float32 (DALI's points, OpenCV's remap) equal but for OpenCV's interpolation order;
    linear uint8 (cv2.warpAffine) within a level, mostly where points are exact half pixels."""
    from augkit import backend

    cv2 = backend.opencv()
    for image in photos[:4]:
        as_float = image.astype(np.float32)
        for angle in (3.5, 33.0, 90.0, 151.0):
            m = rotation_matrix(image.shape[:2], image.shape[:2], angle)
            for fill in (None, 9.0):
                size = image.shape[:2]
                exact = warp.warp_affine(image, m, size, interp=warp.NEAREST, fill=fill)
                fast = warp.affine(image, m, size, interp=warp.NEAREST, fill=fill, cv2=cv2)
                np.testing.assert_array_equal(fast, exact)
                exact = warp.warp_affine(as_float, m, size, fill=fill)
                fast = warp.affine(as_float, m, size, fill=fill, cv2=cv2)
                np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-4)
                exact = warp.warp_affine(image, m, size, fill=fill)
                fast = warp.affine(image, m, size, fill=fill, cv2=cv2)
                diff = np.abs(fast.astype(int) - exact)
                # 90 degrees: every point a half pixel, DALI's running sums an ulp either side.
                # Those sums drift by up to ~0.01 pixel over a 512-pixel row: where the image
                # blends into a far-off fill value, that is up to 2 levels.
                limit = 0.2 if angle == 90.0 else 0.03
                assert diff.max() <= 2 and (diff > 0).mean() < limit, (angle, fill)
    assert np.array_equal(
        warp.affine(photos[0], m, (50, 60)), warp.warp_affine(photos[0], m, (50, 60))
    )


# --- output size -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "expected"), [(None, (300, 451)), ((100.5, 200.4), (101, 200)), ((0.2, 3), (1, 3))]
)
def test_output_size(photos, size, expected):
    args = {"matrix": MATRICES[0]}
    if size is not None:
        args["size"] = size
    (out,) = run_operator("warp_affine", [[photos[0]]], layout="HWC", args=args)[0]
    assert out.shape() == [(*expected, 3)]


def test_per_sample_size(photos):
    sizes = [(40, 50), (64, 16), (7, 9)]
    (out,) = run_operator(
        "warp_affine",
        [photos[:3]],
        layout="HWC",
        args={"matrix": MATRICES[2]},
        arg_inputs={"size": [np.array(s, np.float32) for s in sizes]},
    )[0]
    assert out.shape() == [(*s, 3) for s in sizes]
    for i, s in enumerate(sizes):
        expected = affine64(photos[i], MATRICES[2], s)
        assert np.abs(out.at(i).astype(int) - expected).max() <= 1


# --- errors ----------------------------------------------------------------------------------


def test_matrix_is_needed():
    with pytest.raises(OperatorError, match="`matrix` argument must be provided"):
        run_operator("warp_affine", [[np.zeros((4, 4, 3), np.uint8)]], layout="HWC")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"matrix": [1, 0, 0, 0, 1]}, r"'matrix'.*6 elements"),
        ({"matrix": [1, 0, 0, 0, 1, 0, 0, 0, 1]}, r"'matrix'.*6 elements"),
        ({"matrix": [1, 0, float("nan"), 0, 1, 0]}, r"'matrix'.*finite"),
        ({"matrix": "eye"}, r"'matrix'"),
        ({"interp_type": types.INTERP_CUBIC}, "only types.INTERP_NN and types.INTERP_LINEAR"),
        ({"size": (0, 10)}, "must be positive"),
        ({"size": 10}, r"'size'"),
        ({"inverse_map": "no"}, r"'inverse_map'"),
        ({"fill_valeu": 3}, "Did you mean 'fill_value'"),
    ],
)
def test_invalid_arguments(args, message):
    from augkit import fn

    with pytest.raises(ArgumentError, match=message) as info:
        fn.warp_affine(**{"matrix": MATRICES[0], **args})
    assert "WarpAffine" in str(info.value)


def test_singular_forward_matrix():
    with pytest.raises(OperatorError, match="singular"):
        run_operator(
            "warp_affine",
            [[np.zeros((4, 4, 3), np.uint8)]],
            layout="HWC",
            args={"matrix": [1, 2, 0, 2, 4, 0], "inverse_map": False},
        )


def test_bad_matrix_input():
    with pytest.raises(OperatorError, match=r"second input.*2x3.*shape \(3, 3\)"):
        run_operator(
            "warp_affine", [[np.zeros((4, 4, 3), np.uint8)], [np.eye(3)]], layout=["HWC", ""]
        )


def test_images_need_hwc():
    with pytest.raises(OperatorError, match="warp_affine needs images with layout HWC"):
        run_operator("warp_affine", [[np.zeros((4, 4), np.uint8)]], args={"matrix": MATRICES[0]})
    with pytest.raises(GraphError, match="layout HWC"):
        run_operator(
            "warp_affine",
            [[np.zeros((3, 4, 4), np.uint8)]],
            layout="CHW",
            args={"matrix": MATRICES[0]},
        )


def test_unsupported_type():
    with pytest.raises(OperatorError, match="warp_affine takes images of type"):
        run_operator(
            "warp_affine",
            [[np.zeros((4, 4, 3), np.float64)]],
            layout="HWC",
            args={"matrix": MATRICES[0]},
        )
