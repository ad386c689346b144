"""Parity cases of the operators augkit had before the vocabulary issue and that had none:
``flip``, ``crop``, ``crop_mirror_normalize``, ``decoders.image``."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]

CASES = [
    ParityCase("flip_default", lambda fn, types, x: fn.flip(x)),
    ParityCase("flip_vertical", lambda fn, types, x: fn.flip(x, horizontal=0, vertical=1)),
    ParityCase(
        "flip_per_sample",
        lambda fn, types, x: fn.flip(
            x,
            horizontal=per_sample(fn, [1, 0, 1, 0], "int32"),
            vertical=per_sample(fn, [0, 1, 1, 0], "int32"),
        ),
    ),
    ParityCase("flip_chw", lambda fn, types, x: fn.flip(x, vertical=1), input="chw"),
    ParityCase("crop_centre", lambda fn, types, x: fn.crop(x, crop=(20, 30))),
    ParityCase(
        "crop_positions",
        lambda fn, types, x: fn.crop(
            x,
            crop=(21, 17),
            crop_pos_x=per_sample(fn, [0.0, 0.3, 0.77, 1.0]),
            crop_pos_y=per_sample(fn, [1.0, 0.5, 0.13, 0.0]),
        ),
    ),
    ParityCase("crop_float", lambda fn, types, x: fn.crop(x, crop=(16, 16)), input="float"),
    ParityCase(
        "cmn_imagenet",
        lambda fn, types, x: fn.crop_mirror_normalize(
            x, crop=(32, 32), mean=MEAN, std=STD, dtype=types.FLOAT
        ),
        max_diff=1e-5,
        mean_diff=1e-6,
        reason="(x - mean) / std in float32; DALI multiplies by 1/std",
    ),
    ParityCase(
        "cmn_mirror_hwc",
        lambda fn, types, x: fn.crop_mirror_normalize(
            x,
            crop=(24, 24),
            crop_pos_x=per_sample(fn, [0.0, 0.5, 1.0, 0.25]),
            mirror=per_sample(fn, [1, 0, 1, 0], "int32"),
            mean=[128.0],
            std=[64.0],
            output_layout="HWC",
            dtype=types.FLOAT,
        ),
        note="(x - 128) / 64: exact in float32, however it is computed",
    ),
    ParityCase(
        "cmn_uint8_scale_shift",
        lambda fn, types, x: fn.crop_mirror_normalize(
            x,
            mean=[100.0, 110.0, 120.0],
            std=[50.0, 60.0, 70.0],
            scale=64.0,
            shift=128.0,
            dtype=types.UINT8,
        ),
        note="integer output: rounded and saturated",
    ),
    ParityCase(
        "decode_rgb",
        lambda fn, types, x: fn.decoders.image(x, output_type=types.RGB),
        input="jpegs",
        note="libjpeg-turbo in both",
    ),
    ParityCase(
        "decode_gray",
        lambda fn, types, x: fn.decoders.image(x, output_type=types.GRAY),
        input="jpegs",
    ),
]
