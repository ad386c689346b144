"""fn.decoders.mask: every mode of label map keeps its stored values (against the arrays the
files were written from with Pillow, and a PNG written byte by byte for the low bit depths),
conversions that must fit, refusals that say what to do, and masks derived from the real photos
of data/images read through a pipeline (normal and debug mode alike)."""

from __future__ import annotations

import io
import pathlib
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from augkit import eager, fn, kinds, pipeline_def, types
from augkit.errors import ArgumentError, GraphError, OperatorError
from augkit.pipeline import Pipeline

# A palette whose colours are not grey: index k is nothing like (k, k, k).
PALETTE = [v for k in range(256) for v in ((k * 97) % 256, (k * 31 + 50) % 256, 255 - k)]


def encoded(image: Image.Image, fmt: str = "PNG", **kwargs) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return np.frombuffer(buffer.getvalue(), np.uint8)


def palette_image(values: np.ndarray) -> Image.Image:
    image = Image.fromarray(values.astype(np.uint8), "P")
    image.putpalette(PALETTE)
    return image


def decode(data: list[np.ndarray], **kwargs) -> list[np.ndarray]:
    return eager.decoders.mask(data, **kwargs)


def label_map(photo: pathlib.Path, classes: int = 5) -> np.ndarray:
    """A label map of a real photo: its grey levels in ``classes`` bands."""
    grey = np.asarray(Image.open(photo).convert("L"), np.int32)
    return (grey * classes // 256).astype(np.uint8)


@pytest.fixture
def values() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 21, size=(13, 17), dtype=np.uint8)  # 21 classes, as VOC


# --- modes ----------------------------------------------------------------------------------


def test_palette_png_gives_the_indices_not_the_colours(values):
    data = encoded(palette_image(values))
    (mask,) = decode([data])
    assert mask.dtype == np.uint8 and mask.shape == (13, 17, 1)
    np.testing.assert_array_equal(mask[..., 0], values)
    # The trap it avoids: decoders.image looks the indices up in the palette.
    (rgb,) = eager.decoders.image([data])
    colours = np.array(PALETTE, np.uint8).reshape(256, 3)[values]
    np.testing.assert_array_equal(rgb, colours)
    assert not np.array_equal(rgb[..., 0], values)


def test_palette_with_transparency_keeps_the_indices(values):
    image = palette_image(values)
    (mask,) = decode([encoded(image, transparency=0)])
    np.testing.assert_array_equal(mask[..., 0], values)


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "TIFF", "GIF"])
def test_palette_in_every_lossless_format(values, fmt):
    (mask,) = decode([encoded(palette_image(values), fmt)])
    np.testing.assert_array_equal(mask[..., 0], values)


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "TIFF"])
def test_grey_values_are_kept(values, fmt):
    (mask,) = decode([encoded(Image.fromarray(values * 12, "L"), fmt)])
    assert mask.dtype == np.uint8
    np.testing.assert_array_equal(mask[..., 0], values * 12)


def test_grey_with_alpha_keeps_the_grey_values(values):
    image = Image.merge("LA", [Image.fromarray(values, "L"), Image.new("L", (17, 13), 128)])
    (mask,) = decode([encoded(image)])
    np.testing.assert_array_equal(mask[..., 0], values)


def test_one_bit_gives_zeros_and_ones(values):
    (mask,) = decode([encoded(Image.fromarray(values > 10))])
    assert mask.dtype == np.uint8
    np.testing.assert_array_equal(mask[..., 0], (values > 10).astype(np.uint8))


