"""``_value``: a Python constant given as an operator's input (``fn.full_like(x, 7)``,
``fn.reductions.std_dev(x, 5.0)``), as DALI's ``types.Constant``: the same value for every sample
of the batch. Internal: ``augkit.graph`` makes the node when an input is a number, a list of
numbers or a NumPy array.

Types as DALI gives a constant: a Python ``int`` is int32, a ``float`` float32, a ``bool`` bool;
a list of them the same (a list of ints is an int32 vector); a NumPy array or scalar keeps its
dtype. Outside int32's range a Python int is an error (DALI's too).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, register
from augkit.tensors import TensorList


def is_constant(value: Any) -> bool:
    """Whether ``value`` is what DALI takes as a constant input: a number, a NumPy array or
    scalar, or a (nested) list or tuple of Python numbers. (A list of NumPy arrays or scalars is
    a batch, one per sample, in debug mode and ``augkit.eager``.)"""
    if isinstance(value, (Real, np.ndarray, np.generic)):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(_plain(v) for v in value)


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_plain(v) for v in value)
    return isinstance(value, Real) and not isinstance(value, np.generic)


def as_constant(value: Any) -> np.ndarray:
    """``value`` as the array every sample gets, with DALI's constant types.

    Raises:
        ValueError: an int outside int32's range, or lists that are not rectangular.
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return np.array(value)
    try:
        array = np.array(value)
    except ValueError as exc:
        raise ValueError(f"a constant input must be a rectangular list of numbers: {exc}") from None
    if array.dtype.kind == "b":
        return array
    if array.dtype.kind in "iu" and all(isinstance(v, Integral) for v in array.ravel().tolist()):
        info = np.iinfo(np.int32)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ValueError(f"the constant {value!r} does not fit int32 (DALI's integer constant)")
        return array.astype(np.int32)
    if array.dtype.kind in "iuf":
        return array.astype(np.float32)
    raise ValueError(f"a constant input must be numbers, got {value!r}")


class Value(OperatorImpl):
    """The constant, once per sample, as a dense read-only batch."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        value = self.args["value"]
        batch = np.repeat(value[None], ctx.batch_size, axis=0)
        return [TensorList.from_array(finish(batch), "")]


def _kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    value = args.get("value")
    ndim = value.ndim if isinstance(value, np.ndarray) else None
    return [OutputSpec(ndim=ndim, layout="", what="a constant")]


register(
    OperatorSchema(
        name="_value",
        class_name="_Value",
        impl=Value,
        role="internal",
        min_inputs=0,
        max_inputs=0,
        output_kinds=_kinds,
        doc="A Python constant given as an operator input (DALI's types.Constant).",
        args=[Arg("value", "the constant", None, as_constant)],
    )
)
