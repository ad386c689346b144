"""``python -m benchmarks.soak``: the tutorial pipeline with worker processes, run for many
iterations (issue 6): memory stays flat and no sample is lost.

How to run (from the repository root; ``nice`` leaves the CPUs to others on a shared machine)::

    nice .venv/bin/python -m benchmarks.soak --iterations 10000   # about 4 minutes on 2 cores
    .venv/bin/python -m benchmarks.soak --iterations 500          # a quick look (~1 min)
    .venv/bin/python -m benchmarks.soak --prefetch                # DALI's default executor
    .venv/bin/python -m benchmarks.soak --iterations 2000 --tracemalloc   # where it grows

A run of at least 10 000 iterations with the tutorial's settings writes
``benchmarks/results/soak.md`` (committed); shorter runs, ``--prefetch`` and ``--tracemalloc``
write ``benchmarks/_work/soak.md`` (git-ignored), unless ``--out`` says otherwise. The report is
printed too. The exit status is 1 when a criterion fails.

What runs: the pipeline of DALI's Python Operators tutorial (``PythonFuncPipeline`` of
``examples/python_operators_tutorial.py``, rebuilt here because that script runs its pipelines
and draws figures when imported): two ``ops.FileReader(random_shuffle=True)`` over
``data/images``, ``ops.ImageDecoder(output_type=RGB)``, ``ops.Resize(300, 300)`` and
``ops.PythonFunction(edit_images, num_outputs=2)``, batch 4, 4 threads, seed 99,
``exec_async=False, exec_pipelined=False`` as in the tutorial, plus ``py_num_workers=2``: the
Python function runs in two worker processes (its default ``parallel="auto"`` picks them), with
the arrays going through shared memory.

What is checked:

- **No sample lost or duplicated.** ``run()`` never stops and the last batch of an epoch runs on
  into the next one (the "fill" policy), so the flattened sequence of each reader's
  ``source_info`` is epoch 0's permutation, then epoch 1's, and so on. It is cut into chunks of
  the epoch size (15 files), and every chunk must hold every file of ``data/images`` exactly once
  (listed here independently of the reader). The readers' own outputs are read with
  ``pipe.value()`` (the graph is the tutorial's; its outputs are the Python function's). An
  incomplete last chunk must hold no file twice.
- **Samples stay in place through the workers.** ``edit_images`` keeps the central disc of each
  image and swaps the rest: for every sample, the centre of output 1 must be the centre of the
  first resized image of the same position and its corner the second's (and the reverse for
  output 2), so a sample reordered or mixed up on its way through the worker processes fails.
  The ``source_info`` the function's outputs carry is reported, not judged: augkit gives both
  outputs the first input's; DALI's executor propagates only a ``source_info`` that all inputs
  agree on (``dali/pipeline/executor/source_info_propagation.cc``), so here it would leave them
  empty.
- **Memory flat.** Every ``--sample-every`` iterations the resident set size of this process
  and of each of its child processes (the workers, found through
  ``/proc/<pid>/task/*/children``) is sampled from ``/proc/<pid>/status``: ``VmRSS`` and its
  parts ``RssAnon``, ``RssShmem`` and ``RssFile``; with the proportional set size (``Pss``),
  open file descriptors and memory mappings. The judged figure is anonymous + shared memory
  (heap, arrays, the shared-memory segments: what a leak grows), summed over the processes;
  ``RssFile`` is pages of mapped libraries (about 240 MB of the parent's 600 MB here), which the
  kernel loads and drops on its own, whatever the pipeline does. After
  the warm-up (``--warmup``, default a tenth of the run), its least-squares slope must be below
  ``SLOPE_LIMIT_MB`` MB per 1000 iterations, and its value at the end may exceed the value at
  the end of the warm-up by less than ``GROWTH_LIMIT_MB`` MB. ``VmRSS`` is reported alongside.
- **Nothing left behind.** The same two worker processes from start to end (a restarted worker
  would hide its own growth), and after ``close()`` no child process and no
  ``/dev/shm/augkit-<pid>-*`` file of this process.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import gc
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import augkit.ops as ops
import augkit.types as types
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from benchmarks import machine as mc
from benchmarks.functions import edit_images

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
IMAGE_DIR = ROOT / "data" / "images"
RESULTS = HERE / "results" / "soak.md"
WORK = HERE / "_work" / "soak.md"
SAMPLES_CSV = HERE / "_work" / "soak_samples.csv"  # every memory sample of the last run
SHM_DIR = Path("/dev/shm")
FULL_RUN = 10_000  # iterations of a run that writes benchmarks/results/soak.md

# "Flat": after the warm-up, the total RSS (parent + workers) grows by less than this many MB
# per 1000 iterations (least squares over the samples) and by less than GROWTH_LIMIT_MB in all.
SLOPE_LIMIT_MB = 1.0
GROWTH_LIMIT_MB = 20.0
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
MB = 2**20


# --- the tutorial's pipeline ----------------------------------------------------------------


class CommonPipeline(Pipeline):
    """The tutorial's ``CommonPipeline``; the keyword arguments go to ``Pipeline`` (the
    tutorial's ``exec_async=False, exec_pipelined=False, seed=99`` unless overridden)."""

    def __init__(self, batch_size, num_threads, device_id, image_dir, **settings):
        settings = {"exec_async": False, "exec_pipelined": False, "seed": 99, **settings}
        super().__init__(batch_size, num_threads, device_id, **settings)
        self.input1 = ops.FileReader(file_root=str(image_dir), random_shuffle=True)
        self.input2 = ops.FileReader(file_root=str(image_dir), random_shuffle=True)
        self.decode = ops.ImageDecoder(device="cpu", output_type=types.RGB)
        self.resize = ops.Resize(resize_x=300, resize_y=300)
        # Nodes the checks read with pipe.value(): the readers' labels, the resized images.
        self.reader_outputs: tuple = ()
        self.resized: tuple = ()

    def load(self):
        jpegs1, labels1 = self.input1()
        jpegs2, labels2 = self.input2()
        self.reader_outputs = (labels1, labels2)
        im1, im2 = self.decode([jpegs1, jpegs2])
        resized = self.resize([im1, im2])
        self.resized = tuple(resized)
        return resized


