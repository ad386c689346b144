"""fn.rotate / ops.Rotate: pixels against Pillow and a per-pixel loop, direction (np.rot90),
DALI's canvas size rule, per-sample and random angles, fill values, types and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from augkit import OperatorError, Pipeline, backend, fn, types
from augkit.errors import ArgumentError, DeviceError, GraphError
from tests.operator_check import check_operator, run_operator

# Per-sample angles; within (-45, 45) the canvas keeps the parity of the input's sides, so the
# input can be centred on it by whole pixels (what the Pillow references below need).
ANGLES = [-37.5, -12.25, 3.1, 17.0, 29.9, 40.0]


def round_sat_uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(x + 0.5), 0, 255).astype(np.uint8)


def pillow_rotate(
    image: np.ndarray, angle: float, out_hw: tuple[int, int], fill: float | None
) -> np.ndarray:
    """Pillow's bilinear rotate about the centre, on float planes (Pillow truncates uint8).

    Pillow reads only taps inside its image, so the input is first padded: with the fill value
    to the output canvas (then Pillow's bilinear blends the edge into the fill, as DALI does),
    or, for ``fill=None``, with repeated edge pixels far enough that no sample leaves it.
    """
    h, w = image.shape[:2]
    oh, ow = out_hw
    if fill is not None:
        py, px = (oh - h) // 2, (ow - w) // 2
        assert min(py, px) >= 0 and (oh - h) % 2 == 0 and (ow - w) % 2 == 0
        pads, mode, kwargs = ((py, py), (px, px)), "constant", {"constant_values": fill}
    else:
        margin = math.ceil(math.hypot(oh, ow) / 2 - min(h, w) / 2) + 2
        pads, mode, kwargs = ((margin, margin), (margin, margin)), "edge", {}
    padded = np.pad(image.astype(np.float32), (*pads, (0, 0)), mode=mode, **kwargs)
    planes = [
        np.asarray(
            Image.fromarray(padded[..., c]).rotate(
                angle, Image.Resampling.BILINEAR, fillcolor=fill or 0.0
            )
        )
        for c in range(image.shape[2])
    ]
    top, left = (padded.shape[0] - oh) // 2, (padded.shape[1] - ow) // 2
    return round_sat_uint8(np.stack(planes, axis=-1)[top : top + oh, left : left + ow])


def canvas(shape: tuple[int, ...], angle: float) -> tuple[int, int]:
    """DALI's canvas for |angle| < 45 (the parity of each side kept), computed by hand."""
    c, s = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))
    h, w = shape[:2]
    ow = math.ceil(c * w + s * h - 0.01)
    oh = math.ceil(c * h + s * w - 0.01)
    return oh + (oh % 2 != h % 2), ow + (ow % 2 != w % 2)


# --- pixels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", [0.0, 200.0])
def test_fill_value_matches_pillow(photos, fill):
    check_operator(
        "rotate",
        [photos],
        lambda image, angle, **_: pillow_rotate(image, angle, canvas(image.shape, angle), fill),
        layout="HWC",
        args={"fill_value": fill},
        arg_inputs={"angle": [np.float32(a) for a in ANGLES[: len(photos)]]},
        atol=1,  # float32 (DALI) against double (Pillow) at rounding ties
        expected_layout="HWC",
    )


def test_border_clamp_matches_pillow_on_edge_padded_image(photos):
    check_operator(
        "rotate",
        [photos],
        lambda image, angle, **_: pillow_rotate(image, angle, canvas(image.shape, angle), None),
        layout="HWC",
        arg_inputs={"angle": [np.float32(a) for a in ANGLES[: len(photos)]]},
        atol=1,
    )


