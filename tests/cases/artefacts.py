"""Rows of the noise and artefacts family: erase, grid_mask, noise.*, jpeg_compression_distortion
(see tests/operator_cases.py for what a row is)."""

from __future__ import annotations

from tests.cases._row import OperatorCase, _uniform


def _vector(op, low: float, high: float, n: int):
    return op("random.uniform")(range=(low, high), shape=[n])


CASES: dict[str, OperatorCase] = {
    "erase": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("erase")(
                x,
                anchor=_vector(op, 0, 40, 4),
                shape=_vector(op, 2, 20, 4),
                fill_value=_uniform(op, 0, 255),
            ),
            op("erase")(
                x,
                anchor=_vector(op, 0, 0.8, 2),
                shape=(0.3, 0.2),
                normalized=True,
                centered_anchor=True,
                fill_value=(10, 200, 30),
            ),
        ),
        required={"shape": (3.0, 4.0)},
    ),
    "grid_mask": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("grid_mask")(
                x,
                tile=op("random.uniform")(values=[5, 9, 16]),
                ratio=_uniform(op, 0.2, 0.8),
                angle=_uniform(op, -1.0, 1.0),
                shift_x=_uniform(op, -10, 10),
                shift_y=_uniform(op, -10, 10),
            ),
        ),
        required={"tile": 3},
    ),
    "noise.gaussian": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("noise.gaussian")(x, mean=_uniform(op, -5, 5), stddev=_uniform(op, 0, 20)),
        ),
    ),
    "noise.salt_and_pepper": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("noise.salt_and_pepper")(
                x, prob=_uniform(op, 0, 0.3), salt_vs_pepper=_uniform(op, 0, 1)
            ),
            op("noise.salt_and_pepper")(x, prob=0.2, per_channel=True, salt_val=200),
        ),
    ),
    "noise.shot": OperatorCase(
        input="images",
        body=lambda op, x: (op("noise.shot")(x, factor=_uniform(op, 0.5, 30)),),
    ),
    "jpeg_compression_distortion": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("jpeg_compression_distortion")(
                x, quality=op("random.uniform")(values=[5, 30, 60, 95])
            ),
        ),
    ),
}
