"""``random.choice``: values picked from ``a`` with probabilities ``p``.

Decisions and traps (DALI 2.4, measured on its CPU backend):

- How values are made: one uniform per value from the sample's stream, mapped through the
  cumulative ``p``. The numbers are not DALI's (its streams are other generators): the
  distribution is. Speed, scalars, batch 256, one thread: ~0.5 us a sample (DALI: 0.45).
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

from augkit import backend
from augkit.operators.random.draws import MAX_ELEMENTS, SHAPE, Draws, output_kinds, same
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    register,
    to_floats,
)
from augkit.random import SampleStreams


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
        # typeshed's numbers.Real declares only __lt__ and __le__ (as the ABC does)
        if value > MAX_ELEMENTS:  # type: ignore[operator]
            raise ValueError(f"must be at most {MAX_ELEMENTS}, got {value}")
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
    probs = np.asarray(p, np.float64).reshape(-1)
    if len(probs) != k:
        raise ValueError(f"p has {len(probs)} probabilities for {k} values to choose from")
    if (probs < 0).any():
        raise ValueError(f"probabilities must be >= 0, got {probs.tolist()}")
    if abs(probs.sum() - 1.0) >= 1e-4:
        raise ValueError(f"probabilities must sum to 1, got {probs.sum():.6g}")
    return np.cumsum(probs) / probs.sum()


class Choice(Draws):
    params = ("a", "p")

    def uniform_params(self, columns: dict[str, list]) -> bool:
        first_a, first_p = columns["a"][0], columns["p"][0]
        return all(
            same(a, first_a) and same(p, first_p)
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


register(
    OperatorSchema(
        name="random.choice",
        class_name="random.Choice",
        impl=Choice,
        min_inputs=0,
        max_inputs=0,
        positional=("a",),
        output_kinds=output_kinds,
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
            SHAPE,
        ],
    )
)
