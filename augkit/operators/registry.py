"""The one operator registry: each operator is a schema (inputs, outputs, arguments, devices)
plus an implementation class holding its kernels. ``augkit.fn``, ``augkit.ops`` and
``augkit.plugin.pytorch`` are generated from ``REGISTRY``; nothing else lists operators.

Adding an operator:

    register(OperatorSchema(
        name="flip", class_name="Flip", impl=FlipImpl, doc="...",
        args=[Arg("horizontal", "flip left-right", default=1, convert=to_int(0, 1),
                  per_sample=True)],
    ))

Argument values are checked and normalised by their ``convert`` function once, when the
operator is created (or, for per-sample argument inputs, per sample when it runs); a converter
raises ``ValueError``/``TypeError`` with a plain message, and the registry turns that into an
``ArgumentError`` that names the operator and the argument.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError, suggest

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()


@dataclass(frozen=True)
class Arg:
    """One argument of an operator.

    Attributes:
        name: the keyword, as DALI spells it.
        doc: one line for the generated docstring.
        default: the value when the argument is not given (``REQUIRED`` when it must be).
        convert: checks a value and returns it normalised (``None``: taken as it is).
        per_sample: the argument may be a DataNode (one value per sample, DALI's "argument
            input"), e.g. ``angle=fn.random.uniform(range=(-30, 30))``.
    """

    name: str
    doc: str
    default: Any = None
    convert: Callable[[Any], Any] | None = None
    per_sample: bool = False

    def check(self, value: Any, operator: str) -> Any:
        if self.convert is None or value is None:
            return value
        try:
            return self.convert(value)
        except (TypeError, ValueError) as exc:
            raise ArgumentError(f"{operator}: argument '{self.name}': {exc}") from None


# Arguments every operator takes, as in DALI.
COMMON_ARGS = (
    Arg("device", 'where the operator runs: "cpu" or "gpu" ("mixed" for decoders)', "cpu"),
    Arg(
        "seed",
        "seed of the operator's random streams (-1: derived from the pipeline's seed)",
        -1,
        lambda v: _int(v, -1),
    ),
    Arg(
        "name",
        "the operator's name in the graph, for errors, epoch_size() and the viewer",
        None,
        lambda v: _str(v),
    ),
    Arg(
        "preserve",
        "keep the operator in the graph even when no output uses it",
        False,
        lambda v: _bool(v),
    ),
    Arg("bytes_per_sample_hint", "accepted for DALI compatibility; augkit sizes buffers itself", 0),
)


@dataclass
class OperatorSchema:
    """What an operator is: its names, inputs, outputs, arguments and devices.

    Attributes:
        name: the functional name, dotted by namespace: ``"resize"``, ``"readers.file"``.
        class_name: the ``ops`` class name, dotted the same way: ``"Resize"``, ``"readers.File"``.
        impl: the implementation class (see ``augkit.operators.base``).
        doc: the operator's description (first paragraph of the generated docstrings).
        args: the operator's own arguments (the common ones are added).
        min_inputs, max_inputs: how many positional inputs it takes (``None``: any number).
        num_outputs: how many outputs, or a function of the bound arguments.
        devices: the devices it has kernels for.
        aliases: DALI's legacy ``ops`` names (``"FileReader"``).
        fn_aliases: DALI's legacy ``fn`` names (``"file_reader"``).
        module: where the front ends live: ``""`` (``augkit.fn``/``augkit.ops``) or
            ``"plugin.pytorch"``.
        input_sets: calling the ``ops`` object with lists runs it once per list element.
        validate: checks between the arguments given together (``{name: value or node}``);
            raises ``ValueError`` with a plain message, reported as an ``ArgumentError``.
    """

    name: str
    class_name: str
    impl: type
    doc: str
    args: Sequence[Arg] = ()
    min_inputs: int = 1
    max_inputs: int | None = 1
    num_outputs: int | Callable[[dict[str, Any]], int] = 1
    devices: tuple[str, ...] = ("cpu",)
    aliases: tuple[str, ...] = ()
    fn_aliases: tuple[str, ...] = ()
    module: str = ""
    input_sets: bool = True
    validate: Callable[[dict[str, Any]], None] | None = None
    arguments: dict[str, Arg] = field(init=False)

    def __post_init__(self) -> None:
        self.arguments = {a.name: a for a in (*COMMON_ARGS, *self.args)}

    def outputs_for(self, args: dict[str, Any]) -> int:
        n = self.num_outputs
        return n(args) if callable(n) else n

    def bind(
        self, kwargs: dict[str, Any], is_node: Callable[[Any], bool]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Split ``kwargs`` into checked constants and per-sample argument nodes.

        Raises:
            ArgumentError: an unknown name, a node given to an argument that takes none, or a
                value its converter refuses.
        """
        constants: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for key, value in kwargs.items():
            arg = self.arguments.get(key)
            if arg is None:
                raise ArgumentError(
                    f"{self.class_name}: unknown argument '{key}'."
                    f"{suggest(key, self.arguments)} Valid arguments: "
                    f"{', '.join(sorted(self.arguments))}."
                )
            if is_node(value):
                if not arg.per_sample:
                    raise ArgumentError(
                        f"{self.class_name}: argument '{key}' must be a constant; it cannot "
                        f"take a per-sample value from another operator."
                    )
                nodes[key] = value
            else:
                constants[key] = arg.check(value, self.class_name)
        if self.validate is not None:
            try:
                self.validate({**constants, **nodes})
            except ValueError as exc:
                raise ArgumentError(f"{self.class_name}: {exc}") from None
        return constants, nodes

    def defaults(self) -> dict[str, Any]:
        return {a.name: a.default for a in self.arguments.values() if a.default is not REQUIRED}

    def missing(self, given: set[str]) -> list[str]:
        return [
            a.name for a in self.arguments.values() if a.default is REQUIRED and a.name not in given
        ]


REGISTRY: dict[str, OperatorSchema] = {}


def register(schema: OperatorSchema) -> OperatorSchema:
    if schema.name in REGISTRY:
        raise ValueError(f"operator {schema.name!r} is registered twice")
    REGISTRY[schema.name] = schema
    return schema


# --- converters: check a value, return it normalised ----------------------------------------


def _scalar(value: Any) -> Any:
    """A Python scalar from a scalar, a 0-d array or a one-element array (per-sample values)."""
    if isinstance(value, np.ndarray) or type(value).__module__.startswith(("numpy", "torch")):
        arr = np.asarray(value)
        if arr.size != 1:
            raise ValueError(f"expected one value, got an array of shape {arr.shape}")
        return arr.reshape(()).item()
    return value


def _int(value: Any, low: float | None = None, high: float | None = None) -> int:
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"expected an integer, got {value!r}")
    _check_range(value, low, high)
    return int(value)


