"""Look at batches: image grids of TensorLists, debug nodes, NumPy arrays and torch tensors.

Two renderers draw the same grid, one tile per image, each under its title:

- ``image_grid`` (a matplotlib Figure) and ``show_images`` (draws it, ``plt.show()`` style).
  matplotlib is imported only when one of them is called: it comes with the ``notebook`` extra.
- ``render_grid`` (a Pillow picture) and ``image_grid_png`` (PNG bytes): no matplotlib, fast
  enough for a viewer to redraw a 4 x 4 grid on every slider move. ``TensorList`` shows itself
  in a notebook with the same renderer (``augkit.grid``).

What is drawn: uint8 as it is, floats in [0, 1] as they are, any other range rescaled to
[0, 255] per image (and the title says ``(rescaled from [min, max])``); HWC, CHW (from the
batch's ``layout()``, or guessed from the shape when it has none), HW and (H, W, 1) grayscale;
images of different sizes, each fitted in its tile with its aspect kept. Titles default to each
sample's ``source_info`` (the file it was read from) and its label, when ``labels=`` is given:
``"people/grace_hopper.jpg · 3"``.

Several batches are laid side by side per sample, one column each: row ``i`` holds ``a[i]``,
``b[i]``, ... (a before/after comparison in one call).

Overlays (``augkit.overlays``): ``boxes=``, ``masks=``, ``keypoints=``, ``polygons=`` +
``vertices=`` draw each image's targets over its tile, in the tile's scale (the same pixels
in both renderers); boxes coloured by class with a tag naming it (``class_names[label]``,
else the number), masks blended with ``mask_alpha`` (class 0 transparent).

Decisions and traps:

- Whether a batch is drawn follows its data kind (``batch.kind``; ``augkit.grid``): image and
  mask batches are drawn (a mask coloured by class: 0 black, 1 white, then ten colours);
  encoded bytes are refused with an error that names the kind and says what to do.
  Arrays, lists, torch tensors and generic batches (a Python function's output) carry no
  kind: their shape decides.
- From the kinds, without the user saying which output is which: a batch of kind boxes,
  keypoints, polygons, vertices or labels, and a mask batch whose masks have their images'
  height and width, given positionally, goes with the image batch before it:
  ``show_images(*pipe.run())`` for a pipeline returning images, boxes, labels draws the boxes
  with their labels. A mask batch alone (or of another size) is drawn as a mask image. Such
  a batch first, or a second one of a kind for one image batch, is an ``ArgumentError``
  naming the batches. Keywords go with the first image batch and win over a positional batch
  of the same kind.
- Labels: a sample with one label per box names its boxes (and polygons, by ``mask_idx``);
  one label per image titles the tile, with its class name where ``class_names`` has it
  ("people/grace_hopper.jpg · 3 people"). Keyword ``labels=`` title every column, as before;
  positional labels their own image batch.
- The coordinates' format comes from the batch's kind (``Kind.box_format``,
  ``Kind.relative``); boxes given as arrays are ``box_format`` ("ltrb" unless said), and
  relative when every value is within [0, 1] (``augkit.overlays``).

Example:
    >>> import numpy as np
    >>> from augkit import TensorList, viz
    >>> batch = TensorList([np.zeros((30, 40, 3), np.uint8)] * 2, "HWC", ["a.jpg", "b.jpg"])
    >>> viz.render_grid(batch, tile=64).size
    (140, 89)
    >>> fig = viz.image_grid(batch, batch.as_array() + 0.5)  # before / after, side by side
    >>> len(fig.axes)
    4
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

import numpy as np

from augkit import backend, grid, overlays
from augkit.errors import ArgumentError
from augkit.graph import DataNode
from augkit.kinds import GENERIC, Kind
from augkit.tensors import Tensor, TensorList

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

__all__ = ["GridOptions", "image_grid", "image_grid_png", "render", "render_grid", "show_images"]

_PAD = 4  # pixels between tiles, in both renderers
_TITLE_POINTS = 8  # matplotlib titles' font size
_TITLE_BAND = 20  # pixels above each matplotlib tile for its title (at the figure's dpi)
# matplotlib's built-in backends that draw to files only: plt.show() shows nothing with them.
_FILE_BACKENDS = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})

# ``fit(pixels, tile, position)``: the photo of tile ``position`` fitted to a ``tile`` square.
Fit = Callable[[np.ndarray, int, int], "Image.Image"]
_R = TypeVar("_R")


@dataclasses.dataclass(frozen=True)
class GridOptions:
    """How a grid is drawn: the keywords of ``render_grid``, ``image_grid_png``,
    ``image_grid`` and ``show_images`` (each documented at ``render_grid``), defined once.
    Those functions build one from their keywords; ``render(batches, options)`` takes it
    whole (what the viewer calls). ``figsize`` is the matplotlib functions' own.

    Example:
        >>> import dataclasses
        >>> options = GridOptions(columns=2, tile=64)
        >>> dataclasses.replace(options, tile=128).tile, options.max_samples
        (128, 16)
    """

    columns: int | None = None
    titles: Sequence[str] | None = None
    labels: Any = None
    boxes: Any = None
    masks: Any = None
    keypoints: Any = None
    polygons: Any = None
    vertices: Any = None
    class_names: Mapping[int, str] | Sequence[str] | None = None
    mask_alpha: float = 0.45
    box_format: str | None = None
    max_samples: int | None = 16
    layout: str | None = None
    tile: int = 256
    figsize: tuple[float, float] | None = None


def _grid_keywords(
    *, figsize: bool
) -> Callable[[Callable[[Sequence[Any], GridOptions], _R]], Callable[..., _R]]:
    """Turn ``function(batches, options)`` into the public ``function(*batches, columns=...,
    ...)``: the fields of ``GridOptions`` as its keywords (``figsize`` only where
    ``figsize``), with the signature ``help()`` and IPython show, built into one
    ``GridOptions`` here and nowhere else."""
    fields = [f for f in dataclasses.fields(GridOptions) if figsize or f.name != "figsize"]
    names = {f.name for f in fields}

    def decorate(function: Callable[[Sequence[Any], GridOptions], _R]) -> Callable[..., _R]:
        @functools.wraps(function)
        def with_keywords(*batches: Any, **keywords: Any) -> _R:
            for name in keywords:
                if name not in names:
                    raise TypeError(
                        f"{function.__name__}() got an unexpected keyword argument {name!r}"
                    )
            return function(batches, GridOptions(**keywords))

        keyword = inspect.Parameter.KEYWORD_ONLY
        # functools.wraps's _Wrapped does not declare __signature__, which inspect reads
        with_keywords.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                inspect.Parameter("batches", inspect.Parameter.VAR_POSITIONAL, annotation="Any"),
                *(
                    inspect.Parameter(f.name, keyword, default=f.default, annotation=f.type)
                    for f in fields
                ),
            ],
            return_annotation=inspect.signature(function).return_annotation,
        )
        return with_keywords

    return decorate


@_grid_keywords(figsize=False)
def render_grid(batches: Sequence[Any], options: GridOptions) -> Image.Image:
    """The grid as one RGB Pillow picture, with no matplotlib (Pillow's default font).
    Called as ``render_grid(*batches, columns=..., ...)``: its keywords are the fields of
    ``GridOptions``, but for ``figsize``.

    Args:
        *batches: one or more batches: a TensorList, a debug-mode node (``node.get()``), a
            NumPy array or torch tensor whose first axis is the batch, or a list of arrays.
            Several batches are laid side by side, one column each. A TensorList of a kind that
            is not pixels (labels, encoded, boxes, ...) is refused.
        columns: tiles per row; default: up to 4 for one batch, the number of batches for
            several.
        titles: one title per tile, in drawing order (row by row), instead of the defaults
            (``source_info`` and label). The rescaled note is added in any case.
        labels: a batch of labels (the reader's second output, a list of ints or of class
            names); label ``i`` goes in the title of each image of sample ``i``, or, one per
            box, on the boxes of sample ``i``.
        boxes: a batch of N x 4 boxes per image (a TensorList of kind boxes says its format;
            see ``box_format``), drawn over the first image batch.
        masks: a batch of label maps (H, W) or (H, W, 1), blended over the first image batch
            (scaled with the nearest neighbour when their size is not the image's).
        keypoints: a batch of N x 2 (x, y) points per image.
        polygons, vertices: readers.coco's polygons ([mask_idx, start, end] rows) and their
            (x, y) vertices, together.
        class_names: label -> name (a dict, or a list indexed by label) for tags and titles.
        mask_alpha: the opacity of the masks' colours (0 to 1).
        box_format: "ltrb" or "xywh" for boxes whose batch has no boxes kind (arrays).
        max_samples: the number of samples shown from each batch (``None``: all).
        layout: ``"HWC"``, ``"CHW"`` or ``"HW"``, overriding the batches' own layout (or the
            guess from the shape where they have none).
        tile: the side of the square, in pixels, that each image is fitted in.

    Returns:
        A picture ``columns * (tile + 4) + 4`` pixels wide and
        ``rows * (title_height + tile + 4) + 4`` high, ``title_height`` being
        ``augkit.grid.title_height(tile)`` when some title is not empty, else 0.

    Raises:
        ArgumentError: a batch's kind is not drawn as pixels (the message names the kind and
            what to do instead); a target batch with no image batch before it, or a second
            one of its kind; a target of a shape that cannot be drawn (the message names the
            batch or keyword and the sample).
        ValueError: a sample is not an image (its shape), or the batches or titles do not match.

    Example:
        >>> import numpy as np
        >>> batch = np.random.default_rng(0).random((16, 300, 300, 3))  # floats in [0, 1)
        >>> render_grid(batch, tile=128).size
        (532, 532)
    """
    return render(batches, options)


def render(batches: Sequence[Any], options: GridOptions, fit: Fit | None = None) -> Image.Image:
    """``render_grid(*batches, ...)`` with its keywords as one ``GridOptions``. ``fit``, when
    given, fits each tile's photo instead of ``grid.fit``: the viewer keeps the photos it
    fitted, to redraw overlays without fitting them again.

    Example:
        >>> import numpy as np
        >>> render([np.zeros((4, 8, 8), np.uint8)], GridOptions(columns=2, tile=32)).size
        (76, 76)
    """
    images, captions, columns = _panels(batches, options, fit)
    return grid.render_tiles(images, captions, columns, options.tile, _PAD)


@_grid_keywords(figsize=False)
def image_grid_png(batches: Sequence[Any], options: GridOptions) -> bytes:
    """``render_grid(...)`` as PNG bytes: what a viewer widget displays
    (``ipywidgets.Image(value=image_grid_png(batch))``). Same arguments as ``render_grid``.

    Example:
        >>> import numpy as np
        >>> png = image_grid_png([np.zeros((8, 8), np.uint8)], tile=32)
        >>> png[:4]
        b'\\x89PNG'
    """
    return grid.to_png(render(batches, options))


@_grid_keywords(figsize=True)
def image_grid(batches: Sequence[Any], options: GridOptions) -> Figure:
    """The grid as a matplotlib Figure, one axes per image; not shown, not registered with
    pyplot (nothing to close). In a notebook, a cell ending with it displays it.

    Arguments as in ``render_grid``; ``tile`` is each tile's size in pixels at the figure's
    dpi, from which ``figsize`` (in inches) is computed unless it is given.

    Example:
        >>> import numpy as np
        >>> from augkit import TensorList
        >>> before = TensorList([np.zeros((32, 48, 3), np.uint8)] * 3, "HWC")
        >>> after = TensorList([np.ones((3, 32, 48), np.float32)] * 3, "CHW")
        >>> fig = image_grid(before, after, tile=128)  # 3 rows: before[i], after[i]
        >>> len(fig.axes), fig.get_size_inches().round(2).tolist()
        (6, [2.68, 4.0])
        >>> fig.savefig("before_after.png")  # doctest: +SKIP
    """
    images, captions, columns = _panels(batches, options)
    return _figure(images, captions, columns, options.tile, options.figsize)


@_grid_keywords(figsize=True)
def show_images(batches: Sequence[Any], options: GridOptions) -> Figure:
    """Draw the grid of ``image_grid(...)`` (same arguments) and show it, as ``plt.show()``
    would; return the figure.

    - In a notebook: the grid appears once, below the cell, whether or not the call is the
      cell's last line (the returned figure is not displayed a second time) and is closed, so
      that no later cell shows it again.
    - With an interactive backend (Qt, Tk, ...) chosen: a window, as ``plt.show()`` opens.
    - With a file backend (``matplotlib.use("Agg")``) the figure stays open in pyplot, as the
      tutorial's own ``show_images`` leaves its figures, for ``plt.savefig``; with no backend
      chosen at all, matplotlib's non-interactive default: nothing is shown or left open.

    Example:
        >>> from augkit import pipeline_def, fn
        >>> @pipeline_def(batch_size=8, num_threads=2, device_id=None)
        ... def pipe():
        ...     jpegs, labels = fn.readers.file(file_root="data/images")
        ...     images = fn.decoders.image(jpegs)
        ...     return images, fn.resize(images, resize_x=128, resize_y=128), labels
        >>> p = pipe()
        >>> images, resized, labels = p.run()  # doctest: +SKIP
        >>> show_images(images, resized, labels=labels)  # doctest: +SKIP
    """
    images, captions, columns = _panels(batches, options)
    tile, figsize = options.tile, options.figsize
    chosen = _chosen_backend()
    if chosen is None:
        return _figure(images, captions, columns, tile, figsize)
    import matplotlib.pyplot as plt

    figure = _figure(images, captions, columns, tile, figsize, pyplot=plt)
    if chosen.lower() not in _FILE_BACKENDS:
        plt.show()
        # a GridFigure (_figure_class), a class made at run time that mypy cannot name
        figure._shown_in_cell = _current_cell()  # type: ignore[attr-defined]
    return figure


# --- what is drawn: the tiles and their titles ----------------------------------------------
class _Batch(NamedTuple):
    samples: list[np.ndarray]  # on the host
    layout: str  # "" when unknown
    sources: list[str]
    kind: Kind = GENERIC


# The kinds taken as the overlays (or per-box labels) of the image batch before them.
_TARGET_KINDS = ("boxes", "keypoints", "polygons", "vertices", "labels")
_KEYWORD_OF = {"boxes": "boxes", "mask": "masks", "keypoints": "keypoints"}


class _Column(NamedTuple):
    """An image batch (a column of the grid) and the batches drawn over it, by kind name
    ("boxes", "mask", "keypoints", "polygons", "vertices", "labels") -> (where, batch)."""

    position: int  # among the positional batches (not `index`: that is tuple.index)
    batch: _Batch
    targets: dict[str, tuple[str, _Batch]]


def _columns(loaded: list[_Batch]) -> list[_Column]:
    """The positional batches as columns: a batch of a target kind goes with the image batch
    before it (see ``show_images``); errors name the batch."""
    columns: list[_Column] = []
    several = len(loaded) > 1
    for k, batch in enumerate(loaded):
        name = batch.kind.name
        which = f"batch {k}" if several else "the batch"
        if name in _TARGET_KINDS or (name == "mask" and _fits(batch, columns)):
            if not columns:
                reason = grid.not_drawn(batch.kind) or "it is drawn over an image"
                raise ArgumentError(
                    f"{which} is of kind {batch.kind}, which is not drawn: {reason}. Give it "
                    f"after the images it belongs to (show_images(images, {name})) or as "
                    f"{_KEYWORD_OF.get(name, name)}="
                )
            column = columns[-1]
            if name in column.targets:
                raise ArgumentError(
                    f"batch {k} is a second {name} batch for the images of batch "
                    f"{column.position} ({column.targets[name][0]} is already theirs): give one, "
                    f"or give each image batch its own (show_images(a, boxes_a, b, boxes_b))"
                )
            column.targets[name] = (f"batch {k}", batch)
            continue
        not_drawn = grid.not_drawn(batch.kind)
        if not_drawn is not None:
            raise ArgumentError(f"{which} is of kind {batch.kind}, which is not drawn: {not_drawn}")
        columns.append(_Column(k, batch, {}))
    return columns


def _fits(mask: _Batch, columns: list[_Column]) -> bool:
    """Whether a mask batch is the label map of the image batch before it: that batch is not
    a mask, has no mask yet, and each mask is of its image's height and width."""
    if not columns or columns[-1].batch.kind.name == "mask" or "mask" in columns[-1].targets:
        return False
    images = columns[-1].batch
    if len(images.samples) != len(mask.samples):
        return False
    for image, label_map in zip(images.samples, mask.samples, strict=True):
        layout = grid.image_layout(image.shape, images.layout)
        if layout is None or label_map.ndim not in (2, 3):
            return False
        size = tuple(image.shape[layout.index(a)] for a in "HW")
        if tuple(label_map.shape[:2]) != size:
            return False
    return True


