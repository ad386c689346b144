"""``fn.bb_flip`` (mirror boxes) and ``fn.coord_flip`` (mirror points about a centre).

Decisions and traps (DALI 2.4 facts, checked by running it):

- ``bb_flip``: relative coordinates (the image is [0, 1] a side); ``ltrb=False`` (DALI's
  default) means ``xywh``. The input must be float32 (DALI: "Bounding box in wrong format"), an
  (N, 4) array or a flat array of 4·N values; nothing else is checked (a box outside [0, 1], or
  with right < left, is flipped as it is, as DALI does).
- DALI flips ``xywh`` boxes through ``ltrb``: ``r = x + w``, ``l' = 1 - r``, ``r' = 1 - x``,
  ``w' = r' - l'`` in float32, so a width can change in its last bit (0.7 -> 0.70000005); the
  kernel does the same sums in the same order, bit for bit. An unflipped axis of an ``xywh``
  box still makes that round trip (``w' = (x + w) - x``), as in DALI; ``ltrb`` ones are copied.
- ``coord_flip``: float32 points (N, D), D = 1, 2 or 3; ``layout`` says which column is x, y,
  z (empty: "x", "xy", "xyz" by D). A flipped coordinate is ``2·center - c`` in float32
  (bit for bit DALI's).
- Every flag and centre may be per sample (DALI's argument inputs); a flag is an int (nonzero
  flips) or a bool.
- Both kernels are vectorised NumPy on a copy (a few µs for hundreds of boxes); they are
  written against ``backend.array_module`` so that the GPU kernel is the same code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend, kinds
from augkit.operators.base import SampleOperator
from augkit.operators.geometric.flip import to_flag
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    described,
    keeps_kind,
    register,
    to_bool,
    to_float,
)

BOXES_INPUT = InputSpec(
    "boxes: float32 (N, 4), relative ltrb or xywh",
    kinds=("boxes",),
    hints={"image": "bb_flip flips boxes; flip images with fn.flip"},
)
POINTS_INPUT = InputSpec(
    "points: float32 (N, D) coordinates, D = 1, 2 or 3",
    kinds=("keypoints", "vertices", "boxes"),
    hints={"image": "coord_flip flips coordinates; flip images with fn.flip"},
)


def box_array(sample: Any, operator: str) -> Any:
    """``sample`` as an (N, 4) float32 view of its boxes (an (N, 4) array, or a flat array of
    4·N values), with a clear error otherwise."""
    if sample.dtype != np.float32:
        raise ValueError(f"{operator}: boxes must be float32, got {sample.dtype}")
    if sample.ndim == 2 and sample.shape[1] == 4:
        return sample
    if sample.ndim == 1 and sample.shape[0] % 4 == 0:
        return sample.reshape(-1, 4)
    raise ValueError(
        f"{operator}: boxes must be an (N, 4) array (or a flat array of 4·N values), "
        f"got shape {tuple(sample.shape)}"
    )


def boxes_output(args: dict[str, Any], inputs: Any) -> list[OutputSpec | None]:
    """The output kind of a box operator: boxes in the format ``ltrb`` says."""
    ltrb = bool(args.get("ltrb", False))
    spec = inputs[0] if inputs else None
    return [
        OutputSpec(
            kind=kinds.boxes("ltrb" if ltrb else "xywh", True),
            ndim=spec.ndim if spec is not None else None,
            layout=spec.layout if spec is not None else None,
        )
    ]


class BbFlip(SampleOperator):
    """Mirrors relative boxes left-right and/or top-bottom."""

    moves_geometry = True
    """It moves box coordinates (``OperatorImpl.moves_geometry``)."""

    def cpu(self, sample: Any, *, ltrb: bool, horizontal: bool, vertical: bool, **_: Any) -> Any:
        boxes = box_array(sample, "bb_flip")
        xp = backend.array_module(sample)
        out = boxes.copy()
        one = xp.float32(1)
        for flip, (lo, hi) in ((horizontal, (0, 2)), (vertical, (1, 3))):
            if not flip and ltrb:
                continue
            start = boxes[:, lo]
            end = boxes[:, hi] if ltrb else start + boxes[:, hi]
            if not flip:  # xywh: DALI still goes through ltrb, w' = (x + w) - x
                out[:, hi] = end - start
                continue
            new_start = one - end
            out[:, lo] = new_start
            out[:, hi] = one - start if ltrb else (one - start) - new_start
        return out.reshape(sample.shape)

    gpu = cpu


register(
    OperatorSchema(
        name="bb_flip",
        class_name="BbFlip",
        impl=BbFlip,
        accepts=[BOXES_INPUT],
        output_kinds=boxes_output,
        devices=("cpu", "gpu"),
        doc=(
            "Flips bounding boxes horizontally (``horizontal``, on by default) and/or "
            "vertically (``vertical``), in relative coordinates (the image is [0, 1] a side). "
            "Boxes are ``xywh`` unless ``ltrb=True``; float32 (N, 4) in, float32 (N, 4) out."
        ),
        args=[
            Arg("ltrb", "True for ltrb boxes, False for xywh", False, to_bool),
            Arg("horizontal", "nonzero: flip the horizontal dimension", 1, to_flag, True),
            Arg("vertical", "nonzero: flip the vertical dimension", 0, to_flag, True),
        ],
    )
)


@described('a layout of the coordinates: a string of "x", "y", "z" ("" for the default)')
def to_coord_layout(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    if len(value) > 3 or set(value) - set("xyz") or len(set(value)) != len(value):
        raise ValueError(f'expected up to 3 distinct letters among "x", "y", "z", got {value!r}')
    return value


class CoordFlip(SampleOperator):
    """Reflects point coordinates about a centre, per axis."""

    moves_geometry = True
    """It moves coordinates (``OperatorImpl.moves_geometry``)."""

    def cpu(
        self,
        sample: Any,
        *,
        layout: str,
        flip_x: bool,
        flip_y: bool,
        flip_z: bool,
        center_x: float,
        center_y: float,
        center_z: float,
        **_: Any,
    ) -> Any:
        if sample.dtype != np.float32:
            raise ValueError(f"coord_flip: the input must be float32, got {sample.dtype}")
        if sample.ndim != 2 or not 1 <= sample.shape[1] <= 3:
            raise ValueError(
                "coord_flip: the input must be (N, D) coordinates with D = 1, 2 or 3, got "
                f"shape {tuple(sample.shape)}"
            )
        ndim = sample.shape[1]
        axes = layout or "xyz"[:ndim]
        if len(axes) != ndim:
            raise ValueError(f'coord_flip: layout "{layout}" does not fit {ndim}-D coordinates')
        xp = backend.array_module(sample)
        out = sample.copy()
        flips = {"x": (flip_x, center_x), "y": (flip_y, center_y), "z": (flip_z, center_z)}
        for column, axis in enumerate(axes):
            flip, center = flips[axis]
            if flip:
                out[:, column] = xp.float32(2 * xp.float32(center)) - sample[:, column]
        return out

    gpu = cpu


register(
    OperatorSchema(
        name="coord_flip",
        class_name="CoordFlip",
        impl=CoordFlip,
        accepts=[POINTS_INPUT],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Flips (reflects) points or vectors about a centre: each coordinate whose "
            "``flip_x``/``flip_y``/``flip_z`` is nonzero becomes ``2 * center - c``. The input "
            "is float32 (N, D), D = 1, 2 or 3, its columns named by ``layout`` (default "
            '"x", "xy" or "xyz").'
        ),
        args=[
            Arg("layout", "the order of the coordinates: x, y, z letters", "", to_coord_layout),
            Arg("flip_x", "nonzero: flip the horizontal (x) coordinate", 1, to_flag, True),
            Arg("flip_y", "nonzero: flip the vertical (y) coordinate", 0, to_flag, True),
            Arg("flip_z", "nonzero: flip the depthwise (z) coordinate", 0, to_flag, True),
            Arg("center_x", "flip centre on the horizontal axis", 0.5, to_float(), True),
            Arg("center_y", "flip centre on the vertical axis", 0.5, to_float(), True),
            Arg("center_z", "flip centre on the depthwise axis", 0.5, to_float(), True),
        ],
    )
)
