"""The workloads and the contenders that the benchmark times side by side.

Three workloads, all at batch size 32 on two readers (each sample is a pair of JPEGs), all
ending in two dense uint8 batches of 32×300×300×3:

- ``a``: decode both JPEGs to RGB and resize them to 300×300 (Pillow ``BILINEAR``, which is
  DALI's default linear filter with antialiasing);
- ``b``: (a), then the tutorial's ``edit_images`` on the pair as a Python operator (NumPy:
  it releases the GIL for most of its work);
- ``c``: (a), then ``blur_patches`` on the pair, a Python function that holds the GIL
  (pure-Python loops over a 24×24 patch of each image).

Throughput is counted in decoded-and-resized images: a batch holds 32 pairs, 64 images.

On (a) and (b), ``KernelBound`` is the bound of issue 11: augkit's own decode and resize kernels
(``bound_kernels()``) called directly on the same number of threads, with no pipeline;
``check_bound`` checks that it computes what augkit's pipeline computes.

Every contender is a ``Contender``: ``setup()`` (untimed), then ``run_pass()`` once per round,
each timing ``batches`` batches itself and returning a ``PassTiming``, and ``close()``. A pass
must leave nothing running once it returns, so that contenders timed one after the other never
share the cores: augkit's pipeline is closed after every pass (``pipe.close()`` stops its
threads, prefetching and worker processes; the next pass builds it again), the DataLoader is run
one whole epoch per pass (its workers stop at the end of an epoch), and DALI's pipeline is built
afresh for every pass and deleted after it (in its own process, ``dali.py``). Contenders that
fill a pipeline first (augkit, the DataLoader, DALI) get one untimed batch at the start of each
pass, and the clock runs from that batch's delivery to the last one's: the steady rate, without
the start-up latency, which a training loop pays once per epoch at most.
"""

from __future__ import annotations

import io
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmarks.functions import blur_patches, edit_images

BATCH_SIZE = 32
OUT_SIZE = 300
NUM_THREADS = 2
PIPELINE_SEED = 42
SHUFFLE_SEED = 1234
JPEG_SUFFIXES = (".jpg", ".jpeg")

PairFunction = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


# --- workloads and data ---------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One workload: its key in the table, a title, and the Python function applied to each
    pair (``None``: decode + resize only)."""

    key: str
    title: str
    function: PairFunction | None

    images_per_sample = 2

    @property
    def images_per_batch(self) -> int:
        return BATCH_SIZE * self.images_per_sample


WORKLOADS = {
    "a": Workload("a", "two readers, decode + resize to 300×300", None),
    "b": Workload("b", "(a) + the tutorial's edit_images (NumPy) on the pairs", edit_images),
    "c": Workload("c", "(a) + blur_patches (pure-Python loops, holds the GIL)", blur_patches),
}


@dataclass(frozen=True)
class BenchFile:
    """One JPEG of the benchmark set: its name as the reader's ``source_info`` gives it
    (``"<class folder>/<file>"``) and its bytes."""

    name: str
    data: bytes


def list_bench_files(root: Path) -> list[str]:
    """The JPEGs under ``root/<class>/``, in the file reader's order (sorted folders, then
    sorted files), as ``"<class>/<file>"``."""
    names = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        names += [
            f"{folder.name}/{p.name}"
            for p in sorted(folder.iterdir())
            if p.is_file() and p.suffix.lower() in JPEG_SUFFIXES
        ]
    return names


def load_bench_set(root: Path) -> list[BenchFile]:
    """Every JPEG of the benchmark set, read once into memory."""
    return [BenchFile(name, (root / name).read_bytes()) for name in list_bench_files(root)]


def decode_resize(data: bytes) -> np.ndarray:
    """The reference: Pillow decode to RGB, ``BILINEAR`` resize to 300×300, as a NumPy array."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    return np.asarray(image.resize((OUT_SIZE, OUT_SIZE), Image.BILINEAR))


def process_pair(
    function: PairFunction | None, data1: bytes, data2: bytes
) -> tuple[np.ndarray, np.ndarray]:
    """One sample of a workload, the plain way: two references, then the workload's function."""
    image1, image2 = decode_resize(data1), decode_resize(data2)
    return (image1, image2) if function is None else function(image1, image2)


