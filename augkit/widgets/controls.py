"""Controls for a Python operator's function: which keyword parameters become widgets (inferred
as ``ipywidgets.interact`` infers them), the function they bind, and the call to paste back; and
controls for a built-in operator's scalar arguments (``ArgumentControls``, below).

A parameter gets a control when it is not filled by the operator's inputs and the viewer can
tell its range, from (first match wins):

1. the viewer's ``params=`` entry for the operator's name or the function's name:
   ``{"amount": (0, 100, 5)}``; any ``interact`` abbreviation (a ``(min, max[, step])`` tuple, a
   list or dict of choices, a value, a widget), or ``None``: no control for that parameter;
2. an ``Annotated`` hint: ``amount: Annotated[int, (0, 100, 5)]``, ``radius: Annotated[float,
   (0, 1)]`` (the ``Annotated`` type decides int versus float);
3. the default value: int -> IntSlider and float -> FloatSlider around it (``interact``'s rule:
   ``-v`` to ``3v``), bool -> Checkbox, str -> Text.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from ipywidgets import ValueWidget
from ipywidgets.widgets.interaction import interactive

from augkit.errors import ArgumentError

_EMPTY = inspect.Parameter.empty
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass
class FunctionControls:
    """The controls of one Python operator.

    Attributes:
        operator: the operator's name in the graph (``"PythonFunction_3"``).
        schema: its schema name (``"python_function"``...), for the code line.
        function: the user's function (a ``functools.partial`` given to the operator is
            unwrapped: its positional arguments are ``bound``, its keywords ``fixed`` unless a
            control takes them over).
        widgets: parameter name -> widget, in signature order.
    """

    operator: str
    schema: str
    function: Callable[..., Any]
    bound: tuple[Any, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)
    widgets: dict[str, ValueWidget] = field(default_factory=dict)

    @property
    def function_name(self) -> str:
        return getattr(self.function, "__name__", type(self.function).__name__)

    def values(self) -> dict[str, Any]:
        return {name: widget.value for name, widget in self.widgets.items()}

    def keywords(self) -> dict[str, Any]:
        return {**self.fixed, **self.values()}

    def bind(self) -> Callable[..., Any]:
        """The function with the controls' current values, for ``Pipeline.set_function``;
        named as the user's function, so that an error message names it, not ``partial``."""
        bound = functools.partial(self.function, *self.bound, **self.keywords())
        for attribute in ("__module__", "__name__", "__qualname__"):
            with contextlib.suppress(AttributeError):
                setattr(bound, attribute, getattr(self.function, attribute))
        return bound

    def code(self) -> str:
        """The operator call with the current values, to paste back into the notebook."""
        args = [self.function_name, *map(_literal, self.bound)]
        args += [f"{k}={_literal(v)}" for k, v in self.keywords().items()]
        call = f"functools.partial({', '.join(args)})"
        return f"fn.{self.schema}(..., function={call})  # {self.operator}"


def controls_for(
    operator: str,
    schema: str,
    function: Callable[..., Any],
    inputs: int,
    params: Mapping[str, Any] | None = None,
) -> FunctionControls:
    """The controls of the operator ``operator`` whose function is ``function`` (called with
    ``inputs`` positional inputs); ``params``: this operator's entry of the viewer's
    ``params=`` (parameter name -> ``interact`` abbreviation).

    Raises:
        ArgumentError: ``params`` names a parameter the function does not have, or gives
            something no widget can be made of.
    """
    bound: tuple[Any, ...] = ()
    fixed: dict[str, Any] = {}
    while isinstance(function, functools.partial):
        bound = (*function.args, *bound)
        fixed = {**function.keywords, **fixed}
        function = function.func
    controls = FunctionControls(operator, schema, function, bound, fixed)
    params = dict(params or {})
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        signature = None
    parameters = list(signature.parameters.values()) if signature else []
    unknown = set(params) - {p.name for p in parameters}
    if unknown:
        raise ArgumentError(
            f"Viewer params for {operator}: {controls.function_name}() has no parameter "
            f"{', '.join(map(repr, sorted(unknown)))}"
        )
    hints = _hints(function)
    filled = len(bound) + inputs  # positional slots taken by bound arguments and the inputs
    for parameter in parameters:
        if parameter.kind in _POSITIONAL and filled > 0:
            filled -= 1
            continue
        if parameter.kind not in (*_POSITIONAL[1:], inspect.Parameter.KEYWORD_ONLY):
            continue  # *args, **kwargs, positional-only beyond the inputs
        name = parameter.name
        current = fixed.get(name, parameter.default)
        if name in params:
            abbrev = params[name]
        else:
            abbrev = _annotated_range(hints.get(name))
            if abbrev is None:
                abbrev = current
        if abbrev is _EMPTY or abbrev is None:
            continue
        widget = interactive.widget_from_abbrev(abbrev, current)
        if widget is None:
            if name in params:
                raise ArgumentError(
                    f"Viewer params for {operator}: cannot make a control for {name!r} "
                    f"from {abbrev!r}; give (min, max[, step]), a list of choices or a widget"
                )
            continue
        widget.description = name
        widget.style = {"description_width": "initial"}
        if "continuous_update" in widget.trait_names():
            widget.continuous_update = False
        controls.widgets[name] = widget
    return controls


