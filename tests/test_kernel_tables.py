"""Every (operator, device, kind) entry of the registry's kernel tables runs (issue 26 §1).

The tables (``SampleOperator.kernel_table``, read through ``OperatorSchema.kernel_kinds``) say
which kernel takes a batch of which kind on which device; the geometric operators add a rule
per target kind (``augkit/operators/geometric/targets.py``). Each pair is run here on its own,
``fn.<op>([images, target], ...)``, and must give exactly what the same target gives in one
call with every kind (the consistency of that call is ``tests/targets_check.py``'s, per
operator in ``tests/operators/test_targets_*.py``), with the kind kept. The GPU entries run on
``tests/fake_cupy`` (CuPy's rules on NumPy), so they run on every machine.

A new operator that moves targets must get a row in ``CALLS``: the test of the registry's
movers fails until it has one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import fn, kinds, pipeline_def
from augkit.operators.registry import REGISTRY, TARGET_KINDS
from tests.targets_check import scene

# Deterministic arguments (no fn.random draws: the pair's call and the every-kind call must
# make the same window; random_resized_crop draws its own from its seed).
_WARP = [[0.9, 0.1, 5.0], [-0.08, 1.0, 8.0]]
CALLS: dict[str, dict[str, Any]] = {
    "crop": {"crop": (60, 50), "crop_pos_x": 0.3, "crop_pos_y": 0.6},
    "crop_mirror_normalize": {"crop": (60, 50), "crop_pos_x": 0.2, "mirror": 1},
    "experimental.warp_perspective": {
        "matrix": [[0.9, 0.1, 5.0], [-0.08, 1.0, 8.0], [0.0002, 0.0, 1.0]],
        "fill_value": 0,
    },
    "flip": {"horizontal": 1, "vertical": 1},
    "pad": {"fill_value": 0, "align": (64, 64), "axes": (0, 1)},
    "paste": {"ratio": 1.5, "paste_x": 0.3, "paste_y": 0.7, "fill_value": 0},
    "random_resized_crop": {"size": (120, 160), "seed": 42},
    "resize": {"resize_x": 150, "resize_y": 100},
    "rotate": {"angle": 30.0, "fill_value": 0},
    "slice": {"rel_start": (0.1, 0.2), "rel_shape": (0.6, 0.7)},
    "warp_affine": {"matrix": [v for row in _WARP for v in row], "fill_value": 0},
}

# Pairs whose transform leaves the target as it is: padding at the end keeps absolute
# coordinates; a resize keeps relative ones.
_UNMOVED = {("pad", "vertices"), ("resize", "boxes"), ("resize", "keypoints")}

BATCH = 3
# What each target kind is made of in a scene (vertices: the corners, absolute; polygons: one
# polygon of the four vertices).
_KINDS: dict[str, Any] = {
    "mask": "mask",
    "boxes": kinds.boxes("ltrb", relative=True),
    "keypoints": kinds.keypoints(relative=True),
    "vertices": kinds.vertices(relative=False),
    "polygons": "polygons",
    "labels": "labels",
}


def _scenes() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(4)
    scenes = [scene(i, rng) for i in range(BATCH)]
    for s in scenes:
        height, width = s["image"].shape[:2]
        s["vertices"] = s["keypoints"] * np.array([width, height], np.float32)
        s["polygons"] = np.array([[0, 0, 4]], np.int32)
    return scenes


def _pairs() -> list[tuple[str, str, str]]:
    return [
        (name, device, kind)
        for name, schema in sorted(REGISTRY.items())
        if schema.moves_targets
        for device, table_kinds in sorted(schema.kernel_kinds.items())
        for kind in table_kinds
        if kind in TARGET_KINDS
    ]


def test_every_operator_that_moves_targets_has_a_call_here():
    movers = {name for name, schema in REGISTRY.items() if schema.moves_targets}
    assert movers == set(CALLS), "give the new operator a row in CALLS"
    # Every mover's table has a rule for every target kind, on each device it has kernels for.
    for name in movers:
        for device, table_kinds in REGISTRY[name].kernel_kinds.items():
            assert set(TARGET_KINDS) <= set(table_kinds), (name, device)


def _run(name: str, device: str, kind: str, scenes: list[dict[str, np.ndarray]]) -> tuple:
    """(the target out of ``fn.<name>([images, target(, boxes)])``, the same target out of one
    call with every kind) for the scenes."""
    operator: Any = fn
    for part in name.split("."):
        operator = getattr(operator, part)

    def source(key: str, kind: Any, layout: str | None = None) -> Any:
        node = fn.external_source(
            source=lambda: [s[key] for s in scenes], batch=True, layout=layout
        )
        typed = fn.python_function(node, function=lambda x: x, kind=kind)
        return typed.gpu() if device == "gpu" else typed

    def define() -> Any:
        images = fn.external_source(
            source=lambda: [s["image"] for s in scenes], batch=True, layout="HWC"
        )
        images = images.gpu() if device == "gpu" else images
        target = source(kind, _KINDS[kind], "HWC" if kind == "mask" else None)
        pair = [images, target]
        if kind == "labels":  # labels follow their boxes
            pair.insert(1, source("boxes", _KINDS["boxes"]))
        alone = operator(pair, **CALLS[name])[-1]
        every = [images] + [
            source(k, _KINDS[k], "HWC" if k == "mask" else None)
            for k in ("mask", "boxes", "keypoints", "vertices", "polygons", "labels")
        ]
        together = operator(every, **CALLS[name])
        return alone, together[1 + list(_KINDS).index(kind)]

    pipe = pipeline_def(define, batch_size=BATCH, num_threads=1, device_id=0, seed=3)()
    try:
        alone, together = pipe.run()
    finally:
        pipe.close()
    return alone, together


@pytest.mark.parametrize("name,device,kind", _pairs())
def test_each_kernel_of_the_table_runs_on_its_own(name, device, kind, request):
    if device == "gpu":
        request.getfixturevalue("fake_gpu")
    scenes = _scenes()
    alone, together = _run(name, device, kind, scenes)
    assert alone.kind.name == kind and together.kind.name == kind
    assert alone.device == device
    for i in range(BATCH):
        got, expected = alone.as_cpu().at(i), together.as_cpu().at(i)
        np.testing.assert_array_equal(got, expected)
        if kind == "polygons":
            np.testing.assert_array_equal(got, scenes[i]["polygons"])  # passed through
        elif kind in ("keypoints", "vertices"):
            assert got.shape == scenes[i][kind].shape  # never dropped
        elif kind == "mask":
            assert got.dtype == np.uint8 and set(np.unique(got)) <= {0, 3}
    if kind not in ("polygons", "labels") and (name, kind) not in _UNMOVED:
        # the rule moved something
        moved = [
            alone.as_cpu().at(i).shape != scenes[i][kind].shape
            or not np.array_equal(alone.as_cpu().at(i), scenes[i][kind])
            for i in range(BATCH)
        ]
        assert any(moved), "the target came out as it went in"


def test_the_registry_says_which_operators_move_pixels_or_coordinates():
    """What the viewer's overlay links read (``augkit.overlay_links``), declared by each
    operator in its own module and read through the registry, never listed by the viewer."""
    moving = {name for name, schema in REGISTRY.items() if schema.moves_geometry}
    assert set(CALLS) <= moving  # every operator with target rules
    assert moving - set(CALLS) >= {
        "decoders.image_crop",
        "decoders.image_random_crop",
        "decoders.image_slice",
        "bb_flip",
        "coord_flip",
        "bbox_rotate",
        "coord_transform",
        "bbox_paste",
        "random_bbox_crop",
        "water",
        "sphere",
        "jitter",
        "multi_paste",
    }
    for still in ("brightness", "hsv", "cast", "decoders.image", "normalize", "gaussian_blur"):
        assert not REGISTRY[still].moves_geometry, still
    assert {n for n, s in REGISTRY.items() if s.draws_window} == {"random_bbox_crop"}
    resize = REGISTRY["resize"]
    assert resize.keeps_relative_coordinates({"resize_x", "resize_y"})
    assert not resize.keeps_relative_coordinates({"resize_x", "roi_start", "roi_end"})
    assert not REGISTRY["rotate"].keeps_relative_coordinates({"angle"})


def test_boxes_move_with_masks_alone_through_paste():
    """A rule checks only the node's extra inputs, never the image it takes its geometry from:
    fn.paste([masks, boxes]) without images moves the boxes by the masks' canvas (the boxes
    node used to check the 1-channel mask as paste's 3-channel image and fail)."""
    mask = np.zeros((8, 10, 1), np.uint8)
    mask[2:4, 3:6] = 3
    box = np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)

    def define() -> Any:
        masks = fn.python_function(
            fn.external_source(source=lambda: [mask] * 2, batch=True, layout="HWC"),
            function=lambda x: x,
            kind="mask",
        )
        boxes = fn.python_function(
            fn.external_source(source=lambda: [box] * 2, batch=True),
            function=lambda x: x,
            kind=_KINDS["boxes"],
        )
        return tuple(fn.paste([masks, boxes], ratio=2.0, fill_value=0))

    pipe = pipeline_def(define, batch_size=2, num_threads=1, device_id=None, seed=1)()
    try:
        pasted_masks, pasted_boxes = pipe.run()
    finally:
        pipe.close()
    # A 10×8 mask on a 20×16 canvas, centred: shifted by (5, 4) pixels.
    np.testing.assert_array_equal(pasted_masks.at(0)[6:8, 8:11], mask[2:4, 3:6])
    np.testing.assert_allclose(pasted_boxes.at(0), [[0.3, 0.3, 0.5, 0.5]], atol=1e-6)
