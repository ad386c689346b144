"""fn.resize / ops.Resize: pixels against Pillow on real photos, DALI's output-size rules, the
filters, per-sample sizes, layouts and types, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from augkit import OperatorError, Pipeline, fn, types
from augkit import backend as devices
from augkit.errors import ArgumentError, DeviceError
from augkit.operators.geometric import resize_torch, warp
from tests.operator_check import check_operator, run_operator


@pytest.fixture(params=["torch", "pillow"])
def backend(request, monkeypatch) -> dict:
    """Runs a test with each resize back end (geometric/resize_torch.py) and returns
    check_operator's tolerances for it: Pillow is the reference itself (exact); torch's uint8
    kernel is within 2 levels per pixel and a mean 0.25 per photo (0.03 measured on average)."""
    monkeypatch.setattr(resize_torch, "BACKEND", request.param)
    if request.param == "pillow":
        return {}
    if resize_torch.torch_module() is None:
        pytest.skip("torch (with its AVX2 uint8 resize kernel) is not available here")
    return {"atol": 2, "mean_atol": 0.25}


def pillow_resize(image: np.ndarray, out_hw: tuple[int, int], **kwargs) -> np.ndarray:
    """Pillow's resize of an HWC uint8 image to (H, W), BILINEAR unless told otherwise."""
    resample = kwargs.pop("resample", Image.Resampling.BILINEAR)
    out = Image.fromarray(image).resize((out_hw[1], out_hw[0]), resample, **kwargs)
    return np.asarray(out)


def round_half_away(x: float) -> int:
    return math.floor(abs(x) + 0.5)


def keep_aspect_size(shape: tuple[int, ...], scale: float) -> tuple[int, int]:
    return round_half_away(shape[0] * scale), round_half_away(shape[1] * scale)


def pillow_resize_subpixel(image: np.ndarray, scale: float) -> np.ndarray:
    """Pillow BILINEAR with DALI's default ``subpixel_scale=True`` geometry: both axes scaled by
    exactly ``scale``, the rounded output centred on the image (the source window may reach
    past the border, where the edge pixel repeats)."""
    out_hw = keep_aspect_size(image.shape, scale)
    pad = 4
    padded = np.pad(image, ((pad, pad), (pad, pad), (0, 0)), mode="edge")
    box = []
    for axis in (1, 0):
        centre = image.shape[axis] / 2 + pad
        half = out_hw[axis] / scale / 2
        box.append((centre - half, centre + half))
    return pillow_resize(padded, out_hw, box=(box[0][0], box[1][0], box[0][1], box[1][1]))


# --- pixels against Pillow on real photos --------------------------------------------------


def test_stretch_to_300x300_is_pillow_bilinear(photos, backend):
    check_operator(
        "resize",
        [photos],
        lambda image, **_: pillow_resize(image, (300, 300)),
        layout="HWC",
        args={"resize_x": 300, "resize_y": 300},
        expected_layout="HWC",
        **backend,
    )


@pytest.mark.parametrize(
    ("args", "scale_of"),
    [
        ({"resize_x": 300}, lambda shape: 300 / shape[1]),
        ({"resize_shorter": 256}, lambda shape: 256 / min(shape[:2])),
        ({"resize_shorter": 600}, lambda shape: 600 / min(shape[:2])),  # upscale
        ({"size": (0, 700)}, lambda shape: 700 / shape[1]),  # upscale
    ],
    ids=["resize_x", "resize_shorter", "upscale_shorter", "upscale_size"],
)
def test_keep_aspect_is_pillow_bilinear_within_half_a_level(photos, args, scale_of):
    """The accuracy bar: mean |difference| to Pillow's BILINEAR below 0.5 per photo. Pillow is
    given DALI's source window (subpixel_scale), since the rounded size is not the exact one."""
    check_operator(
        "resize",
        [photos],
        lambda image, **_: pillow_resize_subpixel(image, scale_of(image.shape)),
        layout="HWC",
        args=args,
        atol=6,  # border pixels: Pillow renormalises where DALI repeats the edge
        mean_atol=0.5,
    )


