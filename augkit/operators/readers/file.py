"""``fn.readers.file`` / ``ops.readers.File`` (legacy ``ops.FileReader``): files from disk as
raw bytes, with an integer label, as DALI's file reader gives them.

Where the files come from (checked when the pipeline is built):

- ``file_root`` alone: every immediate subfolder of ``file_root`` is a class, numbered in the
  sorted order of the folder names (bytewise, as ``std::sort``); the files of each folder that
  match ``file_filters`` (fnmatch, case-insensitive unless ``case_sensitive_filter``) are taken in
  sorted order, folder after folder. Files lying directly in ``file_root`` are ignored, and there
  is no recursion, as in DALI. ``source_info`` is ``"<folder>/<file>"``.
- ``file_list``: a text file of ``path label`` lines, parsed from the right (so a path may hold
  spaces); the label is required. Paths are relative to ``file_root`` when it is given, else to
  the list's own folder.
- ``files`` (with ``labels``, or without: then the label is the file's index in ``files``).

In the last two modes ``source_info`` is the path as it was written.

Sharding is DALI's: shard ``k`` of ``n`` covers samples ``[N*k//n, N*(k+1)//n)``. Without
``stick_to_shard`` the shards rotate: epoch ``e`` of shard ``k`` reads the range of shard
``(k+e) % n``, which is what DALI's reader does when it runs on past the end of its shard.

Shuffling (augkit's rule; DALI's shuffle goes through a C++ sample buffer and ``std::mt19937``,
so its order cannot be reproduced outside libstdc++):

- ``random_shuffle=True``: each epoch reads its shard's samples in a full permutation drawn from
  ``augkit.random.epoch_rng(reader_seed, epoch)``. The reader's seed comes from the pipeline's
  seed (or from ``seed=``), so the same seed gives the same orders. ``initial_fill`` is accepted
  and ignored: the whole shard is the shuffle buffer.
- ``shuffle_after_epoch=True``: each epoch (epoch 0 included, as in DALI) permutes the whole data
  set with ``epoch_rng(shuffle_after_epoch_seed, epoch)`` (default key 524287, DALI's fixed
  data-loader seed), independent of the pipeline seed, so every shard of a job agrees and the
  shards stay disjoint; each shard then reads its range of that permutation (it implies
  ``stick_to_shard``). Combining it with ``random_shuffle`` or ``stick_to_shard`` raises, as DALI.

Epochs. ``run()`` never stops: a batch that reaches the end of the epoch goes on with the next
epoch's samples (in the next epoch's order), or, with ``pad_last_batch=True``, is filled with
copies of the epoch's last sample; every shard is then padded to ``ceil(N/n)`` samples, so all
shards give the same number of batches, and the next batch starts the next epoch. With
``partial=True`` (the pipeline's ``last_batch_policy="partial"``) a batch stops at the end of the
epoch. ``reset()`` moves to the first sample of the next epoch: samples of the next epoch that a
full last batch borrowed are read again there, so every epoch loop sees a whole epoch.

Files are read when their batch is made, in the pipeline's threads. A file that cannot be read
raises ``OperatorError`` naming it; the reader then stays where it was, so once the file is back
the same batch is read again.

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
    ... def files():
    ...     jpegs, labels = fn.readers.file(file_root="data/images", random_shuffle=True)
    ...     return jpegs, labels
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit.errors import ArgumentError, OperatorError, SkippedSample
from augkit.operators.base import RunContext, SourceOperator, finish
from augkit.operators.registry import (
    Arg,
    DataKind,
    OperatorSchema,
    fixed_kinds,
    register,
    to_bool,
    to_int,
    to_ints,
)
from augkit.random import epoch_rng
from augkit.tensors import TensorList

DEFAULT_FILE_FILTERS = (
    "*.jpg",
    "*.jpeg",
    "*.png",
    "*.bmp",
    "*.tif",
    "*.tiff",
    "*.pnm",
    "*.ppm",
    "*.pgm",
    "*.pbm",
    "*.jp2",
    "*.webp",
    "*.flac",
    "*.ogg",
    "*.wav",
)

# DALI's kDaliDataloaderSeed: the key of shuffle_after_epoch's permutations by default.
SHUFFLE_AFTER_EPOCH_KEY = 524287

_INT32 = np.iinfo(np.int32)

# What the outputs are, for the checks made at build (augkit.static_checks).
ENCODED_BYTES = DataKind(
    ndim=1,
    layout="",
    content="encoded",
    what="1-D encoded bytes from readers.file",
    hint="decode them first with fn.decoders.image",
)
LABELS = DataKind(
    ndim=1,
    layout="",
    content="labels",
    what="labels of shape (1,) from readers.file",
    hint=(
        "labels are not images: use the reader's first output "
        "(jpegs, labels = fn.readers.file(...))"
    ),
)

_LIST_LINE = re.compile(r"^(.*\S)\s+(\d+)\s*$", re.ASCII)


# --- where the files come from -------------------------------------------------------------


def _matcher(patterns: Sequence[str], case_sensitive: bool) -> Callable[[str], bool]:
    flags = 0 if case_sensitive else re.IGNORECASE
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), flags)
    return lambda name: regex.match(name) is not None


def list_directory(
    root: str,
    file_filters: Sequence[str],
    dir_filters: Sequence[str] | None = None,
    case_sensitive: bool = False,
) -> list[tuple[str, int]]:
    """``("<folder>/<file>", label)`` for every matching file of every immediate subfolder of
    ``root``, in DALI's order (folders sorted, files sorted within each)."""
    keep_file = _matcher(file_filters, case_sensitive)
    keep_dir = _matcher(dir_filters, case_sensitive) if dir_filters else (lambda _: True)
    with os.scandir(root) as it:
        folders = sorted(e.name for e in it if e.is_dir() and keep_dir(e.name))
    entries: list[tuple[str, int]] = []
    for label, folder in enumerate(folders):
        with os.scandir(os.path.join(root, folder)) as it:
            # Regular files and symbolic links, as DALI lists them.
            names = sorted(
                e.name
                for e in it
                if (e.is_symlink() or e.is_file(follow_symlinks=False)) and keep_file(e.name)
            )
        entries += [(f"{folder}/{name}", label) for name in names]
    return entries


