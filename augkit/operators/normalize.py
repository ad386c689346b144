"""``fn.normalize``: ``out = scale * (in - mean) / stddev + shift``, with ``mean`` and ``stddev``
given (scalars or per-sample tensors) or computed from the data over ``axes``, per sample or
over the whole batch (``batch=True``), as DALI's Normalize.

DALI's arithmetic (``dali/operators/math/normalize``, checked against DALI 2.4's outputs):

- Everything is float32: ``out = ConvertSat<dtype>((float32(in) - mean) * inv + shift)`` with
  ``inv = scale / stddev`` for a given stddev (``scale * rsqrt(stddev**2 + epsilon)`` when
  ``epsilon`` is set) and ``inv = scale * rsqrt(var + epsilon)`` for a computed one, where
  ``var = sum((in - mean)**2) / (N - ddof)``. A computed stddev is taken around the mean that
  is used, given or computed.
- A computed variance of 0 (a constant image) with ``epsilon == 0`` gives ``inv = 0``: every
  value becomes ``shift`` (no inf/NaN). So does ``N <= ddof`` without epsilon. A given
  per-sample stddev tensor's zeros also give ``inv = 0``; a given *scalar* stddev of 0 gives
  inf/NaN in DALI, which augkit refuses (an error naming the argument).
- ``axes`` (indices) or ``axis_names`` (letters of the layout) name the reduced axes; by default
  all axes are reduced, unless mean/stddev tensors are given: then the reduced axes are those
  where their extent is 1. Tensor mean/stddev have the input's number of dimensions, extent 1
  on reduced axes and the input's extent (or 1) on the others.
- ``batch=True`` reduces over the batch too (one mean/stddev for all samples): the samples must
  agree on the non-reduced extents, and mean/stddev can only be constants.
- ``dtype`` defaults to FLOAT whatever the input; integer outputs round halves away from zero
  and saturate (``convert_sat``): ``shift`` and ``scale`` place the values in their range.
- DALI's rsqrt is an SSE approximation refined by one Newton step: computed stddevs differ from
  an exact ``1 / sqrt`` in the last bit or two of float32 (about 1e-7 relative), and its sums
  are in float32 where augkit's are in float64 (again about 1e-7 relative).
- Differences from DALI: any numeric input and output type is accepted (DALI: uint8, int8,
  uint16, int16, int32, float inputs; no float16/float64 outputs).

Speed: the sums use OpenCV (``cv2.meanStdDev``) for the common cases, per-channel or
whole-image statistics of an HWC image, and NumPy float64 otherwise. For uint8 inputs with a
scalar or per-channel (last axis, up to 4) mean and stddev, every output value depends only on
the level and the channel: one ``cv2.LUT`` pass with a 256-entry table made by the very same
float32 operations (bit-identical to the element-wise path). Other cases are element-wise
float32 NumPy.

GPU (``device="gpu"``): ``Normalize.gpu`` (and ``gpu_batch`` for ``batch=True``) is the same
kernel on the sample's array module (``backend.array_module``: CuPy), without OpenCV: given
mean/stddev (numbers, or per-sample tensors, which reach the kernel on the host) are moved with
``xp.asarray`` and applied with the CPU's float32 ufunc sequence and ``convert_sat``, equal to
the CPU's (and its LUT path) bit for bit. Computed statistics are DALI's float32 sums, not the
CPU's float64 ones: the reduced axes are moved innermost (``xp.moveaxis``, one contiguous
float32 copy) and summed with ``xp.sum(axis=-1)`` (pairwise in NumPy, a block tree in CuPy),
``mean = sum / float32(N)`` (divided, not multiplied by a rounded 1/N: the mean is the
statistic whose error shifts a whole sample), then the float32 sum of squares about that
mean. They stay on the device (``xp.where``/``xp.sqrt`` for ``inv``); results differ from the
CPU's within the largest difference the CPU itself has to DALI (2e-6) and twice its mean one
(GPU to CPU <= GPU to DALI + DALI to CPU; tests/dali_parity/cases_color_convert.py,
tests/operators/test_gpu_slice_normalize_paste.py).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator, finish
from augkit.operators.color.cast import convert_sat
from augkit.operators.layouts import number_dtype
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_float,
    to_int,
    to_ints,
    to_str,
)
from augkit.tensors import TensorList

# Output types cv2.LUT produces (the table path of uint8 inputs).
_LUT_DTYPES = {
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64)
}


@described("a number, or an array of numbers (per sample: a tensor of the input's rank)")
def to_param(value: Any) -> float | np.ndarray:
    """A mean/stddev: a float, or a float32 array (0-d arrays become floats)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        out = float(value)
        if not np.isfinite(out):
            raise ValueError(f"expected a finite number, got {out}")
        return out
    if isinstance(value, (list, tuple, np.ndarray)) or type(value).__module__.startswith(
        ("numpy", "torch")
    ):
        arr = np.asarray(value)
    else:
        raise TypeError(f"expected a number or an array of numbers, got {value!r}")
    if arr.dtype.kind not in "iuf" or arr.dtype == object:
        raise TypeError(f"expected numbers, got an array of {arr.dtype}")
    if arr.size == 0:
        raise ValueError("expected at least one value, got an empty array")
    with np.errstate(over="ignore", invalid="ignore"):
        arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise ValueError("expected finite numbers (within float32's range)")
    if arr.ndim == 0:
        return float(arr)
    return arr


