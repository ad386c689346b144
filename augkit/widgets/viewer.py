"""``Viewer``: a pipeline's batches in a notebook, with buttons that run it again and sliders
for its Python functions' parameters.

The viewer is one class made of parts, each in its own module, that share the viewer's
state (``self``) and its widgets:

- ``grid_view``: the picture of the node shown (grid with titles and overlays, or a table of
  values), its summary line and overlay checkboxes; which targets are drawn over an image
  node is read from the graph by ``augkit.overlay_links`` (``overlay_nodes``, re-exported
  here), which imports no widgets.
- ``control_panel``: the controls of Python operators' functions and built-in operators'
  constant arguments, what they recompute, ``update()`` and live edits, the copy-code box.
- ``sweep_compare``: ``sweep()`` and its buttons, ``compare()`` and the compare picker.
- ``pinning``: ``pin()``, ``pick()``, the pin button and the pick box.
- ``tiles``: what each tile on screen shows, the clicks that open one in the zoom
  (``augkit.widgets.zoom``), ``select()`` and ``draws()``.
- here: the buttons, the node picker, the layout, running the pipeline and showing errors.

Decisions and traps:

- Every action of a button, a picker or a control runs through ``_act``: an exception is
  shown under the buttons with its traceback, and the viewer keeps working.
- A picker's options and value set from code must not redraw (``_picking``).

Example:
    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.widgets import Viewer
    >>> def brighten(image, amount=30):
    ...     return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)
    >>> gray = np.full((32, 48, 3), 100, np.uint8)
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    ... def brightened():
    ...     images = fn.external_source(source=lambda: [gray] * 4, layout="HWC")
    ...     return fn.python_function(images, function=brighten, name="brighten")
    >>> pipe = brightened()
    >>> viewer = Viewer(pipe, params={"brighten": {"amount": (0, 100, 5)}})
    >>> viewer  # doctest: +SKIP
    >>> # ^ the last expression of a cell shows the viewer; a slider sets ``amount``
    >>> viewer.batch.at(0)[0, 0]  # a pixel of the batch on screen
    array([130, 130, 130], dtype=uint8)
    >>> def brighten(image, amount=30):  # edited in a cell...
    ...     return np.clip(image.astype(np.int16) + 2 * amount, 0, 255).astype(np.uint8)
    >>> viewer.update(brighten=brighten)  # ...the same batch, through the new function
    >>> viewer.batch.at(0)[0, 0]
    array([160, 160, 160], dtype=uint8)
    >>> pipe.close()
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from traitlets import TraitError

from augkit import grid
from augkit.errors import ArgumentError, GraphError, suggest
from augkit.overlay_links import overlay_nodes
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets import live
from augkit.widgets.batch_text import summary_text
from augkit.widgets.control_panel import ControlPanel
from augkit.widgets.grid_view import GridView, check_image_format
from augkit.widgets.pinning import PinAndPick
from augkit.widgets.sweep_compare import SweepAndCompare
from augkit.widgets.tiles import TileSelection

__all__ = ["Viewer", "overlay_nodes"]

# The buttons that run the pipeline: description, icon, tooltip.
_BUTTONS = (
    ("Next batch", "forward", "pipe.run(): the next batch"),
    ("Rerun", "refresh", "pipe.rerun(): the same samples again, new random draws"),
    ("Reset", "fast-backward", "pipe.reset(), pipe.run(): the first batch of the next epoch"),
)


class Viewer(GridView, ControlPanel, SweepAndCompare, PinAndPick, TileSelection):
    """Look at a pipeline's batches, and change its Python functions while looking.

    The grid shows one node of the last batch: any output, or any intermediate node (the
    picker lists them all). Tiles are titled with the sample's source file and its label (from
    the pipeline's first output of kind ``labels``, when it has one, with its class name). The
    boxes, masks, keypoints and polygons that belong to an image node (``augkit.overlay_links``)
    docstring) are drawn over it, each kind with a checkbox. A node whose kind is not pixels
    (labels, boxes, encoded bytes...) is shown as a table of its values.

    - **Next batch** runs the pipeline (``pipe.run()``); **Rerun** runs the same input samples
      through the graph again with new random draws (``pipe.rerun()``); **Reset** starts the
      next epoch and shows its first batch (``pipe.reset()``, ``pipe.run()``).
    - Each keyword parameter of a Python operator's function gets a control (see
      ``augkit.widgets.controls`` for how its kind and range are inferred). Moving one gives the
      operator ``functools.partial(function, **values)`` and recomputes only that operator and
      what follows it, on the cached batch (``pipe.rerun([operator])``): nothing is read or
      decoded again, and random operators keep their draws. The "copy code" box shows the
      operator call with the current values.
    - Each number given to a built-in operator as a constant (``fn.gaussian_blur(x,
      sigma=2.0)``, ``fn.hsv(x, hue=30.0)``) gets a control too (``ArgumentControls``): moving
      it gives the operator the new value (``pipe.set_arguments``) and recomputes that operator
      and what follows, as for a function's parameter.
    - An exception from the pipeline is shown under the buttons, with the user's traceback,
      and the viewer keeps working: fix the value or the function, and click again.
    - **Live edits** (``augkit.widgets.live``): redefining a Python operator's function in a
      cell and running the cell gives the operator the new function, as ``update()`` does.
    - **Sweep** (a button beside each control, ``sweep()``), **compare** (a picker: another
      node beside the one shown, kept while controls move, or a function's version before its
      last edit; ``compare()`` also A/B-tests any new function), **zoom** (a click on a tile,
      ``select()``: full resolution, the values under the cursor, a histogram, the tile's
      random draws), **pin** and **pick** (``pin()``, ``pick()``: keep the samples or choose
      them by file or label; Next batch moves on).

    Args:
        pipe: the pipeline (built here if it is not yet).
        output: the node shown first: an index into the pipeline's outputs or a node name
            (default: the first output drawn as images: of kind image or mask, or generic with
            images' shapes).
        columns: tiles per row.
        max_samples: the most samples of a batch shown.
        tile: the side of a tile, in pixels.
        params: control ranges per operator name or function name (for built-in operators:
            per operator name or schema name), as ``interact`` abbreviations:
            ``{"brighten": {"amount": (0, 100, 5)}, "gaussian_blur": {"sigma": (0, 8, 0.1)}}``;
            ``None`` for an argument: no control.
        image_format: how the grid travels to the browser: ``"jpeg"`` (default; 4:4:4 at
            ``jpeg_quality``, about a fifth of the PNG's bytes and ~12x faster to encode) or
            ``"png"`` (lossless: for pixel-exact checks). The zoom is always PNG.
        jpeg_quality: 1..100.

    Attributes:
        next_button, rerun_button, reset_button: the buttons.
        node_picker: the Dropdown of nodes (its value is the node's name).
        image: the ``ipywidgets.Image`` holding the grid (JPEG or PNG bytes, ``image_format``).
        values: an HTML table of the values, for a node that is not drawn as images (its kind
            is not pixels, or its samples have no image's shape).
        summary: one HTML line: node, batch size, dtype, layout, kind, shapes.
        overlay_toggles: overlay kind ("boxes", "masks", "keypoints", "polygons") -> its
            Checkbox (shown for the kinds the node on screen has).
        overlays: target kind -> name of the node drawn over the node shown.
        error: HTML with the last error and its traceback ("" after a success).
        timings: HTML table of the per-operator times (``pipe.profile()``), filled while its
            "timings" section (``Accordion``) is open.
        code: HTML with the Python operator calls, current values bound.
        pin_button, pick_box: pin the samples on screen; pick samples (file names or labels,
            comma-separated, then Enter).
        compare_picker, difference_toggle: the node compared with the one shown ("": none),
            and whether ``|A - B|`` is drawn too.
        zoom: the ``augkit.widgets.zoom.Zoom`` panel under the grid (hidden until a click).
        sweep_buttons: (operator, parameter) -> its sweep Button.
        pinned: the pinned samples' names, or None. selected: the tile in the zoom, or None.
        live: whether redefined functions are followed (default True).
        root: the VBox that holds it all (what the notebook displays); also ``widget``.
        batch: the TensorList of the node shown (whole, not cut to ``max_samples``).
        last_error: the exception shown in ``error``, or None.
    """

    def __init__(
        self,
        pipe: Pipeline,
        *,
        output: int | str | None = None,
        columns: int = 4,
        max_samples: int = 16,
        tile: int = 200,
        params: Mapping[str, Mapping[str, Any]] | None = None,
        image_format: str = "jpeg",
        jpeg_quality: int = 90,
    ) -> None:
        _check_settings(image_format, jpeg_quality, columns, max_samples, tile)
        self.pipe = pipe
        self.columns = columns
        self.max_samples = max_samples
        self.tile = tile
        self.jpeg_quality = jpeg_quality
        self.last_error: BaseException | None = None
        self._outputs: list[str] = []  # the pipeline's outputs by node name
        self._has_batch = False
        self._picking = False  # the picker's options are being replaced: do not render
        self._wanted = output  # what the first picture shows, once a batch is there

        self.next_button, self.rerun_button, self.reset_button = (
            widgets.Button(description=text, icon=icon, tooltip=tip) for text, icon, tip in _BUTTONS
        )
        self.node_picker = widgets.Dropdown(description="show", options=[])
        self.error = widgets.HTML()
        self.timings = widgets.HTML()
        self._timings_box = widgets.Accordion(children=[self.timings], titles=("timings",))
        self._init_grid_view(image_format)
        self._init_tiles(columns)
        self._init_compare()
        self._init_pinning()
        self._init_panel(params)
        self.root = widgets.VBox(
            [
                widgets.HBox(
                    [self.next_button, self.rerun_button, self.reset_button, self.node_picker]
                ),
                widgets.HBox(
                    [self.pin_button, self.pick_box, self.compare_picker, self.difference_toggle]
                ),
                self.summary,
                self._toggles_box,
                self.error,
                self.image,
                self.zoom.root,
                self.values,
                self._controls_box,
                self._code_box,
                self._timings_box,
            ]
        )

        if pipe.debug:
            # A debug pipeline keeps no batch per node (pipe.nodes() stays empty) and cannot
            # rerun a batch: there would be nothing to pick, rerun or recompute.
            raise ArgumentError(
                "Viewer needs a normal pipeline: build it without debug=True (the same "
                "definition gives the same batches)"
            )
        pipe.build()
        self._init_controls()

        self.next_button.on_click(lambda _: self._act(self._next))
        self.rerun_button.on_click(lambda _: self._act(self._rerun))
        self.reset_button.on_click(lambda _: self._act(self._reset))
        self.node_picker.observe(self._on_pick, names="value")
        self.compare_picker.observe(self._on_pick, names="value")
        self.difference_toggle.observe(self._on_pick, names="value")
        # Filled while open: a hidden table updated on every slider move still costs the page.
        self._timings_box.observe(lambda _: self._act(self._show_timings), names="selected_index")
        live.watch(self)
        if isinstance(output, str) and output not in pipe.nodes():
            names = list(pipe.nodes())
            raise GraphError(
                f"Viewer: no node named {output!r} (nodes: {', '.join(names)})"
                f"{suggest(output, names)}"
            )
        self._act(self._next)
        if isinstance(output, int) and self._outputs and not 0 <= output < len(self._outputs):
            raise ArgumentError(
                f"Viewer: output={output}, but the pipeline has {len(self._outputs)} outputs"
            )

    # --- public ---------------------------------------------------------------------------------
    @property
    def widget(self) -> widgets.VBox:
        """The ipywidgets widget that holds the whole viewer, to lay it out among other
        widgets: ``HBox([viewer.widget, notes])``, a Voila dashboard, an ``AppLayout``. (The
        viewer itself displays as this widget when it is a cell's last expression.)"""
        return self.root

    def show(self, name: str) -> None:
        """Show node ``name`` (what the picker does)."""
        names = [value for _, value in self.node_picker.options]
        if name not in names:
            raise GraphError(
                f"no node named {name!r} (nodes: {', '.join(names)}){suggest(name, names)}"
            )
        if self.node_picker.value == name:
            self._act(self._render)
        else:
            self.node_picker.value = name

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, with this viewer's own text as the plain-text fallback (ipywidgets'
        would be a cut ``VBox(children=(HBox(...`` repr): what GitHub, nbviewer and a
        notebook opened without a kernel show."""
        bundle = self.root._repr_mimebundle_(**kwargs)
        if bundle is None:  # ipywidgets gives none when the widget cannot be displayed
            return None
        return {**bundle, "text/plain": repr(self)}

    def __repr__(self) -> str:
        """What is shown, the controls' values as code, and the last error, in plain text."""
        name = self.node_picker.value
        if name is None or self.batch is None:
            lines = ["Viewer: no batch shown yet"]
        else:
            shown = min(len(self.batch), self.max_samples)
            label = {value: text for text, value in self.node_picker.options}.get(name, name)
            lines = [f"Viewer: {label}: {summary_text(self.batch, shown)}"]
        lines += self.code_text.splitlines()
        if self.last_error is not None:
            lines.append(f"error: {type(self.last_error).__name__}: {self.last_error}")
        lines.append("(a live widget: its buttons and sliders work in a running Jupyter kernel)")
        return "\n".join(lines)

    # --- actions ----------------------------------------------------------------------------------
    def _act(self, action: Callable[[], object]) -> None:
        """Run ``action``; show any exception with its traceback instead of raising it."""
        try:
            action()
        except Exception as exc:
            self.last_error = exc
            text = "".join(traceback.format_exception(exc))
            self.error.value = (
                f"<div style='color:#a00'><b>{html.escape(type(exc).__name__)}</b>: "
                f"{html.escape(str(exc))}</div><pre style='white-space:pre-wrap;"
                f"font-size:11px;background:#fff4f4;padding:4px'>{html.escape(text)}</pre>"
            )
        else:
            self.last_error = None
            self.error.value = ""

    def _next(self) -> None:
        # Next batch is the one thing that moves on from pinned samples (and unpins).
        if self.pinned is not None:
            self.pin(False)
        self._ran(self.pipe.run())
        self._refresh()

    def _rerun(self) -> None:
        self._ran(self.pipe.rerun())
        self._refresh()

    def _reset(self) -> None:
        self.pipe.reset()
        if self.pinned is not None:  # the next epoch, the same samples on screen
            self._ran(self.pipe.pick(self.pinned))
        else:
            self._ran(self.pipe.run())
        self._refresh()

    def _on_pick(self, change: Mapping[str, Any]) -> None:
        if not self._picking:
            self._act(self._render)

    # --- state ------------------------------------------------------------------------------------
    def _ran(self, outputs: tuple[TensorList, ...]) -> None:
        self._has_batch = True
        if not self._outputs:
            self._outputs = self.pipe.output_names()

    def _refresh(self) -> None:
        self._sync_picker()
        self._render()
        self._show_timings()

    def _sync_picker(self) -> None:
        names = list(self.pipe.nodes())
        outputs = {name: k for k, name in enumerate(self._outputs)}
        options = [
            (f"{name} (output {outputs[name]})" if name in outputs else name, name)
            for name in names
        ]
        current = self.node_picker.value
        if current not in names:
            current = self._default_node(names)
        if list(self.node_picker.options) != options:
            self._picking = True
            try:
                self.node_picker.options = options
            finally:
                self._picking = False
        self._sync_compare_options()
        self._pick(current)

    def _pick(self, name: str | None) -> None:
        self._picking = True
        try:
            self.node_picker.value = name
        except TraitError:
            names = [value for _, value in self.node_picker.options]
            raise GraphError(
                f"Viewer: no node named {name!r} (nodes: {', '.join(names)})"
                f"{suggest(str(name), names)}"
            ) from None
        finally:
            self._picking = False

    def _default_node(self, names: list[str]) -> str | None:
        """The node asked for by ``output=``, else the first output drawn as images (see
        ``grid.looks_like_images``: by kind), else the first output, else the first node."""
        wanted = self._wanted
        if isinstance(wanted, str):
            return wanted
        if isinstance(wanted, int) and 0 <= wanted < len(self._outputs):
            return self._outputs[wanted]
        for name in self._outputs:
            if name and grid.looks_like_images(self.pipe.value(name)):
                return name
        return next((n for n in self._outputs if n), names[0] if names else None)

    def _show_timings(self) -> None:
        if self._timings_box.selected_index is None:  # closed: filled when it is opened
            return
        rows = self.pipe.profile().rows
        cells = "".join(
            f"<tr><td>{html.escape(r['operator'])}</td><td>{html.escape(r['op'])}</td>"
            f"<td style='text-align:right'>{r['last_ms']:.2f}</td>"
            f"<td style='text-align:right'>{r['mean_ms']:.2f}</td>"
            f"<td style='text-align:right'>{r['calls']}</td></tr>"
            for r in rows
        )
        self.timings.value = (
            "<table style='font-size:11px'><tr><th>operator</th><th>op</th><th>last ms</th>"
            f"<th>mean ms</th><th>calls</th></tr>{cells}</table>"
        )


def _check_settings(
    image_format: str, jpeg_quality: int, columns: int, max_samples: int, tile: int
) -> None:
    """The viewer's settings, or the error that names the wrong one."""
    check_image_format(image_format)
    if not isinstance(jpeg_quality, int) or not 1 <= jpeg_quality <= 100:
        raise ArgumentError(f"Viewer: jpeg_quality must be an int in 1..100, got {jpeg_quality!r}")
    if columns < 1 or max_samples < 1 or tile < 8:
        raise ArgumentError(
            f"Viewer: columns and max_samples must be >= 1 and tile >= 8, got "
            f"columns={columns}, max_samples={max_samples}, tile={tile}"
        )
