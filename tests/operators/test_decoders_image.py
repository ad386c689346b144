"""fn.decoders.image: pixels against Pillow's own decode, colour spaces, formats, EXIF
orientation, and errors that name the file; JPEG tests run with each back end (simplejpeg's
fast path and Pillow, see decoders/jpeg.py). More on the fast path: test_decoders_jpeg.py."""

from __future__ import annotations

import io
import pathlib
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from augkit import backend, fn, ops, types
from augkit.errors import ArgumentError, DeviceError, OperatorError
from augkit.operators.decoders import jpeg
from augkit.pipeline import Pipeline
from tests.operator_check import check_operator, run_operator

# The fast path's bar: a mean of at most 1 level per image from Pillow's decode (RGB is in fact
# bit-identical today: the same libjpeg-turbo settings), no pixel more than 32 levels away
# (GRAY is libjpeg's luma plane: up to 20 levels from Pillow's at saturated colours).
FAST_TOLERANCE = {"atol": 32, "mean_atol": 1.0}


@pytest.fixture(params=["simplejpeg", "pillow"])
def jpeg_backend(request, monkeypatch) -> dict:
    """Runs a test with each JPEG back end; returns check_operator's tolerances for it."""
    monkeypatch.setattr(jpeg, "BACKEND", request.param)
    if request.param == "pillow":
        return {}
    if jpeg.fast_backend() is None:
        pytest.skip("simplejpeg is not installed")
    return FAST_TOLERANCE


def assert_close(got: np.ndarray, want: np.ndarray, tolerance: dict) -> None:
    """Equal under Pillow, within the fast path's bar otherwise."""
    assert got.shape == want.shape
    diff = np.abs(got.astype(float) - want)
    assert diff.max() <= tolerance.get("atol", 0)
    assert diff.mean() <= tolerance.get("mean_atol", 0)


def encoded(image: Image.Image, fmt: str, **kwargs) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return np.frombuffer(buffer.getvalue(), np.uint8)


def pillow(data: np.ndarray, mode: str = "RGB") -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data.tobytes())).convert(mode))


def decode(samples: list[np.ndarray], **args) -> list[np.ndarray]:
    (out,) = run_operator("decoders.image", [samples], args=args)[0]
    assert out.layout() == "HWC"
    return [out.at(k) for k in range(len(out))]


@pytest.fixture(scope="module")
def jpegs(photo_paths) -> list[np.ndarray]:
    return [np.fromfile(p, np.uint8) for p in photo_paths[::2]]


@pytest.fixture(scope="module")
def photo(photo_paths) -> np.ndarray:
    return np.asarray(Image.open(photo_paths[0]).convert("RGB"))[:120, :90]


# --- pixels ----------------------------------------------------------------------------------


def test_rgb_is_pillows_decode(jpegs, jpeg_backend):
    outs = check_operator(
        "decoders.image", [jpegs], lambda data: pillow(data), expected_layout="HWC", **jpeg_backend
    )
    assert outs[0].dtype == types.UINT8


def test_bgr_is_rgb_reversed(jpegs, jpeg_backend):
    check_operator(
        "decoders.image",
        [jpegs],
        lambda data, **_: pillow(data)[..., ::-1],
        args={"output_type": types.BGR},
        **jpeg_backend,
    )


def test_gray_is_pillows_luma_with_one_channel(jpegs, jpeg_backend):
    check_operator(
        "decoders.image",
        [jpegs],
        lambda data, **_: pillow(data, "L")[..., None],
        args={"output_type": types.GRAY},
        expected_layout="HWC",
        **jpeg_backend,
    )


@pytest.mark.parametrize(
    ("fmt", "kwargs"),
    [
        ("PNG", {}),
        ("BMP", {}),
        ("TIFF", {}),
        ("TIFF", {"compression": "tiff_lzw"}),
        ("WEBP", {"lossless": True}),
    ],
)
def test_lossless_formats_round_trip_exactly(photo, fmt, kwargs):
    (out,) = decode([encoded(Image.fromarray(photo), fmt, **kwargs)])
    np.testing.assert_array_equal(out, photo)


