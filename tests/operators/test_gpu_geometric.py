"""The GPU kernels of fn.resize, fn.random_resized_crop, fn.rotate and fn.warp_affine.

Each GPU kernel is written once against the array module of its input (NumPy or CuPy), so the
CPU-runnable tests here run it on NumPy (the operator's ``gpu`` method standing in for ``cpu``,
in a pipeline) on the real photos and compare it with the CPU kernel; the ``gpu`` tests run it
on CuPy with device="gpu" against device="cpu" (``gpu_matches_cpu``) and against the NumPy run
of the same code. Where the two kernels compute differently (Pillow's or OpenCV's CPU kernels,
DALI's formulas on the GPU), the tolerance is what the CPU kernel holds against DALI 2.4,
with where it comes from; ``test_the_tolerances_catch_a_wrong_kernel`` shows they can fail.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from augkit import Pipeline, fn, types
from augkit.operators.geometric.random_resized_crop import RandomResizedCrop
from augkit.operators.geometric.resize import ResizeImpl
from augkit.operators.geometric.rotate import RotateImpl
from augkit.operators.geometric.warp_affine import WarpAffineImpl
from augkit.operators.registry import REGISTRY
from tests.operator_check import gpu_matches_cpu, run_operator

IMPLS = {
    "resize": ResizeImpl,
    "random_resized_crop": RandomResizedCrop,
    "rotate": RotateImpl,
    "warp_affine": WarpAffineImpl,
}


@dataclass(frozen=True)
class Tol:
    """Allowed |GPU path - CPU kernel| per sample: ``atol`` anywhere, ``inner`` away from a
    ``border``-pixel frame (None: ``atol``), ``mean`` over the sample (None: no bound)."""

    atol: float = 0
    inner: float | None = None
    mean: float | None = None
    border: int = 4


EXACT = Tol()
"""Nearest neighbour (resize, rotate, warp_affine, random_resized_crop): both kernels pick DALI's
source pixels (``resize.nearest_indices``; ``warp.affine_points``' float32 running sums and
``floor``), and the parity cases hold the CPU kernel to max_diff=0 against DALI 2.4
(tests/dali_parity/cases_geometry_resize.py resize_nn_*, cases_geometry_warp.py
warp_affine_nn_fill and rotate_nn_size, cases_crops.py rrc_fallback_nn_upscale)."""

LINEAR_RESIZE = Tol(atol=16, inner=1, mean=0.25)
"""Linear filters of resize (Triangular when shrinking): the GPU path is DALI's weights with
clamped border taps (``warp.resample_matrix``), the CPU kernel Pillow's BILINEAR (or torch's
port). tests/operators/test_resize.py::test_numpy_resampler_is_pillow_bilinear_inside_the_border
holds the same two to 1 level inside a 4-pixel frame and a mean 0.25; at the border the CPU
kernel renormalises where DALI repeats the edge, and the parity cases set no max there
(cases_geometry_resize.py resize_linear_default: max_diff=None, mean 0.6; cases_crops.py
rrc_fallback_*: measured up to 10). The border difference grows with the shrink factor: 12
measured here for 7x (512 -> 70), 14 for 13x (512 -> 40)."""

SMOOTH_RESIZE = Tol(atol=8, inner=6, mean=0.25)
"""Cubic and Lanczos3, antialiased or enlarging: the CPU kernel is Pillow's BICUBIC/LANCZOS
(its reference in test_resize.py::test_interp_types_are_pillow_filters); no parity case holds
it against DALI. The GPU path is DALI's tabulated windows (129 and 193 points, linearly
interpolated) without Pillow's clipped 8-bit intermediate: measured on these photos up to 6
inside and 7 at the border, a mean 0.21 at most."""

NUMPY_RESIZE = Tol(atol=1, mean=0.01)
"""Filters the CPU kernel computes with ``warp.resample_axis`` too (Gaussian, linear without
antialias when shrinking, cubic/Lanczos without antialias when shrinking): the same weights,
summed tap by tap there and by a matrix product here; float32 rounding can move a value across
the .5 of the integer store: 1 level, rarely."""

LINEAR_WARP = Tol(atol=1, mean=0.15)
"""Linear uint8 rotate/warp_affine: the CPU kernel is ``cv2.warpAffine`` (its own exact points,
ties to even), the GPU path DALI's formulas on DALI's points; the parity cases hold the CPU
kernel to max_diff=1, mean 0.02 (0.15 for a half-pixel shift, all ties) against DALI 2.4
(cases_geometry_warp.py warp_affine_linear_*, warp_affine_per_sample_matrix, rotate_linear_*)."""

FLOAT_WARP = Tol(atol=5e-5, mean=3e-6)
"""Float outputs of the warps: the CPU kernel is ``cv2.remap`` in float32 on DALI's points (its
own interpolation order); cases_geometry_warp.py warp_affine_gray_to_float, rotate_float_dtype:
max_diff=5e-5, mean 3e-6 against DALI 2.4."""


@contextlib.contextmanager
def gpu_kernel_on_cpu(name: str) -> Iterator[None]:
    """Run operator ``name``'s ``gpu`` kernel where its ``cpu`` kernel would run (on NumPy)."""
    impl = IMPLS[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(impl, "cpu", impl.gpu)
        yield


def _outputs(name: str, images: list[np.ndarray], layout: str, args: dict, gpu_path: bool):
    with gpu_kernel_on_cpu(name) if gpu_path else contextlib.nullcontext():
        return run_operator(name, [images], layout=layout, args=args)[0][0]


def compare(
    name: str,
    images: list[np.ndarray],
    args: dict[str, Any],
    tol: Tol,
    *,
    layout: str = "HWC",
    gpu_args: dict[str, Any] | None = None,
) -> None:
    """The GPU path (on NumPy) against the CPU kernel, sample by sample, within ``tol``; the GPU
    path may get other arguments (``gpu_args``: a deliberately wrong kernel)."""
    want = _outputs(name, images, layout, args, gpu_path=False)
    got = _outputs(name, images, layout, gpu_args or args, gpu_path=True)
    assert got.layout() == want.layout() and got.dtype == want.dtype
    for i in range(len(images)):
        a, b = want.at(i), got.at(i)
        assert b.shape == a.shape and b.dtype == a.dtype, (i, b.shape, a.shape, b.dtype)
        diff = np.abs(b.astype(np.float64) - a.astype(np.float64))
        at = f"{name} {args} sample {i}"
        assert diff.max(initial=0) <= tol.atol, f"{at}: max |diff| {diff.max()} > {tol.atol}"
        f = tol.border
        if tol.inner is not None and diff.ndim == 3 and min(diff.shape[:2]) > 2 * f:
            inner = diff[f:-f, f:-f] if layout == "HWC" else diff[:, f:-f, f:-f]
            assert inner.max() <= tol.inner, f"{at}: inner max {inner.max()} > {tol.inner}"
        if tol.mean is not None:
            assert diff.mean() <= tol.mean, f"{at}: mean |diff| {diff.mean():.4g} > {tol.mean}"


# --- resize ----------------------------------------------------------------------------------

INTERPS = [
    types.INTERP_NN,
    types.INTERP_LINEAR,
    types.INTERP_TRIANGULAR,
    types.INTERP_CUBIC,
    types.INTERP_LANCZOS3,
    types.INTERP_GAUSSIAN,
]


def _resize_tol(interp: types.DALIInterpType, antialias: bool, shrink: bool) -> Tol:
    """Which CPU back end resize_hwc picks for these filters, hence the tolerance."""
    if interp == types.INTERP_NN:
        return EXACT
    if interp == types.INTERP_GAUSSIAN:
        return NUMPY_RESIZE
    if shrink and not antialias:  # linear, cubic, Lanczos without antialias: resample_axis
        return NUMPY_RESIZE
    if interp in (types.INTERP_CUBIC, types.INTERP_LANCZOS3):
        return SMOOTH_RESIZE
    return LINEAR_RESIZE


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("size", [(120, 150), (60, 70), (700, 900)], ids=["down", "down7x", "up"])
@pytest.mark.parametrize("interp", INTERPS, ids=lambda t: t.name)
def test_resize_every_filter(photos, interp, size, antialias):
    args = {"size": size, "interp_type": interp, "antialias": antialias}
    compare("resize", photos, args, _resize_tol(interp, antialias, size[0] < 300))


@pytest.mark.parametrize(
    "args",
    [
        {"resize_shorter": 200},
        {"resize_longer": 333.3},
        {"resize_shorter": 300, "max_size": 350},
        {"resize_x": 301.7, "mode": "not_larger", "resize_y": 250},
        {"resize_x": -150, "resize_y": 100},
        {"size": (64, 80), "roi_start": (0.9, 0.15), "roi_end": (0.1, 0.85), "roi_relative": True},
        {"size": (64, 80), "roi_start": (10.5, 20.0), "roi_end": (200.0, 300.3)},
        {"resize_x": 150, "min_filter": types.INTERP_CUBIC, "mag_filter": types.INTERP_NN},
    ],
    ids=lambda a: "-".join(a),
)
def test_resize_size_rules_and_rois(photos, args):
    tol = SMOOTH_RESIZE if "min_filter" in args else LINEAR_RESIZE
    compare("resize", photos, args, tol)


def test_resize_nearest_rules_and_rois(photos):
    nn = {"interp_type": types.INTERP_NN}
    for args in (
        {"resize_x": 37.3},
        {"resize_shorter": 29},
        {"size": (41, 23), "roi_start": (0.9, 0.15), "roi_end": (0.1, 0.85), "roi_relative": True},
        {"size": (173, 211)},
    ):
        compare("resize", photos, {**args, **nn}, EXACT)


def test_resize_float_output_chw_and_types(photos):
    # dtype=FLOAT: the same values unrounded (LINEAR_RESIZE, in levels of the uint8 input).
    compare("resize", photos, {"size": (100, 120), "dtype": types.FLOAT}, LINEAR_RESIZE)
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:3]]
    compare("resize", chw, {"size": (100, 120)}, LINEAR_RESIZE, layout="CHW")
    compare("resize", chw, {"size": (90, 71), "interp_type": types.INTERP_NN}, EXACT, layout="CHW")
    floats = [p.astype(np.float32) / 255 for p in photos[:3]]
    compare("resize", floats, {"size": (100, 120)}, Tol(atol=16 / 255, inner=1 / 255, mean=0.001))
    gray = [p[..., :1] for p in photos[:3]]
    compare("resize", gray, {"size": (100, 120)}, LINEAR_RESIZE)
    compare(
        "resize", gray, {"size": (100, 120), "interp_type": types.INTERP_GAUSSIAN}, NUMPY_RESIZE
    )


