"""augkit.workers: the process pool that runs Python functions on NumPy data.

Correctness only (no timings): bit-exact results, notebook-style functions, errors, deaths,
timeouts, interrupts, and that no process or shared-memory file outlives a pool.
"""

from __future__ import annotations

import collections
import contextvars
import ctypes
import gc
import glob
import multiprocessing
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from augkit import workers
from augkit.workers import RemoteError, WorkerError, WorkerPool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------------
# helpers


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    """The pids still alive after waiting up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


def _pool_files(pool: WorkerPool) -> list[str]:
    return glob.glob(f"/dev/shm/{pool._state.prefix}*")


def _our_files() -> list[str]:
    return glob.glob(f"/dev/shm/augkit-{os.getpid()}-*")


def _worker_children(pids: list[int]) -> list[multiprocessing.process.BaseProcess]:
    """Children of this process among ``pids`` (a pool's workers) that are still alive. Only
    the pool under test counts: a pipeline of an earlier test that the garbage collector has
    not reached yet may still hold workers of its own (seen once in a full run)."""
    return [p for p in multiprocessing.active_children() if p.pid in pids]


def _assert_same(got: Any, want: Any) -> None:
    """Equal structure, and arrays equal bit for bit (dtype, shape, bytes)."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _assert_same(got[k], want[k])
    else:
        assert got == want


def _ok(results: list[tuple[bool, Any]]) -> list[Any]:
    for ok, value in results:
        assert ok, value
    return [value for _, value in results]


def _images() -> list[np.ndarray]:
    """Images and odd arrays: several dtypes and shapes, views, read-only, empty."""
    rng = np.random.default_rng(0)
    read_only = rng.integers(0, 256, (24, 16, 3), dtype=np.uint8)
    read_only.flags.writeable = False
    return [
        rng.integers(0, 256, (48, 64, 3), dtype=np.uint8),
        rng.integers(0, 256, (31, 17, 1), dtype=np.uint8),
        rng.random((20, 30, 3), dtype=np.float32),
        rng.random((10, 12, 3)).astype(np.float16),
        rng.integers(-(2**40), 2**40, (9, 7, 2), dtype=np.int64),
        rng.random((8, 8, 1)) > 0.5,
        rng.integers(0, 256, (100, 80, 3), dtype=np.uint8)[::2, ::-3],  # not contiguous
        read_only,
        np.zeros((0, 5, 3), np.uint8),
    ]


def augment(args: Any, extra: Any) -> Any:
    """A module-level function (cloudpickle sends it by reference)."""
    image, scale = args
    flipped = np.flip(image, axis=1).astype(np.float32) * np.float32(scale) + extra["bias"]
    return (
        flipped,
        image.sum(axis=(0, 1), dtype=np.float64),
        [image[::2, ::3], {"pixels": int(image.size), "name": extra["name"]}],
    )


def _augment_items() -> list[tuple[Any, Any]]:
    return [
        ((image, 0.5 + i), {"bias": np.float32(i) / 7, "name": f"img{i}"})
        for i, image in enumerate(_images())
    ]


NOTEBOOK_CELL = """
import numpy as np

SCALE = np.arange(1, 5, dtype=np.float32)


def helper(x):
    return x * SCALE


def user_fn(args, extra):
    (a,) = args
    return helper(a) + extra


def failing(args, extra):
    raise KeyError("missing " + str(extra))
"""


def _notebook_functions() -> dict[str, Any]:
    """Functions as a notebook defines them: module ``__main__``, not importable by name."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(NOTEBOOK_CELL, "/notebook/cell_7.py", "exec"), namespace)
    return namespace


class CustomError(Exception):
    pass


class NeedsTwoArgs(Exception):
    """Pickles, but does not unpickle (its __init__ takes two arguments)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    pool = WorkerPool(2, "fork")
    yield pool
    pids = pool.worker_pids()
    pool.close()
    assert _wait_gone(pids) == []
    assert _pool_files(pool) == []


# --------------------------------------------------------------------------------------------
# results


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_results_equal_in_process_bit_for_bit(start_method):
    items = _augment_items()
    offset = np.arange(12, dtype=np.int32).reshape(3, 4)
    notebook = _notebook_functions()
    with WorkerPool(2, start_method) as pool:
        assert pool.worker_pids() == []  # lazy start
        got = _ok(pool.map("augment", augment, items))
        _assert_same(got, [augment(*item) for item in items])

        closure_items = [(np.full((3, 4), i, np.int32), i) for i in range(5)]
        closure = lambda args, extra: args + offset * extra  # noqa: E731
        got = _ok(pool.map("closure", closure, closure_items))
        _assert_same(got, [closure(*item) for item in closure_items])

        main_items = [((np.full(4, i, np.float32),), float(i)) for i in range(3)]
        got = _ok(pool.map("notebook", notebook["user_fn"], main_items))
        _assert_same(got, [notebook["user_fn"](*item) for item in main_items])
        assert len(pool.worker_pids()) == 2


def test_results_are_fresh_writable_arrays(pool):
    items = [(np.full((4, 4), i, np.uint8), None) for i in range(4)]
    got = _ok(pool.map("identity", lambda args, extra: args, items))
    for array in got:
        assert array.flags.writeable and array.flags.c_contiguous and array.base is None
        array[:] = 99  # must not change the next call's results
    again = _ok(pool.map("identity", lambda args, extra: args, items))
    assert [int(a[0, 0]) for a in again] == [0, 1, 2, 3]


def test_odd_dtypes_and_layouts_round_trip(pool):
    arrays = [
        *_images(),
        np.array(5, np.int16),  # 0-d
        np.arange(5, dtype=">i4"),  # big-endian
        np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]),  # structured
        np.arange(24, dtype=np.complex64).reshape(2, 3, 4).transpose(2, 0, 1),
        np.zeros((0,), np.float64),
        np.array([b"ab", b"c"]),
        np.array(["unicode", "é"]),
    ]
    items = [(array, None) for array in arrays]
    got = _ok(pool.map("identity", lambda args, extra: args, items))
    _assert_same(got, arrays)