@dataclass
class ArgumentControls:
    """The controls of one built-in operator's constant scalar arguments (``fn.gaussian_blur(x,
    sigma=2.0)``: a slider for ``sigma``); moving one calls ``Pipeline.set_arguments``.

    Which arguments get one: every number (int or float, not bool) given as a constant when
    the operator was called, except the common ones (``seed``, ``device``, ...), with
    ``interact``'s range around the value (``-v`` to ``3v``; 0 to 1 for 0), cut to what the
    argument takes (its converter's bounds: ``sigma`` >= 0); and whatever the viewer's
    ``params=`` entry for the operator (its name, or its schema name such as
    ``"gaussian_blur"``) asks for: ``{"sigma": (0, 8, 0.1)}``, a list of choices, or ``None``
    for no control. Per-sample arguments (``angle=fn.random.uniform(...)``) have no constant
    value, so no control.

    Attributes:
        operator: the operator's name in the graph (``"GaussianBlur_3"``).
        schema: its schema name, for the code line (``"gaussian_blur"``).
        widgets: argument name -> widget.
    """

    operator: str
    schema: str
    widgets: dict[str, ValueWidget] = field(default_factory=dict)
    initial: dict[str, Any] = field(default_factory=dict)

    def values(self) -> dict[str, Any]:
        return {name: widget.value for name, widget in self.widgets.items()}

    def changed(self) -> bool:
        """Whether a control shows another value than the definition gave."""
        return self.values() != self.initial

    def code(self) -> str:
        """The operator call with the current values, to paste back into the notebook."""
        args = ", ".join(f"{k}={_literal(v)}" for k, v in self.values().items())
        return f"fn.{self.schema}(..., {args})  # {self.operator}"


SKIPPED_ARGUMENTS = frozenset({"seed", "device", "name", "preserve", "bytes_per_sample_hint"})


def argument_controls_for(
    operator: str,
    schema: Any,
    given: Mapping[str, Any],
    per_sample: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
) -> ArgumentControls:
    """The controls of the built-in operator ``operator`` (schema ``schema``), called with the
    constant arguments ``given`` and the per-sample ones ``per_sample`` (nodes); ``params``:
    its entry of the viewer's ``params=``.

    Raises:
        ArgumentError: ``params`` names an argument the operator does not have, one given
            per-sample values, or something no widget can be made of.
    """
    controls = ArgumentControls(operator, schema.name)
    params = dict(params or {})
    for name in params:
        if name not in schema.arguments:
            raise ArgumentError(
                f"Viewer params for {operator}: {schema.class_name} has no argument {name!r}"
            )
        if name in per_sample:
            raise ArgumentError(
                f"Viewer params for {operator}: argument {name!r} takes per-sample values "
                f"from {per_sample[name].name}; a control needs a constant argument"
            )
    # A one-element list is a number too (gaussian_blur keeps sigma=2.0 as (2.0,): per axis).
    given = {n: _scalar(v) for n, v in given.items()}
    names = [n for n, v in given.items() if _is_number(v) and n not in SKIPPED_ARGUMENTS]
    names += [n for n in params if n not in names]
    for name in names:
        arg = schema.arguments[name]
        current = given.get(name, _scalar(arg.default))
        abbrev = params.get(name, current)
        if abbrev is None or (name not in params and not _is_number(current)):
            continue
        if name not in params:
            abbrev = _within(_around(current), arg.convert)
        widget = interactive.widget_from_abbrev(abbrev, current if current is not None else _EMPTY)
        if widget is None:
            raise ArgumentError(
                f"Viewer params for {operator}: cannot make a control for {name!r} from "
                f"{abbrev!r}; give (min, max[, step]), a list of choices or a widget"
            )
        widget.description = name
        widget.style = {"description_width": "initial"}
        if "continuous_update" in widget.trait_names():
            widget.continuous_update = False
        controls.widgets[name] = widget
    controls.initial = controls.values()
    return controls


