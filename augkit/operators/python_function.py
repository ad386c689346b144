"""The Python operator family: ``python_function`` (NumPy / CuPy arrays),
``dl_tensor_python_function`` (DLPack capsules) and ``torch_python_function`` (torch tensors,
exposed as ``augkit.plugin.pytorch.TorchPythonFunction``). One implementation; the flavours
differ only in how a sample is handed to the user's function and how its results come back.

Rules (DALI's, and where augkit goes further):

- Per-sample mode (``batch_processing=False``) calls the function once per sample with one
  array per input; with no inputs it is called ``batch_size`` times with no arguments. Batch
  mode calls it once with one list of samples per input and expects one list (or one array
  whose first axis is the batch) per output. ``DLTensorPythonFunction`` defaults to batch mode,
  the others to per-sample mode, as in DALI.
- Several outputs are returned as a tuple of ``num_outputs`` items; ``num_outputs=0`` means the
  function is called for its side effects and must return None.
- Inputs are read-only: NumPy raises at once when the function writes into one (DALI lets it
  silently corrupt the data other operators read). torch has no read-only tensors, and the
  tensors handed to ``TorchPythonFunction``/``DLTensorPythonFunction`` share memory with the
  pipeline's data: treat them as read-only. For the same reason, CPU samples reach
  ``DLTensorPythonFunction`` as DLPack 1.0 ("dltensor_versioned") capsules, which carry the
  read-only flag (``torch.utils.dlpack.from_dlpack`` accepts them; legacy capsules cannot
  export read-only NumPy arrays).
- Randomness: a function that draws from the global generators of ``random``,
  ``numpy.random`` or torch gets them seeded from the operator's stream for (shard, iteration,
  sample) (or (shard, iteration) in batch mode) before each call, and restored after it. So it
  gives the same results for the same pipeline seed, whatever the thread or worker count and in
  whatever order samples are computed. Libraries with generators of their own (Albumentations,
  ``np.random.default_rng``, OpenCV) are not reached that way: the function seeds them with
  ``augkit.random.call_seed()``, the same per-call seed (tests/test_seeding_libraries.py shows
  it with Albumentations). A transform object shared by the calls must then not be shared by
  threads (it would be seeded by one call and used by another): make one per thread, or give
  ``parallel="serial"``.
- Where the calls run (``parallel=``, default "auto"):
  - "processes" (auto when the pipeline has ``py_num_workers`` > 1): in the pipeline's worker
    processes (``augkit.workers``), for functions that hold the GIL; arrays travel through
    shared memory, the function with cloudpickle (lambdas, closures and notebook functions
    work); each process has its own global generators, seeded per call.
  - "threads": on the pipeline's ``num_threads`` threads, for functions that release the GIL
    (NumPy, Pillow, OpenCV, torch). The global generators are not seeded: a function that draws
    from them is not reproducible in this mode.
  - "serial": one call at a time, seeded, under a process-wide lock (the global generators are
    shared by every thread).
  - "auto" without workers: the first batch runs "serial" and watches whether the function
    draws from a global generator; if not, later batches run on the threads, and each batch is
    checked again: if the function drew after all, that batch is computed again "serial"
    (calling the function a second time for it) and the operator stays "serial".
  Batch mode makes one call per batch; with the prefetching executor several iterations are in
  flight at once, so batch-mode calls of different iterations run in parallel too.
- On the GPU (``device="gpu"``): ``python_function`` gets CuPy arrays (a NumPy result is
  copied to the GPU), ``TorchPythonFunction`` CUDA tensors (zero-copy through DLPack; a CPU
  tensor returned is moved with ``.cuda()``), ``DLTensorPythonFunction`` CUDA DLPack capsules.
  Streams: augkit's GPU kernels (CuPy) and torch both queue on the device's legacy default
  stream, which orders them against each other, so a function needs no synchronisation of its
  own and DALI's ``synchronize_stream`` has nothing to do (it is accepted). A function that
  uses a stream of its own must finish (or synchronise) it before it returns. The calls run
  on the pipeline's threads (CuPy's current device and stream are per thread: both defaults).
- Like DALI, Python operators are kept in the graph even when no output uses them
  (``preserve`` defaults to True): a function may be there for its side effects.
- Errors: an exception in the function becomes an ``OperatorError`` naming the operator, the
  function, the sample and its source file, with the user's exception chained (so the
  traceback ends at the user's line). A wrong return (count, type, dtype, rank, batch length,
  layout) gets an error that says what was expected and what came back.

Faults, and what ``run()`` does about them (``docs/errors.md`` has the table). Every one is an
``OperatorError`` raised by the ``run()`` whose batch hit it, naming the operator, the function,
the sample (its index and file; in batch mode the files of the batch) and what was wrong; the
same message in every mode (threads, serial, worker processes, debug, prefetching). That batch
is lost and the pipeline stays usable: the next ``run()`` computes the *next* batch.

- The function raises (``SystemExit`` too): "ValueError: ..." with the user's exception
  chained. Writing into a NumPy input raises NumPy's "read-only" error, with a hint to copy.
- torch/DLPack inputs cannot be made read-only: a checksum of each CPU input taken before the
  call is compared after it, and a function that wrote into one gets "wrote into input k".
- A wrong return: "returned 3 outputs, expected 2", "returned a dict, expected a NumPy array",
  "dtype object", "dtype complex64, which a pipeline cannot carry", "sample 1 has rank 2 ...",
  "returned a batch of 2 samples, expected 3".
- A call that hangs: ``timeout=`` (seconds per batch) stops it. Only a process can be stopped,
  so ``timeout`` makes an "auto" operator run in worker processes (one worker when
  ``py_num_workers`` is 1) and is refused with "threads"/"serial". Without a timeout, the
  notebook's stop button is the way out (below).
- A worker process that dies (``os._exit``, a segfault in native code, the OOM killer): the
  error names the exit code or signal and the sample it was running; the other busy workers
  are stopped, and all of them restart on the next call. No process or ``/dev/shm`` file is
  left behind (``augkit.workers``).
- KeyboardInterrupt (the notebook's stop button) during ``run()``: it propagates; the
  pipeline abandons the batches in flight (queued thread work is cancelled, worker processes
  are killed, the prefetching thread stops) and puts its readers back where the last
  delivered batch left them, so the next ``run()`` computes the interrupted batch again (same
  samples, same random draws). A call already running on a thread cannot be stopped by
  Python: it finishes in the background, its result unused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import backend, kinds
from augkit.errors import AugkitError, OperatorError
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import (
    MAX_OUTPUTS,
    REQUIRED,
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    one_of,
    register,
    to_bool,
    to_callable,
    to_float,
    to_int,
    to_layouts,
)
from augkit.random import (
    GLOBAL_RNG_LOCK,
    batch_seed,
    calling,
    drew_between,
    global_rng_fingerprint,
    seeded_globals,
)
from augkit.tensors import TensorList
from augkit.types import to_dtype
from augkit.workers import WorkerError


class PythonFunction(OperatorImpl):
    """Runs a user's function on NumPy arrays (CPU) or CuPy arrays (GPU)."""

    def setup(self) -> None:
        self.function: Callable[..., Any] = self.args["function"]
        # None until the first batch shows whether the function draws from the global
        # generators of random / numpy.random / torch (see the module docstring).
        self._uses_global_rng: bool | None = None
        # Worker processes cache the function under this key (one key, one function).
        self._worker_key = f"{self.name}:{id(self.function)}:{id(self)}"
        # DALI's rule: a list shorter than num_outputs sets the first outputs' layouts and
        # leaves the rest without one (a single string is a list of one).
        self.layouts = output_layouts(self.args, self.num_outputs)

    def set_function(self, function: Callable[..., Any]) -> None:
        """Use ``function`` from now on (the viewer's sliders and edits). What was learnt about
        the old one (whether it draws from the global generators) is forgotten, and worker
        processes get the new function under a new key."""
        self.function = function
        self.args = {**self.args, "function": function}
        self._uses_global_rng = None
        self._worker_key = f"{self.name}:{id(function)}:{id(self)}"

    def _argument_error(self, message: str) -> AugkitError:
        from augkit.errors import ArgumentError

        return ArgumentError(f"{self.label()}: {message}")

    def label(self) -> str:
        function = self.function
        while isinstance(function, functools.partial):  # the viewer's sliders wrap it
            function = function.func
        name = getattr(function, "__qualname__", None) or type(function).__name__
        return f"{self.name} (function {name})"

    # --- how samples travel to and from the user's function ------------------------------------
    def to_user(self, sample: Any) -> Any:
        if isinstance(sample, np.ndarray) and sample.flags.writeable:
            sample = sample.view()
            sample.flags.writeable = False
        return sample

    def from_user(self, value: Any) -> Any:
        """The array of one returned sample, or raise TypeError saying what came back."""
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            return backend.to_gpu(array) if self.device == "gpu" else array
        if backend.is_gpu_array(value):
            if self.device != "gpu":
                raise TypeError("returned a CuPy (GPU) array from a CPU operator")
            return value
        raise TypeError(f"returned {_describe(value)}, expected {self.expected()}")

    def expected(self) -> str:
        return "a CuPy array" if self.device == "gpu" else "a NumPy array"

    # --- running ---------------------------------------------------------------------------
    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        n = len(inputs[0]) if inputs else ctx.batch_size
        for k, batch in enumerate(inputs[1:], 1):
            if len(batch) != n:
                raise OperatorError(
                    f"input {k} has {len(batch)} samples, input 0 has {n}", operator=self.label()
                )
        if self.args["batch_processing"]:
            outputs = self._run_batch(ctx, inputs, n)
        else:
            outputs = self._run_samples(ctx, inputs, n)
        source = inputs[0].sources if inputs else None
        return [TensorList(samples, self.layouts[k], source) for k, samples in enumerate(outputs)]

    def _run_samples(
        self, ctx: RunContext, inputs: Sequence[TensorList], n: int
    ) -> list[list[Any]]:
        seeds = ctx.streams(self.stream_key, n).seeds().tolist()
        calls = [_Call(i, [batch.samples[i] for batch in inputs], seeds[i]) for i in range(n)]
        results = self._call_all(ctx, calls, inputs)
        outputs: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        for i, result in enumerate(results):
            for k, value in enumerate(self._split(result, i, inputs)):
                outputs[k].append(self._sample(value, k, i, inputs))
        for k, samples in enumerate(outputs):
            self._check_batch(k, samples, inputs)
        return outputs

    def _run_batch(self, ctx: RunContext, inputs: Sequence[TensorList], n: int) -> list[list[Any]]:
        call = _Call(
            None,
            [list(batch.samples) for batch in inputs],
            batch_seed(self.stream_key, ctx.iteration),
        )
        (result,) = self._call_all(ctx, [call], inputs)
        outputs = []
        for k, batch in enumerate(self._split(result, None, inputs)):
            dense = isinstance(batch, np.ndarray) and batch.dtype != object
            if dense or backend.is_gpu_array(batch) or _is_torch(batch):
                batch = list(batch)  # one array for the whole batch: its first axis
            if not isinstance(batch, (list, tuple)):
                raise self.fail(
                    f"output {k}: returned {_describe(batch)}; in batch mode return a list of "
                    f"{n} samples ({self.expected()} each) per output",
                    None,
                    inputs,
                )
            if len(batch) != n:
                raise self.fail(
                    f"output {k}: returned a batch of {len(batch)} samples, expected {n} (the "
                    f"batch size)",
                    None,
                    inputs,
                )
            samples = [self._sample(value, k, i, inputs) for i, value in enumerate(batch)]
            self._check_batch(k, samples, inputs)
            outputs.append(samples)
        return outputs

    # --- where the calls run ----------------------------------------------------------------
    def mode(self, ctx: RunContext) -> str:
        """How this batch's calls run: "processes", "threads", "serial" or "detect"."""
        parallel = self.args["parallel"]
        if parallel != "auto":
            return parallel
        if self.device == "cpu" and (ctx.py_num_workers > 1 or self.args["timeout"] is not None):
            return "processes"  # a timeout can only stop a process
        if self._uses_global_rng is None:
            return "detect"
        return "serial" if self._uses_global_rng else "threads"

    def _call_all(
        self, ctx: RunContext, calls: list[_Call], inputs: Sequence[TensorList]
    ) -> list[Any]:
        mode = self.mode(ctx)
        if mode == "processes":
            return self._call_in_workers(ctx, calls, inputs)
        if mode == "threads":
            if self.args["parallel"] == "threads":
                return ctx.map(lambda j: self._call(calls[j], inputs), len(calls))
            return self._call_threaded(ctx, calls, inputs)
        # "serial" and "detect": one call at a time, the global generators seeded for each.
        results = []
        drew = False
        for call in calls:
            with GLOBAL_RNG_LOCK, seeded_globals(call.seed, detect=mode == "detect") as draws:
                results.append(self._call(call, inputs))
            drew = drew or bool(draws.drew)
        if mode == "detect":
            self._uses_global_rng = drew
        return results

    def _call_threaded(
        self, ctx: RunContext, calls: list[_Call], inputs: Sequence[TensorList]
    ) -> list[Any]:
        """Calls over the pipeline's threads, for a function that did not draw from the global
        generators so far; if it does after all, its batch is computed again one call at a
        time, seeded, and it stays in that mode."""
        with GLOBAL_RNG_LOCK:
            before = global_rng_fingerprint()
        results = ctx.map(lambda j: self._call(calls[j], inputs), len(calls))
        with GLOBAL_RNG_LOCK:
            drew = drew_between(before, global_rng_fingerprint())
        if not drew:
            return results
        self._uses_global_rng = True
        return self._call_all(ctx, calls, inputs)

    def _call(self, call: _Call, inputs: Sequence[TensorList]) -> Any:
        args = [_map_leaves(self.to_user, a) for a in call.args]
        sums = _checksums(self.flavour, call.args)
        try:
            with calling(call.seed):
                result = self.function(*args)
            del args
            if sums is not None:
                _check_unchanged(self.flavour, call.args, sums)
        except (Exception, SystemExit) as exc:
            raise self.fail(_error_text(exc), _index_of(exc, call.index), inputs) from exc
        return result

    def fail(self, message: str, index: int | None, inputs: Sequence[TensorList]) -> OperatorError:
        if index is None and inputs:  # batch mode: which samples the call had
            message += f" (in the call for the whole batch: {_batch_files(inputs[0])})"
        return super().fail(message, index, inputs)

    flavour = "numpy"  # how a worker process hands samples to the function (_WORKER_INPUTS)

    def _call_in_workers(
        self, ctx: RunContext, calls: list[_Call], inputs: Sequence[TensorList]
    ) -> list[Any]:
        """The calls in the pipeline's worker processes; results come back as NumPy arrays."""
        assert ctx.workers is not None
        pool = ctx.workers()
        runner = functools.partial(_run_in_worker, self.flavour, self.function)
        items = [(call.args, call.seed) for call in calls]
        try:
            outcomes = pool.map(self._worker_key, runner, items, timeout=self.args["timeout"])
        except WorkerError as exc:
            held = exc.running
            index = calls[held].index if held is not None and held < len(calls) else None
            what = "worker process failed"
            if exc.timed_out:
                what = f"the call took longer than timeout={self.args['timeout']:g} s"
            raise self.fail(f"{what}: {exc}", index, inputs) from None
        results = []
        for call, (ok, value) in zip(calls, outcomes, strict=True):
            if not ok:
                error = value.exception
                if value.traceback:
                    with contextlib.suppress(Exception):
                        error.add_note(f"In the worker process:\n{value.traceback}")
                index = _index_of(error, call.index)
                raise self.fail(_error_text(error), index, inputs) from error
            results.append(value)
        return results

    def _split(self, result: Any, index: int | None, inputs: Sequence[TensorList]) -> list[Any]:
        n = self.num_outputs
        if n == 0:
            if result is not None:
                raise self.fail(
                    f"returned {_describe(result)}, but num_outputs=0 (the function "
                    f"must return None)",
                    index,
                    inputs,
                )
            return []
        if n == 1:
            if result is None:
                raise self.fail(f"returned None, expected {self.expected()}", index, inputs)
            return [result]
        if not isinstance(result, tuple):
            raise self.fail(
                f"returned {_describe(result)}, expected a tuple of {n} outputs (num_outputs={n})",
                index,
                inputs,
            )
        if len(result) != n:
            raise self.fail(
                f"returned {len(result)} outputs, expected {n} (num_outputs={n})", index, inputs
            )
        return list(result)

    def _sample(self, value: Any, k: int, index: int, inputs: Sequence[TensorList]) -> Any:
        objects = isinstance(value, _Returned) and value.objects
        if objects or (isinstance(value, np.ndarray) and value.dtype.hasobject):
            raise self.fail(f"output {k}: {_OBJECTS}", index, inputs)
        try:
            array = self.from_user(value)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"output {k}: {exc}", index, inputs) from None
        if array.dtype.hasobject:
            raise self.fail(f"output {k}: {_OBJECTS}", index, inputs)
        try:
            to_dtype(array.dtype)
        except TypeError:
            raise self.fail(
                f"output {k}: returned an array of dtype {array.dtype}, which a pipeline "
                f"cannot carry; return bool, integer (int8-64, uint8-64) or float "
                f"(float16/32/64) arrays",
                index,
                inputs,
            ) from None
        layout = self.layouts[k]
        if layout and array.ndim != len(layout):
            raise self.fail(
                f"output {k}: has shape {tuple(array.shape)}, which does not fit "
                f"its layout {layout!r} from output_layouts",
                index,
                inputs,
            )
        return finish(array)

    def _check_batch(self, k: int, samples: list[Any], inputs: Sequence[TensorList]) -> None:
        if not samples:
            return
        first = samples[0]
        for i, sample in enumerate(samples[1:], 1):
            if sample.dtype != first.dtype:
                what = f"dtype {sample.dtype}, but sample 0 has dtype {first.dtype}"
            elif sample.ndim != first.ndim:
                what = (
                    f"rank {sample.ndim} (shape {tuple(sample.shape)}), but sample 0 has rank "
                    f"{first.ndim} (shape {tuple(first.shape)})"
                )
            else:
                continue
            raise self.fail(
                f"output {k}: sample {i} has {what}; all samples of an output must share "
                f"dtype and rank (number of dimensions)",
                i,
                inputs,
            )


