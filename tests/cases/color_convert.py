"""Rows of the colour-conversion family: normalize, color_space_conversion, lookup_table,
equalize, clahe."""

from __future__ import annotations

from augkit import types
from tests.cases._row import OperatorCase, _uniform

CASES: dict[str, OperatorCase] = {
    "normalize": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("normalize")(x, axis_names="HW"),
            op("normalize")(x, mean=_uniform(op, 90, 140), stddev=_uniform(op, 40, 70)),
            op("normalize")(x, batch=True, scale=64.0, shift=128.0, dtype=types.UINT8),
        ),
    ),
    "color_space_conversion": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("color_space_conversion")(x, image_type=types.RGB, output_type=types.YCbCr),
            op("color_space_conversion")(x, image_type=types.RGB, output_type=types.GRAY),
        ),
        required={"image_type": types.GRAY, "output_type": types.RGB},
    ),
    "lookup_table": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("lookup_table")(x, keys=[0, 50, 100, 150, 200], values=[1.0, 2.0, 3.5, -4.0, 9.0]),
            op("lookup_table")(
                x, keys=list(range(256)), values=[255.0 - k for k in range(256)], dtype=types.UINT8
            ),
        ),
    ),
    "equalize": OperatorCase(
        input="images",
        body=lambda op, x: (op("equalize")(x),),
    ),
    "clahe": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("clahe")(x, tiles_x=4, tiles_y=4, clip_limit=2.0),
            op("clahe")(x, tiles_x=3, tiles_y=2, clip_limit=3.0, luma_only=False),
        ),
        required={"tiles_x": 4, "tiles_y": 4, "clip_limit": 2.0},
    ),
}
