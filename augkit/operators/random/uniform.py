"""``random.uniform``: values drawn uniformly from ``range`` [low, high), or from the discrete
``values``.

Decisions and traps:

- ``uniform`` over ``range=[low, high)`` never returns ``high``: values are drawn from 24 random
  bits (float16/float32 outputs) or 53 (float64), scaled in float64 and converted; a value that
  rounds up to ``high`` in the output type becomes the largest value of that type below
  ``high`` (with ``range=[10, nextafter(10, 11)]`` every value is 10, as in DALI). Integer
  outputs are the continuous draw converted as DALI converts (rounded half away from zero,
  saturated), so they can equal ``high``, as in DALI.
- ``values``: each is picked with equal probability (``floor(u * len(values))``).
- ``range``, ``values`` and ``shape`` may be per sample (argument inputs, as in DALI). A
  per-sample ``range``/``values`` that does not fit ``dtype`` is an error when drawn (a
  constant one, when the pipeline is built).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError
from augkit.operators.color.cast import convert_sat
from augkit.operators.random.draws import SHAPE, Draws, dtype_arg, output_kinds, same
from augkit.operators.registry import Arg, OperatorSchema, described, register, to_floats


@described("(low, high), two numbers with low < high")
def _range(value: Any) -> tuple[float, float]:
    low, high = to_floats(2)(value)
    if not low < high:
        raise ValueError(f"range must be (low, high) with low < high, got ({low}, {high})")
    return low, high


def _below(values: np.ndarray, high: float) -> np.ndarray:
    """``values`` with every element at or above ``high`` set to the largest value of their
    type below ``high`` (float rounding must not reach an excluded bound)."""
    largest = values.dtype.type(high)
    if float(largest) >= high:
        largest = np.nextafter(largest, values.dtype.type(-np.inf))
    return np.where(values.astype(np.float64) >= high, largest, values)


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
            same(r, columns["range"][0]) and same(v, columns["values"][0])
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


register(
    OperatorSchema(
        name="random.uniform",
        class_name="random.Uniform",
        impl=Uniform,
        min_inputs=0,
        max_inputs=0,
        output_kinds=output_kinds,
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
            SHAPE,
            dtype_arg(types.FLOAT),
        ],
    )
)
