"""augkit's operators against NVIDIA DALI 2.4's outputs on fixed inputs (``tests/dali_parity``).

- ``test_matches_dali``: every parity case of every family, run by augkit on the stored inputs,
  against DALI's stored outputs: same number of outputs, shapes, dtypes and layouts, and values
  within the case's ``max_diff``/``mean_diff``/``differing``.
- ``test_matches_dali_on_other_cpus``: ``test_matches_dali`` again in a child process whose
  OpenCV (and its IPP), NumPy, torch and libjpeg-turbo take another CPU's SIMD dispatch (an
  AVX2 CPU without AVX-512; none beyond x86-64's baseline), so that a case whose result depends
  on the CPU fails on every machine, not only on the one that has that CPU (base.py's
  docstring lists what depends on it).
- ``test_tolerances_catch_a_wrong_output``: DALI's own outputs, moved beyond each case's
  tolerance, fail the comparison (a tolerance is never vacuous).
- ``test_stored_references_are_dalis`` (marked ``dali``): where DALI's venv exists, DALI runs
  every case again and must give what is stored, so that a stored reference can never be
  anything but DALI's output. Without the venv it is skipped, saying how to make it.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np
import pytest

from augkit import fn, types
from augkit.pipeline import Pipeline
from tests.dali_parity.base import (
    ParityCase,
    differences,
    families,
    load_inputs,
    reference_file,
    run_case,
    stored_outputs,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
DALI_PYTHON = (
    pathlib.Path(os.environ.get("AUGKIT_DALI_VENV", ROOT / "benchmarks" / "_work" / "dali-venv"))
    / "bin"
    / "python"
)

FAMILIES = families()
CASES = [case for cases in FAMILIES.values() for case in cases]


@pytest.fixture(scope="module")
def inputs() -> dict:
    return load_inputs()


_STORED: dict[str, dict] = {}


def stored(family: str) -> dict:
    if family not in _STORED:
        path = reference_file(family)
        if not path.exists():
            pytest.fail(f"{path} is missing: run `make dali-reference`")
        _STORED[family] = stored_outputs(family)
    return _STORED[family]


def closeness(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float, int]:
    """(largest, mean) |ours - theirs|, in float64, and how many elements differ; NaNs count as
    equal where both are NaN."""
    diff = differences(ours, theirs)
    if diff.size == 0:
        return 0.0, 0.0, 0
    return float(diff.max()), float(diff.mean()), int(np.count_nonzero(diff))


def compare(case: ParityCase, ours, theirs) -> list[tuple[float, float, int]]:
    """Checks one case's outputs; returns the (largest, mean, count) difference of each
    sample."""
    (our_outputs, our_layouts), (dali_outputs, dali_layouts) = ours, theirs
    where = f"{case.family}/{case.name}"
    assert len(our_outputs) == len(dali_outputs), f"{where}: number of outputs"
    assert our_layouts == dali_layouts, f"{where}: layouts {our_layouts} != DALI's {dali_layouts}"
    found = []
    for k, (mine, dalis) in enumerate(zip(our_outputs, dali_outputs, strict=True)):
        for i, (a, b) in enumerate(zip(mine, dalis, strict=True)):
            at = f"{where}: output {k}, sample {i}"
            assert a.shape == b.shape, f"{at}: shape {a.shape} != DALI's {b.shape}"
            assert a.dtype == b.dtype, f"{at}: dtype {a.dtype} != DALI's {b.dtype}"
            largest, mean, count = closeness(a, b)
            if case.max_diff is not None:
                assert largest <= case.max_diff, f"{at}: max |diff| {largest} > {case.max_diff}"
            if case.mean_diff is not None:
                assert mean <= case.mean_diff, f"{at}: mean |diff| {mean:.4g} > {case.mean_diff}"
            if case.differing is not None:
                assert count <= case.differing, (
                    f"{at}: {count} of {a.size} elements differ (max |diff| {largest}), more than "
                    f"{case.differing}"
                )
            found.append((largest, mean, count))
    return found


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}/{c.name}" for c in CASES])
def test_matches_dali(case: ParityCase, inputs: dict) -> None:
    references = stored(case.family)
    assert case.name in references, (
        f"no DALI reference for {case.family}/{case.name}: run `make dali-reference` "
        f"(DALI may refuse the case: see its output)"
    )
    compare(case, run_case(Pipeline, fn, types, case, inputs), references[case.name])


def _numpy_dispatch() -> list[str]:
    """The SIMD targets NumPy dispatches to at run time (its names: X86_V3, AVX512_ICL...)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    return list(umath.__cpu_dispatch__)


