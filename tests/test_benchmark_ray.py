"""The Ray stage benchmark (``benchmarks/ray_stage.py``) runs on tiny sizes and writes a report
row per contender. No timing is asserted. One local Ray for the module, started with
``augkit.ray.init_local`` (the benchmark uses a Ray that runs already) and shut down after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="augkit.ray needs Ray: pip install 'augkit[ray]'")

import augkit.ray
from augkit.ray import local
from benchmarks import ray_stage as rs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def local_ray() -> Any:
    context = augkit.ray.init_local(num_cpus=2)
    started = set(local._current.processes) if local._current else set()
    yield context
    augkit.ray.shutdown_local()
    left = {pid for pid in started if local._stat(pid) is not None}
    assert not left, f"processes of Ray left after shutdown_local: {left}"


def test_the_report_is_written_with_a_row_per_contender(
    local_ray: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ray_stage.md"
    argv = ["--rounds", "1", "--epochs", "1,2", "--batch-size", "4"]
    argv += ["--data", str(ROOT / "data" / "images"), "--out", str(out)]
    assert rs.main(argv) == 0
    assert augkit.ray.local._current is not None, "the benchmark stopped the caller's Ray"
    text = out.read_text()
    assert text in capsys.readouterr().out  # printed too
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith(("| contender", "| ---"))
    }
    assert list(rows) == [rs.IN_PROCESS, rs.ray_label(1), rs.ray_label(2)]
    for name, cells in rows.items():
        assert len(cells) == 8, (name, cells)
        for rate in (cells[0], cells[2]):  # img/s "median (min–max)"
            assert float(rate.split(" ")[0]) > 0
        assert float(cells[1]) > 0 and float(cells[3]) > 0  # × in-process
        assert [float(c) == float(c) for c in cells[4:6]] == [True, True]  # fixed, per batch
        if name == rs.IN_PROCESS:
            assert cells[1] == cells[3] == "1.00" and cells[6:] == ["", ""]
        else:
            assert cells[6][0] in "+-" and cells[7][0] in "+-"
    assert "15 photos of `data/images`" in text and "passes of 1 epoch, 2 epochs (30, 60" in text
    assert "at least 0.8× of the same pipeline in-process" in text
