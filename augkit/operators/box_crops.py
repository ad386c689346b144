"""Random crop windows for boxes and regions: ``fn.random_bbox_crop`` (DALI's prospective
random crop of a box coordinate space, the SSD crop search: the window (anchor, shape) and the
boxes, labels and indices that survive it), ``fn.roi_random_crop`` (a fixed-shape window
placed at random around a region of interest) and ``fn.random_crop_generator`` (the random
resized crop window of a shape).

random_bbox_crop, decisions and traps (DALI 2.4's ``bbox_crop.cc``, read and checked against
DALI):

- The options are the ``thresholds`` plus, with ``allow_no_crop``, one "no crop" option; each
  round picks one uniformly. "No crop" gives anchor 0, shape 1 (``input_shape`` with
  ``crop_shape``) and every box unchanged, in the input's order.
- A round makes ``num_attempts`` candidate windows. Relative windows: each extent drawn from
  ``scaling``; where an ``aspect_ratio`` range is a single value the extents are fixed to it
  (in a random order of the dimensions, then rescaled so that the largest extent is kept); a
  window whose aspect ratio (x/y; x/z, y/z in 3-D) is outside the range is dropped; the anchor
  is uniform in [0, 1 - extent]. Fixed windows (``crop_shape`` + ``input_shape``): integer
  anchors uniform in [0, input - crop]; anchor and shape are then absolute (pixels) while the
  boxes stay relative.
- The metric of a window is the smallest (``all_boxes_above_threshold``) or largest IoU
  (``threshold_type="iou"``) or overlap (intersection / box area) over the boxes (0 with no
  box); a window is valid when metric >= threshold and at least one box keeps its centre
  inside it. The best window so far (by metric) is kept, so that after
  ``total_num_attempts`` the best candidate is given (DALI warns; augkit does not).
- Kept boxes: those whose centre is inside the window (``bbox_prune_threshold`` unset; a centre
  on the window's edge is inside), or whose fraction of area inside the window is >= the
  prune threshold; each is clipped to the window and mapped to its coordinates.
- Labels (n,) or (n, k) are gathered with their boxes, dtype kept; indices are int32.
- Trap: DALI loops for ever when no window can be valid (a sample without boxes and no "no
  crop" option) and ``total_num_attempts`` is unset; augkit stops after 10000 attempts and
  gives the best window, as if ``total_num_attempts`` had been that (a sample without boxes
  and no "no crop" option stops at once: its best window is the first, as in DALI).
- Only the random draws differ from DALI (augkit's counter-based streams, not DALI's
  mt19937): the distributions, the thresholds and the geometry are DALI's; the deterministic
  cases (``scaling=[1, 1]``, ``crop_shape == input_shape``, ``thresholds`` unreachable...)
  match DALI exactly (tests/dali_parity/cases_box_crops.py).
- Boxes must be relative, inside [0, 1] with start <= end (DALI asserts the same).
- ``ltrb`` is DALI's deprecated spelling of ``bbox_layout`` ("xyXY" / "xyWH"); an explicit
  ``bbox_layout`` wins. DALI refuses both together, and ``allow_no_crop``/``scaling``/
  ``aspect_ratio`` given with ``crop_shape``; augkit cannot tell a default from a given value
  here, so it ignores ``allow_no_crop`` with ``crop_shape`` (DALI's behaviour when it is left
  default) and refuses nothing.
- Speed: each block of candidate windows (one round first, then up to 256 windows) is drawn
  and measured at once in NumPy ((windows, boxes) arrays), then DALI's sequential rule runs
  over the scalars. Still much slower than DALI's C++ loop: about 0.3 ms against DALI's
  0.008 ms per sample (3 boxes, SSD's thresholds [0 ... 0.9], num_attempts=50), 0.4 ms
  against 0.02 ms where most windows fail (8 boxes, thresholds 0.1 ... 0.9).
- The number of outputs (3, +labels, +indices) depends on whether labels are given:
  ``_num_outputs(args, num_inputs)`` (``OperatorSchema.outputs_for``).

roi_random_crop (DALI's ``roi_random_crop.cc``): per dimension, a window as large as the ROI
starts at it; otherwise the start is uniform (integers) in [roi_start, roi_end - crop] (or the
reverse range when the window is larger than the ROI), clamped to [0, shape - crop] when the
input shape is known (``in_shape``, or the input's first ``len(crop_shape)`` dimensions).
int64 output. A range left empty by the clamp (the ROI wider than the input allows) gives its
low end. The ROI must lie inside a known input shape and the window must fit in it.

random_crop_generator (DALI's ``random_crop_generator.h``): the window of
``crop_window.random_crop_window`` (the same generator as ``fn.random_resized_crop``) for the
first two values (H, W) of the 1-D integer input; int32 anchor (y, x) and shape (h, w).
Difference: where DALI's impossible cases give a window larger than the image with an
undefined anchor (``random_area`` > 1 on a non-square shape), augkit's window is clamped to the
image with a drawn anchor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import kinds
from augkit.errors import ArgumentError
from augkit.operators.base import SampleOperator
from augkit.operators.geometric.crop_window import random_crop_window, to_range, to_ratio_range
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    one_of,
    register,
    to_bool,
    to_float,
    to_floats,
    to_int,
    to_ints,
    to_str,
)

# A bound on DALI's endless search (see the module docstring).
MAX_ATTEMPTS = 10_000

_START_END = {2: "xyXY", 3: "xyzXYZ"}
_START_SHAPE = {2: "xyWH", 3: "xyzWHD"}


def _num_outputs(args: dict[str, Any], num_inputs: int) -> int:
    """anchor, shape, boxes, [labels when labels are given], [indices]."""
    return 3 + (num_inputs > 1) + int(bool(args.get("output_bbox_indices")))


def _layout_perm(layout: str, ndim: int) -> tuple[np.ndarray, bool]:
    """Column order to read a box as start-end (lo..., hi...) or start-shape, and which."""
    for canonical, is_shape in ((_START_END[ndim], False), (_START_SHAPE[ndim], True)):
        if sorted(layout) == sorted(canonical):
            return np.array([layout.index(c) for c in canonical]), is_shape
    raise ValueError(
        f"bbox_layout should be a permutation of '{_START_END[ndim]}' or "
        f"'{_START_SHAPE[ndim]}', got '{layout}'"
    )


def _check_layout(value: Any) -> str:
    value = to_str(value)
    if value and not (
        any(sorted(value) == sorted(v) for v in (*_START_END.values(), *_START_SHAPE.values()))
    ):
        raise ValueError(
            f"must be a permutation of 'xyXY', 'xyWH', 'xyzXYZ' or 'xyzWHD', got {value!r}"
        )
    return value


def _check_shape_layout(value: Any) -> str:
    value = to_str(value)
    if value and sorted(value) not in (sorted("WH"), sorted("WHD")):
        raise ValueError(f"must be a permutation of 'WH' or 'WHD', got {value!r}")
    return value


def _check_range(name: str, value: tuple[float, ...], sizes: tuple[int, ...]) -> None:
    if len(value) not in sizes:
        raise ValueError(f"{name} must have {' or '.join(map(str, sizes))} values")
    for lo, hi in zip(value[::2], value[1::2], strict=True):
        if not 0 <= lo <= hi:
            raise ValueError(f"{name} ranges must be 0 <= min <= max, got [{lo}, {hi}]")


def _validate(args: dict[str, Any]) -> None:
    _check_range("scaling", args.get("scaling", (1.0, 1.0)), (2,))
    _check_range("aspect_ratio", args.get("aspect_ratio", (1.0, 1.0)), (2, 6))
    thresholds = args.get("thresholds", (0.0,))
    if any(not 0.0 <= t <= 1.0 for t in thresholds):
        raise ValueError("thresholds must be within [0, 1]")
    if not thresholds:
        raise ValueError("at least one threshold must be given")
    if args.get("total_num_attempts") == 0:
        raise ValueError("total_num_attempts must be > 0 (or -1: unlimited)")


def _volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.prod(np.maximum(hi - lo, 0.0), axis=-1)


class RandomBBoxCropImpl(SampleOperator):
    random = True

    def setup(self) -> None:
        has_labels = self.num_inputs > 1
        self.num_outputs = 3 + int(has_labels) + int(self.args["output_bbox_indices"])
        self.has_labels = has_labels

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.float32 if index < 3 else np.int32

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            if sample.ndim != 2 or sample.shape[1] not in (4, 6):
                raise ValueError(
                    f"boxes must be 2-D (n, 4) or (n, 6), got shape {tuple(sample.shape)}"
                )
            if not np.issubdtype(sample.dtype, np.floating):
                raise ValueError(f"boxes must be float, got {sample.dtype}")
        elif sample.ndim not in (1, 2) or not np.issubdtype(sample.dtype, np.integer):
            raise ValueError(
                f"labels must be 1-D or 2-D integers, got {sample.dtype} "
                f"of shape {tuple(sample.shape)}"
            )

    def cpu(self, boxes: np.ndarray, labels: np.ndarray | None = None, **a: Any) -> tuple:
        rng: np.random.Generator = a["rng"]
        ndim = boxes.shape[1] // 2
        nboxes = boxes.shape[0]
        if labels is not None and labels.shape[0] != nboxes:
            raise ValueError(f"{nboxes} boxes but {labels.shape[0]} labels")
        layout = a["bbox_layout"] or (_START_END if a["ltrb"] else _START_SHAPE)[ndim]
        perm, is_shape = _layout_perm(layout, ndim)
        b = boxes.astype(np.float32, copy=False)[:, perm]
        lo, hi = b[:, :ndim], b[:, ndim:]
        if is_shape:
            hi = lo + hi
        if nboxes and not (np.all(lo >= 0) and np.all(hi <= 1) and np.all(lo <= hi)):
            bad = int(
                np.flatnonzero(~(np.all(lo >= 0, 1) & np.all(hi <= 1, 1) & np.all(lo <= hi, 1)))[0]
            )
            raise ValueError(
                f"box {bad} {boxes[bad].tolist()} ({layout}) is not inside [0, 1] with "
                "start <= end (boxes are relative coordinates)"
            )
        absolute = a["crop_shape"] is not None
        if absolute != (a["input_shape"] is not None):
            raise ValueError("crop_shape and input_shape must be given together (or neither)")
        if absolute:
            self._shapes(a, ndim)  # checked before anything is drawn
        options = list(a["thresholds"]) + ([None] if a["allow_no_crop"] and not absolute else [])
        total = a["total_num_attempts"]
        limit = total if total > 0 else MAX_ATTEMPTS
        if nboxes == 0 and None not in options and total <= 0:
            limit = 1  # never valid: DALI's endless search keeps its first window
        box_area = _volume(lo, hi)

        centre = (lo + hi) * np.float32(0.5)
        best = None
        best_metric = -1.0
        count = 0
        k = a["num_attempts"]
        block = 1  # the first block is one round (most samples stop there), then larger ones
        done = False
        while count < limit and not done:
            # A block of rounds drawn and measured at once (up to 256 windows), then DALI's
            # sequential rule (keep the best so far, stop at the first valid window) per round.
            rounds = max(1, min(block // k, -(-(limit - count) // k)))
            block = min(4 * block, 256)
            picks = rng.integers(len(options), size=rounds)
            g = self._windows(rounds * k, a, ndim, absolute, rng, lo, hi, centre, box_area)
            out_lo, out_ext, c_lo, c_hi, shape_ok, ms, inside, i_lo, i_hi = g
            kept = inside.sum(axis=1)
            for r in range(rounds):
                option = options[int(picks[r])]
                if option is None:
                    win_lo = np.zeros(ndim, np.float32)
                    best = (win_lo, np.ones(ndim, np.float32), lo, hi, np.arange(nboxes))
                    done = True
                    break
                kr = min(k, limit - count)
                if kr <= 0:
                    done = True
                    break
                sl = slice(r * k, r * k + kr)
                ok, m_r = shape_ok[sl], ms[sl]
                valid = ok & (m_r >= option)
                succ = valid & (kept[sl] > 0)
                if succ.any():
                    j = r * k + int(np.argmax(succ))
                    count += j - r * k + 1
                    best = (out_lo[j], out_ext[j], c_lo[j], c_hi[j], inside[j], i_lo[j], i_hi[j])
                    done = True
                    break
                count += kr
                # Only these attempts can become the best so far (a valid one with no box
                # kept lowers the best metric: DALI's rule, followed exactly).
                floor = min(best_metric, float(m_r[valid].min())) if valid.any() else best_metric
                for jj in np.flatnonzero(ok & (valid | (m_r > floor))):
                    m = float(m_r[jj])
                    if m <= best_metric and not valid[jj]:
                        continue
                    best_metric = m
                    j = r * k + int(jj)
                    best = (out_lo[j], out_ext[j], c_lo[j], c_hi[j], inside[j], i_lo[j], i_hi[j])
        if best is not None and len(best) == 7:
            o_lo, o_ext, w_lo, w_hi, inside_j, il, ih = best
            keep = np.flatnonzero(inside_j)
            extent = w_hi - w_lo
            n_lo = np.clip((il[keep] - w_lo) / extent, 0.0, 1.0)
            n_hi = np.clip((ih[keep] - w_lo) / extent, 0.0, 1.0)
            best = (o_lo, o_ext, n_lo, n_hi, keep)
        if best is None:  # every attempt had a bad aspect ratio: DALI gives an empty window
            z = np.zeros(ndim, np.float32)
            best = (z, z, lo[:0], hi[:0], np.arange(0))
        anchor, shape, n_lo, n_hi, keep = best
        if is_shape:
            n_hi = n_hi - n_lo
        out_boxes = np.empty((len(keep), 2 * ndim), np.float32)
        out_boxes[:, perm] = np.concatenate([n_lo, n_hi], axis=1)
        outs: list[Any] = [
            np.asarray(anchor, np.float32),
            np.asarray(shape, np.float32),
            out_boxes,
        ]
        if labels is not None:
            outs.append(np.ascontiguousarray(labels[keep]))
        if a["output_bbox_indices"]:
            outs.append(keep.astype(np.int32))
        return tuple(outs)

    def _windows(
        self,
        k: int,
        a: dict[str, Any],
        ndim: int,
        absolute: bool,
        rng: np.random.Generator,
        lo: np.ndarray,
        hi: np.ndarray,
        centre: np.ndarray,
        box_area: np.ndarray,
    ) -> tuple:
        """``k`` candidate windows and their measures: output anchor/extent, relative window,
        aspect check, metric, which boxes are kept, and the boxes' intersections."""
        if absolute:
            in_shape, crop_shape = self._shapes(a, ndim)
            anchor = rng.integers(0, np.maximum(in_shape - crop_shape, 0) + 1, (k, ndim))
            anchor = anchor.astype(np.float32)
            c_lo = (anchor / in_shape).astype(np.float32)
            c_hi = (crop_shape / in_shape).astype(np.float32) + c_lo
            out_lo, out_ext = anchor, np.broadcast_to(crop_shape.astype(np.float32), (k, ndim))
            shape_ok = np.ones(k, bool)
        else:
            ar = np.asarray(a["aspect_ratio"], np.float32).reshape(-1, 2)
            s0, s1 = np.float32(a["scaling"][0]), np.float32(a["scaling"][1])
            ext = rng.uniform(s0, s1, (k, ndim)).astype(np.float32)
            ext = _fix_aspects(ext, ar, rng)
            shape_ok = _valid_aspects(ext, ar)
            c_lo = (rng.random((k, ndim)) * (1.0 - ext)).astype(np.float32)
            c_hi = c_lo + ext
            out_lo, out_ext = c_lo, ext
        i_lo = np.maximum(lo[None], c_lo[:, None])
        i_hi = np.minimum(hi[None], c_hi[:, None])
        inter = np.prod(np.maximum(i_hi - i_lo, 0.0), axis=-1)  # (k, n)
        prune = a["bbox_prune_threshold"]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(box_area > 0, inter / box_area, 0.0)
            if a["threshold_type"] == "iou":
                denom = box_area + np.prod(c_hi - c_lo, axis=-1)[:, None] - inter
                metric = np.where(inter > 0, inter / denom, 0.0)
            else:
                metric = frac
        if prune is None:
            inside = np.all(
                (centre[None] >= c_lo[:, None]) & (centre[None] <= c_hi[:, None]), axis=-1
            )
        else:
            inside = frac >= prune
        if lo.shape[0]:
            ms = metric.min(axis=1) if a["all_boxes_above_threshold"] else metric.max(axis=1)
        else:
            ms = np.zeros(k)
        return out_lo, out_ext, c_lo, c_hi, shape_ok, ms, inside, i_lo, i_hi

    def _shapes(self, a: dict[str, Any], ndim: int) -> tuple[np.ndarray, np.ndarray]:
        in_shape = np.asarray(a["input_shape"], np.int64).reshape(-1)
        crop_shape = np.asarray(a["crop_shape"], np.int64).reshape(-1)
        if in_shape.size != ndim or crop_shape.size != ndim:
            raise ValueError(
                f"input_shape and crop_shape must have {ndim} values for {2 * ndim}-coordinate "
                f"boxes, got {in_shape.size} and {crop_shape.size}"
            )
        order = a["shape_layout"]
        if order:
            if len(order) != ndim:
                raise ValueError(f"shape_layout '{order}' does not have {ndim} dimensions")
            idx = [order.index(c) for c in "WHD"[:ndim]]
            in_shape, crop_shape = in_shape[idx], crop_shape[idx]
        if np.any(in_shape <= 0) or np.any(crop_shape < 0) or np.any(crop_shape > in_shape):
            raise ValueError(
                f"crop_shape {tuple(crop_shape)} must fit in input_shape {tuple(in_shape)} "
                "(and input_shape must be positive)"
            )
        return in_shape, crop_shape