class DLTensorPythonFunction(PythonFunction):
    """Hands the function DLPack capsules and takes capsules (or DLPack-able objects) back."""

    flavour = "dlpack"

    def to_user(self, sample: Any) -> Any:
        if isinstance(sample, np.ndarray):
            return super().to_user(sample).__dlpack__(max_version=(1, 0))
        return sample.__dlpack__()

    def from_user(self, value: Any) -> Any:
        if backend.is_dlpack_capsule(value) or hasattr(value, "__dlpack__"):
            try:
                return backend.from_dlpack(value, "gpu" if self.device == "gpu" else "cpu")
            except (BufferError, RuntimeError) as exc:
                raise TypeError(
                    f"returned a DLPack object that cannot be read here: {exc}"
                ) from None
        raise TypeError(f"returned {_describe(value)}, expected a DLPack capsule")

    def expected(self) -> str:
        return "a DLPack capsule"


class TorchPythonFunction(PythonFunction):
    """Hands the function torch tensors (zero-copy) and takes tensors back; works on CPU."""

    flavour = "torch"

    def setup(self) -> None:
        super().setup()
        try:
            import torch
        except ImportError:
            raise self._argument_error(
                "TorchPythonFunction needs PyTorch: pip install 'augkit[torch]'"
            ) from None
        self._torch = torch

    def to_user(self, sample: Any) -> Any:
        if isinstance(sample, np.ndarray):
            capsule = super().to_user(sample).__dlpack__(max_version=(1, 0))
            return self._torch.utils.dlpack.from_dlpack(capsule)
        return self._torch.from_dlpack(sample)

    def from_user(self, value: Any) -> Any:
        if isinstance(value, self._torch.Tensor):
            value = value.detach()
            if self.device == "gpu":
                return backend.from_dlpack(value.cuda().contiguous(), "gpu")
            if value.device.type != "cpu":
                raise TypeError(f"returned a tensor on {value.device} from a CPU operator")
            return value.resolve_conj().resolve_neg().numpy()
        if isinstance(value, (np.ndarray, np.generic)):
            return super().from_user(value)
        raise TypeError(f"returned {_describe(value)}, expected a torch.Tensor")

    def expected(self) -> str:
        return "a torch.Tensor"


