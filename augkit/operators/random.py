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
- Argument inputs, as in DALI: ``uniform``'s ``range``, ``values`` and ``shape``,
  ``coin_flip``'s ``probability`` and ``shape`` may be per sample. Samples of different shapes
  or parameters are drawn one by one from their own streams (``Draws``), with the values the
  whole-batch draw would give them; a batch of one shape and one set of parameters is drawn
  at once, as before. A per-sample ``range``/``values`` that does not fit ``dtype`` is an error
  when drawn (a constant one, when the pipeline is built).
- A per-sample ``shape`` is not seen by the build-time checks (``output_kinds`` gets the
  constant arguments only): they take such draws as 0-D.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError, AugkitError
from augkit.operators.base import RandomOperator, RunContext, finish
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
from augkit.random import SampleStreams
from augkit.tensors import TensorList

_MAX_ELEMENTS = 2**31 - 1


@described(
    f"an integer >= 0 or a list of them, at most {_MAX_ELEMENTS} elements in all (or one list "
    f"per sample)"
)
def _shape(value: Any) -> tuple[int, ...]:
    shape = to_ints(low=0)(value)
    if math.prod(shape) > _MAX_ELEMENTS or any(n > _MAX_ELEMENTS for n in shape):
        raise ValueError(f"shape {shape} has more than {_MAX_ELEMENTS} elements")
    return shape


_SHAPE = Arg(
    "shape",
    "shape of each sample's values (default: the shape of ``shape_like``, else one scalar)",
    None,
    _shape,
    per_sample=True,
)


def _dtype_arg(default: types.DALIDataType) -> Arg:
    return Arg("dtype", "output data type", default, to_dtype)


@described("(low, high), two numbers with low < high")
def _range(value: Any) -> tuple[float, float]:
    low, high = to_floats(2)(value)
    if not low < high:
        raise ValueError(f"range must be (low, high) with low < high, got ({low}, {high})")
    return low, high


def _kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    shape = args.get("shape")
    if shape is None and inputs:  # the shapes of shape_like
        return [OutputSpec(layout="")]
    # A per-sample shape is not in ``args`` (argument nodes are not): it is taken as 0-D here.
    ndim = len(shape or ())
    return [OutputSpec(ndim=ndim, layout="", what=f"{ndim}-D random values")]


def _below(values: np.ndarray, high: float) -> np.ndarray:
    """``values`` with every element at or above ``high`` set to the largest value of their
    type below ``high`` (float rounding must not reach an excluded bound)."""
    largest = values.dtype.type(high)
    if float(largest) >= high:
        largest = np.nextafter(largest, values.dtype.type(-np.inf))
    return np.where(values.astype(np.float64) >= high, largest, values)


class Draws(RandomOperator):
    """A random operator whose samples may differ in shape and parameters (per-sample
    ``shape`` and parameters, or the shapes of a ``shape_like`` input): ``values(streams,
    shape, params)`` draws the values of the samples of ``streams`` (all of ``shape``), with
    ``params`` the parameters named in ``params`` (``column``: by default one float64 array of
    ``len(streams)`` per parameter). Where every sample has one shape and ``uniform_params``,
    the whole batch is drawn at once (a dense batch); otherwise sample by sample, each from its
    own stream, with the same values as the dense draw would give it."""

    params: tuple[str, ...] = ()

    def values(self, streams: SampleStreams, shape: tuple[int, ...], params: dict) -> np.ndarray:
        raise NotImplementedError

    def sample_shapes(self, inputs: Sequence[TensorList], shapes: list | None, n: int) -> list:
        if shapes is not None:
            return shapes
        if self.args.get("shape") is not None:
            return [tuple(self.args["shape"])] * n
        if inputs:
            return [tuple(s) for s in inputs[0].shape()]
        return [()] * n

    def param_columns(self, arg_inputs: dict[str, TensorList], n: int) -> dict[str, list]:
        columns = {}
        for key in self.params:
            if key in arg_inputs:
                columns[key] = [self.sample_args({key: arg_inputs[key]}, i)[key] for i in range(n)]
            else:
                columns[key] = [self.args[key]] * n
        return columns

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        n = len(inputs[0]) if inputs else ctx.batch_size
        if inputs and ("shape" in arg_inputs or self.args.get("shape") is not None):
            raise self.fail(
                "give either shape or a shape_like input, not both (DALI refuses both)",
                None,
                inputs,
            )
        shapes = None
        if "shape" in arg_inputs:
            shapes = [tuple(self.sample_args(arg_inputs, i)["shape"]) for i in range(n)]
        shapes = self.sample_shapes(inputs, shapes, n)
        columns = self.param_columns(arg_inputs, n)
        source = inputs[0]._source_info if inputs else None
        try:
            if n and all(s == shapes[0] for s in shapes) and self.uniform_params(columns):
                streams = ctx.streams(self.stream_key, n)
                params = {k: self.column(k, v) for k, v in columns.items()}
                out = self.values(streams, shapes[0], params)
                return [TensorList.from_array(finish(out), "", source)]
            samples = []
            ids = ctx.sample_ids if ctx.sample_ids is not None else np.arange(n)
            for i in range(n):
                streams = SampleStreams(self.stream_key, ctx.iteration, ids[i : i + 1])
                params = {k: self.column(k, v[i : i + 1]) for k, v in columns.items()}
                samples.append(finish(self.values(streams, shapes[i], params)[0]))
        except AugkitError:
            raise
        except (ValueError, TypeError) as exc:
            raise self.fail(str(exc), None, inputs) from None
        return [TensorList(samples, "", source, dtype=self.empty_dtype(0))]

    def empty_dtype(self, index: int) -> Any:
        dtype = self.args.get("dtype")
        return dtype.numpy if isinstance(dtype, types.DALIDataType) else None

    def uniform_params(self, columns: dict[str, list]) -> bool:
        """Whether the parameters stack into arrays (the dense path)."""
        return True

    def column(self, key: str, values: list) -> np.ndarray:
        return np.asarray(values, np.float64)


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (
            isinstance(x, np.ndarray)
            and isinstance(y, np.ndarray)
            and x.dtype == y.dtype
            and np.array_equal(x, y)
        )
    return x == y


