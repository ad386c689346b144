"""``fn._conditional``: DALI's split and merge operators called by hand, as DALI's
conditionals tutorial does to show what an ``if`` becomes::

    images_true, images_false = fn._conditional.split(images, predicate=do_rotate)
    rotated = fn.rotate(images_true, angle=..., fill_value=0)
    result = fn._conditional.merge(rotated, images_false, predicate=do_rotate)

The two outputs of ``split`` are nodes of the two branch scopes of one choice on ``predicate``
(``augkit.scopes``): operators given them run on those samples only (a node made from an input
of a branch scope belongs to that scope: ``augkit.graph``), and ``merge`` puts them back in
sample order. Every ``split`` on the same predicate node shares the choice, so the halves of
different splits combine. No ``enable_conditionals`` is needed (DALI's neither).
"""

from __future__ import annotations

from typing import Any

from augkit import scopes
from augkit.errors import ArgumentError, GraphError
from augkit.graph import DataNode, OperatorNode, _into_scope, choice_args
from augkit.operators.registry import REGISTRY


def _branches(predicate: Any) -> tuple[scopes.Scope, scopes.Scope]:
    """The (true, false) scopes of the choice on ``predicate`` in the current scope."""
    if not isinstance(predicate, DataNode):
        raise ArgumentError(
            f"_conditional: predicate must be a DataNode (a per-sample condition), got "
            f"{type(predicate).__name__}"
        )
    if predicate.device != "cpu":
        raise GraphError(
            f"_conditional: the predicate ({predicate.name}) is on the GPU; predicates must be "
            f"on the CPU (use .cpu())"
        )
    parent = scopes.current()
    known = predicate.source.__dict__.setdefault("_manual_branches", {})
    key = (predicate.index, id(parent))
    if key not in known:
        selector = _into_scope(predicate, parent) if parent is not None else predicate
        choice = scopes.Choice(
            selector, f"split on {predicate.name}", {True: "True", False: "False"}
        )
        known[key] = (scopes.Scope(choice, True, parent), scopes.Scope(choice, False, parent))
    return known[key]


def split(data: DataNode, *, predicate: DataNode, **kwargs: Any) -> tuple[DataNode, DataNode]:
    """The samples of ``data`` whose ``predicate`` is true, and the others (DALI's
    ``fn._conditional.split``)."""
    true, false = _branches(predicate)
    return _into_scope(data, true), _into_scope(data, false)


def merge(
    true_data: DataNode, false_data: DataNode, *, predicate: DataNode, **kwargs: Any
) -> DataNode:
    """One batch in sample order: sample i from ``true_data`` where ``predicate`` is true,
    else from ``false_data`` (DALI's ``fn._conditional.merge``)."""
    true, false = _branches(predicate)
    inputs = [_into_scope(true_data, true), _into_scope(false_data, false)]
    choice = true.choice
    return OperatorNode(
        REGISTRY["_merge"],
        inputs[0].device,
        {**choice_args(choice), "cases": (True, False), "variable": "merge"},
        {},
        [choice.selector, *inputs],
        scope=true.parent,
    ).outputs[0]
