"""Random operators: they produce per-sample values (DALI's ``fn.random.*``) that other
operators take as argument inputs, e.g. ``fn.rotate(x, angle=fn.random.uniform(range=(-30,
30)))``. They are the only kernels that see randomness: each draws a whole batch at once from
the counter-based streams of its samples (``augkit.random.SampleStreams``, keyed by operator
seed, shard, iteration and sample), a microsecond or two per sample.

Decisions and traps:

- ``uniform`` over ``range=[low, high)`` never returns ``high``: values are drawn from 24 random
  bits (float16/float32 outputs) or 53 (float64), scaled in float64 and converted; a value that
  rounds up to ``high`` in the output type becomes the largest value of that type below
  ``high`` (with ``range=[10, nextafter(10, 11)]`` every value is 10, as in DALI). Integer
  outputs are the continuous draw converted as DALI converts (rounded half away from zero,
  saturated), so they can equal ``high``, as in DALI.
- ``values``: each is picked with equal probability (``floor(u * len(values))``).
- ``coin_flip``: 1 where ``u < probability`` (53-bit ``u``), per sample when ``probability``
  is an argument input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError
from augkit.operators.base import RandomOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
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


def _kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    ndim = len(args.get("shape") or ())
    return [OutputSpec(ndim=ndim, layout="", what=f"{ndim}-D random values")]


def _below(values: np.ndarray, high: float) -> np.ndarray:
    """``values`` with every element at or above ``high`` set to the largest value of their
    type below ``high`` (float rounding must not reach an excluded bound)."""
    largest = values.dtype.type(high)
    if float(largest) >= high:
        largest = np.nextafter(largest, values.dtype.type(-np.inf))
    return np.where(values.astype(np.float64) >= high, largest, values)


class Uniform(RandomOperator):
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

    def draw(self, streams: Any, args: dict[str, Any], columns: dict[str, Any]) -> np.ndarray:
        shape, dtype = args["shape"], np.dtype(args["dtype"].numpy)
        count = math.prod(shape)
        n = len(streams)
        values = args["values"]
        if values:
            u = streams.uniform(count)
            index = np.minimum((u * len(values)).astype(np.int64), len(values) - 1)
            out = np.asarray(values, np.float64)[index]
            return convert_sat(out, dtype).reshape((n, *shape))
        low, high = args["range"]
        small = dtype.kind == "f" and dtype.itemsize <= 4
        u = streams.uniform(count, np.float32 if small else np.float64).astype(np.float64)
        out = low + u * (high - low)
        if dtype.kind == "f":
            with np.errstate(over="ignore"):
                out = _below(out.astype(dtype), high)
        else:
            out = convert_sat(out, dtype)
        return out.reshape((n, *shape))


class CoinFlip(RandomOperator):
    def draw(self, streams: Any, args: dict[str, Any], columns: dict[str, Any]) -> np.ndarray:
        shape = args["shape"]
        n = len(streams)
        u = streams.uniform(math.prod(shape)).reshape((n, *shape))
        probability = columns.get("probability")
        if probability is None:
            probability = np.full(n, args["probability"])
        p = np.asarray(probability, np.float64).reshape((n,) + (1,) * len(shape))
        return (u < p).astype(args["dtype"].numpy)


register(
    OperatorSchema(
        name="random.uniform",
        class_name="random.Uniform",
        impl=Uniform,
        min_inputs=0,
        max_inputs=0,
        output_kinds=_kinds,
        role="random",
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
        role="random",
        aliases=("CoinFlip",),
        doc="1 with probability ``probability``, else 0 (e.g. ``mirror=fn.random.coin_flip()``).",
        args=[
            Arg("probability", "chance of a 1", 0.5, to_float(0.0, 1.0), per_sample=True),
            _SHAPE,
            _dtype_arg(types.INT32),
        ],
    )
)