def _panels(
    batches: Sequence[Any], options: GridOptions, fit: Fit | None = None
) -> tuple[list[np.ndarray], list[str], int]:
    """``(pixels per tile, title per tile, columns)``, tiles in drawing order; a tile with
    overlays is already fitted to ``options.tile`` and drawn on. ``fit(pixels, tile,
    position)``: fits every tile instead of ``grid.fit`` (the viewer's cache of fitted tiles,
    which lets it redraw overlays without fitting the photos again)."""
    if not batches:
        raise TypeError("give at least one batch of images to show")
    loaded = [_as_batch(b, options.layout) for b in batches]
    sizes = [len(b.samples) for b in loaded]
    if len(set(sizes)) > 1:
        raise ValueError(f"batches laid side by side need the same number of samples, got {sizes}")
    columns = _columns(loaded)
    count = sizes[0] if options.max_samples is None else min(sizes[0], options.max_samples)
    _adopt_keywords(columns[0], options, count)
    labels = options.labels
    keyword_labels = _label_values(labels, count, "labels=") if labels is not None else None
    images: list[np.ndarray] = []
    defaults: list[str] = []
    ranges: list[tuple[float, float] | None] = []
    for i in range(count):
        for column in columns:
            batch, k = column.batch, column.position
            sample = batch.samples[i]
            sample_layout = grid.image_layout(sample.shape, batch.layout)
            if sample_layout is None:
                which = f"sample {i}" + (f" of batch {k}" if len(loaded) > 1 else "")
                raise ValueError(
                    f"{which} is not an image: shape {sample.shape}, layout {batch.layout!r}, "
                    f"kind {batch.kind} (images are HWC or CHW with 1, 3 or 4 channels, or HW, "
                    f"none of size 0; pass layout= if the guess from the shape is wrong)"
                )
            pixels, value_range = grid.to_display(sample, sample_layout, batch.kind)
            overlay, title_label = _overlay(column, i, keyword_labels, options)
            if fit is not None:
                fitted = fit(pixels, options.tile, len(images))
                size = (pixels.shape[1], pixels.shape[0])
                pixels = _drawn(fitted.copy(), size, overlay, column, i, options)
            elif overlay:
                size = (pixels.shape[1], pixels.shape[0])
                pixels = _drawn(grid.fit(pixels, options.tile), size, overlay, column, i, options)
            images.append(pixels)
            ranges.append(value_range)
            label = "" if title_label is None else _title_label(title_label, options.class_names)
            defaults.append(" · ".join(t for t in (batch.sources[i], label) if t))
    if options.titles is not None:
        titles = list(options.titles)
        if len(titles) < len(images):
            raise ValueError(
                f"titles has {len(titles)} entries for {len(images)} images (one per image, "
                f"row by row)"
            )
        defaults = titles[: len(images)]
    captions = [grid.caption(text, r) for text, r in zip(defaults, ranges, strict=True)]
    default_columns = len(columns) if len(columns) > 1 else max(1, min(count, 4))
    return images, captions, options.columns or default_columns


