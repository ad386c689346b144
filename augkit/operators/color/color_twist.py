"""``fn.hsv``, ``fn.hue``, ``fn.saturation`` and ``fn.color_twist``: one 3x3 colour matrix and an
offset per sample, applied to every RGB pixel, as DALI 2.4 computes them on the CPU
(``dali/operators/image/color/color_twist.h``; one kernel serves the four operators).

DALI's arithmetic, all in float32 (verified bit for bit against DALI 2.4 on uint8 and float
images; tests/dali_parity/cases_color_adjust.py):

- ``M = diag(brightness) * diag(contrast) * Yiq2Rgb * H(hue) * S(saturation) * diag(value)
  * Rgb2Yiq``, multiplied left to right, each element a dot product ``(a0*b0 + a1*b1) + a2*b2``.
- ``Rgb2Yiq = [[.299, .587, .114], [.596, -.274, -.321], [.211, -.523, .311]]`` and
  ``Yiq2Rgb`` is its inverse **computed in float32** by DALI's Gauss-Jordan elimination with
  partial pivoting and fused multiply-adds (``dali/core/geom/mat.h``), not the rounded textbook
  inverse (``[[1, .956, .621], ...]``, which older DALI used): the identity settings give the
  identity matrix to within float32 rounding, not a colour shift of a level.
- ``H(hue)`` rotates the I and Q axes: ``h = float32(hue * pi / 180)`` (the product in double),
  ``H[1][1] = H[2][2] = cos(h)``, ``H[1][2] = sin(h)``, ``H[2][1] = -sin(h)`` (float32 cos and
  sin). ``S(s) = diag(1, s, s)``.
- The offset (the same for the three channels) is ``(half - half * contrast) * brightness``
  with ``half`` = 0.5 for float inputs and **128 for every integer input type** (int16 and int32
  too, unlike brightness_contrast's centre).
- Per pixel: ``out[i] = ((M[i][0]*r + M[i][1]*g) + M[i][2]*b) + offset``, then ConvertSat to the
  output type (round half away from zero, saturate). No FMA (DALI's build does not contract).
- ``dtype``: hsv's default is **UINT8** (a float image gives a uint8 output of 0s and 1s, as in
  DALI); hue's, saturation's and color_twist's default is the input type.
- ``image_type`` is accepted and, as in DALI 2.4 (whose kernel never reads it), changes nothing.
- Images must be channel-last with 3 channels (HWC, FHWC, DHWC, or 3-D/4-D without a layout).
  DALI reads 3 values per pixel whatever the channel count (garbage for 1 or 4 channels);
  augkit refuses fewer than 3 channels with an error, and transforms the first 3 of 4 or more
  channels (RGBA: the alpha and any further channels are kept, converted to ``dtype``).

Speed: the kernel splits the three channels into planes (``cv2.split``), computes each output
plane with in-place float32 NumPy ufuncs (which release the GIL) in DALI's order of operations,
so the results are DALI's bit for bit, and interleaves them again (``cv2.merge``); for uint8
outputs the rounding is ``trunc(clip(v + 0.49999997, 0, 255))``, which is exact (see ``_to_uint8``).
Measured on a 320x320 uint8 RGB image, one thread: about 0.5 ms per image, 2.5x to 3x DALI
2.4's CPU kernel (a scalar loop) per chained operator. ``cv2.transform`` would be about 2.5x
faster still, but sums in another order and with FMA (about one uint8 value in 10**6 off by one
level, float outputs off in the last bits), so it is not used.

GPU (``device="gpu"``): ``ColorTwist.gpu`` runs ``twist`` on CuPy arrays without OpenCV (the
xp-generic path: ``xp.multiply(..., out=)``, in-place ``+=``, ``astype``, ``stack`` and
``convert_sat``). The matrix and offset are computed on the host, as on the CPU, and enter the
ufuncs as NumPy float32 scalars. Each ufunc call is one float32 operation per element (no fused
multiply-add can form across calls), so the GPU's values equal the CPU's bit for bit, rounding
included (``convert_sat``: halves away from zero, not DALI's GPU rounding to even).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.color.brightness_contrast import to_number_type
from augkit.operators.color.cast import convert_sat
from augkit.operators.layouts import COLOR_IMAGE
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_float,
    to_image_type,
)

F32 = np.float32
RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]], F32)
_JUST_BELOW_HALF = np.nextafter(F32(0.5), F32(0))


def _fma32(a: Any, b: Any, c: Any) -> np.float32:
    """float32 fused multiply-add: the exact product (float64 holds it) plus ``c``, rounded."""
    return F32(np.float64(a) * np.float64(b) + np.float64(c))


def inverse32(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a 3x3 float32 matrix as DALI's ``inverse`` computes it: Gauss-Jordan
    elimination with partial pivoting, in float32, with fused multiply-adds."""
    a = np.array(matrix, F32)
    out = np.eye(3, dtype=F32)
    for v in range(3):
        pivot = max(range(v, 3), key=lambda i: (abs(a[i, v]), -i))
        if a[pivot, v] == 0:
            raise ValueError("the matrix is singular")
        if pivot != v:
            a[[v, pivot]] = a[[pivot, v]]
            out[[v, pivot]] = out[[pivot, v]]
        x = F32(1) / a[v, v]
        a[v, v] = 1
        a[v, v + 1 :] *= x
        out[v] *= x
        for i in range(3):
            if i == v:
                continue
            c = -a[i, v]
            a[i, v] = 0
            for j in range(v + 1, 3):
                a[i, j] = _fma32(c, a[v, j], a[i, j])
            for j in range(3):
                out[i, j] = _fma32(c, out[v, j], out[i, j])
    return out