# Another CPU's SIMD dispatch, taken on this one: OpenCV (OPENCV_CPU_DISABLE), the Intel IPP in
# OpenCV (OPENCV_IPP), NumPy, torch (ATEN_CPU_CAPABILITY) and libjpeg-turbo read these when
# they load. OpenCV must then report the features named in "disabled" as off (or
# absent), and none of the IPP variants named in "not_ipp".
OTHER_CPUS = {
    # An AVX2 CPU without AVX-512 (AMD EPYC Rome/Milan, Intel client cores).
    "avx2": {
        "env": {
            "OPENCV_CPU_DISABLE": "AVX512-SKX",
            "OPENCV_IPP": "avx2",
            "NPY_DISABLE_CPU_FEATURES": " ".join(
                t for t in _numpy_dispatch() if "512" in t or t == "X86_V4"
            ),
            "ATEN_CPU_CAPABILITY": "avx2",
        },
        "disabled": ["AVX512-SKX"],
        "not_ipp": ["(k0)"],
    },
    # Nothing dispatched beyond x86-64's baseline (OpenCV: SSE3; IPP: SSE4.2, its lowest).
    "baseline": {
        "env": {
            "OPENCV_CPU_DISABLE": "AVX512-SKX,AVX2,FP16,AVX,FMA3,SSE4.2,POPCNT,SSE4.1",
            "OPENCV_IPP": "sse42",
            "NPY_DISABLE_CPU_FEATURES": " ".join(_numpy_dispatch()),
            "ATEN_CPU_CAPABILITY": "default",
            "JSIMD_FORCENONE": "1",
        },
        "disabled": ["AVX512-SKX", "AVX2", "FP16", "AVX", "SSE4.2", "SSE4.1"],
        "not_ipp": ["(k0)", "(l9)"],
    },
}


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the dispatch emulated is x86-64's (OpenCV's and NumPy's feature names)",
)
@pytest.mark.parametrize("cpu", sorted(OTHER_CPUS))
def test_matches_dali_on_other_cpus(cpu: str) -> None:
    """Every case within its tolerance with another CPU's dispatch (a case exact here but a
    level off on another CPU failed only on that CPU before: filters/filter_gray_large)."""
    other = OTHER_CPUS[cpu]
    env = {**os.environ, **other["env"]}
    # Not vacuous: OpenCV and its IPP really run another CPU's code.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import cv2, json; print(json.dumps([cv2.getCPUFeaturesLine(), "
            "cv2.ipp.useIPP() and cv2.ipp.getIppVersion()]))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    features, ipp = json.loads(probe.stdout.splitlines()[-1])
    on = {t.strip("*?") for t in features.split() if not t.endswith("?")}
    assert not on & set(other["disabled"]), f"{cpu}: OpenCV still dispatches to {features}"
    assert not ipp or not any(v in ipp for v in other["not_ipp"]), f"{cpu}: IPP {ipp}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"{pathlib.Path(__file__).relative_to(ROOT)}::test_matches_dali",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert done.returncode == 0, (
        f"with the dispatch of {cpu} ({other['env']}):\n"
        + "\n".join(failed)
        + "\n"
        + done.stdout[-6000:]
    )


def _moved(value: np.ndarray, step: float) -> np.ndarray:
    """``value`` (elements of an output) moved by more than ``step`` (up, or down where up would
    leave the type's range), in its own type."""
    if value.dtype == np.bool_:
        return ~value
    if value.dtype.kind in "iu":
        info = np.iinfo(value.dtype)
        by = int(np.floor(step)) + 1
        wide = value.astype(np.int64)
        return np.where(wide + by <= info.max, wide + by, wide - by).astype(value.dtype)
    return (value + np.asarray(step, value.dtype) * np.maximum(1, np.abs(value))).astype(
        value.dtype
    )