@pytest.mark.parametrize(
    "args", [{"resize_x": 300}, {"resize_shorter": 256}, {"resize_longer": 700}]
)
def test_without_subpixel_scale_is_plain_pillow_bilinear(photos, args, backend):
    def reference(image, **_):
        h, w = image.shape[:2]
        if "resize_x" in args:
            scale = args["resize_x"] / w
        elif "resize_shorter" in args:
            scale = args["resize_shorter"] / min(h, w)
        else:
            scale = args["resize_longer"] / max(h, w)
        return pillow_resize(image, keep_aspect_size(image.shape, scale))

    check_operator(
        "resize",
        [photos],
        reference,
        layout="HWC",
        args={**args, "subpixel_scale": False},
        **backend,
    )


def test_per_sample_sizes(photos, backend):
    widths = [200, 333, 64, 500, 451, 128][: len(photos)]
    heights = [100, 250, 300, 77, 300, 640][: len(photos)]
    check_operator(
        "resize",
        [photos],
        lambda image, resize_x, resize_y, **_: pillow_resize(image, (int(resize_y), int(resize_x))),
        layout="HWC",
        arg_inputs={
            "resize_x": [np.float32(w) for w in widths],
            "resize_y": [np.float32(h) for h in heights],
        },
        **backend,
    )


@pytest.mark.parametrize(
    ("interp", "resample"),
    [
        (types.INTERP_CUBIC, Image.Resampling.BICUBIC),
        (types.INTERP_LANCZOS3, Image.Resampling.LANCZOS),
        (types.INTERP_TRIANGULAR, Image.Resampling.BILINEAR),
    ],
)
def test_interp_types_are_pillow_filters(photos, interp, resample, backend):
    size = {"resize_x": 300, "resize_y": 200}
    check_operator(
        "resize",
        [photos[:3]],
        lambda image, **_: pillow_resize(image, (200, 300), resample=resample),
        layout="HWC",
        args={**size, "interp_type": interp},
        **(backend if resample == Image.Resampling.BILINEAR else {}),
    )


def coordinates(h: int, w: int) -> np.ndarray:
    """A float32 HWC image whose pixel (y, x) holds y * 4096 + x (exact in float32)."""
    return (np.arange(h)[:, None, None] * 4096.0 + np.arange(w)[None, :, None]).astype(np.float32)


