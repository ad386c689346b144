"""``PipelineDataset``: a pipeline as a ``torch.utils.data.IterableDataset``, for plain PyTorch
code that wants a ``DataLoader``. augkit's own: DALI's users take its iterators
(``DALIGenericIterator``, ``DALIClassificationIterator``), which ``augkit.plugin.pytorch`` has
too; this class follows their epoch rules.

``iter(dataset)`` walks one epoch of the pipeline's reader and yields one item per *batch*: a
tuple of torch tensors in the order of ``output_map`` (or a ``{name: tensor}`` dict with
``as_dict=True``). The pipeline batches already, so give the DataLoader ``batch_size=None``
(it then passes each batch through untouched)::

    loader = DataLoader(PipelineDataset(pipe), batch_size=None)
    for epoch in range(3):
        for images, labels in loader:  # one epoch, then StopIteration
            ...

Decisions and traps:

- Epochs follow the iterators' last-batch policies (strings or ``LastBatchPolicy`` members),
  with DALI's accounting for a reader with shards (its iterator's ``reader_name`` rules), so
  that every shard, i.e. every DDP rank, gets the same number of batches (a rank with one batch
  more would wait forever in a collective). With ``N`` samples, ``n`` shards and batch size
  ``b``, ``len(dataset)`` is ``ceil(ceil(N / n) / b)`` for FILL and PARTIAL and
  ``(N // n) // b`` for DROP, on every shard and in every epoch:

  - ``"partial"`` (the default here, as a DataLoader's ``drop_last=False``): every sample of
    the shard exactly once; the last batch is smaller, copies made by the reader's
    ``pad_last_batch=True`` are not delivered, and a shard with fewer samples than the largest
    one can end with an empty batch (as DALI's iterator does, e.g. ``b = 1``). Unlike DALI's
    iterator without ``pad_last_batch``, where the samples of the next epoch that the short
    last batch read and trimmed are lost (DALI: "the next epoch will end sooner"), the reader
    is rewound, so every epoch holds each file of its shard once, padded or not;
  - ``"drop"``: only batches of ``b`` positions, ``N // n`` samples per shard at most (the
    larger shards' extra samples are not seen in that epoch);
  - ``"fill"``: full batches, the last completed as the reader completes it (the next epoch's
    first samples, or copies of the last sample with ``pad_last_batch=True``). Unlike DALI's
    iterator, the next epoch starts again from its first sample (the borrowed samples are
    read again: augkit's ``reset()`` rule), so no epoch is shorter than ``len()``.

  The epoch is walked by ``augkit.plugin.base_iterator.walk_epoch``, on the pipeline's epoch
  interface (``Pipeline.position``, ``run_partial``, ``reset``): the iterators walk it the same
  way wherever the reader shuffles or skips files. Without ``stick_to_shard`` the shards rotate
  from epoch to epoch (DALI's rule), each epoch reading its shard's samples. With
  ``on_error="skip"`` a skipped file leaves a hole in its batch (PARTIAL, DROP: the batch is
  shorter) or is replaced by a later one (FILL): every epoch has ``len()`` batches whatever is
  skipped, so the DDP ranks step together. A pipeline without a reader (an external source)
  has no ``len()`` (``TypeError``, which a DataLoader expects) and its epoch ends at the
  source's ``StopIteration``.
- ``iter()`` always starts a whole epoch: one left early (``break``), or ``run()`` called in
  between, moves the reader on to the next epoch's first sample (``pipe.reset()``), as the end
  of an epoch does.
- **DataLoader workers are refused**: ``num_workers`` must be 0. A pipeline has threads, a
  prefetching thread and worker processes of its own (``num_threads``, ``py_num_workers``), so
  DataLoader workers add nothing but copies through pipes; and it cannot be pickled into a
  spawned worker, while a forked copy would share its reader's position with its siblings and
  read every sample ``num_workers`` times. ``iter()`` inside a DataLoader worker raises a
  ``RuntimeError`` saying so, and pickling the dataset raises a ``TypeError``. To use more
  cores, raise the pipeline's ``num_threads`` / ``py_num_workers``.
- Tensors are made by ``augkit.plugin.torch_tensors.to_torch``: a batch that an operator made as one
  array (random values, casts: see ``to_torch``) is shared with the pipeline and must not be
  written into (``.clone()`` first); a batch of separate samples (decoded images) is stacked
  into a new tensor. The last batch of a PARTIAL epoch trimmed of padding is a view. A ragged
  output (samples of different shapes) raises ``RaggedBatchError`` naming the output: resize
  or crop to one shape, or use ``DALIRaggedIterator``.

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=0, seed=1)
    ... def pipe():
    ...     jpegs, labels = fn.readers.file(file_root="data/images", name="Reader")
    ...     return fn.random.uniform(range=(0, 1), shape=(2,)), labels
    >>> dataset = PipelineDataset(pipe(), reader_name="Reader")
    >>> len(dataset), [tuple(x.shape) for x, y in dataset]
    (4, [(4, 2), (4, 2), (4, 2), (3, 2)])
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.utils.data

from augkit.errors import ArgumentError, RaggedBatchError
from augkit.pipeline import Pipeline
from augkit.plugin.base_iterator import LastBatchPolicy, walk_epoch
from augkit.plugin.torch_tensors import to_torch

__all__ = ["PipelineDataset"]

_POLICIES = ("fill", "drop", "partial")


def _policy_name(value: Any) -> str:
    """``"fill"``, ``"drop"`` or ``"partial"`` from a string or a ``LastBatchPolicy`` member."""
    name = getattr(value, "name", value)  # an enum member (LastBatchPolicy.PARTIAL) by its name
    if isinstance(name, str) and name.lower() in _POLICIES:
        return name.lower()
    raise ArgumentError(
        f"PipelineDataset: last_batch_policy must be one of 'fill', 'drop', 'partial' (or a "
        f"LastBatchPolicy), got {value!r}"
    )


def _epoch_batches(meta: dict[str, Any], batch_size: int, policy: str) -> int:
    """DALI's ``len()`` of an iterator with ``reader_name``: the same on every shard, from the
    largest shard (``ceil(N / num_shards)`` samples) for FILL and PARTIAL, from
    ``N // num_shards`` samples for DROP (``base_iterator.py``, ``_size``)."""
    size, shards = meta["epoch_size"], meta["number_of_shards"]
    if policy == "drop":
        return (size // shards) // batch_size
    return math.ceil(math.ceil(size / shards) / batch_size)


class PipelineDataset(torch.utils.data.IterableDataset):
    """One epoch of ``pipeline`` per ``iter()``, one batch per item (see the module docstring).

    Args:
        pipeline: an augkit ``Pipeline`` (built here if it is not yet).
        output_map: a name for each of the pipeline's outputs, in order (DALI's
            ``output_map``); the names of the dict items with ``as_dict=True``.
        reader_name: the reader whose epochs count (default: the pipeline's first reader).
        last_batch_policy: ``"partial"`` (default), ``"drop"``, ``"fill"``, or a
            ``LastBatchPolicy`` member.
        as_dict: yield ``{name: tensor}`` instead of a tuple.

    Raises:
        ArgumentError: a bad argument (named in the message); an unknown ``reader_name`` raises
            ``GraphError``.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        output_map: Sequence[str] = ("data", "label"),
        reader_name: str | None = None,
        last_batch_policy: Any = "partial",
        as_dict: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(pipeline, Pipeline):
            raise ArgumentError(
                f"PipelineDataset: pipeline must be an augkit Pipeline, got "
                f"{type(pipeline).__name__}"
            )
        if isinstance(output_map, str) or not all(isinstance(n, str) for n in output_map):
            raise ArgumentError(
                f"PipelineDataset: output_map must be a list of names (strings), got {output_map!r}"
            )
        if len(set(output_map)) != len(output_map) or not output_map:
            raise ArgumentError(
                f"PipelineDataset: output_map must name each output once, got {list(output_map)}"
            )
        if reader_name is not None and not isinstance(reader_name, str):
            raise ArgumentError(
                f"PipelineDataset: reader_name must be a reader's name (a string), got "
                f"{reader_name!r}"
            )
        self.pipeline = pipeline
        self.output_map = tuple(output_map)
        self.reader_name = reader_name
        self.last_batch_policy = _policy_name(last_batch_policy)
        self.as_dict = bool(as_dict)
        self._current: object | None = None  # the epoch in progress (see _batches)
        pipeline.build()
        pipeline.position(reader_name)  # an unknown reader name raises GraphError now

    def _sharding(self) -> dict[str, Any] | None:
        """The lead reader's ``reader_meta`` (DALI's keys), or None for a pipeline without a
        reader (an external source: then ``pipe.epoch()``'s own rules apply)."""
        names = self.pipeline.reader_names()
        if not names:
            return None
        return self.pipeline.reader_meta(self.reader_name or names[0])

    def __len__(self) -> int:
        """Batches per epoch: DALI's iterator rule, the same on every shard (see the module
        docstring)."""
        meta = self._sharding()
        if meta is None:
            raise TypeError(
                "PipelineDataset has no len(): its pipeline has no reader (an external "
                "source's epoch ends at its StopIteration)"
            )
        return _epoch_batches(meta, self.pipeline.batch_size, self.last_batch_policy)

    def __iter__(self) -> Iterator[Any]:
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "PipelineDataset cannot run in DataLoader worker processes: use "
                "DataLoader(dataset, batch_size=None, num_workers=0). The pipeline has "
                "threads and worker processes of its own (raise its num_threads or "
                "py_num_workers to use more cores); a copy per DataLoader worker would "
                "read every sample once per worker."
            )
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        pipe = self.pipeline
        if self._sharding() is None:
            epoch = pipe.epoch(self.last_batch_policy, self.reader_name)
            try:
                for outputs in epoch:
                    yield self._convert(outputs)
            finally:
                # resets the sources: the next iter() is the next epoch. (Pipeline.epoch returns
                # a generator, annotated as the Iterator it is used as.)
                epoch.close()  # type: ignore[attr-defined]
            return
        token = self._current = object()
        try:
            position = pipe.position(self.reader_name)
            assert position is not None  # the pipeline has a reader (_sharding)
            if position.delivered:
                pipe.reset()  # run() was called, or an epoch was left: start a whole one
            policy = LastBatchPolicy[self.last_batch_policy.upper()]
            for outputs, kept in walk_epoch(pipe, self.reader_name, policy, len(self)):
                batch = self._convert(outputs)
                yield batch if kept == len(outputs[0]) else self._take(batch, kept)
        finally:
            if self._current is token:  # not an old, abandoned epoch closed after a new one began
                pipe.reset()  # the next iter() starts the next epoch from its first sample

    def _take(self, batch: Any, count: int) -> Any:
        if self.as_dict:
            return {name: t[:count] for name, t in batch.items()}
        return tuple(t[:count] for t in batch)

    def _convert(self, outputs: Sequence[Any]) -> Any:
        if len(outputs) != len(self.output_map):
            raise ArgumentError(
                f"PipelineDataset: output_map names {len(self.output_map)} outputs "
                f"{list(self.output_map)}, but the pipeline has {len(outputs)}"
            )
        tensors = []
        for name, batch in zip(self.output_map, outputs, strict=True):
            try:
                tensors.append(to_torch(batch))
            except RaggedBatchError as exc:
                raise RaggedBatchError(
                    f"PipelineDataset: output {name!r} is ragged (its samples differ in shape: "
                    f"{batch.shape()[:4]}...); resize or crop it to one shape, or use "
                    f"DALIRaggedIterator"
                ) from exc
        if self.as_dict:
            return dict(zip(self.output_map, tensors, strict=True))
        return tuple(tensors)

    def __getstate__(self) -> Any:
        raise TypeError(
            "PipelineDataset cannot be pickled (its pipeline holds threads and worker "
            "processes): use DataLoader(dataset, batch_size=None, num_workers=0)"
        )

    def __repr__(self) -> str:
        return (
            f"PipelineDataset(output_map={list(self.output_map)}, "
            f"reader_name={self.reader_name!r}, last_batch_policy={self.last_batch_policy!r})"
        )
