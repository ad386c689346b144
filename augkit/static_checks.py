"""Checks made when a pipeline is built, before anything runs: each operator's inputs against
what it accepts, so that ``fn.resize(jpegs)`` on a reader's encoded files fails at
``pipe.build()`` with words a user can act on, instead of on the first batch.

Schemas say what their outputs are (``OperatorSchema.output_kinds``, a ``DataKind`` per output:
number of dimensions, layout, content) and what their inputs must be (``accepts``, an
``InputSpec`` per input). Kinds flow through the graph in build order; an output whose kind is
not declared (a Python function, an external source, arithmetic) is unknown, and an unknown
kind passes every check, so the pass never refuses what could run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from augkit.errors import GraphError
from augkit.graph import DataNode, OperatorNode
from augkit.operators.registry import DataKind, InputSpec, OperatorSchema


def accepts(schema: OperatorSchema) -> Sequence[InputSpec | None]:
    return schema.accepts or ()


def output_kinds(
    schema: OperatorSchema, args: dict[str, Any], inputs: Sequence[DataKind | None]
) -> Sequence[DataKind | None]:
    return schema.output_kinds(args, inputs) if schema.output_kinds is not None else ()


def check_kinds(nodes: Sequence[OperatorNode]) -> None:
    """Raise ``GraphError`` for the first input (in build order) known not to be what its
    operator accepts. ``nodes``: in an order where each node follows its inputs.

    Raises:
        GraphError: naming the operator, the input, what it expects and what it gets.
    """
    kinds: dict[DataNode, DataKind | None] = {}
    for node in nodes:
        inputs = [kinds.get(d) for d in node.inputs]
        for k, (spec, kind) in enumerate(zip(accepts(node.schema), inputs, strict=False)):
            if spec is not None and kind is not None and spec.refusal(kind):
                raise GraphError(_message(node, k, spec, kind))
        outs = output_kinds(node.schema, node.args, inputs)
        for k, data in enumerate(node.outputs):
            kinds[data] = outs[k] if k < len(outs) else None


def _message(node: OperatorNode, index: int, spec: InputSpec, kind: DataKind) -> str:
    source = node.inputs[index].name
    what = kind.what or _describe(kind)
    hint = f"; {kind.hint}" if kind.hint else ""
    return (
        f"{node.name} (fn.{node.schema.name}): input {index} ({source}) is {what}, but "
        f"{node.schema.name} expects {spec.what}{hint}."
    )


def _describe(kind: DataKind) -> str:
    shape = f"{kind.ndim}-D samples" if kind.ndim is not None else "samples"
    return f"{shape} with layout {kind.layout!r}" if kind.layout else shape
