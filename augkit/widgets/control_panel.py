"""The viewer's controls: a control per keyword parameter of each Python operator's function
and per constant number of each built-in operator (``augkit.widgets.controls`` makes them),
what moving one recomputes, new functions (``update()``, live edits) and the copy-code box.

Decisions and traps:

- Moving a control recomputes only that operator and what follows it, on the cached batch
  (``pipe.rerun([operator])``): nothing is read or decoded again, random operators keep their
  draws. Before the first batch there is nothing to rerun: the pipeline runs.
- Of one call with input sets (``fn.rotate([images, boxes], angle=10.0)``) only the first
  set's node gets controls: ``set_arguments`` changes the whole call.
- ``update()`` keeps a control's value where the new function has the same parameter (out of
  the new range: the new default), keeps what a partial bound, and keeps the replaced version
  for the compare picker. Retired widgets are closed: an open widget stays in the kernel, and
  in the widget state a notebook saves, until it is closed.
"""

from __future__ import annotations

import contextlib
import functools
import html
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from traitlets import TraitError

from augkit.errors import ArgumentError, suggest
from augkit.pipeline import Pipeline
from augkit.widgets.controls import (
    ArgumentControls,
    FunctionControls,
    argument_controls_for,
    controls_for,
    effective_keywords,
    function_name,
    parameter_names,
)


class ControlPanel:
    """The controls, what they recompute, ``update()`` and the copy-code box (a part of
    ``augkit.widgets.Viewer``)."""

    # Set by the viewer and its other parts.
    pipe: Pipeline
    _has_batch: bool
    _act: Callable[[Callable[[], object]], None]
    _ran: Callable[[Any], None]
    _refresh: Callable[[], None]
    _with_sweep: Callable[[str, str, widgets.Widget], widgets.Widget]

    def _init_panel(self, params: Mapping[str, Mapping[str, Any]] | None) -> None:
        """The panel's widgets, empty until ``_init_controls``."""
        self._params = {k: dict(v) for k, v in (params or {}).items()}
        self._controls: dict[str, FunctionControls] = {}
        self._arg_controls: dict[str, ArgumentControls] = {}
        self._previous: dict[str, Callable[..., Any]] = {}  # operator -> its replaced function
        self.live = True  # follow functions redefined in the notebook (augkit.widgets.live)
        self.code = widgets.HTML()
        self._controls_box = widgets.VBox()
        self._code_box = widgets.Accordion(
            children=[self.code], titles=("copy code",), selected_index=0
        )

    def _init_controls(self) -> None:
        """A control per parameter and constant argument of the built pipeline's operators."""
        self._check_params()
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

    def _show_code(self) -> None:
        self.code.value = (
            "<pre style='font-size:12px;user-select:text'>"
            f"import functools\n{html.escape(self.code_text)}</pre>"
        )

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
        name = function_name(function)
        return {**self._params.get(name, {}), **self._params.get(operator, {})}

    def _check_params(self) -> None:
        known = []
        for node in self._python_nodes():
            known += [node.name, function_name(node.args["function"])]
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
            accepted = parameter_names(function)
            keep = {k: v for k, v in old.fixed.items() if k in accepted and k not in old.widgets}
            if keep or old.bound:
                function = functools.partial(function, *old.bound, **keep)
        accepted = parameter_names(function)
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
