"""``fn.peek_image_shape``: the shape an encoded image would have once decoded, read from its
header without decoding it.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- The output is ``(H, W, C)``, 1-D, of ``dtype`` (INT64 by default; any numeric type), with no
  layout. C is 3 for ``image_type`` RGB (the default), BGR and YCbCr, 1 for GRAY; for
  ANY_DATA it is the file's own number of channels (1 grey, 2 grey + alpha, 4 with alpha or
  CMYK, else 3), as ``fn.decoders.image(output_type=types.ANY_DATA)`` gives them.
- ``adjust_orientation=True`` (default) swaps H and W for the EXIF orientations that rotate by
  90 degrees (5 to 8), as the decoder's EXIF handling does.
- The header is read by Pillow (``Image.open`` reads no pixels): every format the decoder
  reads. A sample that is not an encoded image (not 1-D uint8, or not a known format) is an
  error naming the sample.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
from PIL import Image

from augkit import types
from augkit.operators.base import SampleOperator
from augkit.operators.layouts import number_dtype
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    register,
    to_bool,
)

_ANY_CHANNELS = {"1": 1, "L": 1, "I": 1, "F": 1, "LA": 2, "La": 2, "PA": 2, "RGBA": 4, "CMYK": 4}


@described("types.RGB, types.BGR, types.GRAY, types.YCbCr or types.ANY_DATA")
def _image_type(value: Any) -> types.DALIImageType:
    if isinstance(value, str) and value in types.DALIImageType.__members__:
        return types.DALIImageType[value]
    if isinstance(value, (types.DALIImageType, int)) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            return types.DALIImageType(value)
    raise ValueError(
        f"expected types.RGB, types.BGR, types.GRAY, types.YCbCr or types.ANY_DATA, got {value!r}"
    )


_numeric = number_dtype(
    "a numeric data type: types.INT64, types.INT32, types.FLOAT, ...",
    "the shape cannot be given as types.{name}",
)


def _channels(image: Image.Image, image_type: types.DALIImageType) -> int:
    if image_type == types.GRAY:
        return 1
    if image_type != types.ANY_DATA:
        return 3
    mode = image.mode
    if mode.startswith("I;16"):
        return 1
    if mode == "P":
        return 4 if "transparency" in image.info else 3
    return _ANY_CHANNELS.get(mode, 3)


class PeekImageShape(SampleOperator):
    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim != 1 or sample.dtype != np.uint8:
            raise ValueError(
                f"peek_image_shape needs encoded images (1-D uint8 bytes), got a sample of "
                f"shape {tuple(sample.shape)} and type {sample.dtype}"
            )

    def cpu(
        self,
        sample: Any,
        *,
        dtype: types.DALIDataType,
        image_type: types.DALIImageType,
        adjust_orientation: bool,
        **_: Any,
    ) -> Any:
        try:
            image = Image.open(io.BytesIO(np.ascontiguousarray(sample).tobytes()))
        except (Image.DecompressionBombError, OSError, ValueError, SyntaxError) as exc:
            raise ValueError(f"cannot read an image header ({type(exc).__name__}: {exc})") from None
        width, height = image.size
        if adjust_orientation:
            with contextlib.suppress(Exception):
                if image.getexif().get(0x0112) in (5, 6, 7, 8):
                    width, height = height, width
        return np.array([height, width, _channels(image, image_type)], dtype.numpy)

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""


register(
    OperatorSchema(
        name="peek_image_shape",
        class_name="PeekImageShape",
        impl=PeekImageShape,
        output_kinds=lambda args, inputs: [OutputSpec(ndim=1, layout="", what="image shapes")],
        doc=(
            "The (H, W, C) shape that each encoded image would have once decoded, read from "
            "its header: C from ``image_type``, H and W swapped for an EXIF rotation by 90 "
            "degrees when ``adjust_orientation``."
        ),
        args=[
            Arg("adjust_orientation", "apply the EXIF orientation to H and W", True, to_bool),
            Arg("dtype", "the output type", types.INT64, _numeric),
            Arg(
                "image_type",
                "the colour format the image would be decoded to",
                types.RGB,
                _image_type,
            ),
        ],
    )
)
