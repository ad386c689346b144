"""The GPU kernel of ``fn.cast_like`` (issue 25 §3: DALI 2.4 has it on the GPU, and the automatic
augmentations' contrast and auto_contrast end in it on GPU images), checked three ways:

- without a GPU: the ``gpu`` kernel runs on NumPy arrays in place of the ``cpu`` kernel,
  through ``augkit.eager`` (``tests/operator_check.run_gpu_kernel``), against the CPU kernel,
  with ``xp`` = NumPy and with NumPy under another name (``CUPY_BRANCHES``: ``convert_sat``'s
  ``xp is np`` shortcuts off, so the general rounding and saturation CuPy runs instead of the
  uint8/int16 fast paths);
- on the fake GPU (``tests/fake_cupy``: CuPy's rules on NumPy, the ``fake_gpu`` fixture):
  ``device="gpu"`` pipelines against ``device="cpu"`` ones (``run_on_both_devices``; the
  ``like`` input comes from the host and is moved to the device by the device rule);
- ``gpu``-marked: the same pipelines on the GPU at hand (a CUDA device, or the fake GPU of
  ``make test``'s second step).

Pairs of types: float32 -> uint8 (exact halves, below 0 and above 255: the auto_aug case),
float64 -> int8 (halves of both signs, both ends saturated), int16 -> uint8 and uint32 -> int16
(integer saturation), uint8 -> float32 (a plain cast), float32 -> bool (``!= 0``) and uint8 ->
uint8 (the same type: the sample itself). Tolerance: exact (same shapes, types and values):
``convert_sat`` on CuPy's branches equals the CPU's fast paths bit for bit.

Not vacuous: the inputs need the rounding and the saturation (a plain ``astype`` differs from
the CPU kernel), and a ``like`` of another type breaks the comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from augkit.operators.registry import REGISTRY
from augkit.operators.tensors.like import CastLike
from augkit.tensors import TensorList
from tests.operator_check import (
    CUPY_BRANCHES,
    GpuCase,
    as_float,
    as_int16,
    as_uint8,
    case_by_id,
    run_on_both_devices,
)


def _halves(photos: list[np.ndarray]) -> list[np.ndarray]:
    """float32 from -40 to 342.5: every odd pixel value an exact half, both ends outside
    uint8's range."""
    return [p.astype(np.float32) * np.float32(1.5) - np.float32(40) for p in photos]


def _signed_halves(photos: list[np.ndarray]) -> list[np.ndarray]:
    """float64 from -192 to 190.5, halves of both signs, both ends outside int8's range."""
    return [(p.astype(np.float64) - 128) * 1.5 for p in photos]


def _uint32(photos: list[np.ndarray]) -> list[np.ndarray]:
    """uint32 up to 255000 (above int16's 32767)."""
    return [p.astype(np.uint32) * 1000 for p in photos]


def _zeros_of(dtype: Any) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    """The ``like`` input: zeros of ``dtype``, each of its sample's shape (only the type is
    read)."""

    def like(images: list[np.ndarray]) -> list[np.ndarray]:
        return [np.zeros(x.shape, dtype) for x in images]

    return like


_UINT8_ZEROS = _zeros_of(np.uint8)


@dataclass
class Case(GpuCase):
    """Exact: equal shapes, dtypes and values."""

    like: Callable[[list[np.ndarray]], list[np.ndarray]] = _UINT8_ZEROS
    """The second input, made from the first input's samples."""

    def more_inputs(self, images: list[np.ndarray]) -> list[Any]:
        return [TensorList(self.like(images), self.layout)]

    def within(self, want: list[np.ndarray], got: list[np.ndarray]) -> bool:
        return all(
            a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
            for a, b in zip(want, got, strict=True)
        )

    def assert_matches(self, want: list[np.ndarray], got: list[np.ndarray]) -> None:
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert (a.shape, a.dtype) == (b.shape, b.dtype), (self.id, i, b.shape, b.dtype)
            np.testing.assert_array_equal(b, a, err_msg=f"{self.id}: sample {i}")


def _case(id: str, inputs: Callable[..., list[np.ndarray]], dtype: Any) -> Case:
    return Case(id, "cast_like", CastLike, inputs, like=_zeros_of(dtype))


CASES = [
    _case("float32_to_uint8", _halves, np.uint8),
    _case("float64_to_int8", _signed_halves, np.int8),
    _case("int16_to_uint8", as_int16, np.uint8),
    _case("uint32_to_int16", _uint32, np.int16),
    _case("uint8_to_float32", as_uint8, np.float32),
    _case("float32_to_bool", as_float, np.bool_),
    _case("uint8_to_uint8", as_uint8, np.uint8),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gpu_kernel_on_numpy_matches_cpu(
    case: Case, photos: list[np.ndarray], xp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = case.inputs(photos)
    case.assert_matches(case.run_cpu(images), case.run_gpu(monkeypatch, images, xp))


@pytest.mark.parametrize("case_id", ["float32_to_uint8", "float64_to_int8", "uint32_to_int16"])
def test_exact_comparison_is_not_vacuous(
    case_id: str, photos: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inputs need rounding and saturation (a plain ``astype`` differs from the CPU
    kernel), and the GPU kernel, equal to the CPU kernel, differs given a ``like`` of another
    type (int16 for uint8, uint8 for int8 and int16)."""
    case = case_by_id(CASES, case_id)
    images = case.inputs(photos)
    want = case.run_cpu(images)
    assert case.within(want, case.run_gpu(monkeypatch, images, CUPY_BRANCHES))
    plain = [x.astype(w.dtype) for x, w in zip(images, want, strict=True)]
    assert not case.within(want, plain)
    other = np.int16 if want[0].dtype == np.uint8 else np.uint8
    wrong = replace(case, like=_zeros_of(other))
    assert not case.within(want, wrong.run_gpu(monkeypatch, images, CUPY_BRANCHES))


def test_the_schema_lists_the_gpu() -> None:
    assert "gpu" in REGISTRY["cast_like"].devices
    assert callable(getattr(CastLike, "gpu", None))


def _pipelines_match(case: Case, photos: list[np.ndarray]) -> None:
    """``device="gpu"`` against ``device="cpu"`` in pipelines: equal batches, the GPU one on
    the GPU."""
    images = case.inputs(photos)
    cpu, gpu = run_on_both_devices(
        case.name, [images, case.like(images)], layouts=[case.layout] * 2, args=case.args
    )
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