_number_type = number_dtype(
    "an output type: types.FLOAT, types.UINT8, types.INT16, ...",
    "normalize produces numbers, not types.{name}",
)


def _validate(args: dict[str, Any]) -> None:
    if args.get("axes") is not None and args.get("axis_names") is not None:
        raise ValueError("give the reduced axes by axes or by axis_names, not both")
    if args.get("batch"):
        for key in ("mean", "stddev"):
            value = args.get(key)
            if value is not None and not isinstance(value, float):
                raise ValueError(
                    f"with batch=True, {key} must be a single number (one value for the batch), "
                    f"not a tensor or a per-sample value"
                )


def reduced_axes(
    shape: Sequence[int],
    layout: str,
    axes: Sequence[int] | None,
    axis_names: str | None,
    params: Sequence[Any],
) -> tuple[int, ...]:
    """The axes the statistics are taken over, for a sample of ``shape`` (see the module
    docstring).

    Raises:
        ValueError: an axis out of range, a name not in the layout, tensors of the wrong rank.
    """
    ndim = len(shape)
    tensors = [p for p in params if isinstance(p, np.ndarray)]
    for p in tensors:
        if p.ndim != ndim:
            raise ValueError(
                f"mean/stddev tensors need the input's {ndim} dimensions, got shape {p.shape}"
            )
    if axes is not None:
        found = []
        for a in axes:
            if not -ndim <= a < ndim:
                raise ValueError(f"axis {a} is out of range for a sample with {ndim} dimensions")
            found.append(a % ndim)
        if len(set(found)) != len(found):
            raise ValueError(f"axes {tuple(axes)} name an axis twice")
        return tuple(sorted(found))
    if axis_names is not None:
        if not layout:
            layout = {2: "HW", 3: "HWC"}.get(ndim, "")  # as augkit takes unlabelled images
        if not layout:
            raise ValueError(
                f"axis_names={axis_names!r} needs an input with a layout; this one has none"
            )
        found = []
        for name in axis_names:
            if name not in layout:
                raise ValueError(f'axis name "{name}" is not in the input layout "{layout}"')
            found.append(layout.index(name))
        return tuple(sorted(set(found)))
    if tensors:
        inferred = {tuple(i for i in range(ndim) if p.shape[i] == 1) for p in tensors}
        if len(inferred) > 1:
            raise ValueError(
                f"mean and stddev tensors reduce different axes: shapes "
                f"{[p.shape for p in tensors]}"
            )
        return inferred.pop()
    return tuple(range(ndim))


def _check_param(name: str, value: Any, shape: Sequence[int], axes: Sequence[int]) -> None:
    if not isinstance(value, np.ndarray):
        return
    for i, (have, need) in enumerate(zip(value.shape, shape, strict=True)):
        if i in axes and have != 1:
            raise ValueError(
                f"{name} has extent {have} along axis {i}, which is reduced: it must be 1 "
                f"({name} shape {value.shape}, input shape {tuple(shape)})"
            )
        if have not in (1, need):
            raise ValueError(
                f"{name} has extent {have} along axis {i}; the input has {need} (it must be "
                f"1 or {need}; {name} shape {value.shape}, input shape {tuple(shape)})"
            )


