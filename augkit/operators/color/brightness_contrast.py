"""``fn.brightness_contrast``, ``fn.brightness`` and ``fn.contrast``: ``out = brightness_shift *
out_range + brightness * (contrast_center + contrast * (in - contrast_center))``, as DALI
computes it (DALI's three operators are one kernel with different arguments).

DALI's arithmetic (``dali/operators/image/color/brightness_contrast.h``, MultiplyAdd kernel):

- ``out = ConvertSat<Out>(float32(in) * mul + add)`` with, all in float32,
  ``mul = brightness * contrast`` and ``add = brightness_shift * out_range
  + brightness * (contrast_center - contrast * contrast_center)``.
  Rearranging the formula changes float32 results in the last bit, so this module keeps DALI's
  form (and its order of operations).
- ``out_range`` comes from the **output** type: 1.0 for floats, the type's maximum for integers
  (255 for uint8).
- ``contrast_center`` comes from the **input** type when not given: 0.5 for floats, otherwise
  ``1 << (bits - signed - 1)``: 128 for uint8 (not 127.5), 16384 for int16, 2**30 for int32.
  (``fn.color_twist``'s centre is 128 for every integer type: a different operator.)
- ``dtype`` defaults to the input type. A uint8 image converted to FLOAT is not rescaled: the
  output stays in 0..255 (plus ``brightness_shift * 1.0``).
- Integer outputs round halves away from zero and saturate (``convert_sat``).
- ``brightness``, ``brightness_shift``, ``contrast`` and ``contrast_center`` are argument inputs
  (per sample) in DALI 2.4, for all three operators.

Speed: a uint8 input has 256 possible values, so the kernel evaluates DALI's float32 formula
once per value (a 256-entry table per sample, ``level_table``): the exact answer for every
pixel. Applying it:

- ``cv2.convertScaleAbs(v, alpha=mul, beta=add)`` (SIMD float32, ~40 us for a 320x320 RGB image
  on one thread, cached) where it reproduces the table exactly, else ``cv2.LUT`` (~70 us: one
  byte per cycle; ``np.take`` for table types OpenCV lacks). convertScaleAbs takes the absolute
  value and rounds halves to even, so each sample's (alpha, beta) is checked against the table
  on all 256 levels, through its SIMD body and its scalar tail (``scale_abs_plan``, ~3 us);
  halves are sent up by nudging beta; levels that map to 0 below the first non-zero one are
  first raised to the last such level with ``cv2.max`` (a darkening shift, contrast > 1). About
  90% of random arguments take it; the rest (ties it cannot break, negative factors) take the
  LUT. Both release the GIL. (StringZilla's byte translation, ~8 us, holds the GIL and is no
  dependency: not used.)
- A dense batch (the usual source, with ``fn.random.uniform`` arguments) goes to the batch
  kernel: the arguments as arrays, all the tables at once, and every sample written into one
  preallocated output. Fresh per-sample outputs (300 KB each, 32 alive) cost page faults of
  about 80 us per image, more than the arithmetic; one batch-sized array gets huge pages.
- Measured (benchmarks/operators.py, 320x320, batch 32, one thread, same-run paired ratios on a
  busy machine): 0.75-0.77x DALI before, 1.24-1.68x after (brightness_contrast 1.01-1.30x);
  in the pipeline (interleaved A/B) ~200 -> ~165 us an image, of which ~35 us is the source.
  What is left is memory traffic: the kernel on a batch in cache takes ~70 us an image, on one
  read from memory ~125 us (the one read and one write of the pixels).

Other input types (and CuPy arrays on the GPU) evaluate the formula element by element.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import RunContext, SampleOperator, dense_batch, per_sample_column
from augkit.operators.color.cast import convert_sat
from augkit.operators.layouts import COLOR_IMAGE, number_dtype
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_float,
)
from augkit.tensors import TensorList

_LEVELS = np.arange(256, dtype=np.float32)
# The 256 levels for checking cv2.convertScaleAbs: contiguous (its SIMD body) and as 256 rows of
# one value (its scalar tail).
_RAMP = np.arange(256, dtype=np.uint8)
_RAMP_ROWS = np.repeat(_RAMP[:, None], 2, axis=1)[:, :1]
_RAMP_ROWS.flags.writeable = False
_RAMP.flags.writeable = False
# Below this many values the check costs more than it saves.
_SCALE_ABS_MIN = 4096
# Added to beta when convertScaleAbs's ties (half to even) differ from the table's.
_NUDGES = (np.float32(0.0), np.float32(2**-13), np.float32(2**-11))
_DEFAULTS = {"brightness": 1.0, "brightness_shift": 0.0, "contrast": 1.0, "contrast_center": None}
# Table types cv2.LUT takes (its output has the table's type).
_CV_TABLES = frozenset(
    np.dtype(t)
    for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float16, np.float32, np.float64)
)


# The ``dtype`` argument of the colour operators (brightness_contrast, color_twist, ...).
to_number_type = number_dtype(
    "an integer or floating-point type: types.UINT8, types.FLOAT, ...",
    "the output must be numbers, not types.{name}",
)


def contrast_center_for(dtype: Any) -> float:
    """DALI's default contrast centre for an input of ``dtype`` (half its positive range)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return 0.5
    return float(1 << (8 * dtype.itemsize - (dtype.kind == "i") - 1))