def direct_rotate(image: np.ndarray, angle: float, out_hw: tuple[int, int], nearest: bool):
    """DALI's rotate written out pixel by pixel (docs/dali_facts.md §2), in float64."""
    h, w, channels = image.shape
    oh, ow = out_hw
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    out = np.zeros((oh, ow, channels), np.uint8)

    def pixel(x: int, y: int) -> np.ndarray:
        return image[min(max(y, 0), h - 1), min(max(x, 0), w - 1)].astype(np.float64)

    for y in range(oh):
        for x in range(ow):
            dx, dy = x + 0.5 - ow / 2, y + 0.5 - oh / 2
            sx, sy = c * dx - s * dy + w / 2, s * dx + c * dy + h / 2
            if nearest:
                value = pixel(math.floor(sx), math.floor(sy))
            else:
                fx, fy = sx - 0.5, sy - 0.5
                x0, y0 = math.floor(fx), math.floor(fy)
                qx, qy = fx - x0, fy - y0
                top = pixel(x0, y0) * (1 - qx) + pixel(x0 + 1, y0) * qx
                bottom = pixel(x0, y0 + 1) * (1 - qx) + pixel(x0 + 1, y0 + 1) * qx
                value = top + (bottom - top) * qy
            out[y, x] = round_sat_uint8(value)
    return out


@pytest.mark.parametrize("angle", [30.0, -73.0, 135.0, 200.5])
def test_small_image_matches_per_pixel_loop(angle):
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (7, 10, 3), dtype=np.uint8)
    (out,) = run_operator("rotate", [[image]], layout="HWC", args={"angle": angle})[0]
    got = out.at(0)
    expected = direct_rotate(image, angle, got.shape[:2], nearest=False)
    assert np.abs(got.astype(int) - expected).max() <= 1
    (out,) = run_operator(
        "rotate",
        [[image]],
        layout="HWC",
        args={"angle": angle, "interp_type": types.INTERP_NN, "keep_size": True},
    )[0]
    expected = direct_rotate(image, angle, image.shape[:2], nearest=True)
    assert np.array_equal(out.at(0), expected)


@pytest.mark.parametrize(("angle", "k"), [(90, 1), (-90, -1), (180, 2), (270, 3), (-270, 1)])
def test_right_angles_are_rot90(photos, angle, k):
    """Counter-clockwise on screen: 90 degrees is NumPy's rot90 (odd and even sizes alike)."""
    check_operator(
        "rotate",
        [photos],
        lambda image, **_: np.rot90(image, k),
        layout="HWC",
        args={"angle": angle},
        iterations=1,
    )


def test_zero_angle_is_identity_and_fill_reaches_the_corners(photos):
    image = photos[0]
    check_operator("rotate", [[image]], lambda image, **_: image, layout="HWC", args={"angle": 0})
    (out,) = run_operator("rotate", [[image]], layout="HWC", args={"angle": 45, "fill_value": 300})[
        0
    ]
    corners = out.at(0)[[0, 0, -1, -1], [0, -1, 0, -1]]
    assert (corners == 255).all()  # 300 saturates to the uint8 maximum, as DALI's ConvertSat


def test_ties_uint8_within_a_level_other_types_half_away_from_zero():
    """A window half a pixel off the grid samples at 10.5. DALI's ConvertSat gives 11; augkit's
    uint8 -> uint8 linear kernel is cv2.warpAffine (for speed), which rounds ties half to even:
    10, a level off (rotate.py's docstring). Any other output type takes the exact path: 11 as
    int16, 10.5 as float."""
    image = np.array([[[10], [11]]], np.uint8)
    args = {"angle": 0, "size": (1, 1)}
    (out,) = run_operator("rotate", [[image]], layout="HWC", args=args)[0]
    assert out.at(0).tolist() == [[[10]]]
    (out,) = run_operator("rotate", [[image]], layout="HWC", args={**args, "dtype": types.INT16})[0]
    assert out.at(0).tolist() == [[[11]]]
    (out,) = run_operator("rotate", [[image]], layout="HWC", args={**args, "dtype": types.FLOAT})[0]
    assert out.at(0).tolist() == [[[10.5]]]