YIQ_TO_RGB = inverse32(RGB_TO_YIQ)


def matmul32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 3x3 float32 matrices, each element ``(a0*b0 + a1*b1) + a2*b2`` in float32
    (DALI's ``dot``; NumPy's matmul may sum in another order)."""
    return (a[:, 0:1] * b[0:1, :] + a[:, 1:2] * b[1:2, :]) + a[:, 2:3] * b[2:3, :]


def _diag(value: float) -> np.ndarray:
    return np.eye(3, dtype=F32) * F32(value)


def hue_matrix(hue: float) -> np.ndarray:
    """DALI's ``hue_mat``: a rotation of the I and Q axes by ``hue`` degrees."""
    # DALI holds the argument as a float32; the product with M_PI and the division are double.
    h = float(F32(float(F32(hue)) * math.pi / 180))
    if math.isfinite(h):
        cos, sin = F32(math.cos(h)), F32(math.sin(h))
    else:  # a hue beyond float32's range: NaN, as C's cos(inf) gives
        cos = sin = F32(np.nan)
    m = np.eye(3, dtype=F32)
    m[1, 1] = m[2, 2] = cos
    m[1, 2], m[2, 1] = sin, -sin
    return m


def color_matrix(
    hue: float = 0.0,
    saturation: float = 1.0,
    value: float = 1.0,
    brightness: float = 1.0,
    contrast: float = 1.0,
) -> np.ndarray:
    """DALI's per-sample 3x3 colour matrix (see the module docstring), in float32.

    Example:
        >>> bool(np.allclose(color_matrix(), np.eye(3), atol=1e-6))
        True
    """
    with np.errstate(over="ignore", invalid="ignore"):
        m = matmul32(_diag(brightness), _diag(contrast))
        sat = np.diag(np.array([1, saturation, saturation], F32))
        for factor in (YIQ_TO_RGB, hue_matrix(hue), sat, _diag(value), RGB_TO_YIQ):
            m = matmul32(m, factor)
    return m


def color_offset(in_dtype: Any, contrast: float = 1.0, brightness: float = 1.0) -> np.float32:
    """DALI's offset: ``(half - half * contrast) * brightness``, half = 0.5 for float inputs and
    128 for integer ones."""
    half = F32(0.5 if np.dtype(in_dtype).kind == "f" else 128.0)
    with np.errstate(over="ignore", invalid="ignore"):
        return (half - half * F32(contrast)) * F32(brightness)


# dtypes cv2.split/merge take (they split and interleave planes several times faster than
# NumPy's strided copies).
_CV_DTYPES = frozenset(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32))
_CV_DTYPES |= {np.dtype(np.float32), np.dtype(np.float64)}


