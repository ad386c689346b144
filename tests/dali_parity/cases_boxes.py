"""Parity cases of the box and coordinate operators (augkit/operators/boxes/): bb_flip,
coord_flip, coord_transform, bbox_paste, on the stored boxes (relative ltrb, n = 3, 1, 0, 5)
and keypoints (k = 4, 2, 1, 3)."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase, per_sample

MATRIX = [0.9, -0.2, 0.1, 1.1, 0.5, 0.25]  # 3 x 2
ROTATE_NOTE = (
    "equal to DALI (measured 0); the tolerance allows the last bit of cos/sin of the float32 "
    "angle, which augkit rounds from float64 and DALI takes from the C library"
)
FLOAT_NOTE = (
    "float32 matmul: NumPy and DALI add the products in their own order, so a coordinate may "
    "differ in its last bit"
)

CASES = [
    # --- bb_flip ------------------------------------------------------------------------------
    ParityCase("bb_flip_xywh", lambda fn, types, x: fn.bb_flip(x), input="boxes"),
    ParityCase(
        "bb_flip_ltrb_both",
        lambda fn, types, x: fn.bb_flip(x, ltrb=True, vertical=1),
        input="boxes",
    ),
    ParityCase(
        "bb_flip_xywh_vertical_only",
        lambda fn, types, x: fn.bb_flip(x, horizontal=0, vertical=1),
        input="boxes",
    ),
    ParityCase(
        "bb_flip_per_sample",
        lambda fn, types, x: fn.bb_flip(
            x,
            ltrb=True,
            horizontal=per_sample(fn, [1, 0, 1, 0], "int32"),
            vertical=per_sample(fn, [0, 1, 1, 1], "int32"),
        ),
        input="boxes",
    ),
    # --- coord_flip ---------------------------------------------------------------------------
    ParityCase("coord_flip_default", lambda fn, types, x: fn.coord_flip(x), input="keypoints"),
    ParityCase(
        "coord_flip_yx_centers",
        lambda fn, types, x: fn.coord_flip(x, layout="yx", flip_y=1, center_x=0.3, center_y=0.7),
        input="keypoints",
    ),
    ParityCase(
        "coord_flip_per_sample",
        lambda fn, types, x: fn.coord_flip(
            x,
            flip_x=per_sample(fn, [0, 1, 1, 0], "int32"),
            flip_y=per_sample(fn, [1, 0, 1, 1], "int32"),
            center_y=per_sample(fn, [0.5, 0.2, 0.9, 0.0]),
        ),
        input="keypoints",
    ),
    # --- coord_transform ---------------------------------------------------------------------
    ParityCase(
        "coord_transform_scalar_M",
        lambda fn, types, x: fn.coord_transform(x, M=2.5, T=-0.5),
        input="keypoints",
    ),
    ParityCase(
        "coord_transform_M_T",
        lambda fn, types, x: fn.coord_transform(x, M=MATRIX, T=[0.1, -0.2, 0.3]),
        input="keypoints",
        max_diff=2.5e-7,
        mean_diff=1e-7,
        reason=FLOAT_NOTE,
    ),
    ParityCase(
        "coord_transform_MT_boxes",
        lambda fn, types, x: fn.coord_transform(
            x, MT=[1, 0.5, -0.5, 0, 0.2, 1, 0, 0.3, 0, 0, 2, 0, 0, 0, 0, 1, 0.1, -0.1, 0.5, 0]
        ),
        input="boxes",
        max_diff=2.5e-7,
        mean_diff=1e-7,
        reason=FLOAT_NOTE,
    ),
    ParityCase(
        "coord_transform_per_sample",
        lambda fn, types, x: fn.coord_transform(
            x,
            M=per_sample(
                fn, [[[1, 0], [0, 1]], [[0, 1], [1, 0]], [[2, 0.5], [-1, 3]], [[0.5, 0], [0, 0.5]]]
            ),
            T=per_sample(fn, [[0.0, 0.0], [1.0, 2.0], [-0.5, 0.5], [0.25, 0.25]]),
        ),
        input="keypoints",
        max_diff=2.5e-7,
        mean_diff=1e-7,
        reason=FLOAT_NOTE,
    ),
    # --- bbox_paste --------------------------------------------------------------------------
    ParityCase("bbox_paste_xywh", lambda fn, types, x: fn.bbox_paste(x, ratio=2.0), input="boxes"),
    ParityCase(
        "bbox_paste_ltrb",
        lambda fn, types, x: fn.bbox_paste(x, ratio=1.5, paste_x=0.2, paste_y=1.0, ltrb=True),
        input="boxes",
    ),
    ParityCase(
        "bbox_paste_per_sample",
        lambda fn, types, x: fn.bbox_paste(
            x,
            ratio=per_sample(fn, [1.0, 3.0, 1.25, 2.7]),
            paste_x=per_sample(fn, [0.0, 1.0, 0.3, 0.75]),
            paste_y=per_sample(fn, [1.0, 0.0, 0.6, 0.1]),
            ltrb=True,
        ),
        input="boxes",
    ),
    # --- bbox_rotate -------------------------------------------------------------------------
    ParityCase(
        "bbox_rotate_expand_labels",
        lambda fn, types, x: fn.bbox_rotate(
            x[0],
            x[1],
            angle=per_sample(fn, [30.0, -45.0, 10.0, 120.0]),
            input_shape=fn.shapes(x[2]),
        ),
        input=("boxes", "box_labels", "images"),
        max_diff=1e-6,
        mean_diff=1e-7,
        reason=ROTATE_NOTE,
    ),
    ParityCase(
        "bbox_rotate_keep_size_removes",
        lambda fn, types, x: fn.bbox_rotate(
            x[0],
            x[1],
            angle=per_sample(fn, [60.0, 95.0, 0.0, -150.0]),
            input_shape=fn.shapes(x[2]),
            keep_size=True,
            remove_threshold=0.6,
        ),
        input=("boxes", "box_labels", "images"),
        max_diff=1e-6,
        mean_diff=1e-7,
        reason=ROTATE_NOTE,
    ),
    ParityCase(
        "bbox_rotate_fixed_xywh",
        lambda fn, types, x: fn.bbox_rotate(
            x, angle=25.0, input_shape=[60, 80], mode="fixed", bbox_layout="xyWH"
        ),
        input="boxes",
        max_diff=1e-6,
        mean_diff=1e-7,
        reason=ROTATE_NOTE,
    ),
    ParityCase(
        "bbox_rotate_halfway_size",
        lambda fn, types, x: fn.bbox_rotate(
            x,
            angle=-70.0,
            input_shape=[3, 50, 40],
            shape_layout="CHW",
            mode="halfway",
            size=[64.7, 48.2],
        ),
        input="boxes",
        max_diff=1e-6,
        mean_diff=1e-7,
        reason=ROTATE_NOTE,
    ),
    ParityCase(
        "bbox_rotate_pixels",
        lambda fn, types, x: fn.bbox_rotate(
            fn.coord_transform(x, M=[80.0, 0, 0, 0, 0, 60.0, 0, 0, 0, 0, 80.0, 0, 0, 0, 0, 60.0]),
            angle=per_sample(fn, [15.0, 200.0, 45.0, 90.0]),
            input_shape=[60, 80],
            bbox_normalized=False,
        ),
        input="boxes",
        max_diff=1e-4,
        mean_diff=1e-5,
        reason=ROTATE_NOTE + " (pixel coordinates: the last bit is ~1e-5 here)",
    ),
]