def _adopt_keywords(column: _Column, options: GridOptions, count: int) -> None:
    """The overlay keywords go with the first image batch, in place of a positional batch of
    the same kind (explicit keywords win)."""
    for name, value in (
        ("boxes", options.boxes),
        ("mask", options.masks),
        ("keypoints", options.keypoints),
        ("polygons", options.polygons),
        ("vertices", options.vertices),
    ):
        if value is None:
            continue
        keyword = f"{_KEYWORD_OF.get(name, name)}="
        batch = _as_targets(value, keyword)
        if len(batch.samples) < count:
            raise ArgumentError(
                f"{keyword} has {len(batch.samples)} samples for {count} images shown"
            )
        column.targets[name] = (keyword, batch)


def _overlay(
    column: _Column, i: int, keyword_labels: list[np.ndarray] | None, options: GridOptions
) -> tuple[overlays.Overlay, np.ndarray | None]:
    """The overlay of sample ``i`` of ``column``, and the label for its title (``None``: no
    label in the title: none given, or one per box)."""
    found = column.targets
    overlay = overlays.Overlay()
    if "boxes" in found:
        kind = found["boxes"][1].kind
        overlay.boxes = _target_sample(found, "boxes", i)
        if kind.name == "boxes":
            overlay.box_format, overlay.boxes_relative = kind.box_format or "ltrb", kind.relative
        else:
            overlay.box_format = options.box_format or "ltrb"
    if "mask" in found:
        overlay.mask = _target_sample(found, "mask", i)
    if "keypoints" in found:
        kind = found["keypoints"][1].kind
        overlay.keypoints = _target_sample(found, "keypoints", i)
        overlay.keypoints_relative = kind.relative if kind.name == "keypoints" else None
    if "polygons" in found or "vertices" in found:
        missing = "vertices" if "polygons" in found else "polygons"
        if missing not in found:
            given = found["vertices" if missing == "polygons" else "polygons"][0]
            raise ArgumentError(
                f"{given} gives {'polygons' if missing == 'vertices' else 'vertices'} without "
                f"their {missing}: polygons and vertices go together (readers.coco's outputs: "
                f"give both)"
            )
        kind = found["vertices"][1].kind
        overlay.polygons = _target_sample(found, "polygons", i)
        overlay.vertices = _target_sample(found, "vertices", i)
        overlay.vertices_relative = kind.relative if kind.name == "vertices" else None
    _check(overlay, found, i)
    if "labels" in found:
        value = _label_values(found["labels"][1], i + 1, found["labels"][0])[i]
    elif keyword_labels is not None:
        value = keyword_labels[i]
    else:
        return overlay, None
    if value.dtype.kind in "OU":  # class names given as labels: titles only
        return overlay, value
    boxes = None if overlay.boxes is None else np.asarray(overlay.boxes).reshape(-1, 4)
    objects = _object_count(overlay)
    if boxes is not None and value.size == len(boxes):
        overlay.box_labels = value.ravel()
        return overlay, None
    if boxes is None and objects is not None and value.size == objects:
        overlay.box_labels = value.ravel()  # one per polygon's object (mask_idx)
        return overlay, (value if value.size == 1 else None)  # one: the image's label too
    if boxes is not None and value.size != 1:
        where = found["labels"][0] if "labels" in found else "labels="
        raise ArgumentError(
            f"{where}, sample {i}: {value.size} labels for {len(boxes)} boxes (give one label "
            f"per box, or one per image for its title)"
        )
    return overlay, value


