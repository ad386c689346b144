"""``fn.external_source``: data from Python into the graph, as DALI 2.x's external source takes
it: from a callable (asked once per batch, or once per sample with ``batch=False``), an iterable
or a generator function, in the pipeline's worker processes with ``parallel=True``, or, with no
``source`` at all, fed by ``Pipeline.feed_input(name, batch)`` before each ``run()``.

The rules (DALI's; see ``nvidia.dali.fn.external_source``, the "Parallel External Source"
tutorial and ``nvidia.dali.types.SampleInfo`` / ``BatchInfo`` in DALI's documentation):

- Batch mode (``batch=True``, the default). A callable is called ``source()``, or, when it has
  a required positional parameter, ``source(iteration)`` (the batch's index within the epoch),
  or ``source(BatchInfo(iteration, epoch_idx))`` with ``batch_info=True``. It returns a batch: a
  list (or tuple) of arrays of one dtype and rank, one array whose first axis is the batch, or a
  ``TensorList``; with ``num_outputs`` (even 1) a tuple of that many batches. A batch may hold
  fewer samples than the pipeline's ``batch_size`` (that iteration's batch is smaller, DALI's
  variable batch size), never more and never none.
- Per-sample mode (``batch=False``). The callable is called ``batch_size`` times per batch, in
  order, with a ``SampleInfo(idx_in_epoch, idx_in_batch, iteration, epoch_idx)`` when it takes a
  parameter; each call returns one sample (with ``num_outputs``, a tuple of one sample per
  output). An iterable gives one sample per ``next()``.
- Iterables and generator functions: ``next()`` per batch (per sample with ``batch=False``); a
  generator function is called to make its generator. ``cycle``: False / "no" (the default):
  the data ends at its end; True / "quiet": it starts again without a word; "raise": its end
  ends the epoch and the next epoch starts it again. Cycling needs data that can start again: an
  iterable such as a list, or a generator function (not a generator or other iterator).
- Epochs. ``StopIteration`` from the source ends the epoch: a batch it cuts short is dropped,
  ``run()`` raises ``StopIteration``, and goes on raising it (without asking the source) until
  ``Pipeline.reset()`` starts the next epoch: ``epoch_idx`` + 1, ``iteration`` and
  ``idx_in_epoch`` from 0.
- ``parallel=True``: the callable runs in the pipeline's ``py_num_workers`` worker processes
  (``augkit.workers``; it travels with cloudpickle, so lambdas and notebook functions work), the
  samples of a batch spread over them, and gives exactly what it gives in this process. DALI's
  restrictions: the callable takes exactly one argument (a ``SampleInfo``, or in batch mode the
  iteration / a ``BatchInfo``), an iterable or a generator function only in batch mode, CPU
  arrays only. ``prefetch_queue_depth`` (the source's own argument, default 1) batches are
  computed together in one round of the workers: the first is delivered, the others by the next
  ``run()`` calls (with ``batch=True`` that is what puts several workers to work).
- No source: ``Pipeline.feed_input(name, batch, layout=None)`` queues one batch for the next
  ``run()``; several can be fed ahead, each ``run()`` takes the oldest. ``repeat_last=True``
  gives the last fed batch again to a ``run()`` before which nothing new was fed.
- What comes out: the samples are copied (the pipeline never sees later changes to the user's
  arrays) and read-only; a batch given as one NumPy array stays one array
  (``TensorList.from_array``), so batch kernels and ``to_torch`` share it. ``layout=`` (one, or
  one per output) is every sample's layout, also for a ``TensorList`` or ``Tensor`` the source
  returns (their own layout is kept only where ``layout`` is not given); ``dtype`` and ``ndim``
  (one, or one per output) are checked. Each output's data kind comes from its layout (an image
  for one with H and W) or from ``kind=`` (augkit only; one for every output, or one per
  output, as ``python_function``'s).

Errors: argument mistakes are ``ArgumentError`` when the operator is made (or, for what only the
whole set of arguments shows, such as ``ops.ExternalSource(parallel=True)`` called later with a
``source``, when the pipeline is built). A fault while running (the source raises, returns
something that is not a batch or a sample, too many samples, a dtype or rank that does not
fit, a worker process dies) is an ``OperatorError`` that names the operator, the source, the
sample (in per-sample mode its ``SampleInfo``) and what was wrong; the pipeline stays usable.

Decisions and traps (where augkit differs from DALI, and why):

- A callable is given the iteration or the ``SampleInfo`` only when it has a *required*
  positional parameter. DALI counts every parameter, so ``lambda b=b: b``, the usual way to
  bind a loop variable, would be called with the iteration number and return it. A callable
  with more than one required positional parameter, a required keyword-only one or ``*args``
  is refused, as in DALI.
- ``reset()`` starts the source's next epoch whenever something of the current one was asked
  for, not only after a ``StopIteration`` as in DALI: augkit's ``reset()`` also moves every
  reader to the start of its next epoch (a ``for`` loop or the viewer ends an epoch early), and
  a source that kept counting would no longer line up with the reader it goes with. Data that
  can start again (``cycle`` set) starts again; other iterables go on where they were (DALI's
  rule: ``iter()`` is called once). An epoch that ended without the source's
  ``StopIteration`` (an iterator's ``size=`` reached, a ``for`` loop left) owes it: when the
  next epoch's first request meets ``StopIteration``, that is the end of the previous epoch met
  late, and the source is asked once more. DALI gets the same from its read-ahead (the batch
  it computes ahead meets the ``StopIteration`` before the iterator's ``reset()``: its
  ``test_stop_iteration_pytorch``), while augkit asks only for the batches ``run()`` needs; an
  iterator that starts over after its end (DALI's examples' ``__next__``) so gives every
  epoch.
- A failed batch is lost, as everywhere in augkit: the next ``run()`` asks for the next
  iteration (the iteration numbers are the pipeline's, counted from the epoch's first batch),
  except after a ``KeyboardInterrupt``, where the same batch is asked for again.
- ``batch`` defaults to True also with ``parallel=True``: DALI's ``fn.external_source`` does
  so, its ``ops.ExternalSource`` switches to per-sample mode; augkit has one schema for both,
  so give ``batch=False`` for a per-sample parallel source.
- ``parallel=True`` does not compute in the background: a pipeline with an external source runs
  synchronously (``augkit.runners``), so the workers compute when ``run()`` needs a batch (and
  ``prefetch_queue_depth`` batches at once). For the same reason an iterable or a generator
  function given ``parallel=True`` is iterated in this process: one worker iterating it, as in
  DALI, would only add the transfer. The source's global random generators are not seeded:
  DALI's rule is that a parallel source computes its data from the ``SampleInfo`` alone.
- The data is copied, so a source may reuse its arrays at once; with ``no_copy=True`` (DALI's
  argument) host arrays are taken as they are, as read-only views (a non-contiguous one is
  still copied): the source must not change them while the pipeline may still read them
  (until the batches of that ``run()`` are no longer used: outputs may be views of them).
  ``no_copy=False`` with ``parallel=True`` is refused, as in DALI.
- ``name`` and ``num_outputs`` go together (DALI refuses it, because there ``name`` is only
  for ``feed_input``; in augkit it names the operator in errors and the viewer).
- ``feed_input`` checks a batch when it is fed, but whether it fits the pipeline's
  ``batch_size`` only when ``run()`` takes it: the operator learns the batch size there. A
  ``layout`` given to ``feed_input`` that differs from the operator's is refused (DALI refuses
  it when the pipeline runs).
- ``Pipeline.run()`` calls a subclass's ``iter_setup()`` (where the ``feed_input`` calls of
  DALI's own tests live) before each iteration, as DALI's does.
- In an ``augkit.eager`` call the batch is what the source gives: eager's ``batch_size=``
  (default 1) bounds nothing there (``RunContext.bounded`` is False), so
  ``eager.external_source(source=lambda: images)`` returns the images.
- Debug mode makes a node's operator again when its arguments change: a source written inside
  the definition (a lambda) is a new object every run, so its epoch (``epoch_idx``, an earlier
  ``StopIteration``) does not carry over; define it outside the definition.
"""

