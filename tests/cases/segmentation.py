"""Rows of the segmentation family (``augkit/operators/segmentation/``): random pixels and
object boxes of label maps, and the selection of COCO polygons by mask id."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.cases._row import OperatorCase, _uniform

# COCO-style polygons of three masks (ids 0, 1, 2) over 10 vertices, and a selection of them:
# the fuzzer's valid inputs.
POLYGONS = [[0, 0, 3], [1, 3, 7], [2, 7, 10], [1, 2, 5]]
MASK_IDS = [2, 0]


def _shape_row(op: Any, x: Any, h: int, w: int) -> Any:
    """The int32 row [h, 3, w]: the shape of an (h, w) crop of the images, transposed. Graph
    inputs of fixed values made by operators from x: Python constants of more than one
    element cannot be inputs in debug mode (augkit/debug.py compares arguments with ``!=``),
    and an operator without inputs gets one sample in eager."""
    crop = op("transpose")(op("crop")(x, crop=(h, w)), perm=[0, 2, 1])
    return op("reshape")(op("cast")(op("shapes")(crop), dtype=_int32()), shape=[1, 3])


def _polygons(op: Any, x: Any) -> Any:
    """Polygons [[2, 3, 7], [1, 3, 10], [3, 3, 9], [1, 3, 5]] (masks 1, 2, 3; mask 1 twice)."""
    rows = [_shape_row(op, x, h, w) for h, w in ((2, 7), (1, 10), (3, 9), (1, 5))]
    return op("cat")(*rows, axis=0)


def _mask_ids(op: Any, x: Any) -> Any:
    """Mask ids [2, 1, 3] (the shape of a (2, 1) crop of the images)."""
    return op("shapes")(op("crop")(x, crop=(2, 1)))


def _int32() -> Any:
    from augkit import types

    return types.INT32


def _label_map(op: Any, x: Any) -> Any:
    """A label map (values 0..3, one channel) from the images: gray levels / 64."""
    gray = op("crop")(x, crop=(24, 24))
    return op("cast")(op("random.normal")(gray, mean=1.5, stddev=1.0), dtype=_uint8())


def _uint8() -> Any:
    from augkit import types

    return types.UINT8


def _vertices(op: Any, x: Any) -> Any:
    """(10, 6) float vertices, drawn per sample (shaped by a crop of the images)."""
    return op("random.normal")(op("reshape")(op("crop")(x, crop=(10, 2)), shape=[10, 6]))


def _select_inputs(k: int, n: int) -> list[np.ndarray]:
    """Valid inputs of select_masks for the fuzzer: mask ids, polygons, vertices."""
    if k == 0:
        return [np.array(MASK_IDS[: 1 + i % 2], np.int32) for i in range(n)]
    if k == 1:
        return [np.array(POLYGONS, np.int32) for _ in range(n)]
    return [np.arange(20, dtype=np.float32).reshape(10, 2) + i for i in range(n)]


CASES: dict[str, OperatorCase] = {
    "segmentation.random_mask_pixel": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("segmentation.random_mask_pixel")(
                x, foreground=op("random.coin_flip")(), threshold=_uniform(op, 0, 250)
            ),
            op("segmentation.random_mask_pixel")(
                _label_map(op, x), value=op("random.choice")(a=[0, 1, 2, 7]), foreground=1
            ),
            op("segmentation.random_mask_pixel")(x),
        ),
    ),
    "segmentation.random_object_bbox": OperatorCase(
        input="images",
        body=lambda op, x: (
            *op("segmentation.random_object_bbox")(
                _label_map(op, x),
                foreground_prob=_uniform(op, 0.3, 1.0),
                output_class=True,
            ),
            op("segmentation.random_object_bbox")(
                _label_map(op, x), format="box", ignore_class=True, k_largest=3
            ),
            *op("segmentation.random_object_bbox")(
                _label_map(op, x),
                format="start_end",
                classes=[1, 2],
                class_weights=[1.0, 3.0],
                threshold=op("random.choice")(a=[1, 2, 3]),
                background=op("random.choice")(a=[0, 3]),
            ),
        ),
    ),
    "segmentation.select_masks": OperatorCase(
        # "none": the fuzzer takes all three inputs from extra_inputs; x (the images) still
        # shapes the drawn vertices here, so that eager has the batch size.
        input="none",
        body=lambda op, x: (
            *op("segmentation.select_masks")(_mask_ids(op, x), _polygons(op, x), _vertices(op, x)),
            *op("segmentation.select_masks")(
                _mask_ids(op, x), _polygons(op, x), _vertices(op, x), reindex_masks=True
            ),
        ),
        extra_inputs=_select_inputs,
    ),
}
