"""``fn.segmentation.random_mask_pixel``: DALI 2.4's random pixel of a mask, drawn from each
sample's own stream (``random = True``); DALI's random streams are not reproduced, its
distribution and deterministic limits are.

Decisions and traps (checked against DALI 2.4):

- The output is one int64 coordinate per axis of the input, channel axis included (an HWC mask
  gives ``[y, x, c]``), with no layout. Any numeric input type is taken (DALI: integers and
  floats), of any number of dimensions.
- ``foreground=0`` (the default): a position uniform over all elements. ``foreground != 0``:
  uniform over the foreground elements, those ``> threshold`` (default 0.0, compared in the
  input's values: a float mask with ``threshold=0.5``) or ``== value`` when ``value`` is given.
  A sample with no foreground element falls back to a position uniform over all of them, as
  DALI does (``value=7`` on a mask without 7). An empty sample gives zeros.
- ``value`` and ``threshold`` are mutually exclusive (DALI refuses both, at build); all three
  may be per sample.
- Speed: one vectorised comparison (an integer mask against an integer bound, the same as
  the float comparison), a count, one draw, and the drawn element found row by row
  (``_nth_true``; a whole ``np.flatnonzero`` is 10x slower): about 0.8x DALI's CPU time
  per 320x320 one-channel mask through a pipeline, most of it per-sample overhead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit.operators.base import SampleOperator
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_float,
    to_int,
)

MASK_INPUT = InputSpec(
    "a mask (label map) or an image: a numeric tensor",
    kinds=("mask", "image"),
    hints={
        "boxes": "segmentation operators take label maps (masks), not boxes",
        "keypoints": "segmentation operators take label maps (masks), not keypoints",
        "encoded": "decode them first with fn.decoders.image",
    },
)


def check_numeric(operator: str, sample: Any) -> None:
    if not isinstance(sample, np.ndarray) or sample.dtype.kind not in "biuf":
        what = sample.dtype.name if hasattr(sample, "dtype") else type(sample).__name__
        raise ValueError(f"{operator} takes a numeric mask (integers or floats); got {what}")


class RandomMaskPixel(SampleOperator):
    random = True

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int64

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_numeric("segmentation.random_mask_pixel", sample)

    def cpu(
        self,
        mask: np.ndarray,
        *,
        foreground: int,
        threshold: float,
        value: int | None,
        rng: np.random.Generator,
        **_: Any,
    ) -> np.ndarray:
        shape = mask.shape
        if mask.size == 0:
            return np.zeros(len(shape), np.int64)
        flat = None
        if foreground:
            hits = _foreground(mask, value, threshold)
            if hits is not None:
                flat = _nth_true(hits, int(rng.integers(np.count_nonzero(hits))))
        if flat is None:
            flat = int(rng.integers(mask.size))
        return np.array(np.unravel_index(flat, shape), np.int64)


def _foreground(mask: np.ndarray, value: int | None, threshold: float) -> np.ndarray | None:
    """The foreground elements (a boolean array), or None when there is none. An integer
    mask is compared with an integer bound (``x > t`` is ``x > floor(t)`` for integers),
    which is faster than NumPy's float comparison and the same."""
    if value is not None:
        if mask.dtype.kind in "iu":
            info = np.iinfo(mask.dtype)
            if not info.min <= value <= info.max:
                return None
            hits = mask == mask.dtype.type(value)
        else:
            hits = mask == value
    elif mask.dtype.kind in "iu":
        info = np.iinfo(mask.dtype)
        bound = np.floor(threshold)
        if bound >= info.max:
            return None
        hits = mask > mask.dtype.type(max(bound, info.min - 1)) if bound >= info.min else None
        if hits is None:  # every element is above the threshold
            return np.ones(mask.shape, bool)
    else:
        with np.errstate(invalid="ignore"):
            hits = mask > threshold
    return hits if hits.any() else None


def _nth_true(hits: np.ndarray, k: int) -> int:
    """The flat index of the ``k``-th True element of ``hits``: counted row by row first, so
    that only one row is scanned for positions (``np.flatnonzero`` of the whole is 10x
    slower)."""
    rows = hits.reshape(hits.shape[0], -1) if hits.ndim > 1 else hits.reshape(1, -1)
    cum = np.cumsum(np.count_nonzero(rows, axis=1))
    r = int(np.searchsorted(cum, k, side="right"))
    before = int(cum[r - 1]) if r else 0
    return r * rows.shape[1] + int(np.flatnonzero(rows[r])[k - before])


def _validate(given: dict[str, Any]) -> None:
    if "value" in given and "threshold" in given:
        raise ValueError("the arguments `value` and `threshold` are mutually exclusive")


register(
    OperatorSchema(
        name="segmentation.random_mask_pixel",
        class_name="segmentation.RandomMaskPixel",
        impl=RandomMaskPixel,
        accepts=[MASK_INPUT],
        output_kinds=fixed_kinds(OutputSpec(ndim=1, layout="", what="int64 pixel coordinates")),
        validate=_validate,
        doc=(
            "Selects random pixel coordinates in a mask, uniformly: among all pixels when "
            "``foreground`` is 0, else among the foreground pixels, those above ``threshold`` "
            "or equal to ``value`` (all pixels when there is none). The output is one int64 "
            "coordinate per input axis (the channel axis too)."
        ),
        args=[
            Arg(
                "foreground",
                "if not 0, sample among foreground pixels only",
                0,
                to_int(),
                per_sample=True,
            ),
            Arg(
                "threshold",
                "pixels above it are foreground (exclusive with value)",
                0.0,
                to_float(),
                per_sample=True,
            ),
            Arg(
                "value",
                "pixels equal to it are foreground (exclusive with threshold)",
                None,
                to_int(),
                per_sample=True,
            ),
        ],
    )
)
