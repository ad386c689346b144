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

Data kinds are named by ``augkit.kinds.KindName`` members or their strings ("image", "mask",
...). Every name a declaration gives (an ``InputSpec``'s kinds, hints and min_ndims, an
``OutputSpec``'s kind, ``kind_policy``'s hints) goes through ``declared_kinds``, so a misspelt
kind fails when the operator is declared, at import:

    >>> spec = InputSpec("an image", kinds=("imgae",))
    >>> OperatorSchema("resize", "Resize", object, "", accepts=[spec])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Resize: unknown data kind 'imgae' in accepts (input 0, kinds); the kinds are ...
"""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError, suggest
from augkit.kinds import GENERIC, Kind, KindName, kind_name, parse

REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()

# The most outputs an operator may be asked for (``num_outputs``): each is a graph node, so a
# mistyped 10**9 would fill the memory before anything could say so.
MAX_OUTPUTS = 1024


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

    Without ``convert``, a default of type bool, int, float or str makes the argument take
    values of that type (DALI's typed arguments); other arguments are taken as they are.
    """

    name: str
    doc: str
    default: Any = None
    convert: Callable[[Any], Any] | None = None
    per_sample: bool = False

    def __post_init__(self) -> None:
        if self.convert is None and type(self.default) in _CONVERTER_OF_TYPE:
            object.__setattr__(self, "convert", _CONVERTER_OF_TYPE[type(self.default)]())

    @property
    def allowed(self) -> str | None:
        """The values the argument takes, in words ("an integer >= 0"), where its converter
        says (see ``described``)."""
        return getattr(self.convert, "allowed", None)

    def check(self, value: Any, operator: str) -> Any:
        if self.convert is None or value is None:
            return value
        try:
            return self.convert(value)
        except (TypeError, ValueError, OverflowError) as exc:
            message = f"{operator}: argument '{self.name}': {exc}"
            allowed = self.allowed
            bounds = _bounds(
                getattr(self.convert, "low", None), getattr(self.convert, "high", None)
            )
            if allowed and allowed not in message and not (bounds and bounds in message):
                message += f" (allowed: {allowed})"
            raise ArgumentError(message) from None


@dataclass(frozen=True)
class OutputSpec:
    """What the samples of an operator's output are, as far as it is known before anything runs:
    their data kind, and where known their number of dimensions and layout (for the checks
    ``Pipeline.build()`` makes, ``augkit.static_checks``, and the kind every batch carries).

    Attributes:
        kind: the data kind (``augkit.kinds``); generic when not known.
        ndim: the number of dimensions of every sample (``None``: not known).
        layout: the layout ("HWC"; "" for none; ``None``: not known).
        what: the samples in words, for messages: "1-D encoded bytes from readers.file".
        hint: what to do with them to get an image: "decode them first with fn.decoders.image".
    """

    kind: Kind = GENERIC
    ndim: int | None = None
    layout: str | None = None
    what: str = ""
    hint: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.kind, str):  # a kind's name: its default form (kinds.parse)
            declared_kinds((self.kind,), "OutputSpec", "kind")
            object.__setattr__(self, "kind", parse(self.kind))
        elif not isinstance(self.kind, Kind):
            raise TypeError(f"OutputSpec: kind must be a data kind, got {self.kind!r}")