@dataclasses.dataclass
class _Call:
    """One call of the user's function: the sample index (None for a batch), its arguments as
    the graph holds them (arrays, or lists of arrays in batch mode) and its seed."""

    index: int | None
    args: list[Any]
    seed: int


def _worker_input(flavour: str, array: np.ndarray) -> Any:
    """A sample as the function of ``flavour`` takes it, inside a worker process (where samples
    arrive as read-only NumPy views of shared memory)."""
    if flavour == "numpy":
        return array
    capsule = array.__dlpack__(max_version=(1, 0))
    if flavour == "dlpack":
        return capsule
    import torch.utils.dlpack

    return torch.utils.dlpack.from_dlpack(capsule)


@dataclasses.dataclass(frozen=True)
class _Returned:
    """Stands, on its way back from a worker process, for a returned value that is not an
    array (or an array of Python objects, which cannot travel): the parent judges it as it
    judges the value itself in-process, so the message is the same in every mode."""

    description: str
    objects: bool = False


_OBJECTS = (
    "returned an array of dtype object (Python objects), which cannot be a sample; return "
    "numbers (NumPy makes such an array of a list of arrays of different shapes)"
)


def _worker_output(value: Any) -> Any:
    """A returned value made fit to travel back: tensors and DLPack capsules become NumPy
    arrays (through shared memory); tuples and lists are kept; anything else becomes a
    ``_Returned`` that says what it was."""
    if isinstance(value, (tuple, list)):
        return type(value)(_worker_output(v) for v in value)
    try:
        if _is_torch(value):
            value = value.detach().cpu().resolve_conj().resolve_neg().numpy()
        elif backend.is_dlpack_capsule(value):
            value = backend.from_dlpack(value, "cpu")
    except Exception as exc:  # a used capsule, a tensor NumPy cannot hold...
        return _Returned(f"{_describe(value)} that cannot be read here ({exc})")
    if isinstance(value, np.ndarray) and value.dtype.hasobject:
        return _Returned("an array of dtype object", objects=True)
    if value is None or isinstance(value, (np.ndarray, np.generic)):
        return value
    return _Returned(_describe(value))


