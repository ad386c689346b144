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
"""

from __future__ import annotations

from typing import Any

from augkit import backend
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
