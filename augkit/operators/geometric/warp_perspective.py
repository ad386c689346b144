"""``fn.experimental.warp_perspective`` / ``ops.experimental.WarpPerspective``: DALI's
perspective warp of HW/HWC images on the CPU.

DALI's CPU operator is OpenCV's ``cv::warpPerspective`` (``warp_perspective.cc``), so the
kernel is ``cv2.warpPerspective`` with DALI's arguments turned into OpenCV's the way DALI does:

- ``matrix`` (9 numbers, a 3x3 array, a per-sample 3x3 value, or a 3x3 float second input; not
  both, an error as in DALI) maps destination to source (``inverse_map=True``, OpenCV's
  ``WARP_INVERSE_MAP``); ``False``: source to destination, inverted by OpenCV.
- ``pixel_origin="corner"`` (the default) takes ``(0, 0)`` as the corner of the first pixel:
  the matrix becomes ``T(-0.5) @ M @ T(0.5)`` (in float32, as DALI) before OpenCV, which
  works with pixel centres; ``"center"`` passes it as it is.
- ``border_mode``: "constant" (the default; ``fill_value``: one number, or one per channel;
  default 0), "replicate", "reflect", "reflect_101", "wrap", as OpenCV's.
- ``interp_type``: INTERP_NN, INTERP_LINEAR (default) or INTERP_CUBIC; others are refused.
- Types: uint8, uint16, int16, float32 (DALI's list); at most 4 channels, channel last (HWC, or
  HW); the output has the input's type and layout; ``size`` (H, W) is rounded half away from
  zero, at least 1 (default: the input's size).
- Parity: equal to DALI 2.4 on every parity input (tests/dali_parity/cases_geometry_warp.py:
  linear, nearest, cubic, every border mode, both origins, uint8 and float), with augkit's
  OpenCV 5.0; another OpenCV version (DALI bundles its own) may round differently. Speed: the
  same OpenCV call, about 1.0x DALI's.
- Sequences (FHWC) and CHW are not supported (DALI's CPU operator refuses CHW too).
- No GPU kernel yet (DALI 2.4 has one: CV-CUDA's WarpPerspective, float coordinates and
  weights): warp.py's xp-generic sampler (rotate's and warp_affine's GPU kernel) would take the
  homography's points, but the CPU kernel is OpenCV's (coordinates quantized to 1/32 pixel,
  fixed-point bilinear weights, its cubic, the reflect/wrap borders), which that sampler does
  not compute, and the CPU's tolerance against DALI's CPU is 0: a GPU kernel needs the cubic
  and the borders first, and its own measured tolerance against the CPU.

Targets (``fn.experimental.warp_perspective([images, masks, boxes, labels], matrix=...)``;
targets.py): ``geometry`` holds the 3x3 homography: OpenCV's matrix (``opencv_matrix``, so
``pixel_origin`` counts) in continuous coordinates (``continuous_matrix``, normalised to a last
entry of 1), inverted for ``inverse_map=True``. Points divide by w; a box becomes the box of its
four moved corners (a homography maps a box to a quadrilateral, whose hull they are, as long as
the box stays on the near side of the horizon line w = 0: beyond it the numbers are
meaningless, as the image is). Masks: nearest neighbour from the exact points, class 0 outside
whatever ``border_mode`` is: "replicate", "reflect" and "wrap" repeat or mirror the picture
beyond its edge, and the masks and boxes do not follow those copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.geometric.targets import Geometry, MovesTargets, image_size, movable
from augkit.operators.geometric.warp import fits_opencv
from augkit.operators.geometric.warp_affine import (
    INVERSE_MAP_ARG,
    SIZE_ARG,
    check_float32_range,
    matrix_numbers,
    round_size,
)
from augkit.operators.layouts import GEOMETRIC, check_type, image_layout
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    described,
    keeps_kind,
    one_of,
    register,
    to_floats,
    to_interp,
)

_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32))
BORDER_MODES = ("constant", "replicate", "reflect", "reflect_101", "wrap")
_CV_BORDER = {
    "constant": "BORDER_CONSTANT",
    "replicate": "BORDER_REPLICATE",
    "reflect": "BORDER_REFLECT",
    "reflect_101": "BORDER_REFLECT_101",
    "wrap": "BORDER_WRAP",
}
_SHIFT = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]], np.float32)
_SHIFT_BACK = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]], np.float32)


def _matrix3(value: Any, what: str) -> np.ndarray:
    array = matrix_numbers(value, 9)
    if array.size != 9 or array.ndim > 2 or (array.ndim == 2 and array.shape != (3, 3)):
        raise ValueError(f"the {what} must be a 3x3 matrix (9 numbers), got shape {array.shape}")
    check_float32_range(array, what)
    return array.reshape(3, 3).astype(np.float32)


@described("9 numbers or a 3x3 array (destination to source unless inverse_map=False)")
def to_perspective_matrix(value: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in _matrix3(value, "perspective matrix").reshape(-1))


@described("types.INTERP_NN, types.INTERP_LINEAR or types.INTERP_CUBIC")
def to_perspective_interp(value: Any) -> types.DALIInterpType:
    interp = to_interp(value)
    if interp not in (types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC):
        raise ValueError(
            f"only types.INTERP_NN, types.INTERP_LINEAR and types.INTERP_CUBIC are supported "
            f"(as in DALI), got types.{interp.name}"
        )
    return interp


def opencv_matrix(matrix: np.ndarray, pixel_origin: str) -> np.ndarray:
    """DALI's matrix for OpenCV: ``T(-0.5) @ M @ T(0.5)`` in float32 for corner origins."""
    m = np.asarray(matrix, np.float32)
    if pixel_origin == "corner":
        m = _SHIFT_BACK @ (m @ _SHIFT)
    return m.astype(np.float64)