def test_nested_structures_and_small_leaves(pool):
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    b = np.ones((2, 2), bool)
    args = [a, (b, 3, "text", None), {"k": a[:, 1], "n": 2.5}, []]

    def fn(args: Any, extra: Any) -> Any:
        first, (second, n, text, nothing), mapping, empty = args
        return {"sum": [first * n, ~second], "meta": (text, nothing, mapping["n"], extra, empty)}

    got = _ok(pool.map("nested", fn, [(args, "x"), (args, "y")]))
    _assert_same(got, [fn(args, "x"), fn(args, "y")])


def test_inputs_are_read_only_in_the_worker(pool):
    def writes(args: np.ndarray, extra: Any) -> Any:
        args[0] = 1
        return args

    ((ok, error),) = pool.map("writes", writes, [(np.zeros(3), None)])
    assert not ok and isinstance(error, RemoteError)
    assert isinstance(error.exception, ValueError) and "read-only" in str(error.exception)


def test_items_are_spread_in_contiguous_chunks(pool):
    pids = _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, None)] * 5))
    assert pids[0] == pids[1] != pids[2] == pids[3] == pids[4]
    assert sorted(set(pids)) == sorted(pool.worker_pids())
    assert _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, None)])) == [pids[0]]
    assert pool.map("pid", lambda args, extra: os.getpid(), []) == []


def test_functions_are_cached_by_key(pool, monkeypatch):
    item = [(np.int64(2), None)]
    assert _ok(pool.map("f", lambda args, extra: args * 10, item)) == [20]
    # the same key means the same function: the cached one runs
    assert _ok(pool.map("f", lambda args, extra: args * 99, item)) == [20]
    assert _ok(pool.map("g", lambda args, extra: args + 1, item)) == [3]
    # a small cache: evicted functions are sent again, the mirror stays in step
    monkeypatch.setattr(workers, "_FN_CACHE_SIZE", 2)
    for factor in [3, 4, 5, 3, 4, 5, 6, 3]:
        key = f"times{factor}"
        assert _ok(pool.map(key, lambda args, extra, f=factor: args * f, item)) == [2 * factor]
    assert all(len(slot.keys) <= 2 for slot in pool._state.slots)


