"""fn.paste and fn.multi_paste against NumPy canvases on real photos: DALI's canvas sizes and
positions (truncated), fill values, regions (absolute and relative, floor/ceil), in_ids and
several inputs, overwriting order, dtype conversion, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augkit import types
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.geometric.paste import paste_geometry
from tests.operator_check import check_operator, run_operator


def reference_paste(image, ratio, fill, px=0.5, py=0.5, min_canvas=0.0):
    h, w, c = image.shape
    out_h = max(int(np.float32(ratio) * np.float32(h)), int(min_canvas))
    out_w = max(int(np.float32(ratio) * np.float32(w)), int(min_canvas))
    y, x = int(np.float32(py) * (out_h - h)), int(np.float32(px) * (out_w - w))
    canvas = np.empty((out_h, out_w, c), np.uint8)
    canvas[...] = np.asarray(fill) % 256
    canvas[y : y + h, x : x + w] = image
    return canvas


def test_paste_centre_on_photos(photos):
    check_operator(
        "paste",
        [photos],
        lambda image, **_: reference_paste(image, 1.75, (118, 185, 0)),
        layout="HWC",
        args={"ratio": 1.75, "fill_value": (118, 185, 0)},
        expected_layout="HWC",
    )


def test_paste_per_sample_ratio_and_position(photos):
    ratios = [np.float32(v) for v in (1.0, 1.37, 2.5, 1.5, 1.1, 3.0, 1.25)][: len(photos)]
    xs = [np.float32(v) for v in (0.0, 0.77, 1.0, 0.3, 0.5, 0.9, 0.1)][: len(photos)]
    check_operator(
        "paste",
        [photos],
        lambda image, ratio, paste_x, **_: reference_paste(
            image, ratio, (300, -2, 7), paste_x, 0.25
        ),
        layout="HWC",
        args={"fill_value": (300, -2, 7), "paste_y": 0.25},
        arg_inputs={"ratio": ratios, "paste_x": xs},
    )


def test_paste_geometry_truncates():
    assert paste_geometry(5, 7, 1.5, 0.3, 0.9, 0.0) == (7, 10, 1, 0)
    assert paste_geometry(5, 7, 1.0, 1.0, 0.0, 20.7) == (20, 20, 0, 13)
    assert paste_geometry(9, 4, 2.0, 0.5, 0.5, 0.0) == (18, 8, 4, 2)


def test_paste_single_channel_and_scalar_fill(photos):
    gray = [p[..., :1].copy() for p in photos[:2]]
    out = run_operator(
        "paste", [gray], layout="HWC", args={"ratio": 2.0, "fill_value": 9, "n_channels": 1}
    )[0][0]
    for i, image in enumerate(gray):
        np.testing.assert_array_equal(out.at(i), reference_paste(image, 2.0, 9))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"ratio": 0.5, "fill_value": 0}, "ratio of less than 1"),
        ({"ratio": 2.0, "fill_value": 0, "paste_x": 1.2}, "paste_x must be in range"),
        ({"ratio": 2.0, "fill_value": 0, "min_canvas_size": -1.0}, "min_canvas_size"),
        ({"ratio": 2.0, "fill_value": 0, "n_channels": 4}, "n_channels is 4"),
    ],
)
def test_paste_bad_values(photos, args, match):
    with pytest.raises(OperatorError, match=match):
        run_operator("paste", [photos[:1]], layout="HWC", args=args)


def test_paste_bad_arguments(photos):
    with pytest.raises(ArgumentError, match="fill_value"):
        run_operator("paste", [photos[:1]], layout="HWC", args={"ratio": 2.0, "fill_value": (1, 2)})
    with pytest.raises(ArgumentError, match="ratio"):
        run_operator("paste", [photos[:1]], layout="HWC", args={"fill_value": 0})
    with pytest.raises(OperatorError, match="uint8"):
        run_operator(
            "paste",
            [[photos[0].astype(np.float32)]],
            layout="HWC",
            args={"ratio": 2.0, "fill_value": 0},
        )


# --- multi_paste -----------------------------------------------------------------------------


def run_mp(batches, **args):
    arg_inputs = {k: v for k, v in args.items() if isinstance(v, list) and k.startswith("@")}
    args = {k: v for k, v in args.items() if k not in arg_inputs}
    out = run_operator(
        "multi_paste",
        batches,
        layout="HWC",
        args=args,
        arg_inputs={k[1:]: v for k, v in arg_inputs.items()},
    )[0][0]
    return [out.at(i) for i in range(len(batches[0]))]


def test_multi_paste_in_ids_regions_and_order(photos):
    batch = [p[:60, :80] for p in photos[:3]]
    ids = [np.int32([1, 0]), np.int32([2]), np.int32([0, 2, 1])]
    in_anchors = [
        np.int32([[5, 5], [0, 0]]),
        np.int32([[10, 3]]),
        np.int32([[0, 0], [1, 2], [3, 4]]),
    ]
    shapes = [
        np.int32([[20, 30], [40, 40]]),
        np.int32([[30, 30]]),
        np.int32([[40, 50], [10, 10], [5, 6]]),
    ]
    out_anchors = [
        np.int32([[0, 0], [10, 20]]),
        np.int32([[5, 5]]),
        np.int32([[0, 0], [30, 40], [34, 44]]),
    ]
    out = run_mp(
        [batch],
        output_size=[64, 80],
        **{
            "@in_ids": ids,
            "@in_anchors": in_anchors,
            "@shapes": shapes,
            "@out_anchors": out_anchors,
        },
    )
    for i in range(3):
        want = np.zeros((64, 80, 3), np.uint8)
        for k, a, s, o in zip(ids[i], in_anchors[i], shapes[i], out_anchors[i], strict=True):
            want[o[0] : o[0] + s[0], o[1] : o[1] + s[1]] = batch[k][
                a[0] : a[0] + s[0], a[1] : a[1] + s[1]
            ]
        np.testing.assert_array_equal(out[i], want)


def test_multi_paste_relative_regions_floor_and_ceil():
    src = np.arange(4 * 5, dtype=np.uint8).reshape(4, 5, 1)
    batch = [src, src + 100]
    out = run_mp(
        [batch],
        **{
            "@in_ids": [np.int32([1]), np.int32([0])],
            "@in_anchors_rel": [np.float32([[0.3, 0.5]]), np.float32([[0.1, 0.1]])],
            "@shapes_rel": [np.float32([[0.5, 0.5]]), np.float32([[0.6, 0.3]])],
            "@out_anchors_rel": [np.float32([[0.5, 0.1]]), np.float32([[0.2, 0.5]])],
        },
    )
    # sample 0: anchor floor(1.2, 2.5) = (1, 2), shape ceil(2, 2.5) = (2, 3), at floor(2, 0.5)
    want = np.zeros((4, 5, 1), np.uint8)
    want[2:4, 0:3] = src[1:3, 2:5] + 100
    np.testing.assert_array_equal(out[0], want)
    # sample 1: anchor (0, 0), shape ceil(2.4, 1.5) = (3, 2), at floor(0.8, 2.5) = (0, 2)
    want = np.zeros((4, 5, 1), np.uint8)
    want[0:3, 2:4] = src[0:3, 0:2]
    np.testing.assert_array_equal(out[1], want)
    assert math.ceil(np.float32(0.6) * np.float32(4)) == 3


def test_multi_paste_several_inputs_and_dtype(photos):
    a = [p[:40, :40] for p in photos[:2]]
    b = [p[-20:, -10:] for p in photos[:2]]
    out_anchors = [np.int32([[0, 0], [5, 5]]), np.int32([[10, 0], [0, 30]])]
    out = run_mp([a, b], output_size=[50, 45], dtype=types.FLOAT, **{"@out_anchors": out_anchors})
    for i in range(2):
        want = np.zeros((50, 45, 3), np.float32)
        (y0, x0), (y1, x1) = out_anchors[i]
        want[y0 : y0 + 40, x0 : x0 + 40] = a[i]
        want[y1 : y1 + 20, x1 : x1 + 10] = b[i]
        assert out[i].dtype == np.float32
        np.testing.assert_array_equal(out[i], want)


def test_multi_paste_converts_with_saturation():
    f = [np.float32([[[2.5], [3.5], [-0.5], [300.6]]])]
    out = run_mp([f], in_ids=[0], dtype=types.UINT8)
    assert out[0][..., 0].tolist() == [[3, 4, 0, 255]]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"in_ids": [0], "out_anchors": [[3, 0]]}, "within output bounds"),
        ({"in_ids": [0], "in_anchors": [[1, 1]], "shapes": [[4, 4]]}, "within the input"),
        ({"in_ids": [5]}, "in range"),
        ({"in_ids": [0], "shapes_rel": [[1.5, 0.5]]}, r"\[0, 1\] range"),
        ({"in_ids": [0, 1], "shapes": [[1, 1]]}, "shape"),
        (
            {"in_ids": [0], "out_anchors": [[0, 0]], "out_anchors_rel": [[0.0, 0.0]]},
            "cannot be specified together",
        ),
    ],
)
def test_multi_paste_errors(args, match):
    batch = [np.zeros((4, 5, 3), np.uint8), np.zeros((4, 5, 3), np.uint8)]
    with pytest.raises(OperatorError, match=match):
        run_mp([batch], **args)


def test_multi_paste_needs_output_size_for_ragged_inputs():
    batch = [np.zeros((4, 5, 3), np.uint8), np.zeros((3, 5, 3), np.uint8)]
    with pytest.raises(OperatorError, match="output_size"):
        run_mp([batch], in_ids=[0])


def _mp_both(monkeypatch, batches, **args):
    """multi_paste through the batch kernel, and through the per-sample kernel alone (the
    batch kernel switched off): the two TensorLists."""
    import augkit.eager
    from augkit.operators.geometric.paste import MultiPaste
    from augkit.tensors import TensorList

    inputs = [TensorList(b, "HWC") for b in batches]
    plans = []
    plan = MultiPaste._plan
    with monkeypatch.context() as m:  # record which batch path ran
        m.setattr(MultiPaste, "_plan", lambda *a: plans.append(plan(*a)) or plans[-1])
        fast = augkit.eager.multi_paste(*inputs, **args)
    fast.planned = bool(plans) and plans[-1] is not None
    with monkeypatch.context() as m:
        m.setattr(MultiPaste, "cpu_batch", lambda *_: None)
        slow = augkit.eager.multi_paste(*inputs, **args)
    return fast, slow


@pytest.mark.parametrize("dtype", [None, types.UINT8, types.FLOAT, types.INT16])
@pytest.mark.parametrize("in_type", [np.uint8, np.float32])
@pytest.mark.parametrize("equal_counts", [False, True])
def test_multi_paste_batch_kernel_matches_the_per_sample_kernel(
    monkeypatch, photos, dtype, in_type, equal_counts
):
    """Both batch paths (regions worked out for the whole batch at once, when every output has
    as many absolute regions; else the per-sample kernel on rows of one array) against the
    per-sample kernel alone."""
    rng = np.random.default_rng(3)
    batch = [(p[:70, :90] * (1.7 if in_type == np.float32 else 1)).astype(in_type) for p in photos]
    n = len(batch)
    ids, in_anchors, shapes, out_anchors = [], [], [], []
    for i in range(n):
        k = 2 if equal_counts else 1 + i % 3
        ids.append(rng.integers(0, n, k).astype(np.int32))
        size = rng.integers(0, 40, (k, 2))
        in_anchors.append(rng.integers(0, 30, (k, 2)).astype(np.int32))
        shapes.append(size.astype(np.int64))
        out_anchors.append(rng.integers(0, 20, (k, 2)).astype(np.int32))
    args = {"in_ids": ids, "in_anchors": in_anchors, "shapes": shapes, "out_anchors": out_anchors}
    fast, slow = _mp_both(monkeypatch, [batch], output_size=(60, 64), dtype=dtype, **args)
    assert fast._dense is not None and slow._dense is None
    assert fast.planned == equal_counts
    for i in range(n):
        assert fast.at(i).dtype == slow.at(i).dtype
        np.testing.assert_array_equal(fast.at(i), slow.at(i))
    # The relative forms, and several inputs without in_ids (canvas: the inputs' shape).
    rel = {
        "in_anchors_rel": [rng.uniform(0, 0.5, (2, 2)).astype(np.float32) for _ in range(n)],
        "shapes_rel": [rng.uniform(0, 0.5, (2, 2)).astype(np.float32) for _ in range(n)],
        "out_anchors_rel": [rng.uniform(0, 0.5, (2, 2)).astype(np.float64) for _ in range(n)],
    }
    fast, slow = _mp_both(monkeypatch, [batch, batch[::-1]], dtype=dtype, **rel)
    assert fast._dense is not None and not fast.planned
    for i in range(n):
        np.testing.assert_array_equal(fast.at(i), slow.at(i))
        assert fast.at(i).shape == (70, 90, 3)


def test_multi_paste_batch_kernel_leaves_errors_to_the_per_sample_kernel(monkeypatch):
    batch = [np.zeros((4, 5, 3), np.uint8)] * 3
    anchors = [np.int32([[0, 0]]), np.int32([[3, 0]]), np.int32([[0, 0]])]
    with pytest.raises(OperatorError, match=r"sample #1.*within output bounds"):
        _mp_both(monkeypatch, [batch], in_ids=[0], out_anchors=anchors)
    # Values the bulk conversion does not take (floats for integers) give the same result.
    whole = [np.float32([[0, 1]]), np.float32([[1, 0]]), np.float32([[0, 0]])]
    fast, slow = _mp_both(monkeypatch, [batch], in_ids=[0], in_anchors=whole)
    assert fast._dense is None
    for i in range(3):
        np.testing.assert_array_equal(fast.at(i), slow.at(i))


def test_multi_paste_whole_canvas_region_hides_what_is_under_it(monkeypatch, photos):
    """A region covering the whole canvas: the zeros and the regions before it are hidden
    (the kernel skips them, and the zeroing); later regions go over it."""
    batch = [np.ascontiguousarray(p[:50, :60]) for p in photos[:3]]
    ids = [np.int32([0, 1, 2]), np.int32([2, 0]), np.int32([1])]
    in_anchors = [
        np.int32([[0, 0], [0, 0], [5, 6]]),
        np.int32([[0, 0], [0, 0]]),
        np.int32([[0, 0]]),
    ]
    shapes = [
        np.int32([[9, 9], [50, 60], [7, 8]]),
        np.int32([[50, 60], [50, 59]]),
        np.int32([[50, 60]]),
    ]
    out_anchors = [
        np.int32([[1, 1], [0, 0], [40, 50]]),
        np.int32([[0, 0], [0, 1]]),
        np.int32([[0, 0]]),
    ]
    args = {"in_ids": ids, "in_anchors": in_anchors, "shapes": shapes, "out_anchors": out_anchors}
    fast, slow = _mp_both(monkeypatch, [batch], **args)
    want = [batch[1].copy(), batch[2].copy(), batch[1]]
    want[0][40:47, 50:58] = batch[2][5:12, 6:14]
    want[1][:, 1:] = batch[0][:, :59]
    for i in range(3):
        np.testing.assert_array_equal(fast.at(i), want[i])
        np.testing.assert_array_equal(slow.at(i), want[i])
    # As many regions per output (the batch at once), constant and per-sample arguments.
    ids = [np.int32([i, (i + 1) % 3]) for i in range(3)]
    for shapes in ([[20, 20], [50, 60]], [[50, 60], [20, 20]], [[50, 60], [50, 60]]):
        fast, slow = _mp_both(monkeypatch, [batch], in_ids=ids, shapes=shapes)
        assert fast.planned
        for i in range(3):
            want = batch[(i + 1) % 3].copy() if shapes[1] == [50, 60] else batch[i].copy()
            if shapes[1] == [20, 20]:
                want[:20, :20] = batch[(i + 1) % 3][:20, :20]
            np.testing.assert_array_equal(fast.at(i), want)
            np.testing.assert_array_equal(slow.at(i), want)
    # Not quite whole (one row short): the zeros show.
    out = run_mp([batch], in_ids=[0], shapes=[[49, 60]], output_size=[50, 60])
    assert not out[0][49].any() and (out[0][:49] == batch[0][:49]).all()
