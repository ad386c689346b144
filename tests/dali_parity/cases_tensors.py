"""Parity cases of the tensors family: tensor operators (shape and layout changes, joins, fills,
casts, one-hot, shapes, peek_image_shape) and ``fn.reductions.*``. The random draws
(``random.normal``/``beta``/``choice``) are not here: their values come from other streams than
DALI's (tests/operators/test_random_draws.py checks their distributions)."""

from __future__ import annotations

from tests.dali_parity.base import ParityCase

_F32_SUM = (
    "float sums: augkit accumulates in float64 and rounds once, DALI in float32 (an ulp or so)"
)

CASES = [
    # --- transpose ----------------------------------------------------------------------------
    ParityCase("transpose_hwc_to_chw", lambda fn, types, x: fn.transpose(x, perm=[2, 0, 1])),
    ParityCase("transpose_reversed", lambda fn, types, x: fn.transpose(x), input="matrices"),
    ParityCase(
        "transpose_keep_layout",
        lambda fn, types, x: fn.transpose(x, perm=[1, 0, 2], transpose_layout=False),
    ),
    ParityCase(
        "transpose_output_layout",
        lambda fn, types, x: fn.transpose(x, perm=[1, 2, 0], output_layout="XYZ"),
        input="chw",
    ),
    ParityCase("transpose_gray", lambda fn, types, x: fn.transpose(x, perm=[2, 0, 1]), "gray"),
    # --- reshape ------------------------------------------------------------------------------
    ParityCase("reshape_rel_shape", lambda fn, types, x: fn.reshape(x, rel_shape=[1, -1])),
    ParityCase("reshape_rel_shape_3d", lambda fn, types, x: fn.reshape(x, rel_shape=[0.5, 2, 1])),
    ParityCase(
        "reshape_shape_input",
        lambda fn, types, x: fn.reshape(x, fn.shapes(fn.transpose(x, perm=[2, 0, 1]))),
    ),
    ParityCase(
        "reshape_src_dims", lambda fn, types, x: fn.reshape(x, src_dims=[2, 0, 1]), input="gray"
    ),
    ParityCase(
        "reshape_shape_layout",
        lambda fn, types, x: fn.reshape(x, shape=[-1, 1], layout="AB"),
        input="vectors",
    ),
    ParityCase("reshape_flatten", lambda fn, types, x: fn.reshape(x, shape=[-1])),
    # --- expand_dims / squeeze ----------------------------------------------------------------
    ParityCase(
        "expand_dims_named",
        lambda fn, types, x: fn.expand_dims(x, axes=[0, 4], new_axis_names="FK"),
    ),
    ParityCase(
        "expand_dims_unnamed", lambda fn, types, x: fn.expand_dims(x, axes=[1]), input="vectors"
    ),
    ParityCase("squeeze_axes", lambda fn, types, x: fn.squeeze(x, axes=[2]), input="gray"),
    ParityCase(
        "squeeze_axis_names", lambda fn, types, x: fn.squeeze(x, axis_names="C"), input="gray"
    ),
    # --- stack / cat --------------------------------------------------------------------------
    ParityCase("stack_named", lambda fn, types, x: fn.stack(x, x, axis=3, axis_name="K")),
    ParityCase(
        "stack_interleave", lambda fn, types, x: fn.stack(x, x, x, axis=-1), input="matrices"
    ),
    ParityCase("cat_channels", lambda fn, types, x: fn.cat(x, x, axis=2)),
    ParityCase("cat_axis_name", lambda fn, types, x: fn.cat(x, x, axis_name="W")),
    ParityCase("cat_vectors", lambda fn, types, x: fn.cat(x, x, x), input="vectors"),
    # --- one_hot ------------------------------------------------------------------------------
    ParityCase(
        "one_hot_float_indices",
        lambda fn, types, x: fn.one_hot(x, num_classes=3),
        input="vectors",
        note="float indices truncate toward zero; out-of-range ones give a row of off_value",
    ),
    ParityCase(
        "one_hot_scalars_uint8",
        lambda fn, types, x: fn.one_hot(
            fn.reductions.max(x), num_classes=256, dtype=types.UINT8, on_value=300, off_value=-2
        ),
        note="on/off values are static_cast (wrapped), not saturated: 300 -> 44",
    ),
    ParityCase(
        "one_hot_axis_name",
        lambda fn, types, x: fn.one_hot(
            fn.reshape(x, layout="AB"), num_classes=4, axis=1, axis_name="K"
        ),
        input="matrices",
    ),
    # --- shapes, copy, *_like ------------------------------------------------------------------
    ParityCase("shapes_default", lambda fn, types, x: fn.shapes(x)),
    ParityCase("shapes_float", lambda fn, types, x: fn.shapes(x, dtype=types.FLOAT), "jpegs"),
    ParityCase("copy", lambda fn, types, x: fn.copy(x)),
    ParityCase("zeros_like", lambda fn, types, x: fn.zeros_like(x)),
    ParityCase("zeros_like_dtype", lambda fn, types, x: fn.zeros_like(x, dtype=types.FLOAT)),
    ParityCase("ones_like", lambda fn, types, x: fn.ones_like(x), input="matrices"),
    ParityCase(
        "full_like_channel_means",
        lambda fn, types, x: fn.full_like(x, fn.reductions.mean(x, axes=[0, 1])),
        note="float fill values rounded half away from zero into uint8",
    ),
    ParityCase(
        "full_like_float_into_int",
        lambda fn, types, x: fn.full_like(fn.shapes(x, dtype=types.INT32), fn.reductions.min(x)),
        input="matrices",
    ),
    ParityCase(
        "cast_like_to_int64", lambda fn, types, x: fn.cast_like(x, fn.shapes(x)), "matrices"
    ),
    ParityCase(
        "cast_like_to_uint8",
        lambda fn, types, x: fn.cast_like(x, fn.shapes(x, dtype=types.UINT32)),
        input="matrices",
        note="negative floats saturate to 0",
    ),
    # --- peek_image_shape ---------------------------------------------------------------------
    ParityCase("peek_image_shape", lambda fn, types, x: fn.peek_image_shape(x), input="jpegs"),
    ParityCase(
        "peek_image_shape_gray_int32",
        lambda fn, types, x: fn.peek_image_shape(x, image_type=types.GRAY, dtype=types.INT32),
        input="jpegs",
    ),
    # --- reductions ---------------------------------------------------------------------------
    ParityCase("sum_all_uint8", lambda fn, types, x: fn.reductions.sum(x)),
    ParityCase(
        "sum_hw_keep", lambda fn, types, x: fn.reductions.sum(x, axes=[0, 1], keep_dims=True)
    ),
    ParityCase("sum_wrap_uint8", lambda fn, types, x: fn.reductions.sum(x, dtype=types.UINT8)),
    ParityCase(
        "sum_float_out", lambda fn, types, x: fn.reductions.sum(x, axes=2, dtype=types.FLOAT)
    ),
    ParityCase(
        "sum_float_input",
        lambda fn, types, x: fn.reductions.sum(x, axis_names="HW"),
        input="float",
        max_diff=2.5e-4,
        mean_diff=1e-4,
        reason=_F32_SUM,
    ),
    ParityCase("mean_hw", lambda fn, types, x: fn.reductions.mean(x, axis_names="HW")),
    ParityCase(
        "mean_uint8_out", lambda fn, types, x: fn.reductions.mean(x, axes=2, dtype=types.UINT8)
    ),
    ParityCase(
        "mean_float_input",
        lambda fn, types, x: fn.reductions.mean(x, axes=0),
        input="float",
        max_diff=2e-7,
        mean_diff=3e-8,
        reason=_F32_SUM,
    ),
    ParityCase(
        "mean_square",
        lambda fn, types, x: fn.reductions.mean_square(x, axes=[0, 1]),
        max_diff=0.002,
        mean_diff=0.0014,
        reason="sums of squares over 2**24: DALI's float32 accumulation is an ulp off the exact "
        "one",
    ),
    ParityCase("rms", lambda fn, types, x: fn.reductions.rms(x, axis_names="W")),
    ParityCase(
        "rms_uint8_out", lambda fn, types, x: fn.reductions.rms(x, axes=2, dtype=types.UINT8)
    ),
    ParityCase("min_channels", lambda fn, types, x: fn.reductions.min(x, axes=2)),
    ParityCase("max_keep", lambda fn, types, x: fn.reductions.max(x, axes=[0, 1], keep_dims=True)),
    ParityCase("min_matrices", lambda fn, types, x: fn.reductions.min(x, axes=-1), "matrices"),
    ParityCase(
        "std_dev_hw",
        lambda fn, types, x: fn.reductions.std_dev(
            x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1]
        ),
        max_diff=4e-6,
        mean_diff=3e-6,
        reason=_F32_SUM,
    ),
    ParityCase(
        "variance_ddof_keep",
        lambda fn, types, x: fn.reductions.variance(
            x, fn.reductions.mean(x, axes=1, keep_dims=True), axes=1, ddof=1, keep_dims=True
        ),
        input="matrices",
        max_diff=1e-6,
        mean_diff=5e-7,
        reason=_F32_SUM,
    ),
    ParityCase(
        "std_dev_all",
        lambda fn, types, x: fn.reductions.std_dev(x, fn.reductions.mean(x)),
        input="float",
    ),
]