def _run_in_worker(flavour: str, function: Callable[..., Any], args: list[Any], seed: int) -> Any:
    """One call of a Python operator's function in a worker process: samples converted for
    the function, the process's global generators seeded, the result converted back."""
    user_args = [_map_leaves(lambda a: _worker_input(flavour, a), a) for a in args]
    sums = _checksums(flavour, args)
    with seeded_globals(seed), calling(seed):
        result = function(*user_args)
    del user_args
    if sums is not None:
        _check_unchanged(flavour, args, sums)
    return _worker_output(result)


class InputWrittenError(ValueError):
    """A torch/DLPack function wrote into an input it shares with the pipeline."""

    def __init__(self, message: str, sample: int | None = None) -> None:
        super().__init__(message, sample)
        self.sample = sample

    def __str__(self) -> str:
        return str(self.args[0])


def _checksum(sample: Any) -> int | None:
    if not isinstance(sample, np.ndarray):
        return None  # GPU data: not checked
    # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12
    return zlib.crc32(np.ascontiguousarray(sample).reshape(-1).view(np.uint8))  # type: ignore[arg-type]


def _checksums(flavour: str, args: list[Any]) -> list[Any] | None:
    """Checksums of the samples handed to a torch/DLPack function, which could write into
    them (NumPy functions get read-only arrays: nothing to check)."""
    if flavour == "numpy":
        return None
    return [_map_leaves(_checksum, a) for a in args]


