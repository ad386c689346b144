"""``random.normal``: values drawn from a normal distribution of ``mean`` and ``stddev``.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- How values are made: Box-Muller on pairs of 53-bit uniforms from the sample's stream
  (``sqrt(-2 ln(1 - u1)) * (cos, sin)(2 pi u2)``), for up to 256 values per sample; a larger
  draw (a noise image) comes from a NumPy ``Generator`` seeded from the sample's stream
  (``SampleStreams.generator``: 10-40 us to make, then NumPy's ziggurat). The numbers are not
  DALI's (its streams are other generators): the distribution is. Speed, scalars, batch 256,
  one thread: ~0.5 us a sample (DALI: 0.45).
- The output shape: ``shape``, else the shape of the optional ``shape_like`` input, else one
  scalar per sample (``draws``).
- ``dtype`` defaults to FLOAT; an integer ``dtype`` is the draw converted as DALI converts
  (rounded half away from zero, saturated: ``convert_sat``); a negative ``stddev`` is accepted
  and mirrors the draw (DALI does the same), ``stddev=0`` gives ``mean``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
from augkit.operators.color.cast import convert_sat
from augkit.operators.random.draws import SHAPE, SHAPE_LIKE, STREAM_LIMIT, Draws, output_kinds
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    register,
    to_dtype,
    to_float,
)
from augkit.random import SampleStreams


@described("a data type of numbers: types.FLOAT, types.INT32, ... (not bool or float16)")
def _number_dtype(value: Any) -> types.DALIDataType:
    dtype = to_dtype(value)
    kind = np.dtype(dtype.numpy)
    if kind.kind not in "iuf" or kind == np.float16:
        raise ValueError(f"types.{dtype.name} is not a type normal can draw")
    return dtype


def _standard_normal(streams: SampleStreams, count: int) -> np.ndarray:
    """(n, count) standard normal values from each sample's stream."""
    n = len(streams)
    if count > STREAM_LIMIT:
        return np.stack([streams.generator(i).standard_normal(count) for i in range(n)])
    pairs = -(-count // 2)
    u = streams.uniform(2 * pairs)
    radius = np.sqrt(-2.0 * np.log1p(-u[:, :pairs]))  # 1 - u is in (0, 1]
    angle = (2.0 * np.pi) * u[:, pairs:]
    z = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return z[:, :count]


class Normal(Draws):
    params = ("mean", "stddev")

    def values(self, streams: SampleStreams, shape: tuple[int, ...], params: dict) -> np.ndarray:
        n, count = len(streams), math.prod(shape)
        z = _standard_normal(streams, count)
        out = params["mean"][:, None] + params["stddev"][:, None] * z
        dtype = np.dtype(self.args["dtype"].numpy)
        out = out.astype(dtype) if dtype.kind == "f" else convert_sat(out, dtype)
        return out.reshape((n, *shape))


register(
    OperatorSchema(
        name="random.normal",
        class_name="random.Normal",
        impl=Normal,
        min_inputs=0,
        max_inputs=1,
        output_kinds=output_kinds,
        role="random",
        aliases=("NormalDistribution",),
        fn_aliases=("normal_distribution",),
        doc=(
            "Values drawn from a normal distribution of ``mean`` and ``stddev`` (both per "
            f"sample if given so), of shape ``shape``, or of {SHAPE_LIKE}, else one scalar."
        ),
        args=[
            Arg("mean", "mean of the distribution", 0.0, to_float(), per_sample=True),
            Arg("stddev", "standard deviation of the distribution", 1.0, to_float(), True),
            SHAPE,
            Arg(
                "dtype",
                "output data type (integers: rounded, saturated)",
                types.FLOAT,
                _number_dtype,
            ),
        ],
    )
)