def _split(pixels: Any, cv2: Any, xp: Any = np) -> list[Any]:
    """The channels of ``pixels`` (N x C) as contiguous planes."""
    channels = pixels.shape[1]
    if cv2 is not None and pixels.dtype in _CV_DTYPES:
        whole = np.ascontiguousarray(pixels).reshape(-1, 1, channels)
        return [p.reshape(-1) for p in cv2.split(whole)]
    return [xp.ascontiguousarray(pixels[:, j]) for j in range(channels)]


def _merge(planes: list[Any], cv2: Any, xp: Any = np) -> Any:
    if cv2 is not None and planes[0].dtype in _CV_DTYPES:
        return cv2.merge(planes).reshape(-1, len(planes))
    return xp.stack(planes, axis=-1)


def _to_uint8(values: np.ndarray, has_nan: bool) -> np.ndarray:
    """ConvertSat to uint8 of a float32 plane, in place: round half away from zero, saturate.
    ``trunc(float32(v + 0.49999997))`` equals ``floor(v + 0.5)`` (computed exactly) for every
    float32 v in [0, 256] (checked exhaustively; ``v + 0.5`` is not exact: 0.49999997 + 0.5
    rounds up to 1), so clipping that sum to [0, 255] and truncating is DALI's ConvertSat;
    NaN becomes 0, as ``convert_sat`` gives."""
    values += _JUST_BELOW_HALF
    np.clip(values, 0, 255, out=values)
    if has_nan:
        np.nan_to_num(values, copy=False, nan=0.0)
    return values.astype(np.uint8)


def twist(
    sample: Any,
    matrix: np.ndarray,
    offset: np.float32,
    out_dtype: Any,
    cv2: Any = None,
    xp: Any = np,
) -> Any:
    """``convert_sat(matrix @ pixel + offset)`` for every pixel of a channel-last RGB
    ``sample``, in DALI's float32 order of operations, plane by plane (``cv2``: OpenCV, to
    split and merge the planes; NumPy does it without). Channels after the third (alpha) are
    only converted to ``out_dtype``.

    ``xp`` is the array module of ``sample`` (NumPy, or CuPy on the GPU, where ``cv2`` is
    None): the same ufunc calls, one float32 operation each, so the values do not depend on it.
    ``matrix`` and ``offset`` stay on the host (NumPy float32 scalars as ufunc operands)."""
    out_dtype = np.dtype(out_dtype)
    pixels = sample.reshape(-1, sample.shape[-1])
    n = pixels.shape[0]
    if n == 0:
        return xp.empty(sample.shape, out_dtype)
    planes = _split(pixels, cv2, xp)
    has_nan = sample.dtype.kind == "f"
    acc = xp.empty(n, F32)
    tmp = xp.empty(n, F32)
    results = []
    with np.errstate(over="ignore", invalid="ignore"):
        # float32(in), as DALI converts each input value to float first: once per plane (each
        # is used three times).
        rgb = [p.astype(F32, copy=False) for p in planes[:3]]
        for i in range(3):
            xp.multiply(rgb[0], matrix[i, 0], out=acc)
            xp.multiply(rgb[1], matrix[i, 1], out=tmp)
            acc += tmp
            xp.multiply(rgb[2], matrix[i, 2], out=tmp)
            acc += tmp
            acc += offset
            if out_dtype == np.uint8 and cv2 is not None:
                results.append(_to_uint8(acc, has_nan))
            else:
                results.append(xp.array(convert_sat(acc, out_dtype, xp), copy=True))
        results += [convert_sat(extra, out_dtype, xp) for extra in planes[3:]]
    return _merge(results, cv2, xp).reshape(sample.shape)