def _check_unchanged(flavour: str, args: list[Any], sums: list[Any]) -> None:
    for k, (arg, before) in enumerate(zip(args, sums, strict=True)):
        batch = isinstance(arg, list)
        samples, old = (arg, before) if batch else ([arg], [before])
        for i, (sample, checksum) in enumerate(zip(samples, old, strict=True)):
            if checksum is not None and _checksum(sample) != checksum:
                what = "torch tensors" if flavour == "torch" else "DLPack capsules"
                where = f"input {k} (sample {i} of the batch)" if batch else f"input {k}"
                raise InputWrittenError(
                    f"the function wrote into {where}: the {what} it gets share memory with "
                    f"the pipeline and must not be changed; copy first (t = t.clone()) or use "
                    f"out-of-place operations (t.add(1), not t.add_(1))",
                    i if batch else None,
                )


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ValueError) and "read-only" in str(exc):
        text += " (the inputs are read-only: copy one before changing it, e.g. x = x.copy())"
    return text


def _index_of(exc: BaseException, index: int | None) -> int | None:
    """The sample an error is about: the call's, or the batch sample a write was found in."""
    sample = getattr(exc, "sample", None) if isinstance(exc, InputWrittenError) else None
    return sample if index is None and sample is not None else index


def _batch_files(batch: TensorList) -> str:
    n = len(batch)
    names = [name for name in batch.sources if name]
    head = f"samples 0-{n - 1}" if n > 1 else f"{n} sample(s)"
    if not names:
        return head
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{head}: {shown}"