from __future__ import annotations

import collections
import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit import backend, kinds
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.python_function import _describe, _kinds_arg
from augkit.operators.registry import (
    MAX_OUTPUTS,
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    register,
    to_bool,
    to_dtype,
    to_int,
    to_str,
)
from augkit.tensors import Tensor, TensorList
from augkit.types import BatchInfo, DALIDataType, SampleInfo
from augkit.types import to_dtype as dtype_of
from augkit.workers import WorkerError

# What a source is (``_source_kind``).
CALLABLE, ITERABLE, GENERATOR_FUNCTION, FED = "callable", "iterable", "generator function", "fed"
# A worker's answer for a call that raised StopIteration (the end of the data).
_STOP = "stop"


# --- what the source is, and how it is called ------------------------------------------------


def _is_generator_function(source: Any) -> bool:
    """A generator function, a partial of one, or an object whose ``__call__`` is one."""
    if isinstance(source, functools.partial):
        return _is_generator_function(source.func)
    if inspect.isgeneratorfunction(source):
        return True
    if inspect.isfunction(source) or inspect.ismethod(source) or not callable(source):
        return False
    return inspect.isgeneratorfunction(inspect.getattr_static(type(source), "__call__", None))


def _source_kind(source: Any) -> str:
    """``CALLABLE``, ``ITERABLE``, ``GENERATOR_FUNCTION`` or ``FED`` (no source), as DALI sorts
    them: what can be iterated is iterated, even when it can also be called."""
    if source is None:
        return FED
    if _is_generator_function(source):
        return GENERATOR_FUNCTION
    if isinstance(source, Iterable) or (hasattr(source, "__getitem__") and not callable(source)):
        return ITERABLE
    return CALLABLE


