"""A reader's position in its data set: epochs, shards, shuffling and padding, as DALI's readers
have them. ``EpochCursor`` knows nothing about files: it maps (epoch, position) to an index of
the data set and keeps the position between batches; every reader (``readers/base.py``) uses it.

Sharding is DALI's: shard ``k`` of ``n`` covers samples ``[N*k//n, N*(k+1)//n)``. Without
``stick_to_shard`` the shards rotate: epoch ``e`` of shard ``k`` reads the range of shard
``(k+e) % n``, which is what DALI's reader does when it runs on past the end of its shard.

Shuffling (augkit's rule; DALI's shuffle goes through a C++ sample buffer and ``std::mt19937``,
so its order cannot be reproduced outside libstdc++):

- ``random_shuffle``: as in DALI, the whole data set is first dealt once in a fixed order, the
  same on every shard (a permutation drawn from ``epoch_rng(shuffle_after_epoch_key, 0)``, DALI's
  ``std::shuffle`` of the file list with ``kDaliDataloaderSeed``), and the shards are ranges of
  that order: a data set stored class by class (``readers.file`` on class folders) gives every
  shard, so every DDP rank, samples of nearly every class, not a block of classes. Each epoch
  then reads its shard's samples in a full permutation drawn from
  ``augkit.random.epoch_rng(reader_seed, epoch)``.
- ``shuffle_after_epoch``: each epoch (epoch 0 included, as in DALI) permutes the whole data set
  with ``epoch_rng(shuffle_after_epoch_key, epoch)``, the same on every shard, so the shards stay
  disjoint; each shard then reads its range of that permutation (it implies sticking to the
  shard).

Epochs. A batch that reaches the end of the epoch goes on with the next epoch's samples (in the
next epoch's order), or, with ``pad_last_batch``, is filled with copies of the epoch's last
sample; every shard is then padded to ``ceil(N/n)`` samples, so all shards give the same number
of batches, and the next batch starts the next epoch. With ``partial`` a batch stops at the end
of the epoch, and at the end of the shard's own samples: it holds no padded copy. ``reset()``
moves to the first sample of the next epoch: samples of the next epoch that a full last batch
borrowed are read again there, so every epoch loop sees a whole epoch.

The position is ``(epoch, delivered, ahead)``: the epoch the pipeline is in, how many of its
samples were delivered, and how many samples of the following epochs a full batch has already
taken beyond its end. A batch is taken (``take``) and only then committed (``commit``), so a
batch that fails to read leaves the position where it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from augkit.random import epoch_rng

State = tuple[int, int, int]


class EpochPosition(NamedTuple):
    """Where a reader stands in its shard's epoch, after the last batch delivered
    (``Pipeline.position``).

    Attributes:
        epoch: the epoch (0 for the first) that the last batch belonged to, or that the next
            one starts after ``reset()``.
        delivered: samples of that epoch delivered so far (``pad_last_batch``'s copies count).
        size: samples in the shard's epoch (``pad_last_batch``'s copies included).
        samples: the shard's own samples in that epoch (without the copies).

    Example:
        >>> p = EpochPosition(epoch=0, delivered=12, size=16, samples=15)
        >>> p.left, p.samples_left
        (4, 3)
    """

    epoch: int
    delivered: int
    size: int
    samples: int

    @property
    def left(self) -> int:
        """Positions left in the epoch (0: the epoch was delivered)."""
        return self.size - self.delivered

    @property
    def samples_left(self) -> int:
        """The shard's own samples left in the epoch (padded copies not counted)."""
        return max(self.samples - self.delivered, 0)


@dataclass(frozen=True)
class Sharding:
    """How a reader walks its data set (DALI's reader arguments)."""

    size: int
    shard_id: int = 0
    num_shards: int = 1
    stick_to_shard: bool = False
    pad_last_batch: bool = False
    random_shuffle: bool = False
    shuffle_after_epoch: bool = False
    seed: int = 0  # random_shuffle's key (the reader's seed)
    global_key: int = 0  # shuffle_after_epoch's key, and random_shuffle's deal