@dataclass(frozen=True)
class InputSpec:
    """What an operator's input must be (``OperatorSchema.accepts``); an input whose kind or
    shape is known and does not fit is refused when the pipeline is built.

    Attributes:
        what: in words, for messages: 'an image with layout HWC or CHW (3 dimensions)'.
        kinds: the names of the data kinds accepted (``None``: any). A generic input (kind not
            known) always passes: augkit never refuses what could run.
        ndims: the numbers of dimensions accepted (``None``: any).
        min_ndim: the fewest dimensions accepted.
        layouts: the layouts accepted when the input has one (``None``: any).
        hints: what to say to a user who gives a refused kind, by kind name.
    """

    what: str
    kinds: tuple[str, ...] | None = None
    ndims: tuple[int, ...] | None = None
    min_ndim: int = 0
    layouts: tuple[str, ...] | None = None
    hints: dict[str, str] = field(default_factory=dict)
    min_ndims: dict[str, int] = field(default_factory=dict)
    """The fewest dimensions by kind name, where it is not ``min_ndim`` (a geometric
    operator takes images of 2 or more dimensions, and labels of 1); for these kinds only
    this is checked, not ``ndims`` and ``layouts`` (which are the images')."""

    def __post_init__(self) -> None:
        # Known names become KindName members here; an unknown one is kept, for the operator
        # declaring this input to refuse by name (OperatorSchema, declared_kinds).
        if self.kinds is not None:
            object.__setattr__(self, "kinds", tuple(_member(k) for k in self.kinds))
        object.__setattr__(self, "hints", {_member(k): v for k, v in self.hints.items()})
        object.__setattr__(self, "min_ndims", {_member(k): v for k, v in self.min_ndims.items()})

    def check_kinds(self, owner: str, index: int) -> None:
        """Raise ``ValueError`` naming ``owner`` (the operator) and the input ``index`` for a
        name that is no data kind (``declared_kinds``)."""
        for part, names in (
            ("kinds", self.kinds),
            ("hints", self.hints),
            ("min_ndims", self.min_ndims),
        ):
            declared_kinds(names or (), owner, f"accepts (input {index}, {part})")

    def refuses_kind(self, spec: OutputSpec | None) -> bool:
        """Whether ``spec``'s data kind is known not to be accepted."""
        if spec is None or spec.kind.is_generic or self.kinds is None:
            return False
        return spec.kind.name not in self.kinds

    def refuses_shape(self, spec: OutputSpec | None) -> bool:
        """Whether ``spec``'s number of dimensions or layout is known not to fit."""
        if spec is None:
            return False
        if spec.kind.name in self.min_ndims:
            return spec.ndim is not None and spec.ndim < self.min_ndims[spec.kind.name]
        if spec.ndim is not None and (
            spec.ndim < self.min_ndim or (self.ndims is not None and spec.ndim not in self.ndims)
        ):
            return True
        return bool(spec.layout) and self.layouts is not None and spec.layout not in self.layouts

    def hint(self, kind: Kind) -> str:
        hint = self.hints.get(kind.name, "")
        return hint.replace(MOVERS, movers()) if MOVERS in hint else hint


def _member(name: Any) -> Any:
    """``name``'s ``KindName`` member, or ``name`` itself when it is none (checked later)."""
    try:
        return KindName(name)
    except ValueError:
        return name


def declared_kinds(names: Iterable[Any], owner: str, where: str = "") -> tuple[KindName, ...]:
    """The ``KindName`` of each of ``names``, the kinds a declaration gives: the one check of
    kind names in schemas (accepted and produced kinds, per-kind hints, ``kind_policy``).

    Raises:
        ValueError: a name that is no data kind, naming ``owner`` (the operator), ``where``
            (which part of its declaration) and the kinds.
    """
    try:
        return tuple(kind_name(name, f"in {where}" if where else "") for name in names)
    except ValueError as exc:
        raise ValueError(f"{owner}: {exc}") from None


TARGET_KINDS = (
    KindName.MASK,
    KindName.BOXES,
    KindName.KEYPOINTS,
    KindName.VERTICES,
    KindName.POLYGONS,
    KindName.LABELS,
)
"""The kinds a geometric operator moves besides images: its kernel table has a rule for each
(``augkit.operators.geometric.targets``)."""

MOVERS = "\0movers"
"""Stands in a hint for the operators that move targets, named when the hint is shown
(``InputSpec.hint``), from the registry's kernel tables: hints are declared while the
registry is still being filled."""


def movers() -> str:
    """The public operators that move targets with their images, in words ("flip, ... and
    rotate"), from their kernel tables (``OperatorSchema.moves_targets``)."""
    names = sorted(s.name for s in REGISTRY.values() if s.public and s.moves_targets)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def kind_policy(family: str) -> dict[str, str]:
    """The per-kind hints of an operator family ("geometric", "color"): what a user who gives
    it masks, boxes, keypoints... should know (DESIGN.md, "Data kinds")."""
    if family == "geometric":
        later = (
            "this operator does not move {kind} (its warp is not one transform of "
            "coordinates); " + MOVERS + " do: call them with the images and "
            "the {kind} as input sets, e.g. fn.rotate([images, {kind}], ...)"
        )
        hints = {k: later.format(kind=k) for k in ("mask", "boxes", "keypoints")}
        hints.update(polygons=later.format(kind="polygons"), vertices=later.format(kind="vertices"))
    elif family == "color":
        hints = {
            k: f"colour operators change pixels of images only; {k} must not be recoloured"
            for k in ("mask", "boxes", "keypoints", "polygons", "vertices")
        }
    else:
        raise ValueError(f"unknown operator family {family!r}")
    hints["labels"] = (
        "labels are not images: use the reader's first output "
        "(jpegs, labels = fn.readers.file(...))"
    )
    hints["encoded"] = "decode them first with fn.decoders.image"
    return dict(zip(declared_kinds(hints, f"kind_policy({family!r})"), hints.values(), strict=True))