def _object_count(overlay: overlays.Overlay) -> int | None:
    if overlay.polygons is None:
        return None
    rows = np.asarray(overlay.polygons).reshape(-1, 3)
    return int(rows[:, 0].max()) + 1 if rows.size else 0


def _target_sample(found: dict[str, tuple[str, _Batch]], name: str, i: int) -> np.ndarray:
    where, batch = found[name]
    if i >= len(batch.samples):
        raise ArgumentError(f"{where} has {len(batch.samples)} samples; sample {i} is shown")
    return batch.samples[i]


def _drawn(
    picture: Image.Image,
    size: tuple[int, int],
    overlay: overlays.Overlay,
    column: _Column,
    i: int,
    options: GridOptions,
) -> np.ndarray:
    """``overlay`` drawn on ``picture`` (an image of ``size`` pixels fitted to its tile), as
    an array (errors name the batch)."""
    if overlay:
        _check(overlay, column.targets, i)
        picture = overlays.draw(picture, overlay, size, options.class_names, options.mask_alpha)
    return np.asarray(picture)


def _check(overlay: overlays.Overlay, found: dict[str, tuple[str, _Batch]], i: int) -> None:
    """``overlays.check``, its error naming the batch or keyword and the sample."""
    try:
        overlays.check(overlay)
    except ValueError as exc:
        what = str(exc).split(":", 1)[0]
        name = {"masks": "mask"}.get(what, what)
        where = found.get(name, ("labels=" if name == "labels" else what,))[0]
        raise ArgumentError(f"{where}, sample {i}: {exc}") from None