# --- random_resized_crop ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "tol"),
    [
        ({"size": (224, 224)}, LINEAR_RESIZE),
        ({"size": (64, 100), "seed": 3}, LINEAR_RESIZE),
        ({"size": (64, 100), "interp_type": types.INTERP_CUBIC, "seed": 11}, SMOOTH_RESIZE),
        ({"size": (97, 131), "interp_type": types.INTERP_NN, "seed": 5}, EXACT),
        ({"size": 50, "dtype": types.FLOAT, "seed": 9}, LINEAR_RESIZE),
        (
            {"size": 40, "random_area": (1.5, 2.0), "random_aspect_ratio": (0.1, 10.0)},
            LINEAR_RESIZE,
        ),
    ],
    ids=["default", "shrink", "cubic", "nn", "float", "fallback"],
)
def test_random_resized_crop(photos, args, tol):
    # One seed for both runs (seed=... here, run_operator's pipeline seed otherwise): the same
    # windows, drawn on the host from the same streams.
    compare("random_resized_crop", photos, args, tol)


def test_random_resized_crop_chw(photos):
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:3]]
    compare("random_resized_crop", chw, {"size": (64, 48), "seed": 2}, LINEAR_RESIZE, layout="CHW")


# --- rotate / warp_affine --------------------------------------------------------------------


