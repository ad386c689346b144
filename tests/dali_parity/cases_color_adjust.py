"""Parity cases of the colour-adjustment family: brightness_contrast, brightness, contrast (one
MultiplyAdd kernel in DALI) and hsv, hue, saturation, color_twist (one colour-matrix kernel).
augkit evaluates DALI's float32 arithmetic in DALI's order, so every case is exact."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

EXACT = "DALI's float32 formula in DALI's order of operations; halves away from zero"
MATRIX = "DALI's float32 colour matrix (float32 Gauss-Jordan inverse of Rgb2Yiq), no FMA"

CASES = [
    # --- brightness_contrast / brightness / contrast ---------------------------------------
    ParityCase(
        "bc_contrast_half",
        lambda fn, types, x: fn.brightness_contrast(x, contrast=0.5),
        note=EXACT + " (every odd pixel is a half: 64 + x / 2)",
    ),
    ParityCase(
        "bc_per_sample",
        lambda fn, types, x: fn.brightness_contrast(
            x,
            brightness=per_sample(fn, [0.6, 1.0, 1.3, 1.7]),
            contrast=per_sample(fn, [1.4, 0.0, 0.7, 1.1]),
            brightness_shift=per_sample(fn, [-0.1, 0.05, 0.0, 0.2]),
        ),
        note=EXACT,
    ),
    ParityCase(
        "bc_per_sample_center",
        lambda fn, types, x: fn.brightness_contrast(
            x, contrast=1.8, contrast_center=per_sample(fn, [0.0, 64.0, 127.5, 200.0])
        ),
        note=EXACT,
    ),
    ParityCase(
        "bc_float",
        lambda fn, types, x: fn.brightness_contrast(
            x, brightness=1.1, brightness_shift=0.05, contrast=1.7
        ),
        input="float",
        note=EXACT + " (centre 0.5, range 1)",
    ),
    ParityCase(
        "bc_uint8_to_float",
        lambda fn, types, x: fn.brightness_contrast(
            x, brightness=0.9, brightness_shift=0.25, contrast=1.2, dtype=types.FLOAT
        ),
        note=EXACT + " (not rescaled: 0..255 plus shift * 1.0)",
    ),
    ParityCase(
        "bc_int16",
        lambda fn, types, x: fn.brightness_contrast(
            fn.cast(x, dtype=types.INT16), brightness_shift=0.01, contrast=0.5
        ),
        note=EXACT + " (centre 16384, range 32767)",
    ),
    ParityCase(
        "brightness_per_sample",
        lambda fn, types, x: fn.brightness(
            x,
            brightness=per_sample(fn, [0.5, 1.0, 1.25, 2.0]),
            brightness_shift=per_sample(fn, [0.0, -0.2, 0.1, 0.3]),
        ),
        note=EXACT,
    ),
    ParityCase(
        "brightness_float",
        lambda fn, types, x: fn.brightness(x, brightness=1.3, brightness_shift=-0.1),
        input="float",
        note=EXACT,
    ),
    ParityCase(
        "contrast_zero_gray",
        lambda fn, types, x: fn.contrast(x, contrast=0.0),
        input="gray",
        note=EXACT + " (uniform 128)",
    ),
    ParityCase(
        "contrast_per_sample_center",
        lambda fn, types, x: fn.contrast(
            x,
            contrast=per_sample(fn, [0.5, 1.5, 2.5, 0.25]),
            contrast_center=per_sample(fn, [100.0, 128.0, 30.0, 250.0]),
        ),
        note=EXACT,
    ),
    ParityCase(
        "contrast_float_to_uint8",
        lambda fn, types, x: fn.contrast(x, contrast=1.5, dtype=types.UINT8),
        input="float",
        note=EXACT + " (range of the output: values near 0 and 1 round to 0 or 1)",
    ),
    # --- hsv / hue / saturation / color_twist --------------------------------------------
    ParityCase(
        "hsv_per_sample",
        lambda fn, types, x: fn.hsv(
            x,
            hue=per_sample(fn, [0.0, 30.0, -100.0, 200.0]),
            saturation=per_sample(fn, [1.0, 0.5, 1.7, 0.0]),
            value=per_sample(fn, [1.0, 0.8, 1.3, 1.1]),
        ),
        note=MATRIX,
    ),
    ParityCase(
        "hsv_float_default_uint8",
        lambda fn, types, x: fn.hsv(x, hue=45.0, saturation=1.2),
        input="float",
        note=MATRIX + " (dtype defaults to UINT8 for any input)",
    ),
    ParityCase(
        "hsv_float_out",
        lambda fn, types, x: fn.hsv(x, hue=-60.0, value=0.9, dtype=types.FLOAT),
        input="float",
        note=MATRIX,
    ),
    ParityCase(
        "hue_per_sample_wraps",
        lambda fn, types, x: fn.hue(x, hue=per_sample(fn, [-200.0, 15.0, 90.0, 370.0])),
        note=MATRIX,
    ),
    ParityCase(
        "hue_not_a_float32",
        lambda fn, types, x: fn.hue(x, hue=12.345),
        note=MATRIX + " (the argument rounded to float32 first, as DALI holds it)",
    ),
    ParityCase(
        "hue_float",
        lambda fn, types, x: fn.hue(x, hue=123.0),
        input="float",
        note=MATRIX + " (dtype defaults to the input's)",
    ),
    ParityCase(
        "saturation_per_sample",
        lambda fn, types, x: fn.saturation(x, saturation=per_sample(fn, [0.0, 0.5, 1.5, 3.0])),
        note=MATRIX,
    ),
    ParityCase(
        "saturation_float",
        lambda fn, types, x: fn.saturation(x, saturation=0.3),
        input="float",
        note=MATRIX,
    ),
    ParityCase(
        "color_twist_per_sample",
        lambda fn, types, x: fn.color_twist(
            x,
            hue=per_sample(fn, [0.0, 30.0, -100.0, 200.0]),
            saturation=per_sample(fn, [1.0, 0.5, 1.7, 0.0]),
            brightness=per_sample(fn, [1.0, 0.7, 1.2, 1.5]),
            contrast=per_sample(fn, [1.0, 0.6, 1.4, 0.0]),
        ),
        note=MATRIX + " (offset (128 - 128 * contrast) * brightness)",
    ),
    ParityCase(
        "color_twist_not_float32s",
        lambda fn, types, x: fn.color_twist(
            x, hue=-33.3, saturation=1.1, brightness=0.9, contrast=1.3
        ),
        note=MATRIX,
    ),
    ParityCase(
        "color_twist_float",
        lambda fn, types, x: fn.color_twist(
            x, hue=-20.0, saturation=1.3, brightness=0.9, contrast=1.2
        ),
        input="float",
        note=MATRIX + " (offset with half = 0.5)",
    ),
    ParityCase(
        "color_twist_to_float",
        lambda fn, types, x: fn.color_twist(x, hue=10.0, contrast=0.8, dtype=types.FLOAT),
        note=MATRIX,
    ),
    ParityCase(
        "color_twist_int16",
        lambda fn, types, x: fn.color_twist(fn.cast(x, dtype=types.INT16), contrast=0.5),
        note=MATRIX + " (half = 128 for int16, not brightness_contrast's 16384)",
    ),
]
