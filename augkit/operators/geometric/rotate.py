"""``fn.rotate`` / ``ops.Rotate``: DALI's rotation of HWC images, on the CPU and the GPU.

The kernel builds DALI's destination-to-source matrix and hands it to ``warp.affine``: for
linear uint8 -> uint8 (the common case) ``cv2.warpAffine`` itself, Albumentations' kernel;
otherwise DALI's float32 source points (its running sums along each row) sampled by OpenCV's
``remap`` (float32 bilinear, or DALI's ``floor`` for nearest); the NumPy sampler
``warp.warp_affine`` (DALI's formulas) beyond OpenCV's size limits.

Speed and parity (320x320 uint8 RGB, one thread; ``python -m benchmarks --only operators`` and
DALI 2.4 timed in the same process, interleaved): linear uint8 about 5x DALI's speed (3.3x with
``keep_size``), 0.9x Albumentations'; within 1 level of DALI at ~0.5 % of the values of a
rotated photo (15 % at exactly 90 degrees; 2 levels at a few edge pixels of a large image
blending into a far-off fill), because OpenCV computes its own (exact) source points where
DALI's running float32 sums drift, and rounds exact ties half to even (warp.py's docstring).
Other types and ``dtype=``: DALI's points, equal to DALI but for the float32 interpolation
order. Nearest: equal to DALI, about 0.9x its speed (the running sums are sequential along x,
and stepping them column by column in NumPy costs more than DALI's fused C++ loop; the direct
formula ``t + a*x + b*y`` would be faster but picks another pixel at up to 5 % of the points
of a matrix of round decimals). The parity cases: tests/dali_parity/cases_geometry_warp.py.

The GPU kernel (``device="gpu"``) is ``warp.warp_affine`` on the CuPy image: the same matrix and
size, DALI's CPU source points made on the host, DALI's sampling formulas on the device
(warp.py's docstring). Nearest equals the CPU kernel; linear uint8 within 1 level of it (the
CPU's OpenCV fixed point), float outputs within 5e-5.

Decisions and traps for the next engineer (checked against DALI's ``rotate_params.h``,
``warp_param_provider.h``, ``core/geom/transform.h`` and ``kernels/imgproc/sampler.h``):

- Direction: a positive angle turns the picture counter-clockwise *as seen on screen* (y down).
  DALI negates the angle for 2-D and then uses ``rotation2D(-a)``; the net
  destination-to-source matrix is ``T(in/2) · [[cos, -sin], [sin, cos]] · T(-out/2)``, applied
  to ``(x + 0.5, y + 0.5)``. Rotating by 90 gives ``np.rot90(image)`` (tested).
- The centre is the geometric centre ``(W/2, H/2)`` of the continuous image, not the centre of
  a pixel, so odd and even sizes both rotate about the middle.
- Output size (``rotated_canvas_size``): ``ceil(|cos|W + |sin|H - 0.01)`` and its mirror, then
  +1 where the parity differs from the input's (the parities swap when ``|sin| > |cos|``), so
  that pixel centres stay aligned and small rotations do not blur. The angle in radians is taken
  as a float32 (DALI converts a float angle; its ``deg2rad`` was not found in the sources read),
  so at exactly 45 degrees ``|sin| > |cos|`` and the parities swap: only non-square images with
  sides of different parity depend on this, and no test relies on it.
- ``size`` wins over ``keep_size``; it is rounded half away from zero, at least 1.
- ``fill_value=None`` clamps to the border (the edge pixel repeats outward); a number is
  converted to the input type (ConvertSat) and every tap outside the image reads it, so the
  image edge blends into the fill over one pixel. Pillow's ``rotate(fillcolor=...)`` does not
  blend (and truncates uint8 results), so it is a reference only on an image padded with the
  fill colour (see tests/operators/test_rotate.py).
- Only INTERP_NN and INTERP_LINEAR exist for warps in DALI; others raise, as in DALI.

Targets (``fn.rotate([images, masks, boxes, labels], angle=...)``, targets.py): ``geometry`` is
the inverse of the kernel's own matrix and output size (``output_size``, ``rotation_matrix``),
so images and targets cannot disagree. Masks are rotated by the nearest neighbour from the
exact points (the nearest image kernel rounds DALI's float32 running sums: on random
320x320 label maps the two differ at ~0.01 % of the pixels, float32 ties), class 0 outside
whatever ``fill_value`` is, dtype kept (``dtype`` applies to images only); H×W, int32 and bool
masks are taken (targets.py's rules check targets, never the image kernel's checks).
A rotated box becomes the axis-aligned box of its rotated corners, clipped to the canvas
(dropped with its label when nothing is left): with ``keep_size`` or a small ``size`` a box cut
by the edge stays larger than what is visible of its object (the documented rule).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.geometric import warp
from augkit.operators.geometric.targets import Geometry, MovesTargets, image_size, movable
from augkit.operators.geometric.warp_affine import sampling, to_size
from augkit.operators.layouts import HWC_IMAGE, check_image
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_dtype,
    to_float,
)

_TYPES = warp.WARP_TYPES


def _radians(angle: float) -> np.float32:
    return np.float32(angle) * np.float32(math.pi / 180)


def rotated_canvas_size(in_size: tuple[int, int], angle: float) -> tuple[int, int]:
    """DALI's output (H, W) for rotating an (H, W) image by ``angle`` degrees with
    ``keep_size=False`` and no ``size`` (``RotatedCanvasSize`` plus the parity fix).

    Example:
        >>> rotated_canvas_size((480, 640), 30)
        (736, 796)
    """
    h, w = in_size
    theta = float(_radians(angle))
    abs_cos, abs_sin = abs(math.cos(theta)), abs(math.sin(theta))
    w_out = math.ceil(abs_cos * w + abs_sin * h - 1e-2)
    h_out = math.ceil(abs_cos * h + abs_sin * w - 1e-2)
    parity_w, parity_h = (w % 2, h % 2) if abs_sin <= abs_cos else (h % 2, w % 2)
    w_out += w_out % 2 != parity_w
    h_out += h_out % 2 != parity_h
    return h_out, w_out


def rotation_matrix(
    in_size: tuple[int, int], out_size: tuple[int, int], angle: float
) -> np.ndarray:
    """The 2x3 destination-to-source matrix (x, y order) of DALI's rotate, in float32:
    ``T(in/2) · R(angle) · T(-out/2)``."""
    theta = _radians(angle)
    c, s = np.cos(theta), np.sin(theta)
    half = np.float32(0.5)
    in_x, in_y = np.float32(in_size[1]) * half, np.float32(in_size[0]) * half
    out_x, out_y = -np.float32(out_size[1]) * half, -np.float32(out_size[0]) * half
    # (T_in · R) · T_out, summed in DALI's order (k = 0, 1, 2), in float32.
    tx = c * out_x + (-s) * out_y + in_x
    ty = s * out_x + c * out_y + in_y
    return np.array([[c, -s, tx], [s, c, ty]], dtype=np.float32)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


@described("a number of degrees (within float32's range)", -_FLOAT32_MAX, _FLOAT32_MAX)
def _angle(value: Any) -> float:
    # DALI takes the angle as a float32: beyond its range it is inf, and the image NaN.
    return to_float(-_FLOAT32_MAX, _FLOAT32_MAX)(value)


def _round_size(value: float) -> int:
    return max(1, math.floor(value + 0.5))


@described("None (augkit rotates 2-D images only)")
def _no_axis(value: Any) -> Any:
    raise ValueError("augkit's rotate handles 2-D images (HWC); 'axis' is for volumes")


def output_size(
    in_size: tuple[int, int], angle: float, keep_size: bool, size: tuple[float, float] | None
) -> tuple[int, int]:
    """The output (H, W) of rotating an (H, W) image: ``size`` rounded, else the input's with
    ``keep_size``, else ``rotated_canvas_size``."""
    if size is not None:
        out_size = (_round_size(size[0]), _round_size(size[1]))
    elif keep_size:
        out_size = (int(in_size[0]), int(in_size[1]))
    else:
        out_size = rotated_canvas_size(in_size, angle)
    if max(out_size) > 2**31 - 1 or out_size[0] * out_size[1] > 2**40:
        raise ValueError(f"the output size {out_size[0]}x{out_size[1]} is too large")
    return out_size


class RotateImpl(MovesTargets):
    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_image("rotate", sample, layout, ("HWC",), _TYPES)

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        width, height = image_size(shape, layout)
        out_h, out_w = output_size((height, width), args["angle"], args["keep_size"], args["size"])
        matrix = rotation_matrix((height, width), (out_h, out_w), args["angle"])
        return Geometry.inverse_of(matrix, (width, height), (out_w, out_h))

    def cpu(self, image: np.ndarray, **args: Any) -> np.ndarray:
        matrix, out_size, interp, out_dtype = _warp_plan(image, **args)
        return warp.affine(
            image,
            matrix,
            out_size,
            interp=interp,
            fill=args["fill_value"],
            dtype=out_dtype,
            cv2=self.cv2,
        )

    def gpu(self, image: Any, **args: Any) -> Any:
        """The GPU kernel: DALI's formulas (``warp.warp_affine``) on the device of ``image``."""
        matrix, out_size, interp, out_dtype = _warp_plan(image, **args)
        return warp.warp_affine(
            image, matrix, out_size, interp=interp, fill=args["fill_value"], dtype=out_dtype
        )