class PythonFuncPipeline(CommonPipeline):
    """The tutorial's ``PythonFuncPipeline``."""

    def __init__(self, batch_size, num_threads, device_id, image_dir, **settings):
        super().__init__(batch_size, num_threads, device_id, image_dir, **settings)
        self.edit_images = ops.PythonFunction(function=edit_images, num_outputs=2)

    def define_graph(self):
        images1, images2 = self.load()
        res1, res2 = self.edit_images(images1, images2)
        return res1, res2


def tutorial_pipeline(
    batch_size: int = 4, py_num_workers: int = 2, prefetch: bool = False, **settings
) -> PythonFuncPipeline:
    """The tutorial's pipeline (batch 4, 4 threads) with ``py_num_workers`` worker processes;
    ``prefetch=True`` uses DALI's default executor settings instead of the tutorial's."""
    if prefetch:
        settings = {"exec_async": True, "exec_pipelined": True, **settings}
    pipe = PythonFuncPipeline(
        batch_size, 4, 0, IMAGE_DIR, py_num_workers=py_num_workers, **settings
    )
    pipe.build()
    return pipe


def reader_sources(pipe: PythonFuncPipeline) -> list[list[str]]:
    """The ``source_info`` of each reader's samples in the last ``run()``."""
    return [pipe.value(node.name).source_info() for node in pipe.reader_outputs]


