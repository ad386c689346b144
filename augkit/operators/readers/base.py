"""``Reader``: what every reader shares: DALI's reader arguments (sharding, shuffling, padding),
the position in the data set (``cursor.EpochCursor``), reading a batch on the pipeline's threads
with errors that name the file, and the refilling half of the screening protocol
(``augkit.operators.screening``): samples a screening operator rejects are left out and the
reader reads on, so batches stay full; except in a batch of ``Pipeline.run_partial(holes=True)``
(how the iterators walk an epoch), where a rejected sample leaves a hole (the batch is shorter),
so that an epoch has the same number of batches whatever is skipped.

A reader subclass writes three things:

- ``open()``: called when the pipeline is built; lists the data set and returns the samples'
  names (their ``source_info``, e.g. ``"cats/1.jpg"``), raising ``ArgumentError`` for what
  cannot work;
- ``load(index)``: the sample ``index`` as one array per output (e.g. its bytes and its label);
  an ``OSError`` names the file (``path_of(index)``) in the error;
- ``path_of(index)``: where sample ``index`` lives, for messages ("" if nowhere).

and registers its schema with ``READER_ARGS`` among its arguments; ``labels_of(index)`` where the
reader knows a sample's labels without reading it (for ``Pipeline.pick(labels=...)``).

Picking (``Pipeline.pick``, the viewer's pinned samples): while ``picked`` holds sample indices,
``next_batch`` reads exactly those and leaves the position in the data set alone; a screening
decoder's rejects are then left out (the batch is shorter) instead of read on for, since reading
on would move the reader.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit.errors import ArgumentError, OperatorError, SkippedSample
from augkit.operators.base import HOLES, RunContext, SourceOperator
from augkit.operators.readers.cursor import EpochCursor, EpochPosition, Sharding, State
from augkit.operators.registry import Arg, to_bool, to_int
from augkit.operators.screening import Rejected, Screen
from augkit.tensors import TensorList

# DALI's kDaliDataloaderSeed: the key of shuffle_after_epoch's permutations by default.
SHUFFLE_AFTER_EPOCH_KEY = 524287


@dataclass
class _Kept:
    """A sample read and screened: its arrays (one per output), name and screened values."""

    data: tuple[np.ndarray, ...]
    name: str
    values: dict[str, Any]


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def listed(names: Sequence[str], count: int | None = None, shown: int = 5) -> str:
    """The first ``shown`` of ``names`` for a message, and how many more of ``count`` (default:
    all of them) there are.

    Example:
        >>> listed(["a", "b", "c"], shown=2)
        "'a', 'b' and 1 more"
    """
    count = len(names) if count is None else count
    return ", ".join(repr(n) for n in names[:shown]) + (
        f" and {count - shown} more" if count > shown else ""
    )


class Reader(SourceOperator):
    """A reader over a data set of indexed samples (see the module docstring)."""

    def open(self) -> list[str]:
        raise NotImplementedError

    def load(self, index: int) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def path_of(self, index: int) -> str:
        return ""

    def labels_of(self, index: int) -> tuple[int, ...]:
        """The labels of sample ``index`` without reading it (``Pipeline.pick(labels=...)``)."""
        raise self.error("cannot pick samples by label: it has no labels to pick by")

    def sample_names(self) -> list[str]:
        """Every sample's name (its ``source_info``), in the data set's order."""
        return list(self._names)

    def error(self, message: str) -> ArgumentError:
        return ArgumentError(f"{self.name}: {message}")

    def setup(self) -> None:
        a = self.args
        if a["shard_id"] >= a["num_shards"]:
            raise self.error(
                f"shard_id must be smaller than num_shards, got shard_id={a['shard_id']} "
                f"with num_shards={a['num_shards']}"
            )
        if a["shuffle_after_epoch"] and a["random_shuffle"]:
            raise self.error("shuffle_after_epoch and random_shuffle cannot be both true")
        if a["shuffle_after_epoch"] and a["stick_to_shard"]:
            raise self.error(
                "shuffle_after_epoch and stick_to_shard cannot be both true "
                "(shuffle_after_epoch already keeps each reader on its shard)"
            )
        self._names = self.open()
        self._size = len(self._names)
        if self._size < a["num_shards"]:
            raise self.error(
                f"the data set has {self._size} samples, fewer than num_shards={a['num_shards']}"
            )
        global_seed = a["shuffle_after_epoch_seed"]
        self.cursor = EpochCursor(
            Sharding(
                size=self._size,
                shard_id=a["shard_id"],
                num_shards=a["num_shards"],
                stick_to_shard=a["stick_to_shard"],
                pad_last_batch=a["pad_last_batch"],
                random_shuffle=a["random_shuffle"],
                shuffle_after_epoch=a["shuffle_after_epoch"],
                seed=self.seed,
                global_key=SHUFFLE_AFTER_EPOCH_KEY if global_seed is None else global_seed,
            )
        )
        # Screening (attach_screen): the screens, the last good sample (what pad_last_batch
        # pads with when the epoch's last sample was rejected), and how many samples in a row
        # were rejected (to stop when the whole data set is bad).
        self._screens: list[tuple[int, str, Screen]] = []
        self._last_good: _Kept | None = None
        self._failed_in_row = 0
        self.picked: list[int] | None = None  # see the module docstring (picking)

    # --- SourceOperator -----------------------------------------------------------------------
    def next_batch(self, ctx: RunContext, batch_size: int, partial: bool | str) -> list[TensorList]:
        if self.picked is not None:
            if not self._screens:
                return self._read(ctx, self.picked)
            kept, skipped = self._read_screened(ctx, self.picked, self._screens)
            return self._picked_batch(ctx, kept, skipped, self._screens)
        cursor = self.cursor
        epoch, pos = cursor.start()
        screened = bool(self._screens)
        # EpochCursor.take reads partial's truth (HOLES is true): its bool annotation is narrow
        picks, e, p = cursor.take(epoch, epoch, pos, batch_size, partial, pad=not screened)
        if not screened:
            outputs = self._read(ctx, picks)
            # Moved only once the files were read: a failed batch is read again by the next run().
            cursor.commit(epoch, e, p)
            return outputs
        kept, skipped = self._read_screened(ctx, picks, self._screens)
        return self._fill(ctx, kept, skipped, epoch, e, p, batch_size, partial, self._screens)

    def epoch_size(self) -> int:
        return self.cursor.epoch_size()

    def left_in_epoch(self, state: Any = None) -> int:
        return self.cursor.left_in_epoch(state)

    def position(self, state: Any = None) -> EpochPosition:
        return self.cursor.position(state)

    def get_state(self) -> State:
        return self.cursor.state

    def set_state(self, state: State) -> None:
        self.cursor.state = state

    def reset(self) -> None:
        self.cursor.reset()

    # --- Refilling (augkit.operators.screening) ------------------------------------------------
    @property
    def skips_samples(self) -> bool:
        """Whether a screening operator (a decoder with ``on_error="skip"``) may leave samples
        out of this reader's batches."""
        return bool(self._screens)

    def attach_screen(self, output: int, operator: str, screen: Screen) -> None:
        self._screens.append((output, operator, screen))

    def refill(
        self,
        ctx: RunContext,
        outputs: Sequence[TensorList],
        output: int,
        operator: str,
        values: Sequence[Any],
        screen: Screen,
    ) -> list[TensorList]:
        kept, skipped = [], []
        for i, value in enumerate(values):
            name = outputs[output].sources[i]
            if isinstance(value, Rejected):
                self._failed_in_row += 1
                path = self._path_of_name(name)
                skipped.append(
                    SkippedSample(operator, self.name, name, path, value.reason, ctx.iteration)
                )
            else:
                self._failed_in_row = 0
                data = tuple(out.samples[i] for out in outputs)
                kept.append(_Kept(data, name, {operator: value}))
        screens = [(output, operator, screen)]
        if self.picked is not None:
            return self._picked_batch(ctx, kept, skipped, screens)
        epoch, e, p = self.cursor.end()
        return self._fill(ctx, kept, skipped, epoch, e, p, len(outputs[0]), ctx.partial, screens)

    # --- reading ------------------------------------------------------------------------------
    def _load_or_raise(self, index: int, position: int) -> tuple[np.ndarray, ...]:
        try:
            return self.load(index)
        except OSError as exc:
            raise OperatorError(
                f"cannot read file '{self.path_of(index)}': {_os_reason(exc)}",
                operator=self.name,
                sample_index=position,
                source_info=self._names[index],
            ) from exc

    def _read(self, ctx: RunContext, picks: list[int]) -> list[TensorList]:
        first: dict[int, int] = {}
        for k, index in enumerate(picks):
            first.setdefault(index, k)
        unique = list(first)
        loaded = ctx.map(lambda j: self._load_or_raise(unique[j], first[unique[j]]), len(unique))
        data = dict(zip(unique, loaded, strict=True))
        return self._batches([data[i] for i in picks], [self._names[i] for i in picks])

    def _batches(self, data: list[tuple[np.ndarray, ...]], names: list[str]) -> list[TensorList]:
        return [
            TensorList([d[k] for d in data], "", names, dtype=self.empty_dtype(k))
            for k in range(self.num_outputs)
        ]

    def empty_dtype(self, index: int) -> Any:
        """The dtype of output ``index`` of an empty batch."""
        return np.uint8

    def _read_screened(
        self, ctx: RunContext, picks: list[int], screens: list[tuple[int, str, Screen]]
    ) -> tuple[list[_Kept], list[SkippedSample]]:
        """Read and screen ``picks``: the samples that pass every screen, and a record for each
        that does not (a file that cannot be read is left out too)."""
        unique = list(dict.fromkeys(picks))

        def load(j: int) -> tuple[np.ndarray, ...] | str:
            try:
                return self.load(unique[j])
            except OSError as exc:
                return f"cannot read file: {_os_reason(exc)}"

        data = dict(zip(unique, ctx.map(load, len(unique)), strict=True))
        readable = [i for i in picks if not isinstance(data[i], str)]
        batches = self._batches([data[i] for i in readable], [self._names[i] for i in readable])
        results = {key: screen(ctx, batches[output]) for output, key, screen in screens}
        kept: list[_Kept] = []
        skipped: list[SkippedSample] = []
        k = 0
        for index in picks:
            reason, operator = data[index], self.name
            values: dict[str, Any] = {}
            if not isinstance(reason, str):
                for _, key, _screen in screens:
                    value = results[key][k]
                    if isinstance(value, Rejected):
                        reason, operator = value.reason, key
                        break
                    values[key] = value
                k += 1
            self._failed_in_row = self._failed_in_row + 1 if isinstance(reason, str) else 0
            if isinstance(reason, str):
                skipped.append(
                    SkippedSample(
                        operator,
                        self.name,
                        self._names[index],
                        self.path_of(index),
                        reason,
                        ctx.iteration,
                    )
                )
            else:
                kept.append(_Kept(data[index], self._names[index], values))
        return kept, skipped

    def _fill(
        self,
        ctx: RunContext,
        kept: list[_Kept],
        skipped: list[SkippedSample],
        epoch: int,
        e: int,
        p: int,
        batch_size: int,
        partial: bool | str,
        screens: list[tuple[int, str, Screen]],
    ) -> list[TensorList]:
        """Take samples from position ``p`` of epoch ``e`` on until ``kept`` holds
        ``batch_size`` good ones (or the epoch ends, with ``partial`` or ``pad_last_batch``),
        then commit the position and make the batch; the screened values and the skips go into
        ``ctx.notes``."""
        cursor = self.cursor
        # With HOLES (Pipeline.run_partial(holes=True)) nothing is read on for: a skipped sample
        # leaves a hole, so every batch covers batch_size positions and an epoch has as many
        # batches whatever is skipped (the iterators' len(), DDP ranks stepping together).
        while partial != HOLES and len(kept) < batch_size and self._failed_in_row <= self._size:
            # partial is a bool here (not HOLES), which mypy cannot narrow from bool | str by !=
            picks, e, p = cursor.take(epoch, e, p, batch_size - len(kept), partial, pad=False)
            if not picks:
                break
            more, bad = self._read_screened(ctx, picks, screens)
            kept += more
            skipped += bad
        if partial == HOLES:
            # Nothing was read on for, so no endless search to stop: a shard of bad files gives
            # empty batches (each skip is reported), and the count starts again.
            self._failed_in_row = 0
        if self._failed_in_row > self._size:
            last = skipped[-1]
            self._failed_in_row = 0
            raise OperatorError(
                f"every one of the last {self._size + 1} samples was skipped, more than the "
                f"{self._size} samples of the data set, so no good sample is left to read; the "
                f"last one ({last.path or last.source_info}): {last.reason}",
                operator=last.operator,
            )
        if self.args["pad_last_batch"] and len(kept) < batch_size and not partial:
            # pad_last_batch: copies of the last good sample (the epoch's last may be bad).
            pad = kept[-1] if kept else self._last_good
            if pad is None:
                raise OperatorError(
                    "pad_last_batch has no sample to pad with: every sample so far was skipped",
                    operator=self.name,
                )
            kept += [pad] * (batch_size - len(kept))
        cursor.commit(epoch, e, p)
        if kept:
            self._last_good = kept[-1]
        outputs = self._batches([k.data for k in kept], [k.name for k in kept])
        for _, key, _ in screens:
            ctx.notes.screened[key] = [k.values[key] for k in kept]
        ctx.notes.skipped.extend(skipped)
        return outputs

    def _picked_batch(
        self,
        ctx: RunContext,
        kept: list[_Kept],
        skipped: list[SkippedSample],
        screens: list[tuple[int, str, Screen]],
    ) -> list[TensorList]:
        """The batch of the picked samples that passed the screens (nothing read on for)."""
        if not kept:
            last = skipped[-1]
            raise OperatorError(
                f"every picked sample was skipped; the last one ({last.path or last.source_info})"
                f": {last.reason}",
                operator=last.operator,
            )
        outputs = self._batches([k.data for k in kept], [k.name for k in kept])
        for _, key, _ in screens:
            ctx.notes.screened[key] = [k.values[key] for k in kept]
        ctx.notes.skipped.extend(dataclasses.replace(r, refilled=False) for r in skipped)
        return outputs

    def _path_of_name(self, name: str) -> str:
        try:
            return self.path_of(self._names.index(name))
        except ValueError:
            return ""


