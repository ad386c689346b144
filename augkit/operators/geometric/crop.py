"""``fn.crop``, and the crop-window rules that ``fn.crop_mirror_normalize`` shares with it.

DALI's rules (``dali/operators/image/crop/crop_attr.cc``, ``generic/slice/out_of_bounds_policy.h``):

- Window size: ``static_cast<int>(float)``: the requested size is read as float32 and truncated
  (``crop_w=100.9`` gives 100). A size <= 0 leaves that axis whole (anchor 0).
- Anchor: ``round(double(float32(pos)) * (extent - size))``, half away from zero with
  ``rounding="round"`` (the default) or truncated toward zero with ``"truncate"``: a 301-wide
  image, crop 100, pos 0.5 gives round(100.5) = 101. The anchor is negative when the window is
  larger than the image.
- ``crop=(h, w)`` or ``(d, h, w)`` excludes crop_h/crop_w/crop_d; crop_w and crop_h come
  together; crop_d needs both. ``crop_d`` acts on D, or on F (frames) when there is no D.
- Out of bounds: ``"error"`` (the default) raises when a window edge leaves [0, extent];
  ``"pad"`` fills the outside with ``fill_values`` (one value, or one per channel);
  ``"trim_to_shape"`` cuts the window to the image.

Traps:

- The window is computed per sample, from that sample's own shape and its own argument values
  (``crop_pos_x=fn.random.uniform(range=(0, 1))``): nothing is cached between samples.
- Kernels find H and W from the input's layout, which ``ImageOperator`` (``operators/layouts``)
  passes to them as the ``layout`` argument. An input without a layout is taken as "HW" (2-D)
  or "HWC" (3-D), as DALI does.
- Fill values are cast to the output type by truncation (then clamped), as DALI's slice kernel
  ``static_cast``s them; they are never normalized.

Targets (``fn.crop([images, masks, boxes, labels], ...)``, ``geometric/targets.py``): the
window is the image's (``crop_window`` + ``fit_window`` on the image's shape and arguments,
one computation), so a mask is cut exactly as the image kernel cuts it (bit for bit), except
that pixels outside the image (policy "pad") are class 0 whatever ``fill_values`` is, and the
mask keeps its dtype (``dtype`` converts images only). Boxes are shifted and clipped to the
window; a box left with no area in it is dropped, with its label. Keypoints are shifted and
never dropped. A window that leaves the image with policy "error" fails for the targets as for
the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.color.cast import convert_sat, round_half_away
from augkit.operators.geometric.targets import Geometry, MovesTargets, movable
from augkit.operators.layouts import ANY_IMAGE, ImageOperator
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    one_of,
    register,
    to_dtype,
    to_float,
    to_floats,
)

# --- the crop window ------------------------------------------------------------------------


def crop_anchor(extent: int, size: int, pos: float, rounding: str) -> int:
    """Start of a window of ``size`` along an axis of ``extent`` at normalized ``pos`` (DALI:
    ``round_fn(double(float32(pos)) * (extent - size))``).

    Example:
        >>> crop_anchor(301, 100, 0.5, "round"), crop_anchor(301, 100, 0.5, "truncate")
        (101, 100)
    """
    exact = float(np.float32(pos)) * (extent - size)
    if rounding == "truncate":
        return int(exact)
    return int(round_half_away(np.float64(exact)))


def crop_request(args: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """The requested window per axis letter, ``{"H": (size, pos), ...}``, from one sample's crop
    arguments (``crop``, ``crop_h``, ``crop_w``, ``crop_d``, ``crop_pos_x/y/z``); sizes are
    truncated as DALI truncates them. Axes absent from the result are not cropped.

    Raises:
        ValueError: arguments that cannot be combined.
    """
    crop, crop_h, crop_w, crop_d = (args.get(k) for k in ("crop", "crop_h", "crop_w", "crop_d"))
    if crop is not None:
        if any(v is not None for v in (crop_h, crop_w, crop_d)):
            raise ValueError("'crop' cannot be combined with 'crop_h', 'crop_w' or 'crop_d'")
        if len(crop) not in (2, 3):
            raise ValueError(
                f"'crop' takes 2 values (crop_H, crop_W) or 3 (crop_D, crop_H, crop_W), "
                f"got {len(crop)}"
            )
        crop_d = crop[0] if len(crop) == 3 else None
        crop_h, crop_w = crop[-2], crop[-1]
    elif (crop_h is None) != (crop_w is None):
        raise ValueError("'crop_w' and 'crop_h' must be given together")
    elif crop_d is not None and crop_w is None:
        raise ValueError("'crop_d' must be given together with 'crop_w' and 'crop_h'")
    request = {}
    for axis, size, pos in (
        ("D", crop_d, args.get("crop_pos_z", 0.5)),
        ("H", crop_h, args.get("crop_pos_y", 0.5)),
        ("W", crop_w, args.get("crop_pos_x", 0.5)),
    ):
        if size is not None:
            request[axis] = (int(np.float32(size)), pos)
    return request


def crop_window(
    shape: Sequence[int], layout: str, request: dict[str, tuple[int, float]], rounding: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """DALI's crop window over every axis of a sample: ``(anchor, size)``, one entry per axis.

    Axes without a request (channels, frames, an axis with size <= 0) are taken whole. The
    window may leave the sample; see ``fit_window``.

    Example:
        >>> crop_window((300, 301, 3), "HWC", {"H": (100, 0.5), "W": (100, 0.5)}, "round")
        ((100, 101, 0), (100, 100, 3))
    """
    anchor, size = [0] * len(shape), list(shape)
    request = dict(request)
    if "D" not in layout and "F" in layout and "D" in request:
        request["F"] = request.pop("D")
    for axis, (want, pos) in request.items():
        k = layout.find(axis)
        if k >= 0 and want > 0:
            anchor[k] = crop_anchor(shape[k], want, pos, rounding)
            size[k] = want
    return tuple(anchor), tuple(size)


def fit_window(
    policy: str, shape: Sequence[int], anchor: Sequence[int], size: Sequence[int], layout: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Apply ``out_of_bounds_policy`` to a window: "pad" keeps it, "trim_to_shape" cuts it to
    the sample, "error" raises when it leaves the sample.

    Raises:
        ValueError: with "error", a window that leaves the sample (the message gives both).
    """
    if policy == "pad":
        return tuple(anchor), tuple(size)
    if policy == "trim_to_shape":
        starts = [min(max(a, 0), e) for a, e in zip(anchor, shape, strict=True)]
        ends = [min(max(a + s, 0), e) for a, s, e in zip(anchor, size, shape, strict=True)]
        return tuple(starts), tuple(b - a for a, b in zip(starts, ends, strict=True))
    for a, s, e in zip(anchor, size, shape, strict=True):
        if not (0 <= a <= e and 0 <= a + s <= e):
            raise ValueError(
                f"the crop window (anchor {tuple(anchor)}, shape {tuple(size)}, layout "
                f"{layout}) does not fit in the sample of shape {tuple(shape)}; use "
                f"out_of_bounds_policy='pad' or 'trim_to_shape', or a smaller window "
                f"(DALI: Slice can't be placed out of bounds with current policy)"
            )
    return tuple(anchor), tuple(size)


