"""``fn.decoders.mask`` / ``ops.decoders.Mask`` (augkit only; DALI has no mask decoder): encoded
label maps (segmentation masks) to (H, W, 1) arrays that keep the values stored in the file.

Why: ``fn.decoders.image`` makes images, so it converts a palette ("P") PNG to RGB through its
palette, and the class indices are lost (a VOC mask comes out as the palette's colours); it
also scales 16-bit files to 8 bits, which merges classes above 255. This decoder keeps what is
stored, by the file's Pillow mode:

- "P" and "PA" (palette): the palette indices, uint8, at every bit depth (Pillow saves palettes
  of up to 16 colours in 1, 2 or 4 bits); the palette and alpha are ignored;
- "L" and "LA" (grey): the grey values, uint8, alpha ignored; a 16-bit grey PNG with alpha,
  which Pillow reads as 8 bits, is refused;
- 1, 2 and 4-bit grey PNGs: the stored values, uint8 (0/1, 0..3, 0..15; Pillow scales 2 and
  4-bit grey to 0..255, and the scale is undone);
- "I;16" (16-bit grey PNG or TIFF): uint16, values above 255 kept;
- "I" (32-bit TIFF): int32.

Refused, with an ``OperatorError`` that names the sample and its file and says what to do:

- RGB, RGBA, CMYK, YCbCr...: a colour-coded mask; map the colours to classes (in a
  ``fn.python_function``) or save the mask as a palette PNG;
- JPEG (recognised by its signature, before anything is decoded): lossy, the values are not the
  ones that were saved; store masks as PNG;
- floating-point images ("F"): not a label map;
- bytes that are no image, empty, truncated or corrupt files (the reasons of
  ``decoders.image``), and files whose header claims more than ``max_pixels`` pixels.

PNG (every bit depth), TIFF (uncompressed, LZW, deflate), BMP, GIF and every other lossless
format Pillow reads go through the same rules; a multi-frame file gives its first frame.

``dtype`` (optional): the output type, e.g. ``types.INT64`` for a loss that wants it or
``types.UINT8`` for a 16-bit file whose classes fit. The conversion is made only when every
value fits in the type; otherwise the sample fails, naming the value that does not fit (never a
silent wrap-around). Only integer types: a mask holds class numbers.

``adjust_orientation=True`` (as in ``decoders.image``) applies an EXIF orientation that the mask
file itself carries, so that a mask stays aligned with its image decoded by ``decoders.image``
where both files carry the same tag. (A JPEG photo with an EXIF rotation and a PNG mask without
one, drawn on the rotated view, are aligned too: each decoder applies its own file's tag.)

Decisions and traps:

- DALI 2.4's ``fn.decoders.image`` (CPU), the only decoder DALI has for such files, loses the
  same values: a palette PNG gives the palette's colours (``ANY_DATA``) or their luma
  (``GRAY``), and a 16-bit PNG comes out as uint8 (300 -> 1). On 15 palette masks of the
  photos of data/images plus one 800x600 16-bit PNG, one thread, this decoder took ~25 ms per
  batch of 16 against 31 ms (``GRAY``) and 40 ms (``ANY_DATA``) for DALI's (a noisy, shared
  machine).
- Decoded with Pillow only. OpenCV's ``IMREAD_UNCHANGED`` keeps 8 and 16-bit grey values but
  turns palette PNGs into BGR (the indices are lost), and was only ~10% faster on grey PNGs
  (0.66 against 0.73 ms for a 451x300 mask; 0.81 against 0.91 ms at 16 bits), slower on
  palette PNGs (0.54 against 0.46 ms): not worth a second path.
- The input must be encoded bytes (1-D uint8), as ``decoders.image`` takes: the output of
  ``fn.readers.file`` or the second output of ``fn.readers.image_mask``.
- The output's kind is ``mask``: geometric operators move it by nearest neighbour, colour
  operators refuse it, and ``augkit.viz`` draws it as an overlay.

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    ... def masks(root):
    ...     images, masks = fn.readers.image_mask(file_root=root, mask_root=root)
    ...     return fn.decoders.image(images), fn.decoders.mask(masks)
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from augkit import kinds, types
from augkit.operators.base import SampleOperator
from augkit.operators.decoders.image import DEFAULT_MAX_PIXELS, check_encoded, open_image
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    described,
    fixed_kinds,
    register,
    to_bool,
    to_int,
)

_INTEGER_TYPES = (
    types.UINT8,
    types.UINT16,
    types.UINT32,
    types.UINT64,
    types.INT8,
    types.INT16,
    types.INT32,
    types.INT64,
)
_INTEGER_NAMES = ", ".join(f"types.{t.name}" for t in _INTEGER_TYPES)

_GREY8 = ("L", "LA", "La")
_GREY16 = ("I;16", "I;16L", "I;16B", "I;16N")
_PALETTE = ("P", "PA")
_COLOUR = ("RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "HSV", "BGR;15", "BGR;16")
_JPEG_SIGNATURE = b"\xff\xd8\xff"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@described(f"None or an integer type: {_INTEGER_NAMES}")
def _integer_dtype(value: Any) -> types.DALIDataType:
    dtype = types.to_dtype(value)
    if dtype not in _INTEGER_TYPES:
        raise ValueError(
            f"a mask holds class numbers: expected an integer type ({_INTEGER_NAMES}), got "
            f"types.{dtype.name}; convert afterwards with fn.cast where floats are needed"
        )
    return dtype


def _max_pixels(value: Any) -> int | None:
    return None if value is None else to_int(1)(value)


def _png_header(data: np.ndarray) -> tuple[int, int]:
    """(bit depth, colour type) of a PNG from its IHDR; (0, -1) for other files."""
    if data.size >= 26 and data[:8].tobytes() == _PNG_SIGNATURE:
        return int(data[24]), int(data[25])
    return 0, -1


def _stored_values(image: Image.Image, grey_depth: int) -> np.ndarray:
    """The (H, W) values stored in ``image``, by its mode (see the module docstring)."""
    mode = image.mode
    if mode == "1":
        return np.asarray(image, dtype=np.uint8)
    if mode in _PALETTE:
        # getchannel keeps the indices; Image.convert would go through the palette.
        return np.asarray(image.getchannel(0) if mode == "PA" else image, dtype=np.uint8)
    if mode in _GREY8:
        values = np.asarray(image.getchannel(0) if mode != "L" else image, dtype=np.uint8)
        if grey_depth in (2, 4):
            # Pillow scales 2 and 4-bit grey to 0..255 (by 85 and by 17); undo it.
            values = values // (255 // ((1 << grey_depth) - 1))
        return values
    if mode in _GREY16:
        return np.asarray(image).astype(np.uint16)
    if mode in ("I", "I;32", "I;32L", "I;32B"):
        values = np.asarray(image).astype(np.int32)
        # Pillow before 10.3 opened 16-bit grey PNGs as "I": they are still uint16.
        return values.astype(np.uint16) if grey_depth == 16 else values
    if mode in _COLOUR:
        raise ValueError(
            f"the file is a colour image (Pillow mode {mode!r}), not a label map: a colour-coded "
            f"mask: map colours to classes (e.g. in a fn.python_function), or save it as a "
            f"palette PNG (Pillow mode 'P') or a grey PNG of class numbers"
        )
    if mode.startswith("F"):
        raise ValueError(
            f"the file holds floating-point values (Pillow mode {mode!r}), not class numbers; "
            f"store masks as integer (grey or palette) PNGs"
        )
    raise ValueError(f"Pillow mode {mode!r} is not a label map this decoder reads")


def _convert(values: np.ndarray, dtype: types.DALIDataType | None) -> np.ndarray:
    if dtype is None:
        return values
    target = np.dtype(dtype.numpy)
    if values.dtype == target:
        return values
    info = np.iinfo(target)
    if values.size:
        low, high = int(values.min()), int(values.max())
        bad = low if low < info.min else high if high > info.max else None
        if bad is not None:
            raise ValueError(
                f"the mask holds the value {bad}, which does not fit in types.{dtype.name} "
                f"({info.min}..{info.max}); pick a wider dtype, or leave dtype=None to keep "
                f"the file's type ({values.dtype})"
            )
    return values.astype(target)


def decode_mask(
    data: np.ndarray,
    dtype: types.DALIDataType | None = None,
    adjust_orientation: bool = True,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
) -> np.ndarray:
    """Decode one encoded label map (1-D uint8 bytes) to an (H, W, 1) array of its stored
    values (see the module docstring for each mode).

    Raises:
        ValueError: the bytes are no image, a JPEG, a colour or floating-point image, or a
            value does not fit in ``dtype``; the message says what to do.

    Example:
        >>> import io
        >>> import numpy as np
        >>> from PIL import Image
        >>> buffer = io.BytesIO()
        >>> Image.fromarray(np.array([[0, 300]], np.uint16)).save(buffer, "PNG")
        >>> decode_mask(np.frombuffer(buffer.getvalue(), np.uint8))[..., 0].tolist()
        [[0, 300]]
    """
    data = np.ascontiguousarray(data)
    if data.size >= 3 and data[:3].tobytes() == _JPEG_SIGNATURE:
        raise ValueError(
            "the file is a JPEG, which is lossy: the label values are not kept; store masks "
            "as PNG (a JPEG's edges hold values between the classes)"
        )
    image = open_image(data, None, max_pixels)
    if image.format in ("JPEG", "MPO", "JPEG2000"):
        raise ValueError(
            f"the file is a {image.format}, which is lossy: the label values are not kept; "
            f"store masks as PNG"
        )
    if adjust_orientation:
        with contextlib.suppress(Exception):
            ImageOps.exif_transpose(image, in_place=True)
    depth, colour_type = _png_header(data)
    if colour_type == 4 and depth == 16:
        raise ValueError(
            "the file is a 16-bit grey PNG with alpha, whose values Pillow reads as 8 bits "
            "only; save the mask without its alpha channel"
        )
    values = _stored_values(image, depth if colour_type == 0 else 0)
    return _convert(values, dtype)[..., None]


class MaskDecoder(SampleOperator):
    """The mask decoder: one ``decode_mask`` per sample."""

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_encoded("decoders.mask", sample, "a reader's output", "1-D uint8, a reader's output")

    def cpu(
        self,
        data: np.ndarray,
        *,
        dtype: types.DALIDataType | None = None,
        adjust_orientation: bool = True,
        max_pixels: int | None = DEFAULT_MAX_PIXELS,
        **_: Any,
    ) -> np.ndarray:
        return decode_mask(data, dtype, adjust_orientation, max_pixels)

    def output_layout(self, index: int, inputs: Any) -> str:
        return "HWC"


register(
    OperatorSchema(
        name="decoders.mask",
        class_name="decoders.Mask",
        impl=MaskDecoder,
        accepts=[
            InputSpec(
                "encoded label maps (1-D uint8 samples, as fn.readers.file or "
                "fn.readers.image_mask give them)",
                kinds=("encoded",),
                ndims=(1,),
                hints={
                    "image": "they are decoded already: give the decoder the reader's output",
                    "mask": "they are decoded already: give the decoder the reader's output",
                    "labels": "labels are not files: decode the reader's first output",
                },
            )
        ],
        output_kinds=fixed_kinds(
            OutputSpec(kind=kinds.MASK, ndim=3, layout="HWC", what="decoded HWC label maps")
        ),
        doc=(
            "augkit only: decodes label maps (segmentation masks: PNG, TIFF, BMP, GIF) from "
            'encoded bytes to (H, W, 1) arrays that keep the stored values, with layout "HWC" '
            "and the data kind mask: palette PNGs give their indices (uint8; decoders.image "
            "would give the palette's colours), grey ones their values (uint8; 1, 2 and 4-bit "
            "files their stored values), 16-bit ones uint16, 32-bit TIFFs int32. ``dtype`` "
            "converts when every value fits. JPEGs (lossy) and colour images (colour-coded "
            "masks) are refused with an error naming the file and saying what to do."
        ),
        args=[
            Arg(
                "dtype",
                "output type (an integer type; None: the file's, uint8/uint16/int32); a value "
                "that does not fit is an error",
                None,
                _integer_dtype,
            ),
            Arg(
                "adjust_orientation",
                "apply an EXIF orientation tag the mask file carries (as decoders.image)",
                True,
                to_bool,
            ),
            Arg(
                "max_pixels",
                "refuse masks whose header claims more pixels than this, before decoding them "
                "(default 178956970, Pillow's own limit; None: no limit of augkit's)",
                DEFAULT_MAX_PIXELS,
                _max_pixels,
            ),
        ],
    )
)
