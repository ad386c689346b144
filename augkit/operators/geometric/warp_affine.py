"""``fn.warp_affine`` / ``ops.WarpAffine``: DALI's affine warp of HWC images, on the CPU and the
GPU.

The kernel hands the 2x3 matrix to ``warp.affine``, the sampler of ``fn.rotate``: linear uint8
by ``cv2.warpAffine``, the rest as DALI's float32 source points (its running sums along each
row) sampled by OpenCV's ``remap`` (float32 bilinear, or DALI's ``floor`` for nearest); see
warp.py.

The GPU kernel (``device="gpu"``) is ``warp.warp_affine`` on the CuPy image, as rotate's: the
matrix (a matrix input, on the GPU then, is read back to the host: 6 numbers) and DALI's CPU
source points on the host, DALI's sampling formulas on the device (warp.py's docstring).

Decisions and traps, checked against DALI 2.4 (``warp_affine.cc``, ``warp_affine_params.h``,
``warp_param_provider.h``) and by running it:

- The matrix maps destination to source by default (``inverse_map=True``), in continuous
  coordinates where ``(0, 0)`` is the corner of the first pixel: output pixel ``(x, y)`` reads
  the input at ``M @ (x + 0.5, y + 0.5, 1)``. ``inverse_map=False`` inverts it first (in float64
  here, float32 in DALI); a matrix that cannot be inverted is an error here (DALI: inf/NaN).
- ``matrix`` is 6 numbers ``(M11, M12, M13, M21, M22, M23)`` (a 2x3 array works too); as a
  per-sample argument or as the second positional input (``fn.warp_affine(images, mtx)``) each
  sample's value is a 2x3 float array, which is what ``fn.transforms.*`` produce. DALI takes
  float32 only there; any real dtype is taken here. With both the input and the argument, the
  input wins, as in DALI. Neither: an error (DALI's message).
- Non-finite matrix values are refused (DALI would give inf/NaN images).
- ``size`` (H, W) is rounded to the nearest integer, at least 1; without it the output has the
  input's size.
- ``fill_value=None`` clamps to the border; a number is converted to the input type
  (ConvertSat) and every tap outside the image reads it, so the image edge blends into it.
- Only INTERP_NN and INTERP_LINEAR, as in DALI; ``interp_type`` is a constant (DALI takes no
  per-sample value for it here). ``dtype`` sets the output type; integers are rounded half away
  from zero and saturated.
- augkit warps 2-D HWC images only; DALI also takes volumes (DHWC) and sequences (FHWC).
- Speed (320x320 uint8 RGB, one thread, DALI 2.4 timed in the same process): linear uint8
  about 5x DALI's and 0.9x Albumentations', nearest about 0.9x DALI's (the sequential running
  sums; see rotate.py). Parity: nearest equal; linear uint8 within 1 level at ~0.5 % of the
  values (more at exact half pixels, 2 levels at rare edge pixels: warp.py's docstring); other
  types equal but for OpenCV's float32 interpolation order.

Targets (``fn.warp_affine([images, masks, boxes, labels], matrix=...)`` or with the matrices
as the second input, ``fn.warp_affine([images, masks, boxes], mtx)``; targets.py): ``geometry``
is the inverse of the matrix the kernel samples with (``source_matrix``: the input wins over the
argument, ``inverse_map=False`` inverts), the output size ``round_size``'s. Masks: nearest
neighbour from the exact points, class 0 outside whatever ``fill_value``, dtype kept. Sheared or
rotated boxes become the axis-aligned box of their corners, clipped, or dropped with their
labels. On the target path (the kernel table's target rules, targets.py) the target is not
checked as an image of the kernel's types (a mask may be H×W, int32 or bool).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.geometric import warp
from augkit.operators.geometric.targets import (
    Geometry,
    MovesTargets,
    image_size,
    movable,
)
from augkit.operators.layouts import HWC_IMAGE, check_image
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_dtype,
    to_float,
    to_floats,
)

_TYPES = warp.WARP_TYPES
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def matrix_numbers(value: Any, count: int) -> np.ndarray:
    """``value`` (``count`` numbers, flat or as a matrix) as a float64 array, its shape as given.

    Raises:
        TypeError: not numbers (a string, a mapping, None, ...).
    """
    if isinstance(value, (str, bytes, dict)) or value is None:
        raise TypeError(f"expected {count} numbers, got {value!r}")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"expected {count} numbers, got {value!r}") from None


def check_float32_range(array: np.ndarray, name: str) -> None:
    """Raise ValueError unless the matrix ``array`` (called ``name`` in the message) holds finite
    numbers within float32's range."""
    if not np.isfinite(array).all() or np.abs(array).max() > _FLOAT32_MAX:
        raise ValueError(
            f"the {name} must hold finite numbers within float32's range, got "
            f"{array.reshape(-1).tolist()}"
        )


