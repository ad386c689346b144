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
once per value (a 256-entry table per sample, ``level_table``) and looks the pixels up: bit for
bit what the element-wise formula gives, 25x to 100x faster than evaluating it on every pixel.
The lookup is cv2.LUT (``np.take`` for table types OpenCV lacks), about 67 us for a 320x320
RGB image on one thread, and it releases the GIL. StringZilla's SIMD byte translation (it comes
with Albumentations) does it in about 8 us but holds the GIL, and it is no dependency of augkit:
not used, so that kernels release the GIL and results do not depend on what is installed. Per
operator in a chained pipeline with per-sample arguments (320x320 RGB, one thread, a loaded
2-core machine): augkit about 80 us; DALI 2.4's vectorised MultiplyAdd 60-145 us.
``cv2.convertScaleAbs`` (2x faster than cv2.LUT) is not used: it takes the absolute value and
rounds halves to even. Other input types (and CuPy arrays
on the GPU) evaluate the formula element by element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.layouts import COLOR_IMAGE
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_dtype,
    to_float,
)

_LEVELS = np.arange(256, dtype=np.float32)
# Table types cv2.LUT takes (its output has the table's type).
_CV_TABLES = frozenset(
    np.dtype(t)
    for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float16, np.float32, np.float64)
)


@described("an integer or floating-point type: types.UINT8, types.FLOAT, ...")
def _number_type(value: Any) -> types.DALIDataType:
    dtype = to_dtype(value)
    if np.dtype(dtype.numpy).kind not in "iuf":
        raise ValueError(f"the output must be numbers, not types.{dtype.name}")
    return dtype


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


def level_table(mul: np.float32, add: np.float32, out_dtype: np.dtype) -> np.ndarray:
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
                return self.lookup(sample, level_table(mul, add, out_dtype))
            return convert_sat(sample.astype(np.float32) * mul + add, out_dtype, xp)

    def lookup(self, sample: np.ndarray, table: np.ndarray) -> np.ndarray:
        """``table[sample]`` for a uint8 ``sample``: cv2.LUT for the table types OpenCV has (3-4x
        faster than ``np.take``; it releases the GIL), ``np.take`` for the others (uint32,
        64-bit integers)."""
        if sample.size == 0 or (table.dtype not in _CV_TABLES):
            return np.take(table, sample)
        flat = np.ascontiguousarray(sample).reshape(-1)
        return self.cv2.LUT(flat, table).reshape(sample.shape)

    gpu = cpu


_DTYPE = Arg("dtype", "output data type (default: the input's)", None, _number_type)
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
