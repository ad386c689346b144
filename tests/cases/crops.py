"""Rows of the crops family: slice, pad, random_resized_crop, the decoder crops, paste and
multi_paste (tests/operator_cases.py says what a row is)."""

from __future__ import annotations

from augkit import types
from tests.cases._row import OperatorCase, _uniform

CASES: dict[str, OperatorCase] = {
    "slice": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("slice")(
                x,
                rel_start=op("random.uniform")(range=(0.0, 0.5), shape=[2]),
                rel_shape=op("random.uniform")(range=(0.2, 0.5), shape=[2]),
            ),
            op("slice")(
                x,
                start=(-3, 2),
                shape=(40, 30),
                out_of_bounds_policy="pad",
                fill_values=(1.0, 2.0, 3.0),
            ),
        ),
        required={"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.5)},
        required_unless=("start", "end", "rel_end", "shape"),
    ),
    "pad": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("pad")(x, axes=(0, 1), align=(8, 4), fill_value=_uniform(op, 0, 255)),
            op("pad")(x, axes=[-1], shape=4),
        ),
    ),
    "random_resized_crop": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("random_resized_crop")(x, size=(24, 20)),
            op("random_resized_crop")(
                x,
                size=17,
                random_area=(0.3, 0.6),
                interp_type=types.INTERP_NN,
                random_aspect_ratio=(0.5, 2.0),
            ),
        ),
        required={"size": (9, 11)},
    ),
    "decoders.image_crop": OperatorCase(
        input="jpegs",
        body=lambda op, x: (
            op("decoders.image_crop")(
                x, crop=(64, 48), crop_pos_x=_uniform(op, 0, 1), crop_pos_y=_uniform(op, 0, 1)
            ),
        ),
        required={"crop": (16, 16)},
    ),
    "decoders.image_random_crop": OperatorCase(
        input="jpegs",
        body=lambda op, x: (
            op("decoders.image_random_crop")(x, random_area=(0.1, 0.5)),
            op("decoders.image_random_crop")(x, output_type=types.GRAY, num_attempts=3),
        ),
    ),
    "decoders.image_slice": OperatorCase(
        input="jpegs",
        body=lambda op, x: (
            op("decoders.image_slice")(
                x,
                rel_start=op("random.uniform")(range=(0.0, 0.5), shape=[2]),
                rel_shape=op("random.uniform")(range=(0.1, 0.5), shape=[2]),
            ),
        ),
        required={"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.5)},
        required_unless=("start", "end", "rel_end", "shape"),
    ),
    "paste": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("paste")(
                x,
                ratio=_uniform(op, 1.0, 2.0),
                paste_x=_uniform(op, 0, 1),
                paste_y=_uniform(op, 0, 1),
                fill_value=(118, 185, 0),
            ),
        ),
        required={"ratio": 1.5, "fill_value": (1, 2, 3)},
    ),
    "multi_paste": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("multi_paste")(
                x,
                in_ids=[1, 0],
                in_anchors_rel=[[0.0, 0.0], [0.25, 0.25]],
                shapes_rel=[[0.5, 0.5], [0.5, 0.5]],
                out_anchors_rel=op("random.uniform")(range=(0.0, 0.5), shape=[2, 2]),
                output_size=[96, 96],
            ),
        ),
        required={"output_size": [64, 64]},
    ),
}