def _title_label(value: np.ndarray, class_names: Any) -> str:
    """A title's label: ``"3"``, or ``"3 people"`` where the class name is known."""
    text = grid.label_text(value)
    if class_names is not None and value.size == 1 and value.dtype.kind in "iu":
        name = overlays.class_name(value.ravel()[0], class_names)
        if name != text:
            text = f"{text} {name}"
    return text


def _as_batch(value: Any, layout: str | None) -> _Batch:
    if isinstance(value, DataNode):
        value = value.get()
    if isinstance(value, TensorList):
        samples = [np.asarray(t) for t in value]
        sources = cast(list[str], value.source_info())  # no index: the list, one per sample
        return _Batch(samples, layout or value.layout(), sources, value.kind)
    if isinstance(value, Tensor) and not value.layout().startswith("N"):
        return _Batch([np.asarray(value)], layout or value.layout(), [value.source_info()])
    if isinstance(value, (list, tuple)):
        samples = [_to_host(s) for s in value]
    else:
        array = _to_host(value)
        if array.ndim == 3 and array.shape[-1] in (3, 4):
            raise ValueError(
                f"an array of shape {array.shape} looks like one HWC image, but the first axis "
                f"of an array is the batch: pass [image] or image[None]"
            )
        samples = list(array)
        if isinstance(value, Tensor):  # a dense batch as one tensor, layout "N..."
            layout = layout or value.layout()[1:]
    return _Batch(samples, layout or "", [""] * len(samples))