def outputs_match_inputs(pipe: PythonFuncPipeline, out1: TensorList, out2: TensorList) -> bool:
    """Whether every sample of the Python function's outputs in the last ``run()`` was made
    from the inputs of its own position: ``edit_images`` keeps the centre of each image (inside
    the disc) and takes the corner (outside it) from the other image."""
    in1, in2 = (pipe.value(node.name) for node in pipe.resized)
    if not len(out1) == len(out2) == len(in1) == len(in2):
        return False
    for i in range(len(in1)):
        a, b, r1, r2 = in1.at(i), in2.at(i), out1.at(i), out2.at(i)
        h, w = a.shape[:2]
        centre = (slice(h // 2 - 4, h // 2 + 4), slice(w // 2 - 4, w // 2 + 4))
        corner = (slice(0, 8), slice(0, 8))
        if not (
            np.array_equal(r1[centre], a[centre])
            and np.array_equal(r2[centre], b[centre])
            and np.array_equal(r1[corner], b[corner])
            and np.array_equal(r2[corner], a[corner])
        ):
            return False
    return True


def image_files(image_dir: Path = IMAGE_DIR) -> list[str]:
    """``"<folder>/<file>"`` of every image in the subfolders of ``image_dir``: what one epoch
    of the file reader must deliver (listed here, not by the reader)."""
    return sorted(
        f"{folder.name}/{f.name}"
        for folder in image_dir.iterdir()
        if folder.is_dir()
        for f in folder.iterdir()
        if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES
    )


# --- the sample check -------------------------------------------------------------------------


@dataclass
class EpochCheck:
    """Takes one reader's ``source_info`` sequence a batch at a time, cuts it into epochs of
    ``len(files)`` samples and counts, over the complete epochs, the files missing (lost) and
    the extra copies (duplicated), plus names that are no file of the set (unknown).

    Only the current epoch is kept, so the check itself uses no memory that grows."""

    files: Sequence[str]
    epochs: int = 0
    samples: int = 0
    lost: int = 0
    duplicated: int = 0
    unknown: int = 0
    reshuffled: int = 0  # epochs whose order differs from the epoch before
    _expected: frozenset = field(init=False, repr=False)
    _current: list[str] = field(default_factory=list, repr=False)
    _previous: list[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._expected = frozenset(self.files)

    def add(self, sources: Sequence[str]) -> None:
        size = len(self.files)
        for name in sources:
            self.samples += 1
            self._current.append(name)
            if len(self._current) == size:
                self._close_epoch()

    def _close_epoch(self) -> None:
        chunk = self._current
        seen = set(chunk)
        self.lost += len(self._expected - seen)
        self.duplicated += len(chunk) - len(seen)
        self.unknown += len(seen - self._expected)
        if self._previous is not None and chunk != self._previous:
            self.reshuffled += 1
        self._previous, self._current = chunk, []
        self.epochs += 1

    def add_epoch(self, sources: Sequence[str]) -> None:
        """One whole epoch given at once (an ``epoch(last_batch_policy="partial")`` loop): it
        must be exactly a permutation of the files."""
        if self._current:
            raise ValueError("add_epoch() after add() left an incomplete epoch")
        self._current = list(sources)
        self.samples += len(self._current)
        self._close_epoch()

    @property
    def last_epoch(self) -> list[str]:
        """The order of the last complete epoch."""
        return list(self._previous or [])

    @property
    def pending(self) -> list[str]:
        """The samples of the incomplete epoch at the end."""
        return list(self._current)

    @property
    def pending_duplicated(self) -> int:
        return len(self._current) - len(set(self._current))

    @property
    def pending_unknown(self) -> int:
        return len(set(self._current) - self._expected)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.unknown
            or self.pending_duplicated
            or self.pending_unknown
        )


# --- memory ------------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (of every thread of it)."""
    kids: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return kids
    for task in tasks:
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(kids))


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = children(pid)
    while todo:
        kid = todo.pop()
        found.append(kid)
        todo += children(kid)
    return sorted(found)


@dataclass
class ProcessMemory:
    """One process's resident memory, MB: ``VmRSS`` and its parts from ``/proc/<pid>/status``.

    ``anon`` (heap, NumPy arrays, Python objects) and ``shmem`` (the mapped shared-memory
    segments) are what a leak grows; ``file`` is pages of mapped files (the shared libraries:
    torch alone maps hundreds of MB), which the kernel loads when code first runs and drops
    under memory pressure, whatever the process does."""

    rss: float
    anon: float
    file: float
    shmem: float

    @property
    def owned(self) -> float:
        return self.anon + self.shmem

    @classmethod
    def of(cls, pid: int) -> ProcessMemory:
        fields = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0, "RssShmem": 0}
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                key = line.split(":", 1)[0]
                if key in fields:
                    fields[key] = int(line.split()[1])
        except (OSError, ValueError):
            pass
        mb = {k: v / 1024 for k, v in fields.items()}
        return cls(mb["VmRSS"], mb["RssAnon"], mb["RssFile"], mb["RssShmem"])


