"""``fn.slice``: cut a window (a "slice") out of any tensor, as DALI's ``Slice``.

The window is given either by named arguments (``start``/``rel_start`` with ``end``/``rel_end``
or ``shape``/``rel_shape``), or by two extra positional inputs, ``anchor`` and ``shape``
(``normalized_anchor``/``normalized_shape`` say whether float ones are fractions of the
extent), over the axes ``axis_names`` (default "WH": the values are (x, y)) or ``axes``.

DALI's rules (``dali/operators/generic/slice/slice_attr.h``, checked against DALI 2.4):

- Rounding: per axis, ``anchor = llround(start)`` and ``size = llround(end) - anchor`` (halves
  away from zero), on the *end*, not on the size: start 1.4, shape 2.2 is [1, 4), size 3.
- Precision: ``rel_start``/``rel_end``/``rel_shape`` are float32 and multiplied by the extent
  in float32 (``float * int64`` in C++); ``rel_start`` + ``rel_shape`` is summed in double and
  multiplied once. Float positional inputs are widened to double first. Integer positional
  inputs are always absolute, whatever ``normalized_anchor`` says; anchor and shape must have
  the same type (int32, int64 or float32).
- Axes: ``axis_names`` and ``axes`` exclude each other; with neither, ``axis_names="WH"``. An
  input without a layout is taken as "HW" (2-D) or "HWC" (3-D) for axis names, as DALI does
  (a 1-D input needs ``axes``). Negative ``axes`` count from the back.
- Checks: a negative shape, an end before the start, or (policy "error", the default) a window
  leaving the input raise, naming the window and the input's shape.
- ``out_of_bounds_policy``: "error"; "pad" = "constant" (``fill_values``: one, or one per
  channel: the count is checked even when nothing is padded, as DALI does); "trim_to_shape"
  cuts the window to the input; and DALI 2.4's "edge" = "clamp", "reflect" = "reflect_1001"
  (the edge repeats: NumPy's "symmetric"), "reflect_101" (NumPy's "reflect") and "wrap".
- ``dtype``: FLOAT, FLOAT16, UINT8 or the input's own type (DALI refuses others). Floats become
  uint8 by clamping and *truncating* (99.6 -> 99: DALI's slice kernel, not ConvertSat).

Known differences from DALI: DALI's pad path converts out-of-range floats to uint8 with a bare
``static_cast`` (-60.4 -> 196, a fill of 300 -> 44: undefined behaviour in C++ that wraps on
x86); augkit clamps there as inside the input (0 and 255), and fills are truncated then clamped
as in ``fn.crop``. With ``axis_names=""`` augkit slices over all axes (DALI slices none).

The kernel is NumPy views: a window inside the input is a basic slice (copied once, to be
contiguous); only out-of-bounds windows gather or pad.

GPU (``device="gpu"``): ``Slice.gpu`` is the same kernel on the sample's array module
(``backend.array_module``: CuPy): the window is worked out on the host (the ``anchor``/``shape``
inputs, copied to the host with ``backend.to_cpu`` when they arrive on the GPU), then cut on the
device with a basic slice, ``cut_window`` (``xp.empty`` + a broadcast fill + one slice
assignment) for "pad", or ``take(indices, axis=...)`` with host-computed indices moved by
``xp.asarray`` for "edge"/"reflect"/"wrap"; the conversion is ``xp.trunc`` and ``convert_sat``
on the device. Only copies and exact conversions: equal to the CPU kernel bit for bit.

Targets (``fn.slice([images, masks, boxes, labels], rel_start=..., rel_shape=...)``, also with
the ``anchor``/``shape`` inputs, ``geometric/targets.py``): the window is ``sample_window``'s,
the kernel's own computation, over the H and W axes of the image's layout ("HW"/"HWC" without
one). A mask is cut bit for bit as the kernel cuts it, except that a padded outside is class 0
whatever ``fill_values`` is (and ``dtype`` converts images only). Boxes are clipped to the
window and dropped with their labels when nothing of them is left in it; keypoints move and
are never dropped. "trim_to_shape" trims the targets' window as the image's. "edge", "reflect",
"reflect_101" and "wrap" repeat image content that no transform of coordinates describes: a
window that needs them is refused for the targets (an OperatorError naming the policy); one
inside the image moves them. Data of other kinds (encoded bytes...) is sliced as a tensor.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.geometric.crop import cut_window, fill_array, fit_window, window_geometry
from augkit.operators.geometric.targets import Geometry, MovesTargets, movable
from augkit.operators.layouts import axes_by_name, axes_in_range
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    described,
    keeps_kind,
    one_of,
    register,
    to_bool,
    to_dtype,
    to_floats,
    to_ints,
)
from augkit.tensors import TensorList
from augkit.types import DALIDataType

POLICIES = (
    "error",
    "pad",
    "constant",
    "trim_to_shape",
    "edge",
    "clamp",
    "reflect",
    "reflect_1001",
    "reflect_101",
    "wrap",
)
_NAMED = ("start", "rel_start", "end", "rel_end", "shape", "rel_shape")
_OUT_TYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.uint8))
_DEFAULT_LAYOUTS = {2: "HW", 3: "HWC"}
_I64 = float(2**63)


def llround(value: float) -> int:
    """C's ``llround``: nearest integer, halves away from zero (exact for any double).

    Example:
        >>> llround(2.5), llround(-2.5), llround(2.4999999999999996)
        (3, -3, 2)
    """
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return int(whole)


def sample_layout(layout: str, ndim: int) -> str:
    """The layout axis names refer to: the input's, or "HW"/"HWC" for an unlabelled 2-D/3-D
    sample ("" otherwise)."""
    if layout:
        return layout
    return _DEFAULT_LAYOUTS.get(ndim, "")


def slice_axes(
    ndim: int, layout: str, axes: Sequence[int] | None, axis_names: str | None
) -> list[int]:
    """The axes the window's values refer to, in their order.

    Raises:
        ValueError: an axis name the layout lacks, or an axis out of range.

    Example:
        >>> slice_axes(3, "HWC", None, None)
        [1, 0]
    """
    if axes is not None and axis_names is None:
        return axes_in_range(axes, ndim)
    names = "WH" if axis_names is None else axis_names
    if not names:
        return list(range(ndim))
    return axes_by_name(names, sample_layout(layout, ndim))


def _per_axis(values: Sequence[Any] | None, count: int, name: str) -> Sequence[Any] | None:
    if values is None:
        return None
    if len(values) == 1 and count > 1:  # DALI broadcasts a single value to every axis
        return list(values) * count
    if len(values) != count:
        raise ValueError(f"'{name}' has {len(values)} values, but the slice has {count} axes")
    return values


def _f32(value: float | np.floating) -> float:
    return float(np.float32(value))


def _window_axis(
    anchor: float, end: float, extent: int
) -> tuple[int, int]:  # (anchor, size) after DALI's range checks and rounding
    if not (-_I64 <= anchor <= _I64):
        raise ValueError(f"the slice start {anchor:g} is out of the int64 range")
    if not (-_I64 <= end <= _I64):
        raise ValueError(f"the slice end {end:g} is out of the int64 range")
    if end < anchor:
        raise ValueError(f"the slice end can't be before its start: start={anchor:g}, end={end:g}")
    a = llround(anchor)
    return a, llround(end) - a


def named_window(
    shape: Sequence[int], axes: Sequence[int], args: dict[str, Any]
) -> tuple[list[int], list[int]]:
    """DALI's window (anchor, size per axis of the sample) from the named arguments.

    Example:
        >>> named_window((5, 7, 2), [1, 0], {"rel_start": (0.2, 0.2), "rel_shape": (0.5, 0.5)})
        ([1, 1, 0], [3, 4, 2])
    """
    n = len(axes)
    start, rel_start, end, rel_end, size, rel_shape = (_per_axis(args.get(k), n, k) for k in _NAMED)
    anchor_out, size_out = [0] * len(shape), list(shape)
    for i, dim in enumerate(axes):
        extent = shape[dim]
        anchor = 0.0
        if start is not None:
            anchor = float(start[i])
        elif rel_start is not None:
            anchor = _f32(_f32(rel_start[i]) * np.float32(extent))
        stop = float(extent)
        if end is not None:
            stop = float(end[i])
        elif rel_end is not None:
            stop = _f32(_f32(rel_end[i]) * np.float32(extent))
        elif size is not None:
            if size[i] < 0:
                raise ValueError(f"negative slice shapes are not allowed, got shape {size[i]}")
            stop = anchor + float(size[i])
        elif rel_shape is not None:
            if rel_shape[i] < 0:
                raise ValueError(
                    f"negative slice shapes are not allowed, got rel_shape {rel_shape[i]}"
                )
            if rel_start is not None:  # summed in double, multiplied once
                stop = (_f32(rel_start[i]) + _f32(rel_shape[i])) * extent
            else:
                stop = anchor + _f32(_f32(rel_shape[i]) * np.float32(extent))
        anchor_out[dim], size_out[dim] = _window_axis(anchor, stop, extent)
    return anchor_out, size_out


def positional_window(
    shape: Sequence[int],
    axes: Sequence[int],
    anchor: np.ndarray,
    size: np.ndarray,
    normalized_anchor: bool,
    normalized_shape: bool,
) -> tuple[list[int], list[int]]:
    """DALI's window from the ``anchor`` and ``shape`` inputs of one sample.

    Raises:
        ValueError: inputs of different types, of a type other than int32/int64/float32, not
            1-D, or not one value per axis.

    Example:
        >>> positional_window(
        ...     (5, 7, 2), [1, 0], np.float32([0.25, 0.3]), np.float32([0.5, 0.4]), True, True
        ... )
        ([2, 2, 0], [2, 3, 2])
    """
    anchor, size = np.asarray(anchor), np.asarray(size)
    if anchor.dtype != size.dtype:
        raise ValueError(
            f"the anchor and shape inputs must have the same type, got {anchor.dtype.name} "
            f"and {size.dtype.name}"
        )
    if anchor.dtype not in (np.int32, np.int64, np.float32):
        raise ValueError(
            f"the anchor and shape inputs must be int32, int64 or float32, got {anchor.dtype.name}"
        )
    if anchor.shape != size.shape or anchor.ndim > 1:
        raise ValueError(
            f"the anchor and shape inputs must be 1-D (or scalars) of the same shape, got "
            f"{anchor.shape} and {size.shape}"
        )
    if anchor.size != len(axes):
        raise ValueError(
            f"the anchor and shape inputs have {anchor.size} values, but the slice has "
            f"{len(axes)} axes"
        )
    is_float = anchor.dtype.kind == "f"
    norm_a, norm_s = is_float and normalized_anchor, is_float and normalized_shape
    anchor_out, size_out = [0] * len(shape), list(shape)
    flat_a, flat_s = anchor.reshape(-1).tolist(), size.reshape(-1).tolist()
    for i, dim in enumerate(axes):
        extent = shape[dim]
        a, s = float(flat_a[i]), float(flat_s[i])
        if not (math.isfinite(a) and math.isfinite(s)):
            raise ValueError(f"the anchor and shape must be finite, got {a} and {s}")
        if norm_a and norm_s:
            stop = (a + s) * extent
            a *= extent
        else:
            a = a * extent if norm_a else a
            stop = a + (s * extent if norm_s else s)
        anchor_out[dim], size_out[dim] = _window_axis(a, stop, extent)
    return anchor_out, size_out


def _source_indices(start: int, size: int, extent: int, policy: str) -> np.ndarray:
    """The source index of each position of ``[start, start + size)`` under ``policy``."""
    idx = np.arange(start, start + size)
    if policy in ("edge", "clamp"):
        return np.clip(idx, 0, extent - 1)
    if policy == "wrap":
        return np.mod(idx, extent)
    period = 2 * extent if policy in ("reflect", "reflect_1001") else 2 * extent - 2
    if period <= 0:
        return np.zeros_like(idx)
    idx = np.mod(idx, period)
    last = period - 1 if policy in ("reflect", "reflect_1001") else period
    return np.where(idx < extent, idx, last - idx)


def _outside(anchor: Sequence[int], size: Sequence[int], shape: Sequence[int]) -> str:
    return (
        f"the slice window (anchor {tuple(anchor)}, shape {tuple(size)}) does not fit in "
        f"the input of shape {tuple(shape)}; use out_of_bounds_policy='pad' or "
        f"'trim_to_shape', or a smaller window (DALI: Slice can't be placed out of bounds "
        f"with current policy)"
    )


def take_window(
    x: np.ndarray,
    anchor: Sequence[int],
    size: Sequence[int],
    policy: str,
    convert: Any,
    fill: Any = None,
    xp: Any = np,
) -> np.ndarray:
    """The window of ``x`` under ``policy`` (one of ``POLICIES``), each element passed through
    ``convert``; ``fill`` (an array of the output type) for "pad"/"constant"; ``xp``: the array
    module of ``x`` (the gather indices are computed in NumPy and moved with ``xp.asarray``).

    Raises:
        ValueError: with "error", a window that leaves ``x``; "edge"/"reflect"/"wrap" of an
            empty axis.
    """
    inside = all(a >= 0 and a + s <= e for a, s, e in zip(anchor, size, x.shape, strict=True))
    if policy == "trim_to_shape":
        starts = [min(max(a, 0), e) for a, e in zip(anchor, x.shape, strict=True)]
        ends = [min(max(a + s, 0), e) for a, s, e in zip(anchor, size, x.shape, strict=True)]
        anchor, size = starts, [b - a for a, b in zip(starts, ends, strict=True)]
        inside = True
    if inside:
        return convert(x[tuple(slice(a, a + s) for a, s in zip(anchor, size, strict=True))])
    if policy == "error":
        raise ValueError(_outside(anchor, size, x.shape))
    if policy in ("pad", "constant"):
        return cut_window(x, anchor, size, convert, fill, xp)
    region = x
    for axis, (a, s, e) in enumerate(zip(anchor, size, x.shape, strict=True)):
        if a >= 0 and a + s <= e:
            region = region[(slice(None),) * axis + (slice(a, a + s),)]
        else:
            if e == 0 and s > 0:
                raise ValueError(
                    f"out_of_bounds_policy={policy!r} cannot fill a window from the empty "
                    f"axis {axis} of the input (shape {tuple(x.shape)})"
                )
            region = region.take(xp.asarray(_source_indices(a, s, e, policy)), axis=axis)
    return convert(region)


def converter(in_dtype: np.dtype, out_dtype: np.dtype, xp: Any = np) -> Any:
    """How slice converts elements: floats to integers by truncation, then saturation (on
    ``xp``, the array module of the data)."""
    if in_dtype == out_dtype:
        return lambda region: region
    if in_dtype.kind == "f" and out_dtype.kind in "iu":
        return lambda region: convert_sat(xp.trunc(region), out_dtype, xp)
    return lambda region: convert_sat(region, out_dtype, xp)


def output_dtype(in_dtype: np.dtype, dtype: DALIDataType | None, operator: str) -> np.dtype:
    if dtype is None:
        return in_dtype
    out = np.dtype(dtype.numpy)
    if out != in_dtype and out not in _OUT_TYPES:
        raise ValueError(
            f"{operator}: dtype types.{dtype.name} is not supported: use types.FLOAT, "
            f"types.FLOAT16, types.UINT8 or the input's own type ({in_dtype.name})"
        )
    return out


class Slice(MovesTargets, SampleOperator):
    """Cuts each sample's window (``named_window`` / ``positional_window``), and moves masks,
    boxes and keypoints with it (``targets.py``)."""

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0 and sample.ndim == 0:
            raise ValueError("slice needs an input with at least one dimension, got a scalar")

    def cpu(self, data: np.ndarray, *window: np.ndarray, layout: str, **args: Any) -> np.ndarray:
        return self._slice(data, window, layout, args, np)

    def gpu(self, data: Any, *window: Any, layout: str, **args: Any) -> Any:
        """The CPU kernel on ``data``'s array module (CuPy on the GPU); the window on the host."""
        return self._slice(data, window, layout, args, backend.array_module(data))

    @staticmethod
    def _slice(data: Any, window: Sequence[Any], layout: str, args: dict[str, Any], xp: Any) -> Any:
        window = [backend.to_cpu(w) for w in window]  # numbers for the host's window maths
        anchor, size = sample_window(data.shape, window, layout, args)
        out_dtype = output_dtype(data.dtype, args.get("dtype"), "slice")
        policy = args["out_of_bounds_policy"]
        fill = None
        if policy in ("pad", "constant"):
            lay = sample_layout(layout, data.ndim)
            fill = fill_array(args["fill_values"], size, lay, out_dtype, xp)
        convert = converter(data.dtype, out_dtype, xp)
        out = take_window(data, anchor, size, policy, convert, fill, xp)
        return xp.ascontiguousarray(out)

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        anchor: Sequence[int]
        size: Sequence[int]
        anchor, size = sample_window(shape, extra, args["layout"], args)
        policy = args["out_of_bounds_policy"]
        inside = all(a >= 0 and a + s <= e for a, s, e in zip(anchor, size, shape, strict=True))
        if policy == "trim_to_shape":
            anchor, size = fit_window(policy, shape, anchor, size, "")
        elif not inside and policy == "error":
            raise ValueError(_outside(anchor, size, shape))
        elif not inside and policy not in ("pad", "constant"):
            raise ValueError(
                f"out_of_bounds_policy={policy!r} repeats, reflects or wraps the image: masks, "
                f"boxes and keypoints cannot follow it; use 'pad', 'trim_to_shape' or a window "
                f"inside the image to move them with it"
            )
        return window_geometry(shape, sample_layout(args["layout"], len(shape)), anchor, size)


