"""The GPU kernels of water, sphere, jitter, experimental.median_blur / dilate / erode, filter
and equalize (issue 18), checked two ways (as tests/operators/test_gpu_color_filters.py):

- here, without a GPU: each operator's ``gpu`` kernel (written against the array module,
  ``augkit.backend.array_module``) runs on NumPy arrays in place of its ``cpu`` kernel, through
  ``augkit.eager`` (a pipeline's argument handling, per-sample arguments included), with ``xp``
  = NumPy and NumPy under another name (``CUPY_BRANCHES``: no ``xp is np`` shortcut), and is
  compared with the CPU kernel on real photos;
- on a CUDA machine (``@pytest.mark.gpu``, skipped elsewhere with the reason): device="gpu"
  against device="cpu" in a pipeline (``tests/operator_check.gpu_matches_cpu``; fn.filter, with
  its second and third inputs, through ``_filter_gpu_matches_cpu`` below).

Tolerances (``Case.max_diff``/``mean_diff``):

- water, sphere, jitter, nearest: exact (the same host-made float32 points, ``floor``; the
  parity cases water_defaults, water_waves_fill_mask, sphere_nn are exact against DALI too).
  jitter draws on the host from the same per-sample stream: for one seed the GPU moves the
  pixels as the CPU does. Linear uint8: the GPU computes DALI's Sampler2D formula, the CPU
  OpenCV's float32 remap: one level, mean 2e-4 (tests/dali_parity/cases_geometry_warp.py:
  water_linear and sphere_linear_gray are equal on the parity inputs, "a value next to .5 could
  round the other way"; the mean bound is gaussian_blur's for a float32 sum-order level, 0.0
  measured). Linear float: 5e-6, mean 1e-7 (water_float; 1.2e-7, 1.1e-8 measured).
- median_blur, dilate, erode: exact (the same functions: an exact median, a rectangle's
  maximum/minimum with the same border indices; DALI runs them on the GPU only, so their CPU
  references are scipy's, tests/operators/test_morphology.py, also exact).
- equalize: exact (equalizeHist's table, computed in the same float32 arithmetic; the parity
  cases equalize_* are exact against DALI).
- filter: the GPU sums the taps in row-major order, OpenCV in its own (a DFT from 130 taps):
  uint8 outputs one level, mean 2e-4 (gaussian_blur's bound for float32 sums in another order,
  tests/dali_parity/cases_filters.py; ~1e-5 measured, 5e-5 for the 15x11 filter); FLOAT outputs
  of uint8 images 1e-4, mean 1e-5 (gaussian_float_output); float images 5e-7, mean 5e-8
  (gaussian's float images; the parity case filter_float_input has max 5e-7, mean 1e-9, but
  there DALI and augkit run the same OpenCV call); the DFT-sized filter on float images 2e-6,
  mean 2e-7 (laplacian_scale_float: float32 sums in another order; 8.3e-7, 9.7e-8 measured).

``test_tolerances_are_not_vacuous`` checks that a wrong argument breaks these bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from augkit import backend, types
from augkit.operators.color.equalize import Equalize
from augkit.operators.filters.filter import Filter
from augkit.operators.filters.morphology import Dilate, Erode, MedianBlur
from augkit.operators.geometric.distortions import JitterImpl, SphereImpl, WaterImpl
from augkit.tensors import TensorList
from tests import operator_check
from tests.operator_check import (
    CUPY_BRANCHES,
    GpuCase,
    as_chw,
    as_float,
    as_gray,
    as_int16,
    as_sequences,
    as_uint16,
    case_by_id,
    distance,
    per_sample,
    run_on_both_devices,
)

SEED = 7  # jitter: the same seed on both devices (gpu_matches_cpu's too)

# --- inputs -------------------------------------------------------------------------------------


def _hw(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p[..., 0].copy() for p in photos]


def _flat_channel(photos: list[np.ndarray]) -> list[np.ndarray]:
    """RGB photos whose blue channel is constant (equalize leaves a constant plane)."""
    out = []
    for k, p in enumerate(photos):
        q = p.copy()
        q[..., 2] = 40 * k
        out.append(q)
    return out


def _filters(*shapes: tuple[int, int]) -> list[np.ndarray]:
    """Per-sample float32 filters summing to 1 (the parity cases' recipe), from fixed seeds."""
    out = []
    for seed, shape in enumerate(shapes):
        values = np.random.default_rng(seed).uniform(-0.5, 1.0, shape)
        out.append((values / values.sum()).astype(np.float32))
    return out


_MIXED = _filters((3, 3), (3, 5), (5, 3), (1, 7), (4, 4), (2, 6))
_LARGE = _filters(*[(15, 11)] * 6)  # OpenCV filters these through a DFT (>= 130 taps)


@dataclass
class Case(GpuCase):
    extra: tuple[list[np.ndarray], ...] = ()
    """fn.filter's filters and fill values: more positional inputs, one array per sample."""

    def call_args(self, overrides: dict[str, Any]) -> dict[str, Any]:
        args = super().call_args(overrides)
        if self.impl is JitterImpl:
            args.setdefault("seed", SEED)
        return args

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        return [TensorList(list(x), "") for x in self.extra_inputs(len(images))]

    def extra_inputs(self, n: int) -> list[list[np.ndarray]]:
        return [[np.asarray(x) for x in values[:n]] for values in self.extra]


# water/sphere linear uint8 (see the module docstring).
_LINEAR = {"max_diff": 1, "mean_diff": 2e-4}
_LINEAR_FLOAT = {"max_diff": 5e-6, "mean_diff": 1e-7}
# filter (see the module docstring).
_LEVEL = {"max_diff": 1, "mean_diff": 2e-4}
_FLOAT_OUT = {"max_diff": 1e-4, "mean_diff": 1e-5}
_FLOAT_IN = {"max_diff": 5e-7, "mean_diff": 5e-8}
_FLOAT_DFT = {"max_diff": 2e-6, "mean_diff": 2e-7}

_MASKS = per_sample(1, 0, 1, 1, 0, 1, dtype=np.int32)
_WAVES = {"ampl_x": 3.7, "ampl_y": -6.1, "freq_x": 0.13, "freq_y": 0.071, "phase_x": 0.4}

DISPLACEMENT_CASES = [
    Case("water_defaults", "water", WaterImpl),
    Case(
        "water_waves_fill_mask",
        "water",
        WaterImpl,
        args={**_WAVES, "phase_y": -1.3, "fill_value": 300.0},
        arg_inputs={"mask": _MASKS},
    ),
    Case(
        "water_linear",
        "water",
        WaterImpl,
        args={"interp_type": types.INTERP_LINEAR, "fill_value": 20.0},
        **_LINEAR,
    ),
    Case(
        "water_float_linear",
        "water",
        WaterImpl,
        as_float,
        args={"ampl_x": 2.5, "interp_type": types.INTERP_LINEAR},
        **_LINEAR_FLOAT,
    ),
    Case("sphere_nn_fill", "sphere", SphereImpl, args={"fill_value": 7.0}),
    Case(
        "sphere_linear_gray",
        "sphere",
        SphereImpl,
        as_gray,
        args={"interp_type": types.INTERP_LINEAR},
        **_LINEAR,
    ),
    Case("sphere_float_mask", "sphere", SphereImpl, as_float, arg_inputs={"mask": _MASKS}),
    Case("jitter_default", "jitter", JitterImpl),
    Case(
        "jitter_n5_fill_mask",
        "jitter",
        JitterImpl,
        args={"nDegree": 5, "fill_value": -5.0},
        arg_inputs={"mask": _MASKS},
    ),
    Case(
        "jitter_linear_float",
        "jitter",
        JitterImpl,
        as_float,
        args={"nDegree": 3, "interp_type": types.INTERP_LINEAR},
        **_LINEAR_FLOAT,
    ),
]

MORPHOLOGY_CASES = [
    Case("median_default", "experimental.median_blur", MedianBlur),
    Case(
        "median_per_sample_windows",
        "experimental.median_blur",
        MedianBlur,
        arg_inputs={
            "window_size": per_sample((5, 3), (3, 5), 7, 1, (1, 9), 5, dtype=np.int32),
        },
    ),
    Case("median_float", "experimental.median_blur", MedianBlur, as_float, args={"window_size": 5}),
    Case(
        "median_uint16_hw",
        "experimental.median_blur",
        MedianBlur,
        lambda p: [x[..., 0] for x in as_uint16(p)],
        "HW",
        {"window_size": 3},
    ),
    Case(
        "median_sequences",
        "experimental.median_blur",
        MedianBlur,
        as_sequences,
        "FHWC",
        {"window_size": (3, 5)},
    ),
    Case("dilate_default", "experimental.dilate", Dilate),
    Case("erode_default", "experimental.erode", Erode),
    *[
        Case(
            f"dilate_{border}",
            "experimental.dilate",
            Dilate,
            args={"border_mode": border, "mask_size": (5, 3), "anchor": (0, 2)},
        )
        for border in ("replicate", "reflect", "reflect_101", "wrap")
    ],
    Case(
        "erode_float_iterations",
        "experimental.erode",
        Erode,
        as_float,
        args={"mask_size": 4, "iterations": 2, "border_mode": "reflect"},
    ),
    Case(
        "erode_per_sample_mask_anchor",
        "experimental.erode",
        Erode,
        as_int16,
        args={"border_mode": "wrap"},
        arg_inputs={
            "mask_size": per_sample((3, 3), (1, 5), (7, 2), (2, 2), -1, (9, 1), dtype=np.int32),
            "anchor": per_sample(-1, (0, 4), (6, 0), (1, 1), -1, (-1, 0), dtype=np.int32),
        },
    ),
    Case(
        "dilate_chw_uint16",
        "experimental.dilate",
        Dilate,
        lambda p: as_chw(as_uint16(p)),
        "CHW",
        {"mask_size": (3, 7), "iterations": 3},
    ),
]

FILTER_CASES = [
    *[
        Case(
            f"filter_{border}", "filter", Filter, args={"border": border}, extra=(_MIXED,), **_LEVEL
        )
        for border in ("reflect_101", "reflect_1001", "wrap", "clamp")
    ],
    Case(
        "filter_constant_zero",
        "filter",
        Filter,
        args={"border": "constant"},
        extra=(_MIXED,),
        **_LEVEL,
    ),
    Case(
        "filter_constant_fill_per_sample",
        "filter",
        Filter,
        args={"border": "constant"},
        extra=(_MIXED, per_sample(0, 100, 200, 255, 3, 50, dtype=np.uint8)),
        **_LEVEL,
    ),
    Case(
        "filter_anchor_per_sample",
        "filter",
        Filter,
        arg_inputs={
            "anchor": per_sample(0, (2, 4), (4, 0), (0, 6), (3, -1), (-1, 5), dtype=np.int32)
        },
        extra=(_MIXED,),
        **_LEVEL,
    ),
    Case("filter_valid", "filter", Filter, args={"mode": "valid"}, extra=(_MIXED,), **_LEVEL),
    Case(
        "filter_float_output",
        "filter",
        Filter,
        args={"dtype": types.FLOAT},
        extra=(_MIXED,),
        **_FLOAT_OUT,
    ),
    Case(
        "filter_float_wrap",
        "filter",
        Filter,
        as_float,
        args={"border": "wrap"},
        extra=(_MIXED,),
        **_FLOAT_IN,
    ),
    Case("filter_chw", "filter", Filter, as_chw, "CHW", extra=(_MIXED,), **_LEVEL),
    Case(
        "filter_int16",
        "filter",
        Filter,
        as_int16,
        args={"border": "clamp"},
        extra=(_MIXED,),
        **_LEVEL,
    ),
    Case("filter_large_gray", "filter", Filter, as_gray, extra=(_LARGE,), **_LEVEL),
    Case("filter_large_float", "filter", Filter, as_float, extra=(_LARGE,), **_FLOAT_DFT),
]

EQUALIZE_CASES = [
    Case("equalize_hwc", "equalize", Equalize),
    Case("equalize_gray_hw", "equalize", Equalize, _hw, "HW"),
    Case("equalize_chw", "equalize", Equalize, as_chw, "CHW"),
    Case("equalize_sequences", "equalize", Equalize, as_sequences, "FHWC"),
    Case("equalize_constant_channel", "equalize", Equalize, _flat_channel),
]

CASES = DISPLACEMENT_CASES + MORPHOLOGY_CASES + FILTER_CASES + EQUALIZE_CASES


# --- running ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_kernel_on_numpy_matches_cpu(
    case: Case, photos: list[np.ndarray], xp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = case.inputs(photos)
    case.assert_matches(case.run_cpu(images), case.run_gpu(monkeypatch, images, xp))


@pytest.mark.parametrize(
    ("case_id", "wrong"),
    [
        ("water_defaults", {"ampl_x": 10.5}),
        ("water_linear", {"phase_y": 0.05}),
        ("water_float_linear", {"ampl_x": 2.55}),
        ("sphere_nn_fill", {"fill_value": 8.0}),
        ("sphere_linear_gray", {"interp_type": types.INTERP_NN}),
        ("jitter_default", {"seed": SEED + 1}),
        ("jitter_n5_fill_mask", {"nDegree": 4}),
        (
            "median_per_sample_windows",
            {"window_size": per_sample(3, 3, 7, 1, 9, 5, dtype=np.int32)},
        ),
        ("median_float", {"window_size": 3}),
        ("dilate_reflect", {"border_mode": "reflect_101"}),
        ("dilate_wrap", {"anchor": (1, 2)}),
        ("erode_float_iterations", {"iterations": 1}),
        ("filter_reflect_101", {"border": "reflect_1001"}),
        ("filter_anchor_per_sample", {"anchor": 0}),
        ("filter_constant_fill_per_sample", {"border": "clamp"}),
        ("filter_float_wrap", {"border": "clamp"}),
        ("filter_large_float", {"border": "wrap"}),
    ],
)
def test_tolerances_are_not_vacuous(
    case_id: str, wrong: dict[str, Any], photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU kernel given a slightly wrong argument falls outside the case's bounds, which the
    right argument meets."""
    case_by_id(CASES, case_id).assert_not_vacuous(photos, monkeypatch, wrong)


def test_equalize_is_not_the_identity(
    photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """equalize's cases are exact: a kernel that equalized nothing (or another plane's table)
    would differ from the CPU's; here, the photos themselves and a channel-swapped result."""
    case = case_by_id(CASES, "equalize_hwc")
    images = case.inputs(photos)
    want = case.run_cpu(images)
    got = case.run_gpu(monkeypatch, images, CUPY_BRANCHES)
    assert case.within(want, got)
    assert not case.within(want, images)
    assert not case.within(want, [g[..., ::-1] for g in got])


def test_jitter_gpu_draws_like_the_cpu_in_a_pipeline(
    photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a pipeline (2 threads, 2 iterations), jitter's gpu kernel on NumPy gives the CPU
    kernel's batches: the draws come from the same per-sample streams."""
    small = [p[:64, :80] for p in photos]
    want = operator_check.run_operator(
        "jitter", [small], layout="HWC", args={"nDegree": 4}, num_threads=2, iterations=2
    )
    with monkeypatch.context() as patch:
        patch.setattr(JitterImpl, "cpu", JitterImpl.gpu)
        patch.setattr(backend, "array_module", lambda x: CUPY_BRANCHES)
        got = operator_check.run_operator(
            "jitter", [small], layout="HWC", args={"nDegree": 4}, num_threads=2, iterations=2
        )
    for (a,), (b,) in zip(want, got, strict=True):
        for i in range(len(small)):
            np.testing.assert_array_equal(a.at(i), b.at(i))
    assert not np.array_equal(want[0][0].at(0), want[1][0].at(0))  # iterations draw anew


# --- on a CUDA device ---------------------------------------------------------------------------

GPU_CASES = [
    c
    for c in CASES
    if c.id
    in {
        "water_waves_fill_mask",
        "water_linear",
        "water_float_linear",
        "sphere_linear_gray",
        "jitter_n5_fill_mask",
        "median_per_sample_windows",
        "median_float",
        "dilate_reflect",
        "erode_per_sample_mask_anchor",
        "filter_constant_fill_per_sample",
        "filter_anchor_per_sample",
        "filter_float_output",
        "filter_large_float",
        "equalize_hwc",
        "equalize_sequences",
    }
]


def _filter_gpu_matches_cpu(case: Case, images: list[np.ndarray]) -> None:
    """``gpu_matches_cpu`` for fn.filter, whose filters (and fill values) are more inputs."""
    more = case.extra_inputs(len(images))
    cpu, gpu = run_on_both_devices(
        case.name,
        [images, *more],
        layouts=[case.layout] + [""] * len(more),
        args=case.args,
        arg_inputs=case.arg_inputs,
    )
    want = [np.asarray(cpu.at(i)) for i in range(len(images))]
    got = [np.asarray(gpu.at(i)) for i in range(len(images))]
    largest, mean = distance(want, got)
    assert largest <= case.max_diff and mean <= case.mean_diff, (case.id, largest, mean)


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: c.id)
def test_gpu_matches_cpu(case: Case, photos: list[np.ndarray]) -> None:
    """device="gpu" against device="cpu" in a pipeline, within the case's largest difference
    (``atol``; 0: equal integers, floats within 1e-6)."""
    images = case.inputs(photos)
    if case.extra:
        _filter_gpu_matches_cpu(case, images)
        return
    case.assert_gpu_matches_cpu(photos)
