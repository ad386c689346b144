"""Parity cases of the noise and artefacts family: erase, grid_mask, noise.* (their deterministic
limits: DALI's random streams are not augkit's) and jpeg_compression_distortion."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

_DRAWS = "DALI's random streams differ: only the deterministic limit is compared"

CASES = [
    # --- erase: regions laid out flat, float32 coordinates truncated, C++ fill conversion
    ParityCase(
        "erase_two_regions",
        lambda fn, types, x: fn.erase(
            x, anchor=(3, 5, 20.7, 30.2), shape=(10.5, 12, 15.9, 9.99), fill_value=(10, 200, 30)
        ),
        note="two HW regions, fractional coordinates truncated as DALI does",
    ),
    ParityCase(
        "erase_normalized_centered",
        lambda fn, types, x: fn.erase(
            x, anchor=(0.5, 0.4), shape=(0.33, 0.41), normalized=True, centered_anchor=True
        ),
    ),
    ParityCase(
        "erase_axis_names_w_wrapped_fill",
        lambda fn, types, x: fn.erase(
            x, anchor=(-4, 40), shape=(10, 300), axis_names="W", fill_value=300
        ),
        note="fill 300 wraps to 44 in uint8 (C++ static_cast), regions clipped",
    ),
    ParityCase(
        "erase_axes_per_sample",
        lambda fn, types, x: fn.erase(
            x,
            anchor=per_sample(fn, [[5.0], [0.0, 20.0], [30.0], [-3.0]]),
            shape=per_sample(fn, [[10.0], [4.0, 8.0], [100.0], [9.5]]),
            axes=(0,),
            fill_value=per_sample(fn, [1.0, 2.5, 3.0, 4.0]),
        ),
        note="per-sample anchor/shape (1 or 2 regions) and fill",
    ),
    ParityCase(
        "erase_chw",
        lambda fn, types, x: fn.erase(x, anchor=(2, 3), shape=(20, 25), fill_value=(7, 8, 9)),
        input="chw",
    ),
    ParityCase(
        "erase_float_normalized_anchor",
        lambda fn, types, x: fn.erase(
            x, anchor=(0.1, 0.7), shape=(12, 9), normalized_anchor=True, fill_value=-0.5
        ),
        input="float",
    ),
    # --- grid_mask: DALI's float32 geometry
    ParityCase("grid_mask_default", lambda fn, types, x: fn.grid_mask(x)),
    ParityCase(
        "grid_mask_tile_ratio",
        lambda fn, types, x: fn.grid_mask(x, tile=9, ratio=0.35),
    ),
    ParityCase(
        "grid_mask_rotated_shifted",
        lambda fn, types, x: fn.grid_mask(
            x, tile=13, ratio=0.6, angle=-1.2, shift_x=3.3, shift_y=-7.1
        ),
    ),
    ParityCase(
        "grid_mask_per_sample",
        lambda fn, types, x: fn.grid_mask(
            x,
            tile=per_sample(fn, [5, 17, 33, 8], "int32"),
            ratio=per_sample(fn, [0.2, 0.5, 0.8, 0.45]),
            angle=per_sample(fn, [0.1, -0.7, 2.2, 0.785398]),
            shift_x=per_sample(fn, [0.0, 3.5, -10.0, 2.0]),
            shift_y=per_sample(fn, [1.0, -2.5, 40.0, 0.0]),
        ),
    ),
    ParityCase(
        "grid_mask_float",
        lambda fn, types, x: fn.grid_mask(x, tile=11, angle=0.4),
        input="float",
    ),
    # --- noise: deterministic limits
    ParityCase(
        "gaussian_stddev0_mean",
        lambda fn, types, x: fn.noise.gaussian(
            x, stddev=0.0, mean=per_sample(fn, [2.5, -2.5, 0.0, 300.0])
        ),
        note=f"{_DRAWS}; halves round away from zero, saturation",
    ),
    ParityCase(
        "gaussian_stddev0_float",
        lambda fn, types, x: fn.noise.gaussian(x, stddev=0.0, mean=0.25),
        input="float",
        note=_DRAWS,
    ),
    ParityCase(
        "salt_and_pepper_prob0",
        lambda fn, types, x: fn.noise.salt_and_pepper(x, prob=0.0),
        note=_DRAWS,
    ),
    ParityCase(
        "salt_and_pepper_all_salt",
        lambda fn, types, x: fn.noise.salt_and_pepper(
            x, prob=1.0, salt_vs_pepper=1.0, salt_val=300
        ),
        note=f"{_DRAWS}; salt_val 300 wraps to 44 (C++ static_cast)",
    ),
    ParityCase(
        "salt_and_pepper_all_pepper",
        lambda fn, types, x: fn.noise.salt_and_pepper(x, prob=1.0, salt_vs_pepper=0.0),
        note=f"{_DRAWS}; default pepper: the type's minimum",
    ),
    ParityCase(
        "salt_and_pepper_float_per_channel",
        lambda fn, types, x: fn.noise.salt_and_pepper(
            x, prob=1.0, salt_vs_pepper=per_sample(fn, [0.0, 1.0, 0.0, 1.0]), per_channel=True
        ),
        input="float",
        note=f"{_DRAWS}; float defaults -1 and 1",
    ),
    ParityCase(
        "shot_factor0",
        lambda fn, types, x: fn.noise.shot(x, factor=0.0),
        note=f"{_DRAWS}; DALI 2.4 gives zeros (its docs say the identity)",
    ),
    ParityCase(
        "shot_negative_factor",
        lambda fn, types, x: fn.noise.shot(x, factor=-3.0),
        note=_DRAWS,
    ),
    # --- jpeg_compression_distortion: OpenCV + libjpeg-turbo on both sides
    ParityCase(
        "jpeg_default",
        lambda fn, types, x: fn.jpeg_compression_distortion(x),
        note="same OpenCV calls, same libjpeg-turbo (3.1.2) as DALI's bundled OpenCV",
    ),
    ParityCase(
        "jpeg_per_sample_clamped",
        lambda fn, types, x: fn.jpeg_compression_distortion(
            x, quality=per_sample(fn, [0, 10, 95, 500], "int32")
        ),
        note="quality outside 1..100 clamped",
    ),
]