def sample_window(
    shape: Sequence[int], window: Sequence[np.ndarray], layout: str, args: dict[str, Any]
) -> tuple[list[int], list[int]]:
    """One sample's window (anchor, size per axis) from its ``anchor``/``shape`` inputs
    (``window``) or the named arguments, after DALI's checks: what the kernel cuts, and what
    the targets of the sample move by.

    Raises:
        ValueError: no window, or one given in two ways; see ``named_window`` and
            ``positional_window``.
    """
    named = [k for k in _NAMED if args.get(k) is not None]
    if len(window) == 1:
        raise ValueError(
            "slice takes the window either as named arguments (start/end, start/shape...) "
            "or as two positional inputs (anchor, shape); got one positional input"
        )
    if window and named:
        raise ValueError(
            f"the named arguments {named} cannot be used with the positional anchor and "
            f"shape inputs"
        )
    if not window and not named:
        raise ValueError(
            "no slice window: give start/rel_start with end/rel_end/shape/rel_shape, or the "
            "anchor and shape inputs"
        )
    _check_named(args)
    axes = slice_axes(len(shape), layout, args.get("axes"), args.get("axis_names"))
    if window:
        return positional_window(
            shape,
            axes,
            window[0],
            window[1],
            args["normalized_anchor"],
            args["normalized_shape"],
        )
    return named_window(shape, axes, args)


