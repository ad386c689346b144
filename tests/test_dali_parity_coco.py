"""``fn.readers.coco`` against DALI 2.4's stored outputs (``tests/dali_parity/coco_reference.py``
made ``reference/coco.npz`` with DALI's venv). DALI runs only in
``test_the_stored_reference_is_dalis`` (marked ``dali``, skipped without DALI's venv, as
tests/test_dali_parity.py's), which checks that the stored file is what DALI gives.

Every case must match bit for bit: the same number of outputs, samples, ``source_info``,
layouts, dtypes, shapes and values (the images' bytes by their SHA-256), boxes and vertices in
float32 computed as DALI computes them, and pixelwise masks from the same rasterisation
(COCO's ``rleFrPoly``) and label merging.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pytest

from augkit import fn, pipeline_def
from tests.dali_parity import coco_reference as ref

STORED = ref.load() if ref.OUT.exists() else None
DALI_PYTHON = (
    pathlib.Path(
        os.environ.get("AUGKIT_DALI_VENV", ref.ROOT / "benchmarks" / "_work" / "dali-venv")
    )
    / "bin"
    / "python"
)


@pytest.fixture(scope="module")
def stored() -> dict:
    if STORED is None:
        pytest.fail(f"{ref.OUT} is missing: run tests/dali_parity/coco_reference.py with DALI")
    return STORED


def test_every_case_is_stored(stored):
    assert sorted(stored) == sorted(c.name for c in ref.CASES)


@pytest.mark.parametrize("case", ref.CASES, ids=lambda c: c.name)
def test_readers_coco_matches_dali(case, stored):
    theirs = stored[case.name]
    ours = ref.run_case(fn, pipeline_def, case)
    assert ours["source_info"] == theirs["source_info"]
    assert ours["layouts"] == theirs["layouts"]
    assert len(ours["outputs"]) == len(theirs["outputs"])
    for k, (mine, dali) in enumerate(zip(ours["outputs"], theirs["outputs"], strict=True)):
        assert len(mine) == len(dali), f"output {k}"
        for i, (a, b) in enumerate(zip(mine, dali, strict=True)):
            if k == 0:
                a = ref.digest(a)
            assert a.dtype == b.dtype, f"output {k} sample {i}: {a.dtype} != {b.dtype}"
            assert a.shape == b.shape, f"output {k} sample {i}: {a.shape} != {b.shape}"
            np.testing.assert_array_equal(a, b, err_msg=f"output {k} sample {i}")


def test_the_stored_masks_are_not_trivial(stored):
    """The pixelwise cases hold masks with several labels and overlaps (what is compared)."""
    masks = stored["pixelwise"]["outputs"][3]
    labels = stored["pixelwise"]["outputs"][2]
    assert [sorted(set(np.unique(m)) - {0}) for m in masks] == [
        sorted(set(lb.tolist())) for lb in labels
    ]
    photos = stored["photos_pixelwise"]["outputs"][3]
    assert all(m.shape[2] == 1 and (m > 0).mean() > 0.1 for m in photos)


@pytest.mark.dali
def test_the_stored_reference_is_dalis(tmp_path):
    """Where DALI's venv exists, DALI runs every case again and must give what is stored."""
    if not DALI_PYTHON.exists():
        pytest.skip(f"DALI's venv is not at {DALI_PYTHON.parent.parent}: `make dali-venv` makes it")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    fresh = tmp_path / "coco.npz"
    done = subprocess.run(
        [str(DALI_PYTHON), "tests/dali_parity/coco_reference.py", "--out", str(fresh)],
        cwd=ref.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with np.load(fresh) as new, np.load(ref.OUT) as kept:
        assert sorted(new.files) == sorted(kept.files)
        for key in new.files:
            assert new[key].dtype == kept[key].dtype and np.array_equal(new[key], kept[key]), key