def test_a_notebook_function_travels_by_value(pool):
    notebook = _notebook_functions()
    fn = notebook["user_fn"]
    assert fn.__module__ == "__main__"
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(fn)  # not importable by name: only by value
    got = _ok(pool.map("cell", fn, [((np.ones(4, np.float32),), 1.0)]))
    _assert_same(got, [np.array([2, 3, 4, 5], np.float32)])


def _segment_names(pool: WorkerPool) -> list[str]:
    names = []
    for slot in pool._state.slots:
        assert slot.input is not None and slot.output is not None
        names += [slot.input.name, slot.output.name]
    return names


def test_segments_are_reused_grown_and_leave_no_files(pool):
    small = [(np.zeros((8, 8), np.uint8), None)] * 4
    _ok(pool.map("id", lambda args, extra: args, small))
    names = _segment_names(pool)  # one input and one output segment per worker
    assert all(name.startswith(f"augkit-{os.getpid()}-") for name in names)
    assert _pool_files(pool) == []  # unlinked once both processes had mapped them
    _ok(pool.map("id", lambda args, extra: args, small))
    assert _segment_names(pool) == names  # reused
    big = [(np.ones((1200, 1000), np.uint8), None)] * 4  # more than the first megabyte
    got = _ok(pool.map("id", lambda args, extra: args, big))
    assert all(int(a.sum()) == 1_200_000 for a in got)
    grown = _segment_names(pool)
    assert not set(grown) & set(names)  # re-created larger
    assert _pool_files(pool) == []
    assert _ok(pool.map("id", lambda args, extra: args, small[:2]))[1].shape == (8, 8)


# --------------------------------------------------------------------------------------------
# errors from the user's function, and what cannot be sent


def test_exceptions_come_back_per_item(pool):
    def fn(args: Any, extra: Any) -> Any:
        if extra == 1:
            raise CustomError("bad sample 1")
        if extra == 2:
            raise NeedsTwoArgs("a", "b")
        return extra * 2

    pids = pool.worker_pids()
    results = pool.map("raising", fn, [(None, i) for i in range(4)])
    assert results[0] == (True, 0) and results[3] == (True, 6)
    ok, error = results[1]
    assert not ok and isinstance(error, RemoteError)
    assert type(error.exception) is CustomError and str(error.exception) == "bad sample 1"
    assert "in fn" in error.traceback and "test_workers.py" in error.traceback
    assert 'raise CustomError("bad sample 1")' in error.traceback  # forked: source lines too
    assert "CustomError: bad sample 1" in str(error)
    ok, error = results[2]
    assert not ok and type(error.exception) is RuntimeError  # could not be unpickled
    assert "NeedsTwoArgs" in str(error.exception) and "a/b" in str(error.exception)
    # the workers survived
    assert pids == [] or pool.worker_pids() == pids
    assert _ok(pool.map("raising", fn, [(None, 5)])) == [10]


def test_notebook_exceptions_name_the_cell(pool):
    notebook = _notebook_functions()
    ((ok, error),) = pool.map("failing", notebook["failing"], [(None, "x")])
    assert not ok and type(error.exception) is KeyError
    assert 'File "/notebook/cell_7.py"' in error.traceback and "in failing" in error.traceback


def test_unpicklable_results_and_object_arrays_are_item_errors(pool):
    def fn(args: Any, extra: Any) -> Any:
        if extra == 0:
            return threading.Lock()
        if extra == 1:
            return [np.zeros(2), np.array([{}, None], dtype=object)]
        return np.full(2, extra)

    results = pool.map("results", fn, [(None, i) for i in range(3)])
    assert not results[0][0] and isinstance(results[0][1].exception, TypeError)
    assert "item 0 cannot be sent back from the worker" in str(results[0][1].exception)
    assert not results[1][0] and isinstance(results[1][1].exception, TypeError)
    assert "cannot send an array of Python objects back" in str(results[1][1].exception)
    _assert_same(results[2], (True, np.full(2, 2)))


def test_object_arrays_are_refused_as_inputs(pool):
    items = [(np.zeros(2), None), ([np.array(["a", 1], dtype=object)], None)]
    with pytest.raises(WorkerError, match="cannot send an array of Python objects to a worker"):
        pool.map("id", lambda args, extra: args, items)
    _assert_same(_ok(pool.map("id", lambda args, extra: args, items[:1])), [np.zeros(2)])


