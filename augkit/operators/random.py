"""Random operators: they produce per-sample values (DALI's ``fn.random.*``) that other
operators take as argument inputs, e.g. ``fn.rotate(x, angle=fn.random.uniform(range=(-30,
30)))``. Their kernels draw from the stream of (operator seed, iteration, sample) that
``SampleOperator`` hands them as ``rng``; they are the only kernels that see randomness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError
from augkit.operators.base import SampleOperator
from augkit.operators.registry import (
    Arg,
    DataKind,
    OperatorSchema,
    described,
    register,
    to_dtype,
    to_float,
    to_floats,
    to_ints,
)

_MAX_ELEMENTS = 2**31 - 1


@described(f"a list of integers >= 0, at most {_MAX_ELEMENTS} (and as many elements in all)")
def _shape(value: Any) -> tuple[int, ...]:
    shape = to_ints(low=0)(value)
    if math.prod(shape) > _MAX_ELEMENTS or any(n > _MAX_ELEMENTS for n in shape):
        raise ValueError(f"shape {shape} has more than {_MAX_ELEMENTS} elements")
    return shape


_SHAPE = Arg("shape", "shape of each sample's value (default: one scalar, shape ())", (), _shape)


def _dtype_arg(default: types.DALIDataType) -> Arg:
    return Arg("dtype", "output data type", default, to_dtype)


@described("(low, high), two numbers with low < high")
def _range(value: Any) -> tuple[float, float]:
    low, high = to_floats(2)(value)
    if not low < high:
        raise ValueError(f"range must be (low, high) with low < high, got ({low}, {high})")
    return low, high


def _kinds(args: dict[str, Any], inputs: Any) -> list[DataKind]:
    ndim = len(args.get("shape") or ())
    return [DataKind(ndim=ndim, layout="", content="numbers", what=f"{ndim}-D random values")]


class Uniform(SampleOperator):
    random = True

    def setup(self) -> None:
        dtype = self.args["dtype"]
        numbers = self.args["values"] or self.args["range"]
        kind = np.dtype(dtype.numpy)
        info = np.finfo(kind) if kind.kind == "f" else np.iinfo(kind) if kind.kind in "iu" else None
        if info is not None and not all(float(info.min) <= v <= float(info.max) for v in numbers):
            which = "values" if self.args["values"] else "range"
            raise ArgumentError(
                f"{self.schema.class_name}: {which} {tuple(numbers)} does not fit dtype "
                f"types.{dtype.name} (from {info.min} to {info.max})"
            )

    def cpu(
        self,
        *,
        rng: np.random.Generator,
        range: tuple[float, float],
        values: tuple[float, ...] | None,
        shape: tuple[int, ...],
        dtype: Any,
        **_: Any,
    ) -> np.ndarray:
        if values:
            out = np.asarray(values)[rng.integers(0, len(values), size=shape)]
        else:
            out = rng.uniform(range[0], range[1], size=shape)
        return np.asarray(out, dtype=dtype.numpy)


class CoinFlip(SampleOperator):
    random = True

    def cpu(
        self,
        *,
        rng: np.random.Generator,
        probability: float,
        shape: tuple[int, ...],
        dtype: Any,
        **_: Any,
    ) -> np.ndarray:
        return np.asarray(rng.random(size=shape) < probability, dtype=dtype.numpy)


register(
    OperatorSchema(
        name="random.uniform",
        class_name="random.Uniform",
        impl=Uniform,
        min_inputs=0,
        max_inputs=0,
        output_kinds=_kinds,
        aliases=("Uniform",),
        doc="Values drawn uniformly from ``range`` [low, high), or from the discrete ``values``.",
        args=[
            Arg("range", "the interval [low, high) to draw from", (-1.0, 1.0), _range),
            Arg(
                "values",
                "discrete values to draw from with equal probability (overrides range)",
                None,
                to_floats(),
            ),
            _SHAPE,
            _dtype_arg(types.FLOAT),
        ],
    )
)

register(
    OperatorSchema(
        name="random.coin_flip",
        class_name="random.CoinFlip",
        impl=CoinFlip,
        min_inputs=0,
        max_inputs=0,
        output_kinds=_kinds,
        aliases=("CoinFlip",),
        doc="1 with probability ``probability``, else 0 (e.g. ``mirror=fn.random.coin_flip()``).",
        args=[
            Arg("probability", "chance of a 1", 0.5, to_float(0.0, 1.0), per_sample=True),
            _SHAPE,
            _dtype_arg(types.INT32),
        ],
    )
)
