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
from augkit.operators.registry import (
    DataKind,
    InputSpec,
    OperatorSchema,
    OutputKinds,
)

# Kinds of operators whose modules do not declare them yet (their registrations were being
# edited elsewhere when this pass was written): move each entry into the operator's
# ``register(OperatorSchema(..., accepts=..., output_kinds=...))`` when convenient.
ENCODED_BYTES = DataKind(
    ndim=1,
    layout="",
    content="encoded",
    what="1-D encoded bytes from readers.file",
    hint="decode them first with fn.decoders.image",
)
LABELS = DataKind(
    ndim=1,
    layout="",
    content="labels",
    what="labels of shape (1,) from readers.file",
    hint=(
        "labels are not images: use the reader's first output "
        "(jpegs, labels = fn.readers.file(...))"
    ),
)
DECODED = DataKind(ndim=3, layout="HWC", content="pixels", what="decoded HWC images")


def _fixed(*kinds: DataKind | None) -> OutputKinds:
    return lambda args, inputs: list(kinds)


DECLARED_HERE: dict[str, tuple[Sequence[InputSpec | None] | None, OutputKinds | None]] = {
    "readers.file": (None, _fixed(ENCODED_BYTES, LABELS)),
    "decoders.image": (
        [
            InputSpec(
                "encoded bytes (1-D uint8 samples, as fn.readers.file gives them)",
                ndims=(1,),
                refuses=("labels", "pixels"),
            )
        ],
        _fixed(DECODED),
    ),
}


def accepts(schema: OperatorSchema) -> Sequence[InputSpec | None]:
    if schema.accepts is not None:
        return schema.accepts
    return DECLARED_HERE.get(schema.name, (None, None))[0] or ()


def output_kinds(
    schema: OperatorSchema, args: dict[str, Any], inputs: Sequence[DataKind | None]
) -> Sequence[DataKind | None]:
    declare = schema.output_kinds or DECLARED_HERE.get(schema.name, (None, None))[1]
    return declare(args, inputs) if declare is not None else ()


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
