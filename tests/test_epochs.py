"""The epoch contract (issue 25): every epoch of every shard delivers each of its samples exactly
once (padding and FILL's fill aside), and the shards of an epoch partition the data set wherever
DALI's sharding rules say they do. The four repros that found it broken, then a property-based
test over data set size, batch size, shards, ``stick_to_shard``, ``pad_last_batch``, the shuffle
mode, the last-batch policy, prefetching, worker processes, ``reset()`` timing and skipped files.

A sample's label is its index in the file list (``readers.file(files=..., labels=...)``), so the
labels of a batch say which samples it holds.
"""

from __future__ import annotations

import collections
import math
import os
import pathlib
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from PIL import Image

from augkit import Pipeline, fn, pipeline_def
from augkit.errors import OperatorError, SkippedSampleWarning
from augkit.operators.readers.base import SHUFFLE_AFTER_EPOCH_KEY
from augkit.plugin.pytorch import (
    DALIGenericIterator,
    LastBatchPolicy,
    PipelineDataset,
)
from augkit.random import epoch_rng

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMAGES = ROOT / "data" / "images"


def _crc(data: np.ndarray) -> np.ndarray:
    return np.array([zlib.crc32(data.tobytes())], np.int64)


def _identity(x: np.ndarray) -> np.ndarray:
    return x


# --- the four repros ----------------------------------------------------------------------------
@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
def _crc_pipe(mode: str):
    kwargs = {mode: True} if mode else {}
    jpegs, _ = fn.readers.file(file_root=str(IMAGES), name="Reader", **kwargs)
    image = fn.resize(fn.decoders.image(jpegs), size=(16, 16))
    return image, fn.python_function(jpegs, function=_crc)


@pytest.mark.parametrize("mode", ["", "random_shuffle", "shuffle_after_epoch"])
@pytest.mark.parametrize("policy", ["PARTIAL", "DROP", "FILL"])
def test_shuffled_epochs_neither_repeat_nor_miss_a_file(mode, policy):
    """The repro: random_shuffle, PARTIAL, auto_reset: epoch 2 gave one file twice and missed
    one, epoch 3 two of each; shuffle_after_epoch and DROP repeated files too."""
    it = DALIGenericIterator(
        _crc_pipe(mode),
        ["image", "crc"],
        reader_name="Reader",
        last_batch_policy=getattr(LastBatchPolicy, policy),
        auto_reset=True,
    )
    epochs = []
    for _ in range(3):
        length = len(it)  # DALI's FILL re-evaluates it at each epoch's start
        batches = [b[0]["crc"].reshape(-1).tolist() for b in it]
        assert len(batches) == length
        epochs.append([c for b in batches for c in b])
    every = set(epochs[0]) | set(epochs[1]) | set(epochs[2])
    assert len(every) == 15 if policy != "DROP" or mode else len(every) >= 12
    for crcs in epochs:
        counts = collections.Counter(crcs)
        if policy == "PARTIAL":
            assert sorted(counts.values()) == [1] * 15
        elif policy == "DROP":
            assert len(crcs) == 12 and max(counts.values()) == 1
        else:  # FILL: the 15 files and one of the next epoch's to fill the last batch
            assert len(crcs) == 4 * length and (len(set(crcs)) == 15 or not mode)
    if mode:
        assert epochs[0] != epochs[1]  # shuffled


def test_shards_of_class_folders_each_read_nearly_every_class():
    """The repro: random_shuffle with 2 shards on class folders gave rank 0 classes 0-2 and rank 1
    classes 2-4 for the whole epoch; DALI deals the whole list once before sharding."""

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=7)
    def shard(shard_id, stick):
        _, labels = fn.readers.file(
            file_root=str(IMAGES),
            random_shuffle=True,
            shard_id=shard_id,
            num_shards=2,
            stick_to_shard=stick,
        )
        return labels

    for stick in (False, True):
        seen = []
        for k in range(2):
            pipe = shard(k, stick)
            labels = [int(v) for b in pipe.epoch("partial") for v in b[0].as_array().reshape(-1)]
            seen.append(labels)
        assert sorted(seen[0] + seen[1]) == sorted(
            [c for c in range(5) for _ in range(3)]
        )  # a partition: 5 classes of 3 files
        for labels in seen:
            assert len(set(labels)) >= 4, seen  # not a block of 2-3 classes