def _finite_matrix(value: Any, rows: int, name: str) -> np.ndarray:
    """A (rows, 3) float64 matrix from 3*rows numbers or a (rows, 3) array."""
    array = matrix_numbers(value, 3 * rows)
    if array.size != 3 * rows or array.ndim > 2 or (array.ndim == 2 and array.shape != (rows, 3)):
        raise ValueError(
            f"the {name} must have {3 * rows} elements (a {rows}x3 matrix), got shape {array.shape}"
        )
    check_float32_range(array, name)
    return array.reshape(rows, 3)


@described("6 numbers (M11, M12, M13, M21, M22, M23) or a 2x3 array")
def to_affine_matrix(value: Any) -> tuple[float, ...]:
    """The 2x3 affine matrix as 6 float32-rounded floats (row by row)."""
    matrix = _finite_matrix(value, 2, "affine matrix").astype(np.float32)
    return tuple(float(v) for v in matrix.reshape(-1))


@described("2 positive numbers (H, W)", 0)
def to_size(value: Any) -> tuple[float, float]:
    out = to_floats(2)(value)
    if min(out) <= 0:
        raise ValueError(f"the output size must be positive, got {out}")
    return out[0], out[1]  # (to_floats(2) gives 2 values)


# The arguments warp_affine and warp_perspective share.
SIZE_ARG = Arg("size", "output (H, W), rounded (default: the input's size)", None, to_size, True)
INVERSE_MAP_ARG = Arg(
    "inverse_map",
    "True: the matrix maps destination to source; False: source to destination",
    True,
    to_bool,
)


def round_size(size: tuple[float, float] | None, in_size: tuple[int, int]) -> tuple[int, int]:
    """The output (H, W): ``size`` rounded half up (at least 1), or the input's."""
    if size is None:
        return int(in_size[0]), int(in_size[1])
    out = (max(1, math.floor(size[0] + 0.5)), max(1, math.floor(size[1] + 0.5)))
    if max(out) > 2**31 - 1 or out[0] * out[1] > 2**40:
        raise ValueError(f"the output size {out[0]}x{out[1]} is too large")
    return out