def _to_host(value: Any) -> np.ndarray:
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    if backend.is_gpu_array(value):
        return backend.to_cpu(value)
    return np.asarray(value)


def _as_targets(value: Any, where: str) -> _Batch:
    """A batch of boxes, masks, points... given by keyword: a TensorList (its kind says the
    coordinates' format), a debug node, a list of arrays, or an array whose first axis is
    the batch."""
    if isinstance(value, DataNode):
        value = value.get()
    if isinstance(value, TensorList):
        sources = cast(list[str], value.source_info())  # no index: the list, one per sample
        return _Batch([np.asarray(t) for t in value], value.layout(), sources, value.kind)
    if isinstance(value, (str, bytes)) or np.isscalar(value):
        raise ArgumentError(f"{where} must be one value per sample (a batch), got {value!r}")
    samples = [_to_host(s) for s in value]
    return _Batch(samples, "", [""] * len(samples))


def _label_values(labels: Any, count: int, where: str = "labels=") -> list[np.ndarray]:
    if isinstance(labels, _Batch):
        values: Sequence[Any] = labels.samples
    else:
        if isinstance(labels, DataNode):
            labels = labels.get()
        if isinstance(labels, TensorList):
            values = [np.asarray(t) for t in labels]
        elif isinstance(labels, str):
            raise TypeError("labels must be one label per sample, not a single string")
        else:
            values = labels if isinstance(labels, (list, tuple)) else list(_to_host(labels))
    if len(values) < count:
        raise ValueError(f"{where} has {len(values)} entries for {count} samples shown")
    return [np.asarray(v if isinstance(v, str) else _to_host(v)) for v in values[:count]]