class Uniform(Draws):
    params = ("range", "values")

    def setup(self) -> None:
        # The default range may be replaced by a per-sample one: checked when drawn then.
        if self.args["values"] or self.args["range"] != self.schema.arguments["range"].default:
            self.check_fits(self.args["range"], self.args["values"])

    def check_fits(self, range_: Any, values: Any) -> None:
        dtype = self.args["dtype"]
        numbers = values or range_
        kind = np.dtype(dtype.numpy)
        info = np.finfo(kind) if kind.kind == "f" else np.iinfo(kind) if kind.kind in "iu" else None
        if info is not None and not all(float(info.min) <= v <= float(info.max) for v in numbers):
            which = "values" if values else "range"
            raise ArgumentError(
                f"{self.schema.class_name}: {which} {tuple(numbers)} does not fit dtype "
                f"types.{dtype.name} (from {info.min} to {info.max})"
            )

    def uniform_params(self, columns: dict[str, list]) -> bool:
        return all(
            _same(r, columns["range"][0]) and _same(v, columns["values"][0])
            for r, v in zip(columns["range"], columns["values"], strict=True)
        )

    def column(self, key: str, values: list) -> Any:
        return values[0]  # uniform_params: one value for all these samples

    def values(self, streams: Any, shape: tuple[int, ...], params: dict) -> np.ndarray:
        dtype = np.dtype(self.args["dtype"].numpy)
        count = math.prod(shape)
        n = len(streams)
        values = params["values"]
        self.check_fits(params["range"], values)
        if values:
            u = streams.uniform(count)
            index = np.minimum((u * len(values)).astype(np.int64), len(values) - 1)
            out = np.asarray(values, np.float64)[index]
            return convert_sat(out, dtype).reshape((n, *shape))
        low, high = params["range"]
        small = dtype.kind == "f" and dtype.itemsize <= 4
        u = streams.uniform(count, np.float32 if small else np.float64).astype(np.float64)
        out = low + u * (high - low)
        if dtype.kind == "f":
            with np.errstate(over="ignore"):
                out = _below(out.astype(dtype), high)
        else:
            out = convert_sat(out, dtype)
        return out.reshape((n, *shape))


class CoinFlip(Draws):
    params = ("probability",)

    def values(self, streams: Any, shape: tuple[int, ...], params: dict) -> np.ndarray:
        n = len(streams)
        u = streams.uniform(math.prod(shape)).reshape((n, *shape))
        p = params["probability"].reshape((n,) + (1,) * len(shape))
        return (u < p).astype(self.args["dtype"].numpy)


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
            Arg("range", "the interval [low, high) to draw from", (-1.0, 1.0), _range, True),
            Arg(
                "values",
                "discrete values to draw from with equal probability (overrides range)",
                None,
                to_floats(),
                per_sample=True,
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
