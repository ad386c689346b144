"""DALI's framework-free iterator logic (``nvidia.dali.plugin.base_iterator``): ``LastBatchPolicy``
and ``_DaliBaseIterator``, which counts samples, ends epochs, pads and trims the last batch; the
framework plugins (``augkit.plugin.pytorch``) only turn the kept samples into tensors. No torch.

The numbers are DALI 2.4's, checked against DALI itself (``tests/iterators_reference.py`` runs
DALI's own ``_DaliBaseIterator`` over real DALI pipelines; ``tests/test_iterators.py`` compares):

- ``len()`` and the epoch size. With ``reader_name`` the size of one pipeline's epoch comes
  from the reader (N samples, n shards): DROP: ``N // n``; the reader's ``pad_last_batch``:
  ``ceil(N / n)``; else ``ceil(ceil(N / n) / batch_size) * batch_size``, re-evaluated after
  every epoch with FILL (a shard read ahead into the next one needs fewer batches there).
  ``len()`` is that in batches (rounded down for DROP, up otherwise). With ``size`` (DALI's
  legacy way: the samples of the shards summed over the pipelines) batches count all pipelines.
- FILL: full batches as the reader makes them (going on into the next shard / epoch, or the
  padded copies of the last sample). DROP: the batch that would overflow the shard is read and
  dropped, and ``StopIteration`` comes instead. PARTIAL: the last batch is cut to the samples
  left in the shard (DALI's slice ``[0:left]``; a pipeline whose shard is already done gets
  an empty batch).
- The readers are NOT rewound between epochs (DALI's readers are not): what a full last batch
  took from the next epoch is not read again, so the next epoch starts after it (DALI's
  documentation: data ``1..7``, batch 2, FILL without padding: last batch ``[7, 1]``, then
  ``[2, 3]``). So ``reset()`` does not call ``Pipeline.reset()`` on a pipeline with readers
  (augkit's ``reset()`` rewinds them to the epoch's start); it does for a pipeline of external
  sources, whose epoch ends at their ``StopIteration`` (``size=-1`` without ``reader_name``).
- ``reset()`` before the end of the epoch is ignored with a warning (as in DALI);
  ``iter(it)`` resets an iterator that was consumed from; ``auto_reset``: True/"yes",
  False/None/"no".
- Prefetching (``exec_async``) and worker processes change nothing: the iterator asks for
  batches in order with ``run()``, and the readers' positions are those of the batches consumed.

Where DALI's count would lose or repeat samples, the iterator walks the readers' own epochs
instead (``walk_epoch``, on ``Pipeline.position``/``run_partial``/``run``/``reset``, the
pipeline's epoch interface): when the reader ``reader_name`` shuffles (``random_shuffle``,
``shuffle_after_epoch``: each epoch is a new order, so a window of N samples that straddles two
epochs repeats some and misses others) or skips samples (``decoders.image(on_error="skip")``, an
augkit feature DALI lacks). Then every epoch has exactly ``len()`` batches (DALI's count), on
every pipeline and every shard:

- PARTIAL: each batch stops at the reader's epoch end; a skipped file leaves a hole (the batch is
  shorter) rather than being replaced by a later one, so the batches still cover the epoch in
  ``len()`` steps; a pipeline whose shard is done gives an empty batch (as DALI's does);
  ``pad_last_batch``'s copies are never delivered;
- DROP: full batches of ``batch_size`` positions, ``len()`` of them (the tail that cannot fill
  one is not read); holes as for PARTIAL;
- FILL: full batches, the last completed by the reader (the next epoch's first samples, or
  ``pad_last_batch``'s copies); a skipped file is replaced by a later one; a pipeline whose
  shard is done before the others repeats its last batch.

and ``reset()`` moves every reader to its next epoch's first sample (the samples a FILL batch
borrowed are read again there). So each epoch of each shard delivers every sample once (FILL
adds its fill), and the shards of an epoch partition the data set. Without shuffling or skips,
DALI's count is kept exactly (its windows are whole epochs of a repeating order).

Bad arguments raise ``ArgumentError`` (a ``ValueError``) naming the argument where DALI asserts;
the pipelines are not touched before the arguments are checked.

Example:
    >>> LastBatchPolicy.PARTIAL.name
    'PARTIAL'
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator
from enum import Enum, unique
from typing import Any

import numpy as np

from augkit.errors import ArgumentError, GraphError

_LOG = logging.getLogger(__name__)


@unique
class LastBatchPolicy(Enum):
    """What to do with the last batch of an epoch when too few samples are left to fill it.

    - FILL: the batch is full: the reader goes on into the next epoch, or repeats the last
      sample with its ``pad_last_batch``;
    - DROP: the batch is dropped if the epoch cannot fill it;
    - PARTIAL: the batch holds only the samples left in the epoch.
    """

    FILL = 0
    DROP = 1
    PARTIAL = 2


def _deprecation_warning() -> None:
    warnings.warn(
        "Please set `reader_name` and don't set last_batch_padded and size manually whenever "
        "possible. This may lead, in some situations, to missing some samples or returning "
        "duplicated ones. Check the Sharding section of the documentation for more details.",
        Warning,
        stacklevel=4,
    )


def reader_meta(pipe: Any, name: str) -> dict[str, Any]:
    """``Pipeline.reader_meta(name)`` (DALI's keys, and augkit's ``shuffled`` and
    ``skips_samples``), with an ``ArgumentError`` naming ``reader_name`` where it fails."""
    try:
        return pipe.reader_meta(name)
    except GraphError as exc:
        raise ArgumentError(f"reader_name={name!r}: {exc}") from None


def walk_epoch(
    pipe: Any, reader_name: str | None, policy: LastBatchPolicy, steps: int
) -> Iterator[tuple[tuple[Any, ...], int]]:
    """One epoch of ``pipe``'s reader ``reader_name`` in exactly ``steps`` batches, through the
    pipeline's epoch interface (see the module docstring): yields ``(outputs, kept)``, the
    batch and how many of its samples belong to the epoch (0: the shard is done and
    ``outputs`` is its previous batch, to be cut to nothing). Call ``pipe.reset()`` before it
    for a whole epoch.

    Raises:
        ArgumentError: the shard has no sample to give a first batch.
    """
    last: tuple[Any, ...] | None = None
    for _ in range(steps):
        position = pipe.position(reader_name)
        if policy == LastBatchPolicy.FILL and (position.left > 0 or last is None):
            outputs = pipe.run()
        elif policy == LastBatchPolicy.FILL:
            # The shard is done before the others (fewer samples, or skipped files): its batch
            # is the last one again, as a batch of the next epoch would begin that epoch and
            # reset() would then skip the rest of it.
            assert last is not None  # else the branch above ran
            yield last, len(last[0])
            continue
        elif position.left == 0 or (
            policy == LastBatchPolicy.DROP and position.left < pipe.batch_size
        ):
            if last is None:
                raise ArgumentError(
                    f"reader_name={reader_name!r}: the shard has no sample to deliver (fewer "
                    f"samples than shards?)"
                )
            yield last, 0
            continue
        else:
            outputs = pipe.run_partial(reader_name, holes=True)
            if outputs and len(outputs[0]) == 0 and last is not None:
                yield last, 0  # every sample of the batch was skipped: as a shard done
                continue
        last = outputs
        yield outputs, len(outputs[0]) if outputs else 0


class _DaliBaseIterator:
    """DALI's base iterator (see the module docstring); subclasses implement ``_convert``.

    Args:
        pipelines: a pipeline or a list of them (one per device), of equal batch sizes.
        size: samples in the epoch (the shards' samples, summed over the pipelines); -1: from
            ``reader_name``, or (without it, one pipeline) until the pipeline raises
            ``StopIteration`` (an external source).
        reader_name: the reader whose epoch and sharding set the size and the padding.
        auto_reset: True/"yes": reset itself after ``StopIteration``; False/None/"no".
        fill_last_batch: deprecated: True is FILL, False is PARTIAL.
        last_batch_padded: the reader's ``pad_last_batch`` (only without ``reader_name``).
        last_batch_policy: a ``LastBatchPolicy``.
        prepare_first_batch: compute the first batch at construction.
    """

    def __init__(
        self,
        pipelines: Any,
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str | None = False,
        fill_last_batch: bool | None = None,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        if pipelines is None or (isinstance(pipelines, (list, tuple)) and not pipelines):
            raise ArgumentError("pipelines: give at least one pipeline")
        pipes = list(pipelines) if isinstance(pipelines, (list, tuple)) else [pipelines]
        sizes = {p.batch_size for p in pipes}
        if len(sizes) != 1:
            raise ArgumentError(
                f"pipelines: all pipelines should have the same batch size, got {sorted(sizes)}"
            )
        self.batch_size = pipes[0].batch_size
        self._num_gpus = len(pipes)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise ArgumentError(f"size must be an integer, got {size!r}")
        self._size = int(size)
        if auto_reset is False or auto_reset is None or auto_reset == "no":
            self._auto_reset = "no"
        elif auto_reset is True or auto_reset == "yes":
            self._auto_reset = "yes"
        else:
            raise ArgumentError(
                f"Unsupported value for `auto_reset` {auto_reset!r} (True, False, 'yes', 'no')"
            )
        self._prepare_first_batch = prepare_first_batch
        if fill_last_batch is not None:
            warnings.warn(
                "Please do not use `fill_last_batch` and use `last_batch_policy` instead.",
                Warning,
                stacklevel=3,
            )
            policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        elif type(last_batch_policy) is not LastBatchPolicy:
            raise ArgumentError(
                f"Wrong type for `last_batch_policy`. Expected {LastBatchPolicy}, "
                f"got {type(last_batch_policy)}"
            )
        else:
            policy = last_batch_policy
        self._last_batch_policy = policy
        self._last_batch_padded = bool(last_batch_padded)
        if self._size == 0:
            raise ArgumentError("size cannot be 0")
        if self._size < 0 and not (len(pipes) == 1 or reader_name):
            raise ArgumentError(
                "size: a negative size (-1: until the pipeline ends) is supported only for a "
                "single pipeline; give size or reader_name"
            )
        if reader_name and self._size > 0:
            raise ArgumentError("When reader_name is provided, size should not be set")
        if reader_name and last_batch_padded:
            raise ArgumentError(
                "When reader_name is provided, last_batch_padded should not be set (it comes "
                "from the reader's pad_last_batch)"
            )
        if self._size < 0 and not reader_name:
            self._last_batch_policy = LastBatchPolicy.FILL
            self._last_batch_padded = False
        if self._size > 0 and not reader_name:
            _deprecation_warning()
        self._pipes = pipes
        self._counter = 0
        for p in pipes:
            p.build()
        self._reader_name = reader_name
        self._by_position = False
        if reader_name:
            self._read_reader_meta()
        self._ever_scheduled = False
        self._ever_consumed = False
        self._last: list[tuple[Any, ...] | None] = [None] * len(pipes)

    # --- the reader's numbers -------------------------------------------------------------------
    def _read_reader_meta(self) -> None:
        name = self._reader_name
        assert name is not None  # __init__ calls this only when it was given one
        metas = [reader_meta(p, name) for p in self._pipes]

        def same(key: str, what: str) -> Any:
            values = {m[key] for m in metas}
            if len(values) != 1:
                raise ArgumentError(
                    f"reader_name={self._reader_name!r}: Reader Operator should have the same "
                    f"{what} in all the pipelines, got {sorted(values)}"
                )
            return metas[0][key]

        self._size_no_pad = same("epoch_size", "size value")
        self._shards_num = same("number_of_shards", "`num_shards` argument set")
        self._last_batch_padded = same("pad_last_batch", "`pad_last_batch` argument set")
        self._is_stick_to_shard = same("stick_to_shard", "`stick_to_shard` argument set")
        self._shards_id = np.array([m["shard_id"] for m in metas], dtype=np.int64)
        n, shards, bs = self._size_no_pad, self._shards_num, self.batch_size
        if self._last_batch_policy == LastBatchPolicy.DROP:
            self._size = n // shards
        elif self._last_batch_padded:
            self._size = metas[0]["epoch_size_padded"] // shards
        else:
            self._size = math.ceil(math.ceil(n / shards) / bs) * bs
        ids = np.arange(shards, dtype=np.int64)
        # Samples each shard has, and how far into its shard each one starts this epoch.
        self._shard_sizes_initial = (ids + 1) * n // shards - ids * n // shards
        self._shard_sizes_per_gpu = self._shard_sizes_initial.copy()
        self._counter_per_gpu = np.zeros(shards, dtype=np.int64)
        self._by_position = any(m["shuffled"] or m["skips_samples"] for m in metas)
        if self._by_position:
            for p in self._pipes:
                if p.position(self._reader_name).delivered:
                    p.reset()  # run() was called: the first epoch starts whole too
            self._walks = self._new_walks()

    # --- one batch ------------------------------------------------------------------------------
    def _end_iteration(self) -> None:
        if self._auto_reset == "yes":
            self.reset()
        raise StopIteration

    def _run_all(self) -> list[tuple[Any, ...]]:
        outputs = []
        try:
            for p in self._pipes:
                outputs.append(p.run())
        except StopIteration:  # an external source ended its epoch
            if self._size < 0 and self._auto_reset == "yes":
                self.reset()
            raise
        if self._reader_name or self._size != -1:
            for out in outputs:
                for o in out:
                    if len(o) != self.batch_size:
                        raise GraphError(
                            "Variable batch size is not supported by the iterator when "
                            "reader_name is provided or iterator size is set explicitly"
                        )
        return outputs

    def _advance(self, dry_run: bool = False) -> bool:
        """Count the batch just read; whether it overflows the shard (DROP ends there)."""
        if self._reader_name:
            counter = self._counter + self.batch_size
            overflow = self._last_batch_policy == LastBatchPolicy.DROP and bool(
                np.any(self._counter_per_gpu + counter > self._shard_sizes_per_gpu)
            )
        else:
            counter = self._counter + self._num_gpus * self.batch_size
            overflow = self._last_batch_policy == LastBatchPolicy.DROP and counter > self._size
        if not dry_run:
            self._counter = counter
        return overflow

    def _kept(self) -> list[int] | None:
        """Samples kept from each pipeline's batch (a shorter list: pipelines left out), or
        None for whole batches."""
        bs, policy = self.batch_size, self._last_batch_policy
        if self._reader_name:
            if policy != LastBatchPolicy.PARTIAL:
                return None
            left = bs - (self._counter - self._shard_sizes_initial[self._shards_id])
            if not np.any(left < bs):
                return None
            return [len(range(bs)[0:k]) for k in left.tolist()]  # DALI's slice [0:left]
        if policy == LastBatchPolicy.PARTIAL and self._size > 0 and self._counter > self._size:
            diff = self._num_gpus * bs - (self._counter - self._size)
            grab = math.ceil(diff / bs)
            return [bs] * (grab - 1) + [diff % bs or bs]
        return None

    def _next_by_count(self) -> tuple[list[tuple[Any, ...]], list[int] | None]:
        self._ever_scheduled = True
        if self._size > 0 and self._counter >= self._size:
            self._end_iteration()
        outputs = self._run_all()
        if self._advance():
            self._end_iteration()
        return outputs, self._kept()

    def _new_walks(self) -> list[Iterator[tuple[tuple[Any, ...], int]]]:
        policy, steps = self._last_batch_policy, len(self)
        return [walk_epoch(p, self._reader_name, policy, steps) for p in self._pipes]

    def _next_by_position(self) -> tuple[list[tuple[Any, ...]], list[int] | None]:
        self._ever_scheduled = True
        if self._counter >= len(self) * self.batch_size:
            self._end_iteration()
        outputs, kept = [], []
        for walk in self._walks:
            out, k = next(walk)
            outputs.append(out)
            kept.append(k)
        self._counter += self.batch_size
        return outputs, kept

    def _next_outputs(self) -> tuple[list[tuple[Any, ...]], list[int] | None]:
        """The pipelines' outputs for the next batch and the samples kept of each (None: all)."""
        if self._by_position:
            return self._next_by_position()
        return self._next_by_count()

    # --- epochs ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """Start the next epoch, once this one has ended (earlier: ignored, with a warning)."""
        if self._by_position:
            self._reset_by_position()
            return
        if self._last_batch_policy == LastBatchPolicy.DROP:
            # len() told the user the epoch is over while the batch that overflows is still
            # to be read (and dropped): read it now.
            ended = self._size > 0 and self._counter >= self._size
            if self._advance(dry_run=True) and not ended:
                self._run_all()
                self._advance()
        if not (self._counter >= self._size or self._size < 0):
            # A log line, as DALI's (a warning would stop a loop run under -W error).
            _LOG.warning(
                "DALI iterator does not support resetting while epoch is not finished. Ignoring..."
            )
            return
        fill_unpadded = (
            self._last_batch_policy == LastBatchPolicy.FILL and not self._last_batch_padded
        )
        if fill_unpadded and self._reader_name:
            # Each shard read self._counter samples from its start (counted from the smallest
            # start): what it read beyond its shard is already read of the next epoch.
            read = self._counter_per_gpu + self._counter - self._counter_per_gpu.min()
            self._counter_per_gpu = read - self._shard_sizes_per_gpu
            self._counter = int(self._counter_per_gpu.min())
        elif fill_unpadded:
            self._counter = self._counter % self._size
        else:
            self._counter = 0
        if self._reader_name:
            if not self._is_stick_to_shard:
                self._shards_id = (self._shards_id + 1) % self._shards_num
            if fill_unpadded:
                if not self._is_stick_to_shard:
                    self._shard_sizes_per_gpu = np.roll(self._shard_sizes_per_gpu, 1)
                todo = int((self._shard_sizes_per_gpu - self._counter_per_gpu).max())
                self._size = math.ceil(todo / self.batch_size) * self.batch_size
                if self._size == 0:  # read ahead a whole epoch: skip to the one after
                    self._counter_per_gpu = np.zeros(self._shards_num, dtype=np.int64)
                    self._counter = 0
                    self._shard_sizes_per_gpu = np.roll(self._shard_sizes_per_gpu, 1)
                    biggest = int(self._shard_sizes_per_gpu.max())
                    self._size = math.ceil(biggest / self.batch_size) * self.batch_size
        for p in self._pipes:
            if not p.reader_names():
                p.reset()  # external sources: their next epoch (readers go on, as DALI's)

    def _reset_by_position(self) -> None:
        if self._counter < len(self) * self.batch_size:
            # A log line, as DALI's (a warning would stop a loop run under -W error).
            _LOG.warning(
                "DALI iterator does not support resetting while epoch is not finished. Ignoring..."
            )
            return
        self._counter = 0
        for p in self._pipes:
            p.reset()  # every reader to its next epoch's first sample
        self._walks = self._new_walks()

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        per_batch = self.batch_size if self._reader_name else self._num_gpus * self.batch_size
        if self._last_batch_policy == LastBatchPolicy.DROP:
            return self._size // per_batch
        return math.ceil(self._size / per_batch)

    def __iter__(self) -> _DaliBaseIterator:
        if self._counter != 0 and self._ever_consumed:
            self.reset()
        return self

    def next(self) -> Any:
        """The next batch (DALI's alias of ``__next__``)."""
        self._ever_consumed = True
        return self.__next__()

    def __next__(self) -> Any:
        raise NotImplementedError

    def _report_no_data_in_pipeline(self) -> None:
        raise RuntimeError(
            "It seems that there is no data in the pipeline. This may happen if "
            "`last_batch_policy` is set to PARTIAL and the requested batch size is greater "
            "than the shard size."
        )