class EpochCursor:
    """A position (epoch, sample) in the shard's sequence of samples (see the module docstring).

    Example:
        >>> cursor = EpochCursor(Sharding(size=5))
        >>> epoch, pos = cursor.start()
        >>> picks, e, p = cursor.take(epoch, epoch, pos, 3, partial=False, pad=True)
        >>> cursor.commit(epoch, e, p)
        >>> picks, cursor.left_in_epoch()
        ([0, 1, 2], 2)
    """

    def __init__(self, sharding: Sharding) -> None:
        self.sharding = sharding
        self._stick = sharding.stick_to_shard or sharding.shuffle_after_epoch
        self._padded_length = -(-sharding.size // sharding.num_shards)
        self._orders: dict[int, np.ndarray] = {}
        self._dealt: np.ndarray | None = None  # random_shuffle's one deal of the data set
        self._epoch = 0
        self._pos = 0
        self._ahead = 0

    # --- the sequence of samples --------------------------------------------------------------
    def _shard_range(self, epoch: int) -> tuple[int, int]:
        s = self.sharding
        shard = s.shard_id if self._stick else (s.shard_id + epoch) % s.num_shards
        return s.size * shard // s.num_shards, s.size * (shard + 1) // s.num_shards

    def length(self, epoch: int) -> int:
        """Samples in this shard's epoch ``epoch`` (padded copies included)."""
        if self.sharding.pad_last_batch:
            return self._padded_length
        return self.samples(epoch)

    def samples(self, epoch: int) -> int:
        """The shard's own samples in epoch ``epoch`` (padded copies not counted)."""
        low, high = self._shard_range(epoch)
        return high - low

    def _order(self, epoch: int) -> np.ndarray:
        """Data set indices of the samples of epoch ``epoch`` of this shard, in reading order."""
        order = self._orders.get(epoch)
        if order is None:
            s = self.sharding
            low, high = self._shard_range(epoch)
            if s.shuffle_after_epoch:
                order = epoch_rng(s.global_key, epoch).permutation(s.size)[low:high]
            elif s.random_shuffle:
                if self._dealt is None:
                    self._dealt = epoch_rng(s.global_key, 0).permutation(s.size)
                order = self._dealt[low:high][epoch_rng(s.seed, epoch).permutation(high - low)]
            else:
                order = np.arange(low, high)
            if len(self._orders) >= 4:
                del self._orders[min(self._orders)]
            self._orders[epoch] = order
        return order

    def sample(self, epoch: int, pos: int) -> int:
        """The data set index at position ``pos`` of epoch ``epoch``."""
        order = self._order(epoch)
        # Positions past the shard's end exist only with pad_last_batch: the last sample again.
        return int(order[min(pos, len(order) - 1)])

    # --- moving -------------------------------------------------------------------------------
    def start(self) -> tuple[int, int]:
        """(epoch, position) of the next batch's first sample."""
        epoch, pos = self._epoch, self._pos
        if pos == self.length(epoch):
            # The epoch was delivered: go on in the next one, after what was already taken.
            epoch, pos = epoch + 1, self._ahead
            while pos >= self.length(epoch):
                pos -= self.length(epoch)
                epoch += 1
        return epoch, pos

    def end(self) -> tuple[int, int, int]:
        """(the last batch's epoch, and the epoch and position after its last sample)."""
        epoch, pos, ahead = self._epoch, self._pos, self._ahead
        if ahead == 0:
            return epoch, epoch, pos
        e, p = epoch + 1, ahead
        while p > self.length(e):
            p -= self.length(e)
            e += 1
        return epoch, e, p

    def take(
        self, epoch: int, e: int, p: int, n: int, partial: bool | str, pad: bool
    ) -> tuple[list[int], int, int]:
        """Up to ``n`` data set indices from position ``p`` of epoch ``e`` on, for a batch that
        began in ``epoch``; and the position after them. At the end of ``epoch``: stop with
        ``partial`` (which takes none of ``pad_last_batch``'s copies), or with
        ``pad_last_batch`` (then fill with copies of its last sample if ``pad``), else go on in
        the next epoch."""
        picks: list[int] = []
        while len(picks) < n:
            if partial and e == epoch and p >= self.samples(e):
                # pad_last_batch's copies are no samples of the epoch: a partial batch skips
                # them, and the epoch is then delivered.
                p = max(p, self.length(e))
                break
            if p >= self.length(e):
                if e == epoch and partial:
                    break
                if e == epoch and self.sharding.pad_last_batch:
                    if pad:
                        picks += [self.sample(e, p - 1)] * (n - len(picks))
                    break
                e, p = e + 1, 0
            picks.append(self.sample(e, p))
            p += 1
        return picks, e, p

    def commit(self, epoch: int, e: int, p: int) -> None:
        """The batch that began in ``epoch`` ended at position ``p`` of epoch ``e``."""
        self._epoch = epoch
        if e == epoch:
            self._pos, self._ahead = p, 0
        else:
            self._pos = self.length(epoch)
            self._ahead = p + sum(self.length(k) for k in range(epoch + 1, e))

    # --- SourceOperator's position API ---------------------------------------------------------
    def epoch_size(self) -> int:
        s = self.sharding
        return self._padded_length * s.num_shards if s.pad_last_batch else s.size

    def left_in_epoch(self, state: State | None = None) -> int:
        return self.position(state).left

    def position(self, state: State | None = None) -> EpochPosition:
        """The position after the last batch delivered (of ``state``, when given)."""
        epoch, pos, _ = self.state if state is None else state
        return EpochPosition(epoch, pos, self.length(epoch), self.samples(epoch))

    @property
    def state(self) -> State:
        return self._epoch, self._pos, self._ahead

    @state.setter
    def state(self, state: State) -> None:
        self._epoch, self._pos, self._ahead = state

    def reset(self) -> None:
        if self._pos:
            self._epoch += 1
            self._pos = self._ahead = 0
