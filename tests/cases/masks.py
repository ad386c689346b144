"""Rows of the masks family: ``decoders.mask`` (label maps that keep their class indices) and
``readers.image_mask`` (images and their masks read as pairs).

Decisions and traps:

- ``decoders.mask`` refuses JPEGs and colour PNGs, which is all the "jpegs" input of the table
  holds, so its row takes the images (``input="none"``: the body makes its own input from
  ``x``): a ``python_function`` encodes each image's grey levels, in bands, as a palette PNG,
  and the decoder decodes that. ``extra_inputs`` gives the fuzzer valid encoded masks (palette,
  grey, 16-bit, 1-bit PNGs) for input 0, three calls in four.
- ``readers.image_mask`` needs a mask for each photo of data/images: written once, on first
  import, as tiny palette PNGs into a temporary folder removed at exit (data/masks is another
  engineer's and is not relied upon).
"""

from __future__ import annotations

import atexit
import functools
import io
import pathlib
import shutil
import tempfile
from typing import Any

import numpy as np
from PIL import Image

from tests.cases._row import OperatorCase

IMAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "images"


def _png(image: Image.Image) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return np.frombuffer(buffer.getvalue(), np.uint8)


def _palette_png(image: np.ndarray) -> np.ndarray:
    """A palette PNG of an image's grey levels in 4 bands (what the row decodes)."""
    grey = image.astype(np.int32).mean(axis=-1) if image.ndim == 3 else image
    mask = Image.fromarray((np.asarray(grey, np.int32) * 4 // 256).astype(np.uint8), "P")
    mask.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 0])
    return _png(mask)


@functools.cache
def _valid_masks() -> tuple[np.ndarray, ...]:
    values = np.arange(30, dtype=np.uint8).reshape(5, 6) % 7
    return (
        _palette_png(values.astype(np.uint8) * 60),
        _png(Image.fromarray(values, "L")),
        _png(Image.fromarray(values.astype(np.uint16) * 1000)),
        _png(Image.fromarray(values > 3)),
    )


def _masks_input(k: int, n: int) -> list[np.ndarray]:
    masks = _valid_masks()
    return [masks[(k + i) % len(masks)] for i in range(n)]


@functools.cache
def mask_root() -> str:
    """A folder of palette PNG masks laid out as data/images (one per photo)."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="augkit-case-masks-"))
    atexit.register(shutil.rmtree, root, True)
    for photo in sorted(IMAGES.glob("*/*.jpg")):
        target = root / photo.parent.name / f"{photo.stem}.png"
        target.parent.mkdir(exist_ok=True)
        small = np.asarray(Image.open(photo).convert("L").resize((8, 6)))
        target.write_bytes(_palette_png(small).tobytes())
    return str(root)


def _decode_body(op: Any, x: Any) -> tuple[Any, ...]:
    encoded = op("python_function")(x, function=_palette_png)
    return (op("decoders.mask")(encoded), op("decoders.mask")(encoded, dtype=_int64()))


def _int64() -> Any:
    from augkit import types

    return types.INT64


CASES: dict[str, OperatorCase] = {
    "decoders.mask": OperatorCase(
        input="none",
        body=_decode_body,
        extra_inputs=_masks_input,
    ),
    "readers.image_mask": OperatorCase(
        input="none",
        body=lambda op, x: op("readers.image_mask")(
            file_root=str(IMAGES), mask_root=mask_root(), random_shuffle=True, name="pairs"
        ),
        eager=False,
        required={"file_root": str(IMAGES), "mask_root": mask_root()},
    ),
}
