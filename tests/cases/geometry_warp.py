"""Rows of the warps and transform matrices: warp_affine, transforms.*, the experimental
warp_perspective, water, sphere and jitter (rotate's row is in tests/operator_cases.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import types
from tests.cases._row import OperatorCase, _uniform

AFFINE = (0.9, -0.3, 2.0, 0.25, 1.1, -1.0)
PERSPECTIVE = (0.95, 0.08, 1.0, -0.05, 1.05, 0.5, 0.002, -0.001, 1.0)


def _vector(op: Any, low: float, high: float) -> Any:
    return op("random.uniform")(range=(low, high), shape=[2])


def _near_identity(op: Any, ndim: int = 2) -> Any:
    """Random (ndim, ndim + 1) matrices as an input: every transform row chains onto one, so
    that the batch size is the input's in augkit.eager too (an operator without inputs gets
    batch_size=1 there unless told; tests/test_debug.py tells only max_inputs == 0 operators,
    and transforms take 0 or 1 input)."""
    return op("random.uniform")(range=(0.5, 1.5), shape=[ndim, ndim + 1])


def _affine_matrices(k: int, n: int) -> list[np.ndarray]:
    return [np.array(AFFINE, np.float32).reshape(2, 3) * (1 + 0.1 * i) for i in range(n)]


def _homographies(k: int, n: int) -> list[np.ndarray]:
    return [np.array(PERSPECTIVE, np.float32).reshape(3, 3) for _ in range(n)]


def _one_d_transforms(k: int, n: int) -> list[np.ndarray]:
    """1-D transforms (1x2): the fuzzer's drawn first input is most often 1x2 when it is a
    transform at all, and combined matrices must have one shape."""
    return [np.array([[1.5 + i, -2.0]], np.float32) for i in range(n)]


CASES: dict[str, OperatorCase] = {
    "warp_affine": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("warp_affine")(
                x,
                op("transforms.rotation")(_near_identity(op), angle=_uniform(op, -20, 20)),
                fill_value=0,
                inverse_map=False,
            ),
            op("warp_affine")(
                x,
                matrix=op("transforms.scale")(_near_identity(op), scale=_uniform(op, 0.7, 1.3)),
                size=(24.0, 30.0),
            ),
        ),
        required={"matrix": AFFINE},
        extra_inputs=_affine_matrices,
    ),
    "experimental.warp_perspective": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("experimental.warp_perspective")(x, matrix=PERSPECTIVE, border_mode="replicate"),
            op("experimental.warp_perspective")(
                x, matrix=PERSPECTIVE, size=(20.0, 28.0), fill_value=(0.0, 128.0, 255.0)
            ),
        ),
        required={"matrix": PERSPECTIVE},
        extra_inputs=_homographies,
    ),
    "transforms.rotation": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.rotation")(
                _near_identity(op), angle=_uniform(op, -45, 45), center=(3.0, 4.0)
            ),
            op("transforms.rotation")(
                _near_identity(op, 3),
                angle=_uniform(op, -45, 45),
                axis=(0.0, 1.0, 1.0),
                reverse_order=True,
            ),
        ),
        required={"angle": 30.0},
    ),
    "transforms.scale": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.scale")(
                _near_identity(op), scale=_vector(op, 0.5, 2.0), center=_vector(op, -5, 5)
            ),
            op("transforms.scale")(_near_identity(op), scale=_uniform(op, 0.5, 2.0)),
        ),
        required={"scale": (2.0, 3.0)},
    ),
    "transforms.shear": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.shear")(_near_identity(op), shear=_vector(op, -0.3, 0.3)),
            op("transforms.shear")(
                _near_identity(op), angles=_vector(op, -30, 30), center=(1.0, 2.0)
            ),
        ),
        required={"shear": (0.1, 0.2)},
        required_unless=("angles",),
    ),
    "transforms.translation": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.translation")(
                op("transforms.rotation")(_near_identity(op), angle=_uniform(op, -10, 10)),
                offset=_vector(op, -5, 5),
            ),
        ),
        required={"offset": (1.0, 2.0)},
    ),
    "transforms.crop": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.crop")(
                _near_identity(op),
                from_start=_vector(op, 0, 0.4),
                from_end=_vector(op, 0.6, 1),
                to_end=(64.0, 48.0),
                absolute=True,
            ),
        ),
    ),
    "transforms.combine": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("transforms.combine")(
                op("transforms.rotation")(_near_identity(op), angle=_uniform(op, -30, 30)),
                op("transforms.translation")(_near_identity(op), offset=_vector(op, -5, 5)),
                _near_identity(op),
            ),
        ),
        extra_inputs=_one_d_transforms,
    ),
    "water": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("water")(x, ampl_x=4.0, ampl_y=3.0, mask=op("random.coin_flip")()),
            op("water")(x, interp_type=types.INTERP_LINEAR, fill_value=30.0),
        ),
    ),
    "sphere": OperatorCase(
        input="images",
        body=lambda op, x: (op("sphere")(x, mask=op("random.coin_flip")(probability=0.7)),),
    ),
    "jitter": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("jitter")(x, nDegree=3, mask=op("random.coin_flip")(probability=0.8)),
        ),
    ),
}
