"""``fn.laplacian``: the sum of second partial derivatives, each a separable correlation, as
DALI computes it.

DALI facts (``laplacian.cc``, ``laplacian_params.h``, ``kernels/.../laplacian_cpu.h``,
``laplacian_windows.h``; checked against DALI 2.4's output):

- The partial derivative along data axis ``i`` correlates with a derivative window of
  ``window_size[i]`` taps along ``i`` and smoothing windows along the other axes: of
  ``smoothing_size[j]`` taps along axis ``j`` when ``smoothing_size`` is given, otherwise of
  ``window_size[i]`` taps (the derivative's own size) along every other axis.
- Windows (OpenCV's): smoothing of ``n`` taps = binomial coefficients ``C(n-1, k)`` ([1], [1, 2,
  1], [1, 4, 6, 4, 1], ...); derivative of ``n`` taps = the smoothing window of ``n - 2`` taps
  correlated with ``[1, -2, 1]``. They are integers, so for integer inputs the sums are exact in
  float32 and the order of summation does not matter.
- Scales: ``scale`` (once or per axis, per sample), or with ``normalized_kernel=True``
  ``2 ** -(s - n - 2)`` per derivative, ``s`` the sum of its window sizes and ``n`` the number
  of data axes. Giving both is an error.
- ``out = ConvertSat(d_last * scale_last + (... + (d_1 * scale_1 + d_0 * scale_0)))`` in
  float32: DALI accumulates the outer derivatives first. A uint8 output clips negative
  responses to 0 (use ``dtype=types.FLOAT`` to keep them).
- Window sizes are odd: derivative 3..23, smoothing 1..23 (DALI's documented range).
- Types: every integer type, float16 and float32 (not float64, as in DALI); ``dtype`` is the
  input type (default) or FLOAT. Data axes and borders (reflect 101): ``kernels.py``.
- The GPU kernel (``device="gpu"``) is the same function with ``kernels.separable_xp`` (the
  correlation on CuPy, in DALI's tap order) in place of OpenCV's; the windows and scales are
  made on the host. Integer images give the same exact sums.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.filters import kernels
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_bool,
    to_floats,
    to_ints,
)
from augkit.types import DALIDataType  # (in the class, ``types`` is its input types)

NAME = "laplacian"
MAX_WINDOW = 23
TYPES = tuple(t for t in kernels.NUMBER_TYPES if t != np.float64)  # all but float64


def smoothing_window(size: int) -> np.ndarray:
    """The binomial smoothing window of ``size`` taps (float32).

    Example:
        >>> smoothing_window(5)
        array([1., 4., 6., 4., 1.], dtype=float32)
    """
    return np.array([comb(size - 1, k) for k in range(size)], np.float32)


def derivative_window(size: int) -> np.ndarray:
    """The second-derivative window of ``size`` taps (float32).

    Example:
        >>> derivative_window(5)
        array([ 1.,  0., -2.,  0.,  1.], dtype=float32)
    """
    return np.convolve(smoothing_window(size - 2), [1.0, -2.0, 1.0]).astype(np.float32)


def _check_sizes(sizes: tuple[int, ...], low: int, name: str) -> None:
    for size in sizes:
        if not (low <= size <= MAX_WINDOW and size % 2 == 1):
            raise ValueError(
                f"{NAME}: `{name}` must be an odd integer between {low} and {MAX_WINDOW}, "
                f"got {size}"
            )


def window_sizes(
    window_size: tuple[int, ...], smoothing_size: tuple[int, ...] | None, axes: int
) -> list[list[int]]:
    """``sizes[i][j]``: the taps along axis ``j`` of the derivative along axis ``i``."""
    deriv = kernels.per_axis(window_size, axes, NAME, "window_size")
    _check_sizes(deriv, 3, "window_size")
    if smoothing_size is None:
        return [[deriv[i]] * axes for i in range(axes)]
    smooth = kernels.per_axis(smoothing_size, axes, NAME, "smoothing_size")
    _check_sizes(smooth, 1, "smoothing_size")
    return [[deriv[i] if i == j else smooth[j] for j in range(axes)] for i in range(axes)]


def normalization(sizes: list[list[int]]) -> tuple[float, ...]:
    """DALI's ``normalized_kernel`` factors: ``2 ** -(s - n - 2)`` per derivative."""
    n = len(sizes)
    return tuple(float(2.0 ** -(sum(row) - n - 2)) for row in sizes)


