"""``Augment``: an augkit pipeline as a ``Dataset.map_batches`` stage on Ray actors.

Decisions and traps:

- ``Augment(pipeline_fn, ...)`` returns a *class*, not an instance. Ray Data runs a stateful
  stage on an actor pool only when it is given a class (``map_batches`` refuses an instance
  with ``compute=ActorPoolStrategy``: "can't schedule regular functions with the actor pool
  strategy"), and each actor makes its own instance, with no arguments. So the settings are
  bound into a subclass of ``Augment`` (which Ray's cloudpickle carries by value), and each
  actor builds its pipeline once, in ``__init__``.
- The pipeline takes its inputs from ``fn.external_source(name=...)`` nodes with no
  ``source``, one per name of ``input_names``, fed with ``Pipeline.feed_input`` before each
  run. A Ray batch larger than the pipeline's ``batch_size`` runs in chunks of ``batch_size``
  rows; a dense column is fed as one array (kept as one by the external source), an object
  column (ragged rows) as a list of arrays.
- What comes out: the columns of ``output_names``, and every incoming column that is neither an
  input nor an output (labels, ids, paths pass through). An output that is dense in every
  chunk is one array; otherwise an object column of per-row arrays.
- Draws. Without ``id_column`` a row's random draws depend on its position in its batch and on
  how many batches its actor ran before (augkit's streams are keyed by (seed, shard,
  iteration, sample index)), so they change with Ray's batching and scheduling. With
  ``id_column`` every row's draws are keyed by its id and ``epoch`` (``Pipeline.run_keyed``):
  the same row gets the same augmentation for any actor count, batch size and order. Ids are
  ints below 2**32 as they are; other ints, strings and bytes are reduced by ``run_keyed``'s
  stable hash (NumPy scalars first become the Python values they hold, so that an id hashes
  alike in a column and in a list). Give each epoch its own ``epoch=`` for new draws.
- A pipeline with ``seed=-1`` draws a fresh seed in every actor: give a seed to reproduce.
- CPUs (the rule of ``augkit.ray``): pass ``num_cpus=stage.num_cpus`` (the pipeline's
  ``num_threads``, capped at the largest node's CPUs) to ``map_batches``. Actors hold their CPUs
  for as long as the stage runs: on ``num_cpus=2`` a pool of 2 actors of 1 CPU leaves none for
  the read tasks and hangs; there give actors a fraction (``num_cpus=0.5``) or fewer actors.
- Faults: an actor whose process dies is restarted by Ray and its batch retried (nothing lost,
  nothing twice); an exception in the pipeline (an ``OperatorError``) fails the dataset with the
  operator, sample and message in Ray's error text; it is not retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from augkit.errors import ArgumentError
from augkit.ray.datasource import batch_columns, cpus_for_threads


@dataclass(frozen=True)
class _Settings:
    pipeline_fn: Callable[..., Any]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    id_column: str | None
    epoch: int
    pipeline_kwargs: dict[str, Any] = field(default_factory=dict)


class Augment:
    """A ``map_batches`` stage that runs an augkit pipeline on each batch of a Ray Dataset.

    ``Augment(pipeline_fn, ...)`` returns the stage class to give ``map_batches`` (see the
    module docstring for why a class); Ray makes one instance per actor.

    Args:
        pipeline_fn: a ``@pipeline_def`` function (or any callable returning a ``Pipeline``)
            whose inputs are ``fn.external_source(name=...)`` nodes.
        input_names: the columns fed to those external sources (each column to the source of
            the same name).
        output_names: a column name for each output of the pipeline, in order.
        id_column: a column of per-row ids (ints, strings) that key each row's draws, so
            that they do not depend on how Ray splits the data; ``None``: keyed by position.
        epoch: with ``id_column``, the epoch the draws are keyed by.
        **pipeline_kwargs: more arguments of ``pipeline_fn`` (``batch_size``, ``seed``, ...).

    Attributes:
        num_threads: the pipeline's ``num_threads``.
        num_cpus: what each actor should ask Ray for (``cpus_for_threads(num_threads)``).

    Raises:
        ArgumentError: no input or output names, or names given twice.

    Example:
        >>> from augkit import fn, pipeline_def
        >>> @pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=5)
        ... def flip_some():
        ...     images = fn.external_source(name="image", layout="HWC")
        ...     return fn.flip(images, horizontal=fn.random.coin_flip())
        >>> stage = Augment(
        ...     flip_some, input_names=["image"], output_names=["image"], id_column="id"
        ... )
        >>> import ray  # doctest: +SKIP
        >>> ds = ds.map_batches(  # doctest: +SKIP
        ...     stage,
        ...     batch_format="numpy",
        ...     num_cpus=stage.num_cpus,
        ...     compute=ray.data.ActorPoolStrategy(size=2),
        ... )
    """

    _settings: ClassVar[_Settings | None] = None
    num_threads: ClassVar[int] = 1
    num_cpus: ClassVar[float] = 1.0

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls._settings is None:  # Augment(pipeline_fn, ...): the stage class
            return _stage_class(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self) -> None:
        settings = self._settings
        assert settings is not None  # __new__ made this a stage class
        self.settings = settings
        self.pipeline = settings.pipeline_fn(**settings.pipeline_kwargs)
        self.pipeline.build()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Augment one Ray batch (columns of NumPy arrays); returns its columns."""
        s = self.settings
        missing = [n for n in (*s.input_names, s.id_column) if n is not None and n not in batch]
        if missing:
            raise KeyError(
                f"Augment: the batch has no column {missing[0]!r} (its columns: {list(batch)})"
            )
        rows = len(batch[s.input_names[0]])
        step = self.pipeline.batch_size
        chunks = [
            self._run(batch, start, min(start + step, rows)) for start in range(0, rows, step)
        ]
        out = {
            name: column
            for name, column in batch.items()
            if name not in s.input_names and name not in s.output_names
        }
        for name in s.output_names:
            out[name] = _concatenate([chunk[name] for chunk in chunks], rows)
        return out

    def _run(self, batch: dict[str, np.ndarray], start: int, stop: int) -> dict[str, np.ndarray]:
        s = self.settings
        for name in s.input_names:
            column = batch[name][start:stop]
            self.pipeline.feed_input(name, list(column) if column.dtype == object else column)
        if s.id_column is None:
            outputs = self.pipeline.run()
        else:
            ids = [row_key(i) for i in batch[s.id_column][start:stop]]
            outputs = self.pipeline.run_keyed(ids, iteration=s.epoch)
        return batch_columns(outputs, s.output_names)