def window_geometry(
    shape: Sequence[int],
    layout: str,
    anchor: Sequence[int],
    size: Sequence[int],
    mirror: bool = False,
) -> Geometry:
    """The transform of a crop window ``anchor:anchor+size`` (per axis of a sample of ``shape``
    with ``layout``; its H and W axes are used), mirrored left-right in the window when
    ``mirror`` (crop_mirror_normalize).

    Example:
        >>> g = window_geometry((300, 301, 3), "HWC", (100, 101, 0), (100, 100, 3))
        >>> g.matrix[:2].tolist(), g.out_size
        ([[1.0, 0.0, -101.0], [0.0, 1.0, -100.0]], (100, 100))
    """
    h, w = _hw_axes(layout, len(shape))
    sx, tx = (-1.0, anchor[w] + size[w]) if mirror else (1.0, -anchor[w])
    return Geometry.scale_translate(
        sx, 1.0, tx, -anchor[h], (shape[w], shape[h]), (size[w], size[h])
    )


def _hw_axes(layout: str, ndim: int) -> tuple[int, int]:
    """The H and W axes of a sample with ``layout`` (no H/W: the first two axes)."""
    if "H" in layout and "W" in layout:
        return layout.index("H"), layout.index("W")
    if ndim < 2:
        raise ValueError(f"targets move with images of 2 or more dimensions, got {ndim}")
    return 0, 1


