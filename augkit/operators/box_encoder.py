"""``fn.box_encoder``: DALI's SSD box encoder: matches each sample's boxes (relative ltrb) to a
fixed set of anchors (default boxes) by IoU and gives, per anchor, the matched box and label.

Decisions and traps (DALI 2.4's ``box_encoder.cc``, checked against DALI's outputs):

- The output boxes are **centre form** ``[cx, cy, w, h]`` (one row per anchor, float32), not
  ltrb as DALI's docstring says; the labels are int32, one per anchor (``(M,)``, whatever the
  labels' shape: (n,) or (n, 1)).
- Matching: the IoU of every box with every anchor (float32, as DALI: ``inter / (area_box +
  area_anchor - inter)``, 0 where the boxes do not overlap). Each box's best anchor (the
  *last* one on ties) gets IoU 2, so that every box is matched; then each anchor takes its best
  box (the last one on ties) when that IoU is **strictly** above ``criteria``.
- Unmatched anchors: without ``offset`` the anchor itself (centre form) with label 0; with
  ``offset``, zeros and label 0. A sample without boxes gives only unmatched anchors.
- ``offset``: ``((c_box - c_anchor) / wh_anchor - means[0:2]) / stds[0:2]`` for the centre and
  ``(log(wh_box / wh_anchor) - means[2:4]) / stds[2:4]`` for the size, all values first
  multiplied by ``scale`` (float32; the log is taken in float64 and rounded to float32, which
  is what glibc's correctly rounded ``logf`` gives: NumPy's float32 log can be an ulp off).
- Labels: any integer type is accepted (DALI takes int32 only) and the output is int32; at
  least as many labels as boxes (DALI reads past a shorter list).
- Boxes are not checked against [0, 1] (DALI does not check them either).
- Argument checks as DALI's: ``anchors`` a non-empty multiple of 4 values, ``criteria`` in
  [0, 1], ``means``/``stds`` 4 values each, no zero ``stds``.
- Speed: the (n, M) IoU matrix in vectorised NumPy, the anchors prepared once in ``setup``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import SampleOperator
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
    to_float,
    to_floats,
)

_F = np.float32


def _validate(args: dict[str, Any]) -> None:
    anchors = args.get("anchors")
    if anchors is not None and (len(anchors) == 0 or len(anchors) % 4):
        raise ValueError(
            f"anchors must be a non-empty list of ltrb boxes (a multiple of 4 values), got "
            f"{len(anchors)} values"
        )
    for key in ("means", "stds"):
        value = args.get(key)
        if value is not None and len(value) != 4:
            raise ValueError(f"{key} must have 4 values [x, y, w, h], got {len(value)}")
    stds = args.get("stds")
    if stds is not None and any(s == 0 for s in stds):
        raise ValueError(f"stds must not be 0, got {list(stds)}")


def _centre(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (lo + hi) * _F(0.5), hi - lo


def _volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    ext = hi - lo
    return ext[..., 0] * ext[..., 1]


class BoxEncoderImpl(SampleOperator):
    def setup(self) -> None:
        _validate(self.args)
        anchors = np.asarray(self.args["anchors"], _F).reshape(-1, 4)
        self.a_lo, self.a_hi = anchors[:, :2], anchors[:, 2:]
        self.a_area = _volume(self.a_lo, self.a_hi)
        self.a_cols = tuple(np.ascontiguousarray(anchors[:, k]) for k in range(4))
        self.a_c, self.a_wh = _centre(self.a_lo, self.a_hi)
        scale = _F(self.args["scale"])
        self.a_c_s, self.a_wh_s = self.a_c * scale, self.a_wh * scale
        self.means = np.asarray(self.args["means"], _F)
        self.stds = np.asarray(self.args["stds"], _F)
        self.unmatched = (
            np.zeros((len(anchors), 4), _F)
            if self.args["offset"]
            else np.concatenate([self.a_c, self.a_wh], axis=1)
        )

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return _F if index == 0 else np.int32

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            if sample.ndim != 2 or sample.shape[1] != 4:
                raise ValueError(f"boxes must be (n, 4) ltrb, got shape {tuple(sample.shape)}")
            if sample.dtype != np.float32:
                raise ValueError(f"boxes must be float32, got {sample.dtype}")
        elif not np.issubdtype(sample.dtype, np.integer) or sample.ndim not in (1, 2):
            raise ValueError(
                f"labels must be 1-D or (n, 1) integers, got {sample.dtype} of shape "
                f"{tuple(sample.shape)}"
            )

    def _ious(self, boxes: np.ndarray) -> np.ndarray:
        """(n, M) float32 IoUs of the boxes with the anchors, in DALI's order of operations
        (the x and y extents as separate (n, M) planes: contiguous, no 3-D temporaries)."""
        ax0, ay0, ax1, ay1 = self.a_cols
        bx0, by0, bx1, by1 = (boxes[:, k : k + 1] for k in range(4))
        iw = np.minimum(bx1, ax1)
        iw -= np.maximum(bx0, ax0)
        np.maximum(iw, 0, out=iw)
        ih = np.minimum(by1, ay1)
        ih -= np.maximum(by0, ay0)
        np.maximum(ih, 0, out=ih)
        inter = iw
        inter *= ih
        union = ((bx1 - bx0) * (by1 - by0)) + self.a_area
        union -= inter
        # inter > 0 gives union > 0; inter == 0 gives 0 unless union == 0 (two empty boxes)
        union[union == 0] = 1
        return np.divide(inter, union, out=inter)

    def cpu(self, boxes: np.ndarray, labels: np.ndarray, **args: Any) -> tuple:
        n = boxes.shape[0]
        flat = labels.reshape(-1)
        if flat.size < n:
            raise ValueError(f"{n} boxes but only {flat.size} labels")
        out_boxes = self.unmatched.copy()
        out_labels = np.zeros(len(self.a_area), np.int32)
        if n == 0:
            return out_boxes, out_labels
        ious = self._ious(boxes)
        m = ious.shape[1]
        best_anchor = m - 1 - np.argmax(ious[:, ::-1], axis=1)  # the last best, as DALI
        ious[np.arange(n), best_anchor] = 2.0
        # each anchor's best box, the last on ties (a max over the short axis, then the last
        # index reaching it: faster than an argmax along axis 0)
        best_iou = ious.max(axis=0)
        best_box = np.where(ious == best_iou, np.arange(n)[:, None], -1).max(axis=0)
        matched = np.flatnonzero(best_iou > _F(args["criteria"]))
        which = best_box[matched]
        c, wh = _centre(boxes[which, :2], boxes[which, 2:])
        if args["offset"]:
            scale = _F(args["scale"])
            c, wh = c * scale, wh * scale
            a_c, a_wh = self.a_c_s[matched], self.a_wh_s[matched]
            with np.errstate(divide="ignore", invalid="ignore"):
                c = ((c - a_c) / a_wh - self.means[:2]) / self.stds[:2]
                ratio = (wh / a_wh).astype(np.float64)
                wh = (np.log(ratio).astype(_F) - self.means[2:]) / self.stds[2:]
        out_boxes[matched, :2] = c
        out_boxes[matched, 2:] = wh
        out_labels[matched] = flat[which]
        return out_boxes, out_labels


register(
    OperatorSchema(
        name="box_encoder",
        class_name="BoxEncoder",
        impl=BoxEncoderImpl,
        doc=(
            "Encodes boxes (relative ltrb) and their labels against a fixed set of anchors, as "
            "SSD does (DALI's fn.box_encoder): per anchor, the best-matching box by IoU (above "
            "``criteria``) in centre form [cx, cy, w, h] (or, with ``offset``, its normalised "
            "offsets from the anchor) and its label; unmatched anchors get label 0."
        ),
        min_inputs=2,
        max_inputs=2,
        num_outputs=2,
        accepts=[
            InputSpec("boxes (n, 4), relative ltrb", kinds=("boxes",), ndims=(2,)),
            InputSpec("the boxes' labels", kinds=("labels",)),
        ],
        output_kinds=fixed_kinds(
            OutputSpec(ndim=2, layout=""), OutputSpec(kind=kinds.LABELS, ndim=1, layout="")
        ),
        validate=_validate,
        args=[
            Arg("anchors", "the anchors, ltrb, flattened (4 values each)", REQUIRED, to_floats()),
            Arg("criteria", "IoU above which a box matches an anchor", 0.5, to_float(0.0, 1.0)),
            Arg("means", "[x y w h] means of the offsets", (0.0, 0.0, 0.0, 0.0), to_floats()),
            Arg("offset", "give normalised offsets from the anchors", False, to_bool),
            Arg("scale", "scale of boxes and anchors before the offsets", 1.0, to_float()),
            Arg(
                "stds",
                "[x y w h] standard deviations of the offsets",
                (1.0, 1.0, 1.0, 1.0),
                to_floats(),
            ),
        ],
    )
)