OutputKinds = Callable[[dict[str, Any], Sequence[OutputSpec | None]], Sequence[OutputSpec | None]]


def fixed_kinds(*specs: OutputSpec | None) -> OutputKinds:
    """``output_kinds`` of an operator whose outputs are always of these kinds (a reader's);
    the specs are its ``specs`` attribute."""
    for spec in specs:
        if spec is not None and not isinstance(spec, OutputSpec):
            raise TypeError(f"fixed_kinds: expected OutputSpecs or None, got {spec!r}")

    def output_kinds(args: dict[str, Any], inputs: Sequence[OutputSpec | None]) -> list:
        return list(specs)

    output_kinds.specs = specs  # type: ignore[attr-defined]
    return output_kinds


def keeps_kind(
    args: dict[str, Any], inputs: Sequence[OutputSpec | None]
) -> list[OutputSpec | None]:
    """``output_kinds`` of an operator whose one output is of its first input's kind (the same
    number of dimensions and layout: flip, resize, cast...)."""
    return [inputs[0] if inputs else None]


ROLES = ("operator", "reader", "source", "random", "python", "internal", "conditional")
"""What an operator is to the pipeline (``OperatorSchema.role``):

- "operator": computes outputs from its inputs (most operators);
- "reader": reads a data set, with a position and epochs (``readers.*``);
- "source": makes batches out of nothing else (``external_source``);
- "random": draws per-sample values (``random.*``), the only operators that see randomness;
- "python": runs a user's function (``python_function`` and its family);
- "internal": made by augkit itself (transfers, arithmetic), not in ``fn``/``ops``/``eager``;
- "conditional": a branch's split or merge (``augkit.operators.conditional``): internal too,
  runs on batches of different scopes, and takes no operator seed.
"""


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
        num_outputs: how many outputs, or a function of the bound arguments (and, taking a
            second parameter, of the number of inputs).
        devices: the devices it has kernels for.
        aliases: DALI's legacy ``ops`` names (``"FileReader"``).
        fn_aliases: DALI's legacy ``fn`` names (``"file_reader"``).
        module: where the front ends live: ``""`` (``augkit.fn``/``augkit.ops``) or
            ``"plugin.pytorch"``.
        input_sets: calling the ``ops`` object with lists runs it once per list element.
        validate: checks between the arguments given together (``{name: value or node}``);
            raises ``ValueError`` with a plain message, reported as an ``ArgumentError``.
        accepts: what each positional input must be (an ``InputSpec``, or ``None``: anything),
            checked when the pipeline is built (``augkit.static_checks``); ``None``: anything.
        output_kinds: ``output_kinds(args, input_specs)`` -> the ``OutputSpec`` of each output
            (``None`` for one that is not known: generic), e.g. ``keeps_kind``; ``None``: all
            generic. Every batch the operator makes carries the kind given here.
        role: what the operator is to the pipeline (``ROLES``).
        positional: arguments that may be given positionally, in this order, to an operator
            without inputs (DALI's ``fn.external_source(source, num_outputs)``).
        outputs_as_list: ``outputs_as_list(args)``: the call returns its outputs as a list,
            even a list of one (DALI's external source with ``num_outputs`` given).
        numbered: the operator takes a creation ordinal, from which its seed comes
            (``augkit.random``). False for the copies between host and GPU (``.gpu()``,
            ``.cpu()``, made implicitly by ``device="gpu"`` on CPU data), so that where data
            moves changes no operator's random draws; conditionals' splits and merges take
            none either (``seeded``).
    """

    name: str
    class_name: str
    impl: type
    doc: str
    args: Sequence[Arg] = ()
    min_inputs: int = 1
    max_inputs: int | None = 1
    num_outputs: int | Callable[..., int] = 1
    devices: tuple[str, ...] = ("cpu",)
    aliases: tuple[str, ...] = ()
    fn_aliases: tuple[str, ...] = ()
    module: str = ""
    input_sets: bool = True
    validate: Callable[[dict[str, Any]], None] | None = None
    accepts: Sequence[InputSpec | None] | None = None
    output_kinds: OutputKinds | None = None
    role: str = "operator"
    positional: tuple[str, ...] = ()
    outputs_as_list: Callable[[dict[str, Any]], bool] | None = None
    numbered: bool = True
    arguments: dict[str, Arg] = field(init=False)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"{self.name}: role must be one of {ROLES}, got {self.role!r}")
        for i, spec in enumerate(self.accepts or ()):
            if spec is not None:
                spec.check_kinds(self.class_name, i)
        self.arguments = {a.name: a for a in (*COMMON_ARGS, *self.args)}

    @property
    def public(self) -> bool:
        """Whether the operator is in ``fn``, ``ops`` and ``eager`` (not internal)."""
        return self.role not in ("internal", "conditional")

    @property
    def seeded(self) -> bool:
        """Whether the operator takes a creation ordinal (and so a seed): not a conditional's
        split or merge, nor a transfer (``numbered``)."""
        return self.numbered and self.role != "conditional"

    @property
    def makes_batches(self) -> bool:
        """Whether it makes batches out of nothing (a reader or a source): such operators run
        first in an iteration, in iteration order, and set its batch size."""
        return self.role in ("reader", "source")

    def outputs_for(self, args: dict[str, Any], num_inputs: int = 1) -> int:
        """How many outputs a node with these arguments and ``num_inputs`` inputs has:
        ``num_outputs``, or ``num_outputs(args)``, or ``num_outputs(args, num_inputs)`` for an
        operator whose outputs follow its inputs (bbox_rotate: labels out when labels in)."""
        n = self.num_outputs
        if not callable(n):
            return n
        return n(args, num_inputs) if self.outputs_follow_inputs else n(args)

    @functools.cached_property
    def kernel_kinds(self) -> dict[str, tuple[str, ...]]:
        """The kinds of the operator's kernel table by device (``"*"``: its image kernel,
        for any kind its inputs accept; ``augkit.operators.base.SampleOperator.kernel_table``);
        empty for an operator without a table (readers, sources, Python operators)."""
        table = getattr(self.impl, "kernel_table", None)
        found: dict[str, list[str]] = {}
        for device, kind in table() if table is not None else ():
            found.setdefault(device, []).append(kind)
        return {device: tuple(kinds) for device, kinds in found.items()}

    @property
    def moves_targets(self) -> bool:
        """Whether the operator moves masks, boxes, keypoints... with its images: its kernel
        table has their rules (``augkit.operators.geometric.targets``); called with several
        input sets, each node gets the other sets' first inputs as its companions."""
        return any(k in TARGET_KINDS for kinds in self.kernel_kinds.values() for k in kinds)

    @property
    def moves_geometry(self) -> bool:
        """Whether the operator moves pixels or coordinates: it moves targets (its kernel
        table), or its impl says so (``OperatorImpl.moves_geometry``: decoders that crop, the
        box operators, the displacement filters)."""
        return self.moves_targets or bool(getattr(self.impl, "moves_geometry", False))

    @property
    def draws_window(self) -> bool:
        """Whether its outputs are a window it draws (``OperatorImpl.draws_window``)."""
        return bool(getattr(self.impl, "draws_window", False))

    def keeps_relative_coordinates(self, given: Iterable[str]) -> bool:
        """Whether a call with the arguments ``given`` leaves relative coordinates right
        (``OperatorImpl.keeps_relative_coordinates``: a resize without a region of
        interest)."""
        keeps = getattr(self.impl, "keeps_relative_coordinates", None)
        return bool(keeps(given)) if keeps is not None else False

    @functools.cached_property
    def outputs_follow_inputs(self) -> bool:
        """Whether ``num_outputs`` is a function of (args, num_inputs) (looked at once: debug
        mode makes nodes every iteration)."""
        n = self.num_outputs
        if not callable(n):
            return False
        try:
            return len(inspect.signature(n).parameters) > 1
        except (TypeError, ValueError):
            return False

    def bind(
        self, kwargs: dict[str, Any], is_node: Callable[[Any], bool]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Split ``kwargs`` into checked constants and per-sample argument nodes. ``None`` is
        no value of any argument: as in DALI, an argument given ``None`` counts as not given
        (its default applies).

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
            if value is None:
                continue
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

    def named(self, values: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with the positional argument ``values`` named (``positional``).

        Raises:
            ArgumentError: more values than positional arguments, or one given twice.
        """
        if not values:
            return kwargs
        if len(values) > len(self.positional):
            takes = ", ".join(self.positional) or "no positional arguments"
            raise ArgumentError(
                f"{self.class_name}: takes {takes}; got {len(values)} positional argument(s)"
            )
        named = dict(kwargs)
        for name, value in zip(self.positional, values, strict=False):
            if name in kwargs:
                raise ArgumentError(f"{self.class_name}: argument '{name}' given twice")
            named[name] = value
        return named

    def defaults(self) -> dict[str, Any]:
        return {a.name: a.default for a in self.arguments.values() if a.default is not REQUIRED}

    def missing(self, given: set[str]) -> list[str]:
        return [
            a.name for a in self.arguments.values() if a.default is REQUIRED and a.name not in given
        ]


REGISTRY: dict[str, OperatorSchema] = {}
_NAMES: dict[str, OperatorSchema] = {}  # every name an operator goes by (see resolve)


def register(schema: OperatorSchema) -> OperatorSchema:
    if schema.name in REGISTRY:
        raise ValueError(f"operator {schema.name!r} is registered twice")
    kinds = [k for ks in schema.kernel_kinds.values() for k in ks if k != "*"]
    declared_kinds(kinds, schema.name, "its kernel table")  # an unknown kind fails at import
    REGISTRY[schema.name] = schema
    prefixes = ("fn.", "ops.") if not schema.module else (f"{schema.module}.fn.", "")
    names = {
        schema.name,
        schema.class_name,
        *schema.aliases,
        *schema.fn_aliases,
        f"{prefixes[0]}{schema.name}",
        f"{prefixes[1] or schema.module + '.'}{schema.class_name}",
    }
    for name in names:
        _NAMES.setdefault(name, schema)
    return schema


def resolve(name: str) -> OperatorSchema:
    """The schema of the operator ``name`` by any of its names: the registry's dotted name
    (``"readers.file"``), with ``fn.`` (``"fn.decoders.image"``), its ``ops`` class name
    (``"decoders.Image"``, ``"ops.Resize"``), DALI's legacy aliases (``"FileReader"``,
    ``"file_reader"``), or the PyTorch plugin's (``"TorchPythonFunction"``).

    Raises:
        KeyError: no operator has that name (the message suggests the closest).

    Example:
        >>> resolve("ops.readers.File") is resolve("readers.file") is resolve("FileReader")
        True
    """
    import augkit.operators  # noqa: F401  (fills the registry)

    schema = _NAMES.get(name)
    if schema is None:
        raise KeyError(f"no operator named {name!r}.{suggest(name, _NAMES)}")
    return schema


# --- converters: check a value, return it normalised ----------------------------------------
#
# A converter raises TypeError/ValueError with a plain message; those made here also say what
# they take (``allowed``, shown in messages and generated docs) and, for numbers, their range
# (``low``/``high``), which tests use to try values outside it.


def described(
    allowed: str, low: float | None = None, high: float | None = None
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator for a converter: record the values it takes, in words, and its numeric range.

    Example:
        >>> @described("a nonzero number")
        ... def nonzero(value): ...
    """

    def mark(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        convert.allowed = allowed  # type: ignore[attr-defined]
        convert.low = low  # type: ignore[attr-defined]
        convert.high = high  # type: ignore[attr-defined]
        return convert

    return mark


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
        if (
            isinstance(value, numbers.Real)
            and not isinstance(value, bool)
            and np.isfinite(float(value))
            and float(value).is_integer()
        ):
            # typeshed's int() does not take a numbers.Real (it converts through __trunc__)
            value = int(value)  # type: ignore[call-overload]
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
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Real) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"expected True or False, got {value!r}")


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if low is not None:
        return f">= {low}"
    return f"<= {high}" if high is not None else ""


def _check_range(value: float, low: float | None, high: float | None) -> None:
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"must be {_bounds(low, high)}, got {value}")


