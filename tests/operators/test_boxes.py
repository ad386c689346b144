"""bb_flip, coord_flip, coord_transform and bbox_paste (augkit/operators/boxes/) against
independent references: float64 NumPy formulas, and the image operators they follow (a flipped
or pasted photo keeps each box's pixels under the moved box)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import types
from augkit.errors import ArgumentError, AugkitError
from tests.operator_check import run_operator

RNG = np.random.default_rng(7)


def _ltrb(n: int) -> np.ndarray:
    a = RNG.random((n, 2, 2), dtype=np.float32)
    return np.concatenate([a.min(axis=1), a.max(axis=1)], axis=1).astype(np.float32)


def _xywh(boxes: np.ndarray) -> np.ndarray:
    return np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)


BATCH = [_ltrb(3), _ltrb(0), _ltrb(7), _ltrb(1)]


def run(name: str, batch: list[np.ndarray], **args: Any) -> list[np.ndarray]:
    """Run ``name`` on ``batch``: a list argument is per sample, anything else a constant."""
    arg_inputs = {k: v for k, v in args.items() if isinstance(v, list)}
    consts = {k: v for k, v in args.items() if k not in arg_inputs}
    arg_inputs = {k: [np.asarray(x) for x in v] for k, v in arg_inputs.items()}
    (out,) = run_operator(name, [batch], args=consts, arg_inputs=arg_inputs)[0]
    return [np.asarray(out.at(i)) for i in range(len(batch))]


# --- bb_flip ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("h", "v"), [(1, 0), (0, 1), (1, 1), (0, 0)])
def test_bb_flip_ltrb_matches_formula(h: int, v: int) -> None:
    outs = run("bb_flip", BATCH, ltrb=True, horizontal=h, vertical=v)
    for box, out in zip(BATCH, outs, strict=True):
        b = box.astype(np.float64)
        want = b.copy()
        if h:
            want[:, [0, 2]] = 1 - b[:, [2, 0]]
        if v:
            want[:, [1, 3]] = 1 - b[:, [3, 1]]
        assert out.dtype == np.float32 and out.shape == box.shape
        np.testing.assert_allclose(out, want, atol=1e-6)


def test_bb_flip_xywh_default_is_horizontal_and_twice_is_identity() -> None:
    batch = [_xywh(b) for b in BATCH]
    once = run("bb_flip", batch)
    for box, out in zip(batch, once, strict=True):
        np.testing.assert_allclose(out[:, 0], 1 - box[:, 0] - box[:, 2], atol=1e-6)
        np.testing.assert_allclose(out[:, 1:], box[:, 1:], atol=1e-6)
    for box, out in zip(batch, run("bb_flip", once, vertical=1, horizontal=1), strict=True):
        np.testing.assert_allclose(out[:, 1], 1 - box[:, 1] - box[:, 3], atol=1e-6)
        np.testing.assert_allclose(out[:, [0, 2]], box[:, [0, 2]], atol=1e-6)


def test_bb_flip_follows_the_flipped_image(photos: list[np.ndarray]) -> None:
    """The pixels under a box of a photo are, mirrored, those under the flipped box of the
    mirrored photo."""
    photo = photos[0]
    h, w = photo.shape[:2]
    box = (np.array([[w // 4, h // 8, w // 2, 3 * h // 4]]) / [w, h, w, h]).astype(np.float32)
    (flipped,) = run("bb_flip", [box], ltrb=True, horizontal=1, vertical=1)
    mirrored = photo[::-1, ::-1]

    def crop(img: np.ndarray, b: np.ndarray) -> np.ndarray:
        left, top, right, bottom = np.rint(b[0] * [w, h, w, h]).astype(int)
        return img[top:bottom, left:right]

    np.testing.assert_array_equal(crop(mirrored, flipped), crop(photo, box)[::-1, ::-1])


def test_bb_flip_per_sample_flags() -> None:
    outs = run("bb_flip", BATCH, ltrb=True, horizontal=[1, 0, 0, 1], vertical=[0, 0, 1, 1])
    np.testing.assert_array_equal(outs[1], BATCH[1])
    np.testing.assert_allclose(outs[0][:, 0], 1 - BATCH[0][:, 2], atol=1e-7)
    np.testing.assert_array_equal(outs[0][:, [1, 3]], BATCH[0][:, [1, 3]])
    np.testing.assert_allclose(outs[2][:, 1], 1 - BATCH[2][:, 3], atol=1e-7)
    np.testing.assert_array_equal(outs[2][:, [0, 2]], BATCH[2][:, [0, 2]])


def test_bb_flip_flat_input_keeps_its_shape() -> None:
    (out,) = run("bb_flip", [BATCH[0].reshape(-1)], ltrb=True)
    assert out.shape == (12,)


@pytest.mark.parametrize(
    ("sample", "words"),
    [
        (np.zeros((2, 4), np.float64), "float32"),
        (np.zeros((2, 5), np.float32), "(N, 4)"),
        (np.zeros((6,), np.float32), "(N, 4)"),
    ],
)
def test_bb_flip_refuses_bad_boxes(sample: np.ndarray, words: str) -> None:
    with pytest.raises(AugkitError, match="bb_flip") as info:
        run("bb_flip", [sample])
    assert words in str(info.value)


# --- coord_flip ------------------------------------------------------------------------------


def test_coord_flip_matches_formula() -> None:
    pts = [RNG.random((5, 3), dtype=np.float32), RNG.random((0, 3), dtype=np.float32)]
    outs = run("coord_flip", pts, flip_x=0, flip_y=1, flip_z=1, center_y=0.2, center_z=0.9)
    p = pts[0].astype(np.float64)
    want = np.stack([p[:, 0], 0.4 - p[:, 1], 1.8 - p[:, 2]], axis=1)
    np.testing.assert_allclose(outs[0], want, atol=1e-6)
    assert outs[1].shape == (0, 3)


def test_coord_flip_layout_names_the_columns() -> None:
    pts = [RNG.random((4, 2), dtype=np.float32)]
    (out,) = run("coord_flip", pts, layout="yx", center_x=0.0)  # flips x: column 1
    np.testing.assert_allclose(out[:, 1], -pts[0][:, 1], atol=1e-7)
    np.testing.assert_array_equal(out[:, 0], pts[0][:, 0])


@pytest.mark.parametrize(
    ("sample", "args"),
    [
        (np.zeros((2, 4), np.float32), {}),
        (np.zeros((2, 2), np.int32), {}),
        (np.zeros((2, 3), np.float32), {"layout": "xy"}),
    ],
)
def test_coord_flip_refuses_bad_points(sample: np.ndarray, args: dict) -> None:
    with pytest.raises(AugkitError, match="coord_flip"):
        run("coord_flip", [sample], **args)


def test_coord_flip_refuses_a_bad_layout() -> None:
    with pytest.raises(ArgumentError, match=r"CoordFlip.*layout"):
        run("coord_flip", [np.zeros((1, 2), np.float32)], layout="xq")


# --- coord_transform -------------------------------------------------------------------------


def test_coord_transform_matches_einsum() -> None:
    pts = [RNG.random((6, 2), dtype=np.float32) for _ in range(3)]
    m = (0.5, -1.0, 2.0, 0.25, 1.0, 1.0)
    outs = run("coord_transform", pts, M=m, T=(1.0, 2.0, -3.0))
    for p, out in zip(pts, outs, strict=True):
        want = np.einsum("ij,nj->ni", np.reshape(m, (3, 2)), p.astype(np.float64))
        want += np.array([1.0, 2.0, -3.0])
        assert out.shape == (6, 3) and out.dtype == np.float32
        np.testing.assert_allclose(out, want, atol=1e-5)


def test_coord_transform_forms_of_M_T_MT_agree() -> None:
    pts = [RNG.random((4, 2), dtype=np.float32)]
    a = run("coord_transform", pts, M=(2.0, 0.0, 0.0, 2.0), T=(0.5, 0.5))
    b = run("coord_transform", pts, M=2.0, T=0.5)
    c = run("coord_transform", pts, MT=(2.0, 0.0, 0.5, 0.0, 2.0, 0.5))
    d = run("coord_transform", pts)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[0], c[0])
    np.testing.assert_array_equal(d[0], pts[0])


def test_coord_transform_per_sample_matrices() -> None:
    pts = [RNG.random((3, 2), dtype=np.float32) for _ in range(2)]
    ms = [np.eye(2, dtype=np.float32), np.array([[0, 1], [1, 0]], np.float32)]
    outs = run("coord_transform", pts, M=ms)
    np.testing.assert_array_equal(outs[0], pts[0])
    np.testing.assert_array_equal(outs[1], pts[1][:, ::-1])


def test_coord_transform_integer_output_rounds_and_saturates() -> None:
    pts = [np.array([[1, 2], [100, 120]], np.uint8)]
    (out,) = run("coord_transform", pts, M=(2.0, 0.0, 0.0, 1.0), T=(0.5, -2.5), dtype=types.UINT8)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [[3, 0], [201, 118]])  # 2.5 -> 3, -0.5 -> 0 (sat)


@pytest.mark.parametrize(
    ("sample", "args", "words"),
    [
        (np.zeros((2, 2), np.float32), {"M": (1.0, 2.0, 3.0)}, "columns"),
        (np.zeros((2, 2), np.float32), {"T": (1.0, 2.0, 3.0)}, "T has 3"),
        (np.zeros((4,), np.float32), {}, "2 dimensions"),
        (np.zeros((2, 2), np.float32), {"dtype": types.INT16}, "output type"),
    ],
)
def test_coord_transform_refuses_bad_inputs(sample: np.ndarray, args: dict, words: str) -> None:
    with pytest.raises(AugkitError, match="coord_transform") as info:
        run("coord_transform", [sample], **args)
    assert words in str(info.value)


def test_coord_transform_MT_excludes_M() -> None:
    with pytest.raises(ArgumentError, match=r"CoordTransform.*MT"):
        run("coord_transform", [np.zeros((1, 2), np.float32)], M=1.0, MT=1.0)


# --- bbox_paste ------------------------------------------------------------------------------


@pytest.mark.parametrize(("ratio", "px", "py"), [(2.0, 0.5, 0.5), (1.5, 0.0, 1.0), (3.0, 0.8, 0.1)])
def test_bbox_paste_follows_the_pasted_image(ratio: float, px: float, py: float) -> None:
    """The image occupies [px·(1 - 1/r), px·(1 - 1/r) + 1/r] of the canvas (fn.paste); a box
    corner moves with it."""
    outs = run("bbox_paste", BATCH, ratio=ratio, paste_x=px, paste_y=py, ltrb=True)
    for box, out in zip(BATCH, outs, strict=True):
        b = box.astype(np.float64)
        ox, oy = px * (1 - 1 / ratio), py * (1 - 1 / ratio)
        want = b / ratio + [ox, oy, ox, oy]
        np.testing.assert_allclose(out, want, atol=1e-6)
    xywh = run("bbox_paste", [_xywh(b) for b in BATCH], ratio=ratio, paste_x=px, paste_y=py)
    for ltrb_out, out in zip(outs, xywh, strict=True):
        np.testing.assert_allclose(out, _xywh(ltrb_out), atol=1e-6)


def test_bbox_paste_ratio_one_is_identity_and_ratio_is_required() -> None:
    (out,) = run("bbox_paste", [BATCH[0]], ratio=1.0, paste_x=0.3)
    np.testing.assert_allclose(out, BATCH[0], atol=1e-7)
    with pytest.raises(ArgumentError, match="ratio"):
        run("bbox_paste", [BATCH[0]])
    with pytest.raises(ArgumentError, match=r"BBoxPaste.*ratio"):
        run("bbox_paste", [BATCH[0]], ratio=0.0)


# --- bbox_rotate -----------------------------------------------------------------------------


def _box_mask(h: int, w: int, box: np.ndarray) -> np.ndarray:
    """An (h, w, 1) uint8 image that is 255 inside the relative ltrb ``box``."""
    mask = np.zeros((h, w, 1), np.uint8)
    left, top, right, bottom = np.rint(box * [w, h, w, h]).astype(int)
    mask[top:bottom, left:right] = 255
    return mask


@pytest.mark.parametrize("keep_size", [False, True])
@pytest.mark.parametrize("angle", [0.0, 17.0, 90.0, -130.0])
def test_bbox_rotate_encloses_the_rotated_image_region(angle: float, keep_size: bool) -> None:
    """fn.rotate turns an image holding a filled box; the box bbox_rotate gives ("expand")
    is the bounding box of the rotated pixels, within about a pixel."""
    from augkit import types as t

    h, w = 60, 80
    box = np.array([0.3, 0.25, 0.6, 0.55], np.float32)
    mask = _box_mask(h, w, box)
    (image,) = run_operator(
        "rotate",
        [[mask]],
        layout="HWC",
        args={"angle": angle, "keep_size": keep_size, "interp_type": t.INTERP_NN, "fill_value": 0},
    )[0]
    rotated = np.asarray(image.at(0))[..., 0]
    rows, cols = np.nonzero(rotated)
    out_h, out_w = rotated.shape
    want = np.array(
        [cols.min() / out_w, rows.min() / out_h, (cols.max() + 1) / out_w, (rows.max() + 1) / out_h]
    )
    (out,) = run("bbox_rotate", [box[None]], angle=angle, input_shape=(h, w), keep_size=keep_size)
    assert out.shape == (1, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], want, atol=1.5 / min(out_h, out_w))


def test_bbox_rotate_labels_follow_their_boxes_and_threshold_is_honoured() -> None:
    boxes = np.array(
        [[0.4, 0.4, 0.6, 0.6], [0.0, 0.0, 0.1, 0.1], [0.85, 0.1, 1.0, 0.3], [0.2, 0.6, 0.4, 0.9]],
        np.float32,
    )
    labels = np.array([[7], [3], [5], [1]], np.int32)
    for threshold in (0.0, 0.3, 0.7, 1.0):
        (out_boxes, out_labels) = run_operator(
            "bbox_rotate",
            [[boxes], [labels]],
            args={
                "angle": 40.0,
                "input_shape": (50, 50),
                "keep_size": True,
                "remove_threshold": threshold,
            },
        )[0]
        kept_boxes, kept = np.asarray(out_boxes.at(0)), np.asarray(out_labels.at(0))
        (expanded,) = run(
            "bbox_rotate",
            [boxes],
            angle=40.0,
            input_shape=(50, 50),
            keep_size=True,
            remove_threshold=0.0,
        )
        unclipped = _unclipped(boxes, 40.0)
        area = np.prod(expanded[:, 2:] - expanded[:, :2], axis=1)
        full = np.prod(unclipped[:, 2:] - unclipped[:, :2], axis=1)
        want = np.flatnonzero(area / full >= threshold - 1e-6)
        np.testing.assert_array_equal(kept[:, 0], labels[want, 0])
        np.testing.assert_allclose(kept_boxes, expanded[want], atol=1e-6)
        assert (kept_boxes >= 0).all() and (kept_boxes <= 1).all()


def _unclipped(boxes: np.ndarray, angle: float) -> np.ndarray:
    """The rotated corners' bounding boxes (relative, float64, not clipped) on a square
    canvas of the input's size: an independent rotation about the centre (y down, CCW on
    screen)."""
    a = np.deg2rad(angle)
    corners = (
        np.stack([boxes[:, [0, 2, 0, 2]], boxes[:, [1, 1, 3, 3]]], axis=-1).astype(np.float64) - 0.5
    )
    rot = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    turned = corners @ rot.T + 0.5
    return np.concatenate([turned.min(axis=1), turned.max(axis=1)], axis=1)


def test_bbox_rotate_modes_and_layouts() -> None:
    box = np.array([[0.2, 0.3, 0.6, 0.5]], np.float32)  # 32 x 12 pixels on 80 x 60
    shape = (60, 80)
    (expand,) = run("bbox_rotate", [box], angle=30.0, input_shape=shape, keep_size=True)
    (fixed,) = run(
        "bbox_rotate", [box], angle=30.0, input_shape=shape, keep_size=True, mode="fixed"
    )
    (half,) = run(
        "bbox_rotate", [box], angle=30.0, input_shape=shape, keep_size=True, mode="halfway"
    )
    size = lambda b: (b[0, 2:] - b[0, :2]) * [80, 60]  # noqa: E731
    np.testing.assert_allclose(size(fixed), [32, 12], atol=1e-3)
    np.testing.assert_allclose(size(half), (size(expand) + size(fixed)) / 2, atol=1e-3)
    np.testing.assert_allclose((fixed[0, :2] + fixed[0, 2:]), (expand[0, :2] + expand[0, 2:]))
    (xywh,) = run(
        "bbox_rotate",
        [_xywh(box)],
        angle=30.0,
        input_shape=(3, 60, 80),
        shape_layout="CHW",
        keep_size=True,
        bbox_layout="xyWH",
    )
    np.testing.assert_allclose(xywh, _xywh(expand), atol=1e-6)
    (pixels,) = run(
        "bbox_rotate",
        [box * np.float32([80, 60, 80, 60])],
        angle=30.0,
        input_shape=shape,
        keep_size=True,
        bbox_normalized=False,
    )
    np.testing.assert_allclose(pixels / [80, 60, 80, 60], expand, atol=1e-5)


def test_bbox_rotate_refuses_bad_arguments_and_inputs() -> None:
    box = [np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)]
    with pytest.raises(ArgumentError, match=r"BBoxRotate.*keep_size"):
        run("bbox_rotate", box, angle=1.0, input_shape=(9, 9), keep_size=True, size=(9.0, 9.0))
    with pytest.raises(ArgumentError, match="input_shape"):
        run("bbox_rotate", box, angle=1.0)
    with pytest.raises(ArgumentError, match=r"BBoxRotate.*mode"):
        run("bbox_rotate", box, angle=1.0, input_shape=(9, 9), mode="stretch")
    with pytest.raises(AugkitError, match="bbox_rotate: labels"):
        run_operator(
            "bbox_rotate",
            [box, [np.zeros((2, 1), np.int32)]],
            args={"angle": 1.0, "input_shape": (9, 9)},
        )
    with pytest.raises(AugkitError, match="bbox_rotate: boxes"):
        run("bbox_rotate", [np.zeros((2, 3), np.float32)], angle=1.0, input_shape=(9, 9))


@pytest.mark.parametrize(
    "args",
    [
        {"angle": [10.0, -75.0, 200.0, 33.0], "input_shape": (48, 64)},
        {"angle": 50.0, "input_shape": (30, 40), "keep_size": True, "mode": "halfway"},
        {"angle": -20.0, "input_shape": (30, 40), "size": (41.6, 50.2), "bbox_layout": "xyWH"},
    ],
)
def test_bbox_rotate_batch_kernel_equals_the_per_sample_kernel(args: dict) -> None:
    """A batch runs the vectorised batch kernel; one sample at a time, the per-sample one."""
    labels = [np.arange(len(b), dtype=np.int32) for b in BATCH]
    per_sample = {k: v for k, v in args.items() if isinstance(v, list)}
    consts = {k: v for k, v in args.items() if k not in per_sample}
    whole = run_operator(
        "bbox_rotate",
        [BATCH, labels],
        args=consts,
        arg_inputs={k: [np.float32(x) for x in v] for k, v in per_sample.items()},
    )[0]
    for i in range(len(BATCH)):
        one = run_operator(
            "bbox_rotate",
            [[BATCH[i]], [labels[i]]],
            args=consts,
            arg_inputs={k: [np.float32(v[i])] for k, v in per_sample.items()},
        )[0]
        for a, b in zip(whole, one, strict=True):
            np.testing.assert_array_equal(np.asarray(a.at(i)), np.asarray(b.at(0)))


def test_coord_transform_values_beyond_float32_become_infinite_without_a_warning():
    """The fuzzer's find: a T of 3.4028235677973366e+38 (just above float32's largest) raised
    NumPy's overflow warning inside the kernel; DALI's float arguments give inf."""
    from augkit import eager

    points = np.array([[1.0, 2.0]], np.float32)
    out = eager.coord_transform(points, T=[0.0, 3.4028235677973366e38])
    np.testing.assert_array_equal(out, np.array([[1.0, np.inf]], np.float32))