def _scalar(value: Any) -> Any:
    """The number in a one-element list or tuple; anything else as it is."""
    if isinstance(value, (list, tuple)) and len(value) == 1 and _is_number(value[0]):
        return value[0]
    return value


def _is_number(value: Any) -> bool:
    """An int or float argument (not a bool, not an enum such as ``types.RGB``)."""
    return isinstance(value, Real) and not isinstance(value, (bool, enum.Enum))


def _around(value: Real) -> tuple[Any, ...]:
    """``interact``'s range for a number: ``-v`` to ``3v`` (0 to 1 for 0), ints as ints."""
    if isinstance(value, Integral):
        v = int(value)
        return (-v, 3 * v) if v > 0 else (3 * v, -v) if v < 0 else (0, 10)
    f = float(value)
    return (-f, 3 * f) if f > 0 else (3 * f, -f) if f < 0 else (0.0, 1.0)


def _within(span: tuple[Any, ...], convert: Any) -> tuple[Any, ...]:
    """``span`` cut to the bounds the argument's converter declares (``to_float(0.0)``...)."""
    low, high = span
    bound_low, bound_high = getattr(convert, "low", None), getattr(convert, "high", None)
    if bound_low is not None and low < bound_low:
        low = type(low)(bound_low)
    if bound_high is not None and high > bound_high:
        high = type(high)(bound_high)
    if high <= low:
        high = low + (1 if isinstance(low, int) else 1.0)
    return low, high


def effective_keywords(controls: FunctionControls) -> dict[str, Any]:
    """What the function is called with now for each control's parameter (its default or the
    keyword the operator's partial gave), ``_EMPTY`` when it has neither."""
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(controls.function).parameters
    except (TypeError, ValueError):
        parameters = {}
    return {
        name: controls.fixed.get(name, parameters[name].default if name in parameters else _EMPTY)
        for name in controls.widgets
    }


def _unwrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    while isinstance(function, functools.partial):
        function = function.func
    return function


def function_name(function: Callable[..., Any]) -> str:
    """The name of ``function`` (partials unwrapped; "" for a callable with none)."""
    return getattr(_unwrapped(function), "__name__", "")


def parameter_names(function: Callable[..., Any]) -> set[str]:
    """The names of the parameters of ``function`` (partials unwrapped; none when its
    signature cannot be read)."""
    try:
        return set(inspect.signature(_unwrapped(function)).parameters)
    except (TypeError, ValueError):
        return set()


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The function's type hints with ``Annotated`` kept (string annotations resolved where
    they can be; an unresolvable one is ignored)."""
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # a forward reference that does not resolve, a non-function
        return {}


def _annotated_range(hint: Any) -> Any:
    """The ``interact`` abbreviation in ``Annotated[type, abbreviation]``, with the numbers
    made of the annotated type (``Annotated[float, (0, 1)]`` is a FloatSlider), or None."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    base, *metadata = typing.get_args(hint)
    for item in metadata:
        if isinstance(item, tuple) and all(isinstance(x, Real) for x in item):
            if base is float:
                return tuple(float(x) for x in item)
            if base is int and all(float(x).is_integer() for x in item):
                return tuple(int(x) for x in item)
            return item
        if isinstance(item, (list, dict, ValueWidget)):
            return item
    return None


def _literal(value: Any) -> str:
    """``repr`` with the binary noise of slider floats removed (0.30000000000000004 -> 0.3)."""
    if isinstance(value, float):
        return repr(round(value, 10))
    if isinstance(value, Integral) and not isinstance(value, bool):
        return repr(int(value))
    return repr(value)