def pss_mb(pid: int) -> float:
    """Proportional set size (pages shared between processes counted by share), MB."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    try:
        function = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None  # not glibc, or glibc < 2.33
    function.restype = _MallInfo2
    function.argtypes = []
    return function


_MALLINFO2 = _mallinfo2()


def malloc_mb() -> tuple[float, float]:
    """This process's C heap (glibc ``mallinfo2``, every arena), MB: bytes in use by live
    allocations, and bytes the allocator holds from the system (in use + free but kept).
    In use flat while held grows is the allocator keeping freed memory (fragmentation, trim
    thresholds), not a leak. (nan, nan) without glibc >= 2.33."""
    if _MALLINFO2 is None:
        return float("nan"), float("nan")
    info = _MALLINFO2()
    return (info.uordblks + info.hblkhd) / MB, (info.arena + info.hblkhd) / MB


def _count(path: str) -> int:
    try:
        return len(os.listdir(path))
    except OSError:
        return 0


def _mappings(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def shm_files(pid: int | None = None) -> list[str]:
    """Names of ``/dev/shm/augkit-*`` files (of process ``pid`` only, when given)."""
    prefix = "augkit-" if pid is None else f"augkit-{pid}-"
    try:
        return sorted(p.name for p in SHM_DIR.iterdir() if p.name.startswith(prefix))
    except OSError:
        return []


@dataclass
class MemorySample:
    iteration: int
    seconds: float
    parent: ProcessMemory
    workers: list[ProcessMemory]
    worker_pids: list[int]
    total_pss_mb: float
    heap_in_use_mb: float  # the parent's C heap: live allocations
    heap_held_mb: float  # the parent's C heap: what malloc holds from the system
    fds: int
    mappings: int
    shm_files: int

    @property
    def parent_mb(self) -> float:
        return self.parent.rss

    @property
    def workers_mb(self) -> list[float]:
        return [w.rss for w in self.workers]

    @property
    def total_mb(self) -> float:
        """VmRSS of the parent and the workers."""
        return self.parent.rss + sum(w.rss for w in self.workers)

    @property
    def owned_mb(self) -> float:
        """Anonymous and shared-memory RSS of the parent and the workers: what is judged."""
        return self.parent.owned + sum(w.owned for w in self.workers)


def sample_memory(
    iteration: int,
    start: float,
    old_pids: frozenset[int] = frozenset(),
    old_files: frozenset[str] = frozenset(),
) -> MemorySample:
    """Memory of this process and its descendants, leaving out the processes and shared-memory
    files that were there before the pipeline (``old_pids``, ``old_files``: in a test run)."""
    me = os.getpid()
    kids = [k for k in descendants(me) if k not in old_pids]
    in_use, held = malloc_mb()
    return MemorySample(
        iteration=iteration,
        seconds=time.perf_counter() - start,
        parent=ProcessMemory.of(me),
        workers=[ProcessMemory.of(k) for k in kids],
        worker_pids=kids,
        total_pss_mb=pss_mb(me) + sum(pss_mb(k) for k in kids),
        heap_in_use_mb=in_use,
        heap_held_mb=held,
        fds=_count(f"/proc/{me}/fd"),
        mappings=_mappings(me),
        shm_files=len(set(shm_files(me)) - old_files),
    )


def slope_per_1000(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (iteration, MB) points, in MB per 1000 iterations."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return 1000 * sxy / sxx


# --- the run -------------------------------------------------------------------------------------


@dataclass
class SoakResult:
    iterations: int
    batch_size: int
    warmup: int
    checks: list[EpochCheck]
    output_mismatches: int  # batches whose function outputs are not made from their inputs
    output_sources: list[dict[str, int]]  # per output: whose source_info it carried, batches
    samples: list[MemorySample]
    seconds: float
    children_after_close: list[int]
    shm_after_close: list[str]
    cpu: mc.CpuShare | None = None
    tracemalloc_top: list[str] = field(default_factory=list)

    @property
    def after_warmup(self) -> list[MemorySample]:
        return [s for s in self.samples if s.iteration >= self.warmup]

    def slope(self, value) -> float:
        return slope_per_1000([(s.iteration, value(s)) for s in self.after_warmup])

    @property
    def warm(self) -> MemorySample:
        return self.after_warmup[0]

    @property
    def growth_mb(self) -> float:
        """Growth of the judged memory (anonymous + shared memory) after the warm-up."""
        return self.samples[-1].owned_mb - self.warm.owned_mb

    @property
    def same_workers(self) -> bool:
        return all(s.worker_pids == self.samples[0].worker_pids for s in self.samples)

    def criteria(self) -> list[tuple[str, bool, str]]:
        """(criterion, passed, measured) for the report and the exit status."""
        lost = sum(c.lost for c in self.checks)
        dup = sum(c.duplicated + c.pending_duplicated for c in self.checks)
        unknown = sum(c.unknown + c.pending_unknown for c in self.checks)
        slope = self.slope(lambda s: s.owned_mb)
        return [
            ("no sample lost (both readers, every epoch)", lost == 0, f"{lost} lost"),
            ("no sample duplicated", dup == 0, f"{dup} duplicated"),
            ("no unknown source_info", unknown == 0, f"{unknown} unknown"),
            (
                "function outputs made from the inputs of their own position",
                self.output_mismatches == 0,
                f"{self.output_mismatches} batches differ",
            ),
            (
                f"RSS (anon + shmem, parent + workers) slope after warm-up < {SLOPE_LIMIT_MB:g} "
                "MB / 1000 iterations",
                slope < SLOPE_LIMIT_MB,
                f"{slope:+.3f} MB / 1000 it",
            ),
            (
                f"RSS (anon + shmem) end − end of warm-up < {GROWTH_LIMIT_MB:g} MB",
                self.growth_mb < GROWTH_LIMIT_MB,
                f"{self.growth_mb:+.1f} MB",
            ),
            (
                "the same worker processes from start to end",
                self.same_workers and len(self.samples[0].worker_pids) > 0,
                f"pids {self.samples[0].worker_pids} → {self.samples[-1].worker_pids}",
            ),
            (
                "no child process after close()",
                not self.children_after_close,
                f"{len(self.children_after_close)} left",
            ),
            (
                "no /dev/shm/augkit-<pid>-* file after close()",
                not self.shm_after_close,
                f"{len(self.shm_after_close)} left",
            ),
        ]

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.criteria())


def soak(
    iterations: int,
    *,
    batch_size: int = 4,
    py_num_workers: int = 2,
    prefetch: bool = False,
    sample_every: int = 100,
    warmup: int | None = None,
    trace: bool = False,
    progress: bool = False,
) -> SoakResult:
    """Run the tutorial pipeline ``iterations`` times, checking every batch's samples and
    sampling memory every ``sample_every`` iterations (and after the last one)."""
    if warmup is None:
        warmup = max(sample_every, iterations // 10)
    files = image_files()
    checks = [EpochCheck(files), EpochCheck(files)]
    mismatches = 0
    output_sources: list[dict[str, int]] = [{}, {}]  # what the outputs' source_info matched
    samples: list[MemorySample] = []
    snapshot = None
    meter = mc.CpuMeter()
    # Processes and files that were there before (other pools, in a test run) are not counted.
    old_pids = frozenset(descendants(os.getpid()))
    old_files = frozenset(shm_files(os.getpid()))
    pipe = tutorial_pipeline(batch_size, py_num_workers, prefetch)
    start = time.perf_counter()
    meter.start()
    try:
        for i in range(1, iterations + 1):
            out1, out2 = pipe.run()
            sources = reader_sources(pipe)
            for check, names in zip(checks, sources, strict=True):
                check.add(names)
            if not outputs_match_inputs(pipe, out1, out2):
                mismatches += 1
            for k, out in enumerate((out1, out2)):
                info = out.source_info()
                origin = next((j for j, names in enumerate(sources) if info == names), None)
                key = (
                    f"reader {origin + 1}'s"
                    if origin is not None
                    else ("empty" if not any(info) else "other")
                )
                output_sources[k][key] = output_sources[k].get(key, 0) + 1
            del out1, out2
            if i % sample_every == 0 or i == iterations:
                samples.append(sample_memory(i, start, old_pids, old_files))
                if trace and snapshot is None and i >= warmup:
                    snapshot = tracemalloc.take_snapshot()
                if progress and i % (sample_every * 10) == 0:
                    s = samples[-1]
                    print(
                        f"[soak] {i}/{iterations} it, {s.seconds:.0f} s, RSS parent "
                        f"{s.parent_mb:.1f} MB, workers {sum(s.workers_mb):.1f} MB",
                        file=sys.stderr,
                        flush=True,
                    )
        seconds = time.perf_counter() - start
        cpu = meter.stop()
        top: list[str] = []
        if trace and snapshot is not None:
            stats = tracemalloc.take_snapshot().compare_to(snapshot, "lineno")
            top = [str(stat) for stat in stats[:15]]
    finally:
        pipe.close()
    del pipe
    gc.collect()
    # Workers are killed and joined by close(); allow a moment for the kernel to reap them.
    deadline = time.monotonic() + 5
    while set(descendants(os.getpid())) - old_pids and time.monotonic() < deadline:
        time.sleep(0.05)
    return SoakResult(
        iterations=iterations,
        batch_size=batch_size,
        warmup=warmup,
        checks=checks,
        output_mismatches=mismatches,
        output_sources=output_sources,
        samples=samples,
        seconds=seconds,
        children_after_close=sorted(set(descendants(os.getpid())) - old_pids),
        shm_after_close=sorted(set(shm_files(os.getpid())) - old_files),
        cpu=cpu,
        tracemalloc_top=top,
    )


# --- the report ------------------------------------------------------------------------------


def _row(label: str, sample: MemorySample) -> str:
    def cell(m: ProcessMemory) -> str:
        return f"{m.rss:.1f} ({m.owned:.1f} / {m.file:.1f})"

    workers = " + ".join(cell(w) for w in sample.workers) or "—"
    return (
        f"| {label} | {sample.iteration} | {cell(sample.parent)} | {workers} | "
        f"{sample.total_mb:.1f} | {sample.owned_mb:.1f} | {sample.total_pss_mb:.1f} | "
        f"{sample.fds} | {sample.mappings} | {sample.shm_files} |"
    )


def report(result: SoakResult, settings: str, machine: list[str]) -> str:
    r = result
    first, warm, last = r.samples[0], r.warm, r.samples[-1]
    peak_parent = max(s.parent_mb for s in r.samples)
    peak_workers = max(sum(s.workers_mb) for s in r.samples)
    peak_total = max(s.total_mb for s in r.samples)
    peak_owned = max(s.owned_mb for s in r.samples)
    epoch = len(r.checks[0].files)
    lines = [
        "# Soak: the tutorial pipeline with worker processes",
        "",
        f"`python -m benchmarks.soak --iterations {r.iterations}` ({settings}); see the "
        "docstring of `benchmarks/soak.py` for what is checked and how.",
        "",
        *machine,
        f"- wall time {r.seconds:.0f} s ({1000 * r.seconds / r.iterations:.1f} ms per "
        f"iteration)"
        + (
            f"; CPU: this process tree {100 * r.cpu.tree:.0f}%, other processes "
            f"{100 * r.cpu.others:.0f}% of the machine"
            if r.cpu
            else ""
        ),
        "",
        "## Verdict: " + ("PASS" if r.passed else "FAIL"),
        "",
        "| criterion | result | measured |",
        "| --- | --- | --- |",
        *(f"| {name} | {'PASS' if ok else 'FAIL'} | {m} |" for name, ok, m in r.criteria()),
        "",
        "## Samples",
        "",
        f"{r.iterations} iterations of batch {r.batch_size}; per reader (epoch = {epoch} files, "
        "checked by `source_info`):",
        "",
        "| reader | samples | complete epochs | lost | duplicated | unknown | epochs reshuffled "
        "| left in the last, incomplete epoch |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, c in enumerate(r.checks, 1):
        lines.append(
            f"| {k} | {c.samples} | {c.epochs} | {c.lost} | "
            f"{c.duplicated + c.pending_duplicated} | {c.unknown + c.pending_unknown} | "
            f"{c.reshuffled} of {max(c.epochs - 1, 0)} | {len(c.pending)} |"
        )
    carried = "; ".join(
        f"output {k}: " + ", ".join(f"{who} in {n} batches" for who, n in sorted(seen.items()))
        for k, seen in enumerate(r.output_sources, 1)
    )
    lines += [
        "",
        f"The Python function's outputs were made from the inputs of their own position in "
        f"{r.iterations - r.output_mismatches} of {r.iterations} batches. The `source_info` "
        f"they carried ({carried}) is not judged: DALI would leave it empty here, as the two "
        "inputs disagree.",
        "",
        "## Memory (MB)",
        "",
        "RSS is `VmRSS`, given per process as RSS (anon + shmem / file). What is judged is "
        "the anonymous and shared-memory part (`RssAnon` + `RssShmem`: heap, arrays, the "
        "shared-memory segments), which is what a leak grows; the file part is pages of the "
        "mapped libraries (torch maps hundreds of MB), which the kernel loads when code first "
        "runs and drops under memory pressure from any process on the machine. The workers "
        "are forked, so their RSS includes pages they still share with the parent, and the "
        "totals count those twice; PSS counts them once but moves with every other process "
        "that maps the same libraries, so it is shown and not judged.",
        "",
        "| when | iteration | RSS parent | RSS workers | RSS total | anon + shmem total | "
        "PSS total | fds | mappings | /dev/shm files |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        _row("first sample", first),
        _row("end of warm-up", warm),
        _row("end", last),
        "",
        f"- max RSS: parent {peak_parent:.1f}, workers {peak_workers:.1f}, total "
        f"{peak_total:.1f}; anon + shmem total {peak_owned:.1f}",
        f"- slope after warm-up (least squares over {len(r.after_warmup)} samples, every "
        f"{r.samples[0].iteration} iterations), MB per 1000 iterations: anon + shmem total "
        f"{r.slope(lambda s: s.owned_mb):+.3f} (parent {r.slope(lambda s: s.parent.owned):+.3f}, "
        f"workers {r.slope(lambda s: sum(w.owned for w in s.workers)):+.3f}); RSS total "
        f"{r.slope(lambda s: s.total_mb):+.3f} (parent {r.slope(lambda s: s.parent_mb):+.3f}, "
        f"workers {r.slope(lambda s: sum(s.workers_mb)):+.3f}); PSS "
        f"{r.slope(lambda s: s.total_pss_mb):+.3f}",
        f"- end − end of warm-up: anon + shmem total {r.growth_mb:+.1f} (parent "
        f"{last.parent.owned - warm.parent.owned:+.1f}, workers "
        f"{sum(w.owned for w in last.workers) - sum(w.owned for w in warm.workers):+.1f}); "
        f"RSS total {last.total_mb - warm.total_mb:+.1f} (parent "
        f"{last.parent_mb - warm.parent_mb:+.1f}, workers "
        f"{sum(last.workers_mb) - sum(warm.workers_mb):+.1f})",
        f"- the parent's C heap (glibc `mallinfo2`, every arena), end of warm-up → end: in use "
        f"by live allocations {warm.heap_in_use_mb:.1f} → {last.heap_in_use_mb:.1f} (slope "
        f"{r.slope(lambda s: s.heap_in_use_mb):+.3f}), held from the system "
        f"{warm.heap_held_mb:.1f} → {last.heap_held_mb:.1f} (slope "
        f"{r.slope(lambda s: s.heap_held_mb):+.3f}); held growing while in use does not is "
        "the allocator keeping freed memory, not a leak",
        f"- after close(): {len(r.children_after_close)} child processes, "
        f"{len(r.shm_after_close)} `/dev/shm/augkit-{os.getpid()}-*` files"
        + (f" ({', '.join(r.shm_after_close)})" if r.shm_after_close else ""),
        "",
        "Along the run (iteration: RSS total, anon + shmem total, MB):",
        "",
        "```",
        _sparkline(r.samples),
        "```",
    ]
    if r.tracemalloc_top:
        lines += [
            "",
            "## tracemalloc (parent): growth from the end of warm-up to the end",
            "",
            "The snapshot taken at the end of the warm-up is held until the end: its memory "
            "(about 100 MB) is in the RSS above, so judge flatness on a run without "
            "`--tracemalloc`.",
            "",
            "```",
            *r.tracemalloc_top,
            "```",
        ]
    return "\n".join(lines) + "\n"


def _sparkline(samples: Sequence[MemorySample], points: int = 11) -> str:
    if len(samples) <= points:
        picked = list(samples)
    else:
        picked = [samples[round(k * (len(samples) - 1) / (points - 1))] for k in range(points)]
    return "\n".join(f"{s.iteration:>7}: {s.total_mb:8.1f} {s.owned_mb:8.1f}" for s in picked)


def write_samples(result: SoakResult, path: Path) -> None:
    """Every memory sample as CSV (MB), for a closer look or a plot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        "iteration,seconds,rss_parent,rss_workers,rss_total,anon_shmem_parent,"
        "anon_shmem_workers,anon_shmem_total,file_parent,pss_total,heap_in_use,heap_held,fds,"
        "mappings,shm"
    ]
    rows += [
        f"{s.iteration},{s.seconds:.2f},{s.parent_mb:.2f},{sum(s.workers_mb):.2f},"
        f"{s.total_mb:.2f},{s.parent.owned:.2f},{sum(w.owned for w in s.workers):.2f},"
        f"{s.owned_mb:.2f},{s.parent.file:.2f},{s.total_pss_mb:.2f},{s.heap_in_use_mb:.2f},"
        f"{s.heap_held_mb:.2f},{s.fds},{s.mappings},{s.shm_files}"
        for s in result.samples
    ]
    path.write_text("\n".join(rows) + "\n")


