"""Boxes, masks, keypoints and polygons drawn over image tiles (Pillow and NumPy only).

``augkit.viz`` (both renderers), ``augkit.grid`` and the viewer share this module: each image
tile is first fitted in its square (``augkit.grid.fit``), then its targets are drawn on it *in
the tile's scale* (line widths and text follow the tile, not the image), so that a 4000 px photo
and a 64 px crop get the same 2 px outlines. No matplotlib and no ipywidgets: the core may
import it.

What is drawn, in this order (later over earlier):

- a mask (a label map of class indices, (H, W) or (H, W, 1)) blended over the image with
  ``mask_alpha``; class 0 is transparent, every other class its colour, and the borders
  between classes at full colour (so a 0/1 map stays visible on a bright photo). A mask of
  another size than its image covers the whole image, scaled with the nearest neighbour.
- polygons (DALI's COCO form: ``polygons`` rows [mask_idx, start_vertex, end_vertex] into
  ``vertices`` (x, y) rows): outlines and a light fill, coloured by the class of the object
  ``mask_idx`` when per-object labels are known.
- boxes: rectangles in the colour of their class, each with a filled tag holding its class
  name (``class_names[label]``, else the number); a dark (or, for dark colours, light) halo
  keeps every colour visible on any photo.
- keypoints: dots with a dark outline, coloured by their index (a skeleton's joints stay apart).

Decisions and traps:

- One palette for every class number (``class_colour``): augkit.grid's mask colours (class 0
  black, 1 white, then matplotlib's "tab10", repeating from class 12), so a box of class 3 has
  the colour of class 3 in a mask drawn beside it.
- Coordinates: boxes in "ltrb" (left, top, right, bottom) or "xywh"; relative (fractions of
  the image's width and height, DALI's default) or absolute (pixels). The kind of the batch
  says which (``Kind.box_format``, ``Kind.relative``); where it says nothing (an array, a
  generic batch, ``Kind("vertices")``), the coordinates are taken as relative when every
  finite value is within [0, 1], else as pixels (``coordinates_are_relative``).
- A box's right and bottom are edges, not pixels: a box (10, 20, 30, 40) in pixels covers
  columns 10 to 29; its outline is drawn inward from those edges, so it lies on the border
  pixels of the region, within a pixel of the tile's scale.
- Non-finite coordinates are skipped, not drawn at 0; boxes and points outside the image are
  clipped by the tile.
- Wrong shapes raise ``ValueError`` here with a plain message; callers (``augkit.viz``) add
  the argument and the sample index and raise ``ArgumentError``.

Example:
    >>> import numpy as np
    >>> from PIL import Image
    >>> tile = Image.new("RGB", (100, 50), "gray")
    >>> overlay = Overlay(boxes=np.array([[0.1, 0.2, 0.5, 0.8]]), box_labels=[3])
    >>> draw(tile, overlay, (200, 100), class_names={3: "cat"}).size
    (100, 50)
    >>> class_colour(3)
    (255, 127, 14)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

PALETTE = np.array(
    [
        (0, 0, 0),
        (255, 255, 255),
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ],
    np.uint8,
)
"""The colour of each class number: 0 black, 1 white, 2 to 11 "tab10"; from 12 on the colours
(all but black) repeat."""

OVERLAY_KINDS = ("boxes", "masks", "keypoints", "polygons")
"""The overlays a tile can have (the viewer's toggles)."""


def class_indices(classes: np.ndarray) -> np.ndarray:
    """The row of ``PALETTE`` for each class number (any integer array)."""
    classes = np.asarray(classes).astype(np.int64)
    others = len(PALETTE) - 1  # the colours that repeat: all but black
    return np.where(classes == 0, 0, 1 + (classes - 1) % others)


def class_colour(label: Any) -> tuple[int, int, int]:
    """The colour of class ``label`` (``PALETTE``); a label that is not a whole number gets
    the colour of class 1."""
    try:
        number = int(label)
    except (TypeError, ValueError, OverflowError):
        number = 1
    r, g, b = PALETTE[int(class_indices(np.array(number)))]
    return int(r), int(g), int(b)


def class_name(label: Any, class_names: Mapping[int, str] | Sequence[str] | None) -> str:
    """``class_names[label]`` when it is known, else the label as a number ("3")."""
    try:
        number = int(label)
    except (TypeError, ValueError, OverflowError):
        return str(label)
    if class_names is not None:
        if isinstance(class_names, Mapping):
            name = class_names.get(number)
        else:
            name = class_names[number] if 0 <= number < len(class_names) else None
        if name is not None:
            return str(name)
    return str(number)


def coordinates_are_relative(values: np.ndarray, relative: bool | None) -> bool:
    """``relative`` when it is known; else whether every finite value is within [0, 1]."""
    if relative is not None:
        return bool(relative)
    finite = values[np.isfinite(values)]
    return bool(finite.size == 0 or (finite.min() >= 0.0 and finite.max() <= 1.0))


@dataclass
class Overlay:
    """The targets of one image (every field optional).

    Attributes:
        boxes: N x 4 coordinates (``box_format``; ``boxes_relative``: fractions of the image
            size, pixels, or ``None``: decided by the values).
        box_labels: one class number per box (colours and tags), or ``None``.
        mask: a label map (H, W) or (H, W, 1) of class indices.
        keypoints: N x 2 (x, y).
        polygons: rows [mask_idx, start_vertex, end_vertex] into ``vertices`` (N x 2, x, y).
    """

    boxes: np.ndarray | None = None
    box_format: str = "ltrb"
    boxes_relative: bool | None = None
    box_labels: Sequence[int] | np.ndarray | None = None
    mask: np.ndarray | None = None
    keypoints: np.ndarray | None = None
    keypoints_relative: bool | None = None
    polygons: np.ndarray | None = None
    vertices: np.ndarray | None = None
    vertices_relative: bool | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.boxes, self.mask, self.keypoints, self.polygons))