class ColorTwist(SampleOperator):
    """DALI's ColorTwist kernel: a per-sample 3x3 matrix and offset on every RGB pixel."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        op = self.schema.name
        if sample.dtype.kind not in "iuf":
            raise ValueError(f"{op} needs numbers, got {sample.dtype} data")
        if layout and layout[-1] != "C":
            raise ValueError(
                f'{op} needs channel-last RGB images (HWC, FHWC, DHWC), got layout "{layout}"'
            )
        if sample.ndim not in (3, 4) or sample.shape[-1] < 3:
            raise ValueError(
                f"{op} needs RGB images with 3 channels (or more: RGBA), channel last (HWC, "
                f"FHWC or DHWC: 3 or 4 dimensions), got a sample of shape {tuple(sample.shape)}"
            )

    def cpu(self, sample: Any, **args: Any) -> Any:
        return self._twist(sample, self.cv2, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU kernel's arithmetic on ``sample``'s array module (CuPy on the GPU), without
        OpenCV: the host computes the matrix and offset, ``twist`` applies them."""
        return self._twist(sample, None, backend.array_module(sample), **args)

    @staticmethod
    def _twist(
        sample: Any,
        cv2: Any,
        xp: Any,
        *,
        hue: float = 0.0,
        saturation: float = 1.0,
        value: float = 1.0,
        brightness: float = 1.0,
        contrast: float = 1.0,
        dtype: Any = None,
        **_: Any,
    ) -> Any:
        out_dtype = np.dtype(sample.dtype if dtype is None else dtype.numpy)
        matrix = color_matrix(hue, saturation, value, brightness, contrast)
        offset = color_offset(sample.dtype, contrast, brightness)
        return twist(sample, matrix, offset, out_dtype, cv2, xp)


def _dtype_arg(default: Any) -> Arg:
    what = "UINT8" if default is not None else "the input's"
    return Arg("dtype", f"output data type (default: {what})", default, to_number_type)


_IMAGE_TYPE = Arg(
    "image_type",
    "colour space of the input and output (accepted; DALI 2.4 ignores it too)",
    types.DALIImageType.RGB,
    to_image_type,
)
_HUE = Arg("hue", "hue change, in degrees (0: unchanged; wraps around)", 0.0, to_float(), True)
_SATURATION = Arg(
    "saturation", "saturation multiplier (0: grey, 1: unchanged)", 1.0, to_float(), True
)
_COMMON = (
    "Computed as DALI computes it: one 3x3 colour matrix per sample in the YIQ colour space "
    "(hue rotates the I and Q axes, saturation scales them), applied to every RGB pixel in "
    "float32 and converted to ``dtype`` with rounding half away from zero and saturation; "
    "numbers equal DALI 2.4's CPU results bit for bit. Takes channel-last RGB images (HWC, "
    "FHWC, DHWC; channels after the third, such as alpha, are kept) of any numeric type "
    "(DALI: uint8, int16, int32, float, float16). Arguments may be per sample "
    "(e.g. ``hue=fn.random.uniform(range=(-30, 30))``). On the GPU the results equal the CPU's "
    "(halves rounded away from zero, as on DALI's CPU)."
)


def _register(name: str, class_name: str, doc: str, args: list[Arg]) -> None:
    register(
        OperatorSchema(
            name=name,
            class_name=class_name,
            impl=ColorTwist,
            accepts=[COLOR_IMAGE],
            output_kinds=keeps_kind,
            devices=("cpu", "gpu"),
            doc=f"{doc} {_COMMON}",
            args=args,
        )
    )


_register(
    "hsv",
    "Hsv",
    "Adjusts hue (added, in degrees), saturation and value (multipliers), approximated by a "
    "linear transform in RGB space as DALI does. The output type defaults to UINT8 (as in DALI), "
    "whatever the input type.",
    [
        _HUE,
        _SATURATION,
        Arg("value", "value (brightness) multiplier (1: unchanged)", 1.0, to_float(), True),
        _dtype_arg(types.DALIDataType.UINT8),
    ],
)
_register(
    "hue",
    "Hue",
    "Changes the hue of RGB images by ``hue`` degrees.",
    [_HUE, _dtype_arg(None), _IMAGE_TYPE],
)
_register(
    "saturation",
    "Saturation",
    "Changes the saturation of RGB images by the factor ``saturation`` (0: grey).",
    [_SATURATION, _dtype_arg(None), _IMAGE_TYPE],
)
_register(
    "color_twist",
    "ColorTwist",
    "Adjusts hue, saturation, brightness and contrast of RGB images: "
    "``out = brightness * (contrast * M(hue, saturation) * in + (1 - contrast) * half)`` with "
    "half = 128 for integer inputs and 0.5 for float ones.",
    [
        _HUE,
        _SATURATION,
        Arg("brightness", "brightness multiplier (0: black, 1: unchanged)", 1.0, to_float(), True),
        Arg(
            "contrast", "contrast multiplier (0: uniform grey, 1: unchanged)", 1.0, to_float(), True
        ),
        _dtype_arg(None),
        _IMAGE_TYPE,
    ],
)
