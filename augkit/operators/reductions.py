"""``fn.reductions.*``: ``sum``, ``mean``, ``mean_square``, ``rms``, ``min``, ``max``,
``std_dev`` and ``variance`` of each sample, along ``axes`` (or the layout letters
``axis_names``; neither: every axis), optionally keeping the reduced axes as extents of 1.

Types, as DALI 2.4 gives them on the CPU (measured; any other pair is refused, as DALI does):

===============  ================================  ==========================================
operator         default output                    ``dtype`` may be
===============  ================================  ==========================================
sum              uint64 for unsigned inputs,       the input's type; uint64/int64 (for 8-32
                 int64 for signed, float32 for     bit inputs of that signedness); float32
                 float32                           (not for 64-bit inputs)
mean, rms        float32                           the input's type, float32
mean_square      float32                           float32
min, max         the input's type                  (no ``dtype``)
std_dev,         float32                           (no ``dtype``)
variance
===============  ================================  ==========================================

Inputs may be any integer type or float32; float16, float64 and bool are refused (DALI's CPU
reductions have no kernels for them).

Decisions and traps:

- An integer output accumulates in its own type, wrapping around: ``sum(uint8, dtype=UINT8)``
  of values summing to 276 is 20, ``mean(int8 [100, 100, 100], dtype=INT8)`` is 44 / 3 -> 14.
  Integer means and roots are truncated toward zero (``mean([10, 11], dtype=UINT8)`` is 10).
  augkit sums integers exactly (int64/uint64) and wraps at the end, which is the same.
- Float sums are accumulated in float64 and rounded once to float32; a mean is then
  ``float32(sum) * float32(1 / N)`` (and an rms its float32 root), as DALI computes it, which
  makes means of integer data equal DALI's bit for bit. DALI accumulates in
  float32 (blocked), so a float32 sum of a million values differs from augkit's (closer to the
  exact sum) by a few float32 ulps; integer inputs of a few hundred thousand elements are
  exact in both.
- Speed: a reduction is arranged so that NumPy runs over long contiguous rows (an HWC image's
  HW is reduced as rows of W*C values, not over C = 3), and sums, and 8-bit sums of squares
  (``cv2.LUT`` of the squares), over all axes or over an image's HW are OpenCV's
  ``cv2.sumElems`` (float64, exact for these integers). For a 320x320 uint8 HWC image on one
  thread: sum/mean/max over HW 10-50 us, rms 100 us, std_dev 150 us (DALI 2.4: 50-380 us).
- ``min``/``max`` skip NaNs (DALI compares ``a < b``), and an empty reduction gives the type's
  largest (min) or lowest (max) value: 255 for uint8, ``3.4028235e38`` for float32. ``sum`` of
  nothing is 0, ``mean`` of nothing NaN.
- ``axes=[]`` reduces nothing (the values are converted to the output type). Axes may be
  negative; a repeated or out-of-range axis, an ``axis_names`` letter not in the layout, and
  ``axes`` with ``axis_names`` together are errors.
- The layout: kept with ``keep_dims``, else the reduced axes' letters are removed (a full
  reduction has none).
- ``std_dev(data, mean)`` / ``variance(data, mean)``: ``mean`` is DALI's second positional
  input, a node (``fn.reductions.mean(x, axes=..., keep_dims=...)``) with one value per output
  element (any shape of that volume); a one-element mean broadcasts (DALI reads past it and
  gives garbage). DALI needs a float32 mean; augkit takes any numeric type (in float64).
  ``ddof`` divides by ``N - ddof``: ``N == ddof`` gives inf, ``N < ddof`` a negative variance
  and a NaN std_dev, as in DALI. In a pipeline the mean must be a node for
  now (DALI also takes a Python number; augkit's graph does not turn constants into nodes yet).

GPU (``device="gpu"``, as DALI 2.4 has every ``fn.reductions`` operator; the automatic
augmentations' contrast and auto_contrast read mean, sum, min and max of GPU images):
``Reduction.gpu`` is the CPU kernel on the sample's array module (``backend.array_module``:
CuPy), with the same types, arguments, errors and layouts, without OpenCV and the row
arrangement (``xp.sum``/``xp.min``/``xp.max`` over ``axes``, which CuPy takes as a tuple):

- Integer sums (and sums of squares, squared in int64/uint64) are exact, wrapping at 2**64
  like the CPU's: equal to the CPU's bit for bit, whatever the order of the sum.
- Float sums are float64 as on the CPU (``xp.sum(..., dtype=float64)``; the CPU's OpenCV or
  pairwise order differs by float64 rounding, which the float32 result does not see but in
  a rare tie), then the CPU's ``_scaled`` in float32: means, rms, std_dev and variance equal
  the CPU's, or differ by one float32 ulp (tests/operators/test_gpu_reductions.py: 2e-7 relative).
  Not DALI's float32 GPU sums: keeping the CPU's sums keeps one set of numbers on both
  devices, within the CPU's own distance to DALI.
- min/max: NaNs replaced by the type's extreme (the CPU's ``initial``), ``xp.min``/``xp.max``,
  then joined with that extreme, as ``fmin.reduce(initial=...)``; an empty reduction gives it.
- std_dev/variance: the mean (the second input, moved to the device where it is not there)
  broadcast over the reduced axes, float64 squared differences summed on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.layouts import axis_letters, exclusive
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    register,
    to_bool,
    to_dtype,
    to_int,
    to_ints,
)
from augkit.operators.tensors.shape import SameBatchSize
from augkit.tensors import TensorList

_INPUTS = (*tuple(np.dtype(t) for t in "bBhHiIqQ"), np.dtype(np.float32))
_F32 = np.dtype(np.float32)


def _check_type(operator: str, sample: Any) -> None:
    if sample.dtype not in _INPUTS:
        raise ValueError(
            f"{operator} takes integer or float32 data; got {sample.dtype} (DALI's CPU "
            f"reductions have no kernel for it: cast it first)"
        )


def _wide(dtype: np.dtype) -> np.dtype:
    return np.dtype(
        np.float32 if dtype.kind == "f" else np.uint64 if dtype.kind == "u" else np.int64
    )


def _allowed(name: str, dtype: np.dtype) -> tuple[np.dtype, ...]:
    if name == "sum":
        if dtype.kind == "f":
            return (_F32,)
        if dtype.itemsize == 8:
            return (dtype,)
        return (dtype, _wide(dtype), _F32)
    if name == "mean_square":
        return (_F32,)
    return (dtype, _F32) if dtype != _F32 else (_F32,)


_names = axis_letters(
    "a layout string (the letters of the axes to reduce)", 'axis names repeat in "{value}"'
)


@described("an integer or a list of integers (distinct)")
def _axes(value: Any) -> tuple[int, ...]:
    axes = to_ints()(value)
    return axes


def reduced_axes(ndim: int, layout: str, axes: Any, axis_names: Any) -> tuple[int, ...]:
    """The axes a reduction works on, as indices in ``[0, ndim)``."""
    if axis_names is not None:
        missing = [c for c in axis_names if c not in layout]
        if missing or len(layout) != ndim:
            raise ValueError(
                f'axis_names "{axis_names}": {missing or axis_names} not in the layout "{layout}"'
            )
        return tuple(sorted(layout.index(c) for c in axis_names))
    if axes is None:
        return tuple(range(ndim))
    found = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range [{-ndim}, {ndim - 1}] for {ndim}-D data")
        found.append(a % ndim)
    if len(set(found)) != len(found):
        raise ValueError(f"axes repeat: {list(axes)}")
    return tuple(sorted(found))


class Reduction(SampleOperator):
    """One reduction; ``reduce(x, axes, keep, out_dtype)`` is the maths."""

    kind = "sum"

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def label_name(self) -> str:
        return f"reductions.{self.kind}"

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def out_dtype(self, dtype: np.dtype) -> np.dtype:
        given = self.args.get("dtype")
        if self.kind in ("min", "max"):
            return dtype
        if self.kind in ("std_dev", "variance"):
            return _F32
        default = _wide(dtype) if self.kind == "sum" else _F32
        out = np.dtype(given.numpy) if given is not None else default
        if out not in _allowed(self.kind, dtype):
            names = ", ".join(
                f"types.{types.from_numpy(t).name}" for t in _allowed(self.kind, dtype)
            )
            raise ValueError(
                f"dtype types.{types.from_numpy(out).name} is not supported for {dtype} "
                f"input (DALI allows {names})"
            )
        return out

    def cpu(self, sample: Any, *more: Any, **args: Any) -> Any:
        return self._run(np.asarray(sample), np, *more, **args)

    def gpu(self, sample: Any, *more: Any, **args: Any) -> Any:
        """The CPU kernel on the sample's array module (CuPy): the same sums, in the same
        types (module docstring, "GPU")."""
        return self._run(sample, backend.array_module(sample), *more, **args)

    def _run(
        self,
        x: Any,
        xp: Any,
        *more: Any,
        layout: str,
        axes: Any,
        axis_names: Any,
        keep_dims: bool,
        **args: Any,
    ) -> Any:
        _check_type(self.label_name(), x)
        reduce = reduced_axes(x.ndim, layout, axes, axis_names)
        out = self.out_dtype(x.dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            result = xp.asarray(self.reduce(x, reduce, out, *more, xp=xp, **args), out)
        if keep_dims:
            return result.reshape([1 if d in reduce else n for d, n in enumerate(x.shape)])
        return result.reshape([n for d, n in enumerate(x.shape) if d not in reduce])

    def reduce(
        self,
        x: Any,
        axes: tuple[int, ...],
        out: np.dtype,
        *more: Any,
        **args: Any,
    ) -> Any:
        """The reduced values of ``x`` over ``axes`` (one per kept element, in order, any
        shape of that volume), on ``xp`` (a keyword argument): NumPy (and OpenCV) or CuPy.
        ``more``: the operator's other inputs (``*more: Any, **args: Any``: each reduction
        names the inputs and arguments it takes, e.g. ``Variance``'s ``mean``)."""
        raise NotImplementedError

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        layout = inputs[0].layout() if inputs else ""
        if self.args["keep_dims"] or not layout:
            return layout
        ndim = len(layout)
        try:
            reduce = reduced_axes(ndim, layout, self.args["axes"], self.args["axis_names"])
        except ValueError:
            return ""
        return "".join(c for i, c in enumerate(layout) if i not in reduce)

    def empty_dtype(self, index: int) -> Any:
        dtype = self.args.get("dtype")
        return dtype.numpy if dtype is not None else None


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def _scaled(total: Any, n: int, xp: Any = np) -> Any:
    """``total / n`` as DALI computes it: the float32 total times the float32 ``1 / n``
    (``n == 0``: inf; ``n < 0``: negative), on ``xp``."""
    with np.errstate(divide="ignore"):
        inverse = np.float32(np.float64(1.0) / n) if n else np.float32(np.inf)
    return xp.asarray(total, np.float64).astype(np.float32) * inverse


