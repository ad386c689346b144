"""``fn.copy``, ``fn.zeros_like``, ``fn.ones_like``, ``fn.full_like``, ``fn.cast_like`` and
``fn.shapes``: operators that take their shape, type or values from an input.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- ``copy`` returns a copy of each sample with its layout; the data kind is kept (a copy of
  images is images).
- ``zeros_like`` / ``ones_like``: the input's shape, type and layout; ``dtype`` overrides the
  type. ``full_like(data_like, fill_value)``: the shape, type and layout of ``data_like``;
  ``fill_value`` is DALI's second positional input (a node: one value or array per sample),
  broadcast NumPy-style to the shape (``(4,)`` fills the last axis of an HWC sample of 4
  channels) and converted to ``data_like``'s type as DALI converts (rounded half away from
  zero, saturated: 7.7 -> 8, -3.6 -> 0, 300 -> 255 for uint8). In a pipeline the fill value
  must be a node for now (DALI also takes a Python constant there; augkit's graph does not
  turn constants into nodes yet); ``augkit.eager`` and debug mode take arrays.
- ``cast_like(x, like)``: ``x`` converted to ``like``'s type (``convert_sat``, as ``fn.cast``),
  with ``x``'s layout. On the GPU too (one kernel for both: ``convert_sat`` on the sample's
  array module), as DALI has it; auto_aug's contrast and auto_contrast end in it.
- ``shapes``: each sample's shape as a 1-D array, ``dtype`` INT64 by default (also INT32,
  UINT32, UINT64, FLOAT, FLOAT64, as in DALI; other types are refused), no layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    keeps_kind,
    register,
    to_dtype,
)
from augkit.operators.tensors.shape import SameBatchSize
from augkit.tensors import TensorList


def _layout_of_first(
    args: dict[str, Any], inputs: Sequence[OutputSpec | None]
) -> list[OutputSpec | None]:
    """Generic data with the first input's rank and layout."""
    first = inputs[0] if inputs else None
    if first is None:
        return [None]
    return [OutputSpec(ndim=first.ndim, layout=first.layout)]


class Copy(SampleOperator):
    def cpu(self, sample: Any, **_: Any) -> Any:
        return np.array(sample)


class ZerosLike(SampleOperator):
    fill = 0

    def cpu(self, sample: Any, *, dtype: Any, **_: Any) -> Any:
        kind = sample.dtype if dtype is None else dtype.numpy
        if self.fill == 0:
            return np.zeros(sample.shape, kind)  # calloc: pages are zeroed as they are used
        return np.full(sample.shape, self.fill, kind)

    def empty_dtype(self, index: int) -> Any:
        dtype = self.args.get("dtype")
        return dtype.numpy if dtype is not None else None


class OnesLike(ZerosLike):
    fill = 1


class FullLike(SameBatchSize, SampleOperator):
    def cpu(self, sample: Any, fill_value: Any, **_: Any) -> Any:
        fill = np.asarray(fill_value)
        if fill.dtype.kind not in "biuf":
            raise ValueError(f"fill_value must be numbers, got type {fill.dtype}")
        try:
            fill = np.broadcast_to(fill, sample.shape)
        except ValueError:
            raise ValueError(
                f"the fill value of shape {fill.shape} does not broadcast to the shape "
                f"{tuple(sample.shape)} of data_like"
            ) from None
        with np.errstate(invalid="ignore"):
            return np.ascontiguousarray(convert_sat(fill, sample.dtype))


class CastLike(SameBatchSize, SampleOperator):
    """``convert_sat`` to ``like``'s type, on NumPy or CuPy (``like``'s data is not read)."""

    def cpu(self, sample: Any, like: Any, **_: Any) -> Any:
        if sample.dtype == like.dtype:
            return sample
        with np.errstate(invalid="ignore", over="ignore"):
            return convert_sat(sample, like.dtype, backend.array_module(sample))

    gpu = cpu


_SHAPE_TYPES = (types.INT32, types.UINT32, types.INT64, types.UINT64, types.FLOAT, types.FLOAT64)


@described("types.INT32, types.UINT32, types.INT64, types.UINT64, types.FLOAT or types.FLOAT64")
def _shape_dtype(value: Any) -> types.DALIDataType:
    dtype = to_dtype(value)
    if dtype not in _SHAPE_TYPES:
        names = ", ".join(f"types.{t.name}" for t in _SHAPE_TYPES)
        raise ValueError(f"shapes can be given as {names}; got types.{dtype.name}")
    return dtype


class Shapes(SampleOperator):
    def cpu(self, sample: Any, *, dtype: types.DALIDataType, **_: Any) -> Any:
        return np.array(sample.shape, dtype.numpy)

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return ""


def _shapes_kind(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    return [OutputSpec(ndim=1, layout="", what="1-D shapes")]


_DTYPE = Arg("dtype", "the output type (default: the input's)", None, to_dtype)

register(
    OperatorSchema(
        name="copy",
        class_name="Copy",
        impl=Copy,
        output_kinds=keeps_kind,
        doc="A copy of each sample, with its layout (and data kind).",
    )
)

register(
    OperatorSchema(
        name="zeros_like",
        class_name="ZerosLike",
        impl=ZerosLike,
        output_kinds=_layout_of_first,
        doc="Zeros of the input's shape, type and layout (``dtype`` overrides the type).",
        args=[_DTYPE],
    )
)

register(
    OperatorSchema(
        name="ones_like",
        class_name="OnesLike",
        impl=OnesLike,
        output_kinds=_layout_of_first,
        doc="Ones of the input's shape, type and layout (``dtype`` overrides the type).",
        args=[_DTYPE],
    )
)

register(
    OperatorSchema(
        name="full_like",
        class_name="FullLike",
        impl=FullLike,
        min_inputs=2,
        max_inputs=2,
        output_kinds=_layout_of_first,
        doc=(
            "``fill_value`` (the second input: a value or array per sample, broadcast) in the "
            "shape, type and layout of ``data_like`` (the first); converted as DALI converts."
        ),
    )
)

register(
    OperatorSchema(
        name="cast_like",
        class_name="CastLike",
        impl=CastLike,
        min_inputs=2,
        max_inputs=2,
        output_kinds=_layout_of_first,
        devices=("cpu", "gpu"),
        doc=(
            "The first input converted to the type of the second (rounded half away from zero "
            "and saturated, as ``fn.cast``), with the first's layout."
        ),
    )
)

register(
    OperatorSchema(
        name="shapes",
        class_name="Shapes",
        impl=Shapes,
        output_kinds=_shapes_kind,
        doc="The shape of each sample, as a 1-D array of ``dtype`` (INT64 by default).",
        args=[Arg("dtype", "the output type", types.INT64, _shape_dtype)],
    )
)