def _takes_info(source: Callable[..., Any]) -> bool:
    """Whether a callable source is given the iteration / ``SampleInfo`` / ``BatchInfo``: it has
    one required positional parameter (see the module docstring's traps).

    Raises:
        ValueError: it could never be called that way (two required parameters, ``*args``, a
            required keyword-only parameter).
    """
    try:
        parameters = inspect.signature(source).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called without arguments
        return False
    rule = (
        "a source callable takes no argument, or one (the iteration, a BatchInfo, or with "
        "batch=False a SampleInfo)"
    )
    required = []
    for p in parameters:
        if p.kind is p.VAR_POSITIONAL:
            raise ValueError(f"{rule}; it cannot take *{p.name}")
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            raise ValueError(f"{rule}; it cannot have the required keyword-only parameter {p.name}")
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            required.append(p.name)
    if len(required) > 1:
        raise ValueError(f"{rule}; this one has {len(required)}: {', '.join(required)}")
    return bool(required)


def _cycle_mode(cycle: Any) -> str | None:
    """None (no cycling), "quiet" or "raise"."""
    if cycle is None or cycle is False or cycle == "no":
        return None
    return "raise" if cycle == "raise" else "quiet"


def _per_output(value: Any, n: int) -> list[Any]:
    """One entry per output: a single value is every output's; a list shorter than ``n`` sets
    the first outputs' only (DALI's rule), the rest get None."""
    if isinstance(value, tuple):
        return list(value[:n]) + [None] * (n - len(value))
    return [value] * n


def _check(given: dict[str, Any], complete: bool) -> None:
    """DALI's rules for the arguments given together. ``complete``: ``given`` is every argument
    of the operator (when the pipeline is built); otherwise those of one call (``ops`` objects
    may get ``source`` when called, after the other arguments), and what depends on an argument
    not given yet is left to the build.

    Raises:
        ValueError: with a plain message.
    """
    source: Any = given.get("source")  # any object (None: fed); CALLABLE: a callable
    kind = _source_kind(source)
    batch = given.get("batch", True)
    parallel = given.get("parallel", False)
    n = given.get("num_outputs")
    cycle = given.get("cycle")
    if _cycle_mode(cycle) is not None:
        if kind == CALLABLE:
            raise ValueError(
                f"cycle={cycle!r} needs an iterable or a generator function as source; a "
                f"callable source is asked anew for every batch, so there is nothing to start "
                f"again"
            )
        if kind == ITERABLE and hasattr(source, "__next__"):
            raise ValueError(
                f"cycle={cycle!r} cannot cycle through a generator or another iterator: it "
                f"cannot start again. Pass what it iterates (a list...), or the generator "
                f"function itself"
            )
        if kind == FED and complete:
            raise ValueError(f"cycle={cycle!r} needs a source to cycle through")
    if kind == CALLABLE:
        _takes_info(source)
    if given.get("repeat_last") and source is not None:
        raise ValueError(
            "repeat_last=True is for an external source fed with feed_input(); it cannot be "
            "used together with source"
        )
    if parallel:
        if kind == FED:
            if complete:
                raise ValueError(
                    "parallel=True runs the source in worker processes, so it needs a source "
                    "(feed_input feeds batches from this process)"
                )
        elif kind == CALLABLE and not _takes_info(source):
            raise ValueError(
                "with parallel=True the source callable must take exactly one argument: a "
                "SampleInfo with batch=False, or with batch=True the iteration number (a "
                "BatchInfo with batch_info=True); the worker processes compute each sample "
                "(or batch) from it alone. This one takes no argument"
            )
        elif kind != CALLABLE and not batch:
            what = "an iterable" if kind == ITERABLE else "a generator function"
            raise ValueError(
                f"a parallel external source with {what} must run in batch mode: give "
                f"batch=True, with a source that gives whole batches"
            )
        if given.get("no_copy") is False:
            raise ValueError("no_copy cannot be False with parallel=True (DALI's rule)")
    elif given.get("prefetch_queue_depth") is not None:
        raise ValueError(
            "prefetch_queue_depth is valid only for parallel external sources (parallel=True); "
            "the pipeline's prefetch_queue_depth is an argument of the Pipeline"
        )
    if complete and n is not None and kind == FED:
        raise ValueError(
            "num_outputs is valid only with a source; to feed several batches with "
            "feed_input(), use one external source for each"
        )
    per_output = {k: given.get(k) for k in ("layout", "dtype", "ndim", "kind")}
    if n is not None or complete:  # else num_outputs may still come (an ops object's call)
        outputs = n or 1
        for key, value in per_output.items():
            if isinstance(value, tuple) and len(value) > outputs:
                raise ValueError(
                    f"{key} has {len(value)} entries, but "
                    + (f"num_outputs is {n}" if n else "num_outputs is not given (one output)")
                )
        chosen = per_output["kind"]
        if isinstance(chosen, tuple) and 1 < len(chosen) < outputs:
            raise ValueError(
                f"kind has {len(chosen)} entries, but num_outputs is {n}: give one kind for "
                f"every output, or one per output"
            )
    else:
        outputs = max([len(v) for v in per_output.values() if isinstance(v, tuple)], default=1)
    layouts = _per_output(per_output["layout"] or "", outputs)
    for k, (layout, ndim) in enumerate(
        zip(layouts, _per_output(per_output["ndim"], outputs), strict=True)
    ):
        if layout and ndim is not None and len(layout) != ndim:
            which = f" of output {k}" if outputs > 1 else ""
            raise ValueError(f"layout {layout!r}{which} has {len(layout)} axes, but ndim is {ndim}")