def _in(kind: str, low: float | None, high: float | None) -> str:
    """ "an integer >= 0": a kind of value and its range, in words."""
    bounds = _bounds(low, high)
    return f"{kind} {bounds}" if bounds else kind


def to_int(low: float | None = None, high: float | None = None) -> Callable[[Any], int]:
    return described(_in("an integer", low, high), low, high)(lambda v: _int(v, low, high))


def to_float(low: float | None = None, high: float | None = None) -> Callable[[Any], float]:
    return described(_in("a number", low, high), low, high)(lambda v: _float(v, low, high))


@described("True or False")
def to_bool(value: Any) -> bool:
    return _bool(value)


@described("a string")
def to_str(value: Any) -> str:
    return _str(value)


@described("an integer >= 0 or a list of them", 0)
def _bytes_hint(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_int(v, 0) for v in value)
    return _int(value, 0)


# Converters for arguments declared without one, by the type of their default (Arg).
_CONVERTER_OF_TYPE: dict[type, Callable[[], Callable[[Any], Any]]] = {
    bool: lambda: to_bool,
    int: to_int,
    float: to_float,
    str: lambda: to_str,
}


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

    if length is not None:
        what = f"a list of {length} numbers"
    else:
        what = "a number or a list of numbers" if scalar_ok else "a list of numbers"
    bounds = _bounds(low, high)
    return described(f"{what}, each {bounds}" if bounds else what, low, high)(convert)


