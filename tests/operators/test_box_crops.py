"""fn.random_bbox_crop: properties of the windows and boxes it gives (every kept box is the
input box clipped to the window and mapped to it, by an independent NumPy reference; windows
inside the space, in the scaling and aspect ranges; thresholds honoured; labels and indices
kept with their boxes), distributions, determinism and the errors of bad arguments/inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import eager
from augkit.errors import AugkitError
from augkit.operators import box_crops
from augkit.operators.base import SampleOperator
from augkit.operators.registry import resolve
from augkit.random import sample_streams

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
        (dict(num_attempts=1.5), "num_attempts"),
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


# --- the vectorised search equals the sequential one --------------------------------------------


class _ReferenceCrop:
    """``RandomBBoxCropImpl.cpu`` before the search was vectorised across windows and samples,
    kept verbatim: the reference that the fast search must equal, draw for draw
    (``_ReferenceCrop().cpu(boxes, labels, rng=..., **args)``)."""

    _shapes = box_crops.RandomBBoxCropImpl._shapes

    def cpu(self, boxes: np.ndarray, labels: np.ndarray | None = None, **a: Any) -> tuple:
        rng: np.random.Generator = a["rng"]
        ndim = boxes.shape[1] // 2
        nboxes = boxes.shape[0]
        if labels is not None and labels.shape[0] != nboxes:
            raise ValueError(f"{nboxes} boxes but {labels.shape[0]} labels")
        layout = (
            a["bbox_layout"]
            or (box_crops._START_END if a["ltrb"] else box_crops._START_SHAPE)[ndim]
        )
        perm, is_shape = box_crops._layout_perm(layout, ndim)
        b = boxes.astype(np.float32, copy=False)[:, perm]
        lo, hi = b[:, :ndim], b[:, ndim:]
        if is_shape:
            hi = lo + hi
        if nboxes and not (np.all(lo >= 0) and np.all(hi <= 1) and np.all(lo <= hi)):
            bad = int(
                np.flatnonzero(~(np.all(lo >= 0, 1) & np.all(hi <= 1, 1) & np.all(lo <= hi, 1)))[0]
            )
            raise ValueError(
                f"box {bad} {boxes[bad].tolist()} ({layout}) is not inside [0, 1] with "
                "start <= end (boxes are relative coordinates)"
            )
        absolute = a["crop_shape"] is not None
        if absolute != (a["input_shape"] is not None):
            raise ValueError("crop_shape and input_shape must be given together (or neither)")
        if absolute:
            self._shapes(a, ndim)  # checked before anything is drawn
        options = list(a["thresholds"]) + ([None] if a["allow_no_crop"] and not absolute else [])
        total = a["total_num_attempts"]
        limit = total if total > 0 else box_crops.MAX_ATTEMPTS
        if nboxes == 0 and None not in options and total <= 0:
            limit = 1  # never valid: DALI's endless search keeps its first window
        box_area = box_crops._volume(lo, hi)

        centre = (lo + hi) * np.float32(0.5)
        best = None
        best_metric = -1.0
        count = 0
        k = a["num_attempts"]
        block = 1  # the first block is one round (most samples stop there), then larger ones
        done = False
        while count < limit and not done:
            # A block of rounds drawn and measured at once (up to 256 windows), then DALI's
            # sequential rule (keep the best so far, stop at the first valid window) per round.
            rounds = max(1, min(block // k, -(-(limit - count) // k)))
            block = min(4 * block, 256)
            picks = rng.integers(len(options), size=rounds)
            g = self._windows(rounds * k, a, ndim, absolute, rng, lo, hi, centre, box_area)
            out_lo, out_ext, c_lo, c_hi, shape_ok, ms, inside, i_lo, i_hi = g
            kept = inside.sum(axis=1)
            for r in range(rounds):
                option = options[int(picks[r])]
                if option is None:
                    win_lo = np.zeros(ndim, np.float32)
                    best = (win_lo, np.ones(ndim, np.float32), lo, hi, np.arange(nboxes))
                    done = True
                    break
                kr = min(k, limit - count)
                if kr <= 0:
                    done = True
                    break
                sl = slice(r * k, r * k + kr)
                ok, m_r = shape_ok[sl], ms[sl]
                valid = ok & (m_r >= option)
                succ = valid & (kept[sl] > 0)
                if succ.any():
                    j = r * k + int(np.argmax(succ))
                    count += j - r * k + 1
                    best = (out_lo[j], out_ext[j], c_lo[j], c_hi[j], inside[j], i_lo[j], i_hi[j])
                    done = True
                    break
                count += kr
                # Only these attempts can become the best so far (a valid one with no box
                # kept lowers the best metric: DALI's rule, followed exactly).
                floor = min(best_metric, float(m_r[valid].min())) if valid.any() else best_metric
                for jj in np.flatnonzero(ok & (valid | (m_r > floor))):
                    m = float(m_r[jj])
                    if m <= best_metric and not valid[jj]:
                        continue
                    best_metric = m
                    j = r * k + int(jj)
                    best = (out_lo[j], out_ext[j], c_lo[j], c_hi[j], inside[j], i_lo[j], i_hi[j])
        if best is not None and len(best) == 7:
            o_lo, o_ext, w_lo, w_hi, inside_j, il, ih = best
            keep = np.flatnonzero(inside_j)
            extent = w_hi - w_lo
            n_lo = np.clip((il[keep] - w_lo) / extent, 0.0, 1.0)
            n_hi = np.clip((ih[keep] - w_lo) / extent, 0.0, 1.0)
            best = (o_lo, o_ext, n_lo, n_hi, keep)
        if best is None:  # every attempt had a bad aspect ratio: DALI gives an empty window
            z = np.zeros(ndim, np.float32)
            best = (z, z, lo[:0], hi[:0], np.arange(0))
        anchor, shape, n_lo, n_hi, keep = best
        if is_shape:
            n_hi = n_hi - n_lo
        out_boxes = np.empty((len(keep), 2 * ndim), np.float32)
        out_boxes[:, perm] = np.concatenate([n_lo, n_hi], axis=1)
        outs: list[Any] = [
            np.asarray(anchor, np.float32),
            np.asarray(shape, np.float32),
            out_boxes,
        ]
        if labels is not None:
            outs.append(np.ascontiguousarray(labels[keep]))
        if a["output_bbox_indices"]:
            outs.append(keep.astype(np.int32))
        return tuple(outs)

    def _windows(
        self,
        k: int,
        a: dict[str, Any],
        ndim: int,
        absolute: bool,
        rng: np.random.Generator,
        lo: np.ndarray,
        hi: np.ndarray,
        centre: np.ndarray,
        box_area: np.ndarray,
    ) -> tuple:
        """``k`` candidate windows and their measures: output anchor/extent, relative window,
        aspect check, metric, which boxes are kept, and the boxes' intersections."""
        if absolute:
            in_shape, crop_shape = self._shapes(a, ndim)
            anchor = rng.integers(0, np.maximum(in_shape - crop_shape, 0) + 1, (k, ndim))
            anchor = anchor.astype(np.float32)
            c_lo = (anchor / in_shape).astype(np.float32)
            c_hi = (crop_shape / in_shape).astype(np.float32) + c_lo
            out_lo, out_ext = anchor, np.broadcast_to(crop_shape.astype(np.float32), (k, ndim))
            shape_ok = np.ones(k, bool)
        else:
            ar = np.asarray(a["aspect_ratio"], np.float32).reshape(-1, 2)
            s0, s1 = np.float32(a["scaling"][0]), np.float32(a["scaling"][1])
            ext = rng.uniform(s0, s1, (k, ndim)).astype(np.float32)
            ext = box_crops._fix_aspects(ext, ar, rng)
            shape_ok = box_crops._valid_aspects(ext, ar)
            c_lo = (rng.random((k, ndim)) * (1.0 - ext)).astype(np.float32)
            c_hi = c_lo + ext
            out_lo, out_ext = c_lo, ext
        i_lo = np.maximum(lo[None], c_lo[:, None])
        i_hi = np.minimum(hi[None], c_hi[:, None])
        inter = np.prod(np.maximum(i_hi - i_lo, 0.0), axis=-1)  # (k, n)
        prune = a["bbox_prune_threshold"]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(box_area > 0, inter / box_area, 0.0)
            if a["threshold_type"] == "iou":
                denom = box_area + np.prod(c_hi - c_lo, axis=-1)[:, None] - inter
                metric = np.where(inter > 0, inter / denom, 0.0)
            else:
                metric = frac
        if prune is None:
            inside = np.all(
                (centre[None] >= c_lo[:, None]) & (centre[None] <= c_hi[:, None]), axis=-1
            )
        else:
            inside = frac >= prune
        if lo.shape[0]:
            ms = metric.min(axis=1) if a["all_boxes_above_threshold"] else metric.max(axis=1)
        else:
            ms = np.zeros(k)
        return out_lo, out_ext, c_lo, c_hi, shape_ok, ms, inside, i_lo, i_hi