def centre_sources(n_in: float, n_out: int, lo: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The exact (float64) source coordinate of each output pixel centre, and whether it is
    within 1e-3 of a pixel edge (where float32 rounding may pick either neighbour)."""
    c = lo + (np.arange(n_out) + 0.5) * (n_in / n_out)
    return c, np.abs(c - np.round(c)) < 1e-3


@pytest.mark.parametrize(
    ("shape", "size"),
    [((60, 80), (30, 40)), ((57, 83), (173, 211)), ((300, 451), (97, 1000)), ((5, 7), (64, 3))],
)
def test_nearest_picks_the_pixel_under_each_output_centre(shape, size):
    """INTERP_NN takes the source pixel under each output pixel's centre, ``floor((x + 0.5) *
    scale)``, as DALI does (not Pillow's NEAREST, which breaks ties the other way); only at an
    exact tie may float32 rounding pick the neighbour."""
    image = coordinates(*shape)
    out = run_operator(
        "resize", [[image]], layout="HWC", args={"size": size, "interp_type": types.INTERP_NN}
    )[0][0].at(0)[..., 0]
    assert out.shape == size
    rows, cols = out // 4096, out % 4096
    for axis, got in ((0, rows[:, 0]), (1, cols[0])):
        c, tie = centre_sources(shape[axis], size[axis])
        ref = np.clip(np.floor(c), 0, shape[axis] - 1)
        ok = (got == ref) | (tie & (np.abs(got - ref) <= 1))
        assert ok.all(), f"axis {axis}: {np.nonzero(~ok)[0][:10]}"
    # every output row (column) is one source row (column): a pure gather, no blending
    assert (rows == rows[:, :1]).all() and (cols == cols[:1]).all()


def test_nearest_on_photos_is_a_gather_of_source_pixels(photos):
    image = photos[0]
    h, w = image.shape[:2]
    out = run_operator(
        "resize", [[image]], layout="HWC", args={"size": (123, 77), "interp_type": types.INTERP_NN}
    )[0][0].at(0)
    rows = np.floor((np.arange(123) + 0.5) * (h / 123)).astype(int)
    cols = np.floor((np.arange(77) + 0.5) * (w / 77)).astype(int)
    expected = image[rows][:, cols]
    # float32 rounding may move a tie by one pixel; nowhere else may they differ
    same_rows = (out == expected).all(axis=(1, 2))
    assert same_rows.mean() > 0.95 and (out == expected).all(axis=(0, 2)).mean() > 0.95


def test_nearest_integer_upscale_repeats_pixels(photos):
    image = photos[1][:40, :50]
    out = run_operator(
        "resize", [[image]], layout="HWC", args={"size": (120, 200), "interp_type": types.INTERP_NN}
    )[0][0].at(0)
    np.testing.assert_array_equal(out, image.repeat(3, axis=0).repeat(4, axis=1))


def test_nearest_flip_and_roi():
    image = coordinates(10, 12)
    out = run_operator(
        "resize",
        [[image]],
        layout="HWC",
        args={
            "size": (5, 4),
            "roi_start": (10, 2),
            "roi_end": (0, 10),
            "interp_type": types.INTERP_NN,
        },
    )[0][0].at(0)[..., 0]
    assert (out // 4096)[:, 0].tolist() == [9, 7, 5, 3, 1]  # flipped: from the bottom
    assert (out % 4096)[0].tolist() == [3, 5, 7, 9]  # columns 2..10, step 2, centres


def linear_without_antialias(image: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Plain bilinear sampling at pixel centres (src = (dst + 0.5) * scale - 0.5), clamped
    borders, float64, rounded half up: what DALI's Linear filter computes."""
    out = image.astype(np.float64)
    for axis in (0, 1):
        n_in, n_out = out.shape[axis], out_hw[axis]
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        lo = np.floor(src).astype(int)
        frac = (src - lo).reshape((-1, 1, 1) if axis == 0 else (1, -1, 1))
        a = np.take(out, np.clip(lo, 0, n_in - 1), axis=axis)
        b = np.take(out, np.clip(lo + 1, 0, n_in - 1), axis=axis)
        out = a + (b - a) * frac
    return np.floor(out + 0.5).astype(np.uint8)


def test_antialias_false_is_plain_bilinear(photos):
    outputs = check_operator(
        "resize",
        [photos[:3]],
        lambda image, **_: linear_without_antialias(image, (100, 150)),
        layout="HWC",
        args={"resize_x": 150, "resize_y": 100, "antialias": False},
        atol=1,
    )
    # ...and it is not the antialiased result (which averages over 2-4 pixels per output).
    smooth = pillow_resize(photos[0], (100, 150))
    assert np.abs(outputs[0].at(0).astype(float) - smooth).mean() > 2


def test_numpy_resampler_is_pillow_bilinear_inside_the_border(photos):
    """warp.resample_axis (DALI's Triangular weights, float32) against Pillow: Pillow rounds to
    uint8 between its passes, so they differ by at most 1 level away from the border."""
    for image in photos[:3]:
        data = image.astype(np.float32)
        for axis, n in ((0, 123), (1, 201)):
            data = warp.resample_axis(data, axis, n, 0.0, image.shape[axis], warp.TRIANGULAR, True)
        ours = warp.truncate_sat(data, np.dtype(np.uint8)).astype(int)
        diff = np.abs(ours - pillow_resize(image, (123, 201)))
        assert diff[4:-4, 4:-4].max() <= 1
        assert diff.mean() < 0.25


def test_gaussian_keeps_a_flat_image_flat():
    flat = [np.full((60, 90, 3), 77, np.uint8)]
    (out,) = run_operator(
        "resize",
        [flat],
        layout="HWC",
        args={"resize_x": 40, "resize_y": 25, "interp_type": types.INTERP_GAUSSIAN},
    )[0]
    assert out.at(0).shape == (25, 40, 3)
    assert (out.at(0) == 77).all()


# --- DALI's output size rules -------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "args", "expected"),
    [
        ((480, 640), {"resize_x": 300}, (225, 300)),  # docs/dali_facts.md §1 example
        ((480, 640), {"resize_y": 240}, (240, 320)),
        ((480, 640), {"resize_x": 300, "resize_y": 100}, (100, 300)),
        ((480, 640), {"size": (0, 300)}, (225, 300)),
        ((480, 640), {"size": (100, 0)}, (100, 133)),
        ((480, 640), {"resize_x": 300, "mode": "stretch"}, (480, 300)),
        ((480, 640), {"size": (300, 300), "mode": "not_larger"}, (225, 300)),
        ((480, 640), {"size": 300, "mode": "not_smaller"}, (300, 400)),
        ((1200, 600), {"size": 800, "mode": "not_smaller", "max_size": 1400}, (1400, 700)),
        ((600, 1200), {"size": 800, "mode": "not_smaller", "max_size": 1400}, (700, 1400)),
        ((480, 640), {"resize_shorter": 256}, (256, 341)),
        ((480, 640), {"resize_shorter": 256, "max_size": 300}, (225, 300)),
        ((480, 640), {"resize_longer": 320}, (240, 320)),
        ((480, 640), {"resize_x": 300, "max_size": (200, 0)}, (200, 300)),
        ((300, 451), {"resize_x": 300}, (200, 300)),
        ((5, 2), {"resize_x": 1}, (3, 1)),  # 2.5 rounds half away from zero
        ((480, 640), {"resize_x": 1}, (1, 1)),  # 0.75 rounds to 1
        ((1000, 10), {"resize_y": 1}, (1, 1)),  # 0.01 is raised to 1
        ((480, 640), {"resize_x": 0}, (480, 640)),  # nothing requested: unchanged
        ((480, 640), {"resize_x": -300}, (225, 300)),  # negative: flipped
        (
            (480, 640),
            {
                "roi_start": (0.25, 0.0),
                "roi_end": (0.75, 0.5),
                "roi_relative": True,
                "resize_x": 100,
            },
            (75, 100),
        ),
    ],
)
def test_output_size(shape, args, expected):
    (out,) = run_operator("resize", [[np.zeros((*shape, 1), np.uint8)]], layout="HWC", args=args)[0]
    assert out.shape() == [(*expected, 1)]