def check(overlay: Overlay) -> None:
    """Raise ``ValueError`` (a plain message naming the target) for a shape that cannot be
    drawn; called before anything is drawn."""
    if overlay.boxes is not None:
        boxes = np.asarray(overlay.boxes)
        if boxes.size and (boxes.ndim != 2 or boxes.shape[1] != 4):
            raise ValueError(f"boxes: expected N x 4 coordinates, got shape {boxes.shape}")
        if overlay.box_format not in ("ltrb", "xywh"):
            raise ValueError(f"box_format must be 'ltrb' or 'xywh', got {overlay.box_format!r}")
        if overlay.box_labels is not None:
            count = np.asarray(overlay.box_labels).size
            if count != len(boxes.reshape(-1, 4)):
                raise ValueError(
                    f"labels: {count} labels for {len(boxes.reshape(-1, 4))} boxes (one per box)"
                )
    if overlay.mask is not None:
        mask = np.asarray(overlay.mask)
        if mask.ndim == 3 and mask.shape[-1] == 1:
            mask = mask[..., 0]
        if mask.ndim != 2 or mask.size == 0:
            raise ValueError(
                f"masks: expected a label map (H, W) or (H, W, 1), got shape {mask.shape}"
            )
        if mask.dtype.kind not in "biuf":
            raise ValueError(f"masks: expected class indices (integers), got {mask.dtype}")
    if overlay.keypoints is not None:
        points = np.asarray(overlay.keypoints)
        if points.size and points.shape[-1] != 2:
            raise ValueError(f"keypoints: expected N x 2 (x, y), got shape {points.shape}")
    if (overlay.polygons is None) != (overlay.vertices is None):
        raise ValueError("polygons and vertices go together: give both (readers.coco's outputs)")
    if overlay.polygons is not None:
        rows = np.asarray(overlay.polygons)
        vertices = np.asarray(overlay.vertices)
        if rows.size and (rows.ndim != 2 or rows.shape[1] != 3):
            raise ValueError(
                f"polygons: expected rows [mask_idx, start_vertex, end_vertex], got shape "
                f"{rows.shape}"
            )
        if vertices.size and (vertices.ndim != 2 or vertices.shape[1] != 2):
            raise ValueError(f"vertices: expected N x 2 (x, y), got shape {vertices.shape}")
        rows = rows.reshape(-1, 3).astype(np.int64)
        if rows.size and (rows[:, 1].min() < 0 or rows[:, 2].max() > len(vertices)):
            raise ValueError(
                f"polygons: a vertex range goes past the {len(vertices)} vertices "
                f"(rows {rows.tolist()[:4]})"
            )


