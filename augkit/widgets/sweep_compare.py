"""Sweeps and comparisons: the same samples at several values of a control, one row each, and
two versions of a node side by side, tile by tile.

Decisions and traps:

- A sweep sets each value (``set_function`` or ``set_arguments``) and reruns only the swept
  operator (``pipe.rerun([operator])``), so random draws stay and only the parameter changes;
  then the control's own value is put back and recomputed. Each row's overlays are drawn (the
  boxes a swept rotate moves move with it).
- The compare picker keeps its choice while controls move: every redraw of the node shown
  draws it beside the other node, or beside itself under a Python operator's previous
  function (``update()`` and live edits keep the version they replace), until it is set back
  to "none" (``""``: a Dropdown shows ``None`` as no choice at all).
- ``|A - B|`` is computed in float64 and given back in the first's type (integers) or
  float32: a difference of uint8 images must not wrap around.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np

from augkit import grid, viz
from augkit.errors import ArgumentError, GraphError, suggest
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets.batch_text import summary_html
from augkit.widgets.controls import FunctionControls, function_name
from augkit.widgets.tiles import _Tile

_PREVIOUS = "\0previous:"  # the compare picker's value for an operator's previous version


class SweepAndCompare:
    """``sweep()``, ``compare()``, the sweep buttons and the compare picker (a part of
    ``augkit.widgets.Viewer``)."""

    # Set by the viewer and its other parts.
    pipe: Pipeline
    batch: TensorList | None
    columns: int
    tile: int
    image: widgets.Image
    values: widgets.HTML
    summary: widgets.HTML
    node_picker: widgets.Dropdown
    _controls: dict[str, FunctionControls]
    _previous: dict[str, Callable[..., Any]]
    _picking: bool
    _act: Callable[[Callable[[], object]], None]
    _set_function: Callable[[str], None]
    _encode: Callable[[Any], bytes]
    _set_tiles: Callable[..., None]
    _overlay_batches: Callable[[str, int], dict[str, Any]]
    _grid_options: Callable[..., viz.GridOptions]

    if TYPE_CHECKING:  # ControlPanel's read-only property (not an attribute one may set)

        @property
        def sliders(self) -> dict[str, dict[str, Any]]: ...

    def _init_compare(self) -> None:
        self.sweep_buttons: dict[tuple[str, str], widgets.Button] = {}
        self.compare_picker = widgets.Dropdown(
            description="compare",
            options=[("none", "")],  # "" (not None, which a Dropdown shows as no choice at all)
            value="",
            tooltip="another node beside the one shown, tile by tile",
        )
        self.difference_toggle = widgets.Checkbox(
            value=False, description="|A - B|", indent=False, layout=widgets.Layout(width="auto")
        )

    def sweep(
        self,
        operator: str,
        param: str,
        values: Sequence[Any],
        *,
        samples: int | None = None,
        node: str | None = None,
    ) -> TensorList:
        """Show the same samples at each of ``values`` of ``operator``'s ``param``, one row per
        value: a Python operator's keyword parameter or a built-in operator's constant argument
        (those that have a control). Each row reruns ``operator`` and what follows it on the
        cached batch (``pipe.rerun([operator])``), so random operators keep their draws and
        only ``param`` changes; afterwards the control's own value is put back and recomputed.

        Args:
            operator: the operator's name (a key of ``viewer.sliders``).
            param: the parameter or argument.
            values: the values, one row each.
            samples: samples per row (default: ``columns``).
            node: the node shown (default: the node on screen).

        Returns:
            The swept samples as one batch, row after row (``len(values) * samples``).

        Raises:
            ArgumentError: no such control, no values, or a value the operator refuses
                (then nothing changed).
        """
        controls = self.sliders.get(operator)
        if controls is None or param not in controls:
            known = [f"{op}.{p}" for op, ps in self.sliders.items() for p in ps]
            raise ArgumentError(
                f"sweep(): {operator!r} has no control {param!r} (controls: "
                f"{', '.join(known) or 'none'}){suggest(f'{operator}.{param}', known)}"
            )
        values = list(values)
        if not values:
            raise ArgumentError("sweep(): give at least one value")
        name = node or self.node_picker.value
        count = samples or self.columns
        rows: list[Any] = []
        titles: list[str] = []  # per tile: "param=value · file" (the zoom's title)
        heads: list[str] = []  # per tile on the picture: "param=value", which a tile can hold
        drawn_rows: list[dict[str, Any]] = []  # the overlays of each row
        try:
            for value in values:
                self._set_for_sweep(operator, param, value)
                self.pipe.rerun([operator])
                batch = self.pipe.value(name)
                shown = batch[: min(count, len(batch))]
                rows += [shown.samples[i] for i in range(len(shown))]
                titles += [f"{param}={value!r} · {src}" for src in shown.sources]
                heads += [f"{param}={_short(value)}"] * len(shown)
                if grid.looks_like_images(shown):
                    drawn_rows.append(self._overlay_batches(name, len(shown)))
        finally:
            self._set_for_sweep(operator, param, controls[param].value)
            self.pipe.rerun([operator])
        swept = TensorList(rows, shown.layout(), titles, kind=shown.kind)
        # The overlays of every row (boxes that move with the swept parameter move with it).
        kinds = set.intersection(*(set(d) for d in drawn_rows)) if drawn_rows else set()
        drawn = {
            kind: TensorList(
                [d[kind].samples[i] for d in drawn_rows for i in range(len(d[kind]))],
                drawn_rows[0][kind].layout(),
                kind=drawn_rows[0][kind].kind,
            )
            for kind in kinds
        }
        picture = viz.render([swept], self._grid_options(drawn, columns=len(shown), titles=heads))
        self.image.value = self._encode(picture)
        per_row = len(shown)
        self._set_tiles(
            [_Tile(swept, k, titles[k], name, k % per_row) for k in range(len(rows))],
            per_row,
            titles,
        )
        self.summary.value = html.escape(
            f"sweep of {operator}.{param} over {len(values)} values: {name}, one row per value"
        )
        return swept

    def _set_for_sweep(self, operator: str, param: str, value: Any) -> None:
        if operator in self._controls:
            controls = self._controls[operator]
            keywords = {**controls.keywords(), param: value}
            self.pipe.set_function(
                operator, functools.partial(controls.function, *controls.bound, **keywords)
            )
        else:
            self.pipe.set_arguments(operator, **{param: value})

    def _with_sweep(self, operator: str, param: str, widget: widgets.Widget) -> widgets.Widget:
        """The control with a "sweep" button beside it (when its values can be listed):
        ``sweep(operator, param, ...)`` over five values of its range, or its choices."""
        values = _sweep_values(widget)
        if not values:
            return widget
        key = (operator, param)
        button = self.sweep_buttons.get(key)
        if button is None:
            button = widgets.Button(
                description="sweep",
                icon="th",
                tooltip=f"the same samples at {', '.join(map(repr, values))}, a row each",
            )
            button.layout.width = "auto"
            button.on_click(
                lambda _: self._act(
                    lambda: self.sweep(
                        operator, param, _sweep_values(self.sliders[operator][param])
                    )
                )
            )
            self.sweep_buttons[key] = button
        return widgets.HBox([widget, button])

    def compare(
        self,
        a: str,
        b: str | None = None,
        *,
        operator: str | None = None,
        function: Callable[..., Any] | None = None,
        difference: bool = False,
        samples: int | None = None,
    ) -> list[TensorList]:
        """Two versions side by side, tile by tile: node ``a`` beside node ``b`` (the decoder's
        output beside the augmented one), or, with ``operator`` and ``function``, node ``a``
        now (A) beside node ``a`` with the Python operator ``operator`` running ``function``
        (B: an A/B test of a new version, on the same samples and random draws; the operator
        gets its own function back afterwards). ``difference``: a third column,
        ``|A - B|`` per pixel, where both have the same shape and type.

        Returns:
            The batches shown, one per column (``samples`` samples each, default ``columns``).

        Raises:
            ArgumentError: neither ``b`` nor ``operator`` and ``function``, or both; an
                operator that is not a Python operator of this viewer.
            GraphError: no node of that name.
        """
        if (b is None) == (operator is None or function is None):
            raise ArgumentError(
                "compare(): give another node (compare(a, b)) or an operator and a new "
                "function for it (compare(a, operator=..., function=...)), not both"
            )
        count = samples or self.columns
        nodes = self.pipe.nodes()
        for name in (a, b):
            if name is not None and name not in nodes:
                raise GraphError(f"no node named {name!r}{suggest(name, list(nodes))}")
        first = self.pipe.value(a)[:count]
        if b is not None:
            second, labels = self.pipe.value(b)[:count], (a, b)
        else:
            if operator not in self._controls:
                known = list(self._controls)
                raise ArgumentError(
                    f"compare(): {operator!r} is not a Python operator of this viewer "
                    f"(have: {', '.join(known) or 'none'}){suggest(str(operator), known)}"
                )
            assert function is not None  # the first check: with no b, operator and function
            second = self._under(operator, function, a, count)
            labels = (f"A: {a}", f"B: {function_name(function)}")
        return self._draw_compare(first, second, list(labels), difference, (a, b or a))

    def _under(
        self, operator: str, function: Callable[..., Any], name: str, count: int
    ) -> TensorList:
        """Node ``name``'s first ``count`` samples with ``operator`` running ``function`` (the
        same samples and draws); the operator gets its own function back afterwards."""
        try:
            self.pipe.set_function(operator, function)
            self.pipe.rerun([operator])
            return self.pipe.value(name)[:count]
        finally:
            self._set_function(operator)
            self.pipe.rerun([operator])

    def _render_compare(self, name: str, batch: TensorList, shown: TensorList) -> bool:
        """Node ``name`` (its ``shown`` samples) beside what the compare picker holds, kept
        while the controls move: another node, or the node under a Python operator's
        previous function. False when the picker holds nothing (nothing drawn)."""
        other = self.compare_picker.value or None  # "" (or None set from code): no compare
        if other is None:
            return False
        if other.startswith(_PREVIOUS):
            # A/B of the last edit: the node now beside the node under the replaced version.
            operator = other[len(_PREVIOUS) :]
            second = self._under(operator, self._previous[operator], name, len(shown))
            self.batch = self.pipe.value(name)  # the same numbers, recomputed
            heads = ["now", "previous"]  # short: a small tile's title holds them
            nodes, note = (name, name), f"{operator}'s previous version"
        else:
            second = self.pipe.value(other)[: len(shown)]
            heads, nodes, note = [name, other], (name, other), other
        self._draw_compare(shown, second, heads, self.difference_toggle.value, nodes)
        self.summary.value = summary_html(name, batch, len(shown)) + html.escape(
            f" · compared with {note}"
        )
        return True

    def _draw_compare(
        self,
        first: TensorList,
        second: TensorList,
        heads: list[str],
        difference: bool,
        nodes: tuple[str, str],
    ) -> list[TensorList]:
        """Draw ``first`` and ``second`` side by side, tile by tile (and ``|A - B|``)."""
        count = min(len(first), len(second))
        columns = [first[:count], second[:count]]
        owners: list[str | None] = list(nodes)
        if difference:
            columns.append(_difference(columns[0], columns[1]))
            heads.append("|A - B|")
            owners.append(None)
        # The picture's titles are the heads (a tile has room for them); the zoom's say the file.
        titles = [f"{head} · {columns[0].source_info(i)}" for i in range(count) for head in heads]
        shown_titles = [head for _ in range(count) for head in heads]
        options = viz.GridOptions(
            columns=len(columns), titles=shown_titles, max_samples=None, tile=self.tile
        )
        picture = viz.render(columns, options)
        self.image.value = self._encode(picture)
        self.image.layout.display = None
        self.values.value = ""
        width = len(columns)
        self._set_tiles(
            [
                _Tile(columns[k % width], k // width, titles[k], owners[k % width], k // width)
                for k in range(count * width)
            ],
            width,
            titles,
        )
        self.summary.value = html.escape(f"compare: {' | '.join(heads)}")
        return columns

    def _sync_compare_options(self) -> None:
        """The compare picker's choices: none, every node, and the previous version of each
        Python operator's function that ``update()`` or a live edit replaced."""
        nodes = [(label, value) for label, value in self.node_picker.options]
        previous = [
            (f"{op}: previous version", f"{_PREVIOUS}{op}")
            for op in self._previous
            if op in self._controls
        ]
        options = [("none", ""), *nodes, *previous]
        if list(self.compare_picker.options) == options:
            return
        kept = self.compare_picker.value
        was = self._picking
        self._picking = True
        try:
            self.compare_picker.options = options
            self.compare_picker.value = kept if kept in {v for _, v in options} else ""
        finally:
            self._picking = was


