"""Sampling kernels shared by the geometric operators, written to DALI's CPU conventions.

- ``convert_sat``: DALI's ``ConvertSat`` on the CPU (round half away from zero, then saturate).
- ``warp_affine``: the inverse-mapping sampler of ``fn.rotate`` (and of any later affine
  operator): output pixel ``(x, y)`` reads the input at ``M @ (x + 0.5, y + 0.5, 1)``.
- ``resample_axis``: DALI's separable resampling along one axis (Linear, Triangular, Cubic,
  Lanczos3, Gaussian and Nearest filters), for the cases Pillow cannot do (``fn.resize``).
- ``affine``: the fast affine warp of ``fn.rotate`` and ``fn.warp_affine``: OpenCV's
  ``warpAffine`` (linear uint8) or DALI's points sampled by OpenCV's ``remap`` where it can,
  ``warp_affine`` where it cannot.
- ``sample_points``: DALI's ``Sampler2D`` at arbitrary source points (the affine warps and the
  displacement filters ``fn.water``, ``fn.sphere``, ``fn.jitter``), by OpenCV's ``remap``.

All of them are pure functions of their arguments: no state, no randomness.

The GPU (``device="gpu"`` of ``fn.rotate``, ``fn.warp_affine``, ``fn.resize``,
``fn.random_resized_crop``): no separate kernels. ``warp_affine`` (the NumPy sampler,
``_sample_numpy``), ``convert_sat``, ``truncate_sat`` and ``resample_axis`` are written against
the array module of their input (``backend.array_module``: NumPy or CuPy), with only what CuPy
has under NumPy's names and signatures: elementwise math, ``clip``, ``floor``, ``trunc``,
``copysign``, ``astype``, ``pad(mode="constant")``, ``take(axis=...)``, ``moveaxis``,
``matmul``. Given a CuPy image they run on its device: the GPU runs the arithmetic of this
DALI-checked CPU fallback. What stays on the host: the matrices, the resampling weights
(``_weights``, ``resample_matrix``) and the affine source points (``affine_points``: DALI's CPU
running float32 sums, made in NumPy and moved with ``xp.asarray``, 8 bytes an output pixel).
The points are DALI's CPU ones on purpose: nearest-neighbour picks then equal the CPU kernel's
(DALI's own GPU warp computes ``M @ (x + 0.5, y + 0.5, 1)`` per pixel, which picks another
pixel at float32 near-ties; computing them on the device that way is the faster follow-up).
Everything is float32, as DALI; the CPU's linear uint8 warp is OpenCV's fixed point
(``cv2.warpAffine``), so GPU and CPU differ by up to 1 level there, as the CPU does from DALI.

Traps, checked against DALI's sources (``kernels/imgproc/sampler.h``,
``kernels/imgproc/resample/resampling_impl_cpu.{h,cc}``, ``resampling_filters.cu``):

- DALI's affine warp computes the source point of the first pixel of a row and then adds the
  matrix's first column pixel by pixel, in float32 (``affine_points``): with a matrix of round
  decimals (0.9, 1.1) many points are whole numbers in exact arithmetic, and the running sum
  puts them an ulp either side, which decides nearest-neighbour picks.
- The linear sampler subtracts 0.5 from the source coordinate, then interpolates between
  ``floor`` and ``floor + 1``; the nearest sampler takes ``floor`` of the coordinate itself.
  Both compute in float32, in DALI's order (``s0 = s00*px + s01*qx``, ``s0 + (s1 - s0)*qy``).
- With a fill value, each of the four taps outside the image reads the fill value (so the edge
  blends into it over one pixel); without one, tap indices are clamped to the image.
- Pillow's ``Image.transform(..., BILINEAR)`` is not a substitute: for uint8 it truncates
  instead of rounding, and it never blends the edge with the fill colour.
- OpenCV (``affine``, ``sample_points``): linear uint8 -> uint8 warps (the common case) are
  ``cv2.warpAffine`` itself, Albumentations' kernel, with DALI's corner matrix ``M`` turned into
  OpenCV's pixel-centre one (``t' = t + (a + b)/2 - 1/2``): 2x faster than the exact path
  below (about 3x DALI's speed -> 5x; Albumentations' speed), but OpenCV computes its own
  source points (exact, where DALI's running sums drift by up to ~0.01 pixel along a 512-pixel
  row) and rounds exact ties half to even (10.5 -> 10; DALI: 11): 1 level off DALI at ~0.5 %
  of the values of a rotated photo (up to 3 %; 15 % at exactly 90 degrees, where every point
  is a half pixel), 2 levels at a few pixels where a large image blends into a far-off fill
  value. On the parity inputs (48-80 pixels a side) at most 1 level, at 1e-4 to 2 % of the
  values (12 % for a half-pixel shift: all ties). Every other case samples DALI's own float32
  points (``_running_sums``) with ``cv2.remap``: linear on float32 (OpenCV 5 interpolates
  float32 in float, in an order that gave DALI's values exactly on every parity input; its
  int16 path is fixed-point and it has none for int8/int32), stored by ConvertSat; nearest at
  ``floor`` of the points, whole numbers that ``remap`` takes as they are (OpenCV's own nearest
  rounding differs from DALI's ``floor`` at exact ties: 70 % of the pixels of a 2x zoom), which
  is exact. ``borderValue`` holds 4 channels: wider images are sampled 4 (or 3) channels at a
  time, and 2 channels one by one (OpenCV 5 interpolates 2-channel float images in fixed
  point: up to 3 levels off). OpenCV refuses images or maps with a side of 32767 or more
  (SHRT_MAX): those are sampled in NumPy (exact, slower).
- The resampler's integer outputs are ``clamp(0.5 + sum)`` truncated (round half up for
  non-negative values), not ConvertSat; border taps are clamped, and the weights of each
  output pixel are normalised to sum 1.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.registry import described, to_interp

# What the affine warps (rotate, warp_affine) take and give.
WARP_TYPES = tuple(
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32)
)

NEAREST = "nearest"
LINEAR = "linear"
TRIANGULAR = "triangular"
CUBIC = "cubic"
LANCZOS3 = "lanczos3"
GAUSSIAN = "gaussian"


@described("types.INTERP_NN or types.INTERP_LINEAR")
def to_warp_interp(value: Any) -> types.DALIInterpType:
    """The ``interp_type`` of the operators on this sampler that take nearest or linear only
    (``warp_affine``, ``rotate``, the displacement filters ``water``/``sphere``/``jitter``), as
    DALI's."""
    interp = to_interp(value)
    if interp not in (types.INTERP_NN, types.INTERP_LINEAR):
        raise ValueError(
            f"only types.INTERP_NN and types.INTERP_LINEAR are supported (as in DALI), "
            f"got types.{interp.name}"
        )
    return interp