def _validate(args: dict[str, Any]) -> None:
    if args.get("normalized_kernel") is True and "scale" in args:
        raise ValueError("`scale` cannot be given when `normalized_kernel` is True")


class Laplacian(kernels.FilterOperator):
    operator_name = NAME
    types = TYPES

    def cpu(self, sample: np.ndarray, **args: Any) -> np.ndarray:
        return self._laplacian(sample, self.cv2, np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU kernel's windows, scales and rounding, correlated without OpenCV on
        ``sample``'s array module (CuPy on the GPU): ``kernels.separable_xp``."""
        return self._laplacian(sample, None, backend.array_module(sample), **args)

    @staticmethod
    def _laplacian(
        sample: Any,
        cv2: Any,
        xp: Any,
        *,
        layout: str,
        window_size: tuple[int, ...],
        smoothing_size: tuple[int, ...] | None,
        scale: tuple[float, ...],
        normalized_kernel: bool,
        dtype: DALIDataType | None,
        **_: Any,
    ) -> Any:
        leading, axes, has_channels = kernels.data_axes(NAME, layout, sample.ndim)
        out_dtype = kernels.output_type(NAME, sample.dtype, dtype)
        sizes = window_sizes(window_size, smoothing_size, axes)
        if normalized_kernel:
            scales = normalization(sizes)
        else:
            scales = kernels.per_axis(scale, axes, NAME, "scale")
        if sample.size == 0:
            return xp.empty(sample.shape, out_dtype)
        acc = None
        with np.errstate(over="ignore", invalid="ignore"):
            for i, row in enumerate(sizes):
                windows = [
                    derivative_window(size) if j == i else smoothing_window(size)
                    for j, size in enumerate(row)
                ]
                if cv2 is not None:  # the CPU: OpenCV's filters
                    part = kernels.separable(cv2, sample, windows, leading, has_channels)
                else:
                    part = kernels.separable_xp(sample, windows, leading, xp)
                part *= np.float32(scales[i])
                acc = part if acc is None else part + acc
        return kernels.to_output(acc, out_dtype, xp)


register(
    OperatorSchema(
        name=NAME,
        class_name="Laplacian",
        impl=Laplacian,
        devices=("cpu", "gpu"),
        accepts=[kernels.IMAGE_OR_VOLUME],
        output_kinds=keeps_kind,
        validate=_validate,
        doc=(
            "Computes the Laplacian (the sum of the second partial derivatives along the data "
            "axes), as DALI's ``fn.laplacian``: each derivative is a separable correlation with "
            "a derivative window of ``window_size`` taps along its axis and binomial smoothing "
            "windows along the others (of ``smoothing_size`` taps where given, otherwise of "
            "``window_size``); each is multiplied by ``scale`` (or, with ``normalized_kernel``, "
            "by ``2**-(s - n - 2)``, s the sum of its window sizes and n the number of data "
            "axes). Sizes and scales are given once or per axis and may be per sample. Borders "
            "reflect 101; sums in float32; the result is converted to ``dtype`` (the input type "
            "by default, or FLOAT) with saturation, so a uint8 output clips negative values."
        ),
        args=[
            Arg(
                "window_size",
                "derivative window size (odd, 3..23), once or per axis",
                (3,),
                to_ints(low=0),
                per_sample=True,
            ),
            Arg(
                "smoothing_size",
                "smoothing window size (odd, 1..23), once or per axis (default: window_size)",
                None,
                to_ints(low=0),
                per_sample=True,
            ),
            Arg(
                "scale",
                "factor of each partial derivative, once or per axis",
                (1.0,),
                to_floats(),
                per_sample=True,
            ),
            Arg(
                "normalized_kernel",
                "scale each derivative by 2**-(s - n - 2) (then `scale` must not be given)",
                False,
                to_bool,
            ),
            kernels.DTYPE_ARG,
        ],
    )
)