_COMPAT = "accepted for DALI compatibility; no effect in augkit"

READER_ARGS = (
    Arg("random_shuffle", "read each epoch in a random order", False, to_bool),
    Arg(
        "initial_fill",
        "DALI's shuffle buffer size; accepted, augkit shuffles the whole shard",
        1024,
        to_int(1),
    ),
    Arg(
        "shuffle_after_epoch",
        "permute the whole data set each epoch, identically on every shard",
        False,
        to_bool,
    ),
    Arg(
        "shuffle_after_epoch_seed",
        "key of shuffle_after_epoch's permutations (None: 524287, DALI's data-loader seed)",
        None,
        to_int(0, 2**63 - 1),
    ),
    Arg("stick_to_shard", "read the same shard every epoch", False, to_bool),
    Arg(
        "pad_last_batch",
        "fill the epoch's last batch with copies of its last sample",
        False,
        to_bool,
    ),
    Arg("shard_id", "index of the shard this reader reads", 0, to_int(0)),
    Arg("num_shards", "number of shards the data set is split into", 1, to_int(1)),
    Arg("read_ahead", _COMPAT, False, to_bool),
    Arg("dont_use_mmap", _COMPAT, False, to_bool),
    Arg("prefetch_queue_depth", _COMPAT, 1, to_int(1)),
    Arg("lazy_init", _COMPAT, False, to_bool),
    Arg("skip_cached_images", _COMPAT, False, to_bool),
    Arg("tensor_init_bytes", _COMPAT, 1048576, to_int(0)),
)
"""The arguments every reader takes (DALI's reader arguments), in every reader's schema."""
