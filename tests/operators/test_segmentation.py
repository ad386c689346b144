"""Tests of fn.segmentation.random_mask_pixel, random_object_bbox and select_masks against
independent references: scipy.ndimage's labelling of real label maps (photos cut into gray
levels), plain-Python selection of COCO polygons, and the distributions of the random draws."""

from __future__ import annotations

import collections
import pathlib

import numpy as np
import pytest
import scipy.ndimage
from PIL import Image

from augkit import eager, fn, pipeline_def, types
from augkit.errors import AugkitError

IMAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "images"
S = eager.segmentation


def _photo_mask(name: str = "people/cameraman.jpg", levels: int = 4) -> np.ndarray:
    """A real label map: a photo, reduced to 96 px, cut into ``levels`` gray levels (HWC)."""
    gray = Image.open(IMAGES / name).convert("L").resize((96, 80))
    return (np.asarray(gray) // (256 // levels)).astype(np.uint8)[..., None]


def _blobs(mask: np.ndarray, label: int) -> set[tuple[int, ...]]:
    """The (start..., end...) boxes of the face-connected blobs of ``label`` (scipy)."""
    labels, _ = scipy.ndimage.label(mask == label)
    return {
        tuple(s.start for s in sl) + tuple(s.stop for s in sl)
        for sl in scipy.ndimage.find_objects(labels)
    }


# --- random_mask_pixel ------------------------------------------------------------------------


def test_mask_pixel_foreground_threshold_and_value() -> None:
    mask = _photo_mask()
    out = S.random_mask_pixel([mask] * 64, foreground=1, threshold=1.5, seed=3)
    for p in out:
        assert p.dtype == np.int64 and p.shape == (3,)
        assert mask[tuple(p)] > 1.5
    out = S.random_mask_pixel([mask] * 64, foreground=1, value=1, seed=4)
    assert all(mask[tuple(p)] == 1 for p in out)


def test_mask_pixel_uniform_over_foreground() -> None:
    mask = np.zeros((4, 5, 1), np.uint8)
    fg = [(0, 0), (1, 3), (3, 4), (2, 2)]
    for y, x in fg:
        mask[y, x] = 2
    out = S.random_mask_pixel([mask] * 2000, foreground=1, seed=11)
    counts = collections.Counter((int(p[0]), int(p[1])) for p in out)
    assert set(counts) == set(fg)
    assert all(abs(c - 500) < 90 for c in counts.values())  # ~ 4.5 sigma


def test_mask_pixel_background_and_fallback_are_uniform_over_all() -> None:
    mask = np.zeros((3, 4), np.float32)
    for kwargs in ({}, {"foreground": 1, "value": 9}, {"foreground": 1, "threshold": 5.0}):
        out = np.stack(S.random_mask_pixel([mask] * 2400, seed=5, **kwargs))
        counts = collections.Counter(map(tuple, out.tolist()))
        assert len(counts) == 12 and all(abs(c - 200) < 65 for c in counts.values()), kwargs


def test_mask_pixel_per_sample_arguments_and_determinism() -> None:
    mask = _photo_mask()

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=21)
    def pipe():
        x = fn.external_source(source=lambda: [mask] * 4, batch=True, layout="HWC")
        value = fn.external_source(
            source=lambda: [np.array(v, np.int32) for v in (0, 1, 2, 3)], batch=True
        )
        return fn.segmentation.random_mask_pixel(x, value=value, foreground=1)

    runs = []
    for _ in range(2):
        p = pipe()
        p.build()
        runs.append([np.array(s) for s in p.run()[0]])
    for i, point in enumerate(runs[0]):
        assert mask[tuple(point)] == i
        assert np.array_equal(point, runs[1][i])
    # samples of one batch draw independently
    many = S.random_mask_pixel([mask] * 16, seed=2)
    assert len({tuple(p) for p in many}) > 8


def test_mask_pixel_errors() -> None:
    with pytest.raises(AugkitError, match="mutually exclusive"):
        S.random_mask_pixel([np.zeros((2, 2), np.uint8)], value=1, threshold=0.5)
    with pytest.raises(AugkitError, match="foreground"):
        S.random_mask_pixel([np.zeros((2, 2), np.uint8)], foreground="yes")


# --- random_object_bbox -----------------------------------------------------------------------


