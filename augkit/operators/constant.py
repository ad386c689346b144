"""``_value``: a Python constant given as an operator's input (``fn.full_like(x, 7)``,
``fn.reductions.std_dev(x, 5.0)``), as DALI's ``types.Constant``: the same value for every sample
of the batch. Internal: ``augkit.graph`` makes the node when an input is a number, a list of
numbers or a NumPy array.

Types as DALI gives a constant: a Python ``int`` is int32, a ``float`` float32, a ``bool`` bool;
a list of them the same (a list of ints is an int32 vector); a NumPy array or scalar keeps its
dtype. Outside int32's range a Python int is an error (DALI's too).

``fn.constant(fdata=/idata=, shape=, dtype=, layout=)``: DALI's public constant operator, the
same tensor for every sample (``types.Constant`` makes it for arrays and lists). Measured on
DALI 2.4 (``tests/subscript_reference.py``):

- exactly one of ``fdata`` (floats) and ``idata`` (integers); a single number is a list of one,
  so ``fn.constant(idata=5)`` has shape ``(1,)`` (``shape=[]`` makes it 0-D).
- ``shape``: default ``(len(data),)``; one value fills any shape (broadcast), otherwise the
  number of values must be the shape's volume. ``layout`` must have one letter per dimension.
- ``dtype``: default FLOAT for ``fdata``, INT32 for ``idata``. Values convert as DALI's
  ``ConvertSat``: floats round half away from zero (2.5 -> 3, -2.5 -> -3) and saturate (300.2 in
  uint8 is 255, 1e10 in int32 is 2**31 - 1); integers saturate too (``idata=[2**31 + 5]`` is
  2**31 - 1). FLOAT64 is refused ("Unsupported type: double"), as in DALI.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import OperatorError
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, register, to_dtype
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


def _numbers(kind: type) -> Any:
    def convert(value: Any) -> tuple:
        values = value.tolist() if isinstance(value, np.ndarray) else value
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        for v in values:
            if isinstance(v, (list, tuple)) or not isinstance(v, (Real, np.generic)):
                raise ValueError(f"expected a number or a flat list of numbers, got {value!r}")
            if kind is int and not isinstance(v, (Integral, np.integer, np.bool_)):
                raise ValueError(f"idata takes integers, got {v!r} in {value!r}")
        return tuple(kind(v) for v in values)

    convert.allowed = f"a {kind.__name__} or a list of them"  # type: ignore[attr-defined]
    return convert


def _shape(value: Any) -> tuple[int, ...]:
    values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    # typeshed's numbers.Real declares only __lt__ and __le__ (as the ABC does)
    if not all(isinstance(v, (Integral, np.integer)) and v >= 0 for v in values):  # type: ignore[operator]
        raise ValueError(f"shape must be extents >= 0, got {value!r}")
    return tuple(int(v) for v in values)


def _layout_arg(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"layout must be a string, got {value!r}")
    return value


def constant_array(args: dict[str, Any]) -> np.ndarray:
    """The tensor ``fn.constant`` gives every sample, from its arguments (DALI's rules: the
    module docstring).

    Raises:
        ValueError: both or neither of ``fdata``/``idata``, a volume or layout that does not fit
            the shape, or FLOAT64.
    """
    fdata, idata = args.get("fdata"), args.get("idata")
    if fdata is not None and idata is not None:
        raise ValueError("`fdata` and `idata` arguments are mutually exclusive")
    if fdata is None and idata is None:
        raise ValueError("either `fdata` or `idata` must be present")
    data = fdata if fdata is not None else idata
    assert data is not None  # one of fdata and idata (checked above)
    dtype = args.get("dtype")
    if dtype is None:
        dtype = types.FLOAT if fdata is not None else types.INT32
    if dtype == types.FLOAT64:
        raise ValueError("Unsupported type: double (FLOAT64; DALI's constant has no float64)")
    shape = args.get("shape")
    shape = (len(data),) if shape is None else tuple(shape)
    volume = int(np.prod(shape, dtype=np.int64))
    if len(data) != 1 and len(data) != volume:
        raise ValueError(
            f"The number of values ({len(data)}) does not match the shape specified {list(shape)}"
        )
    layout = args.get("layout") or ""
    if layout and len(layout) != len(shape):
        raise ValueError(
            f'The requested layout "{layout}" has dimensionality which is incompatible with the '
            f"requested output shape {list(shape)}"
        )
    from augkit.operators.color.cast import convert_sat

    values: np.ndarray
    if fdata is not None:
        values = np.array(data, np.float32)
    else:
        info = np.iinfo(np.int64)
        values = np.array([min(max(v, info.min), info.max) for v in data], np.int64)
    values = np.asarray(convert_sat(values, dtype.numpy))
    if len(data) == 1:
        return np.broadcast_to(values.reshape(()), shape).copy()
    return values.reshape(shape)


def _check_constant(given: dict[str, Any]) -> None:
    """At graph time, what can be checked from the arguments given together (an ``ops``
    object may get ``fdata`` at the call: then the run checks)."""
    if "fdata" in given or "idata" in given:
        constant_array(given)


class ConstantOp(OperatorImpl):
    """``fn.constant``: the tensor, once per sample, as a dense read-only batch."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        try:
            value = constant_array(self.args)
        except ValueError as exc:
            raise OperatorError(str(exc), operator=self.label()) from None
        batch = np.repeat(value[None], ctx.batch_size, axis=0)
        return [TensorList.from_array(finish(batch), self.args.get("layout") or "")]


def _constant_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    shape, data = args.get("shape"), args.get("fdata") or args.get("idata")
    ndim = len(shape) if shape is not None else (1 if data is not None else None)
    return [OutputSpec(ndim=ndim, layout=args.get("layout") or "", what="a constant")]


register(
    OperatorSchema(
        name="constant",
        class_name="Constant",
        impl=ConstantOp,
        min_inputs=0,
        max_inputs=0,
        output_kinds=_constant_kinds,
        validate=_check_constant,
        doc=(
            "The same tensor for every sample: ``fdata`` (floats) or ``idata`` (integers), of "
            "``shape`` (one value fills it), converted to ``dtype`` as DALI's ConvertSat does."
        ),
        args=[
            Arg("fdata", "the values, as floats (or one float)", None, _numbers(float)),
            Arg("idata", "the values, as integers (or one integer)", None, _numbers(int)),
            Arg("shape", "the tensor's shape (default: the number of values)", None, _shape),
            Arg("dtype", "the type (default: FLOAT for fdata, INT32 for idata)", None, to_dtype),
            Arg("layout", "the tensor's layout (one letter per dimension)", None, _layout_arg),
        ],
    )
)
