"""The conditionals benchmark (``benchmarks/conditionals.py``) runs on tiny sizes and writes its
report, and its pipelines compute what they should: the conditional one gives the branch's
output where the coin is true and the input where it is false. No timing is asserted."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import fn, pipeline_def
from benchmarks import conditionals as bc

BATCH = 6


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    return bc.load_photos(BATCH, size=64)


@pipeline_def
def _expected_pipe(images, angles):
    """The branch, written again here: a rotation by the given angles, then the blur."""
    x = fn.external_source(source=lambda: images, batch=True, layout="HWC")
    angle = fn.external_source(source=lambda: [np.float32(a) for a in angles], batch=True)
    return fn.gaussian_blur(fn.rotate(x, angle=angle, keep_size=True, fill_value=0), window_size=5)


def _branch(images: list[np.ndarray], angles: np.ndarray) -> list[np.ndarray]:
    pipe = _expected_pipe(
        images, angles, batch_size=len(images), num_threads=1, device_id=None, seed=0
    )
    try:
        (out,) = pipe.run()
        return [np.asarray(s).copy() for s in out]
    finally:
        pipe.close()


def test_the_report_is_written_with_a_row_per_contender(tmp_path, capsys):
    out = tmp_path / "conditionals.md"
    assert bc.main(["--rounds", "1", "--batches", "2", "--batch-size", "4", "--out", str(out)]) == 0
    text = out.read_text()
    assert text in capsys.readouterr().out  # printed too
    rows = {
        line.split("|")[1].strip().split(" ")[0]: [c.strip() for c in line.split("|")[2:-1]]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith(("| contender", "| ---"))
    }
    assert list(rows) == ["base", "always", "p=0.1", "p=0.5", "p=0.9"]
    for name, cells in rows.items():
        assert len(cells) == 8, (name, cells)
        assert float(cells[0]) > 0 and float(cells[1]) > 0  # batches/s, ms per batch
        if name.startswith("p="):
            assert 0.0 <= float(cells[2]) <= 1.0  # fraction taken
            assert cells[4] == f"≤ {float(name[2:]) + bc.EPSILON:.2f}"
            assert cells[6] == "–" if float(cells[2]) == 0 else float(cells[6]) >= 0
        else:
            assert cells[2:] == [""] * 6
    assert "p=0.5 at most 0.55×" in text
    assert "4 photos of `data/images`" in text and "1 round of 2 batches" in text


@pytest.mark.parametrize("name", bc.LABELS)
def test_the_pipelines_compute_the_branch_where_the_coin_says(name, photos):
    pipe = bc.make_pipe(name, photos)
    try:
        seen = set()
        for _ in range(4):  # the coins draw differently every batch
            outputs = pipe.run()
            bc.check(name, outputs, photos)  # the benchmark's own check of its warm-up batch
            images, angles, taken = outputs
            images = [np.asarray(s) for s in images]
            angles = np.array([float(np.asarray(a)) for a in angles])
            taken = [bool(np.asarray(t)) for t in taken]
            assert np.all(np.abs(angles) <= bc.ANGLE)
            augmented = _branch(photos, angles)
            for i, image in enumerate(images):
                if name == bc.BASE:
                    want = photos[i]
                elif name == bc.ALWAYS or taken[i]:
                    want = augmented[i]
                else:
                    want = photos[i]
                assert image.shape == photos[i].shape and image.dtype == np.uint8
                np.testing.assert_array_equal(image, want, err_msg=f"{name}, sample {i}")
            if name.startswith("p="):
                assert pipe.choices() == [{"if taken": t} for t in taken]
                seen.update(taken)
        if name == "p=0.5":
            assert seen == {True, False}  # both branches were taken in 4 batches of 6
    finally:
        pipe.close()


def test_the_check_catches_a_wrong_sample(photos):
    pipe = bc.make_pipe("p=0.5", photos)
    try:
        images, angles, taken = pipe.run()
        bc.check("p=0.5", (images, angles, taken), photos)
        wrong = [np.asarray(s).copy() for s in images]
        wrong[0][0, 0] ^= 1
        with pytest.raises(RuntimeError, match=r"p=0\.5: samples \[0\]"):
            bc.check("p=0.5", (wrong, angles, taken), photos)
    finally:
        pipe.close()
