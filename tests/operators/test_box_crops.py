"""fn.random_bbox_crop: properties of the windows and boxes it gives (every kept box is the
input box clipped to the window and mapped to it, by an independent NumPy reference; windows
inside the space, in the scaling and aspect ranges; thresholds honoured; labels and indices
kept with their boxes), distributions, determinism and the errors of bad arguments/inputs."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import eager
from augkit.errors import AugkitError

RNG = np.random.default_rng(0)


def _random_boxes(
    n_samples: int, n: int = 5, seed: int = 0, size: tuple[float, float] = (0.05, 0.3)
) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_samples):
        lo = rng.uniform(0.0, 1.0 - size[1], (n, 2))
        hi = lo + rng.uniform(*size, (n, 2))
        out.append(np.concatenate([lo, np.minimum(hi, 1.0)], 1).astype(np.float32))
    return out


def _arrays(batch) -> list[np.ndarray]:
    return [np.asarray(s) for s in batch]


def _reference(boxes: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The boxes whose centre is in the window [lo, hi], clipped and mapped (NumPy)."""
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    keep = np.flatnonzero(np.all((centre >= lo) & (centre <= hi), 1))
    b = boxes[keep]
    clipped = np.concatenate([np.maximum(b[:, :2], lo), np.minimum(b[:, 2:], hi)], 1)
    ext = np.tile(hi - lo, 2)
    return keep, (clipped - np.tile(lo, 2)) / ext


