"""Parity cases of the warps and transform matrices: ``fn.warp_affine``, ``fn.transforms.*``,
``fn.experimental.warp_perspective``, ``fn.rotate`` (on OpenCV since the vocabulary issue),
``fn.water`` and ``fn.sphere``.

Transform operators read no image: their bodies ignore ``x`` and make one matrix per sample
(the batch is the input set's). Per-sample values come from ``per_sample``.
"""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

AFFINE = [0.9, -0.3, 12.0, 0.25, 1.1, -6.0]
PERSPECTIVE = [0.95, 0.08, 3.0, -0.05, 1.05, 2.0, 0.0015, -0.001, 1.0]
ANGLES = [12.5, -33.0, 47.0, 161.0]

_LINEAR = (
    "uint8 -> uint8 is cv2.warpAffine (2x faster than sampling DALI's points): its own source "
    "points and exact ties rounded half to even: 1 level at about 1e-4 of the values of a "
    "rotation, up to 1.7 % for a matrix of round decimals (the CPU's dispatch moves a few of "
    "them: OpenCV fuses multiply-adds with AVX2, not with SSE4.x)"
)
_OPENCV = "both are OpenCV's warpPerspective, with DALI's matrix adjustment: equal"
_FLOAT = (
    "DALI's float32 source points; OpenCV's float32 interpolation order, not DALI's (and fused "
    "with AVX2, not with SSE4.x: within the bound on either)"
)
_TRANSFORM = (
    "float32 products in another order than DALI's: an ulp or two (NumPy's AVX2/AVX-512 loops "
    "or its baseline ones: within the bound on either)"
)


def _matrices() -> list[np.ndarray]:
    """One 2x3 matrix per sample (a rotation, a shear, a scale, a half-pixel shift)."""
    return [
        np.array([[0.96, -0.28, 8.0], [0.28, 0.96, -4.0]]),
        np.array([[1.0, 0.35, -7.5], [0.1, 1.0, 0.0]]),
        np.array([[0.6, 0.0, 5.0], [0.0, 1.4, -3.0]]),
        np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]]),
    ]


def _homographies() -> list[np.ndarray]:
    base = np.array(PERSPECTIVE).reshape(3, 3)
    other = np.array([[1.02, -0.06, -2.0], [0.04, 0.98, 1.0], [-0.001, 0.0008, 1.0]])
    return [base, other, np.eye(3), base * 1.1]


