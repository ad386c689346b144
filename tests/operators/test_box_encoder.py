"""fn.box_encoder against an independent reference: the MLPerf SSD reference encoder's matching
(torchvision's box_iou, torch max/index_fill), on random boxes and SSD-like anchors; the
offsets' formula; edge cases (no boxes, one box matching no anchor above the criteria, ties)
and the errors of bad arguments/inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchvision.ops import box_iou

from augkit import eager
from augkit.errors import AugkitError


def _anchors(cells: int = 6, sizes: tuple[float, ...] = (0.15, 0.35, 0.7)) -> np.ndarray:
    out = []
    for j in range(cells):
        for i in range(cells):
            cx, cy = (i + 0.5) / cells, (j + 0.5) / cells
            for s in sizes:
                out.append([cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2])
    return np.array(out, np.float32)


def _boxes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0.0, 0.7, (n, 2))
    hi = lo + rng.uniform(0.05, 0.3, (n, 2))
    return np.concatenate([lo, hi], 1).astype(np.float32)


def _reference(boxes, labels, anchors, criteria=0.5, offset=False, scale=1.0, means=0, stds=1):
    """The MLPerf SSD reference Encoder.encode (float64), centre-form output."""
    dboxes = torch.from_numpy(anchors.astype(np.float64))
    b = torch.from_numpy(boxes.astype(np.float64))
    ious = box_iou(b, dboxes)
    best_dbox_ious, best_dbox_idx = ious.max(dim=0)
    _, best_bbox_idx = ious.max(dim=1)
    best_dbox_ious.index_fill_(0, best_bbox_idx, 2.0)
    idx = torch.arange(0, best_bbox_idx.size(0))
    best_dbox_idx[best_bbox_idx[idx]] = idx
    masks = best_dbox_ious > criteria
    labels_out = torch.zeros(len(anchors), dtype=torch.int64)
    labels_out[masks] = torch.from_numpy(labels.astype(np.int64))[best_dbox_idx[masks]]
    out = dboxes.clone()
    out[masks, :] = b[best_dbox_idx[masks], :]
    out = out.numpy()
    centre = np.concatenate([(out[:, :2] + out[:, 2:]) / 2, out[:, 2:] - out[:, :2]], 1)
    if offset:
        a = np.concatenate(
            [(anchors[:, :2] + anchors[:, 2:]) / 2, anchors[:, 2:] - anchors[:, :2]], 1
        )
        c, a = centre * scale, a.astype(np.float64) * scale
        means, stds = np.broadcast_to(means, 4), np.broadcast_to(stds, 4)
        enc = np.empty_like(c)
        enc[:, :2] = ((c[:, :2] - a[:, :2]) / a[:, 2:] - means[:2]) / stds[:2]
        enc[:, 2:] = (np.log(c[:, 2:] / a[:, 2:]) - means[2:]) / stds[2:]
        enc[~masks.numpy()] = 0
        centre = enc
    return centre, labels_out.numpy(), masks.numpy()


@pytest.mark.parametrize("criteria", [0.5, 0.2, 0.0])
def test_matches_the_ssd_reference_encoder(criteria):
    anchors = _anchors()
    boxes = [_boxes(n, seed) for seed, n in enumerate((1, 3, 7, 12))]
    labels = [np.arange(1, len(b) + 1, dtype=np.int32)[:, None] for b in boxes]
    out_boxes, out_labels = eager.box_encoder(
        boxes, labels, anchors=anchors.reshape(-1).tolist(), criteria=criteria
    )
    for b, lab, ob, ol in zip(boxes, labels, out_boxes, out_labels, strict=True):
        ref, ref_labels, masks = _reference(b, lab[:, 0], anchors, criteria)
        ob, ol = np.asarray(ob), np.asarray(ol)
        assert ob.shape == (len(anchors), 4) and ob.dtype == np.float32
        assert ol.shape == (len(anchors),) and ol.dtype == np.int32
        np.testing.assert_array_equal(ol, ref_labels)
        np.testing.assert_allclose(ob, ref, atol=2e-7)
        assert masks.sum() >= 1  # every box has its anchor (two may share one)


def test_offsets_match_the_ssd_formula():
    anchors = _anchors()
    boxes = [_boxes(6, 11), _boxes(2, 12)]
    labels = [np.arange(5, 5 + len(b), dtype=np.int64) for b in boxes]
    kw = dict(scale=300.0, means=(0.01, -0.02, 0.1, 0.05), stds=(0.1, 0.1, 0.2, 0.2))
    out_boxes, out_labels = eager.box_encoder(
        boxes, labels, anchors=anchors.reshape(-1).tolist(), criteria=0.3, offset=True, **kw
    )
    for b, lab, ob, ol in zip(boxes, labels, out_boxes, out_labels, strict=True):
        ref, ref_labels, _ = _reference(b, lab, anchors, 0.3, True, **kw)
        np.testing.assert_array_equal(np.asarray(ol), ref_labels)
        np.testing.assert_allclose(np.asarray(ob), ref, rtol=1e-5, atol=1e-5)


def test_no_boxes_gives_the_anchors_or_zeros():
    anchors = _anchors(2, (0.5,))
    flat = anchors.reshape(-1).tolist()
    empty = [np.zeros((0, 4), np.float32)]
    no_labels = [np.zeros((0,), np.int32)]
    ob, ol = eager.box_encoder(empty, no_labels, anchors=flat)
    centre = np.concatenate(
        [(anchors[:, :2] + anchors[:, 2:]) / 2, anchors[:, 2:] - anchors[:, :2]], 1
    )
    np.testing.assert_array_equal(np.asarray(ob[0]), centre)
    np.testing.assert_array_equal(np.asarray(ol[0]), np.zeros(4, np.int32))
    ob, _ = eager.box_encoder(empty, no_labels, anchors=flat, offset=True)
    np.testing.assert_array_equal(np.asarray(ob[0]), np.zeros((4, 4), np.float32))


def test_a_box_always_gets_its_best_anchor_and_ties_go_to_the_last():
    # two identical anchors: the box's best anchor is the last of them (DALI's >=)
    anchors = [0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0]
    box = [np.array([[0.0, 0.0, 0.1, 0.1]], np.float32)]  # IoU 0.04 < criteria
    ob, ol = eager.box_encoder(box, [np.array([7], np.int32)], anchors=anchors)
    np.testing.assert_array_equal(np.asarray(ol[0]), [0, 7, 0])
    np.testing.assert_allclose(np.asarray(ob[0])[1], [0.05, 0.05, 0.1, 0.1], atol=1e-7)
    # two identical boxes: each anchor takes the last
    boxes = [np.array([[0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]], np.float32)]
    _, ol = eager.box_encoder(boxes, [np.array([1, 2], np.int32)], anchors=anchors)
    np.testing.assert_array_equal(np.asarray(ol[0]), [2, 2, 0])


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(anchors=[0.0, 0.0, 1.0]), "anchors"),
        (dict(anchors=[]), "anchors"),
        (dict(anchors=[0.0, 0.0, 1.0, 1.0], criteria=1.5), "criteria"),
        (dict(anchors=[0.0, 0.0, 1.0, 1.0], means=(0.0, 0.0, 0.0)), "means"),
        (dict(anchors=[0.0, 0.0, 1.0, 1.0], stds=(0.0, 1.0, 1.0, 1.0)), "stds"),
        (dict(), "anchors"),
    ],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(AugkitError, match=word) as info:
        eager.box_encoder([_boxes(2, 0)], [np.array([1, 2], np.int32)], **kwargs)
    assert "BoxEncoder" in str(info.value)


@pytest.mark.parametrize(
    "boxes, labels, word",
    [
        (np.zeros((2, 3), np.float32), np.array([1, 2], np.int32), r"\(n, 4\)"),
        (np.zeros((2, 4), np.float64), np.array([1, 2], np.int32), "float32"),
        (_boxes(2, 0), np.array([1.0, 2.0], np.float32), "labels"),
        (_boxes(3, 0), np.array([1, 2], np.int32), "only 2 labels"),
    ],
)
def test_bad_inputs(boxes, labels, word):
    with pytest.raises(AugkitError, match=word) as info:
        eager.box_encoder([boxes], [labels], anchors=[0.0, 0.0, 1.0, 1.0])
    assert "BoxEncoder" in str(info.value)


def test_common_checks_against_the_reference():
    """Threads, seeds, read-only inputs, ops == fn and the declared output kinds
    (tests/operator_check.py), with the SSD reference per sample."""
    from tests.operator_check import check_operator

    anchors = _anchors(4)
    boxes = [_boxes(n, 20 + n) for n in (2, 5, 1, 7)]
    labels = [np.arange(1, len(b) + 1, dtype=np.int32) for b in boxes]

    def reference(b, lab, **args):
        ref, ref_labels, _ = _reference(b, lab, anchors, args["criteria"])
        return ref.astype(np.float32), ref_labels.astype(np.int32)

    check_operator(
        "box_encoder",
        [boxes, labels],
        reference,
        args={"anchors": anchors.reshape(-1).tolist(), "criteria": 0.4},
        atol=2e-7,
    )