_SCHEMA = resolve("random_bbox_crop")


def _checked(**kwargs) -> dict:
    args = dict(_SCHEMA.defaults())
    for key, value in kwargs.items():
        args[key] = _SCHEMA.arguments[key].check(value, "test")
    return args


def _random_case(r: np.random.Generator) -> tuple[dict, int, str]:
    """Random arguments (every one of random_bbox_crop's), a dimension and a layout."""
    ndim = 3 if r.random() < 0.2 else 2
    kw: dict = {"output_bbox_indices": bool(r.random() < 0.7)}
    thresholds = r.uniform(0, 1, int(r.integers(1, 5)))
    kw["thresholds"] = list(np.round(thresholds, 1) if r.random() < 0.5 else thresholds)
    kw["threshold_type"] = str(r.choice(["iou", "overlap"]))
    kw["all_boxes_above_threshold"] = bool(r.random() < 0.6)
    kw["allow_no_crop"] = bool(r.random() < 0.6)
    kw["num_attempts"] = int(r.choice([1, 2, 3, 7, 50, 100]))
    kw["total_num_attempts"] = int(r.choice([-1, -1, 1, 5, 37, 300]))
    layouts = {2: ["xyXY", "xyWH", "XYxy", "yxYX", "WHxy"], 3: ["xyzXYZ", "xyzWHD", "zyxZYX"]}
    if r.random() < 0.5:
        kw["bbox_layout"] = str(r.choice(layouts[ndim]))
    elif r.random() < 0.5:
        kw["ltrb"] = bool(r.random() < 0.5)
    start_end = ("xyzXYZ", "xyXY")[ndim == 2]
    layout = kw.get("bbox_layout") or (
        start_end if kw.get("ltrb", True) else start_end[:ndim] + "WHD"[:ndim]
    )
    if r.random() < 0.25:
        in_shape = r.integers(1, 60, ndim)
        kw["input_shape"] = in_shape.tolist()
        kw["crop_shape"] = (in_shape * r.uniform(0, 1, ndim)).astype(int).tolist()
        if r.random() < 0.3:
            kw["shape_layout"] = "HW" if ndim == 2 else "DHW"
    else:
        s0 = float(r.uniform(0, 1))
        kw["scaling"] = [s0, float(r.uniform(s0, 1))] if r.random() < 0.9 else [1.0, 1.0]
        if r.random() < 0.3:
            aspect = [float(r.choice([0.5, 1.0, 2.0, 0.75]))] * 2
        else:
            low = float(r.uniform(0.2, 1.5))
            aspect = [low, low + float(r.uniform(0, 2))]
        kw["aspect_ratio"] = aspect * (3 if ndim == 3 and r.random() < 0.7 else 1)
    if r.random() < 0.2:
        kw["bbox_prune_threshold"] = float(r.uniform(0, 1))
    return _checked(**kw), ndim, layout


