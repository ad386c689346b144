"""The one execution core: runs one node of a graph on one iteration's batches.

Every way of running operators goes through ``Engine.run_node``: the normal executor
(``augkit.executor``), the prefetching executor (``augkit.prefetch``, through the executor),
debug mode (``augkit.debug``) and ``augkit.eager`` (a debug session for one call). It does, in
one place:

- the operator instance of a node, with its seed (``make_impl``: the pipeline seed and the
  node's creation ordinal, or its own ``seed=``; keyed by the pipeline's shard) — the rest of
  the seed rule is ``augkit.random``;
- the per-sample argument inputs (one value per sample, checked against the batch size);
- the call (``OperatorImpl.run``: per-sample kernels on the thread pool, or a batch kernel),
  with any exception that is not augkit's wrapped into an ``OperatorError`` naming the node;
- the timing ``Pipeline.profile()`` reports;
- the data kind of every output batch (``augkit.kinds``), from the node's static output specs.

``Engine`` holds what a pipeline's nodes share while they run: the thread pool, the worker
processes for Python operators, the timings, and a generation counter that ``cancel()`` bumps
so that iterations in flight stop at their next operator.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from augkit import backend
from augkit.calls import SampleCall
from augkit.errors import AugkitError, OperatorError
from augkit.graph import DataNode, OperatorNode
from augkit.kinds import GENERIC, Kind
from augkit.operators.base import IterationNotes, OperatorImpl, RunContext
from augkit.random import operator_seed
from augkit.tensors import TensorList


class Timings:
    """Wall time of each operator: the last iteration's and the running total (what
    ``Pipeline.profile()`` reports)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last: dict[str, float] = {}
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.ops: dict[str, str] = {}

    def add(self, name: str, op: str, seconds: float) -> None:
        with self._lock:
            self.last[name] = seconds
            self.total[name] = self.total.get(name, 0.0) + seconds
            self.calls[name] = self.calls.get(name, 0) + 1
            self.ops[name] = op


@dataclass
class Profile:
    """Per-operator wall time: ``rows`` (plain dicts: operator, op, last_ms, mean_ms,
    total_ms, calls), slowest first by mean. ``op`` is the registry's name of the operator
    ("python_function", "decoders.image"). Shows itself as a table (text and HTML).

    With the pipelined executor, operators of several iterations run at once, so the times of
    different operators overlap: compare them with one another, not with the batch time.
    """

    rows: list[dict[str, Any]]

    def __repr__(self) -> str:
        header = f"{'operator':<28} {'op':<24} {'last ms':>9} {'mean ms':>9} {'calls':>6}"
        lines = [header, "-" * len(header)]
        for row in self.rows:
            lines.append(
                f"{row['operator']:<28} {row['op']:<24} {row['last_ms']:>9.2f} "
                f"{row['mean_ms']:>9.2f} {row['calls']:>6}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{r['operator']}</td><td>{r['op']}</td><td>{r['last_ms']:.2f}</td>"
            f"<td>{r['mean_ms']:.2f}</td><td>{r['calls']}</td></tr>"
            for r in self.rows
        )
        return (
            "<table><tr><th>operator</th><th>op</th><th>last ms</th><th>mean ms</th>"
            f"<th>calls</th></tr>{cells}</table>"
        )


def profile_of(timings: Timings) -> Profile:
    with timings._lock:
        rows: list[dict[str, Any]] = [
            {
                "operator": name,
                "op": timings.ops[name],
                "last_ms": timings.last[name] * 1e3,
                "mean_ms": timings.total[name] / timings.calls[name] * 1e3,
                "total_ms": timings.total[name] * 1e3,
                "calls": timings.calls[name],
            }
            for name in timings.total
        ]
    rows.sort(key=lambda r: r["mean_ms"], reverse=True)
    return Profile(rows)


@dataclass
class _Failure:
    """Why a chain's task stopped: at node ``position`` (sample -1: before any of its samples)."""

    position: int
    sample: int
    error: BaseException


