"""Arithmetic on nodes: ``images * 2``, ``a + b``, ``x / 255``, ``-x`` in a pipeline definition
(normal and debug mode), as DALI's mathematical expressions.

At least one operand is a node; the other may be a node or a Python ``bool``/``int``/``float``
(DALI's constants: int32, float32, bool). Shapes must match, or one side is a per-sample scalar
(shape ``()`` or ``(1,)``), which is broadcast. Result types follow DALI's promotion table:

- same type -> that type; a float with a non-float -> the float; two floats, two signed or two
  unsigned integers -> the wider;
- signed intX with unsigned uintY -> int(2Y) when X <= Y (capped at int64), else intX;
- ``/`` is true division: float32, or float64 when an operand is float64.

So ``uint8 * 2`` is int32 (2 is an int32 constant), ``uint8 + 0.5`` float32. Integer results
wrap around on overflow, as in C++.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.registry import Arg, OperatorSchema, one_of, register
from augkit.tensors import TensorList

OPS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
}


def constant_dtype(value: Any) -> np.dtype:
    """DALI's type of a Python constant."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int32)
    return np.dtype(np.float32)


def promote(a: np.dtype, b: np.dtype, op: str) -> np.dtype:
    """The result type of ``a <op> b`` (see the module docstring)."""
    a, b = np.dtype(a), np.dtype(b)
    if op == "truediv":
        return np.dtype(np.float64) if np.float64 in (a, b) else np.dtype(np.float32)
    if a == b:
        return a
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.kind == "f" or b.kind == "f":
        if a.kind == "f" and b.kind == "f":
            return a if a.itemsize >= b.itemsize else b
        return a if a.kind == "f" else b
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize <= unsigned.itemsize:
        return np.dtype(f"int{min(unsigned.itemsize * 16, 64)}")
    return signed


class Arithmetic(SampleOperator):
    """One element-wise operation; ``scalar`` is the constant operand, when there is one."""

    def cpu(self, *samples: Any, op: str, scalar: Any, scalar_left: bool, **_: Any) -> Any:
        xp = backend.array_module(samples[0])
        if len(samples) == 2:
            left, right = samples
        elif scalar_left:
            left, right = xp.asarray(scalar, dtype=constant_dtype(scalar)), samples[0]
        else:
            left, right = samples[0], xp.asarray(scalar, dtype=constant_dtype(scalar))
        result = promote(left.dtype, right.dtype, op)
        left, right = _broadcastable(left), _broadcastable(right)
        with np.errstate(all="ignore"):  # integer wrap-around and x/0 behave as in C++
            return OPS[op](left.astype(result), right.astype(result))

    gpu = cpu

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        layouts = [b.layout() for b in inputs if b.layout()]
        return layouts[0] if layouts else ""


def _broadcastable(x: Any) -> Any:
    """A per-sample scalar stored as shape (1,) broadcasts like shape ()."""
    return x.reshape(()) if x.shape == (1,) else x


register(
    OperatorSchema(
        name="_arithmetic",
        class_name="_Arithmetic",
        impl=Arithmetic,
        module="internal",
        min_inputs=1,
        max_inputs=2,
        devices=("cpu", "gpu"),
        doc="An element-wise +, -, * or / on nodes (made by the operators of DataNode).",
        args=[
            Arg("op", "the operation", "add", one_of(*OPS)),
            Arg("scalar", "the constant operand, if any", None),
            Arg("scalar_left", "the constant is the left operand", False),
        ],
    )
)


def expression(op: str, left: Any, right: Any) -> Any:
    """The node of ``left <op> right`` (one of them a DataNode)."""
    from augkit.frontends import operator_class
    from augkit.graph import DataNode
    from augkit.operators.registry import REGISTRY

    cls = operator_class(REGISTRY["_arithmetic"])
    if isinstance(left, DataNode) and isinstance(right, DataNode):
        device = "gpu" if "gpu" in (left.device, right.device) else "cpu"
        return cls(op=op, device=device)(left, right)
    node, scalar, scalar_left = (
        (left, right, False) if isinstance(left, DataNode) else (right, left, True)
    )
    if not isinstance(scalar, (bool, int, float, np.generic)):
        return NotImplemented
    return cls(op=op, scalar=scalar, scalar_left=scalar_left, device=node.device)(node)