def _random_sample(r: np.random.Generator, ndim: int, layout: str) -> tuple:
    """Boxes (0 to 24, a degenerate one at times, float32 or float64) in ``layout``, labels."""
    n = int(r.choice([0, 1, 2, 3, 5, 24]))
    lo = r.uniform(0, 0.9, (n, ndim))
    hi = np.minimum(lo + r.uniform(0.0, 0.7, (n, ndim)), 1)
    if n and r.random() < 0.1:
        hi[0] = lo[0]
    shape = "W" in layout
    canonical = ("xyzWHD" if shape else "xyzXYZ") if ndim == 3 else ("xyWH" if shape else "xyXY")
    boxes = np.concatenate([lo, hi - lo if shape else hi], 1)[
        :, [canonical.index(c) for c in layout]
    ]
    boxes = boxes.astype(r.choice([np.float32, np.float64]))
    labels = None
    if r.random() < 0.8:
        labels = r.integers(0, 9, (n,) if r.random() < 0.5 else (n, 2)).astype(np.int32)
    return boxes, labels


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(key=seed))


def _assert_same(got: tuple, want: tuple) -> None:
    assert len(got) == len(want)
    for x, y in zip(got, want, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_search_equals_the_sequential_reference(seed):
    """Same windows, boxes, labels and indices for the same generator, one sample at a time
    (``cpu``) and several searched together (``_search``, what ``run`` does), for random
    arguments (all of them) and boxes (none to 24, degenerate, 2-D and 3-D, every layout)."""
    r = np.random.default_rng(seed)
    impl = box_crops.RandomBBoxCropImpl(_SCHEMA, _checked(), "ref", 0, "cpu", 2)
    reference = _ReferenceCrop()
    for _ in range(30):
        args, ndim, layout = _random_case(r)
        samples = [_random_sample(r, ndim, layout) for _ in range(5)]
        seeds = r.integers(0, 2**62, len(samples)).tolist()
        wants = [
            reference.cpu(b, lab, **args, rng=_rng(s))
            for (b, lab), s in zip(samples, seeds, strict=True)
        ]
        for (b, lab), s, want in zip(samples, seeds, wants, strict=True):
            _assert_same(impl.cpu(b, lab, **args, rng=_rng(s)), want)
        config = box_crops._Config(impl, args, ndim)
        together = box_crops._search(
            [
                box_crops._Sample(config, b, lab, _rng(s))
                for (b, lab), s in zip(samples, seeds, strict=True)
            ]
        )
        for got, want in zip(together, wants, strict=True):
            _assert_same(got, want)


def test_generator_state_is_the_sample_streams_generator():
    streams = sample_streams(1234, 7, 40)
    seeds = streams.seeds().tolist()
    for i in (0, 1, 17, 39):
        want = streams.generator(i)
        got = _rng(0)
        got.bit_generator.state = box_crops._philox_state(seeds[i])
        assert got.bit_generator.state["state"]["key"].tolist() == (
            want.bit_generator.state["state"]["key"].tolist()
        )
        np.testing.assert_array_equal(got.integers(6, size=9), want.integers(6, size=9))
        np.testing.assert_array_equal(got.random(5), want.random(5))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(
            aspect_ratio=[0.5, 2.0],
            thresholds=[0.1, 0.3, 0.5, 0.7, 0.9],
            scaling=[0.3, 1.0],
            bbox_layout="xyXY",
            allow_no_crop=True,
            num_attempts=50,
        ),
        dict(
            thresholds=[0.5],
            threshold_type="overlap",
            all_boxes_above_threshold=False,
            total_num_attempts=20,
            allow_no_crop=False,
            scaling=[0.2, 0.6],
            ltrb=False,
        ),
        dict(crop_shape=[30, 20], input_shape=[64, 48], thresholds=[0.3], num_attempts=4),
    ],
)
def test_operator_equals_the_sequential_reference_end_to_end(monkeypatch, kwargs):
    """The operator (its batched run: one seed draw for the batch, samples searched
    together) against the reference run by ``SampleOperator.run`` (a generator per sample
    from ``SampleStreams.generator``), in eager mode: the same outputs."""
    boxes = _random_boxes(40, n=6, seed=3)
    boxes += [np.zeros((0, 4), np.float32), boxes[0][:1]]
    if not kwargs.get("ltrb", True):
        boxes = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in boxes]
    labels = [np.arange(len(b), dtype=np.int32) for b in boxes]
    got = eager.random_bbox_crop(boxes, labels, seed=9, output_bbox_indices=True, **kwargs)
    monkeypatch.setattr(box_crops.RandomBBoxCropImpl, "run", SampleOperator.run)
    monkeypatch.setattr(box_crops.RandomBBoxCropImpl, "cpu", _ReferenceCrop.cpu)
    monkeypatch.setattr(
        box_crops.RandomBBoxCropImpl, "_windows", _ReferenceCrop._windows, raising=False
    )
    want = eager.random_bbox_crop(boxes, labels, seed=9, output_bbox_indices=True, **kwargs)
    for p, q in zip(got, want, strict=True):
        for x, y in zip(_arrays(p), _arrays(q), strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