def test_object_bbox_boxes_are_blobs_of_their_class() -> None:
    mask = _photo_mask()
    anchors, shapes, classes = S.random_object_bbox([mask] * 40, output_class=True, seed=1)
    present = set(np.unique(mask).tolist()) - {0}
    seen = set()
    for a, s, c in zip(anchors, shapes, classes, strict=True):
        assert a.dtype == np.int32 and c.shape == () and int(c) in present
        assert tuple(a) + tuple(a + s) in _blobs(mask, int(c))
        seen.add(int(c))
    assert seen == present  # a class is drawn among the present ones


def test_object_bbox_k_largest_threshold_and_formats() -> None:
    mask = _photo_mask("objects/coffee_cup.jpg")
    ref = _blobs(mask, 2)
    vol = {b: np.prod(np.subtract(b[3:], b[:3])) for b in ref}
    top3 = set(sorted(ref, key=lambda b: -vol[b])[:3])
    boxes = S.random_object_bbox([mask] * 30, classes=[2], k_largest=3, format="box", seed=3)
    assert {tuple(b) for b in boxes} <= top3 and len({tuple(b) for b in boxes}) == 3
    start, end = S.random_object_bbox(
        [mask] * 30, classes=[2], threshold=[5, 5, 1], format="start_end", seed=4
    )
    big = {b for b in ref if b[3] - b[0] >= 5 and b[4] - b[1] >= 5}
    for s, e in zip(start, end, strict=True):
        assert tuple(s) + tuple(e) in big
    # the largest blob over all classes (ignore_class): the reference's
    allbox = {b: c for c in range(4) for b in _blobs(mask, c) if c != 0}
    largest = max(allbox, key=lambda b: np.prod(np.subtract(b[3:], b[:3])))
    (box,) = S.random_object_bbox([mask], ignore_class=True, k_largest=1, format="box")
    assert tuple(box) == largest


def test_object_bbox_whole_input_limits() -> None:
    mask = _photo_mask()
    a, s, c = S.random_object_bbox([mask], foreground_prob=0.0, output_class=True)
    assert a[0].tolist() == [0, 0, 0] and s[0].tolist() == list(mask.shape) and int(c[0]) == 0
    empty = np.zeros((5, 4, 1), np.uint8)
    a, s, c = S.random_object_bbox([empty], output_class=True, background=0)
    assert s[0].tolist() == [5, 4, 1] and int(c[0]) == 0
    a, s, c = S.random_object_bbox([mask], threshold=500, output_class=True)
    assert s[0].tolist() == list(mask.shape)
    (_, _, c) = S.random_object_bbox([mask], classes=[0, 1], foreground_prob=0.0, output_class=True)
    assert int(c[0]) == -1  # DALI's background when classes contain 0


def test_object_bbox_diagonal_pixels_are_two_objects() -> None:
    mask = np.zeros((4, 4), np.uint8)
    mask[0, 0] = mask[1, 1] = 1
    _, shapes = S.random_object_bbox([mask] * 20, seed=2)
    assert all(s.tolist() == [1, 1] for s in shapes)


def test_object_bbox_distribution_of_classes_and_weights() -> None:
    mask = np.zeros((10, 10, 1), np.uint8)
    mask[0:2, 0:2] = 1
    mask[5:10:2, 4:10:2] = 5  # nine blobs of class 5, one of class 1
    _, _, c = S.random_object_bbox([mask] * 800, output_class=True, seed=8)
    share = np.mean([int(v) == 5 for v in c])
    assert abs(share - 0.5) < 0.07  # a class first, then a blob
    _, _, c = S.random_object_bbox(
        [mask] * 800, classes=[1, 5], class_weights=[1.0, 3.0], output_class=True, seed=9
    )
    assert abs(np.mean([int(v) == 5 for v in c]) - 0.75) < 0.06
    _, _, c = S.random_object_bbox([mask] * 800, foreground_prob=0.25, output_class=True, seed=7)
    assert abs(np.mean([int(v) == 0 for v in c]) - 0.75) < 0.06


def test_object_bbox_errors() -> None:
    m = [np.zeros((4, 4, 1), np.uint8)]
    with pytest.raises(AugkitError, match=r"ignore_class.*classes"):
        S.random_object_bbox(m, ignore_class=True, classes=[1])
    with pytest.raises(AugkitError, match=r"random_object_bbox.*at least 1 dimension"):
        S.random_object_bbox([np.array(3, np.uint8)])
    with pytest.raises(AugkitError, match="threshold"):
        S.random_object_bbox(m, threshold=[1, 2])
    with pytest.raises(AugkitError, match="format"):
        S.random_object_bbox(m, format="xywh")
    with pytest.raises(AugkitError, match="foreground_prob"):
        S.random_object_bbox(m, foreground_prob=1.5)
    with pytest.raises(AugkitError, match="class_weights"):
        S.random_object_bbox(m, classes=[1, 2], class_weights=[1.0])