def test_an_unpicklable_function_is_a_worker_error(pool):
    numbers = (i for i in range(3))  # a generator cannot be pickled

    def holds_a_generator(args: Any, extra: Any) -> Any:
        return args + next(numbers)

    with pytest.raises(WorkerError, match=r"cannot send the function .*holds_a_generator"):
        pool.map("generator", holds_a_generator, [(1, None)])
    assert _ok(pool.map("fine", lambda args, extra: args, [(1, None)])) == [1]


class _PerThread(threading.local):
    """A threading.local subclass whose __init__ sets defaults (run on every thread)."""

    def __init__(self) -> None:
        self.calls = 0


class _NeedsArguments(threading.local):
    def __init__(self, size: int) -> None:
        self.size = size


class _PicklesItself(threading.local):
    def __reduce__(self) -> Any:
        return (_PicklesItself, (), {"restored": True})


class _KeepsItsState(threading.local):
    def __getstate__(self) -> Any:
        return {"kept": self.__dict__.get("kept")}


def _tries_lock(lock: Any) -> bool:
    """Whether another thread can take ``lock`` at once (releasing it again)."""
    taken: list[bool] = []

    def attempt() -> None:
        taken.append(lock.acquire(blocking=False))
        if taken[0]:
            lock.release()

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return taken[0]


def test_per_thread_state_and_locks_travel_fresh():
    """What a function's globals may hold that cannot be pickled as it is: per-thread state
    (empty in the worker, or as __init__ fills it) and locks (unlocked in the worker)."""
    plain = threading.local()
    plain.transform = "this thread's"
    per_thread = _PerThread()
    per_thread.calls = 5
    lock, rlock = threading.Lock(), threading.RLock()
    condition = threading.Condition(rlock)
    var = contextvars.ContextVar("var", default="default")
    var.set("set here")
    bare_var = contextvars.ContextVar("bare")
    bare_var.set("set here")
    keeps = _KeepsItsState()
    keeps.kept = "kept"
    lock.acquire()
    rlock.acquire()
    try:
        assert not _tries_lock(lock) and not _tries_lock(rlock)
        sent = (plain, per_thread, lock, rlock, condition, lock, var, bare_var)
        back = pickle.loads(workers._pickle_function_bytes((*sent, _PicklesItself(), keeps)))
    finally:
        rlock.release()
        lock.release()
    b_plain, b_per_thread, b_lock, b_rlock, b_condition, b_lock_again, b_var, b_bare = back[:8]
    assert type(b_plain) is threading.local and not hasattr(b_plain, "transform")
    assert type(b_per_thread) is _PerThread and b_per_thread.calls == 0
    seen = []
    other = threading.Thread(target=lambda: seen.append(b_per_thread.calls))
    other.start()
    other.join()
    assert seen == [0]  # still a threading.local: __init__ runs on each new thread
    assert type(b_lock) is type(lock) and not b_lock.locked() and _tries_lock(b_lock)
    assert type(b_rlock) is type(rlock) and _tries_lock(b_rlock)
    assert b_lock_again is b_lock  # identity is kept within one pickle
    assert type(b_condition) is threading.Condition and b_condition._lock is b_rlock
    assert b_condition._waiters == collections.deque()
    assert b_var is not var and b_var.name == "var" and b_var.get() == "default"
    with pytest.raises(LookupError):
        b_bare.get()
    # a subclass that pickles itself is left to: its own __reduce__, its own __getstate__
    assert type(back[8]) is _PicklesItself and back[8].restored
    assert type(back[9]) is _KeepsItsState and back[9].kept == "kept"


def test_objects_built_on_locks_travel_with_their_other_state():
    """A Semaphore, an Event, a Queue: fresh locks, the rest copied as any global is."""
    semaphore, event, items = threading.Semaphore(2), threading.Event(), queue.Queue()
    event.set()
    items.put("item")
    semaphore.acquire()
    try:
        sent = (semaphore, event, items)
        b_semaphore, b_event, b_items = pickle.loads(workers._pickle_function_bytes(sent))
    finally:
        semaphore.release()
    assert b_semaphore.acquire(blocking=False) and not b_semaphore.acquire(blocking=False)
    assert b_event.is_set()
    assert b_items.get_nowait() == "item" and b_items.not_empty._lock is b_items.mutex