def _iou(boxes: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    ilo = np.maximum(boxes[:, :2], lo)
    ihi = np.minimum(boxes[:, 2:], hi)
    inter = np.prod(np.clip(ihi - ilo, 0, None), 1)
    area = np.prod(boxes[:, 2:] - boxes[:, :2], 1)
    return inter / (area + np.prod(hi - lo) - inter)


def test_kept_boxes_match_a_numpy_reference_and_labels_follow():
    boxes = _random_boxes(32)
    labels = [np.arange(10, 15, dtype=np.int32)[:, None] for _ in boxes]
    anchor, shape, out, out_labels, idx = eager.random_bbox_crop(
        boxes,
        labels,
        scaling=(0.3, 1.0),
        aspect_ratio=(0.5, 2.0),
        thresholds=(0.0, 0.3),
        threshold_type="overlap",
        num_attempts=20,
        output_bbox_indices=True,
        seed=5,
    )
    cropped = 0
    for b, a, s, o, lab, i in zip(
        boxes, *map(_arrays, (anchor, shape, out, out_labels, idx)), strict=True
    ):
        assert a.dtype == s.dtype == o.dtype == np.float32 and i.dtype == np.int32
        assert np.all(a >= 0) and np.all(a + s <= 1 + 1e-6)
        keep, ref = _reference(b, a, a + s)
        np.testing.assert_array_equal(i, keep)
        np.testing.assert_allclose(o, ref, atol=1e-6)
        np.testing.assert_array_equal(lab, 10 + keep[:, None])
        assert np.all(o >= 0) and np.all(o <= 1)
        if not np.allclose(s, 1):
            cropped += 1
            assert s.min() >= 0.3 - 1e-6 and s.max() <= 1.0 + 1e-6
            assert 0.5 - 1e-5 <= s[0] / s[1] <= 2.0 + 1e-5
            assert len(keep) >= 1
    assert cropped >= 10


@pytest.mark.parametrize("threshold_type", ["iou", "overlap"])
def test_every_box_passes_the_threshold(threshold_type):
    boxes = _random_boxes(24, n=2, seed=1, size=(0.6, 0.7))
    anchor, shape, _ = eager.random_bbox_crop(
        boxes,
        scaling=(0.5, 1.0),
        aspect_ratio=(0.5, 2.0),
        thresholds=(0.5,),
        threshold_type=threshold_type,
        allow_no_crop=False,
        num_attempts=50,
        seed=2,
    )
    for b, a, s in zip(boxes, _arrays(anchor), _arrays(shape), strict=True):
        if threshold_type == "iou":
            metric = _iou(b, a, a + s)
        else:
            ilo, ihi = np.maximum(b[:, :2], a), np.minimum(b[:, 2:], a + s)
            metric = np.prod(np.clip(ihi - ilo, 0, None), 1) / np.prod(b[:, 2:] - b[:, :2], 1)
        assert metric.min() >= 0.5 - 1e-5


def test_all_boxes_above_threshold_false_needs_one_box():
    boxes = _random_boxes(24, seed=3)
    anchor, shape, _ = eager.random_bbox_crop(
        boxes,
        scaling=(0.3, 0.6),
        aspect_ratio=(0.5, 2.0),
        thresholds=(0.7,),
        threshold_type="overlap",
        all_boxes_above_threshold=False,
        allow_no_crop=False,
        seed=4,
    )
    for b, a, s in zip(boxes, _arrays(anchor), _arrays(shape), strict=True):
        ilo, ihi = np.maximum(b[:, :2], a), np.minimum(b[:, 2:], a + s)
        frac = np.prod(np.clip(ihi - ilo, 0, None), 1) / np.prod(b[:, 2:] - b[:, :2], 1)
        assert frac.max() >= 0.7 - 1e-5


def test_no_crop_is_one_more_option():
    boxes = _random_boxes(400, seed=6)
    # Each round picks an option again (DALI's loop), so "no crop" wins more often than 1 in
    # (thresholds + 1) when rounds fail: with many attempts per round, none fails.
    _, shape, out = eager.random_bbox_crop(
        boxes, scaling=(0.3, 0.9), aspect_ratio=(0.5, 2.0), num_attempts=200, seed=7
    )
    whole = [np.array_equal(s, [1, 1]) for s in _arrays(shape)]
    assert 0.4 < np.mean(whole) < 0.6
    for w, b, o in zip(whole, boxes, _arrays(out), strict=True):
        if w:
            np.testing.assert_array_equal(o, b)


def test_fixed_crop_shape_gives_integer_absolute_anchors():
    boxes = _random_boxes(64, seed=8)
    anchor, shape, out = eager.random_bbox_crop(
        boxes,
        crop_shape=[np.array([30, 20], np.int32)] * 64,
        input_shape=(100, 50),
        allow_no_crop=False,
        total_num_attempts=5,
        seed=9,
    )
    anchors = np.stack(_arrays(anchor))
    np.testing.assert_array_equal(np.stack(_arrays(shape)), np.tile([30, 20], (64, 1)))
    np.testing.assert_array_equal(anchors, np.round(anchors))
    assert anchors[:, 0].min() >= 0 and anchors[:, 0].max() <= 70
    assert anchors[:, 1].min() >= 0 and anchors[:, 1].max() <= 30
    assert len(np.unique(anchors[:, 0])) > 10
    for b, a, o in zip(boxes, anchors, _arrays(out), strict=True):
        lo = a / (100, 50)
        _, ref = _reference(b, lo, lo + np.array([0.3, 0.4]))
        np.testing.assert_allclose(o, ref, atol=1e-5)


def test_shape_layout_hw_swaps_the_dimensions():
    boxes = _random_boxes(8, seed=10)
    anchor, shape, _ = eager.random_bbox_crop(
        boxes,
        crop_shape=(20, 30),
        input_shape=(50, 100),
        shape_layout="HW",
        allow_no_crop=False,
        total_num_attempts=3,
        seed=1,
    )
    np.testing.assert_array_equal(np.stack(_arrays(shape)), np.tile([30, 20], (8, 1)))
    assert np.stack(_arrays(anchor))[:, 1].max() <= 30


def test_xywh_layout_round_trips():
    boxes = _random_boxes(16, seed=11)
    xywh = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in boxes]
    a1, _, o1 = eager.random_bbox_crop(boxes, scaling=(0.4, 1.0), seed=3)
    a2, _, o2 = eager.random_bbox_crop(xywh, scaling=(0.4, 1.0), bbox_layout="xyWH", seed=3)
    np.testing.assert_array_equal(np.stack(_arrays(a1)), np.stack(_arrays(a2)))
    for p, q in zip(_arrays(o1), _arrays(o2), strict=True):
        np.testing.assert_allclose(np.concatenate([p[:, :2], p[:, 2:] - p[:, :2]], 1), q, atol=1e-6)
    a3, _, _ = eager.random_bbox_crop(xywh, scaling=(0.4, 1.0), ltrb=False, seed=3)
    np.testing.assert_array_equal(np.stack(_arrays(a1)), np.stack(_arrays(a3)))