def _warp_plan(
    image: Any,
    *,
    angle: float,
    keep_size: bool,
    size: tuple[float, float] | None,
    interp_type: types.DALIInterpType,
    dtype: types.DALIDataType | None,
    **_: Any,
) -> tuple[np.ndarray, tuple[int, int], str, np.dtype]:
    """What both kernels warp with: the matrix, the output (H, W), the sampling and the type."""
    interp, out_dtype = sampling(image, dtype, interp_type)
    in_size = image.shape[:2]
    out_size = output_size(in_size, angle, keep_size, size)
    return rotation_matrix(in_size, out_size, angle), out_size, interp, out_dtype


register(
    OperatorSchema(
        name="rotate",
        class_name="Rotate",
        impl=RotateImpl,
        devices=("cpu", "gpu"),
        accepts=[movable(HWC_IMAGE)],
        output_kinds=keeps_kind,
        doc="""Rotate images (layout HWC) by ``angle`` degrees, counter-clockwise as seen on
screen, about the image centre, as DALI's ``fn.rotate``.

By default the canvas grows to hold the whole rotated image (DALI's size rule, which keeps the
parity of the sides); ``keep_size=True`` keeps the input size and ``size`` sets it. Outside the
input the border pixel repeats, or ``fill_value`` fills. Sampling is bilinear (or nearest) at
pixel centres with DALI's rounding, following the formulas of DALI's CPU kernel. Volumes
(``axis``) and sequences are not supported.

Moves masks, boxes, keypoints, vertices and labels with the images when given with them as
input sets (``fn.rotate([images, masks, boxes, labels], angle=...)``): one angle per sample
for all of them; a rotated box becomes the axis-aligned box around it.

Example, in a pipeline definition::

    images = fn.rotate(images, angle=fn.random.uniform(range=(-30, 30)), fill_value=0)
""",
        args=[
            Arg("angle", "degrees, counter-clockwise on screen", REQUIRED, _angle, True),
            Arg("axis", "volumes only: not supported by augkit", None, _no_axis),
            Arg(
                "fill_value",
                "value outside the input (None: repeat the border pixel)",
                None,
                to_float(),
            ),
            Arg(
                "keep_size",
                "keep the input size instead of fitting the rotated image",
                False,
                to_bool,
            ),
            Arg(
                "size",
                "output (H, W), rounded to integers (overrides keep_size)",
                None,
                to_size,
                True,
            ),
            Arg(
                "interp_type",
                "types.INTERP_LINEAR or types.INTERP_NN",
                types.INTERP_LINEAR,
                warp.to_warp_interp,
                True,
            ),
            Arg("dtype", "output type (None: the input type)", None, to_dtype),
        ],
    )
)