def machine_lines(started: dt.datetime) -> list[str]:
    """Date, machine, versions: ``machine.machine_info`` less its Pillow and torch details."""
    import numpy

    info = mc.machine_info(ROOT, 0)
    lines = [f"- date: {started.strftime('%Y-%m-%d %H:%M %Z')}", info[1]]
    commit = info[2].rsplit("augkit at ", 1)[-1]
    lines.append(
        f"- Python {platform.python_version()}, numpy {numpy.__version__}, augkit at {commit}"
    )
    lines.append(f"- load average at the end: {mc.load_average()}")
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description="Run the tutorial pipeline with worker processes for many iterations: "
        "memory stays flat, no sample is lost.",
    )
    parser.add_argument("--iterations", type=int, default=FULL_RUN, help="default 10000")
    parser.add_argument(
        "--sample-every", type=int, default=100, help="iterations between memory samples"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="iterations not counted in the slope (default a tenth of the run)",
    )
    parser.add_argument("--batch-size", type=int, default=4, help="default 4 (the tutorial's)")
    parser.add_argument("--workers", type=int, default=2, help="py_num_workers (default 2)")
    parser.add_argument(
        "--prefetch",
        action="store_true",
        help="DALI's default executor (exec_async, exec_pipelined) instead of the tutorial's",
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="report the parent's Python allocations"
    )
    parser.add_argument("--out", type=Path, default=None, help="where the report goes")
    args = parser.parse_args(argv)
    if args.iterations < 2 or args.sample_every < 1:
        parser.error("--iterations must be >= 2 and --sample-every >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tracemalloc:
        tracemalloc.start()
    print(
        f"[soak] {args.iterations} iterations of the tutorial pipeline, "
        f"py_num_workers={args.workers}",
        file=sys.stderr,
        flush=True,
    )
    started = dt.datetime.now().astimezone()
    result = soak(
        args.iterations,
        batch_size=args.batch_size,
        py_num_workers=args.workers,
        prefetch=args.prefetch,
        sample_every=args.sample_every,
        warmup=args.warmup,
        trace=args.tracemalloc,
        progress=True,
    )
    machine = machine_lines(started)
    settings = (
        f"batch {args.batch_size}, 4 threads, py_num_workers={args.workers}, "
        + (
            "exec_async=True, exec_pipelined=True"
            if args.prefetch
            else "exec_async=False, exec_pipelined=False (the tutorial's)"
        )
        + f", warm-up {result.warmup} iterations"
    )
    text = report(result, settings, machine)
    out = args.out
    if out is None:
        full = args.iterations >= FULL_RUN and not (args.prefetch or args.tracemalloc)
        out = RESULTS if full and args.batch_size == 4 and args.workers == 2 else WORK
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    write_samples(result, SAMPLES_CSV)
    print(text)
    print(f"[soak] report written to {out}, samples to {SAMPLES_CSV}", file=sys.stderr)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
