"""``Pipeline.profile()``: wall time per operator, last iteration and mean, in debug and normal
mode, as plain dicts and as a table (issue 4)."""

from __future__ import annotations

import html
import pathlib
import time
from typing import Any

import numpy as np
import pytest

from augkit import fn, pipeline_def, types
from augkit.core import Profile

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
MODES = [pytest.param(False, id="normal"), pytest.param(True, id="debug")]
KEYS = {"operator", "op", "last_ms", "mean_ms", "total_ms", "calls"}


def _slow(image: np.ndarray) -> np.ndarray:
    time.sleep(0.002)
    return image


def _photos(debug: bool, **settings: Any) -> Any:
    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1, debug=debug, **settings)
    def photos() -> Any:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True, name="read")
        images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
        small = fn.resize(images, size=(30, 40), name="resize")
        slow = fn.python_function(small, function=_slow, name="slow")
        scaled = slow * fn.random.uniform(range=(0.5, 1.5), name="factor")
        fn.flip(small, name="unused")  # pruned in normal mode (run anyway in debug mode)
        return scaled, labels

    return photos()


@pytest.mark.parametrize("debug", MODES)
def test_rows_for_every_operator_run_with_exact_call_counts(debug: bool) -> None:
    pipe = _photos(debug, exec_async=False, exec_pipelined=False)
    for _ in range(3):
        pipe.run()
    profile = pipe.profile()
    assert isinstance(profile, Profile)
    rows = {row["operator"]: row for row in profile.rows}
    expected = {"read", "decode", "resize", "slow", "factor"} | ({"unused"} if debug else set())
    named = {name for name in rows if not name.startswith("_Arithmetic")}
    assert named == expected
    arithmetic = [row for name, row in rows.items() if name.startswith("_Arithmetic")]
    assert len(arithmetic) == 1
    # The registry's names of the operators (issue 11: not "pythonfunction" or a class name).
    ops = {name: row["op"] for name, row in rows.items()}
    assert ops["read"] == "readers.file" and ops["decode"] == "decoders.image"
    assert ops["slow"] == "python_function" and ops["factor"] == "random.uniform"
    for row in profile.rows:
        assert set(row) == KEYS
        assert type(row) is dict
        assert isinstance(row["operator"], str) and isinstance(row["op"], str)
        assert isinstance(row["calls"], int) and row["calls"] == 3, row
        for key in ("last_ms", "mean_ms", "total_ms"):
            assert isinstance(row[key], float) and row[key] >= 0
        assert row["total_ms"] == pytest.approx(row["mean_ms"] * row["calls"])
        assert row["last_ms"] <= row["total_ms"]
    means = [row["mean_ms"] for row in profile.rows]
    assert means == sorted(means, reverse=True)  # slowest first
    assert rows["slow"]["mean_ms"] >= 2 * 4 / 2  # four 2 ms sleeps on two threads at least
    pipe.close()


@pytest.mark.parametrize("debug", MODES)
def test_calls_grow_with_every_run(debug: bool) -> None:
    pipe = _photos(debug, exec_async=False)
    pipe.run()
    first = {r["operator"]: r["calls"] for r in pipe.profile().rows}
    pipe.run()
    pipe.run()
    later = {r["operator"]: r["calls"] for r in pipe.profile().rows}
    assert set(first) == set(later)
    assert all(later[name] == first[name] + 2 for name in first)
    pipe.close()


def test_normal_mode_with_prefetching_counts_what_was_computed() -> None:
    """With DALI's defaults the pipeline computes ahead: the counts are at least the runs."""
    pipe = _photos(False)
    for _ in range(3):
        pipe.run()
    pipe.close()
    rows = pipe.profile().rows
    assert rows and all(row["calls"] >= 3 for row in rows)


def test_debug_mode_names_operators_by_their_first_run() -> None:
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, debug=True)
    def unnamed() -> Any:
        return fn.random.uniform(), fn.random.coin_flip()

    pipe = unnamed()
    for _ in range(4):
        pipe.run()
    rows = pipe.profile().rows
    assert len(rows) == 2 and all(row["calls"] == 4 for row in rows)
    assert {row["op"] for row in rows} == {"random.uniform", "random.coin_flip"}


def test_before_any_run_the_profile_is_empty() -> None:
    pipe = _photos(True)
    assert pipe.profile().rows == []
    assert "operator" in repr(pipe.profile())


@pytest.mark.parametrize("debug", MODES)
def test_repr_is_a_table_and_html_a_table(debug: bool) -> None:
    pipe = _photos(debug, exec_async=False)
    pipe.run()
    pipe.run()
    profile = pipe.profile()
    text = repr(profile).splitlines()
    assert text[0].split() == ["operator", "op", "last", "ms", "mean", "ms", "calls"]
    assert set(text[1]) == {"-"}
    assert len(text) == 2 + len(profile.rows)
    for line, row in zip(text[2:], profile.rows, strict=True):
        cells = line.split()
        assert cells[0] == row["operator"] and cells[1] == row["op"]
        assert float(cells[2]) == pytest.approx(row["last_ms"], abs=0.006)
        assert float(cells[3]) == pytest.approx(row["mean_ms"], abs=0.006)
        assert int(cells[4]) == row["calls"] == 2
    page = profile._repr_html_()
    assert page.startswith("<table>") and page.endswith("</table>")
    assert page.count("<tr>") == 1 + len(profile.rows)
    assert page.count("<th>") == 5
    for row in profile.rows:
        assert f"<td>{html.escape(row['operator'])}</td>" in page
    pipe.close()
