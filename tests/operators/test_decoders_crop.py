"""fn.decoders.image_crop / image_random_crop / image_slice: each output is Pillow's decode of
the file cut at the window (fn.crop's, the random generator's, fn.slice's), per-sample windows,
output types, EXIF orientation, and the errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageOps

from augkit import types
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.geometric.crop_window import random_crop_window
from augkit.random import sample_streams, stream_key
from tests.operator_check import check_operator, run_operator


@pytest.fixture(scope="module")
def files(photo_paths) -> list[np.ndarray]:
    return [np.fromfile(p, np.uint8) for p in photo_paths[:4]]


def pillow_decode(data: np.ndarray, mode: str = "RGB") -> np.ndarray:
    image = ImageOps.exif_transpose(Image.open(io.BytesIO(data.tobytes())))
    out = np.asarray(image.convert(mode))
    return out[..., None] if out.ndim == 2 else out


def half_away(x: float) -> int:
    return int(np.floor(abs(x) + 0.5) * np.sign(x))


def test_image_crop_is_the_decode_cut_at_fn_crops_window(files):
    def ref(data, crop, crop_pos_x, crop_pos_y, **_):
        image = pillow_decode(data)
        h, w = crop
        y = half_away(float(np.float32(crop_pos_y)) * (image.shape[0] - h))
        x = half_away(float(np.float32(crop_pos_x)) * (image.shape[1] - w))
        return image[y : y + h, x : x + w]

    check_operator(
        "decoders.image_crop",
        [files],
        ref,
        args={"crop": (100, 120), "crop_pos_x": 0.3, "crop_pos_y": 0.7},
        expected_layout="HWC",
    )


def test_image_crop_per_sample_positions_and_gray(files):
    xs = [np.float32(v) for v in (0.0, 0.25, 0.5, 1.0)][: len(files)]

    def ref(data, crop_pos_x, **_):
        image = pillow_decode(data, "L")
        x = half_away(float(crop_pos_x) * (image.shape[1] - 64))
        y = half_away(float(np.float32(0.5)) * (image.shape[0] - 50))
        return image[y : y + 50, x : x + 64]

    out = run_operator(
        "decoders.image_crop",
        [files],
        args={"crop_h": 50, "crop_w": 64, "output_type": types.GRAY},
        arg_inputs={"crop_pos_x": xs},
    )[0][0]
    for i, data in enumerate(files):
        got, want = out.at(i), ref(data, xs[i])
        assert got.shape == (50, 64, 1)
        # libjpeg's own luma against Pillow's RGB -> L: within a level or two
        assert np.abs(got.astype(int) - want).mean() < 0.5


def test_image_slice_named_and_positional(files):
    def ref(data, **_):
        image = pillow_decode(data)
        h, w = image.shape[:2]
        x0, y0 = (
            half_away(np.float32(0.1) * np.float32(w)),
            half_away(np.float32(0.2) * np.float32(h)),
        )
        x1, y1 = half_away((0.1 + 0.5) * w), half_away((0.2 + 0.25) * h)
        return image[y0:y1, x0:x1]

    check_operator(
        "decoders.image_slice",
        [files],
        None,
        args={"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.25)},
    )
    out = run_operator(
        "decoders.image_slice", [files], args={"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.25)}
    )[0][0]
    for i, data in enumerate(files):
        want = ref(data)
        assert out.at(i).shape == want.shape
        assert np.abs(out.at(i).astype(int) - want).max() <= 1  # simplejpeg == Pillow's decode

    anchors = [np.int32([10 + i, 5]) for i in range(len(files))]
    shapes = [np.int32([60, 40 + i]) for i in range(len(files))]
    out = run_operator("decoders.image_slice", [files, anchors, shapes], layout=["", "", ""])[0][0]
    for i, data in enumerate(files):
        want = pillow_decode(data)[5 : 45 + i, 10 + i : 70 + i]
        assert np.abs(out.at(i).astype(int) - want).max() <= 1


def test_image_random_crop_cuts_the_window_its_sample_drew(files):
    seed = 99
    out = run_operator(
        "decoders.image_random_crop", [files], args={"seed": seed, "random_area": (0.2, 0.6)}
    )[0][0]
    streams = sample_streams(stream_key(seed), 0, len(files))
    for i, data in enumerate(files):
        image = pillow_decode(data)
        y, x, h, w = random_crop_window(
            image.shape[0], image.shape[1], streams.generator(i), area=(0.2, 0.6)
        )
        got = out.at(i)
        assert got.shape == (h, w, 3)
        area = h * w / (image.shape[0] * image.shape[1])
        assert 0.19 <= area <= 0.61
        assert np.abs(got.astype(int) - image[y : y + h, x : x + w]).max() <= 1


def test_random_crop_is_deterministic_per_seed(files):
    args = {"seed": 5}
    a = run_operator("decoders.image_random_crop", [files], args=args, iterations=2)
    b = run_operator("decoders.image_random_crop", [files], args=args, iterations=2)
    for it in range(2):
        for i in range(len(files)):
            np.testing.assert_array_equal(a[it][0].at(i), b[it][0].at(i))
    assert a[0][0].at(0).shape != a[1][0].at(0).shape or not np.array_equal(
        a[0][0].at(0), a[1][0].at(0)
    )


def test_window_is_taken_after_the_exif_orientation():
    image = np.zeros((40, 60, 3), np.uint8)
    image[:10] = 255  # a white band at the top of the stored image
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "JPEG", exif=exif, quality=95)
    data = np.frombuffer(buf.getvalue(), np.uint8)
    out = run_operator("decoders.image_crop", [[data]], args={"crop": (60, 10), "crop_pos_x": 1.0})[
        0
    ][0].at(0)
    assert out.shape == (60, 10, 3)  # displayed image is 60 x 40: the band is on the right
    assert out.mean() > 200


def test_window_leaving_the_image_raises(files):
    with pytest.raises(OperatorError, match="does not fit in the decoded image") as info:
        run_operator("decoders.image_crop", [files[:1]], args={"crop": (10000, 120)})
    assert "image_crop" in str(info.value)
    with pytest.raises(OperatorError, match="does not fit"):
        run_operator(
            "decoders.image_slice", [files[:1]], args={"start": (-10, 5), "shape": (100, 100)}
        )


@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        ("decoders.image_crop", {"crop": (10, 10), "crop_h": 5}, "cannot be combined"),
        (
            "decoders.image_crop",
            {"crop": (10, 10), "out_of_bounds_policy": "pad"},
            "out_of_bounds_policy",
        ),
        ("decoders.image_random_crop", {"random_area": (0.9, 0.1)}, "empty range"),
        ("decoders.image_slice", {"start": (1, 1), "rel_start": (0.1, 0.1)}, "mutually exclusive"),
        (
            "decoders.image_slice",
            {"start": (1, 1), "dct_downscale_hint": 100},
            "dct_downscale_hint",
        ),
    ],
)
def test_bad_arguments(files, name, args, match):
    with pytest.raises((ArgumentError, OperatorError), match=match):
        run_operator(name, [files[:1]], args=args)