def pair_orders(count: int, seed: int = SHUFFLE_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two independent permutations of ``range(count)``: the two shuffled readers."""
    rng = np.random.default_rng(seed)
    return rng.permutation(count), rng.permutation(count)


def check_batch(array: np.ndarray, who: str) -> int:
    """The number of images of a delivered batch, after checking that it is what every
    contender must deliver (32×300×300×3 uint8)."""
    if array.shape != (BATCH_SIZE, OUT_SIZE, OUT_SIZE, 3) or array.dtype != np.uint8:
        raise ValueError(f"{who}: delivered a batch of {array.shape} {array.dtype}")
    return len(array)


# --- contenders ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassTiming:
    """One timed pass: images delivered in ``seconds``."""

    images: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.images / self.seconds


class Contender:
    """One way of computing a workload, timed pass by pass.

    Args:
        workload: what to compute.
        batches: timed batches per ``run_pass()``.
    """

    label: str = ""

    def __init__(self, workload: Workload, batches: int) -> None:
        self.workload = workload
        self.batches = batches

    def setup(self) -> None:
        """Prepare everything that is not timed (processes, pipelines, graphs)."""

    def run_pass(self) -> PassTiming:
        """Deliver ``batches`` dense batches (plus untimed ones at the start if needed), leave
        nothing running, and return the timing."""
        raise NotImplementedError

    def close(self) -> None:
        """Release processes and threads."""


class PlainPython(Contender):
    """A loop in this process: Pillow decode + resize of both images of each pair, the
    workload's function on the pair, ``np.stack`` per batch. Nothing to fill: all of the pass
    is timed."""

    label = "plain Python, 1 process"

    def __init__(self, workload: Workload, batches: int, files: Sequence[BenchFile]) -> None:
        super().__init__(workload, batches)
        self.data = [f.data for f in files]
        self.order1, self.order2 = pair_orders(len(self.data))
        self.cursor = 0

    def run_pass(self) -> PassTiming:
        n, data, function = len(self.data), self.data, self.workload.function
        delivered = 0
        start = time.perf_counter()
        for _ in range(self.batches):
            indices = range(self.cursor, self.cursor + BATCH_SIZE)
            self.cursor += BATCH_SIZE
            pairs = [
                process_pair(function, data[self.order1[i % n]], data[self.order2[i % n]])
                for i in indices
            ]
            delivered += len(np.stack([p[0] for p in pairs]))
            delivered += len(np.stack([p[1] for p in pairs]))
        return PassTiming(delivered, time.perf_counter() - start)


class _BenchDataset:
    """Map-style dataset of a workload (one pair per item) over bytes held in memory;
    ``length`` items, cycling through the files."""

    def __init__(self, workload: Workload, data: list[bytes], length: int) -> None:
        self.function = workload.function
        self.data = data
        self.length = length
        self.order1, self.order2 = pair_orders(len(data))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        i = index % len(self.data)  # the sampler's indices run on from epoch to epoch
        return process_pair(self.function, self.data[self.order1[i]], self.data[self.order2[i]])


def _stack_shared(arrays: Sequence[np.ndarray]) -> Any:
    """Stack equal-shape uint8 arrays into one torch tensor. In a worker the tensor is made in
    shared memory first, as ``default_collate`` does, so that only a handle crosses the process
    boundary instead of a pickled copy of the pixels."""
    import torch
    from torch.utils.data import get_worker_info

    shape = (len(arrays), *arrays[0].shape)
    if get_worker_info() is None:
        return torch.from_numpy(np.stack(arrays))
    storage = torch.UntypedStorage._new_shared(int(np.prod(shape)))
    out = torch.empty(0, dtype=torch.uint8).set_(storage).view(shape)
    np.stack(arrays, out=out.numpy())
    return out


def stack_collate(items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[Any, ...]:
    """The DataLoader's collate: pairs of arrays into a pair of stacked tensors."""
    return tuple(_stack_shared(group) for group in zip(*items, strict=True))


class _ContinuingSampler:
    """The DataLoader's sampler: each epoch takes the next ``length`` indices (the dataset
    wraps them around), so that successive passes go through the files as the other
    contenders do, instead of repeating the same first ones. It runs in the main process."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.start = 0

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Any:
        start, self.start = self.start, self.start + self.length
        return iter(range(start, start + self.length))


def _worker_init(worker_id: int) -> None:
    """Give every DataLoader worker the same Pillow block cache as the main process."""
    blocks = os.environ.get("PILLOW_BLOCKS_MAX")
    if blocks is not None:
        Image.core.set_blocks_max(int(blocks))


class TorchLoader(Contender):
    """``torch.utils.data.DataLoader`` with worker processes and persistent workers; one pass
    is one epoch of ``batches + 1`` batches (workers stop at the epoch's end), timed from the
    first batch's delivery."""

    def __init__(
        self, workload: Workload, batches: int, files: Sequence[BenchFile], workers: int = 2
    ) -> None:
        super().__init__(workload, batches)
        self.data = [f.data for f in files]
        self.workers = workers
        self.label = f"torch DataLoader, num_workers={workers}"
        self.loader: Any = None

    def setup(self) -> None:
        """Make the DataLoader and start its workers with one untimed epoch."""
        from torch.utils.data import DataLoader

        length = (self.batches + 1) * BATCH_SIZE
        self.loader = DataLoader(
            _BenchDataset(self.workload, self.data, length),  # type: ignore[arg-type]
            batch_size=BATCH_SIZE,
            sampler=_ContinuingSampler(length),
            num_workers=self.workers,
            persistent_workers=True,
            collate_fn=stack_collate,
            worker_init_fn=_worker_init,
        )
        self.run_pass()

    def run_pass(self) -> PassTiming:
        delivered, start = 0, 0.0
        for k, batch in enumerate(self.loader):
            images = sum(check_batch(part.numpy(), self.label) for part in batch)
            if k == 0:
                start = time.perf_counter()
            else:
                delivered += images
        return PassTiming(delivered, time.perf_counter() - start)

    def close(self) -> None:
        # Dropping the last iterator shuts the persistent workers down.
        self.loader = None


# Pipeline settings of the augkit contenders besides the default: issue 4's debug mode, and
# the synchronous executor (no prefetching), which is what debug mode can be at best.
SYNC_SETTINGS = {"exec_async": False, "exec_pipelined": False}
DEBUG_SETTINGS = {"debug": True}


def build_augkit_pipeline(
    workload: Workload,
    file_root: Path,
    num_threads: int = NUM_THREADS,
    py_num_workers: int | None = None,
    seed: int = PIPELINE_SEED,
    settings: dict[str, Any] | None = None,
) -> Any:
    """The augkit pipeline of ``workload``, written as a user would write it: two shuffled
    readers, decode, resize, and the workload's function as ``fn.python_function``.
    ``py_num_workers=None`` leaves augkit's default; ``settings`` are more ``Pipeline``
    arguments (``debug=True``, ``exec_async=False``...)."""
    from augkit import pipeline_def

    extra = {} if py_num_workers is None else {"py_num_workers": py_num_workers}
    extra.update(settings or {})
    function = workload.function

    pairs = pipeline_def(
        define_pairs,
        batch_size=BATCH_SIZE,
        num_threads=num_threads,
        device_id=None,
        seed=seed,
        **extra,
    )
    reader = {"random_shuffle": True}
    pipe = pairs(str(file_root), function, [reader, reader])
    pipe.build()
    return pipe


def define_pairs(root: str, function: Any, readers: list[dict[str, Any]]) -> Any:
    """The workloads' augkit pipeline, as a user writes it: one reader per entry of
    ``readers`` (its arguments), decode, resize, and ``function`` (if any) on the pairs as a
    ``fn.python_function``. The benchmark and the bound's check both build this one."""
    from augkit import fn, types

    images = []
    for args in readers:
        jpegs, _ = fn.readers.file(file_root=root, **args)
        decoded = fn.decoders.image(jpegs, output_type=types.RGB)
        images.append(fn.resize(decoded, resize_x=OUT_SIZE, resize_y=OUT_SIZE))
    if function is None:
        return tuple(images)
    out1, out2 = fn.python_function(*images, function=function, num_outputs=2)
    return out1, out2


def augkit_default_py_num_workers() -> Any:
    """The default of ``Pipeline``'s ``py_num_workers`` argument (``None`` if it has none)."""
    import inspect

    from augkit import Pipeline

    parameter = inspect.signature(Pipeline).parameters.get("py_num_workers")
    return None if parameter is None else parameter.default


class AugkitPipeline(Contender):
    """An augkit pipeline reading the files with ``fn.readers.file``; each batch's outputs are
    turned into dense arrays (``as_array()``), as the other contenders deliver them. Every
    pass runs one untimed batch, times ``batches`` batches, then closes the pipeline (untimed)
    so that no prefetching or worker process runs into the next contender's pass.
    ``settings``: more ``Pipeline`` arguments (``DEBUG_SETTINGS``, ``SYNC_SETTINGS``)."""

    def __init__(
        self,
        workload: Workload,
        batches: int,
        file_root: Path,
        threads: int = NUM_THREADS,
        py_num_workers: int | None = None,
        label: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(workload, batches)
        self.file_root = file_root
        self.threads = threads
        self.py_num_workers = py_num_workers
        self.settings = dict(settings or {})
        if label is None:
            label = "augkit, default" if py_num_workers is None and not settings else "augkit"
            if self.settings == DEBUG_SETTINGS:
                label = "augkit debug mode"
            elif self.settings:
                label += ", " + ", ".join(f"{k}={v}" for k, v in self.settings.items())
            if threads != NUM_THREADS:
                label += f", num_threads={threads}"
            if py_num_workers is not None:
                label += f", py_num_workers={py_num_workers}"
        self.label = label
        self.pipe: Any = None

    def setup(self) -> None:
        self.pipe = build_augkit_pipeline(
            self.workload,
            self.file_root,
            self.threads,
            self.py_num_workers,
            settings=self.settings,
        )
        self.pipe.close()  # built and checked; every pass starts it again

    def _batch(self) -> int:
        return sum(check_batch(out.as_array(), self.label) for out in self.pipe.run())

    def run_pass(self) -> PassTiming:
        try:
            self._batch()  # untimed: starts the pipeline (threads, workers, prefetching)
            start = time.perf_counter()
            delivered = sum(self._batch() for _ in range(self.batches))
            seconds = time.perf_counter() - start
        finally:
            self.pipe.close()
        return PassTiming(delivered, seconds)

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None


# --- the bound: augkit's kernels on the threads, no pipeline (issue 11) ---------------------

BOUND_WORKLOADS = "ab"
BOUND_LABEL = f"bound: augkit's kernels on {NUM_THREADS} threads, no pipeline"
BOUND_DEPTH = 2  # batches submitted to the threads ahead of the one being delivered


@dataclass(frozen=True)
class BoundKernels:
    """The decode and resize kernels that augkit's ``fn.decoders.image(output_type=types.RGB)``
    and ``fn.resize(resize_x=300, resize_y=300)`` run on a uint8 RGB JPEG, called directly.

    - decode: ``augkit.operators.decoders.image.decode_image(data, types.RGB)`` (its JPEG fast
      path is simplejpeg, i.e. libjpeg-turbo, where installed; else Pillow);
    - resize: ``augkit.operators.geometric.resize_torch.resize(image, (300, 300))`` (torch's
      antialiased bilinear uint8 kernel) when ``resize_torch.backend() == "torch"``, else
      Pillow's ``Image.fromarray(image).resize((300, 300), Image.BILINEAR)``, which is what
      ``fn.resize`` picks for a whole-image uint8 RGB resize with its default filters.
    """

    decoder: str
    resizer: str
    decode: Callable[[np.ndarray], np.ndarray]
    resize: Callable[[np.ndarray], np.ndarray]

    @property
    def description(self) -> str:
        return f"decode: {self.decoder}; resize: {self.resizer}"

    def load(self, path: str) -> np.ndarray:
        """One image as the pipeline makes it: read (as ``fn.readers.file`` does, with
        ``np.fromfile``), decode to RGB, resize to 300×300."""
        return self.resize(self.decode(np.fromfile(path, dtype=np.uint8)))

    def pair(
        self, function: PairFunction | None, path1: str, path2: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """One sample of a workload: both images, then the workload's function on the pair."""
        image1, image2 = self.load(path1), self.load(path2)
        return (image1, image2) if function is None else function(image1, image2)


def bound_kernels() -> BoundKernels:
    """augkit's chosen kernels for decode + resize of a uint8 RGB JPEG to 300×300 (asking for
    the resize back end imports torch: call it untimed)."""
    from augkit import types
    from augkit.operators.decoders import jpeg
    from augkit.operators.decoders.image import decode_image
    from augkit.operators.geometric import resize_torch

    fast = getattr(jpeg, "fast_backend", lambda: None)()
    decoder = (
        f"augkit.operators.decoders.image.decode_image(data, types.RGB) "
        f"({fast or 'Pillow'} for these JPEGs)"
    )

    def decode(data: np.ndarray) -> np.ndarray:
        return decode_image(data, types.RGB)

    size = (OUT_SIZE, OUT_SIZE)
    if resize_torch.backend() == "torch":
        resizer = f"augkit.operators.geometric.resize_torch.resize(image, {size}) (torch)"

        def resize(image: np.ndarray) -> np.ndarray:
            return resize_torch.resize(image, size)

    else:
        resizer = f"Image.fromarray(image).resize({size}, Image.BILINEAR) (Pillow)"

        def resize(image: np.ndarray) -> np.ndarray:
            return np.asarray(Image.fromarray(image).resize(size, Image.BILINEAR))

    return BoundKernels(decoder, resizer, decode, resize)


class KernelBound(Contender):
    """The bound of workloads (a) and (b): augkit's decode and resize kernels (``BoundKernels``)
    called directly on ``threads`` threads of a ``ThreadPoolExecutor``, with no pipeline. Each
    task reads, decodes and resizes both images of one pair from disk (the files augkit's
    reader reads, paired through the same two permutations as the baselines') and, for (b),
    runs the workload's function on the pair, on the same threads; the main thread makes each
    batch dense (``np.stack`` of the 32 images of each output), as the other contenders
    deliver it. ``BOUND_DEPTH`` batches are submitted ahead of the one being delivered, so the
    threads never wait for the main thread; a pass submits exactly the batches it delivers,
    so nothing runs after it. Timed as augkit is: one untimed batch, then ``batches`` batches
    from that batch's delivery to the last one's."""

    label = BOUND_LABEL

    def __init__(
        self, workload: Workload, batches: int, file_root: Path, threads: int = NUM_THREADS
    ) -> None:
        super().__init__(workload, batches)
        self.paths = [str(file_root / name) for name in list_bench_files(file_root)]
        self.order1, self.order2 = pair_orders(len(self.paths))
        self.threads = threads
        self.cursor = 0
        self.kernels: BoundKernels | None = None
        self.pool: ThreadPoolExecutor | None = None

    def setup(self) -> None:
        self.kernels = bound_kernels()
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="bound")

    def _pair(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        assert self.kernels is not None
        i, paths = index % len(self.paths), self.paths
        return self.kernels.pair(
            self.workload.function, paths[self.order1[i]], paths[self.order2[i]]
        )

    def _submit(self) -> list[Future[tuple[np.ndarray, np.ndarray]]]:
        assert self.pool is not None
        start, self.cursor = self.cursor, self.cursor + BATCH_SIZE
        return [self.pool.submit(self._pair, i) for i in range(start, start + BATCH_SIZE)]

    def run_pass(self) -> PassTiming:
        total = self.batches + 1  # the first one untimed
        queue = deque(self._submit() for _ in range(min(BOUND_DEPTH, total)))
        submitted = len(queue)
        delivered, start = 0, 0.0
        try:
            for k in range(total):
                pairs = [f.result() for f in queue.popleft()]
                if submitted < total:
                    queue.append(self._submit())
                    submitted += 1
                images = sum(
                    check_batch(np.stack([p[j] for p in pairs]), self.label) for j in (0, 1)
                )
                if k == 0:
                    start = time.perf_counter()
                else:
                    delivered += images
            seconds = time.perf_counter() - start
        finally:
            # After a failure, leave nothing running into the next contender's pass.
            for futures in queue:
                for f in futures:
                    f.cancel()
            wait([f for futures in queue for f in futures])
        return PassTiming(delivered, seconds)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


@dataclass(frozen=True)
class BoundCheck:
    """The bound's output against augkit's pipeline for the same files, on one workload."""

    workload: str
    pairs: int
    outputs: int  # images compared (two per pair)
    identical: int  # of those, bit-identical
    mean_abs_diff: float
    max_abs_diff: int


def difference(name: str, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """``|got - want|`` per pixel (int16), for the accuracy checks; a shape that differs is an
    error naming the file."""
    if got.shape != want.shape:
        raise ValueError(f"{name}: augkit gave shape {got.shape}, expected {want.shape}")
    return np.abs(got.astype(np.int16) - want.astype(np.int16))


def check_bound(workload: Workload, file_root: Path, limit: int | None = None) -> BoundCheck:
    """Whether the bound computes what augkit's pipeline does (untimed, once per run): the
    workload's augkit pipeline (``build_augkit_pipeline``'s, written the same way) with both
    readers in file order, the second one's file list rotated by one so that each pair holds
    two different photos, against ``BoundKernels.pair`` on the same two files, output by
    output; the first ``limit`` pairs (all files by default)."""
    from augkit import pipeline_def

    names = list_bench_files(file_root)
    second = names[1:] + names[:1]
    count = len(names) if limit is None else min(limit, len(names))
    function = workload.function

    in_order = pipeline_def(
        define_pairs, batch_size=BATCH_SIZE, num_threads=NUM_THREADS, device_id=None, seed=1
    )
    kernels = bound_kernels()
    pipe = in_order(str(file_root), function, [{}, {"files": second}])
    pipe.build()
    total, pixels, identical, max_diff, k = 0.0, 0, 0, 0, 0
    try:
        while k < count:
            outputs = pipe.run()
            for i in range(len(outputs[0])):
                if k >= count:
                    break
                wants = kernels.pair(
                    function, str(file_root / names[k]), str(file_root / second[k])
                )
                for out, want in zip(outputs, wants, strict=True):
                    diff = difference(names[k], np.asarray(out.at(i)), want)
                    total += float(diff.sum())
                    pixels += diff.size
                    identical += int(not diff.any())
                    max_diff = max(max_diff, int(diff.max()))
                k += 1
    finally:
        pipe.close()
    return BoundCheck(workload.key, count, 2 * count, identical, total / max(pixels, 1), max_diff)


# --- accuracy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accuracy:
    """augkit's decode + resize against the plain-Python reference, file by file."""

    files: int
    mean_abs_diff: float
    worst_file_mean: float
    worst_file: str
    max_abs_diff: int


def measure_accuracy(
    file_root: Path, files: Sequence[BenchFile], limit: int | None = None
) -> Accuracy:
    """Mean |difference| over all pixels between augkit's decode + resize (one reader in file
    order, default settings, ``num_threads=2``) and ``decode_resize`` of the same file, matched
    by ``source_info``."""
    from augkit import fn, pipeline_def, types

    @pipeline_def(batch_size=BATCH_SIZE, num_threads=NUM_THREADS, device_id=None, seed=1)
    def in_order(root: str) -> Any:
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=False)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        return fn.resize(images, resize_x=OUT_SIZE, resize_y=OUT_SIZE)

    reference = {f.name: f.data for f in files}
    pipe = in_order(str(file_root))
    pipe.build()
    total, pixels, worst, worst_name, max_diff, count = 0.0, 0, -1.0, "", 0, 0
    try:
        for (batch,) in pipe.epoch(last_batch_policy="partial"):
            for i in range(len(batch)):
                name = batch.source_info(i)
                diff = difference(name, batch.at(i), decode_resize(reference[name]))
                total += float(diff.sum())
                pixels += diff.size
                if diff.mean() > worst:
                    worst, worst_name = float(diff.mean()), name
                max_diff = max(max_diff, int(diff.max()))
                count += 1
                if limit is not None and count >= limit:
                    break
            if limit is not None and count >= limit:
                break
    finally:
        pipe.close()
    return Accuracy(count, total / max(pixels, 1), worst, worst_name, max_diff)


# --- python_function overhead ----------------------------------------------------------------


@dataclass(frozen=True)
class Overhead:
    """Per-sample cost of ``fn.python_function`` with a trivial function, in µs."""

    label: str
    without_us: float
    with_us: float

    @property
    def overhead_us(self) -> float:
        return self.with_us - self.without_us


def measure_direct_call(size: int = 16, calls: int = 200_000) -> float:
    """µs per direct call of ``trivial`` on a small array (the best of three timings)."""
    import timeit

    from benchmarks.functions import trivial

    array = np.random.default_rng(0).uniform(size=size).astype(np.float32)
    best = min(timeit.repeat(lambda: trivial(array), number=calls, repeat=3))
    return best / calls * 1e6


def measure_augkit_overhead(
    label: str, batches: int, size: int = 16, py_num_workers: int | None = None
) -> Overhead:
    """µs per sample of ``fn.random.uniform(shape=[size]) -> fn.python_function(trivial)``
    and of the same pipeline without the Python operator; each the best of three timings of
    ``batches`` batches after ten untimed ones, the pipeline closed in between."""
    from augkit import fn, pipeline_def
    from benchmarks.functions import trivial

    extra = {} if py_num_workers is None else {"py_num_workers": py_num_workers}
    per_sample = {}
    for with_function in (False, True):

        @pipeline_def(
            batch_size=BATCH_SIZE, num_threads=NUM_THREADS, device_id=None, seed=1, **extra
        )
        def small(with_function: bool = with_function) -> Any:
            values = fn.random.uniform(range=[0.0, 1.0], shape=[size])
            return fn.python_function(values, function=trivial) if with_function else values

        pipe = small()
        pipe.build()
        try:
            for _ in range(10):
                pipe.run()
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(batches):
                    pipe.run()
                best = min(best, time.perf_counter() - start)
        finally:
            pipe.close()
        per_sample[with_function] = best / (batches * BATCH_SIZE) * 1e6
    return Overhead(label, per_sample[False], per_sample[True])


@dataclass
class Scaling:
    """Workload (c)'s Python function alone, in 1 and 2 worker processes: ms per batch."""

    one_ms: float
    two_ms: float

    @property
    def ratio(self) -> float:
        return self.one_ms / self.two_ms


def measure_worker_scaling(batches: int, rounds: int = 3) -> Scaling:
    """Worker scaling on (c)'s function: a pipeline that feeds 32 pairs of 300x300 images
    (already decoded, through ``fn.external_source``) to ``blur_patches`` with
    ``parallel="processes"``, with ``py_num_workers`` 1 and 2, interleaved; the best of
    ``rounds`` timings of ``batches`` batches each."""
    from augkit import Pipeline, fn
    from benchmarks.functions import blur_patches

    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (300, 300, 3), dtype=np.uint8) for _ in range(BATCH_SIZE)]
    pipes = {}
    for workers in (1, 2):
        pipe = Pipeline(
            batch_size=BATCH_SIZE,
            num_threads=NUM_THREADS,
            device_id=None,
            seed=1,
            py_num_workers=workers,
        )
        with pipe:
            first = fn.external_source(source=lambda: images)
            second = fn.external_source(source=lambda: images[::-1])
            pipe.set_outputs(
                *fn.python_function(
                    first, second, function=blur_patches, num_outputs=2, parallel="processes"
                )
            )
        pipes[workers] = pipe
    best = {1: float("inf"), 2: float("inf")}
    try:
        for pipe in pipes.values():
            pipe.run()
        for _ in range(rounds):
            for workers, pipe in pipes.items():
                start = time.perf_counter()
                for _ in range(batches):
                    pipe.run()
                best[workers] = min(best[workers], (time.perf_counter() - start) / batches)
    finally:
        for pipe in pipes.values():
            pipe.close()
    return Scaling(best[1] * 1e3, best[2] * 1e3)
