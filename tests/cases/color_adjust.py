"""Rows of the colour-adjustment family: brightness_contrast, brightness, contrast, hsv, hue,
saturation, color_twist (random draws for every per-sample argument). The colour-matrix rows
ask the fuzzer for 3-channel images (``channels=3``).
"""

from __future__ import annotations

from augkit import types
from tests.cases._row import OperatorCase, _uniform

# hsv, hue, saturation and color_twist need RGB images (3 channels last).
_RGB = {"channels": 3}

CASES: dict[str, OperatorCase] = {
    "brightness": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("brightness")(
                x, brightness=_uniform(op, 0.5, 1.5), brightness_shift=_uniform(op, -0.1, 0.1)
            ),
            op("brightness")(x, brightness=_uniform(op, 0.5, 1.5), dtype=types.FLOAT),
        ),
    ),
    "contrast": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("contrast")(x, contrast=_uniform(op, 0.0, 2.0)),
            op("contrast")(
                x, contrast=_uniform(op, 0.5, 1.5), contrast_center=_uniform(op, 0, 255)
            ),
        ),
    ),
    "hsv": OperatorCase(
        input="images",
        **_RGB,
        body=lambda op, x: (
            op("hsv")(
                x,
                hue=_uniform(op, -180, 180),
                saturation=_uniform(op, 0, 2),
                value=_uniform(op, 0.5, 1.5),
            ),
        ),
    ),
    "hue": OperatorCase(
        input="images",
        **_RGB,
        body=lambda op, x: (op("hue")(x, hue=_uniform(op, -180, 180)),),
    ),
    "saturation": OperatorCase(
        input="images",
        **_RGB,
        body=lambda op, x: (op("saturation")(x, saturation=_uniform(op, 0, 2)),),
    ),
    "color_twist": OperatorCase(
        input="images",
        **_RGB,
        body=lambda op, x: (
            op("color_twist")(
                x,
                hue=_uniform(op, -45, 45),
                saturation=_uniform(op, 0.5, 1.5),
                brightness=_uniform(op, 0.5, 1.5),
                contrast=_uniform(op, 0.5, 1.5),
            ),
            op("color_twist")(x, hue=_uniform(op, -45, 45), dtype=types.FLOAT),
        ),
    ),
}

CASES["brightness_contrast"] = OperatorCase(
    input="images",
    body=lambda op, x: (
        op("brightness_contrast")(
            x,
            brightness=_uniform(op, 0.5, 1.5),
            brightness_shift=_uniform(op, -0.1, 0.1),
            contrast=_uniform(op, 0.5, 1.5),
            contrast_center=_uniform(op, 64, 192),
        ),
        op("brightness_contrast")(x, contrast=_uniform(op, 0.5, 1.5), dtype=types.FLOAT),
    ),
)