def test_negative_size_flips(photos, backend):
    image = photos[0]
    check_operator(
        "resize",
        [[image]],
        lambda image, **_: pillow_resize(image, (150, 200))[::-1, ::-1],
        layout="HWC",
        args={"resize_x": -200, "resize_y": -150},
        **backend,
    )


def test_roi_is_crop_then_resize(photos):
    image = photos[0]
    width = image.shape[1]
    check_operator(
        "resize",
        [[image]],
        lambda image, **_: image[10:110, 20:220],
        layout="HWC",
        args={"roi_start": (10, 20), "roi_end": (110, 220), "size": (100, 200)},
    )
    # start > end flips; the filter still reads the pixels just outside the ROI.
    mirrored = np.ascontiguousarray(image[:, ::-1])
    check_operator(
        "resize",
        [[image]],
        lambda image, **_: pillow_resize(
            mirrored, (50, 100), box=(width - 220, 10, width - 20, 110)
        ),
        layout="HWC",
        args={"roi_start": (10, 220), "roi_end": (110, 20), "size": (50, 100)},
    )


# --- layouts and types --------------------------------------------------------------------


def test_chw_layout(photos, backend):
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:3]]
    check_operator(
        "resize",
        [chw],
        lambda image, **_: pillow_resize(image.transpose(1, 2, 0), (120, 160)).transpose(2, 0, 1),
        layout="CHW",
        args={"size": (120, 160)},
        expected_layout="CHW",
        **backend,
    )


def test_four_channels_are_not_premultiplied(photos, backend):
    """Pillow premultiplies alpha in "RGBA" mode; DALI treats the 4 channels alike."""
    alpha = np.linspace(0, 255, photos[0].shape[1]).astype(np.uint8)
    rgba = np.dstack([photos[0], np.broadcast_to(alpha, photos[0].shape[:2])])
    check_operator(
        "resize",
        [[rgba]],
        lambda image, **_: np.dstack([pillow_resize(image[..., c], (90, 130)) for c in range(4)]),
        layout="HWC",
        args={"size": (90, 130)},
        **backend,
    )


