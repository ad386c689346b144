"""``read_pipeline``: a sharded augkit pipeline as a Ray Dataset (a Ray Data datasource).

Decisions and traps:

- One read task per shard: task ``i`` builds ``pipeline_fn(shard_id=i, num_shards=n, ...)``
  and yields its batches as blocks, whatever ``parallelism`` Ray asks for (a shard is the unit
  of augkit's determinism: its reader order and its random streams).
- Every sample once per epoch: the read task walks ``Pipeline.epoch("partial")``, so the last
  batch of a shard holds only what is left of it. A reader with ``pad_last_batch=True`` would
  repeat the shard's last sample: the read task refuses it, naming the reader. Epoch ``e`` of
  shard ``k`` reads shard ``(k + e) % n``'s range unless the reader sticks to its shard
  (``augkit.operators.readers.cursor``), so each epoch of the whole dataset still has every
  sample once; the next epoch's order and draws are new (``epoch_rng(seed, epoch)``, the run
  count in the streams).
- Columns: an output whose batch is dense becomes one ``(rows, ...)`` NumPy column; a ragged one
  (boxes, images of different sizes) an object column of per-row arrays. Ray turns the first
  into a fixed-shape tensor column and the second into a variable-shaped one, and joins blocks
  of both kinds into a variable-shaped column, so a dataset whose batches happen to be dense
  in one shard and ragged in another still reads.
- Determinism: a shard's rows depend only on the pipeline's seed, the shard and ``num_shards``,
  never on which worker ran it or when, so a run gives the same multiset of rows as the next
  (the order of blocks is Ray's). ``num_shards=1`` gives exactly what the pipeline gives in
  this process.
- Faults: a read task whose process dies is retried by Ray from the start of its shard, and the
  blocks of the failed try are replaced, not added (nothing lost, nothing twice; tested with a
  ``python_function`` that kills its process once). Never set ``DataContext.max_errored_blocks``:
  it drops the blocks of failed tasks silently. An exception in the pipeline (an
  ``OperatorError``) is not retried: it fails the dataset, and its text is in Ray's error.
- CPUs (the rule of ``augkit.ray``): a read task asks Ray for ``num_cpus`` equal to the
  pipeline's ``num_threads``, capped at the CPUs of Ray's largest node, so that Ray runs no
  more shards at once than the cores can take with each one's threads. ``ray_remote_args``
  overrides it (e.g. ``{"num_cpus": 0.5}`` to leave room for an actor pool on a small machine).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from augkit.errors import ArgumentError
from augkit.ray.local import require_ray, require_started_ray
from augkit.tensors import TensorList


def read_pipeline(
    pipeline_fn: Callable[..., Any],
    *,
    num_shards: int,
    output_names: Sequence[str],
    epochs: int = 1,
    ray_remote_args: dict[str, Any] | None = None,
    **pipeline_kwargs: Any,
) -> Any:
    """Read ``epochs`` epochs of a sharded pipeline as a ``ray.data.Dataset``.

    Args:
        pipeline_fn: a ``@pipeline_def`` function (or any callable returning a ``Pipeline``)
            that takes ``shard_id`` and ``num_shards`` and passes them to its reader.
        num_shards: how many shards (read tasks) the data set is split into.
        output_names: a column name for each output of the pipeline, in order.
        epochs: how many epochs each shard reads (each one in a new order, with new draws).
        ray_remote_args: Ray's resources for each read task (default: ``num_cpus`` from the
            pipeline's ``num_threads``; see the module docstring).
        **pipeline_kwargs: more arguments of ``pipeline_fn`` (``batch_size``, ``seed``, ...).

    Returns:
        A lazy ``ray.data.Dataset`` with one row per sample and one column per output.

    Raises:
        ArgumentError: ``num_shards`` or ``epochs`` below 1, or no ``output_names``.
        RuntimeError: Ray is not started (``augkit.ray.init_local()``, or ``ray.init`` with
            the cluster's address).

    Example:
        >>> from augkit import fn, pipeline_def, types
        >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
        ... def photos(shard_id=0, num_shards=1):
        ...     jpegs, labels = fn.readers.file(
        ...         file_root="data/images", shard_id=shard_id, num_shards=num_shards
        ...     )
        ...     images = fn.resize(fn.decoders.image(jpegs), size=(64, 64))
        ...     return fn.flip(images, horizontal=fn.random.coin_flip()), labels
        >>> ds = read_pipeline(
        ...     photos, num_shards=2, output_names=["image", "label"]
        ... )  # doctest: +SKIP
        >>> ds.count()  # doctest: +SKIP
        15
    """
    if not isinstance(num_shards, int) or num_shards < 1:
        raise ArgumentError(f"read_pipeline: num_shards must be an int >= 1, got {num_shards!r}")
    if not isinstance(epochs, int) or epochs < 1:
        raise ArgumentError(f"read_pipeline: epochs must be an int >= 1, got {epochs!r}")
    names = list(output_names)
    if not names or len(set(names)) != len(names):
        raise ArgumentError(f"read_pipeline: output_names must be distinct names, got {names}")
    ray = require_started_ray("read_pipeline")
    remote_args = dict(ray_remote_args or {})
    if "num_cpus" not in remote_args:
        probe = pipeline_fn(shard_id=0, num_shards=num_shards, **pipeline_kwargs)
        remote_args["num_cpus"] = cpus_for_threads(probe.num_threads)
        probe.close()
    source = _datasource_class()(pipeline_fn, num_shards, names, epochs, pipeline_kwargs)
    return ray.data.read_datasource(source, override_num_blocks=num_shards, **remote_args)


def cpus_for_threads(num_threads: int) -> float:
    """The ``num_cpus`` a Ray task or actor running a pipeline of ``num_threads`` threads asks
    for: ``num_threads``, but no more than the CPUs of Ray's largest node (a task asking for
    more could never be scheduled).

    Example (with Ray started on a 2-core machine)::

        cpus_for_threads(2)  # 2.0; on a 1-CPU node, 1.0
    """
    ray = require_ray()
    largest = max(
        (node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node.get("Alive")),
        default=0.0,
    )
    return float(min(num_threads, largest)) if largest else float(num_threads)


def batch_columns(outputs: Sequence[TensorList], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The outputs of one ``run()`` as NumPy columns: a dense batch as one array, a ragged one
    as an object array of per-row arrays.

    Raises:
        ArgumentError: not one name per output.

    Example:
        >>> from augkit import TensorList
        >>> ragged = TensorList([np.zeros((1, 4)), np.zeros((2, 4))])
        >>> columns = batch_columns([ragged], ["boxes"])
        >>> columns["boxes"].dtype, columns["boxes"][1].shape
        (dtype('O'), (2, 4))
    """
    if len(outputs) != len(names):
        raise ArgumentError(
            f"the pipeline has {len(outputs)} outputs but {len(names)} output_names were "
            f"given ({list(names)}): give one name per output"
        )
    return {name: _column(batch.as_cpu()) for name, batch in zip(names, outputs, strict=True)}