def _kept_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _inv_given(stddev: Any, epsilon: float, scale: float) -> Any:
    """DALI's ``inv`` of a given stddev (float32)."""
    s = np.asarray(stddev, np.float32)
    eps, scale32 = np.float32(epsilon), np.float32(scale)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if epsilon:
            return scale32 / np.sqrt(s * s + eps)
        if isinstance(stddev, np.ndarray):
            safe = np.where(s == 0, np.float32(1), s)
            return np.where(s == 0, np.float32(0), scale32 / safe).astype(np.float32)
        return scale32 / s


def _inv_computed(
    sum_sq: Any, count: int, ddof: int, epsilon: float, scale: float, xp: Any = np
) -> Any:
    """DALI's ``inv`` of a computed stddev from the sums of squares (float32; 0 kept), on
    ``xp``, the array module of ``sum_sq``."""
    eps = np.float32(epsilon)
    scale32 = np.float32(scale)
    if count > ddof:
        rdiv = np.float32(1.0 / (count - ddof))
    elif epsilon == 0:
        rdiv, scale32 = np.float32(1), np.float32(0)
    else:
        rdiv = np.float32(0)
    var = xp.asarray(sum_sq, np.float32) * rdiv
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if epsilon:
            return (scale32 / xp.sqrt(var + eps)).astype(np.float32)
        safe = xp.where(var == 0, np.float32(1), var)
        return xp.where(var == 0, np.float32(0), scale32 / xp.sqrt(safe)).astype(np.float32)


def _as_float32(sample: np.ndarray) -> np.ndarray:
    if sample.dtype == np.float32:
        return sample
    with np.errstate(over="ignore", invalid="ignore"):
        return sample.astype(np.float32)


def _flat(x: Any, axes: tuple[int, ...], xp: Any) -> Any:
    """``x`` in float32 with the reduced ``axes`` moved innermost and flattened into one, in a
    contiguous copy (the kept axes first, in order): float32 sums along the last axis are
    pairwise in NumPy and a block tree in CuPy."""
    inner = tuple(range(x.ndim - len(axes), x.ndim))
    moved = xp.moveaxis(_as_float32(x), axes, inner) if axes else _as_float32(x)
    kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    return xp.ascontiguousarray(moved).reshape((*kept, -1))


