"""Runs a pipeline's traced graph: turns the nodes into operator instances once, then computes
iterations in two stages, each node through the one execution core (``augkit.core``):

- ``read()``: the operators that make batches out of nothing (readers, external sources), the
  only stateful part of a graph, strictly in iteration order;
- ``compute()``: everything else, stateless, safe to run for several iterations at once from
  different threads (the prefetcher does, ``augkit.prefetch``).

Every result is a function of (seed, shard, iteration, sample) only, so how iterations are
scheduled (synchronously, prefetched, on any number of threads) changes no number.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit.core import Engine, check_device, make_impl, pipeline_shard
from augkit.errors import ArgumentError, GraphError
from augkit.graph import DataNode, OperatorNode, consumers, upstream
from augkit.kinds import Kind
from augkit.operators.base import IterationNotes, OperatorImpl, SampleOperator, SourceOperator
from augkit.operators.screening import Refilling, screens
from augkit.scopes import ScopeSamples
from augkit.static_checks import check_kinds, kinds_of
from augkit.tensors import TensorList


def collect(outputs: Sequence[DataNode], trace: Sequence[OperatorNode]) -> list[OperatorNode]:
    """The nodes to run, in graph order (every node after what it reads): those the outputs
    depend on and those marked ``preserve=True``, with what they depend on
    (``graph.upstream``: the selectors of their conditional scopes included); everything else
    is pruned."""
    return upstream([*(d.source for d in outputs), *(n for n in trace if n.args.get("preserve"))])


@dataclass
class ReadResult:
    """One iteration's read stage: the sources' batches, the iteration's batch size, the
    readers' positions after it, and its notes (screened values, skipped samples)."""

    values: dict[DataNode, TensorList]
    size: int
    states: dict[str, Any]
    notes: IterationNotes