def fill_array(
    values: Sequence[float], shape: Sequence[int], layout: str, dtype: Any, xp: Any
) -> Any:
    """``fill_values`` as an array of ``dtype`` that broadcasts over a sample of ``shape``: one
    value for every element, or one per channel (along C). Values are cast as DALI's
    ``static_cast`` casts them: truncated, then clamped to an integer type.

    Raises:
        ValueError: more than one value, but not one per channel.
    """
    arr = np.asarray(values, np.float64)
    if np.dtype(dtype).kind in "iu":
        arr = np.trunc(arr)
    arr = convert_sat(arr, dtype, np)
    if arr.size == 1:
        return xp.asarray(arr.reshape(()))
    channel = layout.find("C")
    if channel < 0 or shape[channel] != arr.size:
        channels = f"{shape[channel]} channels" if channel >= 0 else "no channel axis"
        raise ValueError(
            f"fill_values has {arr.size} values, but the sample (shape {tuple(shape)}, layout "
            f"{layout}) has {channels}; give one value, or one per channel"
        )
    bshape = [1] * len(shape)
    bshape[channel] = arr.size
    return xp.asarray(arr.reshape(bshape))


def fill_canvas(out: Any, fill: Any, xp: Any) -> None:
    """``out[...] = fill``, fast also for a per-channel fill along the last axis (HWC): NumPy
    broadcasting a 3-element innermost axis is 100x slower than copying rows, so one row (the
    last two axes) is built and broadcast over the rest."""
    if out.ndim >= 2 and fill.ndim == out.ndim and fill.shape[-1] > 1 and out.size:
        row = xp.ascontiguousarray(xp.broadcast_to(fill.reshape(fill.shape[-2:]), out.shape[-2:]))
        out[...] = row
    else:
        out[...] = fill


def cut_window(
    x: Any,
    anchor: Sequence[int],
    size: Sequence[int],
    convert: Any,
    fill: Any,
    xp: Any,
) -> Any:
    """The window ``anchor:anchor+size`` of ``x``, each element passed through ``convert``;
    where the window leaves ``x`` it holds ``fill`` (of the output's dtype, broadcastable)."""
    inside = all(a >= 0 and a + s <= e for a, s, e in zip(anchor, size, x.shape, strict=True))
    if inside:
        return convert(x[tuple(slice(a, a + s) for a, s in zip(anchor, size, strict=True))])
    out = xp.empty(tuple(size), dtype=fill.dtype)
    fill_canvas(out, fill, xp)
    src, dst = [], []
    for a, s, e in zip(anchor, size, x.shape, strict=True):
        lo, hi = max(a, 0), min(a + s, e)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - a, hi - a))
    out[tuple(dst)] = convert(x[tuple(src)])
    return out


# --- fn.crop --------------------------------------------------------------------------------


class Crop(MovesTargets, ImageOperator):
    """Cuts each sample's window (see ``crop_window``) and converts it to ``dtype`` (and moves
    masks, boxes and keypoints with it: ``targets.py``)."""

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        layout = args["layout"]
        anchor, size = crop_window(shape, layout, crop_request(args), args["rounding"])
        anchor, size = fit_window(args["out_of_bounds_policy"], shape, anchor, size, layout)
        return window_geometry(shape, layout, anchor, size)

    def cpu(
        self,
        sample: Any,
        *,
        layout: str,
        dtype: Any,
        rounding: str,
        out_of_bounds_policy: str,
        fill_values: Sequence[float],
        **args: Any,
    ) -> Any:
        xp = backend.array_module(sample)
        out_dtype = sample.dtype if dtype is None else dtype.numpy
        anchor, size = crop_window(sample.shape, layout, crop_request(args), rounding)
        anchor, size = fit_window(out_of_bounds_policy, sample.shape, anchor, size, layout)
        fill = None
        if out_of_bounds_policy == "pad":
            fill = fill_array(fill_values, sample.shape, layout, out_dtype, xp)
        out = cut_window(
            sample, anchor, size, lambda region: convert_sat(region, out_dtype, xp), fill, xp
        )
        return xp.ascontiguousarray(out)

    gpu = cpu


