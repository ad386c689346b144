"""Masks, boxes, keypoints and labels through the window operators (crop, slice, pad, paste,
crop_mirror_normalize) with their images, in one call (DALI's input sets): the shared
consistency check of tests/targets_check.py on real photos with random per-sample arguments for
every mode, and exact tests (a mask is cut as the image kernel cuts it, bit for bit; boxes
dropped with their labels; what is refused and how)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from augkit import Pipeline, fn, kinds, pipeline_def, types
from augkit.errors import GraphError, OperatorError
from tests.targets_check import _source, check_operator, scene


def _uniform(fn: Any, low: float, high: float, shape: Any = None) -> Any:
    return fn.random.uniform(range=(low, high), shape=shape)


def _typed(samples: list[np.ndarray], kind: Any, layout: str | None = None) -> Any:
    return _source(samples, kind, layout)


def _run(define: Callable[[], Any], batch: int = 2, debug: bool = False) -> Any:
    pipe = pipeline_def(define, batch_size=batch, num_threads=2, device_id=None, seed=3)(
        debug=debug
    )
    try:
        return pipe.run()
    finally:
        pipe.close()


# --- the consistency check: every mode, random per-sample arguments ----------------------------
CROP_MODES = {
    "crop_h/crop_w, pad": lambda fn: {
        "crop_w": _uniform(fn, 20, 200),
        "crop_h": _uniform(fn, 20, 200),
        "crop_pos_x": _uniform(fn, 0, 1),
        "crop_pos_y": _uniform(fn, 0, 1),
        "out_of_bounds_policy": "pad",
        "fill_values": (120, 30, 10),  # darker than the white rectangle
    },
    "crop, trim_to_shape, truncate": lambda fn: {
        "crop": (90, 120),
        "crop_pos_x": _uniform(fn, 0, 1),
        "crop_pos_y": _uniform(fn, 0, 1),
        "out_of_bounds_policy": "trim_to_shape",
        "rounding": "truncate",
    },
    "crop inside, error": lambda fn: {
        "crop": (40, 50),
        "crop_pos_x": _uniform(fn, 0, 1),
        "crop_pos_y": _uniform(fn, 0, 1),
        "dtype": types.FLOAT,
    },
}

SLICE_MODES = {
    "rel_start/rel_shape": lambda fn: {
        "rel_start": _uniform(fn, 0, 0.4, 2),
        "rel_shape": _uniform(fn, 0.3, 0.6, 2),
    },
    "rel_start/rel_end, trim_to_shape": lambda fn: {
        "rel_start": _uniform(fn, -0.3, 0.5, 2),
        "rel_end": _uniform(fn, 0.6, 1.3, 2),
        "out_of_bounds_policy": "trim_to_shape",
    },
    "rel_start/rel_shape, pad": lambda fn: {
        "rel_start": _uniform(fn, -0.3, 0.5, 2),
        "rel_shape": _uniform(fn, 0.3, 1.0, 2),
        "out_of_bounds_policy": "pad",
        "fill_values": 77,
    },
    "start/end, axis_names HW": lambda fn: {
        "start": (5, 9),
        "end": (60, 70),
        "axis_names": "HW",
    },
    "start/shape, axes [0, 1], constant": lambda fn: {
        "start": fn.cast(_uniform(fn, -20, 40, 2), dtype=types.INT32),
        "shape": (50, 60),
        "axes": [0, 1],
        "out_of_bounds_policy": "constant",
    },
}

PAD_MODES = {
    "HW to the batch's largest, align": lambda fn: {"axis_names": "HW", "align": 32},
    "every axis": lambda fn: {"fill_value": _uniform(fn, 0, 140)},
    "axes [0, 1] to a shape": lambda fn: {"axes": [0, 1], "shape": (400, 300), "fill_value": 9},
}

PASTE_MODES = {
    "ratio, paste_x/y": lambda fn: {
        "ratio": _uniform(fn, 1, 2.5),
        "paste_x": _uniform(fn, 0, 1),
        "paste_y": _uniform(fn, 0, 1),
        "fill_value": (10, 20, 30),
    },
    "min_canvas_size": lambda fn: {
        "ratio": 1.0,
        "min_canvas_size": _uniform(fn, 300, 500),
        "paste_x": _uniform(fn, 0, 1),
        "fill_value": 0,
    },
}

CMN_MODES = {
    "crop, mirror, uint8 CHW": lambda fn: {
        "crop": (35, 38),
        "crop_pos_x": _uniform(fn, 0, 1),
        "crop_pos_y": _uniform(fn, 0, 1),
        "mirror": fn.random.coin_flip(),
        "dtype": types.UINT8,
    },
    "pad, mirror, HWC": lambda fn: {
        "crop_w": _uniform(fn, 20, 300),
        "crop_h": _uniform(fn, 20, 300),
        "mirror": fn.random.coin_flip(),
        "out_of_bounds_policy": "pad",
        "fill_values": (130, 0, 0),
        "output_layout": "HWC",
    },
    "trim_to_shape, pad_output, no crop position": lambda fn: {
        "crop": (200, 120),
        "mirror": 1,
        "out_of_bounds_policy": "trim_to_shape",
        "pad_output": True,
    },
}

MODES = [
    *(("crop", k, v) for k, v in CROP_MODES.items()),
    *(("slice", k, v) for k, v in SLICE_MODES.items()),
    *(("pad", k, v) for k, v in PAD_MODES.items()),
    *(("paste", k, v) for k, v in PASTE_MODES.items()),
    *(("crop_mirror_normalize", k, v) for k, v in CMN_MODES.items()),
]


@pytest.mark.parametrize(
    ("name", "mode", "arguments"), MODES, ids=[f"{n}: {m}" for n, m, _ in MODES]
)
def test_every_kind_agrees_after_one_call(name: str, mode: str, arguments: Any) -> None:
    seeds = range(1, 4) if name == "crop_mirror_normalize" else range(3)
    check_operator(name, arguments, seeds=seeds)


@pytest.mark.parametrize("name", ["crop", "slice", "pad", "paste", "crop_mirror_normalize"])
def test_every_kind_agrees_in_debug_mode(name: str) -> None:
    mode = {
        "crop": CROP_MODES["crop_h/crop_w, pad"],
        "slice": SLICE_MODES["rel_start/rel_shape, pad"],
        "pad": PAD_MODES["HW to the batch's largest, align"],
        "paste": PASTE_MODES["ratio, paste_x/y"],
        "crop_mirror_normalize": CMN_MODES["pad, mirror, HWC"],
    }[name]
    check_operator(name, mode, seeds=range(2), debug=True)


POSITIONAL = {
    "normalized float": (
        lambda fn: (_uniform(fn, 0, 0.4, 2), _uniform(fn, 0.3, 0.6, 2)),
        {},
    ),
    "absolute float, pad": (
        lambda fn: (_uniform(fn, -30, 50, 2), _uniform(fn, 20, 90, 2)),
        {"normalized_anchor": False, "normalized_shape": False, "out_of_bounds_policy": "pad"},
    ),
    "normalized anchor, absolute shape, axis_names HW, trim_to_shape": (
        lambda fn: (_uniform(fn, 0, 1, 2), _uniform(fn, 20, 90, 2)),
        {"normalized_shape": False, "axis_names": "HW", "out_of_bounds_policy": "trim_to_shape"},
    ),
    "int32": (
        lambda fn: (
            fn.cast(_uniform(fn, 0, 30, 2), dtype=types.INT32),
            fn.cast(_uniform(fn, 20, 40, 2), dtype=types.INT32),
        ),
        {},
    ),
}


@pytest.mark.parametrize(
    ("mode", "debug"), [*((m, False) for m in POSITIONAL), ("normalized float", True)]
)
def test_slice_with_anchor_and_shape_inputs_moves_every_kind(mode: str, debug: bool) -> None:
    window, arguments = POSITIONAL[mode]
    # Seed 2 of "absolute float, pad" puts a box edge on the window's edge: the float32 sliver
    # of test_a_box_on_the_window_edge_is_dropped_in_relative_and_absolute_form_alike.
    check_operator(
        "slice", lambda fn: arguments, seeds=range(4), debug=debug, inputs=lambda fn: window(fn)
    )


# --- exact: a mask is cut as the image kernel cuts it ---------------------------------------------
def _masks(seed: int, sizes: list[tuple[int, int]], dtype: Any = np.uint8) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 5, (h, w, 1)).astype(dtype) for h, w in sizes]


SIZES = [(61, 83), (90, 47), (75, 75)]


def _photos(sizes: list[tuple[int, int]]) -> list[np.ndarray]:
    return [scene(i, np.random.default_rng(i))["image"][:h, :w] for i, (h, w) in enumerate(sizes)]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (
            "crop",
            {
                "crop": (70, 60),
                "crop_pos_x": 0.2,
                "crop_pos_y": 0.9,
                "out_of_bounds_policy": "pad",
                "fill_values": 0,
            },
        ),
        ("crop", {"crop_h": 40, "crop_w": 100, "out_of_bounds_policy": "trim_to_shape"}),
        (
            "slice",
            {
                "rel_start": (-0.2, 0.3),
                "rel_shape": (0.9, 1.1),
                "out_of_bounds_policy": "pad",
                "fill_values": 0,
            },
        ),
        ("slice", {"start": (3, 4), "end": (40, 44)}),
        ("pad", {"axis_names": "HW", "align": (16, 10)}),
        ("flip", {"horizontal": 1}),
    ],
)
def test_a_mask_is_cut_bit_for_bit_as_the_image_kernel_cuts_it(name: str, arguments: dict) -> None:
    masks = _masks(4, SIZES)
    images = _photos(SIZES)
    operator = getattr(fn, name)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        as_image = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        moved_image, moved_mask = operator([image, mask], **arguments)
        return moved_image, moved_mask, operator(as_image, **arguments)

    out_images, out_masks, reference = _run(define, batch=3)
    assert out_masks.kind == kinds.MASK
    for i in range(3):
        np.testing.assert_array_equal(out_masks.at(i), reference.at(i))
        assert out_masks.at(i).shape[:2] == out_images.at(i).shape[:2]
        assert out_masks.at(i).dtype == np.uint8


def test_a_crop_pads_masks_with_class_0_and_images_with_fill_values() -> None:
    masks = _masks(5, SIZES, np.int32)
    images = _photos(SIZES)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed([m[..., 0] for m in masks], "mask")  # H×W, int32
        return tuple(
            fn.crop(
                [image, mask],
                crop=(100, 100),
                crop_pos_x=0.0,
                crop_pos_y=1.0,
                out_of_bounds_policy="pad",
                fill_values=(250, 251, 252),
                dtype=types.FLOAT,
            )
        )

    out_images, out_masks = _run(define, batch=3)
    for i, (h, _) in enumerate(SIZES):
        mask, image = out_masks.at(i), out_images.at(i)
        assert mask.shape == (100, 100) and mask.dtype == np.int32
        assert image.dtype == np.float32
        # NumPy: the window (anchor y = 1.0 * (h - 100), x = 0) on a zero canvas.
        expected = np.zeros((100, 100), np.int32)
        y = h - 100  # negative: the window starts above the image
        src = masks[i][max(y, 0) : y + 100, :100, 0]
        expected[max(-y, 0) : max(-y, 0) + src.shape[0], : src.shape[1]] = src
        np.testing.assert_array_equal(mask, expected)
        outside = np.ones((100, 100), bool)
        outside[max(-y, 0) : max(-y, 0) + src.shape[0], : src.shape[1]] = False
        assert (image[outside] == [250, 251, 252]).all()


def test_pad_pads_masks_with_class_0_whatever_fill_value_is() -> None:
    masks = _masks(6, SIZES)
    images = _photos(SIZES)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        return tuple(fn.pad([image, mask], axis_names="HW", fill_value=99))

    out_images, out_masks = _run(define, batch=3)
    height, width = max(h for h, _ in SIZES), max(w for _, w in SIZES)
    for i, (h, w) in enumerate(SIZES):
        expected = np.zeros((height, width, 1), np.uint8)
        expected[:h, :w] = masks[i]
        np.testing.assert_array_equal(out_masks.at(i), expected)
        assert (out_images.at(i)[h:] == 99).all() and (out_images.at(i)[:, w:] == 99).all()


def test_paste_puts_masks_where_the_image_goes_on_a_class_0_canvas() -> None:
    masks = _masks(7, SIZES, np.uint16)
    images = [np.full((h, w, 3), 128, np.uint8) for h, w in SIZES]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        boxes = _typed([np.array([[0, 0, 1, 1]], np.float32)] * 3, "boxes")
        return tuple(
            fn.paste(
                [image, mask, boxes],
                ratio=fn.random.uniform(range=(1.2, 2.0)),
                paste_x=fn.random.uniform(range=(0, 1)),
                paste_y=fn.random.uniform(range=(0, 1)),
                fill_value=7,
            )
        )

    out_images, out_masks, out_boxes = _run(define, batch=3)
    for i, (h, w) in enumerate(SIZES):
        image, mask = out_images.at(i), out_masks.at(i)
        ys, xs = np.nonzero(image[..., 0] == 128)  # where the image went, from its pixels
        y, x = ys.min(), xs.min()
        assert (ys.max() - y + 1, xs.max() - x + 1) == (h, w)
        expected = np.zeros((*image.shape[:2], 1), np.uint16)
        expected[y : y + h, x : x + w] = masks[i]
        np.testing.assert_array_equal(mask, expected)
        # The whole-image box is where the image went, relative to the canvas.
        ch, cw = image.shape[:2]
        np.testing.assert_allclose(
            out_boxes.at(i), [[x / cw, y / ch, (x + w) / cw, (y + h) / ch]], atol=1e-6
        )


def test_crop_mirror_normalize_crops_and_mirrors_masks_and_never_normalizes_them() -> None:
    masks = _masks(8, SIZES)
    images = _photos(SIZES)
    mirror = [1, 0, 1]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        flags = fn.external_source(source=lambda: [np.int32(m) for m in mirror], batch=True)
        return tuple(
            fn.crop_mirror_normalize(
                [image, mask],
                crop=(40, 30),
                crop_pos_x=0.25,
                crop_pos_y=0.75,
                mirror=flags,
                mean=(120.0, 110.0, 100.0),
                std=(60.0, 50.0, 40.0),
                pad_output=True,
            )
        )

    out_images, out_masks = _run(define, batch=3)
    assert out_images.layout() == "CHW" and out_masks.layout() in ("HWC", "")
    assert out_masks.kind == kinds.MASK
    for i, (h, w) in enumerate(SIZES):
        y = int(np.floor(np.float32(0.75) * (h - 40) + 0.5))
        x = int(np.floor(np.float32(0.25) * (w - 30) + 0.5))
        expected = masks[i][y : y + 40, x : x + 30]
        if mirror[i]:
            expected = expected[:, ::-1]
        np.testing.assert_array_equal(out_masks.at(i), expected)  # uint8, H×W×1, not CHW
        assert out_images.at(i).shape == (4, 40, 30) and out_images.at(i).dtype == np.float32
        # The image's window is the mask's: its first channel, un-normalized, is the photo's.
        photo = images[i][y : y + 40, x : x + 30, 0].astype(np.float32)
        if mirror[i]:
            photo = photo[:, ::-1]
        np.testing.assert_allclose(out_images.at(i)[0] * 60 + 120, photo, atol=1e-3)


def test_crop_mirror_normalize_output_kinds_at_build() -> None:
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        image = fn.external_source(
            source=lambda: [np.zeros((8, 8, 3), np.uint8)], batch=True, layout="HWC"
        )
        mask = _typed([np.zeros((8, 8, 1), np.uint8)], "mask", "HWC")
        boxes = _typed([np.zeros((1, 4), np.float32)], "boxes")
        out = fn.crop_mirror_normalize([image, mask, boxes], crop=(4, 4))
        pipe.set_outputs(*out, fn.flip(out[1]))  # still a mask: it can be moved again
    pipe.build()
    image_out, mask_out, boxes_out, rotated = pipe.run()
    assert image_out.kind == kinds.IMAGE and image_out.layout() == "CHW"
    assert mask_out.kind == kinds.MASK and boxes_out.kind == kinds.BOXES
    assert mask_out.at(0).shape == (4, 4, 1) and mask_out.at(0).dtype == np.uint8
    assert rotated.kind == kinds.MASK
    np.testing.assert_array_equal(rotated.at(0), mask_out.at(0)[:, ::-1])
    pipe.close()


# --- exact: boxes, labels, keypoints ----------------------------------------------------------
def test_boxes_left_out_by_a_crop_are_dropped_with_their_labels() -> None:
    image = np.zeros((100, 200, 3), np.uint8)
    boxes = np.array(
        [[10, 10, 40, 40], [150, 60, 190, 90], [90, 30, 130, 70], [0, 0, 200, 100]], np.float32
    )
    labels = np.array([1, 2, 3, 4], np.int32)
    points = np.array([[10, 10], [150, 60]], np.float32)

    def define() -> Any:
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        b = _typed([boxes] * 2, kinds.boxes("ltrb", relative=False))
        lab = _typed([labels] * 2, "labels")
        k = _typed([points] * 2, kinds.keypoints(relative=False))
        # The window: x 50..150 (anchor 0.5 * 100), y 20..70 (0.4 * 50).
        return tuple(fn.crop([images, b, lab, k], crop=(50, 100), crop_pos_y=0.4))

    _, out_boxes, out_labels, out_points = _run(define)
    np.testing.assert_allclose(out_boxes.at(0), [[40, 10, 80, 50], [0, 0, 100, 50]])
    assert out_labels.at(0).tolist() == [3, 4]
    np.testing.assert_allclose(out_points.at(1), [[-40, -10], [100, 40]])  # never dropped
    assert out_boxes.kind == kinds.boxes("ltrb", relative=False)


def test_slice_pad_and_paste_move_relative_keypoints_and_xywh_boxes_exactly() -> None:
    image = np.zeros((40, 80, 3), np.uint8)
    points = np.array([[0.5, 0.5], [0.0, 1.0]], np.float32)
    boxes = np.array([[0.25, 0.25, 0.5, 0.5]], np.float32)  # xywh: x 20..60, y 10..30

    def define() -> Any:
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        k = _typed([points] * 2, kinds.keypoints(relative=True))
        b = _typed([boxes] * 2, kinds.boxes("xywh", relative=True))
        sliced = fn.slice([images, k, b], start=(10, 5), shape=(40, 20))  # x 10..50, y 5..25
        padded = fn.pad([images, k, b], axes=[0, 1], shape=(80, 100))
        pasted = fn.paste([images, k, b], ratio=2.0, paste_x=0.0, paste_y=1.0, fill_value=0)
        return (*sliced[1:], *padded[1:], *pasted[1:])

    s_points, s_boxes, p_points, p_boxes, q_points, q_boxes = _run(define)
    np.testing.assert_allclose(s_points.at(0), [[30 / 40, 15 / 20], [-10 / 40, 35 / 20]], 1e-6)
    np.testing.assert_allclose(s_boxes.at(0), [[10 / 40, 5 / 20, 30 / 40, 15 / 20]], 1e-6)
    np.testing.assert_allclose(p_points.at(0), [[40 / 100, 20 / 80], [0, 40 / 80]], 1e-6)
    np.testing.assert_allclose(p_boxes.at(0), [[0.2, 0.125, 0.4, 0.25]], 1e-6)
    # paste: a 80×160 canvas, the image at y = 40, x = 0.
    np.testing.assert_allclose(q_points.at(1), [[40 / 160, 60 / 80], [0, 1]], 1e-6)
    np.testing.assert_allclose(q_boxes.at(1), [[20 / 160, 50 / 80, 40 / 160, 20 / 80]], 1e-6)


# --- refused, and how ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("crop", {"crop": (10, 10)}),
        ("crop_mirror_normalize", {"crop": (10, 10)}),
        ("slice", {"rel_start": (0.1, 0.1), "rel_shape": (0.5, 0.5)}),
        ("paste", {"ratio": 2.0, "fill_value": 0}),
    ],
)
def test_absolute_boxes_without_their_image_ask_for_the_input_set_form(
    name: str, arguments: dict
) -> None:
    def define() -> Any:
        boxes = _typed([np.array([[1, 2, 5, 6]], np.float32)] * 2, kinds.boxes("ltrb", False))
        return getattr(fn, name)(boxes, **arguments)

    with pytest.raises(OperatorError, match=rf"without the image.*fn\.{name}\(\[images, boxes\]"):
        _run(define)


def test_a_window_out_of_bounds_with_policy_error_fails_for_targets_and_the_pipeline_recovers():
    heights = iter([50, 20, 50])  # the second batch is too small for the 30×30 crop

    def images() -> list[np.ndarray]:
        return [np.zeros((next(heights), 40, 3), np.uint8)] * 2

    def boxes() -> list[np.ndarray]:
        return [np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)] * 2

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        image = fn.external_source(source=images, batch=True, layout="HWC")
        box = _typed_callable(boxes, "boxes")
        pipe.set_outputs(*fn.crop([image, box], crop=(30, 30)))
    assert pipe.run()[1].at(0).shape == (1, 4)
    with pytest.raises(OperatorError, match="does not fit") as info:
        pipe.run()
    assert "Crop" in str(info.value) and "sample #0" in str(info.value)
    assert pipe.run()[1].at(1).shape == (1, 4)
    pipe.close()


def _typed_callable(source: Callable[[], list[np.ndarray]], kind: Any) -> Any:
    node = fn.external_source(source=source, batch=True)
    return fn.python_function(node, function=lambda x: x, kind=kind)


@pytest.mark.parametrize("policy", ["edge", "reflect", "reflect_101", "wrap"])
def test_slice_refuses_to_move_targets_where_it_repeats_or_reflects_the_image(policy: str) -> None:
    image = np.zeros((20, 30, 3), np.uint8)

    def define() -> Any:
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        mask = _typed([np.zeros((20, 30, 1), np.uint8)] * 2, "mask", "HWC")
        return tuple(
            fn.slice(
                [images, mask], rel_start=(-0.5, 0), rel_shape=(1, 1), out_of_bounds_policy=policy
            )
        )

    with pytest.raises(OperatorError, match=rf"out_of_bounds_policy='{policy}'.*cannot follow"):
        _run(define)

    def inside() -> Any:  # a window inside the image needs no policy: targets move
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        mask = _typed([np.ones((20, 30, 1), np.uint8)] * 2, "mask", "HWC")
        return tuple(
            fn.slice(
                [images, mask], rel_start=(0.5, 0), rel_shape=(0.5, 1), out_of_bounds_policy=policy
            )
        )

    assert _run(inside)[1].at(0).shape == (20, 15, 1)


def test_multi_paste_refuses_masks_and_boxes_at_build() -> None:
    for kind in ("mask", "boxes"):
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            image = fn.external_source(
                source=lambda: [np.zeros((8, 8, 3), np.uint8)] * 2, batch=True, layout="HWC"
            )
            sample = np.zeros((8, 8, 1), np.uint8) if kind == "mask" else np.zeros((1, 4))
            target = _typed([sample] * 2, kind)
            pipe.set_outputs(*fn.multi_paste([image, target], in_ids=[1, 0]))
        with pytest.raises(GraphError, match=rf"multi_paste does not move {kind}"):
            pipe.build()


def test_pad_alone_pads_boxes_and_labels_as_tensors_as_dali_does() -> None:
    boxes = [np.array([[0.1, 0.1, 0.2, 0.2]], np.float32), np.zeros((3, 4), np.float32)]
    labels = [np.array([5], np.int32), np.array([1, 2, 3], np.int32)]

    def define() -> Any:
        alone = fn.pad(_typed(boxes, "boxes"), fill_value=-1)
        together = fn.pad([_typed(boxes, "boxes"), _typed(labels, "labels")], fill_value=-1)
        return alone, *together

    out_boxes, set_boxes, set_labels = _run(define)
    expected = [[0.1, 0.1, 0.2, 0.2], [-1] * 4, [-1] * 4]
    np.testing.assert_allclose(out_boxes.at(0), expected)
    np.testing.assert_allclose(set_boxes.at(0), expected)
    assert set_labels.at(0).tolist() == [5, -1, -1] and out_boxes.kind == kinds.BOXES


def test_a_box_on_the_window_edge_is_dropped_in_relative_and_absolute_form_alike() -> None:
    image = np.zeros((75, 75, 3), np.uint8)
    absolute = np.array([[37, 39, 55, 71]], np.float32)
    relative = absolute / 75

    def define() -> Any:
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        a = _typed([absolute] * 2, kinds.boxes("ltrb", relative=False))
        r = _typed([relative] * 2, kinds.boxes("ltrb", relative=True))
        return tuple(fn.crop([images, a, r], crop=(35, 38), crop_pos_y=0.1))  # y 4..39

    _, out_absolute, out_relative = _run(define)
    assert len(out_absolute.at(0)) == 0
    assert len(out_relative.at(0)) == 0


def test_mask_values_survive_every_window_operator() -> None:
    masks = _masks(9, SIZES)
    images = _photos(SIZES)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        a = fn.crop([image, mask], crop=(50, 50), out_of_bounds_policy="pad")
        b = fn.slice(a, rel_start=(0.1, 0.1), rel_shape=(0.8, 0.8))
        c = fn.pad(b, axis_names="HW", align=8)
        d = fn.paste(c, ratio=1.5, fill_value=3)
        return tuple(fn.crop_mirror_normalize(d, mirror=1, dtype=types.UINT8))

    out_images, out_masks = _run(define, batch=3)
    for i in range(3):
        assert set(np.unique(out_masks.at(i))) <= set(range(5))
        assert out_masks.at(i).shape[:2] == out_images.at(i).shape[1:]


# DALI 2.4's fn.bbox_paste (CPU) of these boxes with these arguments, stored (DALI's own
# formula, x / ratio + paste_x * (ratio - 1) / ratio, ignores the truncation of the canvas and
# of the position that its fn.paste makes, so it misses the pasted image by up to a pixel).
DALI_BBOX_PASTE = [
    [[0.16666669, 0.43333334, 0.43333334, 0.70000005], [0.10000001, 0.3, 0.7666667, 0.9666667]],
    [[0.55, 0.1, 0.75, 0.3], [0.5, 0.0, 1.0, 0.5]],
    [
        [0.26474452, 0.26751825, 0.5567153, 0.5594891],
        [0.19175182, 0.12153284, 0.92167884, 0.85145986],
    ],
]


def test_paste_moves_boxes_within_a_pixel_of_dalis_bbox_paste_and_onto_the_image() -> None:
    ratios, xs, ys = [1.5, 2.0, 1.37], [0.3, 1.0, 0.71], [0.9, 0.0, 0.45]
    boxes = np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0]], np.float32)
    images = [np.full((h, w, 3), 128, np.uint8) for h, w in SIZES]

    def column(values: list[float]) -> Any:
        return fn.external_source(source=lambda: [np.float32(v) for v in values], batch=True)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        b = _typed([boxes] * 3, "boxes")
        return tuple(
            fn.paste(
                [image, b],
                ratio=column(ratios),
                paste_x=column(xs),
                paste_y=column(ys),
                fill_value=0,
            )
        )

    out_images, out_boxes = _run(define, batch=3)
    for i in range(3):
        canvas = out_images.at(i)
        height, width = canvas.shape[:2]
        scale = np.array([width, height, width, height])
        moved = out_boxes.at(i).astype(np.float64) * scale
        np.testing.assert_allclose(moved, np.array(DALI_BBOX_PASTE[i]) * scale, atol=1.0)
        rows, cols = np.nonzero(canvas[..., 0])
        np.testing.assert_allclose(
            moved[1], [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1], atol=1e-3
        )


@pytest.mark.parametrize("together", [True, False])
def test_hw_int32_masks_through_paste_and_crop_mirror_normalize(together: bool) -> None:
    images = [np.zeros((20, 30, 3), np.uint8)] * 2
    mask = np.arange(600, dtype=np.int32).reshape(20, 30)

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        m = _typed([mask] * 2, "mask")  # H×W, no layout, no channel axis
        first = [image, m] if together else m
        pasted = fn.paste(first, ratio=2.0, paste_x=1.0, paste_y=0.0, fill_value=5)
        cropped = fn.crop_mirror_normalize(first, crop=(10, 12), mirror=1, mean=100.0)
        return (pasted[-1], cropped[-1]) if together else (pasted, cropped)

    pasted, cropped = _run(define)
    expected = np.zeros((40, 60), np.int32)
    expected[:20, 30:] = mask
    np.testing.assert_array_equal(pasted.at(0), expected)
    np.testing.assert_array_equal(cropped.at(1), mask[5:15, 9:21][:, ::-1])
    assert cropped.at(1).dtype == np.int32 and cropped.kind == kinds.MASK
