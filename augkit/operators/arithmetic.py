"""Arithmetic and comparisons on nodes: ``images * 2``, ``a + b``, ``x / 255``, ``-x``,
``coin == 1``, ``angle > 0`` in a pipeline definition (normal and debug mode), as DALI's
mathematical expressions. The nodes are made by ``DataNode``'s operators (``augkit.graph``).

At least one operand is a node; the other may be a node or a Python ``bool``/``int``/``float``
(DALI's constants: int32, float32, bool). Shapes must match, or one side is a per-sample scalar
(shape ``()`` or ``(1,)``), which is broadcast (as NumPy broadcasts: ``(1,)`` with ``()`` is
``(1,)``). Result types follow DALI's promotion table:

- same type -> that type; a float with a non-float -> the float; two floats, two signed or two
  unsigned integers -> the wider;
- signed intX with unsigned uintY -> int(2Y) when X <= Y (capped at int64), else intX;
- ``/`` is true division: float32, or float64 when an operand is float64.

So ``uint8 * 2`` is int32 (2 is an int32 constant), ``uint8 + 0.5`` float32. Integer results
wrap around on overflow, as in C++. Comparisons (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``)
compare in the promoted type and give bool samples.

On a dense batch (one array, e.g. random values) the operation runs once on the whole array
(the batch kernel): the same element-wise NumPy operation as per sample, so the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, one_of, register
from augkit.tensors import TensorList

OPS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
}
COMPARISONS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
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


def _apply(op: str, left: Any, right: Any) -> Any:
    """``left <op> right`` on arrays (samples, or whole dense batches), DALI's types."""
    if op in COMPARISONS:
        common = promote(left.dtype, right.dtype, "add")
        return COMPARISONS[op](left.astype(common), right.astype(common))
    result = promote(left.dtype, right.dtype, op)
    with np.errstate(all="ignore"):  # integer wrap-around and x/0 behave as in C++
        return OPS[op](left.astype(result), right.astype(result))


class Arithmetic(SampleOperator):
    """One element-wise operation; ``scalar`` is the constant operand, when there is one."""

    def _operands(self, samples: Sequence[Any], xp: Any, args: dict[str, Any]) -> tuple[Any, Any]:
        if len(samples) == 2:
            return samples[0], samples[1]
        scalar = xp.asarray(args["scalar"], dtype=constant_dtype(args["scalar"]))
        return (scalar, samples[0]) if args["scalar_left"] else (samples[0], scalar)

    def cpu(self, *samples: Any, op: str, **args: Any) -> Any:
        left, right = self._operands(samples, backend.array_module(samples[0]), args)
        return _apply(op, left, right)

    gpu = cpu

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        dense = [batch._dense for batch in inputs]
        if any(d is None or not isinstance(d, np.ndarray) or d.ndim == 0 for d in dense):
            return None
        if len(dense) == 2:
            dense = _aligned(dense[0], dense[1])
            if dense is None:
                return None  # shapes that broadcast only per sample: the per-sample kernel
        left, right = self._operands(dense, np, self.args)
        return [self.dense_output(_apply(self.args["op"], left, right), inputs)]

    gpu_batch = None

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        layouts = [b.layout() for b in inputs if b.layout()]
        return layouts[0] if layouts else ""


def _output_kinds(args: dict[str, Any], inputs: Sequence[OutputSpec | None]) -> list[Any]:
    """The kind of the first operand that has one (``images * 0.5`` is an image, ``labels + 1``
    labels), but encoded bytes changed by arithmetic are no file: generic. Comparisons give
    generic bools. Shapes are not known (a per-sample scalar broadcasts)."""
    if args.get("op") in COMPARISONS:
        return [None]
    kind = next((s.kind for s in inputs if s is not None and not s.kind.is_generic), None)
    if kind is None or kind.name == "encoded":
        return [None]
    return [OutputSpec(kind=kind)]


def _aligned(a: np.ndarray, b: np.ndarray) -> list[np.ndarray] | None:
    """Two dense batches shaped so that they combine as their samples do: samples of one shape,
    or one side a per-sample scalar (shape () or (1,)), which broadcasts over the other's
    sample; ``None`` for other shapes."""
    sa, sb = a.shape[1:], b.shape[1:]
    if sa == sb:
        return [a, b]
    n = len(a)
    if sb in ((), (1,)) and len(sa) >= len(sb):
        return [a, b.reshape((n,) + (1,) * len(sa))]
    if sa in ((), (1,)) and len(sb) >= len(sa):
        return [a.reshape((n,) + (1,) * len(sb)), b]
    return None


register(
    OperatorSchema(
        name="_arithmetic",
        class_name="_Arithmetic",
        impl=Arithmetic,
        role="internal",
        min_inputs=1,
        max_inputs=2,
        devices=("cpu", "gpu"),
        output_kinds=_output_kinds,
        doc="An element-wise +, -, *, / or comparison on nodes (made by DataNode's operators).",
        args=[
            Arg("op", "the operation", "add", one_of(*OPS, *COMPARISONS)),
            Arg("scalar", "the constant operand, if any", None),
            Arg("scalar_left", "the constant is the left operand", False),
        ],
    )
)