class _RestartingIterable:
    """DALI's test_fw_iterators.py TestIterator: ``iter()`` starts it over, its end raises
    ``StopIteration``."""

    def __init__(self, per_epoch: int, batch_size: int, total: int = -1) -> None:
        self.per_epoch, self.batch_size, self.total = per_epoch, batch_size, total

    def __iter__(self):
        self.i = 0
        return self

    def __next__(self):
        if self.i < self.per_epoch and self.total != 0:
            self.i += 1
            self.total -= 1
            return [np.full(3, self.i, np.uint8) for _ in range(self.batch_size)]
        self.i = 0
        raise StopIteration


@pytest.mark.parametrize("sized", [True, False])
@pytest.mark.parametrize("auto_reset", [True, False])
@pytest.mark.parametrize("per_epoch,total", [(2, -1), (3, 4), (1, -1)])
def test_an_iterable_external_source_gives_every_epoch(sized, auto_reset, per_epoch, total):
    """The repro (DALI's test_stop_iteration_pytorch): over three epochs an iterable source gave
    one epoch of batches, since reset() did not start it again."""
    source = _RestartingIterable(per_epoch, 2, total)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=source))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # size= is deprecated (DALI's warning)
        loader = DALIGenericIterator(
            pipe, ["data"], size=per_epoch * 2 if sized else -1, auto_reset=auto_reset
        )
    count = 0
    for _ in range(3):
        for _ in loader:
            count += 1
        if not auto_reset:
            loader.reset()
    assert count == (per_epoch * 3 if total < 0 else min(total, per_epoch * 3))


@pytest.mark.parametrize("policy", ["PARTIAL", "DROP", "FILL"])
def test_len_is_the_number_of_batches_with_a_skipped_file(tmp_path, policy):
    """The repro: with decoders.image(on_error="skip") and a bad file, len() said 3 while the
    epoch gave 2 batches (a progress bar on len() was wrong; DDP ranks would step apart)."""
    files = sorted(IMAGES.rglob("*.jpg"))[:9]
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not a jpeg")
    paths = [str(p) for p in files[:4]] + [str(bad)] + [str(p) for p in files[4:]]

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def skipping():
        jpegs, labels = fn.readers.file(files=paths, labels=list(range(10)), name="Reader")
        images = fn.decoders.image(jpegs, on_error="skip")
        return fn.resize(images, size=(8, 8)), labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSampleWarning)
        it = DALIGenericIterator(
            skipping(),
            ["image", "label"],
            reader_name="Reader",
            last_batch_policy=getattr(LastBatchPolicy, policy),
        )
        for _ in range(2):
            labels = [b[0]["label"].reshape(-1).tolist() for b in it]
            assert len(labels) == len(it)
            flat = [v for b in labels for v in b]
            if policy == "PARTIAL":
                assert sorted(flat) == [0, 1, 2, 3, 5, 6, 7, 8, 9]
            elif policy == "DROP":
                assert len(labels) == 2 and sorted(flat) == [0, 1, 2, 3, 5, 6, 7]
            else:
                assert len(labels) == 3 and all(len(b) == 4 for b in labels)
                assert set(flat) >= {0, 1, 2, 3, 5, 6, 7, 8, 9}
            it.reset()


# --- the property ------------------------------------------------------------------------------
N_MAX = 14


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    """N_MAX tiny good JPEGs and, beside them, bad ones (for on_error="skip")."""
    root = tmp_path_factory.mktemp("epochs")
    good, bad = [], []
    for i in range(N_MAX):
        path = root / f"good_{i:02d}.jpg"
        Image.new("RGB", (4, 4), (i * 10, 0, 0)).save(path, "JPEG")
        good.append(str(path))
        path = root / f"bad_{i:02d}.jpg"
        path.write_bytes(b"no jpeg here")
        bad.append(str(path))
    return good, bad


def _pipes(files, shards, bs, reader, skip, workers, depth):
    @pipeline_def(
        batch_size=bs,
        num_threads=1,
        device_id=None,
        seed=11,
        prefetch_queue_depth=depth,
        py_num_workers=workers,
    )
    def pipe(shard_id):
        jpegs, labels = fn.readers.file(
            files=files,
            labels=list(range(len(files))),
            shard_id=shard_id,
            num_shards=shards,
            name="Reader",
            **reader,
        )
        outputs = [labels]
        if skip:
            outputs.append(fn.resize(fn.decoders.image(jpegs, on_error="skip"), size=(2, 2)))
        if workers > 1:
            outputs[0] = fn.python_function(labels, function=_identity)
        return tuple(outputs)

    return [pipe(k) for k in range(shards)]


