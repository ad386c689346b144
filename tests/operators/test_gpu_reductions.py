"""The GPU kernels of ``fn.reductions.*`` (sum, mean, mean_square, rms, min, max, std_dev,
variance; issue 25 §3: DALI 2.4 has them all on the GPU, and the automatic augmentations read
mean, sum, min and max of GPU images), checked three ways:

- without a GPU: each operator's ``gpu`` kernel runs on NumPy arrays in place of its ``cpu``
  kernel, through ``augkit.eager`` (``tests/operator_check.run_gpu_kernel``), against the CPU
  kernel with the same ``axes``/``axis_names``/``keep_dims``/``dtype``/``ddof`` arguments, on
  real photos of several types and layouts, with ``xp`` = NumPy and with NumPy under another
  name (``CUPY_BRANCHES``: the ``xp is np`` shortcuts off, so no OpenCV and no row
  arrangement: the code CuPy runs);
- on the fake GPU (``tests/fake_cupy``: CuPy's rules on NumPy, the ``fake_gpu`` fixture):
  ``device="gpu"`` pipelines against ``device="cpu"`` ones (``run_on_both_devices``), the
  mean input of std_dev/variance moved to the device by the device rule;
- ``gpu``-marked: the same pipelines on the GPU at hand (a CUDA device, or the fake GPU of
  ``make test``'s second step).

Bounds (``Case.rtol``): integer outputs, min and max equal (integer sums are exact in 64 bits
on both devices, and wrap alike); float outputs within ``RTOL`` = 2e-7 relative, one float32
ulp: both devices sum floats in float64 and scale in float32 by the same operations, so only
the order of a float64 sum differs, which the float32 result shows at most as one ulp next
to a tie (measured here: equal but for std_dev/variance of int16 rows, 7e-8). The bound is
about the kernel doing the CPU's arithmetic: it does not tell float64 sums from DALI's
float32 ones (pairwise or blocked float32 sums of these photos are mostly within it too).

Not vacuous: slightly wrong arguments (``ddof``, the other axis of square samples) and wrong
kernels (``WrongXp``: a mean divided by N + 1, integer means rounded instead of truncated, NaNs
not skipped, the type's extreme not joined) break the bounds that the right ones meet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from augkit import types
from augkit.operators import reductions
from augkit.operators.reductions import (
    Max,
    Mean,
    MeanSquare,
    Min,
    Reduction,
    RootMeanSquare,
    StdDev,
    Sum,
    Variance,
)
from augkit.operators.registry import REGISTRY
from augkit.tensors import TensorList
from tests.operator_check import (
    CUPY_BRANCHES,
    GpuCase,
    as_chw,
    as_float,
    as_int16,
    as_uint16,
    case_by_id,
    run_gpu_kernel,
    run_on_both_devices,
)

RTOL = 2e-7
"""One float32 ulp, relative (the module docstring)."""

# --- inputs (from the session's photos: uint8 HWC RGB, up to 512x512, of different sizes) ----


def _int32(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p.astype(np.int32) * 40_000 - 5_000_000 for p in photos]


def _uint32(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Up to 2**32 - 1: sums of squares wrap in 64 bits."""
    return [p.astype(np.uint32) * np.uint32(16_843_009) for p in photos]


