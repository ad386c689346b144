"""Faults in user functions, and interrupts, at the pipeline level (issue 6).

Every fault x every execution mode it applies to must give a clear ``OperatorError`` at
``run()``: naming the operator, the function, the sample (index and file; in batch mode the
batch's files) and what was wrong, in plain words. It must come within seconds, leave no
process and no ``/dev/shm`` file behind, and the pipeline must go on: the failing batch is lost
and the next ``run()`` gives what a fresh pipeline with the same seed gives for the next batch.

A KeyboardInterrupt during ``run()`` (the notebook's stop button: Jupyter sends SIGINT to the
kernel process, which is what these tests do) must propagate, leave no worker, thread or
shared-memory file working or behind, and the next ``run()`` computes the interrupted batch
again (the readers go back to the last batch delivered): no sample is skipped or repeated.

The faults hit sample 1 of the first batch (the file with label ``BAD``): the readers list
``FILES`` in order, so batch 0 is files 0-2 and batch 1 files 3-5. Correctness only: the time
bounds are generous and prove only that nothing hangs.
"""

from __future__ import annotations

import ctypes
import dataclasses
import faulthandler
import glob
import multiprocessing
import os
import pathlib
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.dlpack as torch_dlpack

import augkit.plugin.pytorch as dalitorch
from augkit import OperatorError, Pipeline, fn, pipeline_def, types
from augkit.errors import ArgumentError
from augkit.workers import WorkerError, WorkerPool

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
FILES = [
    "objects/clock_motion_blur.jpg",
    "medical/cell_phase_microscopy.jpg",
    "animals/chelsea_cat_face_crop.jpg",
    "animals/chelsea_cat.jpg",
    "objects/greek_coins.jpg",
    "people/cameraman.jpg",
]
BAD = 1  # the label (index in FILES) of the sample a fault hits: sample 1 of batch 0
BATCH = 3
TIMEOUT = 4.0  # the operator's timeout for the hanging function (worker modes)
BOUND = 60.0  # an error (or the end of the background work) must come well within this


# --------------------------------------------------------------------------------------------
# execution modes


@dataclasses.dataclass(frozen=True)
class Mode:
    flavour: str = "python"  # python_function, "torch" or "dlpack" (DLTensorPythonFunction)
    batch: bool = False
    workers: int = 1  # py_num_workers
    parallel: str = "auto"
    exec_async: bool = True  # the default prefetching pipeline; False: synchronous
    debug: bool = False
    random: bool = False  # the function draws from np.random: "auto" runs it serially
    timeout: float | None = None

    @property
    def in_workers(self) -> bool:
        return self.workers > 1 or self.parallel == "processes" or self.timeout is not None


MODES = {
    "threads-sync": Mode(parallel="threads", exec_async=False),
    "threads-prefetch": Mode(parallel="threads"),
    "serial-random": Mode(random=True),
    "batch": Mode(batch=True),
    "torch": Mode(flavour="torch"),
    "dlpack": Mode(flavour="dlpack", batch=True),
    "debug": Mode(debug=True),
    "processes-sync": Mode(parallel="processes", workers=2, exec_async=False),
    "processes-prefetch": Mode(workers=2),
    "processes-random": Mode(workers=2, random=True),
    "processes-batch": Mode(batch=True, workers=2),
    "processes-torch": Mode(flavour="torch", workers=2),
    "processes-dlpack": Mode(flavour="dlpack", batch=True, workers=2),
    "processes-debug": Mode(debug=True, workers=2),
    "one-worker-timeout": Mode(timeout=TIMEOUT),  # a timeout makes "auto" use a process
}

