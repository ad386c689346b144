"""``fn.one_hot``: a one-hot encoding of class indices along a new axis of ``num_classes``.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- A class index is the input value converted to an integer as C++ converts (truncated toward
  zero: 1.7 -> 1, -0.7 -> 0); an index outside ``[0, num_classes)`` gives a row of
  ``off_value`` only (no error).
- ``on_value``/``off_value`` are converted to ``dtype`` as a C++ ``static_cast`` does, not
  saturated: truncated toward zero, then wrapped to the type's width (``on_value=300`` in
  uint8 is 44, ``-2.5`` is 254). ``dtype`` defaults to FLOAT.
- Scalars: when ``axis`` is not given and every sample of the batch has exactly one element
  (shape ``()``, ``(1,)``, ``(1, 1)``...), each sample is one class and the output is 1-D
  ``(num_classes,)`` (DALI's legacy rule). A 0-D sample is always a scalar. With ``axis``
  given (even ``-1``), a ``(1,)`` sample gets a new axis like any other: ``(1, num_classes)``
  for ``axis=-1``, ``(num_classes, 1)`` for ``axis=0``. augkit's ``axis`` therefore defaults to
  ``None`` (DALI's -1 without the explicit-argument distinction, which DALI makes internally).
- ``axis`` is in ``[-1, ndim]``; -1 appends the new axis last. The layout: ``axis_name``
  inserted into the input's layout at the new axis (for scalars, the layout is ``axis_name``;
  otherwise the input needs a layout, as in DALI); without ``axis_name``, no layout (even when
  the input has one).

GPU (``device="gpu"``, issue 18): the kernel is written against the sample's array module
(``backend.array_module``: CuPy), ``gpu = cpu``: ``on``/``off`` are converted on the host
(NumPy scalars, moved as 0-d arrays of the output type), the comparison with ``xp.arange``
classes and ``xp.where`` run on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    register,
    to_dtype,
    to_float,
    to_int,
)
from augkit.operators.tensors.join import _letter
from augkit.operators.tensors.shape import TensorOperator
from augkit.tensors import TensorList


def static_cast(value: float, dtype: np.dtype) -> Any:
    """``value`` as C++'s ``static_cast`` to ``dtype`` gives it on x86 (truncate, then wrap)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype.type(value)
    if dtype.kind == "b":
        return np.bool_(value != 0)
    whole = int(np.trunc(value))
    bits = 8 * dtype.itemsize
    wrapped = whole % (1 << bits)
    if dtype.kind == "i" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return dtype.type(wrapped)


class OneHot(TensorOperator):
    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        samples = inputs[0].samples
        scalars = all(np.ndim(s) == 0 for s in samples) or (
            self.args["axis"] is None and all(np.size(s) == 1 for s in samples)
        )
        return {"scalars": scalars}

    def cpu(
        self,
        sample: Any,
        *,
        scalars: bool,
        num_classes: int,
        axis: int | None,
        dtype: types.DALIDataType,
        on_value: float,
        off_value: float,
        **_: Any,
    ) -> Any:
        kind = np.dtype(dtype.numpy)
        on, off = static_cast(on_value, kind), static_cast(off_value, kind)
        if sample.dtype.kind not in "biuf":
            raise ValueError(f"class indices must be numbers, got type {sample.dtype}")
        xp = backend.array_module(sample)
        values = sample.reshape(()) if scalars else sample
        ndim = values.ndim
        if values.size * num_classes > 2**31 - 1:
            raise ValueError(
                f"the output would have {values.size * num_classes} elements, more than {2**31 - 1}"
            )
        where = ndim if axis is None or axis == -1 else axis
        if not 0 <= where <= ndim:
            raise ValueError(f"axis {axis} is out of range [-1, {ndim}] for {ndim}-D inputs")
        with np.errstate(invalid="ignore"):
            index = xp.trunc(values).astype(np.int64) if values.dtype.kind == "f" else values
        classes = xp.arange(num_classes).reshape((-1,) + (1,) * (ndim - where))
        hot = xp.expand_dims(index, where) == classes
        return xp.where(hot, xp.asarray(on), xp.asarray(off))  # 0-d arrays of ``kind``

    gpu = cpu

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        name = args["axis_name"]
        if name is None:
            return ""
        if out_ndim == 1:
            return name
        if len(in_layout) != out_ndim - 1:
            raise ValueError(
                f"axis_name needs an input with a layout (or scalars); the input has "
                f"{out_ndim - 1} dimensions and layout {in_layout!r}"
            )
        axis = args["axis"]
        where = out_ndim - 1 if axis is None or axis == -1 else axis
        return in_layout[:where] + name + in_layout[where:]


register(
    OperatorSchema(
        name="one_hot",
        class_name="OneHot",
        impl=OneHot,
        devices=("cpu", "gpu"),
        doc=(
            "One-hot encodes class indices along a new axis of ``num_classes`` entries "
            "(``on_value`` at the class, ``off_value`` elsewhere). Samples of one element are "
            "scalars (a 1-D output) unless ``axis`` is given."
        ),
        args=[
            Arg("num_classes", "the number of classes", 0, to_int(0, 2**31 - 1)),
            Arg(
                "axis",
                "where the new axis goes, in [-1, ndim] (default: last; scalars: DALI's rule)",
                None,
                to_int(-1),
            ),
            Arg("dtype", "the output type", types.FLOAT, to_dtype),
            Arg("on_value", "the value at the class", 1.0, to_float()),
            Arg("off_value", "the value elsewhere", 0.0, to_float()),
            Arg("axis_name", "the new axis's layout letter", None, _letter),
        ],
    )
)