def test_prune_threshold_keeps_boxes_by_area_fraction():
    boxes = _random_boxes(16, seed=12)
    anchor, shape, _, idx = eager.random_bbox_crop(
        boxes,
        scaling=(0.4, 0.7),
        allow_no_crop=False,
        bbox_prune_threshold=0.5,
        output_bbox_indices=True,
        total_num_attempts=10,
        seed=3,
    )
    for b, a, s, i in zip(boxes, *map(_arrays, (anchor, shape, idx)), strict=True):
        ilo, ihi = np.maximum(b[:, :2], a), np.minimum(b[:, 2:], a + s)
        frac = np.prod(np.clip(ihi - ilo, 0, None), 1) / np.prod(b[:, 2:] - b[:, :2], 1)
        np.testing.assert_array_equal(i, np.flatnonzero(frac >= 0.5))


def test_deterministic_for_a_seed_and_samples_independent():
    boxes = _random_boxes(8, seed=13)
    kwargs = dict(scaling=(0.3, 1.0), aspect_ratio=(0.5, 2.0), allow_no_crop=False)
    first = eager.random_bbox_crop(boxes, seed=42, **kwargs)
    again = eager.random_bbox_crop(boxes, seed=42, **kwargs)
    other = eager.random_bbox_crop(boxes, seed=43, **kwargs)
    for p, q in zip(first, again, strict=True):
        for x, y in zip(_arrays(p), _arrays(q), strict=True):
            np.testing.assert_array_equal(x, y)
    assert not np.array_equal(np.stack(_arrays(first[0])), np.stack(_arrays(other[0])))
    # a sample draws the same whatever the others are
    swapped = eager.random_bbox_crop([boxes[0], boxes[5]], seed=42, **kwargs)
    np.testing.assert_array_equal(np.asarray(swapped[0][0]), np.asarray(first[0][0]))


def test_sample_without_boxes_and_total_attempts():
    empty = [np.zeros((0, 4), np.float32)]
    _, shape, out = eager.random_bbox_crop(empty, allow_no_crop=False, scaling=(0.5, 0.5))
    assert np.asarray(out[0]).shape == (0, 4)
    np.testing.assert_allclose(np.asarray(shape[0]), [0.5, 0.5])


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(thresholds=(1.5,)), "thresholds"),
        (dict(scaling=(0.8, 0.2)), "scaling"),
        (dict(aspect_ratio=(1.0, 2.0, 3.0)), "aspect_ratio"),
        (dict(crop_shape=(10, 10)), "input_shape"),
        (dict(threshold_type="area"), "threshold_type"),
        (dict(bbox_layout="xyXW"), "bbox_layout"),
        (dict(total_num_attempts=0), "total_num_attempts"),
        (dict(num_attempts=0), "num_attempts"),
    ],
)
def test_bad_arguments_name_the_operator_and_argument(kwargs, word):
    with pytest.raises(AugkitError, match=word) as info:
        eager.random_bbox_crop(_random_boxes(2), **kwargs)
    assert "andomBBoxCrop" in str(info.value) or "random_bbox_crop" in str(info.value)


@pytest.mark.parametrize(
    "boxes, labels, word",
    [
        ([np.array([[0.5, 0.5, 0.2, 0.9]], np.float32)], None, "start <= end"),
        ([np.array([[0.1, 0.1, 1.5, 0.9]], np.float32)], None, r"\[0, 1\]"),
        ([np.zeros((2, 3), np.float32)], None, "boxes must be"),
        (_random_boxes(1), [np.arange(4, dtype=np.int32)], "labels"),
        (_random_boxes(1), [np.zeros(5, np.float32)], "labels"),
    ],
)
def test_bad_inputs_give_clear_errors(boxes, labels, word):
    with pytest.raises(AugkitError, match=word) as info:
        if labels is None:
            eager.random_bbox_crop(boxes)
        else:
            eager.random_bbox_crop(boxes, labels)
    assert "RandomBBoxCrop" in str(info.value)


