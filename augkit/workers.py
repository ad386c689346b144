"""A pool of worker processes that runs Python functions on NumPy data, with the arrays moved
through shared memory. Generic: it knows nothing about pipelines or operators.

Use::

    pool = WorkerPool(2)
    results = pool.map("op-3", fn, [(args, extra), ...], timeout=None)
    # results[i] is (True, fn(args_i, extra_i)) or (False, RemoteError)
    pool.close()

``args`` and the function's result are nested lists / tuples / dicts whose leaves are NumPy
arrays (sent through shared memory, never pickled) or small picklable objects. ``extra`` is
small and is pickled. ``fn`` is sent with cloudpickle (lambdas, closures, functions defined in
a notebook or ``__main__`` travel by value, with the globals they use).

Globals that hold per-thread state or synchronise threads cannot be pickled, yet are common in
such functions (``_local = threading.local()`` keeping one Albumentations transform per thread,
a lock around a cache). They travel as fresh objects, which is what they mean in another
process: per-thread state is never shared, so a worker's starts empty and the function fills it
lazily, as on a new thread; a lock is held by a thread of the parent, which the worker does not
have, so the worker's starts unlocked:

- ``threading.local``: empty; a subclass of it: a new instance (its ``__init__`` runs, as on
  every new thread), if its ``__init__`` takes no arguments (threading.local keeps the
  constructor's arguments out of reach, so a subclass whose ``__init__`` takes some is refused
  with a ``WorkerError``), unless the subclass pickles itself (its own ``__reduce__`` or
  ``__getstate__``);
- ``threading.Lock``, ``threading.RLock``: unlocked;
- ``threading.Condition``: on its (fresh) lock, without the parent's waiters;
- ``contextvars.ContextVar``: its name and default, unset.

Objects that merely contain locks (``Semaphore``, ``Event``, ``queue.Queue``) then pickle too,
their other state (a count, a flag, the queued items) copied as it was, like any global. Within
one function identity is kept (two globals naming one lock are one lock in the worker); each
worker has its own copies, kept with the cached function (below) from call to call.

Protocol (one duplex pipe per worker; every message is one pickled tuple)
-------------------------------------------------------------------------
- Items are split into contiguous chunks, one per worker (``min(num_workers, len(items))``
  workers are used; chunk sizes differ by at most one).
- Parent -> worker: ``("run", key, fn_bytes | None, evict_keys, input_segment_name, first_index,
  [(args_template, extra), ...])``. Before sending, the parent writes the chunk's arrays into
  that worker's input segment; a template is the args structure with every array replaced by an
  ``_ArrayRef(offset, shape, dtype)`` (C-contiguous, offsets aligned to 64 bytes).
- The function is cached in each worker by ``key``: ``fn_bytes`` is sent only the first time a
  worker sees ``key`` (a new key means a new function; the same key must always mean the same
  function). The parent keeps a mirror of each worker's cache (at most ``_FN_CACHE_SIZE``
  keys, least recently used first out) and tells the worker which keys to drop
  (``evict_keys``), so the two never disagree.
- The worker maps its input segment, rebuilds the arguments as read-only views (zero copy),
  writes the index of the item it is running into the segment's first 8 bytes (the parent reads
  it to say which item a dead worker was running), calls ``fn(args, extra)`` for each item,
  writes the result arrays into its own output segment, and replies
  ``("ok", output_segment_name, [(True, result_template) | (False, exception_bytes, traceback,
  summary), ...])``; or ``("fnerror", traceback)`` when the function cannot be unpickled, or
  ``("error", text)`` for any other failure (the parent then restarts that worker).
- The parent copies every result array out of the output segment into a fresh array, so both
  segments are reused by the next call.

Shared memory
-------------
Plain files in ``/dev/shm`` (tmpfs), mapped with ``mmap``; not
``multiprocessing.shared_memory``, whose resource tracker (3.11) unlinks segments it believes
leaked when another process exits. Every name starts with ``augkit-<parent pid>-<pool token>-``:
``...-<slot>-in-<n>`` for the parent's input segment of a worker slot,
``...-<slot>.<incarnation>-out-<n>`` for the output segment a worker process creates. A name
lives only until both processes have mapped the segment: the parent unlinks both files on the
first successful reply that uses them (the mappings stay valid), so ``/dev/shm`` holds nothing
of a running pool (but the names of a call in flight), and nothing is left even if the parent is
killed later. A call that fails (a death, a timeout, an interrupt, data that cannot be sent)
unlinks the input segments that no reply has unlinked yet; the next call makes new ones. A
segment is re-created larger when a call needs more room and never shrinks; a replaced worker
gets a new input segment. Space is reserved with ``posix_fallocate``, so a full ``/dev/shm``
(Docker's default is 64 MiB) gives a clear ``WorkerError`` instead of a SIGBUS. As a backstop
for names created just before a death, a replaced worker's incarnation prefix, and on
``close()`` or garbage collection the whole pool prefix, are unlinked.

Start method
------------
``start_method=None`` picks ``"fork"`` (fast start, nothing to import) unless a CUDA context
exists in this process (``torch.cuda.is_initialized()`` when torch is imported, or the CUDA
driver already loaded and initialised, which covers CuPy), where a forked child cannot use
CUDA: then ``"forkserver"``. The rule is evaluated each time workers are started. ``"fork"``,
``"spawn"`` and ``"forkserver"`` are honoured when given. Workers start on the first ``map()``
that needs them, not in the constructor. They are daemon processes (so they cannot start
processes of their own), as ``multiprocessing`` would otherwise wait for them at exit.

Deaths, timeouts, interrupts
----------------------------
While a call runs the parent waits with ``multiprocessing.connection.wait`` on the busy
workers' pipes and process sentinels at once, so a worker that dies (``os._exit``, a signal,
a segfault) is noticed at once: ``map`` raises ``WorkerError`` naming the worker, its exit code
or signal, the item it was running and the items it held. The other busy workers are stopped
(their replies would be stale), and every stopped or dead worker is replaced by a fresh one on
the next ``map``. A worker found dead between calls is replaced silently. ``timeout`` bounds
one call (from the moment requests are sent): on expiry the stuck workers are killed and
``WorkerError("... timed out after X s ...")`` is raised. Any exception while waiting
(``KeyboardInterrupt`` included) kills the busy workers before it propagates, so no stale
reply is ever read. Workers ignore SIGINT: a notebook's interrupt reaches only the parent.

Workers never outlive the parent: each one sets ``PR_SET_PDEATHSIG`` to SIGKILL (Linux; checked
against ``getppid()`` right after, for a parent that is already gone) and exits when its pipe
reaches end of file. ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the worker ends,
so workers are started from one long-lived launcher thread per pool, never from the (possibly
short-lived) thread that called ``map``. In forked workers the parent's other pipe ends and
mappings are closed, so that end of file reaches each worker.

Errors in the user's function come back per item as ``RemoteError`` (the original exception
when it can be pickled, else a ``RuntimeError`` with its text, plus the worker's traceback); the
worker carries on. Failures of the machinery (death, timeout, a function or data that cannot be
sent) raise ``WorkerError`` from ``map``.

Calls are serialised: one ``map`` at a time per pool (others wait). ``close()`` from another
thread while a call runs kills the workers, and that call raises ``WorkerError``. A pool used in
a forked child process (a DataLoader worker, say) starts its own workers there.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import glob
import inspect
import io
import multiprocessing
import os
import pickle
import queue
import secrets
import signal
import struct
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
import weakref
from collections import ChainMap, OrderedDict
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as _wait
from typing import Any, ClassVar, NamedTuple

import cloudpickle
import numpy as np

from augkit.backend import tune_allocator

__all__ = ["RemoteError", "WorkerError", "WorkerPool"]

_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_ALIGN = 64  # array offsets inside a segment
_CONTROL_BYTES = 64  # head of an input segment: the index of the item being run (int64)
_SEGMENT_QUANTUM = 1 << 20  # segment sizes are rounded up to this
_FN_CACHE_SIZE = 64  # functions kept per worker
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_PR_SET_PDEATHSIG = 1
_START_METHODS = ("fork", "spawn", "forkserver")
_OBJECT_ARRAY_INPUT = "cannot send an array of Python objects to a worker"
_OBJECT_ARRAY_RESULT = "cannot send an array of Python objects back from a worker"


class WorkerError(Exception):
    """A worker died, timed out, or could not run the call (not the user's exception).

    Attributes (``None`` / empty where they do not apply):
        worker: the slot index of the worker concerned (the first one, if several).
        exitcode: its exit code (negative: killed by that signal).
        items: the item indices that worker held in this call.
        running: the item it was running when it died or timed out.
        timed_out: the call ran past its ``timeout``.
    """

    def __init__(
        self,
        message: str,
        *,
        worker: int | None = None,
        exitcode: int | None = None,
        items: Sequence[int] = (),
        running: int | None = None,
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.worker = worker
        self.exitcode = exitcode
        self.items = tuple(items)
        self.running = running
        self.timed_out = timed_out


class RemoteError(Exception):
    """Carries an exception raised by the user's code in a worker.

    Attributes:
        exception: the original exception object when it could be pickled, else a
            ``RuntimeError`` with its text (type name and message).
        traceback: the worker-side formatted traceback text (starting at the user's function).
    """

    def __init__(self, exception: BaseException, traceback: str = "") -> None:
        super().__init__(exception, traceback)
        self.exception = exception
        self.traceback = traceback

    def __str__(self) -> str:
        head = "".join(traceback.format_exception_only(self.exception)).strip()
        if not self.traceback:
            return head
        return f"{head}\n\nTraceback in the worker process:\n{self.traceback.rstrip()}"


# --------------------------------------------------------------------------------------------
# Shared-memory segments and array templates


class _Segment:
    """One file under ``_SHM_DIR``, mapped into this process."""

    __slots__ = ("linked", "map", "name", "size")

    def __init__(self, name: str, size: int, mapping: Any) -> None:
        self.name = name
        self.size = size
        self.map = mapping
        self.linked = True  # the file still has its name

    @classmethod
    def create(cls, name: str, size: int) -> _Segment:
        path = os.path.join(_SHM_DIR, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as error:
                os.unlink(path)
                raise WorkerError(
                    f"cannot reserve {size / 2**20:.1f} MiB of shared memory in {_SHM_DIR} "
                    f"({error.strerror}); free some or enlarge it (Docker: --shm-size)"
                ) from error
            import mmap

            mapping = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        return cls(name, size, mapping)

    @classmethod
    def attach(cls, name: str, writable: bool) -> _Segment:
        import mmap

        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR if writable else os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            mapping = mmap.mmap(fd, size, access=access)
        finally:
            os.close(fd)
        return cls(name, size, mapping)

    def close(self) -> None:
        # A user's function may still hold views of an input segment: the mapping then lives
        # on until they are gone (the file itself is unlinked by its owner).
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()

    def unlink(self) -> None:
        if self.linked:
            self.linked = False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(_SHM_DIR, self.name))


def _unlink_prefix(prefix: str) -> None:
    for path in glob.glob(os.path.join(glob.escape(_SHM_DIR), glob.escape(prefix) + "*")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _replace_segment(old: _Segment | None, name: str, needed: int) -> _Segment:
    """A new segment for at least ``needed`` bytes, and at least 5/4 of ``old`` (so a slowly
    growing batch does not make a new file every call); ``old`` is unlinked and closed."""
    size = _round_up(max(needed, 1), _SEGMENT_QUANTUM)
    if old is not None:
        size = max(size, _round_up(old.size * 5 // 4, _SEGMENT_QUANTUM))
    segment = _Segment.create(name, size)
    if old is not None:
        old.unlink()
        old.close()
    return segment


def _round_up(n: int, quantum: int) -> int:
    return -(-n // quantum) * quantum


class _ArrayRef(NamedTuple):
    """Placeholder for one array in a template: where it lies in a segment."""

    offset: int
    shape: tuple[int, ...]
    dtype: Any  # dtype.str for plain dtypes, the np.dtype itself for structured ones


class _ObjectArrayError(TypeError):
    pass


class _Packer:
    """Lays out the arrays of nested structures in a segment, 64-byte aligned."""

    def __init__(self, start: int) -> None:
        self.end = start
        self.arrays: list[tuple[int, np.ndarray]] = []

    def pack(self, obj: Any) -> Any:
        """The template of ``obj``; on error nothing of ``obj`` stays laid out."""
        end, count = self.end, len(self.arrays)
        try:
            return self._pack(obj)
        except BaseException:
            self.end = end
            del self.arrays[count:]
            raise

    def _pack(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is list:
            return [self._pack(x) for x in obj]
        if kind is tuple:
            return tuple(self._pack(x) for x in obj)
        if kind is dict:
            return {k: self._pack(v) for k, v in obj.items()}
        if isinstance(obj, np.ndarray):
            dtype = obj.dtype
            if dtype.hasobject:
                raise _ObjectArrayError(dtype)
            offset = _round_up(self.end, _ALIGN)
            self.end = offset + obj.nbytes
            if obj.nbytes:
                self.arrays.append((offset, obj))
            plain = dtype.fields is None and dtype.subdtype is None
            return _ArrayRef(offset, obj.shape, dtype.str if plain else dtype)
        return obj

    def write(self, buffer: Any) -> None:
        for offset, array in self.arrays:
            target = np.ndarray(array.shape, array.dtype, buffer=buffer, offset=offset)
            np.copyto(target, array, casting="no")


def _unpack(template: Any, buffer: Any, copy: bool) -> Any:
    """Rebuild a structure: arrays become read-only views of ``buffer``, or fresh copies."""
    kind = type(template)
    if kind is _ArrayRef:
        dtype = np.dtype(template.dtype)
        shape = template.shape
        if dtype.itemsize == 0 or 0 in shape:
            return np.empty(shape, dtype)
        view = np.ndarray(shape, dtype, buffer=buffer, offset=template.offset)
        if copy:
            return view.copy()
        view.flags.writeable = False
        return view
    if kind is list:
        return [_unpack(x, buffer, copy) for x in template]
    if kind is tuple:
        return tuple(_unpack(x, buffer, copy) for x in template)
    if kind is dict:
        return {k: _unpack(v, buffer, copy) for k, v in template.items()}
    return template


_cloudpickle_code_reduce = getattr(cloudpickle.cloudpickle, "_code_reduce", None)


def _code_with_filename(rebuild: Callable[..., Any], args: tuple[Any, ...], filename: str) -> Any:
    return rebuild(*args).replace(co_filename=filename)


def _reduce_code(code: types.CodeType) -> tuple[Any, ...]:
    assert _cloudpickle_code_reduce is not None
    rebuild, args = _cloudpickle_code_reduce(code)
    return _code_with_filename, (rebuild, args, code.co_filename)


# What travels fresh: per-thread (per-context) state and synchronisation objects. A function
# defined in a notebook or ``__main__`` is sent by value with the globals it uses, and these
# are common there (``_local = threading.local()`` holding one transform per thread, a lock
# around a cache) but cannot be pickled. Their meaning in a worker process is a fresh one:
# per-thread state is never shared, so the worker's starts empty and is filled lazily by the
# function, as on a new thread; a lock's holder (a thread of the parent) does not exist in the
# worker, so the worker's starts unlocked. Identity is kept within one function: two globals
# naming one lock are one lock in the worker.
_LOCK_FACTORIES: dict[type, Callable[[], Any]] = {
    type(threading.Lock()): threading.Lock,
    type(threading.RLock()): threading.RLock,
}
_PY_RLOCK = getattr(threading, "_PyRLock", None)  # the pure-Python RLock, where it exists
if _PY_RLOCK is not None:
    _LOCK_FACTORIES[_PY_RLOCK] = _PY_RLOCK


def _reduce_lock(lock: Any) -> tuple[Any, ...]:
    return _LOCK_FACTORIES[type(lock)], ()


def _reduce_condition(condition: threading.Condition) -> tuple[Any, ...]:
    # its lock (fresh, and shared with whatever else uses it), none of the parent's waiters
    # `_lock` is CPython's private attribute, absent from typeshed
    return threading.Condition, (condition._lock,)  # type: ignore[attr-defined]


def _reduce_local(local: threading.local) -> tuple[Any, ...]:
    return threading.local, ()


def _context_var(name: str, default: Any) -> contextvars.ContextVar[Any]:
    return contextvars.ContextVar(name, default=default)


def _reduce_context_var(var: contextvars.ContextVar[Any]) -> tuple[Any, ...]:
    try:  # its default: what it holds in a context where it was never set
        default = contextvars.Context().run(var.get)
    except LookupError:
        return contextvars.ContextVar, (var.name,)
    return _context_var, (var.name, default)


def _takes_no_arguments(init: Any) -> bool:
    if init is object.__init__:
        return True
    try:
        parameters = list(inspect.signature(init).parameters.values())
    except (TypeError, ValueError):
        return False
    return len(parameters) == 1  # self


def _reduce_local_subclass(local: threading.local) -> tuple[Any, ...]:
    """A ``threading.local`` subclass: a fresh instance, whose ``__init__`` fills it on the
    worker's thread as it does on every new thread. ``threading.local`` calls ``__init__``
    with the constructor's arguments on each thread; those cannot be read back, so a subclass
    whose ``__init__`` takes any is refused rather than rebuilt without them."""
    cls = type(local)
    if not _takes_no_arguments(cls.__init__):
        raise pickle.PicklingError(
            f"cannot send a {cls.__qualname__} (a threading.local subclass) to a worker process: "
            f"its __init__ takes arguments, which threading.local does not let augkit read "
            f"back; give it an __init__ without arguments (set the values there), or make "
            f"the object inside the function"
        )
    return cls, ()


_PICKLE_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__")


class _FunctionPickler(cloudpickle.Pickler):
    """cloudpickle, with two changes for functions sent to workers:

    - code sent by value keeps its file name (cloudpickle >= 3 writes "<dynamic-code>"), so a
      worker's traceback names the user's file (and, for forked workers, which share the
      parent's ``linecache``, shows the user's lines);
    - per-thread state and synchronisation objects travel as fresh ones (the comment above
      ``_LOCK_FACTORIES``): ``threading.local`` and its subclasses whose ``__init__`` takes no
      arguments (empty, or as ``__init__`` fills it), ``Lock`` and ``RLock`` (unlocked),
      ``Condition`` (its lock, no waiters), ``contextvars.ContextVar`` (its name and default,
      unset).
    """

    dispatch_table: ClassVar[ChainMap[Any, Any]] = ChainMap(
        {
            threading.local: _reduce_local,
            threading.Condition: _reduce_condition,
            contextvars.ContextVar: _reduce_context_var,
            **dict.fromkeys(_LOCK_FACTORIES, _reduce_lock),
            **({types.CodeType: _reduce_code} if _cloudpickle_code_reduce is not None else {}),
        },
        cloudpickle.Pickler.dispatch_table,
    )

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        # the dispatch table matches exact types only; a subclass that says how to pickle
        # itself (its own __reduce__, __reduce_ex__ or __getstate__) is left to do so
        if (
            cls is not threading.local
            and issubclass(cls, threading.local)
            and all(getattr(cls, name) is getattr(object, name) for name in _PICKLE_HOOKS)
        ):
            return _reduce_local_subclass(obj)
        return super().reducer_override(obj)


def _pickle_function_bytes(fn: Any) -> bytes:
    with io.BytesIO() as file:
        _FunctionPickler(file, protocol=_PROTOCOL).dump(fn)
        return file.getvalue()


def _dumps(obj: Any) -> bytes:
    """Pickle with the standard pickler, falling back to cloudpickle (lambdas in data...)."""
    try:
        return pickle.dumps(obj, protocol=_PROTOCOL)
    except Exception:
        return cloudpickle.dumps(obj, protocol=_PROTOCOL)


# --------------------------------------------------------------------------------------------
# The worker process


def _die_with_parent(expected_ppid: int | None) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if expected_ppid is not None and os.getppid() != expected_ppid:
        os._exit(0)  # the parent died before the death signal was armed


def _worker_main(
    conn: Connection, prefix: str, expected_ppid: int | None, close_in_child: list[Any]
) -> None:
    """Entry point of a worker process."""
    for inherited in close_in_child:  # fork: the parent's other pipe ends and mappings
        with contextlib.suppress(Exception):
            inherited.close()
    del close_in_child[:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(expected_ppid)
    tune_allocator()  # inherited with fork; spawn and forkserver start without it
    _WorkerLoop(conn, prefix).serve()


def _failure(exc: BaseException, tb: Any) -> tuple[bool, bytes | None, str, str]:
    """The reply entry for an exception: (False, pickled exception or None, traceback, text)."""
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    summary = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    data: bytes | None
    try:
        data = cloudpickle.dumps(exc, protocol=_PROTOCOL)
        pickle.loads(data)  # exceptions with custom __init__ often pickle but do not load
    except BaseException:
        data = None
    return (False, data, text, summary)


class _WorkerLoop:
    def __init__(self, conn: Connection, prefix: str) -> None:
        self.conn = conn
        self.prefix = prefix
        self.functions: dict[str, Callable[[Any, Any], Any]] = {}
        self.input: _Segment | None = None
        self.output: _Segment | None = None
        self.outputs_made = 0

    def serve(self) -> None:
        while True:
            try:
                data = self.conn.recv_bytes()
            except (EOFError, OSError):
                return  # the parent is gone or closed the pipe
            try:
                reply = self.handle(data)
            except BaseException:
                reply = _dumps(("error", traceback.format_exc()))
            try:
                self.conn.send_bytes(reply)
            except OSError:
                return

    def handle(self, data: bytes) -> bytes:
        _, key, fn_bytes, evict, input_name, first, entries = pickle.loads(data)
        for old in evict:
            self.functions.pop(old, None)
        if fn_bytes is not None:
            try:
                self.functions[key] = pickle.loads(fn_bytes)
            except BaseException:
                return _dumps(("fnerror", traceback.format_exc()))
        fn = self.functions[key]
        if self.input is None or self.input.name != input_name:
            if self.input is not None:
                self.input.close()
            self.input = _Segment.attach(input_name, writable=True)
        buffer = self.input.map

        outcomes: list[tuple[Any, ...]] = []
        for j, (template, extra) in enumerate(entries):
            struct.pack_into("<q", buffer, 0, first + j)
            try:
                result = fn(_unpack(template, buffer, copy=False), extra)
            except BaseException as exc:
                # a caught exception has a traceback (its frame here, then the call's)
                outcomes.append(_failure(exc, exc.__traceback__.tb_next))  # type: ignore[union-attr]
            else:
                outcomes.append((True, result))
            result = None
        struct.pack_into("<q", buffer, 0, -1)

        packer = _Packer(0)
        entries_out: list[tuple[Any, ...]] = []
        for j, outcome in enumerate(outcomes):
            if not outcome[0]:
                entries_out.append(outcome)
                continue
            try:
                entries_out.append((True, packer.pack(outcome[1])))
            except _ObjectArrayError as exc:
                error = TypeError(f"{_OBJECT_ARRAY_RESULT} (item {first + j}, dtype {exc})")
                entries_out.append(_failure(error, None))
        del outcomes
        if self.output is None or packer.end > self.output.size:
            self._grow_output(packer.end)
        assert self.output is not None
        packer.write(self.output.map)
        del packer
        try:
            return _dumps(("ok", self.output.name, entries_out))
        except Exception:
            return _dumps(("ok", self.output.name, self._picklable(entries_out, first)))

    def _grow_output(self, needed: int) -> None:
        self.outputs_made += 1
        name = f"{self.prefix}out-{self.outputs_made}"
        self.output = _replace_segment(self.output, name, needed)

    @staticmethod
    def _picklable(entries: list[tuple[Any, ...]], first: int) -> list[tuple[Any, ...]]:
        checked: list[tuple[Any, ...]] = []
        for j, entry in enumerate(entries):
            try:
                _dumps(entry)
                checked.append(entry)
            except Exception as exc:
                error = TypeError(
                    f"the result of item {first + j} cannot be sent back from the worker: it "
                    f"cannot be pickled ({type(exc).__name__}: {exc}); return NumPy arrays, "
                    "numbers, strings, or lists/tuples/dicts of them"
                )
                checked.append(_failure(error, None))
        return checked


# --------------------------------------------------------------------------------------------
# The parent side


def _cuda_initialized() -> bool:
    """True when this process holds a CUDA context (forking it would be unsafe)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_initialized():
                return True
    return _cuda_driver_initialized()


def _cuda_driver_initialized() -> bool:
    """Whether libcuda is loaded *and* initialised here (CuPy, numba, ...), without loading it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcuda.so" in line}
    except OSError:
        return False
    for path in paths:
        if not path.startswith("/"):
            continue
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            context = ctypes.c_void_p()
            # CUDA_ERROR_NOT_INITIALIZED (3) until cuInit; CUDA_SUCCESS after, even with no
            # context current in this thread.
            if lib.cuCtxGetCurrent(ctypes.byref(context)) == 0:
                return True
        except (OSError, AttributeError):
            continue
    return False


def _choose_start_method(requested: str | None) -> str:
    if requested is not None:
        return requested
    if "fork" not in multiprocessing.get_all_start_methods():
        return "spawn"
    return "forkserver" if _cuda_initialized() else "fork"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "ended (exit status unknown)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        text = f"was killed by signal {name} ({-code})"
        if -code == signal.SIGKILL:
            text += " (SIGKILL often means the system ran out of memory)"
        elif -code in _CRASH_SIGNALS:
            text += " (a crash in native code: a C extension, ctypes, a library's bug)"
        return text
    return f"exited with code {code}"


_CRASH_SIGNALS = {
    int(getattr(signal, name))
    for name in ("SIGSEGV", "SIGBUS", "SIGABRT", "SIGFPE", "SIGILL")
    if hasattr(signal, name)
}


def _describe_items(items: range) -> str:
    if len(items) == 1:
        return f"item {items.start}"
    return f"items {items.start}-{items.stop - 1}"


class _Slot:
    """One worker position: its current process, pipe, segments and function-cache mirror."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: Any = None  # multiprocessing.Process (of whichever context)
        self.conn: Connection | None = None
        self.prefix = ""  # the current incarnation's file prefix
        self.incarnation = 0
        self.input: _Segment | None = None  # created by the parent, kept across restarts
        self.inputs_made = 0
        self.output: _Segment | None = None  # the worker's, mapped read-only here
        self.keys: OrderedDict[str, None] = OrderedDict()

    def running_item(self) -> int | None:
        if self.input is None:
            return None
        with contextlib.suppress(ValueError, struct.error):
            (index,) = struct.unpack_from("<q", self.input.map, 0)
            return index if index >= 0 else None
        return None


class _Launcher:
    """A long-lived thread that starts every worker process of a pool.

    PR_SET_PDEATHSIG fires when the thread that forked a child ends; starting workers from
    threads that come and go (an executor's) would kill them with those threads.
    """

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self._loop, args=(self.requests,), name="augkit-worker-launcher", daemon=True
        )
        self.thread.start()

    @staticmethod
    def _loop(requests: queue.SimpleQueue[Any]) -> None:
        while True:
            request = requests.get()
            if request is None:
                return
            job, args, box, done = request
            try:
                box["result"] = job(*args)
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

    def call(self, job: Callable[..., Any], *args: Any) -> Any:
        box: dict[str, Any] = {}
        done = threading.Event()
        self.requests.put((job, args, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def stop(self) -> None:
        self.requests.put(None)


class _PoolState:
    """Everything a pool owns; kept apart from WorkerPool so the finalizer can reach it."""

    def __init__(self, num_workers: int) -> None:
        self.owner_pid = os.getpid()
        self.prefix = f"augkit-{self.owner_pid}-{secrets.token_hex(4)}-"
        self.slots = [_Slot(i) for i in range(num_workers)]
        self.closed = False
        self.released = False
        self.map_lock = threading.Lock()  # one map() at a time
        self.lock = threading.RLock()  # process starts and kills
        self.launcher: _Launcher | None = None


def _kill_slot(state: _PoolState, slot: _Slot) -> None:
    """Stop a slot's worker (if any) and free what belongs to its incarnation."""
    with state.lock:
        process, conn, output = slot.process, slot.conn, slot.output
        slot.process = slot.conn = slot.output = None
        slot.keys.clear()
        prefix = slot.prefix
    if process is not None:
        with contextlib.suppress(Exception):
            process.kill()
        with contextlib.suppress(Exception):
            process.join(timeout=5)
        with contextlib.suppress(Exception):
            process.close()
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.close()
    if output is not None:
        output.close()
    if prefix:
        _unlink_prefix(prefix)
    with state.lock:
        if slot.input is not None and not slot.input.linked:
            slot.input.close()  # its file is gone: the next worker gets a new segment
            slot.input = None


def _drop_linked_inputs(state: _PoolState) -> None:
    """After a failed call: input segments whose name is still in ``/dev/shm`` (no reply
    unlinked it: the call failed before, or its worker died on its first call) are unlinked and
    dropped, so that nothing is left there should this process be killed now; the next call
    makes new ones."""
    with state.lock:
        for slot in state.slots:
            if slot.input is not None and slot.input.linked:
                slot.input.unlink()
                slot.input.close()
                slot.input = None


def _start_workers(state: _PoolState, slots: list[_Slot], method: str) -> None:
    """Runs in the launcher thread: start one worker process per slot."""
    with state.lock:
        if state.closed:
            raise WorkerError("the worker pool is closed")
        context = multiprocessing.get_context(method)
        for slot in slots:
            parent_conn, child_conn = context.Pipe(duplex=True)
            slot.incarnation += 1
            slot.prefix = f"{state.prefix}{slot.index}.{slot.incarnation}-"
            close_in_child: list[Any] = []
            if method == "fork":
                close_in_child.append(parent_conn)
                for other in state.slots:
                    close_in_child += [x for x in (other.conn, other.input, other.output) if x]
            # typeshed types get_context(str) as BaseContext, without Process; every real one has it
            process = context.Process(  # type: ignore[attr-defined]
                target=_worker_main,
                args=(
                    child_conn,
                    slot.prefix,
                    None if method == "forkserver" else os.getpid(),
                    close_in_child,
                ),
                name=f"augkit-worker-{slot.index}",
                daemon=True,
            )
            with warnings.catch_warnings():
                # Python >= 3.12 warns about fork() in a process with threads (this one has
                # the launcher); the forked worker only runs this module's loop.
                warnings.filterwarnings("ignore", r".*fork\(\) may lead to deadlocks", Warning)
                try:
                    process.start()
                finally:
                    child_conn.close()
            slot.process, slot.conn = process, parent_conn
            slot.output = None
            slot.keys = OrderedDict()


def _release(state: _PoolState) -> None:
    """Close pipes and mappings and stop the launcher; the caller holds ``map_lock``."""
    if state.released:
        return
    state.released = True
    for slot in state.slots:
        _kill_slot(state, slot)
        if slot.input is not None:
            slot.input.unlink()
            slot.input.close()
            slot.input = None
    _unlink_prefix(state.prefix)
    if state.launcher is not None:
        state.launcher.stop()
        state.launcher = None


def _shutdown(state: _PoolState) -> None:
    """close() and the finalizer: kill the workers, unlink every file of the pool."""
    state.closed = True
    if os.getpid() != state.owner_pid:
        return  # a forked copy of the pool: the workers and files are the owner's
    for slot in state.slots:
        process = slot.process
        if process is not None:
            with contextlib.suppress(Exception):
                process.kill()
    if state.map_lock.acquire(blocking=False):
        try:
            _release(state)
        finally:
            state.map_lock.release()
    else:
        # a map() is running in another thread: it sees its workers die, raises, and calls
        # _release itself; unlink the files now anyway
        _unlink_prefix(state.prefix)


class WorkerPool:
    """A pool of ``num_workers`` processes that run functions on NumPy data.

    See the module docstring for the protocol. Example:
        >>> import numpy as np
        >>> pool = WorkerPool(2)
        >>> out = pool.map("double", lambda a, extra: a * extra, [(np.arange(3), 2)])
        >>> out[0][0], out[0][1].tolist()
        (True, [0, 2, 4])
        >>> pool.close()
    """

    def __init__(self, num_workers: int, start_method: str | None = None) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
        if start_method is not None and start_method not in _START_METHODS:
            raise ValueError(
                f"start_method must be one of {', '.join(_START_METHODS)} or None, "
                f"got {start_method!r}"
            )
        if start_method is not None and start_method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"start method {start_method!r} is not available on this platform")
        self._num_workers = num_workers
        self._start_method = start_method
        self._state = _PoolState(num_workers)
        self._finalizer = weakref.finalize(self, _shutdown, self._state)

    @property
    def num_workers(self) -> int:
        return self._num_workers

    def worker_pids(self) -> list[int]:
        """Process ids of the workers started and still running, in slot order."""
        pids = []
        for slot in self._state.slots:
            process = slot.process
            if process is not None and process.pid is not None and process.exitcode is None:
                pids.append(process.pid)
        return pids

    def close(self) -> None:
        """Kill the workers and unlink every shared-memory file of the pool. Idempotent."""
        self._finalizer()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._state.closed else f"{len(self.worker_pids())} running"
        return f"WorkerPool(num_workers={self._num_workers}, {state})"

    def _adopt_after_fork(self) -> None:
        """In a forked child: forget the parent's workers and files, start afresh here."""
        self._finalizer.detach()
        closed = self._state.closed
        self._state = _PoolState(self._num_workers)
        self._state.closed = closed
        self._finalizer = weakref.finalize(self, _shutdown, self._state)

    def map(
        self,
        key: str,
        fn: Callable[[Any, Any], Any],
        items: Sequence[tuple[Any, Any]],
        timeout: float | None = None,
    ) -> list[tuple[bool, Any]]:
        """Run ``fn(args, extra)`` for each ``(args, extra)`` of ``items`` in the workers.

        Returns one ``(True, result)`` or ``(False, RemoteError)`` per item, in item order.
        Raises ``WorkerError`` when a worker dies, the call times out, or the function or the
        data cannot be sent; the pool stays usable (dead or stopped workers are replaced on
        the next call).
        """
        if self._state.owner_pid != os.getpid():
            self._adopt_after_fork()
        state = self._state
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        with state.map_lock:
            if state.closed:
                raise WorkerError("the worker pool is closed")
            try:
                if not len(items):
                    return []
                return self._map(state, key, fn, items, timeout)
            except BaseException:
                _drop_linked_inputs(state)
                raise
            finally:
                if state.closed:
                    _release(state)

    def _map(
        self,
        state: _PoolState,
        key: str,
        fn: Callable[[Any, Any], Any],
        items: Sequence[tuple[Any, Any]],
        timeout: float | None,
    ) -> list[tuple[bool, Any]]:
        n = len(items)
        used = min(self._num_workers, n)
        bounds = [k * n // used for k in range(used + 1)]
        chunks = [range(bounds[k], bounds[k + 1]) for k in range(used)]
        slots = state.slots[:used]

        # 1. Start the workers this call needs (replacing dead ones) first: a new worker has
        #    an empty function cache, which decides whether the function is sent.
        self._ensure_workers(state, slots)

        # 2. Lay out every chunk and pickle every request. Nothing is sent yet, so a failure
        #    here (an object array, data or a function that cannot be pickled, a full
        #    /dev/shm) leaves the workers as they were.
        fn_bytes: bytes | None = None
        requests: list[tuple[_Slot, _Packer, bytes, list[str]]] = []
        for slot, chunk in zip(slots, chunks, strict=True):
            packer = _Packer(_CONTROL_BYTES)
            entries = []
            for i in chunk:
                args, extra = items[i]
                try:
                    entries.append((packer.pack(args), extra))
                except _ObjectArrayError as exc:
                    raise WorkerError(
                        f"{_OBJECT_ARRAY_INPUT} (item {i} holds an array of dtype {exc}); "
                        "convert it to a numeric array or pass it as a list"
                    ) from None
            self._ensure_input(state, slot, packer.end)
            assert slot.input is not None
            evict: list[str] = []
            send_fn: bytes | None = None
            if key not in slot.keys:
                if fn_bytes is None:
                    fn_bytes = self._pickle_function(fn)
                send_fn = fn_bytes
                evict = list(slot.keys)[: max(0, len(slot.keys) + 1 - _FN_CACHE_SIZE)]
            message = ("run", key, send_fn, evict, slot.input.name, chunk.start, entries)
            try:
                data = _dumps(message)
            except Exception as exc:
                raise WorkerError(
                    f"cannot send the data of {_describe_items(chunk)} to a worker: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            requests.append((slot, packer, data, evict))

        # 3. Write each chunk's arrays and send it at once (the first worker starts while the
        #    next chunk is written); read each reply as it comes (copying one worker's results
        #    out while the others still run).
        results: list[tuple[bool, Any]] = [(False, None)] * n
        problems: list[WorkerError] = []

        def on_reply(index: int, data: bytes) -> None:
            slot, chunk = state.slots[index], chunks[index]
            try:
                self._read_reply(state, slot, chunk, key, data, results)
            except WorkerError as error:
                problems.append(error)
            except Exception as exc:
                _kill_slot(state, slot)
                problems.append(
                    WorkerError(
                        f"worker {index}: cannot read its reply: {type(exc).__name__}: {exc}",
                        worker=index,
                        items=chunk,
                    )
                )

        waiting: dict[int, _Slot] = {}
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for slot, packer, data, evict in requests:
                assert slot.input is not None and slot.conn is not None
                packer.write(slot.input.map)
                struct.pack_into("<q", slot.input.map, 0, -1)
                waiting[slot.index] = slot
                with contextlib.suppress(OSError):  # a dead worker is found by the wait below
                    slot.conn.send_bytes(data)
                for old in evict:
                    slot.keys.pop(old, None)
                slot.keys[key] = None
            del requests
            self._wait(state, waiting, on_reply, chunks, deadline, timeout)
        except BaseException:
            for slot in waiting.values():
                _kill_slot(state, slot)
            raise

        if problems:
            if len(problems) == 1:
                raise problems[0]
            raise WorkerError("\n".join(str(p) for p in problems), worker=problems[0].worker)
        return results

    @staticmethod
    def _read_reply(
        state: _PoolState,
        slot: _Slot,
        chunk: range,
        key: str,
        data: bytes,
        results: list[tuple[bool, Any]],
    ) -> None:
        reply = pickle.loads(data)
        status = reply[0]
        if status == "fnerror":
            slot.keys.pop(key, None)
            last = reply[1].strip().splitlines()[-1]
            raise WorkerError(
                f"worker {slot.index} could not load the function (key {key!r}): {last}\n"
                f"{reply[1]}",
                worker=slot.index,
                items=chunk,
            )
        if status != "ok":
            _kill_slot(state, slot)
            raise WorkerError(
                f"worker {slot.index} could not run the call: {reply[1]}",
                worker=slot.index,
                items=chunk,
            )
        _, output_name, entries = reply
        # Both processes now map both segments: their names can go (nothing is left in
        # /dev/shm even if both processes are killed).
        if slot.input is not None:
            slot.input.unlink()
        if slot.output is None or slot.output.name != output_name:
            if slot.output is not None:
                slot.output.close()
            slot.output = _Segment.attach(output_name, writable=False)
            slot.output.unlink()
        buffer = slot.output.map
        for i, entry in zip(chunk, entries, strict=True):
            if entry[0]:
                results[i] = (True, _unpack(entry[1], buffer, copy=True))
                continue
            _, exc_bytes, text, summary = entry
            exception: BaseException | None = None
            if exc_bytes is not None:
                with contextlib.suppress(Exception):
                    exception = pickle.loads(exc_bytes)
            if not isinstance(exception, BaseException):
                exception = RuntimeError(summary)
            results[i] = (False, RemoteError(exception, text))

    @staticmethod
    def _pickle_function(fn: Callable[[Any, Any], Any]) -> bytes:
        try:
            return _pickle_function_bytes(fn)
        except Exception as exc:
            name = getattr(fn, "__qualname__", None) or repr(fn)
            raise WorkerError(
                f"cannot send the function {name} to a worker process: it cannot be pickled "
                f"({type(exc).__name__}: {exc})"
            ) from exc

    @staticmethod
    def _ensure_input(state: _PoolState, slot: _Slot, needed: int) -> None:
        current = slot.input
        if current is not None and needed <= current.size:
            return
        slot.inputs_made += 1
        name = f"{state.prefix}{slot.index}-in-{slot.inputs_made}"
        slot.input = _replace_segment(current, name, needed)

    def _ensure_workers(self, state: _PoolState, slots: list[_Slot]) -> None:
        missing = []
        for slot in slots:
            if slot.process is not None and not slot.process.is_alive():
                _kill_slot(state, slot)  # died while idle: reap it and free its files
            if slot.process is None:
                missing.append(slot)
        if not missing:
            return
        method = _choose_start_method(self._start_method)
        with state.lock:
            if state.closed:
                raise WorkerError("the worker pool is closed")
            if state.launcher is None:
                state.launcher = _Launcher()
            launcher = state.launcher
        launcher.call(_start_workers, state, missing, method)

    @staticmethod
    def _wait(
        state: _PoolState,
        waiting: dict[int, _Slot],
        on_reply: Callable[[int, bytes], None],
        chunks: list[range],
        deadline: float | None,
        timeout: float | None,
    ) -> None:
        """Hand one reply per waiting slot to ``on_reply``; raise WorkerError on a death or
        at the deadline. Slots leave ``waiting`` as they answer; the caller kills whatever is
        left on any error.
        """
        while waiting:
            lookup: dict[Any, int] = {}
            for index, slot in waiting.items():
                lookup[slot.conn] = index
                lookup[slot.process.sentinel] = index
            remaining = None
            if deadline is not None:
                remaining = max(0.0, deadline - time.monotonic())
            ready = _wait(list(lookup), remaining)
            if not ready:
                if deadline is not None and time.monotonic() >= deadline:
                    lines = [
                        f"worker {i} (pid {s.process.pid}) was still running "
                        f"{_describe_running(s, chunks[i])}"
                        for i, s in waiting.items()
                    ]
                    first = next(iter(waiting))
                    raise WorkerError(
                        f"map timed out after {timeout:g} s: "
                        + "; ".join(lines)
                        + ". Those workers were stopped; they restart on the next call.",
                        worker=first,
                        items=chunks[first],
                        running=waiting[first].running_item(),
                        timed_out=True,
                    )
                continue
            dead: list[int] = []
            for obj in ready:
                index = lookup[obj]
                if index not in waiting or index in dead:
                    continue
                slot = waiting[index]
                assert slot.conn is not None
                try:
                    data = slot.conn.recv_bytes() if slot.conn.poll() else None
                except (EOFError, OSError):
                    data = None
                if data is None:
                    dead.append(index)
                else:
                    del waiting[index]
                    on_reply(index, data)
            if dead:
                raise _death_error(state, waiting, dead, chunks)


def _describe_running(slot: _Slot, chunk: range) -> str:
    """'item 5 (it held items 4-7 of this call)', or 'items 4-7 of this call' if unknown."""
    running = slot.running_item()
    held = f"{_describe_items(chunk)} of this call"
    return held if running is None else f"item {running} (it held {held})"


def _death_error(
    state: _PoolState, waiting: dict[int, _Slot], dead: list[int], chunks: list[range]
) -> WorkerError:
    lines = []
    codes = []
    for index in dead:
        slot = waiting[index]
        process = slot.process
        with contextlib.suppress(Exception):
            process.join(timeout=1.0)
        code = process.exitcode
        codes.append(code)
        lines.append(
            f"worker {index} (pid {process.pid}) {_describe_exit(code)} while running "
            f"{_describe_running(slot, chunks[index])}"
        )
    message = "; ".join(lines)
    if state.closed:
        message = "the worker pool was closed while map() was running: " + message
    elif len(waiting) > len(dead):
        message += ". The other busy workers were stopped; all restart on the next call."
    else:
        message += ". It restarts on the next call."
    first = dead[0]
    return WorkerError(
        message,
        worker=first,
        exitcode=codes[0],
        items=chunks[first],
        running=waiting[first].running_item(),
    )