def convert_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype`` the way DALI's CPU ``ConvertSat`` does it.

    Integers: round half away from zero (``std::round``, not NumPy's half-to-even), then clamp
    to the type's range. Floats: a plain cast.

    Example:
        >>> convert_sat(np.array([0.5, 1.5, -0.5, 300.0]), np.dtype(np.uint8))
        array([  1,   2,   0, 255], dtype=uint8)
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype, copy=False)
    if dtype.kind == "b":
        return values != 0
    xp = backend.array_module(values)
    info = np.iinfo(dtype)
    wide = values.astype(np.float64, copy=False)
    rounded = xp.copysign(xp.floor(xp.abs(wide) + 0.5), wide)
    return xp.clip(rounded, info.min, info.max).astype(dtype)


def truncate_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype`` the way DALI's resampler stores integers: ``clamp(v + 0.5)``
    (saturate, then truncate toward zero). Floats: a plain cast."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype, copy=False)
    xp = backend.array_module(values)
    info = np.iinfo(dtype)
    biased = values.astype(np.float64, copy=False) + 0.5
    return xp.trunc(xp.clip(biased, info.min, info.max)).astype(dtype)


# --- affine warp ---------------------------------------------------------------------------


def warp_affine(
    image: np.ndarray,
    matrix: np.ndarray,
    out_size: tuple[int, int],
    *,
    interp: str = LINEAR,
    fill: float | None = None,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """Warp an HWC image: output pixel ``(x, y)`` samples the input at
    ``matrix @ (x + 0.5, y + 0.5, 1)``, in continuous coordinates where pixel ``i`` spans
    ``[i, i + 1)`` (DALI's ``WarpAffine`` convention).

    Args:
        image: an (H, W, C) array.
        matrix: the 2x3 destination-to-source mapping, in (x, y) order.
        out_size: the output (H, W).
        interp: ``"nearest"`` or ``"linear"``.
        fill: the value of taps outside the image (converted to the input type first, as DALI
            does), or ``None`` to clamp to the border pixel.
        dtype: the output type (default: the input's); integers are rounded by ConvertSat.

    Returns:
        An (out_H, out_W, C) array of ``dtype``, on the device of ``image``: a CuPy image is
        warped on the GPU (the GPU kernel of ``fn.rotate`` and ``fn.warp_affine``; see the
        module docstring).
    """
    dtype = np.dtype(dtype or image.dtype)
    if interp not in (NEAREST, LINEAR):
        raise ValueError(f"warp_affine supports nearest and linear sampling, got {interp!r}")
    sx, sy = affine_points(matrix, out_size)
    if backend.is_gpu_array(image):  # the GPU kernel: DALI's CPU points, sampled on the device
        xp = backend.array_module(image)
        sx, sy = xp.asarray(sx), xp.asarray(sy)
    return _sample_numpy(image, sx, sy, interp, fill, dtype)


# --- OpenCV fast paths ------------------------------------------------------------------------

_CV_MAX = 32767  # OpenCV's remap and warps need every side below SHRT_MAX


def store(values: np.ndarray, dtype: np.dtype, in_range: bool = False) -> np.ndarray:
    """float32 ``values`` as ``dtype`` by ConvertSat, with a fast path for unsigned types
    (``values + 0.5`` saturated and truncated: the same for values that are not negative;
    ``in_range``: the values are known to lie within the type's range, e.g. interpolated from
    an image of that type, so they need no saturation). May write into ``values``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "u" and dtype.itemsize <= 2:
        with np.errstate(invalid="ignore"):
            np.add(values, np.float32(0.5), out=values)
            if not in_range:
                np.clip(values, 0, np.iinfo(dtype).max, out=values)
            return values.astype(dtype)
    return convert_sat(values, dtype)


def fits_opencv(*sides: int) -> bool:
    """Whether images and maps with these sides are within OpenCV's limits."""
    return all(0 < side < _CV_MAX for side in sides)


def _channel_groups(channels: int) -> list[tuple[int, int]]:
    """(start, stop) of the channel groups OpenCV warps: at most 4 channels each (its
    ``borderValue`` holds 4), and never 2 (OpenCV 5's 2-channel float warp interpolates in
    fixed point: up to 3 levels off); 2 goes as 1 + 1, a remainder of 2 as 3 + 3."""
    if channels == 2:
        return [(0, 1), (1, 2)]
    sizes = [4] * (channels // 4)
    rest = channels % 4
    if rest == 2:
        sizes[-1:] = [3, 3]
    elif rest:
        sizes.append(rest)
    bounds = np.cumsum([0, *sizes])
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


def _by_channels(apply, image: np.ndarray, border: dict) -> np.ndarray:
    """``apply(part, border)`` on an HWC image, by channel groups (``_channel_groups``); the
    channel axis OpenCV drops for one channel is put back."""
    groups = _channel_groups(image.shape[2])
    if len(groups) == 1:
        out = apply(image, border)
        return out.reshape(*out.shape[:2], image.shape[2])
    parts = []
    for start, stop in groups:
        part = apply(np.ascontiguousarray(image[:, :, start:stop]), border)
        parts.append(part.reshape(*part.shape[:2], stop - start))
    return np.concatenate(parts, axis=2)


def _border(cv2, fill: float | None, dtype: np.dtype) -> tuple[dict, float | None]:
    """OpenCV's border arguments for DALI's ``fill`` (converted to the input type first, as
    DALI does), and the converted value."""
    if fill is None:
        return {"borderMode": cv2.BORDER_REPLICATE}, None
    value = float(convert_sat(np.asarray(fill, dtype=np.float64), dtype))
    return {"borderMode": cv2.BORDER_CONSTANT, "borderValue": (value,) * 4}, value


def nearest_maps(sx: np.ndarray, sy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DALI's nearest-neighbour source indices, ``floor`` of the corner coordinates, as float32
    maps for ``cv2.remap``: whole numbers, which its nearest mode takes as they are (pixel
    ``k``'s centre is ``k`` in OpenCV's coordinates); ones outside the image read the border.
    Overwrites ``sx`` and ``sy``."""
    np.floor(sx, out=sx)
    np.floor(sy, out=sy)
    return sx, sy


def _running_sums(matrix: np.ndarray, out_size: tuple[int, int]) -> np.ndarray:
    """DALI's float32 source points as a (W, 2H) array: column k holds the x points (first H)
    and the y points (last H) of output column k. The running sums are sequential along x, so
    they are stepped column by column, all rows of both coordinates at once (np.cumsum is not
    vectorised across rows and takes twice as long)."""
    m = np.asarray(matrix, dtype=np.float32)
    out_h, out_w = out_size
    ys = np.arange(out_h, dtype=np.float32) + np.float32(0.5)
    grid = np.empty((out_w, 2 * out_h), np.float32)
    step = np.repeat(m[:, 0], out_h)
    with np.errstate(over="ignore", invalid="ignore"):
        grid[0, :out_h] = m[0, 2] + m[0, 0] * np.float32(0.5) + m[0, 1] * ys
        grid[0, out_h:] = m[1, 2] + m[1, 0] * np.float32(0.5) + m[1, 1] * ys
        rows = list(grid)
        for previous, row in itertools.pairwise(rows):
            np.add(previous, step, out=row)
    return grid


def affine_points(matrix: np.ndarray, out_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The source point of every output pixel, ``matrix @ (x + 0.5, y + 0.5, 1)``, in float32
    exactly as DALI's CPU warp computes it (``WarpCPU`` for affine mappings): the first point
    of a row as ``t + a*0.5 + b*(y + 0.5)``, then ``+ a`` pixel by pixel (a running float32
    sum, so points that are whole numbers in exact arithmetic may land an ulp off, and
    ``floor`` with them). Returns the (x, y) arrays of shape ``out_size``."""
    out_h = out_size[0]
    grid = _running_sums(matrix, out_size)
    return np.ascontiguousarray(grid[:, :out_h].T), np.ascontiguousarray(grid[:, out_h:].T)


def affine(
    image: np.ndarray,
    matrix: np.ndarray,
    out_size: tuple[int, int],
    *,
    interp: str = LINEAR,
    fill: float | None = None,
    dtype: np.dtype | None = None,
    cv2=None,
) -> np.ndarray:
    """``warp_affine`` (same arguments and result), fast (``cv2``: the module, from
    ``backend.opencv()``): linear uint8 by ``cv2.warpAffine`` (within 1 level), the rest as DALI's
    source points sampled by OpenCV's ``remap`` (``sample_points``; exact but for OpenCV's
    float32 interpolation order); without ``cv2`` or beyond its size limits,
    ``warp_affine`` itself.

    The points come column-major from ``_running_sums``: OpenCV samples them as they are,
    into a transposed output, and transposes that (a uint8 image) back; transposing the float32
    points instead costs several times more (their rows, 2H floats apart, are often a power of
    two bytes apart, the worst stride for caches)."""
    dtype = np.dtype(dtype or image.dtype)
    in_h, in_w = image.shape[:2]
    out_h, out_w = out_size
    if interp not in (NEAREST, LINEAR):
        raise ValueError(f"warp_affine supports nearest and linear sampling, got {interp!r}")
    if cv2 is None or not fits_opencv(in_h, in_w, out_h, out_w):
        return warp_affine(image, matrix, out_size, interp=interp, fill=fill, dtype=dtype)
    if interp == LINEAR and image.dtype == np.uint8 and dtype == np.uint8:
        return _warp_affine_uint8(image, matrix, out_size, fill, cv2)
    grid = _running_sums(matrix, out_size)
    if interp == NEAREST:
        np.floor(grid, out=grid)  # here, on the whole grid: 4x faster than on its two halves
    return sample_points(
        image,
        grid[:, :out_h],
        grid[:, out_h:],
        interp=interp,
        fill=fill,
        dtype=dtype,
        cv2=cv2,
        transposed=True,
        floored=interp == NEAREST,
    )


def _warp_affine_uint8(
    image: np.ndarray, matrix: np.ndarray, out_size: tuple[int, int], fill: float | None, cv2
) -> np.ndarray:
    """Linear uint8 -> uint8 by ``cv2.warpAffine`` itself (Albumentations' kernel): twice as
    fast as sampling DALI's points, within 1 level of DALI (see the module docstring)."""
    border, _ = _border(cv2, fill, image.dtype)
    m = np.asarray(matrix, dtype=np.float32).astype(np.float64)
    centred = m.copy()
    centred[:, 2] += 0.5 * (m[:, 0] + m[:, 1]) - 0.5  # corner -> pixel-centre coordinates
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    size = (out_size[1], out_size[0])

    def apply(part: np.ndarray, border: dict) -> np.ndarray:
        return cv2.warpAffine(part, centred, size, flags=flags, **border)

    return _by_channels(apply, image, border)


def sample_points(
    image: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    *,
    interp: str = NEAREST,
    fill: float | None = None,
    dtype: np.dtype | None = None,
    cv2=None,
    transposed: bool = False,
    floored: bool = False,
) -> np.ndarray:
    """DALI's ``Sampler2D`` on an HWC image at the float32 source points ``(sx, sy)`` (corner
    coordinates: pixel ``i`` spans ``[i, i + 1)``): nearest takes ``floor``, linear
    interpolates around ``p - 0.5``; taps outside the image read ``fill`` (converted to the
    input type), or clamp when it is ``None``. Returns an array of ``sx.shape`` + channels
    (``transposed``: the points are given as (W, H) arrays, the result is (H, W) + channels;
    ``floored``: the points are whole numbers already, for nearest).

    Nearest is exact; linear is ``cv2.remap`` on float32 (OpenCV 5 interpolates in float:
    within 1 level of DALI's formula, equal on the parity inputs).
    Without ``cv2``, or beyond OpenCV's size limits, NumPy does it (exact). May overwrite
    ``sx`` and ``sy``.
    """
    dtype = np.dtype(dtype or image.dtype)
    in_h, in_w = image.shape[:2]
    if cv2 is None or not fits_opencv(in_h, in_w, *sx.shape):
        if transposed:
            sx, sy = sx.T, sy.T
        return _sample_numpy(image, sx, sy, interp, fill, dtype)
    border, _ = _border(cv2, fill, image.dtype)
    if interp == NEAREST:
        map_x, map_y = (sx, sy) if floored else nearest_maps(sx, sy)
        flags, source, finish = cv2.INTER_NEAREST, image, None
        if dtype != image.dtype:
            finish = lambda part: convert_sat(part, dtype)  # noqa: E731
    else:
        with np.errstate(invalid="ignore"):
            map_x = np.subtract(sx, np.float32(0.5), out=sx)
            map_y = np.subtract(sy, np.float32(0.5), out=sy)
        flags = cv2.INTER_LINEAR
        source = image if image.dtype == np.float32 else image.astype(np.float32)
        # Interpolated from the image and a fill of its own type: within the type's range.
        in_range = dtype == image.dtype
        finish = lambda part: store(part, dtype, in_range)  # noqa: E731

    def apply(part: np.ndarray, border: dict) -> np.ndarray:
        out = cv2.remap(part, map_x, map_y, flags, **border)
        if finish is not None:
            out = finish(out)
        return cv2.transpose(out) if transposed else out

    return _by_channels(apply, source, border)


def _sample_numpy(
    image: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    interp: str,
    fill: float | None,
    dtype: np.dtype,
) -> np.ndarray:
    """``sample_points`` in NumPy, exactly DALI's formulas (what ``warp_affine`` does).

    Written against the array module of ``image`` (NumPy or CuPy; ``sx`` and ``sy`` on the same
    device): the GPU kernels of ``fn.rotate`` and ``fn.warp_affine`` are this function on CuPy
    arrays. Only elementwise math, ``clip``/``floor``/``astype``, ``pad`` with a constant and
    ``take`` along an axis, which CuPy has with NumPy's signatures."""
    xp = backend.array_module(image)
    source, offset = image, 0
    if fill is not None:
        border = convert_sat(np.asarray(fill, dtype=np.float64), image.dtype).item()
        source = xp.pad(image, ((1, 1), (1, 1), (0, 0)), mode="constant", constant_values=border)
        offset = 1
    height, width, channels = source.shape
    flat = source.reshape(height * width, channels)

    def taps(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
        ix = xp.clip(ix + offset, 0, width - 1)
        iy = xp.clip(iy + offset, 0, height - 1)
        return flat.take(iy * width + ix, axis=0)

    # Points beyond one pixel outside the image all read the border: clipping them there keeps
    # the weights finite and the indices in range (NaN points read an arbitrary border tap).
    with np.errstate(over="ignore", invalid="ignore"):
        if interp == NEAREST:
            ix = xp.floor(xp.clip(sx, -2, width)).astype(np.int64)
            iy = xp.floor(xp.clip(sy, -2, height)).astype(np.int64)
            out = taps(ix, iy)
            return out if dtype == image.dtype else convert_sat(out, dtype)
        half = np.float32(0.5)
        x = xp.clip(sx, -2, width).astype(np.float32, copy=False) - half
        y = xp.clip(sy, -2, height).astype(np.float32, copy=False) - half
        x0f = xp.floor(x)
        y0f = xp.floor(y)
        qx = (x - x0f)[..., None]
        qy = (y - y0f)[..., None]
        px = 1.0 - qx
        x0 = x0f.astype(np.int64)
        y0 = y0f.astype(np.int64)
        f32 = np.float32
        s0 = taps(x0, y0).astype(f32) * px + taps(x0 + 1, y0).astype(f32) * qx
        s1 = taps(x0, y0 + 1).astype(f32) * px + taps(x0 + 1, y0 + 1).astype(f32) * qx
        return convert_sat(s0 + (s1 - s0) * qy, dtype)


# --- separable resampling ------------------------------------------------------------------


def _cubic_window(x: np.ndarray) -> np.ndarray:
    # Catmull-Rom (a = -0.5), the cubic of DALI's resampling_windows.h and of Pillow's BICUBIC.
    x = np.abs(x)
    near = (1.5 * x - 2.5) * x * x + 1
    far = ((-0.5 * x + 2.5) * x - 4) * x + 2
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _lanczos_window(x: np.ndarray, a: float = 3.0) -> np.ndarray:
    return np.where(np.abs(x) < a, np.sinc(x) * np.sinc(x / a), 0.0)


def _filter_table(kind: str) -> np.ndarray:
    """DALI's tabulated filter (``InitFilters``): the window sampled at evenly spaced points."""
    if kind in (LINEAR, TRIANGULAR):
        return np.array([0.0, 1.0, 0.0], np.float32)
    if kind == GAUSSIAN:
        n = 65
        x = 4 * (np.arange(n) - (n - 1) * 0.5) / (n - 1)
        return np.exp(-x * x).astype(np.float32)
    if kind == CUBIC:
        n = 129
        x = 4 * (np.arange(n) - (n - 1) * 0.5) / (n - 1)
        return _cubic_window(x).astype(np.float32)
    if kind == LANCZOS3:
        n = 2 * 3 * 32 + 1
        x = 6 * (np.arange(n) - (n - 1) * 0.5) / (n - 1)
        return _lanczos_window(x).astype(np.float32)
    raise ValueError(f"unknown resampling filter {kind!r}")


def _filter_support(kind: str, in_size: float, out_size: int, antialias: bool) -> float:
    """The filter's width in source pixels (DALI's ``DefaultFilterRadius`` and ``rescale``)."""
    ratio = in_size / out_size if antialias and in_size > out_size else 1.0
    if kind == LINEAR:
        return 2.0
    if kind == TRIANGULAR:
        return max(1.0, 2.0 * ratio)
    if kind == GAUSSIAN:
        sigma = ratio * 0.5 / math.sqrt(2)
        return max(1.0, 4 * math.sqrt(2) * sigma)
    if kind == CUBIC:
        return 4.0 * ratio
    if kind == LANCZOS3:
        return 6.0 * ratio
    raise ValueError(f"unknown resampling filter {kind!r}")


def _weights(
    kind: str, in_size: int, lo: float, hi: float, out_size: int, antialias: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Tap indices (out_size, K), clamped to the input, and their normalised weights."""
    table = _filter_table(kind)
    support_px = _filter_support(kind, abs(hi - lo), out_size, antialias)
    n = len(table)
    scale_f = np.float32((n - 1) / support_px)  # table steps per source pixel
    anchor = np.float32((n - 1) * 0.5 / scale_f)  # filter centre, in source pixels
    taps = max(1, math.ceil((n - 1) / scale_f))
    step = np.float32((hi - lo) / out_size)
    origin = np.float32(lo) + np.float32(0.5) * step - np.float32(0.5) - anchor
    sx0f = np.arange(out_size, dtype=np.float32) * step + origin
    sx0 = np.ceil(sx0f)
    pos = (sx0 - sx0f)[:, None] + np.arange(taps, dtype=np.float32)[None, :]
    t = pos * scale_f
    i0 = np.floor(t)
    d = t - i0
    i0 = i0.astype(np.int64)
    inside0 = (i0 >= 0) & (i0 < n)
    inside1 = (i0 + 1 >= 0) & (i0 + 1 < n)
    f0 = np.where(inside0, table[np.clip(i0, 0, n - 1)], 0)
    f1 = np.where(inside1, table[np.clip(i0 + 1, 0, n - 1)], 0)
    coeffs = np.where(t > -1, f0 + d * (f1 - f0), 0).astype(np.float32)
    total = coeffs.sum(axis=1, keepdims=True)
    coeffs = np.divide(coeffs, total, out=coeffs, where=total != 0)
    index = sx0.astype(np.int64)[:, None] + np.arange(taps)[None, :]
    return np.clip(index, 0, in_size - 1), coeffs


def _nearest_taps(in_size: int, lo: float, hi: float, out_size: int) -> np.ndarray:
    """The source index of each output pixel of a nearest-neighbour axis (float32, floor of
    the pixel centre's source point, clamped to the input)."""
    step = (hi - lo) / out_size
    src = np.floor(np.float32(lo) + (np.arange(out_size, dtype=np.float32) + 0.5) * step)
    return np.clip(src.astype(np.int64), 0, in_size - 1)


def resample_axis(
    data: np.ndarray,
    axis: int,
    out_size: int,
    lo: float,
    hi: float,
    kind: str,
    antialias: bool,
) -> np.ndarray:
    """Resample float32 ``data`` along ``axis``: the source interval ``[lo, hi)`` (``lo > hi``
    flips) becomes ``out_size`` pixels, sampled at pixel centres as DALI does. Returns float32.

    ``data`` may be a CuPy array (the weights are made on the host and moved to its device):
    one ``take`` and one multiply-add per filter tap, in tap order."""
    xp = backend.array_module(data)
    in_size = data.shape[axis]
    moved = xp.moveaxis(data, axis, 0)
    if kind == NEAREST:
        index = xp.asarray(_nearest_taps(in_size, lo, hi, out_size))
        return xp.moveaxis(moved.take(index, axis=0), 0, axis)
    index, coeffs = _weights(kind, in_size, lo, hi, out_size, antialias)
    index, coeffs = xp.asarray(index), xp.asarray(coeffs)
    shape = (out_size,) + (1,) * (moved.ndim - 1)
    out = xp.zeros((out_size, *moved.shape[1:]), np.float32)
    for k in range(index.shape[1]):
        out += coeffs[:, k].reshape(shape) * moved.take(index[:, k], axis=0)
    return xp.moveaxis(out, 0, axis)


def resample_matrix(
    kind: str, in_size: int, lo: float, hi: float, out_size: int, antialias: bool
) -> np.ndarray:
    """``resample_axis`` as an (out_size, in_size) float32 matrix (on the host): row ``o``
    holds output pixel ``o``'s weights at their (clamped) source indices, the taps that clamp
    to one index summed. ``matrix @ data`` resamples the first axis of ``data``: the GPU
    resize is two such products (``resize.separable_resize``)."""
    if kind == NEAREST:
        index = _nearest_taps(in_size, lo, hi, out_size)[:, None]
        coeffs = np.ones((out_size, 1), np.float32)
    else:
        index, coeffs = _weights(kind, in_size, lo, hi, out_size, antialias)
    matrix = np.zeros((out_size, in_size), np.float32)
    rows = np.arange(out_size)
    for k in range(index.shape[1]):  # one index per row and tap: no repeated (row, col) pair
        matrix[rows, index[:, k]] += coeffs[:, k]
    return matrix
