"""Checks made when a pipeline is built, before anything runs: each operator's inputs against
what it accepts, so that ``fn.resize(jpegs)`` on a reader's encoded files, or boxes given to a
colour operator, fail at ``pipe.build()`` with words a user can act on, instead of on the first
batch (or never, with silently wrong data).

Schemas say what their outputs are (``OperatorSchema.output_kinds``: an ``OutputSpec`` per
output: data kind, number of dimensions, layout) and what their inputs must be (``accepts``, an
``InputSpec`` per input: the kinds accepted, and shapes). Specs flow through the graph in build
order; the same specs give every batch its data kind at run time (``augkit.core``). An output
whose spec is not declared is generic, and a generic input passes every kind check, so the
pass never refuses what could run. Debug mode checks each node as it is made, from the kinds of
the batches it gets (``input_specs_of``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from augkit.errors import GraphError
from augkit.graph import DataNode, OperatorNode
from augkit.kinds import GENERIC, Kind
from augkit.operators.registry import InputSpec, OutputSpec
from augkit.tensors import TensorList

Specs = dict[DataNode, OutputSpec | None]


def output_specs(
    node: OperatorNode, inputs: Sequence[OutputSpec | None]
) -> list[OutputSpec | None]:
    """The specs of ``node``'s outputs, given its inputs' specs (``None``: generic)."""
    schema = node.schema
    declared = schema.output_kinds(node.args, inputs) if schema.output_kinds is not None else ()
    return [declared[k] if k < len(declared) else None for k in range(len(node.outputs))]


def check_inputs(node: OperatorNode, inputs: Sequence[OutputSpec | None]) -> None:
    """Raise ``GraphError`` for the first input of ``node`` known not to be what it accepts.

    Raises:
        GraphError: naming the operator, the input, what it expects and what it gets (both
            kinds).
    """
    accepts: Sequence[InputSpec | None] = node.schema.accepts or ()
    own = inputs[: len(inputs) - node.companions]  # not the other input sets' inputs
    for k, (spec, given) in enumerate(zip(accepts, own, strict=False)):
        if spec is None or given is None:
            continue
        if spec.refuses_kind(given) or spec.refuses_shape(given):
            raise GraphError(_message(node, k, spec, given))
        if (
            k == 0
            and given.kind.name == "labels"
            and node.schema.moves_targets
            and not node.companions
        ):
            raise GraphError(
                f"{node.name} (fn.{node.schema.name}): input 0 ({node.inputs[0].name}) is "
                f"labels (kind labels), which have nothing to move by themselves; labels "
                f"travel with their boxes: give them in one call with the images and "
                f"boxes, fn.{node.schema.name}([images, boxes, labels], ...)"
            )


def check_kinds(nodes: Sequence[OperatorNode]) -> Specs:
    """Check every node (in an order where each follows its inputs) and return the spec of
    every output.

    Raises:
        GraphError: see ``check_inputs``.
    """
    specs: Specs = {}
    for node in nodes:
        inputs = [specs.get(d) for d in node.inputs]
        check_inputs(node, inputs)
        specs.update(zip(node.outputs, output_specs(node, inputs), strict=True))
    return specs


def kinds_of(specs: Sequence[OutputSpec | None]) -> list[Kind]:
    return [spec.kind if spec is not None else GENERIC for spec in specs]


def input_specs_of(batches: Sequence[Any]) -> list[OutputSpec | None]:
    """Specs of batches that exist already (debug mode): their data kinds (the shapes are
    the kernels' to check there)."""
    return [
        OutputSpec(kind=b.kind) if isinstance(b, TensorList) and not b.kind.is_generic else None
        for b in batches
    ]


def _message(node: OperatorNode, index: int, spec: InputSpec, given: OutputSpec) -> str:
    source = node.inputs[index].name
    what = f"{given.what or _describe(given)} (kind {given.kind})"
    expected = spec.what
    if spec.kinds is not None:
        expected += f" (kind {' or '.join(spec.kinds)})"
    hint = spec.hint(given.kind) if spec.refuses_kind(given) else ""
    hint = hint or given.hint
    hint = f"; {hint}" if hint else ""
    return (
        f"{node.name} (fn.{node.schema.name}): input {index} ({source}) is {what}, but "
        f"{node.schema.name} expects {expected}{hint}."
    )


def _describe(spec: OutputSpec) -> str:
    shape = f"{spec.ndim}-D samples" if spec.ndim is not None else "samples"
    return f"{shape} with layout {spec.layout!r}" if spec.layout else shape