def _grey_png(values: np.ndarray, bits: int) -> np.ndarray:
    """A grey PNG of bit depth ``bits``, written byte by byte from the PNG specification (not by
    Pillow), with the values stored as they are."""
    h, w = values.shape
    per_byte = 8 // bits
    rows = []
    for row in values:
        padded = np.zeros(-(-w // per_byte) * per_byte, np.uint8)
        padded[:w] = row
        packed = np.zeros(len(padded) // per_byte, np.uint8)
        for k in range(per_byte):
            packed |= padded[k::per_byte] << (8 - bits * (k + 1))
        rows.append(b"\x00" + packed.tobytes())

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )
    return np.frombuffer(png, np.uint8)


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_low_bit_depth_grey_pngs_give_their_stored_values(values, bits):
    stored = (values.astype(np.int32) % (1 << bits)).astype(np.uint8)
    (mask,) = decode([_grey_png(stored, bits)])
    np.testing.assert_array_equal(mask[..., 0], stored)


@pytest.mark.parametrize("fmt", ["PNG", "TIFF"])
def test_16_bit_values_above_255_are_kept(fmt):
    stored = np.array([[0, 255, 256, 300], [1000, 40000, 65535, 7]], np.uint16)
    (mask,) = decode([encoded(Image.fromarray(stored), fmt)])
    assert mask.dtype == np.uint16
    np.testing.assert_array_equal(mask[..., 0], stored)
    # decoders.image scales them to 8 bits: 256 and 300 become one class.
    (grey,) = eager.decoders.image([encoded(Image.fromarray(stored), fmt)], output_type=types.GRAY)
    assert grey[0, 2, 0] == grey[0, 3, 0]


def test_32_bit_tiff_gives_int32():
    stored = np.array([[-5, 0, 70000], [2**31 - 1, -(2**31), 12]], np.int32)
    (mask,) = decode([encoded(Image.fromarray(stored), "TIFF")])
    assert mask.dtype == np.int32
    np.testing.assert_array_equal(mask[..., 0], stored)


def test_exif_orientation_of_the_mask_file(values):
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    data = encoded(palette_image(values), exif=exif.tobytes())
    (upright,) = decode([data])
    np.testing.assert_array_equal(upright[..., 0], np.rot90(values, k=-1))
    (stored,) = decode([data], adjust_orientation=False)
    np.testing.assert_array_equal(stored[..., 0], values)


# --- dtype ----------------------------------------------------------------------------------


def test_dtype_converts_when_every_value_fits(values):
    (mask,) = decode([encoded(palette_image(values))], dtype=types.INT64)
    assert mask.dtype == np.int64
    np.testing.assert_array_equal(mask[..., 0], values)
    small = np.array([[0, 3, 200]], np.uint16)
    (mask,) = decode([encoded(Image.fromarray(small))], dtype=types.UINT8)
    assert mask.dtype == np.uint8
    np.testing.assert_array_equal(mask[..., 0], small)


def test_a_value_that_does_not_fit_names_the_sample_and_the_value(values):
    fits = encoded(Image.fromarray(np.array([[1, 2]], np.uint16)))
    too_big = encoded(Image.fromarray(np.array([[1, 300]], np.uint16)))
    with pytest.raises(OperatorError, match=r"sample #1.*the value 300.*types\.UINT8"):
        decode([fits, too_big], dtype=types.UINT8)
    negative = encoded(Image.fromarray(np.array([[-1, 2]], np.int32)), "TIFF")
    with pytest.raises(OperatorError, match=r"sample #0.*the value -1.*types\.UINT16"):
        decode([negative], dtype=types.UINT16)


@pytest.mark.parametrize("dtype", [types.FLOAT, types.BOOL, types.FLOAT16])
def test_dtype_must_be_an_integer_type(dtype):
    with pytest.raises(ArgumentError, match=r"decoders\.Mask.*'dtype'.*integer type"):
        fn.decoders.mask(dtype=dtype)


# --- refusals ------------------------------------------------------------------------------


def _refusal(data: np.ndarray) -> str:
    with pytest.raises(OperatorError) as info:
        decode([data])
    return str(info.value)


def test_colour_masks_are_refused_with_what_to_do(values):
    for mode in ("RGB", "RGBA"):
        message = _refusal(encoded(palette_image(values).convert(mode)))
        assert f"mode '{mode}'" in message
        assert "a colour-coded mask: map colours to classes" in message
        assert "palette PNG" in message


def test_jpeg_is_refused_as_lossy(photo_paths):
    message = _refusal(np.fromfile(photo_paths[0], np.uint8))
    assert "JPEG, which is lossy: the label values are not kept; store masks as PNG" in message
    message = _refusal(encoded(Image.fromarray(np.zeros((8, 8), np.uint8)), "JPEG"))
    assert "store masks as PNG" in message


def test_floats_and_non_images_are_refused(values):
    message = _refusal(encoded(Image.fromarray(values.astype(np.float32)), "TIFF"))
    assert "floating-point values" in message
    assert "not a recognised image format" in _refusal(np.frombuffer(b"no image" * 9, np.uint8))
    assert "the data is empty" in _refusal(np.zeros(0, np.uint8))
    whole = encoded(palette_image(values))
    assert "truncated" in _refusal(whole[: len(whole) // 2])


def test_decoded_arrays_are_refused_at_run_and_images_at_build(values):
    with pytest.raises(OperatorError, match=r"expects encoded bytes \(1-D uint8"):
        decode([values])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def decoded_twice(root: str):
        jpegs, _ = fn.readers.file(file_root=root)
        return fn.decoders.mask(fn.decoders.image(jpegs))

    pipe = decoded_twice(str(pathlib.Path(__file__).resolve().parents[2] / "data" / "images"))
    with pytest.raises(GraphError, match=r"decoders\.Mask|decoders\.mask"):
        pipe.build()


# --- real masks through a pipeline -------------------------------------------------------


@pytest.fixture
def mask_tree(tmp_path, photo_paths) -> dict[str, np.ndarray]:
    """Palette PNG masks of the real photos (their grey levels in bands), in class folders
    under tmp_path/masks, with one broken file; returns the label maps by relative name."""
    maps = {}
    for photo in photo_paths:
        rel = f"{photo.parent.name}/{photo.stem}.png"
        (tmp_path / "masks" / photo.parent.name).mkdir(parents=True, exist_ok=True)
        maps[rel] = label_map(photo)
        palette_image(maps[rel]).save(tmp_path / "masks" / rel)
    return maps


def _mask_pipe(root: pathlib.Path, debug: bool = False, **kwargs) -> Pipeline:
    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=11, debug=debug)
    def masks():
        data, _ = fn.readers.file(file_root=str(root), random_shuffle=True)
        return fn.decoders.mask(data, name="Masks", **kwargs)

    return masks()


def test_masks_of_real_photos_are_read_exactly(tmp_path, mask_tree):
    pipe = _mask_pipe(tmp_path / "masks")
    seen = set()
    for _ in range(4):
        (masks,) = pipe.run()
        assert masks.kind == kinds.MASK and masks.layout() == "HWC"
        for k in range(len(masks)):
            name = masks[k].source_info()
            np.testing.assert_array_equal(masks.at(k)[..., 0], mask_tree[name], err_msg=name)
            seen.add(name)
    assert seen == set(mask_tree)


def test_debug_mode_equals_normal_mode(tmp_path, mask_tree):
    normal, debug = _mask_pipe(tmp_path / "masks"), _mask_pipe(tmp_path / "masks", debug=True)
    for _ in range(3):
        (a,), (b,) = normal.run(), debug.run()
        assert [t.source_info() for t in a] == [t.source_info() for t in b]
        for k in range(len(a)):
            np.testing.assert_array_equal(a.at(k), b.at(k))


def test_a_bad_file_names_the_file_and_the_pipeline_goes_on(tmp_path, photo_paths, values):
    folder = tmp_path / "masks" / "cls"
    folder.mkdir(parents=True)
    palette_image(values).save(folder / "a.png")
    palette_image(values).convert("RGB").save(folder / "b.png")
    (folder / "c.png").write_bytes(photo_paths[0].read_bytes())  # a JPEG named .png
    palette_image(values).save(folder / "d.png")
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        data, _ = fn.readers.file(file_root=str(tmp_path / "masks"))
        pipe.set_outputs(fn.decoders.mask(data, name="Masks"))
    (first,) = pipe.run()
    np.testing.assert_array_equal(first.at(0)[..., 0], values)
    for name, words in (("cls/b.png", "colour-coded mask"), ("cls/c.png", "lossy")):
        with pytest.raises(OperatorError) as info:
            pipe.run()
        message = str(info.value)
        assert message.startswith(f"operator Masks, sample #0 ({name})"), message
        assert info.value.source_info == name and words in message
    (last,) = pipe.run()
    assert last[0].source_info() == "cls/d.png"


@pytest.mark.parametrize(("colours", "bits"), [(2, 1), (4, 2), (16, 4)])
def test_small_palettes_stored_in_fewer_bits_keep_their_indices(values, colours, bits):
    stored = values % colours
    image = Image.fromarray(stored, "P")
    image.putpalette(PALETTE[: 3 * colours])
    data = encoded(image)
    assert int(data[24]) == bits and int(data[25]) == 3  # IHDR: bit depth, palette
    (mask,) = decode([data])
    np.testing.assert_array_equal(mask[..., 0], stored)


def test_16_bit_grey_with_alpha_is_refused():
    stored = np.array([[0, 300]], np.uint16).astype(">u2")
    rows = b"".join(b"\x00" + b"".join(v.tobytes() + b"\xff\xff" for v in row) for row in stored)

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 16, 4, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    assert "16-bit grey PNG with alpha" in _refusal(np.frombuffer(png, np.uint8))