@pytest.mark.parametrize("angle", [0.0, 90.0, 30.0, -47.5, 161.0, 12.5])
@pytest.mark.parametrize("interp", [types.INTERP_LINEAR, types.INTERP_NN], ids=lambda t: t.name)
def test_rotate_angles(photos, angle, interp):
    tol = EXACT if interp == types.INTERP_NN else LINEAR_WARP
    compare("rotate", photos, {"angle": angle, "interp_type": interp}, tol)


@pytest.mark.parametrize(
    ("args", "tol"),
    [
        ({"angle": 12.5, "keep_size": True, "fill_value": 0}, LINEAR_WARP),
        ({"angle": -33.0, "size": (100, 130), "fill_value": 200}, LINEAR_WARP),
        (
            {"angle": 47.0, "keep_size": True, "interp_type": types.INTERP_NN, "fill_value": 7},
            EXACT,
        ),
        ({"angle": 12.5, "size": (100, 130), "fill_value": 128, "dtype": types.FLOAT}, FLOAT_WARP),
        ({"angle": 200.0, "dtype": types.FLOAT}, FLOAT_WARP),
    ],
    ids=["keep_fill", "size_fill", "nn_fill", "float_fill", "float_clamp"],
)
def test_rotate_sizes_fills_types(photos, args, tol):
    compare("rotate", photos, args, tol)


