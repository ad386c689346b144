"""``Zoom``: one sample at full resolution, the values of the pixel under the cursor, a
histogram per channel and the sample's random draws; the panel the Viewer opens when a tile is
clicked, usable on its own.

Decisions and traps:

- One display conversion: the picture is ``augkit.grid.to_display`` of the sample, exactly as
  the grid draws its tile (uint8 as it is, floats in [0, 1] times 255, other ranges rescaled
  per sample and said in the title, masks coloured by class with the grid's palette). An RGBA
  sample is drawn as the grid draws it, alpha dropped (the cursor still shows all 4 values).
- What the cursor shows is the sample's own values in its dtype, never the display's bytes:
  integers as they are, floats with 4 significant digits, a mask's class id ("class 3"). A
  mask with several channels or values that are not whole numbers (a soft mask) is drawn and
  read as an image, as the grid does.
- Magnification: 1 sample pixel is ``k`` x ``k`` screen pixels, ``k`` the smallest integer
  that brings the smaller side to ``magnify_below`` (1 when it is there already), by nearest
  neighbour, done here (not by the browser's CSS scaling, which smooths): pixels stay visible
  squares. ``k`` is capped so that the longer side stays within ``4 * magnify_below`` (a
  2 x 1000 strip is not made 128 times larger). The image is always PNG (lossless: what is
  under the cursor is what the sample holds), grayscale ("L") for one channel, else RGB. A
  300 x 451 photo is ~200 KiB and ~12 ms; a 3000 x 2000 one ~3.6 MiB and ~0.5 s (full
  resolution is the point: the grid's tiles are what stays fast).
- Coordinates: ipyevents gives an ``Image`` widget's events ``dataX``/``dataY`` in the
  image's own pixels, whatever its CSS size: ``round(relativeX / el.width * naturalWidth)``
  after the element's inline padding and border. The sample pixel is ``dataX // k``. Because
  of that round, the right or bottom edge can give ``naturalWidth`` (one past the end), and a
  pointer on a border a negative value: both are outside the sample, and clear the text.
- Throttling: ipyevents throttles each watched event on its own (underscore's ``throttle``,
  leading and trailing call), so the trailing ``mousemove`` of a burst can arrive *after* the
  ``mouseleave``. The handler drops a ``mousemove`` whose ``timeStamp`` is older than the last
  ``mouseleave``'s (by up to a second), so the text does not come back once the cursor has
  left. ``timeStamp`` counts from the page's load: a mousemove far older than the leave comes
  from a reloaded page or another view of the widget, and is shown (and the leave forgotten).
- The handler is ``Zoom._on_event``, registered with ``events.on_dom_event``; a test calls it
  (or ``events._handle_mouse_msg``) with the dict ipyevents sends: ``event`` (the type),
  ``dataX``, ``dataY``, ``timeStamp``, ``relativeX``... (see ipyevents' ``_send_dom_event``).
- Histogram: 256 bins per channel, computed with NumPy (``np.bincount`` for uint8 and bool,
  bins at the values 0..255; ``np.histogram`` over the sample's finite min..max, shared by all
  channels, for other dtypes). ``counts`` (channels x 256) and ``bin_edges`` (257) are the
  numbers behind the inline SVG; the SVG's height is linear in the counts, up to the largest
  count of the inner bins (``histogram_top``: the end bins, where a rotation's black corners
  and saturated highlights pile up, would flatten the rest; they are drawn to the top, and
  the SVG says so), the count at the top and the axis range written on it.
- Bad input (not 2-D or 3-D, an unknown layout or one that does not fit the shape, a channel
  count the grid cannot draw, a kind that is not pixels) raises ``ArgumentError`` naming the
  shape, layout or kind, and leaves what is shown as it was.
- No matplotlib: ipywidgets, ipyevents, NumPy, Pillow and ``augkit.grid`` only.

Example:
    >>> import numpy as np
    >>> zoom = Zoom(magnify_below=8)
    >>> sample = np.zeros((4, 2, 3), np.uint8)
    >>> sample[1, 0] = (120, 33, 10)
    >>> zoom.show(sample, title="a tile", draws={"Rotate_4.angle": 12.4})
    >>> zoom.magnification, zoom.root.layout.display
    (4, '')
    >>> zoom.pixel_text(0, 1)
    'x 0, y 1: R 120 G 33 B 10'
    >>> zoom._on_event({"event": "mousemove", "dataX": 2, "dataY": 5, "timeStamp": 1.0})
    >>> zoom.pixel.value
    'x 0, y 1: R 120 G 33 B 10'
    >>> int(zoom.counts[0, 120]), int(zoom.counts[0, 0])
    (1, 7)
    >>> zoom.hide()
    >>> zoom.root.layout.display
    'none'
"""