CASES = [
    # --- warp_affine ------------------------------------------------------------------------
    ParityCase(
        "warp_affine_linear_clamp",
        lambda fn, types, x: fn.warp_affine(x, matrix=AFFINE),
        max_diff=1,
        mean_diff=0.02,
        reason=_LINEAR,
    ),
    ParityCase(
        "warp_affine_linear_fill_size",
        lambda fn, types, x: fn.warp_affine(x, matrix=AFFINE, fill_value=200, size=(40.4, 61.5)),
        max_diff=1,
        mean_diff=0.01,
        reason=_LINEAR,
    ),
    ParityCase(
        "warp_affine_nn_fill",
        lambda fn, types, x: fn.warp_affine(
            x, matrix=AFFINE, fill_value=0, interp_type=types.INTERP_NN
        ),
        note="DALI's floor of float32 source points, gathered by cv2.remap",
    ),
    ParityCase(
        "warp_affine_forward_map",
        lambda fn, types, x: fn.warp_affine(x, matrix=AFFINE, inverse_map=False, fill_value=0),
        max_diff=1,
        mean_diff=0.002,
        reason=_LINEAR + "; the inverse is taken in float64 here, float32 in DALI",
    ),
    ParityCase(
        "warp_affine_per_sample_matrix",
        lambda fn, types, x: fn.warp_affine(
            x,
            matrix=per_sample(fn, _matrices()),
            fill_value=10,
            size=per_sample(fn, [[30, 40], [50, 20], [64, 64], [11, 13]]),
        ),
        max_diff=1,
        mean_diff=0.15,
        reason=_LINEAR
        + "; sample 3 is a half-pixel shift, all ties: 1 level at 12 % of the values",
    ),
    ParityCase(
        "warp_affine_matrix_input_from_transforms",
        lambda fn, types, x: fn.warp_affine(
            x,
            fn.transforms.rotation(angle=per_sample(fn, ANGLES), center=(30, 25)),
            inverse_map=False,
        ),
        max_diff=1,
        mean_diff=0.001,
        reason=_LINEAR,
    ),
    ParityCase(
        "warp_affine_float",
        lambda fn, types, x: fn.warp_affine(x, matrix=AFFINE, fill_value=0.5),
        input="float",
        max_diff=5e-7,
        mean_diff=2e-8,
        reason=_FLOAT,
    ),
    ParityCase(
        "warp_affine_gray_to_float",
        lambda fn, types, x: fn.warp_affine(
            x, matrix=AFFINE, dtype=types.FLOAT, interp_type=types.INTERP_LINEAR
        ),
        input="gray",
        max_diff=5e-5,
        mean_diff=3e-6,
        reason=_FLOAT + " (in levels of the uint8 input)",
    ),
    # --- transforms -------------------------------------------------------------------------
    ParityCase(
        "transforms_rotation_per_sample",
        lambda fn, types, x: fn.transforms.rotation(
            angle=per_sample(fn, ANGLES), center=per_sample(fn, [[1, 2], [30, -4], [0, 0], [5, 5]])
        ),
        max_diff=1e-7,
        mean_diff=5e-8,
        reason=_TRANSFORM,
    ),
    ParityCase(
        "transforms_rotation_3d",
        lambda fn, types, x: fn.transforms.rotation(
            angle=per_sample(fn, ANGLES), axis=(1.0, 2.0, 3.0), center=(1.0, -2.0, 3.0)
        ),
        max_diff=5e-7,
        mean_diff=1e-7,
        reason=_TRANSFORM + " (Rodrigues' formula)",
    ),
    ParityCase(
        "transforms_scale",
        lambda fn, types, x: (
            fn.transforms.scale(scale=per_sample(fn, [[2, 3], [0.5, 1], [1, -1], [4, 0.25]])),
            fn.transforms.scale(scale=(2.0, 3.0), center=(5.0, 7.0)),
            fn.transforms.scale(scale=1.5, ndim=3),
        ),
    ),
    ParityCase(
        "transforms_shear",
        lambda fn, types, x: (
            fn.transforms.shear(shear=(0.1, 0.2), center=(3.0, 4.0)),
            fn.transforms.shear(angles=per_sample(fn, [[10, 20], [-30, 5], [0, 0], [45, -45]])),
            fn.transforms.shear(shear=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)),
        ),
        max_diff=0,
        mean_diff=0.0,
        note="tan in float32, as DALI",
    ),
    ParityCase(
        "transforms_translation_crop",
        lambda fn, types, x: (
            fn.transforms.translation(offset=per_sample(fn, [[1, 2], [-3, 4], [0, 0], [9, 9]])),
            fn.transforms.crop(
                from_start=(1.0, 2.0), from_end=(5.0, 10.0), to_start=(0.0, 0.0), to_end=1.0
            ),
            fn.transforms.crop(from_start=(5.0, 2.0), from_end=(1.0, 10.0), absolute=True),
            fn.transforms.crop(to_start=(5.0, 2.0), to_end=(1.0, 10.0)),
        ),
    ),
    ParityCase(
        "transforms_chains_and_combine",
        lambda fn, types, x: (
            fn.transforms.translation(
                fn.transforms.scale(scale=(2.0, 3.0)), offset=per_sample(fn, [[3, 4]] * 4)
            ),
            fn.transforms.translation(
                fn.transforms.scale(scale=(2.0, 3.0)), offset=(3.0, 4.0), reverse_order=True
            ),
            fn.transforms.combine(
                fn.transforms.scale(scale=(2.0, 3.0)),
                fn.transforms.translation(offset=(3.0, 4.0)),
                fn.transforms.rotation(angle=per_sample(fn, ANGLES)),
            ),
            fn.transforms.combine(
                fn.transforms.rotation(angle=30.0, center=(5.0, 5.0)),
                fn.transforms.shear(shear=(0.2, 0.0)),
                reverse_order=True,
            ),
            fn.transforms.rotation(fn.transforms.scale(scale=2.0, ndim=2), angle=90.0),
        ),
        max_diff=5e-7,
        mean_diff=1e-7,
        reason=_TRANSFORM,
    ),
    # --- warp_perspective -------------------------------------------------------------------
    ParityCase(
        "warp_perspective_linear",
        lambda fn, types, x: fn.experimental.warp_perspective(x, matrix=PERSPECTIVE),
        max_diff=0,
        mean_diff=0.0,
        note=_OPENCV,
    ),
    ParityCase(
        "warp_perspective_nn_replicate_size",
        lambda fn, types, x: fn.experimental.warp_perspective(
            x,
            matrix=PERSPECTIVE,
            interp_type=types.INTERP_NN,
            border_mode="replicate",
            size=(50, 70),
        ),
        max_diff=0,
        mean_diff=0.0,
        note=_OPENCV,
    ),
    ParityCase(
        "warp_perspective_per_sample_fill_center",
        lambda fn, types, x: fn.experimental.warp_perspective(
            x,
            matrix=per_sample(fn, _homographies()),
            fill_value=(10.0, 200.0, 30.0),
            pixel_origin="center",
            inverse_map=False,
        ),
        max_diff=0,
        mean_diff=0.0,
        note=_OPENCV,
    ),
    ParityCase(
        "warp_perspective_input_reflect_float",
        lambda fn, types, x: fn.experimental.warp_perspective(
            x, per_sample(fn, _homographies()), border_mode="reflect_101"
        ),
        input="float",
        max_diff=2.5e-6,
        mean_diff=3.5e-8,
        reason="both are OpenCV's warpPerspective, with DALI's matrix adjustment, whose float32 "
        "linear interpolation depends on the CPU's dispatch: fused multiply-adds (FMA) with AVX2 "
        "or AVX-512: bit for bit DALI's; without (SSE4.x/AVX, or "
        "cv2.setUseOptimized(False)): 2.44e-6 at most, on up to 26% of a sample, mean 3.2e-8",
    ),
    ParityCase(
        "warp_perspective_gray_cubic_wrap",
        lambda fn, types, x: fn.experimental.warp_perspective(
            x, matrix=PERSPECTIVE, interp_type=types.INTERP_CUBIC, border_mode="wrap"
        ),
        input="gray",
        max_diff=0,
        mean_diff=0.0,
        note=_OPENCV,
    ),
    # --- rotate (OpenCV since the vocabulary issue) -----------------------------------------
    ParityCase(
        "rotate_linear_fill",
        lambda fn, types, x: fn.rotate(x, angle=per_sample(fn, ANGLES), fill_value=0),
        max_diff=1,
        mean_diff=0.001,
        reason=_LINEAR,
    ),
    ParityCase(
        "rotate_linear_clamp_keep_size",
        lambda fn, types, x: fn.rotate(x, angle=per_sample(fn, ANGLES), keep_size=True),
        max_diff=1,
        mean_diff=0.001,
        reason=_LINEAR,
    ),
    ParityCase(
        "rotate_nn_size",
        lambda fn, types, x: fn.rotate(
            x, angle=per_sample(fn, ANGLES), interp_type=types.INTERP_NN, size=(40, 50)
        ),
        note="DALI's floor of float32 source points, gathered by cv2.remap",
    ),
    ParityCase(
        "rotate_float_dtype",
        lambda fn, types, x: fn.rotate(x, angle=30.0, dtype=types.FLOAT, fill_value=128),
        max_diff=5e-5,
        mean_diff=3e-6,
        reason=_FLOAT,
    ),
]

