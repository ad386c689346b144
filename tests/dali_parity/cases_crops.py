"""Parity cases of the crops family: fn.slice, fn.pad, fn.paste, fn.multi_paste and the
decoder crops (tests/dali_parity/base.py says what a case is)."""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

_EXACT = "a copy of DALI's window: exact"


def _anchor_shape(fn, anchors, shapes, dtype=np.float32):
    return per_sample(fn, anchors, dtype), per_sample(fn, shapes, dtype)


CASES = [
    # --- fn.slice ---------------------------------------------------------------------------
    ParityCase(
        "slice_rel_start_shape",
        lambda fn, types, x: fn.slice(x, rel_start=(0.13, 0.27), rel_shape=(0.55, 0.41)),
        note=_EXACT + " (float32 relative coordinates, ends rounded half away from zero)",
    ),
    ParityCase(
        "slice_rel_end_per_sample",
        lambda fn, types, x: fn.slice(
            x,
            rel_start=per_sample(fn, [[0.1, 0.2], [0.0, 0.5], [0.25, 0.25], [0.3, 0.05]]),
            rel_end=per_sample(fn, [[0.9, 0.7], [0.5, 1.0], [0.75, 0.75], [0.95, 0.6]]),
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_start_end_int",
        lambda fn, types, x: fn.slice(x, start=(3, 5), end=(30, 33)),
        note=_EXACT,
    ),
    ParityCase(
        "slice_start_shape_axis_names_hw",
        lambda fn, types, x: fn.slice(x, start=(7, 2), shape=(20, 31), axis_names="HW"),
        note=_EXACT,
    ),
    ParityCase(
        "slice_axes_channel",
        lambda fn, types, x: fn.slice(x, start=1, shape=2, axes=[2]),
        note=_EXACT,
    ),
    ParityCase(
        "slice_axes_negative_chw",
        lambda fn, types, x: fn.slice(x, rel_start=(0.2, 0.3), rel_shape=(0.5, 0.5), axes=[-1, -2]),
        input="chw",
        note=_EXACT,
    ),
    ParityCase(
        "slice_positional_normalized",
        lambda fn, types, x: fn.slice(
            x,
            *_anchor_shape(
                fn,
                [[0.1, 0.2], [0.33, 0.41], [0.5, 0.0], [0.05, 0.15]],
                [[0.5, 0.6], [0.5, 0.5], [0.5, 1.0], [0.9, 0.7]],
            ),
        ),
        note=_EXACT + " (normalized anchor and shape: (anchor + shape) * extent in double)",
    ),
    ParityCase(
        "slice_positional_absolute_float",
        lambda fn, types, x: fn.slice(
            x,
            *_anchor_shape(
                fn,
                [[1.5, 2.5], [3.49, 0.5], [10.0, 10.0], [0.0, 7.7]],
                [[20.5, 10.5], [15.2, 30.0], [11.0, 12.0], [33.3, 8.8]],
            ),
            normalized_anchor=False,
            normalized_shape=False,
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_positional_int",
        lambda fn, types, x: fn.slice(
            x,
            *_anchor_shape(
                fn,
                [[1, 2], [3, 0], [10, 10], [0, 7]],
                [[20, 10], [15, 30], [11, 12], [33, 8]],
                np.int32,
            ),
        ),
        note=_EXACT + " (integer inputs are absolute whatever normalized_anchor says)",
    ),
    ParityCase(
        "slice_positional_normalized_anchor_only",
        lambda fn, types, x: fn.slice(
            x,
            *_anchor_shape(
                fn,
                [[0.1, 0.2], [0.33, 0.41], [0.5, 0.0], [0.05, 0.15]],
                [[10.0, 12.0], [5.5, 7.5], [20.0, 30.0], [9.0, 9.0]],
            ),
            normalized_shape=False,
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_pad_fill_per_channel",
        lambda fn, types, x: fn.slice(
            x,
            start=(-7, -3),
            shape=(90, 70),
            out_of_bounds_policy="pad",
            fill_values=(10, 200, 37.9),
        ),
        note=_EXACT + " (fill values truncated)",
    ),
    ParityCase(
        "slice_pad_gray_rel",
        lambda fn, types, x: fn.slice(
            x,
            rel_start=(-0.2, 0.5),
            rel_shape=(1.5, 0.8),
            out_of_bounds_policy="pad",
            fill_values=128,
        ),
        input="gray",
        note=_EXACT,
    ),
    ParityCase(
        "slice_trim_to_shape",
        lambda fn, types, x: fn.slice(
            x, start=(-5, 20), shape=(40, 100), out_of_bounds_policy="trim_to_shape"
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_edge",
        lambda fn, types, x: fn.slice(
            x, start=(-9, 30), shape=(40, 45), out_of_bounds_policy="edge"
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_reflect_1001",
        lambda fn, types, x: fn.slice(
            x, start=(-9, -70), shape=(120, 200), out_of_bounds_policy="reflect"
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_reflect_101",
        lambda fn, types, x: fn.slice(
            x, start=(-9, -70), shape=(120, 200), out_of_bounds_policy="reflect_101"
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_wrap",
        lambda fn, types, x: fn.slice(
            x, start=(-90, -7), shape=(200, 130), out_of_bounds_policy="wrap"
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_float_to_uint8",
        lambda fn, types, x: fn.slice(
            x * 300.0 - 20.0, rel_start=(0.1, 0.1), rel_shape=(0.8, 0.8), dtype=types.UINT8
        ),
        input="float",
        note=_EXACT + " (clamped, then truncated: not ConvertSat's rounding)",
    ),
    ParityCase(
        "slice_uint8_to_float16",
        lambda fn, types, x: fn.slice(x, start=(2, 3), shape=(30, 30), dtype=types.FLOAT16),
        note=_EXACT,
    ),
    ParityCase(
        "slice_uint8_to_float_padded",
        lambda fn, types, x: fn.slice(
            x,
            start=(-2, -3),
            shape=(70, 90),
            dtype=types.FLOAT,
            out_of_bounds_policy="pad",
            fill_values=-1.5,
        ),
        note=_EXACT,
    ),
    ParityCase(
        "slice_vectors_axes0",
        lambda fn, types, x: fn.slice(x, rel_start=0.25, rel_end=0.8, axes=[0]),
        input="vectors",
        note=_EXACT,
    ),
    ParityCase(
        "slice_matrices_all_axes",
        lambda fn, types, x: fn.slice(x, start=(1, 0), shape=(1, 2), axes=(0, 1)),
        input="matrices",
        note=_EXACT,
    ),
]

CASES += [
    # --- fn.pad (batch semantics: the four photos have different sizes) --------------------
    ParityCase(
        "pad_all_axes_to_batch_max",
        lambda fn, types, x: fn.pad(x),
        note=_EXACT,
    ),
    ParityCase(
        "pad_hw_fill",
        lambda fn, types, x: fn.pad(x, axis_names="HW", fill_value=77.9),
        note=_EXACT + " (fill truncated)",
    ),
    ParityCase(
        "pad_shape_align",
        lambda fn, types, x: fn.pad(x, axes=(0, 1), shape=(70, -1), align=(8, 5)),
        note=_EXACT,
    ),
    ParityCase(
        "pad_align_only_per_sample_fill",
        lambda fn, types, x: fn.pad(
            x,
            axis_names="WH",
            shape=1,
            align=(16, 3),
            fill_value=per_sample(fn, [1.0, 50.0, 200.0, 255.0]),
        ),
        note=_EXACT,
    ),
    ParityCase(
        "pad_channels_negative_axis",
        lambda fn, types, x: fn.pad(x, axes=[-1], shape=4, fill_value=255),
        note=_EXACT,
    ),
    ParityCase(
        "pad_float_chw",
        lambda fn, types, x: fn.pad(x, axis_names="W", align=32, fill_value=-0.25),
        input="chw",
        note=_EXACT,
    ),
    ParityCase(
        "pad_vectors",
        lambda fn, types, x: fn.pad(x, fill_value=-1),
        input="vectors",
        note=_EXACT,
    ),
    ParityCase(
        "pad_matrices_per_sample_shape",
        lambda fn, types, x: fn.pad(
            x, axes=[1], shape=per_sample(fn, [[6], [1], [3], [2]], np.int32), fill_value=9.5
        ),
        input="matrices",
        note=_EXACT,
    ),
]

# random_area above 1: every attempt fails and DALI's fall-back takes the whole image (its
# aspect ratio is in range): deterministic, whatever the random streams.
_FALLBACK = {"random_area": (1.5, 2.0), "random_aspect_ratio": (0.1, 10.0)}

CASES += [
    # --- fn.random_resized_crop (the deterministic fall-back window) -------------------------
    ParityCase(
        "rrc_fallback_linear",
        lambda fn, types, x: fn.random_resized_crop(x, size=(30, 40), **_FALLBACK),
        max_diff=None,
        mean_diff=0.3,
        reason="the whole image resized as fn.resize (measured max 7, mean 0.21): Pillow's "
        "(or torch's) 8-bit passes, and border taps renormalised where DALI repeats the edge; "
        "torch's scalar kernel (ATEN_CPU_CAPABILITY=default) moves a level on 1% of the pixels",
    ),
    ParityCase(
        "rrc_fallback_nn_upscale",
        lambda fn, types, x: fn.random_resized_crop(
            x, size=(97, 131), interp_type=types.INTERP_NN, **_FALLBACK
        ),
        note="DALI's nearest-neighbour indices: exact",
    ),
    ParityCase(
        "rrc_fallback_float_chw",
        lambda fn, types, x: fn.random_resized_crop(x, size=25, dtype=types.FLOAT, **_FALLBACK),
        input="chw",
        max_diff=None,
        mean_diff=0.3,
        reason="float output of the linear resize (measured max 10 at the border, mean 0.22): "
        "border taps renormalised where DALI repeats the edge",
    ),
]

CASES += [
    # --- the decoders that crop (augkit's full decode is DALI's bit for bit on these files) -
    ParityCase(
        "decoder_crop_pos",
        lambda fn, types, x: fn.decoders.image_crop(
            x, crop=(24, 30), crop_pos_x=0.3, crop_pos_y=0.7
        ),
        input="jpegs",
        note="decoded whole, then cut: exact",
    ),
    ParityCase(
        "decoder_crop_per_sample_gray",
        lambda fn, types, x: fn.decoders.image_crop(
            x,
            crop_w=per_sample(fn, [31.7, 20.0, 56.0, 70.0]),
            crop_h=37,
            crop_pos_x=per_sample(fn, [0.0, 0.25, 0.5, 1.0]),
            output_type=types.GRAY,
            rounding="truncate",
        ),
        input="jpegs",
        note="decoded whole (libjpeg's luma), then cut: exact",
    ),
    ParityCase(
        "decoder_slice_rel",
        lambda fn, types, x: fn.decoders.image_slice(x, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5)),
        input="jpegs",
        note="decoded whole, then cut: exact",
    ),
    ParityCase(
        "decoder_slice_inputs_bgr",
        lambda fn, types, x: fn.decoders.image_slice(
            x,
            *_anchor_shape(
                fn,
                [[10, 20], [0, 0], [30, 31], [60, 30]],
                [[40, 20], [80, 60], [1, 1], [12, 10]],
                np.int32,
            ),
            output_type=types.BGR,
        ),
        input="jpegs",
        note="decoded whole, then cut: exact",
    ),
    ParityCase(
        "decoder_random_crop_fallback",
        lambda fn, types, x: fn.decoders.image_random_crop(x, **_FALLBACK),
        input="jpegs",
        note="the deterministic fall-back window (the whole image): exact",
    ),
]

CASES += [
    # --- fn.paste ---------------------------------------------------------------------------
    ParityCase(
        "paste_centre",
        lambda fn, types, x: fn.paste(x, ratio=2.0, fill_value=(118, 185, 0)),
        note="truncated canvas and position: exact",
    ),
    ParityCase(
        "paste_per_sample",
        lambda fn, types, x: fn.paste(
            x,
            ratio=per_sample(fn, [1.0, 1.37, 2.5, 1.5]),
            paste_x=per_sample(fn, [0.0, 0.77, 1.0, 0.3]),
            paste_y=per_sample(fn, [1.0, 0.5, 0.1, 0.9]),
            min_canvas_size=per_sample(fn, [70.7, 0.0, 0.0, 100.0]),
            fill_value=(300, -2, 7),
        ),
        note="exact (fill values taken modulo 256, as DALI)",
    ),
    ParityCase(
        "paste_gray",
        lambda fn, types, x: fn.paste(x, ratio=1.8, n_channels=1, fill_value=9, paste_x=0.2),
        input="gray",
        note="exact",
    ),
    # --- fn.multi_paste ---------------------------------------------------------------------
    ParityCase(
        "multi_paste_in_ids",
        lambda fn, types, x: fn.multi_paste(
            x,
            in_ids=per_sample(fn, [[1, 0], [2], [3, 2, 1], [0]], np.int32),
            in_anchors=per_sample(
                fn, [[[5, 5], [0, 0]], [[10, 3]], [[0, 0], [1, 2], [3, 4]], [[7, 9]]], np.int32
            ),
            shapes=per_sample(
                fn,
                [[[20, 30], [40, 40]], [[30, 30]], [[40, 50], [10, 10], [5, 6]], [[30, 40]]],
                np.int32,
            ),
            out_anchors=per_sample(
                fn,
                [[[0, 0], [10, 20]], [[5, 5]], [[0, 0], [30, 40], [40, 50]], [[20, 20]]],
                np.int32,
            ),
            output_size=[64, 80],
        ),
        note="exact (later regions overwrite earlier ones)",
    ),
    ParityCase(
        "multi_paste_relative_float",
        lambda fn, types, x: fn.multi_paste(
            x,
            in_ids=per_sample(fn, [[3], [0, 1], [2], [1]], np.int32),
            in_anchors_rel=per_sample(
                fn, [[[0.3, 0.5]], [[0.1, 0.1], [0.5, 0.25]], [[0.0, 0.7]], [[0.33, 0.33]]]
            ),
            shapes_rel=per_sample(
                fn, [[[0.5, 0.5]], [[0.6, 0.3], [0.5, 0.75]], [[1.0, 0.3]], [[0.41, 0.37]]]
            ),
            out_anchors_rel=per_sample(
                fn, [[[0.5, 0.1]], [[0.2, 0.5], [0.0, 0.0]], [[0.0, 0.0]], [[0.45, 0.55]]]
            ),
            output_size=[60, 80],
            dtype=types.FLOAT,
        ),
        note="floor(anchor * extent), ceil(shape * extent): exact",
    ),
    ParityCase(
        "multi_paste_two_inputs",
        lambda fn, types, x: fn.multi_paste(
            fn.resize(x, size=(40, 40), interp_type=types.INTERP_NN),
            fn.resize(x, size=(20, 10), interp_type=types.INTERP_NN),
            out_anchors=per_sample(
                fn,
                [[[0, 0], [5, 5]], [[10, 0], [0, 30]], [[0, 0], [20, 30]], [[3, 3], [1, 1]]],
                np.int32,
            ),
            output_size=[50, 45],
        ),
        note="one region of each input; canvas = the inputs' common shape: exact",
    ),
    ParityCase(
        "multi_paste_float_to_uint8",
        lambda fn, types, x: fn.multi_paste(
            x * 300.0 - 20.0, in_ids=[0], output_size=[48, 64], dtype=types.UINT8
        ),
        input="float",
        note="ConvertSat (half away from zero, saturating): exact",
    ),
]
