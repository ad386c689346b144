"""Pipelined execution: iterations computed in the background, ahead of ``run()``.

A producer thread reads the sources (readers, in iteration order, the only stateful part of a
graph) and hands each iteration's computation to a small pool of iteration threads, so that
several iterations are in flight at once: while the user works on batch k, batch k+1 is being
decoded, resized and passed through Python operators, on all cores.

How far ahead, as DALI's ``prefetch_queue_depth`` (d): the first ``run()`` starts d iterations
and returns the first; every later ``run()`` starts one more and returns the oldest. So after
``k`` calls of ``run()`` exactly ``d + k - 1`` iterations were started, and with d = 1 nothing
is computed that was not asked for (a function with side effects is called for the consumed
batches only).

Where: iterations that take more than ``SHORT_ITERATION`` are read by the producer thread and
computed on a pool of ``d`` iteration threads, overlapping each other and the user's work.
Shorter ones (a pipeline of random draws, small arrays) are read and computed by ``run()``
itself, on the calling thread, by the same rule of how many: for them the hand-overs between
threads cost more than the overlap gains (``fn.random.uniform(shape=[16])``, batch 32: 250
µs a batch with iteration threads, 80 µs inline). Which thread computes changes no number.

Nothing here changes a number: iteration k is computed from the same reader positions and the
same (seed, shard, iteration, sample) streams as in synchronous mode. Each queued iteration
carries the readers' positions after it, so the pipeline can rewind the readers to what the user
has actually consumed (``reset()``, a change of ``last_batch_policy``, ``close()``): batches that
were computed ahead and never consumed are dropped and computed again later, identically.
"""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from augkit.executor import Executor
from augkit.operators.base import IterationNotes

SHORT_ITERATION = 0.002
"""Seconds below which an iteration is computed by the producer thread itself rather than on
an iteration thread (measured: a 32-sample ``fn.random.uniform`` pipeline took 250 µs a batch
with two iteration threads contending for the GIL, 80 µs computed inline)."""


@dataclass
class Prefetched:
    """One iteration in flight: its number, its outputs (a future), the readers' positions
    after it and its notes (skipped samples)."""

    iteration: int
    result: Future
    states: dict[str, Any]
    notes: IterationNotes