def _fix_aspect(shape: np.ndarray, ar: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """DALI's FixAspectRatios: pairs whose aspect range is one value get that ratio."""
    ndim = shape.size
    fixed = np.zeros((ndim, ndim), np.float32)
    k = 0
    need = False
    for d0 in range(ndim):
        for d1 in range(d0 + 1, ndim):
            lo_, hi_ = ar[k % len(ar)]
            if lo_ == hi_ and lo_ > 0:
                fixed[d0, d1] = lo_
                fixed[d1, d0] = np.float32(1.0 / float(lo_))
                need = True
            k += 1
    if not need:
        return shape
    order = rng.permutation(ndim)
    max_extent = shape.max()
    shape = shape.copy()
    for i0 in range(ndim):
        for i1 in range(i0 + 1, ndim):
            d0, d1 = order[i0], order[i1]
            if fixed[d1, d0] > 0:
                shape[d1] = shape[d0] * fixed[d1, d0]
    new_max = shape.max()
    if new_max > 0:
        shape = (max_extent * shape / new_max).astype(np.float32)
    return shape


def _fix_aspects(ext: np.ndarray, ar: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``_fix_aspect`` for a (k, ndim) batch of extents (vectorised for 2-D windows)."""
    if ext.shape[1] != 2:
        return np.stack([_fix_aspect(e, ar, rng) for e in ext]) if len(ext) else ext
    lo_, hi_ = ar[0]
    if not (lo_ == hi_ and lo_ > 0):
        return ext
    first = rng.integers(0, 2, len(ext)) == 0  # the random order of the two dimensions
    max_extent = ext.max(axis=1)
    out = ext.copy()
    inv = np.float32(1.0 / float(lo_))
    out[first, 1] = ext[first, 0] * inv
    out[~first, 0] = ext[~first, 1] * lo_
    new_max = out.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(new_max[:, None] > 0, max_extent[:, None] * out / new_max[:, None], out)
    return out.astype(np.float32)


def _valid_aspects(ext: np.ndarray, ar: np.ndarray) -> np.ndarray:
    """``_valid_aspect`` for a (k, ndim) batch of extents."""
    ok = np.ones(len(ext), bool)
    k = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(ext.shape[1]):
            for j in range(i + 1, ext.shape[1]):
                lo_, hi_ = ar[k % len(ar)]
                r = ext[:, i] / ext[:, j]
                ok &= (lo_ <= r) & (r <= hi_)
                k += 1
    return ok


def _valid_aspect(shape: np.ndarray, ar: np.ndarray) -> bool:
    ndim = shape.size
    k = 0
    for i in range(ndim):
        for j in range(i + 1, ndim):
            lo_, hi_ = ar[k % len(ar)]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = shape[i] / shape[j]
            if not (lo_ <= r <= hi_):
                return False
            k += 1
    return True


def _boxes_kind(args: dict[str, Any]) -> Any:
    """The output boxes' kind: relative boxes in the input's layout (generic for a permuted
    layout that is neither ltrb nor xywh)."""
    layout = args.get("bbox_layout") or ("xyXY" if args.get("ltrb", True) else "xyWH")
    fmt = {"xyXY": "ltrb", "xyWH": "xywh"}.get(layout)
    return kinds.boxes(fmt, relative=True) if fmt else kinds.GENERIC


def _box_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec | None]:
    specs: list[OutputSpec | None] = [
        OutputSpec(ndim=1, layout=""),
        OutputSpec(ndim=1, layout=""),
        OutputSpec(kind=_boxes_kind(args), ndim=2),
    ]
    if len(inputs) > 1:
        specs.append(OutputSpec(kind=kinds.LABELS))
    if args.get("output_bbox_indices"):
        specs.append(OutputSpec(ndim=1, layout=""))
    return specs


register(
    OperatorSchema(
        name="random_bbox_crop",
        class_name="RandomBBoxCrop",
        impl=RandomBBoxCropImpl,
        doc=(
            "Applies a prospective random crop to a box coordinate space: gives the crop "
            "window (anchor, shape; for fn.slice) and the boxes (and labels, indices) that "
            "survive it, mapped to the window."
        ),
        min_inputs=1,
        max_inputs=2,
        num_outputs=_num_outputs,
        accepts=[
            InputSpec("boxes (n, 4) or (n, 6)", kinds=("boxes",), ndims=(2,)),
            InputSpec("labels of the boxes", kinds=("labels",)),
        ],
        output_kinds=_box_kinds,
        args=[
            Arg("all_boxes_above_threshold", "every box must pass the threshold", True, to_bool),
            Arg("allow_no_crop", "not cropping is one of the outcomes", True, to_bool),
            Arg("aspect_ratio", "range of the window's aspect ratio", (1.0, 1.0), to_floats()),
            Arg("bbox_layout", "the boxes' layout (xyXY, xyWH, ...)", "", _check_layout),
            Arg(
                "bbox_prune_threshold",
                "keep boxes with at least this fraction of area inside (unset: by centre)",
                None,
                to_float(0.0, 1.0),
            ),
            Arg("crop_shape", "fixed window shape (with input_shape)", None, to_ints(), True),
            Arg("input_shape", "the input's shape", None, to_ints(), True),
            Arg("ltrb", "deprecated: boxes are ltrb (else ltwh)", True, to_bool),
            Arg("num_attempts", "attempts per threshold pick", 1, to_int(1)),
            Arg("output_bbox_indices", "give the kept boxes' indices", False, to_bool),
            Arg("quiet", "no warning when no valid window is found", False, to_bool),
            Arg("scaling", "range of the window's extent", (1.0, 1.0), to_floats()),
            Arg("shape_layout", "layout of crop_shape/input_shape", "", _check_shape_layout),
            Arg("threshold_type", "'iou' or 'overlap'", "iou", one_of("iou", "overlap")),
            Arg("thresholds", "minimum overlap values to pick from", (0.0,), to_floats()),
            Arg("total_num_attempts", "total attempts (-1: unlimited)", -1, to_int(-1)),
        ],
        validate=_validate,
    )
)


# --- fn.roi_random_crop -------------------------------------------------------------------------


def _vector(a: dict[str, Any], key: str, ndim: int) -> np.ndarray:
    value = np.asarray(a[key], np.int64).reshape(-1)
    if value.size != ndim:
        raise ValueError(
            f"{key} must have {ndim} values (as crop_shape), got {value.size}: {value.tolist()}"
        )
    return value


def _validate_roi(args: dict[str, Any]) -> None:
    # Called with the arguments given so far (construction, then call): only a conflict can
    # be told here; a missing ROI end is the kernel's error.
    if args.get("roi_end") is not None and args.get("roi_shape") is not None:
        raise ValueError("roi_end and roi_shape cannot both be given (give one)")


class ROIRandomCropImpl(SampleOperator):
    random = True

    def setup(self) -> None:
        if self.num_inputs and self.args.get("in_shape") is not None:
            raise ArgumentError(
                f"{self.schema.class_name}: argument 'in_shape' is incompatible with giving an "
                "input (the input's shape is the input shape)"
            )

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int64

    def cpu(self, *samples: Any, **a: Any) -> np.ndarray:
        rng: np.random.Generator = a["rng"]
        crop = np.asarray(a["crop_shape"], np.int64).reshape(-1)
        ndim = crop.size
        start = _vector(a, "roi_start", ndim)
        if a["roi_end"] is not None:
            extent = _vector(a, "roi_end", ndim) - start
        elif a["roi_shape"] is None:
            raise ValueError("either roi_end or roi_shape must be given")
        else:
            extent = _vector(a, "roi_shape", ndim)
        shape = None
        if samples:
            if samples[0].ndim < ndim:
                raise ValueError(
                    f"the input has {samples[0].ndim} dimensions, fewer than crop_shape's {ndim}"
                )
            shape = np.asarray(samples[0].shape[:ndim], np.int64)
        elif a["in_shape"] is not None:
            shape = _vector(a, "in_shape", ndim)
        if shape is not None:
            if np.any(shape < 0) or np.any(crop < 0) or np.any(crop > shape):
                raise ValueError(
                    f"crop_shape {crop.tolist()} must be >= 0 and fit in the input shape "
                    f"{shape.tolist()}"
                )
            if np.any(start < 0) or np.any(start + extent > shape):
                raise ValueError(
                    f"the ROI [{start.tolist()}, {(start + extent).tolist()}) is out of the "
                    f"input shape {shape.tolist()}"
                )
        out = np.empty(ndim, np.int64)
        for d in range(ndim):
            if extent[d] == crop[d]:
                out[d] = start[d]
                continue
            lo, hi = sorted((int(start[d]), int(start[d] + extent[d] - crop[d])))
            if shape is not None:
                lo, hi = max(0, lo), min(int(shape[d] - crop[d]), hi)
            out[d] = rng.integers(lo, hi + 1) if hi >= lo else lo
        return out


register(
    OperatorSchema(
        name="roi_random_crop",
        class_name="ROIRandomCrop",
        impl=ROIRandomCropImpl,
        doc=(
            "Gives the start of a crop window of a fixed shape, placed at random so that as "
            "much of the region of interest (ROI) as possible is inside it (a window smaller "
            "than the ROI lies inside the ROI), and inside the input shape when it is known "
            "(``in_shape``, or the shape of the input given). int64, one value per dimension."
        ),
        min_inputs=0,
        max_inputs=1,
        output_kinds=fixed_kinds(OutputSpec(ndim=1, layout="")),
        args=[
            Arg("crop_shape", "the window's shape", REQUIRED, to_ints(), True),
            Arg("roi_start", "the ROI's start", REQUIRED, to_ints(), True),
            Arg("roi_end", "the ROI's end (or roi_shape)", None, to_ints(), True),
            Arg("roi_shape", "the ROI's shape (or roi_end)", None, to_ints(), True),
            Arg("in_shape", "the input's shape (without an input)", None, to_ints(), True),
        ],
        validate=_validate_roi,
    )
)


# --- fn.random_crop_generator -------------------------------------------------------------------


class RandomCropGeneratorImpl(SampleOperator):
    random = True

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int32

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim != 1 or sample.shape[0] not in (2, 3):
            raise ValueError(
                "expected a 1-D shape of 2 or 3 values (HW or HWC), got an array of shape "
                f"{tuple(sample.shape)}"
            )
        if not np.issubdtype(sample.dtype, np.integer) or sample.dtype == np.uint64:
            raise ValueError(f"the shape must be integers (not uint64), got {sample.dtype}")

    def cpu(self, shape: np.ndarray, **a: Any) -> tuple[np.ndarray, np.ndarray]:
        h, w = (int(v) for v in shape[:2].astype(np.int32))
        y, x, ch, cw = random_crop_window(
            h,
            w,
            a["rng"],
            aspect_ratio=a["random_aspect_ratio"],
            area=a["random_area"],
            num_attempts=a["num_attempts"],
        )
        return np.array([y, x], np.int32), np.array([ch, cw], np.int32)


register(
    OperatorSchema(
        name="random_crop_generator",
        class_name="RandomCropGenerator",
        impl=RandomCropGeneratorImpl,
        doc=(
            "Gives a crop window with a random area and aspect ratio (DALI's random resized "
            "crop window) for a 1-D input shape (HW or HWC): two int32 outputs, the anchor "
            "(y, x) and the shape (h, w), for fn.slice(..., axes=[0, 1])."
        ),
        num_outputs=2,
        output_kinds=fixed_kinds(OutputSpec(ndim=1, layout=""), OutputSpec(ndim=1, layout="")),
        args=[
            Arg(
                "random_area",
                "range of the window's area as a fraction of the input's",
                (0.08, 1.0),
                to_range,
            ),
            Arg(
                "random_aspect_ratio",
                "range of the window's aspect ratio (width / height), drawn log-uniformly",
                (0.75, 1.333333),
                to_ratio_range,
            ),
            Arg("num_attempts", "tries at a window that fits before the fall-back", 10, to_int(1)),
        ],
    )
)
