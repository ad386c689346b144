"""Rows of the box crops family: random_bbox_crop, roi_random_crop, random_crop_generator and
box_encoder (tests/operator_cases.py says what a row is). Boxes are drawn per sample (xyWH: start
uniform in [0, 0.5), extent in [0.05, 0.5), so every box is inside [0, 1]) and given in that
layout; shapes for random_crop_generator are drawn too."""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import types
from tests.cases._row import OperatorCase


def _boxes(op: Any, n: int = 3) -> Any:
    start = op("random.uniform")(range=(0.0, 0.5), shape=[n, 2])
    extent = op("random.uniform")(range=(0.05, 0.5), shape=[n, 2])
    return op("cat")(start, extent, axis=1)


def _valid_inputs(k: int, n: int) -> list[np.ndarray]:
    """Valid batches for the fuzzer: input 0 relative ltrb boxes, input 1 their labels."""
    rng = np.random.default_rng(k)
    if k == 0:
        out = []
        for i in range(n):
            lo = rng.uniform(0.0, 0.5, (i % 3 + 1, 2))
            out.append(np.concatenate([lo, lo + rng.uniform(0.05, 0.5, lo.shape)], 1))
        return [b.astype(np.float32) for b in out]
    return [np.arange(i % 3 + 1, dtype=np.int32) for i in range(n)]


def _ltrb_boxes(op: Any, n: int = 3) -> Any:
    start = op("random.uniform")(range=(0.0, 0.5), shape=[n, 2])
    end = op("random.uniform")(range=(0.5, 1.0), shape=[n, 2])
    return op("cat")(start, end, axis=1)


# 4 x 4 centres, two square sizes each, ltrb
_ANCHORS = [
    v
    for j in range(4)
    for i in range(4)
    for s in (0.2, 0.5)
    for v in (
        (i + 0.5 - 2 * s) / 4,
        (j + 0.5 - 2 * s) / 4,
        (i + 0.5 + 2 * s) / 4,
        (j + 0.5 + 2 * s) / 4,
    )
]


def _valid_shapes(k: int, n: int) -> list[np.ndarray]:
    """HWC shapes for random_crop_generator's fuzzing."""
    return [np.array([20 + 7 * i, 30 + 5 * i, 3], np.int64) for i in range(n)]


CASES: dict[str, OperatorCase] = {
    "random_bbox_crop": OperatorCase(
        input="none",
        body=lambda op, x: (
            *op("random_bbox_crop")(
                _boxes(op),
                bbox_layout="xyWH",
                scaling=(0.3, 1.0),
                aspect_ratio=(0.5, 2.0),
                thresholds=(0.1, 0.3, 0.5),
                total_num_attempts=20,
            ),
            *op("random_bbox_crop")(
                _boxes(op, 4),
                op("random.choice")(a=5, shape=[4]),
                bbox_layout="xyWH",
                crop_shape=(50, 40),
                input_shape=(120, 100),
                allow_no_crop=False,
                threshold_type="overlap",
                all_boxes_above_threshold=False,
                thresholds=(0.2,),
                total_num_attempts=10,
                output_bbox_indices=True,
            ),
        ),
        extra_inputs=_valid_inputs,
    ),
    "roi_random_crop": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("roi_random_crop")(
                x,
                crop_shape=(6, 5),
                roi_start=op("random.uniform")(range=(0, 4), shape=[2], dtype=types.INT32),
                roi_shape=(3, 4),
            ),
            op("roi_random_crop")(
                crop_shape=op("random.uniform")(range=(1, 8), shape=[3], dtype=types.INT32),
                roi_start=(1, 2, 3),
                roi_end=(9, 5, 4),
                in_shape=(12, 10, 9),
            ),
        ),
        required={"crop_shape": (4, 4), "roi_start": (1, 1), "roi_shape": (2, 2)},
    ),
    "random_crop_generator": OperatorCase(
        input="none",
        body=lambda op, x: (
            *op("random_crop_generator")(
                op("random.uniform")(range=(1, 300), shape=[2], dtype=types.INT32)
            ),
            *op("random_crop_generator")(
                op("random.uniform")(range=(1, 300), shape=[3], dtype=types.INT32),
                random_area=(0.3, 0.6),
                random_aspect_ratio=(0.5, 2.0),
            ),
        ),
        extra_inputs=_valid_shapes,
    ),
    "box_encoder": OperatorCase(
        input="none",
        body=lambda op, x: (
            *op("box_encoder")(
                _ltrb_boxes(op), op("random.choice")(a=5, shape=[3]), anchors=_ANCHORS
            ),
            *op("box_encoder")(
                _ltrb_boxes(op, 5),
                op("random.choice")(a=9, shape=[5]),
                anchors=_ANCHORS,
                criteria=0.3,
                offset=True,
                scale=300.0,
                stds=(0.1, 0.1, 0.2, 0.2),
            ),
        ),
        required={"anchors": _ANCHORS},
        extra_inputs=_valid_inputs,
    ),
}
