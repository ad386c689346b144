"""Debug mode: the pipeline's definition runs eagerly on every ``run()``.

``Pipeline(..., debug=True)`` (or ``@pipeline_def(debug=True)``) does not trace the definition
once; it calls it again for each iteration, and every operator call computes its batch on the
spot. What the definition gets back from ``fn.resize(...)`` is the same ``DataNode`` as in a
normal pipeline, holding its batch: ``print(node)`` describes it, ``node.get()`` returns the
TensorList, and any Python (``print``, ``if``, NumPy on ``node.get().as_array()``,
``breakpoint()``) can run between operators. NumPy arrays, lists of arrays and torch tensors may
be given to operators as inputs.

Same answers as the normal pipeline, bit for bit, by construction:

- the same kernels run on the same inputs, with the same thread pool;
- operator ``k`` of an iteration (the k-th operator call of the definition, counted as the
  tracer counts them: transfers and arithmetic included, constants not) gets the seed the
  traced graph gives its k-th node, ``operator_seed(pipeline_seed, k)``, unless it was given
  ``seed=``; random values are keyed by (that seed, iteration, sample);
- operators with state (readers) are created once, on the first iteration, and kept by their
  call position, so they go on through their epochs as in the graph.

The rule for users: keep the sequence of operator calls the same from one iteration to the
next (an ``if`` that skips an operator shifts the numbering of those after it, and so their
random streams). Unlike the normal pipeline, debug mode runs unused branches too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import AugkitError, GraphError, OperatorError
from augkit.executor import Executor, Timings
from augkit.graph import DataNode, OperatorNode
from augkit.operators.base import OperatorImpl, RunContext
from augkit.operators.registry import REGISTRY
from augkit.random import operator_seed
from augkit.tensors import TensorList


def as_batch(value: Any) -> TensorList:
    """A TensorList from what a user may hand an operator in debug mode: a TensorList, a
    NumPy array or torch tensor (its first axis is the batch), or a list of arrays/tensors."""
    if isinstance(value, TensorList):
        samples = value._samples
        if not any(isinstance(s, np.ndarray) and s.flags.writeable for s in samples):
            return value  # the pipeline's own (read-only) data: no copy
        # A TensorList the user made of their own arrays: the pipeline gets read-only copies.
        return TensorList([_read_only(s) for s in samples], value.layout(), value._source_info)
    if isinstance(value, np.ndarray) or backend.is_gpu_array(value):
        samples = list(value)
    elif type(value).__module__.startswith("torch"):
        samples = [t.detach().cpu().numpy() for t in value]
    elif isinstance(value, (list, tuple)):
        samples = [
            s.detach().cpu().numpy() if type(s).__module__.startswith("torch") else np.asarray(s)
            for s in value
        ]
    else:
        raise TypeError(
            f"cannot use a {type(value).__name__} as an operator input: give a NumPy array "
            f"(first axis = batch), a list of arrays, a torch tensor or a TensorList"
        )
    return TensorList([_read_only(s) for s in samples])


def _read_only(sample: Any) -> Any:
    if isinstance(sample, np.ndarray):
        sample = np.array(sample)  # the user keeps their array; the pipeline gets its own
        sample.flags.writeable = False
    return sample


class DebugSession:
    """Runs each operator node as it is created (see the module docstring).

    It stands where the tracer's node list stands (``graph.tracing``): ``append(node)`` is
    called for each new node and computes its batch at once.
    """

    def __init__(self, executor: Executor, seed: int, batch_size: int, timings: Timings) -> None:
        self._executor = executor
        self._seed = seed
        self._batch_size = batch_size
        self._timings = timings
        self._impls: dict[int, OperatorImpl] = {}
        self._position = 0
        self._iteration = 0
        self._partial = False
        self._iteration_batch: int | None = None
        # node id -> call position of the first node of a multiple-input-set call, whose seed
        # the other nodes of that call share (as the traced graph does).
        self._group_positions: dict[int, int] = {}
        self.nodes: list[DataNode] = []  # every operator output of this iteration, in order
        self._constants: list[DataNode] = []

    def begin(self, iteration: int, partial: bool) -> None:
        self.release()
        self._position = 0
        self._iteration = iteration
        self._partial = partial
        self._iteration_batch = None

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

    def readers(self) -> dict[str, Any]:
        return {impl.name: impl for impl in self._impls.values() if impl.is_source}

    def constant(self, value: Any) -> DataNode:
        """A node holding a batch the user gave as an operator input."""
        node = OperatorNode(REGISTRY["_constant"], "cpu", {}, {}, [], record=False)
        data = node.outputs[0]
        data.value = as_batch(value)
        self._constants.append(data)
        return data

    def append(self, node: OperatorNode) -> None:
        position = self._position
        self._position += 1
        group = node.seed_group if node.seed_group != node.id else None
        impl = self._impl(node, position, group)
        name = impl.name
        ctx = RunContext(
            self._iteration,
            self._iteration_batch or self._batch_size,
            self._executor.map,
            self._executor.device_id,
            self._partial,
            self._executor.workers,
            self._executor.py_num_workers,
        )
        inputs = [d.value for d in node.inputs]
        arg_inputs = {k: d.value for k, d in node.arg_nodes.items()}
        for batch in (*inputs, *arg_inputs.values()):
            if batch is None:
                raise GraphError(f"{node.name}: an input comes from a node of another pipeline")
        samples = len(inputs[0]) if inputs and not impl.produces_batch else ctx.batch_size
        for key, batch in arg_inputs.items():
            if len(batch) != samples:  # as the executor checks it (else an IndexError)
                raise OperatorError(
                    f"argument '{key}' has {len(batch)} values, but the batch has {samples} "
                    f"samples",
                    operator=name,
                )
        start = time.perf_counter()
        try:
            outs = impl.run(ctx, [] if impl.produces_batch else inputs, arg_inputs)
        except (AugkitError, StopIteration):
            raise
        except Exception as exc:
            raise OperatorError(f"{type(exc).__name__}: {exc}", operator=name) from exc
        self._timings.add(name, node.schema.class_name, time.perf_counter() - start)
        if impl.produces_batch and outs and self._iteration_batch is None:
            self._iteration_batch = len(outs[0])
        for data, batch in zip(node.outputs, outs, strict=True):
            data.value = batch
        if getattr(impl, "skips", False) and outs[0]._decoded is not None:
            self._refill(node, impl, ctx, outs[0])
        self.nodes.extend(node.outputs)

    def _refill(self, node: OperatorNode, impl: Any, ctx: RunContext, out: TensorList) -> None:
        """``on_error="skip"`` in debug mode: the decoder left samples out of a batch its
        reader had already delivered, so the reader replaces them now with its next good
        samples, and the reader's outputs (labels too) and the decoder's become the batches
        the normal pipeline gives. Outside a reader (an array given as input, eager calls)
        the batch stays shorter, and the skips are still reported."""
        data = node.inputs[0]
        reader = next(
            (r for r in self._impls.values() if r.name == data.source.name and r.is_source),
            None,
        )
        if reader is None or not hasattr(reader, "refill") or data.index != 0:
            return
        source = data.source
        batches = reader.refill(
            ctx,
            [d.value for d in source.outputs],
            impl.name,
            out._decoded,
            impl.try_decode,
            out._skipped,
        )
        for output, batch in zip(source.outputs, batches, strict=True):
            output.value = batch
        node.outputs[0].value = impl.run(ctx, [batches[data.index]], {})[0]

    def _impl(self, node: OperatorNode, position: int, group: int | None) -> OperatorImpl:
        impl = self._impls.get(position)
        if impl is None or impl.schema is not node.schema or impl.args != node.args:
            own = node.args.get("seed", -1)
            ordinal = self._group_positions.get(group, position) if group is not None else position
            seed = own if own != -1 else operator_seed(self._seed, ordinal)
            impl = node.schema.impl(
                node.schema, node.args, node.name, seed, node.device, len(node.inputs)
            )
            self._impls[position] = impl
        # Nodes are made anew each iteration; the operator keeps its first name, so that
        # errors, profile() and the viewer name it the same way every time.
        node.name = impl.name
        self._group_positions.setdefault(node.id, position)
        return impl


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


def outputs_of(values: Sequence[DataNode]) -> tuple[TensorList, ...]:
    batches = []
    for node in values:
        if node.value is None:
            raise GraphError(f"output {node.name} has no batch: it was not computed in this run")
        batches.append(node.value)
    return tuple(batches)
