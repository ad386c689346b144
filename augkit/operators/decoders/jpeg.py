"""The fast JPEG path of ``decoders.image``: libjpeg-turbo through simplejpeg, with the EXIF
orientation read from the file's APP1 segment; ``image.py`` falls back to Pillow whenever this
module returns ``None``.

Which back end, when:

- **simplejpeg** (``pip install augkit[jpeg]``, or ``pip install simplejpeg``) decodes every
  8-bit baseline, extended or progressive JPEG with 1 or 3 components (grey, YCbCr, RGB) to
  RGB, BGR or GRAY, and for ``types.ANY_DATA`` to GRAY (1-component files) or RGB.
- **Pillow** (the fallback, in ``image.py``) does everything else: other formats, CMYK/YCCK,
  12-bit and lossless JPEGs, files with an XMP orientation (Pillow reads one, this module does
  not), unreadable EXIF, and every file the fast path rejects (truncated or corrupt data:
  Pillow then raises the error the user sees, with its usual message), and all JPEGs when
  simplejpeg is not installed or ``BACKEND`` is ``"pillow"``.

Why (measured on the 2-core benchmark machine, 256 photos of 300–1200 px, quality 90, 4:2:0):
simplejpeg decodes in 1.2 ms an image where ``decode_image``'s Pillow path takes 1.6-2.0 ms
(``Image.open`` + ``load`` + the copy into NumPy); both release the GIL, so 2 threads run at
1.7-1.9× one. Parsing the headers here costs ~5 µs. RGB output is *bit-identical* to Pillow's
on all 271 test and benchmark photos (the same libjpeg-turbo, accurate integer IDCT and fancy
upsampling in both). GRAY is libjpeg's own luma plane, as DALI's libjpeg-turbo decoder gives:
a mean 0.004 levels from Pillow's ``convert("L")`` of the RGB image, up to 20 levels at
saturated colours, where Pillow's RGB is clipped before it computes luma. torchvision's
``decode_jpeg`` is as fast and as exact, but torchvision 0.29 deprecated its image IO (a
``DeprecationWarning`` on every call, which pytest turns into an error) and it needs torch, so
it is not used.

Traps:

- ``strict=True``: libjpeg's recoverable errors (truncated data, bad Huffman codes) raise in
  simplejpeg instead of warning, so such files go to Pillow, which either decodes them as it
  did before this fast path existed or raises the message the tests check.
- EXIF orientation: Pillow's ``exif_transpose`` reads IFD0's Orientation tag (0x0112) of the
  first ``Exif`` APP1 segment and, when that has none, an XMP ``tiff:Orientation``. This module
  parses the first and sends any file with an XMP ``Orientation`` to Pillow, as it does when the
  EXIF cannot be parsed. Orientations 2–8 are applied with NumPy flips and transposes, checked
  against Pillow for all eight values (tests/operators/test_decoders_jpeg.py).
- ``BACKEND`` is read from the environment variable ``AUGKIT_JPEG_BACKEND`` ("auto", the
  default, "simplejpeg" or "pillow") when this module is imported; tests and benchmarks may
  set the attribute. The choice changes pixels only for GRAY output (see above). Outputs thus
  depend on what is installed: a pipeline is reproducible on one installation, not across
  installations with and without simplejpeg.
- ``dct_downscale_hint=(h, w)``: libjpeg-turbo decodes at the smallest of its DCT scales 1/2,
  1/4 or 1/8 whose output still covers ``(h, w)`` (after orientation). Measured for decode +
  resize to 300×300 on the benchmark photos: 1.28 ms against 1.61, a mean 0.50 levels from the
  full decode + resize (about 1.0 on the 124 of 256 photos it reduces). Letting simplejpeg pick
  any scale M/8 ≤ 1/2 (3/8 included) is slower and worse (1.31 ms, 0.70); allowing 5/8..7/8 as
  well, more so (1.43 ms, 1.26): those scales are never used here. Opt-in only, since it is
  over the 0.5 accuracy bar.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import simplejpeg as _simplejpeg
except ImportError:  # the core needs NumPy and Pillow only
    _simplejpeg = None

BACKEND: str = os.environ.get("AUGKIT_JPEG_BACKEND", "auto").strip().lower() or "auto"
"""The JPEG back end asked for: "auto" (simplejpeg where installed), "simplejpeg" or "pillow"."""

# SOF markers of DCT JPEGs libjpeg-turbo decodes at 8 bits: baseline, extended sequential,
# progressive (Huffman), and the same three with arithmetic coding.
_SOF_DCT = {0xC0, 0xC1, 0xC2, 0xC9, 0xCA}
_SOF_ANY = {*range(0xC0, 0xD0)} - {0xC4, 0xC8, 0xCC}
_XMP = b"http://ns.adobe.com/xap/1.0/\x00"


def check_pixels(width: int, height: int, max_pixels: int | None) -> None:
    """Refuse an image whose header claims more than ``max_pixels`` pixels (a decompression
    bomb, or just too large), before any pixel is decoded. Shared by both back ends.

    Raises:
        ValueError: naming the size and the limit.
    """
    if max_pixels is not None and width * height > max_pixels:
        raise ValueError(
            f"image too large: {width}x{height} = {width * height:,} pixels is over the "
            f"decoder's max_pixels={max_pixels:,} (a decompression bomb guard; raise "
            f"max_pixels, or pass max_pixels=None, to decode it)"
        )


def fast_backend() -> str | None:
    """The name of the fast back end in use ("simplejpeg"), or ``None`` for Pillow only."""
    if _simplejpeg is None or BACKEND == "pillow":
        return None
    return "simplejpeg"


@dataclass(frozen=True)
class JpegInfo:
    """What the headers of one JPEG say, as far as the fast path needs it.

    Attributes:
        height, width: the stored size (before orientation).
        components: 1 (grey) or 3 (YCbCr or RGB); other counts are not fast-path files.
        orientation: the EXIF orientation (1 when there is none), or ``None`` when it cannot
            be known cheaply (unparseable EXIF, an XMP orientation): then Pillow decides.
    """

    height: int
    width: int
    components: int
    orientation: int | None


def _exif_orientation(tiff: memoryview) -> int | None:
    """IFD0's Orientation in a TIFF-structured EXIF block: 1 when absent, ``None`` when the
    block cannot be read or the tag has an unusual type or count."""
    if len(tiff) < 8:
        return None
    order = bytes(tiff[:2])
    if order == b"II":
        end = "<"
    elif order == b"MM":
        end = ">"
    else:
        return None
    magic, ifd = struct.unpack_from(end + "HI", tiff, 2)
    if magic != 42 or ifd + 2 > len(tiff):
        return None
    (count,) = struct.unpack_from(end + "H", tiff, ifd)
    if ifd + 2 + 12 * count > len(tiff):
        return None
    for k in range(count):
        tag, kind, n = struct.unpack_from(end + "HHI", tiff, ifd + 2 + 12 * k)
        if tag != 0x0112:
            continue
        if n != 1:
            return None
        value_at = ifd + 2 + 12 * k + 8
        if kind == 3:  # SHORT
            return struct.unpack_from(end + "H", tiff, value_at)[0]
        if kind == 4:  # LONG
            return struct.unpack_from(end + "I", tiff, value_at)[0]
        if kind == 1:  # BYTE
            return tiff[value_at]
        return None
    return 1


def parse(data: memoryview) -> JpegInfo | None:
    """The headers of a JPEG the fast path can decode, or ``None`` for anything else (not a
    JPEG, not an 8-bit DCT JPEG with 1 or 3 components, a malformed marker sequence).

    Walks the marker segments up to the first scan (a few hundred bytes to a few kB); never
    reads the entropy-coded data.

    Example:
        >>> data = np.fromfile("data/images/animals/chelsea_cat.jpg", np.uint8)
        >>> parse(memoryview(data))
        JpegInfo(height=300, width=451, components=3, orientation=1)
    """
    n = len(data)
    if n < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return None
    pos = 2
    sof: tuple[int, int, int, int] | None = None
    orientation: int | None = 1
    exif_seen = False
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None  # bytes between markers: libjpeg warns, strict mode would reject
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # segments without a length
            pos += 2
            continue
        if marker in (0xDA, 0xD9):  # start of scan, end of image
            break
        length = (data[pos + 2] << 8) | data[pos + 3]
        if length < 2 or pos + 2 + length > n:
            return None
        segment = data[pos + 4 : pos + 2 + length]
        if marker == 0xE1:
            if not exif_seen and segment[:6] == b"Exif\x00\x00":
                exif_seen = True
                if orientation is not None:
                    orientation = _exif_orientation(segment[6:])
            elif segment[: len(_XMP)] == _XMP and b"Orientation" in bytes(segment):
                orientation = None
        elif marker in _SOF_ANY:
            if marker not in _SOF_DCT or sof is not None or len(segment) < 6:
                return None
            precision, height, width, components = struct.unpack_from(">BHHB", segment)
            sof = (precision, height, width, components)
        pos += 2 + length
    if sof is None:
        return None
    precision, height, width, components = sof
    if precision != 8 or components not in (1, 3) or height == 0 or width == 0:
        return None
    return JpegInfo(height, width, components, orientation)


def orient(image: np.ndarray, orientation: int) -> np.ndarray:
    """``image`` (H, W, C) turned upright for an EXIF orientation, as Pillow's
    ``ImageOps.exif_transpose`` does (a view; values outside 2..8 leave it as stored)."""
    if orientation == 2:  # FLIP_LEFT_RIGHT
        return image[:, ::-1]
    if orientation == 3:  # ROTATE_180
        return image[::-1, ::-1]
    if orientation == 4:  # FLIP_TOP_BOTTOM
        return image[::-1]
    if orientation == 5:  # TRANSPOSE
        return image.transpose(1, 0, 2)
    if orientation == 6:  # ROTATE_270 (90° clockwise)
        return image.transpose(1, 0, 2)[:, ::-1]
    if orientation == 7:  # TRANSVERSE
        return image[::-1, ::-1].transpose(1, 0, 2)
    if orientation == 8:  # ROTATE_90 (90° anticlockwise)
        return image.transpose(1, 0, 2)[::-1]
    return image


def dct_min_size(info: JpegInfo, hint: tuple[int, int], orientation: int) -> tuple[int, int] | None:
    """The (min_height, min_width) to give libjpeg-turbo for a DCT-domain downscale that still
    covers ``hint`` (H, W) *after* orientation, or ``None`` when no 1/2, 1/4 or 1/8 scale
    does (then a full decode is as fast)."""
    want_h, want_w = hint
    if orientation in (5, 6, 7, 8):
        want_h, want_w = want_w, want_h
    if want_h <= 0 or want_w <= 0:
        return None
    for denominator in (8, 4, 2):
        # libjpeg's scaled size: ceil(size / denominator)
        h = -(-info.height // denominator)
        w = -(-info.width // denominator)
        if h >= want_h and w >= want_w:
            return h, w
    return None


def decode(
    data: np.ndarray,
    colorspace: str,
    adjust_orientation: bool,
    dct_downscale_hint: tuple[int, int] | None = None,
    max_pixels: int | None = None,
) -> np.ndarray | None:
    """The fast decode of ``data`` (1-D uint8, contiguous) to a contiguous uint8 (H, W, C)
    array, or ``None`` when this file (or this installation) is not for the fast path.

    Args:
        colorspace: "RGB", "BGR", "GRAY", or "ANY" (GRAY for grey files, RGB otherwise).
        adjust_orientation: apply the EXIF orientation.
        dct_downscale_hint: (H, W) the image is going to be resized to (after orientation);
            the decode may then be smaller, down to 1/8, but never below that.
        max_pixels: refuse (``ValueError``) a file whose header claims more pixels.
    """
    if fast_backend() is None:
        return None
    # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12
    view = memoryview(data)  # type: ignore[arg-type]
    try:
        info = parse(view)
    except Exception:  # a header this parser did not foresee: Pillow's turn
        return None
    if info is None:
        return None
    check_pixels(info.width, info.height, max_pixels)
    orientation = 1
    if adjust_orientation:
        if info.orientation is None:
            return None
        orientation = info.orientation
    if colorspace == "ANY":
        colorspace = "GRAY" if info.components == 1 else "RGB"
    scale: Any = {}
    if dct_downscale_hint is not None:
        min_size = dct_min_size(info, dct_downscale_hint, orientation)
        if min_size is not None:
            scale = {"min_height": min_size[0], "min_width": min_size[1]}
    try:
        image = _simplejpeg.decode_jpeg(view, colorspace=colorspace, strict=True, **scale)
    except Exception:
        return None  # Pillow decodes it, or raises the error the user sees
    if image.ndim == 2:
        image = image[..., None]
    if orientation != 1:
        image = np.ascontiguousarray(orient(image, orientation))
    return image
