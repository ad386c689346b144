"""Masks, boxes, keypoints and labels moved with their images by rotate, warp_affine,
experimental.warp_perspective, resize and random_resized_crop (issue 13; the mechanism is
augkit/operators/geometric/targets.py, the shared check tests/targets_check.py).

Two kinds of test:

- consistency: a real photo with a drawn rectangle and its mask / boxes / keypoints / labels go
  through one call with random per-sample arguments, for each mode of the operator
  (``check_operator``; ``_check_warp`` where the matrix must depend on each photo's size);
- exact: a mask equals the image kernel's nearest-neighbour output on that mask (the same
  window, drawn once), keypoints equal OpenCV's ``transform``/``perspectiveTransform`` of the
  points, label values survive a resize, boxes are dropped with their labels, a box without
  its image is refused with what to do.

Rotations that cut a rectangle at the image's edge are kept out of the consistency check (its
box is the clipped bounding box of the moved corners, which is larger than what stays visible
of the rectangle, by the documented rule): the warps are chosen to keep the picture inside.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np
import pytest

from augkit import fn, kinds, pipeline_def, types
from augkit.errors import AugkitError, OperatorError
from augkit.operators.geometric.warp_affine import invert_affine
from tests.targets_check import check_agreement, check_operator, run_operator, scene

# --- helpers -------------------------------------------------------------------------------


def _typed(samples: list[np.ndarray], kind: Any, layout: str | None = None) -> Any:
    node = fn.external_source(source=lambda: samples, batch=True, layout=layout)
    return fn.python_function(node, function=lambda x: x, kind=kind)


def _run(define: Any, batch: int, debug: bool = False, seed: int = 3) -> Any:
    pipe = pipeline_def(define, batch_size=batch, num_threads=2, device_id=None, seed=seed)(
        debug=debug
    )
    try:
        return pipe.run()
    finally:
        pipe.close()


def _scenes(seed: int, batch: int = 6) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [scene(seed * batch + i, rng) for i in range(batch)]


def _scene_inputs(scenes: list[dict[str, np.ndarray]]) -> list[Any]:
    images = fn.external_source(source=lambda: [s["image"] for s in scenes], batch=True)
    images = fn.reshape(images, layout="HWC")
    return [
        images,
        _typed([s["mask"] for s in scenes], "mask", "HWC"),
        _typed([s["boxes"] for s in scenes], kinds.boxes("ltrb", relative=True)),
        _typed([s["boxes_abs"] for s in scenes], kinds.boxes("xywh", relative=False)),
        _typed([s["keypoints"] for s in scenes], kinds.keypoints(relative=True)),
        _typed([s["labels"] for s in scenes], "labels"),
    ]


def _agreement(outputs: tuple, batch: int) -> list[str]:
    keys = ["image", "mask", "boxes", "boxes_abs", "keypoints", "labels"]
    problems = []
    for i in range(batch):
        sample = {k: np.asarray(b.at(i)) for k, b in zip(keys, outputs, strict=True)}
        sample["image_layout"] = np.array(outputs[0].layout())
        problem = check_agreement(sample)
        if problem:
            problems.append(f"sample {i}: {problem}")
    return problems


def _inside_matrix(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """A source-to-destination 2x3 matrix (rotation, scale, shear) that keeps the whole
    ``width``x``height`` picture inside an output of the same size."""
    angle = math.radians(rng.uniform(-35, 35))
    scale = rng.uniform(0.45, 0.6)
    shear = rng.uniform(-0.1, 0.1)
    linear = scale * np.array(
        [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    )
    linear = linear @ np.array([[1.0, shear], [0.0, 1.0]])
    corners = np.array([[0, 0], [width, 0], [0, height], [width, height]], np.float64)
    moved = corners @ linear.T
    lo, hi = moved.min(0), moved.max(0)
    free = np.array([width, height]) - (hi - lo)
    assert (free > 0).all()
    shift = -lo + free * rng.uniform(0.1, 0.9, 2)
    return np.concatenate([linear, shift[:, None]], axis=1).astype(np.float32)


def _inside_homography(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """A source-to-destination homography that keeps the picture inside (its four corners
    pulled in by up to a fifth of the sides)."""
    src = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)
    pull = rng.uniform(0.02, 0.2, (4, 2)) * [width, height]
    dst = src + pull * np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]])
    return cv2.getPerspectiveTransform(src, dst.astype(np.float32)).astype(np.float32)


def _check_warp(name: str, matrix_of: Any, as_input: bool, debug: bool = False, **args: Any):
    """check_agreement for a warp whose matrix depends on each photo's size (``matrix_of(w,
    h, rng)``), given as the second positional input or as a per-sample ``matrix``."""
    problems = []
    for seed in range(3):
        scenes = _scenes(seed)
        rng = np.random.default_rng(100 + seed)
        mats = [matrix_of(s["image"].shape[1], s["image"].shape[0], rng) for s in scenes]
        operator = fn.experimental.warp_perspective if "perspective" in name else fn.warp_affine

        def define(scenes: Any = scenes, mats: Any = mats, operator: Any = operator) -> Any:
            inputs = _scene_inputs(scenes)
            mtx = fn.external_source(source=lambda: mats, batch=True)
            if as_input:
                return tuple(operator(inputs, mtx, **args))
            return tuple(operator(inputs, matrix=mtx, **args))

        outputs = _run(define, len(scenes), debug=debug, seed=seed)
        problems += [f"seed {seed}, {p}" for p in _agreement(outputs, len(scenes))]
    assert not problems, f"fn.{name}: " + "; ".join(problems)


def _label_map(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Blocks of classes 0/1/2 (a label map with regions, not noise)."""
    small = rng.integers(0, 3, (max(2, shape[0] // 6), max(2, shape[1] // 6)))
    big = np.kron(small, np.ones((6, 6), np.int64))[: shape[0], : shape[1]]
    big = np.pad(big, ((0, shape[0] - big.shape[0]), (0, shape[1] - big.shape[1])), mode="edge")
    return big.reshape(shape).astype(dtype)


# --- rotate --------------------------------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
def test_rotate_moves_every_kind_with_one_angle(debug: bool) -> None:
    check_operator(
        "rotate",
        lambda fn: {"angle": fn.random.uniform(range=(-40, 40)), "fill_value": 0},
        seeds=range(3) if not debug else range(1),
        debug=debug,
    )


def test_rotate_with_size_and_nearest_moves_every_kind() -> None:
    check_operator(
        "rotate",
        lambda fn: {
            "angle": fn.random.uniform(range=(-180, 180)),
            "size": (700, 650),
            "fill_value": 0,
            "interp_type": types.INTERP_NN,
        },
    )


def test_rotate_keep_size_moves_every_kind() -> None:
    # Small angles: the rectangles stay inside the kept canvas.
    check_operator(
        "rotate",
        lambda fn: {
            "angle": fn.random.uniform(range=(-4, 4)),
            "keep_size": True,
            "fill_value": 0,
        },
    )


def test_rotate_by_90_turns_masks_boxes_and_keypoints_exactly() -> None:
    rng = np.random.default_rng(0)
    masks = [_label_map(rng, (12, 18), np.int32), _label_map(rng, (7, 5), np.int32)]
    images = [np.repeat(m[..., None], 3, axis=2).astype(np.uint8) * 80 for m in masks]
    boxes = [np.array([[1, 2, 5, 4]], np.float32), np.array([[0, 0, 5, 7]], np.float32)]
    points = [np.array([[1.0, 2.0], [17.5, 0.0]], np.float32), np.array([[2, 3]], np.float32)]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        return tuple(
            fn.rotate(
                [
                    image,
                    _typed(masks, "mask", "HW"),
                    _typed(boxes, kinds.boxes("ltrb", relative=False)),
                    _typed(points, kinds.keypoints(relative=False)),
                ],
                angle=90,
            )
        )

    out_image, out_mask, out_boxes, out_points = _run(define, 2)
    for i in range(2):
        width = masks[i].shape[1]
        np.testing.assert_array_equal(out_mask.at(i), np.rot90(masks[i]))
        np.testing.assert_array_equal(out_image.at(i), np.rot90(images[i]))
        assert out_mask.at(i).dtype == np.int32
        # Counter-clockwise on screen: (x, y) -> (y, W - x).
        left, top, right, bottom = boxes[i][0]
        expected = [[top, width - right, bottom, width - left]]
        np.testing.assert_allclose(out_boxes.at(i), expected, atol=1e-4)
        p = points[i]
        np.testing.assert_allclose(
            out_points.at(i), np.stack([p[:, 1], width - p[:, 0]], 1), atol=1e-4
        )
    assert out_mask.kind == kinds.MASK and out_boxes.kind.name == "boxes"


def test_rotate_moves_a_bool_mask_and_follows_the_nearest_image_kernel() -> None:
    rng = np.random.default_rng(2)
    masks = [_label_map(rng, (60, 80), np.uint8) > 0 for _ in range(3)]
    as_images = [np.repeat(m[..., None].astype(np.uint8), 3, axis=2) for m in masks]

    def define() -> Any:
        image = fn.external_source(source=lambda: as_images, batch=True, layout="HWC")
        angle = fn.random.uniform(range=(-60, 60))
        return tuple(
            fn.rotate(
                [image, _typed(masks, "mask", "HW")],
                angle=angle,
                fill_value=0,
                interp_type=types.INTERP_NN,
            )
        )

    out_image, out_mask = _run(define, 3)
    for i in range(3):
        mask, image = out_mask.at(i), out_image.at(i)
        assert mask.dtype == np.bool_ and mask.shape == image.shape[:2]
        # The image kernel rounds DALI's float32 running sums; the mask the exact points.
        assert (mask == image[..., 0].astype(bool)).mean() > 0.995


def test_rotate_fill_value_none_moves_the_targets_the_same_way() -> None:
    scenes = _scenes(4, batch=3)

    def define(fill: Any) -> Any:
        def body() -> Any:
            return tuple(
                fn.rotate(_scene_inputs(scenes), angle=25, keep_size=True, fill_value=fill)
            )

        return body

    clamped = _run(define(None), 3)
    filled = _run(define(0), 3)
    for k in range(1, 6):
        for i in range(3):
            np.testing.assert_array_equal(clamped[k].at(i), filled[k].at(i))


def test_an_absolute_box_without_its_image_is_refused_with_the_input_set_form() -> None:
    boxes = [np.array([[1, 2, 5, 4]], np.float32)]

    def define() -> Any:
        return fn.rotate(_typed(boxes, kinds.boxes("ltrb", relative=False)), angle=10)

    pipe = pipeline_def(define, batch_size=1, num_threads=1, device_id=None)()
    try:
        with pytest.raises(OperatorError, match=r"fn\.rotate\(\[images, boxes\]"):
            pipe.run()
        with pytest.raises(OperatorError, match="without the image"):
            pipe.run()  # the pipeline still answers, with the same error
    finally:
        pipe.close()


# --- warp_affine ---------------------------------------------------------------------------


@pytest.mark.parametrize("as_input", [False, True])
def test_warp_affine_source_to_destination_moves_every_kind(as_input: bool) -> None:
    _check_warp("warp_affine", _inside_matrix, as_input, inverse_map=False, fill_value=0)


def test_warp_affine_destination_to_source_moves_every_kind() -> None:
    def inverse(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
        forward = _inside_matrix(width, height, rng).astype(np.float64)
        return invert_affine(forward).astype(np.float32)

    _check_warp("warp_affine", inverse, as_input=False, fill_value=0)
    _check_warp(
        "warp_affine", inverse, as_input=True, debug=True, fill_value=0, interp_type=types.INTERP_NN
    )


def test_warp_affine_with_size_moves_every_kind() -> None:
    def doubled(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
        return (_inside_matrix(width, height, rng) * 2).astype(np.float32)  # into 2x the size

    problems = []
    for seed in range(2):
        scenes = _scenes(seed)
        rng = np.random.default_rng(seed)
        mats = [doubled(s["image"].shape[1], s["image"].shape[0], rng) for s in scenes]
        sizes = [np.array(s["image"].shape[:2], np.float32) * 2 for s in scenes]

        def define(scenes: Any = scenes, mats: Any = mats, sizes: Any = sizes) -> Any:
            mtx = fn.external_source(source=lambda: mats, batch=True)
            size = fn.external_source(source=lambda: sizes, batch=True)
            return tuple(
                fn.warp_affine(
                    _scene_inputs(scenes), matrix=mtx, size=size, inverse_map=False, fill_value=0
                )
            )

        problems += _agreement(_run(define, len(scenes)), len(scenes))
    assert not problems, problems


def test_warp_affine_keypoints_equal_opencv_transform() -> None:
    rng = np.random.default_rng(5)
    images = [np.zeros((50, 70, 3), np.uint8), np.zeros((33, 21, 3), np.uint8)]
    points = [rng.uniform(-10, 80, (6, 2)).astype(np.float32) for _ in images]
    mats = [_inside_matrix(70, 50, rng), _inside_matrix(21, 33, rng)]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mtx = fn.external_source(source=lambda: mats, batch=True)
        kp = _typed(points, kinds.keypoints(relative=False))
        return tuple(fn.warp_affine([image, kp], mtx, inverse_map=False))

    _, out_points = _run(define, 2)
    for i in range(2):
        expected = cv2.transform(points[i][None].astype(np.float64), mats[i].astype(np.float64))
        np.testing.assert_allclose(out_points.at(i), expected[0], rtol=1e-4, atol=1e-3)


def test_warp_affine_mask_by_whole_pixels_is_the_nearest_image_warp_exactly() -> None:
    rng = np.random.default_rng(6)
    masks = [_label_map(rng, (40, 30, 1), np.uint8) for _ in range(2)]
    mats = [np.array([[1, 0, 7], [0, 1, -4]], np.float32), np.array([[0, 1, 0], [1, 0, 3]], "f4")]

    def define() -> Any:
        image = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        mtx = fn.external_source(source=lambda: mats, batch=True)
        mask = _typed(masks, "mask", "HWC")
        return tuple(fn.warp_affine([image, mask], mtx, interp_type=types.INTERP_NN, fill_value=0))

    out_image, out_mask = _run(define, 2)
    for i in range(2):
        np.testing.assert_array_equal(out_mask.at(i), out_image.at(i))
        assert set(np.unique(out_mask.at(i))) <= {0, 1, 2}


def test_warp_affine_singular_matrix_names_the_sample_for_images_and_boxes() -> None:
    images = [np.zeros((20, 30, 3), np.uint8)] * 2
    boxes = [np.array([[1, 1, 5, 5]], np.float32)] * 2
    mats = [np.array([[1, 0, 0], [0, 1, 0]], "f4"), np.array([[1, 2, 0], [2, 4, 0]], "f4")]

    def define(with_image: bool) -> Any:
        def body() -> Any:
            image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
            mtx = fn.external_source(source=lambda: mats, batch=True)
            box = _typed(boxes, kinds.boxes("ltrb", relative=False))
            sets = [image, box] if with_image else [box, image]
            return tuple(fn.warp_affine(sets, mtx, inverse_map=False))

        return body

    for with_image in (True, False):  # the image node fails first, or the boxes node
        pipe = pipeline_def(define(with_image), batch_size=2, num_threads=1, device_id=None)()
        try:
            for _ in range(2):  # and again: the pipeline still answers
                with pytest.raises(OperatorError, match=r"sample #1.*singular"):
                    pipe.run()
        finally:
            pipe.close()


def test_an_image_given_as_the_matrices_is_refused_with_what_they_must_be() -> None:
    images = [np.zeros((20, 30, 3), np.uint8)]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        return fn.warp_affine(image, _typed(images, "image", "HWC"))

    pipe = pipeline_def(define, batch_size=1, num_threads=1, device_id=None)()
    try:
        # When it runs (MatrixSpec, until the build checks a node's own inputs only).
        with pytest.raises(AugkitError, match="must hold one 2x3 float matrix per sample"):
            pipe.run()
    finally:
        pipe.close()


# --- experimental.warp_perspective ---------------------------------------------------------


@pytest.mark.parametrize("as_input", [False, True])
def test_warp_perspective_source_to_destination_moves_every_kind(as_input: bool) -> None:
    _check_warp("experimental.warp_perspective", _inside_homography, as_input, inverse_map=False)


@pytest.mark.parametrize("pixel_origin", ["corner", "center"])
def test_warp_perspective_destination_to_source_moves_every_kind(pixel_origin: str) -> None:
    def inverse(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
        forward = _inside_homography(width, height, rng).astype(np.float64)
        return (np.linalg.inv(forward) * 3).astype(np.float32)  # a scaled homography: the same

    _check_warp("experimental.warp_perspective", inverse, as_input=False, pixel_origin=pixel_origin)


def test_warp_perspective_keypoints_equal_opencv_and_masks_its_nearest_warp() -> None:
    rng = np.random.default_rng(8)
    masks = [_label_map(rng, (48, 64, 1), np.uint8), _label_map(rng, (30, 30, 1), np.uint8)]
    points = [rng.uniform(0, 60, (5, 2)).astype(np.float32) for _ in masks]
    mats = [_inside_homography(64, 48, rng), _inside_homography(30, 30, rng)]

    def define() -> Any:
        image = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        mtx = fn.external_source(source=lambda: mats, batch=True)
        sets = [image, _typed(masks, "mask", "HWC"), _typed(points, kinds.keypoints(False))]
        return tuple(
            fn.experimental.warp_perspective(
                sets, mtx, inverse_map=False, interp_type=types.INTERP_NN, pixel_origin="center"
            )
        )

    out_image, out_mask, out_points = _run(define, 2)
    for i in range(2):
        # pixel_origin="center": OpenCV's coordinates, whose pixel centres are whole numbers.
        shifted = cv2.perspectiveTransform(points[i][None].astype(np.float64) - 0.5, mats[i])
        np.testing.assert_allclose(out_points.at(i), shifted[0] + 0.5, rtol=1e-4, atol=1e-3)
        assert (out_mask.at(i) == out_image.at(i)).mean() > 0.99  # OpenCV's fixed-point taps


@pytest.mark.parametrize("border_mode", ["replicate", "reflect", "wrap"])
def test_warp_perspective_targets_do_not_depend_on_the_border_mode(border_mode: str) -> None:
    scenes = _scenes(5, batch=3)
    matrix = [1.1, 0.05, -4, 0.02, 1.05, -3, 0.0004, 0.0002, 1]

    def define(mode: str) -> Any:
        def body() -> Any:
            return tuple(
                fn.experimental.warp_perspective(
                    _scene_inputs(scenes), matrix=matrix, border_mode=mode
                )
            )

        return body

    constant, other = _run(define("constant"), 3), _run(define(border_mode), 3)
    for k in range(1, 6):
        for i in range(3):
            np.testing.assert_array_equal(constant[k].at(i), other[k].at(i))
    assert not _agreement(constant, 3)  # the picture stays inside: the constant border agrees


# --- resize --------------------------------------------------------------------------------

_RESIZE_MODES = {
    "resize_shorter": lambda fn: {"resize_shorter": fn.random.uniform(range=(40, 300))},
    "resize_longer": lambda fn: {"resize_longer": fn.random.uniform(range=(40, 300))},
    "resize_x": lambda fn: {"resize_x": fn.random.uniform(range=(40, 300))},
    "resize_y": lambda fn: {"resize_y": fn.random.uniform(range=(40, 300))},
    "stretch": lambda fn: {
        "resize_x": fn.random.uniform(range=(40, 300)),
        "resize_y": fn.random.uniform(range=(40, 300)),
        "mode": "stretch",
    },
    "not_larger": lambda fn: {"size": (150, 200), "mode": "not_larger"},
    "not_smaller": lambda fn: {"size": (150, 200), "mode": "not_smaller", "max_size": 260},
    "size_nn": lambda fn: {"size": (97, 131), "interp_type": types.INTERP_NN},
    "no_subpixel": lambda fn: {"resize_shorter": 77.3, "subpixel_scale": False},
    "flipped": lambda fn: {"resize_x": -123.0, "resize_y": 90.0},
    "roi": lambda fn: {
        "size": (120, 120),
        "roi_start": fn.random.uniform(range=(0, 60), shape=2),
        "roi_end": fn.random.uniform(range=(70, 140), shape=2),
    },
    "roi_relative": lambda fn: {
        "resize_shorter": 150,
        "roi_start": fn.random.uniform(range=(0.0, 0.4), shape=2),
        "roi_end": fn.random.uniform(range=(0.6, 1.0), shape=2),
        "roi_relative": True,
    },
    "roi_flipped": lambda fn: {
        "size": (100, 160),
        "roi_start": (1.0, 0.9),
        "roi_end": (0.1, 0.0),
        "roi_relative": True,
    },
}


@pytest.mark.parametrize("mode", sorted(_RESIZE_MODES))
def test_resize_moves_every_kind_in_every_mode(mode: str) -> None:
    check_operator("resize", _RESIZE_MODES[mode])


def test_resize_moves_every_kind_in_debug_mode() -> None:
    check_operator("resize", _RESIZE_MODES["roi"], seeds=range(1), debug=True)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.bool_])
def test_resize_keeps_the_label_values_and_equals_opencv_nearest(dtype: Any) -> None:
    rng = np.random.default_rng(9)
    masks = [_label_map(rng, (61, 83), dtype), _label_map(rng, (40, 52), dtype)]
    images = [np.zeros((*m.shape, 3), np.uint8) for m in masks]

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        return tuple(
            fn.resize([image, _typed(masks, "mask", "HW")], size=(37, 150), subpixel_scale=False)
        )

    _, out_mask = _run(define, 2)
    for i in range(2):
        out = out_mask.at(i)
        assert out.dtype == np.dtype(dtype) and out.shape == (37, 150)
        assert set(np.unique(out)) <= set(np.unique(masks[i]))
        # OpenCV's INTER_NEAREST_EXACT: the source pixel of each output centre (Pillow's rule).
        expected = cv2.resize(
            masks[i].astype(np.uint8), (150, 37), interpolation=cv2.INTER_NEAREST_EXACT
        )
        np.testing.assert_array_equal(out.astype(np.uint8), expected)


def test_resize_mask_follows_the_nearest_image_kernel_with_subpixel_scale() -> None:
    rng = np.random.default_rng(10)
    masks = [_label_map(rng, (79, 101, 1), np.uint8) for _ in range(3)]

    def define() -> Any:
        image = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        return tuple(
            fn.resize(
                [image, _typed(masks, "mask", "HWC")],
                resize_shorter=fn.random.uniform(range=(20, 200)),
                interp_type=types.INTERP_NN,
            )
        )

    out_image, out_mask = _run(define, 3)
    for i in range(3):
        assert out_mask.at(i).shape == out_image.at(i).shape
        # DALI's float32 running sums (the image) against the exact points (the mask).
        assert (out_mask.at(i) == out_image.at(i)).mean() > 0.995


def test_resize_roi_drops_the_boxes_it_leaves_out_with_their_labels() -> None:
    images = [np.zeros((100, 200, 3), np.uint8)] * 2
    boxes = [np.array([[10, 10, 40, 40], [150, 60, 190, 90], [90, 40, 130, 60]], np.float32)] * 2
    labels = [np.array([1, 2, 3], np.int32)] * 2

    def define() -> Any:
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        sets = [
            image,
            _typed(boxes, kinds.boxes("ltrb", relative=False)),
            _typed(labels, "labels"),
        ]
        return tuple(fn.resize(sets, size=(50, 50), roi_start=(0, 0), roi_end=(50, 100)))

    _, out_boxes, out_labels = _run(define, 2)
    for i in range(2):
        assert out_labels.at(i).tolist() == [1, 3]
        np.testing.assert_allclose(out_boxes.at(i), [[5, 10, 20, 40], [45, 40, 50, 50]], 1e-5)


def test_resize_of_chw_images_moves_boxes_as_for_hwc() -> None:
    scenes = _scenes(6, batch=3)

    def define(chw: bool) -> Any:
        def body() -> Any:
            inputs = _scene_inputs(scenes)
            if chw:
                inputs[0] = fn.transpose(inputs[0], perm=[2, 0, 1])
            return tuple(fn.resize(inputs, resize_x=137.4))

        return body

    hwc, chw = _run(define(False), 3), _run(define(True), 3)
    assert chw[0].layout() == "CHW"
    for k in range(1, 6):
        for i in range(3):
            np.testing.assert_array_equal(hwc[k].at(i), chw[k].at(i))
    assert not _agreement(chw, 3)


# --- random_resized_crop -------------------------------------------------------------------


def test_random_resized_crop_moves_every_kind_with_one_window() -> None:
    check_operator("random_resized_crop", lambda fn: {"size": (120, 160)}, seeds=range(4))


def test_random_resized_crop_moves_every_kind_in_debug_mode_with_a_seed() -> None:
    check_operator(
        "random_resized_crop",
        lambda fn: {"size": (120, 160), "seed": 42},
        seeds=range(2),
        debug=True,
    )


def test_random_resized_crop_moves_every_kind_in_debug_mode() -> None:
    check_operator(
        "random_resized_crop", lambda fn: {"size": (120, 160)}, seeds=range(1), debug=True
    )


def _small_windows(fn: Any) -> dict[str, Any]:
    return {"size": 96, "random_area": (0.02, 0.1), "random_aspect_ratio": (0.5, 2.0)}


def test_random_resized_crop_small_windows_drop_boxes_with_their_labels() -> None:
    check_operator("random_resized_crop", _small_windows, seeds=range(4))
    dropped = 0
    for seed in range(4):
        _, results = run_operator("random_resized_crop", _small_windows, seed=seed)
        dropped += sum(len(r["labels"]) == 0 for r in results)
    assert dropped > 0  # the rule was exercised


def test_random_resized_crop_mask_is_the_images_nearest_window() -> None:
    rng = np.random.default_rng(11)
    masks = [_label_map(rng, (90, 120, 1), np.uint8) for _ in range(4)]

    def define() -> Any:
        image = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        return tuple(
            fn.random_resized_crop(
                [image, _typed(masks, "mask", "HWC")], size=(64, 48), interp_type=types.INTERP_NN
            )
        )

    for seed in range(3):
        out_image, out_mask = _run(define, 4, seed=seed)
        for i in range(4):
            # One window for both; the image path's DALI nearest picks agree with the exact
            # points of the mask but at rare float32 ties.
            assert (out_mask.at(i) == out_image.at(i)).mean() > 0.995, (seed, i)


def test_random_resized_crop_of_chw_images_moves_targets_with_the_window() -> None:
    scenes = _scenes(7, batch=4)

    def define() -> Any:
        inputs = _scene_inputs(scenes)
        inputs[0] = fn.transpose(inputs[0], perm=[2, 0, 1])
        return tuple(fn.random_resized_crop(inputs, size=(100, 90)))

    outputs = _run(define, 4)
    assert outputs[0].layout() == "CHW"
    assert not _agreement(outputs, 4)
