"""The GPU kernels of the noise operators, grid_mask, erase, pad and the tensor operators
(cat, stack, transpose, reshape, expand_dims, squeeze, one_hot) (issue 18), checked two ways:

- here, without a GPU: each operator's ``gpu`` kernel runs on NumPy arrays in place of its
  ``cpu`` kernel, through ``augkit.eager`` (``tests/operator_check.run_gpu_kernel``), and is
  compared with the CPU kernel on real photos. It runs twice: with ``xp`` = NumPy, and with
  NumPy under another name (``CUPY_BRANCHES``), so that every ``xp is np`` shortcut is off and
  the kernels take CuPy's branches (no OpenCV, ``convert_sat`` instead of the uint8 shortcut,
  the host's draws moved with ``xp.asarray``...).
- on a CUDA machine (``@pytest.mark.gpu``, skipped elsewhere with the reason): the same cases
  with ``device="gpu"`` against ``device="cpu"`` (``operator_check.gpu_matches_cpu``; cat and
  stack with two inputs through ``_gpu_matches_cpu_inputs``).

Tolerance: exact, every case. These kernels move, copy, compare or select values (pad, erase,
cat, stack, transpose, reshape, one_hot, salt_and_pepper), multiply by 0 or 1 (grid_mask:
the same float32 mask maths, one operation per call), or apply the host's very draws with the
CPU's float32 ufunc sequence, one operation per call (gaussian, shot: no fused multiply-add
can form across calls), then ``convert_sat``, which equals the CPU's uint8 shortcut bit for
bit (noise.py). The random operators draw on the host from the sample's stream as on the
CPU, so the same seed gives the same values.

``test_exact_comparison_is_not_vacuous`` checks that a wrong argument (or another seed)
breaks the comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from augkit import types
from augkit.operators.erase import Erase
from augkit.operators.geometric.pad import Pad
from augkit.operators.grid_mask import GridMask
from augkit.operators.noise import GaussianNoise, SaltAndPepperNoise, ShotNoise
from augkit.operators.tensors.join import Cat, Stack
from augkit.operators.tensors.one_hot import OneHot
from augkit.operators.tensors.shape import ExpandDims, Reshape, Squeeze, Transpose
from augkit.tensors import TensorList
from tests.operator_check import (
    GpuCase,
    as_chw,
    as_float,
    as_gray,
    as_int16,
    case_by_id,
    per_sample,
    run_on_both_devices,
)

# --- inputs -------------------------------------------------------------------------------------


def _small(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Corners of the photos, of different sizes (pad's batch extents differ)."""
    sizes = [(40, 60), (55, 30), (33, 33), (60, 45), (21, 70), (48, 48)]
    return [np.ascontiguousarray(p[:h, :w]) for p, (h, w) in zip(photos, sizes, strict=True)]


def _uint32(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p.astype(np.uint32) * 1000 for p in photos]


