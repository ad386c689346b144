"""``fn.erase``: fills one or more regions of each sample with ``fill_value``, as DALI 2.4's CPU
operator does.

Decisions and traps (verified by running DALI 2.4 on small arrays):

- The regions are laid out flat: with ``k`` axes, ``anchor = (a0, b0, a1, b1, ...)`` and
  ``shape = (h0, w0, h1, w1, ...)`` give ``len(shape) / k`` regions (a per-sample 2-D array is
  flattened). An empty ``anchor`` is zeros; an ``anchor`` without a ``shape`` is an error, and
  so is a length that is not a multiple of ``k``. Empty ``anchor`` and ``shape`` erase nothing.
- Which axes: ``axis_names`` (letters of the layout) wins over ``axes`` (indices); when
  **neither is given**, every axis but ``C``, in layout order (HWC: H, W; DHWC: D, H, W). The
  defaults DALI's documentation lists (``"HW"``, ``[1, 0]``) apply only when given, so both
  default to ``None`` here. Repeated axes: the last one wins. An input without a layout is
  taken as HW/HWC when 2-D/3-D (DALI crashes on it); other ranks use every axis.
- Coordinates are computed in float32 (all regions at once): ``a = anchor * extent`` when
  normalized, ``s = shape * extent`` likewise, ``a -= s / 2`` with ``centered_anchor``; the
  region is ``[trunc(a), trunc(a + s))`` (C++ ``static_cast<int64_t>``: toward zero), clipped
  to the sample. A negative shape erases nothing.
- ``normalized`` sets both ``normalized_anchor`` and ``normalized_shape``; giving it together
  with either of them (even ``normalized=False``) is an error, as in DALI.
- ``fill_value`` is one number for every channel, or one per channel (it then needs a ``C`` axis
  of that many channels). It is converted to the input type as DALI's C++ converts a float
  (``static_cast``, not ConvertSat): truncated toward zero and **wrapped**, not saturated:
  ``300 -> 44`` and ``-3.5 -> 253`` for uint8, ``2.7 -> 2`` (``cpp_cast``).
- Types: DALI's (u)int8/16/32/64, float16 and float32, plus float64 (DALI refuses it); bool is
  refused, as in DALI.

Speed: the per-sample path spent more time converting the per-sample ``anchor``/``shape`` and
working out regions (Python, ~40 µs a sample) than copying the image. The batch kernel
(samples of one shape and type) converts the argument inputs in bulk, computes every region in
one NumPy call and copies each sample into one output array: ~30 µs a 320x320x3 uint8 image,
bound by the copy (memory traffic); 1.7-2.2x DALI's CPU erase on one thread (benchmark, 2026-12).

GPU (``device="gpu"``, issue 18): ``Erase.gpu`` is the per-sample kernel on the sample's array
module (``backend.array_module``: CuPy). The regions (float32 maths on a few numbers) and the
fill value (``cpp_cast``) are worked out on the host as on the CPU; the device copies the
sample (``xp.array``) and assigns the fill to each region's slices (the fill moved with
``xp.asarray``: a 0-d array, or one value per channel broadcast by ``fill_regions``). There is
no GPU batch kernel: the per-sample kernel runs for every batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.layouts import NUMBER_TYPES, check_type
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_floats,
    to_ints,
)
from augkit.tensors import TensorList

_INT64_MIN = -(2**63)


def _c_int(value: float, bits: int) -> int:
    """x86's truncating conversion of a float to a signed ``bits``-bit integer
    (``cvttss2si``): toward zero, and the "indefinite" minimum when out of range or NaN."""
    low = -(2 ** (bits - 1))
    if not math.isfinite(value) or not low <= math.trunc(value) < -low:
        return low
    return math.trunc(value)


def cpp_cast(values: Sequence[float], dtype: Any) -> np.ndarray:
    """``values`` (taken as float32) converted to ``dtype`` as C++'s ``static_cast<T>(float)``
    does on x86 (how DALI turns float arguments such as erase's ``fill_value`` or
    salt_and_pepper's ``salt_val`` into the input type): floats are a plain cast; integers
    are truncated toward zero through a 32-bit (64-bit for 32-bit unsigned and wider types)
    conversion and wrapped to the type's width.

    Example:
        >>> cpp_cast([300.0, -3.5, 2.7, 3e9], np.uint8)
        array([ 44, 253,   2,   0], dtype=uint8)
    """
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        as32 = np.asarray(values, np.float64).astype(np.float32)
        if dtype.kind == "f":
            return as32.astype(dtype)
    out = []
    for v in as32.tolist():
        if dtype.kind == "u" and dtype.itemsize == 8 and math.isfinite(v) and v >= 2**63:
            n = math.trunc(v) if v < 2**64 else 0
        else:
            bits = 32 if dtype.itemsize < 4 or (dtype.itemsize == 4 and dtype.kind == "i") else 64
            n = _c_int(v, bits)
        out.append(n % (1 << (8 * dtype.itemsize)))  # wrap to the width (two's complement)
    return np.array(out, np.uint64).astype(dtype)


_TYPES = NUMBER_TYPES


@described("a layout string of axis names, e.g. 'HW', 'W', 'DHW'")
def _axis_names(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"expected a non-empty string of axis names, got {value!r}")
    return value


def _validate(given: dict[str, Any]) -> None:
    if "normalized" in given and ("normalized_anchor" in given or "normalized_shape" in given):
        raise ValueError(
            "`normalized` argument is incompatible with providing a separate value for "
            "`normalized_anchor` and `normalized_shape`"
        )
    anchor, shape = given.get("anchor"), given.get("shape")
    if (
        isinstance(anchor, tuple)
        and isinstance(shape, tuple)
        and anchor
        and len(anchor) != len(shape)
    ):
        raise ValueError(
            f"anchor and shape must have the same length, got {len(anchor)} and {len(shape)}"
        )
    if isinstance(anchor, tuple) and anchor and "shape" not in given:
        raise ValueError("anchor is given without shape (the size of each region)")


def _default_layout(layout: str, ndim: int) -> str:
    if layout:
        if len(layout) != ndim:
            raise ValueError(f'the layout "{layout}" does not fit a sample with {ndim} dimensions')
        return layout
    return {2: "HW", 3: "HWC"}.get(ndim, "")


class Erase(SampleOperator):
    """Copies each sample and fills its regions."""

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim < 1:
            raise ValueError("erase needs samples with at least one dimension, got a scalar")
        check_type("erase takes data", sample.dtype, _TYPES)

    def axes_of(self, layout: str, ndim: int, axis_names: str | None, axes: Any) -> list[int]:
        if axis_names is not None:
            if not layout:
                raise ValueError(
                    f"axis_names={axis_names!r} needs an input with a layout (this one has "
                    f"{ndim} dimensions and none); give axes instead"
                )
            missing = [a for a in axis_names if a not in layout]
            if missing:
                raise ValueError(
                    f"axis_names: axis '{missing[0]}' is not present in the input layout "
                    f'"{layout}"'
                )
            return [layout.index(a) for a in axis_names]
        if axes is not None:
            bad = [a for a in axes if not 0 <= a < ndim]
            if bad:
                raise ValueError(
                    f"axes: axis {bad[0]} does not exist in a sample with {ndim} dimensions"
                )
            return list(axes)
        return [d for d in range(ndim) if not layout or layout[d] != "C"]

    def cpu(self, sample: Any, **args: Any) -> Any:
        return self._erase(sample, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU's regions and fill (host), copied and filled on ``sample``'s device."""
        return self._erase(sample, backend.array_module(sample), **args)

    def _erase(
        self,
        sample: Any,
        xp: Any,
        *,
        layout: str,
        anchor: tuple[float, ...],
        shape: tuple[float, ...],
        axes: tuple[int, ...] | None,
        axis_names: str | None,
        normalized: bool,
        normalized_anchor: bool,
        normalized_shape: bool,
        centered_anchor: bool,
        fill_value: tuple[float, ...],
        **_: Any,
    ) -> Any:
        layout = _default_layout(layout, sample.ndim)
        axes_used = self.axes_of(layout, sample.ndim, axis_names, axes)
        if not anchor:
            anchor = (0.0,) * len(shape)
        if len(anchor) != len(shape):
            raise ValueError(
                f"anchor and shape must have the same length, got {len(anchor)} and {len(shape)}"
            )
        if not axes_used:
            raise ValueError("no axis to erase along (the sample has only a channel axis)")
        if len(shape) % len(axes_used):
            raise ValueError(
                f"anchor and shape must give {len(axes_used)} values per region (one per axis "
                f"{axes_used}), got {len(shape)}"
            )
        channel = layout.find("C") if layout else -1
        fill = cpp_cast(fill_value, sample.dtype)
        if fill.size > 1:
            if channel < 0:
                raise ValueError(
                    "If a multi channel fill value is provided, the input layout must have a "
                    f"'C' dimension (the layout is {layout!r})"
                )
            if fill.size != sample.shape[channel]:
                raise ValueError(
                    f"Multi-channel fill value does not match the number of channels in the "
                    f"input: {fill.size} values for {sample.shape[channel]} channels"
                )
            fill = fill.reshape([-1 if d == channel else 1 for d in range(sample.ndim)])
        else:
            fill = fill.reshape(())
        starts, ends = _regions(
            sample.shape,
            axes_used,
            anchor,
            shape,
            normalized or normalized_anchor,
            normalized or normalized_shape,
            centered_anchor,
        )
        out = xp.array(sample)
        _fill_regions(out, starts, ends, axes_used, xp.asarray(fill), channel, xp)
        return out

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """Samples of one shape and type, with per-sample ``anchor``/``shape``/``fill_value`` of
        one length each: every region worked out at once (the float32 maths is element-wise,
        so it gives what the per-sample kernel gives), one output array for the batch, each
        sample copied and filled on the pool. ``None`` (the per-sample kernel runs, and names
        what is wrong) for anything else."""
        batch = inputs[0]
        samples = batch.samples
        n = len(samples)
        if n < 2 or not set(arg_inputs) <= {"anchor", "shape", "fill_value"}:
            return None
        first = samples[0]
        if not isinstance(first, np.ndarray) or any(
            not isinstance(s, np.ndarray) or s.shape != first.shape or s.dtype != first.dtype
            for s in samples
        ):
            return None
        args = self.args
        columns = {}
        for key in ("anchor", "shape", "fill_value"):
            if key in arg_inputs:
                column = _column(arg_inputs[key], n)
                if column is None:
                    return None
            else:
                column = np.asarray(args[key], np.float64).reshape(1, -1)
            columns[key] = column
        anchor, shape, fill_values = columns["anchor"], columns["shape"], columns["fill_value"]
        try:
            self.check_input(0, first, batch.layout())
            layout = _default_layout(batch.layout(), first.ndim)
            axes_used = self.axes_of(layout, first.ndim, args["axis_names"], args["axes"])
        except ValueError:
            return None
        if not anchor.shape[1]:
            anchor = np.zeros_like(shape)
        if (
            anchor.shape[1] != shape.shape[1]
            or not axes_used
            or shape.shape[1] % len(axes_used)
            or not fill_values.shape[1]
        ):
            return None
        channel = layout.find("C") if layout else -1
        fills: np.ndarray = cpp_cast(fill_values.reshape(-1).tolist(), first.dtype).reshape(
            len(fill_values), -1
        )
        if fills.shape[1] > 1:
            if channel < 0 or fills.shape[1] != first.shape[channel]:
                return None
            fills = fills.reshape(
                [len(fills)] + [-1 if d == channel else 1 for d in range(first.ndim)]
            )
        else:
            fills = fills.reshape(-1)
        anchor = np.broadcast_to(anchor, (n, anchor.shape[1]))
        shape = np.broadcast_to(shape, (n, shape.shape[1]))
        starts, ends = _regions(
            first.shape,
            axes_used,
            anchor.reshape(-1),
            shape.reshape(-1),
            args["normalized"] or args["normalized_anchor"],
            args["normalized"] or args["normalized_shape"],
            args["centered_anchor"],
        )
        per = shape.shape[1] // len(axes_used)  # regions per sample
        out = np.empty((n, *first.shape), first.dtype)

        def one(i: int) -> None:
            out[i] = samples[i]
            fill = fills[i if len(fills) > 1 else 0]
            rows = slice(i * per, (i + 1) * per)
            _fill_regions(out[i], starts[rows], ends[rows], axes_used, fill, channel)

        ctx.map(one, n)
        return [self.dense_output(out, inputs)]


def _column(batch: TensorList, n: int) -> np.ndarray | None:
    """An argument input as an (n, values) float64 array, when every sample is a finite real
    array of one size (what ``to_floats`` gives, sample by sample); ``None`` otherwise (the
    per-sample path converts and names what is wrong)."""
    values = batch.samples
    if len(values) != n or any(not isinstance(v, np.ndarray) for v in values):
        return None
    if len({v.size for v in values}) != 1 or any(v.dtype.kind not in "iuf" for v in values):
        return None
    out = np.stack([v.reshape(-1) for v in values]).astype(np.float64)
    if not np.isfinite(out).all():
        return None
    return out


def _fill_regions(
    out: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    axes_used: list[int],
    fill: np.ndarray,
    channel: int,
    xp: Any = np,
) -> None:
    """Fills ``out``'s regions ``[starts, ends)`` (rows: regions; columns: ``axes_used``) with
    ``fill`` (a scalar array, or one value per channel shaped to broadcast along ``channel``);
    ``out`` and ``fill`` are arrays of ``xp`` (NumPy, or CuPy on the GPU), ``starts`` and
    ``ends`` the host's."""
    ndim = out.ndim
    for first, last in zip(starts.tolist(), ends.tolist(), strict=True):
        region = [slice(None)] * ndim
        for axis, a, b in zip(axes_used, first, last, strict=True):
            region[axis] = slice(a, b)  # a repeated axis: the last one wins, as in DALI
        if any(region[axis].start >= region[axis].stop for axis in axes_used):
            continue
        if not fill.ndim:
            out[tuple(region)] = fill
            continue
        # A per-channel fill: broadcast it into one plane of the region, then copy that
        # plane along the region's first other axis (NumPy's broadcast of a (1, 1, C)
        # array element by element is 80x slower than copying whole rows).
        fill_region = fill[tuple(region[d] if d == channel else slice(None) for d in range(ndim))]
        target = out[tuple(region)]
        plane = list(target.shape)
        spread = next((d for d in range(ndim) if d != channel), None)
        if spread is not None:
            plane[spread] = 1
        block = xp.empty(plane, out.dtype)
        block[...] = fill_region
        target[...] = block


def _regions(
    extents: tuple[int, ...],
    axes: list[int],
    anchor: tuple[float, ...] | np.ndarray,
    shape: tuple[float, ...] | np.ndarray,
    norm_anchor: bool,
    norm_shape: bool,
    centered: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Every region's first and last (excluded) index along ``axes`` (arrays of (regions,
    len(axes)) int64), in DALI's float32 maths, clipped to ``extents``."""
    naxes = len(axes)
    whole_size = np.array([extents[a] for a in axes], np.float64)
    size = whole_size.astype(np.float32)  # DALI: float * int64 is a float
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.asarray(anchor, np.float64).astype(np.float32).reshape(-1, naxes)
        s = np.asarray(shape, np.float64).astype(np.float32).reshape(-1, naxes)
        if norm_anchor:
            a = a * size
        if norm_shape:
            s = s * size
        if centered:
            a = a - s / np.float32(2)
        bounds = []
        for value in (a, a + s):
            # static_cast<int64_t>: toward zero; NaN or out of range is INT64_MIN (clips to 0).
            whole = np.trunc(value.astype(np.float64))
            whole = np.where(np.isfinite(whole) & (np.abs(whole) < 2.0**63), whole, 0.0)
            bounds.append(np.clip(whole, 0, whole_size).astype(np.int64))
    return bounds[0], bounds[1]