_REMAP = (
    "DALI's float32 points, interpolated by OpenCV 5's float32 remap: equal here (a value "
    "next to .5 could round the other way)"
)

CASES += [
    # --- water, sphere ------------------------------------------------------------------------
    ParityCase(
        "water_defaults",
        lambda fn, types, x: fn.water(x),
        note="DALI's float32 points (default frequency 2*pi/128) and floor: equal",
    ),
    ParityCase(
        "water_waves_fill_mask",
        lambda fn, types, x: fn.water(
            x,
            ampl_x=3.7,
            ampl_y=-6.1,
            freq_x=0.13,
            freq_y=0.071,
            phase_x=0.4,
            phase_y=-1.3,
            fill_value=300,
            mask=per_sample(fn, [1, 0, 1, 1], dtype=np.int32),
        ),
        note="equal; fill 300 wraps to 44 in uint8, as C++ converts it in DALI",
    ),
    ParityCase(
        "water_linear",
        lambda fn, types, x: fn.water(x, interp_type=types.INTERP_LINEAR, fill_value=20),
        note=_REMAP,
    ),
    ParityCase(
        "water_float",
        lambda fn, types, x: fn.water(x, ampl_x=2.5, interp_type=types.INTERP_LINEAR),
        input="float",
        max_diff=5e-6,
        mean_diff=1e-7,
        reason="float32 interpolation in OpenCV's order, not DALI's (the CPU's dispatch moves "
        "the last bits: within the bound on every one)",
    ),
    ParityCase(
        "sphere_nn",
        lambda fn, types, x: fn.sphere(x, fill_value=7),
        note="DALI's float32 points and floor: equal",
    ),
    ParityCase(
        "sphere_linear_gray",
        lambda fn, types, x: fn.sphere(x, interp_type=types.INTERP_LINEAR),
        input="gray",
        note=_REMAP,
    ),
]
