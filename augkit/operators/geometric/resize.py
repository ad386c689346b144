"""``fn.resize`` / ``ops.Resize``: DALI's resize of HWC (or CHW) images, on the CPU and the GPU.

How it works: ``plan_resize`` turns the arguments into DALI's resampling parameters (output size,
source window), exactly as DALI's ``ResizeAttr`` does; the kernel then resamples that window with
one of three back ends, all of which release the GIL:

- **torch** (``geometric/resize_torch.py``, when torch is installed on an AVX2 CPU): uint8 in
  and out, 1-4 channels, Pillow's BILINEAR on both axes (the default filters), and a source
  window that is the whole image (no ROI; a rounded size equal to the exact one, as for
  ``resize_x=300, resize_y=300``, or ``subpixel_scale=False``). 0.44 ms against 2.2 ms for
  Pillow from a ~740×600 photo to 300×300, a mean 0.03 levels from Pillow (at most 2).
- **Pillow** (``Image.resize(size, filter, box=window)``) for every other case Pillow's filters
  cover: sub-pixel windows and ROIs, other dtypes (torch's float kernel is no faster than
  Pillow's on one thread), BICUBIC/LANCZOS, 5+ channels; and for everything when torch
  is absent (the core needs NumPy and Pillow only) or ``AUGKIT_RESIZE_BACKEND=pillow``.
- the **NumPy** resampler of ``geometric/warp.py`` for filters Pillow does not have.
- **nearest neighbour** (``INTERP_NN`` both ways): ``nearest_indices`` picks DALI's source pixels,
  then one OpenCV ``remap`` with that exact integer map (cached per plan; NumPy gathers without
  OpenCV): about DALI's speed, 0.13 ms for 320x320 -> 224x224 on one thread. Not Pillow's NEAREST,
  which breaks exact ties the other way (a mean 2.0 levels from DALI on an 80x104 -> 60x80
  shrink). DALI's CPU ``ResampleNN`` (``resampling_impl_cpu.h``): float32 ``scale = (hi - lo) /
  out``; the input is first cut to the rows (or columns, whichever pass its cost model would run
  first) the window touches and the origin moved by that integer offset; rows are ``floor(sy)``
  with ``sy`` *accumulated* by ``scale`` from ``origin + 0.5 * scale``; columns ``floor(origin +
  (x + 0.5) * scale)`` (``floor(origin + 0.5) + x`` at scale 1). Exact against DALI 2.4 on 190 of
  200 random sizes/ROIs/flips; the other 10 are a DALI bug: a column index past the right edge is
  "clamped" with ``srcx += w - 1`` (reading the next row); augkit clamps to the last column.
  Relative ROIs are multiplied in float32 (``0.15f * 56 = 8.4000003``), as DALI.

Outputs therefore depend on the installation (torch or not) by at most 2 levels per pixel; a
pipeline is reproducible on one installation, whatever its threads.

The GPU kernel (``device="gpu"``, ``resize_hwc_gpu``; also ``fn.random_resized_crop``'s) is one
xp-generic path, plain NumPy-API code run on CuPy arrays (NumPy in the CPU-runnable tests,
tests/operators/test_gpu_geometric.py). On the host: the plan, the filters, and per axis DALI's
weights (``warp.resample_matrix``: ``warp._weights``, the tables of the NumPy resampler below,
scattered into an (out, in) float32 matrix) or DALI's nearest indices (``nearest_indices``);
they are moved with ``xp.asarray``. On the device: ``astype(float32)``, two ``matmul``s (H then
W, as ``_numpy_resize``'s passes; tap by tap through ``warp.resample_axis`` where a matrix would
pass 2**26 weights), ``take`` for INTERP_NN, and ``truncate_sat`` (``clip``/``trunc``). So the
GPU computes DALI's filters with DALI's clamped border taps in float32 for every filter pair:
nearest equals the CPU kernel; against the CPU's Pillow/torch linear it is within 1 level
inside the border (a mean < 0.25), more in the outermost pixels of a shrink, where Pillow
renormalises; cubic/Lanczos3 within 6 (Pillow's exact windows and clipped 8-bit intermediate
against DALI's tables and floats).

Decisions and traps for the next engineer:

- Output size (``plan_resize``) follows ``resize_attr.cc`` (DALI 2.x), float32 where DALI uses
  float: geometric mean of the given scales for missing extents in "default", min/max scale in
  "not_larger"/"not_smaller" then ``max_size``, ``max(1, round half away from zero)``.
- ``subpixel_scale=True`` (DALI's default): when the size is rounded, the source window is scaled
  about its centre by ``rounded/fractional`` so that the scale stays exact. The window can then
  reach up to half an output pixel outside the image; there (and for ROIs outside the image)
  the image is padded by edge replication first, because Pillow's ``box`` must lie inside the
  image. DALI clamps tap indices, which is the same thing.
- Pillow conventions, verified (tests/operators/test_resize.py): ``box`` is in continuous
  coordinates (pixel ``i`` spans ``[i, i+1)``) and output pixel centres map to ``box0 + (x + 0.5)
  * scale``, as in DALI; BILINEAR widens its triangle by the scale when shrinking, which is DALI's
  Triangular filter (a NumPy resampler with DALI's own weights lands within 1 level of Pillow
  inside the border, mean 0.15: the figure DESIGN.md gives for DALI 2.4); Pillow's NEAREST takes
  ``floor`` but rounds exact ties down (not used: see above). That DALI also widens Cubic and
  Lanczos3 when ``antialias`` is on (as Pillow's BICUBIC and LANCZOS do) is read from its
  ``DefaultFilterRadius``, not measured.
- Known differences from DALI (border-only or rounding): Pillow drops filter taps outside the
  image and renormalises, where DALI repeats the border pixel (they differ only in the outermost
  ``scale`` rows/columns of a downscale); Pillow rounds its 8-bit intermediate between the
  horizontal and vertical passes, DALI keeps floats.
- Because of ``subpixel_scale``, a rounded size is *not* Pillow's plain ``resize((w, h))``: on
  the test photos ``resize_x=300`` is a mean 0.6 levels from it (0.9 for one ``resize_shorter``
  case). ``subpixel_scale=False`` gives Pillow's plain resize exactly.
- RGBA: Pillow premultiplies alpha when resizing "RGBA"/"LA" images, DALI does not; 4-channel
  images therefore go through Pillow's "RGBX" mode and 2-channel ones channel by channel.
- Filters Pillow cannot do: linear *without* antialiasing on a downscale (``antialias=False``),
  Cubic/Lanczos3 without antialiasing on a downscale, Gaussian, and different filters on the two
  axes. These go to ``warp.resample_axis`` (DALI's own weights, float32, clamped borders).
- Integer outputs of the NumPy path are stored as DALI's resampler does: ``clamp(v + 0.5)``
  truncated; Pillow's 8-bit path rounds half up as well.
- Negative sizes flip the axis, as in DALI; ``roi_start > roi_end`` also flips.

Targets (``fn.resize([images, masks, boxes, labels], resize_shorter=256)``; targets.py):
``geometry`` is the kernel's own plan (``sample_plan``: every size argument, mode, max_size,
roi and subpixel_scale) as a scale and shift per axis (``plan_geometry``: output centre
``x + 0.5`` reads ``lo + (x + 0.5) * (hi - lo) / out``; a flip is ``lo > hi``). Masks are
resized by the nearest neighbour, label values and dtype kept (``dtype`` is for images):
OpenCV's ``INTER_NEAREST_EXACT`` without subpixel scaling (tested equal), and the pixels of
``fn.resize(mask, interp_type=INTERP_NN)`` but at rare float32 ties (DALI's running sums
against exact points: none in 8 random 320x320 maps to random sizes). A ROI beyond the image
gives class 0 there (the image repeats its border). Boxes a ROI leaves out are dropped with
their labels. CHW images: their masks stay HWC/HW.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from augkit import backend, types
from augkit.operators.geometric import resize_torch, warp
from augkit.operators.geometric.targets import Geometry, MovesTargets, image_size, movable
from augkit.operators.layouts import HWC_OR_CHW_IMAGE, check_image
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    one_of,
    register,
    to_bool,
    to_dtype,
    to_float,
    to_floats,
    to_interp,
)
from augkit.tensors import TensorList

MODES = ("default", "stretch", "not_larger", "not_smaller")

_INPUT_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.float32))

_FILTER_KINDS = {
    types.INTERP_NN: warp.NEAREST,
    types.INTERP_LINEAR: warp.LINEAR,
    types.INTERP_CUBIC: warp.CUBIC,
    types.INTERP_LANCZOS3: warp.LANCZOS3,
    types.INTERP_GAUSSIAN: warp.GAUSSIAN,
    types.INTERP_TRIANGULAR: warp.TRIANGULAR,
}


@dataclass(frozen=True)
class ResizePlan:
    """What one sample's resize does.

    Attributes:
        out_size: the output (H, W).
        src_lo, src_hi: the source window per axis (y, x), in continuous pixel coordinates;
            ``lo > hi`` flips that axis. It may extend past the image (borders are repeated).
    """

    out_size: tuple[int, int]
    src_lo: tuple[float, float]
    src_hi: tuple[float, float]


_FLOAT32 = struct.Struct("f")


def _f32(value: float) -> float:
    """``value`` rounded to float32 (DALI's sizes are floats). A size beyond float32 becomes
    inf, as in DALI's float arithmetic; the output size check then refuses it with its
    message. (``struct``: a tenth of the time of ``np.float32`` under ``np.errstate``, and
    plan_resize calls this ten times a sample.)"""
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _adjust_output_size(
    out: list[float], in_size: list[float], mode: str, max_size: Sequence[float] | None
) -> list[float]:
    """DALI's ``ResizeAttr::AdjustOutputSize``: the fractional output extents."""
    ndim = len(out)
    mask = [out[d] != 0 and in_size[d] != 0 for d in range(ndim)]
    scale = [_f32(out[d] / in_size[d]) if in_size[d] else 1.0 for d in range(ndim)]
    provided = sum(mask)
    if provided == 0:
        return list(in_size)

    def clamp_to_max_size() -> None:
        if max_size is not None:
            for d in range(ndim):
                if max_size[d] > 0 and abs(out[d]) > max_size[d]:
                    out[d] = math.copysign(max_size[d], out[d])

    if mode == "default":
        if provided < ndim:
            avg = 1.0
            for d in range(ndim):
                if mask[d]:
                    avg *= abs(scale[d])
            if provided > 1:
                avg = avg ** (1.0 / provided)
            for d in range(ndim):
                if not mask[d]:
                    out[d] = _f32(in_size[d] * avg)
        clamp_to_max_size()
    elif mode == "stretch":
        for d in range(ndim):
            if not mask[d]:
                out[d] = in_size[d]
        clamp_to_max_size()
    else:
        final = 0.0
        first = True
        for d in range(ndim):
            if mask[d]:
                s = _f32(abs(scale[d]))
                bigger = mode == "not_smaller" and s > final
                smaller = mode == "not_larger" and s < final
                if first or bigger or smaller:
                    final = s
                first = False
        if max_size is not None:
            for d in range(ndim):
                if max_size[d] > 0:
                    final = min(final, max_size[d] / in_size[d])
        for d in range(ndim):
            if not mask[d] or abs(scale[d]) != final:
                out[d] = _f32(in_size[d] * math.copysign(final, scale[d]))
    return out


def _round_half_away(value: float) -> int:
    return math.floor(abs(value) + 0.5)


def plan_resize(
    in_size: tuple[int, int],
    requested: tuple[float, float],
    *,
    mode: str = "default",
    max_size: Sequence[float] | None = None,
    roi: tuple[Sequence[float], Sequence[float]] | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
) -> ResizePlan:
    """DALI's output size and source window for one image (``ResizeAttr``).

    Args:
        in_size: the input (H, W).
        requested: the requested (H, W); 0 means "not given", a negative value flips.
        mode: "default", "stretch", "not_larger" or "not_smaller".
        max_size: the (H, W) limit, ``None`` for none; a non-positive entry is no limit.
        roi: ``(start, end)``, each (H, W), or ``None`` for the whole image.
        roi_relative: ``roi`` is in fractions of the image size.
        subpixel_scale: keep the exact scale when the size is rounded (see module docstring).

    Example:
        >>> plan_resize((480, 640), (0, 300)).out_size
        (225, 300)
    """
    lo: list[float] = []
    hi: list[float] = []
    req = [_f32(r) for r in requested]
    for d in range(2):
        if roi is not None and in_size[d] > 0:
            a, b = _f32(float(roi[0][d])), _f32(float(roi[1][d]))
            if roi_relative:  # float32 products, as DALI's ResizeAttr
                a, b = _f32(a * in_size[d]), _f32(b * in_size[d])
            if abs(b - a) < 1e-3:
                offset = 0.5e-3 if a <= b else -0.5e-3
                a, b = a - offset, b + offset
        else:
            a, b = 0.0, float(in_size[d])
        if b < a:
            a, b = b, a
            req[d] = -req[d]
        lo.append(_f32(a))
        hi.append(_f32(b))
    extents = [_f32(hi[d] - lo[d]) for d in range(2)]
    out = _adjust_output_size(req, extents, mode, max_size)
    sizes = []
    for d in range(2):
        if lo[d] == hi[d] and out[d] != 0:
            raise ValueError("cannot produce a non-empty output from an empty input")
        if not math.isfinite(out[d]):
            raise ValueError(
                f"the output size is too large: {requested[d]:g} does not fit float32, the "
                f"type of DALI's sizes (check resize_x/resize_y/size)"
            )
        size = max(1 if in_size[d] > 0 else 0, _round_half_away(out[d]))
        if out[d] < 0:
            lo[d], hi[d] = hi[d], lo[d]
        if subpixel_scale and size != abs(out[d]) and out[d] != 0:
            adjust = min(max(size / abs(out[d]), -10.0), 10.0)
            centre = (lo[d] + hi[d]) * 0.5
            lo[d] = centre + (lo[d] - centre) * adjust
            hi[d] = centre + (hi[d] - centre) * adjust
        sizes.append(size)
    return ResizePlan((sizes[0], sizes[1]), (lo[0], lo[1]), (hi[0], hi[1]))


# --- argument checks -----------------------------------------------------------------------

_SIZE_METHODS = (("resize_x", "resize_y"), ("size",), ("resize_shorter",), ("resize_longer",))


def _size_conflict(given: dict[str, Any]) -> str | None:
    """The message for two ways of giving the size at once, or ``None``."""
    names = [
        next(k for k in method if given.get(k) is not None)
        for method in _SIZE_METHODS
        if any(given.get(k) is not None for k in method)
    ]
    if len(names) < 2:
        return None
    return (
        f"arguments '{names[0]}' and '{names[1]}' cannot be used together; give the size in "
        f"exactly one way: resize_x/resize_y, size, resize_shorter or resize_longer"
    )


def _check_arguments(given: dict[str, Any]) -> None:
    """Conflicts between the arguments given to one call, as DALI's ``ResizeAttr`` rejects."""
    conflict = _size_conflict(given)
    if conflict:
        raise ValueError(f"{conflict}.")
    if "mode" in given:
        for other, implied in (("resize_shorter", "not_smaller"), ("resize_longer", "not_larger")):
            if given.get(other) is not None:
                raise ValueError(
                    f"arguments 'mode' and '{other}' cannot be used together "
                    f"('{other}' implies mode {implied!r})."
                )
    if (given.get("roi_start") is None) != (given.get("roi_end") is None):
        raise ValueError("'roi_start' and 'roi_end' must be given together.")


@described("1 or 2 numbers (H, W)")
def _extent(value: Any) -> tuple[float, ...]:
    """(H, W) from two numbers, or one number for both."""
    values = to_floats()(value)
    if len(values) not in (1, 2):
        raise ValueError(f"expected 1 or 2 numbers (H, W), got {len(values)}")
    return values if len(values) == 2 else values * 2


@described("0 (augkit resizes 2-D images only)")
def _no_volumes(value: Any) -> float:
    value = to_float()(value)
    if value != 0:
        raise ValueError("augkit's resize handles 2-D images (HWC, CHW); it has no depth axis")
    return value


# --- the operator --------------------------------------------------------------------------


def _filters(args: dict[str, Any]) -> tuple[str, str]:
    """(min_filter, mag_filter) as DALI picks them (``resampling_attr.cc``): by default
    Triangular (antialiased linear) when shrinking and Linear when enlarging; ``interp_type``
    sets both unless ``min_filter``/``mag_filter`` are given; ``antialias`` turns the shrinking
    linear filter into Triangular and back."""
    interp = args.get("interp_type")

    def pick(explicit: Any, default: types.DALIInterpType) -> str:
        if explicit is not None:
            return _FILTER_KINDS[explicit]
        return _FILTER_KINDS[interp if interp is not None else default]

    min_kind = pick(args.get("min_filter"), types.INTERP_TRIANGULAR)
    mag_kind = pick(args.get("mag_filter"), types.INTERP_LINEAR)
    if args.get("antialias", True):
        if min_kind == warp.LINEAR:
            min_kind = warp.TRIANGULAR
    elif min_kind == warp.TRIANGULAR:
        min_kind = warp.LINEAR
    return min_kind, mag_kind


def _pillow_filter(kind: str, downscale: bool, antialias: bool) -> int | None:
    """The Pillow filter that computes DALI's ``kind``, or ``None`` when there is none."""
    if kind == warp.NEAREST:
        return Image.Resampling.NEAREST
    if kind == warp.TRIANGULAR or (kind == warp.LINEAR and not downscale):
        return Image.Resampling.BILINEAR
    if kind in (warp.CUBIC, warp.LANCZOS3) and (antialias or not downscale):
        return Image.Resampling.BICUBIC if kind == warp.CUBIC else Image.Resampling.LANCZOS
    return None


def _pillow_resize(
    image: np.ndarray, plan: ResizePlan, resample: int, out_dtype: np.dtype
) -> np.ndarray:
    lo = [min(a, b) for a, b in zip(plan.src_lo, plan.src_hi, strict=True)]
    hi = [max(a, b) for a, b in zip(plan.src_lo, plan.src_hi, strict=True)]
    pads = [
        (math.ceil(max(0.0, -lo[d])), math.ceil(max(0.0, hi[d] - image.shape[d]))) for d in range(2)
    ]
    if any(p for pad in pads for p in pad):
        image = np.pad(image, (*pads, (0, 0)), mode="edge")
        lo = [lo[d] + pads[d][0] for d in range(2)]
        hi = [hi[d] + pads[d][0] for d in range(2)]
    box = (lo[1], lo[0], hi[1], hi[0])
    size = (plan.out_size[1], plan.out_size[0])
    channels = image.shape[2]
    if image.dtype == np.uint8 and out_dtype == np.uint8 and channels in (1, 3, 4):
        if channels == 4:
            pil = Image.frombuffer(
                "RGBX", image.shape[1::-1], np.ascontiguousarray(image), "raw", "RGBX", 0, 1
            )
        else:
            pil = Image.fromarray(image[..., 0] if channels == 1 else image)
        out = np.asarray(pil.resize(size, resample, box=box))
        out = out.reshape(*out.shape[:2], channels)
    elif image.dtype == np.uint8 and out_dtype == np.uint8:
        out = np.stack(
            [
                np.asarray(Image.fromarray(image[..., c]).resize(size, resample, box=box))
                for c in range(channels)
            ],
            axis=-1,
        )
    else:
        planes = [
            np.asarray(
                Image.fromarray(image[..., c].astype(np.float32)).resize(size, resample, box=box)
            )
            for c in range(channels)
        ]
        out = warp.truncate_sat(np.stack(planes, axis=-1), out_dtype)
    flips = tuple(d for d in range(2) if plan.src_lo[d] > plan.src_hi[d])
    return np.flip(out, flips) if flips else out


def nearest_indices(plan: ResizePlan, in_size: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The source row and column of every output pixel of a nearest-neighbour resize, as
    DALI's CPU kernel picks them (``ResampleNN`` in ``resampling_impl_cpu.h``).

    All in float32, as DALI: ``scale = (hi - lo) / out``; the kernel first cuts the input to
    the rows (or columns: whichever pass order its cost model picks) that the window touches
    and moves the origin by that integer offset; rows are ``floor(sy)`` with ``sy`` starting
    at ``origin + 0.5 * scale`` and *accumulated* by ``scale`` (so a long column drifts by
    float32 rounding, as DALI's does); columns are ``floor(origin + (x + 0.5) * scale)``, or
    ``floor(origin + 0.5) + x`` when the scale is exactly 1. Indices are clamped to the image.

    Example:
        >>> rows, cols = nearest_indices(plan_resize((4, 4), (2, 2)), (4, 4))
        >>> rows.tolist(), cols.tolist()
        ([1, 3], [1, 3])
    """
    f32 = np.float32
    out_h, out_w = plan.out_size
    origin = [f32(plan.src_lo[0]), f32(plan.src_lo[1])]
    scale = [f32(f32(f32(plan.src_hi[d]) - origin[d]) / f32(plan.out_size[d])) for d in range(2)]
    # ComputeScaleAndROI / SetupSample: the region of the input the window reads (support 1).
    lo_int, extent = [], []
    for d in range(2):
        a, b = float(plan.src_lo[d]), float(plan.src_hi[d])
        lo, hi = (a, b + 1.0) if a <= b else (b, a + 1.0)
        roi_lo = max(0, min(in_size[d], math.floor(lo)))
        roi_hi = max(0, min(in_size[d], math.floor(hi)))
        lo_int.append(roi_lo)
        extent.append(roi_hi - roi_lo)
    size_vert = extent[1] * out_h  # the vertical pass first: (out_H x roi width)
    size_horz = out_w * extent[0]
    shifted = 1 if size_vert < size_horz else 0
    offsets = [0, 0]
    origin[shifted] = f32(origin[shifted] - f32(lo_int[shifted]))
    offsets[shifted] = lo_int[shifted]
    rows_extent = extent[0] if shifted == 0 else in_size[0]
    cols_extent = extent[1] if shifted == 1 else in_size[1]
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.full(out_h, scale[0], f32)
        steps[0] = f32(origin[0] + f32(f32(0.5) * scale[0]))
        sy = np.add.accumulate(steps, dtype=f32)
        if scale[1] == 1:
            sx = np.floor(f32(origin[1] + f32(0.5))) + np.arange(out_w, dtype=np.float64)
        else:
            xs = np.arange(out_w, dtype=f32) + f32(0.5)
            sx = origin[1] + xs * scale[1]
    rows = np.clip(np.floor(sy), 0, max(rows_extent - 1, 0)).astype(np.intp) + offsets[0]
    cols = np.clip(np.floor(sx), 0, max(cols_extent - 1, 0)).astype(np.intp) + offsets[1]
    return rows, cols


_CV2: Any = None  # OpenCV, once a resize operator's setup() imported it (backend.opencv)
_REMAP_TYPES = (np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.uint16), np.dtype(np.float32))


def use_opencv() -> None:
    """Import OpenCV for the nearest-neighbour kernel (from an operator's ``setup``, on the
    building thread); without it the kernel gathers with NumPy (the same pixels, slower)."""
    global _CV2
    if _CV2 is None:
        try:
            _CV2 = backend.opencv()
        except ImportError:  # pragma: no cover (OpenCV is a dependency of the benchmarks)
            _CV2 = False


@functools.lru_cache(maxsize=32)
def _nearest_map(plan: ResizePlan, in_size: tuple[int, int]) -> np.ndarray:
    """OpenCV's int16 (x, y) map of ``nearest_indices``, cached per plan (fixed output sizes
    repeat from sample to sample: building the map costs as much as the remap)."""
    rows, cols = nearest_indices(plan, in_size)
    xy = np.empty((len(rows), len(cols), 2), np.int16)
    xy[..., 0] = cols[None, :]
    xy[..., 1] = rows[:, None]
    xy.flags.writeable = False
    return xy


def nearest_resize(image: np.ndarray, plan: ResizePlan, out_dtype: np.dtype) -> np.ndarray:
    """Nearest-neighbour resize with DALI's source pixels (``nearest_indices``): one OpenCV
    ``remap`` with an exact integer map (``INTER_NEAREST`` then only copies pixels), or two
    NumPy gathers where OpenCV does not apply (5+ channels, other types, > 32767 pixels)."""
    out_h, out_w = plan.out_size
    cv2 = _CV2
    if (
        cv2
        and image.dtype in _REMAP_TYPES
        and image.shape[2] <= 4
        and max(image.shape[0], image.shape[1]) < 32768
        and out_h * out_w <= 4096 * 4096
        and out_h > 0
        and out_w > 0
    ):
        xy = _nearest_map(plan, (image.shape[0], image.shape[1]))
        out = cv2.remap(image, xy, None, cv2.INTER_NEAREST)
        out = out.reshape(out_h, out_w, image.shape[2])
    else:
        return nearest_gather(image, plan, out_dtype)
    if out.dtype != out_dtype:
        out = warp.truncate_sat(out.astype(np.float32), out_dtype)
    return out


def nearest_gather(image: Any, plan: ResizePlan, out_dtype: np.dtype) -> Any:
    """``nearest_resize`` by two gathers (``take`` along H, then W) of DALI's source pixels,
    on the device of ``image`` (NumPy or CuPy; the indices are made on the host)."""
    xp = backend.array_module(image)
    rows, cols = nearest_indices(plan, image.shape[:2])
    out = image.take(xp.asarray(rows), axis=0).take(xp.asarray(cols), axis=1)
    if out.dtype != out_dtype:
        out = warp.truncate_sat(out.astype(np.float32), out_dtype)
    return out


def _whole_image(plan: ResizePlan, shape: tuple[int, ...]) -> bool:
    """Whether the source window is exactly the image on both axes (either direction)."""
    return all(
        min(plan.src_lo[d], plan.src_hi[d]) == 0.0
        and max(plan.src_lo[d], plan.src_hi[d]) == float(shape[d])
        for d in range(2)
    )


def _torch_resize(image: np.ndarray, plan: ResizePlan) -> np.ndarray:
    out = resize_torch.resize(image, plan.out_size)
    flips = tuple(d for d in range(2) if plan.src_lo[d] > plan.src_hi[d])
    return np.flip(out, flips) if flips else out


def _numpy_resize(
    image: np.ndarray, plan: ResizePlan, kinds: Sequence[str], antialias: bool, out_dtype: np.dtype
) -> np.ndarray:
    data = image.astype(np.float32)
    for axis in (0, 1):
        data = warp.resample_axis(
            data,
            axis,
            plan.out_size[axis],
            plan.src_lo[axis],
            plan.src_hi[axis],
            kinds[axis],
            antialias,
        )
    return warp.truncate_sat(data, out_dtype)


# Above this many weights (an (out, in) float32 matrix of 256 MiB) an axis is resampled tap by
# tap (``warp.resample_axis``) instead of by one matrix product.
_MAX_MATRIX = 2**26


def separable_resize(
    image: Any, plan: ResizePlan, kinds: Sequence[str], antialias: bool, out_dtype: np.dtype
) -> Any:
    """The GPU resize (any filter pair, written against the array module of ``image``: NumPy
    or CuPy): DALI's weights of each axis (``warp.resample_matrix``, made on the host) as an
    (out, in) float32 matrix, applied on the device of ``image`` by two matrix products, H
    first then W, as ``_numpy_resize``'s passes; integers stored by ``truncate_sat``. An axis
    whose matrix would be huge goes tap by tap through ``warp.resample_axis`` instead."""
    xp = backend.array_module(image)
    data = image.astype(np.float32)
    for axis in (0, 1):
        in_size, out_size = data.shape[axis], plan.out_size[axis]
        lo, hi = plan.src_lo[axis], plan.src_hi[axis]
        if in_size * out_size > _MAX_MATRIX:
            data = warp.resample_axis(data, axis, out_size, lo, hi, kinds[axis], antialias)
            continue
        matrix = xp.asarray(warp.resample_matrix(kinds[axis], in_size, lo, hi, out_size, antialias))
        if axis == 0:  # (out_H, H) @ (H, W*C)
            rest = data.shape[1:]
            data = xp.matmul(matrix, data.reshape(in_size, -1)).reshape(out_size, *rest)
        else:  # (out_W, W) @ (W, C), batched over the rows
            data = xp.matmul(matrix, data)
    return warp.truncate_sat(data, out_dtype)


def resize_hwc_gpu(image: Any, args: dict[str, Any]) -> Any:
    """``resize_hwc`` on the device of ``image`` (the GPU kernel of ``fn.resize`` and
    ``fn.random_resized_crop``; NumPy works too, which the CPU tests use): the plan and the
    filters are ``resize_hwc``'s; INTERP_NN both ways gathers DALI's source pixels
    (``nearest_gather``), every other filter pair is ``separable_resize`` (DALI's weights and
    clamped borders, where the CPU kernel's Pillow renormalises its border taps)."""
    out_dtype = _out_dtype(image, args)
    plan = sample_plan(image.shape[:2], args)
    kinds, _, antialias = _kinds(plan, args)
    if kinds[0] == kinds[1] == warp.NEAREST:
        return nearest_gather(image, plan, out_dtype)
    return separable_resize(image, plan, kinds, antialias, out_dtype)


def _requested(args: dict[str, Any]) -> tuple[tuple[float, float], str]:
    """The requested (H, W) and the mode, from whichever size arguments were given."""
    conflict = _size_conflict(args)
    if conflict:  # the two came from the constructor and the call of one ops.Resize
        raise ValueError(conflict)
    if args.get("size") is not None:
        return args["size"], args["mode"]
    for name, mode in (("resize_shorter", "not_smaller"), ("resize_longer", "not_larger")):
        if args.get(name) is not None:
            return (args[name], args[name]), mode
    if args.get("resize_x") is None and args.get("resize_y") is None:
        raise ValueError(
            "no output size: give resize_x and/or resize_y, size, resize_shorter or resize_longer"
        )
    return (args.get("resize_y") or 0.0, args.get("resize_x") or 0.0), args["mode"]


class ResizeImpl(MovesTargets):
    @classmethod
    def keeps_relative_coordinates(cls, given: Iterable[str]) -> bool:
        """A resize without a region of interest only scales: fractions stay right."""
        return not any(k in given for k in ("roi_start", "roi_end", "roi_relative", "roi_shape"))

    def setup(self) -> None:
        # torch (the fast back end) is imported now, when the pipeline is built, on the
        # building thread: imported lazily by the first sample on a pool thread, it cost the
        # first run() a second and raced with other threads (a user's own `import torch`).
        resize_torch.torch_module()
        use_opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_image("resize", sample, layout, ("HWC", "CHW"), _INPUT_TYPES)

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        width, height = image_size(shape, layout)
        return plan_geometry(sample_plan((height, width), args), (height, width))

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def cpu(self, image: np.ndarray, *, layout: str, **args: Any) -> np.ndarray:
        if layout == "CHW":
            # The kernel works on HWC: CHW samples go through it as transposed views.
            return resize_hwc(image.transpose(1, 2, 0), args).transpose(2, 0, 1)
        return resize_hwc(image, args)

    def gpu(self, image: Any, *, layout: str, **args: Any) -> Any:
        xp = backend.array_module(image)
        if layout == "CHW":
            return xp.ascontiguousarray(
                resize_hwc_gpu(image.transpose(1, 2, 0), args).transpose(2, 0, 1)
            )
        return xp.ascontiguousarray(resize_hwc_gpu(image, args))


def sample_plan(in_size: tuple[int, int], args: dict[str, Any]) -> ResizePlan:
    """The plan of one sample of (H, W) ``in_size`` from ``fn.resize``'s (checked) arguments
    ``args``: what the kernel resamples, and what the targets move by."""
    requested, mode = _requested(args)
    roi = None
    if args.get("roi_start") is not None:
        roi = (args["roi_start"], args["roi_end"])
    plan = plan_resize(
        in_size,
        requested,
        mode=mode,
        max_size=args.get("max_size"),
        roi=roi,
        roi_relative=args.get("roi_relative", False),
        subpixel_scale=args.get("subpixel_scale", True),
    )
    out_h, out_w = plan.out_size
    if max(out_h, out_w) > _MAX_EXTENT or out_h * out_w > _MAX_PIXELS:
        raise ValueError(
            f"the output size {out_h}x{out_w} is too large: at most {_MAX_EXTENT} per side "
            f"and {_MAX_PIXELS} pixels (check resize_x/resize_y/size/roi)"
        )
    return plan


def plan_geometry(plan: ResizePlan, in_size: tuple[int, int]) -> Geometry:
    """The transform of a resize ``plan`` of an (H, W) image: output pixel centre ``x + 0.5``
    reads ``lo + (x + 0.5) * (hi - lo) / out`` per axis (``lo > hi``: a flip), so an input
    point ``p`` goes to ``(p - lo) * out / (hi - lo)``."""
    scale, shift = [], []
    for d in range(2):
        lo, hi = float(plan.src_lo[d]), float(plan.src_hi[d])
        if hi == lo:
            raise ValueError("the source window is empty: there is no transform to move by")
        scale.append(plan.out_size[d] / (hi - lo))
        shift.append(-lo * scale[d])
    out_h, out_w = plan.out_size
    return Geometry.scale_translate(
        scale[1], scale[0], shift[1], shift[0], (in_size[1], in_size[0]), (out_w, out_h)
    )


def _out_dtype(image: Any, args: dict[str, Any]) -> np.dtype:
    dtype = args.get("dtype")
    out_dtype = image.dtype if dtype is None else dtype.numpy
    # (with no dtype the output's is the input's: only a given dtype can be refused)
    if dtype is not None and out_dtype not in (image.dtype, np.dtype(np.float32)):
        raise ValueError(
            f"dtype must be the input type ({image.dtype.name}) or types.FLOAT, got {dtype.name}"
        )
    return out_dtype


def _kinds(plan: ResizePlan, args: dict[str, Any]) -> tuple[list[str], list[bool], bool]:
    """The filter of each axis (H, W), whether the axis shrinks, and ``antialias``."""
    min_kind, mag_kind = _filters(args)
    antialias = args.get("antialias", True)
    shrinks = [plan.out_size[d] < abs(plan.src_hi[d] - plan.src_lo[d]) for d in range(2)]
    return [min_kind if shrink else mag_kind for shrink in shrinks], shrinks, antialias


def resize_hwc(image: np.ndarray, args: dict[str, Any]) -> np.ndarray:
    """Resize one HWC image as ``fn.resize`` does with the (checked) arguments ``args``
    (``random_resized_crop`` and the decoders' crops call it with a ``roi``)."""
    out_dtype = _out_dtype(image, args)
    plan = sample_plan(image.shape[:2], args)
    kinds, shrinks, antialias = _kinds(plan, args)
    if kinds[0] == kinds[1] == warp.NEAREST:
        return nearest_resize(image, plan, out_dtype)
    filters = {
        _pillow_filter(kind, shrink, antialias) for kind, shrink in zip(kinds, shrinks, strict=True)
    }
    if len(filters) == 1 and None not in filters:
        resample = filters.pop()
        assert resample is not None  # (None is not in filters)
        if (
            resample == Image.Resampling.BILINEAR
            and _whole_image(plan, image.shape)
            and resize_torch.supports(image, out_dtype)
        ):
            return _torch_resize(image, plan)
        return _pillow_resize(image, plan, resample, out_dtype)
    return _numpy_resize(image, plan, kinds, antialias, out_dtype)


# The largest output: Pillow and torch take int32 sizes, and 2**40 pixels fit no memory.
_MAX_EXTENT = 2**31 - 1
_MAX_PIXELS = 2**40

_INTERP_DOC = (
    "types.INTERP_NN, INTERP_LINEAR, INTERP_CUBIC, INTERP_LANCZOS3, INTERP_TRIANGULAR or "
    "INTERP_GAUSSIAN"
)

register(
    OperatorSchema(
        name="resize",
        class_name="Resize",
        impl=ResizeImpl,
        devices=("cpu", "gpu"),
        accepts=[movable(HWC_OR_CHW_IMAGE)],
        output_kinds=keeps_kind,
        validate=_check_arguments,
        doc="""Resize images (layout HWC or CHW), as DALI's ``fn.resize``.

The output size comes from exactly one of ``resize_x``/``resize_y``, ``size`` (H, W),
``resize_shorter`` or ``resize_longer``, shaped by ``mode`` and ``max_size`` with DALI's rules
(a missing extent keeps the aspect ratio; sizes round half away from zero). By default the
filter is linear, antialiased when shrinking (DALI's Triangular filter); augkit computes it with
Pillow's BILINEAR filter, which is the same filter (or torch's uint8 port of it, 5× faster,
where torch is installed and the whole image is resized). ``device="gpu"`` resamples with
DALI's own weights and border rule on CuPy (two matrix products, float32). Differences from
DALI (CPU): at the image border Pillow renormalises the filter instead of repeating the edge
pixel, and it rounds its 8-bit intermediate between the two passes (DALI 2.4 is within a mean
0.15 of Pillow on photos);
``save_attrs``, volumes (``resize_z``) and sequences are not supported.

Moves masks, boxes, keypoints, vertices and labels with the images when given with them as
input sets (``fn.resize([images, masks, boxes, labels], resize_shorter=256)``): one plan per
sample for all of them (every size argument, mode, max_size, roi and subpixel_scale); masks are
resized by the nearest neighbour, keeping their class values.

Example, in a pipeline definition::

    images = fn.resize(images, resize_shorter=256, interp_type=types.INTERP_LINEAR)
""",
        args=[
            Arg("resize_x", "output width; a negative value flips", None, to_float(), True),
            Arg("resize_y", "output height; a negative value flips", None, to_float(), True),
            Arg("resize_z", "volumes only: must stay 0 in augkit", None, _no_volumes),
            Arg("size", "output (H, W), or one value for both; 0 = missing", None, _extent, True),
            Arg(
                "mode",
                'how the given extents are met: "default", "stretch", "not_larger" or '
                '"not_smaller"',
                "default",
                one_of(*MODES),
            ),
            Arg(
                "resize_shorter",
                "length of the shorter side (keeps the aspect ratio)",
                None,
                to_float(0),
                True,
            ),
            Arg(
                "resize_longer",
                "length of the longer side (keeps the aspect ratio)",
                None,
                to_float(0),
                True,
            ),
            Arg(
                "max_size", "limit of the output (H, W), or one value for both", None, _extent, True
            ),
            Arg(
                "interp_type",
                f"the filter for both directions: {_INTERP_DOC} (None: linear)",
                None,
                to_interp,
                True,
            ),
            Arg(
                "min_filter",
                "the filter when shrinking (None: linear, antialiased)",
                None,
                to_interp,
                True,
            ),
            Arg("mag_filter", "the filter when enlarging (None: linear)", None, to_interp, True),
            Arg("antialias", "widen the filter when shrinking (not for INTERP_NN)", True, to_bool),
            Arg("dtype", "output type: the input type (None) or types.FLOAT", None, to_dtype),
            Arg(
                "subpixel_scale",
                "keep the exact scale when the size is rounded (the source window is adjusted)",
                True,
                to_bool,
            ),
            Arg(
                "roi_start",
                "start of the input region (H, W), as roi_end",
                None,
                to_floats(2),
                True,
            ),
            Arg(
                "roi_end",
                "end of the input region (H, W); start > end flips",
                None,
                to_floats(2),
                True,
            ),
            Arg(
                "roi_relative", "roi_start/roi_end are fractions of the image size", False, to_bool
            ),
            Arg("minibatch_size", "accepted for DALI compatibility; no effect on the CPU", 32),
            Arg("temp_buffer_hint", "accepted for DALI compatibility; no effect on the CPU", 0),
        ],
    )
)
