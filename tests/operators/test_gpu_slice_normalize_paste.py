"""The GPU kernels of slice, normalize and paste (issue 18), checked two ways:

- here, without a GPU: each operator's ``gpu`` kernel runs on NumPy arrays in place of its
  ``cpu`` kernel, through ``augkit.eager`` (``tests/operator_check.run_gpu_kernel``), and is
  compared with the CPU kernel on real photos, with ``xp`` = NumPy and with NumPy under another
  name (``CUPY_BRANCHES``: every ``xp is np`` shortcut off, so no OpenCV, no LUT, no float64
  statistics). ``normalize(batch=True)`` runs its ``gpu_batch`` kernel the same way.
- on a CUDA machine (``@pytest.mark.gpu``, skipped elsewhere): the same cases with
  ``device="gpu"`` against ``device="cpu"`` (``operator_check.gpu_matches_cpu``).

Tolerances:

- slice: exact (copies, gathers, pads and exact conversions: ``trunc`` and ``convert_sat``).
- paste: exact (a filled canvas and one copy).
- normalize with given mean and stddev: exact (the CPU's float32 ufunc sequence, which its
  uint8 LUT path equals bit for bit).
- normalize with computed statistics: the GPU kernel sums in float32 as DALI does, the CPU in
  float64; the bound is the CPU's own distance to DALI 2.4 for the same kind of case
  (``tests/dali_parity/cases_color_convert.py``: ``normalize_default`` 1e-6 / 2.5e-7,
  ``normalize_per_channel`` 2e-6 / 1.5e-7, ``normalize_ddof_epsilon_scale_shift`` 2e-6 / 5e-7,
  ``normalize_batch`` 1e-6 / 1e-7, largest / largest per-sample mean). The largest difference
  is held to that bound; the per-sample mean to twice it (the GPU's float32 sums are not DALI's
  in order either, so GPU-to-CPU is bounded by GPU-to-DALI plus DALI-to-CPU: a mean off by an
  ulp or two of float32 shifts a whole sample, and these photos, up to 512x512, are larger than
  the parity inputs). Integer outputs of computed statistics may differ by one level where a
  value lands next to a half.

``test_bounds_are_not_vacuous`` checks that a slightly wrong argument breaks the bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from augkit import backend, types
from augkit.operators.geometric.paste import Paste
from augkit.operators.geometric.slice import Slice
from augkit.operators.normalize import Normalize
from augkit.tensors import TensorList
from tests.operator_check import (
    CUPY_BRANCHES,
    GpuCase,
    as_chw,
    as_float,
    as_int16,
    case_by_id,
    per_sample,
)

# --- inputs -------------------------------------------------------------------------------------


def _spread(photos: list[np.ndarray]) -> list[np.ndarray]:
    """float32 values beyond uint8's range (-60..300), for conversions that clamp."""
    return [(p.astype(np.float32) * np.float32(1.41) - np.float32(60.3)) for p in photos]


def _gray(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(p[..., 1]) for p in photos]


# --- the cases ------------------------------------------------------------------------------


@dataclass
class Case(GpuCase):
    window: tuple[list[np.ndarray], list[np.ndarray]] | None = None
    """slice's positional ``anchor`` and ``shape`` inputs, one array per sample."""
    batch: bool = False
    """Runs the ``gpu_batch`` kernel (normalize's ``batch=True``)."""

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        if self.window is None:
            return []
        return [TensorList(list(w), "") for w in self.window]

    def run_gpu(
        self, monkeypatch: pytest.MonkeyPatch, images: list[np.ndarray], xp: Any, **overrides: Any
    ) -> list[np.ndarray]:
        """``GpuCase.run_gpu``, or, for ``batch``, the ``gpu_batch`` kernel in place of the
        ``cpu_batch`` kernel."""
        if not self.batch:
            return super().run_gpu(monkeypatch, images, xp, **overrides)
        calls = []
        gpu_batch = self.impl.gpu_batch

        def kernel(impl: Any, *a: Any, **k: Any) -> Any:
            calls.append(1)
            return gpu_batch(impl, *a, **k)

        with monkeypatch.context() as patch:
            patch.setattr(self.impl, "cpu_batch", kernel)
            patch.setattr(backend, "array_module", lambda x: xp)
            out = self.run_cpu(images, **overrides)
        assert calls == [1], "the gpu_batch kernel did not run once"
        return out


