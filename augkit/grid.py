"""Compose images into one picture with Pillow (no matplotlib): what a TensorList shows in a
notebook, and the fast path of ``augkit.viz`` and the viewer.

Pixels are shown as they are for uint8 (and bool, as 0/255) and for floats in [0, 1]; any
other range is rescaled to [0, 255] per image, and the image's caption says so.

Decisions and traps:

- What is drawn follows the batch's data kind (``batch.kind``, ``augkit.kinds``), not its
  shape: ``image`` and ``mask`` are drawn; ``labels``, ``encoded``, ``boxes``, ``keypoints``,
  ``polygons`` and ``vertices`` never are, whatever their shape (a batch of 3 labels of shape
  (1, 3) is not a row of pixels; ``not_drawn`` says why and what to do instead; ``augkit.viz``
  draws boxes, keypoints and polygons over their images, ``augkit.overlays``). Only a
  ``generic`` batch (a Python function's output, unless it said ``kind=`` or gave an image
  layout) is still judged by its shape (``image_layout``), since a function may return images
  without saying so; a generic bool batch is taken for flags, not drawn.
- A mask is a label map, so its values are classes, not brightness: class 0 is black, class 1
  white, classes 2 to 11 ten distinct colours (matplotlib's "tab10"), and the colours repeat
  from class 12 on (never black again); a bool mask is classes 0 and 1. Drawn as a uint8
  image, classes 1, 2, 3 would all look black. The palette is ``augkit.overlays.PALETTE``,
  which colours boxes by class too. A mask with several channels, or with values
  that are not whole numbers (a soft mask), is drawn as an image would be.

Example:
    >>> import numpy as np
    >>> pixels, value_range = to_display(np.linspace(-1, 1, 12).reshape(2, 2, 3), "HWC")
    >>> pixels.dtype, value_range
    (dtype('uint8'), (-1.0, 1.0))
    >>> picture = render_tiles([pixels], ["a caption"], tile=64)
    >>> picture.size
    (72, 89)
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from augkit import backend, kinds, overlays
from augkit.kinds import Kind

_IMAGE_LAYOUTS = ("HWC", "CHW", "HW")
_CHANNELS = (1, 3, 4)

DRAWN_KINDS = frozenset({"image", "mask"})
"""The kinds drawn as pixels (when their samples have an image's shape)."""
NOT_DRAWN_KINDS = frozenset({"labels", "encoded", "boxes", "keypoints", "polygons", "vertices"})
"""The kinds never drawn as pixels, whatever their shape: shown as values instead."""

# Class 0 black, class 1 white, then matplotlib's tab10 (see the module docstring): the one
# palette of class numbers, shared with the overlays' boxes and masks (augkit.overlays).
_MASK_COLOURS = overlays.PALETTE
_NOT_DRAWN = {
    "labels": "labels are class numbers, not pixels; pass them as labels= to title each image "
    "with its label",
    "encoded": "encoded samples are a file's bytes, not pixels; decode them first "
    "(fn.decoders.image)",
}


def image_layout(shape: Sequence[int], layout: str = "") -> str | None:
    """How to draw a sample of ``shape``: ``"HWC"``, ``"CHW"`` or ``"HW"``, or ``None`` when it
    is not an image (or is empty).

    A batch's own image layout is used when it has one; with none (``""``), the layout is
    guessed from the shape: 2-D is HW, 3-D is HWC when its last axis has 1, 3 or 4 channels,
    else CHW when its first axis does.
    """
    if not shape or min(shape) == 0:
        return None
    if not layout:
        if len(shape) == 2:
            return "HW"
        if len(shape) == 3:
            layout = "HWC" if shape[-1] in _CHANNELS else "CHW"
    if layout not in _IMAGE_LAYOUTS or len(shape) != len(layout):
        return None
    if layout == "HW":
        return layout
    return layout if shape[layout.index("C")] in _CHANNELS else None


def kind_of(batch: Any) -> Kind:
    """The data kind of ``batch``: its ``kind`` (a TensorList's), else generic (an array, a
    list, a sample)."""
    kind = getattr(batch, "kind", None)
    return kind if isinstance(kind, Kind) else kinds.GENERIC


def not_drawn(kind: Kind) -> str | None:
    """Why a batch of ``kind`` is never drawn as pixels, and what to do instead; ``None`` for
    the kinds that may be drawn (image, mask, generic).

    Example:
        >>> not_drawn(kinds.ENCODED)
        "encoded samples are a file's bytes, not pixels; decode them first (fn.decoders.image)"
        >>> not_drawn(kinds.IMAGE) is None
        True
    """
    if kind.name not in NOT_DRAWN_KINDS:
        return None
    return _NOT_DRAWN.get(kind.name) or (
        f"{kind.name} are coordinates, not pixels; draw the images they belong to (the values "
        f"are in the batch: batch.at(i))"
    )


def looks_like_images(batch: Any) -> bool:
    """True when ``batch`` (a TensorList) is drawn as images: its kind is image or mask, or
    generic and not bool (see the module docstring), and every sample has an image's shape
    (``image_layout``)."""
    kind = kind_of(batch)
    if len(batch) == 0 or kind.name in NOT_DRAWN_KINDS:
        return False
    if kind.is_generic and batch.dtype.name == "BOOL":
        return False
    return all(image_layout(s, batch.layout()) for s in batch.shape())


def to_display(
    sample: Any, layout: str = "HWC", kind: Kind | str = kinds.IMAGE
) -> tuple[np.ndarray, tuple[float, float] | None]:
    """``(pixels, value_range)`` for one image sample of the given layout: ``pixels`` is uint8
    HW (grayscale) or HWC with 3 or 4 channels; ``value_range`` is the sample's ``(min, max)``
    when it was rescaled to [0, 255], ``None`` when its values are shown as they are. A sample
    of kind mask is coloured by class (see the module docstring).

    Example:
        >>> to_display(np.array([[0, 1], [2, 14]], np.uint8), "HW", "mask")[0].tolist()
        [[[0, 0, 0], [255, 255, 255]], [[31, 119, 180], [255, 127, 14]]]
    """
    image = backend.to_cpu(sample)
    if layout == "CHW":
        image = np.moveaxis(image, 0, -1)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if kinds.parse(kind).name == "mask":
        coloured = _mask_colours(image)
        if coloured is not None:
            return coloured, None
    if image.dtype == np.uint8:
        return image, None
    if image.dtype == np.bool_:
        return image.astype(np.uint8) * 255, None
    image = image.astype(np.float64)
    finite = np.isfinite(image)
    values = image if finite.all() else image[finite]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if low >= 0.0 and high <= 1.0:
        scaled, value_range = image * 255.0, None
    else:
        scale = 255.0 / (high - low) if high > low else 0.0
        scaled, value_range = (image - low) * scale, (low, high)
    # NaN and infinities are drawn black instead of being cast to arbitrary bytes.
    pixels = np.where(finite, np.round(scaled), 0.0).astype(np.uint8)
    return pixels, value_range


def _mask_colours(mask: np.ndarray) -> np.ndarray | None:
    """An HW label map as HWC colours, one per class; ``None`` for what is not one (several
    channels, values that are not whole numbers)."""
    if mask.ndim != 2:
        return None
    if mask.dtype.kind == "f":
        if not (np.isfinite(mask).all() and (mask == np.round(mask)).all()):
            return None
    elif mask.dtype.kind not in "biu":
        return None
    return _MASK_COLOURS[overlays.class_indices(mask)]


def label_text(value: Any) -> str:
    """A label as a title shows it: a string as it is, numbers joined by ", " (``[3]`` is
    ``"3"``, ``[0.5, 2]`` is ``"0.5, 2"``)."""
    if isinstance(value, str):
        return value
    items = np.asarray(backend.to_cpu(value)).ravel().tolist()
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in items)