def parse_file_list(path: str) -> list[tuple[str, int]]:
    """``(name, label)`` for each non-empty line of a DALI file list: a name (which may hold
    spaces) followed by whitespace and a non-negative integer label.

    Raises:
        ValueError: a line without a label, naming the line number.
    """
    entries = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            match = _LIST_LINE.match(line.rstrip("\r\n"))
            if match is None:
                raise ValueError(
                    f'incorrect format of the list file "{path}", line {number}: expected a file '
                    f"name followed by a label; got: {line.rstrip()!r}"
                )
            label = int(match.group(2))
            if label > _INT32.max:
                raise ValueError(
                    f'list file "{path}", line {number}: label {label} does not fit in int32'
                )
            entries.append((match.group(1), label))
    return entries


# --- argument converters -------------------------------------------------------------------


def _path(value: Any) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"expected a path (a string), got {value!r}")


def _paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, os.PathLike)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list of file paths, got {value!r}")
    return tuple(_path(v) for v in value)


def _patterns(value: Any) -> tuple[str, ...]:
    patterns = (value,) if isinstance(value, str) else value
    if not isinstance(patterns, (list, tuple)) or not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"expected a list of glob patterns such as '*.jpg', got {value!r}")
    if not patterns:
        raise ValueError("the list of patterns is empty")
    return tuple(patterns)


def _labels(value: Any) -> tuple[int, ...]:
    labels = to_ints()(value)
    for label in labels:
        if not _INT32.min <= label <= _INT32.max:
            raise ValueError(f"label {label} does not fit in int32")
    return labels


# --- the reader ----------------------------------------------------------------------------

Check = Callable[[RunContext, TensorList], list[Any]]