AFFINE = [0.9, -0.3, 12.0, 0.25, 1.1, -6.0]


@pytest.mark.parametrize(
    ("args", "tol"),
    [
        ({"matrix": AFFINE}, LINEAR_WARP),
        ({"matrix": AFFINE, "fill_value": 200, "size": (40.4, 61.5)}, LINEAR_WARP),
        (
            {"matrix": AFFINE, "inverse_map": False, "fill_value": 0, "size": (100, 140)},
            LINEAR_WARP,
        ),
        ({"matrix": AFFINE, "interp_type": types.INTERP_NN, "fill_value": 10}, EXACT),
        ({"matrix": AFFINE, "interp_type": types.INTERP_NN, "inverse_map": False}, EXACT),
        ({"matrix": [1.0, 0.0, 0.5, 0.0, 1.0, 0.5], "fill_value": 10}, LINEAR_WARP),
        ({"matrix": AFFINE, "dtype": types.FLOAT, "fill_value": 0.5}, FLOAT_WARP),
    ],
    ids=["clamp", "fill_size", "forward", "nn_fill", "nn_forward", "half_pixel", "float"],
)
def test_warp_affine(photos, args, tol):
    compare("warp_affine", photos, args, tol)


def test_warp_affine_other_types(photos):
    # int16 and float32 inputs: the CPU kernel samples DALI's points with cv2.remap in float32.
    for dtype, tol in ((np.int16, LINEAR_WARP), (np.float32, FLOAT_WARP)):
        images = [p.astype(dtype) for p in photos[:3]]
        compare("warp_affine", images, {"matrix": AFFINE, "fill_value": 3}, tol)