def _map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    if isinstance(value, list):
        return [fn(v) for v in value]
    return fn(value)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _describe(value: Any) -> str:
    if isinstance(value, _Returned):
        return value.description
    if isinstance(value, (list, tuple)):
        kind = type(value).__name__
        return f"a {kind} of {len(value)} item(s)"
    if value is None:
        return "None"
    name = f"{type(value).__module__}.{type(value).__qualname__}".replace("builtins.", "")
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _common_args(batch_default: bool) -> list[Arg]:
    return [
        Arg("function", "the Python function to run", REQUIRED, to_callable),
        Arg("num_outputs", "how many outputs the function returns", 1, to_int(0, MAX_OUTPUTS)),
        Arg(
            "batch_processing",
            "call the function once per batch with lists of samples (else once per sample)",
            batch_default,
            to_bool,
        ),
        Arg(
            "output_layouts",
            "layout of each output; a shorter list (or one string) sets the first outputs' "
            "layouts and leaves the rest without one, as in DALI",
            None,
            to_layouts,
        ),
        Arg(
            "kind",
            "augkit only: the data kind of the outputs ('image', 'mask', 'boxes', 'labels', "
            "...; one for every output, or a list with one per output). Default: 'image' for "
            "an output whose output_layouts entry has H and W axes, else 'generic'",
            None,
            _kinds_arg,
        ),
        Arg(
            "preserve",
            "keep the operator even when no output uses it (True for Python operators, as in DALI)",
            True,
            to_bool,
        ),
        Arg("synchronize_stream", "accepted for DALI compatibility", True, to_bool),
        Arg(
            "timeout",
            "seconds a batch may take before its worker processes are stopped and run() raises "
            "(None: no limit); it makes the calls run in worker processes (CPU only)",
            None,
            to_float(0.0),
        ),
        Arg(
            "parallel",
            'where the calls run: "auto" (worker processes when the pipeline has '
            "py_num_workers > 1, else the pipeline's threads, or one call at a time for a "
            'function that draws from the global random generators), "threads", "processes" '
            'or "serial"',
            "auto",
            one_of("auto", "threads", "processes", "serial"),
        ),
    ]


