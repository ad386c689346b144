"""Parity cases of the box crops family: fn.random_bbox_crop's deterministic limits (a window
that can only be the whole space, or a fixed crop_shape equal to input_shape), where DALI's
and augkit's random streams cannot make a difference (tests/dali_parity/base.py says what a
case is)."""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

_WHOLE = (
    "scaling=[1, 1] and no 'no crop' option: the one window is the whole space, so the boxes, "
    "labels and indices are DALI's centre filter and remapping: exact"
)

CASES = [
    ParityCase(
        "random_bbox_crop_whole_window_labels_indices",
        lambda fn, types, x: fn.random_bbox_crop(
            x[0], x[1], allow_no_crop=False, total_num_attempts=3, output_bbox_indices=True
        ),
        input=("boxes", "box_labels"),
        note=_WHOLE,
    ),
    ParityCase(
        "random_bbox_crop_no_crop_only_yxYX",
        lambda fn, types, x: fn.random_bbox_crop(
            x, thresholds=[0.5], bbox_layout="yxYX", total_num_attempts=1, scaling=[1.0, 1.0]
        ),
        input="boxes",
        note=(
            "threshold 0.5 or 'no crop' with the whole window: both give anchor 0, shape 1 and "
            "the boxes (a permuted layout) unchanged: exact"
        ),
    ),
    ParityCase(
        "random_bbox_crop_fixed_shape_equal_input",
        lambda fn, types, x: fn.random_bbox_crop(
            x,
            crop_shape=[60, 40],
            input_shape=[60, 40],
            allow_no_crop=False,
            total_num_attempts=2,
            threshold_type="overlap",
        ),
        input="boxes",
        note="absolute window equal to the input: anchor 0, shape = input_shape: exact",
    ),
    ParityCase(
        "random_bbox_crop_prune_threshold",
        lambda fn, types, x: fn.random_bbox_crop(
            x, allow_no_crop=False, total_num_attempts=2, bbox_prune_threshold=0.0
        ),
        input="boxes",
        note=_WHOLE + " (pruned by area fraction instead of centre)",
    ),
]

# The input sets have 4 samples; these cases give their own per-sample values (x is unused).
_SHAPES_5_4 = [[100, 125, 3], [40, 50, 3], [80, 100, 1], [20, 25, 1]]

CASES += [
    ParityCase(
        "roi_random_crop_window_equals_roi",
        lambda fn, types, x: fn.roi_random_crop(
            crop_shape=per_sample(fn, [[8, 8], [5, 9], [1, 1], [4, 3]], np.int32),
            roi_start=per_sample(fn, [[2, 3], [0, 0], [7, 1], [3, 3]], np.int32),
            roi_shape=per_sample(fn, [[8, 8], [5, 9], [1, 1], [4, 3]], np.int32),
        ),
        input="boxes",
        note="ROI extent == window extent: the window starts at the ROI (no draw): exact",
    ),
    ParityCase(
        "roi_random_crop_window_equals_input",
        lambda fn, types, x: fn.roi_random_crop(
            crop_shape=(20, 30),
            in_shape=(20, 30),
            roi_start=per_sample(fn, [[2, 3], [0, 0], [5, 1], [3, 13]], np.int32),
            roi_end=per_sample(fn, [[12, 8], [20, 30], [6, 29], [4, 14]], np.int32),
        ),
        input="boxes",
        note="a window the size of the input can only start at 0: exact",
    ),
    ParityCase(
        "random_crop_generator_whole_image",
        lambda fn, types, x: fn.random_crop_generator(
            per_sample(fn, _SHAPES_5_4, np.int64),
            random_area=(1.0, 1.0),
            random_aspect_ratio=1.25,
        ),
        input="boxes",
        note=(
            "area 1 at the shapes' own aspect ratio 1.25: the whole image, anchor 0; anchor "
            "(y, x) and shape (h, w) int32: exact"
        ),
    ),
]


def _grid_anchors(cells: int, sizes: tuple[float, ...]) -> list[float]:
    """SSD-like anchors: a cells x cells grid of centres, one square anchor per size, ltrb."""
    out: list[float] = []
    for j in range(cells):
        for i in range(cells):
            cx, cy = (i + 0.5) / cells, (j + 0.5) / cells
            for s in sizes:
                out += [cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2]
    return out


_ANCHORS = _grid_anchors(8, (0.1, 0.3, 0.6))
_ENCODER = (
    "float32 IoU matrix, DALI's tie-breaking (last best) and strict criteria; the offsets' log "
    "in float64 rounded to float32 (glibc's logf): exact"
)

CASES += [
    ParityCase(
        "box_encoder_default",
        lambda fn, types, x: fn.box_encoder(x[0], x[1], anchors=_ANCHORS),
        input=("boxes", "box_labels"),
        note=_ENCODER,
    ),
    ParityCase(
        "box_encoder_low_criteria",
        lambda fn, types, x: fn.box_encoder(x[0], x[1], anchors=_ANCHORS, criteria=0.1),
        input=("boxes", "box_labels"),
        note=_ENCODER,
    ),
    ParityCase(
        "box_encoder_offset_scale_means_stds",
        lambda fn, types, x: fn.box_encoder(
            x[0],
            x[1],
            anchors=_ANCHORS,
            criteria=0.4,
            offset=True,
            scale=300.0,
            means=(0.01, -0.02, 0.1, 0.05),
            stds=(0.1, 0.1, 0.2, 0.2),
        ),
        input=("boxes", "box_labels"),
        note=_ENCODER,
    ),
]