# --- the tolerances are not vacuous ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "gpu_args", "tol"),
    [
        # a cubic window where the linear (Triangular) one belongs
        ("resize", {"size": (120, 150)}, {"size": (120, 150), "interp_type": types.INTERP_CUBIC},
         LINEAR_RESIZE),
        # antialias forgotten on a shrink
        ("resize", {"size": (120, 150)}, {"size": (120, 150), "antialias": False}, LINEAR_RESIZE),
        # Lanczos3 where cubic belongs
        ("resize", {"size": (250, 300), "interp_type": types.INTERP_CUBIC},
         {"size": (250, 300), "interp_type": types.INTERP_LANCZOS3}, SMOOTH_RESIZE),
        # a half-pixel shift (pixel centres read as corners)
        ("warp_affine", {"matrix": AFFINE}, {"matrix": [0.9, -0.3, 12.5, 0.25, 1.1, -5.5]},
         LINEAR_WARP),
        # nearest picks of an angle 0.05 degrees off (the same canvas)
        ("rotate", {"angle": 30.0, "interp_type": types.INTERP_NN, "keep_size": True},
         {"angle": 30.05, "interp_type": types.INTERP_NN, "keep_size": True}, EXACT),
        # the fill value ignored
        ("rotate", {"angle": 30.0, "fill_value": 0}, {"angle": 30.0}, LINEAR_WARP),
    ],
    ids=["cubic_for_linear", "no_antialias", "lanczos_for_cubic", "half_pixel", "nn_pick", "fill"],
)  # fmt: skip
def test_the_tolerances_catch_a_wrong_kernel(photos, name, args, gpu_args, tol):
    with pytest.raises(AssertionError):
        compare(name, photos[:3], args, tol, gpu_args=gpu_args)


def test_every_operator_here_declares_a_gpu_kernel():
    for name, impl in IMPLS.items():
        assert "gpu" in REGISTRY[name].devices, name
        assert impl.gpu is not impl.cpu, name


# --- on the GPU ------------------------------------------------------------------------------

GPU_CASES = [
    ("resize", {"size": (120, 150)}, None, LINEAR_RESIZE),
    ("resize", {"resize_shorter": 200, "interp_type": types.INTERP_NN}, None, EXACT),
    ("resize", {"size": (700, 900), "interp_type": types.INTERP_CUBIC}, None, SMOOTH_RESIZE),
    ("resize", {"size": (250, 300), "interp_type": types.INTERP_LANCZOS3}, None, SMOOTH_RESIZE),
    ("resize", {"size": (120, 150), "interp_type": types.INTERP_GAUSSIAN}, None, NUMPY_RESIZE),
    ("resize", {"size": (90, 110), "antialias": False}, None, NUMPY_RESIZE),
    (
        "resize",
        {"size": (64, 80), "roi_start": (0.9, 0.15), "roi_end": (0.1, 0.85), "roi_relative": True},
        None,
        LINEAR_RESIZE,
    ),
    ("resize", {"size": (100, 120), "dtype": types.FLOAT}, None, LINEAR_RESIZE),
    ("random_resized_crop", {"size": (224, 224)}, None, LINEAR_RESIZE),
    ("random_resized_crop", {"size": (64, 100), "interp_type": types.INTERP_NN}, None, EXACT),
    ("rotate", {"fill_value": 0}, {"angle": [30.0, -47.5, 161.0, 90.0, 12.5, 0.0]}, LINEAR_WARP),
    ("rotate", {"interp_type": types.INTERP_NN, "keep_size": True}, {"angle": [33.0] * 6}, EXACT),
    ("rotate", {"angle": 12.5, "dtype": types.FLOAT, "fill_value": 128}, None, FLOAT_WARP),
    ("warp_affine", {"matrix": AFFINE, "fill_value": 200, "size": (40.4, 61.5)}, None, LINEAR_WARP),
    ("warp_affine", {"matrix": AFFINE, "interp_type": types.INTERP_NN}, None, EXACT),
    ("warp_affine", {"matrix": AFFINE, "inverse_map": False}, None, LINEAR_WARP),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "args", "arg_inputs", "tol"), GPU_CASES)
def test_gpu_matches_cpu(photos, name, args, arg_inputs, tol):
    gpu_matches_cpu(name, photos, layout="HWC", args=args, arg_inputs=arg_inputs, atol=tol.atol)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "args", "arg_inputs", "tol"), GPU_CASES)