def test_rgba_drops_alpha_and_any_data_keeps_it(photo):
    alpha = np.random.default_rng(0).integers(0, 256, photo.shape[:2], dtype=np.uint8)
    rgba = np.dstack([photo, alpha])
    data = encoded(Image.fromarray(rgba, "RGBA"), "PNG")
    (rgb,) = decode([data])
    np.testing.assert_array_equal(rgb, photo)
    (anything,) = decode([data], output_type=types.ANY_DATA)
    np.testing.assert_array_equal(anything, rgba)


def test_palette_with_transparency_is_looked_up(photo):
    rng = np.random.default_rng(1)
    palette = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    indices = rng.integers(0, 256, (30, 40), dtype=np.uint8)
    image = Image.fromarray(indices, "P")
    image.putpalette(palette.tobytes())
    data = encoded(image, "PNG", transparency=bytes([0, 128] + [255] * 254))
    (rgb,) = decode([data])
    np.testing.assert_array_equal(rgb, palette[indices])
    (gray,) = decode([data], output_type=types.GRAY)
    expected = np.asarray(Image.fromarray(palette[indices]).convert("L"))
    np.testing.assert_array_equal(gray[..., 0], expected)


def test_cmyk_jpeg_is_converted_to_rgb(photo):
    data = encoded(Image.fromarray(photo).convert("CMYK"), "JPEG", quality=95)
    (rgb,) = decode([data])
    np.testing.assert_array_equal(rgb, pillow(data))
    assert np.abs(rgb.astype(int) - photo).mean() < 8