def test_random_angle_per_sample(photos):
    """``angle=fn.random.uniform(range=(-30, 30))``: each image rotated by its own value."""
    pipe = Pipeline(batch_size=len(photos), num_threads=2, device_id=None, seed=5)
    with pipe:
        images = fn.external_source(source=lambda: list(photos), layout="HWC")
        angle = fn.random.uniform(range=(-30, 30))
        pipe.set_outputs(fn.rotate(images, angle=angle, fill_value=0), angle)
    rotated, angles = pipe.run()
    values = [float(angles.at(i)) for i in range(len(photos))]
    assert len(set(values)) == len(values) and all(-30 <= v < 30 for v in values)
    (expected,) = run_operator(
        "rotate",
        [photos],
        layout="HWC",
        args={"fill_value": 0},
        arg_inputs={"angle": [angles.at(i) for i in range(len(photos))]},
    )[0]
    for i in range(len(photos)):
        assert np.array_equal(rotated.at(i), expected.at(i))


def test_float_output_rounds_to_the_uint8_output(photos):
    images = photos[:3]
    args = {"angle": 21.0, "keep_size": True}
    (as_uint8,) = run_operator("rotate", [images], layout="HWC", args=args)[0]
    (as_float,) = run_operator(
        "rotate", [images], layout="HWC", args={**args, "dtype": types.FLOAT}
    )[0]
    for i in range(len(images)):
        got = as_float.at(i)
        assert got.dtype == np.float32
        # the uint8 output is cv2.warpAffine's: within a level of the float one rounded
        diff = np.abs(round_sat_uint8(got).astype(int) - as_uint8.at(i))
        assert diff.max() <= 1 and diff.mean() < 0.03
        assert not np.array_equal(got, np.round(got))  # not rounded


@pytest.mark.parametrize("channels", [1, 2, 5])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32])
def test_opencv_kernel_equals_dali_formulas(dtype, channels):
    """The kernel samples DALI's float32 points with cv2.remap (linear uint8: cv2.warpAffine,
    within a level); warp.warp_affine is DALI's formulas in NumPy (the sampler rotate had
    before): the same, for every type and channel count (2 channels go one by one: OpenCV's
    2-channel float path is fixed-point)."""
    rng = np.random.default_rng(channels)
    if np.dtype(dtype).kind == "f":
        image = rng.standard_normal((31, 44, channels)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        image = rng.integers(info.min, info.max, (31, 44, channels), endpoint=True).astype(dtype)
    from augkit.operators.geometric import warp
    from augkit.operators.geometric.rotate import rotated_canvas_size, rotation_matrix

    for angle, nearest, fill in ((27.0, False, None), (-61.5, False, 12.0), (112.0, True, 3.0)):
        out_size = rotated_canvas_size(image.shape[:2], angle)
        expected = warp.warp_affine(
            image,
            rotation_matrix(image.shape[:2], out_size, angle),
            out_size,
            interp=warp.NEAREST if nearest else warp.LINEAR,
            fill=fill,
        )
        args = {"angle": angle, "interp_type": types.INTERP_NN if nearest else types.INTERP_LINEAR}
        if fill is not None:
            args["fill_value"] = fill
        (out,) = run_operator("rotate", [[image]], layout="HWC", args=args)[0]
        got = out.at(0)
        assert got.dtype == image.dtype and got.shape == expected.shape
        if dtype == np.uint8 and not nearest:
            # cv2.warpAffine: its own source points and ties half to even (the docstring)
            diff = np.abs(got.astype(int) - expected)
            assert diff.max() <= 1 and (diff > 0).mean() < 0.03
        elif nearest or np.dtype(dtype).itemsize == 1:
            np.testing.assert_array_equal(got, expected)
        else:  # float32 interpolation in OpenCV's order: an ulp of float32 (or a level)
            scale = float(np.abs(image.astype(np.float64)).max())
            tolerance = 1e-6 * scale if image.dtype.kind == "f" else max(1.0, 2e-7 * scale)
            np.testing.assert_allclose(got.astype(np.float64), expected, rtol=0, atol=tolerance)


# --- output size -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "args", "expected"),
    [
        ((480, 640), {"angle": 30}, (736, 796)),  # 794.3 -> 795, parity of 640 -> 796
        ((480, 640), {"angle": -30}, (736, 796)),
        ((301, 451), {"angle": 30}, (487, 543)),  # odd sides stay odd
        ((480, 640), {"angle": 90}, (640, 480)),
        ((301, 451), {"angle": 90}, (451, 301)),
        ((512, 512), {"angle": 45}, (726, 726)),  # 724.1 -> 725, parity of 512 -> 726
        ((301, 451), {"angle": 45}, (533, 533)),
        ((300, 400), {"angle": 45}, (496, 496)),
        ((480, 640), {"angle": 0}, (480, 640)),
        ((480, 640), {"angle": 180}, (480, 640)),
        ((480, 640), {"angle": 30, "keep_size": True}, (480, 640)),
        ((480, 640), {"angle": 30, "size": (100.5, 200.4)}, (101, 200)),
        ((480, 640), {"angle": 30, "size": (100, 200), "keep_size": True}, (100, 200)),
    ],
)
def test_output_size(shape, args, expected):
    (out,) = run_operator("rotate", [[np.zeros((*shape, 1), np.uint8)]], layout="HWC", args=args)[0]
    assert out.shape() == [(*expected, 1)]