def _validate(given: dict[str, Any]) -> None:
    _check(given, complete=False)


# --- what the source returned, made into arrays -----------------------------------------------


class _BadReturn(TypeError):
    """What a source returned is not what it should have returned (the message says why)."""


def _as_array(value: Any, cpu_only: bool) -> tuple[Any, str]:
    """One sample as an array (NumPy, or CuPy unless ``cpu_only``) and its own layout (that of
    a ``Tensor``; "" for an array)."""
    layout = ""
    if isinstance(value, Tensor):
        layout, value = value.layout(), value._data
    if isinstance(value, TensorList):
        raise _BadReturn("returned a TensorList where one sample was expected")
    if backend.is_gpu_array(value):
        if cpu_only:
            raise _BadReturn(
                "returned a GPU (CuPy) array; a source with parallel=True must return CPU "
                "arrays (NumPy), as in DALI"
            )
        array = value
    else:
        try:
            if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
                value = value.detach().cpu()  # a CUDA tensor is copied to the host
            array = np.asarray(value)
        except Exception as exc:
            hint = (
                " (a list of samples of different shapes where one sample was expected?)"
                if isinstance(value, (list, tuple))
                else f" ({type(exc).__name__}: {exc})"
            )
            raise _BadReturn(
                f"returned {_describe(value)}, which is not an array of numbers{hint}"
            ) from None
    if array.dtype.hasobject:
        raise _BadReturn(f"returned {_describe(value)}, expected an array of numbers")
    try:
        dtype_of(array.dtype)
    except TypeError:
        raise _BadReturn(
            f"returned an array of dtype {array.dtype}, which a pipeline cannot carry; return "
            f"bool, integer (int8-64, uint8-64) or float (float16/32/64) arrays"
        ) from None
    return array, layout


# A batch as the source gave it: the list of its samples, or one array whose first axis is the
# batch (kept whole), with the layout the data carried itself ("" for arrays).
Parts = tuple[Any, str]


def _batch_parts(value: Any, cpu_only: bool) -> Parts:
    if isinstance(value, TensorList):
        if value.dense is not None:
            return _as_array(value.dense, cpu_only)[0], value.layout()
        return [_as_array(s, cpu_only)[0] for s in value.samples], value.layout()
    if isinstance(value, (list, tuple)):
        samples = [_as_array(s, cpu_only) for s in value]
        return [a for a, _ in samples], samples[0][1] if samples else ""
    if isinstance(value, Tensor):
        value = value._data  # its layout is that of the whole batch, not of a sample
    array, _ = _as_array(value, cpu_only)
    if array.ndim == 0:
        raise _BadReturn(
            f"returned {_describe(value)}, a single number, where a batch was expected: give "
            f"a list of samples, or one array whose first axis is the batch"
        )
    return array, ""


def _outputs_of(value: Any, split: bool, n: int, unit: str) -> list[Any]:
    """The source's return split into one item per output: with ``num_outputs`` given (even
    1), a tuple or list of ``n`` items, as in DALI; else the value itself."""
    if not split:
        return [value]
    if not isinstance(value, (tuple, list)):
        raise _BadReturn(
            f"returned {_describe(value)}, expected a tuple of {n} {unit}(s) (num_outputs={n})"
        )
    if len(value) != n:
        raise _BadReturn(f"returned {len(value)} {unit}(s), expected {n} (num_outputs={n})")
    return list(value)


def _sample_parts(value: Any, split: bool, n: int, cpu_only: bool) -> list[tuple[Any, str]]:
    """One call of a per-sample source: (array, own layout) per output."""
    return [_as_array(v, cpu_only) for v in _outputs_of(value, split, n, "sample")]


def _call_in_worker(
    source: Callable[..., Any], batch: bool, split: bool, n: int, args: Any, info: Any
) -> Any:
    """One call of a parallel source in a worker process: its data as arrays (they travel
    through shared memory), or ``_STOP`` for the end of the data."""
    try:
        value = source(info)
    except StopIteration:
        return _STOP
    if batch:
        return [_batch_parts(b, True) for b in _outputs_of(value, split, n, "batch")]
    return _sample_parts(value, split, n, True)


@dataclass
class _Asked:
    """What the source was asked for, as error messages say it."""

    text: str
    samples: Sequence[SampleInfo] = ()

    def of(self, index: int | None) -> str:
        if index is not None and index < len(self.samples):
            return f"asked for {self.samples[index]}"
        return self.text


@dataclass
class _Outcome:
    """One batch computed by the worker processes: its parts per output, the end of the data,
    or the error to raise when it is delivered."""

    parts: list[Parts] | None = None
    stop: bool = False
    error: OperatorError | None = None


# --- the operator ---------------------------------------------------------------------------


