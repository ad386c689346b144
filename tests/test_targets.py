"""The mechanism that moves masks, boxes, keypoints, vertices, polygons and labels with their
images (augkit/operators/geometric/targets.py), through fn.flip; each geometric operator's own
consistency tests are in tests/operators/test_targets_*.py."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import Pipeline, fn, kinds, pipeline_def
from augkit.errors import GraphError, OperatorError
from augkit.operators.geometric.targets import Geometry, move_boxes, move_points, warp_mask
from tests.targets_check import check_operator


def _typed(samples, kind, layout=None):
    node = fn.external_source(source=lambda: samples, batch=True, layout=layout)
    return fn.python_function(node, function=lambda x: x, kind=kind)


def _run(define, batch=2, **kwargs):
    pipe = pipeline_def(define, batch_size=batch, num_threads=1, device_id=None, seed=5)(**kwargs)
    try:
        return pipe.run()
    finally:
        pipe.close()


@pytest.mark.parametrize("debug", [False, True])
def test_flip_moves_every_kind_with_one_draw(debug):
    check_operator(
        "flip",
        lambda fn: {"horizontal": fn.random.coin_flip(), "vertical": fn.random.coin_flip()},
        debug=debug,
    )


def test_a_mask_flips_exactly_as_the_image_kernel_flips_it():
    rng = np.random.default_rng(1)
    masks = [rng.integers(0, 4, (9, 13, 1)).astype(np.uint8) for _ in range(2)]
    images = [np.repeat(m, 3, axis=2) * 60 for m in masks]

    def define():
        image = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        mask = _typed(masks, "mask", "HWC")
        flipped_image, flipped_mask = fn.flip([image, mask], horizontal=1, vertical=1)
        return flipped_image, flipped_mask

    out_images, out_masks = _run(define)
    for i in range(2):
        np.testing.assert_array_equal(out_masks.at(i), masks[i][::-1, ::-1])
        np.testing.assert_array_equal(out_images.at(i)[..., :1] // 60, out_masks.at(i))
    assert out_masks.kind == kinds.MASK


def test_geometry_rules_on_known_numbers():
    # Crop by 10 px, then the boxes: one kept and clipped, one dropped.
    crop = Geometry.scale_translate(1, 1, -10, -10, (100, 50), (40, 30))
    boxes = np.array([[5, 5, 20, 20], [60, 0, 80, 10]], np.float32)
    moved, keep = move_boxes(boxes, kinds.boxes("ltrb", relative=False), crop)
    np.testing.assert_allclose(moved, [[0, 0, 10, 10]])
    assert keep.tolist() == [True, False]
    # xywh relative: the same box.
    rel = np.array([[0.05, 0.1, 0.15, 0.2]], np.float32)
    moved, keep = move_boxes(rel, kinds.boxes("xywh", relative=True), crop)
    np.testing.assert_allclose(moved, [[0, 0, 10 / 40, 5 / 30]], atol=1e-6)
    # Points are moved and never dropped.
    np.testing.assert_allclose(move_points(np.array([[0.0, 0.0]]), crop, False), [[-10, -10]])
    # A 90-degree turn of a 4x2 mask.
    turn = Geometry.affine([[0, 1, 0], [-1, 0, 4]], (4, 2), (2, 4))
    mask = np.arange(8, dtype=np.int32).reshape(2, 4)
    np.testing.assert_array_equal(warp_mask(mask, "HW", turn), np.rot90(mask))


def test_labels_follow_their_boxes_and_pass_through_without_boxes():
    image = np.zeros((10, 20, 3), np.uint8)
    boxes = [np.array([[0.0, 0.0, 0.5, 0.5], [0.6, 0.1, 0.9, 0.2]], np.float32)] * 2
    labels = [np.array([1, 2], np.int32)] * 2

    def define():
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        b = _typed(boxes, "boxes")
        lab = _typed(labels, "labels")
        flipped = fn.flip([images, b, lab], horizontal=1)
        flipped_labels_only = fn.flip([images, lab], horizontal=1)
        return (*flipped, flipped_labels_only[1])

    _, out_boxes, out_labels, passed = _run(define)
    np.testing.assert_allclose(out_boxes.at(0), [[0.5, 0, 1, 0.5], [0.1, 0.1, 0.4, 0.2]], 1e-6)
    assert out_labels.at(0).tolist() == [1, 2] and passed.at(1).tolist() == [1, 2]


def test_vertices_move_and_polygons_pass_through():
    image = np.zeros((10, 20, 3), np.uint8)
    vertices = [np.array([[2.0, 1.0], [5.0, 3.0]], np.float32)] * 2
    polygons = [np.array([[0, 0, 2]], np.int32)] * 2

    def define():
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        v = _typed(vertices, "vertices")
        p = _typed(polygons, "polygons")
        return tuple(fn.flip([images, v, p], horizontal=1))

    _, out_vertices, out_polygons = _run(define)
    np.testing.assert_allclose(out_vertices.at(0), [[18, 1], [15, 3]])  # absolute pixels
    np.testing.assert_array_equal(out_polygons.at(0), polygons[0])
    assert out_vertices.kind.name == "vertices"


def test_relative_boxes_flip_alone_but_absolute_ones_need_their_image():
    boxes = [np.array([[0.1, 0.2, 0.3, 0.4]], np.float32)] * 2

    def alone():
        return fn.flip(_typed(boxes, "boxes"))

    (out,) = _run(alone)
    np.testing.assert_allclose(out.at(0), [[0.7, 0.2, 0.9, 0.4]], atol=1e-6)

    def absolute():
        return fn.flip(_typed(boxes, kinds.boxes("ltrb", relative=False)))

    with pytest.raises(OperatorError, match=r"without the image.*fn.flip\(\[images, boxes\]"):
        _run(absolute)


def test_labels_alone_are_refused_with_what_to_do():
    def define():
        return fn.flip(_typed([np.array([1], np.int32)] * 2, "labels"))

    with pytest.raises(GraphError, match="labels travel with their boxes"):
        _run(define)  # at build
    with pytest.raises(GraphError, match="labels travel with their boxes"):
        _run(define, debug=True)  # as the node is made


def test_a_mask_of_another_size_than_its_image_is_refused_and_the_pipeline_stays_usable():
    sizes = iter([(8, 8), (8, 9)] + [(8, 8)] * 10)
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        images = fn.external_source(
            source=lambda: [np.zeros((8, 8, 3), np.uint8)], batch=True, layout="HWC"
        )
        masks = fn.python_function(
            fn.external_source(source=lambda: [np.zeros(next(sizes), np.uint8)], batch=True),
            function=lambda m: m,
            kind="mask",
        )
        pipe.set_outputs(*fn.flip([images, masks]))
    pipe.run()
    with pytest.raises(OperatorError, match=r"the mask is 9×8 .* its image is 8×8"):
        pipe.run()
    assert pipe.run()[1].at(0).shape == (8, 8)
    pipe.close()


def test_an_operator_that_cannot_move_boxes_refuses_them_at_build():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        boxes = _typed([np.zeros((1, 4), np.float32)], "boxes")
        pipe.set_outputs(fn.sphere(boxes))
    with pytest.raises(GraphError, match=r"\(kind boxes.*does not move boxes"):
        pipe.build()


def test_image_nodes_still_run_in_chains_and_target_nodes_do_not():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        images = fn.external_source(
            source=lambda: [np.zeros((4, 6, 3), np.uint8)] * 2, batch=True, layout="HWC"
        )
        boxes = _typed([np.zeros((1, 4), np.float32)] * 2, "boxes")
        alone = fn.flip(fn.flip(images, name="a"), name="b")
        together = fn.flip([images, boxes], name="c")
        pipe.set_outputs(alone, *together)
    pipe.build()
    chains = [[n.name for n in step] for step in pipe._runner.executor.steps if len(step) > 1]
    assert ["a", "b"] in chains
    assert not any(name.startswith("c") for chain in chains for name in chain)
    pipe.close()


@pytest.mark.gpu
def test_targets_move_with_gpu_images_as_with_cpu_ones(photos):
    # On the GPU the targets are moved on the host by the same code (the images are read for
    # their shapes only), then put on the GPU: the same numbers as device="cpu".
    images = [p[:120, :160] for p in photos[:2]]
    boxes = [np.array([[0.1, 0.2, 0.6, 0.7], [0.5, 0.5, 0.9, 0.95]], np.float32)] * 2
    labels = [np.array([3, 4], np.int32)] * 2
    masks = [(p[:120, :160, 0] > 128).astype(np.uint8) for p in photos[:2]]

    def define(device):
        imgs = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        b, lab = _typed(boxes, "boxes"), _typed(labels, "labels")
        m = _typed(masks, "mask", layout="HW")
        _, rb, rl = fn.rotate([imgs, b, lab], angle=30, device=device)
        _, rm = fn.resize([imgs, m], size=(64, 48), device=device)
        return rb, rl, rm

    cpu = _run(define, device="cpu")
    pipe = pipeline_def(define, batch_size=2, num_threads=1, device_id=0, seed=5)(device="gpu")
    try:
        gpu = pipe.run()
    finally:
        pipe.close()
    for want, got in zip(cpu, gpu, strict=True):
        assert got.device == "gpu" and got.kind == want.kind
        for i in range(2):
            np.testing.assert_array_equal(got.at(i), want.at(i))
