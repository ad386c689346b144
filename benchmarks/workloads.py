"""The workloads and the contenders that the benchmark times side by side.

Two workloads, both at batch size 32 and both ending in dense uint8 batches of 300×300×3:

- ``a``: decode a JPEG and resize it to 300×300 (Pillow ``BILINEAR``, which is DALI's default
  linear filter with antialiasing);
- ``b``: the same for two images (two readers, shuffled), then the tutorial's ``edit_images``
  on the pair (it swaps the outside of a disc between the two images).

Throughput is counted in decoded-and-resized images: a batch of ``b`` holds 32 pairs, that is
64 images.

Every contender is a ``Contender``: ``setup()`` (outside the timing), then ``run_pass()`` times
over, each delivering ``batches`` dense batches and returning how many images they held, and
``close()``. A pass must leave no work running in the background once it returns, so that
contenders timed one after the other do not steal each other's cores: the DataLoader is timed
one whole epoch per pass (its workers stop prefetching at the end of an epoch), and augkit's
executor computes a batch when ``run()`` asks for it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

BATCH_SIZE = 32
OUT_SIZE = 300
SHUFFLE_SEED = 1234
JPEG_SUFFIXES = (".jpg", ".jpeg")


def edit_images(image1: np.ndarray, image2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tutorial's Python operator, copied from ``examples/python_operators_tutorial.py``
    (only type hints and this docstring added): swaps the pixels outside a central disc."""
    assert image1.shape == image2.shape
    h, w, c = image1.shape  # noqa: RUF059 (kept as the tutorial wrote it)
    y, x = np.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    result1 = np.copy(image1)
    result1[mask] = image2[mask]
    result2 = np.copy(image2)
    result2[mask] = image1[mask]
    return result1, result2


# --- workloads and data ---------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One workload: its key in the table, a title, and images per sample (1, or 2: pairs)."""

    key: str
    title: str
    images_per_sample: int

    @property
    def images_per_batch(self) -> int:
        return BATCH_SIZE * self.images_per_sample


