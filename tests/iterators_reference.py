"""DALI 2.4's iterator numbers, stored in ``tests/data/iterators/reference.json`` and compared
with augkit's iterators by ``tests/test_iterators.py``.

Run with DALI's venv (it has no torch), from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/iterators_reference.py

Each case builds real DALI CPU pipelines (``device_id=None``) of ``fn.readers.file(files=...,
labels=[0, 1, ...])`` (so a sample's label is its index in the file list; shuffling off) and
wraps them in DALI's own ``_DaliBaseIterator`` with a ``__next__`` that does what
``DALIGenericIterator.__next__`` does with NumPy arrays instead of torch tensors (torch is the
only thing DALI's PyTorch plugin adds to that logic). Stored per case and epoch: ``len()`` at
the epoch's start and every batch as one list of labels per pipeline. Three epochs, each ended
by ``StopIteration`` and followed by ``reset()``; or, where DALI refuses the case, the error's
type (``error``).
"""

from __future__ import annotations

import itertools
import json
import pathlib
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "iterators" / "reference.json"
FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "data" / "images").rglob("*.jpg"))
EPOCHS = 3
POLICIES = ("FILL", "DROP", "PARTIAL")


def case_name(n, bs, shards, pipes, pad, stick, policy, mode):
    return (
        f"n{n}-bs{bs}-shards{shards}-pipes{pipes}-pad{int(pad)}-stick{int(stick)}-{policy}-{mode}"
    )


def cases():
    """(files, batch size, num_shards, shard ids of the pipelines, pad, stick, policy, mode)."""
    out = []
    for n, bs, shards, pad, stick, policy in itertools.product(
        (7, 10), (3, 4, 5), (1, 2, 3), (False, True), (False, True), POLICIES
    ):
        if shards == 1 and stick:
            continue  # stick_to_shard changes nothing with one shard
        # One iterator per shard (a DDP rank each), with the reader's name.
        for shard in range(shards):
            out.append((n, bs, shards, [shard], pad, stick, policy, "reader"))
        # Two pipelines (two devices of one process) over shards 0 and 1.
        if shards >= 2:
            out.append((n, bs, shards, [0, 1], pad, stick, policy, "reader"))
    # size= instead of reader_name (DALI's legacy way), one shard, and two pipelines.
    for n, bs, pad, policy in itertools.product((7, 10), (3, 4, 5), (False, True), POLICIES):
        out.append((n, bs, 1, [0], pad, False, policy, "size"))
        out.append((n, bs, 2, [0, 1], pad, False, policy, "size"))
    return out


def run_case(n, bs, shards, shard_ids, pad, stick, policy, mode):
    from nvidia.dali import fn, pipeline_def
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

    @pipeline_def(batch_size=bs, num_threads=1, device_id=None, seed=1)
    def pipe(shard_id):
        _, labels = fn.readers.file(
            files=FILES[:n],
            labels=list(range(n)),
            shard_id=shard_id,
            num_shards=shards,
            pad_last_batch=pad,
            stick_to_shard=stick,
            random_shuffle=False,
            name="Reader",
        )
        return labels

    class It(_DaliBaseIterator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._first_batch = None
            if self._prepare_first_batch:
                try:
                    self._first_batch = It.__next__(self)
                    self._ever_consumed = False
                except StopIteration:
                    self._report_no_data_in_pipeline()

        def __next__(self):
            self._ever_consumed = True
            if self._first_batch is not None:
                batch, self._first_batch = self._first_batch, None
                return batch
            outputs = self._get_outputs()
            batches = [np.array(out[0].as_tensor()).reshape(-1).tolist() for out in outputs]
            self._schedule_runs()
            self._advance_and_check_drop_last()
            if self._reader_name:
                if_drop, left = self._remove_padded()
                if np.any(if_drop):
                    return [b[0:k] for b, k in zip(batches, left, strict=True)]
            elif (
                self._last_batch_policy == LastBatchPolicy.PARTIAL
                and self._counter > self._size
                and self._size > 0
            ):
                diff = self._num_gpus * self.batch_size - (self._counter - self._size)
                grab = int(np.ceil(diff / self.batch_size))
                mod = diff % self.batch_size
                out = batches[0:grab]
                out[-1] = out[-1][0 : (mod if mod else self.batch_size)]
                return out
            return batches

    pipes = [pipe(s) for s in shard_ids]
    kwargs = {"last_batch_policy": getattr(LastBatchPolicy, policy)}
    if mode == "reader":
        kwargs["reader_name"] = "Reader"
    else:
        # The legacy way: the samples of the shards, summed over the pipelines.
        kwargs["size"] = sum(n * (s + 1) // shards - n * s // shards for s in shard_ids)
        kwargs["last_batch_padded"] = pad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = It(pipes, **kwargs)
    epochs = []
    for _ in range(EPOCHS):
        record = {"len": len(it), "batches": []}
        while True:
            try:
                record["batches"].append(next(it))
            except StopIteration:
                break
            if len(record["batches"]) > 50:
                raise RuntimeError("no end of epoch")
        epochs.append(record)
        it.reset()
    return epochs


def main():
    data = {"files": FILES, "cases": {}}
    for case in cases():
        n, bs, shards, shard_ids, pad, stick, policy, mode = case
        name = case_name(n, bs, shards, len(shard_ids), pad, stick, policy, mode)
        if len(shard_ids) == 1:
            name += f"-shard{shard_ids[0]}"
        data["cases"][name] = {
            "n": n,
            "batch_size": bs,
            "num_shards": shards,
            "shard_ids": shard_ids,
            "pad_last_batch": pad,
            "stick_to_shard": stick,
            "policy": policy,
            "mode": mode,
        }
        try:
            data["cases"][name]["epochs"] = run_case(*case)
        except Exception as exc:  # DALI's own error for this combination: stored too
            data["cases"][name]["error"] = type(exc).__name__
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{len(data['cases'])} cases -> {OUT}")


if __name__ == "__main__":
    main()
