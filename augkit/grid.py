"""Compose a batch of images into one picture with Pillow (no matplotlib): what a TensorList
shows in a notebook, and the fast path of the viewer.

Float images in [0, 1] are shown as they are; any other range is rescaled to [0, 255] per image.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from augkit import backend

_IMAGE_LAYOUTS = ("HWC", "CHW", "HW")


def looks_like_images(batch: Any) -> bool:
    """True when every sample of ``batch`` (a TensorList) can be drawn as an image."""
    if len(batch) == 0 or batch.dtype.name == "BOOL":
        return False
    layout = batch.layout()
    shapes = batch.shape()
    if layout in _IMAGE_LAYOUTS:
        return all(len(s) == len(layout) for s in shapes)
    if layout:
        return False
    return all(len(s) == 2 or (len(s) == 3 and s[-1] in (1, 3, 4)) for s in shapes)


def to_display(sample: Any, layout: str = "HWC") -> tuple[np.ndarray, bool]:
    """``(uint8 HWC or HW array, rescaled)`` for one image sample of the given layout."""
    image = backend.to_cpu(sample)
    if layout == "CHW":
        image = np.moveaxis(image, 0, -1)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if image.dtype == np.uint8:
        return image, False
    image = image.astype(np.float64)
    low, high = (float(image.min()), float(image.max())) if image.size else (0.0, 1.0)
    if low >= 0.0 and high <= 1.0:
        return np.round(image * 255).astype(np.uint8), False
    scale = 255.0 / (high - low) if high > low else 0.0
    return np.round((image - low) * scale).astype(np.uint8), True


def render(batch: Any, columns: int | None = None, tile: int = 256, pad: int = 4) -> Image.Image:
    """One RGB picture of the images of ``batch``, ``columns`` per row, each fitted in a
    ``tile`` x ``tile`` square (aspect kept)."""
    count = len(batch)
    columns = columns or min(count, 4)
    rows = math.ceil(count / columns)
    canvas = Image.new("RGB", (columns * (tile + pad) + pad, rows * (tile + pad) + pad), "white")
    for i in range(count):
        pixels, _ = to_display(batch._samples[i], batch.layout())
        image = Image.fromarray(pixels).convert("RGB")
        image.thumbnail((tile, tile), Image.Resampling.BILINEAR)
        x = pad + (i % columns) * (tile + pad) + (tile - image.width) // 2
        y = pad + (i // columns) * (tile + pad) + (tile - image.height) // 2
        canvas.paste(image, (x, y))
    return canvas