def _float(value: Any, low: float | None = None, high: float | None = None) -> float:
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"expected a number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"expected a finite number, got {value}")
    _check_range(value, low, high)
    return value


def _bool(value: Any) -> bool:
    value = _scalar(value)
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise TypeError(f"expected True or False, got {value!r}")


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _check_range(value: float, low: float | None, high: float | None) -> None:
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"between {low} and {high}"
            if low is not None and high is not None
            else f">= {low}"
            if low is not None
            else f"<= {high}"
        )
        raise ValueError(f"must be {bounds}, got {value}")


def to_int(low: float | None = None, high: float | None = None) -> Callable[[Any], int]:
    return lambda v: _int(v, low, high)


def to_float(low: float | None = None, high: float | None = None) -> Callable[[Any], float]:
    return lambda v: _float(v, low, high)


def to_bool(value: Any) -> bool:
    return _bool(value)


def to_str(value: Any) -> str:
    return _str(value)


def to_floats(
    length: int | None = None,
    low: float | None = None,
    high: float | None = None,
    scalar_ok: bool = True,
) -> Callable[[Any], tuple[float, ...]]:
    """A tuple of floats (a scalar becomes a 1-tuple when ``scalar_ok``)."""

    def convert(value: Any) -> tuple[float, ...]:
        if isinstance(value, np.ndarray) or type(value).__module__.startswith("torch"):
            value = np.asarray(value).reshape(-1).tolist()
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            if not scalar_ok:
                raise TypeError(f"expected a list of numbers, got {value!r}")
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a number or a list of numbers, got {value!r}")
        out = tuple(_float(v, low, high) for v in value)
        if length is not None and len(out) != length:
            raise ValueError(f"expected {length} numbers, got {len(out)}")
        return out

    return convert


def to_ints(length: int | None = None, low: float | None = None) -> Callable[[Any], tuple]:
    floats = to_floats(length)

    def convert(value: Any) -> tuple[int, ...]:
        return tuple(_int(v, low) for v in floats(value))

    return convert


def one_of(*choices: Any) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value not in choices:
            raise ValueError(
                f"must be one of {', '.join(repr(c) for c in choices)}, got {value!r}"
                f"{suggest(value, choices) if isinstance(value, str) else ''}"
            )
        return value

    return convert


def to_dtype(value: Any) -> types.DALIDataType:
    return types.to_dtype(value)


def to_image_type(value: Any) -> types.DALIImageType:
    if isinstance(value, str) and value.upper() in ("RGB", "BGR", "GRAY"):
        return types.DALIImageType[value.upper()]
    if isinstance(value, (types.DALIImageType, int)) and not isinstance(value, bool):
        try:
            return types.DALIImageType(value)
        except ValueError:
            pass
    raise ValueError(f"expected types.RGB, types.BGR or types.GRAY, got {value!r}")


def to_interp(value: Any) -> types.DALIInterpType:
    value = _scalar(value)
    if isinstance(value, (types.DALIInterpType, int)) and not isinstance(value, bool):
        try:
            return types.DALIInterpType(value)
        except ValueError:
            pass
    names = ", ".join(f"types.{m}" for m in types.DALIInterpType.__members__)
    raise ValueError(f"expected one of {names}, got {value!r}")


def to_callable(value: Any) -> Callable[..., Any]:
    if not callable(value):
        raise TypeError(f"expected a function, got {value!r}")
    return value


def to_layouts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"expected a layout string or a list of them, got {value!r}")