def ltrb_pixels(overlay: Overlay, width: int, height: int) -> np.ndarray:
    """The boxes as N x 4 (left, top, right, bottom) in pixels of a ``width`` x ``height``
    image (floats; edges, not pixel indices)."""
    boxes = np.asarray(overlay.boxes, np.float64).reshape(-1, 4)
    if overlay.box_format == "xywh":
        boxes = np.concatenate([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], axis=1)
    if coordinates_are_relative(boxes, overlay.boxes_relative):
        boxes = boxes * np.array([width, height, width, height], np.float64)
    return boxes


def points_pixels(points: Any, relative: bool | None, width: int, height: int) -> np.ndarray:
    """(x, y) points in pixels of a ``width`` x ``height`` image."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    if coordinates_are_relative(points, relative):
        points = points * np.array([width, height], np.float64)
    return points


def draw(
    tile: Image.Image,
    overlay: Overlay,
    image_size: tuple[int, int],
    class_names: Mapping[int, str] | Sequence[str] | None = None,
    mask_alpha: float = 0.45,
) -> Image.Image:
    """Draw ``overlay`` on ``tile`` (an RGB picture of an image of ``image_size`` = (width,
    height) pixels, fitted in its tile at any scale) and return it (drawn in place).

    Raises:
        ValueError: a target of a shape that cannot be drawn (``check``).
    """
    check(overlay)
    if tile.mode != "RGB":
        tile = tile.convert("RGB")
    width, height = image_size
    sx, sy = tile.width / max(width, 1), tile.height / max(height, 1)
    side = max(tile.width, tile.height)
    line = max(1, round(side / 128))
    if overlay.mask is not None:
        tile = _blend_mask(tile, np.asarray(overlay.mask), mask_alpha)
    pen = ImageDraw.Draw(tile, "RGBA")
    labels = None if overlay.box_labels is None else np.asarray(overlay.box_labels).ravel()
    if overlay.polygons is not None:
        vertices = points_pixels(overlay.vertices, overlay.vertices_relative, width, height)
        for mask_idx, start, end in np.asarray(overlay.polygons).reshape(-1, 3).astype(int):
            points = vertices[start:end] * (sx, sy)
            if len(points) < 2 or not np.isfinite(points).all():
                continue
            if labels is not None and 0 <= mask_idx < len(labels):  # its object's label
                colour = class_colour(labels[mask_idx])
            else:
                colour = class_colour(mask_idx + 2)
            flat = [tuple(p) for p in points.tolist()]
            if len(flat) >= 3:
                pen.polygon(flat, fill=(*colour, 64))
            pen.line([*flat, flat[0]], fill=(*colour, 255), width=line)
    if overlay.boxes is not None:
        _draw_boxes(tile, pen, overlay, (width, height, sx, sy), labels, class_names, line)
    if overlay.keypoints is not None:
        points = points_pixels(overlay.keypoints, overlay.keypoints_relative, width, height)
        radius = max(2.0, side / 64)
        for k, (x, y) in enumerate((points * (sx, sy)).tolist()):
            if not (np.isfinite(x) and np.isfinite(y)):
                continue
            box = (x - radius, y - radius, x + radius, y + radius)
            pen.ellipse(box, fill=class_colour(k + 2), outline=(20, 20, 20), width=max(1, line))
    return tile


def _draw_boxes(
    tile: Image.Image,
    pen: ImageDraw.ImageDraw,
    overlay: Overlay,
    scale: tuple[int, int, float, float],
    labels: np.ndarray | None,
    class_names: Mapping[int, str] | Sequence[str] | None,
    line: int,
) -> None:
    """The boxes on ``tile`` (``pen`` draws on it), their tags pasted; ``scale``: the image's
    width and height, and the tile's pixels per image pixel across and down."""
    width, height, sx, sy = scale
    side = max(tile.width, tile.height)
    boxes = ltrb_pixels(overlay, width, height) * (sx, sy, sx, sy)
    size = max(9, min(side // 22, 16))
    for k, (left, top, right, bottom) in enumerate(boxes.tolist()):
        if not np.isfinite([left, top, right, bottom]).all():
            continue
        # Edges to the border pixels inside them: column round(left) .. round(right) - 1.
        x0, y0 = round(left), round(top)
        x1, y1 = max(x0, round(right) - 1), max(y0, round(bottom) - 1)
        label = None if labels is None else labels[k]
        colour = class_colour(1 if label is None else label)
        halo = (255, 255, 255, 160) if _dark(colour) else (0, 0, 0, 160)
        pen.rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=halo, width=1)
        if x1 - x0 > 2 * line and y1 - y0 > 2 * line:
            pen.rectangle((x0 + line, y0 + line, x1 - line, y1 - line), outline=halo, width=1)
        pen.rectangle((x0, y0, x1, y1), outline=(*colour, 255), width=line)
        if label is None:
            continue
        tag = _tag(class_name(label, class_names), colour, size)
        ty = y0 - tag.height if y0 - tag.height >= 0 else y0  # above the box, else inside it
        tile.paste(tag, (x0, ty))


@functools.lru_cache(maxsize=1024)
def _tag(text: str, colour: tuple[int, int, int], size: int) -> Image.Image:
    """A box's tag: ``text`` on a filled rectangle of its class colour (rendered once per text,
    colour and size, then pasted: text is what costs most to draw)."""
    font = _font(size)
    scratch = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    left, top, right, bottom = scratch.textbbox((0, 0), text, font=font)
    # textbbox's stubs say float (its xy is); at xy (0, 0) with these fonts the box is ints
    tag = Image.new("RGB", (right - left + 5, bottom - top + 5), colour)  # type: ignore[arg-type]
    ink = (255, 255, 255) if _dark(colour) else (0, 0, 0)
    ImageDraw.Draw(tag).text((2 - left, 2 - top), text, fill=ink, font=font)
    return tag


def _blend_mask(tile: Image.Image, mask: np.ndarray, alpha: float) -> Image.Image:
    """The label map scaled (nearest) to the tile, blended with ``alpha``; class borders at
    full colour."""
    if mask.ndim == 3:
        mask = mask[..., 0]
    rows = (np.arange(tile.height) * mask.shape[0]) // tile.height
    columns = (np.arange(tile.width) * mask.shape[1]) // tile.width
    classes = mask[rows[:, None], columns[None, :]]
    if classes.dtype.kind == "f":
        classes = np.where(np.isfinite(classes), classes, 0)
    classes = classes.astype(np.int64)
    covered = classes != 0
    if not covered.any():
        return tile
    pixels = np.array(tile)  # a copy, written below
    colours = PALETTE[class_indices(classes)]
    alpha = float(np.clip(alpha, 0.0, 1.0))
    under = pixels[covered].astype(np.float32)
    pixels[covered] = (under * (1 - alpha) + colours[covered] * alpha + 0.5).astype(np.uint8)
    border = np.zeros_like(covered)
    down = classes[:-1] != classes[1:]
    across = classes[:, :-1] != classes[:, 1:]
    border[:-1] |= down
    border[1:] |= down
    border[:, :-1] |= across
    border[:, 1:] |= across
    border &= covered
    pixels[border] = colours[border]
    return Image.fromarray(pixels)


def _dark(colour: tuple[int, int, int]) -> bool:
    r, g, b = colour
    return 0.299 * r + 0.587 * g + 0.114 * b < 110


@functools.cache
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size)
