"""Debug mode: the pipeline's definition runs eagerly on every ``run()``.

``Pipeline(..., debug=True)`` (or ``@pipeline_def(debug=True)``) does not trace the definition
once; it calls it again for each iteration, and every operator call computes its batch on the
spot. What the definition gets back from ``fn.resize(...)`` is the same ``DataNode`` as in a
normal pipeline, holding its batch: ``print(node)`` describes it, ``node.get()`` returns the
TensorList, and any Python (``print``, ``if``, NumPy on ``node.get().as_array()``,
``breakpoint()``) can run between operators. NumPy arrays, lists of arrays and torch tensors may
be given to operators as inputs.

Same answers as the normal pipeline, bit for bit, by construction:

- every node runs through the same execution core (``augkit.core.Engine.run_node``): the same
  kernels on the same inputs, with the same thread pool, the same data kinds;
- operator ``k`` of an iteration (the k-th operator call of the definition, counted as the
  tracer counts them: arithmetic included, constants and transfers not) gets the seed the
  traced graph gives its k-th node, ``operator_seed(pipeline_seed, k)``, unless it was given
  ``seed=``, and its streams are keyed by the pipeline's shard (its first reader's
  ``shard_id``). Random values are keyed by (that seed, shard, iteration, sample);
- operators with state (readers) are created once, on the first iteration, and kept by their
  call position, so they go on through their epochs as in the graph;
- devices follow the normal pipeline's rules: DALI's (GPU data makes an operator with a GPU
  kernel run on the GPU; a CPU-only one refuses it) in the operator call itself, and the
  device rule of build (``backend.check_device``) on each call, with the pipeline's
  ``device_id`` (``DebugSession.device_id``). Batches handed to operators keep their device.

The rule for users: keep the sequence of operator calls the same from one iteration to the
next (a Python ``if`` that skips an operator shifts the numbering of those after it, and so
their random streams). With ``enable_conditionals=True`` an ``if`` on a DataNode is the normal
pipeline's: both branches are defined on every iteration, each node runs at once on the
samples of its branch (``augkit.scopes``: the scope's samples come from the selector's values),
and the splits and merges take no position, so the numbers stay the normal pipeline's.

Trap: the shard is known only once the first reader is made. When an operator that draws
comes before a reader with ``shard_id`` other than 0 in the definition, the first iteration is
run again once the shard is known (so a Python function with side effects runs twice for it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.core import Engine, make_impl
from augkit.errors import GraphError
from augkit.graph import DataNode, OperatorNode, tracing
from augkit.kinds import Kind
from augkit.operators.base import IterationNotes, OperatorImpl, SourceOperator
from augkit.operators.registry import REGISTRY, OutputSpec
from augkit.operators.screening import Refilling, Rejected, screens
from augkit.runners import Delivery
from augkit.scopes import ScopeSamples
from augkit.static_checks import check_inputs, input_specs_of, kinds_of, output_specs
from augkit.tensors import TensorList


def as_batch(value: Any) -> TensorList:
    """A TensorList from what a user may hand an operator in debug mode: a TensorList, a
    NumPy array or torch tensor (its first axis is the batch), or a list of arrays/tensors."""
    if isinstance(value, TensorList):
        samples = value.samples
        if not any(isinstance(s, np.ndarray) and s.flags.writeable for s in samples):
            return value  # the pipeline's own (read-only) data: no copy
        # A TensorList the user made of their own arrays: the pipeline gets read-only copies.
        return TensorList(
            [_read_only(s) for s in samples], value.layout(), value.sources, kind=value.kind
        )
    if isinstance(value, np.ndarray) or backend.is_gpu_array(value):
        samples = list(value)
    elif type(value).__module__.startswith("torch"):
        samples = [t.detach().cpu().numpy() for t in value]
    elif isinstance(value, (list, tuple)):
        samples = [
            s.detach().cpu().numpy()
            if type(s).__module__.startswith("torch")
            else s
            if backend.is_gpu_array(s)  # GPU data stays there (TensorList.device says "gpu")
            else np.asarray(s)
            for s in value
        ]
    else:
        raise TypeError(
            f"cannot use a {type(value).__name__} as an operator input: give a NumPy array "
            f"(first axis = batch), a list of arrays, a torch tensor or a TensorList"
        )
    return TensorList([_read_only(s) for s in samples])


def _value_of(data: DataNode) -> TensorList:
    return data.value


def _read_only(sample: Any) -> Any:
    if isinstance(sample, np.ndarray):
        sample = np.array(sample)  # the user keeps their array; the pipeline gets its own
        sample.flags.writeable = False
    return sample


class DebugSession:
    """Runs each operator node as it is created (see the module docstring).

    It stands where the tracer's node list stands (``graph.tracing``): ``append(node)`` is
    called for each new node and computes its batch at once, through ``engine.run_node``.
    """

    def __init__(self, engine: Engine, seed: int, batch_size: int, bounded: bool = True) -> None:
        self.engine = engine
        self._bounded = bounded  # False for eager calls: no pipeline batch size
        self._seed = seed
        self._batch_size = batch_size
        self._impls: dict[int, OperatorImpl] = {}
        self._position = 0
        self._iteration = 0
        self._partial: bool | str = False
        self._iteration_batch: int | None = None
        # node id -> call position of the first node of a multiple-input-set call, whose seed
        # the other nodes of that call share (as the traced graph does).
        self._group_positions: dict[int, int] = {}
        self._kinds: dict[int, list[Kind]] = {}  # this iteration's nodes' output kinds
        self._specs: dict[DataNode, OutputSpec | None] = {}  # and their outputs' static specs
        self.nodes: list[DataNode] = []  # every operator output of this iteration, in order
        self._constants: list[DataNode] = []
        self.notes = IterationNotes()
        # The shard (the first reader's shard_id): None until a reader was made. ``redo``:
        # an operator was made before it with shard 0 assumed, and the shard is not 0.
        self.shard: int | None = None
        self._assumed = False
        self.redo = False

    def begin(self, iteration: int, partial: bool | str) -> None:
        self.release()
        self._position = 0
        self._iteration = iteration
        self._partial = partial
        self._iteration_batch = None
        self.notes = IterationNotes()

    def restart(self) -> None:
        """Forget every operator (readers too): the next iteration makes them anew."""
        self._impls.clear()
        self._assumed = self.redo = False

    def release(self) -> None:
        """Let the batches of the nodes made so far go as soon as nothing else holds them.

        A DataNode and its OperatorNode refer to each other (``source``, ``outputs``), so the
        nodes of a finished iteration, with their batches, would otherwise wait for Python's
        cyclic garbage collector: hundreds of MB of images per batch freed in bursts, which
        glibc hands back to the OS and then faults in again (measured on benchmark (b): 38,000
        page faults and ~30 ms per batch). The OperatorNode's ``outputs`` are cut to
        placeholders; a node the user kept still has its batch, name and source.
        """
        for data in (*self.nodes, *self._constants):
            operator = data.source
            operator.outputs = [None] * len(operator.outputs)  # type: ignore[list-item]
        self.nodes = []
        self._constants = []
        self._group_positions.clear()  # ids of this iteration's nodes only
        self._kinds.clear()
        self._specs.clear()

    @property
    def device_id(self) -> int | None:
        """The CUDA device for GPU operators, the device rule's (``backend.check_device``):
        the pipeline's ``device_id`` in debug mode, ``augkit.eager.EAGER_DEVICE_ID`` in eager
        calls (their engine's)."""
        return self.engine.device_id

    def readers(self) -> dict[str, SourceOperator]:
        return {i.name: i for i in self._impls.values() if isinstance(i, SourceOperator)}

    def impls(self) -> list[OperatorImpl]:
        """Every operator made so far, in call order."""
        return [self._impls[k] for k in sorted(self._impls)]

    def constant(self, value: Any) -> DataNode:
        """A node holding a batch the user gave as an operator input, on the batch's device:
        CuPy arrays (or a TensorList of them) are GPU data, so DALI's device rule applies to
        them as to a GPU node's output (an operator with a GPU kernel runs on the GPU; a
        CPU-only one is refused and pointed at ``.cpu()``)."""
        batch = as_batch(value)
        node = OperatorNode(REGISTRY["_constant"], batch.device, {}, {}, [], record=False)
        data = node.outputs[0]
        data.value = batch
        self._constants.append(data)
        return data

    def append(self, node: OperatorNode) -> None:
        if not node.schema.seeded:
            # A branch's split or merge, or a transfer: no seed, no state, not counted (as in
            # the graph).
            impl = make_impl(node, self._seed, 0, self.shard or 0)
        else:
            position = self._position
            self._position += 1
            group = node.seed_group if node.seed_group != node.id else None
            impl = self._impl(node, position, group)
        makes = node.schema.makes_batches
        inputs = [] if makes else [d.value for d in node.inputs]
        arg_inputs = {k: d.value for k, d in node.arg_nodes.items()}
        for batch in (*inputs, *arg_inputs.values()):
            if batch is None:
                raise GraphError(f"{node.name}: an input comes from a node of another pipeline")
        # The specs the traced graph would give these inputs (those of this iteration's
        # nodes), else what the batches say (a user's array): the checks and kinds of build.
        specs = [
            self._specs[d] if d in self._specs else input_specs_of([d.value])[0]
            for d in node.inputs
        ]
        check_inputs(node, specs)
        out_specs = output_specs(node, specs)
        self._specs.update(zip(node.outputs, out_specs, strict=True))
        kinds = self._kinds[node.id] = kinds_of(out_specs)
        ctx = self.engine.context(
            self._iteration,
            self._iteration_batch or self._batch_size,
            self._partial,
            self.notes,
            self._bounded,
        )
        if node.scope is not None:  # an `if` branch: the samples that took it
            ctx = ctx.narrowed(ScopeSamples(ctx.batch_size, _value_of).ids(node.scope))
        outs = self.engine.run_node(node, impl, ctx, inputs, arg_inputs, kinds)
        if makes and outs and self._iteration_batch is None:
            self._iteration_batch = len(outs[0])
        for data, batch in zip(node.outputs, outs, strict=True):
            data.value = batch
        if screens(impl):
            self._refill(node, impl, ctx)
        self.nodes.extend(node.outputs)

    def _refill(self, node: OperatorNode, impl: Any, ctx: Any) -> None:
        """``on_error="skip"`` in debug mode: the operator left samples out of a batch its
        reader had already delivered, so the reader replaces them now with its next good
        samples (``Refilling.refill``), and the reader's outputs (labels too) and the
        operator's become the batches the normal pipeline gives. Outside a reader (an array
        given as input, eager calls) the batch stays shorter, and the skips are still
        reported."""
        values = self.notes.screened.get(impl.name, [])
        data = node.inputs[0]
        source = data.source
        reader = self._impls_by_name().get(source.name)
        if not isinstance(reader, Refilling) or not any(isinstance(v, Rejected) for v in values):
            return
        # The reader reports these (with its name and the files' paths) as it refills.
        self.notes.skipped = [
            s for s in self.notes.skipped if not (s.operator == impl.name and not s.reader)
        ]
        batches = reader.refill(
            ctx, [d.value for d in source.outputs], data.index, impl.name, values, impl.screen
        )
        kinds = self._kinds.get(source.id, [])
        for k, (output, batch) in enumerate(zip(source.outputs, batches, strict=True)):
            output.value = batch.with_kind(kinds[k]) if k < len(kinds) else batch
        node.outputs[0].value = self.engine.run_node(
            node, impl, ctx, [data.value], {}, self._kinds[node.id]
        )[0]

    def _impls_by_name(self) -> dict[str, OperatorImpl]:
        return {impl.name: impl for impl in self._impls.values()}

    def _impl(self, node: OperatorNode, position: int, group: int | None) -> OperatorImpl:
        impl = self._impls.get(position)
        if impl is None or impl.schema is not node.schema or not _same_args(impl.args, node.args):
            if node.schema.role == "reader" and self.shard is None:
                self.shard = int(node.args.get("shard_id", 0) or 0)
                self.redo = self._assumed and self.shard != 0
            if self.shard is None:
                self._assumed = True
            ordinal = self._group_positions.get(group, position) if group is not None else position
            impl = make_impl(node, self._seed, ordinal, self.shard or 0)
            self._impls[position] = impl
        # Nodes are made anew each iteration; the operator keeps its first name, so that
        # errors, profile() and the viewer name it the same way every time.
        node.name = impl.name
        self._group_positions.setdefault(node.id, position)
        return impl


class DebugRunner:
    """The runner of a debug pipeline (``augkit.runners``): the definition runs on every
    ``run()``.

    Args:
        engine: the pipeline's execution core.
        definition: calls the pipeline's definition and returns its outputs (DataNodes).
        seed: the pipeline's seed.
        batch_size: the pipeline's batch size.
    """

    def __init__(
        self,
        engine: Engine,
        definition: Callable[[], Sequence[DataNode]],
        seed: int,
        batch_size: int,
    ) -> None:
        self.engine = engine
        self._definition = definition
        self.session = DebugSession(engine, seed, batch_size)
        self.iteration = 0
        self.last: dict[DataNode, TensorList] = {}
        self._output_names: list[str] = []

    @property
    def readers_known(self) -> bool:
        """Whether the readers exist (they are made by the first ``run()``)."""
        return self.iteration > 0

    def run(self, partial: bool | str, lead: str | None) -> Delivery:
        session = self.session
        states = {name: r.get_state() for name, r in session.readers().items()}
        iteration = self.iteration
        self.iteration += 1
        try:
            outputs = self._run_definition(iteration, partial)
            if session.redo:  # the shard became known after operators that draw: again
                session.restart()
                outputs = self._run_definition(iteration, partial)
        except KeyboardInterrupt:
            self.iteration = iteration
            self.engine.cancel()
            if states:
                for name, reader in session.readers().items():
                    reader.set_state(states.get(name, reader.get_state()))
            else:  # the readers were made in this run: make them again
                session.restart()
            raise
        batches = []
        for node in outputs:
            if node.value is None:
                raise GraphError(
                    f"output {node.name} has no batch: it was not computed in this run"
                )
            batches.append(node.value)
        self.last = {d: d.value for d in session.nodes}
        self._output_names = [node.name for node in outputs]
        return Delivery(tuple(batches), self.last, session.notes)

    def _run_definition(self, iteration: int, partial: bool | str) -> Sequence[DataNode]:
        self.session.begin(iteration, partial)
        with tracing(self.session):  # type: ignore[arg-type]
            return self._definition()

    def readers(self) -> dict[str, SourceOperator]:
        return self.session.readers()

    def reader_state(self, name: str) -> Any:
        return self.session.readers()[name].get_state()

    def rewind(self) -> None:
        """Nothing is computed ahead in debug mode."""

    def reset(self) -> None:
        for impl in self.session.impls():
            if impl.schema.makes_batches:  # readers and external sources
                impl.reset()

    def has_sources(self) -> bool:
        return any(i.schema.role == "source" for i in self.session.impls())

    def source(self, name: str) -> Any:
        from augkit.runners import _source_named

        producers = {i.name: i for i in self.session.impls() if i.schema.makes_batches}
        if not producers and not self.readers_known:
            raise GraphError(
                "in debug mode the external sources exist once run() has run the definition: "
                "feed_input() can feed the second run() on"
            )
        return _source_named(name, producers)

    def close(self, wait: bool = True) -> None:
        self.engine.close(wait)

    def nodes(self) -> dict[str, DataNode]:
        return {d.name: d for d in self.last}

    def value(self, name: str) -> TensorList:
        for node, batch in self.last.items():
            if node.name == name:
                return batch
        known = ", ".join(d.name for d in self.last) or "none yet: call run() first"
        raise GraphError(f"no batch for node {name!r} in the last run (nodes: {known})")

    def operators(self) -> list[OperatorNode]:
        return []  # no graph: the definition makes new nodes on every run

    def output_names(self) -> list[str]:
        return list(self._output_names)

    def rerun(self, changed: Sequence[str] | None) -> tuple[TensorList, ...]:
        raise GraphError("rerun() needs a normal pipeline (debug mode has no graph)")

    def pick(self, picks: dict[str, list[int]]) -> Delivery:
        raise GraphError("pick() needs a normal pipeline (debug mode keeps no graph)")

    def run_keyed(self, keys: Any, iteration: int) -> Delivery:
        raise GraphError("run_keyed() needs a normal pipeline (not debug mode)")

    def set_function(self, name: str, function: Callable[..., Any]) -> None:
        raise GraphError(
            "set_function() needs a normal pipeline (in debug mode, change the definition)"
        )

    def set_arguments(self, name: str, values: dict[str, Any]) -> None:
        raise GraphError(
            "set_arguments() needs a normal pipeline (in debug mode, change the definition)"
        )


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def end_at_user_frame(exc: BaseException) -> None:
    """Cut the frames inside augkit off the end of ``exc``'s traceback, so that it ends at the
    user's line (the definition's operator call) rather than in augkit's argument checks or
    operator machinery. Nothing is cut when no frame outside augkit is found."""
    last_user = None
    tb = exc.__traceback__
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE):
            last_user = tb
        tb = tb.tb_next
    if last_user is not None:
        last_user.tb_next = None


def _same_args(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two operators' arguments are equal (a constant input's NumPy value compares as
    an array: ``==`` on arrays has no single truth value)."""
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
            if not (
                isinstance(value, np.ndarray)
                and isinstance(other, np.ndarray)
                and value.dtype == other.dtype
                and np.array_equal(value, other)
            ):
                return False
        elif value != other:
            return False
    return True