class Normalize(SampleOperator):
    """Per sample: statistics over the reduced axes (unless given), then the affine map.
    With ``batch=True`` the statistics are the batch's (``cpu_batch``)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def chainable(self) -> bool:
        return super().chainable() and not self.args["batch"]

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.dtype.kind not in "iuf":
            raise ValueError(f"normalize needs numbers, got {sample.dtype} data")

    # --- statistics ---------------------------------------------------------------------------

    def _hwc_stats(self, x: np.ndarray, axes: tuple[int, ...], mean: Any) -> Any:
        """``(mean, sum of squares about it)`` of a 3-D sample via cv2.meanStdDev where the
        reduction is all of H and W (with or without C) and the mean is computed."""
        if mean is not None or x.ndim != 3 or x.shape[2] > 4 or axes not in ((0, 1), (0, 1, 2)):
            return None
        if x.dtype not in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32):
            return None
        if x.shape[0] * x.shape[1] == 0 or not x.flags.c_contiguous:
            return None
        if axes == (0, 1, 2):
            flat = x.reshape(-1, 1)
            m, s = self.cv2.meanStdDev(flat)
            n = flat.shape[0]
            mean64 = np.float32(m[0, 0])
            # sum of squares about the float32 mean (as DALI sums about its float mean).
            sq = (float(s[0, 0]) ** 2 + (float(m[0, 0]) - float(mean64)) ** 2) * n
            return np.full((1, 1, 1), mean64, np.float32), np.full((1, 1, 1), sq), n
        m, s = self.cv2.meanStdDev(x)
        n = x.shape[0] * x.shape[1]
        mean32 = m[:, 0].astype(np.float32)
        sq = (s[:, 0] ** 2 + (m[:, 0] - mean32.astype(np.float64)) ** 2) * n
        return mean32.reshape(1, 1, -1), sq.reshape(1, 1, -1), n

    def stats(
        self, x: np.ndarray, axes: tuple[int, ...], mean: Any, need_sq: bool
    ) -> tuple[np.ndarray, np.ndarray | None, int]:
        """``(mean as float32 of the kept shape, sum of squares about it or None, count)``."""
        fast = self._hwc_stats(x, axes, mean) if need_sq else None
        if fast is not None:
            return fast
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
        kept = _kept_shape(x.shape, axes)
        if mean is None:
            with np.errstate(over="ignore", invalid="ignore"):
                m = np.sum(x, axis=axes, dtype=np.float64, keepdims=True)
                m32 = (m / count).astype(np.float32) if count else np.zeros(kept, np.float32)
        else:
            if np.ndim(mean):
                m32 = np.broadcast_to(np.asarray(mean, np.float32), kept)
            else:
                m32 = np.full(kept, mean, np.float32)
        sq = None
        if need_sq:
            with np.errstate(over="ignore", invalid="ignore"):
                d = x.astype(np.float64) - m32
                sq = np.sum(d * d, axis=axes, keepdims=True)
        return np.asarray(m32, np.float32), sq, count

    @staticmethod
    def float_sums(
        x: Any, axes: tuple[int, ...], mean: Any, need_sq: bool, xp: Any
    ) -> tuple[Any, Any, int]:
        """``stats`` as DALI defines them, in float32 (the GPU kernel's): ``(mean, sum of
        squares about it or None, count)``, on ``xp``, of the kept shape."""
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
        kept = _kept_shape(x.shape, axes)
        flat = _flat(x, axes, xp)
        if mean is None:
            if count:
                m32 = xp.sum(flat, axis=-1, dtype=np.float32) / np.float32(count)
                m32 = m32.astype(np.float32).reshape(kept)
            else:
                m32 = xp.zeros(kept, np.float32)
        else:
            m32 = xp.broadcast_to(xp.asarray(mean, np.float32), kept)
        sq = None
        if need_sq:
            d = flat - m32.reshape((*flat.shape[:-1], 1))
            sq = xp.sum(d * d, axis=-1, dtype=np.float32).reshape(kept)
        return xp.asarray(m32, np.float32), sq, count

    def _batch_float_sums(
        self,
        samples: Sequence[Any],
        axes: tuple[int, ...],
        mean: float | None,
        need_sq: bool,
        count: int,
        xp: Any,
    ) -> tuple[Any, Any]:
        """``batch=True``'s mean and sum of squares about it, in float32: each sample's
        float32 sums (``_flat``), added in float32."""
        kept = _kept_shape(samples[0].shape, axes)
        flats = [_flat(s, axes, xp) for s in samples]
        if mean is None:
            total = xp.zeros(flats[0].shape[:-1], np.float32)
            for f in flats:
                total += xp.sum(f, axis=-1, dtype=np.float32)
            m = (total / np.float32(count)) if count else total
            m = m.astype(np.float32).reshape(kept)
        else:
            m = xp.full(kept, mean, np.float32)
        sq = None
        if need_sq:
            sq = xp.zeros(flats[0].shape[:-1], np.float32)
            centre = m.reshape((*flats[0].shape[:-1], 1))
            for f in flats:
                d = f - centre
                sq += xp.sum(d * d, axis=-1, dtype=np.float32)
            sq = sq.reshape(kept)
        return m, sq

    # --- the kernel ---------------------------------------------------------------------------

    def apply(
        self, x: np.ndarray, mean: Any, inv: Any, shift: float, dtype: Any, xp: Any = np
    ) -> np.ndarray:
        out_dtype = np.dtype(np.float32 if dtype is None else dtype.numpy)
        with np.errstate(over="ignore", invalid="ignore"):
            if xp is np:
                fast = self._uint8_table(x, mean, inv, shift, out_dtype)
                if fast is not None:
                    return fast
            return convert_sat(self._affine(_as_float32(x), mean, inv, shift, xp), out_dtype, xp)

    @staticmethod
    def _affine(values: np.ndarray, mean: Any, inv: Any, shift: float, xp: Any = np) -> Any:
        """``(values - mean) * inv + shift`` in float32, in this order (DALI's)."""
        values = values - xp.asarray(mean, np.float32)
        values *= xp.asarray(inv, np.float32)
        if shift:
            values += np.float32(shift)
        return values

    def _uint8_table(
        self, x: np.ndarray, mean: Any, inv: Any, shift: float, out_dtype: np.dtype
    ) -> np.ndarray | None:
        """A uint8 input whose mean and inv are scalars or per channel (last axis, at most 4
        channels): every output value depends only on the level and the channel, so one
        ``cv2.LUT`` pass with a table made by ``_affine`` (the same float32 operations) gives
        the same numbers. ``None`` where it does not apply."""
        if x.dtype != np.uint8 or out_dtype not in _LUT_DTYPES or x.ndim < 2:
            return None
        if not x.flags.c_contiguous or x.size >= 2**31:
            return None
        mean, inv = np.asarray(mean, np.float32), np.asarray(inv, np.float32)
        per_channel = [p.shape[-1] for p in (mean, inv) if p.size > 1]
        channels = x.shape[-1]
        for p in (mean, inv):
            if p.size > 1 and (p.size != channels or p.shape[-1] != channels):
                return None
        levels = np.arange(256, dtype=np.float32)
        lut: np.ndarray
        src: np.ndarray
        if per_channel:
            if channels > 4:
                return None
            table = self._affine(levels[:, None], mean.reshape(-1), inv.reshape(-1), shift)
            table = convert_sat(np.broadcast_to(table, (256, channels)), out_dtype)
            lut = np.ascontiguousarray(table).reshape(1, 256, channels)
            src = x.reshape(-1, x.shape[-2], channels)
        else:
            table = convert_sat(
                self._affine(levels, mean.reshape(()), inv.reshape(()), shift), out_dtype
            )
            lut = np.ascontiguousarray(table).reshape(1, 256)
            src = x.reshape(x.shape[0], -1)
        out = np.empty(x.shape, out_dtype)
        self.cv2.LUT(src, lut, dst=out.reshape(src.shape))
        return out

    def cpu(self, sample: Any, **args: Any) -> Any:
        # float32 throughout, as DALI: values beyond its range become inf, silently.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._normalize(np.asarray(sample), np, **args)

    def gpu(self, sample: Any, **args: Any) -> Any:
        """The CPU kernel on ``sample``'s array module (CuPy), with float32 statistics."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._normalize(sample, backend.array_module(sample), **args)

    def _normalize(
        self,
        sample: np.ndarray,
        xp: Any,
        *,
        layout: str,
        mean: Any,
        stddev: Any,
        axes: Sequence[int] | None,
        axis_names: str | None,
        ddof: int,
        epsilon: float,
        scale: float,
        shift: float,
        dtype: Any,
        **_: Any,
    ) -> np.ndarray:
        axes_ = reduced_axes(sample.shape, layout, axes, axis_names, (mean, stddev))
        _check_param("mean", mean, sample.shape, axes_)
        _check_param("stddev", stddev, sample.shape, axes_)
        if sample.size == 0:
            return xp.zeros(sample.shape, dtype.numpy)
        if stddev is not None:
            if not isinstance(stddev, np.ndarray) and stddev == 0 and not epsilon:
                raise ValueError(
                    "stddev=0 with epsilon=0 divides by zero (DALI gives inf/NaN); give a "
                    "nonzero stddev or an epsilon"
                )
            inv = _inv_given(stddev, epsilon, scale)
            m = mean
            if m is None:
                m, _, _ = self._stats(sample, axes_, None, False, xp)
        else:
            m, sq, count = self._stats(sample, axes_, mean, True, xp)
            inv = _inv_computed(sq, count, ddof, epsilon, scale, xp)
        return self.apply(sample, m, inv, shift, dtype, xp)

    def _stats(self, x: Any, axes: tuple[int, ...], mean: Any, need_sq: bool, xp: Any) -> Any:
        if xp is np:
            return self.stats(x, axes, mean, need_sq)
        return self.float_sums(x, axes, mean, need_sq, xp)

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """``batch=True``: the statistics of the whole batch (``None`` otherwise: the
        per-sample kernel runs). Errors become the operator's (SampleOperator.run)."""
        if not self.args["batch"]:
            return None
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return [self._run_batch(ctx, inputs[0], np)]

    def gpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """``cpu_batch`` on the samples' array module (CuPy), with float32 statistics."""
        if not self.args["batch"]:
            return None
        samples = inputs[0].samples
        xp = backend.array_module(samples[0]) if samples else np
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return [self._run_batch(ctx, inputs[0], xp)]

    def _run_batch(self, ctx: Any, batch: TensorList, xp: Any) -> TensorList:
        """``batch=True``: one mean and stddev, over the reduced axes of all samples (float64
        sums on the CPU, float32 ones elsewhere: ``float_sums``)."""
        a = self.args
        samples = [np.asarray(s) if xp is np else s for s in batch.samples]
        layout = batch.layout()
        if not samples:
            return TensorList([], layout, batch.sources, dtype=a["dtype"].numpy)
        for i, s in enumerate(samples):
            try:
                self.check_input(0, s, layout)
            except ValueError as exc:
                raise self.fail(str(exc), i, [batch]) from None
        ndims = {s.ndim for s in samples}
        if len(ndims) != 1:
            raise ValueError(f"batch=True needs samples of one rank, got ranks {sorted(ndims)}")
        axes = reduced_axes(samples[0].shape, layout, a["axes"], a["axis_names"], ())
        kept = {_kept_shape(s.shape, axes) for s in samples}
        if len(kept) != 1:
            raise ValueError(
                f"batch=True needs the samples to agree on the extents that are not reduced "
                f"(axes {axes}); got shapes {[tuple(s.shape) for s in samples]}"
            )
        count = sum(int(np.prod([s.shape[k] for k in axes], dtype=np.int64)) for s in samples)
        mean, stddev = a["mean"], a["stddev"]
        if stddev is not None and stddev == 0 and not a["epsilon"]:
            raise ValueError(
                "stddev=0 with epsilon=0 divides by zero (DALI gives inf/NaN); give a "
                "nonzero stddev or an epsilon"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            if xp is not np:
                m, sq = self._batch_float_sums(samples, axes, mean, stddev is None, count, xp)
            elif mean is None:
                total = sum(np.sum(s, axis=axes, dtype=np.float64, keepdims=True) for s in samples)
                # (sum's start, 0, is left only without samples: count 0)
                m = (total / count).astype(np.float32) if count else np.zeros(kept.pop())  # type: ignore[union-attr]
            else:
                m = np.float32(mean)
            if stddev is not None:
                inv = _inv_given(stddev, a["epsilon"], a["scale"])
            else:
                if xp is np:
                    sq = sum(
                        np.sum(np.square(s.astype(np.float64) - m), axis=axes, keepdims=True)
                        for s in samples
                    )
                inv = _inv_computed(sq, count, a["ddof"], a["epsilon"], a["scale"], xp)
        outs = ctx.map(
            lambda i: finish(self.apply(samples[i], m, inv, a["shift"], a["dtype"], xp)),
            len(samples),
        )
        return TensorList(outs, layout, batch.sources, dtype=a["dtype"].numpy)


register(
    OperatorSchema(
        name="normalize",
        class_name="Normalize",
        impl=Normalize,
        accepts=None,
        output_kinds=keeps_kind,
        validate=_validate,
        devices=("cpu", "gpu"),
        doc=(
            "Normalizes the input: ``out = scale * (in - mean) / stddev + shift``. mean and "
            "stddev are given (a number, or per sample a tensor of the input's rank with "
            "extent 1 on the reduced axes) or computed from the data over ``axes`` / "
            "``axis_names`` (default: all axes; with tensor mean/stddev: their extent-1 axes), "
            "per sample or, with ``batch=True``, over the whole batch. The variance is "
            "``sum((in - mean)**2) / (N - ddof)``, plus ``epsilon`` before the square root; a "
            "zero variance without epsilon maps every value to ``shift``. Computed in float32 "
            "and converted to ``dtype`` (default FLOAT; integer types round halves away from "
            "zero and saturate). Differences from DALI: any numeric input and output type is "
            "accepted; a scalar stddev of 0 with epsilon 0 is refused (DALI gives inf/NaN)."
        ),
        args=[
            Arg("mean", "subtracted (default: computed from the data)", None, to_param, True),
            Arg(
                "stddev",
                "divides (default: computed from the data)",
                None,
                to_param,
                per_sample=True,
            ),
            Arg("axes", "indices of the reduced axes (default: all)", None, to_ints()),
            Arg("axis_names", "layout letters of the reduced axes", None, to_str),
            Arg("batch", "compute mean and stddev over the whole batch", False, to_bool),
            Arg("scale", "multiplies the normalized value", 1.0, to_float()),
            Arg("shift", "added after scaling (where the mean maps)", 0.0, to_float()),
            Arg("ddof", "delta degrees of freedom of the variance", 0, to_int()),
            Arg("epsilon", "added to the variance", 0.0, to_float(0)),
            Arg("dtype", "output data type", types.FLOAT, _number_type),
        ],
    )
)
