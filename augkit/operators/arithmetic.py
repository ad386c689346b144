"""Arithmetic, comparisons and ``augkit.math`` on nodes: ``images * 2``, ``a // b``, ``x ** 2``,
``mask & 1``, ``-x``, ``coin == 1``, ``math.clamp(x, 0, 255)``, ``math.atan2(y, x)`` in a
pipeline definition (normal and debug mode), as DALI's mathematical expressions. The nodes are
made by ``DataNode``'s operators (``augkit.graph``) and by the functions of ``augkit.math``.

At least one operand is a node; the others may be nodes or Python ``bool``/``int``/``float``
(DALI's constants: bool, int32, float32). Shapes broadcast as NumPy's do (DALI 2.4 does the
same: ``(4, 5) + (5,)`` and ``(4, 5) + (4, 1)`` work, ``(4, 5) + (5, 4)`` is an error).

Result types follow DALI's promotion table (``promote``):

- same type -> that type; a float with a non-float -> the float; two floats, two signed or two
  unsigned integers -> the wider; signed intX with unsigned uintY -> int(2Y) when X <= Y
  (capped at int64), else intX. So ``uint8 + 300`` is int32 (300 is an int32 constant),
  ``uint8 + 0.5`` float32.
- ``/`` is true division: float32, or float64 when an operand is float64.
- unary ``-``, ``+``, ``~`` and ``math.abs`` keep the type (``-uint8`` wraps around, as in C++).
- the float functions (``sqrt``, ``exp``, ``sin``, ``floor``, ``ceil``, ``fabs``, ``fpow``,
  ``atan2``...) give float32 for integer inputs and keep float64.

Measured on DALI 2.4 (CPU) and kept here:

- ``//`` on integers divides and truncates toward zero (C++: ``-7 // 2 == -3``, not Python's
  -4); on floats it is plain division (``2.5 // 2 == 1.25``). ``%`` is C++'s remainder, with
  the sign of the dividend (``-7 % 2 == -1``); ``fmod`` for floats. An integer ``//`` or ``%``
  by zero is an error naming the sample (DALI's pipeline dies of it).
- integer ``**`` (and ``math.pow``) wraps around (``2 ** 31 == -2**31`` in int32); a negative
  exponent gives 0, except for a base of 1 (1) or -1 (±1).
- ``<<``/``>>`` shift by the count modulo the type's width (x86, as DALI's kernels do);
  ``>>`` of a signed value is arithmetic.
- ``&``, ``|``, ``^`` and ``~`` need integer or bool operands (bool & bool is bool: DALI's
  logical operators); floats are an error naming the operator.
- ``math.min(a, b)`` is ``a < b ? a : b`` and ``math.max(a, b)`` ``a > b ? a : b`` (a NaN in
  ``a`` loses to ``b``); ``math.clamp(x, lo, hi)`` is C++'s ``std::min(std::max(x, lo), hi)``
  (a NaN stays NaN; ``lo > hi`` gives ``hi``).
- DALI 2.4 compares a float node with a *negative* int constant wrongly (``x < -1`` is False
  for x = -1.78, ``x > -1`` True for x = -5; ``x < -1.0`` is right); augkit compares in the
  promoted type, as the promotion table says, and does not copy that.
- DALI refuses bool ``+``/``-``/``/`` and float16 on the CPU; augkit computes them (bool + bool
  is bool, float16 is float16), in NumPy's way.

Floating-point results are NumPy's (float32 ``sin``/``exp``... within an ulp or two of the C
library's, which DALI uses: ``tests/dali_parity/cases_math.py`` measures it).

On dense batches (one array each, e.g. random values) the operation runs once on the whole
array (the batch kernel): the same element-wise NumPy operation as per sample, so the same
numbers.

On the GPU (``device="gpu"``) the per-sample kernel is the same code on CuPy arrays: every
operation is taken from the sample's array module (``xp.add``, ``xp.equal``...), so no NumPy
function sees a CuPy array. Float functions are CuPy's (CUDA's libm: within an ulp or two).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, one_of, register
from augkit.tensors import TensorList


def _require_integers(name: str, *arrays: Any) -> None:
    for a in arrays:
        if a.dtype.kind not in "biu":
            raise TypeError(
                f"the bitwise operator {name} needs integer or bool operands, got {a.dtype}"
            )


def _int_division(op: str, a: Any, b: Any, xp: Any) -> Any:
    """C++'s integer ``/`` (truncating) or ``%`` (sign of the dividend); a zero divisor is an
    error, as it is in C++."""
    if bool(xp.any(b == 0)):
        raise ZeroDivisionError(f"integer {'//' if op == 'floordiv' else '%'} by zero")
    remainder = xp.fmod(a, b)
    if op == "mod":
        return remainder
    quotient = xp.floor_divide(a, b)
    # NumPy floors; C++ truncates: one more where the signs differ and it does not divide.
    fix = (remainder != 0) & ((a < 0) != (b < 0))
    return quotient + fix.astype(quotient.dtype)


def _int_power(a: Any, b: Any, xp: Any) -> Any:
    """Integer power, wrapping around; a negative exponent gives 0 (1 for a base of 1, ±1 for
    a base of -1), as DALI's kernel does."""
    a, b = xp.broadcast_arrays(a, b)
    negative = b < 0
    out = xp.power(a, xp.where(negative, 0, b).astype(b.dtype))
    if bool(xp.any(negative)):
        one = xp.ones_like(a)
        small = xp.where(a == 1, one, xp.zeros_like(a))
        if a.dtype.kind == "i":
            small = xp.where(a == -1, xp.where(b % 2 != 0, -one, one), small)
        out = xp.where(negative, small, out)
    return out


