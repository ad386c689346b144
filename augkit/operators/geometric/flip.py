"""``fn.flip``: mirror images along W (``horizontal``, on by default), H (``vertical``) and D
(``depthwise``).

Decisions and traps:

- ``horizontal`` defaults to 1, as in DALI: ``fn.flip(x)`` mirrors left-right.
- Each flag is an int (nonzero: flip) or a per-sample value, usually
  ``horizontal=fn.random.coin_flip()``; a bool per-sample value is accepted too.
- The axes are found from the layout (HWC, CHW, DHWC, FHWC, ...; no layout: HW or HWC), so a
  CHW image flips along its last axis and an HWC image along its middle one.
- ``depthwise`` on a layout without D does nothing: DALI treats such an input as depth 1.
- ``np.flip`` returns a view with negative strides; the kernel returns a contiguous copy, so the
  graph never holds views into another operator's output on the GPU either.
- Speed: NumPy copies a negative-stride view element by element (about 1 ms for a 320x320
  RGB image); the CPU kernel uses ``cv2.flip`` instead (the same bytes, ~10x faster) wherever
  the flipped axes are H and/or W, adjacent, with at most 512 values per pixel after them
  (HWC, CHW, HW, FHWC, DHWC without a depthwise flip...) and a type OpenCV has (not bool,
  int64, uint32, float16: those, and D flips, take ``np.flip``).
- A dense batch (one array: the benchmark's source, random values, a cast of them...) is
  flipped by the batch kernel: one ``cv2.flip`` call for the whole batch when every sample
  flips left-right only (the batch's rows join), otherwise sample by sample, with the same
  result as per sample; NumPy where cv2 does not apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import dense_batch, per_sample_column
from augkit.operators.geometric.targets import Geometry, MovesTargets, image_size, movable
from augkit.operators.layouts import ANY_IMAGE, ImageOperator
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_int,
)
from augkit.tensors import TensorList

_to_int = to_int()
# What cv2.flip takes (the fast path of the CPU kernel).
_CV2_TYPES = {
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64)
}


@described("0 or 1 (or True/False); nonzero flips")
def to_flag(value: Any) -> bool:
    """A flip flag: an int (nonzero: flip) or a bool."""
    try:
        return _to_int(value) != 0
    except TypeError:
        return to_bool(value)


class Flip(MovesTargets, ImageOperator):
    """Reverses the W, H and D axes of each sample that its flags select (and moves masks,
    boxes and keypoints the same way: ``targets.py``)."""

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        width, height = image_size(shape, layout)
        sx, tx = (-1.0, width) if args["horizontal"] else (1.0, 0.0)
        sy, ty = (-1.0, height) if args["vertical"] else (1.0, 0.0)
        return Geometry.scale_translate(sx, sy, tx, ty, (width, height), (width, height))

    def geometry_needs_size(self) -> bool:
        return False  # relative coordinates flip as 1 - x

    def cpu(
        self,
        sample: Any,
        *,
        layout: str,
        horizontal: int,
        vertical: int,
        depthwise: int,
        **_: Any,
    ) -> Any:
        axes = tuple(
            layout.index(axis)
            for axis, wanted in (("W", horizontal), ("H", vertical), ("D", depthwise))
            if wanted and axis in layout
        )
        if not axes:
            return sample
        xp = backend.array_module(sample)
        if xp is np:
            fast = self._cv2_flip(sample, layout, horizontal, vertical, axes)
            if fast is not None:
                return fast
        return xp.ascontiguousarray(xp.flip(sample, axis=axes))

    gpu = cpu  # CuPy arrays take the xp.flip path

    def setup(self) -> None:
        self.cv2 = backend.opencv() if self.device == "cpu" else None

    def _cv2_flip(
        self,
        sample: np.ndarray,
        layout: str,
        horizontal: int,
        vertical: int,
        axes: tuple,
        out: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """``cv2.flip`` where the flipped axes are W and/or H, adjacent (``...HW...``), with at
        most 512 values per pixel after them (OpenCV's channels): the same bytes as
        ``np.flip``, several times faster (NumPy copies a negative-stride view element by
        element). Into ``out`` (same shape and dtype, C-contiguous) when given. Returns
        ``None`` where it does not apply."""
        if self.cv2 is None or sample.dtype not in _CV2_TYPES or not sample.flags.c_contiguous:
            return None
        if "D" in layout and layout.index("D") in axes:
            return None
        h, w = layout.index("H"), layout.index("W")
        if w != h + 1 or 0 in sample.shape:
            return None
        shape = sample.shape
        outer = int(np.prod(shape[:h], dtype=np.int64))
        inner = int(np.prod(shape[w + 1 :], dtype=np.int64))
        height, width = shape[h], shape[w]
        if inner > 512 or max(outer * height, width) >= 2**31:
            return None
        code = -1 if horizontal and vertical else (1 if horizontal else 0)
        cv2 = self.cv2
        if out is None:
            out = np.empty_like(sample)
        if code == 1 or outer == 1:  # W only: the outer axes may join H
            planes = [
                (
                    sample.reshape(outer * height, width, inner),
                    out.reshape(outer * height, width, inner),
                )
            ]
        else:
            src, dst = (
                sample.reshape(outer, height, width, inner),
                out.reshape(outer, height, width, inner),
            )
            planes = [(src[k], dst[k]) for k in range(outer)]
        for src_plane, dst_plane in planes:
            if inner == 1:  # OpenCV gives 2-D arrays for one channel
                src_plane, dst_plane = src_plane[..., 0], dst_plane[..., 0]
            cv2.flip(src_plane, code, dst=dst_plane)
        return out

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """A dense batch (random values, a cast...): the samples that one set of flags
        selects are flipped together, in one NumPy call per set."""
        dense = dense_batch(inputs)
        if dense is None or not isinstance(dense, np.ndarray):
            return None
        n = len(dense)
        layout = self.batch_args(inputs)["layout"]
        wanted = []  # per flag: one bool per sample
        for key, axis in (("horizontal", "W"), ("vertical", "H"), ("depthwise", "D")):
            column = per_sample_column(self, arg_inputs, key, n)
            on = column.astype(bool) if column is not None else np.full(n, bool(self.args[key]))
            wanted.append(on if axis in layout else np.zeros(n, bool))
        if self.cv2 is not None:
            fast = self._cv2_batch(dense, layout, wanted)
            if fast is not None:
                return [self.dense_output(fast, inputs)]
        # The batch axis comes first: a sample's axis k is the batch's axis k + 1.
        batch_axes = [layout.index(a) + 1 if a in layout else -1 for a in "WHD"]
        choices = np.stack(wanted, axis=1)  # (n, 3)
        out = np.array(dense)
        for choice in np.unique(choices, axis=0):
            axes = tuple(axis for axis, on in zip(batch_axes, choice, strict=True) if on)
            if axes:
                rows = np.flatnonzero((choices == choice).all(axis=1))
                out[rows] = np.flip(dense[rows], axis=axes)
        return [self.dense_output(out, inputs)]

    def _cv2_batch(self, dense: np.ndarray, layout: str, wanted: list) -> np.ndarray | None:
        """The dense batch with ``cv2.flip``: in one call when every sample flips along W
        only (the batch's rows join), otherwise sample by sample; ``None`` where cv2 does not
        apply (then NumPy flips)."""
        horizontal, vertical, depthwise = wanted
        if depthwise.any() or len(dense) == 0:
            return None
        if horizontal.all() and not vertical.any() and "HW" in layout:
            # As one sample whose first axis is the batch (its H-side axes join).
            out = self._cv2_flip(dense, "N" + layout, 1, 0, (layout.index("W") + 1,))
            if out is not None:
                return out
        out = np.empty_like(dense)
        for i in range(len(dense)):
            h, v = bool(horizontal[i]), bool(vertical[i])
            if not (h or v):
                out[i] = dense[i]
                continue
            axes = tuple(layout.index(a) for a, on in (("W", h), ("H", v)) if on)
            if self._cv2_flip(dense[i], layout, h, v, axes, out=out[i]) is None:
                return None
        return out


register(
    OperatorSchema(
        name="flip",
        class_name="Flip",
        impl=Flip,
        accepts=[movable(ANY_IMAGE)],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Flips images: left-right when ``horizontal`` is nonzero (the default), top-bottom "
            "when ``vertical`` is, front-back when ``depthwise`` is (volumes with a D axis; a "
            "no-op otherwise, as in DALI). Each flag may be per sample, e.g. "
            "``horizontal=fn.random.coin_flip()``. The axes come from the layout (HWC, CHW, "
            "DHWC, FHWC, ...; an input without a layout is HW or HWC); layout, shape and dtype "
            "are kept."
        ),
        args=[
            Arg("horizontal", "nonzero: flip left-right (along W)", 1, to_flag, per_sample=True),
            Arg("vertical", "nonzero: flip top-bottom (along H)", 0, to_flag, per_sample=True),
            Arg("depthwise", "nonzero: flip along D (volumes)", 0, to_flag, per_sample=True),
        ],
    )
)