def _column(batch: TensorList) -> np.ndarray:
    if len(batch) and batch.is_dense_tensor():
        return batch.as_array()
    column = np.empty(len(batch), dtype=object)
    for i in range(len(batch)):
        column[i] = batch.at(i)
    return column


def read_shard(
    pipeline_fn: Callable[..., Any],
    shard_id: int,
    num_shards: int,
    names: Sequence[str],
    epochs: int,
    pipeline_kwargs: dict[str, Any],
) -> Iterator[dict[str, np.ndarray]]:
    """The batches of ``epochs`` epochs of one shard, as columns (what a read task yields).

    Raises:
        ArgumentError: a reader pads its shard (``pad_last_batch=True``).
    """
    pipe = pipeline_fn(shard_id=shard_id, num_shards=num_shards, **pipeline_kwargs)
    try:
        pipe.build()
        for name, meta in pipe.reader_meta().items():
            if meta["pad_last_batch"]:
                raise ArgumentError(
                    f"read_pipeline: reader {name} has pad_last_batch=True, which repeats the "
                    f"last sample of each shard; build the pipeline with pad_last_batch=False"
                )
        for _ in range(epochs):
            for outputs in pipe.epoch(last_batch_policy="partial"):
                yield batch_columns(outputs, names)
    finally:
        pipe.close()


@functools.cache
def _datasource_class() -> type:
    """``PipelineDatasource``, made once Ray is imported (so ``augkit.ray`` imports without it)."""
    require_ray()
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class PipelineDatasource(Datasource):
        """The shards of an augkit pipeline, one read task each (``read_pipeline``)."""

        def __init__(
            self,
            pipeline_fn: Callable[..., Any],
            num_shards: int,
            names: list[str],
            epochs: int,
            pipeline_kwargs: dict[str, Any],
        ) -> None:
            super().__init__()
            self._fn = pipeline_fn
            self._num_shards = num_shards
            self._names = names
            self._epochs = epochs
            self._kwargs = pipeline_kwargs

        def get_name(self) -> str:
            return f"augkit[{getattr(self._fn, '__name__', 'pipeline')}]"

        def estimate_inmemory_data_size(self) -> int | None:
            return None  # unknown until the pipeline runs (decoded sizes)

        def get_read_tasks(
            self,
            parallelism: int,
            per_task_row_limit: int | None = None,
            data_context: Any = None,
        ) -> list[Any]:
            args = (self._fn, self._num_shards, self._names, self._epochs, self._kwargs)
            return [
                ReadTask(
                    functools.partial(_read_blocks, shard, *args),
                    BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None),
                    per_task_row_limit=per_task_row_limit,
                )
                for shard in range(self._num_shards)
            ]

    def _read_blocks(
        shard: int,
        pipeline_fn: Callable[..., Any],
        num_shards: int,
        names: list[str],
        epochs: int,
        pipeline_kwargs: dict[str, Any],
    ) -> Iterator[Any]:
        for columns in read_shard(pipeline_fn, shard, num_shards, names, epochs, pipeline_kwargs):
            yield BlockAccessor.batch_to_block(columns)

    return PipelineDatasource