class Prefetcher:
    """Computes iterations ``first, first + 1, ...`` ahead of the consumer (see the module
    docstring for how many).

    Args:
        executor: the pipeline's executor.
        first: the number of the first iteration to compute.
        batch_size: the pipeline's batch size.
        partial: sources stop at the end of the epoch (and so does the producer: the epoch's
            last batch is the last one it makes).
        depth: DALI's ``prefetch_queue_depth``.
        lead: the reader whose epoch ends production in ``partial`` mode.
    """

    def __init__(
        self,
        executor: Executor,
        first: int,
        batch_size: int,
        partial: bool | str,
        depth: int,
        lead: str | None = None,
    ) -> None:
        self.partial = partial
        self._executor = executor
        self._first = first
        self._next = first
        self._batch_size = batch_size
        self._depth = depth
        self._lead = lead
        self._requested = 0  # next() calls begun
        # Iterations shorter than SHORT_ITERATION are produced by next() itself, on the
        # calling thread (see _start); longer ones by the producer thread, on the pool.
        self._short = False
        self._production = threading.Lock()  # one producer at a time: reads in order
        self._queue: collections.deque[Prefetched] = collections.deque()
        # One lock, two conditions: the producer thread waits for permission to produce (and
        # is not woken, nor made to take the GIL, by what only concerns run(): a new batch),
        # run() waits for a batch.
        lock = threading.RLock()
        self._cond = threading.Condition(lock)
        self._producer = threading.Condition(lock)
        self._stopping = False
        self._ended = False  # no iteration will be produced any more
        self._pool = ThreadPoolExecutor(depth, "augkit-iteration")
        self._thread = threading.Thread(target=self._produce, name="augkit-prefetch", daemon=True)
        self._thread.start()

    def _may_start(self) -> bool:
        # DALI's rule: d iterations at the first request, one more at each later one.
        return self._next - self._first < self._requested + self._depth - 1

    def _produce(self) -> None:
        """The producer thread: produces while iterations are long (see ``_start``)."""
        try:
            while True:
                with self._cond:
                    while not (
                        self._stopping or self._ended or (self._may_start() and not self._short)
                    ):
                        self._producer.wait()
                    if self._stopping or self._ended:
                        return
                with self._production:
                    if self._may_start() and not (self._stopping or self._ended):
                        self._produce_one()
        finally:
            self._end()

    def _produce_one(self) -> None:
        """Read the next iteration and start computing it (the caller holds
        ``_production``); at an error or the end of a partial epoch, production ends."""
        iteration = self._next
        self._next += 1
        try:
            read = self._executor.read(iteration, self._batch_size, self.partial)
        except BaseException as exc:  # delivered to run(), in its turn
            if not self._stopping:  # (closed without waiting: the pools are gone)
                failed: Future = Future()
                failed.set_exception(exc)
                states = self._executor.states()
                self._push(Prefetched(iteration, failed, states, IterationNotes()))
            self._end()
            if not isinstance(exc, Exception):
                raise  # an interrupt of next()'s own production
            return
        try:
            future = self._start(iteration, read)
        except RuntimeError:  # closed without waiting: the pool was shut down
            self._end()
            return
        self._push(Prefetched(iteration, future, read.states, read.notes))
        if self.partial and self._lead is not None:
            reader = self._executor.readers()[self._lead]
            if reader.left_in_epoch(read.states[self._lead]) == 0:
                self._end()

    def _start(self, iteration: int, read: Any) -> Future:
        """Compute the iteration: on an iteration thread, so that several overlap, unless the
        last ones were short: then at once, on this thread (next()'s, in the end: two threads
        taking turns at the GIL for sub-millisecond iterations cost more than they overlap,
        and every hand-over between threads costs tens of microseconds)."""
        if self._short:
            done: Future = Future()
            start = time.perf_counter()
            try:
                done.set_result(self._compute(iteration, read))
            except Exception as exc:
                done.set_exception(exc)
            self._note(time.perf_counter() - start)
            return done
        return self._pool.submit(self._timed, iteration, read)

    def _compute(self, iteration: int, read: Any) -> Any:
        return self._executor.compute(iteration, read.size, read.values, read.notes)

    def _timed(self, iteration: int, read: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._compute(iteration, read)
        finally:
            self._note(time.perf_counter() - start)

    def _note(self, seconds: float) -> None:
        short = seconds < SHORT_ITERATION
        if short != self._short:
            with self._cond:
                self._short = short
                self._cond.notify_all()
                self._producer.notify_all()

    def _end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()
            self._producer.notify_all()

    def _push(self, item: Prefetched) -> None:
        with self._cond:
            self._queue.append(item)
            self._cond.notify_all()

    def next(self) -> Prefetched | None:
        """The oldest iteration in flight (wait for it to be read), or None when production
        has ended and nothing is left."""
        with self._cond:
            self._requested += 1
            if not self._short:
                self._producer.notify_all()
        while True:
            if self._short:  # short iterations: produce what DALI's rule allows, here
                with self._production:
                    while self._short and self._may_start() and not (self._stopping or self._ended):
                        self._produce_one()
            with self._cond:
                if self._queue:
                    return self._queue.popleft()
                if self._ended:
                    return None
                if not (self._short and self._may_start() and not self._stopping):
                    # woken by a batch, the end, or iterations turning short (then produce
                    # here: the producer thread leaves short iterations to next())
                    self._cond.wait()

    def cancel(self) -> None:
        """Abandon everything (``run()`` was interrupted): stop producing and wait for the
        producer thread only (it may be reading, and the readers must be still before they are
        rewound); iterations not started are cancelled, and those being computed are left to
        end by themselves (``Engine.cancel()`` makes them stop at their next operator)."""
        self._stop()
        self._thread.join()
        self.close(wait=False)

    def _stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            self._producer.notify_all()

    def close(self, wait: bool = True) -> None:
        """Stop producing, wait for what is being computed (unless ``wait`` is False: from a
        finalizer, where joining a thread can deadlock), drop everything queued."""
        self._stop()
        if wait:
            self._thread.join()
        for item in list(self._queue):
            item.result.cancel()
        self._pool.shutdown(wait=wait, cancel_futures=True)
        self._queue.clear()