# faults: what comes back, and the plain words the error must use
RETURN_FAULTS = {
    "raise": r"ValueError: bad sample",
    "count": r"returned 3 outputs, expected 2 \(num_outputs=2\)",
    "type": r"output 0: returned a dict, expected (a NumPy array|a torch\.Tensor|a DLPack capsule)",
    "object": r"output 0: returned an array of dtype object",
    "complex": r"output 0: returned an array of dtype complex64, which a pipeline cannot carry",
    "dtype": r"output 0: sample 1 has dtype float32, but sample 0 has dtype uint8",
    "rank": r"output 0: sample 1 has rank 2 \(shape \(24, 32\)\), but sample 0 has rank 3",
    "write": None,  # depends on the flavour: see _expected_words
    "length": r"output 0: returned a batch of 2 samples, expected 3 \(the batch size\)",
}
WORKER_FAULTS = {
    "hang": rf"the call took longer than timeout={TIMEOUT:g} s.*timed out",
    "exit": r"worker process failed: worker \d \(pid \d+\) exited with code 3",
    "segv": r"worker process failed: .*killed by signal SIGSEGV \(11\) \(a crash in native code",
}
# faults about the whole call in batch mode (no one sample to name: the batch's files instead)
BATCH_LEVEL = {"raise", "count", "length", "hang", "exit", "segv"}


def _cases() -> list[Any]:
    cases = []
    for mode_name, mode in MODES.items():
        faults = list(RETURN_FAULTS) + (list(WORKER_FAULTS) if mode.in_workers else [])
        for fault in faults:
            if fault == "length" and not mode.batch:
                continue
            cases.append(pytest.param(mode_name, fault, id=f"{fault}-{mode_name}"))
    return cases


# --------------------------------------------------------------------------------------------
# the user's function, in every flavour


def _only_in_a_worker() -> None:
    if multiprocessing.parent_process() is None:
        raise RuntimeError("this fault may only run in a worker process")


def _as_torch(value: Any, flavour: str) -> Any:
    return torch_dlpack.from_dlpack(value) if flavour == "dlpack" else value


def _as_numpy(value: Any, flavour: str) -> np.ndarray:
    return value if flavour == "python" else value.numpy()


def _output(value: Any, flavour: str) -> Any:
    """A NumPy result as the flavour returns it (anything else is returned as it is)."""
    if not isinstance(value, np.ndarray) or value.dtype.hasobject:
        return value
    if flavour == "torch":
        return torch.from_numpy(np.array(value))
    if flavour == "dlpack":
        return np.array(value).__dlpack__()
    return value


def _write(image: Any) -> None:
    """What a user does when they forget that inputs are read-only."""
    image[0, 0, 0] = 255 - image[0, 0, 0]


def _sample(
    fault: str, image: np.ndarray, label: np.ndarray, mode: Mode, flags: str, bad: int
) -> tuple[Any, ...]:
    """One sample, in NumPy terms: the normal result, or the fault on the bad sample."""
    out = np.ascontiguousarray(image[:, ::-1])
    if mode.random:
        out = np.roll(out, np.random.randint(0, 5), axis=0)
    code = (label * 10).astype(np.int32)
    if int(label[0]) != bad or fault in ("none", "write", "length"):
        return out, code
    if fault == "slow":  # until the test has seen its KeyboardInterrupt
        pathlib.Path(flags, "started").touch()
        give_up = time.monotonic() + BOUND
        while os.path.exists(os.path.join(flags, "slow")) and time.monotonic() < give_up:
            time.sleep(0.02)
        return out, code
    if fault == "raise":
        raise ValueError("bad sample")
    if fault == "count":
        return out, code, code
    if fault == "type":
        return {"image": out}, code
    if fault == "object":
        return np.array([out, None], dtype=object), code
    if fault == "complex":
        return out.astype(np.complex64), code
    if fault == "dtype":
        return out.astype(np.float32), code
    if fault == "rank":
        return out[..., 0], code
    _only_in_a_worker()
    if fault == "hang":
        time.sleep(120)
    elif fault == "exit":
        os._exit(3)
    elif fault == "segv":
        faulthandler.disable()  # keep the test's output quiet
        ctypes.string_at(0)
    raise AssertionError(f"unknown fault {fault}")