class _BatchArgs:
    """A chain node's ``batch_args``: worked out from sample 0's inputs by sample 0's task (or
    before the tasks, when its inputs come from outside the chain); the other tasks wait."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.failed = False  # they could not be worked out: the node fails before any sample


@dataclass
class _Link:
    """One node of a chain, prepared once per run: its call (``augkit.calls.SampleCall``),
    where its inputs are (a slot of the sample's own values, or an outside batch's samples),
    and the slots its outputs go to and the slots it is the last to read."""

    node: OperatorNode
    call: SampleCall
    inputs: list[tuple[int, Sequence[Any] | None]]  # (slot, None) or (-1, outside samples)
    outputs: list[int]
    drops: list[int]


class _Chain:
    """One run of ``Engine.run_chain``: a list of calls, run sample by sample."""

    def __init__(
        self,
        engine: Engine,
        nodes: Sequence[OperatorNode],
        impls: dict[int, OperatorImpl],
        ctx: RunContext,
        values: dict[DataNode, TensorList],
        kinds: dict[int, list[Kind]],
        transient: frozenset[DataNode],
    ) -> None:
        self.engine, self.nodes, self.impls, self.ctx = engine, nodes, impls, ctx
        self.values, self.kinds = values, kinds
        self.transient = transient
        first = next(d for node in nodes for d in node.inputs if d in values)
        self.n = n = len(values[first])
        # Layouts and sources of every batch the chain reads or makes, before it runs (the
        # operators' output_layout looks at their inputs' layouts only).
        self.layout = {d: b.layout() for d, b in values.items()}
        self.sources: dict[DataNode, Sequence[str]] = {d: b.sources for d, b in values.items()}
        for node in nodes:
            impl = impls[node.id]
            shells = [TensorList([], self.layout[d]) for d in node.inputs]
            for k, out in enumerate(node.outputs):
                self.layout[out] = impl.output_layout(k, shells)  # type: ignore[attr-defined]
                self.sources[out] = self.sources[node.inputs[0]]
        for node in nodes:
            for key, d in node.arg_nodes.items():
                if len(values[d]) != n:
                    raise OperatorError(
                        f"argument '{key}' has {len(values[d])} values, but the batch has {n} "
                        f"samples",
                        operator=node.name,
                    )
        # A slot per batch the chain makes; what a sample's task holds is a list of them.
        self.slot = {d: k for k, d in enumerate(d for node in nodes for d in node.outputs)}
        last_reader: dict[DataNode, int] = {}
        for position, node in enumerate(nodes):
            for d in node.inputs:
                if d in transient:
                    last_reader[d] = position
        self.links = []
        for position, node in enumerate(nodes):
            op: Any = impls[node.id]
            call = SampleCall(
                op,
                getattr(op, op.device),
                n,
                {k: values[d] for k, d in node.arg_nodes.items()},
                [self.layout[d] for d in node.inputs],
                self.sources[node.inputs[0]],
                ctx.streams(op.stream_key, n) if getattr(op, "random", False) else None,
            )
            self.links.append(
                _Link(
                    node,
                    call,
                    [
                        (self.slot[d], None) if d in self.slot else (-1, values[d].samples)
                        for d in node.inputs
                    ],
                    [self.slot[d] for d in node.outputs],
                    [self.slot[d] for d, p in last_reader.items() if p == position],
                )
            )
        self.failures: list[_Failure] = []
        self.batch_args = [_BatchArgs() for _ in nodes]
        for position, node in enumerate(nodes):
            if n and all(d in values for d in node.inputs):
                self._work_out(position, [values[d] for d in node.inputs])

    def _work_out(self, position: int, inputs: Sequence[TensorList]) -> None:
        holder = self.batch_args[position]
        link = self.links[position]
        try:
            link.call.set_batch_args(link.call.impl.batch_args(inputs))
        except AugkitError as exc:
            holder.failed = True
            self.failures.append(_Failure(position, -1, exc))
        except Exception as exc:
            holder.failed = True
            error = OperatorError(f"{type(exc).__name__}: {exc}", operator=link.node.name)
            error.__cause__ = exc
            self.failures.append(_Failure(position, -1, error))
        holder.ready.set()

    def _one(self, i: int) -> tuple[list[Any], list[float]]:
        try:
            return self._samples_of(i)
        finally:
            if i == 0:  # sample 0 stopped early: nodes after it cannot know their batch_args
                for holder in self.batch_args:
                    if not holder.ready.is_set():
                        holder.failed = True
                        holder.ready.set()

    def _samples_of(self, i: int) -> tuple[list[Any], list[float]]:
        local: list[Any] = [None] * len(self.slot)
        durations: list[float] = []
        for position, link in enumerate(self.links):
            start = time.perf_counter()
            samples = [
                local[slot] if outside is None else outside[i] for slot, outside in link.inputs
            ]
            holder = self.batch_args[position]
            if i == 0 and not holder.ready.is_set():
                shells = [
                    TensorList([s], layout)
                    for s, layout in zip(samples, link.call.layouts, strict=True)
                ]
                self._work_out(position, shells)
            holder.ready.wait()
            if holder.failed:  # so does this node, before any sample
                return local, durations
            try:
                out = link.call(i, samples)
            except AugkitError as exc:
                self.failures.append(_Failure(position, i, exc))
                return local, durations
            for slot, sample in zip(link.outputs, out, strict=True):
                local[slot] = sample
            for slot in link.drops:
                local[slot] = None
            durations.append(time.perf_counter() - start)
        return local, durations

    def run(self) -> dict[DataNode, TensorList]:
        results = self.ctx.map(self._one, self.n)
        if self.failures:
            first = min(self.failures, key=lambda f: (f.position, f.sample))
            raise first.error
        made: dict[DataNode, TensorList] = {}
        threads = max(1, min(self.engine.num_threads, self.n))
        for position, link in enumerate(self.links):
            node, impl = link.node, link.call.impl
            node_kinds = self.kinds.get(node.id, [])
            for k, data in enumerate(node.outputs):
                if data in self.transient:
                    continue
                slot = self.slot[data]
                made[data] = TensorList(
                    [local[slot] for local, _ in results],
                    self.layout[data],
                    self.sources[data],
                    dtype=impl.empty_dtype(k),
                    kind=node_kinds[k] if k < len(node_kinds) else GENERIC,
                )
            seconds = sum(durations[position] for _, durations in results) / threads
            self.engine.timings.add(node.name, node.schema.name, seconds)
        return made


def make_impl(node: OperatorNode, pipeline_seed: int, ordinal: int, shard: int) -> OperatorImpl:
    """The operator instance of ``node``: seeded by ``operator_seed(pipeline_seed, ordinal)``
    (or its own ``seed=``), its streams keyed by ``shard``."""
    own = node.args.get("seed", -1)
    seed = own if own != -1 else operator_seed(pipeline_seed, ordinal)
    impl = node.schema.impl(
        node.schema,
        node.args,
        node.name,
        seed,
        node.device,
        len(node.inputs) - node.companions,
        shard,
    )
    if node.companions:
        impl.companions = node.companions
    return impl


def pipeline_shard(nodes: Sequence[OperatorNode]) -> int:
    """The shard of a pipeline: its first reader's ``shard_id`` (0 when it has no reader)."""
    for node in nodes:
        if node.schema.role == "reader":
            return int(node.args.get("shard_id", 0) or 0)
    return 0


