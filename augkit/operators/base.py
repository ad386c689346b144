"""How an operator runs: the implementation classes every registered operator derives from.

- ``OperatorImpl``: one graph node's operator, built with its checked constant arguments; its
  ``run`` takes the input batches and per-sample argument batches of one iteration and returns
  the output batches.
- ``SampleOperator``: the common case. It only writes ``kernel(*samples, **args)`` for one sample
  (pure: no state, no randomness of its own); the batch loop, the per-sample arguments, the
  thread pool, read-only outputs and error messages that name the sample are shared here.
- ``SourceOperator``: readers, which own a position in a data set and have epochs.

Random operators set ``random = True``: their kernel gets ``rng``, the counter-based stream of
(operator seed, iteration, sample) from ``augkit.random``; no other kernel ever sees randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import ArgumentError, AugkitError, OperatorError
from augkit.operators.registry import OperatorSchema
from augkit.random import sample_rng
from augkit.tensors import TensorList
from augkit.types import DALIDataType


@dataclass
class RunContext:
    """What an operator may know about the iteration it runs in.

    Attributes:
        iteration: how many iterations the pipeline ran before this one (never rewinds).
        batch_size: the number of samples in this iteration's batches.
        map: ``map(fn, n)`` -> ``[fn(0), ..., fn(n - 1)]``, spread over the pipeline's threads;
            the first failure (by sample index) is raised.
        device_id: the pipeline's CUDA device.
        partial: sources stop at the end of the epoch (a smaller last batch) instead of
            filling the batch from the next epoch.
        workers: returns the pipeline's pool of worker processes (started on first call), for
            Python operators that run in processes.
        py_num_workers: the pipeline's ``py_num_workers``.
    """

    iteration: int
    batch_size: int
    map: Callable[[Callable[[int], Any], int], list[Any]] = field(
        default=lambda fn, n: [fn(i) for i in range(n)]
    )
    device_id: int | None = None
    partial: bool = False
    workers: Callable[[], Any] | None = None
    py_num_workers: int = 1


class OperatorImpl:
    """The operator of one graph node. Subclasses override ``run`` (or use SampleOperator).

    ``produces_batch``: the operator makes a batch out of nothing (a reader, an external
    source); such operators run first in an iteration and set its batch size.
    ``is_source``: the operator is a reader, with a position and epochs (a SourceOperator).
    """

    is_source = False
    produces_batch = False

    def __init__(
        self,
        schema: OperatorSchema,
        args: dict[str, Any],
        name: str,
        seed: int,
        device: str,
        num_inputs: int,
    ) -> None:
        self.schema = schema
        self.args = args
        self.name = name
        self.seed = seed
        self.device = device
        self.num_inputs = num_inputs
        self.num_outputs = schema.outputs_for(args)
        self.setup()

    def setup(self) -> None:
        """Checks and preparation that need the bound arguments (run once, at build)."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        raise NotImplementedError

    def label(self) -> str:
        """How errors name this operator."""
        return self.name

    def sample_args(self, arg_inputs: dict[str, TensorList], index: int) -> dict[str, Any]:
        """The constant arguments, overlaid with sample ``index`` of each argument input."""
        if not arg_inputs:
            return self.args
        args = dict(self.args)
        for key, batch in arg_inputs.items():
            value = batch._samples[index]
            try:
                args[key] = self.schema.arguments[key].check(backend.to_cpu(value), self.label())
            except ArgumentError as exc:
                raise OperatorError(
                    str(exc),
                    operator=self.label(),
                    sample_index=index,
                    source_info=batch._source_info[index],
                ) from None
        return args

    def fail(self, message: str, index: int | None, inputs: Sequence[TensorList]) -> OperatorError:
        source = inputs[0]._source_info[index] if inputs and index is not None else ""
        return OperatorError(message, operator=self.label(), sample_index=index, source_info=source)


def finish(array: Any) -> Any:
    """An output sample as the graph keeps it: contiguous and, on the CPU, read-only."""
    if isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        if array.flags.writeable:
            # A view, so that an array the kernel (or user function) still holds stays writable.
            array = array.view()
            array.flags.writeable = False
    return array


class SampleOperator(OperatorImpl):
    """An operator whose work is one pure kernel call per sample.

    Subclasses write one kernel method per device they support, named after it: ``cpu`` (NumPy
    in, NumPy out) and ``gpu`` (CuPy), each ``kernel(self, *samples, **args) -> array | tuple``
    (a kernel written against ``backend.array_module`` can serve both: ``gpu = cpu``); and, where
    the output layout is not the first input's, ``output_layout``.
    """

    random = False

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return inputs[0].layout() if inputs else ""

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        """Arguments worked out once per batch and given to every sample's kernel call (e.g.
        the input's layout); the default is none."""
        return {}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        """Raise ``ValueError`` when an input sample cannot be processed (wrong rank...)."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        n = len(inputs[0]) if inputs else ctx.batch_size
        kernel = getattr(self, self.device)
        per_batch = self.batch_args(inputs) if n else {}

        def one(i: int) -> tuple[Any, ...]:
            args = self.sample_args(arg_inputs, i)
            if per_batch:
                args = {**args, **per_batch}
            samples = [x._samples[i] for x in inputs]
            try:
                for k, (sample, batch) in enumerate(zip(samples, inputs, strict=True)):
                    self.check_input(k, sample, batch.layout())
                if self.random:
                    args = {**args, "rng": sample_rng(self.seed, ctx.iteration, i)}
                out = kernel(*samples, **args)
            except AugkitError:
                raise
            except Exception as exc:
                raise self.fail(f"{type(exc).__name__}: {exc}", i, inputs) from exc
            return out if isinstance(out, tuple) else (out,)

        results = ctx.map(one, n)
        source = inputs[0]._source_info if inputs else None
        return [
            TensorList(
                [finish(r[k]) for r in results],
                self.output_layout(k, inputs),
                source,
                dtype=self.empty_dtype(k),
            )
            for k in range(self.num_outputs)
        ]

    def empty_dtype(self, index: int) -> Any:
        """The dtype of output ``index`` when the batch is empty (no sample to take it from):
        the ``dtype`` argument where the operator has one and it is set."""
        dtype = self.args.get("dtype")
        return dtype.numpy if isinstance(dtype, DALIDataType) else None


class SourceOperator(OperatorImpl):
    """An operator that reads a data set: it has a position, epochs and no inputs."""

    is_source = True
    produces_batch = True

    def next_batch(self, ctx: RunContext, batch_size: int, partial: bool) -> list[TensorList]:
        """The next ``batch_size`` samples; with ``partial`` stop at the end of the epoch."""
        raise NotImplementedError

    def epoch_size(self) -> int:
        raise NotImplementedError

    def left_in_epoch(self, state: Any = None) -> int:
        """Samples not yet delivered in the current epoch (of ``state``, when given)."""
        raise NotImplementedError

    def get_state(self) -> Any:
        """The reader's position, as an immutable value that ``set_state`` restores (the
        prefetching executor reads ahead and rewinds to what the user has consumed)."""
        raise NotImplementedError

    def set_state(self, state: Any) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Move to the start of the next epoch (stay when already at an epoch's start)."""
        raise NotImplementedError

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        return self.next_batch(ctx, ctx.batch_size, partial=ctx.partial)
