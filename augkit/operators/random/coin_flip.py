"""``random.coin_flip``: 1 with probability ``probability``, else 0.

Decisions and traps:

- 1 where ``u < probability`` (``u`` a 53-bit uniform from the sample's stream), per sample
  when ``probability`` is an argument input; ``shape`` may be per sample too, as in DALI.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import types
from augkit.operators.random.draws import SHAPE, Draws, dtype_arg, output_kinds
from augkit.operators.registry import Arg, OperatorSchema, register, to_float


class CoinFlip(Draws):
    params = ("probability",)

    def values(self, streams: Any, shape: tuple[int, ...], params: dict) -> np.ndarray:
        n = len(streams)
        u = streams.uniform(math.prod(shape)).reshape((n, *shape))
        p = params["probability"].reshape((n,) + (1,) * len(shape))
        return (u < p).astype(self.args["dtype"].numpy)


register(
    OperatorSchema(
        name="random.coin_flip",
        class_name="random.CoinFlip",
        impl=CoinFlip,
        min_inputs=0,
        max_inputs=0,
        output_kinds=output_kinds,
        role="random",
        aliases=("CoinFlip",),
        doc="1 with probability ``probability``, else 0 (e.g. ``mirror=fn.random.coin_flip()``).",
        args=[
            Arg("probability", "chance of a 1", 0.5, to_float(0.0, 1.0), per_sample=True),
            SHAPE,
            dtype_arg(types.INT32),
        ],
    )
)