def test_grey_jpeg_channels(photo):
    grey = np.asarray(Image.fromarray(photo).convert("L"))
    data = encoded(Image.fromarray(grey), "PNG")
    (rgb,) = decode([data])
    np.testing.assert_array_equal(rgb, np.repeat(grey[..., None], 3, axis=2))
    for output_type in (types.GRAY, types.ANY_DATA):
        (one,) = decode([data], output_type=output_type)
        np.testing.assert_array_equal(one, grey[..., None])
    la = encoded(Image.fromarray(np.dstack([grey, grey // 2]), "LA"), "PNG")
    (two,) = decode([la], output_type=types.ANY_DATA)
    np.testing.assert_array_equal(two, np.dstack([grey, grey // 2]))


def test_16_bit_grey_png_is_scaled_not_clipped():
    values = np.array([[0, 1000, 32768, 65535], [257, 514, 60000, 128]], np.uint16)
    data = encoded(Image.fromarray(values), "PNG")
    expected = np.array([[0, 4, 128, 255], [1, 2, 233, 0]], np.uint8)
    (gray,) = decode([data], output_type=types.GRAY)
    np.testing.assert_array_equal(gray[..., 0], expected)
    (rgb,) = decode([data])
    np.testing.assert_array_equal(rgb, np.repeat(expected[..., None], 3, axis=2))


def png16_rgb(values: np.ndarray) -> np.ndarray:
    """A 16-bit RGB PNG (Pillow cannot write one)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    h, w, _ = values.shape
    rows = b"".join(b"\0" + row.astype(">u2").tobytes() for row in values)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return np.frombuffer(png, np.uint8)


def test_16_bit_rgb_png_is_scaled_within_one_level():
    values = np.random.default_rng(2).integers(0, 65536, (6, 5, 3)).astype(np.uint16)
    (rgb,) = decode([png16_rgb(values)])
    np.testing.assert_allclose(rgb, values / 257.0, atol=1)


# --- EXIF orientation ------------------------------------------------------------------------


def test_exif_orientation_is_applied_by_default(jpeg_backend):
    stored = np.zeros((40, 80, 3), np.uint8)
    stored[:16, :16] = (255, 0, 0)  # red block at the stored top-left
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display"
    data = encoded(Image.fromarray(stored), "JPEG", quality=95, exif=exif.tobytes())

    (upright,) = decode([data])
    assert upright.shape == (80, 40, 3)
    assert upright[:16, -16:, 0].mean() > 200 and upright[:16, :16, 0].mean() < 30
    assert_close(upright, np.rot90(pillow(data), k=-1), jpeg_backend)

    (as_stored,) = decode([data], adjust_orientation=False)
    assert as_stored.shape == (40, 80, 3)
    assert_close(as_stored, pillow(data), jpeg_backend)


# --- errors ----------------------------------------------------------------------------------


def test_bad_files_name_the_sample_and_the_pipeline_goes_on(tmp_path, photo_paths, jpeg_backend):
    good = photo_paths[0].read_bytes()
    (tmp_path / "cls").mkdir()
    files = {
        "a.jpg": good,
        "b.jpg": good[: len(good) // 2],
        "c.jpg": good,
        "d.jpg": b"not an image at all" * 10,
        "e.jpg": b"",
        "f.jpg": good,
        "g.jpg": good,
    }
    for name, content in files.items():
        (tmp_path / "cls" / name).write_bytes(content)
    pipe = Pipeline(batch_size=2, num_threads=2, device_id=None, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        pipe.set_outputs(fn.decoders.image(jpegs, name="Decoder"))

    expected = [
        "operator Decoder, sample #1 (cls/b.jpg): ValueError: truncated image data",
        "operator Decoder, sample #1 (cls/d.jpg): ValueError: cannot decode: not a recognised "
        "image format",
        "operator Decoder, sample #0 (cls/e.jpg): ValueError: cannot decode: the data is empty",
    ]
    for message in expected:
        with pytest.raises(OperatorError) as info:
            pipe.run()
        assert str(info.value).startswith(message), str(info.value)
    (images,) = pipe.run()
    assert [t.source_info() for t in images] == ["cls/g.jpg", "cls/a.jpg"]
    assert_close(images.at(1), pillow(np.frombuffer(good, np.uint8)), jpeg_backend)


def test_input_that_is_not_encoded_bytes(photo):
    with pytest.raises(
        OperatorError,
        match=r"expects encoded bytes \(1-D uint8\), got shape "
        r"\(120, 90, 3\)",
    ):
        decode([photo])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"dtype": types.FLOAT}, "types.UINT8 only, got types.FLOAT"),
        ({"output_type": types.YCbCr}, "YCbCr is not supported"),
        ({"output_type": "HSV"}, "expected types.RGB, types.BGR"),
        ({"output_type": types.UINT8}, "expected types.RGB, types.BGR"),
    ],
)
def test_bad_arguments(args, message):
    with pytest.raises(ArgumentError, match=message):
        fn.decoders.image(**args)


def test_legacy_alias_and_compatibility_arguments(jpegs, jpeg_backend):
    assert ops.ImageDecoder is ops.decoders.Image
    outs = decode(
        jpegs[:2], hw_decoder_load=0.9, use_fast_idct=True, jpeg_fancy_upsampling=True, affine=False
    )
    assert_close(outs[0], pillow(jpegs[0]), jpeg_backend)


def mixed_pipe(image_dir: pathlib.Path, device_id: int | None) -> Pipeline:
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=device_id, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        pipe.set_outputs(fn.decoders.image(jpegs, device="mixed", name="Decoder"))
    return pipe


def test_mixed_without_device_id_is_refused_at_build(image_dir):
    with pytest.raises(DeviceError, match=r"Decoder \(device='mixed'\) needs a GPU, but "):
        mixed_pipe(image_dir, None).build()


def test_mixed_decodes_to_the_gpu_or_says_why_not(image_dir, photo_paths):
    pipe = mixed_pipe(image_dir, 0)
    reason = backend.gpu_unavailable_reason()
    if reason is not None:
        with pytest.raises(DeviceError) as info:
            pipe.build()
        assert f"Decoder (device='mixed') needs a GPU, but {reason}" in str(info.value)
        return
    (images,) = pipe.run()
    assert images.device == "gpu"
    expected = pillow(np.fromfile(photo_paths[0], np.uint8))
    # nvJPEG (torchvision's CUDA decoder) against Pillow: tests/operators/test_gpu_decoder.py's
    # bar (mean 2 levels, max 96)
    assert_close(images.as_cpu().at(0), expected, {"atol": 96, "mean_atol": 2.0})