# --- select_masks -----------------------------------------------------------------------------


def _reference_select(ids, polygons, vertices, reindex=False):
    """DALI 2.4's selection: per selected id (in ids' order), its last polygon."""
    out_p, out_v = [], []
    for k, mask_id in enumerate(ids):
        row = [p for p in polygons if p[0] == mask_id][-1]
        out_p.append([k if reindex else mask_id, len(out_v), len(out_v) + row[2] - row[1]])
        out_v.extend(vertices[row[1] : row[2]].tolist())
    return out_p, out_v


@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks_against_reference(reindex: bool) -> None:
    rng = np.random.default_rng(0)
    vertices = rng.uniform(0, 1, (30, 2)).astype(np.float32)
    polygons = [[2, 0, 4], [0, 4, 9], [1, 9, 12], [2, 12, 20], [3, 20, 30], [0, 20, 20]]
    for ids in ([2, 0], [3], [0, 1, 2, 3], []):
        p, v = S.select_masks(
            np.array(ids, np.int32), np.array(polygons, np.int32), vertices, reindex_masks=reindex
        )
        ref_p, ref_v = _reference_select(ids, polygons, vertices, reindex)
        assert p.dtype == np.int32 and p.shape == (len(ids), 3)
        assert p.tolist() == ref_p
        assert v.dtype == np.float32 and v.shape == (len(ref_v), 2)
        assert v.tolist() == ref_v


def test_select_masks_documented_example_and_any_coordinates() -> None:
    polygons = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10]], np.int32)
    vertices = np.arange(30, dtype=np.int16).reshape(10, 3)  # 3-D vertices, int16
    p, v = S.select_masks(np.array([1], np.int32), polygons, vertices)
    assert p.tolist() == [[1, 0, 4]] and v.tolist() == vertices[3:7].tolist()
    assert v.dtype == np.int16


@pytest.mark.parametrize(
    ("ids", "polygons", "word"),
    [
        ([5], [[0, 0, 3]], "mask id 5"),
        ([0, 0], [[0, 0, 3]], "more than once"),
        ([0], [[0, 0, 12]], "vertex range"),
        ([0], [[0, 3, 2]], "vertex range"),
    ],
)
def test_select_masks_errors(ids, polygons, word) -> None:
    vertices = np.zeros((10, 2), np.float32)
    with pytest.raises(AugkitError, match=word) as info:
        S.select_masks(np.array(ids, np.int32), np.array(polygons, np.int32), vertices)
    assert "select_masks" in str(info.value)


def test_select_masks_bad_inputs_named() -> None:
    with pytest.raises(AugkitError, match="polygons"):
        S.select_masks(np.array([0], np.int32), np.zeros((2, 2), np.int32), np.zeros((4, 2)))
    with pytest.raises(AugkitError, match="mask_ids"):
        S.select_masks(np.zeros((1, 1), np.int32), np.zeros((1, 3), np.int32), np.zeros((4, 2)))
    assert types.INT32 is not None


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
@pytest.mark.parametrize("threshold", [-3.0, 0.0, 1.5, 2.0, 255.5, 400.0])
def test_mask_pixel_threshold_is_a_float_comparison(dtype, threshold) -> None:
    mask = _photo_mask().astype(dtype)
    fg = mask > threshold  # NumPy's float comparison: the reference
    out = S.random_mask_pixel([mask] * 32, foreground=1, threshold=threshold, seed=6)
    if fg.any():
        assert all(fg[tuple(p)] for p in out)
    else:  # no foreground: uniform over all pixels
        assert len({tuple(p) for p in out}) > 16


def test_object_bbox_k_largest_ranks_by_box_volume_not_pixels() -> None:
    mask = np.zeros((12, 12), np.uint8)
    mask[0, 0:10] = mask[0:10, 0] = 1  # an L: box 10x10, 19 pixels
    mask[5:10, 5:10] = 1  # a square: box 5x5, 25 pixels
    (box,) = S.random_object_bbox([mask], k_largest=1, format="box")
    assert box.tolist() == [0, 0, 10, 10]  # as DALI 2.4