def _rows(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``x`` as a contiguous (kept elements, reduced elements) array: one row per output
    element."""
    kept = [d for d in range(x.ndim) if d not in axes]
    order = kept + list(axes)
    rows = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    if order != list(range(x.ndim)):
        x = np.ascontiguousarray(np.transpose(x, order))
    return x.reshape(rows, _count(x, tuple(range(len(kept), x.ndim))))


def _reduce(
    ufunc: np.ufunc, x: np.ndarray, axes: tuple[int, ...], dtype: Any, initial: Any = None
) -> np.ndarray:
    """``ufunc.reduce`` of ``x`` over ``axes`` (a 1-D result: one value per kept element, in
    order), arranged so that NumPy's inner loops run over long contiguous runs: reducing the
    leading axes of an HWC image runs over rows of W*C values (H then W), not over C = 3, and
    a short trailing reduction is a loop over its few columns."""
    extra = {} if initial is None else {"initial": initial}
    lead = len(axes)
    if axes == tuple(range(lead)) and 0 < lead < x.ndim and x.size:
        kept = int(np.prod(x.shape[lead:]))
        if kept < 64 and lead >= 1:
            # (P, Q * kept) -> (Q, kept) -> (kept,): Q is the last reduced axis
            q = x.shape[lead - 1]
            step = ufunc.reduce(x.reshape(-1, q * kept), axis=0, dtype=dtype, **extra)
            return ufunc.reduce(step.reshape(q, kept), axis=0, dtype=dtype, **extra)
        return ufunc.reduce(x.reshape(-1, kept), axis=0, dtype=dtype, **extra)
    rows = _rows(x, axes)
    if 0 < rows.shape[1] <= 16 and rows.shape[0] >= 64:
        out = rows[:, 0].astype(dtype) if dtype is not None else rows[:, 0].copy()
        if initial is not None:
            out = ufunc(out, np.asarray(initial, out.dtype))
        for k in range(1, rows.shape[1]):
            ufunc(out, rows[:, k], out=out, casting="unsafe")
        return out
    return ufunc.reduce(rows, axis=1, dtype=dtype, **extra)


# cv2.sumElems sums 1 to 4 channels of these types in float64 (exactly, for these integers).
_CV_SUM_TYPES = tuple(np.dtype(t) for t in ("u1", "i1", "u2", "i2", "f4"))


def _cv_sum(cv2: Any, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray | None:
    """The sum over ``axes`` by OpenCV (``_cv_layout``); ``None`` where it does not apply."""
    if x.dtype not in _CV_SUM_TYPES:
        return None
    image = _cv_layout(x, axes)
    if image is None:
        return None
    return _channels(axes, x, cv2.sumElems(image))


def _cv_layout(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray | None:
    """``x`` as an OpenCV image whose channel sums are the sums over ``axes`` (a full
    reduction, or one over all but a last axis of 1 to 4 entries), or ``None``."""
    if x.size == 0 or x.size >= 2**31 or not 1 <= x.ndim <= 3:
        return None
    if axes == tuple(range(x.ndim)):
        return np.ascontiguousarray(x).reshape(1, -1)
    channels = x.shape[-1]
    if axes != tuple(range(x.ndim - 1)) or not 1 <= channels <= 4 or x.ndim == 1:
        return None
    return np.ascontiguousarray(x).reshape(1, -1, channels)


def _channels(axes: tuple[int, ...], x: np.ndarray, sums: Any) -> np.ndarray:
    count = 1 if axes == tuple(range(x.ndim)) else x.shape[-1]
    return np.array(sums[:count], np.float64).reshape(
        () if count == 1 and x.ndim == len(axes) else -1
    )


# Squares of 8-bit integers as uint16 look-up tables (cv2.LUT: a table lookup per byte);
# their sums are exact in float64 below 2**53.
_SQUARE_LUTS = {
    np.dtype("u1"): (np.arange(256, dtype=np.uint32) ** 2).astype(np.uint16),
    np.dtype("i1"): (np.arange(256, dtype=np.uint8).view(np.int8).astype(np.int32) ** 2).astype(
        np.uint16
    ),
}


def _cv_sum_squares(cv2: Any, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray | None:
    """The sum of squares over ``axes`` by OpenCV, for 8-bit integers; ``None`` otherwise."""
    lut = _SQUARE_LUTS.get(x.dtype)
    image = _cv_layout(x, axes) if lut is not None else None
    if image is None:
        return None
    squares = cv2.LUT(image.view(np.uint8), lut)
    return _channels(axes, x, cv2.sumElems(squares))


def _squares(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    """The squares of integer ``x``, exact (in 32 bits for 8/16-bit data, else in ``acc``,
    wrapping as DALI's accumulator does)."""
    if x.dtype.itemsize <= 2:
        return np.square(x, dtype=np.uint32 if x.dtype.kind == "u" else np.int32)
    wide = x.astype(acc)
    return np.multiply(wide, wide, out=wide)


def _int_sum(
    cv2: Any, x: np.ndarray, axes: tuple[int, ...], out: np.dtype, square: bool = False
) -> Any:
    """The exact integer sum (of squares), wrapped to ``out`` as DALI's accumulator wraps."""
    acc = np.dtype(np.uint64 if x.dtype.kind == "u" else np.int64)
    fast = _cv_sum_squares(cv2, x, axes) if square else _cv_sum(cv2, x, axes)
    if fast is not None:
        return fast.astype(acc).astype(out)
    values = _squares(x, acc) if square else x
    return _reduce(np.add, values, axes, acc).astype(out)


def _float_sum(cv2: Any, x: np.ndarray, axes: tuple[int, ...], square: bool = False) -> Any:
    if x.dtype.kind != "f":  # exact in integers, then float64
        return _int_sum(cv2, x, axes, np.dtype(np.float64), square)
    if not square:
        fast = _cv_sum(cv2, x, axes)
        if fast is not None:
            return fast
        return _reduce(np.add, x, axes, np.float64)
    rows = _rows(x, axes).astype(np.float64)
    return np.einsum("ij,ij->i", rows, rows)


# --- the GPU path: the same sums on the array module (CuPy), without OpenCV --------------------


def _xp_sum(x: Any, axes: tuple[int, ...], dtype: Any, xp: Any) -> Any:
    """The sum of ``x`` over ``axes`` in ``dtype``, of the kept shape (``axes=()``: the values
    in ``dtype``)."""
    if not axes:
        return x.astype(dtype)
    return xp.sum(x, axis=axes, dtype=dtype)


def _xp_int_sum(x: Any, axes: tuple[int, ...], out: np.dtype, xp: Any, square: bool = False) -> Any:
    """``_int_sum`` on ``xp``: the exact sum (of squares) in int64/uint64, which wraps as
    DALI's accumulator does (integer sums and products modulo 2**64 do not depend on the
    order), converted to ``out``."""
    acc = np.dtype(np.uint64 if x.dtype.kind == "u" else np.int64)
    values = x
    if square:
        values = x.astype(acc)
        values = values * values
    return _xp_sum(values, axes, acc, xp).astype(out)


def _xp_float_sum(x: Any, axes: tuple[int, ...], xp: Any, square: bool = False) -> Any:
    """``_float_sum`` on ``xp``: integers summed exactly, then float64; floats summed in
    float64."""
    if x.dtype.kind != "f":
        return _xp_int_sum(x, axes, np.dtype(np.float64), xp, square)
    if not square:
        return _xp_sum(x, axes, np.float64, xp)
    wide = x.astype(np.float64)
    return _xp_sum(wide * wide, axes, np.float64, xp)


def _kept(x: Any, axes: tuple[int, ...], keep: bool = False) -> tuple[int, ...]:
    """The shape of a reduction's result (``keep``: the reduced axes as extents of 1)."""
    if keep:
        return tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    return tuple(n for d, n in enumerate(x.shape) if d not in axes)


class Sum(Reduction):
    kind = "sum"

    def reduce(self, x, axes, out, *more, xp=np, **args):
        if xp is not np:
            if out.kind == "f":
                return _xp_float_sum(x, axes, xp).astype(out)
            return _xp_int_sum(x, axes, out, xp)
        if out.kind == "f":
            return _float_sum(self.cv2, x, axes).astype(out)
        return _int_sum(self.cv2, x, axes, out)


class Mean(Reduction):
    kind = "mean"
    square = False
    root = False

    def reduce(self, x, axes, out, *more, xp=np, **args):
        n = _count(x, axes)
        if out.kind == "f":
            if xp is np:
                total = _float_sum(self.cv2, x, axes, self.square)
            else:
                total = _xp_float_sum(x, axes, xp, self.square)
            value = _scaled(total, n, xp)
            return xp.sqrt(value) if self.root else value
        if xp is np:
            total = _int_sum(self.cv2, x, axes, out, self.square)
        else:
            total = _xp_int_sum(x, axes, out, xp, self.square)
        total = total.astype(np.float64)
        value = total / n if n else xp.zeros_like(total)
        if self.root:
            value = xp.sqrt(value)
        return xp.trunc(value).astype(out)


class MeanSquare(Mean):
    kind = "mean_square"
    square = True


class RootMeanSquare(Mean):
    kind = "rms"
    square = True
    root = True


class Min(Reduction):
    kind = "min"

    def reduce(self, x, axes, out, *more, xp=np, **args):
        floating = x.dtype.kind == "f"
        info = np.finfo(x.dtype) if floating else np.iinfo(x.dtype)
        ufunc: np.ufunc
        if self.kind == "min":
            ufunc, start = (np.fmin if floating else np.minimum), info.max
        else:
            ufunc, start = (
                (np.fmax if floating else np.maximum),
                (-info.max if floating else info.min),
            )
        if xp is np:
            return _reduce(ufunc, x, axes, None, start)
        return self._xp_reduce(x, axes, xp, x.dtype.type(start))

    def _xp_reduce(self, x: Any, axes: tuple[int, ...], xp: Any, start: Any) -> Any:
        """``ufunc.reduce`` with ``initial=start`` on ``xp``: NaNs become ``start`` (fmin and
        fmax skip them), the extreme is taken, and ``start`` joins it (a float32 min of
        ``inf`` is the type's largest value, as ``fmin.reduce(initial=...)`` and DALI give);
        nothing to reduce: ``start``."""
        if _count(x, axes) == 0:
            return xp.full(_kept(x, axes), start, x.dtype)
        if x.dtype.kind == "f":
            x = xp.where(xp.isnan(x), start, x)
        pick, join = (xp.min, xp.minimum) if self.kind == "min" else (xp.max, xp.maximum)
        values = pick(x, axis=axes) if axes else x.copy()
        return join(values, start) if x.dtype.kind == "f" else values


class Max(Min):
    kind = "max"


class Variance(SameBatchSize, Reduction):
    kind = "variance"

    def reduce(self, x, axes, out, mean, ddof: int = 0, xp=np, **args):
        if xp is not np:
            return self._xp_variance(x, axes, xp.asarray(mean), ddof, xp)
        mean = np.asarray(mean)
        if mean.dtype.kind not in "biuf":
            raise ValueError(f"the mean must be numbers, got type {mean.dtype}")
        size = int(np.prod([n for d, n in enumerate(x.shape) if d not in axes], dtype=np.int64))
        if mean.size == size:
            mean = mean.reshape(size, 1)
        elif mean.size != 1:
            raise ValueError(
                f"the mean has {mean.size} values (shape {mean.shape}) for an output of "
                f"{size}: give one per output element"
            )
        mean = mean.astype(np.float64).reshape(-1)
        squares = _cv_sum_squares(self.cv2, x, axes)
        if squares is not None:  # exact sums: sum((x - m)^2) = sum(x^2) - 2 m sum(x) + n m^2
            sums = _cv_sum(self.cv2, x, axes)
            assert sums is not None  # _SQUARE_LUTS's types are among _CV_SUM_TYPES
            n = _count(x, axes)
            total = squares.reshape(-1) - 2.0 * mean * sums.reshape(-1) + n * mean * mean
        else:
            diff = _rows(x, axes).astype(np.float64) - mean.reshape(-1, 1)
            total = np.einsum("ij,ij->i", diff, diff)
        value = _scaled(total, _count(x, axes) - ddof)
        return np.sqrt(value) if self.kind == "std_dev" else value

    def _xp_variance(self, x: Any, axes: tuple[int, ...], mean: Any, ddof: int, xp: Any) -> Any:
        """``reduce`` on ``xp``: the float64 sum of squared differences from the mean (given
        one per kept element, or one for all), scaled as on the CPU."""
        if mean.dtype.kind not in "biuf":
            raise ValueError(f"the mean must be numbers, got type {mean.dtype}")
        size = int(np.prod(_kept(x, axes), dtype=np.int64))
        if mean.size == size:
            mean = mean.reshape(_kept(x, axes, keep=True))
        elif mean.size != 1:
            raise ValueError(
                f"the mean has {mean.size} values (shape {mean.shape}) for an output of "
                f"{size}: give one per output element"
            )
        else:
            mean = mean.reshape(())
        diff = x.astype(np.float64) - mean.astype(np.float64)
        total = _xp_sum(diff * diff, axes, np.float64, xp)
        value = _scaled(total, _count(x, axes) - ddof, xp)
        return xp.sqrt(value) if self.kind == "std_dev" else value


class StdDev(Variance):
    kind = "std_dev"


_REDUCTION_ARGS = [
    Arg("axes", "the axes to reduce (default: all); negative counts from the back", None, _axes),
    Arg("axis_names", "the layout letters of the axes to reduce (instead of axes)", None, _names),
    Arg("keep_dims", "keep the reduced axes, as extents of 1", False, to_bool),
]
_DTYPE = Arg("dtype", "the output (and accumulation) type", None, to_dtype)


def _kinds(args: dict[str, Any], inputs: Sequence[OutputSpec | None]) -> list[OutputSpec]:
    return [OutputSpec(what="reduced values")]


def _register(
    name: str, class_name: str, impl: type, doc: str, extra: Sequence[Arg], inputs: int = 1
) -> None:
    register(
        OperatorSchema(
            name=f"reductions.{name}",
            class_name=f"reductions.{class_name}",
            impl=impl,
            min_inputs=inputs,
            max_inputs=inputs,
            validate=exclusive("axes", "axis_names", "axes and axis_names are mutually exclusive"),
            output_kinds=_kinds,
            devices=("cpu", "gpu"),
            doc=doc,
            args=[*_REDUCTION_ARGS, *extra],
        )
    )


_register("sum", "Sum", Sum, "The sum of the elements along ``axes``.", [_DTYPE])
_register("mean", "Mean", Mean, "The mean of the elements along ``axes``.", [_DTYPE])
_register(
    "mean_square",
    "MeanSquare",
    MeanSquare,
    "The mean of the squared elements along ``axes``.",
    [_DTYPE],
)
_register(
    "rms",
    "RMS",
    RootMeanSquare,
    "The root mean square of the elements along ``axes``.",
    [_DTYPE],
)
_register("min", "Min", Min, "The smallest element along ``axes`` (NaNs skipped).", [])
_register("max", "Max", Max, "The largest element along ``axes`` (NaNs skipped).", [])
_DDOF = Arg("ddof", "delta degrees of freedom: the divisor is N - ddof", 0, to_int())
_register(
    "std_dev",
    "StdDev",
    StdDev,
    "The standard deviation along ``axes`` around ``mean`` (the second input, float32).",
    [_DDOF],
    inputs=2,
)
_register(
    "variance",
    "Variance",
    Variance,
    "The variance along ``axes`` around ``mean`` (the second input, float32).",
    [_DDOF],
    inputs=2,
)