@dataclass
class _Kept:
    """A sample read and checked: its bytes, label, name and the checks' values."""

    data: np.ndarray
    label: np.ndarray
    name: str
    values: dict[str, Any]


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class FileReader(SourceOperator):
    """A position (epoch, sample) in the shard's sequence of files; see the module docstring."""

    def setup(self) -> None:
        a = self.args
        self._shards = a["num_shards"]
        self._shard_id = a["shard_id"]
        if self._shard_id >= self._shards:
            raise self._error(
                f"shard_id must be smaller than num_shards, got shard_id={self._shard_id} "
                f"with num_shards={self._shards}"
            )
        if a["shuffle_after_epoch"] and a["random_shuffle"]:
            raise self._error("shuffle_after_epoch and random_shuffle cannot be both true")
        if a["shuffle_after_epoch"] and a["stick_to_shard"]:
            raise self._error(
                "shuffle_after_epoch and stick_to_shard cannot be both true "
                "(shuffle_after_epoch already keeps each reader on its shard)"
            )
        names, paths, labels = self._list_files()
        if len(names) < self._shards:
            raise self._error(
                f"the data set has {len(names)} samples, fewer than num_shards={self._shards}"
            )
        self._names = names
        self._paths = paths
        self._labels = [finish(np.array([label], np.int32)) for label in labels]
        self._size = len(names)
        self._pad = a["pad_last_batch"]
        self._stick = a["stick_to_shard"] or a["shuffle_after_epoch"]
        self._padded_length = -(-self._size // self._shards)
        seed = a["shuffle_after_epoch_seed"]
        self._global_key = SHUFFLE_AFTER_EPOCH_KEY if seed is None else seed
        self._orders: dict[int, np.ndarray] = {}
        # The epoch the pipeline is in, how many of its samples were delivered, and how many
        # samples of the following epochs a full batch has already taken beyond its end.
        self._epoch = 0
        self._pos = 0
        self._ahead = 0
        # on_error="skip" (see add_check): the checks, the last good sample (what
        # pad_last_batch pads with when the epoch's last sample was skipped), and how many
        # samples in a row were skipped (to stop when the whole data set is bad).
        self._checks: list[tuple[int, str, Check]] = []
        self._last_good: _Kept | None = None
        self._failed_in_row = 0

    def _error(self, message: str) -> ArgumentError:
        return ArgumentError(f"{self.name}: {message}")

    def _list_files(self) -> tuple[list[str], list[str], list[int]]:
        a = self.args
        root, file_list, files, labels = a["file_root"], a["file_list"], a["files"], a["labels"]
        if files is not None and file_list is not None:
            raise self._error(
                "file paths can be given through 'files' or 'file_list', but not both "
                f"(file_list={file_list!r})"
            )
        if labels is not None and files is None:
            raise self._error("the argument 'labels' is valid only together with 'files'")
        if root is None and files is None and file_list is None:
            raise self._error(
                "'file_root' is required when neither 'files' nor 'file_list' is given"
            )
        if root is not None and not os.path.isdir(root):
            raise self._error(f"file_root {root!r} does not exist or is not a folder")

        if files is not None:
            if not files:
                raise self._error("'files' is an empty list")
            if labels is not None and len(labels) != len(files):
                raise self._error(f"provided {len(labels)} labels for {len(files)} files")
            names = list(files)
            numbers = list(labels) if labels is not None else list(range(len(files)))
            base = root or ""
        elif file_list is not None:
            if not os.path.isfile(file_list):
                raise self._error(f"file_list {file_list!r} does not exist or is not a file")
            try:
                listed = parse_file_list(file_list)
            except (OSError, ValueError) as exc:
                raise self._error(str(exc)) from None
            if not listed:
                raise self._error(f"no files found: the file_list {file_list!r} lists no files")
            names = [name for name, _ in listed]
            numbers = [label for _, label in listed]
            base = root if root is not None else os.path.dirname(file_list)
        else:
            try:
                listed = list_directory(
                    root, a["file_filters"], a["dir_filters"], a["case_sensitive_filter"]
                )
            except OSError as exc:
                raise self._error(f"cannot list file_root {root!r}: {exc}") from None
            if not listed:
                dirs = (
                    f" in subfolders matching {list(a['dir_filters'])}" if a["dir_filters"] else ""
                )
                raise self._error(
                    f"No files found in {root} matching {list(a['file_filters'])}{dirs} (the "
                    f"reader takes the files of the immediate subfolders of file_root, one "
                    f"class per subfolder)"
                )
            names = [name for name, _ in listed]
            numbers = [label for _, label in listed]
            base = root
        # Absolute paths, so that a later os.chdir() (in a notebook) does not lose the files.
        paths = [os.path.abspath(os.path.join(base, name)) for name in names]
        if files is not None or file_list is not None:
            self._check_listed(paths, "files" if files is not None else f"file_list {file_list!r}")
        return names, paths, numbers

    def _check_listed(self, paths: list[str], where: str) -> None:
        """Listed files that are missing (or folders) are known now: refuse them at build
        rather than when their batch comes (one stat per file)."""
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing:
            shown = ", ".join(repr(p) for p in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise self._error(
                f"{len(missing)} of the {len(paths)} files in {where} do not exist or are not "
                f"files: {shown}{more}"
            )

    # --- the sequence of samples --------------------------------------------------------------
    def _shard_range(self, epoch: int) -> tuple[int, int]:
        shard = self._shard_id if self._stick else (self._shard_id + epoch) % self._shards
        n, size = self._shards, self._size
        return size * shard // n, size * (shard + 1) // n

    def _length(self, epoch: int) -> int:
        """Samples in this shard's epoch ``epoch`` (padded copies included)."""
        if self._pad:
            return self._padded_length
        low, high = self._shard_range(epoch)
        return high - low

    def _order(self, epoch: int) -> np.ndarray:
        """Data set indices of the samples of epoch ``epoch`` of this shard, in reading order."""
        order = self._orders.get(epoch)
        if order is None:
            low, high = self._shard_range(epoch)
            if self.args["shuffle_after_epoch"]:
                order = epoch_rng(self._global_key, epoch).permutation(self._size)[low:high]
            elif self.args["random_shuffle"]:
                order = low + epoch_rng(self.seed, epoch).permutation(high - low)
            else:
                order = np.arange(low, high)
            if len(self._orders) >= 4:
                del self._orders[min(self._orders)]
            self._orders[epoch] = order
        return order

    def _sample(self, epoch: int, pos: int) -> int:
        order = self._order(epoch)
        # Positions past the shard's end exist only with pad_last_batch: the last sample again.
        return int(order[min(pos, len(order) - 1)])

    # --- SourceOperator -----------------------------------------------------------------------
    def add_check(self, output: int, key: str, check: Check) -> None:
        """Check every sample of output ``output`` as it is read (a decoder with
        ``on_error="skip"`` registers its ``try_decode`` here when the pipeline is built).

        ``check(ctx, batch)`` returns, per sample of ``batch``, either a value, handed on with
        the batch (``batch._predecoded[key]``: the decoder then does not decode again), or a
        string, the reason why the sample is skipped: it is left out, reported, and the next
        sample of the data set takes its place, so the batch stays full.
        """
        self._checks.append((output, key, check))

    def next_batch(self, ctx: RunContext, batch_size: int, partial: bool) -> list[TensorList]:
        epoch, pos = self._start()
        checked = bool(self._checks)
        picks, e, p = self._take(epoch, epoch, pos, batch_size, partial, pad=not checked)
        if not checked:
            outputs = self._read(ctx, picks)
            # Moved only once the files were read: a failed batch is read again by the next run().
            self._commit(epoch, e, p)
            return outputs
        kept, skipped = self._read_checked(ctx, picks, self._checks)
        return self._fill(ctx, kept, skipped, epoch, e, p, batch_size, partial, self._checks)

    def refill(
        self,
        ctx: RunContext,
        outputs: Sequence[TensorList],
        key: str,
        decoded: Sequence[Any],
        check: Check,
        skipped: list[SkippedSample],
    ) -> list[TensorList]:
        """The batch ``outputs`` (this reader's last, already delivered) without the samples
        whose ``decoded`` value is a reason string, filled up with the next good samples:
        what ``on_error="skip"`` does in debug mode, where the decoder runs after the reader
        has delivered. Gives the batch the pipeline would have given."""
        epoch, e, p = self._end_cursor()
        for value in decoded:
            self._failed_in_row = self._failed_in_row + 1 if isinstance(value, str) else 0
        kept = [
            _Kept(
                outputs[0]._samples[i],
                outputs[1]._samples[i],
                outputs[0]._source_info[i],
                {key: value},
            )
            for i, value in enumerate(decoded)
            if not isinstance(value, str)
        ]
        skipped = [
            SkippedSample(
                key, self.name, s.source_info, self._path_of(s.source_info), s.reason, s.iteration
            )
            for s in skipped
        ]
        return self._fill(
            ctx, kept, skipped, epoch, e, p, len(outputs[0]), ctx.partial, [(0, key, check)]
        )

    # --- reading --------------------------------------------------------------------------------
    def _start(self) -> tuple[int, int]:
        """(epoch, position) of the next batch's first sample."""
        epoch, pos = self._epoch, self._pos
        if pos == self._length(epoch):
            # The epoch was delivered: go on in the next one, after what was already taken.
            epoch, pos = epoch + 1, self._ahead
            while pos >= self._length(epoch):
                pos -= self._length(epoch)
                epoch += 1
        return epoch, pos

    def _end_cursor(self) -> tuple[int, int, int]:
        """(the last batch's epoch, and the epoch and position after its last sample)."""
        epoch, pos, ahead = self._epoch, self._pos, self._ahead
        if ahead == 0:
            return epoch, epoch, pos
        e, p = epoch + 1, ahead
        while p > self._length(e):
            p -= self._length(e)
            e += 1
        return epoch, e, p

    def _take(
        self, epoch: int, e: int, p: int, n: int, partial: bool, pad: bool
    ) -> tuple[list[int], int, int]:
        """Up to ``n`` data set indices from position ``p`` of epoch ``e`` on, for a batch that
        began in ``epoch``; and the position after them. At the end of ``epoch``: stop with
        ``partial``, or with ``pad_last_batch`` (then fill with copies of its last sample if
        ``pad``), else go on in the next epoch."""
        picks: list[int] = []
        while len(picks) < n:
            if p >= self._length(e):
                if e == epoch and partial:
                    break
                if e == epoch and self._pad:
                    if pad:
                        picks += [self._sample(e, p - 1)] * (n - len(picks))
                    break
                e, p = e + 1, 0
            picks.append(self._sample(e, p))
            p += 1
        return picks, e, p

    def _commit(self, epoch: int, e: int, p: int) -> None:
        """The batch that began in ``epoch`` ended at position ``p`` of epoch ``e``."""
        self._epoch = epoch
        if e == epoch:
            self._pos, self._ahead = p, 0
        else:
            self._pos = self._length(epoch)
            self._ahead = p + sum(self._length(k) for k in range(epoch + 1, e))

    def _load(self, index: int) -> np.ndarray:
        return finish(np.fromfile(self._paths[index], dtype=np.uint8))

    def _read(self, ctx: RunContext, picks: list[int]) -> list[TensorList]:
        first: dict[int, int] = {}
        for k, index in enumerate(picks):
            first.setdefault(index, k)
        unique = list(first)

        def load(j: int) -> np.ndarray:
            index = unique[j]
            try:
                return self._load(index)
            except OSError as exc:
                raise OperatorError(
                    f"cannot read file '{self._paths[index]}': {_os_reason(exc)}",
                    operator=self.name,
                    sample_index=first[index],
                    source_info=self._names[index],
                ) from exc

        data = dict(zip(unique, ctx.map(load, len(unique)), strict=True))
        names = [self._names[i] for i in picks]
        return [
            TensorList([data[i] for i in picks], "", names),
            TensorList([self._labels[i] for i in picks], "", names),
        ]

    def _read_checked(
        self, ctx: RunContext, picks: list[int], checks: list[tuple[int, str, Check]]
    ) -> tuple[list[_Kept], list[SkippedSample]]:
        """Read and check ``picks``: the samples that pass every check, and a record for each
        that does not (a file that cannot be read is skipped too)."""
        unique = list(dict.fromkeys(picks))

        def load(j: int) -> np.ndarray | str:
            try:
                return self._load(unique[j])
            except OSError as exc:
                return f"cannot read file: {_os_reason(exc)}"

        data = dict(zip(unique, ctx.map(load, len(unique)), strict=True))
        readable = [i for i in picks if not isinstance(data[i], str)]
        names = [self._names[i] for i in readable]
        batches = [
            TensorList([data[i] for i in readable], "", names),
            TensorList([self._labels[i] for i in readable], "", names),
        ]
        results = {key: check(ctx, batches[output]) for output, key, check in checks}
        kept: list[_Kept] = []
        skipped: list[SkippedSample] = []
        k = 0
        for index in picks:
            reason, operator = data[index], self.name
            values: dict[str, Any] = {}
            if not isinstance(reason, str):
                for _, key, _check in checks:
                    value = results[key][k]
                    if isinstance(value, str):
                        reason, operator = value, key
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
                        self._paths[index],
                        reason,
                        ctx.iteration,
                    )
                )
            else:
                kept.append(_Kept(data[index], self._labels[index], self._names[index], values))
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
        partial: bool,
        checks: list[tuple[int, str, Check]],
    ) -> list[TensorList]:
        """Take samples from position ``p`` of epoch ``e`` on until ``kept`` holds
        ``batch_size`` good ones (or the epoch ends, with ``partial`` or ``pad_last_batch``),
        then commit the position and make the batch."""
        while len(kept) < batch_size and self._failed_in_row <= self._size:
            picks, e, p = self._take(epoch, e, p, batch_size - len(kept), partial, pad=False)
            if not picks:
                break
            more, bad = self._read_checked(ctx, picks, checks)
            kept += more
            skipped += bad
        if self._failed_in_row > self._size:
            last = skipped[-1]
            self._failed_in_row = 0
            raise OperatorError(
                f"every one of the last {self._size + 1} samples was skipped, more than the "
                f"{self._size} files of the data set, so no good sample is left to read; the "
                f"last one ({last.path}): {last.reason}",
                operator=last.operator,
            )
        if self._pad and len(kept) < batch_size and not partial:
            # pad_last_batch: copies of the last good sample (the epoch's last may be bad).
            last = kept[-1] if kept else self._last_good
            if last is None:
                raise OperatorError(
                    "pad_last_batch has no sample to pad with: every sample so far was skipped",
                    operator=self.name,
                )
            kept += [last] * (batch_size - len(kept))
        self._commit(epoch, e, p)
        if kept:
            self._last_good = kept[-1]
        names = [k.name for k in kept]
        outputs = [
            TensorList([k.data for k in kept], "", names),
            TensorList([k.label for k in kept], "", names),
        ]
        for output, key, _ in checks:
            batch = outputs[output]
            batch._predecoded = {**(batch._predecoded or {}), key: [k.values[key] for k in kept]}
        outputs[0]._skipped = skipped
        return outputs

    def _path_of(self, name: str) -> str:
        try:
            return self._paths[self._names.index(name)]
        except ValueError:
            return ""

    def epoch_size(self) -> int:
        return self._padded_length * self._shards if self._pad else self._size

    def left_in_epoch(self, state: Any = None) -> int:
        epoch, pos, _ = self.get_state() if state is None else state
        return self._length(epoch) - pos

    def get_state(self) -> tuple[int, int, int]:
        return self._epoch, self._pos, self._ahead

    def set_state(self, state: tuple[int, int, int]) -> None:
        self._epoch, self._pos, self._ahead = state

    def reset(self) -> None:
        if self._pos:
            self._epoch += 1
            self._pos = self._ahead = 0


