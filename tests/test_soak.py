"""A short soak of the tutorial pipeline (issue 6; the long one is ``python -m benchmarks.soak``):
no sample is lost or duplicated across epochs, checked by ``source_info`` on both readers, with
worker processes and with either executor, for ``run()`` and for ``epoch()`` loops of every
last-batch policy; and memory stays bounded. No timing is asserted."""

from __future__ import annotations

import os

import pytest

from benchmarks.soak import (
    EpochCheck,
    descendants,
    image_files,
    outputs_match_inputs,
    reader_sources,
    soak,
    tutorial_pipeline,
)

FILES = image_files()
EPOCH = len(FILES)  # 15
BATCH = 4

# (py_num_workers, prefetch): the tutorial's synchronous executor and DALI's default
# (prefetching) one, both with the Python function in 2 worker processes; and the defaults.
SETTINGS = [
    pytest.param((2, False), id="workers-sync"),
    pytest.param((2, True), id="workers-prefetch"),
    pytest.param((1, True), id="threads-prefetch"),
]


@pytest.fixture(params=SETTINGS)
def pipe(request: pytest.FixtureRequest):
    workers, prefetch = request.param
    pipe = tutorial_pipeline(BATCH, py_num_workers=workers, prefetch=prefetch)
    yield pipe
    pipe.close()


def test_the_data_set() -> None:
    assert EPOCH == 15
    assert EPOCH % BATCH != 0  # batches straddle epochs: the interesting case


def test_epoch_check_counts_lost_and_duplicated() -> None:
    check = EpochCheck(FILES)
    check.add(FILES)
    check.add([FILES[0], *FILES[:-1]])  # the last file lost, the first twice
    check.add([*FILES[:3], "nowhere.jpg", FILES[3]])  # an incomplete epoch at the end
    assert (check.epochs, check.samples, check.lost, check.duplicated) == (2, 35, 1, 1)
    assert (check.reshuffled, len(check.pending), check.pending_unknown) == (1, 5, 1)
    assert not check.ok
    whole = EpochCheck(FILES)
    whole.add_epoch(list(reversed(FILES)))
    assert whole.ok and whole.epochs == 1 and whole.last_epoch == FILES[::-1]


def test_run_delivers_every_file_once_per_epoch(pipe) -> None:
    """run() with the "fill" policy: each reader's sequence, cut into epochs, is one
    permutation of the files after another; the function's outputs are made from the inputs
    of their own position."""
    epochs = 4
    checks = [EpochCheck(FILES), EpochCheck(FILES)]
    for _ in range(epochs * EPOCH // BATCH):  # 60 samples: exactly 4 epochs
        out1, out2 = pipe.run()
        sources = reader_sources(pipe)
        assert [len(s) for s in sources] == [BATCH, BATCH]
        assert outputs_match_inputs(pipe, out1, out2)  # nothing reordered in the workers
        assert not outputs_match_inputs(pipe, out2, out1)  # (the check can fail)
        assert not outputs_match_inputs(pipe, out1[::-1], out2[::-1])
        for check, names in zip(checks, sources, strict=True):
            check.add(names)
    for check in checks:
        assert (check.epochs, check.samples, check.pending) == (epochs, epochs * EPOCH, [])
        assert (check.lost, check.duplicated, check.unknown) == (0, 0, 0)
        assert check.reshuffled == epochs - 1  # each epoch has an order of its own
    assert checks[0].last_epoch != checks[1].last_epoch  # the readers shuffle independently


def test_partial_epochs_are_permutations(pipe) -> None:
    """epoch("partial"): batches of 4, 4, 4, 3, and each epoch is exactly a permutation."""
    checks = [EpochCheck(FILES), EpochCheck(FILES)]
    for _ in range(3):
        sizes = []
        seen: list[list[str]] = [[], []]
        for out1, out2 in pipe.epoch("partial"):
            sources = reader_sources(pipe)
            assert outputs_match_inputs(pipe, out1, out2)
            sizes.append(len(out1))
            for k in range(2):
                seen[k] += sources[k]
        assert sizes == [4, 4, 4, 3]
        for check, names in zip(checks, seen, strict=True):
            check.add_epoch(names)
    for check in checks:
        assert check.ok and check.epochs == 3 and check.reshuffled == 2


def test_fill_and_drop_epochs(pipe) -> None:
    """epoch("fill"): 16 samples, the epoch's permutation and then the next epoch's first
    sample, which that epoch reads again; epoch("drop"): the first 12 of the permutation."""
    previous_extra: list[str] | None = None
    for _ in range(2):
        seen: list[list[str]] = [[], []]
        for _outputs in pipe.epoch("fill"):
            for k, names in enumerate(reader_sources(pipe)):
                seen[k] += names
        for names in seen:
            assert len(names) == 16
            assert sorted(names[:EPOCH]) == FILES
        if previous_extra is not None:
            assert [names[0] for names in seen] == previous_extra
        previous_extra = [names[EPOCH] for names in seen]
    seen = [[], []]
    for _outputs in pipe.epoch("drop"):
        for k, names in enumerate(reader_sources(pipe)):
            seen[k] += names
    assert [names[0] for names in seen] == previous_extra
    for names in seen:
        assert len(names) == 12 and len(set(names)) == 12 and set(names) <= set(FILES)


def test_run_then_epoch_completes_the_epoch(pipe) -> None:
    """Two run()s, then an epoch("partial") loop: the loop finishes the epoch that run()
    started, and the two together are one permutation."""
    seen: list[list[str]] = [[], []]
    for _ in range(2):
        pipe.run()
        for k, names in enumerate(reader_sources(pipe)):
            seen[k] += names
    for _outputs in pipe.epoch("partial"):
        for k, names in enumerate(reader_sources(pipe)):
            seen[k] += names
    for names in seen:
        assert sorted(names) == FILES


@pytest.mark.slow
@pytest.mark.parametrize("prefetch", [False, True], ids=["sync", "prefetch"])
def test_memory_bounded_and_nothing_left(prefetch: bool) -> None:
    """A short soak with workers: no sample lost, memory bounded (loosely: the 10 000-iteration
    run checks flatness), the same workers throughout, nothing left after close()."""
    iterations = 90  # 24 epochs
    result = soak(iterations, prefetch=prefetch, sample_every=15, warmup=30)
    for check in result.checks:
        assert check.ok and check.epochs == iterations * BATCH // EPOCH
    assert result.output_mismatches == 0
    assert result.growth_mb < 100
    assert len(result.samples[0].worker_pids) == 2 and result.same_workers
    assert result.samples[-1].shm_files == 0  # names are unlinked once both sides map them
    assert result.children_after_close == [] and result.shm_after_close == []
    assert all(pid not in descendants(os.getpid()) for pid in result.samples[0].worker_pids)
