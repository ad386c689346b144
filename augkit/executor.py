"""Runs a pipeline's graph: turns the traced nodes into operator instances, one iteration at a
time, with each operator's per-sample work spread over a pool of ``num_threads`` threads.

This is the simple executor: operators run one after another in graph order and the iteration
is computed when ``run()`` asks for it. Every result is a function of (seed, iteration, sample)
only, so a faster executor (pipelined, worker processes) can be swapped in without changing a
number.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from augkit import backend
from augkit.errors import ArgumentError, AugkitError, DeviceError, GraphError, OperatorError
from augkit.graph import DataNode, OperatorNode
from augkit.operators.base import OperatorImpl, RunContext, SourceOperator
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
        self.kinds: dict[str, str] = {}

    def add(self, name: str, kind: str, seconds: float) -> None:
        with self._lock:
            self.last[name] = seconds
            self.total[name] = self.total.get(name, 0.0) + seconds
            self.calls[name] = self.calls.get(name, 0) + 1
            self.kinds[name] = kind


@dataclass
class Profile:
    """Per-operator wall time: ``rows`` (plain dicts: operator, kind, last_ms, mean_ms,
    total_ms, calls), slowest first by mean. Shows itself as a table (text and HTML).

    With the pipelined executor, operators of several iterations run at once, so the times of
    different operators overlap: compare them with one another, not with the batch time.
    """

    rows: list[dict[str, Any]]

    def __repr__(self) -> str:
        header = f"{'operator':<28} {'kind':<24} {'last ms':>9} {'mean ms':>9} {'calls':>6}"
        lines = [header, "-" * len(header)]
        for row in self.rows:
            lines.append(
                f"{row['operator']:<28} {row['kind']:<24} {row['last_ms']:>9.2f} "
                f"{row['mean_ms']:>9.2f} {row['calls']:>6}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{r['operator']}</td><td>{r['kind']}</td><td>{r['last_ms']:.2f}</td>"
            f"<td>{r['mean_ms']:.2f}</td><td>{r['calls']}</td></tr>"
            for r in self.rows
        )
        return (
            "<table><tr><th>operator</th><th>kind</th><th>last ms</th><th>mean ms</th>"
            f"<th>calls</th></tr>{cells}</table>"
        )


def profile_of(timings: Timings) -> Profile:
    with timings._lock:
        rows = [
            {
                "operator": name,
                "kind": timings.kinds[name],
                "last_ms": timings.last[name] * 1e3,
                "mean_ms": timings.total[name] / timings.calls[name] * 1e3,
                "total_ms": timings.total[name] * 1e3,
                "calls": timings.calls[name],
            }
            for name in timings.total
        ]
    rows.sort(key=lambda r: r["mean_ms"], reverse=True)
    return Profile(rows)


def collect(outputs: Sequence[DataNode], trace: Sequence[OperatorNode]) -> list[OperatorNode]:
    """The nodes to run, in an order where every node follows its inputs: those the outputs
    depend on and those marked ``preserve=True``; everything else is pruned."""
    seen: dict[int, OperatorNode] = {}
    stack = [d.source for d in outputs] + [n for n in trace if n.args.get("preserve")]
    while stack:
        node = stack.pop()
        if node.id not in seen:
            seen[node.id] = node
            stack.extend(node.parents())
    # A node is always created after its inputs, so creation order is a topological order.
    return [seen[k] for k in sorted(seen)]


class Executor:
    """Runs the nodes of one pipeline.

    Args:
        nodes: what ``collect`` returned.
        trace: every node created while the pipeline was defined, in creation order (seeds
            are numbered by it, pruned nodes included, so pruning changes no seed).
        seed: the pipeline's resolved seed.
        num_threads: size of the thread pool for per-sample work.
        device_id: the CUDA device for GPU operators (``None``: no GPU wanted).
    """

    def __init__(
        self,
        nodes: list[OperatorNode],
        trace: Sequence[OperatorNode],
        seed: int,
        num_threads: int,
        device_id: int | None,
        py_num_workers: int = 1,
        py_start_method: str | None = None,
    ) -> None:
        backend.tune_allocator()
        numbered = sorted({n.id for n in (*trace, *nodes)})
        ordinal = {node_id: k for k, node_id in enumerate(numbered)}
        self.nodes = nodes
        self.device_id = device_id
        from augkit.static_checks import check_kinds  # inputs of known wrong kind, at build

        check_kinds(nodes)
        self._check_devices(nodes)
        self.impls: dict[int, OperatorImpl] = {}
        for node in nodes:
            own = node.args.get("seed", -1)
            op_seed = own if own != -1 else operator_seed(seed, ordinal[node.seed_group])
            self.impls[node.id] = node.schema.impl(
                node.schema, node.args, node.name, op_seed, node.device, len(node.inputs)
            )
        self._connect_checks(nodes)
        self.sources = [n for n in nodes if self.impls[n.id].is_source]
        self.producers = [n for n in nodes if self.impls[n.id].produces_batch]
        self._pool = ThreadPoolExecutor(num_threads, "augkit") if num_threads > 1 else None
        self.num_threads = num_threads
        self.py_num_workers = py_num_workers
        self._py_start_method = py_start_method
        self._workers: Any = None
        self._workers_lock = threading.Lock()
        self.timings = Timings()
        self._generation = 0  # cancel() counts up: compute() calls begun before it stop

    def _check_devices(self, nodes: list[OperatorNode]) -> None:
        for node in nodes:
            if node.device in ("gpu", "mixed") and not node.schema.name.startswith("_"):
                reason = backend.gpu_unavailable_reason()
                if reason is None and self.device_id is None:
                    reason = "the pipeline was created with device_id=None"
                if reason is not None:
                    raise DeviceError(
                        f"{node.name} (device={node.device!r}) needs a GPU, but {reason}. "
                        f"Use device='cpu' for it, or run where a CUDA device and CuPy exist."
                    )

    def _connect_checks(self, nodes: list[OperatorNode]) -> None:
        """A decoder with ``on_error="skip"`` checks its samples in its reader's read stage,
        where a skipped sample can be replaced by the reader's next one (DALI cannot do this:
        its decoder has no way to ask the reader for another sample)."""
        for node in nodes:
            impl = self.impls[node.id]
            if not getattr(impl, "skips", False):
                continue
            data = node.inputs[0]
            reader = self.impls.get(data.source.id)
            if not hasattr(reader, "add_check"):
                raise ArgumentError(
                    f"{node.name}: on_error='skip' needs its input to come straight from a "
                    f"reader (fn.readers.file), which replaces each skipped sample with its "
                    f"next one; here the input comes from {data.source.name}. Decode the "
                    f"reader's output directly, or use on_error='raise'"
                )
            reader.add_check(data.index, impl.name, impl.try_decode)

    def source(self, name: str | None = None) -> SourceOperator:
        for node in self.sources:
            if name is None or node.name == name:
                return self.impls[node.id]  # type: ignore[return-value]
        names = ", ".join(n.name for n in self.sources) or "none"
        raise GraphError(
            f"no reader named {name!r} in this pipeline (readers: {names})"
            if name
            else "this pipeline has no reader, so it has no epochs; call run() instead"
        )

    def readers(self) -> dict[str, SourceOperator]:
        return {n.name: self.impls[n.id] for n in self.sources}  # type: ignore[misc]

    def map(self, fn: Callable[[int], Any], n: int) -> list[Any]:
        """``[fn(0), ..., fn(n-1)]`` over the pool; the lowest failing index's error is raised,
        so that which error a batch reports does not depend on thread timing."""
        pool = self._pool
        if pool is None and self.num_threads > 1 and n > 1:
            with self._workers_lock:  # started again after close()
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.num_threads, "augkit")
                pool = self._pool
        if pool is None or n < 2:
            return [fn(i) for i in range(n)]
        futures = [pool.submit(fn, i) for i in range(n)]
        errors = [f.exception() for f in futures]
        for error in errors:
            if error is not None:
                raise error
        return [f.result() for f in futures]

    def states(self) -> dict[str, Any]:
        """Every reader's position (see ``SourceOperator.get_state``)."""
        return {name: reader.get_state() for name, reader in self.readers().items()}

    def set_states(self, states: dict[str, Any]) -> None:
        readers = self.readers()
        for name, state in states.items():
            readers[name].set_state(state)

    def read(
        self, iteration: int, batch_size: int, partial: bool = False
    ) -> tuple[dict[DataNode, TensorList], int, dict[str, Any]]:
        """Run the operators that make batches out of nothing (readers, external sources) for
        one iteration. Calls must come in iteration order. Returns their outputs, the
        iteration's batch size and the readers' positions after it."""
        ctx = RunContext(
            iteration,
            batch_size,
            self.map,
            self.device_id,
            partial,
            self.workers,
            self.py_num_workers,
        )
        values: dict[DataNode, TensorList] = {}
        sizes: dict[str, int] = {}
        for node in self.producers:
            impl = self.impls[node.id]
            outs = self._call(node, lambda impl=impl: impl.run(ctx, [], {}))
            values.update(zip(node.outputs, outs, strict=True))
            sizes[node.name] = len(outs[0]) if outs else batch_size
        if len(set(sizes.values())) > 1:
            hint = (
                " (with last_batch_policy='partial' each reader ends its epoch on its own: "
                "readers of data sets of different sizes, or a reader whose decoder skips "
                "samples with on_error='skip', end it at different batches; use 'fill' or "
                "'drop')"
                if partial
                else ""
            )
            raise GraphError(f"sources delivered batches of different sizes: {sizes}{hint}")
        size = next(iter(sizes.values())) if sizes else batch_size
        return values, size, self.states()

    def compute(
        self,
        iteration: int,
        batch_size: int,
        values: dict[DataNode, TensorList],
        only: set[int] | None = None,
    ) -> dict[DataNode, TensorList]:
        """Run every other operator of one iteration on the sources' ``values``. Safe to call
        for several iterations at once from different threads: operators keep no state
        between iterations (Python operators guard what they share themselves).

        ``only``: ids of the operators to run again; every other operator's outputs are taken
        from ``values`` (the viewer's slider moves recompute what follows a changed function).
        """
        ctx = RunContext(
            iteration,
            batch_size,
            self.map,
            self.device_id,
            False,
            self.workers,
            self.py_num_workers,
        )
        values = dict(values)
        generation = self._generation
        for node in self.nodes:
            impl = self.impls[node.id]
            if impl.produces_batch or (only is not None and node.id not in only):
                continue
            if self._generation != generation:
                raise CancelledError(f"iteration {iteration} was abandoned (cancel())")
            inputs = [values[d] for d in node.inputs]
            arg_inputs = {k: values[d] for k, d in node.arg_nodes.items()}
            for key, batch in arg_inputs.items():
                if len(batch) != ctx.batch_size:
                    raise OperatorError(
                        f"argument '{key}' has {len(batch)} values, but the batch has "
                        f"{ctx.batch_size} samples",
                        operator=node.name,
                    )
            outs = self._call(node, lambda impl=impl, i=inputs, a=arg_inputs: impl.run(ctx, i, a))
            values.update(zip(node.outputs, outs, strict=True))
        return values

    def downstream(self, ids: set[int]) -> set[int]:
        """The operators ``ids`` and every operator that depends on them."""
        found = set(ids)
        for node in self.nodes:  # in graph order: inputs come first
            if any(parent.id in found for parent in node.parents()):
                found.add(node.id)
        return found

    def run(
        self, iteration: int, batch_size: int, partial: bool = False
    ) -> dict[DataNode, TensorList]:
        """Compute one iteration; returns the batch of every node output that was run."""
        values, size, _ = self.read(iteration, batch_size, partial)
        return self.compute(iteration, size, values)

    def _call(self, node: OperatorNode, work: Callable[[], list[TensorList]]) -> list[TensorList]:
        start = time.perf_counter()
        try:
            outs = work()
        except (AugkitError, StopIteration):
            raise
        except Exception as exc:
            raise OperatorError(f"{type(exc).__name__}: {exc}", operator=node.name) from exc
        self.timings.add(node.name, node.schema.class_name, time.perf_counter() - start)
        if len(outs) != len(node.outputs):
            raise OperatorError(
                f"produced {len(outs)} outputs, expected {len(node.outputs)}", operator=node.name
            )
        return outs

    def workers(self) -> Any:
        """The pipeline's pool of ``py_num_workers`` worker processes for Python operators,
        started on first use (with the default of 1, only operators given
        ``parallel="processes"`` use it)."""
        with self._workers_lock:
            if self._workers is None:
                from augkit.workers import WorkerPool

                self._workers = WorkerPool(max(self.py_num_workers, 1), self._py_start_method)
            return self._workers

    def cancel(self) -> None:
        """Abandon the iterations being computed (``run()`` was interrupted): work queued on
        the thread pool is cancelled, the worker processes are stopped, and a ``compute()``
        still running stops before its next operator. The next call starts afresh."""
        self._generation += 1
        self.close(wait=False)

    def close(self, wait: bool = True) -> None:
        """Stop the thread pool (waiting for its threads unless ``wait`` is false) and the
        worker processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None
        if self._workers is not None:
            self._workers.close()
            self._workers = None