def test_per_sample_output_size(photos):
    sizes = [(100, 120), (64, 64), (90, 50)]
    (out,) = run_operator(
        "rotate",
        [photos[:3]],
        layout="HWC",
        args={"angle": 10},
        arg_inputs={"size": [np.array(s, np.float32) for s in sizes]},
    )[0]
    assert out.shape() == [(*s, 3) for s in sizes]


# --- errors ---------------------------------------------------------------------------------


def test_images_need_hwc():
    shape = (5000,)
    with pytest.raises(OperatorError, match="rotate needs images with layout HWC") as info:
        run_operator("rotate", [[np.zeros(shape, np.uint8)]], args={"angle": 5})
    assert f"got a sample of shape {shape}" in str(info.value)


def test_a_declared_chw_layout_is_refused_at_build():
    with pytest.raises(GraphError, match=r"layout 'CHW'.*expects an image with layout HWC"):
        run_operator("rotate", [[np.zeros((3, 40, 60), np.uint8)]], layout="CHW", args={"angle": 5})


def test_angle_is_required():
    with pytest.raises(ArgumentError, match="missing required argument 'angle'"):
        fn.rotate()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"interp_type": types.INTERP_CUBIC}, "only types.INTERP_NN and types.INTERP_LINEAR"),
        ({"interp_type": "linear"}, "interp_type"),
        ({"size": (0, 10)}, "must be positive"),
        ({"axis": (0, 0, 1)}, "'axis' is for volumes"),
        ({"angel": 3}, "Did you mean 'angle'"),
    ],
)
def test_invalid_arguments(args, message):
    with pytest.raises(ArgumentError, match=message):
        fn.rotate(**{"angle": 10, **args})


def test_gpu_runs_where_there_is_one_or_says_why_not():
    # the GPU kernel itself: tests/operators/test_gpu_geometric.py
    reason = backend.gpu_unavailable_reason()
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)], layout="HWC")
        pipe.set_outputs(fn.rotate(images, angle=3, device="gpu"))
    if reason is not None:
        with pytest.raises(DeviceError, match=r"Rotate_\d+ \(device='gpu'\) needs a GPU, but"):
            pipe.build()
        return
    (out,) = pipe.run()
    assert out.device == "gpu"
