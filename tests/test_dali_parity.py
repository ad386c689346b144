"""augkit's operators against NVIDIA DALI 2.4's outputs on fixed inputs (``tests/dali_parity``).

- ``test_matches_dali``: every parity case of every family, run by augkit on the stored inputs,
  against DALI's stored outputs: same number of outputs, shapes, dtypes and layouts, and values
  within the case's ``max_diff``/``mean_diff``.
- ``test_stored_references_are_dalis`` (marked ``dali``): where DALI's venv exists, DALI runs
  every case again and must give what is stored, so that a stored reference can never be
  anything but DALI's output. Without the venv it is skipped, saying how to make it.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from augkit import fn, types
from augkit.pipeline import Pipeline
from tests.dali_parity.base import (
    ParityCase,
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


def closeness(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """(largest, mean) |ours - theirs|, in float64; NaNs count as equal where both are NaN."""
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))  # equal infinities too
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return 0.0, 0.0
    return float(diff.max()), float(diff.mean())


def compare(case: ParityCase, ours, theirs) -> list[tuple[float, float]]:
    """Checks one case's outputs; returns the (largest, mean) difference of each sample."""
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
            largest, mean = closeness(a, b)
            if case.max_diff is not None:
                assert largest <= case.max_diff, f"{at}: max |diff| {largest} > {case.max_diff}"
            assert mean <= case.mean_diff, f"{at}: mean |diff| {mean:.4g} > {case.mean_diff}"
            found.append((largest, mean))
    return found


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}/{c.name}" for c in CASES])
def test_matches_dali(case: ParityCase, inputs: dict) -> None:
    references = stored(case.family)
    assert case.name in references, (
        f"no DALI reference for {case.family}/{case.name}: run `make dali-reference` "
        f"(DALI may refuse the case: see its output)"
    )
    compare(case, run_case(Pipeline, fn, types, case, inputs), references[case.name])


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
