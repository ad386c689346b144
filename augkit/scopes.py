"""Conditional scopes: which samples of a batch an operator node computes.

A pipeline with conditionals (``enable_conditionals=True``, ``augkit.conditionals``) splits its
batch per sample: inside ``if pred:`` the operators run on the samples whose ``pred`` is true,
inside ``else`` on the others. Each branch is a ``Scope``: a choice (``Choice``: the per-sample
selector node, ``pred`` here, and what to call it) and the case the branch takes (``True``).
Scopes nest: the parent of a branch's scope is the scope the ``if`` was in (``None``: the whole
batch).

This module is the bookkeeping only, below the graph: the scope being defined (a thread-local
stack that ``augkit.graph`` reads when it makes a node) and, per iteration, the samples of
every scope (``ScopeSamples``), which the executor and debug mode ask for when they run a node.
Splitting data into a scope and merging branches back are graph nodes
(``augkit.operators.conditional``); the ``if`` statement itself is ``augkit.conditionals``.

Decisions and traps:

- A scope holds samples by their index in the whole batch (``ScopeSamples.ids``), sorted. The
  random streams of an operator in a branch are keyed by those indices
  (``RunContext.sample_ids``), so a sample draws the same in a branch as outside it, whatever
  the other samples chose.
- The selector of a choice is always a node of the choice's parent scope (the ``if`` brings it
  there first), so the scope's samples are the parent's samples where the selector equals the
  case.
- Selectors are read once per iteration and scope (``ScopeSamples`` caches them); a selector
  that is not one scalar per sample, or of a type the choice does not take, is an
  ``OperatorError`` naming the ``if`` and its line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit.errors import OperatorError

_local = threading.local()


@dataclass(eq=False)
class Choice:
    """One ``if`` statement (or ``select`` call): the per-sample selector and its names.

    Attributes:
        selector: the node whose per-sample value picks the branch (a DataNode of the
            parent scope).
        label: how draws and the viewer name the choice: ``"if (line 12)"``,
            ``"rand_augment[0]"``.
        names: the name of each case's branch, by case (``{True: "True", False: "False"}``,
            or augmentation names).
        boolean: an ``if``: the selector must be boolean; otherwise integers (or booleans).
        where: the statement's place in the user's code, for messages ("line 12 of
            rotate_pipe").
        recorded: listed by ``Pipeline.choices`` (not the short-circuits of ``and``/``or``).
    """

    selector: Any
    label: str
    names: dict[Any, str]
    boolean: bool = True
    where: str = ""
    recorded: bool = True


@dataclass(eq=False)
class Scope:
    """The samples that take ``case`` of ``choice``, among those of ``parent``."""

    choice: Choice
    case: Any
    parent: Scope | None
    # Nodes of enclosing scopes already split into this one: node -> its split (one split
    # node per node and scope, however often the branch reads it).
    splits: dict[Any, Any] = field(default_factory=dict)

    def path_from(self, ancestor: Scope | None) -> list[Scope]:
        """The scopes from ``ancestor`` (excluded) down to this one, outermost first; empty
        when ``ancestor`` is not an enclosing scope of this one (nor itself)."""
        path: list[Scope] = []
        scope: Scope | None = self
        while scope is not ancestor:
            if scope is None:
                return []
            path.append(scope)
            scope = scope.parent
        return path[::-1]

    def encloses(self, other: Scope | None) -> bool:
        """Whether ``other`` is this scope or one nested in it."""
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False

    def describe(self) -> str:
        name = self.choice.names.get(self.case, repr(self.case))
        where = f" at {self.choice.where}" if self.choice.where else ""
        kind = "branch" if self.choice.boolean else "case"
        return f"the {name} {kind} of {self.choice.label}{where}"


def encloses(scope: Scope | None, other: Scope | None) -> bool:
    """Whether ``other`` is ``scope`` or nested in it (``None``: the whole batch encloses all)."""
    return scope is None or scope.encloses(other)


def current() -> Scope | None:
    """The scope nodes made now belong to (``None``: the whole batch)."""
    stack = _local.__dict__.get("stack")
    return stack[-1] if stack else None


@contextmanager
def entered(scope: Scope | None) -> Iterator[Scope | None]:
    """Make the nodes made inside the block belong to ``scope``."""
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


def cases_of(batch: Any, choice: Choice) -> np.ndarray:
    """The selector's value of every sample, as a 1-D array (bool for an ``if``: a number is
    true when it is not 0, as in DALI; int64 for a choice among several), checked: one scalar
    per sample.

    Raises:
        OperatorError: a sample's value is not a scalar, or not a number (an ``if``) or not an
            integer (a choice among several).
    """
    samples = batch.samples if hasattr(batch, "samples") else list(batch)
    dense = getattr(batch, "_dense", None)
    if dense is not None and dense.ndim == 1:
        values = np.asarray(dense)
    else:
        for i, sample in enumerate(samples):
            if np.ndim(sample) != 0:
                raise _bad_selector(choice, f"Got a {np.ndim(sample)}-d input", i, batch)
        if not samples:
            return np.zeros(0, bool if choice.boolean else np.int64)
        values = np.array([np.asarray(s).reshape(()) for s in samples])
    kind = values.dtype.kind
    if choice.boolean:
        if kind not in "biuf":
            raise _bad_selector(choice, f"Got an input of type {values.dtype}", None, batch)
        return values != 0
    if kind not in "biu":
        raise _bad_selector(choice, f"Got an input of type {_dali_name(values.dtype)}", None, batch)
    return values.astype(np.int64, copy=False)


def _dali_name(dtype: np.dtype) -> str:
    from augkit.types import from_numpy

    try:
        return from_numpy(dtype).name
    except (KeyError, ValueError):
        return str(dtype)


def _bad_selector(choice: Choice, problem: str, index: int | None, batch: Any) -> OperatorError:
    where = f" (at {choice.where})" if choice.where else ""
    if choice.boolean:
        message = (
            "Conditions inside `if` statements are restricted to scalar (0-d tensors) inputs, "
            f"that are placed on CPU. {problem} as a condition of the `if` statement{where}."
        )
    else:
        message = (
            f"The index of {choice.label}{where} must be one integer (or bool) scalar per "
            f"sample. {problem}."
        )
    source = ""
    infos = getattr(batch, "_source_info", None)
    if index is not None and infos:
        source = infos[index]
    return OperatorError(message, operator=choice.label, sample_index=index, source_info=source)


class ScopeSamples:
    """Which samples of one iteration's batch each scope holds.

    Args:
        batch_size: the iteration's batch size (the whole batch's samples).
        batch_of: the batch of a node of this iteration (a selector); what the executor or
            debug mode has computed.
    """

    def __init__(
        self,
        batch_size: int,
        batch_of: Callable[[Any], Any],
        keys: np.ndarray | None = None,
    ) -> None:
        self.batch_size = batch_size
        self._batch_of = batch_of
        self._keys = keys
        self._ids: dict[int, np.ndarray] = {}

    def ids(self, scope: Scope | None) -> np.ndarray | None:
        """The ids of ``scope``'s samples: their indices in the whole batch, sorted, or, where
        the batch's samples were given keys (``Pipeline.run_keyed``), their keys (``None``
        for the whole batch without keys)."""
        if scope is None:
            return self._keys
        found = self._ids.get(id(scope))
        if found is None:
            parent = self.ids(scope.parent)
            if parent is None:
                parent = np.arange(self.batch_size)
            cases = cases_of(self._batch_of(scope.choice.selector), scope.choice)
            if len(cases) != len(parent):
                raise OperatorError(
                    f"its condition has {len(cases)} values, but the scope it was made in has "
                    f"{len(parent)} samples",
                    operator=scope.choice.label,
                )
            found = parent[cases == scope.case]
            self._ids[id(scope)] = found
        return found

    def size(self, scope: Scope | None) -> int:
        ids = self.ids(scope)
        return self.batch_size if ids is None else len(ids)


class Undefined:
    """The value of a variable after an ``if`` that assigned it in one branch only (DALI's
    autograph ``Undefined``): any use of it is DALI's error, naming the variable and the
    branch that did not assign it. Not being used is no error (as in DALI)."""

    __slots__ = ("branch", "name", "where")

    def __init__(self, name: str, branch: str = "", where: str = "") -> None:
        self.name = name
        self.branch = branch
        self.where = where

    def error(self) -> RuntimeError:
        where = f" (the `if` at {self.where})" if self.where else ""
        if self.branch:
            return RuntimeError(
                "Encountered inconsistent outputs out of the `if/else` control flow statement"
                f"{where}. Variables need to be initialized in every code path (both `if` "
                f"branches). Variable '{self.name}' must also be initialized in the "
                f"`{self.branch}` branch."
            )
        return RuntimeError(f"local variable '{self.name}' is used before it is assigned")

    def __getattr__(self, name: str) -> Any:
        raise self.error()

    def __repr__(self) -> str:
        return f"Undefined({self.name!r})"

    def __bool__(self) -> bool:
        raise self.error()

    def _refuse(self, *args: Any) -> Any:
        raise self.error()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _refuse
    __mod__ = __rmod__ = __pow__ = __rpow__ = __and__ = __rand__ = _refuse
    __or__ = __ror__ = __xor__ = __rxor__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __neg__ = __pos__ = __invert__ = __getitem__ = __call__ = __iter__ = __len__ = _refuse