def test_crop_shape_larger_than_input_is_refused():
    with pytest.raises(AugkitError, match="fit"):
        eager.random_bbox_crop(
            _random_boxes(1), crop_shape=(200, 10), input_shape=(100, 50), allow_no_crop=False
        )


# --- roi_random_crop ----------------------------------------------------------------------------


def _roi_starts(n: int, **kwargs) -> np.ndarray:
    return np.stack([np.asarray(s) for s in eager.roi_random_crop(batch_size=n, **kwargs)])


def test_roi_random_crop_window_inside_a_bigger_roi():
    starts = _roi_starts(400, crop_shape=(10, 4), roi_start=(5, 2), roi_end=(30, 12), seed=1)
    assert starts.dtype == np.int64 and starts.shape == (400, 2)
    # window inside the ROI: start in [roi_start, roi_end - crop], every value drawn
    assert set(starts[:, 0]) == set(range(5, 21))
    assert set(starts[:, 1]) == set(range(2, 9))
    # uniform: each of the 16 values about 400 / 16 times
    counts = np.bincount(starts[:, 0] - 5)
    assert counts.min() > 8 and counts.max() < 50


def test_roi_random_crop_window_holds_a_smaller_roi_within_the_input():
    starts = _roi_starts(
        300, crop_shape=(20, 20), roi_start=(5, 30), roi_shape=(6, 8), in_shape=(40, 50), seed=2
    )
    # contains the ROI ([5, 11) x [30, 38)) and stays inside the 40 x 50 input
    assert np.all(starts[:, 0] <= 5) and np.all(starts[:, 0] + 20 >= 11)
    assert np.all(starts[:, 1] <= 30) and np.all(starts[:, 1] + 20 >= 38)
    assert starts.min() >= 0 and np.all(starts[:, 1] <= 30)
    assert set(starts[:, 0]) == set(range(0, 6))
    assert set(starts[:, 1]) == set(range(18, 31))


def test_roi_random_crop_takes_the_input_shape_from_the_input():
    images = [np.zeros((12, 9, 3), np.uint8)] * 200
    out = eager.roi_random_crop(images, crop_shape=(10, 9), roi_start=(2, 0), roi_shape=(3, 3))
    starts = np.stack([np.asarray(s) for s in out])
    assert set(starts[:, 0]) == {0, 1, 2} and set(starts[:, 1]) == {0}


def test_roi_random_crop_per_sample_arguments_and_determinism():
    roi = [np.array([i, 2 * i], np.int32) for i in range(4)]
    a = eager.roi_random_crop(
        crop_shape=(2, 3), roi_start=roi, roi_shape=(2, 3), seed=3, batch_size=4
    )
    np.testing.assert_array_equal(np.stack([np.asarray(s) for s in a]), np.stack(roi))
    b1 = _roi_starts(8, crop_shape=(3,), roi_start=(0,), roi_end=(50,), seed=9)
    b2 = _roi_starts(8, crop_shape=(3,), roi_start=(0,), roi_end=(50,), seed=9)
    np.testing.assert_array_equal(b1, b2)
    assert len(np.unique(b1)) > 3


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(crop_shape=(4, 4), roi_start=(0, 0), roi_end=(5, 5), roi_shape=(5, 5)), "both"),
        (dict(crop_shape=(4, 4), roi_start=(0, 0)), "roi_end or roi_shape"),
        (dict(crop_shape=(4, 4), roi_start=(0,), roi_end=(5, 5)), "roi_start must have 2"),
        (
            dict(crop_shape=(50, 4), roi_start=(0, 0), roi_end=(5, 5), in_shape=(20, 20)),
            "fit",
        ),
        (
            dict(crop_shape=(4, 4), roi_start=(0, 0), roi_end=(25, 5), in_shape=(20, 20)),
            "out of the input",
        ),
        (dict(roi_start=(0, 0), roi_end=(25, 5)), "crop_shape"),
    ],
)
def test_roi_random_crop_bad_arguments(kwargs, word):
    with pytest.raises(AugkitError, match=word) as info:
        eager.roi_random_crop(batch_size=2, **kwargs)
    assert "ROIRandomCrop" in str(info.value)


