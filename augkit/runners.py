"""How a pipeline computes its batches: ``Pipeline.build()`` picks one runner, once, and the
pipeline asks it for everything mode-specific; nothing else in ``Pipeline`` tests the mode.

- ``GraphRunner``: the traced graph, one iteration at a time when ``run()`` asks
  (``exec_async=False`` or ``exec_pipelined=False``, or a graph with an external source, whose
  next input may depend on what the user did with the last output);
- ``PrefetchRunner``: the traced graph with iterations computed ahead (``augkit.prefetch``);
- ``DebugRunner`` (``augkit.debug``): the definition run eagerly on every ``run()``.

Each is a ``Runner`` (the protocol below: everything ``Pipeline`` asks of one) and gives a
``Delivery`` per batch: the outputs, every node's batch (what ``Pipeline.value()`` and the
viewer show) and the iteration's notes (the samples skipped while making it). Runners also own
the readers' positions as the user sees them: after a ``KeyboardInterrupt`` the interrupted
batch is computed again by the next ``run()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from augkit.core import Engine
from augkit.errors import GraphError
from augkit.executor import Executor
from augkit.graph import DataNode, OperatorNode, call_of, downstream, upstream
from augkit.operators.base import IterationNotes, SourceOperator
from augkit.prefetch import Prefetcher
from augkit.tensors import TensorList

# Iteration numbers of rerun(): far from any run()'s, so their random draws are new.
RERUN_ITERATIONS = 2**40


@dataclass
class Delivery:
    """One batch as ``run()`` delivers it: the outputs, the batch of every node that ran, and
    the iteration's notes."""

    outputs: tuple[TensorList, ...]
    values: dict[DataNode, TensorList]
    notes: IterationNotes


class Runner(Protocol):
    """What ``Pipeline`` asks of its runner (``GraphRunner``, ``PrefetchRunner``,
    ``augkit.debug.DebugRunner``), and nothing more: the pipeline's public methods of the same
    names are these with the pipeline's own checks around them. A runner that cannot do
    something (debug mode has no graph to rerun) raises ``GraphError`` saying so."""

    @property
    def readers_known(self) -> bool:
        """Whether the readers exist (from build() on; in debug mode, once run() has run)."""
        ...

    # --- batches
    def run(self, partial: bool | str, lead: str | None) -> Delivery:
        """The next batch; ``partial``: stopped at the end of ``lead``'s epoch (True, or
        ``operators.base.HOLES``: skipped samples leave holes)."""
        ...

    def run_keyed(self, keys: Any, iteration: int) -> Delivery:
        """One batch whose random streams are keyed by ``keys`` (one per sample) and
        ``iteration`` (``Pipeline.run_keyed``)."""
        ...

    def pick(self, picks: dict[str, list[int]]) -> Delivery:
        """One batch of the samples ``picks`` (reader name -> indices), the readers left
        where they were (``Pipeline.pick``)."""
        ...

    def rerun(self, changed: Sequence[str] | None) -> tuple[TensorList, ...]:
        """The last batch's samples through the graph again (``Pipeline.rerun``)."""
        ...

    # --- readers and sources
    def readers(self) -> dict[str, SourceOperator]:
        """The readers, by name, in graph order."""
        ...

    def reader_state(self, name: str) -> Any:
        """The position of reader ``name`` after the last batch the user got."""
        ...

    def has_sources(self) -> bool:
        """Whether there is an external source (whose epoch ends at StopIteration)."""
        ...

    def source(self, name: str) -> Any:
        """The operator of the external source ``name`` (``Pipeline.feed_input``)."""
        ...

    def reset(self) -> None:
        """Every reader and external source to its next epoch."""
        ...

    def close(self, wait: bool = True) -> None:
        """Stop the background work (``wait=False`` from a finalizer: join no thread)."""
        ...

    # --- looking inside
    def nodes(self) -> dict[str, DataNode]:
        """Every operator output by name, in graph order."""
        ...

    def operators(self) -> list[OperatorNode]:
        """The operator nodes, in graph order (none in debug mode)."""
        ...

    def output_names(self) -> list[str]:
        """The names of the outputs' nodes."""
        ...

    def value(self, name: str) -> TensorList:
        """The batch of node ``name`` in the last run."""
        ...

    def set_function(self, name: str, function: Callable[..., Any]) -> None:
        """Give the Python operator ``name`` a new function."""
        ...

    def set_arguments(self, name: str, values: dict[str, Any]) -> None:
        """Give the built-in operator ``name`` new constant arguments."""
        ...


