"""``random.beta``: values in [0, 1] drawn from a beta distribution of ``alpha`` and ``beta``.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- How values are made: X / (X + Y) of two gamma variates, each by Marsaglia and Tsang's method
  on the stream's 24-bit uniforms, three candidates per value (one value in ~10**4 gets none:
  that sample is drawn by a Generator instead), in logs so that tiny ``alpha``/``beta`` do not
  give 0 / 0; more than 256 values per sample come from a NumPy ``Generator`` seeded from the
  sample's stream (``Generator.beta``). The numbers are not DALI's (its streams are other
  generators): the distribution is. Speed, scalars, batch 256, one thread: ~1.1 us a sample
  (DALI: 0.45).
- The output shape: ``shape``, else the shape of the optional ``shape_like`` input, else one
  scalar per sample (``draws``).
- ``alpha`` and ``beta`` must be positive and finite (per sample too), ``dtype`` FLOAT or
  FLOAT64 only; values lie in [0, 1] (a tiny ``alpha`` can give exactly 0).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
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


@described("types.FLOAT or types.FLOAT64")
def _float_dtype(value: Any) -> types.DALIDataType:
    dtype = to_dtype(value)
    if dtype not in (types.FLOAT, types.FLOAT64):
        raise ValueError(f"beta draws types.FLOAT or types.FLOAT64 only, got types.{dtype.name}")
    return dtype


@described("a positive finite number")
def _positive(value: Any) -> float:
    value = to_float()(value)
    if not value > 0:
        raise ValueError(f"must be a positive number, got {value}")
    return value


def _log_gamma_draws(
    streams: SampleStreams, a: np.ndarray, count: int, rounds: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """(n, k, count) logs of Gamma(a) variates (``a``: (n, k), k shapes per sample) from each
    sample's stream, by Marsaglia and Tsang's method with ``rounds`` candidates per value (each
    accepted with probability > 0.95: all three fail for ~1 value in 10**4), and whether each
    value got one. ``a < 1`` uses Gamma(a + 1) * U**(1/a), in logs so that tiny shapes do not
    underflow to 0."""
    n, k = a.shape
    a = a.reshape(n, k, 1)
    boost = a < 1
    d = np.where(boost, a + 1, a) - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    # 24-bit uniforms (one word each) are plenty here: the draw is a ratio of two gammas.
    u = streams.uniform(k * count * (3 * rounds + 1), np.float32).astype(np.float64)
    u = u.reshape(n, 3 * rounds + 1, k, count)
    result = np.zeros((n, k, count))
    done = np.zeros((n, k, count), bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        for r in range(rounds):
            u1, u2, u3 = u[:, 3 * r], u[:, 3 * r + 1], u[:, 3 * r + 2]
            x = np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
            v = (1.0 + c * x) ** 3
            log_v = np.log(v)
            accept = (v > 0) & (np.log1p(-u3) < 0.5 * x * x + d - d * v + d * log_v) & ~done
            result = np.where(accept, np.log(d) + log_v, result)
            done |= accept
    return result + np.where(boost, np.log1p(-u[:, -1]) / a, 0.0), done


class Beta(Draws):
    params = ("alpha", "beta")

    def values(self, streams: SampleStreams, shape: tuple[int, ...], params: dict) -> np.ndarray:
        n, count = len(streams), math.prod(shape)
        dtype = np.dtype(self.args["dtype"].numpy)
        alpha, beta = params["alpha"], params["beta"]
        if count > STREAM_LIMIT:
            out = np.stack([streams.generator(i).beta(alpha[i], beta[i], count) for i in range(n)])
            return out.astype(dtype).reshape((n, *shape))
        # X / (X + Y) = 1 / (1 + exp(log Y - log X)) for X ~ Gamma(alpha), Y ~ Gamma(beta)
        logs, ok = _log_gamma_draws(streams, np.stack([alpha, beta], axis=1), count)
        with np.errstate(over="ignore"):
            out = 1.0 / (1.0 + np.exp(logs[:, 1] - logs[:, 0]))
        for i in np.flatnonzero(~ok.all(axis=(1, 2))).tolist():  # about 1 value in 10**4
            out[i] = streams.generator(i).beta(alpha[i], beta[i], count)
        return out.astype(dtype).reshape((n, *shape))


register(
    OperatorSchema(
        name="random.beta",
        class_name="random.Beta",
        impl=Beta,
        min_inputs=0,
        max_inputs=1,
        output_kinds=output_kinds,
        role="random",
        doc=(
            "Values in [0, 1] drawn from a beta distribution of ``alpha`` and ``beta`` (both "
            f"per sample if given so), of shape ``shape``, or of {SHAPE_LIKE}, else one scalar."
        ),
        args=[
            Arg("alpha", "the alpha parameter (> 0)", 1.0, _positive, per_sample=True),
            Arg("beta", "the beta parameter (> 0)", 1.0, _positive, per_sample=True),
            SHAPE,
            Arg(
                "dtype", "output data type: types.FLOAT or types.FLOAT64", types.FLOAT, _float_dtype
            ),
        ],
    )
)
