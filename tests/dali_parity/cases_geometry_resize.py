"""Parity cases of ``fn.resize`` (the nearest-neighbour fix of the vocabulary issue)."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase

CASES = [
    ParityCase(
        "resize_nn_shrink",
        lambda fn, types, x: fn.resize(x, size=(30, 40), interp_type=types.INTERP_NN),
        max_diff=0,
        note="DALI's nearest-neighbour source indices",
    ),
    ParityCase(
        "resize_linear_default",
        lambda fn, types, x: fn.resize(x, resize_x=50, resize_y=36),
        max_diff=None,
        mean_diff=0.6,
        note="Pillow's 8-bit passes and border taps (resize.py's docstring)",
    ),
]
