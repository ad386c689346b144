"""Rows of the box and coordinate operators (augkit/operators/boxes/): bb_flip, coord_flip,
coord_transform, bbox_paste. Their inputs are drawn boxes / points (``random.uniform`` with a
shape), so ``input`` is "none"; ``extra_inputs`` gives the fuzzer valid float32 boxes."""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import types
from tests.cases._row import OperatorCase, _uniform


def _boxes(op: Any) -> Any:
    return op("random.uniform")(range=(0.0, 1.0), shape=[3, 4])


def _points(op: Any) -> Any:
    return op("random.uniform")(range=(0.0, 1.0), shape=[5, 2])


def _flag(op: Any) -> Any:
    return op("random.coin_flip")()


def _valid_boxes(k: int, n: int) -> list[np.ndarray]:
    """Valid inputs for the fuzzer: float32 (N, 4) boxes (N = 2, 0, ...), or (N, 2) points
    for coord_flip (a 4-column array is refused there; half the calls get these)."""
    rng = np.random.default_rng(k)
    return [rng.random((2 * (i % 2), 4), dtype=np.float32) for i in range(n)]


def _valid_points(k: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k)
    return [rng.random((i + 1, 2), dtype=np.float32) for i in range(n)]


CASES: dict[str, OperatorCase] = {
    "bb_flip": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("bb_flip")(_boxes(op), horizontal=_flag(op), vertical=_flag(op)),
            op("bb_flip")(_boxes(op), ltrb=True, vertical=1),
        ),
        extra_inputs=_valid_boxes,
    ),
    "coord_flip": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("coord_flip")(
                _points(op), flip_y=_flag(op), center_x=_uniform(op, 0.0, 1.0), layout="xy"
            ),
            op("coord_flip")(_points(op), flip_x=0, flip_y=1, center_y=0.25),
        ),
        extra_inputs=_valid_points,
    ),
    "coord_transform": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("coord_transform")(
                _points(op),
                M=op("random.uniform")(range=(-2.0, 2.0), shape=[3, 2]),
                T=_uniform(op, -1.0, 1.0),
            ),
            op("coord_transform")(_boxes(op), MT=2.0),
        ),
        extra_inputs=_valid_points,
    ),
    "bbox_paste": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("bbox_paste")(
                _boxes(op), ratio=_uniform(op, 1.0, 3.0), paste_x=_uniform(op, 0.0, 1.0)
            ),
            op("bbox_paste")(_boxes(op), ratio=2.0, paste_y=0.0, ltrb=True),
        ),
        required={"ratio": 2.0},
        extra_inputs=_valid_boxes,
    ),
}


def _labels(op: Any, n: int = 3) -> Any:
    return op("cast")(op("random.uniform")(range=(0, 9), shape=[n, 1]), dtype=types.INT32)


def _boxes_and_labels(k: int, n: int) -> list[np.ndarray]:
    """bbox_rotate's inputs for the fuzzer: valid ltrb boxes (k = 0) and their labels (k = 1)."""
    rng = np.random.default_rng(n)
    if k == 0:
        corners = rng.random((n, 3, 2, 2), dtype=np.float32)
        return [np.concatenate([c.min(1), c.max(1)], 1) for c in corners]
    return [np.arange(3, dtype=np.int32).reshape(3, 1) for _ in range(n)]


CASES["bbox_rotate"] = OperatorCase(
    input="none",
    body=lambda op, x: (
        *op("bbox_rotate")(
            _boxes(op), _labels(op), angle=_uniform(op, -180, 180), input_shape=[48, 64]
        ),
        op("bbox_rotate")(
            _boxes(op),
            angle=_uniform(op, -40, 40),
            input_shape=(30, 20, 3),
            keep_size=True,
            mode="halfway",
            remove_threshold=0.5,
        ),
    ),
    required={"angle": 30.0, "input_shape": (48, 64)},
    extra_inputs=_boxes_and_labels,
)
