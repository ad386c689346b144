"""Copies between host and GPU (``DataNode.gpu()`` / ``.cpu()``); internal, not in ``fn``."""

from __future__ import annotations

from collections.abc import Sequence

from augkit.operators.base import OperatorImpl, RunContext
from augkit.operators.registry import OperatorSchema, keeps_kind, register
from augkit.tensors import TensorList


class _ToGPU(OperatorImpl):
    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        return [inputs[0].as_gpu(ctx.device_id or 0)]


class _ToCPU(OperatorImpl):
    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        return [inputs[0].as_cpu()]


register(
    OperatorSchema(
        "_to_gpu",
        "_ToGPU",
        _ToGPU,
        "Copy a batch to the GPU.",
        devices=("gpu",),
        role="internal",
        output_kinds=keeps_kind,
        numbered=False,
    )
)
register(
    OperatorSchema(
        "_to_cpu",
        "_ToCPU",
        _ToCPU,
        "Copy a batch to the host.",
        devices=("cpu",),
        role="internal",
        output_kinds=keeps_kind,
        numbered=False,
    )
)


class _Constant(OperatorImpl):
    """A batch a user handed an operator in debug mode; the debug session sets its value."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        raise RuntimeError("constant nodes hold their batch; they are never run")


register(
    OperatorSchema(
        "_constant",
        "_Constant",
        _Constant,
        "A user's batch, in debug mode.",
        min_inputs=0,
        max_inputs=0,
        role="internal",
    )
)