def to_ints(length: int | None = None, low: float | None = None) -> Callable[[Any], tuple]:
    floats = to_floats(length)

    def convert(value: Any) -> tuple[int, ...]:
        return tuple(_int(v, low) for v in floats(value))

    what = f"a list of {length} integers" if length is not None else "a list of integers"
    return described(f"{what}, each >= {low}" if low is not None else what, low)(convert)


def one_of(*choices: Any) -> Callable[[Any], Any]:
    names = ", ".join(repr(c) for c in choices)

    @described(f"one of {names}")
    def convert(value: Any) -> Any:
        try:
            known = value in choices
        except Exception:  # a value whose == does not give a bool (an array)
            known = False
        if not known:
            raise ValueError(
                f"must be one of {names}, got {value!r}"
                f"{suggest(value, choices) if isinstance(value, str) else ''}"
            )
        return value

    convert.choices = choices  # type: ignore[attr-defined]
    return convert


@described("a data type: types.UINT8, types.FLOAT, ... or a NumPy dtype")
def to_dtype(value: Any) -> types.DALIDataType:
    dtype = types.to_dtype(value)
    try:
        dtype.numpy  # noqa: B018 (NO_TYPE and the like name no type data can have)
    except TypeError:
        raise ValueError(
            f"types.{dtype.name} is no type data can have; use types.UINT8, types.FLOAT, ..."
        ) from None
    return dtype


