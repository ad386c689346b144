"""``Pipeline`` and ``pipeline_def``: DALI's pipeline API over augkit's graph and executor.

Three ways to define a pipeline, as in DALI:

    class MyPipe(Pipeline):                       # 1. subclass, operators made in __init__
        def __init__(self):
            super().__init__(batch_size=4, num_threads=2, device_id=0, seed=99)
            self.read = ops.readers.File(file_root="data/images")
            self.decode = ops.decoders.Image(output_type=types.RGB)
        def define_graph(self):
            jpegs, labels = self.read()
            return self.decode(jpegs), labels

    pipe = Pipeline(batch_size=4, num_threads=2, device_id=0)   # 2. context manager
    with pipe:
        jpegs, labels = fn.readers.file(file_root="data/images")
        pipe.set_outputs(fn.decoders.image(jpegs), labels)

    @pipeline_def(batch_size=4, num_threads=2, device_id=0)     # 3. decorator
    def my_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root)
        return fn.decoders.image(jpegs), labels

Epochs. ``run()`` never stops: like DALI's readers, a reader that reaches the end of its data
set goes on into the next epoch inside the same batch (or repeats its last sample to fill the
batch when it was given ``pad_last_batch=True``). ``for outputs in pipe:`` (or
``pipe.epoch(last_batch_policy=...)``) walks one epoch of the first reader and then raises
``StopIteration``:

- ``"fill"`` (default): the last batch is full, completed as ``run()`` completes it;
- ``"partial"``: the last batch holds only the samples left in the epoch (it is smaller);
- ``"drop"``: the last batch is dropped when it would not be full.

After the loop the readers start the next epoch from its first sample (``reset()``), so every
``for`` loop sees one whole epoch, however the previous one ended.

The epoch contract, which every client (``Pipeline.epoch``, the PyTorch iterators,
``PipelineDataset``, ``augkit.ray``) keeps through this public interface and nothing else:

- ``position(reader_name)``: where the reader stands in its shard's epoch after the last batch
  delivered (an ``EpochPosition``: ``epoch``, ``delivered``, ``size``, ``samples``, ``left``);
- ``run_partial(reader_name)``: the next batch, stopped at the end of that epoch (it holds only
  the samples left in it); ``run()``: the next full batch, which goes on into the next epoch;
- ``reset()``: the next epoch, from its first sample.

Each epoch of a shard is a whole permutation of the shard's samples (its own order with
``random_shuffle``/``shuffle_after_epoch``), so an epoch walked with ``run_partial`` until
``position().left == 0`` and then ``reset()`` delivers each of its samples exactly once (plus
``pad_last_batch``'s copies of the last one); a full batch that runs past the end borrows the
next epoch's first samples, which ``reset()`` reads again. The shards of an epoch partition the
data set (ranges of one order that every shard deals alike), rotating from epoch to epoch
unless the reader sticks to its shard (``readers/cursor.py``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, ClassVar

import numpy as np

from augkit import backend, conditionals

# DALI has it here: nvidia.dali.pipeline.do_not_convert
from augkit.conditionals import do_not_convert as do_not_convert
from augkit.core import Engine, Profile, profile_of
from augkit.debug import DebugRunner, end_at_user_frame
from augkit.errors import (
    ArgumentError,
    AugkitError,
    GraphError,
    SkippedSample,
    report_skips,
    suggest,
)
from augkit.executor import collect
from augkit.graph import DataNode, OperatorNode, tracing, upstream
from augkit.operators.base import HOLES
from augkit.operators.readers.cursor import EpochPosition
from augkit.operators.readers.pairing import check_pairing
from augkit.random import resolve_seed
from augkit.runners import GraphRunner, PrefetchRunner, Runner
from augkit.scopes import ScopeSamples, Undefined, cases_of
from augkit.tensors import TensorList

_LAST_BATCH_POLICIES = ("fill", "partial", "drop")


class Pipeline:
    """A graph of operators that produces batches (DALI's ``nvidia.dali.Pipeline``).

    Args:
        batch_size: samples per batch.
        num_threads: threads for the per-sample work of operators (-1: one per CPU core).
        device_id: the CUDA device for GPU operators; a pipeline of CPU operators runs
            without any GPU whatever this is. ``None`` means no GPU.
        seed: seed of every random choice in the pipeline (-1: a fresh one each time).
        exec_pipelined, prefetch_queue_depth, exec_async: with both flags True (DALI's
            defaults) up to ``prefetch_queue_depth`` batches are computed ahead in the
            background (``augkit.prefetch``); the tutorial's ``exec_async=False,
            exec_pipelined=False`` computes each batch when ``run()`` asks. Results do not
            depend on them.
        py_num_workers, py_start_method: worker processes for Python operators (more than 1:
            they run there; see ``augkit.operators.python_function``) and how they start
            ("fork": fork unless a CUDA context exists, then forkserver).
        bytes_per_sample, set_affinity, max_streams, default_cuda_stream_priority,
        enable_memory_stats, enable_checkpointing, py_callback_pickler, output_dtype,
        output_ndim, exec_dynamic: DALI's other arguments, accepted for compatibility.
        enable_conditionals: ``if``/``elif``/``else``, ``and``, ``or``, ``not`` on per-sample
            DataNodes in the definition (``augkit.conditionals``, DALI's semantics): each
            sample takes its own branch, and a branch's operators compute only its samples.
        debug: run the definition eagerly on every ``run()`` (``augkit.debug``): nodes hold
            their batches, any Python can run between operators, and the numbers are the
            normal pipeline's.

    Attributes:
        skipped: every sample a decoder with ``on_error="skip"`` left out so far
            (``augkit.errors.SkippedSample``: file, reason, iteration), in order; each one
            was also a ``SkippedSampleWarning`` at the ``run()`` that delivered its batch.

    Example:
        >>> pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    """

    _current: ClassVar[list[Pipeline]] = []

    def __init__(
        self,
        batch_size: int | None = -1,
        num_threads: int | None = -1,
        device_id: int | None = -1,
        seed: int | None = -1,
        exec_pipelined: bool = True,
        prefetch_queue_depth: int | dict[str, int] = 2,
        exec_async: bool = True,
        bytes_per_sample: int = 0,
        set_affinity: bool = False,
        max_streams: int = -1,
        default_cuda_stream_priority: int = 0,
        *,
        enable_memory_stats: bool = False,
        enable_checkpointing: bool = False,
        py_num_workers: int = 1,
        py_start_method: str = "fork",
        py_callback_pickler: Any = None,
        output_dtype: Any = None,
        output_ndim: Any = None,
        exec_dynamic: bool = False,
        experimental_exec_dynamic: bool = False,
        enable_conditionals: bool = False,
        debug: bool = False,
    ) -> None:
        self._batch_size = _positive_or_unset("batch_size", batch_size)
        threads = _positive_or_unset("num_threads", num_threads)
        self._num_threads = threads if threads != -1 else (os.cpu_count() or 1)
        if device_id is not None and (not isinstance(device_id, int) or device_id < -1):
            raise ArgumentError(
                f"Pipeline: device_id must be an integer >= 0, -1 or None, got {device_id!r}"
            )
        self._device_id = None if device_id in (None, -1) else device_id
        try:
            self._seed = resolve_seed(seed)
        except ValueError as exc:
            raise ArgumentError(f"Pipeline: {exc}") from None
        if isinstance(prefetch_queue_depth, int) and prefetch_queue_depth < 1:
            raise ArgumentError(
                f"Pipeline: prefetch_queue_depth must be >= 1, got {prefetch_queue_depth}"
            )
        _positive_or_unset("py_num_workers", py_num_workers)
        self._exec_settings = {
            "exec_pipelined": exec_pipelined,
            "prefetch_queue_depth": prefetch_queue_depth,
            "exec_async": exec_async,
            "bytes_per_sample": bytes_per_sample,
            "set_affinity": set_affinity,
            "max_streams": max_streams,
            "default_cuda_stream_priority": default_cuda_stream_priority,
            "enable_memory_stats": enable_memory_stats,
            "enable_checkpointing": enable_checkpointing,
            "py_num_workers": py_num_workers,
            "py_start_method": py_start_method,
            "py_callback_pickler": py_callback_pickler,
            "output_dtype": output_dtype,
            "output_ndim": output_ndim,
            "exec_dynamic": exec_dynamic or experimental_exec_dynamic,
        }
        self._debug = bool(debug)
        self._conditionals = bool(enable_conditionals)
        self._definition: Callable[[], Any] | None = None
        self._trace: list[OperatorNode] = []
        self._outputs: list[DataNode] | None = None
        self._engine: Engine | None = None
        self._runner: Runner | None = None  # GraphRunner, PrefetchRunner or DebugRunner (build())
        self._scheduled: list[tuple[TensorList, ...]] = []
        self.skipped: list[SkippedSample] = []
        self._delivered = 0  # batches run() gave (the allocator is trimmed now and then)

    # --- settings -------------------------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def device_id(self) -> int | None:
        return self._device_id

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def exec_async(self) -> bool:
        return self._exec_settings["exec_async"]

    @property
    def exec_pipelined(self) -> bool:
        return self._exec_settings["exec_pipelined"]

    @property
    def prefetch_queue_depth(self) -> int | dict[str, int]:
        return self._exec_settings["prefetch_queue_depth"]

    @property
    def debug(self) -> bool:
        """Whether the pipeline runs in debug mode (its definition runs each iteration)."""
        return self._debug

    @property
    def py_num_workers(self) -> int:
        return self._exec_settings["py_num_workers"]

    @staticmethod
    def current() -> Pipeline | None:
        """The pipeline whose ``with`` block is being executed, if any."""
        return Pipeline._current[-1] if Pipeline._current else None

    # --- definition ----------------------------------------------------------------------------
    def define_graph(self) -> Any:
        """Override to return the pipeline's outputs (DataNodes) from operators."""
        raise GraphError(
            f"{type(self).__name__} has no outputs: override define_graph(), or call "
            f"set_outputs() inside 'with pipe:'"
        )

    def set_outputs(self, *outputs: DataNode) -> None:
        """Make ``outputs`` what ``run()`` returns (use inside ``with pipe:``)."""
        if self._runner is not None:
            raise GraphError("set_outputs() after build(): the graph is already fixed")
        self._outputs = _check_outputs(outputs, "set_outputs()")

    def __enter__(self) -> Pipeline:
        self._tracing = tracing(self._trace)
        self._tracing.__enter__()
        Pipeline._current.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        Pipeline._current.remove(self)
        self._tracing.__exit__(exc_type, exc, traceback)

    # --- running -------------------------------------------------------------------------------
    def build(self) -> None:
        """Check the graph and prepare every operator (optional: ``run()`` builds if needed).
        This is where the pipeline picks how it runs (``augkit.runners``) and where the
        operators import what their kernels need, on the calling thread.

        Raises:
            GraphError: the pipeline has no outputs, an output is not an operator's output, or
                an input is of a kind its operator does not take.
            ArgumentError: an operator's arguments cannot work (a missing ``file_root``...).
            DeviceError: a GPU operator where no GPU can be used.
        """
        if self._runner is not None:
            return
        if self._batch_size == -1:
            raise ArgumentError(
                "Pipeline: batch_size must be set before build(), e.g. Pipeline(batch_size=8, ...)"
            )
        settings = self._exec_settings
        start_method = settings["py_start_method"]
        engine = Engine(
            self._num_threads,
            self._device_id,
            settings["py_num_workers"],
            # DALI's default "fork" means: fork where it is safe (no CUDA context), else a
            # clean fallback (augkit.workers); an explicit "spawn"/"forkserver" is kept.
            None if start_method == "fork" else start_method,
        )
        runner: Runner
        if self._debug:
            if self._definition is None and self._outputs is not None:
                raise GraphError(
                    "debug mode runs the definition again on every run(), so it needs one: "
                    "use @pipeline_def(debug=True) or a define_graph() method instead of "
                    "'with pipe: pipe.set_outputs(...)'"
                )
            runner = DebugRunner(engine, self._call_definition, self._seed, self._batch_size)
        else:
            if self._outputs is None:
                with tracing(self._trace):
                    outputs = self._call_definition()
                self._outputs = outputs
            nodes = collect(self._outputs, self._trace)
            asynchronous = (
                settings["exec_async"]
                and settings["exec_pipelined"]
                and not any(n.schema.role == "source" for n in nodes)
            )
            graph = (engine, self._outputs, nodes, self._trace, self._seed, self._batch_size)
            if asynchronous:
                runner = PrefetchRunner(*graph, depth=self._prefetch_depth())
            else:
                runner = GraphRunner(*graph)
        self._runner = runner
        self._engine = engine
        if runner.readers_known:
            # Two readers of aligned files (images and masks) whose orders could differ.
            check_pairing(runner.readers())

    def _built(self) -> Runner:
        """The runner, after ``build()`` (which picks it the first time)."""
        self.build()
        assert self._runner is not None  # build() made it, or raised
        return self._runner

    def _adopt(self, definition: Callable[[], Any], where: str) -> None:
        """Make ``definition`` (a ``pipeline_def`` function) this pipeline's. A debug pipeline
        calls it on every ``run()``; a normal one traces it once, now, as DALI's does (so its
        errors come from the factory call)."""
        self._definition = definition
        if not self._debug:
            with self, conditionals.enabling(self._conditionals):
                outputs = definition()
                outputs = (outputs,) if isinstance(outputs, DataNode) else outputs
                self.set_outputs(*_check_outputs(outputs, where))

    def _call_definition(self) -> list[DataNode]:
        """The pipeline's outputs, from its definition (a ``pipeline_def`` function or
        ``define_graph``), called with this pipeline as the current one."""
        # define_graph is looked up on each call rather than stored: a bound method kept in
        # self would make every such pipeline a reference cycle, finalized by the garbage
        # collector at an arbitrary point, where __del__ must not wait for threads.
        definition = self._definition or self.define_graph
        if self._conditionals and self._definition is None:
            definition = conditionals.convert(definition)
        Pipeline._current.append(self)
        try:
            with conditionals.enabling(self._conditionals):
                outputs = definition()
        except AugkitError as exc:
            end_at_user_frame(exc)  # the traceback ends at the user's line
            raise
        finally:
            Pipeline._current.remove(self)
        where = "define_graph()" if self._definition is None else "the pipeline's definition"
        return _check_outputs((outputs,) if isinstance(outputs, DataNode) else outputs, where)

    def _prefetch_depth(self) -> int:
        depth = self._exec_settings["prefetch_queue_depth"]
        return max(1, depth.get("cpu_size", 2) if isinstance(depth, dict) else depth)

    def run(self) -> tuple[TensorList, ...]:
        """Compute the next batch; returns one TensorList per output.

        An error in an operator is raised here (``OperatorError``, naming the operator and the
        sample), and the pipeline stays usable: the next ``run()`` computes the next batch.
        A ``KeyboardInterrupt`` (the notebook's stop button) abandons the work in flight
        (worker processes are stopped, queued work is cancelled) and the next ``run()``
        computes the interrupted batch again.
        """
        if self._scheduled:
            return self._scheduled.pop(0)
        return self._run(partial=False)

    def run_keyed(self, sample_ids: Sequence[Any], iteration: int = 0) -> tuple[TensorList, ...]:
        """Compute the next batch, with every random draw keyed by a given id per sample and
        by ``iteration`` instead of by the sample's place in the batch and the run count: a
        sample's augmentation then depends only on (seed, shard, its id, iteration), whatever
        batch it comes in and whatever came before (``augkit.ray.Augment``'s ``id_column``:
        a row augments the same on any actor, in any batch).

        Args:
            sample_ids: one id per sample of the batch (its size must be the batch's): ints
                below 2**32 are used as they are; other values (larger ints, strings, bytes)
                are reduced to 32 bits by a stable hash (BLAKE2b of their ``repr``), so two of
                them may, rarely, draw alike.
            iteration: the number the draws are keyed by with the ids (an epoch, say).

        Raises:
            GraphError: in debug mode, or the batch does not have one sample per id.

        Example:
            >>> from augkit import fn, pipeline_def
            >>> @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
            ... def noise():
            ...     return fn.random.uniform(range=(0, 1))
            >>> a = noise().run_keyed([7, 8, 9])[0].as_array()
            >>> b = noise().run_keyed([9, 8, 7])[0].as_array()
            >>> bool((a == b[::-1]).all())
            True
        """
        runner = self._built()
        self.iter_setup()
        delivery = runner.run_keyed(sample_keys(sample_ids), int(iteration))
        report_skips(delivery.notes.skipped, self.skipped, stacklevel=3)
        return delivery.outputs

    def schedule_run(self) -> None:
        """DALI's asynchronous API: compute a batch now, to be returned by ``outputs()``."""
        self._scheduled.append(self._run(partial=False))

    def outputs(self) -> tuple[TensorList, ...]:
        """The batch computed by the oldest ``schedule_run()``."""
        if not self._scheduled:
            raise GraphError("outputs() without a schedule_run() before it")
        return self._scheduled.pop(0)

    def iter_setup(self) -> None:
        """Override to prepare each iteration: called by ``run()`` (and ``schedule_run()``)
        before it computes a batch, e.g. to ``feed_input`` an external source (DALI's legacy
        ``iter_setup`` pattern)."""

    def _run(self, partial: bool | str, lead: str | None = None) -> tuple[TensorList, ...]:
        runner = self._built()
        self.iter_setup()
        delivery = runner.run(partial, lead)
        report_skips(delivery.notes.skipped, self.skipped, stacklevel=4)
        self._delivered += 1
        if self._delivered % backend.TRIM_EVERY == 0:
            backend.trim_allocator()  # long runs stay flat (see its docstring)
        return delivery.outputs

    def run_partial(
        self, reader_name: str | None = None, *, holes: bool = False
    ) -> tuple[TensorList, ...]:
        """Compute the next batch, stopped at the end of the epoch of the reader
        ``reader_name`` (default: the first): at the epoch's end it holds only the samples
        left (fewer than ``batch_size``), and never ``pad_last_batch``'s copies; the other
        readers stop with it. Once the epoch was delivered (``position().left == 0``) the next
        batch is the next epoch's first (call ``reset()`` first to be sure the epoch starts
        whole). An external source's epoch ends at its ``StopIteration``, raised here as by
        ``run()``.

        Args:
            holes: a sample that a decoder with ``on_error="skip"`` leaves out leaves a hole
                (the batch is shorter) instead of being replaced by a later sample of the
                epoch: every batch then covers ``batch_size`` positions, so an epoch has the
                same number of batches whatever is skipped (how the iterators walk epochs).

        Raises:
            GraphError: no reader of that name.

        Example:
            >>> from augkit import fn, pipeline_def
            >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
            ... def labels():
            ...     return fn.readers.file(file_root="data/images", name="Reader")[1]
            >>> pipe = labels()
            >>> sizes = [len(pipe.run_partial()[0]) for _ in range(4)]
            >>> sizes, pipe.position().left
            ([4, 4, 4, 3], 0)
        """
        self.build()
        lead = self._lead(reader_name)
        partial = HOLES if holes else True
        return self._run(partial=partial, lead=lead.name if lead is not None else None)

    def position(self, reader_name: str | None = None) -> EpochPosition | None:
        """Where the reader ``reader_name`` (default: the first) stands in its shard's epoch
        after the last batch delivered: an ``EpochPosition`` (``epoch``, ``delivered``,
        ``size``, ``samples``, and ``left``). Batches computed ahead in the background do not
        count. ``None`` where there is no reader to tell (a pipeline of external sources, whose
        epoch ends at their ``StopIteration``; a debug-mode pipeline before its first run).

        Raises:
            GraphError: no reader of that name, or a pipeline with neither readers nor
                external sources (it has no epochs).

        Example:
            >>> from augkit import fn, pipeline_def
            >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
            ... def labels():
            ...     return fn.readers.file(file_root="data/images", name="Reader")[1]
            >>> pipe = labels()
            >>> _ = pipe.run()
            >>> pipe.position()
            EpochPosition(epoch=0, delivered=4, size=15, samples=15)
        """
        runner = self._built()
        lead = self._lead(reader_name)
        if lead is None:
            return None
        return lead.position(runner.reader_state(lead.name))

    def reader_names(self) -> list[str]:
        """The names of the pipeline's readers, in graph order (none in debug mode before
        the first ``run()``, which makes them)."""
        runner = self._built()
        return list(runner.readers()) if runner.readers_known else []

    def _lead(self, name: str | None) -> Any:
        """The reader ``name`` (default: the first), or None while the readers do not exist
        yet (debug mode, before the first run() has made them)."""
        runner = self._built()
        readers = runner.readers()
        if not readers and not runner.readers_known:
            return None
        if not readers and name is None and runner.has_sources():
            return None  # an external source's epoch ends at its StopIteration
        if name is None and readers:
            return next(iter(readers.values()))
        if name in readers:
            return readers[name]
        known = ", ".join(readers) or "none"
        raise GraphError(
            f"no reader named {name!r} in this pipeline (readers: {known})"
            if name
            else "this pipeline has no reader, so it has no epochs; call run() instead"
        )

    def feed_input(
        self, data_node: str | DataNode, data: Any, layout: str | None = None, **kwargs: Any
    ) -> None:
        """Give the external source ``data_node`` (its name, or its node) the batch for the
        next ``run()`` (DALI's ``feed_input``, used where the source has no ``source``
        callable: the ``iter_setup`` pattern). ``layout`` overrides the source's layout.

        Raises:
            GraphError: no external source of that name.
        """
        runner = self._built()
        name = data_node.name if isinstance(data_node, DataNode) else data_node
        runner.source(name).feed(data, layout, **kwargs)

    def reset(self) -> None:
        """End the current epoch: every reader starts its next epoch from its first sample,
        and every external source its next epoch (after a ``StopIteration``)."""
        self._scheduled.clear()
        if self._runner is not None:
            self._runner.reset()

    # --- looking inside (the viewer) ---------------------------------------------------------
    def nodes(self) -> dict[str, DataNode]:
        """Every operator output of the graph by name, in graph order (the outputs included):
        what ``value(name)`` can show. In debug mode: the nodes of the last run."""
        return self._built().nodes()

    def output_names(self) -> list[str]:
        """The names of the nodes the last ``run()`` returned, in order (what the viewer
        shows by default; none before the first ``run()`` in debug mode)."""
        return self._runner.output_names() if self._runner is not None else []

    def operators(self) -> list[OperatorNode]:
        """The operator nodes of the graph, in graph order (none before ``build()``, none in
        debug mode, which has no graph): what the viewer lists and gives sliders."""
        return self._runner.operators() if self._runner is not None else []

    def value(self, name: str) -> TensorList:
        """The batch of node ``name`` in the last ``run()`` (any node, not only the outputs:
        something DALI cannot show outside its debug mode)."""
        if self._runner is None:
            raise GraphError(f"no batch for node {name!r}: call run() first")
        return self._runner.value(name)

    def draws(self, name: str | None = None) -> list[dict[str, Any]]:
        """What the random operators drew for each sample of the last batch, as one record
        per sample: ``{"Rotate_4.angle": 12.4, "Flip_6.horizontal": 1, ...}`` (the operator
        that took the value, and its argument), for every operator that ``name`` is computed
        from (or the whole graph when ``None``). A value is a Python number, or a list for a
        vector (``shape=``). Draws that an operator makes inside itself (random_resized_crop's
        window) are not listed: they follow from its seed and the sample (``rerun`` with the
        same operator gives them again). With conditionals, the record also says which
        branch the sample took at each choice (``choices``), and an operator inside a branch
        has values only for the samples that took it.

        Raises:
            GraphError: before the first ``run()``, in debug mode, or no node ``name``.
        """
        operators = self._upstream_operators(name, "draws()")
        samples = self._scope_samples()
        records: list[dict[str, Any]] = [{} for _ in range(samples.batch_size)]
        for op in operators:
            for key, data in op.arg_nodes.items():
                source = data.source
                if source.schema.role != "random":
                    continue
                batch = self.value(data.name)
                ids = samples.ids(source.scope)
                for j in range(len(batch)):
                    value = np.asarray(batch.at(j))
                    i = j if ids is None else int(ids[j])
                    records[i][f"{op.name}.{key}"] = (
                        value.item() if value.ndim == 0 else value.tolist()
                    )
        for i, record in enumerate(self._choices(operators, samples)):
            records[i].update(record)
        return records

    def choices(self, name: str | None = None) -> list[dict[str, Any]]:
        """Which branch each sample of the last batch took, at every conditional choice that
        ``name`` is computed from (the whole graph when ``None``): one record per sample,
        ``{"if do_rotate": True, "rand_augment[0]": "rotate"}`` (an ``if`` by its condition,
        as written, with the case taken; a ``select``, as the policies of ``augkit.auto_aug``
        make, by its label, with the name of the branch taken). A sample that did not reach a
        choice (it took another branch of an enclosing one) has no entry for it.

        Raises:
            GraphError: before the first ``run()``, in debug mode, or no node ``name``.
        """
        operators = self._upstream_operators(name, "choices()")
        return self._choices(operators, self._scope_samples())

    def _upstream_operators(self, name: str | None, what: str) -> list[OperatorNode]:
        self.build()
        operators = self.operators()
        if not operators or self._runner is None or not self.output_names():
            raise GraphError(f"{what} needs a normal pipeline (not debug mode) that has run")
        if name is not None:
            nodes = self.nodes()
            if name not in nodes:
                raise GraphError(f"no node named {name!r}{suggest(name, list(nodes))}")
            wanted = {op.id for op in upstream([nodes[name].source])}
            operators = [op for op in operators if op.id in wanted]
        return operators

    def _scope_samples(self) -> ScopeSamples:
        """The samples of every conditional scope in the last batch."""
        size = len(self.value(self.output_names()[0]))
        return ScopeSamples(size, lambda data: self.value(data.name))

    def _choices(
        self, operators: Sequence[OperatorNode], samples: ScopeSamples
    ) -> list[dict[str, Any]]:
        found: dict[int, Any] = {}
        for op in operators:
            scope = op.scope
            while scope is not None:
                if scope.choice.recorded:
                    found.setdefault(id(scope.choice), scope)
                scope = scope.parent
        records: list[dict[str, Any]] = [{} for _ in range(samples.batch_size)]
        labels: dict[str, int] = {}
        for scope in sorted(found.values(), key=lambda s: s.choice.selector.source.id):
            choice = scope.choice
            label = choice.label
            if labels.setdefault(label, id(choice)) != id(choice):
                # Two choices of one name (two `if`s on one condition, two policies): the
                # second by its line, or numbered.
                count = sum(1 for known in labels if known.startswith(label))
                label = f"{label} ({choice.where})" if choice.where else f"{label}#{count}"
                labels[label] = id(choice)
            cases = cases_of(self.value(choice.selector.name), choice)
            ids = samples.ids(scope.parent)
            for j, case in enumerate(cases.tolist()):
                i = j if ids is None else int(ids[j])
                records[i][label] = case if choice.boolean else choice.names.get(case, case)
        return records

    def pick(
        self,
        names: Sequence[str] | str | None = None,
        *,
        labels: Sequence[int | str] | int | str | None = None,
        reader: str | None = None,
    ) -> tuple[TensorList, ...]:
        """Compute one batch of chosen samples, by name or by label, and leave the readers
        where they were (the next ``run()`` goes on from there): the viewer's pinned and
        picked samples. Random operators draw anew (as in ``rerun()``).

        Args:
            names: the samples' names (their ``source_info``: ``"people/grace_hopper.jpg"``),
                in the order wanted; a name may also be a file's base name when that is
                unique (``"grace_hopper.jpg"``).
            labels: instead, the first ``batch_size`` samples (in the data set's order) with
                one of these labels: numbers, or class names (``Pipeline.class_names()``).
            reader: the reader the names are of (default: the first). Other readers read the
                samples of the same positions (readers paired by position, as images and
                masks), so they must have as many samples.

        Returns:
            One TensorList per output, as ``run()``; ``len()`` is the number of samples picked
            (fewer than asked when a screening decoder skips some).

        Raises:
            ArgumentError: no names and no labels, or both; a name or label that no sample has.
            GraphError: a pipeline with an external source (its samples have no names) or no
                reader, or in debug mode.
        """
        runner = self._built()
        if self._debug:
            raise GraphError("pick() needs a normal pipeline (debug mode keeps no graph)")
        if (names is None) == (labels is None):
            raise ArgumentError("pick(): give the samples' names or their labels (one of the two)")
        if runner.has_sources():
            raise GraphError(
                "pick(): this pipeline has an external source, whose samples have no names to "
                "pick by; pick works on readers' samples"
            )
        readers = runner.readers()
        lead = self._lead(reader)
        if lead is None or not readers:
            raise GraphError("pick(): this pipeline has no reader to pick samples from")
        lead_name = next(n for n, r in readers.items() if r is lead)
        if names is not None:
            indices = _indices_by_name(
                lead, lead_name, [names] if isinstance(names, str) else names
            )
        else:
            wanted = [labels] if isinstance(labels, int | str) else list(labels or ())
            indices = _indices_by_label(
                lead, lead_name, wanted, self.class_names(), self.batch_size
            )
        picks = {}
        for name, other in readers.items():
            size = len(other.sample_names()) if hasattr(other, "sample_names") else None
            if name != lead_name and size != len(lead.sample_names()):
                raise GraphError(
                    f"pick(): reader {name} has {size} samples and {lead_name} has "
                    f"{len(lead.sample_names())}: samples are picked by position in each"
                )
            picks[name] = indices
        delivery = runner.pick(picks)
        report_skips(delivery.notes.skipped, self.skipped, stacklevel=3)
        return delivery.outputs

    def rerun(self, changed: Sequence[str] | None = None) -> tuple[TensorList, ...]:
        """Run the last batch's samples through the graph again, without reading anything.

        Args:
            changed: ``None``: every operator runs again with new random draws (a fresh
                iteration number, reserved for reruns, so no batch of ``run()`` shares it).
                Names of operators: only those and what depends on them run again, with the
                same random draws as before (for a changed function or parameter).
        """
        if self._runner is None:
            raise GraphError("rerun() repeats the last batch: call run() first")
        return self._runner.rerun(changed)

    def set_function(self, name: str, function: Callable[..., Any]) -> None:
        """Give the Python operator ``name`` a new function (the viewer's sliders and edits);
        ``rerun([name])`` then recomputes what follows it on the cached batch. Batches computed
        ahead with the old function are dropped, so the next ``run()`` uses the new one."""
        self._built().set_function(name, function)

    def set_arguments(self, name: str, **values: Any) -> None:
        """Give the built-in operator ``name`` new constant arguments (the viewer's sliders for
        built-in operators: ``pipe.set_arguments("blur", sigma=2.5)``); ``rerun([name])`` then
        recomputes what follows it on the cached batch, with the same random draws. Values are
        checked as when the operator was made (an ``ArgumentError`` names the argument, and
        nothing changes). Batches computed ahead with the old values are dropped.

        Raises:
            GraphError: no operator of that name, or one whose arguments cannot change (a
                reader, an external source, a Python operator: see ``set_function``).
            ArgumentError: a value the operator refuses, or an argument that takes per-sample
                values from another node.
        """
        self._built().set_arguments(name, values)

    def profile(self) -> Profile:
        """Wall time per operator: the last iteration's and the mean over every run so far
        (debug and normal mode). ``profile().rows`` is a list of plain dicts."""
        return profile_of(self._engine.timings) if self._engine is not None else Profile([])

    def epoch_size(self, name: str | None = None) -> int | dict[str, int]:
        """Samples in one epoch of the reader ``name``, or ``{name: size}`` for every reader."""
        runner = self._built()
        if not runner.readers_known:
            raise GraphError("in debug mode the readers exist once run() has run the definition")
        if name is not None:
            return self._lead(name).epoch_size()
        return {n: r.epoch_size() for n, r in runner.readers().items()}

    def reader_meta(self, name: str | None = None) -> dict[str, Any]:
        """DALI's ``reader_meta``: ``epoch_size``, ``epoch_size_padded``, ``number_of_shards``,
        ``shard_id``, ``pad_last_batch`` and ``stick_to_shard`` of the reader ``name``, or
        ``{name: meta}`` for every reader (what DALI's iterators size an epoch with); and
        augkit's ``shuffled`` (its order changes from epoch to epoch: ``random_shuffle`` or
        ``shuffle_after_epoch``) and ``skips_samples`` (a decoder with ``on_error="skip"``
        may leave samples out), which tell the iterators to walk the reader's own epochs
        (``augkit.plugin.base_iterator``)."""
        runner = self._built()
        if not runner.readers_known:
            raise GraphError("in debug mode the readers exist once run() has run the definition")
        if name is None:
            return {n: self.reader_meta(n) for n in runner.readers()}
        reader = self._lead(name)
        sharding = reader.cursor.sharding
        return {
            "epoch_size": sharding.size,
            "epoch_size_padded": reader.epoch_size(),
            "number_of_shards": sharding.num_shards,
            "shard_id": sharding.shard_id,
            "pad_last_batch": sharding.pad_last_batch,
            "stick_to_shard": sharding.stick_to_shard or sharding.shuffle_after_epoch,
            "shuffled": sharding.random_shuffle or sharding.shuffle_after_epoch,
            "skips_samples": reader.skips_samples,
        }

    def class_names(self) -> dict[int, str]:
        """The class names the pipeline's readers know, by label: a reader that reads
        annotations with category names (``readers.coco``) has a ``class_names()`` method; the
        viewer and ``augkit.viz`` name boxes and tiles with it (``readers.file`` names its labels
        by their class folders). Empty when no reader does."""
        runner = self._built()
        if not runner.readers_known:
            return {}
        names: dict[int, str] = {}
        for reader in runner.readers().values():
            method = getattr(reader, "class_names", None)
            if callable(method):
                names.update(method())
        return names

    def epoch(
        self, last_batch_policy: str = "fill", reader_name: str | None = None
    ) -> Iterator[tuple[TensorList, ...]]:
        """Iterate over one epoch of ``reader_name`` (default: the first reader).

        Args:
            last_batch_policy: "fill", "partial" or "drop" (see the module docstring).
        """
        if last_batch_policy not in _LAST_BATCH_POLICIES:
            raise ArgumentError(
                f"last_batch_policy must be one of {_LAST_BATCH_POLICIES}, "
                f"got {last_batch_policy!r}"
            )
        self.build()
        self._lead(reader_name)  # no such reader: raise now, not at the first next()
        return self._epoch(reader_name, last_batch_policy)

    def _epoch(self, reader_name: str | None, policy: str) -> Iterator[tuple[TensorList, ...]]:
        try:
            position = self.position(reader_name)
            if position is not None and position.left == 0:
                # run() stopped exactly at the end of an epoch: this loop is the next epoch
                # (after a few run() calls it completes the current one).
                self.reset()
            while True:
                position = self.position(reader_name)
                if position is not None:
                    left = position.left
                    if left == 0 or (policy == "drop" and left < self._batch_size):
                        return
                try:
                    if policy == "partial":
                        batch = self.run_partial(reader_name)
                    else:
                        batch = self._run(partial=False)
                except StopIteration:  # an external source ended its epoch (as in DALI)
                    return
                yield batch
        finally:
            self.reset()

    def __iter__(self) -> Iterator[tuple[TensorList, ...]]:
        return self.epoch()

    def close(self) -> None:
        """Stop the pipeline's background work: the prefetching thread, the thread pool and the
        worker processes (their shared memory too). Batches computed ahead are dropped; a later
        ``run()`` goes on from the last batch consumed, starting what it needs again."""
        if self._runner is not None:
            self._runner.close()

    def __del__(self) -> None:
        runner = getattr(self, "_runner", None)
        if runner is not None:
            # Not waiting for threads: a finalizer may run inside the garbage collector while
            # this thread holds threading's own locks, and a join there deadlocks. Idle
            # threads exit by themselves once their pools are shut down.
            runner.close(wait=False)


def sample_keys(ids: Sequence[Any]) -> np.ndarray:
    """Per-sample ids as the 32-bit keys of the random streams (``run_keyed``)."""
    keys = np.empty(len(ids), np.uint64)
    for k, value in enumerate(ids):
        if isinstance(value, (int, np.integer)) and 0 <= int(value) < 2**32:
            keys[k] = int(value)
        else:
            if isinstance(value, np.generic):
                value = value.item()
            digest = hashlib.blake2b(repr(value).encode(), digest_size=4).digest()
            keys[k] = int.from_bytes(digest, "little")
    return keys


def _positive_or_unset(name: str, value: Any) -> int:
    if value is None:  # DALI 2.x's default for "not set"
        return -1
    if isinstance(value, bool) or not isinstance(value, int) or value == 0 or value < -1:
        raise ArgumentError(
            f"Pipeline: {name} must be a positive integer (or -1: unset), got {value!r}"
        )
    return value


def _check_outputs(outputs: Any, where: str) -> list[DataNode]:
    if outputs is None:
        raise GraphError(f"{where} returned no outputs")
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if not outputs:
        raise GraphError(f"{where} returned no outputs")
    for k, out in enumerate(outputs):
        if isinstance(out, Undefined):
            raise out.error()
        if isinstance(out, DataNode) and out.source.scope is not None:
            raise GraphError(
                f"{where}: output {k} ({out.name}) was computed in "
                f"{out.source.scope.describe()}, so it holds only that branch's samples; "
                f"assign it in every branch and return the variable after the `if`"
            )
        if not isinstance(out, DataNode):
            raise GraphError(
                f"{where}: output {k} is a {type(out).__name__}, not the output of an operator "
                f"(DataNode)"
            )
    return outputs


_PIPELINE_ARGS = frozenset(inspect.signature(Pipeline.__init__).parameters) - {"self"}


def pipeline_def(fn: Callable[..., Any] | None = None, **pipeline_kwargs: Any) -> Any:
    """Turn a function of ``fn.*`` calls into a pipeline factory (DALI's ``pipeline_def``).

    The factory takes the function's own arguments and any Pipeline argument as keywords
    (which override those given to the decorator), and returns a ``Pipeline`` whose outputs are
    what the function returns.

    Example:
        >>> from augkit import fn, pipeline_def
        >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=7)
        ... def coins():
        ...     return fn.random.coin_flip(probability=0.5)
        >>> (flips,) = coins().run()
    """
    unknown = set(pipeline_kwargs) - _PIPELINE_ARGS
    if unknown:
        raise ArgumentError(f"pipeline_def: unknown Pipeline argument(s) {sorted(unknown)}")

    def decorate(func: Callable[..., Any]) -> Callable[..., Pipeline]:
        @functools.wraps(func)
        def factory(*args: Any, **kwargs: Any) -> Pipeline:
            settings = dict(pipeline_kwargs)
            func_params = inspect.signature(func).parameters
            for key in list(kwargs):
                if key in _PIPELINE_ARGS and key not in func_params:
                    settings[key] = kwargs.pop(key)
            pipe = Pipeline(**settings)
            # DALI's conditionals: the definition's `if`s on DataNodes become per-sample
            # choices (its code is converted once; augkit.conditionals.rewrite).
            body = func
            if settings.get("enable_conditionals"):
                if func.__dict__.get("__augkit_do_not_convert__"):
                    raise ValueError("Pipeline definition cannot be marked with @do_not_convert.")
                body = conditionals.convert(func)
            pipe._adopt(functools.partial(body, *args, **kwargs), f"{func.__name__}()")
            return pipe

        return factory

    return decorate(fn) if fn is not None else decorate


def _indices_by_name(reader: Any, where: str, names: Sequence[str]) -> list[int]:
    """The positions of ``names`` in ``reader``'s samples (a unique base name will do)."""
    known = reader.sample_names()
    position = {name: k for k, name in enumerate(known)}
    by_base: dict[str, list[int]] = {}
    for k, name in enumerate(known):
        by_base.setdefault(name.rsplit("/", 1)[-1], []).append(k)
    if not names:
        raise ArgumentError("pick(): no names given")
    found = []
    for name in names:
        if name in position:
            found.append(position[name])
        elif len(by_base.get(name, [])) == 1:
            found.append(by_base[name][0])
        elif name in by_base:
            many = ", ".join(known[k] for k in by_base[name][:4])
            raise ArgumentError(
                f"pick(): {name!r} is the name of several samples of {where}: {many}"
            )
        else:
            raise ArgumentError(
                f"pick(): {where} has no sample named {name!r} ({len(known)} samples, e.g. "
                f"{', '.join(known[:3])}){suggest(name, known)}"
            )
    return found


def _indices_by_label(
    reader: Any, where: str, wanted: list[int | str], class_names: dict[int, str], count: int
) -> list[int]:
    """The first ``count`` samples of ``reader`` with one of the labels ``wanted``."""
    by_name = {name: label for label, name in class_names.items()}
    labels = set()
    for item in wanted:
        if isinstance(item, str):
            if item not in by_name:
                names = list(by_name)
                raise ArgumentError(
                    f"pick(): no class named {item!r} (classes: {', '.join(names) or 'none'})"
                    f"{suggest(item, names)}"
                )
            labels.add(by_name[item])
        else:
            labels.add(int(item))
    found = []
    for k in range(len(reader.sample_names())):
        if labels & set(reader.labels_of(k)):
            found.append(k)
            if len(found) == count:
                break
    if not found:
        raise ArgumentError(f"pick(): no sample of {where} has the label(s) {sorted(labels)}")
    return found
