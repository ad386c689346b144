"""``fn.flip``: mirror images along W (``horizontal``, on by default), H (``vertical``) and D
(``depthwise``).

Decisions and traps:

- ``horizontal`` defaults to 1, as in DALI: ``fn.flip(x)`` mirrors left-right.
- Each flag is an int (nonzero: flip) or a per-sample value, usually
  ``horizontal=fn.random.coin_flip()``; a bool per-sample value is accepted too.
- The axes are found from the layout (HWC, CHW, DHWC, FHWC, ...; no layout: HW or HWC), so a
  CHW image flips along its last axis and an HWC image along its middle one.
- ``depthwise`` on a layout without D does nothing: DALI treats such an input as depth 1.
- ``np.flip`` returns a view with negative strides; the kernel returns a contiguous copy, so the
  graph never holds views into another operator's output on the GPU either.
- A dense batch (one array: random values, a cast of them...) is flipped by the batch kernel,
  one NumPy call per distinct set of flags, with the same result as per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import dense_batch, per_sample_column
from augkit.operators.layouts import ANY_IMAGE, ImageOperator
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_int,
)
from augkit.tensors import TensorList

_to_int = to_int()


@described("0 or 1 (or True/False); nonzero flips")
def to_flag(value: Any) -> bool:
    """A flip flag: an int (nonzero: flip) or a bool."""
    try:
        return _to_int(value) != 0
    except TypeError:
        return to_bool(value)


class Flip(ImageOperator):
    """Reverses the W, H and D axes of each sample that its flags select."""

    def cpu(
        self,
        sample: Any,
        *,
        layout: str,
        horizontal: int,
        vertical: int,
        depthwise: int,
        **_: Any,
    ) -> Any:
        axes = tuple(
            layout.index(axis)
            for axis, wanted in (("W", horizontal), ("H", vertical), ("D", depthwise))
            if wanted and axis in layout
        )
        if not axes:
            return sample
        xp = backend.array_module(sample)
        return xp.ascontiguousarray(xp.flip(sample, axis=axes))

    gpu = cpu

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """A dense batch (random values, a cast...): the samples that one set of flags
        selects are flipped together, in one NumPy call per set."""
        dense = dense_batch(inputs)
        if dense is None or not isinstance(dense, np.ndarray):
            return None
        n = len(dense)
        layout = self.batch_args(inputs)["layout"]
        wanted = []  # per flag: one bool per sample
        for key, axis in (("horizontal", "W"), ("vertical", "H"), ("depthwise", "D")):
            column = per_sample_column(self, arg_inputs, key, n)
            on = column.astype(bool) if column is not None else np.full(n, bool(self.args[key]))
            wanted.append(on if axis in layout else np.zeros(n, bool))
        # The batch axis comes first: a sample's axis k is the batch's axis k + 1.
        batch_axes = [layout.index(a) + 1 if a in layout else -1 for a in "WHD"]
        choices = np.stack(wanted, axis=1)  # (n, 3)
        out = np.array(dense)
        for choice in np.unique(choices, axis=0):
            axes = tuple(axis for axis, on in zip(batch_axes, choice, strict=True) if on)
            if axes:
                rows = np.flatnonzero((choices == choice).all(axis=1))
                out[rows] = np.flip(dense[rows], axis=axes)
        return [self.dense_output(out, inputs)]


register(
    OperatorSchema(
        name="flip",
        class_name="Flip",
        impl=Flip,
        accepts=[ANY_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Flips images: left-right when ``horizontal`` is nonzero (the default), top-bottom "
            "when ``vertical`` is, front-back when ``depthwise`` is (volumes with a D axis; a "
            "no-op otherwise, as in DALI). Each flag may be per sample, e.g. "
            "``horizontal=fn.random.coin_flip()``. The axes come from the layout (HWC, CHW, "
            "DHWC, FHWC, ...; an input without a layout is HW or HWC); layout, shape and dtype "
            "are kept."
        ),
        args=[
            Arg("horizontal", "nonzero: flip left-right (along W)", 1, to_flag, per_sample=True),
            Arg("vertical", "nonzero: flip top-bottom (along H)", 0, to_flag, per_sample=True),
            Arg("depthwise", "nonzero: flip along D (volumes)", 0, to_flag, per_sample=True),
        ],
    )
)