@described("types.RGB, types.BGR or types.GRAY")
def to_image_type(value: Any) -> types.DALIImageType:
    if isinstance(value, str) and value.upper() in ("RGB", "BGR", "GRAY"):
        return types.DALIImageType[value.upper()]
    if isinstance(value, (types.DALIImageType, int)) and not isinstance(value, bool):
        try:
            return types.DALIImageType(value)
        except ValueError:
            pass
    raise ValueError(f"expected types.RGB, types.BGR or types.GRAY, got {value!r}")


_INTERP_NAMES = ", ".join(f"types.{m}" for m in types.DALIInterpType.__members__)


@described(f"one of {_INTERP_NAMES}")
def to_interp(value: Any) -> types.DALIInterpType:
    value = _scalar(value)
    if isinstance(value, (types.DALIInterpType, int)) and not isinstance(value, bool):
        try:
            return types.DALIInterpType(value)
        except ValueError:
            pass
    raise ValueError(f"expected one of {_INTERP_NAMES}, got {value!r}")


@described("a function")
def to_callable(value: Any) -> Callable[..., Any]:
    if not callable(value):
        raise TypeError(f"expected a function, got {value!r}")
    return value


@described("a layout string or a list of them")
def to_layouts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"expected a layout string or a list of them, got {value!r}")


# Arguments every operator takes, as in DALI (after the converters they use).
COMMON_ARGS = (
    Arg("device", 'where the operator runs: "cpu" or "gpu" ("mixed" for decoders)', "cpu"),
    Arg(
        "seed",
        "seed of the operator's random streams (-1: derived from the pipeline's seed)",
        -1,
        to_int(-1, 2**63 - 1),
    ),
    Arg(
        "name",
        "the operator's name in the graph, for errors, epoch_size() and the viewer",
        None,
        to_str,
    ),
    Arg(
        "preserve",
        "keep the operator in the graph even when no output uses it",
        False,
        to_bool,
    ),
    Arg(
        "bytes_per_sample_hint",
        "accepted for DALI compatibility; augkit sizes buffers itself",
        0,
        _bytes_hint,
    ),
)
