"""Sharding for DDP and the ``IterableDataset`` view (``augkit.plugin.dataset``).

1. ``PipelineDataset``: batches per epoch, batch sizes and what the last batch holds for every
   last-batch policy x ``pad_last_batch`` x shard case, written as data below from DALI's
   iterator rules (``nvidia/dali/plugin/base_iterator.py``: with ``reader_name``, ``len()`` is
   ``ceil(ceil(N/n)/b)``, or ``(N//n)//b`` with DROP, on every shard; PARTIAL drops the
   padding). Samples are told apart by their encoded file's size (``fn.shapes`` of the
   reader's bytes: the 15 files of ``data/images`` have 15 different sizes).
2. Two processes with ``torch.distributed`` (gloo on loopback), each reading its shard of
   ``data/images``, all-gather sample identities per epoch: disjoint shards that cover the
   data set exactly once, labels with their files, different augmentation draws per rank,
   DALI's shard rotation without ``stick_to_shard``, and an ``all_reduce`` per batch (ranks
   step together, as DDP's gradient sync needs).
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from augkit import fn, pipeline_def
from augkit.errors import ArgumentError, GraphError, RaggedBatchError
from augkit.plugin.dataset import PipelineDataset

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "data" / "images"
CLASSES = sorted(p.name for p in IMAGES.iterdir() if p.is_dir())
FILES = sorted(str(p.relative_to(IMAGES)) for p in IMAGES.glob("*/*.jpg"))
BY_SIZE = {(IMAGES / f).stat().st_size: f for f in FILES}
N = len(FILES)


def test_the_data_set_is_what_the_tables_assume():
    assert N == 15 and len(CLASSES) == 5
    assert len(BY_SIZE) == N  # file sizes identify the files


@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=7)
def ident_pipe(shard_id=0, num_shards=1, pad_last_batch=False, stick_to_shard=False):
    jpegs, labels = fn.readers.file(
        file_root=str(IMAGES),
        shard_id=shard_id,
        num_shards=num_shards,
        pad_last_batch=pad_last_batch,
        stick_to_shard=stick_to_shard,
        name="Reader",
    )
    return fn.shapes(jpegs), labels


def names(ident: torch.Tensor) -> list[str]:
    return [BY_SIZE[int(s)] for s in ident.reshape(-1)]


# Shard k of n covers sorted files [N*k//n, N*(k+1)//n) (DALI): 15 files, 2 shards -> 7 and 8.
SHARD = {(0, 1): FILES, (0, 2): FILES[:7], (1, 2): FILES[7:]}

# (batch size, shard_id, num_shards, pad_last_batch, policy) -> len(), and the batch sizes of
# epochs 0 and 1 (the shards rotate: epoch 1 of shard 0 reads shard 1's files).
CASES = [
    (4, 0, 1, False, "partial", 4, [4, 4, 4, 3], [4, 4, 4, 3]),
    (4, 0, 1, False, "drop", 3, [4, 4, 4], [4, 4, 4]),
    (4, 0, 1, False, "fill", 4, [4, 4, 4, 4], [4, 4, 4, 4]),
    (4, 0, 1, True, "partial", 4, [4, 4, 4, 3], [4, 4, 4, 3]),
    (4, 0, 1, True, "fill", 4, [4, 4, 4, 4], [4, 4, 4, 4]),
    (4, 0, 2, False, "partial", 2, [4, 3], [4, 4]),
    (4, 1, 2, False, "partial", 2, [4, 4], [4, 3]),
    (4, 0, 2, False, "drop", 1, [4], [4]),
    (4, 1, 2, False, "drop", 1, [4], [4]),
    (4, 0, 2, False, "fill", 2, [4, 4], [4, 4]),
    (4, 0, 2, True, "partial", 2, [4, 3], [4, 4]),
    (4, 0, 2, True, "drop", 1, [4], [4]),
    (4, 0, 2, True, "fill", 2, [4, 4], [4, 4]),
    (3, 0, 2, False, "partial", 3, [3, 3, 1], [3, 3, 2]),
    (3, 1, 2, False, "drop", 2, [3, 3], [3, 3]),
    (3, 0, 2, False, "fill", 3, [3, 3, 3], [3, 3, 3]),
    (1, 0, 2, False, "partial", 8, [1] * 7 + [0], [1] * 8),  # DALI's empty batch
    (1, 0, 2, False, "drop", 7, [1] * 7, [1] * 7),
    (8, 1, 2, True, "partial", 1, [8], [7]),
]


@pytest.mark.parametrize("batch,shard,shards,pad,policy,length,sizes0,sizes1", CASES)
def test_epochs_per_policy_padding_and_shard(
    batch, shard, shards, pad, policy, length, sizes0, sizes1
):
    pipe = ident_pipe(batch_size=batch, shard_id=shard, num_shards=shards, pad_last_batch=pad)
    dataset = PipelineDataset(pipe, reader_name="Reader", last_batch_policy=policy)
    for epoch, sizes in enumerate((sizes0, sizes1)):
        assert len(dataset) == length
        got = [names(ident) for ident, label in dataset]
        assert [len(b) for b in got] == sizes
        files = SHARD[(shard + epoch) % shards, shards]
        seen = [f for b in got for f in b]
        if policy == "partial":
            assert seen == files  # every file of the shard once, in order, no padding
        elif policy == "drop":
            assert seen == files[: len(seen)]
        else:  # fill: the shard's files, then the next epoch's first ones, or the last again
            assert seen[: len(files)] == files
            following = SHARD[(shard + epoch + 1) % shards, shards]
            filler = [files[-1]] * len(seen) if pad else following
            assert seen[len(files) :] == filler[: len(seen) - len(files)]


# Where the iterator (DALI's rules) differs from the dataset: under FILL, DALI's next epoch is
# shorter by the samples the last batch borrowed (its len() says so too); the dataset rewinds.
ITERATOR_DIFFERS = {(3, 0, 2, False, "fill"): [(3, [3, 3, 3]), (2, [3, 3])]}


# iter() after reset() under FILL with a carry resets again (and logs it, as DALI does).
@pytest.mark.parametrize("batch,shard,shards,pad,policy,length,sizes0,sizes1", CASES)
def test_the_dataset_steps_as_the_iterator(
    batch, shard, shards, pad, policy, length, sizes0, sizes1
):
    pytorch = pytest.importorskip("augkit.plugin.pytorch")
    if not hasattr(pytorch, "DALIGenericIterator"):
        pytest.skip("DALIGenericIterator is not in augkit.plugin.pytorch yet")
    pipe = ident_pipe(batch_size=batch, shard_id=shard, num_shards=shards, pad_last_batch=pad)
    loader = pytorch.DALIGenericIterator(
        pipe,
        ["id", "label"],
        reader_name="Reader",
        last_batch_policy=getattr(pytorch.LastBatchPolicy, policy.upper()),
    )
    got = []
    for _ in range(2):
        got.append((len(loader), [len(b[0]["id"]) for b in loader]))
        loader.reset()
    want = [(length, sizes0), (length, sizes1)]
    assert got == ITERATOR_DIFFERS.get((batch, shard, shards, pad, policy), want)


def test_labels_are_class_folders_and_dict_items():
    dataset = PipelineDataset(ident_pipe(), output_map=["id", "label"], as_dict=True)
    for item in dataset:
        assert set(item) == {"id", "label"}
        assert item["label"].dtype == torch.int32 and item["label"].shape[1:] == (1,)
        for name, label in zip(names(item["id"]), item["label"].reshape(-1), strict=True):
            assert CLASSES[int(label)] == name.split("/")[0]


def test_a_dataloader_passes_batches_through_epoch_after_epoch():
    loader = DataLoader(PipelineDataset(ident_pipe()), batch_size=None)
    assert len(loader) == 4
    for _ in range(2):
        assert sorted(f for ident, _ in loader for f in names(ident)) == FILES


def test_dataloader_workers_are_refused_with_a_clear_error():
    loader = DataLoader(PipelineDataset(ident_pipe()), batch_size=None, num_workers=1)
    batches = iter(loader)
    try:
        with pytest.raises(RuntimeError, match="num_workers=0"):
            next(batches)
    finally:
        batches._shutdown_workers()  # now, not at garbage collection in a later test
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(PipelineDataset(ident_pipe()))


def test_an_epoch_left_early_is_followed_by_a_whole_epoch():
    pipe = ident_pipe()
    dataset = PipelineDataset(pipe)
    abandoned = iter(dataset)
    next(abandoned)
    whole = [f for ident, _ in dataset for f in names(ident)]
    assert whole == FILES
    pipe.run()  # run() in between: the next iter() still starts a whole epoch
    new = iter(dataset)
    first = names(next(new)[0])
    abandoned.close()  # an old epoch closed late does not move the new one
    rest = [f for ident, _ in new for f in names(ident)]
    assert first + rest == FILES


def test_bad_arguments_are_named_and_the_pipeline_stays_usable():
    pipe = ident_pipe()
    with pytest.raises(ArgumentError, match="last_batch_policy"):
        PipelineDataset(pipe, last_batch_policy="sometimes")
    with pytest.raises(ArgumentError, match="output_map"):
        PipelineDataset(pipe, output_map="data")
    with pytest.raises(ArgumentError, match="output_map"):
        PipelineDataset(pipe, output_map=["a", "a"])
    with pytest.raises(GraphError, match="no reader named 'Readr'"):
        PipelineDataset(pipe, reader_name="Readr")
    with pytest.raises(ArgumentError, match="pipeline must be an augkit Pipeline"):
        PipelineDataset("pipe")
    with pytest.raises(ArgumentError, match="output_map names 3 outputs"):
        list(PipelineDataset(pipe, output_map=["a", "b", "c"]))
    assert [f for i, _ in PipelineDataset(pipe) for f in names(i)] == FILES


def test_a_ragged_output_names_itself():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def raw():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES))
        return jpegs, labels

    pipe = raw()
    with pytest.raises(RaggedBatchError, match="output 'data' is ragged"):
        next(iter(PipelineDataset(pipe)))
    assert len(PipelineDataset(pipe, output_map=("jpegs", "label"))) == math.ceil(N / 4)


def test_policies_as_lastbatchpolicy_members():
    pytorch = pytest.importorskip("augkit.plugin.pytorch")
    policy = getattr(pytorch, "LastBatchPolicy", None)
    if policy is None:
        pytest.skip("LastBatchPolicy is not in augkit.plugin.pytorch yet")
    dataset = PipelineDataset(ident_pipe(), last_batch_policy=policy.DROP)
    assert dataset.last_batch_policy == "drop" and len(dataset) == 3


def _bad_file_set(root: Path) -> list[str]:
    """data/images with two broken JPEGs added (one in the first class, one in the last)."""
    import shutil

    shutil.copytree(IMAGES, root)
    (root / "animals" / "aaa_truncated.jpg").write_bytes((IMAGES / FILES[0]).read_bytes()[:300])
    (root / "space" / "zzz_not_a_jpeg.jpg").write_bytes(b"not a jpeg at all")
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.jpg"))


@pytest.mark.parametrize("policy,length,delivered", [("partial", 5, 15), ("drop", 4, (14, 16))])
def test_skipped_files_each_good_file_once_and_the_counts(tmp_path, policy, length, delivered):
    """len() is the number of batches every epoch gives (issue 25: it said 4 and the epoch gave
    3), whatever is skipped: a bad file leaves a hole in its batch."""
    from augkit.errors import SkippedSampleWarning

    root = tmp_path / "images"
    all_files = _bad_file_set(root)
    assert len(all_files) == 17

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=3)
    def skipping():
        jpegs, labels = fn.readers.file(file_root=str(root), random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, on_error="skip")
        return fn.resize(images, resize_x=8, resize_y=8), labels, fn.shapes(jpegs)

    dataset = PipelineDataset(skipping(), ("data", "label", "id"), last_batch_policy=policy)
    assert len(dataset) == length  # counted from the 17 files, before any skip
    for _ in range(2):
        with pytest.warns(SkippedSampleWarning):
            got = [names(ident) for _, _, ident in dataset]
        assert len(got) == length and all(len(b) <= 4 for b in got)
        seen = sorted(f for b in got for f in b)
        if policy == "partial":
            assert len(seen) == delivered
        else:  # 16 positions in 4 batches, of which up to 2 are the bad files
            assert delivered[0] <= len(seen) <= delivered[1]
        if policy == "partial":
            assert seen == FILES  # the 15 good files once, the 2 bad ones absent
        else:
            assert len(set(seen)) == len(seen) and set(seen) <= set(FILES)


def add_one(x):
    return x + 1


def test_prefetching_and_worker_processes_keep_the_epochs():
    @pipeline_def(
        batch_size=4,
        num_threads=2,
        device_id=None,
        seed=5,
        py_num_workers=2,
        prefetch_queue_depth=3,
    )
    def with_workers():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True, name="Reader")
        return fn.python_function(fn.shapes(jpegs), function=add_one), labels

    dataset = PipelineDataset(with_workers(), ("id", "label"))
    for _ in range(3):
        got = [(names(ident - 1), label.reshape(-1).tolist()) for ident, label in dataset]
        assert [len(n) for n, _ in got] == [4, 4, 4, 3]
        assert sorted(f for n, _ in got for f in n) == FILES
        for batch_names, labels in got:
            assert [CLASSES[k] for k in labels] == [f.split("/")[0] for f in batch_names]
    dataset.pipeline.close()


# --- two processes, torch.distributed ---------------------------------------------------------
WORKER = textwrap.dedent(
    """
    import datetime, json, os, sys
    import torch
    import torch.distributed as dist
    from augkit import fn, pipeline_def

    rank, world, port, out, mode, stick, pad = sys.argv[1:8]
    rank, world, stick, pad = int(rank), int(world), stick == "1", pad == "1"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group(
        "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30)
    )

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1234)
    def pipe():
        jpegs, labels = fn.readers.file(
            file_root="data/images", shard_id=rank, num_shards=world, random_shuffle=True,
            seed=42, stick_to_shard=stick, pad_last_batch=pad, name="Reader",
        )
        images = fn.resize(fn.decoders.image(jpegs), resize_x=16, resize_y=16)
        return images, labels, fn.shapes(jpegs), fn.random.uniform(range=(0.0, 1.0))

    outputs = ["data", "label", "ident", "draw"]
    if mode == "iterator":
        from augkit.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
        loader = DALIGenericIterator(
            pipe(), outputs, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
        )
        batches = lambda: ([b[0][k] for k in outputs] for b in loader)
        after_epoch = loader.reset
    else:
        from augkit.plugin.dataset import PipelineDataset
        loader = torch.utils.data.DataLoader(
            PipelineDataset(pipe(), outputs, reader_name="Reader"), batch_size=None
        )
        batches = lambda: iter(loader)
        after_epoch = lambda: None

    epochs = []
    for epoch in range(2):
        mine, steps = [], 0
        for images, labels, ident, draw in batches():
            assert images.shape[1:] == (16, 16, 3), images.shape
            mine += [
                [int(i), int(l), float(d)]
                for i, l, d in zip(ident.reshape(-1), labels.reshape(-1), draw.reshape(-1))
            ]
            total = torch.ones(1)
            dist.all_reduce(total)  # as DDP's gradient sync: both ranks must step together
            assert int(total) == world
            steps += 1
        after_epoch()
        gathered = [None] * world
        dist.all_gather_object(gathered, {"samples": mine, "steps": steps})
        epochs.append(gathered)
    with open(out, "w") as f:
        json.dump(epochs, f)
    dist.barrier()
    dist.destroy_process_group()
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(tmp_path: Path, mode: str, stick: bool, pad: bool, world: int = 2) -> list:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(free_port())
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    procs = []
    try:
        for rank in range(world):
            out = tmp_path / f"rank{rank}.json"
            flags = ["1" if stick else "0", "1" if pad else "0"]
            args = [str(rank), str(world), port, str(out), mode, *flags]
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script), *args],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        logs = [p.communicate(timeout=120)[0] for p in procs]
        for rank, (p, log) in enumerate(zip(procs, logs, strict=True)):
            assert p.returncode == 0, f"rank {rank} failed:\n{log[-3000:]}"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    assert results[0] == results[1]  # all_gather gave both ranks the same picture
    return results[0]


