"""``fn.bbox_paste``: moves relative boxes as ``fn.paste`` moves their image onto a larger
canvas (``ratio`` times the image's size, at ``paste_x``, ``paste_y``).

Decisions and traps (DALI 2.4 facts, checked by running it):

- A corner ``x`` becomes ``x / ratio + paste_x · (ratio - 1) / ratio`` (the same for y); an
  ``xywh`` size becomes ``w / ratio``. Boxes are ``xywh`` unless ``ltrb=True``.
- ``ratio`` is required and per sample; DALI's docs say "at least 1" but DALI runs a smaller
  ratio (the boxes grow); augkit does the same and refuses only ratios <= 0 (a division by
  zero). ``paste_x``/``paste_y`` default to 0.5 (centred) and are not range-checked either.
- float32 in and out, the sums in float32 in DALI's order (bit for bit on the parity cases).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.boxes.flips import BOXES_INPUT, box_array, boxes_output
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    register,
    to_bool,
    to_float,
)

_number = to_float()


@described("a positive number", 0)
def to_ratio(value: Any) -> float:
    ratio = _number(value)
    if ratio <= 0:
        raise ValueError(f"must be positive, got {ratio}")
    return ratio


class BboxPaste(SampleOperator):
    """Maps relative boxes from an image to the canvas it is pasted on."""

    moves_geometry = True
    """It moves box coordinates (onto a pasted canvas) (``OperatorImpl.moves_geometry``)."""

    def cpu(
        self, sample: Any, *, ratio: float, paste_x: float, paste_y: float, ltrb: bool, **_: Any
    ) -> Any:
        boxes = box_array(sample, "bbox_paste")
        xp = backend.array_module(sample)
        f32 = np.float32
        scale = f32(1) / f32(ratio)
        margin = f32(f32(ratio) - f32(1)) * scale
        shift = xp.asarray([f32(paste_x) * margin, f32(paste_y) * margin] * 2, dtype=xp.float32)
        if not ltrb:
            shift[2:] = 0
        out = boxes * scale + shift
        return out.reshape(sample.shape)


register(
    OperatorSchema(
        name="bbox_paste",
        class_name="BBoxPaste",
        impl=BboxPaste,
        accepts=[BOXES_INPUT],
        output_kinds=boxes_output,
        doc=(
            "Transforms relative bounding boxes so that they stay on their objects when the "
            "image is pasted on a canvas ``ratio`` times larger at (``paste_x``, ``paste_y``) "
            "(0: top-left, 1: bottom-right), as ``fn.paste`` does: corners become "
            "``x / ratio + paste_x * (ratio - 1) / ratio``, xywh sizes ``w / ratio``."
        ),
        args=[
            Arg("ratio", "canvas size / input size (at least 1)", REQUIRED, to_ratio, True),
            Arg("paste_x", "horizontal position of the paste (0 to 1)", 0.5, to_float(), True),
            Arg("paste_y", "vertical position of the paste (0 to 1)", 0.5, to_float(), True),
            Arg("ltrb", "True for ltrb boxes, False for xywh", False, to_bool),
        ],
    )
)