def _every_shard_has_a_good_file(n, shards, good, shuffle, epochs=4):
    """Whether every shard range of every epoch the test reads holds a good file, in the order
    the reader's documented rule gives (``readers/cursor.py``): the file list as is, the one deal
    of ``random_shuffle``, or ``shuffle_after_epoch``'s permutation of each epoch. Every range is
    checked, so the shards' rotation without ``stick_to_shard`` is covered. (A shard of bad files
    only is an error of its own: ``test_a_shard_of_bad_files_only_is_named``.)"""
    orders = []
    for epoch in range(epochs):
        if shuffle == "random_shuffle":
            orders.append(epoch_rng(SHUFFLE_AFTER_EPOCH_KEY, 0).permutation(n))
        elif shuffle == "shuffle_after_epoch":
            orders.append(epoch_rng(SHUFFLE_AFTER_EPOCH_KEY, epoch).permutation(n))
        else:
            orders.append(np.arange(n))
    return all(
        any(int(i) in good for i in order[n * k // shards : n * (k + 1) // shards])
        for order in orders
        for k in range(shards)
    )


def _files(sample_files, n, skip):
    good, bad = sample_files
    files = list(good[:n])
    bad_ids = set()
    if skip:
        bad_ids = {1, n - 2}
        for i in bad_ids:
            files[i] = bad[i]
    return files, set(range(n)) - bad_ids


@pytest.mark.parametrize("shuffle", ["none", "random_shuffle"])
def test_a_shard_of_bad_files_only_is_named(sample_files, shuffle):
    """With ``stick_to_shard`` a shard whose files are all bad never reaches a good one: the
    reader says so, naming the last file, instead of searching on; the other shards read on."""
    good, bad = sample_files
    n, shards = 6, 3
    order = epoch_rng(SHUFFLE_AFTER_EPOCH_KEY, 0).permutation(n) if shuffle != "none" else range(n)
    first = {int(i) for i in list(order)[: n // shards]}  # shard 0's range
    files = [bad[i] if i in first else good[i] for i in range(n)]
    reader = {**SHUFFLES[shuffle], "stick_to_shard": True}
    pipes = _pipes(files, shards, 1, reader, True, 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSampleWarning)
        for _ in range(2):  # and again: the error does not wedge the pipeline
            with pytest.raises(OperatorError, match=r"no good sample is left.*bad_0\d\.jpg"):
                pipes[0].run()
        for p in pipes[1:]:
            labels = [int(p.run()[0].as_array().reshape(-1)[0]) for _ in range(4)]
            assert not set(labels) & first
    for p in pipes:
        p.close()


SHUFFLES = {
    "none": {},
    "random_shuffle": {"random_shuffle": True},
    "shuffle_after_epoch": {"shuffle_after_epoch": True},
}

# Derandomized, so that CI runs the same examples every time (as tests/test_fuzz.py); a longer,
# exploring run draws fresh ones:  AUGKIT_EPOCH_EXAMPLES=1000 .venv/bin/python -m pytest
# tests/test_epochs.py -q
_EXPLORE = "AUGKIT_EPOCH_EXAMPLES" in os.environ
epoch_settings = settings(
    max_examples=int(os.environ.get("AUGKIT_EPOCH_EXAMPLES", 60)),
    deadline=None,
    derandomize=not _EXPLORE,
    database=None if not _EXPLORE else settings.default.database,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
# What every client's epochs vary over: the data set, batches, shards and the reader's arguments.
READER_SPACE = {
    "n": st.integers(3, N_MAX),
    "bs": st.integers(1, 5),
    "shards": st.integers(1, 3),
    "stick": st.booleans(),
    "pad": st.booleans(),
    "shuffle": st.sampled_from(sorted(SHUFFLES)),
    "skip": st.booleans(),
}


@epoch_settings
@given(
    **READER_SPACE,
    policy=st.sampled_from(["PARTIAL", "DROP", "FILL"]),
    depth=st.sampled_from([1, 3]),
    workers=st.sampled_from([1, 1, 1, 2]),
    reset=st.sampled_from(["auto", "manual", "early"]),
)
def test_every_epoch_of_every_shard_delivers_each_sample_once(
    sample_files, n, bs, shards, stick, pad, shuffle, policy, depth, workers, reset, skip
):
    assume(n // shards >= bs and n >= 4)
    assume(not (skip and pad and n // shards < 3))  # a shard of bad files has nothing to pad with
    assume(not (stick and shuffle == "shuffle_after_epoch"))  # the reader refuses both
    reader = {**SHUFFLES[shuffle], "stick_to_shard": stick, "pad_last_batch": pad}
    files, good = _files(sample_files, n, skip)
    assume(_every_shard_has_a_good_file(n, shards, good, shuffle))
    pipes = _pipes(files, shards, bs, reader, skip, workers, depth)
    policy_ = getattr(LastBatchPolicy, policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSampleWarning)
        it = DALIGenericIterator(
            pipes,
            ["label", "image"][: 1 + skip],
            reader_name="Reader",
            last_batch_policy=policy_,
            auto_reset=reset == "auto",
        )
        by_position = shuffle != "none" or skip  # the readers' own epochs
        partition = by_position or pad or stick or shards == 1
        steps = math.ceil(math.ceil(n / shards) / bs)
        assert len(it) == ((n // shards) // bs if policy == "DROP" else steps)
        streams: dict[int, list[int]] = collections.defaultdict(list)
        for epoch in range(3):
            length = len(it)
            batches = []
            for k, batch in enumerate(it):
                batches.append([part["label"].reshape(-1).tolist() for part in batch])
                if reset == "early" and epoch == 0 and k == 0 and length > 1:
                    it.reset()  # before the epoch's end: ignored (DALI), the epoch goes on
            if reset != "auto":
                it.reset()
            assert len(batches) == length
            per_shard = [[v for step in batches for v in step[s]] for s in range(shards)]
            # DALI's DROP without a reader's own epochs delivers pad_last_batch's copies (its
            # shards rotate through padded ranges): padding aside.
            copies = pad and policy == "DROP" and not by_position
            for labels in per_shard:
                assert set(labels) <= set(range(n))
                if policy != "FILL" and not copies:
                    assert len(labels) == len(set(labels)), (epoch, per_shard)
                    assert not set(labels) - good
            if policy == "FILL":
                assert all(len(part) == bs for step in batches for part in step)
            if not partition:
                continue
            union = [v for labels in per_shard for v in labels]
            if policy == "PARTIAL":
                assert sorted(union) == sorted(good), (epoch, per_shard)
            elif policy == "DROP":
                assert len(union) == len(set(union)) or copies
            elif by_position or pad:
                assert set(union) >= good, (epoch, per_shard)
            elif stick or shards == 1:
                # DALI's FILL without padding: the next epoch starts after what the last batch
                # took from it (and ends sooner), so only each shard's stream is balanced: no
                # sample comes twice before every other of its shard came once.
                for k, labels in enumerate(per_shard):
                    streams[k].extend(labels)
        for k, labels in streams.items():
            counts = collections.Counter(labels)
            low, high = n * k // shards, n * (k + 1) // shards
            assert max(counts.values()) - min(counts[i] for i in range(low, high)) <= 1
    for p in pipes:
        p.close()


@epoch_settings
@given(
    **READER_SPACE,
    policy=st.sampled_from(["partial", "drop", "fill"]),
    early=st.booleans(),
)
def test_the_dataset_of_every_rank_partitions_each_epoch(
    sample_files, n, bs, shards, stick, pad, shuffle, policy, skip, early
):
    """``PipelineDataset`` (one per DDP rank) walks the readers' epochs in every mode: the
    ranks' epochs partition the data set and have ``len()`` batches each."""
    assume(n // shards >= bs and n >= 4)
    assume(not (skip and pad and n // shards < 3))  # a shard of bad files has nothing to pad with
    assume(not (stick and shuffle == "shuffle_after_epoch"))
    reader = {**SHUFFLES[shuffle], "stick_to_shard": stick, "pad_last_batch": pad}
    files, good = _files(sample_files, n, skip)
    assume(_every_shard_has_a_good_file(n, shards, good, shuffle))
    names = ["label", "image"][: 1 + skip]
    datasets = [
        PipelineDataset(p, names, reader_name="Reader", last_batch_policy=policy)
        for p in _pipes(files, shards, bs, reader, skip, 1, 1)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedSampleWarning)
        for epoch in range(3):
            if early and epoch == 1:
                for d in datasets:
                    next(iter(d))  # an epoch left after one batch: the next starts whole
            union = []
            for d in datasets:
                batches = [b[0].reshape(-1).tolist() for b in d]
                assert len(batches) == len(d)
                labels = [v for b in batches for v in b]
                if policy != "fill":
                    assert len(labels) == len(set(labels)) and not set(labels) - good
                union += labels
            if policy == "partial":
                assert sorted(union) == sorted(good), epoch
            elif policy == "drop":
                assert len(union) == len(set(union))
            else:
                assert set(union) >= good
    for d in datasets:
        d.pipeline.close()