def row_key(row_id: Any) -> Any:
    """A row's id as ``Pipeline.run_keyed`` takes it: a NumPy scalar or a one-element array (a
    column of shape ``(rows, 1)``) as the Python value it holds, anything else as it is.

    Example:
        >>> row_key(np.array([7])), row_key(np.str_("cats/1.jpg"))
        (7, 'cats/1.jpg')
    """
    if isinstance(row_id, np.ndarray) and row_id.size == 1:
        row_id = row_id.reshape(()).item()
    return row_id.item() if isinstance(row_id, np.generic) else row_id


def _stage_class(
    pipeline_fn: Callable[..., Any],
    *,
    input_names: Sequence[str],
    output_names: Sequence[str],
    id_column: str | None = None,
    epoch: int = 0,
    **pipeline_kwargs: Any,
) -> type[Augment]:
    for what, names in (("input_names", input_names), ("output_names", output_names)):
        if isinstance(names, str) or not names or len(set(names)) != len(names):
            raise ArgumentError(
                f"Augment: {what} must be a list of distinct column names, got {names!r}"
            )
    inputs, outputs = tuple(input_names), tuple(output_names)
    settings = _Settings(pipeline_fn, inputs, outputs, id_column, epoch, dict(pipeline_kwargs))
    probe = pipeline_fn(**pipeline_kwargs)
    num_threads = probe.num_threads
    probe.close()
    name = getattr(pipeline_fn, "__name__", "pipeline")
    return type(
        "Augment",
        (Augment,),
        {
            "_settings": settings,
            "num_threads": num_threads,
            "num_cpus": _num_cpus(num_threads),
            "__module__": __name__,
            # not importable under this name: cloudpickle sends the class by value
            "__qualname__": f"Augment[{name}]",
            "__doc__": f"Augment's stage for {name} (made by Augment(...)).",
        },
    )


def _num_cpus(num_threads: int) -> float:
    try:
        import ray
    except ImportError:
        return float(num_threads)
    return cpus_for_threads(num_threads) if ray.is_initialized() else float(num_threads)


def _concatenate(parts: list[np.ndarray], rows: int) -> np.ndarray:
    """The chunks of one output column as one column (see the module docstring)."""
    if not parts:
        return np.empty(0, dtype=object)
    dense = [p for p in parts if p.dtype != object]
    if len(dense) == len(parts) and len({p.shape[1:] for p in dense}) <= 1:
        return np.concatenate(parts) if len(parts) > 1 else parts[0]
    column = np.empty(rows, dtype=object)
    i = 0
    for part in parts:
        for row in part:
            column[i] = row
            i += 1
    return column