def _pos(axis: str) -> str:
    return (
        f"normalized {axis} position (0..1) of the window's start (anchor = pos * (extent - size))"
    )


# Shared with crop_mirror_normalize, which has DALI's same crop arguments.
CROP_ARGS = (
    Arg(
        "crop",
        "window size (crop_H, crop_W) or (crop_D, crop_H, crop_W); excludes crop_h/crop_w/crop_d",
        None,
        to_floats(),
        per_sample=True,
    ),
    Arg(
        "crop_h",
        "window height in pixels (truncated; <= 0: whole height)",
        None,
        to_float(),
        per_sample=True,
    ),
    Arg(
        "crop_w",
        "window width in pixels (truncated; <= 0: whole width)",
        None,
        to_float(),
        per_sample=True,
    ),
    Arg(
        "crop_d",
        "window depth, for volumes (D, or F when there is no D)",
        None,
        to_float(),
        per_sample=True,
    ),
    Arg("crop_pos_x", _pos("horizontal"), 0.5, to_float(0.0, 1.0), per_sample=True),
    Arg("crop_pos_y", _pos("vertical"), 0.5, to_float(0.0, 1.0), per_sample=True),
    Arg("crop_pos_z", _pos("depth"), 0.5, to_float(0.0, 1.0), per_sample=True),
    Arg(
        "rounding",
        'how the anchor becomes an integer: "round" (halves away from zero) or "truncate"',
        "round",
        one_of("round", "truncate"),
    ),
    Arg(
        "out_of_bounds_policy",
        'a window leaving the image: "error", "pad" (with fill_values) or "trim_to_shape"',
        "error",
        one_of("error", "pad", "trim_to_shape"),
    ),
    Arg(
        "fill_values",
        'values outside the image with policy "pad": one, or one per channel',
        (0.0,),
        to_floats(),
    ),
)

register(
    OperatorSchema(
        name="crop",
        class_name="Crop",
        impl=Crop,
        accepts=[movable(ANY_IMAGE)],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Crops each image to a window of ``crop`` = (H, W) (or ``crop_h``/``crop_w``) "
            "placed at the normalized position ``crop_pos_x``/``crop_pos_y`` (0.5: centred). "
            "Window sizes are truncated to integers and the anchor "
            "``pos * (extent - size)`` is rounded half away from zero (``rounding='round'``) "
            "or truncated, as in DALI. A window that leaves the image raises "
            "(``out_of_bounds_policy='error'``), is padded with ``fill_values`` ('pad') or cut "
            "to the image ('trim_to_shape'). H and W are found from the layout (HWC, CHW, "
            "DHWC, FHWC, ...; an input without a layout is HW or HWC). ``dtype`` converts the "
            "result with DALI's saturating rounding (default: the input type). Every crop "
            "argument may be per sample (e.g. ``crop_pos_x=fn.random.uniform(range=(0, 1))``). "
            "Differences from DALI: the argument combinations are checked when the operator "
            "runs (DALI checks them when it is built), crop_pos_* outside [0, 1] is refused "
            "even for an axis that is not cropped, and any output dtype is accepted. Moves "
            "masks, boxes, keypoints and labels with the images when given with them as input "
            "sets (``fn.crop([images, masks, boxes, labels], ...)``): masks cut as the images "
            "(class 0 outside), boxes clipped to the window and dropped with their labels "
            "when none of them is left."
        ),
        args=[*CROP_ARGS, Arg("dtype", "output data type (default: the input's)", None, to_dtype)],
    )
)
