"""``fn.grid_mask``: the GridMask augmentation (https://arxiv.org/abs/2001.04086), DALI 2.4's
geometry: a grid of black squares, ``tile`` pixels apart, ``ratio * tile`` pixels wide,
rotated by ``angle`` (radians) about the origin and shifted by ``(shift_x, shift_y)``.

Decisions and traps (DALI's ``kernels/mask/grid_mask_cpu.h``, checked against DALI 2.4):

- In float32, as DALI computes: ``ca = cos(angle) / tile``, ``sa = sin(angle) / tile``,
  ``sx = shift_x / tile``, ``sy = shift_y / tile``; for pixel ``(x, y)`` (its top-left corner,
  no half-pixel offset) ``fx = (-sx + y * -sa) + x * ca`` and ``fy = (-sy + y * ca) + x * sa``,
  in that order of operations; the pixel is **kept** where ``fx - floor(fx) >= ratio`` or
  ``fy - floor(fy) >= ratio``, else zeroed. So ``ratio <= 0`` keeps everything and
  ``ratio > 1`` blanks everything; the black squares sit at the grid's origin (top-left).
- Blanking multiplies by 0, as DALI does: a negative float becomes ``-0.0`` and NaN stays NaN.
- ``tile`` must be a positive integer (DALI: "Tile argument must be positive").
- Types: uint8, int16, int32 and float32 only, as in DALI.
- Layouts: DALI's kernel reads every input as HWC (on HW, CHW or FHWC input it gives garbage);
  augkit finds H and W from the layout (no layout: HW or HWC) and masks every channel,
  frame or slice alike, so HWC matches DALI and the other layouts do what they say.
- With ``angle == 0`` the mask is separable (one row test OR one column test): it is computed
  from two vectors instead of two full planes, with the same float32 values.

GPU (``device="gpu"``, issue 18): ``grid_keep`` takes the array module, so the mask is
computed on the device (``xp.arange``, ``xp.floor``, broadcasting), from the same float32
scalars worked out on the host (``ca``, ``sa``, ``sx``, ``sy``: NumPy float32 scalars as ufunc
operands), one float32 operation per call as on the CPU, so the same pixels are kept; the
sample is multiplied by it (``xp.multiply``: the CPU's generic path; for integers, multiplying
by 0 or 1 equals the CPU's masked copy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.layouts import ANY_IMAGE, ImageOperator, check_type
from augkit.operators.registry import Arg, OperatorSchema, keeps_kind, register, to_float, to_int

_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int16, np.int32, np.float32))


def grid_keep(
    height: int,
    width: int,
    tile: int,
    ratio: float,
    angle: float,
    shift_x: float,
    shift_y: float,
    xp: Any = np,
) -> Any:
    """The (height, width) bool mask of the pixels grid_mask keeps, in DALI's float32 maths,
    as an array of ``xp`` (NumPy, or CuPy on the GPU; the scalars are the host's).

    Example:
        >>> grid_keep(4, 4, tile=2, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0).astype(int)
        array([[0, 1, 0, 1],
               [1, 1, 1, 1],
               [0, 1, 0, 1],
               [1, 1, 1, 1]])
    """
    f32 = np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        t = f32(tile)
        angle32 = f32(angle)
        # cos/sin of the float32 angle, rounded to float32 (an infinite angle gives NaN).
        ca = f32(np.cos(np.float64(angle32))) / t
        sa = f32(np.sin(np.float64(angle32))) / t
        sx = f32(shift_x) / t
        sy = f32(shift_y) / t
        r = f32(ratio)
        ys = xp.arange(height, dtype=f32)
        xs = xp.arange(width, dtype=f32)
        fxy = -sx + ys * -sa  # (H,)
        fyy = -sy + ys * ca
        xca = xs * ca  # (W,)
        xsa = xs * sa
        if sa == 0:
            # Separable: fx does not depend on y (every fxy is -sx), fy not on x (x * 0).
            fx = fxy[:1] + xca
            fy = fyy + xsa[:1]
            keep_x = (fx - xp.floor(fx)) >= r  # (W,)
            keep_y = (fy - xp.floor(fy)) >= r  # (H,)
            return keep_y[:, None] | keep_x[None, :]
        fx = fxy[:, None] + xca[None, :]
        fy = fyy[:, None] + xsa[None, :]
        return ((fx - xp.floor(fx)) >= r) | ((fy - xp.floor(fy)) >= r)


class GridMask(ImageOperator):
    """Multiplies each sample by DALI's grid mask (broadcast over the non-H/W axes)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_type("grid_mask takes images", sample.dtype, _TYPES)

    def cpu(self, sample: Any, **args: Any) -> Any:
        return self._mask(sample, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The mask computed and applied on ``sample``'s device (module docstring)."""
        return self._mask(sample, backend.array_module(sample), **args)

    def _mask(
        self,
        sample: Any,
        xp: Any,
        *,
        layout: str,
        tile: int,
        ratio: float,
        angle: float,
        shift_x: float,
        shift_y: float,
        **_: Any,
    ) -> Any:
        h_axis, w_axis = layout.index("H"), layout.index("W")
        keep = grid_keep(
            sample.shape[h_axis], sample.shape[w_axis], tile, ratio, angle, shift_x, shift_y, xp
        )
        if h_axis > w_axis:
            keep = keep.T
        if xp is np and sample.dtype.kind != "f" and (h_axis, w_axis) == (0, 1) and sample.size:
            # Integers, HW/HWC: zeroing is multiplying by 0; cv2.copyTo is a fast masked copy.
            channels = sample.shape[2] if sample.ndim == 3 else 1
            if sample.ndim <= 3 and channels <= 64:
                out = np.zeros_like(sample)
                self.cv2.copyTo(sample, keep.view(np.uint8), out)
                return out
        shape = [1] * sample.ndim
        shape[h_axis], shape[w_axis] = sample.shape[h_axis], sample.shape[w_axis]
        mask = keep.astype(sample.dtype).reshape(shape)
        return xp.multiply(sample, mask)  # floats: -0.0 and NaN as DALI's multiply


register(
    OperatorSchema(
        name="grid_mask",
        class_name="GridMask",
        devices=("cpu", "gpu"),
        impl=GridMask,
        accepts=[ANY_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "GridMask (https://arxiv.org/abs/2001.04086): zeroes pixels in a grid of squares "
            "repeating every ``tile`` pixels in x and y, ``ratio * tile`` pixels wide, the grid "
            "rotated by ``angle`` radians about the top-left corner and then shifted by "
            "(``shift_x``, ``shift_y``). DALI's float32 geometry: a pixel (x, y) is kept where "
            "``frac(fx) >= ratio`` or ``frac(fy) >= ratio``, with ``fx = (x cos a - y sin a - "
            "shift_x) / tile`` and ``fy = (x sin a + y cos a - shift_y) / tile``. Every "
            "argument may be per sample. Takes uint8, int16, int32 and float32 images (HWC as "
            "in DALI; HW, CHW and other layouts with H and W are masked along H and W); "
            "shape, layout and type are kept."
        ),
        args=[
            Arg(
                "tile",
                "grid period in pixels (square width plus the gap)",
                100,
                to_int(1, 2**31 - 1),
                per_sample=True,
            ),
            Arg(
                "ratio",
                "width of the black squares as a fraction of the tile",
                0.5,
                to_float(),
                per_sample=True,
            ),
            Arg("angle", "rotation of the grid, in radians", 0.0, to_float(), per_sample=True),
            Arg("shift_x", "x translation, applied after rotation", 0.0, to_float(), True),
            Arg("shift_y", "y translation, applied after rotation", 0.0, to_float(), True),
        ],
    )
)
