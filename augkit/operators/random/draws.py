"""What the random operators share: ``Draws``, the base class of their kernels, and the
``shape`` argument (a constant, or one per sample).

Decisions and traps:

- The output shape: ``shape`` (a constant or one per sample), else the shape of the optional
  ``shape_like`` input (the operators that take one), else one scalar per sample (shape
  ``()``), as in DALI. Samples of different shapes give a ragged batch.
- Argument inputs, as in DALI: the parameters of a draw and its ``shape`` may be per sample.
  Samples of different shapes or parameters are drawn one by one from their own streams
  (``Draws``), with the values the whole-batch draw would give them; a batch of one shape and
  one set of parameters is drawn at once.
- A per-sample ``shape`` is not seen by the build-time checks (``output_kinds`` gets the
  constant arguments only): they take such draws as 0-D.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import AugkitError
from augkit.operators.base import RandomOperator, RunContext, finish
from augkit.operators.registry import Arg, OutputSpec, described, to_dtype, to_ints
from augkit.random import SampleStreams
from augkit.tensors import TensorList

MAX_ELEMENTS = 2**31 - 1

# A sample drawing more values than this gets a NumPy Generator seeded from its stream
# (normal, beta).
STREAM_LIMIT = 256

SHAPE_LIKE = "the optional input ``shape_like``: its samples' shapes are the output's"


@described(
    f"an integer >= 0 or a list of them, at most {MAX_ELEMENTS} elements in all (or one list "
    f"per sample)"
)
def _shape(value: Any) -> tuple[int, ...]:
    shape = to_ints(low=0)(value)
    if math.prod(shape) > MAX_ELEMENTS or any(n > MAX_ELEMENTS for n in shape):
        raise ValueError(f"shape {shape} has more than {MAX_ELEMENTS} elements")
    return shape


SHAPE = Arg(
    "shape",
    "shape of each sample's values (default: the shape of ``shape_like``, else one scalar)",
    None,
    _shape,
    per_sample=True,
)


def dtype_arg(default: types.DALIDataType) -> Arg:
    return Arg("dtype", "output data type", default, to_dtype)


def output_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    """The ``OutputSpec`` of a random operator's output (its ``output_kinds``)."""
    shape = args.get("shape")
    if shape is None and inputs:  # the shapes of shape_like
        return [OutputSpec(layout="")]
    # A per-sample shape is not in ``args`` (argument nodes are not): it is taken as 0-D here.
    ndim = len(shape or ())
    return [OutputSpec(ndim=ndim, layout="", what=f"{ndim}-D random values")]


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
        source = inputs[0].sources if inputs else None
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


def same(x: Any, y: Any) -> bool:
    """Whether two parameter values are equal (arrays: of one dtype, element by element), so
    that the samples holding them can be drawn at once (``Draws.uniform_params``)."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (
            isinstance(x, np.ndarray)
            and isinstance(y, np.ndarray)
            and x.dtype == y.dtype
            and np.array_equal(x, y)
        )
    return x == y
