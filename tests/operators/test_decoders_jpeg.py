"""The fast JPEG path of decoders.image (augkit/operators/decoders/jpeg.py): which files it
takes, its pixels against Pillow's decode on the real photos, EXIF orientation against Pillow's
``exif_transpose``, the Pillow fallback, and the opt-in ``dct_downscale_hint``."""

from __future__ import annotations

import io
import pathlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageOps

from augkit import types
from augkit.errors import ArgumentError
from augkit.operators.decoders import jpeg
from augkit.operators.decoders.image import decode_image
from tests.operator_check import check_operator, run_operator

needs_simplejpeg = pytest.mark.skipif(jpeg._simplejpeg is None, reason="needs simplejpeg")
_HEADER = (
    pathlib.Path(__file__)
    .parents[2]
    .joinpath("data", "images", "animals", "chelsea_cat.jpg")
    .read_bytes()[:2000]
)


@pytest.fixture(autouse=True)
def auto_backend(monkeypatch):
    """Whatever AUGKIT_JPEG_BACKEND says, these tests start from the default choice."""
    monkeypatch.setattr(jpeg, "BACKEND", "auto")


def encoded(image: Image.Image, **kwargs) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", **kwargs)
    return np.frombuffer(buffer.getvalue(), np.uint8)


def pillow(data: np.ndarray, mode: str = "RGB", transpose: bool = True) -> np.ndarray:
    image = Image.open(io.BytesIO(data.tobytes()))
    if transpose:
        image = ImageOps.exif_transpose(image)
    out = np.asarray(image.convert(mode))
    return out[..., None] if out.ndim == 2 else out


def exif(orientation: int, order: str = "MM") -> bytes:
    """An EXIF APP1 payload whose IFD0 holds only an Orientation tag, in either byte order."""
    end = ">" if order == "MM" else "<"
    tiff = order.encode() + struct.pack(end + "HI", 42, 8)
    tiff += struct.pack(end + "HHHIHH", 1, 0x0112, 3, 1, orientation, 0) + struct.pack(end + "I", 0)
    return b"Exif\x00\x00" + tiff


@pytest.fixture(scope="module")
def photo(photo_paths) -> np.ndarray:
    """A non-symmetric crop of a real photo, so that every orientation is different."""
    return np.asarray(Image.open(photo_paths[0]).convert("RGB"))[:96, :64]


# --- which files take the fast path ----------------------------------------------------------


def test_parse_reads_size_components_and_orientation(photo_paths, photo):
    info = jpeg.parse(memoryview(np.fromfile(photo_paths[0], np.uint8)))
    assert (info.height, info.width, info.components, info.orientation) == (300, 451, 3, 1)
    grey = encoded(Image.fromarray(photo[..., 0]), exif=exif(6, "II"))
    assert jpeg.parse(memoryview(grey)) == jpeg.JpegInfo(96, 64, 1, 6)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a jpeg at all",
        b"\xff\xd8\xff\xe0\x00",  # a segment cut short
        b"\xff\xd8\x00\x00\x00\x00",  # bytes where a marker should be
    ],
)
def test_parse_turns_down_what_is_not_a_plain_jpeg(data):
    assert jpeg.parse(memoryview(data)) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 2000))
def test_parse_never_raises_on_damaged_headers(tail, cut):
    """Random bytes after a real JPEG's first ``cut`` bytes: a JpegInfo or None, no exception."""
    head = _HEADER[:cut]
    info = jpeg.parse(memoryview(head + tail))
    assert info is None or info.components in (1, 3)


