"""``fn.gaussian_blur``: a separable correlation with DALI's Gaussian windows.

DALI facts (``gaussian_blur.cc``, ``gaussian_blur_params.h``; checked against DALI 2.4's output):

- ``sigma`` and ``window_size`` are given per data axis (outermost first: ``(sigma_y,
  sigma_x)`` for HWC) or once for all; both may be per sample. Per axis, with only sigma the
  window is ``2 * ceil(3 * sigma) + 1``; with only the window, ``sigma = (radius - 1) * 0.3 +
  0.8`` with ``radius = (window - 1) // 2`` (OpenCV's rule); both 0 is an error, and so is a
  negative value or an even window. A window of 1 copies the input.
- The window (float32): ``w[x] = exp(-x**2 / (2 sigma**2))`` for ``x < 0``, mirrored, with 1 in
  the middle, divided by its sum computed as DALI does (half sum, times 2, plus 1), so that it
  sums to 1.
- Data axes, planes and borders: ``kernels.py`` (an input without a layout has no channels:
  every axis is blurred; reflect-101 borders).
- ``dtype``: the input's type (default) or FLOAT, nothing else. The sums are in float32
  (float64 for float64 inputs), then converted with ConvertSat (halves away from zero).
- Types: every integer type, float16, float32 and float64 (bool is refused, as in DALI).

Speed: the two innermost axes are one ``cv2.sepFilter2D`` call per plane (float32 output),
then one rounding pass; a third axis is a NumPy loop over its window.

GPU (``device="gpu"``): ``GaussianBlur.gpu`` is ``kernels.separable_xp`` on CuPy arrays (one
``take`` for the border, one multiply-add of a shifted slice per tap, per data axis) with the
same windows, computed on the host as the CPU computes them, and the same ``convert_sat``. The
sums are in window order (DALI's), OpenCV's are not: float32 results differ from the CPU's in
the last bits, and integer outputs by one level where a sum lands next to an exact half (the
CPU's own distance to DALI: tests/dali_parity/cases_filters.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.filters import kernels
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_floats,
    to_ints,
)
from augkit.types import DALIDataType  # (in the class, ``types`` is its input types)

NAME = "gaussian_blur"
TYPES = kernels.NUMBER_TYPES  # every integer and float type


def sigma_to_window(sigma: float) -> int:
    """DALI's ``SigmaToDiameter``: ``2 * ceil(3 * sigma) + 1`` (in float32)."""
    return int(2 * math.ceil(np.float32(sigma) * np.float32(3)) + 1)


def window_to_sigma(window: int) -> float:
    """DALI's ``DiameterToSigma`` (OpenCV's rule): ``(radius - 1) * 0.3 + 0.8``."""
    radius = (window - 1) // 2
    return float(np.float32((radius - 1) * 0.3 + 0.8))


def gaussian_window(window: int, sigma: float) -> np.ndarray:
    """DALI's ``FillGaussian``: the normalised float32 window of ``window`` taps.

    Example:
        >>> gaussian_window(3, 0.8).round(4)
        array([0.239, 0.522, 0.239], dtype=float32)
    """
    radius = (window - 1) // 2
    f32 = np.float32
    exp_scale = f32(0.5) / (f32(sigma) * f32(sigma))
    out = np.empty(window, np.float32)
    total = f32(0.0)
    for x in range(-radius, 0):
        out[x + radius] = f32(np.exp(-(f32(x * x) * exp_scale)))
        total = f32(total + out[x + radius])
    total = f32(total * f32(2.0))
    total = f32(total + f32(1.0))
    scale = f32(1.0) / total
    out[radius] = scale
    for x in range(radius):
        out[x] = f32(out[x] * scale)
        out[2 * radius - x] = out[x]
    return out


def axis_windows(
    sigmas: tuple[float, ...], windows: tuple[int, ...], axes: int, operator: str = NAME
) -> list[np.ndarray]:
    """The window of each data axis (outermost first) from the per-axis arguments."""
    sigmas = kernels.per_axis(sigmas, axes, operator, "sigma")
    windows = kernels.per_axis(windows, axes, operator, "window_size")
    result = []
    for axis, (sigma, size) in enumerate(zip(sigmas, windows, strict=True)):
        if sigma == 0 and size == 0:
            raise ValueError(
                f"{operator}: `sigma` and `window_size` must not both be 0 (axis {axis}); "
                f"give one of them"
            )
        if size == 0:
            size = sigma_to_window(sigma)
        elif sigma == 0:
            sigma = window_to_sigma(size)
        if size % 2 == 0:
            raise ValueError(f"{operator}: `window_size` must be odd, got {size} (axis {axis})")
        result.append(gaussian_window(size, sigma))
    return result


class GaussianBlur(kernels.FilterOperator):
    """Separable Gaussian correlation per plane, DALI's windows, ConvertSat to the output."""

    operator_name = NAME
    types = TYPES

    def cpu(self, sample: np.ndarray, **args: Any) -> np.ndarray:
        return self._blur(sample, self.cv2, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU kernel's windows and rounding, correlated without OpenCV on ``sample``'s
        array module (CuPy on the GPU): ``kernels.separable_xp``."""
        return self._blur(sample, None, backend.array_module(sample), **args)

    @staticmethod
    def _blur(
        sample: Any,
        cv2: Any,
        xp: Any,
        *,
        layout: str,
        sigma: tuple[float, ...],
        window_size: tuple[int, ...],
        dtype: DALIDataType | None,
        **_: Any,
    ) -> Any:
        leading, axes, has_channels = kernels.data_axes(NAME, layout, sample.ndim)
        out_dtype = kernels.output_type(NAME, sample.dtype, dtype)
        windows = axis_windows(sigma, window_size, axes)
        if sample.size == 0:
            return xp.empty(sample.shape, out_dtype)
        if cv2 is not None:  # the CPU: OpenCV's filters (kernels.separable)
            values = kernels.separable(cv2, sample, windows, leading, has_channels)
        else:
            values = kernels.separable_xp(sample, windows, leading, xp)
        return kernels.to_output(values, out_dtype, xp)


register(
    OperatorSchema(
        name=NAME,
        class_name="GaussianBlur",
        impl=GaussianBlur,
        accepts=[kernels.IMAGE_OR_VOLUME],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Blurs with a Gaussian window, separably along each data axis (H and W of an "
            "image; D too for a volume), as DALI's ``fn.gaussian_blur``. Give ``sigma`` "
            "(window: ``2 * ceil(3 * sigma) + 1``) or ``window_size`` (odd; sigma: ``(radius - "
            "1) * 0.3 + 0.8``) or both, once or per axis (outermost first), constant or per "
            "sample. Borders reflect without repeating the edge (reflect 101). Channels (a "
            "trailing C) and leading C/F axes are not blurred across; an input without a layout "
            "has no channels, so all its axes are blurred. Sums in float32; ``dtype`` is the "
            "input type (default) or FLOAT, converted with rounding half away from zero and "
            "saturation. On the GPU the sums are in DALI's order, so integer outputs can differ "
            "from the CPU's (OpenCV's order) by one level where a value lands next to a half."
        ),
        args=[
            Arg(
                "sigma",
                "standard deviation of the window, once or per data axis (0: from window_size)",
                (0.0,),
                to_floats(low=0),
                per_sample=True,
            ),
            Arg(
                "window_size",
                "the window's diameter (odd), once or per data axis (0: from sigma)",
                (0,),
                to_ints(low=0),
                per_sample=True,
            ),
            kernels.DTYPE_ARG,
        ],
    )
)