WORKLOADS = {
    "a": Workload("a", "decode + resize to 300×300", 1),
    "b": Workload("b", "(a) on two readers + edit_images on the pairs", 2),
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


def decode_resize_pair(data1: bytes, data2: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Workload ``b`` for one sample: two references, then ``edit_images`` on them."""
    return edit_images(decode_resize(data1), decode_resize(data2))


def pair_orders(count: int, seed: int = SHUFFLE_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two independent permutations of ``range(count)``: the two shuffled readers of ``b``."""
    rng = np.random.default_rng(seed)
    return rng.permutation(count), rng.permutation(count)


# --- contenders ------------------------------------------------------------------------------


class Contender:
    """One way of computing a workload, timed pass by pass.

    Args:
        workload: what to compute.
        batches: dense batches delivered by one ``run_pass()``.
    """

    label: str = ""

    def __init__(self, workload: Workload, batches: int) -> None:
        self.workload = workload
        self.batches = batches

    @property
    def images_per_pass(self) -> int:
        return self.batches * self.workload.images_per_batch

    def setup(self) -> None:
        """Prepare everything that is not timed (processes, pipelines, graphs)."""

    def run_pass(self) -> int:
        """Deliver ``batches`` dense batches; return the number of images they hold."""
        raise NotImplementedError

    def close(self) -> None:
        """Release processes and threads."""


class PlainPython(Contender):
    """A loop in this process: Pillow decode + resize per image, ``np.stack`` per batch."""

    label = "plain Python, 1 process"

    def __init__(self, workload: Workload, batches: int, files: Sequence[BenchFile]) -> None:
        super().__init__(workload, batches)
        self.data = [f.data for f in files]
        self.order1, self.order2 = pair_orders(len(self.data))
        self.cursor = 0

    def _next_indices(self) -> range:
        start = self.cursor
        self.cursor += BATCH_SIZE
        return range(start, start + BATCH_SIZE)

    def run_pass(self) -> int:
        n, data = len(self.data), self.data
        delivered = 0
        for _ in range(self.batches):
            indices = self._next_indices()
            if self.workload.key == "a":
                batch = np.stack([decode_resize(data[i % n]) for i in indices])
                delivered += len(batch)
            else:
                pairs = [
                    decode_resize_pair(data[self.order1[i % n]], data[self.order2[i % n]])
                    for i in indices
                ]
                batch1 = np.stack([p[0] for p in pairs])
                batch2 = np.stack([p[1] for p in pairs])
                delivered += len(batch1) + len(batch2)
        return delivered


class _BenchDataset:
    """Map-style dataset of workload ``a`` (one image per item) or ``b`` (one pair per item)
    over bytes held in memory; ``length`` items, cycling through the files."""

    def __init__(self, key: str, data: list[bytes], length: int) -> None:
        self.key = key
        self.data = data
        self.length = length
        self.order1, self.order2 = pair_orders(len(data))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        i = index % len(self.data)
        if self.key == "a":
            return decode_resize(self.data[i])
        return decode_resize_pair(self.data[self.order1[i]], self.data[self.order2[i]])


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


def stack_collate(items: list[Any]) -> Any:
    """The DataLoader's collate: items are arrays (``a``) or pairs of arrays (``b``)."""
    if isinstance(items[0], tuple):
        return tuple(_stack_shared(group) for group in zip(*items, strict=True))
    return _stack_shared(items)


def _worker_init(worker_id: int) -> None:
    """Give every DataLoader worker the same Pillow block cache as the main process."""
    blocks = os.environ.get("PILLOW_BLOCKS_MAX")
    if blocks is not None:
        Image.core.set_blocks_max(int(blocks))


class TorchLoader(Contender):
    """``torch.utils.data.DataLoader`` with worker processes and persistent workers; one pass
    is one epoch of a dataset of ``batches`` batches (workers stop at the epoch's end)."""

    def __init__(
        self, workload: Workload, batches: int, files: Sequence[BenchFile], workers: int = 2
    ) -> None:
        super().__init__(workload, batches)
        self.data = [f.data for f in files]
        self.workers = workers
        self.label = f"torch DataLoader, {workers} workers"
        self.loader: Any = None

    def setup(self) -> None:
        from torch.utils.data import DataLoader

        dataset = _BenchDataset(self.workload.key, self.data, self.batches * BATCH_SIZE)
        self.loader = DataLoader(
            dataset,  # type: ignore[arg-type]
            batch_size=BATCH_SIZE,
            num_workers=self.workers,
            persistent_workers=True,
            collate_fn=stack_collate,
            worker_init_fn=_worker_init,
        )

    def run_pass(self) -> int:
        delivered = 0
        for batch in self.loader:
            parts = batch if isinstance(batch, tuple) else (batch,)
            delivered += sum(len(p.numpy()) for p in parts)
        return delivered

    def close(self) -> None:
        # Dropping the last iterator shuts the persistent workers down.
        self.loader = None


def build_augkit_pipeline(
    key: str, file_root: Path, num_threads: int, shuffle: bool = True, seed: int = 42
) -> Any:
    """The augkit pipeline of workload ``key``, written as a user would write it."""
    from augkit import fn, pipeline_def, types

    @pipeline_def(batch_size=BATCH_SIZE, num_threads=num_threads, device_id=None, seed=seed)
    def resize_pipeline(root: str, random_shuffle: bool) -> Any:
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=random_shuffle)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        return fn.resize(images, resize_x=OUT_SIZE, resize_y=OUT_SIZE)

    @pipeline_def(batch_size=BATCH_SIZE, num_threads=num_threads, device_id=None, seed=seed)
    def swap_pipeline(root: str) -> Any:
        jpegs1, _ = fn.readers.file(file_root=root, random_shuffle=True)
        jpegs2, _ = fn.readers.file(file_root=root, random_shuffle=True)
        images = [
            fn.resize(
                fn.decoders.image(jpegs, output_type=types.RGB),
                resize_x=OUT_SIZE,
                resize_y=OUT_SIZE,
            )
            for jpegs in (jpegs1, jpegs2)
        ]
        return fn.python_function(*images, function=edit_images, num_outputs=2)

    root = str(file_root)
    pipe = resize_pipeline(root, shuffle) if key == "a" else swap_pipeline(root)
    pipe.build()
    return pipe


class AugkitPipeline(Contender):
    """An augkit pipeline reading the files with ``fn.readers.file``; each batch's outputs are
    turned into dense arrays (``as_array()``), as the other contenders deliver them."""

    def __init__(self, workload: Workload, batches: int, file_root: Path, threads: int) -> None:
        super().__init__(workload, batches)
        self.file_root = file_root
        self.threads = threads
        self.label = f"augkit, num_threads={threads}"
        self.pipe: Any = None

    def setup(self) -> None:
        self.pipe = build_augkit_pipeline(self.workload.key, self.file_root, self.threads)

    def run_pass(self) -> int:
        delivered = 0
        for _ in range(self.batches):
            for out in self.pipe.run():
                delivered += len(out.as_array())
        return delivered

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None


# --- accuracy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accuracy:
    """augkit's workload ``a`` against the plain-Python reference, file by file."""

    files: int
    mean_abs_diff: float
    worst_file_mean: float
    worst_file: str
    max_abs_diff: int


def measure_accuracy(
    file_root: Path, files: Sequence[BenchFile], limit: int | None = None
) -> Accuracy:
    """Mean |difference| over all pixels between augkit's decode + resize (reader in file order,
    no shuffle) and ``decode_resize`` of the same file, matched by ``source_info``."""
    reference = {f.name: f.data for f in files}
    pipe = build_augkit_pipeline("a", file_root, num_threads=2, shuffle=False)
    total, pixels, worst, worst_name, max_diff, count = 0.0, 0, -1.0, "", 0, 0
    try:
        for (batch,) in pipe.epoch(last_batch_policy="partial"):
            for i in range(len(batch)):
                name = batch.source_info(i)
                got, want = batch.at(i), decode_resize(reference[name])
                if got.shape != want.shape:
                    raise ValueError(
                        f"{name}: augkit gave shape {got.shape}, expected {want.shape}"
                    )
                diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
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