# --- matplotlib -------------------------------------------------------------------------------
def _figure(
    images: Sequence[np.ndarray],
    captions: Sequence[str],
    columns: int,
    tile: int,
    figsize: tuple[float, float] | None,
    pyplot: Any = None,
) -> Figure:
    """A ``GridFigure`` with one axes per image: made by ``pyplot`` when it is given (so that
    pyplot shows and closes it), else on its own, with an Agg canvas (nothing to close)."""
    size = figsize or _figsize(len(images), columns, tile, captions)
    if pyplot is not None:
        figure = pyplot.figure(FigureClass=_figure_class(), figsize=size)
    else:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        figure = _figure_class()(figsize=size)
        FigureCanvasAgg(figure)
    _draw(figure, images, captions, columns, tile)
    return figure


def _figsize(count: int, columns: int, tile: int, captions: Sequence[str]) -> tuple[float, float]:
    from matplotlib import rcParams

    width, height = _layout_pixels(count, columns, tile, captions)
    dpi = rcParams["figure.dpi"]
    return width / dpi, height / dpi


def _layout_pixels(count: int, columns: int, tile: int, captions: Sequence[str]) -> tuple[int, int]:
    rows = math.ceil(count / columns)
    band = _TITLE_BAND if any(captions) else 0
    return columns * (tile + _PAD) + _PAD, rows * (band + tile + _PAD) + _PAD


