"""``fn.brightness_contrast``: ``out = brightness_shift * out_range + brightness *
(contrast_center + contrast * (in - contrast_center))``, as DALI computes it.

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
- ``dtype`` defaults to the input type. A uint8 image converted to FLOAT is not rescaled: the
  output stays in 0..255 (plus ``brightness_shift * 1.0``).
- Integer outputs round halves away from zero and saturate (``convert_sat``).
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


@described("an integer or floating-point type: types.UINT8, types.FLOAT, ...")
def _number_type(value: Any) -> types.DALIDataType:
    dtype = to_dtype(value)
    if np.dtype(dtype.numpy).kind not in "iuf":
        raise ValueError(f"brightness_contrast produces numbers, not types.{dtype.name}")
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


class BrightnessContrast(SampleOperator):
    """``convert_sat(float32(in) * mul + add)`` per sample, with DALI's mul and add."""

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.dtype.kind not in "iuf":
            raise ValueError(f"brightness_contrast needs numbers, got {sample.dtype} data")

    def cpu(
        self,
        sample: Any,
        *,
        brightness: float,
        brightness_shift: float,
        contrast: float,
        contrast_center: float | None,
        dtype: Any,
        **_: Any,
    ) -> Any:
        xp = backend.array_module(sample)
        out_dtype = sample.dtype if dtype is None else dtype.numpy
        # In float32, as DALI computes: values beyond its range (a float64 input of 1e300,
        # brightness=1e300) become inf and saturate, without NumPy's overflow warnings.
        with np.errstate(over="ignore", invalid="ignore"):
            center = np.float32(
                contrast_center_for(sample.dtype) if contrast_center is None else contrast_center
            )
            brightness32, contrast32 = np.float32(brightness), np.float32(contrast)
            add = np.float32(brightness_shift) * output_range(out_dtype) + brightness32 * (
                center - contrast32 * center
            )
            mul = brightness32 * contrast32
            values = sample.astype(np.float32) * mul + add
            return convert_sat(values, out_dtype, xp)

    gpu = cpu


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
            "range (128 for uint8, 0.5 for floats). Computed in float32 as DALI computes it, "
            "then converted to ``dtype`` (default: the input type) with rounding half away from "
            "zero and saturation. brightness, brightness_shift and contrast may be per sample "
            "(e.g. ``brightness=fn.random.uniform(range=(0.5, 1.5))``). Works on any layout "
            "(element by element). Differences from DALI: any numeric input and output dtype is "
            "accepted (DALI: uint8, int16, int32, float); on the GPU integer outputs round "
            "halves away from zero as on the CPU (DALI's GPU rounds them to even)."
        ),
        args=[
            Arg("brightness", "multiplier of the result (1: unchanged)", 1.0, to_float(), True),
            Arg(
                "brightness_shift",
                "added, in units of the output range (1.0: the type's maximum)",
                0.0,
                to_float(),
                per_sample=True,
            ),
            Arg("contrast", "contrast multiplier (0: uniform grey)", 1.0, to_float(), True),
            Arg(
                "contrast_center",
                "the level contrast leaves unchanged (default: 128 for uint8, 0.5 for float)",
                None,
                to_float(),
            ),
            Arg("dtype", "output data type (default: the input's)", None, _number_type),
        ],
    )
)
