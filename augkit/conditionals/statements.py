"""What a converted definition calls in place of ``if``, ``and``, ``or``, ``not`` and ``x if c
else y`` (``augkit.conditionals.rewrite`` writes the calls), and ``select``, the same per-sample
choice among several functions for library code (``augkit.auto_aug``'s policies).

On Python values every one of them does exactly what Python does. On a DataNode the choice is
made per sample: each branch runs once, while the pipeline is defined, inside a scope
(``augkit.scopes``) whose operators compute only the samples that take it; the variables the
branches assign are merged back into one batch in sample order (``_merge`` nodes), as DALI's
conditionals do.

Decisions and traps:

- A value the branches return unchanged, or a Python number a branch assigns, is first made a
  node of the branch (a ``_split`` of it, or a constant node: DALI promotes constants the same
  way), so every merge input holds exactly the branch's samples.
- The same object in every branch (a variable no branch changed) is not merged. Python values
  that differ (strings, functions) cannot be merged per sample: an error naming the variable.
- A variable assigned in some branches only is ``scopes.Undefined`` after the ``if``: using it
  is DALI's error; not using it is fine (DALI's liveness rule, checked on use).
- ``and``/``or`` short-circuit per sample: ``a and b`` computes ``b`` only for the samples
  where ``a`` is true (an ``if`` on ``a``), and both operands must be boolean scalars, as the
  condition of an ``if``. ``not`` checks the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np

from augkit import scopes
from augkit.errors import ArgumentError, GraphError
from augkit.graph import NUMBERS, DataNode, OperatorNode, _into_scope, _value, choice_args
from augkit.operators.constant import is_constant
from augkit.operators.registry import REGISTRY

_local = threading.local()


def enabled() -> bool:
    """Whether the pipeline being defined has conditionals (``enable_conditionals=True``).

    Example:
        >>> from augkit import conditionals
        >>> conditionals.enabled()  # outside any pipeline definition
        False
    """
    stack = _local.__dict__.get("stack")
    return bool(stack and stack[-1])


@contextmanager
def enabling(flag: bool) -> Iterator[None]:
    """Mark the pipeline definition run inside the block as one with (or without)
    conditionals."""
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(flag)
    try:
        yield
    finally:
        stack.pop()


# --- the per-sample choice --------------------------------------------------------------------
def _promote(value: Any, scope: scopes.Scope, name: str, where: str) -> DataNode:
    """``value`` as a node of ``scope``: a node split into it, or a constant made there."""
    if isinstance(value, DataNode):
        return _into_scope(value, scope)
    if isinstance(value, NUMBERS) or is_constant(value):
        with scopes.entered(scope):
            return _value(value)
    raise GraphError(
        f"variable '{name}' is a {type(value).__name__} in {scope.describe()}, and a DataNode "
        f"or a different value in another branch{where}: only DataNodes and numbers can be "
        f"merged per sample after an `if` on a DataNode"
    )


def _same(values: Sequence[Any]) -> bool:
    """Whether every branch left the variable the same (never by ``==`` on a DataNode, which
    would make a comparison node)."""
    first = values[0]
    if all(v is first for v in values):
        return True
    if any(isinstance(v, (DataNode, scopes.Undefined)) for v in values):
        return False
    if any(type(v) is not type(first) for v in values):
        return False
    if isinstance(first, (list, tuple)):
        return all(len(v) == len(first) for v in values) and all(
            _same([v[j] for v in values]) for j in range(len(first))
        )
    if isinstance(first, dict):
        return all(v.keys() == first.keys() for v in values) and all(
            _same([v[k] for v in values]) for k in first
        )
    if isinstance(first, np.ndarray):
        return all(np.array_equal(v, first) and v.dtype == first.dtype for v in values)
    try:
        return all(bool(v == first) for v in values[1:])
    except Exception:
        return False


def _structure(value: Any) -> Any:
    """A value's nesting as DALI's messages show it: a leaf is '*'."""
    if isinstance(value, (list, tuple)):
        return type(value)(_structure(v) for v in value)
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items()}
    return "*"


def _merge(
    choice: scopes.Choice,
    branches: list[scopes.Scope],
    values: list[Any],
    name: str,
    parent: scopes.Scope | None,
) -> Any:
    """One variable after the choice: its value in every branch, merged per sample (lists,
    tuples and dicts element by element, when every branch has the same structure)."""
    nested = [isinstance(v, (list, tuple, dict)) for v in values]
    if any(nested) and not _same(values):
        shapes = [_structure(v) for v in values]
        if not all(nested) or any(s != shapes[0] for s in shapes):
            where = f" (at {choice.where})" if choice.where else ""
            heads = [
                f"'{choice.names.get(b.case, b.case)}' output structure: {s}"
                for b, s in zip(branches, shapes, strict=True)
            ]
            raise ValueError(
                "Divergent data found in different branches of `if/else` control flow "
                f"statement{where}. Variables in all code paths are merged into common output "
                "batches. The values assigned to a given variable need to have the same "
                "nesting structure in every code path (both `if` branches).\nFor example, if "
                "we define a variable as a tuple in one branch, it must be defined as a tuple "
                "of the same length in the other branch - the contents of the tuples may be "
                "different. If we define a variable as a dictionary, the other branch must "
                "define it as a dictionary with the same set of keys, the values may be "
                f"different.\n\nVariable '{name}':\n" + "\n".join(heads)
            )
        first = values[0]
        if isinstance(first, dict):
            return {
                k: _merge(choice, branches, [v[k] for v in values], f"{name}[{k!r}]", parent)
                for k in first
            }
        return type(first)(
            _merge(choice, branches, [v[j] for v in values], f"{name}[{j}]", parent)
            for j in range(len(first))
        )
    missing = [b for b, v in zip(branches, values, strict=True) if isinstance(v, scopes.Undefined)]
    if missing:
        if len(missing) == len(values):
            return values[0]
        branch = choice.names.get(missing[0].case, str(missing[0].case))
        branch = {"True": "if", "False": "else"}.get(branch, branch) if choice.boolean else branch
        return scopes.Undefined(name, branch, choice.where)
    if _same(values):
        return values[0]
    where = f" (at {choice.where})" if choice.where else ""
    nodes = [_promote(v, b, name, where) for b, v in zip(branches, values, strict=True)]
    devices = {n.device for n in nodes}
    if len(devices) > 1:
        raise GraphError(
            f"variable '{name}' is on the GPU in one branch and on the CPU in another{where}: "
            f"move it with .gpu() in the CPU branch"
        )
    return OperatorNode(
        REGISTRY["_merge"],
        nodes[0].device,
        {**choice_args(choice), "cases": tuple(b.case for b in branches), "variable": name},
        {},
        [choice.selector, *nodes],
        scope=parent,
    ).outputs[0]


def choose(
    selector: DataNode,
    cases: Sequence[Any],
    branches: Sequence[Callable[[], Sequence[Any]]],
    names: Sequence[str] | None,
    *,
    label: str,
    case_names: Sequence[str],
    boolean: bool,
    where: str = "",
    live: Sequence[bool] | None = None,
    recorded: bool = True,
) -> tuple[Any, ...]:
    """Run ``branches[k]()`` in the scope of the samples whose ``selector`` is ``cases[k]``
    and merge what they return (one value per name of ``names``; ``None``: as many as they
    return, named "output j") per sample.

    ``live``: which of the names are read after the choice (the others are not merged)."""
    if selector.device != "cpu":
        raise GraphError(
            f"the condition of {label} ({selector.name}) is on the GPU; conditions must be on "
            f"the CPU (use .cpu())"
        )
    parent = scopes.current()
    if parent is not None:
        selector = _into_scope(selector, parent)
    choice = scopes.Choice(
        selector, label, dict(zip(cases, case_names, strict=True)), boolean, where, recorded
    )
    scoped = [scopes.Scope(choice, case, parent) for case in cases]
    results = []
    for scope, branch in zip(scoped, branches, strict=True):
        with scopes.entered(scope):
            out = tuple(branch())
        if names is None:
            names = [f"output {j}" for j in range(len(out))]
        if len(out) != len(names):
            raise GraphError(
                f"{label}: the branches return different structures ({len(names)} and "
                f"{len(out)} values)"
            )
        results.append(out)
    merged = []
    # given, or set by the first branch (every choice has one at least)
    for j, name in enumerate(cast(Sequence[str], names)):
        values = [r[j] for r in results]
        if live is not None and not live[j] and not _same(values):
            merged.append(scopes.Undefined(name))
            continue
        merged.append(_merge(choice, scoped, values, name, parent))
    return tuple(merged)


# --- what the converted code calls ------------------------------------------------------------
def if_stmt(
    test: Any,
    body: Callable[..., tuple[Any, ...]],
    orelse: Callable[..., tuple[Any, ...]],
    state: tuple[Any, ...],
    names: tuple[str, ...],
    live: tuple[bool, ...],
    where: str,
    label: str,
) -> tuple[Any, ...]:
    """``if test: body else: orelse``; ``body``/``orelse`` take the variables the statement
    assigns (``state``, named ``names``) and return their new values."""
    if isinstance(test, scopes.Undefined):
        raise test.error()
    if not isinstance(test, DataNode):
        return body(*state) if test else orelse(*state)
    return choose(
        test,
        (True, False),
        (lambda: body(*state), lambda: orelse(*state)),
        names,
        label=label,
        case_names=("True", "False"),
        boolean=True,
        where=where,
        live=live,
    )


def plain_test(test: Any, where: str, why: str) -> Any:
    """The test of an ``if`` that was left as Python wrote it (``why``: what stopped its
    conversion): a DataNode there is an error that says so."""
    if isinstance(test, DataNode) and why.startswith("returns:"):
        raise RuntimeError(
            "Encountered inconsistent outputs out of the `if/else` control flow statement "
            f"(at {where}). Variables need to be initialized in every code path (both `if` "
            f"branches). The `{why.split(':')[1]}` branch must also have a return statement."
        )
    if isinstance(test, DataNode):
        raise GraphError(
            f"the `if` at {where} tests a DataNode, but it {why}, which an `if` on a DataNode "
            f"cannot do: assign a variable in every branch and use it after the `if` (a "
            f"`return` in every branch, as its last statement, works too)"
        )
    return test


def _logical(value: Any, expression: str, side: str, where: str, negate: bool = False) -> DataNode:
    """A checked operand of ``and``/``or`` (a boolean scalar per sample), or ``not`` of one
    (any number): the check runs per sample when the pipeline runs (``_logical_check``)."""
    schema = REGISTRY["_logical_check"]
    args = {
        **schema.defaults(),
        "expression": expression,
        "side": side,
        "where": where,
        "negate": negate,
    }
    return OperatorNode(schema, "cpu", args, {}, [value]).outputs[0]


def and_(*operands: Callable[[], Any], where: str = "") -> Any:
    """``a and b and ...`` (each operand a function that computes it)."""
    return _bool_op("and", operands, where)


def or_(*operands: Callable[[], Any], where: str = "") -> Any:
    """``a or b or ...`` (each operand a function that computes it)."""
    return _bool_op("or", operands, where)


def _bool_op(op: str, operands: Sequence[Callable[[], Any]], where: str) -> Any:
    value = operands[0]()
    for operand in operands[1:]:
        if isinstance(value, scopes.Undefined):
            raise value.error()
        if not isinstance(value, DataNode):
            # Python's own rule: the first falsy (and) or truthy (or) operand, or the last.
            if (not value) if op == "and" else bool(value):
                return value
            value = operand()
            continue
        left = _logical(value, op, "left", where)

        def right(operand: Callable[[], Any] = operand) -> tuple[Any, ...]:
            result = operand()
            if isinstance(result, scopes.Undefined):
                raise result.error()
            if isinstance(result, DataNode):
                return (_logical(result, op, "right", where),)
            if not isinstance(result, (bool, np.bool_)):
                raise GraphError(
                    f"Logical expression `{op}` is restricted to scalar (0-d tensors) inputs "
                    f"of `bool` type, that are placed on CPU. Got {type(result).__name__} "
                    f"{result!r} as the right argument in logical expression (at {where})."
                )
            return (bool(result),)

        def keep(left: DataNode = left) -> tuple[Any, ...]:
            return (left,)

        taken, other = (right, keep) if op == "and" else (keep, right)
        (value,) = choose(
            left,
            (True, False),
            (taken, other),
            (op,),
            label=f"{op} (at {where})" if where else op,
            case_names=("True", "False"),
            boolean=True,
            where=where,
            recorded=False,
        )
    return value


def not_(value: Any, where: str = "") -> Any:
    """``not value``: per sample on a boolean DataNode."""
    if isinstance(value, scopes.Undefined):
        raise value.error()
    if not isinstance(value, DataNode):
        return not value
    return _logical(value, "not", "", where, negate=True)


def if_exp(
    test: Any, body: Callable[[], Any], orelse: Callable[[], Any], where: str = "", label: str = ""
) -> Any:
    """``body() if test else orelse()``: per sample on a DataNode."""
    if isinstance(test, scopes.Undefined):
        raise test.error()
    if not isinstance(test, DataNode):
        return body() if test else orelse()
    (value,) = choose(
        test,
        (True, False),
        (lambda: (body(),), lambda: (orelse(),)),
        ("value",),
        label=label or "if",
        case_names=("True", "False"),
        boolean=True,
        where=where,
    )
    return value


def undefined(name: str) -> scopes.Undefined:
    """The value of a variable the definition has not assigned yet."""
    return scopes.Undefined(name)


# --- select: the same for library code --------------------------------------------------------
def _split_all(value: Any) -> Any:
    """``value`` with every DataNode in it (in lists, tuples and dicts too) split into the
    current scope."""
    scope = scopes.current()
    if isinstance(value, DataNode):
        return _into_scope(value, scope) if scope is not None else value
    if isinstance(value, (list, tuple)):
        return type(value)(_split_all(v) for v in value)
    if isinstance(value, dict):
        return {k: _split_all(v) for k, v in value.items()}
    return value


def _flatten(value: Any) -> tuple[list[Any], Any]:
    """The leaves of a branch's result and a function that rebuilds the structure."""
    if isinstance(value, (list, tuple)):
        parts = [_flatten(v) for v in value]
        leaves = [leaf for part, _ in parts for leaf in part]
        kind = type(value)

        def build(flat: list[Any]) -> Any:
            out, start = [], 0
            for part, rebuild in parts:
                out.append(rebuild(flat[start : start + len(part)]))
                start += len(part)
            return kind(out)

        return leaves, build
    return [value], lambda flat: flat[0]