def check_shards(epochs: list, stick: bool) -> None:
    per_epoch = []
    for gathered in epochs:
        assert [g["steps"] for g in gathered] == [2, 2]  # 7 and 8 files, batch 4: 2 batches each
        shards = [[BY_SIZE[i] for i, _, _ in g["samples"]] for g in gathered]
        assert set(shards[0]).isdisjoint(shards[1])
        assert sorted(shards[0] + shards[1]) == FILES  # complete, each file once
        # random_shuffle deals the whole data set once before sharding (as DALI does): the
        # ranks read mixed classes, not blocks of class folders (issue 25)
        for shard in shards:
            assert len({f.split("/")[0] for f in shard}) >= 4, shard
        for g in gathered:
            for ident, label, _ in g["samples"]:
                assert CLASSES[label] == BY_SIZE[ident].split("/")[0]  # label with its file
        draws = [[d for _, _, d in g["samples"]] for g in gathered]
        assert len(set(draws[0] + draws[1])) == N  # no draw shared between the ranks
        per_epoch.append(shards)
    if stick:
        assert sorted(per_epoch[1][0]) == sorted(per_epoch[0][0])
    else:  # rotation: epoch 2 of rank 0 reads what rank 1 read in epoch 1 (DALI)
        assert sorted(per_epoch[1][0]) == sorted(per_epoch[0][1])
        assert sorted(per_epoch[1][1]) == sorted(per_epoch[0][0])
    assert per_epoch[0][0] != sorted(per_epoch[0][0]) or per_epoch[0][1] != sorted(
        per_epoch[0][1]
    )  # random_shuffle shuffled


@pytest.mark.parametrize("stick", [False, True])
def test_ddp_two_ranks_with_the_dataset(tmp_path, stick):
    check_shards(run_ranks(tmp_path, "dataset", stick, pad=False), stick)


def test_ddp_two_ranks_with_the_iterator(tmp_path):
    # pad_last_batch=True: without it DALI's iterator (and so augkit's, which copies its
    # rules) drops the next epoch's samples that a PARTIAL last batch read and trimmed, so
    # epoch 2 misses one file and repeats another on the smaller shard (DALI's documented
    # "the next epoch will end sooner"); the dataset rewinds instead (see its docstring).
    pytorch = pytest.importorskip("augkit.plugin.pytorch")
    if not hasattr(pytorch, "DALIGenericIterator"):
        pytest.skip("DALIGenericIterator is not in augkit.plugin.pytorch yet")
    check_shards(run_ranks(tmp_path, "iterator", stick=False, pad=True), stick=False)
