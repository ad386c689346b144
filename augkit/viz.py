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

Decisions and traps:

- Whether a batch is drawn follows its data kind (``batch.kind``; ``augkit.grid``): image and
  mask batches are drawn (a mask coloured by class: 0 black, 1 white, then ten colours); a
  batch of labels, encoded bytes, boxes, keypoints, polygons or vertices is refused with an
  error that names its kind and says what to do (``show_images(images, labels)`` is a slip
  for ``show_images(images, labels=labels)``: the message says so). Arrays, lists, torch
  tensors and generic batches (a Python function's output) carry no kind: their shape decides.

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

import functools
import io
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from augkit import backend, grid
from augkit.errors import ArgumentError
from augkit.graph import DataNode
from augkit.kinds import GENERIC, Kind
from augkit.tensors import Tensor, TensorList

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

__all__ = ["image_grid", "image_grid_png", "render_grid", "show_images"]

_PAD = 4  # pixels between tiles, in both renderers
_TITLE_POINTS = 8  # matplotlib titles' font size
_TITLE_BAND = 20  # pixels above each matplotlib tile for its title (at the figure's dpi)
# matplotlib's built-in backends that draw to files only: plt.show() shows nothing with them.
_FILE_BACKENDS = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})


def render_grid(
    *batches: Any,
    columns: int | None = None,
    titles: Sequence[str] | None = None,
    labels: Any = None,
    max_samples: int | None = 16,
    layout: str | None = None,
    tile: int = 256,
) -> Image.Image:
    """The grid as one RGB Pillow picture, with no matplotlib (Pillow's default font).

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
            names); label ``i`` goes in the title of each image of sample ``i``.
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
            what to do instead).
        ValueError: a sample is not an image (its shape), or the batches or titles do not match.

    Example:
        >>> import numpy as np
        >>> batch = np.random.default_rng(0).random((16, 300, 300, 3))  # floats in [0, 1)
        >>> render_grid(batch, tile=128).size
        (532, 532)
    """
    images, captions, default_columns = _panels(batches, titles, labels, max_samples, layout)
    return grid.render_tiles(images, captions, columns or default_columns, tile, _PAD)


def image_grid_png(
    *batches: Any,
    columns: int | None = None,
    titles: Sequence[str] | None = None,
    labels: Any = None,
    max_samples: int | None = 16,
    layout: str | None = None,
    tile: int = 256,
) -> bytes:
    """``render_grid(...)`` as PNG bytes: what a viewer widget displays
    (``ipywidgets.Image(value=image_grid_png(batch))``). Same arguments as ``render_grid``.

    Example:
        >>> import numpy as np
        >>> png = image_grid_png([np.zeros((8, 8), np.uint8)], tile=32)
        >>> png[:4]
        b'\\x89PNG'
    """
    picture = render_grid(
        *batches,
        columns=columns,
        titles=titles,
        labels=labels,
        max_samples=max_samples,
        layout=layout,
        tile=tile,
    )
    return grid.to_png(picture)


def image_grid(
    *batches: Any,
    columns: int | None = None,
    titles: Sequence[str] | None = None,
    labels: Any = None,
    max_samples: int | None = 16,
    layout: str | None = None,
    tile: int = 256,
    figsize: tuple[float, float] | None = None,
) -> Figure:
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
    images, captions, default_columns = _panels(batches, titles, labels, max_samples, layout)
    return _figure(images, captions, columns or default_columns, tile, figsize)


def show_images(
    *batches: Any,
    columns: int | None = None,
    titles: Sequence[str] | None = None,
    labels: Any = None,
    max_samples: int | None = 16,
    layout: str | None = None,
    tile: int = 256,
    figsize: tuple[float, float] | None = None,
) -> Figure:
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
    images, captions, default_columns = _panels(batches, titles, labels, max_samples, layout)
    columns = columns or default_columns
    chosen = _chosen_backend()
    if chosen is None:
        return _figure(images, captions, columns, tile, figsize)
    import matplotlib.pyplot as plt

    figure = _figure(images, captions, columns, tile, figsize, pyplot=plt)
    if chosen.lower() not in _FILE_BACKENDS:
        plt.show()
        figure._shown_in_cell = _current_cell()
    return figure


# --- what is drawn: the tiles and their titles ----------------------------------------------
class _Batch(NamedTuple):
    samples: list[np.ndarray]  # on the host
    layout: str  # "" when unknown
    sources: list[str]
    kind: Kind = GENERIC


def _panels(
    batches: Sequence[Any],
    titles: Sequence[str] | None,
    labels: Any,
    max_samples: int | None,
    layout: str | None,
) -> tuple[list[np.ndarray], list[str], int]:
    """``(pixels per tile, title per tile, default columns)``, tiles in drawing order."""
    if not batches:
        raise TypeError("give at least one batch of images to show")
    loaded = [_as_batch(b, layout) for b in batches]
    for k, batch in enumerate(loaded):
        reason = grid.not_drawn(batch.kind)
        if reason is not None:
            which = f"batch {k}" if len(loaded) > 1 else "the batch"
            raise ArgumentError(f"{which} is of kind {batch.kind}, which is not drawn: {reason}")
    sizes = [len(b.samples) for b in loaded]
    if len(set(sizes)) > 1:
        raise ValueError(f"batches laid side by side need the same number of samples, got {sizes}")
    count = sizes[0] if max_samples is None else min(sizes[0], max_samples)
    label_texts = _label_texts(labels, count) if labels is not None else [""] * count
    images, defaults, ranges = [], [], []
    for i in range(count):
        for k, batch in enumerate(loaded):
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
            images.append(pixels)
            ranges.append(value_range)
            defaults.append(" · ".join(t for t in (batch.sources[i], label_texts[i]) if t))
    if titles is not None:
        titles = list(titles)
        if len(titles) < len(images):
            raise ValueError(
                f"titles has {len(titles)} entries for {len(images)} images (one per image, "
                f"row by row)"
            )
        defaults = titles[: len(images)]
    captions = [grid.caption(text, r) for text, r in zip(defaults, ranges, strict=True)]
    return images, captions, len(loaded) if len(loaded) > 1 else max(1, min(count, 4))


def _as_batch(value: Any, layout: str | None) -> _Batch:
    if isinstance(value, DataNode):
        value = value.get()
    if isinstance(value, TensorList):
        samples = [np.asarray(t) for t in value]
        return _Batch(samples, layout or value.layout(), value.source_info(), value.kind)
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


def _label_texts(labels: Any, count: int) -> list[str]:
    if isinstance(labels, DataNode):
        labels = labels.get()
    if isinstance(labels, TensorList):
        values = [np.asarray(t) for t in labels]
    elif isinstance(labels, str):
        raise TypeError("labels must be one label per sample, not a single string")
    else:
        values = labels if isinstance(labels, (list, tuple)) else list(_to_host(labels))
    if len(values) < count:
        raise ValueError(f"labels has {len(values)} entries for {count} samples shown")
    return [grid.label_text(v if isinstance(v, str) else _to_host(v)) for v in values[:count]]


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

    return matplotlib.rcParams._get_backend_or_none()


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
