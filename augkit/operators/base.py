"""How an operator runs: the implementation classes every registered operator derives from.

- ``OperatorImpl``: one graph node's operator, built with its checked constant arguments; its
  ``run`` takes the input batches and per-sample argument batches of one iteration and returns
  the output batches.
- ``SampleOperator``: the common case. It writes ``kernel(*samples, **args)`` for one sample
  (pure: no state, no randomness of its own); the batch loop, the per-sample arguments, the
  thread pool, read-only outputs and error messages that name the sample are shared here. Where
  a loop over samples is waste (casts, flips, arithmetic on a dense batch), it also writes a
  *batch kernel*, ``cpu_batch(ctx, inputs, arg_inputs)``, which returns the whole batch or
  ``None`` (then the per-sample kernel runs): it must give exactly what the per-sample kernel
  gives.
- ``RandomOperator``: the random operators (``fn.random.*``), the only kernels that see
  randomness: ``draw(streams, **args)`` gets the counter-based streams of the batch's samples
  (``augkit.random.SampleStreams``) and returns all the samples' values at once.
- ``SourceOperator``: readers, which own a position in a data set and have epochs.

The node runner around ``run`` (argument inputs, errors, timings, data kinds) is
``augkit.core``; it is the same for the normal executor, the prefetcher, debug mode and eager.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit.calls import SampleCall, finish, overlay_args
from augkit.errors import AugkitError, OperatorError, SkippedSample
from augkit.kinds import GENERIC, Kind
from augkit.operators.registry import OperatorSchema
from augkit.random import SampleStreams, sample_streams, stream_key
from augkit.tensors import TensorList
from augkit.types import DALIDataType

# RunContext.partial's third value (see there).
HOLES = "holes"


@dataclass
class IterationNotes:
    """What the operators of one iteration tell each other and the pipeline beyond their
    batches (made per iteration by the executor; see ``augkit.operators.screening``).

    Attributes:
        screened: per operator name, the per-sample results that a reader computed on its
            behalf while it read (a skipping decoder's images), so it does not compute them
            again.
        skipped: every sample left out of this iteration's batches, in order; the pipeline
            reports them when it delivers the batch.
    """

    screened: dict[str, list[Any]] = field(default_factory=dict)
    skipped: list[SkippedSample] = field(default_factory=list)


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
            filling the batch from the next epoch; ``HOLES``: they stop there, and a sample
            that a screen (``on_error="skip"``) rejects leaves a hole in the batch instead of
            being replaced by a later one (``Pipeline.run_partial(holes=True)``).
        workers: returns the pipeline's pool of worker processes (started on first call), for
            Python operators that run in processes.
        py_num_workers: the pipeline's ``py_num_workers``.
        notes: this iteration's notes (screened values, skipped samples).
        bounded: ``batch_size`` bounds what a source may give (in a pipeline); False in an
            ``augkit.eager`` call, where there is no pipeline batch size.
        sample_ids: inside a conditional branch (``augkit.scopes``), the indices in the whole
            batch of the samples this batch holds; ``None``: the whole batch (0 .. n-1).
            Random streams are keyed by them (``streams``), so that a sample draws the same
            in a branch as outside it.
    """

    iteration: int
    batch_size: int
    map: Callable[[Callable[[int], Any], int], list[Any]] = field(
        default=lambda fn, n: [fn(i) for i in range(n)]
    )
    device_id: int | None = None
    partial: bool | str = False
    workers: Callable[[], Any] | None = None
    py_num_workers: int = 1
    notes: IterationNotes = field(default_factory=IterationNotes)
    bounded: bool = True
    sample_ids: np.ndarray | None = None

    def streams(self, key: int, n: int) -> SampleStreams:
        """The random streams of this batch's ``n`` samples for an operator of stream key
        ``key`` (keyed by the samples' indices in the whole batch)."""
        ids = self.sample_ids
        if ids is None or len(ids) != n:
            return sample_streams(key, self.iteration, n)
        return SampleStreams(key, self.iteration, ids)

    def narrowed(self, ids: np.ndarray | None) -> RunContext:
        """This iteration's context for the samples ``ids`` of the whole batch (a
        conditional branch); itself for ``None``."""
        if ids is None:
            return self
        return dataclasses.replace(self, batch_size=len(ids), sample_ids=ids)


class OperatorImpl:
    """The operator of one graph node. Subclasses override ``run`` (or use SampleOperator).

    Args:
        schema, args, name, device, num_inputs: the node's.
        seed: the operator's seed (``augkit.random``: from the pipeline seed and its creation
            order, or its own ``seed=``).
        shard: the pipeline's shard (its first reader's ``shard_id``): the random streams are
            keyed by it, so that shards draw different augmentations.
    """

    def __init__(
        self,
        schema: OperatorSchema,
        args: dict[str, Any],
        name: str,
        seed: int,
        device: str,
        num_inputs: int,
        shard: int = 0,
    ) -> None:
        self.schema = schema
        self.args = args
        self.name = name
        self.seed = seed
        self.shard = shard
        self.device = device
        self.num_inputs = num_inputs
        self.num_outputs = schema.outputs_for(args, num_inputs)
        self.setup()

    companions = 0
    """Trailing inputs that are other input sets' first inputs (``OperatorNode.companions``;
    only operators that move targets with images use them: ``geometric/targets.py``)."""
    moves_geometry = False
    """Whether the operator moves pixels or coordinates (a crop, a flip, a warp, a box
    operator), so that targets computed before it no longer fit its output without it (the
    viewer's overlays, ``augkit.overlay_links``). Operators with target rules in their kernel
    table move them (``OperatorSchema.moves_geometry``); others that move say so here."""
    draws_window = False
    """Whether the operator draws a window its outputs describe (random_bbox_crop: the slice
    that takes its anchor and shape is one transformation with it)."""

    @classmethod
    def keeps_relative_coordinates(cls, given: Iterable[str]) -> bool:
        """Whether, called with the arguments ``given``, the operator leaves coordinates that
        are fractions of the image size right (a resize without a region of interest)."""
        return False

    input_kinds: tuple[str, ...] = ()
    """The kind names the build knows its inputs to have (set by the executor)."""

    def setup(self) -> None:
        """Checks and preparation that need the bound arguments, run once when the pipeline is
        built, on the thread that builds it: import here what the kernels need (a module
        imported lazily on a pool thread can race with a user's own import of it)."""

    def reset(self) -> None:
        """Start the next epoch (``Pipeline.reset()``): readers and external sources with
        epochs override it; other operators keep no state."""

    @functools.cached_property
    def stream_key(self) -> int:
        """The key of this operator's random streams (``augkit.random.stream_key``)."""
        return stream_key(self.seed, self.shard)

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        raise NotImplementedError

    def label(self) -> str:
        """How errors name this operator."""
        return self.name

    def sample_args(self, arg_inputs: dict[str, TensorList], index: int) -> dict[str, Any]:
        """The constant arguments, overlaid with sample ``index`` of each argument input
        (``augkit.calls.overlay_args``)."""
        return overlay_args(self, arg_inputs, index)

    def empty_dtype(self, index: int) -> Any:
        """The dtype of output ``index`` when the batch is empty (no sample to take it from):
        the ``dtype`` argument where the operator has one and it is set."""
        dtype = self.args.get("dtype")
        return dtype.numpy if isinstance(dtype, DALIDataType) else None

    def fail(self, message: str, index: int | None, inputs: Sequence[TensorList]) -> OperatorError:
        source = inputs[0].sources[index] if inputs and index is not None else ""
        return OperatorError(message, operator=self.label(), sample_index=index, source_info=source)


def dense_batch(inputs: Sequence[TensorList]) -> Any:
    """The one array of a dense batch (``TensorList.from_array``), or None: what batch kernels
    work on."""
    return inputs[0].dense if inputs and inputs[0].dense is not None else None


ANY_KIND = "*"
"""A kernel table's kind for "any kind the operator's inputs accept" (its image kernel)."""

DEVICES = ("cpu", "gpu", "mixed")  # "mixed": a decoder reading on the CPU, decoding on the GPU


@dataclass(frozen=True)
class Given:
    """What an entry of a kernel table is given for one batch: the node's own ``inputs``, its
    ``companions`` (other input sets' first inputs, ``OperatorImpl.companions``), its
    ``arg_inputs`` and ``kind``, the data kind of its first input: a kernel is told the kind
    it runs on."""

    inputs: list[TensorList]
    companions: list[TensorList]
    arg_inputs: dict[str, TensorList]
    kind: Kind


Kernel = Callable[[Any, RunContext, Given], list[TensorList]]
"""An entry of a kernel table: ``kernel(impl, ctx, given) -> output batches``."""


_TABLES: dict[type, dict[tuple[str, str], Kernel]] = {}


def kernel_table(cls: type[SampleOperator]) -> dict[tuple[str, str], Kernel]:
    """``cls.kernel_table()``, worked out once per operator class."""
    table = _TABLES.get(cls)
    if table is None:
        table = _TABLES[cls] = dict(cls.kernel_table())
    return table


class SampleOperator(OperatorImpl):
    """An operator whose work is one pure kernel call per sample.

    Subclasses write one kernel method per device they support, named after it: ``cpu`` (NumPy
    in, NumPy out) and ``gpu`` (CuPy), each ``kernel(self, *samples, **args) -> array | tuple``
    (a kernel written against ``backend.array_module`` can serve both: ``gpu = cpu``); where
    the output layout is not the first input's, ``output_layout``; and, optionally, a batch
    kernel ``cpu_batch`` / ``gpu_batch`` (see the module docstring).
    """

    random = False
    """A kernel that draws (a random crop, noise): it gets ``rng``, a NumPy Generator seeded
    from the sample's stream (``SampleStreams.generator``)."""

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return inputs[0].layout() if inputs else ""

    def chainable(self) -> bool:
        """Whether the executor may run this node in a chain of per-sample nodes, sample by
        sample (``augkit.core.Engine.run_chain``): its work is this class's per-sample loop.
        (A batch kernel declines what is not a dense batch; a node given a dense batch runs
        on its own.) Only a node whose kernel for its input's kind (as the build knows it) is
        the image kernel, without companions."""
        if self.device != "cpu" or self.companions or type(self).run is not SampleOperator.run:
            return False
        kind = self.input_kinds[0] if self.input_kinds else ANY_KIND
        return self.kernel(kind) is SampleOperator.run_samples

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        """Arguments worked out once per batch and given to every sample's kernel call (e.g.
        the input's layout); the default is none."""
        return {}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        """Raise ``ValueError`` when an input sample cannot be processed (wrong rank...)."""

    @classmethod
    def kernel_table(cls) -> dict[tuple[str, str], Kernel]:
        """The operator's kernels by (device, kind name): how a batch of that kind runs on
        that device. Here: the image kernel (``cpu``/``gpu`` with the optional batch kernel,
        ``run_samples``) for every kind the inputs accept (``ANY_KIND``), on each device the
        class writes a kernel for. Geometric operators add their rules for masks, boxes,
        keypoints, vertices, labels and polygons (``geometric/targets.py``); the registry
        reads the table (``OperatorSchema.kernel_kinds``)."""
        return {(d, ANY_KIND): cls.run_samples for d in DEVICES if callable(getattr(cls, d, None))}

    def kernel(self, kind: str) -> Kernel:
        """The kernel for a batch of ``kind`` on this node's device: the table's entry for
        the kind, else its entry for any kind."""
        table = kernel_table(type(self))
        found = table.get((self.device, kind)) or table.get((self.device, ANY_KIND))
        if found is None:
            raise OperatorError(
                f"has no kernel for {kind} data on the {self.device.upper()}",
                operator=self.label(),
            )
        return found

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        """Run the kernel of the table for the first input's kind (``kernel``)."""
        own = len(inputs) - self.companions
        given = Given(
            list(inputs[:own]),
            list(inputs[own:]),
            arg_inputs,
            inputs[0].kind if inputs else GENERIC,
        )
        return self.kernel(given.kind.name)(self, ctx, given)

    def run_samples(self, ctx: RunContext, given: Given) -> list[TensorList]:
        """The image kernel on the node's own inputs: the batch kernel where there is one and
        it takes the batch, else the per-sample kernel through one ``SampleCall``."""
        inputs, arg_inputs = given.inputs, given.arg_inputs
        batch_kernel = getattr(self, f"{self.device}_batch", None)
        if batch_kernel is not None:
            try:
                outs = batch_kernel(ctx, inputs, arg_inputs)
            except AugkitError:
                raise
            except Exception as exc:
                raise self.fail(f"{type(exc).__name__}: {exc}", None, inputs) from exc
            if outs is not None:
                return outs
        call = SampleCall.of(self, ctx, inputs, arg_inputs)
        columns = [x.samples for x in inputs]
        results = ctx.map(lambda i: call(i, [c[i] for c in columns]), call.n)
        return self.outputs_of(results, inputs, finished=True)

    def outputs_of(
        self, results: list[tuple[Any, ...]], inputs: Sequence[TensorList], finished: bool = False
    ) -> list[TensorList]:
        """The output batches of per-sample ``results`` (one tuple of outputs per sample),
        with the outputs' layouts and the first input's ``source_info``; ``finished``: the
        results are already (``SampleCall`` finishes what it returns)."""
        source = inputs[0].sources if inputs else None
        return [
            TensorList(
                [r[k] for r in results] if finished else [finish(r[k]) for r in results],
                self.output_layout(k, inputs),
                source,
                dtype=self.empty_dtype(k),
            )
            for k in range(self.num_outputs)
        ]

    def dense_output(self, array: Any, inputs: Sequence[TensorList], index: int = 0) -> TensorList:
        """What a batch kernel returns for output ``index``: ``array`` (first axis: the batch)
        as a read-only dense batch with this operator's layout and the input's sources."""
        source = inputs[0].sources if inputs else None
        return TensorList.from_array(finish(array), self.output_layout(index, inputs), source)


def per_sample_column(
    impl: OperatorImpl, arg_inputs: dict[str, TensorList], key: str, n: int
) -> np.ndarray | None:
    """Argument ``key`` as one checked value per sample (an array of ``n``), when it is an
    argument input; ``None`` when it is a constant (then ``impl.args[key]`` holds it)."""
    batch = arg_inputs.get(key)
    if batch is None:
        return None
    return np.array([impl.sample_args({key: batch}, i)[key] for i in range(n)])


class RandomOperator(OperatorImpl):
    """An operator that draws per-sample values (``fn.random.*``).

    Subclasses write ``draw(self, streams, args, columns) -> array``: ``streams`` are the
    sample streams of the batch (``len(streams)`` samples), ``args`` the constant arguments and
    ``columns`` the argument inputs, one checked value per sample (arrays of ``n``); the result
    has the samples along its first axis. Every sample's values depend only on its own stream,
    so a sample draws the same whatever the other samples of the batch are.
    """

    def draw(
        self, streams: SampleStreams, args: dict[str, Any], columns: dict[str, np.ndarray]
    ) -> np.ndarray:
        raise NotImplementedError

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        n = len(inputs[0]) if inputs else ctx.batch_size
        columns = {key: per_sample_column(self, arg_inputs, key, n) for key in arg_inputs}
        streams = ctx.streams(self.stream_key, n)
        try:
            values = self.draw(streams, self.args, columns)  # type: ignore[arg-type]
        except AugkitError:
            raise
        except Exception as exc:
            raise self.fail(f"{type(exc).__name__}: {exc}", None, inputs) from exc
        source = inputs[0].sources if inputs else None
        return [TensorList.from_array(finish(values), "", source)]


class SourceOperator(OperatorImpl):
    """An operator that reads a data set: it has a position, epochs and no inputs."""

    def next_batch(self, ctx: RunContext, batch_size: int, partial: bool | str) -> list[TensorList]:
        """The next ``batch_size`` samples; with ``partial`` stop at the end of the epoch."""
        raise NotImplementedError

    def epoch_size(self) -> int:
        raise NotImplementedError

    def left_in_epoch(self, state: Any = None) -> int:
        """Samples not yet delivered in the current epoch (of ``state``, when given)."""
        raise NotImplementedError

    def position(self, state: Any = None) -> Any:
        """The ``EpochPosition`` after the last batch (of ``state``, when given)."""
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