from __future__ import annotations

import html
import math
import operator
from collections.abc import Mapping
from typing import Any

import ipyevents
import ipywidgets as widgets
import numpy as np
from PIL import Image

from augkit import backend, grid, kinds
from augkit.errors import ArgumentError

_LAYOUTS = ("HWC", "CHW", "HW")
_CHANNEL_NAMES = {1: ("",), 3: ("R", "G", "B"), 4: ("R", "G", "B", "A")}
_CHANNEL_COLOURS = {
    1: ("#555555",),
    3: ("#d62728", "#2ca02c", "#1f77b4"),
    4: ("#d62728", "#2ca02c", "#1f77b4", "#999999"),
}
_BINS = 256
_THROTTLE_MS = 30
# A mousemove this much older than the last mouseleave is no late throttled call: its page
# has another clock (timeStamp counts from the page's load: a reload, a second view).
_LATE_MS = 1000
# The histogram's SVG: a plot 256 px wide (one per bin), a margin for the axis text.
_PLOT_LEFT, _PLOT_TOP, _PLOT_HEIGHT = 6, 14, 80
_SVG_WIDTH, _SVG_HEIGHT = _PLOT_LEFT * 2 + _BINS, _PLOT_TOP + _PLOT_HEIGHT + 16


class Zoom:
    """One sample at full resolution, the pixel values under the cursor, a histogram per
    channel, and the sample's random draws (what ``Pipeline.draws()`` gives for it).

    Attributes:
        root: the panel (hidden, ``layout.display == "none"``, until ``show()``).
        title: the tile's title, its shape, dtype and magnification.
        image: the sample as PNG, ``magnification`` screen pixels per sample pixel.
        pixel: the values under the cursor (``pixel_text``), "" outside the image.
        histogram: an inline SVG of ``counts`` over ``bin_edges``, one curve per channel.
        draws: a table of the sample's random draws, one row per item ("" for none).
        close_button: hides the panel.
        events: the ipyevents ``Event`` on ``image`` (mousemove and mouseleave, throttled).
        sample: what is shown, in HWC (or HW) order; ``None`` before ``show()``.
        magnification: ``k``, the screen pixels per sample pixel along each axis.
        counts: the histogram, an int64 array (channels, 256); ``None`` before ``show()``.
        bin_edges: the 257 edges of its bins (float64).
    """

    def __init__(self, *, magnify_below: int = 256) -> None:
        if isinstance(magnify_below, bool) or not isinstance(magnify_below, int):
            raise ArgumentError(
                f"Zoom: magnify_below must be an int (pixels), got {magnify_below!r}"
            )
        if magnify_below < 1:
            raise ArgumentError(f"Zoom: magnify_below must be at least 1, got {magnify_below}")
        self.magnify_below = magnify_below
        self.sample: np.ndarray | None = None
        self.magnification = 1
        self.counts: np.ndarray | None = None
        self.bin_edges: np.ndarray | None = None
        self.value_range: tuple[float, float] | None = None
        self._is_mask = False
        self._left_at = -math.inf  # timeStamp of the last mouseleave (see the module docstring)

        self.title = widgets.HTML(value="")
        self.close_button = widgets.Button(
            description="Close",
            icon="times",
            tooltip="Hide the zoom",
            layout=widgets.Layout(width="auto"),
        )
        self.close_button.on_click(lambda _button: self.hide())
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.pixel = widgets.HTML(value="", layout=widgets.Layout(min_height="1.5em"))
        self.histogram = widgets.HTML(value="")
        self.draws = widgets.HTML(value="")
        for widget, name in ((self.image, "image"), (self.pixel, "pixel"), (self.draws, "draws")):
            widget.add_class(f"augkit-zoom-{name}")  # for a page's scripts and tests
        self.events = ipyevents.Event(
            source=self.image,
            watched_events=["mousemove", "mouseleave"],
            throttle_or_debounce="throttle",
            wait=_THROTTLE_MS,
        )
        self.events.on_dom_event(self._on_event)
        header = widgets.HBox(
            [self.title, self.close_button],
            layout=widgets.Layout(align_items="center"),  # the button beside the title
        )
        side = widgets.VBox(
            [self.pixel, self.histogram, self.draws], layout=widgets.Layout(min_width="280px")
        )
        body = widgets.HBox([self.image, side], layout=widgets.Layout(align_items="flex-start"))
        self.root = widgets.VBox([header, body], layout=widgets.Layout(display="none"))

    def show(
        self,
        sample: np.ndarray,
        *,
        layout: str = "HWC",
        kind: str | kinds.Kind = "image",
        title: str = "",
        draws: Mapping[str, Any] | None = None,
    ) -> None:
        """Show ``sample`` (HWC, CHW or HW; ``layout=""`` guesses it from the shape as the grid
        does), of data kind ``kind`` ("image", "mask", "generic" or a ``Kind``), under
        ``title``, with its random draws (one record of ``Pipeline.draws()``).

        Raises:
            ArgumentError: a sample that is not an image of that layout, or bad arguments;
                what was shown stays.
        """
        hwc, data_kind = _checked(sample, layout, kind)
        if not isinstance(title, str):
            raise ArgumentError(f"Zoom.show: title must be a str, got {type(title).__name__}")
        if draws is not None and not isinstance(draws, Mapping):
            raise ArgumentError(
                f"Zoom.show: draws must be a mapping (one record of Pipeline.draws()) or None, "
                f"got {type(draws).__name__}"
            )
        pixels, value_range = grid.to_display(hwc, "HW" if hwc.ndim == 2 else "HWC", data_kind)
        plane = hwc if hwc.ndim == 2 else hwc[..., 0] if hwc.shape[-1] == 1 else None
        # to_display colours a label map (and only that) into 3 channels: then it is read as one.
        is_mask = data_kind.name == "mask" and plane is not None and pixels.ndim == 3
        k = self._magnification(hwc.shape[:2])
        counts, edges = channel_histogram(hwc)

        self.sample = hwc
        self.magnification = k
        self.value_range = value_range
        self._is_mask = is_mask
        self.counts, self.bin_edges = counts, edges
        self.image.value = _png(pixels, k)
        self.title.value = _title_html(title, value_range, hwc, k, is_mask)
        self.histogram.value = histogram_svg(counts, edges, hwc.dtype)
        self.draws.value = draws_html(draws)
        self.pixel.value = ""
        self.root.layout.display = ""

    def hide(self) -> None:
        """Hide the panel (what it shows stays, for the next ``show``)."""
        self.root.layout.display = "none"
        self.pixel.value = ""

    def pixel_text(self, x: int, y: int) -> str:
        """The text for sample pixel (``x``, ``y``), column and row: ``"x 12, y 40: R 120 G 33
        B 10"``; ``""`` outside the sample or when nothing is shown."""
        try:
            x, y = operator.index(x), operator.index(y)
        except TypeError:
            raise ArgumentError(
                f"Zoom.pixel_text: x and y must be integers (sample pixels), got {x!r}, {y!r}"
            ) from None
        sample = self.sample
        if sample is None or not (0 <= x < sample.shape[1] and 0 <= y < sample.shape[0]):
            return ""
        values = np.atleast_1d(sample[y, x])
        if self._is_mask:
            return f"x {x}, y {y}: class {_number(values[0])}"
        names = _CHANNEL_NAMES[len(values)]
        text = " ".join(
            f"{n} {_number(v)}" if n else _number(v) for n, v in zip(names, values, strict=True)
        )
        return f"x {x}, y {y}: {text}"

    def _on_event(self, event: Mapping[str, Any]) -> None:
        """ipyevents' handler: the text of the sample pixel under the cursor (``dataX`` and
        ``dataY`` are in the PNG's pixels, so divided by the magnification)."""
        kind = event.get("event", event.get("type"))
        stamp = event.get("timeStamp")
        if kind == "mouseleave":
            if isinstance(stamp, int | float):
                self._left_at = max(self._left_at, float(stamp))
            self.pixel.value = ""
            return
        if kind != "mousemove":
            return
        if isinstance(stamp, int | float) and stamp < self._left_at:
            if self._left_at - stamp <= _LATE_MS:
                return  # the trailing call of a throttled burst, after the cursor left
            self._left_at = -math.inf  # another clock: the page was reloaded, another view
        x, y = event.get("dataX"), event.get("dataY")
        if not isinstance(x, int | float) or not isinstance(y, int | float):
            self.pixel.value = ""
            return
        k = self.magnification
        # Outside (negative, or the one-past-the-end that ipyevents' round gives): nothing.
        column = math.floor(x / k) if x >= 0 else -1
        row = math.floor(y / k) if y >= 0 else -1
        self.pixel.value = html.escape(self.pixel_text(column, row))

    def _magnification(self, size: tuple[int, ...]) -> int:
        short, long = min(size), max(size)
        if short >= self.magnify_below:
            return 1
        k = math.ceil(self.magnify_below / short)
        return max(1, min(k, (4 * self.magnify_below) // long))


def _checked(sample: Any, layout: str, kind: Any) -> tuple[np.ndarray, kinds.Kind]:
    """``sample`` in HWC (or HW) order, and its kind; ``ArgumentError`` for what cannot be
    shown."""
    if not isinstance(layout, str):
        raise ArgumentError(f"Zoom.show: layout must be a str, got {layout!r}")
    if layout and layout not in _LAYOUTS:
        raise ArgumentError(
            f"Zoom.show: unknown layout {layout!r}; the layouts shown are 'HWC', 'CHW' and "
            f"'HW' (or '' to guess from the shape)"
        )
    try:
        data_kind = kinds.parse(kind)
    except (TypeError, ValueError) as error:
        raise ArgumentError(f"Zoom.show: kind={kind!r}: {error}") from None
    reason = grid.not_drawn(data_kind)
    if reason is not None:
        raise ArgumentError(
            f"Zoom.show: a sample of kind {data_kind.name!r} is not shown: {reason}"
        )
    array = np.asarray(backend.to_cpu(sample))
    shape = tuple(array.shape)
    if array.dtype.kind not in "biuf":
        raise ArgumentError(
            f"Zoom.show: a sample of dtype {array.dtype} (shape {shape}) is not pixels; "
            f"expected bool, integers or floats"
        )
    if array.ndim not in (2, 3):
        raise ArgumentError(
            f"Zoom.show: a sample of shape {shape} ({array.ndim}-D) is not an image; expected "
            f"2 dimensions (HW) or 3 (HWC, CHW)"
        )
    if layout and len(layout) != array.ndim:
        hint = "'HW'" if array.ndim == 2 else "'HWC' or 'CHW'"
        raise ArgumentError(
            f"Zoom.show: a sample of shape {shape} does not have layout {layout!r} "
            f"({len(layout)} dimensions); pass layout={hint}"
        )
    found = grid.image_layout(shape, layout)
    if found is None:
        if min(shape) == 0:
            raise ArgumentError(f"Zoom.show: a sample of shape {shape} is empty")
        channels = shape[layout.index("C")] if layout else f"{shape[0]} or {shape[-1]}"
        raise ArgumentError(
            f"Zoom.show: a sample of shape {shape} with layout {layout or '(guessed)'!r} has "
            f"{channels} channels; images have 1, 3 or 4"
        )
    hwc = np.moveaxis(array, 0, -1) if found == "CHW" else array
    return hwc, data_kind


def channel_histogram(sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, bin_edges)`` of an HWC or HW sample: counts an int64 array (channels, 256),
    edges 257 float64 values (those ``np.histogram`` gives: for float32 data, float32 values).
    uint8 and bool: one bin per value 0..255 (edges 0, 1, ...,
    256); other dtypes: ``np.histogram``'s 256 equal bins over the sample's finite min..max
    (all channels alike; a constant sample gets [v - 0.5, v + 0.5], as ``np.histogram``
    does), non-finite values not counted.

    Example:
        >>> counts, edges = channel_histogram(np.array([[0, 0], [3, 255]], np.uint8))
        >>> counts.shape, int(counts[0, 0]), int(counts[0, 255]), float(edges[-1])
        ((1, 256), 2, 1, 256.0)
    """
    planes = sample.reshape(-1, 1) if sample.ndim == 2 else sample.reshape(-1, sample.shape[-1])
    channels = planes.shape[1]
    counts = np.empty((channels, _BINS), np.int64)
    if sample.dtype in (np.uint8, np.bool_):
        # bincount of each (strided) column: faster than one bincount of shifted values.
        for c in range(channels):
            counts[c] = np.bincount(planes[:, c].view(np.uint8), minlength=_BINS)
        return counts, np.arange(_BINS + 1, dtype=np.float64)
    # np.histogram computes in float64 anyway; ints are converted once here (min/max).
    values = planes if planes.dtype.kind == "f" else planes.astype(np.float64)
    finite = np.isfinite(values)
    every = bool(finite.all())
    kept = values if every else values[finite]
    low, high = (float(kept.min()), float(kept.max())) if kept.size else (0.0, 1.0)
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, _BINS + 1)
    for c in range(channels):
        column = values[:, c] if every else values[finite[:, c], c]
        # Its edges, not ours: for float32 data NumPy 2 computes them in float32.
        counts[c], edges = np.histogram(column, bins=_BINS, range=(low, high))
    return counts, edges.astype(np.float64)


def histogram_top(counts: np.ndarray) -> int:
    """The count drawn at the top of the histogram: the largest of the inner bins (not the
    first and last), else the largest of all. A rotation's black corners or a saturated sky
    pile up in the end bins and would flatten every other bin; those are drawn to the top and
    the SVG says "ends above".

    Example:
        >>> histogram_top(np.array([[900, 3, 5, 2, 700]]))
        5
    """
    if counts.size == 0:
        return 0
    inner = counts[:, 1:-1]
    top = int(inner.max()) if inner.size else 0
    return top or int(counts.max())


def histogram_svg(counts: np.ndarray, edges: np.ndarray, dtype: np.dtype) -> str:
    """An inline SVG of ``counts`` (channels, 256): one polyline per channel (R, G, B in their
    colours, A light gray, one channel dark gray), linear up to ``histogram_top(counts)``, the
    axis range written under it.

    The drawing's coordinates are tenths of a screen pixel (``viewBox`` 10 times the size), so
    that the points are integers: written with ``str``, several times faster than floats."""
    channels = counts.shape[0]
    colours = _CHANNEL_COLOURS.get(channels, _CHANNEL_COLOURS[1] * channels)
    peak = histogram_top(counts)
    bottom = _PLOT_TOP + _PLOT_HEIGHT
    prefixes = [f"{10 * (_PLOT_LEFT + i) + 5}," for i in range(counts.shape[1])]
    lines = []
    for c in range(channels):
        shown = np.minimum(counts[c], peak)
        heights = shown * (10 * _PLOT_HEIGHT / peak) if peak else np.zeros(counts.shape[1])
        ys = (10 * bottom - np.round(heights)).astype(np.int64).tolist()
        points = " ".join([p + str(y) for p, y in zip(prefixes, ys, strict=True)])
        lines.append(
            f'<polyline points="{points}" fill="none" stroke="{colours[c]}" '
            f'stroke-width="10" stroke-linejoin="round"/>'
        )
    if np.dtype(dtype) in (np.uint8, np.bool_):
        low, high = "0", "255"
    else:
        low, high = f"{edges[0]:.4g}", f"{edges[-1]:.4g}"
    above = ", ends above" if counts.size and counts.max() > peak else ""
    text = 'font-size="100" font-family="sans-serif" fill="#444"'
    right = 10 * (_PLOT_LEFT + _BINS)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_SVG_WIDTH}" height="{_SVG_HEIGHT}" '
        f'viewBox="0 0 {10 * _SVG_WIDTH} {10 * _SVG_HEIGHT}" role="img" aria-label="histogram">'
        f'<rect x="{10 * _PLOT_LEFT}" y="{10 * _PLOT_TOP}" width="{10 * _BINS}" '
        f'height="{10 * _PLOT_HEIGHT}" fill="#fafafa" stroke="#ddd" stroke-width="10"/>'
        f"{''.join(lines)}"
        f'<text x="{right}" y="100" text-anchor="end" {text}>{peak} px per bin at the top'
        f"{above}</text>"
        f'<text x="{10 * _PLOT_LEFT}" y="{10 * bottom + 120}" {text}>{html.escape(low)}</text>'
        f'<text x="{right}" y="{10 * bottom + 120}" text-anchor="end" {text}>'
        f"{html.escape(high)}</text>"
        f"</svg>"
    )


def draws_html(draws: Mapping[str, Any] | None) -> str:
    """A table of one sample's random draws, ``"Rotate_4.angle | 12.4"`` per item (floats with
    4 significant digits, vectors as lists), HTML-escaped; ``""`` for none.

    Example:
        >>> draws_html({"Flip_2.horizontal": 1})  # doctest: +ELLIPSIS
        '<table ...><td ...>Flip_2.horizontal</td><td ...>1</td></tr></table>'
    """
    if not draws:
        return ""
    cell = 'style="padding:1px 6px;border-bottom:1px solid #eee'
    rows = "".join(
        f'<tr><td {cell}">{html.escape(str(key))}</td>'
        f'<td {cell};text-align:right;font-family:monospace">'
        f"{html.escape(_value(value))}</td></tr>"
        for key, value in draws.items()
    )
    return f'<table style="border-collapse:collapse;font-size:12px">{rows}</table>'


def _value(value: Any) -> str:
    """A draw as text: numbers as ``_number`` writes them, vectors as ``[a, b]``."""
    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, bool | int | float):
        return _number(value)
    return str(value)


def _number(value: Any) -> str:
    """A value in its dtype: integers as they are, bools as 0/1, floats with 4 significant
    digits."""
    if isinstance(value, bool | np.bool_):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    return str(int(value))


def _png(pixels: np.ndarray, k: int) -> bytes:
    """``pixels`` (uint8 HW or HWC) magnified ``k`` times by repetition, as PNG bytes: "L" for
    one channel, RGB else (RGBA's alpha dropped, as the grid does)."""
    if k > 1:
        pixels = np.repeat(np.repeat(pixels, k, axis=0), k, axis=1)
    picture = Image.fromarray(np.ascontiguousarray(pixels))
    if picture.mode not in ("L", "RGB"):
        picture = picture.convert("RGB")
    return grid.to_png(picture)


def _title_html(
    title: str, value_range: tuple[float, float] | None, sample: np.ndarray, k: int, mask: bool
) -> str:
    """The tile's title in bold, with its rescaled note, then its shape, dtype and zoom."""
    shape = "×".join(str(n) for n in sample.shape)
    what = "mask, " if mask else ""
    details = f"{what}{shape} {sample.dtype}" + (f", ×{k}" if k > 1 else "")
    text = grid.caption(title, value_range)
    head = f"<b>{html.escape(text)}</b> " if text else ""
    return f'{head}<span style="color:#666">{html.escape(details)}</span>'