def check_device(node: OperatorNode, device_id: int | None) -> None:
    """The device rule (``backend.check_device``) on a node of a graph being built, with the
    pipeline's ``device_id``: a GPU node where no GPU can be used is refused, saying why."""
    if node.asked:  # the user's .gpu(): checked as the operator that asked for the GPU
        name = f"{node.inputs[0].name}.gpu()"
        backend.check_device(name, node.device, True, device_id, copy=True)
        return
    backend.check_device(node.name, node.device, node.schema.public, device_id)


class Engine:
    """What the nodes of one pipeline (or one eager call) share while they run, and the one
    function that runs a node (``run_node``).

    Args:
        num_threads: size of the thread pool for per-sample work.
        device_id: the CUDA device for GPU operators (``None``: no GPU wanted).
        py_num_workers: worker processes for Python operators.
        py_start_method: how they start (``None``: fork where safe; see ``augkit.workers``).
    """

    def __init__(
        self,
        num_threads: int,
        device_id: int | None = None,
        py_num_workers: int = 1,
        py_start_method: str | None = None,
    ) -> None:
        backend.tune_allocator()
        self.num_threads = num_threads
        self.device_id = device_id
        self.py_num_workers = py_num_workers
        self._py_start_method = py_start_method
        self._pool: ThreadPoolExecutor | None = None
        self._workers: Any = None
        self._lock = threading.Lock()
        self.timings = Timings()
        self.generation = 0  # cancel() counts up: iterations begun before it stop

    # --- resources ----------------------------------------------------------------------------
    def map(self, fn: Callable[[int], Any], n: int) -> list[Any]:
        """``[fn(0), ..., fn(n-1)]`` on ``num_threads`` threads: the calling thread and
        ``num_threads - 1`` of the pool's, each taking the next index in turn; the lowest
        failing index's error is raised, so that which error a batch reports does not depend
        on thread timing.

        The caller works rather than waits: an iteration thread (or run() itself) computes
        samples of its own batch instead of handing every one to the pool and sleeping until
        they come back (measured on decode + resize: 32 hand-overs a batch and an idle thread
        per iteration in flight cost ~8% against the same kernels on plain threads)."""
        if self.num_threads < 2 or n < 2:
            return [fn(i) for i in range(n)]
        pool = self._pool
        if pool is None:
            with self._lock:  # started on first use, and again after close()
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.num_threads - 1, "augkit")
                pool = self._pool
        results: list[Any] = [None] * n
        errors: dict[int, BaseException] = {}
        indices = itertools.count()

        def work() -> None:
            while (i := next(indices)) < n:
                try:
                    results[i] = fn(i)
                except Exception as exc:
                    errors[i] = exc

        helpers = [pool.submit(work) for _ in range(min(self.num_threads - 1, n - 1))]
        work()
        for helper in helpers:
            # A helper that has not started finds nothing left: cancelled, never waited for
            # (so a map called from a pool thread cannot wait on a thread it occupies).
            if not helper.cancel():
                helper.result()
        if errors:
            raise errors[min(errors)]
        return results

    def workers(self) -> Any:
        """The pool of ``py_num_workers`` worker processes for Python operators, started on
        first use (with the default of 1, only operators given ``parallel="processes"`` use
        it)."""
        with self._lock:
            if self._workers is None:
                from augkit.workers import WorkerPool

                self._workers = WorkerPool(max(self.py_num_workers, 1), self._py_start_method)
            return self._workers

    def context(
        self,
        iteration: int,
        batch_size: int,
        partial: bool | str = False,
        notes: IterationNotes | None = None,
        bounded: bool = True,
    ) -> RunContext:
        """What the operators of one iteration see."""
        return RunContext(
            iteration,
            batch_size,
            self.map,
            self.device_id,
            partial,
            self.workers,
            self.py_num_workers,
            notes if notes is not None else IterationNotes(),
            bounded,
        )

    # --- running a node -------------------------------------------------------------------------
    def run_node(
        self,
        node: OperatorNode,
        impl: OperatorImpl,
        ctx: RunContext,
        inputs: Sequence[TensorList],
        arg_inputs: dict[str, TensorList],
        kinds: Sequence[Kind] = (),
    ) -> list[TensorList]:
        """Run ``impl`` (the operator of ``node``) on one iteration's batches.

        Args:
            ctx: the iteration (``context``).
            inputs: one batch per input (none for a reader or a source).
            arg_inputs: one batch of per-sample values per argument input.
            kinds: the data kind of each output (generic where not given).

        Raises:
            OperatorError: the operator failed (an exception that is not augkit's is chained),
                or an argument input's length does not fit the batch.
        """
        samples = len(inputs[0]) if inputs else ctx.batch_size
        if ctx.sample_ids is not None and not len(ctx.sample_ids):
            # A conditional branch that no sample of this batch took: nothing to compute (a
            # Python function is not called on an empty batch).
            return [
                TensorList(
                    [], "", dtype=impl.empty_dtype(k), kind=kinds[k] if k < len(kinds) else GENERIC
                )
                for k in range(len(node.outputs))
            ]
        conditional = node.schema.role == "conditional"  # its inputs come from several scopes
        if not conditional and any(len(batch) != samples for batch in inputs):
            sizes = ", ".join(str(len(batch)) for batch in inputs)
            raise OperatorError(
                f"its inputs are batches of different sizes ({sizes}); every input of an "
                f"operator must have one sample per sample of the batch",
                operator=node.name,
            )
        for key, batch in arg_inputs.items():
            if len(batch) != samples:
                raise OperatorError(
                    f"argument '{key}' has {len(batch)} values, but the batch has {samples} "
                    f"samples",
                    operator=node.name,
                )
        start = time.perf_counter()
        try:
            outs = impl.run(ctx, inputs, arg_inputs)
        except (AugkitError, StopIteration):
            raise
        except Exception as exc:
            raise OperatorError(f"{type(exc).__name__}: {exc}", operator=node.name) from exc
        self.timings.add(node.name, node.schema.name, time.perf_counter() - start)
        if len(outs) != len(node.outputs):
            raise OperatorError(
                f"produced {len(outs)} outputs, expected {len(node.outputs)}", operator=node.name
            )
        for k, out in enumerate(outs):
            kind = kinds[k] if k < len(kinds) else GENERIC
            if out.kind is not kind and out.kind != kind:
                outs[k] = out.with_kind(kind)
        return outs

    def run_chain(
        self,
        nodes: Sequence[OperatorNode],
        impls: dict[int, OperatorImpl],
        ctx: RunContext,
        values: dict[DataNode, TensorList],
        kinds: dict[int, list[Kind]],
        transient: frozenset[DataNode] = frozenset(),
    ) -> dict[DataNode, TensorList]:
        """Run a chain of per-sample nodes (``SampleOperator``s in graph order, each taking
        its inputs from ``values`` or from an earlier node of the chain) sample by sample: one
        task per sample on the pool runs every node of the chain for that sample (decode then
        resize, say), instead of one pass over the batch per node with a wait for the slowest
        sample after each. Fewer hand-overs, no idle thread between the nodes, the decoded
        image still in cache when it is resized.

        The same kernels, arguments, read-only outputs and data kinds as ``run_node`` node by
        node, and the same error: the first node (in graph order) that fails, at its lowest
        failing sample. ``profile()`` gets each node's kernel time summed over the samples and
        divided by the threads that ran them (its share of the chain's wall time).

        ``transient``: outputs that only later nodes of the chain read; each sample of them is
        let go once its last reader in the chain has run, and no batch of them is returned
        (the decoded full-size images of decode -> resize: keeping 32 of them alive costs
        every kernel cache misses, ~5% of decode + resize). The executor recomputes them when
        someone asks (``Pipeline.value``).
        """
        return _Chain(self, nodes, impls, ctx, values, kinds, transient).run()

    # --- stopping -------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Abandon the iterations being computed (``run()`` was interrupted): work queued on
        the thread pool is cancelled, the worker processes are stopped, and a computation
        still running stops before its next operator. The next call starts afresh."""
        self.generation += 1
        self.close(wait=False)

    def close(self, wait: bool = True) -> None:
        """Stop the thread pool (waiting for its threads unless ``wait`` is false) and the
        worker processes; both start again when next needed."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.close()