def select(
    branches: Sequence[Callable[..., Any]],
    index: Any,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    label: str | None = None,
    names: Sequence[str] | None = None,
) -> Any:
    """Per sample, ``branches[index](*args, **kwargs)``: each branch runs once, on the samples
    whose ``index`` is its position, and the results are merged back in sample order.

    Args:
        branches: the functions to choose among.
        index: a per-sample DataNode (integers 0 .. len(branches) - 1, or booleans: False is
            branch 0), or a Python int (then only that branch is called).
        args, kwargs: what every branch is called with; DataNodes in them (in lists, tuples
            and dicts too) are split to the branch's samples.
        label: how ``Pipeline.draws`` and the viewer name this choice.
        names: the name of each branch (default: the functions' ``__name__``).

    Returns:
        What the branches return (the same structure from each: a DataNode, or lists and
        tuples of DataNodes and numbers), merged per sample.

    Example:
        >>> from augkit import conditionals, fn, pipeline_def, types
        >>> @pipeline_def(
        ...     batch_size=4, num_threads=1, device_id=None, seed=3, enable_conditionals=True
        ... )
        ... def pipe():
        ...     x = fn.random.uniform(range=(0, 1), shape=(2,))
        ...     which = fn.random.uniform(values=[0, 1, 2], dtype=types.INT32)
        ...     return conditionals.select(
        ...         [lambda v: v, lambda v: v * 10, lambda v: -v], which, (x,)
        ...     )
        >>> (out,) = pipe().run()
    """
    kwargs = dict(kwargs or {})
    if not branches:
        raise ArgumentError("select: no branches to choose among")
    if names is None:
        names = [getattr(b, "__name__", str(k)) for k, b in enumerate(branches)]
    names = list(names)
    if len(names) != len(branches):
        raise ArgumentError(f"select: {len(names)} names for {len(branches)} branches")
    if not isinstance(index, DataNode):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(branches):
            raise ArgumentError(
                f"select: index must be a DataNode or an int in [0, {len(branches) - 1}], got "
                f"{index!r}"
            )
        return branches[index](*args, **kwargs)
    if len(branches) == 1:
        return branches[0](*args, **kwargs)
    rebuild: list[Callable[[list[Any]], Any]] = []

    def run(branch: Callable[..., Any]) -> Callable[[], tuple[Any, ...]]:
        def call() -> tuple[Any, ...]:
            leaves, build = _flatten(branch(*_split_all(tuple(args)), **_split_all(kwargs)))
            rebuild.append(build)
            return tuple(leaves)

        return call

    merged = choose(
        index,
        tuple(range(len(branches))),
        [run(b) for b in branches],
        None,
        label=label or "select",
        case_names=names,
        boolean=False,
    )
    return rebuild[0](list(merged))