def _classes(photos: list[np.ndarray]) -> list[np.ndarray]:
    """2-D class maps 0..9 (and some 10s, 11s: out of range for 10 classes)."""
    return [(p[:50, :40, 0] // 22).astype(np.int32) for p in photos]


def _float_classes(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Scalars: float class indices, truncated (one out of range, one negative)."""
    return [np.float32(v) for v in (0.0, 3.7, -0.5, 9.99, 12.0, 5.2)]


def _flipped(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(p[::-1]) for p in photos]


# --- the cases ------------------------------------------------------------------------------

SEED = {"seed": 1234}


@dataclass
class Case(GpuCase):
    """Exact: equal shapes, dtypes and values (``same``)."""

    second: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
    """A second input (cat, stack), made from the first input's samples."""

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        if self.second is None:
            return []
        return [TensorList(list(self.second(images)), self.layout)]

    def within(self, want: list[np.ndarray], got: list[np.ndarray]) -> bool:
        return same(want, got)

    def assert_matches(self, want: list[np.ndarray], got: list[np.ndarray]) -> None:
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert (a.shape, a.dtype) == (b.shape, b.dtype), (self.id, i, a.shape, b.shape)
            np.testing.assert_array_equal(b, a, err_msg=f"{self.id}: sample {i}")


NOISE_CASES = [
    Case("gaussian", "noise.gaussian", GaussianNoise, args={"stddev": 20.0, **SEED}),
    Case(
        "gaussian_per_sample",
        "noise.gaussian",
        GaussianNoise,
        args=SEED,
        arg_inputs={
            "mean": per_sample(0.0, 2.5, -10.0, 300.0, 0.0, 1.0),
            "stddev": per_sample(1.0, 0.0, 30.0, 5.0, -4.0, 100.0),
        },
    ),
    Case("gaussian_float", "noise.gaussian", GaussianNoise, as_float, args={"stddev": 0.1, **SEED}),
    Case(
        "gaussian_int16",
        "noise.gaussian",
        GaussianNoise,
        as_int16,
        args={"stddev": 50.0, "mean": 3.0, **SEED},
    ),
    Case(
        "gaussian_uint32_float64",
        "noise.gaussian",
        GaussianNoise,
        _uint32,
        args={"stddev": 5000.0, **SEED},
    ),
    Case(
        "salt_and_pepper", "noise.salt_and_pepper", SaltAndPepperNoise, args={"prob": 0.2, **SEED}
    ),
    Case(
        "salt_and_pepper_per_channel",
        "noise.salt_and_pepper",
        SaltAndPepperNoise,
        args={"prob": 0.3, "per_channel": True, "salt_vs_pepper": 0.7, **SEED},
    ),
    Case(
        "salt_and_pepper_chw",
        "noise.salt_and_pepper",
        SaltAndPepperNoise,
        as_chw,
        "CHW",
        {"prob": 0.25, **SEED},
    ),
    Case(
        "salt_and_pepper_per_sample_float",
        "noise.salt_and_pepper",
        SaltAndPepperNoise,
        as_float,
        args=SEED,
        arg_inputs={
            "prob": per_sample(0.0, 0.1, 0.5, 1.0, 0.3, 0.05),
            "salt_vs_pepper": per_sample(0.5, 0.0, 1.0, 0.3, 0.9, 0.5),
            "salt_val": per_sample(0.9, 2.0, 1.0, 0.5, -1.0, 0.7),
            "pepper_val": per_sample(0.1, -3.0, 0.0, 0.25, 0.5, 0.0),
        },
    ),
    Case(
        "salt_and_pepper_wrapped_values",
        "noise.salt_and_pepper",
        SaltAndPepperNoise,
        args={"prob": 0.4, "salt_val": 300.0, "pepper_val": -3.5, **SEED},
    ),
    Case("shot", "noise.shot", ShotNoise, args={"factor": 20.0, **SEED}),
    Case(
        "shot_per_sample",
        "noise.shot",
        ShotNoise,
        args=SEED,
        arg_inputs={"factor": per_sample(1.0, 0.0, 5.0, 50.0, -2.0, 0.5)},
    ),
    Case("shot_float", "noise.shot", ShotNoise, as_float, args={"factor": 0.01, **SEED}),
    Case("shot_int16", "noise.shot", ShotNoise, as_int16, args={"factor": 7.0, **SEED}),
]

GRID_CASES = [
    Case("grid_mask", "grid_mask", GridMask, args={"tile": 40, "ratio": 0.4}),
    Case(
        "grid_mask_rotated_shifted",
        "grid_mask",
        GridMask,
        args={"tile": 33, "ratio": 0.6, "angle": 0.7, "shift_x": 5.5, "shift_y": -3.0},
    ),
    Case(
        "grid_mask_per_sample",
        "grid_mask",
        GridMask,
        arg_inputs={
            "angle": per_sample(0.0, 0.3, -1.2, 3.0, 0.05, 10.0),
            "tile": per_sample(10, 25, 60, 7, 100, 31, dtype=np.int32),
            "ratio": per_sample(0.5, 0.2, 0.8, 1.5, 0.0, 0.35),
        },
    ),
    Case("grid_mask_float", "grid_mask", GridMask, as_float, args={"tile": 20, "angle": 0.4}),
    Case("grid_mask_int16_chw", "grid_mask", GridMask, lambda p: as_chw(as_int16(p)), "CHW"),
    Case("grid_mask_gray_hw", "grid_mask", GridMask, lambda p: [q[..., 0] for q in p], "HW"),
]

ERASE_CASES = [
    Case(
        "erase",
        "erase",
        Erase,
        args={"anchor": (10, 20), "shape": (50, 80), "axis_names": "HW", "fill_value": 7},
    ),
    Case(
        "erase_regions_per_channel_fill",
        "erase",
        Erase,
        args={
            "anchor": (0, 0, 30, 40, 100, -10),
            "shape": (20, 30, 40, 50, 500, 60),
            "axis_names": "HW",
            "fill_value": (255, 0, 128),
        },
    ),
    Case(
        "erase_normalized_centered",
        "erase",
        Erase,
        as_float,
        args={
            "anchor": (0.5, 0.5),
            "shape": (0.3, 0.6),
            "normalized": True,
            "centered_anchor": True,
            "fill_value": -1.5,
        },
    ),
    Case(
        "erase_per_sample",
        "erase",
        Erase,
        args={"axis_names": "WH", "fill_value": 300},  # 300 wraps to 44 in uint8
        arg_inputs={
            "anchor": per_sample((1, 2), (10, 0), (0, 0), (50, 60), (-5, 3), (7, 7)),
            "shape": per_sample((30, 40), (20, 100), (0, 10), (100, 100), (40, 40), (-3, 5)),
        },
    ),
    Case(
        "erase_chw_channel_axis",
        "erase",
        Erase,
        as_chw,
        "CHW",
        {"anchor": (1, 5), "shape": (1, 30), "axis_names": "CH", "fill_value": 0},
    ),
]

PAD_CASES = [
    Case("pad_to_batch_max", "pad", Pad, _small, args={"fill_value": 9}),
    Case(
        "pad_hw_align",
        "pad",
        Pad,
        _small,
        args={"axis_names": "HW", "align": 16, "fill_value": -3.7},
    ),
    Case("pad_shape", "pad", Pad, _small, args={"axes": (0, 1), "shape": (64, -1)}),
    Case(
        "pad_per_sample_fill_float",
        "pad",
        Pad,
        lambda p: as_float(_small(p)),
        args={"axis_names": "W", "align": 7},
        arg_inputs={"fill_value": per_sample(0.0, 0.5, -1.0, 2.0, 0.25, 1e9)},
    ),
    Case("pad_clamped_fill", "pad", Pad, _small, args={"fill_value": 300, "align": (4, 8, 1)}),
]

TENSOR_CASES = [
    Case("transpose_chw", "transpose", Transpose, args={"perm": (2, 0, 1)}),
    Case("transpose_swap_hw", "transpose", Transpose, args={"perm": (1, 0, 2)}),
    Case("transpose_reversed_float", "transpose", Transpose, as_float),
    Case(
        "transpose_keep_layout",
        "transpose",
        Transpose,
        args={"perm": (0, 2, 1), "transpose_layout": False},
    ),
    Case("reshape_flat", "reshape", Reshape, args={"shape": (-1,), "layout": ""}),
    Case("reshape_src_dims", "reshape", Reshape, args={"src_dims": (2, 0, 1), "layout": "CHW"}),
    Case("reshape_rel_shape", "reshape", Reshape, args={"rel_shape": (1, 3, -1), "layout": ""}),
    Case("expand_dims", "expand_dims", ExpandDims, args={"axes": (0,), "new_axis_names": "F"}),
    Case("expand_dims_two", "expand_dims", ExpandDims, as_float, args={"axes": (3, 0)}),
    Case("squeeze", "squeeze", Squeeze, as_gray, args={"axes": (2,)}),
    Case("squeeze_names", "squeeze", Squeeze, as_gray, args={"axis_names": "C"}),
    Case("one_hot", "one_hot", OneHot, _classes, "HW", {"num_classes": 10}),
    Case(
        "one_hot_axis0_uint8",
        "one_hot",
        OneHot,
        _classes,
        "HW",
        {"num_classes": 12, "axis": 0, "dtype": types.UINT8, "on_value": 300, "off_value": 2},
    ),
    Case(
        "one_hot_scalars",
        "one_hot",
        OneHot,
        _float_classes,
        "",
        {"num_classes": 11, "on_value": -2.5, "axis_name": "K"},
    ),
    Case("cat_channels", "cat", Cat, args={"axis": 2}, second=_flipped),
    Case("cat_rows_float", "cat", Cat, as_float, args={"axis_name": "H"}, second=_flipped),
    Case("stack", "stack", Stack, args={"axis": 0, "axis_name": "F"}, second=_flipped),
    Case("stack_last", "stack", Stack, as_int16, args={"axis": 3}, second=_flipped),
]

CASES = NOISE_CASES + GRID_CASES + ERASE_CASES + PAD_CASES + TENSOR_CASES


# --- running ------------------------------------------------------------------------------------


def same(want: list[np.ndarray], got: list[np.ndarray]) -> bool:
    """Equal shapes, dtypes and values (NaN equal to NaN; -0.0 equal to 0.0)."""
    return all(
        a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
        for a, b in zip(want, got, strict=True)
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_kernel_on_numpy_matches_cpu(
    case: Case, photos: list[np.ndarray], xp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = case.inputs(photos)
    case.assert_matches(case.run_cpu(images), case.run_gpu(monkeypatch, images, xp))


@pytest.mark.parametrize(
    ("case_id", "wrong"),
    [
        ("gaussian", {"stddev": 20.5}),
        ("gaussian", {"seed": 1235}),
        ("gaussian_per_sample", {"mean": per_sample(0.0, 2.5, -10.0, 300.0, 0.0, 1.5)}),
        ("salt_and_pepper", {"prob": 0.21}),
        ("salt_and_pepper", {"seed": 1235}),
        ("salt_and_pepper_chw", {"salt_vs_pepper": 0.6}),
        ("shot", {"factor": 21.0}),
        ("shot_float", {"seed": 99}),
        ("grid_mask", {"ratio": 0.45}),
        ("grid_mask_rotated_shifted", {"angle": 0.71}),
        ("erase", {"anchor": (10, 21)}),
        ("erase_regions_per_channel_fill", {"fill_value": (255, 0, 127)}),
        ("pad_hw_align", {"fill_value": 3.0}),
        ("transpose_chw", {"perm": (2, 1, 0)}),
        ("one_hot", {"num_classes": 11}),
        ("cat_channels", {"axis": 1}),
        ("stack", {"axis": 1}),
    ],
)
def test_exact_comparison_is_not_vacuous(
    case_id: str, wrong: dict[str, Any], photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU kernel given a slightly wrong argument (or another seed) differs from the CPU
    kernel with the right one, which it equals with the right one."""
    case_by_id(CASES, case_id).assert_not_vacuous(photos, monkeypatch, wrong)


def test_the_cases_cover_every_gpu_kernel_of_this_file() -> None:
    """Every operator given a gpu kernel here has cases, and its schema lists the GPU."""
    from augkit.operators.registry import REGISTRY

    names = {c.name for c in CASES}
    for name in names:
        assert "gpu" in REGISTRY[name].devices, name
        impl = REGISTRY[name].impl
        assert callable(getattr(impl, "gpu", None)), name


# --- on a CUDA device ---------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_matches_cpu(case: Case, photos: list[np.ndarray]) -> None:
    """device="gpu" against device="cpu" in a pipeline (same seed): equal integers, floats
    within 1e-6 (``gpu_matches_cpu``'s rule; these kernels give equal floats too)."""
    images = case.inputs(photos)
    if case.second is not None:  # cat, stack: equal values
        cpu, gpu = run_on_both_devices(
            case.name, [images, case.second(images)], layouts=[case.layout] * 2, args=case.args
        )
        for i in range(len(images)):
            np.testing.assert_array_equal(gpu.at(i), cpu.at(i), err_msg=f"{case.id}: sample {i}")
        return
    args = {k: v for k, v in case.args.items() if k != "seed"}  # the pipeline's seed (7) instead
    case.assert_gpu_matches_cpu(photos, args)