def make_function(fault: str, mode: Mode, flags: str = "", bad: int = BAD) -> Callable[..., Any]:
    flavour = mode.flavour

    def augment(image: Any, label: Any) -> Any:
        image, label = _as_torch(image, flavour), _as_torch(label, flavour)
        if fault == "write" and int(label[0]) == bad:
            _write(image)
        result = _sample(
            fault, _as_numpy(image, flavour), _as_numpy(label, flavour), mode, flags, bad
        )
        return tuple(_output(v, flavour) for v in result)

    def augment_batch(images: list[Any], labels: list[Any]) -> Any:
        images = [_as_torch(x, flavour) for x in images]
        labels = [_as_numpy(_as_torch(x, flavour), flavour) for x in labels]
        hit = [int(label[0]) == bad for label in labels]
        if fault == "write" and any(hit):
            _write(images[hit.index(True)])
        if fault == "raise" and any(hit):
            raise ValueError("bad sample")
        results = [
            _sample(fault, _as_numpy(x, flavour), label, mode, flags, bad)
            for x, label in zip(images, labels, strict=True)
        ]
        outs = [_output(r[0], flavour) for r in results]
        codes = [_output(r[1], flavour) for r in results]
        if fault == "count" and any(hit):
            return outs, codes, codes
        if fault == "length" and any(hit):
            return outs[:2], codes[:2]
        return outs, codes

    return augment_batch if mode.batch else augment


def build(mode: Mode, fault: str, flags: str = "", bad: int = BAD, **kw: Any) -> Pipeline:
    function = make_function(fault, mode, flags, bad)
    args: dict[str, Any] = {"function": function, "num_outputs": 2, "batch_processing": mode.batch}
    if mode.parallel != "auto":
        args["parallel"] = mode.parallel
    timeout = kw.get("timeout", mode.timeout)
    if timeout is not None:
        args["timeout"] = timeout
    operator = {
        "python": fn.python_function,
        "torch": dalitorch.fn.torch_python_function,
        "dlpack": fn.dl_tensor_python_function,
    }[mode.flavour]

    @pipeline_def(
        batch_size=BATCH,
        num_threads=2,
        device_id=None,
        seed=17,
        py_num_workers=mode.workers,
        exec_async=mode.exec_async,
        exec_pipelined=mode.exec_async,
        debug=mode.debug,
    )
    def definition():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), files=FILES)
        images = fn.resize(
            fn.decoders.image(jpegs, output_type=types.RGB), resize_x=32, resize_y=24
        )
        out, code = operator(images, labels, **args)
        return out, code, labels

    return definition()


# --------------------------------------------------------------------------------------------
# what is left behind, and the reference batches


def _children() -> dict[int, str]:
    """This process's child processes (pid -> state; a zombie, "Z", counts)."""
    me = str(os.getpid())
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found[int(entry)] = fields[0]
    return found


def _shm_files() -> list[str]:
    return glob.glob(f"/dev/shm/augkit-{os.getpid()}-*")