def caption(text: str, value_range: tuple[float, float] | None) -> str:
    """``text`` with a note of the original range when the image was rescaled, e.g.
    ``"cat.jpg (rescaled from [-1.5, 2.2])"``."""
    if value_range is None:
        return text
    note = f"rescaled from [{value_range[0]:.3g}, {value_range[1]:.3g}]"
    return f"{text} ({note})" if text else note


def fit(pixels: np.ndarray, tile: int) -> Image.Image:
    """``pixels`` as an RGB Pillow image scaled to fit a ``tile`` x ``tile`` square, aspect
    kept: bilinear when shrinking, nearest when enlarging (small images stay crisp)."""
    image = Image.fromarray(pixels)
    if image.mode != "RGB":
        image = image.convert("RGB")
    scale = min(tile / image.width, tile / image.height)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    if size == image.size:
        return image
    resample = Image.Resampling.BILINEAR if scale < 1 else Image.Resampling.NEAREST
    return image.resize(size, resample, reducing_gap=2.0 if scale < 0.5 else None)


def title_height(tile: int) -> int:
    """The height in pixels of the caption band above each tile of a grid with captions."""
    return getattr(_font(tile), "size", 11) + 7


def render_tiles(
    images: Sequence[np.ndarray],
    titles: Sequence[str] = (),
    columns: int | None = None,
    tile: int = 256,
    pad: int = 4,
) -> Image.Image:
    """One RGB picture of ``images`` (uint8 HW or HWC, see ``to_display``), ``columns`` per
    row (default: up to 4), each fitted in a ``tile`` x ``tile`` square, aspect kept, right under
    its title (Pillow's default font; too long a title is cut in the middle with "…").

    The picture is ``columns * (tile + pad) + pad`` pixels wide and
    ``rows * (title_height(tile) + tile + pad) + pad`` high, the title band only when some
    title is not empty.
    """
    count = len(images)
    columns = max(1, min(columns or min(count, 4), max(count, 1)))
    band = title_height(tile) if any(titles) else 0
    # The titles drawn once per set of titles: a slider move redraws the same ones, and text
    # (fitted to the tile by a search over its length) was a third of a 16-tile redraw.
    canvas = _titled_canvas(tuple(titles[:count]), count, columns, tile, pad).copy()
    for i, pixels in enumerate(images):
        left = pad + (i % columns) * (tile + pad)
        top = pad + (i // columns) * (band + tile + pad)
        image = fit(pixels, tile)
        # Centred across, at the top: a wide image sits right under its title.
        canvas.paste(image, (left + (tile - image.width) // 2, top + band))
    return canvas


@functools.lru_cache(maxsize=4)
def _titled_canvas(
    titles: tuple[str, ...], count: int, columns: int, tile: int, pad: int
) -> Image.Image:
    """A white picture of ``count`` tiles with their titles and no images (never changed:
    ``render_tiles`` pastes into a copy)."""
    rows = math.ceil(count / columns)
    band = title_height(tile) if any(titles) else 0
    width = columns * (tile + pad) + pad
    canvas = Image.new("RGB", (width, rows * (band + tile + pad) + pad), "white")
    if not band:
        return canvas
    draw = ImageDraw.Draw(canvas)
    font = _font(tile)
    for i, title in enumerate(titles):
        if title:
            left = pad + (i % columns) * (tile + pad)
            top = pad + (i // columns) * (band + tile + pad)
            text = _fit_text(draw, title, font, tile)
            x = left + (tile - draw.textlength(text, font=font)) / 2
            draw.text((x, top + band - 4), text, fill="black", font=font, anchor="ls")
    return canvas


def tile_at(
    x: float, y: float, count: int, columns: int, tile: int, band: int, pad: int = 4
) -> int | None:
    """Which of ``count`` tiles of a ``render_tiles`` picture holds its pixel ``(x, y)``
    (a title band belongs to its tile), or None for the padding and outside: where a click on
    the viewer's grid landed."""
    columns = max(1, min(columns, max(count, 1)))
    column, across = divmod(int(x) - pad, tile + pad)
    row, down = divmod(int(y) - pad, band + tile + pad)
    if x < pad or y < pad or across >= tile or down >= band + tile or column >= columns:
        return None
    index = row * columns + column
    return index if 0 <= index < count else None


def render(batch: Any, columns: int | None = None, tile: int = 256, pad: int = 4) -> Image.Image:
    """One RGB picture of the images of ``batch`` (a TensorList; see ``looks_like_images``),
    each under its ``source_info`` and, if it was rescaled, its original range."""
    images, titles = [], []
    kind = kind_of(batch)
    for index, sample in enumerate(batch):
        # not None: the batch looks_like_images, so each sample has an image's layout
        layout = cast(str, image_layout(sample.shape(), batch.layout()))
        pixels, value_range = to_display(np.asarray(sample), layout, kind)
        images.append(pixels)
        titles.append(caption(batch.source_info(index), value_range))
    return render_tiles(images, titles, columns, tile, pad)


def to_png(picture: Image.Image, compress_level: int = 1) -> bytes:
    """``picture`` as PNG bytes. zlib level 1 by default: about as small as the default level
    on photos, and several times faster to write (what keeps the viewer responsive)."""
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


def to_jpeg(picture: Image.Image, quality: int = 90) -> bytes:
    """``picture`` as JPEG bytes, without chroma subsampling (4:4:4), so that titles, box
    outlines and mask colours keep sharp edges: at quality 90 a 16-tile grid of 300 x 300 photos
    is about a fifth of its PNG (0.46 MB against 2.1 MB) and encodes about 12x faster (9 ms
    against 113 ms on this project's 2-core machine), what the viewer sends by default."""
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    buffer = io.BytesIO()
    picture.convert("RGB").save(buffer, format="JPEG", quality=quality, subsampling=0)
    return buffer.getvalue()


def shorten(text: str, keep: int) -> str:
    """``text`` cut to ``keep`` characters and "…" when it is longer, keeping its start and,
    longer, its end (where the label and the rescaled note are): ``"anim…_cat.jpg · 0"``."""
    if len(text) <= keep:
        return text
    head = keep // 3
    return text[:head] + "…" + text[len(text) - (keep - head) :]


@functools.cache
def _font(tile: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(max(10, min(tile // 20, 16)))


def _fit_text(draw: ImageDraw.ImageDraw, text: str, font: Any, width: int) -> str:
    if draw.textlength(text, font=font) <= width:
        return text
    low, high = 0, len(text)  # the most characters kept that fit in ``width``
    while low < high:
        middle = (low + high + 1) // 2
        if draw.textlength(shorten(text, middle), font=font) <= width:
            low = middle
        else:
            high = middle - 1
    return shorten(text, low)