def given_matrix(mtx: Any, matrix: Any) -> np.ndarray:
    """The float32 3x3 matrix of one sample: the matrix input ``mtx`` or the ``matrix``
    argument (not both, as in DALI)."""
    if mtx is not None:
        if matrix is not None:
            raise ValueError(
                "Matrix input and `matrix` argument should not be provided at the same time."
            )
        return _matrix3(mtx, "matrix input")
    if matrix is not None:
        return np.asarray(matrix, np.float32).reshape(3, 3)
    raise ValueError("a `matrix` argument or a matrix input must be given")


def continuous_matrix(matrix: np.ndarray, pixel_origin: str) -> np.ndarray:
    """The matrix OpenCV gets (``opencv_matrix``: pixel centres at whole numbers) in
    continuous coordinates (pixel (i, j) covers [j, j + 1) x [i, i + 1)), float64,
    normalised so that its last entry is 1 (where it is not 0)."""
    m = _SHIFT.astype(np.float64) @ opencv_matrix(matrix, pixel_origin) @ _SHIFT_BACK
    return m / m[2, 2] if m[2, 2] != 0 else m


class WarpPerspectiveImpl(MovesTargets):
    def setup(self) -> None:
        self.cv2 = backend.opencv()
        interp = self.args["interp_type"]
        self.flags = {
            types.INTERP_NN: self.cv2.INTER_NEAREST,
            types.INTERP_LINEAR: self.cv2.INTER_LINEAR,
            types.INTERP_CUBIC: self.cv2.INTER_CUBIC,
        }[interp]
        if self.args["inverse_map"]:
            self.flags |= self.cv2.WARP_INVERSE_MAP
        self.border = getattr(self.cv2, _CV_BORDER[self.args["border_mode"]])

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        width, height = image_size(shape, layout)
        m = continuous_matrix(
            given_matrix(extra[0] if extra else None, args["matrix"]), args["pixel_origin"]
        )
        out_h, out_w = round_size(args["size"], (height, width))
        if self.args["inverse_map"]:  # destination to source: targets move by its inverse
            if abs(np.linalg.det(m)) < 1e-30 or not np.isfinite(m).all():
                raise ValueError(f"the matrix {m.reshape(-1).tolist()} cannot be inverted")
            return Geometry.inverse_of(m, (width, height), (out_w, out_h))
        return Geometry.affine(m, (width, height), (out_w, out_h))

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 1:
            if sample.dtype.kind not in "fiu" or sample.shape != (3, 3):
                raise ValueError(
                    f"warp_perspective's second input (the matrices) must hold one 3x3 float "
                    f"matrix per sample, got a sample of shape {tuple(sample.shape)} and type "
                    f"{sample.dtype}"
                )
            return
        layout = image_layout(layout, sample.ndim)
        if layout not in ("HW", "HWC"):
            raise ValueError(
                f"warp_perspective needs images with layout HWC or HW (channel last), got "
                f"layout {layout!r}"
            )
        if 0 in sample.shape:
            raise ValueError(f"warp_perspective needs a non-empty image, got {sample.shape}")
        if sample.ndim == 3 and sample.shape[2] > 4:
            raise ValueError("Images with more than 4 channels are not supported.")
        check_type("warp_perspective takes images", sample.dtype, _TYPES)

    def cpu(
        self,
        image: np.ndarray,
        mtx: np.ndarray | None = None,
        *,
        matrix: tuple[float, ...] | None,
        size: tuple[float, float] | None,
        fill_value: tuple[float, ...],
        pixel_origin: str,
        **_: Any,
    ) -> np.ndarray:
        m = given_matrix(mtx, matrix)
        channels = image.shape[2] if image.ndim == 3 else 0
        if len(fill_value) > 1 and len(fill_value) != channels:
            raise ValueError(
                f"Number of values provided as a fill_value should match the number of "
                f"channels. Number of channels: {channels or 'none (HW)'}. Number of values "
                f"provided: {len(fill_value)}."
            )
        fill = (tuple(fill_value) * 4)[:4] if len(fill_value) == 1 else tuple(fill_value)
        out_h, out_w = round_size(size, image.shape[:2])
        if not fits_opencv(*image.shape[:2], out_h, out_w):
            raise ValueError(
                f"warp_perspective supports images and outputs with sides below 32767, got "
                f"{image.shape[:2]} -> {(out_h, out_w)}"
            )
        out = self.cv2.warpPerspective(
            image,
            opencv_matrix(m, pixel_origin),
            (out_w, out_h),
            flags=self.flags,
            borderMode=self.border,
            borderValue=fill or (0.0,),
        )
        return out.reshape(out_h, out_w, *image.shape[2:])


