"""Layouts of image samples: which axis is H, W, C (and D, F), for kernels that need to know.

DALI names axes by letters ("HWC", "CHW", "DHWC", "FHWC"); an input without a layout is taken as
"HW" (2-D) or "HWC" (3-D), as DALI does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit.operators.base import SampleOperator
from augkit.operators.registry import InputSpec, kind_policy
from augkit.tensors import TensorList

# What image operators accept (OperatorSchema.accepts), checked when a pipeline is built: the
# per-kind policies of the operator families (DESIGN.md, "Data kinds"). Geometric operators
# take images now and will take masks, boxes and keypoints with the annotations issue; colour
# operators take images only.
GEOMETRIC = kind_policy("geometric")
COLOR = kind_policy("color")
ANY_IMAGE = InputSpec(
    "an image (2 or more dimensions: HW, HWC, CHW, or a layout with H and W axes)",
    kinds=("image",),
    min_ndim=2,
    hints=GEOMETRIC,
)
IMAGE_WITH_CHANNELS = InputSpec(
    "an image with a channel axis (HWC, CHW, ...: 3 or more dimensions)",
    kinds=("image",),
    min_ndim=3,
    hints=GEOMETRIC,
)
COLOR_IMAGE = InputSpec("an image (decoded pixels)", kinds=("image",), hints=COLOR)
# The warps' and crops' images of exactly 3 dimensions.
HWC_IMAGE = InputSpec(
    "an image with layout HWC (3 dimensions)",
    ndims=(3,),
    layouts=("HWC",),
    kinds=("image",),
    hints=GEOMETRIC,
)
HWC_OR_CHW_IMAGE = InputSpec(
    "an image with layout HWC or CHW (3 dimensions)",
    ndims=(3,),
    layouts=("HWC", "CHW"),
    kinds=("image",),
    hints=GEOMETRIC,
)

# Every integer and floating-point type (what the filters and erase take).
NUMBER_TYPES = tuple(
    np.dtype(t)
    for t in (
        np.uint8,
        np.int8,
        np.uint16,
        np.int16,
        np.uint32,
        np.int32,
        np.uint64,
        np.int64,
        np.float16,
        np.float32,
        np.float64,
    )
)

# Layouts assumed for an input that has none, by number of dimensions.
_DEFAULT_LAYOUTS = {2: "HW", 3: "HWC"}


def image_layout(layout: str, ndim: int, *, need_channel: bool = False) -> str:
    """The layout kernels work with: ``layout``, or "HW"/"HWC" for an unlabelled 2-D/3-D input.

    Raises:
        ValueError: the layout does not fit ``ndim``, lacks H or W, or lacks C when
            ``need_channel``.
    """
    if not layout:
        if ndim not in _DEFAULT_LAYOUTS:
            raise ValueError(
                f"the input has no layout and {ndim} dimensions; give its source a layout "
                f"(e.g. fn.external_source(..., layout='DHWC'))"
            )
        layout = _DEFAULT_LAYOUTS[ndim]
    if len(layout) != ndim:
        raise ValueError(f'the layout "{layout}" does not fit a sample with {ndim} dimensions')
    if "H" not in layout or "W" not in layout or len(set(layout)) != len(layout):
        raise ValueError(
            f'The layout "{layout}" does not match any of the allowed layouts: it needs an H and '
            f"a W axis (e.g. HWC, CHW, DHWC, FHWC)"
        )
    if need_channel and "C" not in layout:
        raise ValueError(
            f'The layout "{layout}" has no channel axis; this operator expects an explicit '
            f"channel dimension (C), even for monochrome images"
        )
    return layout


class ImageOperator(SampleOperator):
    """A SampleOperator whose kernels need the input's layout: they get it as ``layout``
    (the batch's layout, or "HW"/"HWC" for an unlabelled input).

    ``need_channel``: the layout must have a C axis.
    """

    need_channel = False

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        batch = inputs[0]
        ndim = batch.samples[0].ndim
        return {"layout": image_layout(batch.layout(), ndim, need_channel=self.need_channel)}


def check_image(
    operator: str, sample: Any, layout: str, layouts: Sequence[str], dtypes: Sequence[np.dtype]
) -> None:
    """Raise ValueError, in words a user can act on, when ``sample`` is not a non-empty 3-D
    image of one of ``layouts`` ("" counts as the first) with one of ``dtypes``."""
    if sample.ndim != 3 or layout not in (*layouts, ""):
        where = f" and layout {layout!r}" if layout else ""
        raise ValueError(
            f"{operator} needs images with layout {' or '.join(layouts)} (3 dimensions), got a "
            f"sample of shape {tuple(sample.shape)}{where}"
        )
    if 0 in sample.shape:
        raise ValueError(
            f"{operator} needs a non-empty image (height, width and channels > 0), got a "
            f"sample of shape {tuple(sample.shape)}"
        )
    if sample.dtype not in dtypes:
        names = ", ".join(np.dtype(t).name for t in dtypes)
        raise ValueError(f"{operator} takes images of type {names}; got {sample.dtype.name}")