SLICE_CASES = [
    Case("slice_rel", "slice", Slice, args={"rel_start": (0.2, 0.3), "rel_shape": (0.5, 0.4)}),
    Case(
        "slice_pad_per_channel",
        "slice",
        Slice,
        args={
            "start": (-20, 30),
            "shape": (200, 500),
            "out_of_bounds_policy": "pad",
            "fill_values": (255, 7, 300),
        },
    ),
    Case(
        "slice_pad_float_to_uint8",
        "slice",
        Slice,
        _spread,
        args={
            "rel_start": (-0.1, 0.5),
            "rel_shape": (0.7, 0.8),
            "out_of_bounds_policy": "pad",
            "fill_values": -3.7,
            "dtype": types.UINT8,
        },
    ),
    Case(
        "slice_trim",
        "slice",
        Slice,
        args={"start": (50, -10), "end": (900, 120), "out_of_bounds_policy": "trim_to_shape"},
    ),
    Case(
        "slice_edge",
        "slice",
        Slice,
        args={"start": (-30, -5), "shape": (100, 700), "out_of_bounds_policy": "edge"},
    ),
    Case(
        "slice_reflect",
        "slice",
        Slice,
        as_float,
        args={"start": (-40, 10), "shape": (600, 90), "out_of_bounds_policy": "reflect"},
    ),
    Case(
        "slice_reflect_101",
        "slice",
        Slice,
        args={"start": (-40, -50), "shape": (900, 120), "out_of_bounds_policy": "reflect_101"},
    ),
    Case(
        "slice_wrap_chw",
        "slice",
        Slice,
        as_chw,
        "CHW",
        {"start": (-70, 20), "shape": (300, 1000), "out_of_bounds_policy": "wrap"},
    ),
    Case(
        "slice_positional_normalized",
        "slice",
        Slice,
        window=(
            per_sample((0.1, 0.2), (0.0, 0.0), (0.5, 0.5), (0.25, 0.1), (0.3, 0.6), (0.05, 0.05)),
            per_sample((0.5, 0.5), (1.0, 1.0), (0.5, 0.5), (0.5, 0.7), (0.4, 0.2), (0.9, 0.9)),
        ),
    ),
    Case(
        "slice_positional_int_pad",
        "slice",
        Slice,
        as_float,
        args={"out_of_bounds_policy": "pad", "fill_values": (0.5, -1.0, 2.0)},
        window=(
            per_sample((1, 2), (-10, 0), (0, 0), (50, 60), (-5, 3), (7, 7), dtype=np.int32),
            per_sample(
                (30, 40), (20, 100), (0, 10), (100, 100), (40, 40), (300, 5), dtype=np.int32
            ),
        ),
    ),
    Case(
        "slice_axes_gray_float16",
        "slice",
        Slice,
        _gray,
        "HW",
        {"axes": (0,), "rel_start": (0.25,), "rel_shape": (0.5,), "dtype": types.FLOAT16},
    ),
    Case(
        "slice_float_to_uint8_truncated",
        "slice",
        Slice,
        _spread,
        args={"start": (3, 4), "shape": (77, 55), "dtype": types.UINT8},
    ),
]

_MEANS = [np.full((1, 1, 3), v, np.float32) * np.float32([1, 0.9, 1.1]) for v in range(0, 240, 40)]

NORMALIZE_CASES = [
    Case("normalize_given", "normalize", Normalize, args={"mean": 100.0, "stddev": 50.0}),
    Case(
        "normalize_given_uint8",
        "normalize",
        Normalize,
        args={"mean": 100.0, "stddev": 50.0, "scale": 64.0, "shift": 128.0, "dtype": types.UINT8},
    ),
    Case(
        "normalize_tensor_mean_stddev",
        "normalize",
        Normalize,
        arg_inputs={
            "mean": _MEANS,
            "stddev": [np.float32([[[60.0, 0.0, 70.0]]]) + i for i in range(0, 12, 2)],
        },
    ),
    Case(
        "normalize_given_int16_epsilon",
        "normalize",
        Normalize,
        as_int16,
        args={"mean": -3.5, "stddev": 20.0, "epsilon": 0.5, "dtype": types.INT16, "scale": 9.0},
    ),
    Case("normalize_default", "normalize", Normalize, max_diff=1e-6, mean_diff=2 * 2.5e-7),
    Case(
        "normalize_per_channel",
        "normalize",
        Normalize,
        args={"axis_names": "HW"},
        max_diff=2e-6,
        mean_diff=2 * 1.5e-7,
    ),
    Case(
        "normalize_ddof_epsilon_scale_shift",
        "normalize",
        Normalize,
        as_float,
        args={"axes": (0, 1), "ddof": 1, "epsilon": 0.01, "scale": 2.0, "shift": 1.0},
        max_diff=2e-6,
        mean_diff=2 * 5e-7,
    ),
    Case(
        "normalize_chw_rows",
        "normalize",
        Normalize,
        as_chw,
        "CHW",
        {"axis_names": "CW"},
        max_diff=2e-6,
        mean_diff=2 * 5e-7,
    ),
    Case(
        "normalize_given_mean_int16",
        "normalize",
        Normalize,
        args={"mean": 127.5, "scale": 1000.0, "dtype": types.INT16},
        max_diff=1.0,
        mean_diff=1e-3,
    ),
    Case(
        "normalize_tensor_mean_computed_stddev",
        "normalize",
        Normalize,
        arg_inputs={"mean": _MEANS},
        max_diff=2e-6,
        mean_diff=2 * 5e-7,
    ),
    Case(
        "normalize_batch",
        "normalize",
        Normalize,
        as_float,
        args={"batch": True, "axis_names": "HW"},
        max_diff=1e-6,
        mean_diff=2 * 1e-7,
        batch=True,
    ),
    Case(
        "normalize_batch_given_mean",
        "normalize",
        Normalize,
        lambda p: [q[:200, :200] for q in p],
        args={"batch": True, "mean": 120.0, "ddof": 2},
        max_diff=1e-6,
        mean_diff=2 * 1e-7,
        batch=True,
    ),
]