def invert_affine(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a 2x3 affine matrix (float64 in, float64 out).

    Raises:
        ValueError: it cannot be inverted.
    """
    linear = matrix[:, :2]
    det = linear[0, 0] * linear[1, 1] - linear[0, 1] * linear[1, 0]
    if not np.isfinite(det) or abs(det) < 1e-30:
        raise ValueError(
            f"inverse_map=False needs an invertible matrix; {matrix.reshape(-1).tolist()} "
            f"is singular"
        )
    inverse = np.linalg.inv(linear)
    return np.concatenate([inverse, -inverse @ matrix[:, 2:]], axis=1)


def source_matrix(mtx: Any, matrix: Any, inverse_map: bool) -> np.ndarray:
    """The float32 2x3 destination-to-source matrix the kernel samples with: the matrix input
    ``mtx`` (it wins, as in DALI) or the ``matrix`` argument, inverted when ``inverse_map`` is
    False."""
    if mtx is not None:
        m = _finite_matrix(mtx, 2, "matrix input")
    elif matrix is not None:
        m = np.asarray(matrix, np.float64).reshape(2, 3)
    else:
        raise ValueError(
            "`matrix` argument must be provided when transforms are not passed as a regular input."
        )
    if not inverse_map:
        m = invert_affine(m.astype(np.float32).astype(np.float64))
        if np.abs(m).max() > _FLOAT32_MAX:
            raise ValueError(
                f"inverse_map=False: the inverse of the matrix is beyond float32's range: "
                f"{m.reshape(-1).tolist()}"
            )
    return m.astype(np.float32)


class WarpAffineImpl(MovesTargets):
    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            check_image("warp_affine", sample, layout, ("HWC",), _TYPES)
        elif sample.dtype.kind not in "fiu" or sample.shape != (2, 3):
            raise ValueError(
                f"warp_affine's second input (the matrices) must hold one 2x3 float matrix per "
                f"sample, got a sample of shape {tuple(sample.shape)} and type {sample.dtype}"
            )

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        width, height = image_size(shape, layout)
        m = source_matrix(extra[0] if extra else None, args["matrix"], args["inverse_map"])
        out_h, out_w = round_size(args["size"], (height, width))
        return Geometry.inverse_of(m, (width, height), (out_w, out_h))

    def cpu(self, image: np.ndarray, mtx: np.ndarray | None = None, **args: Any) -> np.ndarray:
        m, out_size, interp, out_dtype = _warp_plan(image, mtx, **args)
        return warp.affine(
            image,
            m,
            out_size,
            interp=interp,
            fill=args["fill_value"],
            dtype=out_dtype,
            cv2=self.cv2,
        )

    def gpu(self, image: Any, mtx: Any = None, **args: Any) -> Any:
        """The GPU kernel: DALI's formulas (``warp.warp_affine``) on the device of ``image``
        (a matrix input arrives on the GPU too: it is read on the host, 6 numbers)."""
        if mtx is not None:
            mtx = backend.to_cpu(mtx)
        m, out_size, interp, out_dtype = _warp_plan(image, mtx, **args)
        return warp.warp_affine(
            image, m, out_size, interp=interp, fill=args["fill_value"], dtype=out_dtype
        )


def _warp_plan(
    image: Any,
    mtx: np.ndarray | None,
    *,
    matrix: tuple[float, ...] | None,
    size: tuple[float, float] | None,
    inverse_map: bool,
    interp_type: types.DALIInterpType,
    dtype: types.DALIDataType | None,
    **_: Any,
) -> tuple[np.ndarray, tuple[int, int], str, np.dtype]:
    """What both kernels warp with: the matrix, the output (H, W), the sampling and the type."""
    m = source_matrix(mtx, matrix, inverse_map)
    interp, out_dtype = sampling(image, dtype, interp_type)
    return m, round_size(size, image.shape[:2]), interp, out_dtype


def sampling(
    image: Any, dtype: types.DALIDataType | None, interp_type: types.DALIInterpType
) -> tuple[str, np.dtype]:
    """How an affine warp of ``image`` samples (``warp.NEAREST`` or ``warp.LINEAR``) and the
    type it writes: ``dtype`` (None: the image's), one of ``warp.WARP_TYPES``.

    Raises:
        ValueError: another output type.
    """
    out_dtype = image.dtype if dtype is None else dtype.numpy
    if out_dtype not in _TYPES:
        names = ", ".join(t.name for t in _TYPES)
        raise ValueError(f"dtype must be one of {names}, got {out_dtype.name}")
    return (warp.NEAREST if interp_type == types.INTERP_NN else warp.LINEAR), out_dtype


register(
    OperatorSchema(
        name="warp_affine",
        class_name="WarpAffine",
        impl=WarpAffineImpl,
        devices=("cpu", "gpu"),
        min_inputs=1,
        max_inputs=2,
        accepts=[
            movable(HWC_IMAGE),
            InputSpec("2x3 float matrices, one per sample (fn.transforms.*)", ndims=(2,)),
        ],
        output_kinds=keeps_kind,
        doc="""Warp images (layout HWC) by an affine transform, as DALI's ``fn.warp_affine``.

``matrix`` maps each output pixel to the input point it reads (``inverse_map=True``, the
default; ``False``: the matrix maps input to output and is inverted): ``dst(x, y) =
src(M11*x + M12*y + M13, M21*x + M22*y + M23)``, where ``(0, 0)`` is the corner of the first
pixel. It is 6 numbers, a per-sample 2x3 value, or a second positional input (the output of
``fn.transforms.*``). The output has the input's size unless ``size`` (H, W) is given.
Outside the input the border pixel repeats, or ``fill_value`` fills. Sampling is bilinear or
nearest, as in DALI (linear uint8 within a level of DALI: OpenCV's warpAffine).

Moves masks, boxes, keypoints, vertices and labels with the images when given with them as
input sets (``fn.warp_affine([images, masks, boxes, labels], matrix=...)``, or with the matrices
as the second input, ``fn.warp_affine([images, masks, boxes], mtx)``): one matrix per sample for
all of them; a sheared or rotated box becomes the axis-aligned box around it.

Example, in a pipeline definition::

    mt = fn.transforms.rotation(angle=fn.random.uniform(range=(-20, 20)), center=(160, 120))
    images = fn.warp_affine(images, matrix=mt, fill_value=0, inverse_map=False)
""",
        args=[
            Arg(
                "matrix",
                "2x3 transform (6 numbers), destination to source unless inverse_map=False",
                None,
                to_affine_matrix,
                True,
            ),
            SIZE_ARG,
            INVERSE_MAP_ARG,
            Arg(
                "interp_type",
                "types.INTERP_LINEAR or types.INTERP_NN",
                types.INTERP_LINEAR,
                warp.to_warp_interp,
            ),
            Arg(
                "fill_value",
                "value outside the input (None: repeat the border pixel)",
                None,
                to_float(),
            ),
            Arg("dtype", "output type (None: the input type)", None, to_dtype),
        ],
    )
)