def _shift(op: str, a: Any, b: Any, xp: Any) -> Any:
    bits = a.dtype.itemsize * 8
    count = (b.astype(np.int64) & (bits - 1)).astype(a.dtype)
    return xp.left_shift(a, count) if op == "lshift" else xp.right_shift(a, count)


def _true_divide(a: Any, b: Any, xp: Any) -> Any:
    return xp.true_divide(a, b)


# Operations whose operands are converted to the promoted type first (binary ones).
BINARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda a, b, xp: xp.add(a, b),
    "sub": lambda a, b, xp: xp.subtract(a, b),
    "mul": lambda a, b, xp: xp.multiply(a, b),
    "truediv": _true_divide,
    "floordiv": lambda a, b, xp: (
        _int_division("floordiv", a, b, xp) if a.dtype.kind in "iub" else xp.true_divide(a, b)
    ),
    "mod": lambda a, b, xp: (
        _int_division("mod", a, b, xp) if a.dtype.kind in "iub" else xp.fmod(a, b)
    ),
    "pow": lambda a, b, xp: (
        _int_power(a, b, xp)
        if a.dtype.kind in "iu"
        else _int_power(a.astype(np.uint8), b.astype(np.uint8), xp).astype(bool)
        if a.dtype.kind == "b"
        else xp.power(a, b)
    ),
    "and": lambda a, b, xp: xp.bitwise_and(a, b),
    "or": lambda a, b, xp: xp.bitwise_or(a, b),
    "xor": lambda a, b, xp: xp.bitwise_xor(a, b),
    "lshift": lambda a, b, xp: _shift("lshift", a, b, xp),
    "rshift": lambda a, b, xp: _shift("rshift", a, b, xp),
    "min": lambda a, b, xp: xp.where(a < b, a, b),
    "max": lambda a, b, xp: xp.where(a > b, a, b),
    # float results:
    "fpow": lambda a, b, xp: xp.power(a, b),
    "atan2": lambda a, b, xp: xp.arctan2(a, b),
}
BITWISE = {"and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}
FLOAT_BINARY = {"truediv", "fpow", "atan2"}
# The comparisons' ufuncs, by name in the array module (``numpy`` or ``cupy``).
COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}
# Unary operations that keep the type.
KEEPING = {
    "neg": lambda a, xp: xp.negative(a) if a.dtype.kind != "b" else a.copy(),
    "pos": lambda a, xp: a.copy(),
    "invert": lambda a, xp: xp.invert(a),
    "abs": lambda a, xp: xp.abs(a),
}
# Unary functions with a float result (float32 for non-float inputs).
FLOAT_UNARY = {
    "fabs": "absolute",
    "floor": "floor",
    "ceil": "ceil",
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "exp": "exp",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "rsqrt": "rsqrt",
}
TERNARY = {"clamp"}
ARITY = {
    **dict.fromkeys(BINARY, 2),
    **dict.fromkeys(COMPARISONS, 2),
    **dict.fromkeys(KEEPING, 1),
    **dict.fromkeys(FLOAT_UNARY, 1),
    "clamp": 3,
}
SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    **BITWISE,
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "neg": "unary -",
    "pos": "unary +",
    "invert": "~",
}


def constant_dtype(value: Any) -> np.dtype:
    """DALI's type of a Python constant."""
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int32)
    return np.dtype(np.float32)


def promote(a: np.dtype, b: np.dtype, op: str = "add") -> np.dtype:
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