def _difference(first: TensorList, second: TensorList) -> TensorList:
    """``|first - second|`` sample by sample (same shapes and types), as the first's type."""
    out = []
    for i in range(len(first)):
        x, y = np.asarray(first.at(i)), np.asarray(second.at(i))
        if x.shape != y.shape or x.dtype != y.dtype:
            raise ArgumentError(
                f"compare(difference=True): sample {i} is {x.shape} {x.dtype} in A and "
                f"{y.shape} {y.dtype} in B; a difference needs the same shape and type"
            )
        wide = np.abs(x.astype(np.float64) - y.astype(np.float64))
        out.append(wide.astype(x.dtype) if x.dtype.kind in "iu" else wide.astype(np.float32))
    return TensorList(out, first.layout(), first.sources)


def _short(value: Any) -> str:
    """A swept value as a tile's title shows it: floats with 3 significant digits."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return repr(value)


def _sweep_values(widget: Any, count: int = 5) -> list[Any]:
    """What a sweep button goes through: ``count`` values evenly over a slider's range (whole
    numbers for an integer slider), a dropdown's choices (8 at most), a checkbox's two."""
    if isinstance(widget, widgets.Checkbox):
        return [False, True]
    options = getattr(widget, "options", None)
    if options:
        return [o[1] if isinstance(o, tuple) else o for o in list(options)[:8]]
    low, high = getattr(widget, "min", None), getattr(widget, "max", None)
    if low is None or high is None:
        return []
    points = np.linspace(low, high, count)
    if isinstance(widget, widgets.IntSlider):
        return sorted({int(np.rint(p)) for p in points})
    return [round(float(p), 6) for p in points]