def test_a_threading_local_subclass_whose_init_takes_arguments_is_refused(pool):
    sizes = _NeedsArguments(3)

    def uses_it(args: Any, extra: Any) -> Any:
        return sizes.size

    with pytest.raises(WorkerError, match=r"_NeedsArguments .*its __init__ takes arguments"):
        pool.map("needs", uses_it, [(1, None)])


STATEFUL_CELL = """
import threading

_local = threading.local()
_lock = threading.Lock()


class Hits(threading.local):
    def __init__(self):
        self.count = 0


_hits = Hits()


def counted(args, extra):
    with _lock:
        _hits.count += 1
    if not hasattr(_local, "first"):
        _local.first = extra
    return _local.first, _hits.count
"""


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_notebook_function_with_a_thread_local_and_a_lock_runs_in_workers(start_method):
    """The per-thread recipe as a notebook writes it: module ``__main__``, sent by value with
    its globals. Each worker fills its own empty copy; a lock the parent holds is free there."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(STATEFUL_CELL, "/notebook/cell_9.py", "exec"), namespace)
    counted = namespace["counted"]
    namespace["_local"].first = "parent"
    namespace["_hits"].count = 100
    items = [((), i) for i in range(4)]
    with WorkerPool(2, start_method) as pool, namespace["_lock"]:
        got = _ok(pool.map("counted", counted, items, timeout=60))
        # the function is cached in the workers: their state carries on from call to call
        again = _ok(pool.map("counted", counted, items, timeout=60))
    assert got == [(0, 1), (0, 2), (2, 1), (2, 2)]  # two items per worker, in order
    assert again == [(0, 3), (0, 4), (2, 3), (2, 4)]
    assert namespace["_local"].first == "parent" and namespace["_hits"].count == 100


def test_a_function_that_cannot_load_in_the_worker(pool):
    class Unloadable:
        def __reduce__(self) -> Any:
            return (_raise_on_load, ())

    thing = Unloadable()
    with pytest.raises(WorkerError, match="could not load the function"):
        pool.map("unloadable", lambda args, extra: thing, [(1, None)])
    # the key was not cached in the worker: a later call with it sends the function again
    assert _ok(pool.map("unloadable", lambda args, extra: args, [(1, None)])) == [1]


def _raise_on_load() -> Any:
    if multiprocessing.parent_process() is not None:
        raise ImportError("this thing only loads in the parent")
    return None


# --------------------------------------------------------------------------------------------
# deaths, timeouts, interrupts


def _exit_at_five(args: Any, extra: Any) -> Any:
    if extra == 5:
        os._exit(3)
    return extra


def test_a_worker_that_exits_is_a_worker_error_and_is_replaced(pool):
    items = [(None, i) for i in range(8)]
    _ok(pool.map("warm", lambda args, extra: extra, items))
    before = pool.worker_pids()
    with pytest.raises(WorkerError) as info:
        pool.map("exit", _exit_at_five, items)
    error = info.value
    message = str(error)
    assert "worker 1" in message and "exited with code 3" in message
    assert "item 5" in message and "items 4-7" in message
    assert error.worker == 1 and error.exitcode == 3 and error.running == 5
    assert error.items == (4, 5, 6, 7)
    assert _ok(pool.map("fine", lambda args, extra: extra, items)) == list(range(8))
    after = pool.worker_pids()
    assert len(after) == 2 and after[0] == before[0] and after[1] != before[1]
    assert _wait_gone(before[1:]) == []
    assert _pool_files(pool) == []


def _kill_self(args: Any, extra: Any) -> Any:
    if extra == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return extra


def _segfault(args: Any, extra: Any) -> Any:
    if extra == 1:
        import faulthandler

        faulthandler.disable()  # keep the test's output quiet
        ctypes.string_at(0)
    return extra


@pytest.mark.parametrize(("fn", "signal_name"), [(_kill_self, "SIGKILL"), (_segfault, "SIGSEGV")])
def test_a_worker_killed_by_a_signal(pool, fn, signal_name):
    items = [(None, i) for i in range(2)]
    start = time.monotonic()
    with pytest.raises(WorkerError, match=f"killed by signal {signal_name}.*item 1"):
        pool.map("dies", fn, items)
    assert time.monotonic() - start < 10
    assert _ok(pool.map("fine", lambda args, extra: extra, items)) == [0, 1]


def test_a_death_stops_the_other_busy_workers(pool):
    def fn(args: Any, extra: Any) -> Any:
        if extra == 0:
            time.sleep(60)
        os._exit(4)

    _ok(pool.map("warm", lambda args, extra: extra, [(None, 0), (None, 1)]))
    before = pool.worker_pids()
    with pytest.raises(WorkerError, match=r"exited with code 4.*other busy workers were stopped"):
        pool.map("sleep-or-die", fn, [(None, 0), (None, 1)])
    assert _wait_gone(before) == []  # the sleeping one too: its reply would be stale
    assert _ok(pool.map("fine", lambda args, extra: extra, [(None, 0), (None, 1)])) == [0, 1]


def test_a_timeout_kills_the_stuck_workers(pool):
    def fn(args: Any, extra: Any) -> Any:
        if extra == 3:
            time.sleep(60)
        return extra

    items = [(None, i) for i in range(4)]
    _ok(pool.map("warm", lambda args, extra: extra, items))
    before = pool.worker_pids()
    with pytest.raises(WorkerError, match=r"timed out after 0\.5 s.*item 3") as info:
        pool.map("stuck", fn, items, timeout=0.5)
    assert info.value.worker == 1 and info.value.running == 3
    assert _wait_gone(before[1:]) == [] and _alive(before[0])
    assert _ok(pool.map("stuck", fn, items[:3], timeout=30)) == [0, 1, 2]


def test_a_keyboard_interrupt_restarts_the_busy_workers(pool):
    _ok(pool.map("warm", lambda args, extra: extra, [(None, 0), (None, 1)]))
    before = pool.worker_pids()
    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            pool.map("sleep", lambda args, extra: time.sleep(60), [(None, 0), (None, 1)])
    finally:
        timer.cancel()
    assert _wait_gone(before) == []
    assert _ok(pool.map("fine", lambda args, extra: extra, [(None, 0), (None, 1)])) == [0, 1]
    assert not set(pool.worker_pids()) & set(before)


def test_workers_ignore_sigint(pool):
    pids = _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)]))
    for pid in pids:
        os.kill(pid, signal.SIGINT)
    time.sleep(0.1)
    assert all(_alive(pid) for pid in pids)
    assert _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)])) == pids


def test_a_worker_that_died_while_idle_is_replaced_silently(pool):
    pids = _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)]))
    os.kill(pids[0], signal.SIGKILL)
    assert _wait_gone(pids[:1]) == []
    again = _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)]))
    assert again[0] != pids[0] and again[1] == pids[1]


def test_workers_outlive_the_thread_that_first_called_map(pool):
    # PR_SET_PDEATHSIG fires when the forking *thread* ends: workers come from the launcher
    thread = threading.Thread(target=pool.map, args=("x", lambda a, e: e, [(None, 0)] * 2))
    thread.start()
    thread.join()
    pids = pool.worker_pids()
    assert len(pids) == 2
    time.sleep(0.2)
    assert all(_alive(pid) for pid in pids)
    assert _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0)] * 2)) == pids


# --------------------------------------------------------------------------------------------
# lifetime: close, garbage collection, parent death, fork


def test_close_kills_the_workers_and_unlinks_every_segment():
    pool = WorkerPool(2)
    _ok(pool.map("id", lambda args, extra: args, [(np.zeros((64, 64)), None)] * 3))
    pids = pool.worker_pids()
    assert len(pids) == 2
    # a name created just before a death (never reported, never unlinked) goes too
    stale = f"/dev/shm/{pool._state.prefix}1.7-out-1"
    open(stale, "wb").close()
    pool.close()
    pool.close()  # idempotent
    assert _wait_gone(pids) == []
    assert _pool_files(pool) == [] and _our_files() == []
    assert _worker_children(pids) == [] and pool.worker_pids() == []
    with pytest.raises(WorkerError, match="closed"):
        pool.map("id", lambda args, extra: args, [(1, None)])


def test_garbage_collection_cleans_up():
    pool = WorkerPool(2)
    _ok(pool.map("id", lambda args, extra: args, [(np.zeros((64, 64)), None)] * 3))
    pids = pool.worker_pids()
    prefix = pool._state.prefix
    del pool
    gc.collect()
    assert _wait_gone(pids) == []
    assert glob.glob(f"/dev/shm/{prefix}*") == [] and _our_files() == []
    assert _worker_children(pids) == []


def test_close_from_another_thread_during_map():
    pool = WorkerPool(2)
    _ok(pool.map("warm", lambda args, extra: extra, [(None, 0), (None, 1)]))
    pids = pool.worker_pids()
    threading.Timer(0.3, pool.close).start()
    with pytest.raises(WorkerError, match="closed while map"):
        pool.map("sleep", lambda args, extra: time.sleep(60), [(None, 0), (None, 1)])
    assert _wait_gone(pids) == [] and _pool_files(pool) == []


PARENT_SCRIPT = """
import os, sys, threading, time
import numpy as np
from augkit.workers import WorkerPool