@needs_simplejpeg
def test_cmyk_png_truncated_and_garbage_go_to_pillow(photo, photo_paths):
    cmyk = encoded(Image.fromarray(photo).convert("CMYK"))
    assert jpeg.parse(memoryview(cmyk)) is None  # 4 components
    buffer = io.BytesIO()
    Image.fromarray(photo).save(buffer, "PNG")
    png = np.frombuffer(buffer.getvalue(), np.uint8)
    good = np.fromfile(photo_paths[0], np.uint8)
    for data in (cmyk, png, good[: good.size // 2], good[:200]):
        assert jpeg.decode(data, "RGB", True) is None
    # ...and the operator still decodes the CMYK file with Pillow, exactly.
    np.testing.assert_array_equal(decode_image(cmyk), pillow(cmyk))


# --- pixels on the real photos ---------------------------------------------------------------


@needs_simplejpeg
def test_every_photo_takes_the_fast_path_and_matches_pillow(photo_paths):
    """Measured on these photos: RGB/BGR bit-identical to Pillow; GRAY (libjpeg's luma plane,
    as DALI) a mean 0.004 from Pillow's convert("L"), up to 20 levels at saturated colours."""
    for path in photo_paths:
        data = np.fromfile(path, np.uint8)
        rgb = jpeg.decode(data, "RGB", True)
        assert rgb is not None and rgb.dtype == np.uint8 and rgb.flags.c_contiguous
        assert np.abs(rgb.astype(int) - pillow(data)).mean() <= 1
        bgr = jpeg.decode(data, "BGR", True)
        np.testing.assert_array_equal(bgr, rgb[..., ::-1])
        assert bgr.flags.c_contiguous
        np.testing.assert_array_equal(jpeg.decode(data, "ANY", True), rgb)
        gray = jpeg.decode(data, "GRAY", True)
        assert gray.shape == (*rgb.shape[:2], 1) and gray.flags.c_contiguous
        diff = np.abs(gray.astype(int) - pillow(data, "L"))
        assert diff.mean() <= 1 and diff.max() <= 32


@needs_simplejpeg
def test_grey_and_progressive_jpegs(photo):
    grey = encoded(Image.fromarray(photo[..., 1]), quality=90)
    np.testing.assert_array_equal(jpeg.decode(grey, "ANY", True), pillow(grey, "L"))
    np.testing.assert_array_equal(jpeg.decode(grey, "GRAY", True), pillow(grey, "L"))
    rgb = jpeg.decode(grey, "RGB", True)
    np.testing.assert_array_equal(rgb, np.repeat(pillow(grey, "L"), 3, axis=2))
    progressive = encoded(Image.fromarray(photo), quality=90, progressive=True)
    fast = jpeg.decode(progressive, "RGB", True)
    assert fast is not None
    assert np.abs(fast.astype(int) - pillow(progressive)).mean() <= 1


def test_without_simplejpeg_pillow_decodes_exactly(monkeypatch, photo_paths):
    """The core needs NumPy and Pillow only: with simplejpeg absent, every JPEG is Pillow's."""
    monkeypatch.setattr(jpeg, "_simplejpeg", None)
    assert jpeg.fast_backend() is None
    jpegs = [np.fromfile(p, np.uint8) for p in photo_paths[:4]]
    assert jpeg.decode(jpegs[0], "RGB", True) is None
    check_operator("decoders.image", [jpegs], lambda data: pillow(data))
    check_operator(
        "decoders.image",
        [jpegs],
        lambda data, **_: pillow(data, "L"),
        args={"output_type": types.GRAY},
    )


def test_backend_setting_pillow_turns_the_fast_path_off(monkeypatch, photo_paths):
    monkeypatch.setattr(jpeg, "BACKEND", "pillow")
    assert jpeg.fast_backend() is None
    data = np.fromfile(photo_paths[0], np.uint8)
    np.testing.assert_array_equal(decode_image(data, types.GRAY), pillow(data, "L"))


# --- EXIF orientation ------------------------------------------------------------------------


@pytest.mark.parametrize("orientation", range(1, 9))
def test_orient_is_pillows_transpose(orientation):
    image = np.random.default_rng(orientation).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    methods = {
        2: Image.Transpose.FLIP_LEFT_RIGHT,
        3: Image.Transpose.ROTATE_180,
        4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE,
        6: Image.Transpose.ROTATE_270,
        7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_90,
    }
    pil = Image.fromarray(image)
    expected = np.asarray(pil.transpose(methods[orientation]) if orientation > 1 else pil)
    np.testing.assert_array_equal(jpeg.orient(image, orientation), expected)


@needs_simplejpeg
@pytest.mark.parametrize("order", ["MM", "II"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_orientation_on_the_fast_path_is_exif_transpose(photo, orientation, order):
    data = encoded(Image.fromarray(photo), quality=95, exif=exif(orientation, order))
    assert jpeg.parse(memoryview(data)).orientation == orientation
    fast = jpeg.decode(data, "RGB", True)
    assert fast is not None and fast.flags.c_contiguous
    expected = pillow(data)
    assert fast.shape == expected.shape
    assert np.abs(fast.astype(int) - expected).mean() <= 1
    stored = jpeg.decode(data, "RGB", False)
    assert np.abs(stored.astype(int) - pillow(data, transpose=False)).mean() <= 1


@needs_simplejpeg
def test_xmp_orientation_and_unreadable_exif_go_to_pillow(photo):
    xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="6"/></x:xmpmeta>'
    with_xmp = encoded(Image.fromarray(photo), quality=95, xmp=xmp)
    assert jpeg.parse(memoryview(with_xmp)).orientation is None
    assert jpeg.decode(with_xmp, "RGB", True) is None
    assert jpeg.decode(with_xmp, "RGB", False) is not None
    np.testing.assert_array_equal(decode_image(with_xmp), pillow(with_xmp))
    assert decode_image(with_xmp).shape == (64, 96, 3)  # Pillow rotated it

    broken = encoded(Image.fromarray(photo), quality=95, exif=b"Exif\x00\x00MM\x00*\xff\xff")
    assert jpeg.parse(memoryview(broken)).orientation is None
    assert jpeg.decode(broken, "RGB", True) is None
    np.testing.assert_array_equal(decode_image(broken), pillow(broken))


# --- dct_downscale_hint ----------------------------------------------------------------------


def pillow_decode_resize(data: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    image = Image.open(io.BytesIO(data.tobytes())).convert("RGB")
    return np.asarray(image.resize(out_hw[::-1], Image.Resampling.BILINEAR))


@pytest.mark.parametrize("fast", [True, False], ids=["simplejpeg", "pillow"])
def test_dct_downscale_hint_covers_the_size_at_a_small_accuracy_cost(
    photo_paths, monkeypatch, fast
):
    """Decoded at 1/2, 1/4 or 1/8 scale, never below the hint. After the resize to the hint it
    is blurrier than the full decode + resize: on these photos a mean 1.0 levels at 150×150
    (up to 2.9 on one photo); bars 1.5 and 4."""
    if fast and jpeg._simplejpeg is None:
        pytest.skip("needs simplejpeg")
    monkeypatch.setattr(jpeg, "BACKEND", "auto" if fast else "pillow")
    jpegs = [np.fromfile(p, np.uint8) for p in photo_paths]
    (out,) = run_operator(
        "decoders.image", [jpegs], args={"dct_downscale_hint": (150, 150)}, layout=""
    )[0]
    reduced, diffs = 0, []
    for k, data in enumerate(jpegs):
        got, full = out.at(k), pillow(data)
        assert got.shape[0] >= 150 and got.shape[1] >= 150
        if got.shape != full.shape:
            reduced += 1
            scale = full.shape[0] / got.shape[0]
            assert any(abs(scale - s) < 0.05 for s in (2, 4, 8)), (got.shape, full.shape)
            assert got.shape[0] < 300 or got.shape[1] < 300  # the smallest scale that covers
        small = np.asarray(Image.fromarray(got).resize((150, 150), Image.Resampling.BILINEAR))
        diffs.append(np.abs(small.astype(int) - pillow_decode_resize(data, (150, 150))).mean())
    assert reduced >= len(jpegs) // 2
    assert np.mean(diffs) <= 1.5 and max(diffs) <= 4


@pytest.mark.parametrize("fast", [True, False], ids=["simplejpeg", "pillow"])
def test_dct_downscale_hint_is_in_upright_coordinates(photo_paths, monkeypatch, fast):
    if fast and jpeg._simplejpeg is None:
        pytest.skip("needs simplejpeg")
    monkeypatch.setattr(jpeg, "BACKEND", "auto" if fast else "pillow")
    stored = np.asarray(Image.open(photo_paths[0]).convert("RGB"))[:160, :320]
    data = encoded(Image.fromarray(stored), quality=95, exif=exif(6))
    assert decode_image(data, dct_downscale_hint=(150, 75)).shape == (160, 80, 3)
    assert decode_image(data, dct_downscale_hint=(75, 150)).shape == (320, 160, 3)
    assert decode_image(data).shape == (320, 160, 3)


def test_dct_downscale_hint_leaves_other_formats_alone(photo):
    buffer = io.BytesIO()
    Image.fromarray(photo).save(buffer, "PNG")
    png = np.frombuffer(buffer.getvalue(), np.uint8)
    np.testing.assert_array_equal(decode_image(png, dct_downscale_hint=(8, 8)), photo)


@pytest.mark.parametrize("value", [0, (10, 0), (1, 2, 3)])
def test_dct_downscale_hint_must_be_positive_sizes(value):
    from augkit import fn

    with pytest.raises(ArgumentError, match="dct_downscale_hint"):
        fn.decoders.image(dct_downscale_hint=value)