class ExternalSource(OperatorImpl):
    """Asks the source for each batch (see the module docstring), or takes what was fed."""

    def setup(self) -> None:
        args = self.args
        try:
            _check(args, complete=True)
        except ValueError as exc:
            raise ArgumentError(f"{self.name}: {exc}") from None
        self.source = args["source"]
        self.kind = _source_kind(self.source)
        self.batch = args["batch"]
        self._split = args.get("num_outputs") is not None
        n = self.num_outputs
        self.layouts = [layout or "" for layout in _per_output(args["layout"], n)]
        self._dtypes = [
            None if d is None or d is DALIDataType.NO_TYPE else d
            for d in _per_output(args["dtype"], n)
        ]
        self._ndims = _per_output(args["ndim"], n)
        self._takes_info = self.kind == CALLABLE and _takes_info(self.source)
        self._cycle = _cycle_mode(args["cycle"])
        self._parallel = bool(args["parallel"]) and self.kind == CALLABLE
        self._depth = args["prefetch_queue_depth"] or 1
        # Worker processes cache the function under this key (one key, one function).
        self._worker_key = f"{self.name}:{id(self.source)}:{id(self)}"
        self.epoch = 0
        self._first: int | None = 0  # the pipeline iteration of the epoch's first batch
        self._asked = False  # something of this epoch was asked for
        self._ended = False  # the source said StopIteration in this epoch
        self._owed_stop = False  # the last epoch ended before the source's StopIteration
        self._iterator: Any = None
        self._ahead: dict[tuple[int, int, int], _Outcome] = {}
        self._fed: collections.deque[TensorList] = collections.deque()
        self._last_fed: TensorList | None = None

    def label(self) -> str:
        source = self.source
        if self.kind != CALLABLE and self.kind != GENERATOR_FUNCTION:
            return self.name
        while isinstance(source, functools.partial):
            source = source.func
        name = getattr(source, "__qualname__", None) or type(source).__name__
        return f"{self.name} (source {name})"

    def reset(self) -> None:
        """Start the next epoch (see the module docstring); nothing happens when nothing of this
        one was asked for yet."""
        if not (self._asked or self._ended):
            return
        self._owed_stop = not self._ended  # see the module docstring
        self.epoch += 1
        self._first = None
        self._asked = self._ended = False
        self._ahead.clear()
        if self._cycle is not None:
            self._iterator = None  # the data starts again

    # --- running --------------------------------------------------------------------------------
    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        if self.kind == FED:
            return [self._take_fed(ctx)]
        if self._ended:
            raise StopIteration
        if self._first is None:
            self._first = ctx.iteration
        first, self._asked = not self._asked, True
        iteration = ctx.iteration - self._first
        try:
            if self._parallel:
                return self._from_workers(ctx, iteration)
            if self.batch:
                return self._one_batch(ctx, iteration)
            return self._sample_by_sample(ctx, iteration)
        except StopIteration:
            if first and self._owed_stop:
                self._owed_stop = False  # the previous epoch's end, met late: ask again
                return self.run(ctx, inputs, arg_inputs)
            self._ended = True
            raise StopIteration from None

    def _batch_argument(self, iteration: int) -> Any:
        return BatchInfo(iteration, self.epoch) if self.args["batch_info"] else iteration

    def _ask(self, argument: Any, index: int | None, asked: _Asked) -> Any:
        """The source's next value (raises StopIteration at the end of its data)."""
        try:
            if self.kind == CALLABLE:
                return self.source(argument) if self._takes_info else self.source()
            return self._next()
        except StopIteration:
            raise
        except (Exception, SystemExit) as exc:
            raise self._fail(
                f"the source raised {type(exc).__name__}: {exc}", index, asked.of(index)
            ) from exc

    def _next(self) -> Any:
        fresh = self._iterator is None
        if fresh:
            self._iterator = iter(self.source() if self.kind == GENERATOR_FUNCTION else self.source)
        try:
            return next(self._iterator)
        except StopIteration:
            if self._cycle is None:
                raise  # the iterator stays at its end
            self._iterator = None
            if self._cycle == "raise" or fresh:  # fresh: there is no data at all
                raise
            return self._next()

    def _one_batch(self, ctx: RunContext, iteration: int) -> list[TensorList]:
        asked = _Asked(f"asked for iteration {iteration} of epoch {self.epoch}")
        value = self._ask(self._batch_argument(iteration), None, asked)
        try:
            outputs = _outputs_of(value, self._split, self.num_outputs, "batch")
            parts = [_batch_parts(v, cpu_only=False) for v in outputs]
        except _BadReturn as exc:
            raise self._fail(str(exc), None, asked.text) from None
        return self._assemble(ctx, parts, asked, owned=False)

    def _sample_by_sample(self, ctx: RunContext, iteration: int) -> list[TensorList]:
        n = ctx.batch_size
        infos = [SampleInfo(iteration * n + i, i, iteration, self.epoch) for i in range(n)]
        asked = _Asked(f"asked for iteration {iteration} of epoch {self.epoch}", infos)
        samples = []
        for i, info in enumerate(infos):
            value = self._ask(info, i, asked)
            try:
                samples.append(_sample_parts(value, self._split, self.num_outputs, False))
            except _BadReturn as exc:
                raise self._fail(str(exc), i, asked.of(i)) from None
        return self._assemble(ctx, _by_output(samples, self.num_outputs), asked, owned=False)

    # --- in worker processes ------------------------------------------------------------------
    def _from_workers(self, ctx: RunContext, iteration: int) -> list[TensorList]:
        key = (self.epoch, iteration, ctx.batch_size)
        outcome = self._ahead.pop(key, None)
        if outcome is None:
            computed = self._compute(ctx, iteration)
            outcome = computed.pop(iteration)
            self._ahead = {(self.epoch, k, ctx.batch_size): o for k, o in computed.items()}
        else:  # batches before this one will not be asked for again
            self._ahead = {k: o for k, o in self._ahead.items() if k[1] > iteration}
        if outcome.stop:
            raise StopIteration
        if outcome.error is not None:
            raise outcome.error
        assert outcome.parts is not None
        return self._assemble(ctx, outcome.parts, self._asked_for(iteration, ctx), owned=True)

    def _asked_for(self, iteration: int, ctx: RunContext) -> _Asked:
        text = f"asked for iteration {iteration} of epoch {self.epoch}"
        if self.batch:
            return _Asked(text)
        n = ctx.batch_size
        return _Asked(
            text, [SampleInfo(iteration * n + i, i, iteration, self.epoch) for i in range(n)]
        )

    def _compute(self, ctx: RunContext, iteration: int) -> dict[int, _Outcome]:
        """Batches ``iteration`` .. ``iteration + prefetch_queue_depth - 1``, in one round of
        the worker processes."""
        iterations = range(iteration, iteration + self._depth)
        asked = [self._asked_for(k, ctx) for k in iterations]
        if self.batch:
            infos: list[Any] = [self._batch_argument(k) for k in iterations]
        else:
            infos = [info for a in asked for info in a.samples]
        per_batch = len(infos) // len(iterations)
        runner = functools.partial(
            _call_in_worker, self.source, self.batch, self._split, self.num_outputs
        )
        assert ctx.workers is not None
        try:
            results = ctx.workers().map(self._worker_key, runner, [((), i) for i in infos])
        except WorkerError as exc:
            running = exc.running
            index, where = None, asked[0].text
            if running is not None and running < len(infos):
                batch = asked[running // per_batch]
                index = None if self.batch else running % per_batch
                where = batch.of(index)
            raise self._fail(f"worker process failed: {exc}", index, where) from None
        outcomes: dict[int, _Outcome] = {}
        for b, k in enumerate(iterations):
            outcomes[k] = self._outcome(results[b * per_batch : (b + 1) * per_batch], asked[b])
        return outcomes

    def _outcome(self, results: list[tuple[bool, Any]], asked: _Asked) -> _Outcome:
        """One batch from the workers' results, judged in sample order, as in this process:
        the first sample that stopped or failed decides."""
        values = []
        for i, (ok, value) in enumerate(results):
            index = None if self.batch else i
            if ok and isinstance(value, str):  # _STOP
                return _Outcome(stop=True)
            if not ok:
                error = value.exception
                if isinstance(error, _BadReturn):
                    return _Outcome(error=self._fail(str(error), index, asked.of(index)))
                if value.traceback:
                    error.add_note(f"In the worker process:\n{value.traceback}")
                failure = self._fail(
                    f"the source raised {type(error).__name__}: {error}", index, asked.of(index)
                )
                failure.__cause__ = error
                return _Outcome(error=failure)
            values.append(value)
        if self.batch:
            return _Outcome(parts=values[0])
        return _Outcome(parts=_by_output(values, self.num_outputs))

    # --- fed batches ----------------------------------------------------------------------------
    def feed(
        self,
        data: Any,
        layout: str | None = None,
        cuda_stream: Any = None,
        use_copy_kernel: bool = False,
        **kwargs: Any,
    ) -> None:
        """Queue ``data`` (one batch) for a later ``run()`` (``Pipeline.feed_input``).

        Raises:
            ArgumentError: this source has a ``source``; a ``layout`` that differs from the
                operator's; an unknown keyword.
            OperatorError: ``data`` is not a batch, or does not fit ``dtype``/``ndim``/layout.
        """
        if kwargs:
            raise ArgumentError(
                f"{self.name}: feed_input() got unknown argument(s) {', '.join(sorted(kwargs))} "
                f"(it takes data, layout, cuda_stream, use_copy_kernel)"
            )
        if self.kind != FED:
            raise ArgumentError(
                f"{self.label()}: feed_input() cannot feed an external source that has a "
                f"source (it asks its source for every batch); make it without source= to "
                f"feed it"
            )
        own = self.layouts[0]
        if layout is not None:
            if not isinstance(layout, str):
                raise ArgumentError(
                    f"{self.name}: feed_input(layout=...) takes a layout string, got {layout!r}"
                )
            if own and layout and layout != own:
                raise ArgumentError(
                    f"{self.name}: feed_input(layout={layout!r}) differs from the external "
                    f"source's layout={own!r}"
                )
        asked = _Asked("fed with feed_input()")
        try:
            samples, carried = _batch_parts(data, cpu_only=False)
        except _BadReturn as exc:
            message = str(exc).replace("returned", "feed_input() was given", 1)
            raise self._fail(message, None, asked.text) from None
        chosen = own or layout or carried
        self._fed.append(self._batch(0, samples, chosen, asked, owned=False))

    def _take_fed(self, ctx: RunContext) -> TensorList:
        if self._fed:
            batch = self._last_fed = self._fed.popleft()
        elif self.args["repeat_last"] and self._last_fed is not None:
            batch = self._last_fed
        else:
            raise OperatorError(
                f"nothing was fed for this run(): this external source has no source=, so its "
                f"batches come from pipe.feed_input({self.name!r}, batch), called before each "
                f"run() (or give it a source)",
                operator=self.name,
            )
        if len(batch) > ctx.batch_size:
            raise OperatorError(
                f"the batch fed with feed_input() has {len(batch)} samples, more than the "
                f"pipeline's batch_size={ctx.batch_size}",
                operator=self.name,
            )
        return batch

    # --- batches out ----------------------------------------------------------------------------
    def _fail(self, message: str, index: int | None, where: str) -> OperatorError:
        return OperatorError(f"{message} ({where})", operator=self.label(), sample_index=index)

    def _assemble(
        self, ctx: RunContext, parts: list[Parts], asked: _Asked, owned: bool
    ) -> list[TensorList]:
        sizes = [len(samples) for samples, _ in parts]
        if len(set(sizes)) > 1:
            raise self._fail(
                f"the source gave batches of different sizes for its outputs: {sizes}",
                None,
                asked.text,
            )
        if sizes[0] > ctx.batch_size and ctx.bounded:
            raise self._fail(
                f"the source returned a batch of {sizes[0]} samples, more than the pipeline's "
                f"batch_size={ctx.batch_size}",
                None,
                asked.text,
            )
        return [
            self._batch(k, samples, self.layouts[k] or carried, asked, owned)
            for k, (samples, carried) in enumerate(parts)
        ]

    def _batch(self, k: int, samples: Any, layout: str, asked: _Asked, owned: bool) -> TensorList:
        """Output ``k``'s batch: checked, copied (unless ``owned``: fresh arrays from a worker),
        read-only, on this operator's device."""
        what = f"output {k}: " if self.num_outputs > 1 else ""
        if not len(samples):
            raise self._fail(
                f"{what}the batch is empty; a batch needs at least one sample (DALI's rule)",
                None,
                asked.text,
            )
        dense = not isinstance(samples, list)
        rows = (
            [(None, samples.dtype, samples.ndim - 1, samples.shape[1:])]
            if dense
            else [(i, s.dtype, s.ndim, s.shape) for i, s in enumerate(samples)]
        )
        dtype, ndim = self._dtypes[k], self._ndims[k]
        first = rows[0]
        for index, sample_dtype, sample_ndim, shape in rows:
            problem = ""
            if dtype is not None and sample_dtype != dtype.numpy:
                problem = f"has dtype {sample_dtype}, expected {dtype.numpy} (dtype={dtype.name})"
            elif ndim is not None and sample_ndim != ndim:
                problem = f"has {sample_ndim} dimensions (shape {shape}), expected ndim={ndim}"
            elif layout and sample_ndim != len(layout):
                problem = f"has shape {shape}, which does not fit the layout {layout!r}"
            elif sample_dtype != first[1] or sample_ndim != first[2]:
                problem = (
                    f"has dtype {sample_dtype} and rank {sample_ndim}, but sample 0 has dtype "
                    f"{first[1]} and rank {first[2]}: all samples of a batch must share dtype "
                    f"and rank"
                )
            if problem:
                who = "the batch" if index is None else f"sample {index}"
                raise self._fail(f"{what}{who} {problem}", index, asked.of(index))
        if dense:
            return TensorList.from_array(self._copy(samples, owned), layout)
        return TensorList([self._copy(s, owned) for s in samples], layout)

    def _copy(self, array: Any, owned: bool) -> Any:
        """``array`` as the graph keeps it, on this operator's device; copied unless ``owned``
        (fresh arrays from a worker): the pipeline must not see later changes the source makes
        to its own arrays."""
        if self.device == "gpu":
            moved = backend.to_gpu(array)
            return moved.copy() if moved is array else moved
        host = backend.to_cpu(array)  # a GPU array comes back as a fresh copy
        keep = owned or backend.is_gpu_array(array) or self.args.get("no_copy") is True
        return finish(host if keep else np.array(host))


def _by_output(samples: list[list[tuple[Any, str]]], n: int) -> list[Parts]:
    """Per-sample results (one (array, layout) per output each) as one batch per output, with
    the layout the first sample carried."""
    return [([s[k][0] for s in samples], samples[0][k][1] if samples else "") for k in range(n)]


# --- the schema -----------------------------------------------------------------------------


@described("a function, an iterable or a generator function")
def _source(value: Any) -> Any:
    if isinstance(value, (str, bytes)) or not (callable(value) or _source_kind(value) == ITERABLE):
        raise TypeError(
            f"expected a function, an iterable or a generator function, got {type(value).__name__}"
        )
    return value


@described("True, False, 'no', 'quiet' or 'raise'")
def _cycle(value: Any) -> Any:
    if value in (True, False, "no", "quiet", "raise"):
        return value
    raise ValueError(f"must be True, False, 'no', 'quiet' or 'raise', got {value!r}")


@described("a layout string, or a list with one per output")
def _layout(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(to_str(v) for v in value)
    return to_str(value)


@described("a data type (types.UINT8, types.FLOAT, ... or a NumPy dtype), or one per output")
def _dtypes(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(None if v is None else to_dtype(v) for v in value)
    return to_dtype(value)


@described("a CUDA stream: an integer handle, or a cupy.cuda.Stream / torch.cuda.Stream")
def _stream(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if hasattr(value, "ptr") or hasattr(value, "cuda_stream"):
        return value
    raise TypeError(f"expected a CUDA stream or its integer handle, got {value!r}")


_ndim = to_int(0)


@described("an integer >= 0, or a list with one per output", 0)
def _ndims(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(None if v is None else _ndim(v) for v in value)
    return _ndim(value)


def _output_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    n = args.get("num_outputs") or 1
    given = args.get("kind")
    specs = []
    for k, (layout, ndim) in enumerate(
        zip(_per_output(args.get("layout") or "", n), _per_output(args.get("ndim"), n), strict=True)
    ):
        layout = layout or ""
        kind = kinds.from_layout(layout)
        if given and (len(given) == 1 or k < len(given)):
            kind = given[k] if len(given) > 1 else given[0]
        if ndim is None and layout:
            ndim = len(layout)
        # No layout given: a TensorList or Tensor from the source keeps its own (unknown here).
        specs.append(OutputSpec(kind=kind, ndim=ndim, layout=layout or None))
    return specs


register(
    OperatorSchema(
        name="external_source",
        class_name="ExternalSource",
        impl=ExternalSource,
        min_inputs=0,
        max_inputs=0,
        num_outputs=lambda a: a.get("num_outputs") or 1,
        devices=("cpu", "gpu"),
        role="source",
        positional=("source", "num_outputs"),
        outputs_as_list=lambda args: args.get("num_outputs") is not None,
        validate=_validate,
        output_kinds=_output_kinds,
        doc="Data from Python, as DALI's external source: ``source`` is a callable (called per "
        "batch, optionally with the iteration or a ``BatchInfo``; or with ``batch=False`` per "
        "sample, optionally with a ``SampleInfo``), an iterable or a generator function; its "
        "``StopIteration`` ends the epoch. Without ``source``, batches come from "
        "``Pipeline.feed_input``. With ``num_outputs`` the source gives a tuple and the call "
        "returns a list of nodes. See ``augkit.operators.external_source`` for the rules.",
        args=[
            Arg(
                "source",
                "callable, iterable or generator function giving the data (None: the batches "
                "come from Pipeline.feed_input)",
                None,
                _source,
            ),
            Arg(
                "num_outputs",
                "number of outputs: the source then gives a tuple of that many batches (or "
                "samples), and the call returns a list of nodes, even of one",
                None,
                to_int(1, MAX_OUTPUTS),
            ),
            Arg(
                "batch",
                "True: the source gives whole batches; False: it is asked once per sample",
                True,
                to_bool,
            ),
            Arg(
                "batch_info",
                "batch mode: a callable taking an argument gets a BatchInfo(iteration, "
                "epoch_idx) instead of the iteration number",
                False,
                to_bool,
            ),
            Arg(
                "cycle",
                "for iterables and generator functions: False/'no' ends the data at its end, "
                "True/'quiet' starts it again, 'raise' ends the epoch (StopIteration) and starts "
                "it again in the next",
                None,
                _cycle,
            ),
            Arg(
                "parallel",
                "run the source in the pipeline's py_num_workers worker processes (a callable "
                "taking a SampleInfo, or in batch mode the iteration / a BatchInfo)",
                False,
                to_bool,
            ),
            Arg(
                "prefetch_queue_depth",
                "parallel=True only: batches computed together by the workers (the next ones "
                "are kept for the following run() calls)",
                None,
                to_int(1, 1024),
            ),
            Arg(
                "layout",
                "layout of the samples (one for every output, or one per output)",
                "",
                _layout,
            ),
            Arg("dtype", "expected data type of the samples (checked)", None, _dtypes),
            Arg("ndim", "expected number of dimensions of the samples (checked)", None, _ndims),
            Arg(
                "kind",
                "augkit only: the data kind of the outputs ('image', 'mask', 'boxes', 'labels', "
                "...; one for every output, or a list with one per output). Default: 'image' "
                "for an output whose layout has H and W axes, else 'generic'",
                None,
                _kinds_arg,
            ),
            Arg(
                "repeat_last",
                "without a source: a run() before which nothing new was fed gets the last fed "
                "batch again",
                False,
                to_bool,
            ),
            Arg(
                "no_copy",
                "take the source's host arrays as they are (read-only views), not copies: the "
                "source must not change them while the pipeline may read them",
                None,
                to_bool,
            ),
            Arg(
                "blocking",
                "accepted for DALI compatibility; a run() with nothing fed is an error",
                None,
                to_bool,
            ),
            Arg("cuda_stream", "accepted for DALI compatibility", None, _stream),
            Arg("use_copy_kernel", "accepted for DALI compatibility", None, to_bool),
        ],
    )
)
