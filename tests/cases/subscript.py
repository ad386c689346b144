"""Rows of ``fn.constant`` (``augkit/operators/constant.py``), DALI's constant tensor; the
subscript operator behind ``x[...]`` is internal (``augkit/operators/tensors/subscript.py``)
and has no row."""

from __future__ import annotations

from augkit import types
from tests.cases._row import OperatorCase

CASES: dict[str, OperatorCase] = {
    "constant": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("constant")(idata=[1, 2, 3, 4, 5, 6], shape=[2, 3], layout="HW"),
            op("constant")(fdata=[2.5, -2.5, 300.2], dtype=types.UINT8),
            op("constant")(fdata=0.5, shape=[2, 2]),
        ),
        required={"idata": [1, 2, 3]},
    ),
}
