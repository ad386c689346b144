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
import functools
import html
import inspect
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from traitlets import TraitError

from augkit import grid, viz
from augkit.errors import ArgumentError, GraphError, suggest
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets.controls import (
    ArgumentControls,
    FunctionControls,
    argument_controls_for,
    controls_for,
    effective_keywords,
)


class Viewer:
    """Look at a pipeline's batches, and change its Python functions while looking.

    The grid shows one node of the last batch: any output, or any intermediate node (the
    picker lists them all). Tiles are titled with the sample's label (from the pipeline's first
    output of kind ``labels``, when it has one) and its source file. A node whose kind is not
    pixels (labels, boxes, encoded bytes...) is shown as a table of its values.

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

    Attributes:
        next_button, rerun_button, reset_button: the buttons.
        node_picker: the Dropdown of nodes (its value is the node's name).
        image: the ``ipywidgets.Image`` holding the grid (PNG bytes).
        values: an HTML table of the values, for a node that is not drawn as images (its kind
            is not pixels, or its samples have no image's shape).
        summary: one HTML line: node, batch size, dtype, layout, kind, shapes.
        error: HTML with the last error and its traceback ("" after a success).
        timings: HTML table of the per-operator times (``pipe.profile()``).
        code: HTML with the Python operator calls, current values bound.
        root: the VBox that holds it all (what the notebook displays).
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
    ) -> None:
        if columns < 1 or max_samples < 1 or tile < 8:
            raise ArgumentError(
                f"Viewer: columns and max_samples must be >= 1 and tile >= 8, got "
                f"columns={columns}, max_samples={max_samples}, tile={tile}"
            )
        self.pipe = pipe
        self.columns = columns
        self.max_samples = max_samples
        self.tile = tile
        self._params = {k: dict(v) for k, v in (params or {}).items()}
        self.batch: TensorList | None = None
        self.last_error: BaseException | None = None
        self._outputs: list[str] = []  # the pipeline's outputs by node name
        self._has_batch = False
        self._picking = False  # the picker's options are being replaced: do not render

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
        self.summary = widgets.HTML()
        self.error = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.values = widgets.HTML()
        self.code = widgets.HTML()
        self.timings = widgets.HTML()
        self._controls_box = widgets.VBox()
        self._code_box = widgets.Accordion(
            children=[self.code], titles=("copy code",), selected_index=0
        )
        self._timings_box = widgets.Accordion(children=[self.timings], titles=("timings",))
        self.root = widgets.VBox(
            [
                widgets.HBox(
                    [self.next_button, self.rerun_button, self.reset_button, self.node_picker]
                ),
                self.summary,
                self.error,
                self.image,
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
            retired += self._controls[operator].widgets.values()
            self._replace(self._controls[operator], function)
        self._show_controls()
        _close(*retired)
        self._act(lambda: self._apply(list(targets)))

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
        self._ran(self.pipe.run())
        self._refresh()

    def _rerun(self) -> None:
        self._ran(self.pipe.rerun())
        self._refresh()

    def _reset(self) -> None:
        self.pipe.reset()
        self._ran(self.pipe.run())
        self._refresh()

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
            self._outputs = self.pipe._output_names()

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

    # --- drawing ----------------------------------------------------------------------------------
    def _render(self) -> None:
        name = self.node_picker.value
        if name is None:
            return
        batch = self.pipe.value(name)
        self.batch = batch
        shown = batch[: self.max_samples] if len(batch) > self.max_samples else batch
        titles = self._titles(shown)
        if grid.looks_like_images(shown):
            self.image.value = viz.image_grid_png(
                shown, columns=self.columns, titles=titles, max_samples=None, tile=self.tile
            )
            self.image.layout.display = None
            self.values.value = ""
        else:
            self.image.layout.display = "none"
            self.values.value = _values_table(shown, titles)
        self.summary.value = _summary(name, batch, len(shown))

    def _titles(self, batch: TensorList) -> list[str]:
        labels = self._labels()
        sources = batch.source_info()
        if not any(sources):
            sources = self._sources()
        titles = []
        for i in range(len(batch)):
            parts = []
            if labels is not None and i < len(labels):
                parts.append(grid.label_text(labels.at(i)))
            if i < len(sources) and sources[i]:
                parts.append(sources[i])
            titles.append(" · ".join(parts))
        return titles

    def _labels(self) -> TensorList | None:
        """The pipeline's first output of kind labels (the reader's second output), if any."""
        for name in self._outputs:
            if name and self.pipe.value(name).kind.name == "labels":
                return self.pipe.value(name)
        return None

    def _sources(self) -> list[str]:
        """The source files of the batch, from the first node that has them (a node computed
        from no input, such as a random operator's, has none of its own): the readers' first
        (an intermediate node a chain let go would be computed again to be asked)."""
        readers = [
            d.name for n in self.pipe._operators() if n.schema.makes_batches for d in n.outputs
        ]
        for name in readers or self.pipe.nodes():
            sources = self.pipe.value(name).source_info()
            if any(sources):
                return sources
        return []

    def _show_timings(self) -> None:
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
            boxes.append(widgets.VBox([widgets.HTML(header), *controls.widgets.values()]))
        for arguments in self._arg_controls.values():
            header = (
                f"<b>{html.escape(arguments.schema)}</b> "
                f"<span style='color:#777'>({html.escape(arguments.operator)})</span>"
            )
            boxes.append(widgets.VBox([widgets.HTML(header), *arguments.widgets.values()]))
        retired = self._controls_box.children
        self._controls_box.children = boxes
        for box in retired:  # the box and its header; its controls are closed by update()
            _close(box, box.children[0])
        self._code_box.layout.display = None if boxes else "none"
        self._show_code()

    def _show_code(self) -> None:
        self.code.value = (
            "<pre style='font-size:12px;user-select:text'>"
            f"import functools\n{html.escape(self.code_text)}</pre>"
        )

    # --- controls ---------------------------------------------------------------------------------
    def _python_nodes(self) -> list[Any]:
        # The Python operators, whose function the viewer can replace (Pipeline.set_function).
        return [n for n in self.pipe._operators() if n.schema.role == "python"]

    def _builtin_nodes(self) -> list[Any]:
        # The built-in operators whose constant arguments can change (Pipeline.set_arguments).
        return [n for n in self.pipe._operators() if n.schema.role in ("operator", "random")]

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