def test_gpu_is_the_numpy_path_on_cupy(photos, name, args, arg_inputs, tol):
    """The same code on CuPy and on NumPy: NN picks equal, values within 1 level (float32 sums
    in another order: cuBLAS against NumPy's matmul) or 1e-4 for float outputs."""
    extra = dict(arg_inputs or {})
    got = _pipeline_output(name, photos, args, extra, device="gpu")
    assert got.device == "gpu"
    with gpu_kernel_on_cpu(name):
        want = _pipeline_output(name, photos, args, extra, device="cpu")
    got = got.as_cpu()
    exact = tol is EXACT
    for i in range(len(photos)):
        a, b = want.at(i), got.at(i)
        assert a.shape == b.shape and a.dtype == b.dtype
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        limit = 0 if exact else (1e-4 if a.dtype.kind == "f" else 1)
        assert diff.max(initial=0) <= limit, (name, args, i, diff.max())
        assert exact or diff.mean() <= 0.01, (name, args, i, diff.mean())


def _pipeline_output(name: str, images, args, arg_inputs, device: str):
    pipe = Pipeline(
        batch_size=len(images), num_threads=2, device_id=0 if device == "gpu" else None, seed=7
    )
    with pipe:
        data = fn.external_source(source=lambda: list(images), layout="HWC")
        kwargs = dict(args)
        for key, values in arg_inputs.items():
            kwargs[key] = fn.external_source(
                source=lambda values=values: [np.asarray(v, np.float32) for v in values]
            )
        op = getattr(fn, name)
        pipe.set_outputs(
            op(data, device=device, **kwargs) if device == "gpu" else op(data, **kwargs)
        )
    (out,) = pipe.run()
    return out


@pytest.mark.gpu
def test_gpu_outputs_stay_on_the_gpu(photos):
    pipe = Pipeline(batch_size=3, num_threads=2, device_id=0, seed=3)
    with pipe:
        images = fn.external_source(source=lambda: list(photos[:3]), layout="HWC").gpu()
        resized = fn.resize(images, resize_shorter=128, device="gpu")
        rotated = fn.rotate(resized, angle=17.0, fill_value=0, device="gpu")
        warped = fn.warp_affine(rotated, matrix=AFFINE, device="gpu")
        cropped = fn.random_resized_crop(warped, size=(64, 64), device="gpu")
        planar = fn.external_source(
            source=lambda: [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:3]],
            layout="CHW",
        )
        chw = fn.resize(planar, size=(32, 48), device="gpu")
        pipe.set_outputs(resized, rotated, warped, cropped, chw)
    outs = pipe.run()
    for out in outs:
        assert out.device == "gpu"
        assert out.as_cpu().device == "cpu"
    assert outs[3].as_cpu().at(0).shape == (64, 64, 3)
    assert outs[4].layout() == "CHW" and outs[4].as_cpu().at(0).shape == (3, 32, 48)


@pytest.mark.gpu
def test_gpu_warp_affine_with_a_matrix_input(photos):
    """warp_affine(images, mtx) on the GPU: the matrices arrive on the GPU too and are read on
    the host; against the CPU within LINEAR_WARP."""
    outs = {}
    for device in ("cpu", "gpu"):
        pipe = Pipeline(batch_size=3, num_threads=1, device_id=0 if device == "gpu" else None)
        with pipe:
            images = fn.external_source(source=lambda: list(photos[:3]), layout="HWC")
            mt = fn.transforms.rotation(angle=23.0, center=(100, 80))
            kwargs = {"device": "gpu"} if device == "gpu" else {}
            pipe.set_outputs(fn.warp_affine(images, mt, inverse_map=False, **kwargs))
        (outs[device],) = pipe.run()
    assert outs["gpu"].device == "gpu"
    gpu = outs["gpu"].as_cpu()
    for i in range(3):
        diff = np.abs(gpu.at(i).astype(int) - outs["cpu"].at(i).astype(int))
        assert diff.max() <= LINEAR_WARP.atol and diff.mean() <= LINEAR_WARP.mean
