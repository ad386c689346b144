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
  ``numpy.random`` or torch gets them seeded from the operator's stream for (iteration, sample)
  (or (iteration) in batch mode) before each call, and restored after it. So it gives the same
  results for the same pipeline seed, whatever the thread or worker count and in whatever order
  samples are computed.
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
- Like DALI, Python operators are kept in the graph even when no output uses them
  (``preserve`` defaults to True): a function may be there for its side effects.
- Errors: an exception in the function becomes an ``OperatorError`` naming the operator, the
  function, the sample and its source file, with the user's exception chained (so the
  traceback ends at the user's line). A wrong return (count, type, dtype, rank, batch length,
  layout) gets an error that says what was expected and what came back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import AugkitError, OperatorError
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
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
    batch_rng,
    global_rng_fingerprint,
    sample_rng,
    seeded_globals,
)
from augkit.tensors import TensorList
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
        layouts = self.args["output_layouts"] or ()
        if len(layouts) > self.num_outputs:
            raise self._argument_error(
                f"output_layouts has {len(layouts)} entries, but num_outputs is {self.num_outputs}"
            )
        if len(layouts) == 1:
            layouts = layouts * self.num_outputs
        self.layouts = list(layouts) + [""] * (self.num_outputs - len(layouts))

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
        source = inputs[0]._source_info if inputs else None
        return [TensorList(samples, self.layouts[k], source) for k, samples in enumerate(outputs)]

    def _run_samples(
        self, ctx: RunContext, inputs: Sequence[TensorList], n: int
    ) -> list[list[Any]]:
        calls = [
            _Call(
                i,
                [batch._samples[i] for batch in inputs],
                _seed(sample_rng(self.seed, ctx.iteration, i)),
            )
            for i in range(n)
        ]
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
            [list(batch._samples) for batch in inputs],
            _seed(batch_rng(self.seed, ctx.iteration)),
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
        if self.device == "cpu" and ctx.py_num_workers > 1:
            return "processes"
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
            drew = global_rng_fingerprint() != before
        if not drew:
            return results
        self._uses_global_rng = True
        return self._call_all(ctx, calls, inputs)

    def _call(self, call: _Call, inputs: Sequence[TensorList]) -> Any:
        args = [_map_leaves(self.to_user, a) for a in call.args]
        try:
            return self.function(*args)
        except Exception as exc:
            raise self.fail(f"{type(exc).__name__}: {exc}", call.index, inputs) from exc

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
            held = exc.running if exc.running is not None else None
            index = calls[held].index if held is not None else None
            raise self.fail(f"worker process failed: {exc}", index, inputs) from None
        results = []
        for call, (ok, value) in zip(calls, outcomes, strict=True):
            if not ok:
                error = value.exception
                if value.traceback:
                    with contextlib.suppress(Exception):
                        error.add_note(f"In the worker process:\n{value.traceback}")
                raise self.fail(f"{type(error).__name__}: {error}", call.index, inputs) from error
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
        try:
            array = self.from_user(value)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"output {k}: {exc}", index, inputs) from None
        if array.dtype == object:
            raise self.fail(
                f"output {k}: returned an array of Python objects; return numbers "
                f"(a ragged batch cannot be one array)",
                index,
                inputs,
            )
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
            if sample.dtype != first.dtype or sample.ndim != first.ndim:
                raise self.fail(
                    f"output {k}: sample {i} has dtype {sample.dtype} and {sample.ndim} "
                    f"dimensions, but sample 0 has dtype {first.dtype} and {first.ndim}; all "
                    f"samples of an output must share dtype and rank",
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


def _worker_output(value: Any) -> Any:
    """A returned value made fit to travel back: tensors and DLPack capsules become NumPy
    arrays (through shared memory); tuples and lists are kept; anything else goes as it is and
    is judged by the parent."""
    if isinstance(value, (tuple, list)):
        return type(value)(_worker_output(v) for v in value)
    if _is_torch(value):
        return value.detach().cpu().resolve_conj().resolve_neg().numpy()
    if backend.is_dlpack_capsule(value):
        return backend.from_dlpack(value, "cpu")
    return value


def _run_in_worker(flavour: str, function: Callable[..., Any], args: list[Any], seed: int) -> Any:
    """One call of a Python operator's function in a worker process: samples converted for
    the function, the process's global generators seeded, the result converted back."""
    user_args = [_map_leaves(lambda a: _worker_input(flavour, a), a) for a in args]
    with seeded_globals(seed):
        return _worker_output(function(*user_args))


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**63))


def _map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    if isinstance(value, list):
        return [fn(v) for v in value]
    return fn(value)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _describe(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        kind = type(value).__name__
        return f"a {kind} of {len(value)} item(s)"
    if value is None:
        return "None"
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("builtins.", "")


def _common_args(batch_default: bool) -> list[Arg]:
    return [
        Arg("function", "the Python function to run", REQUIRED, to_callable),
        Arg("num_outputs", "how many outputs the function returns", 1, to_int(0)),
        Arg(
            "batch_processing",
            "call the function once per batch with lists of samples (else once per sample)",
            batch_default,
            to_bool,
        ),
        Arg("output_layouts", "layout of each output (one string: all outputs)", None, to_layouts),
        Arg(
            "preserve",
            "keep the operator even when no output uses it (True for Python operators, as in DALI)",
            True,
            to_bool,
        ),
        Arg("synchronize_stream", "accepted for DALI compatibility", True, to_bool),
        Arg(
            "timeout",
            "seconds a batch may take in worker processes before they are stopped and run() "
            "raises (None: no limit)",
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


def _check_arguments(given: dict[str, Any]) -> None:
    if given.get("parallel") == "processes" and given.get("device", "cpu") != "cpu":
        raise ValueError("parallel='processes' runs only CPU operators")


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
