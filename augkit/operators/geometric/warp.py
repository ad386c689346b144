"""Sampling kernels shared by the geometric operators, written to DALI's CPU conventions.

- ``convert_sat``: DALI's ``ConvertSat`` on the CPU (round half away from zero, then saturate).
- ``warp_affine``: the inverse-mapping sampler of ``fn.rotate`` (and of any later affine
  operator): output pixel ``(x, y)`` reads the input at ``M @ (x + 0.5, y + 0.5, 1)``.
- ``resample_axis``: DALI's separable resampling along one axis (Linear, Triangular, Cubic,
  Lanczos3, Gaussian and Nearest filters), for the cases Pillow cannot do (``fn.resize``).

All of them are pure NumPy functions of their arguments: no state, no randomness.

Traps, checked against DALI's sources (``kernels/imgproc/sampler.h``,
``kernels/imgproc/resample/resampling_impl_cpu.{h,cc}``, ``resampling_filters.cu``):

- The linear sampler subtracts 0.5 from the source coordinate, then interpolates between
  ``floor`` and ``floor + 1``; the nearest sampler takes ``floor`` of the coordinate itself.
  Both compute in float32, in DALI's order (``s0 = s00*px + s01*qx``, ``s0 + (s1 - s0)*qy``).
- With a fill value, each of the four taps outside the image reads the fill value (so the edge
  blends into it over one pixel); without one, tap indices are clamped to the image.
- Pillow's ``Image.transform(..., BILINEAR)`` is not a substitute: for uint8 it truncates
  instead of rounding, and it never blends the edge with the fill colour.
- The resampler's integer outputs are ``clamp(0.5 + sum)`` truncated (round half up for
  non-negative values), not ConvertSat; border taps are clamped, and the weights of each
  output pixel are normalised to sum 1.
"""

from __future__ import annotations

import math

import numpy as np

NEAREST = "nearest"
LINEAR = "linear"
TRIANGULAR = "triangular"
CUBIC = "cubic"
LANCZOS3 = "lanczos3"
GAUSSIAN = "gaussian"


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
    info = np.iinfo(dtype)
    wide = values.astype(np.float64, copy=False)
    rounded = np.copysign(np.floor(np.abs(wide) + 0.5), wide)
    return np.clip(rounded, info.min, info.max).astype(dtype)


def truncate_sat(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype`` the way DALI's resampler stores integers: ``clamp(v + 0.5)``
    (saturate, then truncate toward zero). Floats: a plain cast."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    biased = values.astype(np.float64, copy=False) + 0.5
    return np.trunc(np.clip(biased, info.min, info.max)).astype(dtype)


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
        An (out_H, out_W, C) array of ``dtype``.
    """
    dtype = np.dtype(dtype or image.dtype)
    out_h, out_w = out_size
    m = np.asarray(matrix, dtype=np.float32)
    xs = np.arange(out_w, dtype=np.float32) + np.float32(0.5)
    ys = np.arange(out_h, dtype=np.float32) + np.float32(0.5)
    # DALI's affine(): t + a*x + b*y, evaluated in float32 in that order.
    sx = (m[0, 2] + m[0, 0] * xs)[None, :] + (m[0, 1] * ys)[:, None]
    sy = (m[1, 2] + m[1, 0] * xs)[None, :] + (m[1, 1] * ys)[:, None]

    source, offset = image, 0
    if fill is not None:
        # One pixel of fill around the image: every tap outside it then clamps onto the fill.
        border = convert_sat(np.asarray(fill, dtype=np.float64), image.dtype)
        source = np.pad(image, ((1, 1), (1, 1), (0, 0)), constant_values=border)
        offset = 1
    height, width, channels = source.shape
    flat = source.reshape(height * width, channels)

    def taps(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
        ix = np.clip(ix + offset, 0, width - 1)
        iy = np.clip(iy + offset, 0, height - 1)
        return np.take(flat, iy * width + ix, axis=0)

    if interp == NEAREST:
        ix = np.floor(sx).astype(np.int64)
        iy = np.floor(sy).astype(np.int64)
        return convert_sat(taps(ix, iy), dtype) if dtype != image.dtype else taps(ix, iy)
    if interp != LINEAR:
        raise ValueError(f"warp_affine supports nearest and linear sampling, got {interp!r}")

    x = sx - np.float32(0.5)
    y = sy - np.float32(0.5)
    x0f = np.floor(x)
    y0f = np.floor(y)
    qx = (x - x0f)[..., None]
    qy = (y - y0f)[..., None]
    px = np.float32(1) - qx
    x0 = x0f.astype(np.int64)
    y0 = y0f.astype(np.int64)
    # float32, as DALI: infinite samples give inf or NaN (inf * 0) quietly, no NumPy warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        s00 = taps(x0, y0).astype(np.float32)
        s01 = taps(x0 + 1, y0).astype(np.float32)
        s0 = s00 * px + s01 * qx
        del s00, s01
        s10 = taps(x0, y0 + 1).astype(np.float32)
        s11 = taps(x0 + 1, y0 + 1).astype(np.float32)
        s1 = s10 * px + s11 * qx
        del s10, s11
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
    flips) becomes ``out_size`` pixels, sampled at pixel centres as DALI does. Returns float32."""
    in_size = data.shape[axis]
    moved = np.moveaxis(data, axis, 0)
    if kind == NEAREST:
        step = (hi - lo) / out_size
        src = np.floor(np.float32(lo) + (np.arange(out_size, dtype=np.float32) + 0.5) * step)
        index = np.clip(src.astype(np.int64), 0, in_size - 1)
        return np.moveaxis(np.take(moved, index, axis=0), 0, axis)
    index, coeffs = _weights(kind, in_size, lo, hi, out_size, antialias)
    shape = (out_size,) + (1,) * (moved.ndim - 1)
    out = np.zeros((out_size, *moved.shape[1:]), np.float32)
    for k in range(index.shape[1]):
        out += coeffs[:, k].reshape(shape) * np.take(moved, index[:, k], axis=0)
    return np.moveaxis(out, 0, axis)
