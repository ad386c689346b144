"""Parity cases of ``fn.resize`` (the nearest-neighbour fix of the vocabulary issue)."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

_NN = "DALI's nearest-neighbour source indices (float32 row accumulation, ROI cut)"

CASES = [
    ParityCase(
        "resize_nn_shrink",
        lambda fn, types, x: fn.resize(x, size=(30, 40), interp_type=types.INTERP_NN),
        max_diff=0,
        note=_NN,
    ),
    ParityCase(
        "resize_nn_upscale",
        lambda fn, types, x: fn.resize(x, size=(173, 211), interp_type=types.INTERP_NN),
        max_diff=0,
        note=_NN,
    ),
    ParityCase(
        "resize_nn_odd_subpixel",
        lambda fn, types, x: fn.resize(x, resize_x=37.3, interp_type=types.INTERP_NN),
        max_diff=0,
        note=_NN + "; a fractional size moves the window (subpixel_scale)",
    ),
    ParityCase(
        "resize_nn_shorter_gray",
        lambda fn, types, x: fn.resize(x, resize_shorter=29, interp_type=types.INTERP_NN),
        input="gray",
        max_diff=0,
        note=_NN,
    ),
    ParityCase(
        "resize_nn_roi_flip",
        lambda fn, types, x: fn.resize(
            x,
            size=(41, 23),
            roi_start=(0.9, 0.15),
            roi_end=(0.1, 0.85),
            roi_relative=True,
            interp_type=types.INTERP_NN,
        ),
        max_diff=0,
        note=_NN + "; a flipped relative ROI",
    ),
    ParityCase(
        "resize_nn_roi_per_sample",
        lambda fn, types, x: fn.resize(
            x,
            resize_x=per_sample(fn, [33.0, 50.0, 17.0, 64.0]),
            resize_y=per_sample(fn, [19.0, 61.0, 40.0, 25.0]),
            roi_start=(3.7, 5.2),
            roi_end=(40.4, 31.9),
            interp_type=types.INTERP_NN,
        ),
        max_diff=0,
        note=_NN + "; an absolute ROI (the origin moves with the cut input)",
    ),
    ParityCase(
        "resize_nn_chw",
        lambda fn, types, x: fn.resize(x, size=(31, 47), interp_type=types.INTERP_NN),
        input="chw",
        max_diff=0,
        note=_NN,
    ),
    ParityCase(
        "resize_nn_float",
        lambda fn, types, x: fn.resize(x, size=(27, 70), interp_type=types.INTERP_NN),
        input="float",
        max_diff=0,
        note=_NN,
    ),
    ParityCase(
        "resize_linear_default",
        lambda fn, types, x: fn.resize(x, resize_x=50, resize_y=36),
        max_diff=None,
        mean_diff=0.6,
        reason="Pillow's (or torch's) 8-bit passes and border taps (resize.py's docstring); "
        "torch's scalar kernel (ATEN_CPU_CAPABILITY=default) moves a level on 5% of the pixels",
    ),
]