def test_float_output_and_float_input(photos):
    images = photos[:3]
    for inputs, args in (
        (images, {"dtype": types.FLOAT}),
        ([p.astype(np.float32) for p in images], {}),
    ):
        (out,) = run_operator("resize", [inputs], layout="HWC", args={"size": (111, 222), **args})[
            0
        ]
        for i, image in enumerate(images):
            got = out.at(i)
            assert got.dtype == np.float32
            # Pillow's 8-bit filter rounds between its passes; the float result does not.
            assert np.abs(got - pillow_resize(image, (111, 222))).max() <= 1


def test_int16_input(photos):
    signed = [(p.astype(np.int16) - 128) * 100 for p in photos[:2]]
    (out,) = run_operator("resize", [signed], layout="HWC", args={"size": (64, 96)})[0]
    for i, image in enumerate(photos[:2]):
        got = out.at(i)
        assert got.dtype == np.int16
        expected = (pillow_resize(image, (64, 96)).astype(np.int32) - 128) * 100
        assert np.abs(got - expected).max() <= 100


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5000,), (40, 60)])
def test_images_need_three_dimensions(shape):
    with pytest.raises(OperatorError, match="resize needs images with layout HWC or CHW") as info:
        run_operator("resize", [[np.zeros(shape, np.uint8)]], args={"resize_x": 10})
    assert f"got a sample of shape {shape}" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ({"size": (10, 10), "resize_x": 5}, ("resize_x", "size")),
        ({"resize_shorter": 10, "resize_longer": 20}, ("resize_shorter", "resize_longer")),
        ({"resize_y": 10, "resize_longer": 20}, ("resize_y", "resize_longer")),
        ({"resize_shorter": 10, "mode": "stretch"}, ("mode", "resize_shorter")),
        ({"resize_x": 10, "roi_start": (0, 0)}, ("roi_start", "roi_end")),
    ],
)
def test_conflicting_arguments(args, names):
    with pytest.raises(ArgumentError) as info:
        fn.resize(**args)
    for name in names:
        assert f"'{name}'" in str(info.value)


def test_unknown_argument_suggests_the_right_one():
    with pytest.raises(ArgumentError, match="Did you mean 'resize_shorter'"):
        fn.resize(resize_shortr=256)


@pytest.mark.parametrize("value", [42, "linear", 1.5])
def test_invalid_interp_type(value):
    with pytest.raises(ArgumentError, match=r"interp_type.*INTERP_LINEAR"):
        fn.resize(resize_x=10, interp_type=value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"mode": "fit"}, "must be one of 'default', 'stretch'"),
        ({"resize_x": 10, "resize_z": 3}, "2-D images"),
        ({"size": (1, 2, 3)}, "expected 1 or 2 numbers"),
    ],
)
def test_invalid_values(args, message):
    with pytest.raises(ArgumentError, match=message):
        fn.resize(**args)


def test_dtype_must_be_input_type_or_float():
    with pytest.raises(OperatorError, match=r"dtype must be the input type \(uint8\) or types"):
        run_operator(
            "resize",
            [[np.zeros((8, 8, 3), np.uint8)]],
            layout="HWC",
            args={"resize_x": 4, "dtype": types.INT32},
        )


def test_no_size_given():
    with pytest.raises(OperatorError, match="no output size"):
        run_operator("resize", [[np.zeros((8, 8, 3), np.uint8)]], layout="HWC")


def test_gpu_runs_where_there_is_one_or_says_why_not():
    # the GPU kernel itself: tests/operators/test_gpu_geometric.py
    reason = devices.gpu_unavailable_reason()
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)], layout="HWC")
        pipe.set_outputs(fn.resize(images, resize_x=2, device="gpu"))
    if reason is not None:
        with pytest.raises(DeviceError, match=r"Resize_\d+ \(device='gpu'\) needs a GPU, but"):
            pipe.build()
        return
    (out,) = pipe.run()
    assert out.device == "gpu"
