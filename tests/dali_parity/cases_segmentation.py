"""Parity cases of the segmentation family: fn.segmentation.select_masks (deterministic) and the
deterministic limits of fn.segmentation.random_object_bbox (foreground_prob=0: the whole
input; k_largest=1: the largest object, one choice left). random_mask_pixel has no
deterministic limit on these inputs (its tests check its distribution instead).
tests/dali_parity/base.py says what a case is."""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

_EXACT = "exact"
_ONE_CHOICE = (
    "exact: one object is left to draw (k_largest=1), so the two libraries' different random "
    "streams cannot disagree"
)

# Polygons over the "keypoints" input set (4, 2, 1 and 3 vertices): [mask_id, start, end).
_POLYGONS = [
    [[0, 0, 2], [1, 2, 4], [0, 1, 3], [4, 0, 4]],
    [[3, 0, 2], [5, 0, 1]],
    [[0, 0, 1], [0, 1, 1]],
    [[1, 0, 3], [2, 1, 2], [7, 2, 3]],
]
_MASK_IDS = [[1, 0], [5, 3], [0], [2, 7, 1]]


def _select(fn, x, ids=_MASK_IDS, **kwargs):
    return tuple(
        fn.segmentation.select_masks(
            per_sample(fn, ids, np.int32), per_sample(fn, _POLYGONS, np.int32), x, **kwargs
        )
    )


def _bbox(fn, x, **kwargs):
    out = fn.segmentation.random_object_bbox(x, **kwargs)
    return tuple(out) if isinstance(out, (list, tuple)) else out


CASES = [
    ParityCase(
        "select_masks",
        lambda fn, types, x: _select(fn, x),
        input="keypoints",
        note=_EXACT + " (DALI 2.4 keeps the last polygon of each mask id, in mask_ids' order)",
    ),
    ParityCase(
        "select_masks_reindex",
        lambda fn, types, x: _select(fn, x, reindex_masks=True),
        input="keypoints",
        note=_EXACT,
    ),
    ParityCase(
        "select_masks_empty_selection",
        lambda fn, types, x: _select(fn, x, ids=[[], [3], [], [1]], reindex_masks=True),
        input="keypoints",
        note=_EXACT,
    ),
    ParityCase(
        "random_object_bbox_background_only",
        lambda fn, types, x: _bbox(fn, x, foreground_prob=0.0, output_class=True),
        input="masks",
        note=_EXACT + " (the whole input, class = background)",
    ),
    ParityCase(
        "random_object_bbox_background_classes",
        lambda fn, types, x: _bbox(
            fn, x, foreground_prob=0.0, output_class=True, classes=[0, 2], format="box"
        ),
        input="masks",
        note=_EXACT + " (background -1 when classes contain 0)",
    ),
    ParityCase(
        "random_object_bbox_largest_any_class",
        lambda fn, types, x: _bbox(fn, x, ignore_class=True, k_largest=1, format="start_end"),
        input="masks",
        note=_ONE_CHOICE,
    ),
    ParityCase(
        "random_object_bbox_largest_of_class",
        lambda fn, types, x: _bbox(fn, x, classes=[2], k_largest=1, output_class=True),
        input="masks",
        note=_ONE_CHOICE,
    ),
    ParityCase(
        "random_object_bbox_largest_per_sample",
        lambda fn, types, x: _bbox(
            fn,
            x,
            classes=per_sample(fn, [[1], [3], [2], [1]], np.int32),
            k_largest=1,
            threshold=per_sample(fn, [[2, 2, 1], [3, 3, 1], [1, 1, 1], [4, 2, 1]], np.int32),
            background=per_sample(fn, [0, 0, 3, 2], np.int32),
            output_class=True,
            format="box",
        ),
        input="masks",
        note=_ONE_CHOICE,
    ),
    ParityCase(
        "random_object_bbox_threshold_too_large",
        lambda fn, types, x: _bbox(fn, x, threshold=[100, 100, 1], output_class=True),
        input="masks",
        note=_EXACT + " (no object is large enough: the whole input, class = background)",
    ),
]
