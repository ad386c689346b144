"""Rows of the tensors family: the random draws (``random.normal``, ``random.beta``,
``random.choice``), the tensor operators (``augkit/operators/tensors/``) and the reductions
(``augkit/operators/reductions.py``)."""

from __future__ import annotations

from augkit import types
from tests.cases._row import OperatorCase, _uniform

CASES: dict[str, OperatorCase] = {
    # Given an input (shape_like) so that eager calls know the batch size.
    "random.normal": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("random.normal")(
                op("random.uniform")(shape=[3]),
                mean=_uniform(op, -5, 5),
                stddev=_uniform(op, 0.5, 2),
            ),
            op("random.normal")(op("random.uniform")(), dtype=types.INT16, stddev=50.0),
            op("random.normal")(x),
        ),
    ),
    "random.beta": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("random.beta")(op("random.uniform")(shape=[2, 2]), alpha=_uniform(op, 0.5, 3)),
            op("random.beta")(op("random.uniform")(), beta=0.5, dtype=types.FLOAT64),
        ),
    ),
    "random.choice": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("random.choice")(a=5, shape=[4]),
            op("random.choice")(a=[1.5, 2.5, 4.0], p=[0.2, 0.3, 0.5]),
            op("random.choice")(a=op("random.uniform")(range=(0, 9), shape=[3]), shape=[2]),
        ),
        required={"a": 5},
    ),
    # --- tensor operators ------------------------------------------------------------------
    "transpose": OperatorCase(
        input="images",
        body=lambda op, x: (op("transpose")(x, perm=[2, 0, 1]), op("transpose")(x)),
    ),
    "reshape": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("reshape")(x, rel_shape=[1, -1]),
            op("reshape")(x, src_dims=[2, 0, 1], layout="CHW"),
            op("reshape")(x, op("shapes")(op("transpose")(x)), layout="ABC"),
        ),
    ),
    "expand_dims": OperatorCase(
        input="images",
        body=lambda op, x: (op("expand_dims")(x, axes=[0, 4]),),
        required={"axes": [0]},
    ),
    "squeeze": OperatorCase(
        input="images",
        body=lambda op, x: (op("squeeze")(op("expand_dims")(x, axes=[0, 2]), axes=[2, 0]),),
        required={"axes": [0]},
    ),
    "stack": OperatorCase(
        input="images",
        body=lambda op, x: (op("stack")(x, x, axis=1), op("stack")(x, axis=-1)),
    ),
    "cat": OperatorCase(
        input="images",
        body=lambda op, x: (op("cat")(x, x, axis=1), op("cat")(x, x, x, axis=-1)),
    ),
    "one_hot": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("one_hot")(op("random.choice")(a=10, shape=[3]), num_classes=10),
            op("one_hot")(op("reductions.max")(x), num_classes=256, dtype=types.UINT8),
        ),
        required={"num_classes": 5},
    ),
    "shapes": OperatorCase(
        input="images",
        body=lambda op, x: (op("shapes")(x), op("shapes")(x, dtype=types.FLOAT)),
    ),
    "copy": OperatorCase(input="images", body=lambda op, x: (op("copy")(x),)),
    "zeros_like": OperatorCase(
        input="images",
        body=lambda op, x: (op("zeros_like")(x), op("zeros_like")(x, dtype=types.FLOAT)),
    ),
    "ones_like": OperatorCase(
        input="images",
        body=lambda op, x: (op("ones_like")(x, dtype=types.INT16),),
    ),
    "full_like": OperatorCase(
        input="images",
        body=lambda op, x: (op("full_like")(x, _uniform(op, -10, 300)),),
    ),
    "cast_like": OperatorCase(
        input="images",
        body=lambda op, x: (op("cast_like")(op("random.normal")(x, mean=128.0, stddev=80.0), x),),
    ),
    "peek_image_shape": OperatorCase(
        input="jpegs",
        body=lambda op, x: (
            op("peek_image_shape")(x),
            op("peek_image_shape")(x, image_type=types.GRAY, dtype=types.INT32),
        ),
    ),
    # --- reductions --------------------------------------------------------------------------
    "reductions.sum": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("reductions.sum")(x, axes=[0, 1]),
            op("reductions.sum")(x, dtype=types.FLOAT, keep_dims=True),
        ),
    ),
    "reductions.mean": OperatorCase(
        input="images",
        body=lambda op, x: (op("reductions.mean")(x, axes=[0, 1]), op("reductions.mean")(x)),
    ),
    "reductions.mean_square": OperatorCase(
        input="images",
        body=lambda op, x: (op("reductions.mean_square")(x, axes=2),),
    ),
    "reductions.rms": OperatorCase(
        input="images",
        body=lambda op, x: (op("reductions.rms")(x, axes=[0, 1], dtype=types.UINT8),),
    ),
    "reductions.min": OperatorCase(
        input="images",
        body=lambda op, x: (op("reductions.min")(x, axes=[0, 1], keep_dims=True),),
    ),
    "reductions.max": OperatorCase(
        input="images",
        body=lambda op, x: (op("reductions.max")(x, axes=-1),),
    ),
    "reductions.std_dev": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("reductions.std_dev")(x, op("reductions.mean")(x, axes=[0, 1]), axes=[0, 1]),
            op("reductions.std_dev")(x, op("reductions.mean")(x), ddof=1),
        ),
    ),
    "reductions.variance": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("reductions.variance")(
                x, op("reductions.mean")(x, axes=2, keep_dims=True), axes=2, keep_dims=True
            ),
        ),
    ),
}
