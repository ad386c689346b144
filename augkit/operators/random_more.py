"""``fn.random.normal``, ``fn.random.beta`` and ``fn.random.choice``: per-sample draws beyond
uniform, built on the counter-based streams (``augkit.random.SampleStreams``) as
``random.uniform`` is, so that a sample draws the same whatever the thread count, the mode
(normal, debug, eager) or the other samples of the batch.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- How values are made. ``normal``: Box-Muller on pairs of 53-bit uniforms from the sample's
  stream (``sqrt(-2 ln(1 - u1)) * (cos, sin)(2 pi u2)``), for up to 256 values per sample; a
  larger draw (a noise image) comes from a NumPy ``Generator`` seeded from the sample's stream
  (``SampleStreams.generator``: 10-40 us to make, then NumPy's ziggurat). ``beta``: X / (X + Y)
  of two gamma variates, each by Marsaglia and Tsang's method on the stream's 24-bit uniforms,
  three candidates per value (one value in ~10**4 gets none: that sample is drawn by a
  Generator instead), in logs so that tiny ``alpha``/``beta`` do not give 0 / 0; more than 256
  values per sample come from a Generator (``Generator.beta``). ``choice``: one uniform per
  value, mapped through the cumulative ``p``. The numbers are not DALI's (its streams are other
  generators): the distributions are. Speed, scalars, batch 256, one thread: ~0.5 us a sample
  for normal and choice (DALI: 0.45), ~1.1 us for beta (DALI: 0.45).
- The output shape: ``shape`` (a constant or one per sample), else the shape of the optional
  ``shape_like`` input, else one scalar per sample (shape ``()``), as in DALI. Samples of
  different shapes give a ragged batch.
- ``normal``: ``dtype`` defaults to FLOAT; an integer ``dtype`` is the draw converted as DALI
  converts (rounded half away from zero, saturated: ``convert_sat``); a negative ``stddev`` is
  accepted and mirrors the draw (DALI does the same), ``stddev=0`` gives ``mean``.
- ``beta``: ``alpha`` and ``beta`` must be positive and finite (per sample too), ``dtype`` FLOAT
  or FLOAT64 only; values lie in [0, 1] (a tiny ``alpha`` can give exactly 0).
- ``choice(a)``: ``a`` is DALI's positional input: an integer n (choose from ``0 .. n-1``, as
  int32, DALI's type of a Python int) or a list of values (int32 for ints, float32 for floats,
  DALI's constants), or a node (per sample: a 0-D integer n, or an array whose first-axis
  entries are chosen: a 2-D ``a`` of shape (k, m) gives values of shape ``shape + (m,)``). The
  output type is ``a``'s: choice has no ``dtype`` in DALI 2.4. A 0-D float ``a`` is refused, as
  DALI does. ``p`` (constant or per sample) needs one non-negative entry per element of ``a``
  summing to 1 within 1e-4 (DALI's check).
- augkit takes ``a`` as the operator's first positional argument (``fn.random.choice(5)``,
  ``fn.random.choice(node)``; in eager mode ``eager.random.choice(a=5)``), so ``shape_like``
  cannot be given to ``choice`` (use ``shape``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.color.cast import convert_sat
from augkit.operators.random import _MAX_ELEMENTS, _SHAPE, Draws, _kinds, _same
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    register,
    to_dtype,
    to_float,
    to_floats,
)
from augkit.random import SampleStreams

# A sample drawing more values than this gets a NumPy Generator seeded from its stream.
_STREAM_LIMIT = 256


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
    if count > _STREAM_LIMIT:
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
        if count > _STREAM_LIMIT:
            out = np.stack([streams.generator(i).beta(alpha[i], beta[i], count) for i in range(n)])
            return out.astype(dtype).reshape((n, *shape))
        # X / (X + Y) = 1 / (1 + exp(log Y - log X)) for X ~ Gamma(alpha), Y ~ Gamma(beta)
        logs, ok = _log_gamma_draws(streams, np.stack([alpha, beta], axis=1), count)
        with np.errstate(over="ignore"):
            out = 1.0 / (1.0 + np.exp(logs[:, 1] - logs[:, 0]))
        for i in np.flatnonzero(~ok.all(axis=(1, 2))):  # about 1 value in 10**4
            out[i] = streams.generator(i).beta(alpha[i], beta[i], count)
        return out.astype(dtype).reshape((n, *shape))


# --- choice ---------------------------------------------------------------------------------


@described("an integer >= 1 or a list of values (or a node: one array per sample)")
def _choice_input(value: Any) -> Any:
    if isinstance(value, np.ndarray) or type(value).__module__.startswith(("torch", "cupy")):
        array = np.asarray(backend.to_cpu(value))
        if array.dtype.kind not in "biuf":
            raise TypeError(f"cannot choose from an array of type {array.dtype}")
        if array.ndim == 0 and array.dtype.kind in "bf":
            raise TypeError(
                f"a 0-D input must be an integer (choose from 0 .. a-1), got type {array.dtype}"
            )
        if array.ndim == 0 and not int(array) >= 1:
            raise ValueError(f"a 0-D input must be >= 1, got {int(array)}")
        if array.ndim > 0 and len(array) == 0:
            raise ValueError("the input to choose from is empty")
        return array
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"must be >= 1, got {value}")
        if value > _MAX_ELEMENTS:
            raise ValueError(f"must be at most {_MAX_ELEMENTS}, got {value}")
        return int(value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("the list of values to choose from is empty")
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
            raise TypeError(f"expected a list of numbers, got {value!r}")
        ints = all(isinstance(v, numbers.Integral) for v in value)
        if ints:
            return tuple(int(np.int32(v)) if -(2**31) <= v < 2**31 else v for v in value)
        return tuple(float(v) for v in value)
    raise TypeError(f"expected an integer >= 1 or a list of numbers, got {value!r}")


def _choices(a: Any) -> np.ndarray:
    """The array whose first-axis entries ``choice`` picks from."""
    if isinstance(a, np.ndarray):
        return np.arange(int(a), dtype=a.dtype) if a.ndim == 0 else a
    if isinstance(a, int):
        return np.arange(a, dtype=np.int32)
    ints = all(isinstance(v, int) for v in a)
    if ints and not all(-(2**31) <= v < 2**31 for v in a):
        raise ValueError("integer values to choose from must fit int32")
    return np.asarray(a, np.int32 if ints else np.float32)


def _cumulative(p: Sequence[float] | None, k: int) -> np.ndarray | None:
    if p is None:
        return None
    p = np.asarray(p, np.float64).reshape(-1)
    if len(p) != k:
        raise ValueError(f"p has {len(p)} probabilities for {k} values to choose from")
    if (p < 0).any():
        raise ValueError(f"probabilities must be >= 0, got {p.tolist()}")
    if abs(p.sum() - 1.0) >= 1e-4:
        raise ValueError(f"probabilities must sum to 1, got {p.sum():.6g}")
    return np.cumsum(p) / p.sum()


class Choice(Draws):
    params = ("a", "p")

    def uniform_params(self, columns: dict[str, list]) -> bool:
        first_a, first_p = columns["a"][0], columns["p"][0]
        return all(
            _same(a, first_a) and _same(p, first_p)
            for a, p in zip(columns["a"], columns["p"], strict=True)
        )

    def column(self, key: str, values: list) -> Any:
        return values[0]  # uniform_params: the same value for every sample

    def values(self, streams: SampleStreams, shape: tuple[int, ...], params: dict) -> np.ndarray:
        n, count = len(streams), math.prod(shape)
        choices = _choices(params["a"])
        k = len(choices)
        cdf = _cumulative(params["p"], k)
        u = streams.uniform(count)
        index = (u * k).astype(np.int64) if cdf is None else np.searchsorted(cdf, u, side="right")
        index = np.minimum(index, k - 1)
        return choices[index].reshape((n, *shape, *choices.shape[1:]))

    def empty_dtype(self, index: int) -> Any:
        a = self.args.get("a")
        return None if a is None else _choices(a).dtype


def _check_choice(args: dict[str, Any]) -> None:
    a, p = args.get("a"), args.get("p")
    if a is None or p is None or hasattr(a, "source") or hasattr(p, "source"):
        return  # nodes: checked per sample
    _cumulative(p, len(_choices(a)))


_SHAPE_LIKE = "the optional input ``shape_like``: its samples' shapes are the output's"

register(
    OperatorSchema(
        name="random.normal",
        class_name="random.Normal",
        impl=Normal,
        min_inputs=0,
        max_inputs=1,
        output_kinds=_kinds,
        role="random",
        aliases=("NormalDistribution",),
        fn_aliases=("normal_distribution",),
        doc=(
            "Values drawn from a normal distribution of ``mean`` and ``stddev`` (both per "
            f"sample if given so), of shape ``shape``, or of {_SHAPE_LIKE}, else one scalar."
        ),
        args=[
            Arg("mean", "mean of the distribution", 0.0, to_float(), per_sample=True),
            Arg("stddev", "standard deviation of the distribution", 1.0, to_float(), True),
            _SHAPE,
            Arg(
                "dtype",
                "output data type (integers: rounded, saturated)",
                types.FLOAT,
                _number_dtype,
            ),
        ],
    )
)

register(
    OperatorSchema(
        name="random.beta",
        class_name="random.Beta",
        impl=Beta,
        min_inputs=0,
        max_inputs=1,
        output_kinds=_kinds,
        role="random",
        doc=(
            "Values in [0, 1] drawn from a beta distribution of ``alpha`` and ``beta`` (both "
            f"per sample if given so), of shape ``shape``, or of {_SHAPE_LIKE}, else one scalar."
        ),
        args=[
            Arg("alpha", "the alpha parameter (> 0)", 1.0, _positive, per_sample=True),
            Arg("beta", "the beta parameter (> 0)", 1.0, _positive, per_sample=True),
            _SHAPE,
            Arg(
                "dtype", "output data type: types.FLOAT or types.FLOAT64", types.FLOAT, _float_dtype
            ),
        ],
    )
)

register(
    OperatorSchema(
        name="random.choice",
        class_name="random.Choice",
        impl=Choice,
        min_inputs=0,
        max_inputs=0,
        positional=("a",),
        output_kinds=_kinds,
        role="random",
        validate=_check_choice,
        doc=(
            "Values picked from ``a`` (an integer n: from 0 .. n-1; a list or a node: its "
            "entries along the first axis) with probabilities ``p`` (default: equal), of shape "
            "``shape`` (default: one value). The output type is ``a``'s."
        ),
        args=[
            Arg(
                "a",
                "what to choose from: an integer n (0 .. n-1), a list of values, or a node",
                REQUIRED,
                _choice_input,
                per_sample=True,
            ),
            Arg(
                "p",
                "probability of each value (default: all equal)",
                None,
                to_floats(low=0.0),
                per_sample=True,
            ),
            _SHAPE,
        ],
    )
)