_to_floats = to_floats()


@described("a number or a list of numbers (may be empty)")
def _coords(value: Any) -> tuple[float, ...]:
    if isinstance(value, (list, tuple)) and not value:
        return ()
    if isinstance(value, np.ndarray) and value.size == 0:
        return ()
    return _to_floats(value)


@described("a number or a list of numbers (one per channel)")
def _fill(value: Any) -> tuple[float, ...]:
    out = _to_floats(value)
    if not out:
        raise ValueError("fill_value must have at least one value")
    return out


@described("an integer or a list of integers >= 0 (axis indices)", 0)
def _axes(value: Any) -> tuple[int, ...]:
    out = to_ints(low=0)(value)
    if not out:
        raise ValueError("axes must name at least one axis")
    return out


register(
    OperatorSchema(
        name="erase",
        class_name="Erase",
        devices=("cpu", "gpu"),
        impl=Erase,
        output_kinds=keeps_kind,
        doc=(
            "Erases one or more regions of each sample: the elements inside each region take "
            "``fill_value`` (one number, or one per channel). ``anchor`` (start) and ``shape`` "
            "(size) list the regions one after the other, ``len(axes)`` values each: "
            "``anchor=(y0, x0, y1, x1)``, ``shape=(h0, w0, h1, w1)`` erase two rectangles of an "
            "HWC image. The axes are ``axis_names`` (letters of the layout), else ``axes`` "
            "(indices), else every axis but C in layout order. ``normalized_anchor`` / "
            "``normalized_shape`` (or ``normalized`` for both) take them as fractions of the "
            "extent; ``centered_anchor`` puts each region's centre at its anchor. Regions are "
            "``[trunc(anchor), trunc(anchor + shape))``, clipped to the sample, computed in "
            "float32 as DALI does; the fill value is converted as DALI's C++ converts it "
            "(truncated and wrapped: 300 is 44 in uint8). anchor, shape and fill_value may be "
            "per sample (e.g. from fn.random.uniform). Shape, layout and type are kept."
        ),
        validate=_validate,
        args=[
            Arg(
                "anchor",
                "start of each region, per axis, regions one after the other (empty: zeros)",
                (),
                _coords,
                per_sample=True,
            ),
            Arg(
                "shape",
                "size of each region, per axis, regions one after the other",
                (),
                _coords,
                per_sample=True,
            ),
            Arg(
                "axes",
                "indices of the axes anchor and shape refer to (used when axis_names is not "
                "given; neither given: every axis but C)",
                None,
                _axes,
            ),
            Arg(
                "axis_names",
                "layout letters of the axes anchor and shape refer to, e.g. 'HW' (wins over axes; "
                "neither given: every axis but C)",
                None,
                _axis_names,
            ),
            Arg("normalized_anchor", "anchor is a fraction of each axis' extent", False, to_bool),
            Arg("normalized_shape", "shape is a fraction of each axis' extent", False, to_bool),
            Arg(
                "normalized",
                "both anchor and shape are fractions (not with normalized_anchor/_shape)",
                False,
                to_bool,
            ),
            Arg("centered_anchor", "anchor is the centre of each region", False, to_bool),
            Arg(
                "fill_value",
                "value of the erased elements: one number, or one per channel",
                (0.0,),
                _fill,
                per_sample=True,
            ),
        ],
    )
)