_DOC = (
    "Runs ``function`` inside the pipeline on {what}. Per-sample mode calls it once per sample "
    "with one {unit} per input; batch mode once per batch with a list per input. It returns "
    "one {unit} (or a tuple of ``num_outputs``). Inputs are read-only; the global random "
    "generators are seeded per call from the pipeline seed. See "
    "``augkit.operators.python_function`` for the rules."
)


def _outputs(args: dict[str, Any]) -> int:
    return args.get("num_outputs", 1)


@described("a data kind ('image', 'mask', 'boxes', ...) or a list with one per output")
def _kinds_arg(value: Any) -> tuple[kinds.Kind, ...]:
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise ValueError("the list of kinds is empty")
    return tuple(kinds.parse(v) for v in values)


def output_layouts(args: dict[str, Any], n: int) -> list[str]:
    """The layout of each of the ``n`` outputs (DALI's rule for a short ``output_layouts``)."""
    layouts = list(args.get("output_layouts") or ())
    return layouts[:n] + [""] * (n - len(layouts))


def _output_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    n = _outputs(args)
    given = args.get("kind")
    layouts = output_layouts(args, n)
    specs = []
    for k, layout in enumerate(layouts):
        kind = kinds.from_layout(layout)
        if given:
            kind = given[k] if len(given) > 1 else given[0]
        specs.append(
            OutputSpec(kind=kind, ndim=len(layout) if layout else None, layout=layout or None)
        )
    return specs