def output_range(dtype: Any) -> np.float32:
    """DALI's ``FullRange``: 1.0 for float outputs, the maximum of an integer type."""
    dtype = np.dtype(dtype)
    return np.float32(1.0 if dtype.kind == "f" else np.iinfo(dtype).max)


def multiply_add(
    in_dtype: Any,
    out_dtype: Any,
    brightness: float,
    brightness_shift: float,
    contrast: float,
    contrast_center: float | None,
) -> tuple[np.float32, np.float32]:
    """DALI's ``(mul, add)`` in float32, so that ``out = convert_sat(float32(in) * mul + add)``.

    Example:
        >>> multiply_add(np.uint8, np.uint8, 1.0, 0.0, 0.5, None)
        (np.float32(0.5), np.float32(64.0))
    """
    # In float32, as DALI computes: values beyond its range (brightness=1e300) become inf and
    # saturate, without NumPy's overflow warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        center = np.float32(
            contrast_center_for(in_dtype) if contrast_center is None else contrast_center
        )
        brightness32, contrast32 = np.float32(brightness), np.float32(contrast)
        add = np.float32(brightness_shift) * output_range(out_dtype) + brightness32 * (
            center - contrast32 * center
        )
        return brightness32 * contrast32, add


def level_table(
    mul: np.float32 | np.ndarray, add: np.float32 | np.ndarray, out_dtype: np.dtype
) -> np.ndarray:
    """``convert_sat(float32(v) * mul + add)`` for the 256 uint8 levels v.

    For uint8 outputs in float64, where ``floor(x + 0.5)`` is exact for every float32 x (the
    float32 sum is not: 0.49999997 + 0.5 rounds to 1): about 3x faster than ``convert_sat``.
    Negative values floor to 0 or less, where round-half-away-from-zero also saturates to 0;
    fmax/fmin send NaN to 0, as ``convert_sat`` does.

    Example:
        >>> level_table(np.float32(0.5), np.float32(64.0), np.dtype(np.uint8))[[0, 1, 255]]
        array([ 64,  65, 192], dtype=uint8)
    """
    values = _LEVELS * mul + add
    if out_dtype != np.uint8:
        return convert_sat(values, out_dtype, np)
    rounded = np.floor(values.astype(np.float64) + 0.5)
    return np.fmin(np.fmax(rounded, 0.0), 255.0).astype(np.uint8)


def _float_column(
    impl: SampleOperator, arg_inputs: dict[str, TensorList], key: str, n: int
) -> np.ndarray | None:
    """Argument ``key`` as one float per sample (``per_sample_column``), or None for a constant;
    a dense batch of finite real numbers, one per sample (``fn.random.uniform``'s), is taken
    as one array: what ``to_float`` gives each of them, without a Python call per sample."""
    batch = arg_inputs.get(key)
    if batch is None:
        return None
    dense = batch.dense
    if (
        isinstance(dense, np.ndarray)
        and dense.dtype.kind in "fiu"
        and dense.size == n == len(dense)
    ):
        column = dense.reshape(n).astype(np.float64)
        if np.isfinite(column).all():
            return column
    return per_sample_column(impl, arg_inputs, key, n)


