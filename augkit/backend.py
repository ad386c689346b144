"""Where arrays live: NumPy on "cpu", CuPy on "gpu", and the DLPack bridge between libraries.

Nothing here imports CuPy or torch at module import time: CuPy is looked up on first use, and
``gpu_unavailable_reason()`` says in plain words why a GPU pipeline cannot be built here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from augkit.errors import DeviceError

DEVICES = ("cpu", "gpu", "mixed")


@functools.cache
def _cupy() -> Any | None:
    try:
        import cupy
    except Exception:
        return None
    return cupy


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """``None`` when CuPy and a CUDA device are usable, else the reason they are not."""
    cupy = _cupy()
    if cupy is None:
        return "CuPy is not installed (pip install 'augkit[gpu]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy cannot reach a CUDA device ({exc})"
    if count == 0:
        return "no CUDA device is visible"
    return None


def check_device(
    name: str, device: str, public: bool, device_id: int | None, copy: bool = False
) -> None:
    """The device rule, the one function a normal pipeline's build (``core.check_device``),
    debug mode and eager (``graph.Operator.__call__``) apply: a public operator on device
    "gpu" or "mixed" needs a usable GPU (CuPy and a CUDA device) and a ``device_id`` that is
    not ``None``; else ``DeviceError`` names the operator, the device, why and what to do.

    Args:
        name: what the message calls the operator (a built node's name; in debug mode and
            eager, checked before the node exists, ``name=`` or the operator's class name).
        device: the device it runs on ("cpu", "gpu" or "mixed").
        public: whether it is one of the registry's public operators. The copies between host
            and GPU (``.gpu()``, and the one ``device="gpu"`` implies on CPU data) are not:
            the operator that asked for the GPU is the one refused.
        device_id: the pipeline's (``None``: the pipeline wants no GPU); eager calls, which
            have no pipeline, give ``augkit.eager.EAGER_DEVICE_ID`` (0).
        copy: ``name`` is the user's own ``.gpu()`` (checked like a public operator); the
            message says to leave it out rather than to use ``device='cpu'``.
    """
    if device not in ("gpu", "mixed") or not public:
        return
    reason = gpu_unavailable_reason()
    instead = "leave out the .gpu()" if copy else "use device='cpu' for it"
    if reason is not None:
        todo = f"{instead.capitalize()}, or run where a CUDA device and CuPy exist."
    elif device_id is None:
        reason = "the pipeline was created with device_id=None"
        todo = (
            "Create the pipeline with a device_id (device_id=0: the first CUDA device), or "
            f"{instead}."
        )
    else:
        return
    raise DeviceError(f"{name} (device={device!r}) needs a GPU, but {reason}. {todo}")


def is_gpu_array(x: Any) -> bool:
    """True for a CuPy array (checked without importing CuPy)."""
    return type(x).__module__.startswith("cupy")


def array_module(x: Any) -> Any:
    """``numpy`` or ``cupy``, whichever ``x`` belongs to."""
    return _cupy() if is_gpu_array(x) else np


def to_cpu(x: Any) -> np.ndarray:
    """A NumPy array with the data of ``x`` (CuPy arrays are copied to the host)."""
    if is_gpu_array(x):
        return x.get()
    return np.asarray(x)


def to_gpu(x: Any, device_id: int = 0) -> Any:
    """A CuPy array on ``device_id`` with the data of ``x``."""
    cupy = _cupy()
    if cupy is None:
        raise RuntimeError(gpu_unavailable_reason())
    with cupy.cuda.Device(device_id):
        return cupy.asarray(x)


class DLPackCapsule:
    """Wraps a bare DLPack capsule (what ``torch.utils.dlpack.to_dlpack`` returns) so that
    ``np.from_dlpack`` and ``cupy.from_dlpack``, which want an object with ``__dlpack__``,
    accept it."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream: Any = None, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


_DL_CPU = 1
_DL_CUDA = 2


def from_dlpack(obj: Any, device: str) -> Any:
    """A NumPy (device "cpu") or CuPy (device "gpu") array from a DLPack capsule or any object
    that implements ``__dlpack__`` (a torch tensor, a CuPy array...)."""
    if type(obj).__name__ == "PyCapsule":
        obj = DLPackCapsule(obj, (_DL_CUDA, 0) if device == "gpu" else (_DL_CPU, 0))
    if device == "gpu":
        cupy = _cupy()
        if cupy is None:
            raise RuntimeError(gpu_unavailable_reason())
        return cupy.from_dlpack(obj)
    return np.from_dlpack(obj)


def is_dlpack_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def tune_allocator() -> bool:
    """Keep freed image-sized blocks in glibc's heap instead of handing them back to the OS.

    By default glibc serves every allocation above 128 KiB-32 MiB (the threshold moves) with
    a fresh ``mmap`` and returns it on free, so each decoded image, resized image and copied
    sample costs page faults: measured here, the worker round trip of (c) went from 61 to 47 ms
    per batch and 2-worker scaling from 1.68x to 1.79x with the thresholds raised. Called once,
    when the first pipeline is built. ``AUGKIT_KEEP_MALLOC=1`` leaves the allocator alone. The
    price: up to about 128 MiB of freed memory stays with the process.

    Returns whether the settings were applied (glibc only).
    """
    import ctypes
    import os

    if os.environ.get("AUGKIT_KEEP_MALLOC") == "1":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    applied = mallopt(_M_MMAP_THRESHOLD, 64 * 2**20) == 1
    applied = mallopt(_M_TRIM_THRESHOLD, 128 * 2**20) == 1 and applied
    return applied


TRIM_EVERY = 200
"""``Pipeline.run()`` calls ``trim_allocator`` once in this many batches."""


def trim_allocator() -> None:
    """Give the free pages inside glibc's heaps back to the OS (``malloc_trim(0)``), where
    ``tune_allocator`` raised its thresholds.

    With those thresholds, decoded images of a different size every sample come from the heaps
    and fragment them; the free space between live blocks is never returned on its own, so a
    long run's RSS crept up by ~1.5 MB per 1000 batches (benchmarks/soak.py, 10 000 batches of
    the tutorial pipeline: +13.5 MB) although no object leaked. A call takes ~1.5 ms (measured
    after 200 batches of decode + resize), so every ``TRIM_EVERY`` batches it costs < 0.01 ms
    a batch, and the thresholds still save their page faults in between.
    """
    if not tune_allocator():
        return
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@functools.cache
def opencv() -> Any:
    """OpenCV (``cv2``), set up for augkit's kernels: its own thread pool off
    (``cv2.setNumThreads(1)``), because the pipeline's threads are the parallelism (as in DALI)
    and a kernel that spread itself over the cores would make ``num_threads=1`` mean nothing and
    oversubscribe the rest. OpenCV's functions release the GIL.

    Import it through here (in ``OperatorImpl.setup``, on the building thread), never with a
    bare ``import cv2`` in a kernel. The setting is process-wide: a user's own ``cv2`` calls in
    a Python function run single-threaded too."""
    import cv2

    cv2.setNumThreads(1)
    return cv2