def _nudged(value: np.ndarray) -> np.ndarray:
    """``value`` moved by the least step of its type: a level, or an ulp."""
    if value.dtype.kind in "iu":
        return _moved(value, 0)
    return np.nextafter(value, np.inf).astype(value.dtype)


def _fails(case: ParityCase, outputs: list, layouts: list, k: int, i: int, changed) -> bool:
    """Whether ``compare`` refuses DALI's outputs with sample ``i`` of output ``k`` changed."""
    ours = [list(samples) for samples in outputs]
    ours[k][i] = changed
    try:
        compare(case, (ours, layouts), (outputs, layouts))
    except AssertionError:
        return True
    return False


def test_tolerances_catch_a_wrong_output() -> None:
    """DALI's outputs against themselves pass; moved beyond a case's tolerance they fail: one
    element beyond ``max_diff``, every element beyond ``mean_diff`` (where there is no
    ``max_diff``), one element more than ``differing`` (and exactly ``differing`` passes)."""
    checked = 0
    for case in CASES:
        outputs, layouts = stored(case.family)[case.name]
        compare(case, (outputs, layouts), (outputs, layouts))
        where = [
            (k, i)
            for k, samples in enumerate(outputs)
            for i, s in enumerate(samples)
            if s.size and np.isfinite(s.astype(np.float64)).all()
        ]
        if not where:
            continue
        k, i = where[0]
        sample = outputs[k][i]
        name = f"{case.family}/{case.name}"
        if case.max_diff is not None:
            flat = sample.copy().reshape(-1)
            flat[:1] = _moved(flat[:1], 2 * case.max_diff + 1e-3)
            changed = flat.reshape(sample.shape)
            assert _fails(case, outputs, layouts, k, i, changed), f"{name}: beyond max_diff"
        else:
            changed = _moved(sample, 2 * case.mean_diff + 1e-3)
            assert _fails(case, outputs, layouts, k, i, changed), f"{name}: beyond mean_diff"
        if case.differing is not None and sample.size > case.differing:
            flat = sample.copy().reshape(-1)
            flat[: case.differing] = _nudged(flat[: case.differing])
            changed = flat.reshape(sample.shape)
            assert not _fails(case, outputs, layouts, k, i, changed), f"{name}: {case.differing}"
            flat[: case.differing + 1] = _nudged(sample.reshape(-1)[: case.differing + 1])
            changed = flat.reshape(sample.shape)
            assert _fails(case, outputs, layouts, k, i, changed), f"{name}: beyond differing"
        checked += 1
    assert checked >= len(CASES) * 0.9, f"only {checked} of {len(CASES)} cases could be moved"


@pytest.mark.dali
def test_stored_references_are_dalis(tmp_path: pathlib.Path) -> None:
    if not DALI_PYTHON.exists():
        pytest.skip(f"DALI's venv is not at {DALI_PYTHON.parent.parent}: `make dali-venv` makes it")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run(
        [str(DALI_PYTHON), "tests/dali_parity/generate.py", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for family in FAMILIES:
        with np.load(tmp_path / f"{family}.npz") as fresh, np.load(reference_file(family)) as kept:
            assert sorted(fresh.files) == sorted(kept.files), f"{family}: cases differ"
            for key in fresh.files:
                a, b = fresh[key], kept[key]
                message = (
                    f"{family}: stored {key} is not what DALI gives now: `make dali-reference`"
                )
                assert a.dtype == b.dtype and a.shape == b.shape, message
                if a.dtype.kind == "f":
                    # DALI's float kernels round differently on different CPUs' vector units
                    # (normalize: 1e-6 on values up to 12, rsqrt: 1e-7 relative, on an AMD
                    # EPYC against the Intel Xeon that stored them): the same computation.
                    assert np.array_equal(np.isnan(a), np.isnan(b)), message
                    assert np.allclose(a, b, rtol=1e-6, atol=2e-6, equal_nan=True), message
                else:
                    assert np.array_equal(a, b), message


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