def _draw(
    figure: Figure, images: Sequence[np.ndarray], captions: Sequence[str], columns: int, tile: int
) -> None:
    """One axes per image, placed as ``grid.render_tiles`` places its tiles (in fractions of
    the figure, so that a ``figsize`` given by the user stretches the same layout)."""
    width, height = _layout_pixels(len(images), columns, tile, captions)
    band = _TITLE_BAND if any(captions) else 0
    # Titles longer than a tile would run into their neighbours: cut them to about its width.
    max_chars = max(4, int(tile / (0.6 * _TITLE_POINTS * figure.dpi / 72)))
    for i, (pixels, text) in enumerate(zip(images, captions, strict=True)):
        left = _PAD + (i % columns) * (tile + _PAD)
        top = _PAD + (i // columns) * (band + tile + _PAD) + band
        axes = figure.add_axes(
            (left / width, 1 - (top + tile) / height, tile / width, tile / height)
        )
        if pixels.ndim == 2:
            axes.imshow(pixels, cmap="gray", vmin=0, vmax=255)
        else:
            axes.imshow(pixels[..., :3])  # alpha dropped, as the PNG path drops it
        axes.set_axis_off()
        axes.set_anchor("N")  # the image right under its title, as in the PNG path
        if text:
            axes.set_title(grid.shorten(text, max_chars), fontsize=_TITLE_POINTS, pad=3)


def _chosen_backend() -> str | None:
    """The matplotlib backend the user or the environment chose (Jupyter sets one), or
    ``None`` when none was: then matplotlib would probe for a GUI, and augkit does not."""
    import matplotlib

    # matplotlib's private RcParams method (not in its stubs): the backend, unresolved
    return matplotlib.rcParams._get_backend_or_none()  # type: ignore[attr-defined]


def _current_cell() -> int | None:
    """The execution count of the running notebook cell, or ``None`` outside IPython."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return None if shell is None else shell.execution_count


@functools.cache
def _figure_class() -> type:
    """``GridFigure``: a Figure that IPython displays once per cell at most (so that
    ``show_images`` on a cell's last line does not show its grid twice), with no need for
    matplotlib's inline backend to be set up. Made on first use: matplotlib is imported lazily.
    """
    from matplotlib.figure import Figure

    class GridFigure(Figure):
        _shown_in_cell: int | None = None

        def _ipython_display_(self) -> None:
            from IPython.display import display

            cell = _current_cell()
            if cell is not None and cell == self._shown_in_cell:
                return
            self._shown_in_cell = cell
            buffer = io.BytesIO()
            # zlib level 1: half the time of the default level, for a PNG a few % larger.
            self.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
            display({"image/png": buffer.getvalue(), "text/plain": repr(self)}, raw=True)

    GridFigure.__module__ = __name__
    GridFigure.__qualname__ = GridFigure.__name__
    return GridFigure


def __getattr__(name: str) -> Any:
    # Lets pickle find ``augkit.viz.GridFigure`` without importing matplotlib with the module.
    if name == "GridFigure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