register(
    OperatorSchema(
        name="experimental.warp_perspective",
        class_name="experimental.WarpPerspective",
        impl=WarpPerspectiveImpl,
        min_inputs=1,
        max_inputs=2,
        accepts=[
            movable(
                InputSpec(
                    "an image with layout HWC or HW (channel last)",
                    ndims=(2, 3),
                    layouts=("HWC", "HW"),
                    kinds=("image",),
                    hints=GEOMETRIC,
                )
            ),
            InputSpec("3x3 float matrices, one per sample", ndims=(2,)),
        ],
        output_kinds=keeps_kind,
        doc="""Warp images (HWC or HW) by a perspective transform (a homography), as DALI's
``fn.experimental.warp_perspective`` (which is OpenCV's ``warpPerspective`` on the CPU).

``matrix`` (3x3: 9 numbers, a per-sample value, or a second positional input) maps output
points to the input points they read (``inverse_map=False``: input to output). With
``pixel_origin="corner"`` (default), ``(0, 0)`` is the corner of the first pixel; ``"center"``:
its centre, as in OpenCV. Outside the input, ``border_mode`` decides ("constant" with
``fill_value``, "replicate", "reflect", "reflect_101", "wrap").

Moves masks, boxes, keypoints, vertices and labels with the images when given with them as
input sets (``fn.experimental.warp_perspective([images, masks, boxes, labels], matrix=...)``):
one homography per sample for all of them; masks are class 0 outside the input whatever
``border_mode`` is.

Example, in a pipeline definition::

    images = fn.experimental.warp_perspective(
        images, matrix=[1, 0.1, 0, 0, 1, 0, 0.0005, 0, 1], border_mode="replicate")
""",
        args=[
            Arg(
                "matrix",
                "3x3 homography (9 numbers), destination to source unless inverse_map=False",
                None,
                to_perspective_matrix,
                True,
            ),
            SIZE_ARG,
            INVERSE_MAP_ARG,
            Arg(
                "interp_type",
                "types.INTERP_LINEAR, types.INTERP_NN or types.INTERP_CUBIC",
                types.INTERP_LINEAR,
                to_perspective_interp,
            ),
            Arg(
                "border_mode",
                'outside the input: "constant", "replicate", "reflect", "reflect_101", "wrap"',
                "constant",
                one_of(*BORDER_MODES),
            ),
            Arg(
                "fill_value",
                'value(s) outside the input with border_mode="constant" (one, or per channel)',
                (),
                to_floats(),
            ),
            Arg(
                "pixel_origin",
                '"corner" ((0, 0) is the first pixel\'s corner) or "center" (OpenCV\'s)',
                "corner",
                one_of("corner", "center"),
            ),
        ],
    )
)