def _square(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Square crops (200x200): reducing axis 0 or axis 1 gives one shape."""
    return [np.ascontiguousarray(p[:200, :200]) for p in photos]


def _special(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Float photos with NaNs, infinities, and channels of NaNs only, +inf only, -inf only."""
    out = []
    for i, p in enumerate(as_float(photos)):
        q = p.copy()
        q[::7, ::5, 0] = np.nan
        q[3, :, 1] = np.inf
        q[:, 2, 2] = -np.inf
        if i == 0:
            q[..., 0] = np.nan  # min: float32's largest; max: its lowest
        if i == 1:
            q[..., 1] = np.inf  # min: float32's largest (fmin with the initial value)
        if i == 2:
            q[..., 2] = -np.inf  # max: float32's lowest (fmax with the initial value)
        out.append(q)
    return out


def _empty(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Samples with no rows: reductions of nothing (and of something, to nothing)."""
    return [np.zeros((0, 5 + i, 3), np.uint8) for i in range(len(photos))]


# Mean inputs of std_dev/variance, per sample (float32, as fn.reductions.mean makes them).
def mean_over(*axes: int, keep: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    def mean(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64).mean(axis=axes or None, keepdims=keep).astype(np.float32)

    return mean


# --- the cases ------------------------------------------------------------------------------


@dataclass
class Case(GpuCase):
    """Integer outputs equal; float outputs within ``rtol`` (relative; 0: equal). ``mean_of``
    makes std_dev's and variance's second input from each sample."""

    rtol: float = RTOL
    mean_of: Callable[[np.ndarray], np.ndarray] | None = None

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        if self.mean_of is None:
            return []
        return [TensorList([self.mean_of(x) for x in images], "")]

    def within(self, want: list[np.ndarray], got: list[np.ndarray]) -> bool:
        return close(want, got, self.rtol)

    def assert_matches(self, want: list[np.ndarray], got: list[np.ndarray]) -> None:
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert (a.shape, a.dtype) == (b.shape, b.dtype), (self.id, i, a.shape, b.shape)
            if a.dtype.kind == "f":
                np.testing.assert_allclose(
                    b, a, rtol=self.rtol, atol=0, equal_nan=True, err_msg=f"{self.id}: {i}"
                )
            else:
                np.testing.assert_array_equal(b, a, err_msg=f"{self.id}: sample {i}")


def close(want: list[np.ndarray], got: list[np.ndarray], rtol: float) -> bool:
    """Equal shapes and dtypes; equal integers; floats within ``rtol`` (NaN equal to NaN)."""
    for a, b in zip(want, got, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind == "f":
            if not np.allclose(b, a, rtol=rtol, atol=0, equal_nan=True):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


EXACT = 0.0
F = types.FLOAT

SUM_CASES = [
    Case("sum_all", "reductions.sum", Sum),
    Case("sum_hw", "reductions.sum", Sum, args={"axis_names": "HW"}),
    Case("sum_c_keep", "reductions.sum", Sum, args={"axes": 2, "keep_dims": True}),
    Case("sum_uint8_wraps", "reductions.sum", Sum, args={"axes": [0, 1], "dtype": types.UINT8}),
    Case("sum_to_float", "reductions.sum", Sum, args={"axes": [0], "dtype": F}),
    Case("sum_float", "reductions.sum", Sum, as_float, args={"axes": [0, 1]}),
    Case("sum_float_all", "reductions.sum", Sum, as_float),
    Case("sum_int16", "reductions.sum", Sum, as_int16, args={"axes": [1]}),
    Case("sum_int16_float", "reductions.sum", Sum, as_int16, args={"axes": -1, "dtype": F}),
    Case("sum_uint32_wraps", "reductions.sum", Sum, _uint32, args={"dtype": types.UINT32}),
    Case(
        "sum_int32_chw", "reductions.sum", Sum, lambda p: as_chw(_int32(p)), "CHW", {"axes": [1, 2]}
    ),
    Case("sum_no_axes", "reductions.sum", Sum, args={"axes": [], "dtype": F}),
    Case("sum_axis0_square", "reductions.sum", Sum, _square, args={"axes": [0]}),
    Case("sum_empty", "reductions.sum", Sum, _empty, args={"axes": [0, 1]}),
]

MEAN_CASES = [
    Case("mean_all", "reductions.mean", Mean),
    Case("mean_hw_keep", "reductions.mean", Mean, args={"axis_names": "HW", "keep_dims": True}),
    Case("mean_uint8", "reductions.mean", Mean, args={"axes": [0, 1], "dtype": types.UINT8}),
    Case(
        "mean_float_chw",
        "reductions.mean",
        Mean,
        lambda p: as_chw(as_float(p)),
        "CHW",
        {"axis_names": "HW"},
    ),
    Case("mean_int16", "reductions.mean", Mean, as_int16, args={"axes": -1, "dtype": types.INT16}),
    Case("mean_uint16", "reductions.mean", Mean, as_uint16, args={"axes": [0]}),
    Case("mean_int32", "reductions.mean", Mean, _int32, args={"axis_names": "HW"}),
    Case("mean_int32_c", "reductions.mean", Mean, _int32, args={"axes": -1, "dtype": types.INT32}),
    Case("mean_axis0_square", "reductions.mean", Mean, _square, args={"axes": [0]}),
    Case("mean_empty", "reductions.mean", Mean, _empty, args={"axes": [0]}),
    Case("mean_square_c", "reductions.mean_square", MeanSquare, args={"axes": 2}),
    Case("mean_square_float", "reductions.mean_square", MeanSquare, as_float),
    Case(
        "mean_square_int16", "reductions.mean_square", MeanSquare, as_int16, args={"axes": [0, 1]}
    ),
    Case("mean_square_uint32", "reductions.mean_square", MeanSquare, _uint32),
    Case("rms_all", "reductions.rms", RootMeanSquare),
    Case(
        "rms_uint8", "reductions.rms", RootMeanSquare, args={"axes": [0, 1], "dtype": types.UINT8}
    ),
    Case("rms_float_hw", "reductions.rms", RootMeanSquare, as_float, args={"axis_names": "HW"}),
    Case(
        "rms_int32_c",
        "reductions.rms",
        RootMeanSquare,
        lambda p: [x.astype(np.int32) for x in as_int16(p)],
        args={"axis_names": "C", "dtype": types.INT32},
    ),
    Case(
        "rms_int16_c",
        "reductions.rms",
        RootMeanSquare,
        as_int16,
        args={"axis_names": "C", "dtype": types.INT16, "keep_dims": True},
    ),
]

MIN_MAX_CASES = [
    Case(
        f"{kind}_{label}",
        f"reductions.{kind}",
        impl,
        inputs,
        layout,
        args,
        rtol=EXACT,
    )
    for kind, impl in (("min", Min), ("max", Max))
    for label, inputs, layout, args in (
        ("hw_keep", lambda p: list(p), "HWC", {"axis_names": "HW", "keep_dims": True}),
        ("uint16_c", as_uint16, "HWC", {"axis_names": "C"}),
        ("all", lambda p: list(p), "HWC", {}),
        ("special_hw", _special, "HWC", {"axis_names": "HW"}),
        ("special_no_axes", _special, "HWC", {"axes": []}),
        ("int16_last", as_int16, "HWC", {"axes": -1}),
        ("int32_chw", lambda p: as_chw(_int32(p)), "CHW", {"axes": [1, 2]}),
        ("axis0_square", _square, "HWC", {"axes": [0]}),
        ("empty", _empty, "HWC", {"axes": [0, 2]}),
    )
]

STD_CASES = [
    Case(
        f"{kind}_{label}",
        f"reductions.{kind}",
        impl,
        inputs,
        layout,
        args,
        mean_of=mean_of,
    )
    for kind, impl in (("std_dev", StdDev), ("variance", Variance))
    for label, inputs, layout, args, mean_of in (
        ("hw", lambda p: list(p), "HWC", {"axis_names": "HW"}, mean_over(0, 1)),
        ("all_ddof", lambda p: list(p), "HWC", {"ddof": 1}, mean_over()),
        (
            "float_chw",
            lambda p: as_chw(as_float(p)),
            "CHW",
            {"axes": [1, 2]},
            mean_over(1, 2, keep=True),
        ),
        (
            "int16_rows_ddof",
            as_int16,
            "HWC",
            {"axes": [0], "ddof": 1, "keep_dims": True},
            mean_over(0),
        ),
        ("one_mean_broadcast", lambda p: list(p), "HWC", {"axes": [0, 1]}, mean_over()),
        ("axis0_square", _square, "HWC", {"axes": [0]}, mean_over(0)),
    )
]

CASES = SUM_CASES + MEAN_CASES + MIN_MAX_CASES + STD_CASES


# --- the GPU kernel on NumPy ------------------------------------------------------------------


@pytest.mark.parametrize("xp", [np, CUPY_BRANCHES], ids=["numpy", "cupy_branches"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_kernel_on_numpy_matches_cpu(
    case: Case, xp: Any, photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    images = case.inputs(photos)
    case.assert_matches(case.run_cpu(images), case.run_gpu(monkeypatch, images, xp))


@pytest.mark.parametrize(
    ("case_id", "wrong"),
    [
        ("sum_axis0_square", {"axes": [1]}),
        ("mean_axis0_square", {"axes": [1]}),
        ("min_axis0_square", {"axes": [1]}),
        ("max_axis0_square", {"axes": [1]}),
        ("std_dev_hw", {"ddof": 1}),
        ("std_dev_axis0_square", {"ddof": 1}),
        ("variance_all_ddof", {"ddof": 0}),
        ("variance_axis0_square", {"ddof": -1}),
    ],
)
def test_bounds_are_not_vacuous(
    case_id: str, wrong: dict[str, Any], photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU kernel given a slightly wrong argument leaves the bound that it meets with the
    right one (ddof: a relative change of 1/N, N up to 512*512*3)."""
    case_by_id(CASES, case_id).assert_not_vacuous(photos, monkeypatch, wrong)


class WrongXp:
    """NumPy under another name (as ``CUPY_BRANCHES``) with some functions replaced: a wrong
    GPU kernel, made by the array module it is given."""

    def __init__(self, **replaced: Any) -> None:
        self.replaced = replaced

    def __getattr__(self, name: str) -> Any:
        return self.replaced[name] if name in self.replaced else getattr(np, name)


_SCALED = reductions._scaled


def _divided_by_one_more(total: Any, n: int, xp: Any = np) -> Any:
    return _SCALED(total, n + 1, xp)


WRONG_KERNELS = [
    ("mean_hw_keep", "a mean divided by N + 1", {}, _divided_by_one_more),
    ("rms_float_hw", "a mean divided by N + 1", {}, _divided_by_one_more),
    ("variance_hw", "a mean divided by N + 1", {}, _divided_by_one_more),
    ("mean_int32_c", "integer means rounded", {"trunc": np.round}, None),
    ("rms_int32_c", "integer means rounded", {"trunc": np.round}, None),
    ("min_special_hw", "NaNs not skipped", {"isnan": lambda x: np.zeros(x.shape, bool)}, None),
    ("max_special_no_axes", "NaNs not skipped", {"isnan": lambda x: np.zeros(x.shape, bool)}, None),
    ("min_special_hw", "the initial value not joined", {"minimum": lambda a, b: a}, None),
    ("max_special_hw", "the initial value not joined", {"maximum": lambda a, b: a}, None),
]


@pytest.mark.parametrize(
    ("case_id", "what", "replaced", "scaled"),
    WRONG_KERNELS,
    ids=[f"{c}-{w.replace(' ', '_')}" for c, w, _, _ in WRONG_KERNELS],
)
def test_wrong_kernels_break_the_bounds(
    case_id: str,
    what: str,
    replaced: dict[str, Any],
    scaled: Callable[..., Any] | None,
    photos: list[np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = case_by_id(CASES, case_id)
    images = case.inputs(photos)
    want = case.run_cpu(images)
    assert case.within(want, case.run_gpu(monkeypatch, images, WrongXp()))
    with monkeypatch.context() as patch:
        if scaled is not None:
            patch.setattr(reductions, "_scaled", scaled)
        got = case.run_gpu(monkeypatch, images, WrongXp(**replaced))
    assert not case.within(want, got), f"{case_id}: {what} meets the bound"


def test_the_cases_cover_every_reduction() -> None:
    """Every reduction has a GPU kernel, its schema lists the GPU, and it has cases here."""
    names = {n for n, s in REGISTRY.items() if issubclass(s.impl, Reduction)}
    assert len(names) == 8, names
    assert names == {c.name for c in CASES}
    for name in names:
        assert "gpu" in REGISTRY[name].devices, name
        assert REGISTRY[name].impl.gpu is Reduction.gpu, name


def test_gpu_kernel_refuses_what_the_cpu_kernel_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same errors on both devices: an input type DALI has no kernel for, a dtype it does
    not allow, a mean of the wrong size."""
    images = [np.zeros((4, 5, 3), np.float64)]
    with pytest.raises(Exception, match="takes integer or float32 data"):
        run_gpu_kernel(monkeypatch, Sum, "reductions.sum", images, layout="HWC")
    images = [np.zeros((4, 5, 3), np.uint8)]
    with pytest.raises(Exception, match="is not supported for uint8"):
        run_gpu_kernel(
            monkeypatch, Mean, "reductions.mean", images, layout="HWC", args={"dtype": types.INT16}
        )
    means = TensorList([np.zeros(2, np.float32)], "")
    with pytest.raises(Exception, match="give one per output element"):
        run_gpu_kernel(
            monkeypatch,
            StdDev,
            "reductions.std_dev",
            images,
            layout="HWC",
            args={"axis_names": "HW"},
            more_inputs=[means],
        )


# --- in pipelines: the fake GPU, and the GPU at hand ----------------------------------------------


def _pipelines_match(case: Case, photos: list[np.ndarray]) -> None:
    """device="gpu" against device="cpu" in pipelines (``run_on_both_devices``: the GPU
    output on the GPU, with the CPU's layout and dtype), within the case's bound."""
    images = case.inputs(photos)
    inputs = [images]
    layouts = [case.layout]
    if case.mean_of is not None:
        inputs.append([case.mean_of(x) for x in images])
        layouts.append("")
    cpu, gpu = run_on_both_devices(case.name, inputs, layouts=layouts, args=case.args)
    want = [np.array(cpu.at(i)) for i in range(len(images))]
    got = [np.array(gpu.as_cpu().at(i)) for i in range(len(images))]
    case.assert_matches(want, got)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_pipelines_on_the_fake_gpu(case: Case, photos: list[np.ndarray], fake_gpu: Any) -> None:
    _pipelines_match(case, photos)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_matches_cpu(case: Case, photos: list[np.ndarray]) -> None:
    _pipelines_match(case, photos)