PASTE_CASES = [
    Case(
        "paste",
        "paste",
        Paste,
        args={"ratio": 2.0, "paste_x": 0.3, "paste_y": 0.8, "fill_value": 0},
    ),
    Case(
        "paste_fill_per_channel_wrapped",
        "paste",
        Paste,
        args={"ratio": 1.5, "fill_value": (300, -2, 7), "min_canvas_size": 900.0},
    ),
    Case(
        "paste_per_sample",
        "paste",
        Paste,
        args={"fill_value": 9},
        arg_inputs={
            "ratio": per_sample(1.0, 1.3, 2.7, 1.01, 3.0, 1.5),
            "paste_x": per_sample(0.0, 1.0, 0.5, 0.33, 0.9, 0.1),
            "paste_y": per_sample(1.0, 0.0, 0.5, 0.66, 0.2, 0.75),
        },
    ),
    Case(
        "paste_four_channels",
        "paste",
        Paste,
        lambda p: [np.concatenate([q, q[..., :1]], axis=2) for q in p],
        args={"ratio": 1.2, "n_channels": 4, "fill_value": (1, 2, 3, 4), "paste_x": 1.0},
    ),
]

CASES = SLICE_CASES + NORMALIZE_CASES + PASTE_CASES


# --- running ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_kernel_on_numpy_matches_cpu(
    case: Case, photos: list[np.ndarray], xp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = case.inputs(photos)
    want = case.run_cpu(images)
    got = case.run_gpu(monkeypatch, images, xp)
    case.assert_matches(want, got)
    if case.max_diff == 0:
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(b, a, err_msg=case.id)


@pytest.mark.parametrize(
    ("case_id", "wrong"),
    [
        ("slice_rel", {"rel_start": (0.22, 0.3)}),
        ("slice_pad_per_channel", {"fill_values": (255, 7, 254)}),
        ("slice_pad_float_to_uint8", {"fill_values": 3.7}),
        ("slice_edge", {"out_of_bounds_policy": "wrap"}),
        ("slice_reflect", {"out_of_bounds_policy": "reflect_101"}),
        ("slice_positional_int_pad", {"fill_values": (0.5, -1.0, 2.5)}),
        ("slice_float_to_uint8_truncated", {"start": (3, 5)}),
        ("normalize_given", {"stddev": 50.001}),
        ("normalize_given_uint8", {"shift": 127.0}),
        ("normalize_default", {"shift": 1e-5}),
        ("normalize_per_channel", {"ddof": 1}),
        ("normalize_ddof_epsilon_scale_shift", {"epsilon": 0.0101}),
        ("normalize_chw_rows", {"scale": 1.00001}),
        ("normalize_given_mean_int16", {"mean": 127.6}),
        ("normalize_batch", {"ddof": 1000}),
        ("normalize_batch_given_mean", {"ddof": 0}),
        ("paste", {"paste_x": 0.31}),
        ("paste_fill_per_channel_wrapped", {"fill_value": (300, -2, 8)}),
    ],
)
def test_bounds_are_not_vacuous(
    case_id: str, wrong: dict[str, Any], photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU kernel given a slightly wrong argument leaves the case's bound around the CPU
    kernel with the right one, which it meets with the right one."""
    case = case_by_id(CASES, case_id)
    images = case.inputs(photos)
    want = case.run_cpu(images)
    assert case.within(want, case.run_gpu(monkeypatch, images, CUPY_BRANCHES))
    got = case.run_gpu(monkeypatch, images, CUPY_BRANCHES, **wrong)
    alike = all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(want, got, strict=True))
    assert alike, f"{case_id}: pick a wrong argument that keeps shapes and dtypes"
    assert not case.within(want, got)


def test_the_cases_cover_every_gpu_kernel_of_this_file() -> None:
    from augkit.operators.registry import REGISTRY

    for name in {c.name for c in CASES}:
        assert "gpu" in REGISTRY[name].devices, name
        assert callable(getattr(REGISTRY[name].impl, "gpu", None)), name
    assert callable(getattr(Normalize, "gpu_batch", None))


# --- on a CUDA device ---------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("case", [c for c in CASES if c.window is None], ids=lambda c: c.id)
def test_gpu_matches_cpu(case: Case, photos: list[np.ndarray]) -> None:
    """device="gpu" against device="cpu" in a pipeline: equal values for the exact cases,
    within the case's bound (the CPU's distance to DALI) for computed statistics."""
    case.assert_gpu_matches_cpu(photos)