def test_roi_random_crop_in_shape_with_an_input_is_refused():
    with pytest.raises(AugkitError, match="in_shape"):
        eager.roi_random_crop(
            [np.zeros((10, 10), np.uint8)],
            crop_shape=(4, 4),
            roi_start=(0, 0),
            roi_end=(5, 5),
            in_shape=(10, 10),
        )


# --- random_crop_generator ----------------------------------------------------------------------


def test_random_crop_generator_windows_fit_and_follow_the_ranges():
    shapes = [np.array([120 + i % 50, 200 - i % 60, 3], np.int64) for i in range(300)]
    anchor, shape = eager.random_crop_generator(
        shapes, random_area=(0.2, 0.8), random_aspect_ratio=(0.5, 2.0), seed=4
    )
    a, s = np.stack([np.asarray(v) for v in anchor]), np.stack([np.asarray(v) for v in shape])
    assert a.dtype == s.dtype == np.int32
    hw = np.stack([x[:2] for x in shapes])
    assert np.all(a >= 0) and np.all(a + s <= hw) and np.all(s >= 1)
    area = s[:, 0] * s[:, 1] / (hw[:, 0] * hw[:, 1])
    ratio = s[:, 1] / s[:, 0]
    assert area.min() > 0.19 and area.max() < 0.81
    assert ratio.min() > 0.49 and ratio.max() < 2.02
    # log-uniform aspect ratio: as many windows wider than tall as taller than wide
    assert 0.35 < np.mean(ratio > 1) < 0.65


def test_random_crop_generator_matches_random_resized_crops_window():
    """The same window generator as fn.random_resized_crop (crop_window.random_crop_window),
    checked by cutting the image with fn.slice at the generated window."""
    from augkit.operators.geometric.crop_window import random_crop_window

    anchor, shape = eager.random_crop_generator([np.array([50, 80], np.int32)], seed=1)
    y, x = np.asarray(anchor[0])
    h, w = np.asarray(shape[0])
    assert 0 <= y <= 50 - h and 0 <= x <= 80 - w
    fixed = random_crop_window(50, 80, np.random.default_rng(0), area=(2.0, 2.0))
    _, s2 = eager.random_crop_generator([np.array([50, 80], np.int32)], random_area=2.0)
    assert tuple(np.asarray(s2[0])) == fixed[2:]


@pytest.mark.parametrize(
    "sample, word",
    [
        (np.array([10, 20, 3, 1], np.int64), "2 or 3"),
        (np.array([10.0, 20.0], np.float32), "integers"),
        (np.zeros((2, 2), np.int32), "1-D"),
    ],
)
def test_random_crop_generator_bad_inputs(sample, word):
    with pytest.raises(AugkitError, match=word) as info:
        eager.random_crop_generator([sample])
    assert "RandomCropGenerator" in str(info.value)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(random_area=(0.8, 0.2)), "random_area"),
        (dict(random_aspect_ratio=(0.0, 1.0)), "random_aspect_ratio"),
        (dict(num_attempts=0), "num_attempts"),
    ],
)
def test_random_crop_generator_bad_arguments(kwargs, word):
    with pytest.raises(AugkitError, match=word):
        eager.random_crop_generator([np.array([10, 10], np.int32)], **kwargs)


@pytest.mark.parametrize(
    "name, inputs, args",
    [
        (
            "random_bbox_crop",
            [_random_boxes(6, seed=30), [np.arange(5, dtype=np.int32)] * 6],
            {"scaling": (0.3, 1.0), "aspect_ratio": (0.5, 2.0), "output_bbox_indices": True},
        ),
        (
            "roi_random_crop",
            [[np.zeros((30, 40), np.uint8)] * 5],
            {"crop_shape": (10, 12), "roi_start": (3, 4), "roi_shape": (20, 20)},
        ),
        (
            "random_crop_generator",
            [[np.array([100 + i, 80, 3], np.int64) for i in range(5)]],
            {"random_area": (0.2, 0.9)},
        ),
    ],
)
def test_common_checks(name, inputs, args):
    """Threads, seeds, read-only inputs, ops == fn and the declared output kinds
    (tests/operator_check.py); random operators: determinism only."""
    from tests.operator_check import check_operator

    check_operator(name, inputs, None, args=args)