def _check_arguments(given: dict[str, Any]) -> None:
    parallel = given.get("parallel", "auto")
    cpu = given.get("device", "cpu") == "cpu"
    if parallel == "processes" and not cpu:
        raise ValueError("parallel='processes' runs only CPU operators")
    layouts, n = given.get("output_layouts") or (), given.get("num_outputs", 1)
    if isinstance(n, int) and len(layouts) > n:
        raise ValueError(f"output_layouts has {len(layouts)} entries, but num_outputs is {n}")
    chosen = given.get("kind")
    if isinstance(chosen, tuple) and len(chosen) > 1 and isinstance(n, int) and len(chosen) != n:
        raise ValueError(
            f"kind has {len(chosen)} entries, but num_outputs is {n}: give one kind for every "
            f"output, or one per output"
        )
    timeout = given.get("timeout")
    if timeout is None:
        return
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not cpu:
        raise ValueError("timeout needs worker processes, which run only CPU operators")
    if parallel in ("threads", "serial"):
        raise ValueError(
            f"timeout needs worker processes (a call running on a thread cannot be stopped); "
            f"use parallel='auto' or 'processes', not parallel={parallel!r}"
        )


def _register(
    name: str,
    class_name: str,
    impl: type,
    what: str,
    unit: str,
    batch_default: bool,
    module: str = "",
) -> None:
    register(
        OperatorSchema(
            name=name,
            class_name=class_name,
            impl=impl,
            module=module,
            doc=_DOC.format(what=what, unit=unit),
            args=_common_args(batch_default),
            min_inputs=0,
            max_inputs=None,
            num_outputs=_outputs,
            devices=("cpu", "gpu"),
            input_sets=False,
            validate=_check_arguments,
            output_kinds=_output_kinds,
            role="python",
        )
    )


_register(
    "python_function",
    "PythonFunction",
    PythonFunction,
    "NumPy arrays (CuPy arrays with device='gpu')",
    "array",
    batch_default=False,
)
_register(
    "dl_tensor_python_function",
    "DLTensorPythonFunction",
    DLTensorPythonFunction,
    "DLPack capsules (batch mode by default, as in DALI)",
    "capsule",
    batch_default=True,
)
_register(
    "torch_python_function",
    "TorchPythonFunction",
    TorchPythonFunction,
    "torch tensors, on CPU too (DALI's needs CUDA)",
    "tensor",
    batch_default=False,
    module="plugin.pytorch",
)