def _check_named(given: dict[str, Any]) -> None:
    """DALI's exclusions between the named window arguments (and the axes ones)."""
    if given.get("start") is not None and given.get("rel_start") is not None:
        raise ValueError('"start" and "rel_start" arguments are mutually exclusive')
    ends = [k for k in ("end", "rel_end", "shape", "rel_shape") if given.get(k) is not None]
    if len(ends) > 1:
        raise ValueError(
            f'"end", "rel_end", "shape", and "rel_shape" arguments are mutually exclusive '
            f"(got {', '.join(ends)})"
        )
    if given.get("axes") is not None and given.get("axis_names") is not None:
        raise ValueError('"axes" and "axis_names" are mutually exclusive')


@described("a layout string of axis names, e.g. 'WH' or 'HWC'")
def to_axis_names(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string of axis names, got {value!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"axis names repeat in {value!r}")
    return value


_to_ints = to_ints()


@described("an integer or a list of integers")
def to_int_list(value: Any) -> tuple[int, ...]:
    return _to_ints(value)


def _shape_ints(value: Any) -> tuple[int, ...]:
    return _to_ints(value)


to_shape_list = described("an integer >= 0 or a list of them")(_shape_ints)

WINDOW_ARGS = (
    Arg("start", "start of the window (absolute), per slice axis", None, to_int_list, True),
    Arg(
        "rel_start",
        "start of the window as fractions of the extent, per slice axis",
        None,
        to_floats(),
        True,
    ),
    Arg("end", "end of the window (absolute, exclusive)", None, to_int_list, True),
    Arg("rel_end", "end of the window as fractions of the extent", None, to_floats(), True),
    Arg("shape", "size of the window (absolute)", None, to_shape_list, True),
    Arg("rel_shape", "size of the window as fractions of the extent", None, to_floats(), True),
)

AXES_ARGS = (
    Arg(
        "axes",
        "the axes (indices; negative count from the back) the window values refer to, in order "
        "(DALI's default [1, 0] applies only through axis_names='WH')",
        None,
        to_int_list,
        True,
    ),
    Arg(
        "axis_names",
        "the axes the window values refer to, by layout letter (default 'WH'); excludes axes",
        None,
        to_axis_names,
    ),
)

POLICY_ARGS = (
    Arg(
        "out_of_bounds_policy",
        'a window leaving the input: "error", "pad"/"constant" (fill_values), "trim_to_shape", '
        '"edge"/"clamp", "reflect"/"reflect_1001", "reflect_101" or "wrap"',
        "error",
        one_of(*POLICIES),
    ),
    Arg(
        "fill_values",
        'values outside the input with policy "pad": one, or one per channel',
        (0.0,),
        to_floats(),
    ),
)


def _validate(given: dict[str, Any]) -> None:
    _check_named(given)


# Any data (slice cuts any tensor), or masks, boxes, keypoints... to move with an image.
ANY_DATA = dataclasses.replace(
    movable(InputSpec("any tensor (an image, audio, a volume...)", min_ndim=0)), kinds=None
)


register(
    OperatorSchema(
        name="slice",
        class_name="Slice",
        impl=Slice,
        min_inputs=1,
        max_inputs=3,
        accepts=[ANY_DATA],
        output_kinds=keeps_kind,
        validate=_validate,
        devices=("cpu", "gpu"),
        doc=(
            "Extracts a window (a slice) of each sample, as DALI's ``fn.slice``. The window is "
            "given by named arguments (``start``/``rel_start`` with ``end``/``rel_end`` or "
            "``shape``/``rel_shape``; a missing start is 0, a missing end the extent) or by "
            "two positional inputs ``anchor`` and ``shape`` (float ones are fractions of the "
            "extent unless ``normalized_anchor``/``normalized_shape`` are False; integer ones "
            "are absolute). The values refer to the axes ``axis_names`` (default 'WH': x "
            "first) or ``axes``. Ends and starts are rounded half away from zero. A window "
            "leaving the input raises (``out_of_bounds_policy='error'``), is padded with "
            "``fill_values`` ('pad'), cut ('trim_to_shape'), or filled by repeating the edge, "
            "reflecting or wrapping. ``dtype``: FLOAT, FLOAT16, UINT8 or the input type "
            "(floats to uint8 are truncated and clamped). Example: "
            "``fn.slice(images, rel_start=(0.25, 0.25), rel_shape=(0.5, 0.5))`` keeps the "
            "centre. Moves masks, boxes, keypoints and labels with the images when given with "
            "them as input sets (``fn.slice([images, masks, boxes, labels], ...)``): masks cut "
            "as the images (class 0 outside), boxes clipped and dropped with their labels when "
            "nothing of them is left. Differences from DALI: out-of-range values converted to "
            "uint8 in a padded window are clamped (DALI wraps them)."
        ),
        args=[
            *WINDOW_ARGS,
            *AXES_ARGS,
            Arg(
                "normalized_anchor",
                "a float anchor input is a fraction of the extent",
                True,
                to_bool,
            ),
            Arg(
                "normalized_shape",
                "a float shape input is a fraction of the extent",
                True,
                to_bool,
            ),
            *POLICY_ARGS,
            Arg(
                "dtype", "output type: FLOAT, FLOAT16, UINT8 (default: the input's)", None, to_dtype
            ),
        ],
    )
)
