"""``Viewer``: a pipeline's batches in a notebook, with buttons that run it again and sliders
for its Python functions' parameters.

Decisions and traps:

- What a node is follows its data kind (``batch.kind``), never a guess from dtype and shape:
  tiles are titled with the pipeline's first output of kind ``labels`` (a Python function's
  int32 value of shape (1,) is no label, and titles nothing); image and mask nodes are drawn
  (masks coloured by class, ``augkit.grid``); labels, encoded bytes, boxes, keypoints, polygons
  and vertices are shown as a table of values (encoded bytes as their size and format). Only a
  generic node (a Python function's output that gave no ``kind=`` and no image layout) is
  drawn when its samples have an image's shape, as a function may return images unsaid.
- The summary line and the table say the kind, so that a node shown as values tells why.
- Tiles are titled "source file · label", the label with its class name where a reader knows
  it (``Pipeline.class_names()``: readers.file's class folders, readers.coco's categories):
  "people/grace_hopper.jpg · 3 people". Labels drawn on their boxes are not repeated there.

Overlays: the boxes, masks, keypoints, polygons + vertices and per-box labels drawn over the
node shown are the ones at the same point of the graph, worked out from the graph alone by
``augkit.overlay_links.overlay_nodes`` (re-exported here), never from the values:

1. Every node has a *lineage*: the reader or source it comes from along first inputs, and the
   transformations on the way. A transformation is an operator that moves pixels or
   coordinates: those of ``augkit.operators.geometric`` (flip, rotate, resize, crops, warps,
   paste...), crop_mirror_normalize, the cropping decoders, the box and coordinate operators
   (bb_flip, coord_flip, bbox_rotate, coord_transform, bbox_paste, random_bbox_crop), and a
   Python operator that takes a target or returns several outputs (a function that moves
   boxes takes them and returns them). Colour operators, casts, decoders and a Python
   operator of one image are no transformation: their output keeps its input's targets.
2. A transformation is known by the per-sample values it uses (its argument inputs and its
   inputs after the first: ``fn.flip(images, horizontal=coin)`` and ``fn.bb_flip(boxes,
   horizontal=coin)`` are one transformation, as ``fn.slice(images, anchor, shape)`` is with
   the ``random_bbox_crop`` that drew them), else by its call: the input sets of one call
   (``fn.rotate([images, boxes], angle=...)``) share a ``seed_group``.
3. A target belongs to the image when both lineages are equal; for a mask and for relative
   coordinates, a resize without a region of interest does not count (it leaves fractions of
   the image size right), for absolute coordinates it does. So readers.coco's boxes belong to
   its decoded images, the rotated boxes to the rotated images, and the reader's boxes not to
   the images rotated without them.
4. Of several targets of one kind, the nearest: an output of the image's own operator, then of
   the same call, then of the operators it comes from (nearest first), then the rest (boxes a
   Python function computed from the image).
5. Labels, which geometry does not move, also come from beside the chosen boxes, where those
   come from (readers.coco's labels for the boxes fn.bb_flip flipped); they are drawn on the
   boxes only when every sample has one per box.
6. Where the graph cannot link them (the targets come from another source or reader than the
   image: two external sources), a node that is one of the pipeline's outputs gets the
   pipeline's outputs of the kinds still missing.

A checkbox per overlay kind present (boxes, masks, keypoints, polygons) turns it on and off;
that redraws the batch on screen and runs nothing.

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

import contextlib
import dataclasses
import functools
import html
import inspect
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
from ipyevents import Event
from traitlets import TraitError

from augkit import grid, overlays, viz
from augkit.errors import ArgumentError, AugkitError, GraphError, suggest
from augkit.overlay_links import overlay_nodes
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets import live
from augkit.widgets.controls import (
    ArgumentControls,
    FunctionControls,
    argument_controls_for,
    controls_for,
    effective_keywords,
)
from augkit.widgets.zoom import Zoom


class Viewer:
    """Look at a pipeline's batches, and change its Python functions while looking.

    The grid shows one node of the last batch: any output, or any intermediate node (the
    picker lists them all). Tiles are titled with the sample's source file and its label (from
    the pipeline's first output of kind ``labels``, when it has one, with its class name). The
    boxes, masks, keypoints and polygons that belong to an image node (see the module
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
        if image_format not in ("jpeg", "png"):
            raise ArgumentError(
                f"Viewer: image_format must be 'jpeg' or 'png', got {image_format!r}"
            )
        if not isinstance(jpeg_quality, int) or not 1 <= jpeg_quality <= 100:
            raise ArgumentError(
                f"Viewer: jpeg_quality must be an int in 1..100, got {jpeg_quality!r}"
            )
        if columns < 1 or max_samples < 1 or tile < 8:
            raise ArgumentError(
                f"Viewer: columns and max_samples must be >= 1 and tile >= 8, got "
                f"columns={columns}, max_samples={max_samples}, tile={tile}"
            )
        self.pipe = pipe
        self.columns = columns
        self.max_samples = max_samples
        self.tile = tile
        self._image_format = image_format
        self.jpeg_quality = jpeg_quality
        self._params = {k: dict(v) for k, v in (params or {}).items()}
        self.batch: TensorList | None = None
        self.last_error: BaseException | None = None
        self._outputs: list[str] = []  # the pipeline's outputs by node name
        self._has_batch = False
        self._picking = False  # the picker's options are being replaced: do not render
        self._targets: dict[str, dict[str, str]] = {}  # node name -> its overlay nodes
        self._class_names: dict[int, str] | None = None
        self._fitted_batch: TensorList | None = None  # the batch whose tiles are fitted
        self._fitted: dict[int, Any] = {}  # tile position -> the photo fitted to it
        self.overlays: dict[str, str] = {}
        self.sweep_buttons: dict[tuple[str, str], widgets.Button] = {}
        self._previous: dict[str, Callable[..., Any]] = {}  # operator -> its replaced function
        self.live = True  # follow functions redefined in the notebook (augkit.widgets.live)
        self.pinned: list[str] | None = None  # the pinned samples' names (pin(), pick())
        self.selected: int | None = None  # the tile shown in the zoom
        self._tiles: list[_Tile] = []  # what the grid on screen shows, tile by tile
        self._tile_columns = columns
        self._tile_band = 0
        self._pinning = False  # the pin button is being set from code: do not act

        self.next_button = widgets.Button(
            description="Next batch", icon="forward", tooltip="pipe.run(): the next batch"
        )
        self.rerun_button = widgets.Button(
            description="Rerun",
            icon="refresh",
            tooltip="pipe.rerun(): the same samples again, new random draws",
        )
        self.reset_button = widgets.Button(
            description="Reset",
            icon="fast-backward",
            tooltip="pipe.reset(), pipe.run(): the first batch of the next epoch",
        )
        self.node_picker = widgets.Dropdown(description="show", options=[])
        self.compare_picker = widgets.Dropdown(
            description="compare",
            options=[("none", "")],  # "" (not None, which a Dropdown shows as no choice at all)
            value="",
            tooltip="another node beside the one shown, tile by tile",
        )
        self.difference_toggle = widgets.Checkbox(
            value=False, description="|A - B|", indent=False, layout=widgets.Layout(width="auto")
        )
        self.pin_button = widgets.ToggleButton(
            value=False,
            description="Pin",
            icon="thumb-tack",
            tooltip="keep these samples (by file): Rerun and Reset keep them, Next batch moves on",
        )
        self.pick_box = widgets.Text(
            value="",
            placeholder="file names or labels, comma-separated; Enter",
            description="pick",
            continuous_update=False,
        )
        self.zoom = Zoom()
        self.zoom.root.add_class("augkit-zoom")
        self.summary = widgets.HTML()
        self.overlay_toggles = {
            name: widgets.Checkbox(value=True, description=name, indent=False)
            for name in overlays.OVERLAY_KINDS
        }
        for toggle in self.overlay_toggles.values():
            toggle.layout.width = "auto"
            toggle.observe(self._on_toggle, names="value")
        self._toggles_box = widgets.HBox()
        self._toggles_box.layout.display = "none"
        self.error = widgets.HTML()
        self.image = widgets.Image(format=image_format)
        self.image.add_class("augkit-grid")  # for a page's scripts and tests (no layout)
        self.values = widgets.HTML()
        self.code = widgets.HTML()
        self.timings = widgets.HTML()
        self._controls_box = widgets.VBox()
        self._code_box = widgets.Accordion(
            children=[self.code], titles=("copy code",), selected_index=0
        )
        self._timings_box = widgets.Accordion(children=[self.timings], titles=("timings",))
        # Filled while open: a hidden table updated on every slider move still costs the page.
        self._timings_box.observe(lambda _: self._act(self._show_timings), names="selected_index")
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

        if getattr(pipe, "_debug", False):
            # A debug pipeline keeps no batch per node (pipe.nodes() stays empty) and cannot
            # rerun a batch: there would be nothing to pick, rerun or recompute.
            raise ArgumentError(
                "Viewer needs a normal pipeline: build it without debug=True (the same "
                "definition gives the same batches)"
            )
        pipe.build()
        self._check_params()
        self._controls: dict[str, FunctionControls] = {}
        self._arg_controls: dict[str, ArgumentControls] = {}
        for node in self._python_nodes():
            function = node.args["function"]
            controls = controls_for(
                node.name,
                node.schema.name,
                function,
                len(node.inputs),
                self._params_for(node.name, function),
            )
            self._adopt(controls)
            if controls.values() != effective_keywords(controls):
                # A control could not start at the function's default (none, or out of its
                # range): the function runs with what the control shows.
                self._set_function(node.name)
        for node in self._builtin_nodes():
            given = {k: v for k, v in node.args.items() if k in node.given}
            arguments = argument_controls_for(
                node.name, node.schema, given, node.arg_nodes, self._builtin_params(node)
            )
            if arguments.widgets:
                self._arg_controls[node.name] = arguments
                for widget in arguments.widgets.values():
                    widget.observe(functools.partial(self._on_argument, node.name), names="value")
        self._show_controls()

        self.next_button.on_click(lambda _: self._act(self._next))
        self.rerun_button.on_click(lambda _: self._act(self._rerun))
        self.reset_button.on_click(lambda _: self._act(self._reset))
        self.node_picker.observe(self._on_pick, names="value")
        self.compare_picker.observe(self._on_pick, names="value")
        self.difference_toggle.observe(self._on_pick, names="value")
        self.pin_button.observe(self._on_pin, names="value")
        self.pick_box.observe(self._on_pick_box, names="value")
        self._grid_events = Event(source=self.image, watched_events=["click"])
        self._grid_events.on_dom_event(self._on_grid_event)
        live.watch(self)
        self._wanted = output  # what the first picture shows, once a batch is there
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
    def sliders(self) -> dict[str, dict[str, widgets.ValueWidget]]:
        """Operator name -> {parameter: control}, for the Python operators that have any, then
        the built-in operators' argument controls."""
        found = {op: dict(c.widgets) for op, c in self._controls.items() if c.widgets}
        found.update({op: dict(c.widgets) for op, c in self._arg_controls.items()})
        return found

    @property
    def image_format(self) -> str:
        """``"jpeg"`` or ``"png"``: how the grid travels (the next picture drawn uses it)."""
        return self._image_format

    @image_format.setter
    def image_format(self, value: str) -> None:
        if value not in ("jpeg", "png"):
            raise ArgumentError(f"Viewer: image_format must be 'jpeg' or 'png', got {value!r}")
        self._image_format = value
        self.image.format = value

    def snapshot(self) -> Any:
        """The picture on screen as an ``IPython.display.Image`` (JPEG or PNG, as it
        travels): the last expression of a cell shows it, and a saved notebook keeps it where
        the live widget shows only text (GitHub)."""
        from IPython.display import Image

        return Image(data=bytes(self.image.value), format=self.image_format)

    @property
    def widget(self) -> widgets.VBox:
        """The ipywidgets widget that holds the whole viewer, to lay it out among other
        widgets: ``HBox([viewer.widget, notes])``, a Voila dashboard, an ``AppLayout``. (The
        viewer itself displays as this widget when it is a cell's last expression.)"""
        return self.root

    @property
    def code_text(self) -> str:
        """The text of the copy-code box: one operator call per line (a built-in operator's
        once a control has moved from the value the definition gave)."""
        lines = [c.code() for c in self._controls.values() if c.widgets]
        lines += [c.code() for c in self._arg_controls.values() if c.changed()]
        return "\n".join(lines)

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

    def update(self, **functions: Callable[..., Any]) -> None:
        """Give Python operators new functions and recompute the same batch with them.

        Each keyword is an operator's name, or the name of the function an operator uses now
        (every operator using it gets the new one): ``viewer.update(brighten=brighten)`` after
        redefining ``brighten`` in a cell. Controls keep their values where the new function
        has the same parameter; added parameters get new controls.

        Raises:
            ArgumentError: a keyword names no Python operator and no function of one.
        """
        targets: dict[str, Callable[..., Any]] = {}
        for key, function in functions.items():
            if not callable(function):
                raise ArgumentError(f"update({key}=...): expected a function, got {function!r}")
            hits = [
                c.operator for c in self._controls.values() if key in (c.operator, c.function_name)
            ]
            if not hits:
                known = [n for c in self._controls.values() for n in (c.function_name, c.operator)]
                raise ArgumentError(
                    f"update(): no Python operator named {key!r} and none using a function "
                    f"named {key!r} (have: {', '.join(known) or 'none'}){suggest(key, known)}"
                )
            targets.update(dict.fromkeys(hits, function))
        retired: list[widgets.Widget] = []
        for operator, function in targets.items():
            # The version replaced, with its controls' values: the compare picker offers it.
            self._previous[operator] = self._controls[operator].bind()
            retired += self._controls[operator].widgets.values()
            self._replace(self._controls[operator], function)
        self._show_controls()
        _close(*retired)
        self._act(lambda: self._apply(list(targets)))

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
                rows += [shown._samples[i] for i in range(len(shown))]
                titles += [f"{param}={value!r} · {src}" for src in shown._source_info]
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
                [d[kind]._samples[i] for d in drawn_rows for i in range(len(d[kind]))],
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
            second = self._under(operator, function, a, count)
            labels = (f"A: {a}", f"B: {_function_name(function)}")
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

    def pin(self, on: bool = True) -> None:
        """Keep the samples on screen (by file) while tweaking: Rerun draws anew on them,
        Reset starts the next epoch and shows them again, controls and edits recompute them;
        only Next batch moves on (and unpins). ``pin(False)`` lets go.

        Raises:
            GraphError: a pipeline without a reader (an external source's samples have no
                names to keep).
        """
        if not on:
            self.pinned = None
        else:
            names = self._reader_sources()
            if not names:
                raise GraphError(
                    "pin(): this pipeline's samples come from no reader, so there are no file "
                    "names to keep them by"
                )
            self.pinned = names
        self._pinning = True
        try:
            self.pin_button.value = self.pinned is not None
        finally:
            self._pinning = False
        self._show_pinned()

    def pick(
        self,
        names: Sequence[str] | str | None = None,
        *,
        labels: Sequence[int | str] | int | str | None = None,
    ) -> None:
        """Show chosen samples, by file name (``"grace_hopper.jpg"``, or the reader's
        ``"people/grace_hopper.jpg"``) or by label (numbers or class names: the first
        batch's worth of them), and pin them (``pin``). See ``Pipeline.pick``.

        Raises:
            ArgumentError: a name or label no sample has (nothing on screen changes).
        """
        self.pipe.pick(names, labels=labels)
        self._ran(())
        self.pin(True)
        self._refresh()

    def select(self, index: int) -> None:
        """Show tile ``index`` of the grid on screen in the zoom (what a click on it does):
        the sample at full resolution, the values under the cursor, a histogram per channel,
        and what the random operators drew for it (``Pipeline.draws``).

        Raises:
            ArgumentError: no such tile.
        """
        if not 0 <= index < len(self._tiles):
            raise ArgumentError(
                f"select(): no tile {index} (the grid shows {len(self._tiles)} tiles)"
            )
        tile = self._tiles[index]
        draws = self._draws_of(tile)
        layout = tile.batch.layout() or ""
        sample = np.asarray(tile.batch.at(tile.index))
        self.zoom.show(sample, layout=layout, kind=tile.batch.kind, title=tile.title, draws=draws)
        self.selected = index

    def draws(self, index: int) -> dict[str, Any]:
        """What the random operators drew for tile ``index`` of the grid on screen (one
        record of ``Pipeline.draws``: ``{"Rotate_4.angle": 12.4, ...}``)."""
        if not 0 <= index < len(self._tiles):
            raise ArgumentError(f"draws(): no tile {index} (the grid shows {len(self._tiles)})")
        return self._draws_of(self._tiles[index])

    def _draws_of(self, tile: _Tile) -> dict[str, Any]:
        if tile.node is None:  # a difference image: no node, no draws of its own
            return {}
        records = self.pipe.draws(tile.node)
        return records[tile.sample] if tile.sample < len(records) else {}

    def _set_for_sweep(self, operator: str, param: str, value: Any) -> None:
        if operator in self._controls:
            controls = self._controls[operator]
            keywords = {**controls.keywords(), param: value}
            self.pipe.set_function(
                operator, functools.partial(controls.function, *controls.bound, **keywords)
            )
        else:
            self.pipe.set_arguments(operator, **{param: value})

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
            lines = [f"Viewer: {label}: {_summary_text(self.batch, shown)}"]
        lines += self.code_text.splitlines()
        if self.last_error is not None:
            lines.append(f"error: {type(self.last_error).__name__}: {self.last_error}")
        lines.append("(a live widget: its buttons and sliders work in a running Jupyter kernel)")
        return "\n".join(lines)

    # --- actions ----------------------------------------------------------------------------------
    def _act(self, action: Callable[[], None]) -> None:
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

    def _on_pin(self, change: Mapping[str, Any]) -> None:
        if not self._pinning:
            self._act(lambda: self.pin(bool(change["new"])))

    def _on_pick_box(self, change: Mapping[str, Any]) -> None:
        text = str(change["new"]).strip()
        if not text:
            return
        items = [item.strip() for item in text.split(",") if item.strip()]
        # Numbers and class names are labels; anything else is a file name.
        classes = set(self._names().values())
        as_labels = all(item.lstrip("-").isdigit() or item in classes for item in items)
        if as_labels:
            labels = [int(i) if i.lstrip("-").isdigit() else i for i in items]
            self._act(lambda: self.pick(labels=labels))
        else:
            self._act(lambda: self.pick(items))

    def _on_grid_event(self, event: Mapping[str, Any]) -> None:
        """A click on the grid (ipyevents: ``dataX``/``dataY`` in the picture's own pixels):
        the tile under it goes to the zoom."""
        x, y = event.get("dataX"), event.get("dataY")
        if event.get("event", event.get("type")) != "click" or x is None or y is None:
            return
        index = grid.tile_at(x, y, len(self._tiles), self._tile_columns, self.tile, self._tile_band)
        if index is not None:
            self._act(lambda: self.select(index))

    def _follow(self, namespace: Mapping[str, Any]) -> None:
        """After a cell (``augkit.widgets.live``): the functions redefined there, in."""
        found: dict[str, Callable[..., Any]] = {}
        for controls in self._controls.values():
            name = controls.function_name
            new = namespace.get(name)
            if inspect.isfunction(new) and new.__name__ == name and new is not controls.function:
                found[controls.operator] = new
        if found:
            self.update(**found)

    def _on_control(self, operator: str, change: Mapping[str, Any]) -> None:
        self._act(lambda: self._apply([operator]))

    def _on_argument(self, operator: str, change: Mapping[str, Any]) -> None:
        self._act(lambda: self._apply_arguments(operator))

    def _apply_arguments(self, operator: str) -> None:
        """Give the built-in operator its controls' values and recompute from it."""
        self.pipe.set_arguments(operator, **self._arg_controls[operator].values())
        self._show_code()
        self._ran(self.pipe.rerun([operator]) if self._has_batch else self.pipe.run())
        self._refresh()

    def _on_pick(self, change: Mapping[str, Any]) -> None:
        if not self._picking:
            self._act(self._render)

    def _on_toggle(self, change: Mapping[str, Any]) -> None:
        # The batches on screen are drawn again, with or without the overlay: nothing runs.
        if self._has_batch:
            self._act(self._render)

    def _apply(self, operators: list[str]) -> None:
        """Bind the controls' values into the operators' functions and recompute from them."""
        for operator in operators:
            self._set_function(operator)
        if self._has_batch:
            self._ran(self.pipe.rerun(operators))
        else:  # no batch yet to recompute (the first run failed)
            self._ran(self.pipe.run())
        self._refresh()

    def _set_function(self, operator: str) -> None:
        self.pipe.set_function(operator, self._controls[operator].bind())
        self._show_code()

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

    def _reader_sources(self) -> list[str]:
        """The names of the samples on screen, as the first reader gave them ([] if none)."""
        for op in self.pipe.operators():
            if op.schema.role == "reader" and op.outputs:
                return list(self.pipe.value(op.outputs[0].name).source_info())
        return []

    def _show_pinned(self) -> None:
        if self.batch is not None and self.node_picker.value is not None:
            shown = min(len(self.batch), self.max_samples)
            self.summary.value = (
                _summary(self.node_picker.value, self.batch, shown) + self._pinned_note()
            )

    def _pinned_note(self) -> str:
        if self.pinned is None:
            return ""
        return html.escape(f" · pinned: {len(self.pinned)} samples (Next batch moves on)")

    def _set_tiles(self, tiles: list[_Tile], columns: int, titles: Sequence[str]) -> None:
        """Remember what each tile of the picture on screen shows (for clicks, ``select``)."""
        self._tiles = tiles
        self._tile_columns = columns
        self._tile_band = grid.title_height(self.tile) if any(titles) else 0
        if self.selected is not None and self.zoom.root.layout.display != "none":
            if self.selected < len(tiles):
                self.select(self.selected)  # the zoom follows the tile it shows
            else:
                self.zoom.hide()

    # --- drawing ----------------------------------------------------------------------------------
    def _render(self) -> None:
        name = self.node_picker.value
        if name is None:
            return
        batch = self.pipe.value(name)
        self.batch = batch
        shown = batch[: self.max_samples] if len(batch) > self.max_samples else batch
        other = self.compare_picker.value or None  # "" (or None set from code): no compare
        if other is not None and other.startswith(_PREVIOUS) and grid.looks_like_images(shown):
            # A/B of the last edit: the node now beside the node under the replaced version.
            operator = other[len(_PREVIOUS) :]
            before = self._under(operator, self._previous[operator], name, len(shown))
            self.batch = self.pipe.value(name)  # the same numbers, recomputed
            heads = ["now", "previous"]  # short: a small tile's title holds them
            self._draw_compare(shown, before, heads, self.difference_toggle.value, (name, name))
            self.summary.value = _summary(name, batch, len(shown)) + html.escape(
                f" · compared with {operator}'s previous version"
            )
            return
        if other is not None and grid.looks_like_images(shown):
            # Compare mode (the "compare" picker): the node beside another, kept while the
            # controls move, until the picker is set back to "none".
            second = self.pipe.value(other)[: len(shown)]
            self._draw_compare(
                shown, second, [name, other], self.difference_toggle.value, (name, other)
            )
            self.summary.value = _summary(name, batch, len(shown)) + html.escape(
                f" · compared with {other}"
            )
            return
        if grid.looks_like_images(shown):
            drawn = self._overlay_batches(name, len(shown))
            on_boxes = "labels" in drawn and self.overlays["labels"] == self._labels_name()
            titles = self._titles(shown, per_box=on_boxes, name=name)
            try:
                self.image.value = self._grid_bytes(shown, titles, drawn)
            except AugkitError:
                if not drawn:
                    raise
                # Targets that cannot be drawn: the images without them, and the error shown.
                self.image.value = self._grid_bytes(shown, titles, {})
                self.image.layout.display = None
                self.values.value = ""
                self.summary.value = _summary(name, batch, len(shown))
                raise
            self.image.layout.display = None
            self.values.value = ""
            self._set_tiles(
                [_Tile(shown, i, titles[i], name, i) for i in range(len(shown))],
                self.columns,
                titles,
            )
        else:
            self.overlays = {}
            self._show_toggles()
            self.image.layout.display = "none"
            self.values.value = _values_table(shown, self._titles(shown))
            self._set_tiles([], self.columns, [])
        self.summary.value = _summary(name, batch, len(shown)) + self._pinned_note()

    def _grid_bytes(self, shown: TensorList, titles: list[str], drawn: dict[str, Any]) -> bytes:
        """The grid of ``shown`` with the overlays ``drawn`` (``viz.GridOptions``'
        overlays), each photo fitted to its tile once per batch: a toggle or another node's
        overlays redraw the boxes, not the photos."""
        if self._fitted_batch is not self.batch:  # the node's whole batch: a new one per run
            self._fitted_batch, self._fitted = self.batch, {}

        def fit(pixels: np.ndarray, tile: int, position: int) -> Any:
            if position not in self._fitted:
                self._fitted[position] = grid.fit(pixels, tile)
            return self._fitted[position]

        options = self._grid_options(drawn, columns=self.columns, titles=titles)
        return self._encode(viz.render([shown], options, fit))

    def _grid_options(self, drawn: Mapping[str, Any], **options: Any) -> viz.GridOptions:
        """``viz.render``'s options: the overlay batches ``drawn`` (their labels too), this
        pipeline's class names, every sample given, then ``options``."""
        return viz.GridOptions(
            labels=drawn.get("labels"),
            boxes=drawn.get("boxes"),
            masks=drawn.get("masks"),
            keypoints=drawn.get("keypoints"),
            polygons=drawn.get("polygons"),
            vertices=drawn.get("vertices"),
            class_names=self._names(),
            max_samples=None,
            tile=self.tile,
            **options,
        )

    def _encode(self, picture: Any) -> bytes:
        """The grid's bytes as the ``Image`` widget takes them (``image_format``)."""
        if self.image_format == "png":
            return grid.to_png(picture)
        return grid.to_jpeg(picture, self.jpeg_quality)

    def _overlay_batches(self, name: str, count: int) -> dict[str, Any]:
        """The overlays of node ``name`` that are toggled on (the toggles show the kinds it
        has), by ``viz.GridOptions`` field, "labels" included where there is one per box."""
        if name not in self._targets:
            self._targets[name] = overlay_nodes(self.pipe, name)
        self.overlays = dict(self._targets[name])
        self._show_toggles()
        values = {kind: self.pipe.value(node) for kind, node in self.overlays.items()}
        values = {kind: batch for kind, batch in values.items() if len(batch) >= count}
        on = {kind for kind, toggle in self.overlay_toggles.items() if toggle.value}
        drawn: dict[str, Any] = {}
        if "boxes" in values and "boxes" in on:
            drawn["boxes"] = values["boxes"][:count]
            labels = values.get("labels")
            if labels is not None and all(
                labels.at(i).size == values["boxes"].at(i).size // 4 for i in range(count)
            ):
                drawn["labels"] = labels[:count]
        if "mask" in values and "masks" in on:
            drawn["masks"] = values["mask"][:count]
        if "keypoints" in values and "keypoints" in on:
            drawn["keypoints"] = values["keypoints"][:count]
        if "polygons" in values and "vertices" in values and "polygons" in on:
            drawn["polygons"] = values["polygons"][:count]
            drawn["vertices"] = values["vertices"][:count]
        return drawn

    def _show_toggles(self) -> None:
        """A checkbox per overlay kind the shown node has (none: no row)."""
        present = {"masks" if k == "mask" else k for k in self.overlays}
        toggles = [t for k, t in self.overlay_toggles.items() if k in present]
        if list(self._toggles_box.children) != toggles:
            self._toggles_box.children = toggles
        self._toggles_box.layout.display = None if toggles else "none"

    def _names(self) -> dict[int, str]:
        """The class names the pipeline's readers know (``Pipeline.class_names()``)."""
        if self._class_names is None:
            try:
                names = self.pipe.class_names()
            except (TypeError, ValueError, AttributeError):  # a reader's names that are broken
                names = {}  # title and tag with the numbers rather than lose the picture
            self._class_names = names if isinstance(names, dict) else {}
        return self._class_names

    def _titles(
        self, batch: TensorList, per_box: bool = False, name: str | None = None
    ) -> list[str]:
        """Per tile: its source file, then its label (with the class name where known:
        "people/grace_hopper.jpg · 3 people"); when those labels are drawn on the boxes (one
        per box, ``per_box``), they are not repeated in the title. Then, for node ``name`` of
        a pipeline with conditionals, the branches the sample took (``choices``):
        "do_rotate=True", or the operations a policy chose ("rotate, posterize")."""
        taken = _taken(self.pipe, name)
        labels = self._labels()
        sources = batch.source_info()
        if not any(sources):
            sources = self._sources()
        names = self._names()
        titles = []
        for i in range(len(batch)):
            parts = []
            if i < len(sources) and sources[i]:
                parts.append(sources[i])
            if labels is not None and i < len(labels) and not per_box:
                value = labels.at(i)
                if value.size == 1:
                    text = grid.label_text(value)
                    name = overlays.class_name(value.ravel()[0], names)
                    parts.append(text if name == text else f"{text} {name}")
                else:
                    parts.append(grid.label_text(value))
            if i < len(taken) and taken[i]:
                parts.append(taken[i])
            titles.append(" · ".join(parts))
        return titles

    def _labels(self) -> TensorList | None:
        """The pipeline's first output of kind labels (the reader's second output), if any."""
        name = self._labels_name()
        return None if name is None else self.pipe.value(name)

    def _labels_name(self) -> str | None:
        for name in self._outputs:
            if name and self.pipe.value(name).kind.name == "labels":
                return name
        return None

    def _sources(self) -> list[str]:
        """The source files of the batch, from the first node that has them (a node computed
        from no input, such as a random operator's, has none of its own): the readers' first
        (an intermediate node a chain let go would be computed again to be asked)."""
        readers = [
            d.name for n in self.pipe.operators() if n.schema.makes_batches for d in n.outputs
        ]
        for name in readers or self.pipe.nodes():
            sources = self.pipe.value(name).source_info()
            if any(sources):
                return sources
        return []

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

    def _show_controls(self) -> None:
        boxes = []
        for controls in self._controls.values():
            if not controls.widgets:
                continue
            header = f"<b>{html.escape(controls.function_name)}</b>"
            if controls.operator != controls.function_name:
                header += f" <span style='color:#777'>({html.escape(controls.operator)})</span>"
            rows = [self._with_sweep(controls.operator, p, w) for p, w in controls.widgets.items()]
            boxes.append(widgets.VBox([widgets.HTML(header), *rows]))
        for arguments in self._arg_controls.values():
            header = (
                f"<b>{html.escape(arguments.schema)}</b> "
                f"<span style='color:#777'>({html.escape(arguments.operator)})</span>"
            )
            rows = [
                self._with_sweep(arguments.operator, p, w) for p, w in arguments.widgets.items()
            ]
            boxes.append(widgets.VBox([widgets.HTML(header), *rows]))
        retired = self._controls_box.children
        self._controls_box.children = boxes
        for box in retired:  # the box, its header and rows; controls are closed by update()
            _close(
                box, box.children[0], *(r for r in box.children[1:] if isinstance(r, widgets.HBox))
            )
        self._code_box.layout.display = None if boxes else "none"
        self._show_code()

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

    def _show_code(self) -> None:
        self.code.value = (
            "<pre style='font-size:12px;user-select:text'>"
            f"import functools\n{html.escape(self.code_text)}</pre>"
        )

    # --- controls ---------------------------------------------------------------------------------
    def _python_nodes(self) -> list[Any]:
        # The Python operators, whose function the viewer can replace (Pipeline.set_function).
        return [n for n in self.pipe.operators() if n.schema.role == "python"]

    def _builtin_nodes(self) -> list[Any]:
        # The built-in operators whose constant arguments can change (Pipeline.set_arguments);
        # of one call with input sets (``fn.rotate([images, boxes], angle=10.0)``), only the
        # first set's node: its controls change the whole call (set_arguments does).
        seen: set[int] = set()
        found = []
        for node in self.pipe.operators():
            if node.schema.role in ("operator", "random") and node.seed_group not in seen:
                seen.add(node.seed_group)
                found.append(node)
        return found

    def _builtin_params(self, node: Any) -> dict[str, Any]:
        """The ``params=`` entries for a built-in operator: by schema name, then by operator
        name (which wins)."""
        return {**self._params.get(node.schema.name, {}), **self._params.get(node.name, {})}

    def _params_for(self, operator: str, function: Callable[..., Any]) -> dict[str, Any]:
        """The ``params=`` entries for the operator: by function name, then by operator name
        (which wins)."""
        name = _function_name(function)
        return {**self._params.get(name, {}), **self._params.get(operator, {})}

    def _check_params(self) -> None:
        known = []
        for node in self._python_nodes():
            known += [node.name, _function_name(node.args["function"])]
        for node in self._builtin_nodes():
            known += [node.name, node.schema.name]
        for key in self._params:
            if key not in known:
                raise ArgumentError(
                    f"Viewer: params has {key!r}, which is neither an operator of the pipeline "
                    f"nor the name of a Python operator's function or of a built-in operator "
                    f"(have: {', '.join(dict.fromkeys(known)) or 'none'}){suggest(key, known)}"
                )

    def _adopt(self, controls: FunctionControls) -> None:
        self._controls[controls.operator] = controls
        for widget in controls.widgets.values():
            widget.observe(functools.partial(self._on_control, controls.operator), names="value")

    def _replace(self, old: FunctionControls, function: Callable[..., Any]) -> None:
        """Controls for ``function`` in place of ``old``'s: parameters that both have keep
        their values; what ``old``'s partial bound is kept for a plain function."""
        if not isinstance(function, functools.partial):
            accepted = _parameters(function)
            keep = {k: v for k, v in old.fixed.items() if k in accepted and k not in old.widgets}
            if keep or old.bound:
                function = functools.partial(function, *old.bound, **keep)
        accepted = _parameters(function)
        params = {
            k: v for k, v in self._params_for(old.operator, function).items() if k in accepted
        }
        node = next(n for n in self._python_nodes() if n.name == old.operator)
        new = controls_for(old.operator, old.schema, function, len(node.inputs), params)
        for name, widget in new.widgets.items():
            if name in old.widgets:
                with contextlib.suppress(TraitError):  # out of the new range: keep the new one
                    widget.value = old.widgets[name].value
        self._adopt(new)


_PREVIOUS = "\0previous:"  # the compare picker's value for an operator's previous version


@dataclasses.dataclass
class _Tile:
    """One tile of the picture on screen: sample ``index`` of ``batch``, titled ``title``,
    sample ``sample`` of node ``node``'s batch (None: a difference, of no node)."""

    batch: TensorList
    index: int
    title: str
    node: str | None
    sample: int


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
    return TensorList(out, first.layout(), first._source_info)


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


def _close(*items: widgets.Widget) -> None:
    """Close widgets that are shown no more, with their own layout and style: an open widget
    stays in the kernel, and in the widget state a notebook saves, until it is closed."""
    for item in items:
        for part in (getattr(item, "layout", None), getattr(item, "style", None), item):
            if isinstance(part, widgets.Widget):
                part.close()


def _function_name(function: Callable[..., Any]) -> str:
    while isinstance(function, functools.partial):
        function = function.func
    return getattr(function, "__name__", "")


def _parameters(function: Callable[..., Any]) -> set[str]:
    """The names of the parameters of ``function`` (partials unwrapped)."""
    while isinstance(function, functools.partial):
        function = function.func
    try:
        return set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return set()


def _summary(name: str, batch: TensorList, shown: int) -> str:
    return f"<b>{html.escape(name)}</b>: {html.escape(_summary_text(batch, shown))}"


def _summary_text(batch: TensorList, shown: int) -> str:
    shapes = batch.shape()
    if not shapes:
        shape = "no samples"
    elif all(s == shapes[0] for s in shapes):
        shape = f"shape {shapes[0]}"
    else:
        shape = f"{len(set(shapes))} shapes: " + ", ".join(map(str, shapes[:3]))
        shape += ", …" if len(shapes) > 3 else ""
    text = (
        f"{len(batch)} samples, {batch.dtype.name}, layout {batch.layout() or 'none'}, "
        f"kind {batch.kind}, {shape}"
    )
    if shown < len(batch):
        text += f"; the first {shown} shown"
    return text


# The first bytes of the file formats a reader may hand over, for the summary of encoded samples.
_MAGIC = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF8", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def _table_caption(batch: TensorList) -> str:
    """Why the batch is shown as values: its kind, and what it holds."""
    kind = batch.kind
    name = kind.name
    if name == "labels":
        why = "class numbers (image nodes' tiles are titled with them)"
    elif name == "encoded":
        why = "each sample is a file's bytes; the decoder's node shows the images"
    elif name in grid.NOT_DRAWN_KINDS:
        why = "coordinates, not pixels"
    elif kind.is_generic and batch.dtype.name == "BOOL":
        why = "bool values are not drawn (a Python function's kind='mask' would draw them)"
    else:
        why = "not of an image's shape (HWC, CHW or HW, with 1, 3 or 4 channels)"
    return f"kind {kind}: {why}"


def _encoded_text(array: np.ndarray) -> str:
    """``"JPEG, 41213 bytes: ff d8 ff e0 00 10 …"``: what a file's bytes are, in short."""
    data = array.tobytes() if array.dtype == np.uint8 and array.ndim == 1 else b""
    if not data:
        return f"{array.size} values of {array.dtype}"
    name = next((n for magic, n in _MAGIC if data.startswith(magic)), None)
    if name is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        name = "WebP"
    head = " ".join(f"{b:02x}" for b in data[:6]) + (" …" if len(data) > 6 else "")
    return f"{name or 'unknown format'}, {len(data)} bytes: {head}"


def _taken(pipe: Any, name: str | None) -> list[str]:
    """Per sample of node ``name``, the branches it took, as a tile's title shows them: an
    ``if`` as "condition=True", a choice among named branches (a policy's operations) by the
    branch's name (an empty name, and auto_augment's "skip", are left out)."""
    if name is None:
        return []
    try:
        records = pipe.choices(name)
    except GraphError:  # debug mode, or nothing run yet: no branches to tell
        return []
    texts = []
    for record in records:
        parts = []
        for label, case in record.items():
            if isinstance(case, bool):
                parts.append(f"{label.removeprefix('if ')}={case}")
            elif case and case != "skip":  # auto_augment's stage that ran nothing
                parts.append(str(case))
        texts.append(", ".join(parts))
    return texts


def _values_table(batch: TensorList, titles: list[str]) -> str:
    """An HTML table of a batch that is not drawn: per sample, its values (or a summary of
    them when they are many; for encoded bytes, their format and size), under a caption that
    says the batch's kind."""
    rows = []
    encoded = batch.kind.name == "encoded"
    for i, sample in enumerate(batch):
        array = np.asarray(sample)
        if array.size == 0:
            shown = "(empty)"
        elif encoded:
            shown = _encoded_text(array)
        elif array.size <= 16:
            shown = np.array2string(array, precision=4, separator=", ")
        else:
            shown = f"min {array.min():.4g}, max {array.max():.4g}, mean {array.mean():.4g}"
        rows.append(
            f"<tr><td>{i}</td><td>{html.escape(titles[i])}</td><td>{array.shape}</td>"
            f"<td><code>{html.escape(shown)}</code></td></tr>"
        )
    caption = html.escape(_table_caption(batch))
    return (
        f"<table style='font-size:12px'><caption style='text-align:left'>{caption}</caption>"
        "<tr><th>#</th><th>sample</th><th>shape</th>"
        f"<th>values</th></tr>{''.join(rows)}</table>"
    )