class GraphRunner:
    """Runs the traced graph synchronously (see the module docstring).

    Args:
        engine: the pipeline's execution core.
        outputs: the pipeline's outputs.
        nodes: the nodes to run (``executor.collect``).
        trace: every node of the definition, in creation order.
        seed: the pipeline's seed.
        batch_size: the pipeline's batch size.
    """

    def __init__(
        self,
        engine: Engine,
        outputs: Sequence[DataNode],
        nodes: list[OperatorNode],
        trace: Sequence[OperatorNode],
        seed: int,
        batch_size: int,
    ) -> None:
        self.engine = engine
        self.outputs = list(outputs)
        self.executor = Executor(engine, nodes, trace, seed, keep=outputs)
        self.batch_size = batch_size
        self.iteration = 0  # the next run()'s iteration
        self.last_iteration = 0
        self.last: dict[DataNode, TensorList] = {}
        self._reruns = 0

    readers_known = True  # the graph's readers exist from build() on

    # --- batches --------------------------------------------------------------------------------
    def run(self, partial: bool | str, lead: str | None) -> Delivery:
        before = (self.iteration, self.last_iteration)
        states = self.executor.states()
        iteration = self.iteration
        # A batch that fails is lost (the next run() gives the next one), so the iteration
        # number moves on first; an interrupted one is computed again.
        self.iteration, self.last_iteration = iteration + 1, iteration
        try:
            values, notes = self.executor.run(iteration, self.batch_size, partial)
        except KeyboardInterrupt:
            self.iteration, self.last_iteration = before
            self.executor.set_states(states)
            self.engine.cancel()
            raise
        return self._deliver(values, notes)

    def run_keyed(self, keys: Any, iteration: int) -> Delivery:
        """One batch whose random streams are keyed by ``keys`` and ``iteration`` (see
        ``Pipeline.run_keyed``); the run count does not move."""
        self.rewind()  # batches computed ahead were keyed by their positions
        states = self.executor.states()
        try:
            values, notes = self.executor.run(iteration, self.batch_size, False, keys)
        except KeyboardInterrupt:
            self.executor.set_states(states)
            self.engine.cancel()
            raise
        self.last_iteration = iteration
        return self._deliver(values, notes)

    def _deliver(self, values: dict[DataNode, TensorList], notes: IterationNotes) -> Delivery:
        self.last = values
        return Delivery(tuple(values[d] for d in self.outputs), values, notes)

    # --- readers --------------------------------------------------------------------------------
    def readers(self) -> dict[str, SourceOperator]:
        return self.executor.readers()

    def reader_state(self, name: str) -> Any:
        """The position of reader ``name`` after the last batch the user got."""
        return self.executor.readers()[name].get_state()

    def rewind(self) -> None:
        """Drop what was computed ahead (nothing, here)."""

    def reset(self) -> None:
        self.rewind()
        for node in self.executor.producers:  # readers and external sources
            self.executor.impls[node.id].reset()

    def has_sources(self) -> bool:
        """Whether the graph has an external source (whose epoch ends at StopIteration)."""
        return any(n.schema.role == "source" for n in self.executor.producers)

    def source(self, name: str) -> Any:
        """The operator of the external source node ``name`` (for ``Pipeline.feed_input``)."""
        return _source_named(
            name, {n.name: self.executor.impls[n.id] for n in self.executor.producers}
        )

    def close(self, wait: bool = True) -> None:
        self.rewind()
        self.engine.close(wait)

    # --- looking inside (the viewer) ------------------------------------------------------------
    def nodes(self) -> dict[str, DataNode]:
        return {d.name: d for node in self.executor.nodes for d in node.outputs}

    def operators(self) -> list[OperatorNode]:
        return list(self.executor.nodes)

    def output_names(self) -> list[str]:
        return [d.name for d in self.outputs]

    def value(self, name: str) -> TensorList:
        """The batch of node ``name`` in the last run; one that a chain let go (a decoded
        image only its resize read) is computed again, with the same iteration number, so the
        same numbers."""
        for node, batch in self.last.items():
            if node.name == name:
                return batch
        wanted = self.nodes().get(name)
        if wanted is None or not self.last:
            known = ", ".join(self.nodes()) if self.last else "none yet: call run() first"
            raise GraphError(f"no batch for node {name!r} in the last run (nodes: {known})")
        self.last = self._complete(self.last, {wanted})
        return self.last[wanted]

    def _complete(
        self, values: dict[DataNode, TensorList], wanted: set[DataNode]
    ) -> dict[DataNode, TensorList]:
        """``values`` with the batches of ``wanted`` that are not there, computed again from
        what is there (with the last run's iteration number)."""
        missing = {d for d in wanted if d not in values}
        if not missing:
            return values
        # What reads the batches at hand is not computed again, its scope's selector included
        # (one is never let go: ``Executor._transient`` counts the branches' nodes as readers).
        needed = {n.id for n in upstream((d.source for d in missing), known=values)}
        size = len(next(iter(values.values())))
        return self.executor.compute(self.last_iteration, size, values, None, needed, keep_all=True)

    def rerun(self, changed: Sequence[str] | None) -> tuple[TensorList, ...]:
        """See ``Pipeline.rerun``."""
        if not self.last:
            raise GraphError("rerun() repeats the last batch: call run() first")
        executor = self.executor
        size = len(next(iter(self.last.values())))
        if changed is None:
            self._reruns += 1
            self.last_iteration = RERUN_ITERATIONS + self._reruns
            sources = {d: b for d, b in self.last.items() if d.source.schema.makes_batches}
            values = executor.compute(self.last_iteration, size, sources)
        else:
            by_name = {n.name: n for n in executor.nodes}
            missing = [name for name in changed if name not in by_name]
            if missing:
                raise GraphError(f"no operator named {missing} in this pipeline")
            starts = [m for name in changed for m in call_of(by_name[name], executor.nodes)]
            again = downstream(executor.nodes, starts)
            only = {n.id for n in again}
            # What the rerun reads from outside itself (what it recomputes, it need not have).
            reads = {d for n in again for d in n.reads() if d.source.id not in only}
            last = self._complete(self.last, reads)  # what a chain let go, the rerun reads
            values = executor.compute(self.last_iteration, size, last, None, only)
        # The readers' batches (and their skip records) are the last run()'s: already reported.
        self.last = values
        return tuple(values[d] for d in self.outputs)

    def pick(self, picks: dict[str, list[int]]) -> Delivery:
        """See ``Pipeline.pick``: one batch of the samples ``picks`` (reader name -> indices),
        with fresh random draws (an iteration number of the reruns' range), the readers left
        where they were."""
        self.rewind()  # batches computed ahead are dropped; the readers are where the user is
        readers = self.executor.readers()
        size = len(next(iter(picks.values())))
        self._reruns += 1
        iteration = RERUN_ITERATIONS + self._reruns
        for name, indices in picks.items():
            readers[name].picked = list(indices)  # type: ignore[attr-defined]
        try:
            values, notes = self.executor.run(iteration, size, False)
        finally:
            for name in picks:
                readers[name].picked = None  # type: ignore[attr-defined]
        self.last_iteration = iteration
        return self._deliver(values, notes)

    def set_function(self, name: str, function: Callable[..., Any]) -> None:
        """See ``Pipeline.set_function``."""
        self.rewind()
        for node in self.executor.nodes:
            if node.name == name:
                if node.schema.role != "python":
                    raise GraphError(f"{name} is a {node.schema.class_name}, not a Python operator")
                self.executor.impls[node.id].set_function(function)  # type: ignore[attr-defined]
                node.args = {**node.args, "function": function}
                return
        raise GraphError(f"no operator named {name!r} in this pipeline")

    def set_arguments(self, name: str, values: dict[str, Any]) -> None:
        """See ``Pipeline.set_arguments``."""
        node = next((n for n in self.executor.nodes if n.name == name), None)
        if node is None:
            raise GraphError(f"no operator named {name!r} in this pipeline")
        if node.schema.role in ("python", "reader", "source", "internal"):
            what = {"python": "a Python operator: use set_function()"}.get(
                node.schema.role, "an operator whose arguments are fixed once it is built"
            )
            raise GraphError(f"{name} is {what}")
        self.rewind()
        # The nodes of one call with several input sets (images, masks, boxes) change together.
        for member in call_of(node, self.executor.nodes):
            self.executor.set_arguments(member, values)