class BrightnessContrast(SampleOperator):
    """``convert_sat(float32(in) * mul + add)`` per sample, with DALI's mul and add; a 256-entry
    table per sample for uint8 inputs on the CPU."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.dtype.kind not in "iuf":
            raise ValueError(f"{self.schema.name} needs numbers, got {sample.dtype} data")

    def cpu(
        self,
        sample: Any,
        *,
        brightness: float = 1.0,
        brightness_shift: float = 0.0,
        contrast: float = 1.0,
        contrast_center: float | None = None,
        dtype: Any = None,
        **_: Any,
    ) -> Any:
        xp = backend.array_module(sample)
        out_dtype = np.dtype(sample.dtype if dtype is None else dtype.numpy)
        mul, add = multiply_add(
            sample.dtype, out_dtype, brightness, brightness_shift, contrast, contrast_center
        )
        with np.errstate(over="ignore", invalid="ignore"):
            if xp is np and sample.dtype == np.uint8:
                return self.apply(sample, mul, add, level_table(mul, add, out_dtype))
            return convert_sat(sample.astype(np.float32) * mul + add, out_dtype, xp)

    def cpu_batch(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """A dense uint8 batch (the usual source): the per-sample tables at once, the pixels
        written into one preallocated output (fresh per-sample outputs cost page faults, about
        as much as the lookup itself), the samples spread over the pipeline's threads. The same
        values as the per-sample kernel (the same float32 operations, element by element)."""
        x = dense_batch(inputs)
        if x is None or not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim < 2:
            return None
        if len(x) == 0 or x[0].size < _SCALE_ABS_MIN:
            return None
        dtype = self.args.get("dtype")
        out_dtype = np.dtype(np.uint8 if dtype is None else dtype.numpy)
        if out_dtype not in _CV_TABLES or out_dtype == np.float16:
            return None
        n = len(x)
        columns = {}
        for key in ("brightness", "brightness_shift", "contrast", "contrast_center"):
            column = _float_column(self, arg_inputs, key, n)
            if column is None:
                value = self.args.get(key, _DEFAULTS[key])
                if value is None:  # contrast_center's default (the uint8 input's)
                    value = contrast_center_for(np.uint8)
                column = np.full(n, value, np.float64)
            elif key == "contrast_center" and column.dtype == object:
                return None
            with np.errstate(over="ignore", invalid="ignore"):
                columns[key] = column.astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            b, c, center = columns["brightness"], columns["contrast"], columns["contrast_center"]
            mul = b * c
            add = columns["brightness_shift"] * output_range(out_dtype) + b * (center - c * center)
            tables = level_table(mul[:, None], add[:, None], out_dtype)
        out = np.empty(x.shape, out_dtype)

        def one(i: int) -> None:
            with np.errstate(over="ignore", invalid="ignore"):
                self.apply(x[i], mul[i], add[i], tables[i], out[i])

        ctx.map(one, n)
        return [self.dense_output(out, inputs)]

    def apply(
        self,
        sample: np.ndarray,
        mul: np.float32,
        add: np.float32,
        table: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """``table[sample]`` (into ``out`` when given, a contiguous array of its shape):
        cv2.convertScaleAbs where it gives exactly the table (``scale_abs_plan``), else a
        lookup."""
        plan = None
        if table.dtype == np.uint8 and sample.size >= _SCALE_ABS_MIN:
            plan = self.scale_abs_plan(mul, add, table)
        if plan is None:
            return self.lookup(sample, table, out)
        cv2 = self.cv2
        alpha, beta, low = plan
        flat = np.ascontiguousarray(sample).reshape(-1)
        dst = np.empty(flat.shape, np.uint8) if out is None else out.reshape(-1)
        if low > 0:
            cv2.max(flat, float(low), dst=dst)
            flat = dst
        result = cv2.convertScaleAbs(flat, dst=dst, alpha=alpha, beta=beta)
        if result is not dst:  # OpenCV wrote elsewhere (never seen): keep the promise
            dst[...] = result.reshape(dst.shape)
        return dst.reshape(sample.shape)

    def scale_abs_plan(
        self, mul: np.float32, add: np.float32, table: np.ndarray
    ) -> tuple[float, float, int] | None:
        """``(alpha, beta, low)`` such that ``cv2.convertScaleAbs(max(v, low), alpha, beta)``
        is ``table[v]`` for every uint8 v; None where no such is found (then cv2.LUT runs).

        convertScaleAbs (SIMD float32, about 2x faster than cv2.LUT) computes
        ``saturate(round_half_even(|v * alpha + beta|))`` (with or without a fused
        multiply-add): its absolute value and its ties differ from DALI's. It is element-wise,
        so it is checked on the 256 levels themselves, through its SIMD body (a contiguous
        ramp) and its scalar tail (a ramp of one-element rows), against the exact table, for
        beta and two nudges of it that send halves up. The levels whose table value is 0 below
        the first non-zero one (a darkening shift, contrast above 1) are first raised to the
        last such level (``low``, with cv2.max), so that |negative| never shows. Not taken for
        a decreasing table (negative brightness or contrast) or a non-finite mul or add.
        """
        if not (np.isfinite(mul) and np.isfinite(add) and mul >= 0):
            return None
        low = int(np.argmax(table != 0)) - 1 if table[0] == 0 else 0
        if low < 0:  # all zero
            low = 255
        cv2 = self.cv2
        wanted = table[low:]
        for nudge in _NUDGES:
            alpha, beta = float(mul), float(add + nudge)
            body = cv2.convertScaleAbs(_RAMP[low:], alpha=alpha, beta=beta).reshape(-1)
            tail = cv2.convertScaleAbs(_RAMP_ROWS[low:], alpha=alpha, beta=beta).reshape(-1)
            if np.array_equal(body, wanted) and np.array_equal(tail, wanted):
                return alpha, beta, low
        return None

    def lookup(
        self, sample: np.ndarray, table: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """``table[sample]`` for a uint8 ``sample`` (into ``out`` when given): cv2.LUT for the
        table types OpenCV has (3-4x faster than ``np.take``; it releases the GIL), ``np.take``
        for the others (uint32, 64-bit integers)."""
        if sample.size == 0 or (table.dtype not in _CV_TABLES):
            if out is None:
                return np.take(table, sample)
            out[...] = np.take(table, sample)
            return out
        flat = np.ascontiguousarray(sample).reshape(-1)
        if out is None:
            return self.cv2.LUT(flat, table).reshape(sample.shape)
        dst = out.reshape(-1)
        result = self.cv2.LUT(flat, table, dst=dst)
        if result is not dst:  # OpenCV wrote elsewhere (never seen): keep the promise
            dst[...] = result.reshape(dst.shape)
        return out

    gpu = cpu


_DTYPE = Arg("dtype", "output data type (default: the input's)", None, to_number_type)
_BRIGHTNESS = Arg("brightness", "multiplier of the result (1: unchanged)", 1.0, to_float(), True)
_SHIFT = Arg(
    "brightness_shift",
    "added, in units of the output range (1.0: the type's maximum)",
    0.0,
    to_float(),
    per_sample=True,
)
_CONTRAST = Arg("contrast", "contrast multiplier (0: uniform grey)", 1.0, to_float(), True)
_CENTER = Arg(
    "contrast_center",
    "the level contrast leaves unchanged (default: 128 for uint8, 0.5 for float)",
    None,
    to_float(),
    per_sample=True,
)
_COMMON_DOC = (
    "Computed in float32 as DALI computes it, then converted to ``dtype`` (default: the input "
    "type) with rounding half away from zero and saturation. Works on any layout (element by "
    "element). Differences from DALI: any numeric input and output dtype is accepted (DALI: "
    "uint8, int16, int32, float, float16; layouts HWC, FHWC, DHWC); on the GPU integer outputs "
    "round halves away from zero as on the CPU (DALI's GPU rounds them to even)."
)

register(
    OperatorSchema(
        name="brightness_contrast",
        class_name="BrightnessContrast",
        impl=BrightnessContrast,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Adjusts brightness and contrast: ``out = brightness_shift * output_range + "
            "brightness * (contrast_center + contrast * (in - contrast_center))``, where "
            "output_range is 1 for float outputs and the type's maximum for integer outputs "
            "(255 for UINT8), and contrast_center defaults to half the input type's positive "
            "range (128 for uint8, 0.5 for floats). brightness, brightness_shift, contrast and "
            "contrast_center may be per sample (e.g. "
            "``brightness=fn.random.uniform(range=(0.5, 1.5))``). " + _COMMON_DOC
        ),
        args=[_BRIGHTNESS, _SHIFT, _CONTRAST, _CENTER, _DTYPE],
    )
)

register(
    OperatorSchema(
        name="brightness",
        class_name="Brightness",
        impl=BrightnessContrast,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Adjusts brightness: ``out = brightness_shift * output_range + brightness * in``, "
            "where output_range is 1 for float outputs and the type's maximum for integer "
            "outputs (255 for UINT8). brightness and brightness_shift may be per sample. "
            + _COMMON_DOC
        ),
        args=[_BRIGHTNESS, _SHIFT, _DTYPE],
    )
)

register(
    OperatorSchema(
        name="contrast",
        class_name="Contrast",
        impl=BrightnessContrast,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Adjusts contrast: ``out = contrast_center + contrast * (in - contrast_center)``, "
            "where contrast_center defaults to half the input type's positive range (128 for "
            "uint8, 0.5 for floats). contrast and contrast_center may be per sample. " + _COMMON_DOC
        ),
        args=[_CONTRAST, _CENTER, _DTYPE],
    )
)
