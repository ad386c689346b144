"""``fn.lookup_table``: maps integer inputs through a table given by ``keys`` and ``values``
(``default_value`` for every other input value), as DALI's LookupTable.

DALI's rules (checked against DALI 2.4):

- ``lut[keys[k]] = values[k]``; where a key repeats, its **last** value wins. Input values that
  are not keys (negative ones, ones above the largest key) give ``default_value``.
- The values (and the default) are converted to ``dtype`` (default FLOAT) once, with
  ``convert_sat``: ``2.5 -> 3``, ``-7.5 -> -8``, ``300 -> 255`` for UINT8.
- keys are integers in 0..65535 and must be as many as the values; no keys gives a table of
  defaults only. Inputs must be integers (DALI refuses float and bool inputs).

The kernel is ``cv2.LUT`` with a 256-entry table for uint8 inputs (where OpenCV has the output
type) and a NumPy gather
over the table, extended by one default entry at each end and indexed by the clipped input,
otherwise. Works on any shape and layout. DALI's deprecated alias ``output_dtype`` of
``dtype`` is not taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend, types
from augkit.errors import ArgumentError
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_dtype,
    to_float,
    to_floats,
    to_ints,
)

MAX_KEY = 65535
# Output types cv2.LUT can give (its depths).
_CV2_DEPTHS = {np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32)} | {
    np.dtype(np.float32),
    np.dtype(np.float64),
}


def _keys(value: Any) -> tuple[int, ...]:
    keys = to_ints(low=0)(value)
    for k in keys:
        if k > MAX_KEY:
            raise ValueError(f"keys must be in 0..{MAX_KEY}, got {k}")
    return keys


_keys.allowed = f"an integer in 0..{MAX_KEY} or a list of them"  # type: ignore[attr-defined]


def _validate(args: dict[str, Any]) -> None:
    keys, values = args.get("keys", ()), args.get("values", ())
    if len(keys) != len(values):
        raise ValueError(
            f"keys ({len(keys)} values) and values ({len(values)}) must have the same length"
        )


def build_table(
    keys: tuple[int, ...], values: tuple[float, ...], default: float, dtype: np.dtype
) -> np.ndarray:
    """The table extended by a default at each end: entry 0 is for negative inputs, entry
    ``k + 1`` for input ``k``, the last for inputs above the largest key."""
    top = max(keys) if keys else -1
    with np.errstate(over="ignore", invalid="ignore"):
        table = np.full(top + 3, default, np.float64)
        for key, value in zip(keys, values, strict=True):
            table[key + 1] = value
        return convert_sat(table, dtype)


class LookupTable(SampleOperator):
    """``table[clip(x, -1, top + 1) + 1]``; ``cv2.LUT`` for uint8 inputs."""

    def setup(self) -> None:
        a = self.args
        try:
            _validate(a)
        except ValueError as exc:
            raise ArgumentError(f"{self.schema.class_name}: {exc}") from None
        self.cv2 = backend.opencv()
        self.out_dtype = np.dtype(a["dtype"].numpy)
        self.table = build_table(a["keys"], a["values"], a["default_value"], self.out_dtype)
        self.top = len(self.table) - 3
        # 256 entries for uint8 inputs: table[x + 1], defaults above the largest key.
        ext = np.full(256, self.table[-1], self.out_dtype)
        n = min(256, self.top + 1)
        ext[:n] = self.table[1 : n + 1]
        self.table_u8 = ext
        self.lut_u8 = ext.reshape(1, 256) if self.out_dtype in _CV2_DEPTHS else None

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.dtype.kind not in "iu":
            raise ValueError(
                f"lookup_table takes integer inputs (uint8, int16, int32, ...), got "
                f"{sample.dtype.name}"
            )

    def cpu(self, sample: Any, **_: Any) -> Any:
        x = np.asarray(sample)
        if x.dtype == np.uint8:
            if self.lut_u8 is not None and 0 < x.size < 2**31 and x.flags.c_contiguous:
                src = x.reshape(x.shape[0], -1) if x.ndim else x.reshape(1, 1)
                out = np.empty(x.shape, self.out_dtype)
                self.cv2.LUT(src, self.lut_u8, dst=out.reshape(src.shape))
                return out
            return self.table_u8[x]
        if x.dtype.kind == "u" and x.dtype.itemsize >= 8:
            index = np.minimum(x, np.uint64(self.top + 1)).astype(np.int64) + 1
        else:
            index = np.clip(x.astype(np.int64), -1, self.top + 1) + 1
        return self.table[index]


register(
    OperatorSchema(
        name="lookup_table",
        class_name="LookupTable",
        impl=LookupTable,
        accepts=None,
        output_kinds=keeps_kind,
        validate=_validate,
        doc=(
            "Maps each value of an integer input through a lookup table: ``values[k]`` where the "
            "input equals ``keys[k]`` (the last one where a key repeats), ``default_value`` "
            "everywhere else (negative inputs, inputs above the largest key). The values are "
            "converted to ``dtype`` (default FLOAT; integer types round halves away from zero "
            "and saturate). keys are integers in 0..65535, as many as the values. Works on any "
            "shape and layout."
        ),
        args=[
            Arg("keys", "the input values that the table maps", (), _keys),
            Arg("values", "what each key maps to", (), to_floats()),
            Arg("default_value", "the output for inputs that are not keys", 0.0, to_float()),
            Arg("dtype", "output data type", types.FLOAT, to_dtype),
        ],
    )
)