def _source_named(name: str, producers: dict[str, Any]) -> Any:
    impl = producers.get(name)
    if impl is None or impl.schema.role != "source":
        sources = [n for n, i in producers.items() if i.schema.role == "source"]
        raise GraphError(
            f"no external source named {name!r} in this pipeline (external sources: "
            f"{', '.join(sources) or 'none'})"
        )
    return impl


class PrefetchRunner(GraphRunner):
    """Runs the traced graph with iterations computed ahead (``augkit.prefetch``).

    Args:
        depth: DALI's ``prefetch_queue_depth``.
    """

    def __init__(self, *args: Any, depth: int = 2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.depth = depth
        self._prefetcher: Prefetcher | None = None
        self._consumed_states = self.executor.states()

    def run(self, partial: bool | str, lead: str | None) -> Delivery:
        before = (self.iteration, self.last_iteration, self._consumed_states)
        try:
            if self._prefetcher is not None and self._prefetcher.partial != partial:
                self.rewind()
            item = self._prefetcher.next() if self._prefetcher is not None else None
            if item is None:  # not started, or it stopped (an epoch's end, a reader's error)
                self.rewind()
                self._prefetcher = Prefetcher(
                    self.executor, self.iteration, self.batch_size, partial, self.depth, lead
                )
                item = self._prefetcher.next()
                if item is None:
                    raise GraphError("the prefetching thread stopped without a batch")
            self.iteration = item.iteration + 1
            self.last_iteration = item.iteration
            self._consumed_states = item.states
            values = item.result.result()
        except KeyboardInterrupt:
            # The stop button: this batch was not delivered, so it is not consumed; the
            # batches in flight are abandoned and the next run() computes it again.
            self.iteration, self.last_iteration, self._consumed_states = before
            self.rewind(interrupted=True)
            raise
        return self._deliver(values, item.notes)

    def reader_state(self, name: str) -> Any:
        if self._prefetcher is not None:
            return self._consumed_states[name]
        return super().reader_state(name)

    def rewind(self, interrupted: bool = False) -> None:
        """Drop the batches computed ahead and put the readers back where the user is.
        ``interrupted``: after a KeyboardInterrupt, the work in flight is abandoned rather than
        waited for (a function that hangs on a thread would make the wait endless): queued
        work is cancelled and the worker processes are stopped."""
        if self._prefetcher is not None:
            if interrupted:
                self._prefetcher.cancel()
            else:
                self._prefetcher.close()
            self._prefetcher = None
            self.executor.set_states(self._consumed_states)
        if interrupted:
            self.engine.cancel()

    def close(self, wait: bool = True) -> None:
        if not wait:  # from a finalizer: never join a thread there
            if self._prefetcher is not None:
                self._prefetcher.close(wait=False)
            self.engine.close(wait=False)
            return
        super().close()
