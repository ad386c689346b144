"""``fn.pad``: pad every sample at the end of the chosen axes with ``fill_value``, to the
largest extent in the batch, to a minimum ``shape``, and/or to a multiple of ``align``, as
DALI's ``Pad``.

DALI's rules (``dali/operators/generic/pad.h``, checked against DALI 2.4):

- Batch semantics: an axis without a positive ``shape`` entry (not given, 0 or negative) is
  padded to the largest extent of that axis in the *batch* (so samples come out equal there);
  one with a positive entry to ``max(shape, the sample's extent)``: a sample is never cut.
  Then the extent is rounded up to a multiple of ``align``. ``shape=1, align=2`` pads each
  sample only to even extents.
- Padding goes at the end of each axis (the data stays at the origin).
- ``axes`` / ``axis_names`` exclude each other; with neither, every axis is padded. Axis names
  need the input's layout (an unlabelled input has none: DALI refuses "H" there, and so does
  augkit); negative ``axes`` count from the back. One ``shape`` or ``align`` value applies to
  every padded axis.
- ``align`` must be positive. ``fill_value`` may be per sample; it is converted to the input
  type by truncation (-3.7 -> -3).

Known difference from DALI: a fill value outside the range of an integer type is clamped
(300 -> 255 for uint8); DALI ``static_cast``s it, which wraps on x86 (300 -> 44).

Targets (``fn.pad([images, masks, boxes, labels], axis_names="HW", align=32)``,
``geometric/targets.py``): the padded size is the image's (``padded_shape`` on the image's
shape and the image batch's largest extents), the data stays at the origin, so masks are
padded with class 0 at the end, whatever ``fill_value`` is (bit for bit the image kernel's pad
of the mask with ``fill_value=0``), absolute boxes and keypoints keep their coordinates and
relative ones are rescaled to the larger image; nothing is dropped. Only with an image in the
call: alone (or with other targets only, ``fn.pad([boxes, labels], fill_value=-1)``), boxes,
labels, masks... are padded as tensors, as DALI pads them (every sample to the batch's largest
number of boxes: DALI's idiom before batching boxes).

Because the output of one sample depends on the others (the batch's largest extents), the
operator never runs in a per-sample chain (``chainable`` is False); the kernel gets the batch's
extents from ``batch_args``.

GPU (``device="gpu"``, issue 18): the kernel is written against the sample's array module
(``backend.array_module``), ``gpu = cpu``: the output shape and the converted fill value are
worked out on the host (the fill: converted there, moved as a 0-d array of the input type),
the device allocates (``xp.empty``), fills and copies the sample into the origin corner
(slice assignment). Images moved with targets (``targets.py``) run the same kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.kinds import Kind
from augkit.operators.base import Given, Kernel, SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.geometric.slice import ANY_DATA, sample_layout, to_axis_names, to_int_list
from augkit.operators.geometric.targets import TARGET_KINDS, Geometry, MovesTargets, image_size
from augkit.operators.layouts import axes_by_name, axes_in_range, exclusive
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_float,
)
from augkit.tensors import TensorList

_BOTH_AXES = '"axes" and "axis_names" are mutually exclusive'


def pad_axes(
    ndim: int, layout: str, axes: Sequence[int] | None, axis_names: str | None
) -> list[int]:
    """The padded axes (all of them when neither ``axes`` nor ``axis_names`` names any).

    Raises:
        ValueError: both given, an axis out of range, or a name the layout lacks.
    """
    if axes is not None and axis_names is not None:
        raise ValueError(_BOTH_AXES)
    if axis_names:
        return axes_by_name(axis_names, layout)
    if axes:
        return axes_in_range(axes, ndim)
    return list(range(ndim))


def _broadcast(values: Sequence[int] | None, count: int, name: str) -> list[int] | None:
    if values is None:
        return None
    if len(values) == 1:
        return list(values) * count
    if len(values) != count:
        raise ValueError(f"'{name}' has {len(values)} values, but {count} axes are padded")
    return list(values)


def padded_shape(
    shape: Sequence[int],
    batch_max: Sequence[int],
    axes: Sequence[int],
    target: Sequence[int] | None,
    align: Sequence[int] | None,
) -> tuple[int, ...]:
    """One sample's output shape (see the module docstring).

    Example:
        >>> padded_shape((5, 7, 3), (9, 7, 3), [0], [7], [4])
        (8, 7, 3)
        >>> padded_shape((5, 7, 3), (9, 7, 3), [0, 1], None, [4, 3])
        (12, 9, 3)
    """
    n = len(axes)
    target = _broadcast(target, n, "shape")
    align = _broadcast(align, n, "align")
    out = list(shape)
    for k, dim in enumerate(axes):
        want = target[k] if target is not None else 0
        extent = max(want, shape[dim]) if want > 0 else batch_max[dim]
        if align is not None:
            if align[k] <= 0:
                raise ValueError(f"values of 'align' must be positive, got {align[k]}")
            extent = -(-extent // align[k]) * align[k]
        out[dim] = extent
    return tuple(out)


class Pad(MovesTargets, SampleOperator):
    """Pads each sample at the end of its axes (``padded_shape``), and with input sets moves
    masks, boxes and keypoints with the images (``targets.py``)."""

    @classmethod
    def kernel_table(cls) -> dict[tuple[str, str], Kernel]:
        """The target rules, where the targets come with an image to pad with; else targets
        are tensors, padded as DALI pads them (``fn.pad([boxes, labels], fill_value=-1)``)."""
        table = super().kernel_table()
        for (device, kind), rule in list(table.items()):
            if kind in TARGET_KINDS:
                table[device, kind] = _or_as_tensor(rule)
        return table

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        layout, batch_max = args["layout"], args["batch_max"]
        if len(shape) != len(batch_max):
            raise ValueError(
                f"all samples of a batch must have the same number of dimensions; this one has "
                f"{len(shape)} (shape {tuple(shape)}), sample 0 has {len(batch_max)}"
            )
        dims = pad_axes(len(shape), layout, args["axes"], args["axis_names"])
        out_shape = padded_shape(shape, batch_max, dims, args["shape"], args["align"])
        return Geometry.scale_translate(
            1.0, 1.0, 0.0, 0.0, image_size(shape, layout), image_size(out_shape, layout)
        )

    def chainable(self) -> bool:
        return False  # a sample's output depends on the whole batch (its largest extents)

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        samples = inputs[0].samples
        ndim = samples[0].ndim
        same = [s.shape for s in samples if s.ndim == ndim]
        batch_max = tuple(np.max(same, axis=0).tolist()) if ndim else ()
        return {"layout": inputs[0].layout(), "batch_max": batch_max}

    def target_batch_args(self, inputs: Sequence[TensorList], kind: Kind) -> dict[str, Any]:
        args = self.batch_args(inputs)
        if kind.name == "mask":
            args["layout"] = sample_layout(args["layout"], inputs[0].samples[0].ndim)
        return args

    def cpu(
        self,
        data: np.ndarray,
        *,
        layout: str,
        batch_max: tuple[int, ...],
        axes: Sequence[int] | None,
        axis_names: str | None,
        shape: Sequence[int] | None,
        align: Sequence[int] | None,
        fill_value: float,
        **_: Any,
    ) -> np.ndarray:
        if data.ndim != len(batch_max):
            raise ValueError(
                f"all samples of a batch must have the same number of dimensions; this one has "
                f"{data.ndim} (shape {data.shape}), sample 0 has {len(batch_max)}"
            )
        dims = pad_axes(data.ndim, layout, axes, axis_names)
        out_shape = padded_shape(data.shape, batch_max, dims, shape, align)
        if out_shape == data.shape:
            return data
        fill = np.asarray([fill_value], np.float64)  # 1-D: convert_sat's fast path needs it
        if data.dtype.kind in "iu":
            fill = np.trunc(fill)
        xp = backend.array_module(data)
        out = xp.empty(out_shape, data.dtype)
        out[...] = xp.asarray(convert_sat(fill, data.dtype, np)[0])  # converted on the host
        out[tuple(slice(0, e) for e in data.shape)] = data
        return out

    gpu = cpu


def _or_as_tensor(rule: Kernel) -> Kernel:
    """``rule`` where the targets come with an image (``_with_image``), else the image kernel:
    the targets padded as tensors."""

    def pad_targets(impl: Any, ctx: Any, given: Given) -> list[TensorList]:
        if not _with_image(given.kind, given.companions):
            return impl.run_samples(ctx, given)
        return rule(impl, ctx, given)

    pad_targets.__name__ = f"pad_{rule.__name__}"
    return pad_targets


def _with_image(kind: Any, companions: Sequence[TensorList]) -> bool:
    """Whether targets of ``kind`` come with an image to be padded with (an image among the
    call's other input sets, a mask for boxes and keypoints, or data of unknown kind of two
    or more dimensions); else they are padded as tensors (``fn.pad([boxes, labels],
    fill_value=-1)``)."""
    wanted = ("image",) if kind.name == "mask" else ("image", "mask")
    return any(
        b.kind.name in wanted or (b.kind.is_generic and len(b) > 0 and np.ndim(b.samples[0]) >= 2)
        for b in companions
    )


register(
    OperatorSchema(
        name="pad",
        class_name="Pad",
        devices=("cpu", "gpu"),
        impl=Pad,
        accepts=[ANY_DATA],
        output_kinds=keeps_kind,
        validate=exclusive("axes", "axis_names", _BOTH_AXES),
        doc=(
            "Pads the samples with ``fill_value`` at the end of the axes ``axes`` / "
            "``axis_names`` (default: all axes), as DALI's ``fn.pad``: to the largest extent "
            "of the batch, or to at least ``shape`` where it is given (positive), then up to a "
            "multiple of ``align``. A sample is never cut. Example: "
            "``fn.pad(images, axis_names='HW', align=32)`` makes every image of the batch the "
            "same size, a multiple of 32. Moves masks, boxes, keypoints and labels with the "
            "images when given with them as input sets (``fn.pad([images, masks, boxes, "
            "labels], ...)``: masks padded with class 0 whatever ``fill_value`` is); without "
            "an image, boxes and labels are padded as tensors (``fn.pad(boxes, "
            "fill_value=-1)``: to the batch's largest number of boxes). Difference from DALI: "
            "a fill value outside an integer type's range is clamped (DALI wraps it)."
        ),
        args=[
            Arg(
                "axes",
                "indices of the padded axes (negative count from the back); excludes axis_names",
                None,
                to_int_list,
                True,
            ),
            Arg(
                "axis_names",
                "the padded axes by layout letter ('HW'); excludes axes",
                None,
                to_axis_names,
            ),
            Arg(
                "shape",
                "the output extent per padded axis (<= 0: the batch's largest); never cuts",
                None,
                to_int_list,
                True,
            ),
            Arg(
                "align",
                "round each padded extent up to a multiple of this (one value, or one per axis)",
                None,
                to_int_list,
                True,
            ),
            Arg("fill_value", "the value of the padding", 0.0, to_float(), True),
        ],
    )
)
