"""Layouts of image samples: which axis is H, W, C (and D, F), for kernels that need to know.

DALI names axes by letters ("HWC", "CHW", "DHWC", "FHWC"); an input without a layout is taken as
"HW" (2-D) or "HWC" (3-D), as DALI does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import types
from augkit.operators.base import SampleOperator
from augkit.operators.registry import InputSpec, described, kind_policy, to_dtype, to_str
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
    check_type(f"{operator} takes images", sample.dtype, dtypes)


def check_type(what: str, dtype: np.dtype, dtypes: Sequence[np.dtype], note: str = "") -> None:
    """Raise ValueError "``what`` of type <the names of ``dtypes``>``note``; got <dtype>" when
    ``dtype`` is not one of ``dtypes``.

    Example:
        >>> check_type("erase takes data", np.dtype(bool), NUMBER_TYPES[:2])
        Traceback (most recent call last):
        ValueError: erase takes data of type uint8, int8; got bool
    """
    if dtype not in dtypes:
        names = ", ".join(np.dtype(t).name for t in dtypes)
        raise ValueError(f"{what} of type {names}{note}; got {dtype.name}")


def axes_by_name(names: str, layout: str) -> list[int]:
    """The indices in ``layout`` of the axis letters ``names`` (an operator's ``axis_names``).

    Raises:
        ValueError: a letter the layout lacks.

    Example:
        >>> axes_by_name("WH", "HWC")
        [1, 0]
    """
    found = []
    for name in names:
        k = layout.find(name)
        if k < 0:
            raise ValueError(
                f"axis '{name}' (axis_names={names!r}) is not in the input's layout "
                f"{layout!r}; give the input a layout or use axes=[...]"
            )
        found.append(k)
    return found


def axes_in_range(axes: Sequence[int], ndim: int) -> list[int]:
    """``axes`` (an operator's ``axes``, negative ones from the end) as indices in
    ``[0, ndim)``.

    Raises:
        ValueError: an axis out of range.

    Example:
        >>> axes_in_range([-1, 0], 3)
        [2, 0]
    """
    found = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise ValueError(
                f"axis {axis} is out of range for a {ndim}-D input (allowed: {-ndim}..{ndim - 1})"
            )
        found.append(axis % ndim)
    return found


def exclusive(first: str, second: str, message: str) -> Callable[[dict[str, Any]], None]:
    """A schema ``validate`` that refuses ``first`` and ``second`` given together (neither
    None) with ValueError(``message``).

    Example:
        >>> exclusive("axes", "axis_names", "one or the other")({"axes": (0,), "axis_names": "H"})
        Traceback (most recent call last):
        ValueError: one or the other
    """

    def validate(args: dict[str, Any]) -> None:
        if args.get(first) is not None and args.get(second) is not None:
            raise ValueError(message)

    return validate


def number_dtype(allowed: str, refusal: str) -> Callable[[Any], types.DALIDataType]:
    """An argument converter to a data type of numbers (integer or floating point), described
    as ``allowed``; any other type raises ValueError(``refusal``), where ``{name}`` stands for
    the type's name.

    Example:
        >>> number_dtype("a type", "not types.{name}")(types.BOOL)
        Traceback (most recent call last):
        ValueError: not types.BOOL
    """

    @described(allowed)
    def convert(value: Any) -> types.DALIDataType:
        dtype = to_dtype(value)
        if np.dtype(dtype.numpy).kind not in "iuf":
            raise ValueError(refusal.format(name=dtype.name))
        return dtype

    return convert


def axis_letters(allowed: str, refusal: str) -> Callable[[Any], str]:
    """An argument converter to a string of distinct axis letters (a layout, or the axes an
    operator works on), described as ``allowed``; a repeated letter raises
    ValueError(``refusal``), where ``{value}`` stands for the string.

    Example:
        >>> axis_letters("letters", 'axis names repeat in "{value}"')("HWH")
        Traceback (most recent call last):
        ValueError: axis names repeat in "HWH"
    """

    @described(allowed)
    def convert(value: Any) -> str:
        value = to_str(value)
        if len(set(value)) != len(value):
            raise ValueError(refusal.format(value=value))
        return value

    return convert