class Executor:
    """Runs the nodes of one pipeline.

    Args:
        engine: the pipeline's execution core (threads, workers, timings).
        nodes: what ``collect`` returned.
        trace: every node created while the pipeline was defined, in creation order (seeds
            are numbered by it, pruned nodes included, so pruning changes no seed).
        seed: the pipeline's resolved seed.
        keep: outputs whose batches ``compute()`` must always return (the pipeline's outputs);
            of the others, those that only later nodes of their chain read are let go within
            the chain (``Engine.run_chain``'s ``transient``) unless ``keep_all`` is asked.

    Raises (when the pipeline is built):
        GraphError: an input of a kind its operator does not take (``augkit.static_checks``).
        ArgumentError: an operator's arguments cannot work.
        DeviceError: a GPU operator where no GPU can be used.
    """

    def __init__(
        self,
        engine: Engine,
        nodes: list[OperatorNode],
        trace: Sequence[OperatorNode],
        seed: int,
        keep: Collection[DataNode] = (),
    ) -> None:
        self.engine = engine
        self.nodes = nodes
        specs = check_kinds(nodes)
        self.specs = specs  # every output's static spec (what its schema declares)
        self.kinds: dict[int, list[Kind]] = {
            node.id: kinds_of([specs[d] for d in node.outputs]) for node in nodes
        }
        for node in nodes:
            check_device(node, engine.device_id)
        # A conditional's splits and merges and the copies between host and GPU take no seed:
        # an `if` (and which variables its branches read), or where data moves to the GPU,
        # changes no seed of the operators after it.
        numbered = sorted({n.id for n in (*trace, *nodes) if n.schema.seeded})
        ordinal = {node_id: k for k, node_id in enumerate(numbered)}
        ordinal.update({n.id: 0 for n in nodes if not n.schema.seeded})
        self.shard = pipeline_shard(nodes)
        self._seed, self._ordinal = seed, ordinal
        self.impls: dict[int, OperatorImpl] = {
            node.id: make_impl(node, seed, ordinal[node.seed_group], self.shard) for node in nodes
        }
        for node in nodes:
            self._tell_kinds(node, self.impls[node.id])
        self._connect_screens(nodes)
        self.steps = self._plan(nodes)
        self.transient = self._transient(set(keep))
        self.producers = [n for n in nodes if n.schema.makes_batches]
        self.sources = [n for n in nodes if isinstance(self.impls[n.id], SourceOperator)]

    def set_arguments(self, node: OperatorNode, values: dict[str, Any]) -> None:
        """Give ``node`` new constant arguments (checked as at creation: ``ArgumentError``
        names the operator and the argument) and a new operator instance made of them, with
        the same seed, so random kernels draw the same. On an error nothing changes."""
        for key in values:
            if key in node.arg_nodes:
                raise ArgumentError(
                    f"{node.name}: argument '{key}' takes per-sample values from "
                    f"{node.arg_nodes[key].name}; it has no constant value to change"
                )
        constants, _ = node.schema.bind(values, lambda value: False)
        args = {**node.args, **constants}
        if node.schema.validate is not None:
            try:
                node.schema.validate({**args, **node.arg_nodes})
            except ValueError as exc:
                raise ArgumentError(f"{node.schema.class_name}: {exc}") from None
        if screens(self.impls[node.id]):
            raise ArgumentError(
                f"{node.name} screens its reader's samples (on_error='skip'): its arguments "
                f"cannot change after build(); change the definition"
            )
        before = node.args
        node.args = args
        try:
            impl = make_impl(node, self._seed, self._ordinal[node.seed_group], self.shard)
            specs = check_kinds(self.nodes)  # what follows must still take what it makes
        except BaseException:
            node.args = before
            raise
        self.impls[node.id] = impl
        self.specs = specs
        self._tell_kinds(node, impl)
        self.kinds = {n.id: kinds_of([specs[d] for d in n.outputs]) for n in self.nodes}

    def _tell_kinds(self, node: OperatorNode, impl: OperatorImpl) -> None:
        """Tell ``impl`` the kinds its inputs are known to have (a geometric operator runs
        in chains only on images: ``geometric/targets.py``)."""
        impl.input_kinds = tuple(
            spec.kind.name if spec is not None else "generic"
            for spec in (self.specs.get(d) for d in node.inputs)
        )

    def _plan(self, nodes: list[OperatorNode]) -> list[list[OperatorNode]]:
        """What ``compute()`` runs, in order: single nodes, and chains of per-sample nodes
        (``SampleOperator.chainable``) that the core runs sample by sample
        (``Engine.run_chain``). A node that needs nothing the chain makes (a random operator
        drawing a crop position, made between the resize and the crop) runs before the chain
        instead of ending it: creation order is one topological order among others, and
        kernels are pure, so no number changes."""
        steps: list[list[OperatorNode]] = []
        chain: list[OperatorNode] = []
        before: list[OperatorNode] = []  # what runs ahead of the chain
        made: set[DataNode] = set()  # the chain's outputs

        def flush() -> None:
            steps.extend([n] for n in before)
            if chain:
                steps.append(list(chain))
            before.clear()
            chain.clear()
            made.clear()

        for node in nodes:
            if node.schema.makes_batches:
                continue
            impl = self.impls[node.id]
            needs = set(node.reads())
            if chain and node.scope is not chain[0].scope:
                flush()  # a chain runs the samples of one conditional scope
            if (
                isinstance(impl, SampleOperator)
                and impl.chainable()
                and node.inputs
                and not made & set(node.arg_nodes.values())
            ):
                chain.append(node)
                made.update(node.outputs)
            elif chain and not made & needs:
                before.append(node)
            else:
                flush()
                steps.append([node])
        flush()
        return steps

    def _transient(self, keep: set[DataNode]) -> dict[int, frozenset[DataNode]]:
        """Per chain (by the id of its first node): the outputs read only by later nodes of
        the same chain, and not kept. What a node reads includes its conditional scope's
        selector (``OperatorNode.reads``): an `if`'s condition made in a chain is read by the
        branches' nodes, so it is kept for them."""
        readers = {d: {n.id for n in nodes} for d, nodes in consumers(self.nodes).items()}
        transient = {}
        for step in self.steps:
            if len(step) < 2:
                continue
            ids = {n.id for n in step}
            transient[step[0].id] = frozenset(
                d
                for n in step
                for d in n.outputs
                if d not in keep and readers.get(d) and readers[d] <= ids
            )
        return transient

    def _connect_screens(self, nodes: list[OperatorNode]) -> None:
        """A screening operator (``decoders.image(on_error="skip")``) screens its samples in
        its reader's read stage, where a dropped sample can be replaced by the reader's next
        one (DALI cannot do this: its decoder has no way to ask the reader for another
        sample). See ``augkit.operators.screening``."""
        for node in nodes:
            impl = self.impls[node.id]
            if not screens(impl):
                continue
            data = node.inputs[0]
            source = self.impls.get(data.source.id)
            if not isinstance(source, Refilling):
                raise ArgumentError(
                    f"{node.name}: on_error='skip' needs its input to come straight from a "
                    f"reader (fn.readers.file), which replaces each skipped sample with its "
                    f"next one; here the input comes from {data.source.name}. Decode the "
                    f"reader's output directly, or use on_error='raise'"
                )
            source.attach_screen(data.index, impl.name, impl.screen)

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

    def states(self) -> dict[str, Any]:
        """Every reader's position (see ``SourceOperator.get_state``)."""
        return {name: reader.get_state() for name, reader in self.readers().items()}

    def set_states(self, states: dict[str, Any]) -> None:
        readers = self.readers()
        for name, state in states.items():
            readers[name].set_state(state)

    def read(self, iteration: int, batch_size: int, partial: bool | str = False) -> ReadResult:
        """Run the operators that make batches out of nothing (readers, external sources) for
        one iteration. Calls must come in iteration order."""
        notes = IterationNotes()
        ctx = self.engine.context(iteration, batch_size, partial, notes)
        values: dict[DataNode, TensorList] = {}
        sizes: dict[str, int] = {}
        for node in self.producers:
            impl = self.impls[node.id]
            outs = self.engine.run_node(node, impl, ctx, [], {}, self.kinds[node.id])
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
        return ReadResult(values, size, self.states(), notes)

    def compute(
        self,
        iteration: int,
        batch_size: int,
        values: dict[DataNode, TensorList],
        notes: IterationNotes | None = None,
        only: set[int] | None = None,
        keep_all: bool = False,
        keys: np.ndarray | None = None,
    ) -> dict[DataNode, TensorList]:
        """Run every other operator of one iteration on the sources' ``values``. Safe to call
        for several iterations at once from different threads: operators keep no state
        between iterations (Python operators guard what they share themselves).

        ``only``: ids of the operators to run again; every other operator's outputs are taken
        from ``values`` (the viewer's slider moves recompute what follows a changed function).
        ``keep_all``: return every node's batch, the chains' transient ones too.
        ``keys``: one key per sample that its random streams are keyed by instead of its index
        in the batch (``Pipeline.run_keyed``).
        """
        whole = self.engine.context(iteration, batch_size, False, notes)
        if keys is not None:
            if len(keys) != batch_size:
                raise GraphError(
                    f"run_keyed(): {len(keys)} sample ids for a batch of {batch_size} samples"
                )
            whole = whole.narrowed(keys)
        values = dict(values)
        generation = self.engine.generation
        samples = ScopeSamples(batch_size, values.__getitem__, keys)
        for step in self.steps:
            for part in self._parts(step, values, only):
                if self.engine.generation != generation:
                    raise CancelledError(f"iteration {iteration} was abandoned (cancel())")
                # The samples of the part's conditional scope (all of them outside any `if`).
                ctx = whole.narrowed(samples.ids(part[0].scope))
                if len(part) > 1:
                    transient = frozenset() if keep_all else self._chain_transient(step, part)
                    values.update(
                        self.engine.run_chain(part, self.impls, ctx, values, self.kinds, transient)
                    )
                    continue
                node = part[0]
                inputs = [values[d] for d in node.inputs]
                arg_inputs = {k: values[d] for k, d in node.arg_nodes.items()}
                outs = self.engine.run_node(
                    node, self.impls[node.id], ctx, inputs, arg_inputs, self.kinds[node.id]
                )
                values.update(zip(node.outputs, outs, strict=True))
        return values

    def _chain_transient(
        self, step: list[OperatorNode], part: list[OperatorNode]
    ) -> frozenset[DataNode]:
        """The transient outputs of ``part`` of the chain ``step``: those whose readers all
        run in this part (a part split off by a dense batch reads from outside)."""
        transient = self.transient.get(step[0].id, frozenset())
        if len(part) == len(step):
            return transient
        ids = {n.id for n in part}
        later = [n for n in step if n.id not in ids]
        needed = {d for n in later for d in n.reads()}
        return frozenset(d for d in transient if d.source.id in ids and d not in needed)

    def _parts(
        self,
        step: list[OperatorNode],
        values: dict[DataNode, TensorList],
        only: set[int] | None,
    ) -> list[list[OperatorNode]]:
        """A step as it runs on these batches: without the nodes ``only`` leaves out, and a
        node whose batch kernel takes a dense input batch on its own (the kernel does the
        batch at once); what is left of a chain stays a chain where the batch sizes agree."""
        nodes = [n for n in step if only is None or n.id in only]
        if len(nodes) < 2:
            return [[n] for n in nodes]
        parts: list[list[OperatorNode]] = [[]]
        for node in nodes:
            impl = self.impls[node.id]
            dense = (
                any(d in values and values[d].dense is not None for d in node.inputs)
                and getattr(impl, f"{impl.device}_batch", None) is not None
            )
            if dense:
                parts += [[node], []]
            else:
                parts[-1].append(node)
        out = []
        for part in parts:
            outside = [values[d] for n in part for d in n.inputs if d in values]
            if len(part) > 1 and len({len(b) for b in outside}) > 1:
                out += [[n] for n in part]  # different batch sizes: node by node, as before
            elif part:
                out.append(part)
        return out

    def run(
        self,
        iteration: int,
        batch_size: int,
        partial: bool | str = False,
        keys: np.ndarray | None = None,
    ) -> tuple[dict[DataNode, TensorList], IterationNotes]:
        """Compute one iteration: the batch of every node output that was run, and its notes
        (``keys``: see ``compute``)."""
        read = self.read(iteration, batch_size, partial)
        values = self.compute(iteration, read.size, read.values, read.notes, keys=keys)
        return values, read.notes