pool = WorkerPool(2)
pool.map("warm", lambda args, extra: args, [(np.zeros(3), None)] * 2)
# worker 0 busy in a long call (it cannot see its pipe close), worker 1 idle
threading.Thread(
    target=pool.map, args=("sleep", lambda a, e: time.sleep(60), [(None, None)]), daemon=True
).start()
time.sleep(0.3)
print(os.getpid(), *pool.worker_pids(), flush=True)
os._exit(0)  # no close(), no finalizer
"""


def test_workers_die_with_their_parent():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", PARENT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=True,
    )
    parent, *pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 2, done.stderr
    assert _wait_gone(pids) == []
    assert glob.glob(f"/dev/shm/augkit-{parent}-*") == []


def test_a_pool_used_in_a_forked_child_starts_its_own_workers(pool):
    parent_pids = _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)]))
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python >= 3.12: fork + threads
        child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child)
        code = 1
        try:
            os.close(read)
            got = _ok(pool.map("pid", lambda args, extra: os.getppid(), [(None, 0), (None, 1)]))
            code = 0 if got == [os.getpid(), os.getpid()] else 2
            pool.close()
            code = code or (3 if _our_files() else 0)
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        status = os.read(read, 1)
    finally:
        os.close(read)
        os.waitpid(child, 0)
    assert status == b"\x00"
    assert all(_alive(pid) for pid in parent_pids)
    assert _ok(pool.map("pid", lambda args, extra: os.getpid(), [(None, 0), (None, 1)])) == (
        parent_pids
    )


# --------------------------------------------------------------------------------------------
# settings


def test_start_method_rule(monkeypatch):
    monkeypatch.setattr(workers, "_cuda_initialized", lambda: False)
    assert workers._choose_start_method(None) == "fork"
    monkeypatch.setattr(workers, "_cuda_initialized", lambda: True)
    assert workers._choose_start_method(None) == "forkserver"
    for method in ["fork", "spawn", "forkserver"]:
        assert workers._choose_start_method(method) == method


CUDA_PROBE = """
import importlib.util, sys
from augkit.workers import _choose_start_method, _cuda_initialized

answers = [_cuda_initialized()]
if importlib.util.find_spec("torch"):
    import torch

    answers.append(_cuda_initialized())  # imported, CUDA not initialised: still safe
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        answers.append(_cuda_initialized())
        answers.append(_choose_start_method(None))
print(*answers)
"""


def test_a_cuda_context_is_detected():
    # in a fresh process: this one may have initialised CUDA in an earlier GPU test
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", CUDA_PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answers = done.stdout.split()
    assert answers[:2] in (["False"], ["False", "False"])
    if len(answers) > 2:  # a GPU: a live context means forkserver
        assert answers[2:] == ["True", "forkserver"]


def test_bad_arguments():
    for bad in [0, -1, 1.5, True, "2"]:
        with pytest.raises(ValueError, match="num_workers"):
            WorkerPool(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start_method"):
        WorkerPool(1, "thread")
    with WorkerPool(1) as pool, pytest.raises(ValueError, match="timeout"):
        pool.map("x", lambda a, e: a, [(1, None)], timeout=0)
    assert WorkerPool(3).num_workers == 3