def float_type(dtype: np.dtype) -> np.dtype:
    """The type of a float function's result: float64 stays, float16 stays, else float32."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


def result_dtype(op: str, dtypes: Sequence[np.dtype]) -> np.dtype:
    """The type of ``op`` on operands of ``dtypes`` (before comparisons make bools)."""
    if op in KEEPING:
        return np.dtype(dtypes[0])
    if op in FLOAT_UNARY:
        return float_type(dtypes[0])
    common = np.dtype(dtypes[0])
    for d in dtypes[1:]:
        common = promote(common, d)
    if op == "truediv":
        return promote(dtypes[0], dtypes[1], "truediv")
    if op in FLOAT_BINARY:
        return float_type(common)
    return common


def compute(op: str, operands: Sequence[Any]) -> Any:
    """``op`` on arrays (samples, or whole dense batches), with DALI's types and semantics."""
    xp = backend.array_module(operands[0])
    dtypes = [o.dtype for o in operands]
    with np.errstate(all="ignore"):  # wrap-around, x/0, sqrt(-1): as in C++
        if op in COMPARISONS:
            common = promote(dtypes[0], dtypes[1])
            compare = getattr(xp, COMPARISONS[op])
            return compare(operands[0].astype(common), operands[1].astype(common))
        target = result_dtype(op, dtypes)
        if op in KEEPING:
            (a,) = operands
            if op == "invert":
                _require_integers("~", a)
            elif a.dtype.kind == "b" and op in ("neg", "abs"):
                raise TypeError(f"{SYMBOLS.get(op, op)} needs numbers, got bool")
            return KEEPING[op](a, xp)
        if op in FLOAT_UNARY:
            a = operands[0].astype(target)
            if op == "rsqrt":
                return (1 / xp.sqrt(a)).astype(target)
            return getattr(xp, FLOAT_UNARY[op])(a)
        if op == "clamp":
            x, low, high = (o.astype(target) for o in operands)
            above = xp.where(x < low, low, x)  # std::max(x, lo)
            return xp.where(high < above, high, above)  # std::min(., hi)
        a, b = (o.astype(target) for o in operands)
        if op in BITWISE:
            _require_integers(BITWISE[op], a, b)
        return BINARY[op](a, b, xp).astype(target, copy=False)


def _broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            "the operands' shapes " + " and ".join(str(tuple(s)) for s in shapes) + " do not "
            "broadcast (each axis, counted from the last, must be equal or 1)"
        ) from None


class Arithmetic(SampleOperator):
    """One element-wise operation. ``constants`` holds the constant operands as ``(position,
    value)`` pairs; the inputs fill the other positions, in order."""

    def _operands(self, samples: Sequence[Any], xp: Any) -> list[Any]:
        constants = dict(self.args["constants"])
        operands: list[Any] = []
        inputs = iter(samples)
        for position in range(ARITY[self.args["op"]]):
            if position in constants:
                value = constants[position]
                operands.append(xp.asarray(value, dtype=constant_dtype(value)))
            else:
                operands.append(next(inputs))
        return operands

    def cpu(self, *samples: Any, op: str, **args: Any) -> Any:
        operands = self._operands(samples, backend.array_module(samples[0]))
        _broadcast_shape([o.shape for o in operands])
        return compute(op, operands)

    gpu = cpu

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        dense = [batch.dense for batch in inputs]
        if any(d is None or not isinstance(d, np.ndarray) or d.ndim == 0 for d in dense):
            return None
        aligned = _aligned(dense)
        if aligned is None:
            return None  # shapes that broadcast only per sample: the per-sample kernel
        operands = self._operands(aligned, np)
        return [self.dense_output(compute(self.args["op"], operands), inputs)]

    gpu_batch = None

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        layouts = [b.layout() for b in inputs if b.layout()]
        return layouts[0] if layouts else ""


def _output_kinds(args: dict[str, Any], inputs: Sequence[OutputSpec | None]) -> list[Any]:
    """The kind of the first operand that has one (``images * 0.5`` is an image, ``labels + 1``
    labels), but encoded bytes changed by arithmetic are no file: generic. Comparisons give
    generic bools. Shapes are not known (per-sample values broadcast)."""
    if args.get("op") in COMPARISONS:
        return [None]
    kind = next((s.kind for s in inputs if s is not None and not s.kind.is_generic), None)
    if kind is None or kind.name == "encoded":
        return [None]
    return [OutputSpec(kind=kind)]


def _aligned(dense: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """Dense batches shaped so that they combine as their samples do: samples of one shape, or
    per-sample scalars (shape () or (1,)), which broadcast over the others' samples; ``None``
    for other shapes (the per-sample kernel broadcasts those)."""
    shapes = [d.shape[1:] for d in dense]
    target = max(shapes, key=len)
    if any(s != target and s not in ((), (1,)) for s in shapes):
        return None
    n = len(dense[0])
    return [
        d if s == target else d.reshape((n,) + (1,) * len(target))
        for d, s in zip(dense, shapes, strict=True)
    ]


def _constants(value: Any) -> tuple[tuple[int, Any], ...]:
    pairs = tuple(tuple(pair) for pair in value)
    for position, constant in pairs:
        if not isinstance(position, int) or not isinstance(
            constant, (bool, int, float, np.generic)
        ):
            raise TypeError("constants must be (position, number) pairs")
    return pairs


register(
    OperatorSchema(
        name="_arithmetic",
        class_name="_Arithmetic",
        impl=Arithmetic,
        role="internal",
        min_inputs=1,
        max_inputs=3,
        devices=("cpu", "gpu"),
        output_kinds=_output_kinds,
        doc=(
            "An element-wise operation on nodes: arithmetic, comparisons, bitwise operators "
            "(made by DataNode's operators) and augkit.math's functions."
        ),
        args=[
            Arg("op", "the operation", "add", one_of(*ARITY)),
            Arg("constants", "the constant operands, as (position, value) pairs", (), _constants),
        ],
    )
)