_COMPAT = "accepted for DALI compatibility; no effect in augkit"

register(
    OperatorSchema(
        name="readers.file",
        class_name="readers.File",
        impl=FileReader,
        min_inputs=0,
        max_inputs=0,
        num_outputs=2,
        aliases=("FileReader",),
        fn_aliases=("file_reader",),
        output_kinds=fixed_kinds(ENCODED_BYTES, LABELS),
        doc=(
            "Reads files from disk and returns their raw bytes (uint8, 1-D) and an int32 label "
            "of shape (1,), as DALI's file reader. The files are the immediate subfolders' files "
            "of ``file_root`` (label = index of the subfolder in sorted order), the lines of "
            "``file_list`` (``path label``), or ``files`` (with ``labels``, or labelled by their "
            "index). Each sample's ``source_info`` is its path as listed. Sharding follows "
            "DALI (``shard_id``/``num_shards``; shards rotate each epoch unless "
            "``stick_to_shard``). ``random_shuffle`` reads each epoch in a permutation seeded by "
            "the pipeline seed; ``shuffle_after_epoch`` permutes the whole data set each epoch "
            "with a fixed key shared by all shards (augkit's rules: DALI's shuffle order cannot "
            "be reproduced). ``pad_last_batch`` fills the last batch of an epoch with copies of "
            "its last sample and pads every shard to ceil(N / num_shards) samples."
        ),
        args=[
            Arg("file_root", "folder of the data set (one subfolder per class)", None, _path),
            Arg(
                "file_list",
                "text file of 'path label' lines (paths relative to file_root, or to the list)",
                None,
                _path,
            ),
            Arg("files", "list of file paths (relative to file_root when given)", None, _paths),
            Arg("labels", "labels of 'files' (None: each file's index in 'files')", None, _labels),
            Arg(
                "file_filters",
                "glob patterns of the files to read from file_root's subfolders",
                DEFAULT_FILE_FILTERS,
                _patterns,
            ),
            Arg(
                "dir_filters",
                "glob patterns of the subfolders to read (None: all of them)",
                None,
                _patterns,
            ),
            Arg(
                "case_sensitive_filter",
                "match file_filters and dir_filters case-sensitively",
                False,
                to_bool,
            ),
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
        ],
    )
)