def _eventually(check: Callable[[], Any], seconds: float = BOUND) -> Any:
    """Poll ``check`` until it returns something true (or the bound passes): its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def _worker_pids(pipe: Pipeline) -> set[int]:
    pool = pipe._engine._workers if pipe._engine is not None else None
    return set(pool.worker_pids()) if pool is not None else set()


def _stray_children(pipe: Pipeline, baseline: set[int]) -> set[int]:
    """Children of this process that are neither old nor a live worker of ``pipe``."""
    return set(_children()) - baseline - _worker_pids(pipe)


def _our_threads(before: set[threading.Thread]) -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t not in before and t.name.startswith("augkit") and t.is_alive()
    ]


def _batch(outputs: tuple[Any, ...]) -> list[Any]:
    """A batch as plain data: every output's samples and the samples' files."""
    return [([np.array(s) for s in out], list(out._source_info)) for out in outputs]


def _assert_same_batch(got: list[Any], want: list[Any]) -> None:
    for (samples, files), (ref_samples, ref_files) in zip(got, want, strict=True):
        assert files == ref_files
        for a, b in zip(samples, ref_samples, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)


_REFERENCES: dict[str, list[list[Any]]] = {}


def reference(mode_name: str) -> list[list[Any]]:
    """The first two batches of a fault-free pipeline in this mode (same seed)."""
    if mode_name not in _REFERENCES:
        pipe = build(MODES[mode_name], "none")
        try:
            _REFERENCES[mode_name] = [_batch(pipe.run()), _batch(pipe.run())]
        finally:
            pipe.close()
    return _REFERENCES[mode_name]


def _no_shm_files(mode: Mode) -> bool:
    if mode.debug or not mode.exec_async:  # synchronous: nothing in flight
        return _shm_files() == []
    return _eventually(lambda: not _shm_files())


def _expected_words(fault: str, mode: Mode) -> str:
    if fault in WORKER_FAULTS:
        return WORKER_FAULTS[fault]
    if fault == "write" and mode.flavour == "python":
        return r"ValueError: assignment destination is read-only \(the inputs are read-only"
    if fault == "write":
        kind = "torch tensors" if mode.flavour == "torch" else "DLPack capsules"
        return rf"wrote into input 0.*the {kind} it gets share memory with the pipeline"
    return RETURN_FAULTS[fault]


# --------------------------------------------------------------------------------------------
# the matrix


@pytest.mark.parametrize(("mode_name", "fault"), _cases())
def test_a_fault_is_a_clear_error_and_the_pipeline_goes_on(mode_name, fault):
    mode = MODES[mode_name]
    want = reference(mode_name)
    baseline = set(_children())
    pipe = build(mode, fault, timeout=TIMEOUT if fault == "hang" else mode.timeout)
    try:
        start = time.monotonic()
        with pytest.raises(OperatorError) as info:
            pipe.run()
        assert time.monotonic() - start < BOUND
        error = info.value
        message = str(error)

        # what was wrong, in plain words; which operator and function
        assert re.search(_expected_words(fault, mode), message, re.S), message
        kind = {"python": "PythonFunction", "torch": "TorchPythonFunction"}.get(
            mode.flavour, "DLTensorPythonFunction"
        )
        assert re.match(rf"operator {kind}_\d+ \(function .*augment", message), message
        assert error.operator.startswith(f"{kind}_")
        # which sample: its index and file; a call for the whole batch: the batch's files
        if mode.batch and (fault in BATCH_LEVEL or (fault == "write" and mode.flavour == "python")):
            assert error.sample_index is None
            files = ", ".join(FILES[:BATCH])
            assert f"in the call for the whole batch: samples 0-2: {files}" in message
        else:
            assert error.sample_index == BAD and error.source_info == FILES[BAD]
            assert f"sample #{BAD} ({FILES[BAD]})" in message
        if fault == "raise":
            assert isinstance(error.__cause__, ValueError)

        # nothing left behind (with prefetching, a batch computed ahead may have a call in
        # flight, whose input file lives until its worker has mapped it: wait for that)
        assert _no_shm_files(mode)
        assert _eventually(lambda: not _stray_children(pipe, baseline)), _children()

        # the next run() gives the next batch, as a fresh pipeline gives it
        _assert_same_batch(_batch(pipe.run()), want[1])
        assert _no_shm_files(mode)
    finally:
        pipe.close()
    assert _eventually(lambda: not set(_children()) - baseline), _children()
    assert _shm_files() == []


# --------------------------------------------------------------------------------------------
# other faults and settings


def test_timeout_needs_a_process():
    """A thread cannot be stopped: a timeout is refused where the calls run on threads."""
    for parallel in ("threads", "serial"):
        with pytest.raises(ArgumentError, match="timeout needs worker processes"):
            fn.python_function(function=lambda: np.zeros(1), parallel=parallel, timeout=1)
    with pytest.raises(ArgumentError, match="timeout needs worker processes, which run only CPU"):
        fn.python_function(function=lambda: np.zeros(1), device="gpu", timeout=1)
    with pytest.raises(ArgumentError, match="timeout must be a positive number"):
        fn.python_function(function=lambda: np.zeros(1), timeout=0)


def test_system_exit_in_a_function_is_an_operator_error():
    def exits(image: np.ndarray, label: np.ndarray) -> Any:
        raise SystemExit(2)

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=1, exec_async=False)
    def definition():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), files=FILES)
        out, _ = fn.python_function(jpegs, labels, function=exits, num_outputs=2)
        return out

    pipe = definition()
    with pytest.raises(OperatorError, match=r"sample #0 \(objects/clock.*SystemExit: 2"):
        pipe.run()
    pipe.close()


def test_a_call_that_fails_before_any_reply_leaves_no_shared_memory():
    """The input segments of a first call are unlinked when the call fails (no reply did)."""
    generator = (i for i in range(3))  # a live generator cannot be pickled (a lock can now)
    with WorkerPool(2) as pool:
        with pytest.raises(WorkerError, match="cannot be pickled"):
            pool.map("gen", lambda args, extra: generator, [(np.zeros(4), None)] * 2)
        assert _shm_files() == []
        with pytest.raises(WorkerError, match="exited with code 3"):
            pool.map("exit", lambda args, extra: os._exit(3), [(np.zeros(4), None)] * 2)
        assert _shm_files() == []
        results = pool.map("fine", lambda args, extra: args * 2, [(np.ones(4), None)] * 2)
        assert [ok for ok, _ in results] == [True, True]
    assert _shm_files() == []


# --------------------------------------------------------------------------------------------
# KeyboardInterrupt during run()

INTERRUPT_MODES = [
    "threads-sync",
    "threads-prefetch",
    "serial-random",
    "debug",
    "processes-sync",
    "processes-prefetch",
    "processes-debug",
]


def _main_thread_in_run() -> bool:
    """Whether the main thread is inside ``Pipeline.run`` now."""
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "run" and code.co_filename.endswith(PIPELINE_SOURCE):
            return True
        frame = frame.f_back
    return False


PIPELINE_SOURCE = os.path.join("augkit", "pipeline", "__init__.py")


def _interrupt_when_started(flags: str) -> threading.Thread:
    """A thread that sends SIGINT to this process (as Jupyter's stop button does) once the
    slow function has begun and the main thread is inside ``run()``."""
    started = os.path.join(flags, "started")

    def interrupt() -> None:
        if _eventually(lambda: os.path.exists(started) and _main_thread_in_run()):
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt, name="test-interrupter", daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("at", [0, 1], ids=["first-batch", "second-batch"])
@pytest.mark.parametrize("mode_name", INTERRUPT_MODES)
def test_keyboard_interrupt_leaves_nothing_and_the_batch_is_computed_again(mode_name, at, tmp_path):
    assert threading.current_thread() is threading.main_thread()
    mode = MODES[mode_name]
    want = reference(mode_name)
    flags = str(tmp_path)
    (tmp_path / "slow").touch()
    baseline = set(_children())
    threads_before = set(threading.enumerate())
    # the slow sample: sample 1 of batch ``at``
    pipe = build(mode, "slow", flags, bad=BAD + BATCH * at)
    try:
        # Two run()s; the interrupt comes in the one that waits for the slow sample. That is
        # the second one for at=1, unless the first waits for it too: with prefetching, batch
        # 1 is computed ahead, and where calls run one at a time (serially, or in a pool that
        # takes one call at a time) batch 1's slow call may get there before batch 0's.
        delivered: list[Any] = []
        try:
            interrupter = _interrupt_when_started(flags)
            with pytest.raises(KeyboardInterrupt):
                while len(delivered) < 2:
                    delivered.append(_batch(pipe.run()))
            interrupter.join()
        finally:
            (tmp_path / "slow").unlink()  # the calls still running return now
        assert len(delivered) <= at
        for k, batch in enumerate(delivered):
            _assert_same_batch(batch, want[k])
        interrupted = len(delivered)

        # nothing is left working: no stray or busy process, no thread, no file
        assert _shm_files() == []
        assert _eventually(lambda: not _stray_children(pipe, baseline)), _children()
        if mode.in_workers:  # the busy workers were stopped (they start again when needed)
            assert _eventually(lambda: not set(_children()) - baseline), _children()
        assert _eventually(lambda: not _our_threads(threads_before)), _our_threads(threads_before)

        # the interrupted batch again, then the one after it: nothing skipped or repeated
        _assert_same_batch(_batch(pipe.run()), want[interrupted])
        if interrupted == 0:
            _assert_same_batch(_batch(pipe.run()), want[1])
        assert _shm_files() == []
    finally:
        pipe.close()
    assert _eventually(lambda: not set(_children()) - baseline), _children()
    assert _shm_files() == []


def test_operator_errors_pickle_whole():
    """An OperatorError crosses a process boundary (worker processes, Ray tasks) with its
    message and attributes: ``except OperatorError`` works in the process that waits."""
    import pickle

    from augkit.errors import OperatorError

    error = OperatorError("boom", operator="Op_1", sample_index=3, source_info="a/b.jpg")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is OperatorError and str(again) == str(error)
    assert (again.operator, again.sample_index, again.source_info) == ("Op_1", 3, "a/b.jpg")
