"""The seed tree: pipeline seed -> one seed per operator -> one stream per (shard, iteration,
sample).

The rule that makes results independent of thread counts, worker counts, debug versus normal
mode and scheduling, and different on every shard of a data set:

1. A pipeline with ``seed=-1`` draws one seed from the OS; any other seed is used as given.
2. Operator ``k`` (counted in the order operators were created while the pipeline was defined;
   conditionals' splits and merges and the copies between host and GPU, ``.gpu()``/``.cpu()``
   explicit or implied by ``device="gpu"``, are not counted, so a seed gives the same draws on
   either device) gets ``operator_seed(pipeline_seed, k)``, unless it was given ``seed=``
   itself.
3. Its random streams are keyed by ``stream_key(operator_seed, shard)``, where ``shard`` is the
   pipeline's shard: the ``shard_id`` of its first reader (0 when it has none). Two pipelines
   that differ only in ``shard_id`` (two ranks of one DDP job) therefore draw different
   augmentations for sample k of batch i.
4. Every random value of sample ``s`` of iteration ``i`` comes from a counter-based stream:
   Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", the generator
   of cuRAND and Random123) with that key, at counters ``(j, s, i mod 2**32, i >> 32)`` for
   blocks ``j = 0, 1, ...`` of four 32-bit words. No state is shared between samples, so it does
   not matter which thread or process computes which sample, in which order, or which other
   samples are in the batch; and a whole batch is drawn in one vectorised NumPy call (``philox``),
   a microsecond or two per sample, where a NumPy ``Generator`` per sample costs ~10 µs to make.

Readers shuffle with ``epoch_rng(operator_seed, epoch)`` (their shards cover disjoint ranges, so
the shard is not in their key). A kernel that needs a whole NumPy ``Generator`` for a sample
(large draws, distributions beyond uniform) gets one seeded from the sample's stream
(``SampleStreams.generator``).

Example:
    >>> key = stream_key(operator_seed(42, 0), shard=0)
    >>> a = SampleStreams(key, iteration=0, ids=np.arange(4)).uniform(3)
    >>> b = SampleStreams(key, iteration=0, ids=np.array([3])).uniform(3)
    >>> bool((a[3] == b[0]).all())  # sample 3 draws the same whatever else is in the batch
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import secrets
import sys
import threading
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

_EPOCH = 2**64 - 2  # the counter word used for per-epoch streams (reader shuffles)
BATCH_ID = 2**32 - 1
"""The sample id of a whole batch's stream (for functions called once per batch)."""

_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_LOW32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)
_MULTIPLIERS = np.array([[0xD2511F53], [0xCD9E8D57]], np.uint64)


def resolve_seed(seed: int | None) -> int:
    """The seed a pipeline or operator uses: ``seed`` itself, or a fresh one for -1/None."""
    if seed is None or seed == -1:
        return secrets.randbits(63)
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or -1, got {seed!r}")
    return int(seed)


def operator_seed(pipeline_seed: int, ordinal: int) -> int:
    """The seed of the ``ordinal``-th operator of a pipeline whose seed is ``pipeline_seed``."""
    state = np.random.SeedSequence([pipeline_seed, ordinal]).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


def stream_key(op_seed: int, shard: int = 0) -> int:
    """The 64-bit Philox key of an operator's sample streams on ``shard``."""
    state = np.random.SeedSequence([op_seed, shard, 0x5EED]).generate_state(1, np.uint64)
    return int(state[0])


@functools.lru_cache(maxsize=256)
def _key_schedule(key: int) -> np.ndarray:
    """The round keys of Philox4x32-10 for a 64-bit ``key``: (10, 2, 1) uint64."""
    k0, k1 = key & 0xFFFFFFFF, (key >> 32) & 0xFFFFFFFF
    return np.array(
        [[[(k0 + r * _W0) & 0xFFFFFFFF], [(k1 + r * _W1) & 0xFFFFFFFF]] for r in range(10)],
        np.uint64,
    )


def philox(key: int, counters: np.ndarray) -> np.ndarray:
    """Philox4x32-10 of each counter: ``counters`` is (4, N) uint64 holding 32-bit words, the
    result is (4, N) uint64 holding the 32-bit output words (Random123's ``philox4x32_10``).

    Example:
        >>> philox(0, np.zeros((4, 1), np.uint64))[:, 0].tolist() == [
        ...     0x6627E8D5,
        ...     0xE169C58D,
        ...     0xBC57AC4C,
        ...     0x9B00DBD8,
        ... ]
        True
    """
    keys = _key_schedule(key)
    even = counters[0::2].astype(np.uint64)  # x0, x2
    odd = counters[1::2].astype(np.uint64)  # x1, x3
    products = np.empty_like(even)
    high = np.empty_like(even)
    for r in range(10):
        # x0' = hi(M1 x2) ^ x1 ^ k0, x2' = hi(M0 x0) ^ x3 ^ k1, x1' = lo(M1 x2), x3' = lo(M0 x0)
        np.multiply(_MULTIPLIERS, even, out=products)  # M0 * x0, M1 * x2: below 2**64
        np.right_shift(products[::-1], _32, out=high)
        np.bitwise_xor(high, odd, out=even)
        np.bitwise_xor(even, keys[r], out=even)
        np.bitwise_and(products[::-1], _LOW32, out=odd)
    out = np.empty((4, even.shape[1]), np.uint64)
    out[0::2] = even
    out[1::2] = odd
    return out


class SampleStreams:
    """The random streams of some samples of one operator in one iteration.

    Args:
        key: the operator's ``stream_key``.
        iteration: the pipeline iteration.
        ids: the samples' ids: their indices in the batch (or any integers below 2**32 that
            identify them, e.g. a row id).

    Every call continues each sample's stream where the previous call stopped (each sample
    consumes the same number of words), so an operator can draw several things in turn.
    """

    def __init__(self, key: int, iteration: int, ids: np.ndarray) -> None:
        self.key = key
        self.iteration = int(iteration)
        self.ids = np.asarray(ids, np.uint64).reshape(-1)
        self._block = 0

    def __len__(self) -> int:
        return len(self.ids)

    def words(self, count: int) -> np.ndarray:
        """(n, count) uint32 random words, ``count`` per sample."""
        n = len(self.ids)
        blocks = -(-count // 4)
        counters = np.empty((4, n, blocks), np.uint64)
        counters[0] = np.arange(self._block, self._block + blocks, dtype=np.uint64)
        counters[1] = self.ids[:, None]
        counters[2] = self.iteration & 0xFFFFFFFF
        counters[3] = (self.iteration >> 32) & 0xFFFFFFFF
        self._block += blocks
        out = philox(self.key, counters.reshape(4, n * blocks))
        # (4, n, blocks) -> (n, blocks, 4): a sample's words in block order
        words = out.reshape(4, n, blocks).transpose(1, 2, 0).reshape(n, blocks * 4)
        return words[:, :count].astype(np.uint32)

    def uniform(self, count: int, dtype: Any = np.float64) -> np.ndarray:
        """(n, count) values in [0, 1): 53 random bits each for float64, 24 for float32."""
        if np.dtype(dtype) == np.float32:
            return (self.words(count) >> np.uint32(8)).astype(np.float32) * np.float32(2**-24)
        w = self.words(2 * count).astype(np.uint64).reshape(len(self.ids), count, 2)
        high = (w[..., 0] >> np.uint64(5)).astype(np.float64)
        low = (w[..., 1] >> np.uint64(6)).astype(np.float64)
        return (high * 67108864.0 + low) * (1.0 / 9007199254740992.0)

    def seeds(self) -> np.ndarray:
        """One 63-bit seed per sample (int64), e.g. for the global generators of a call."""
        w = self.words(2).astype(np.uint64)
        return ((w[:, 0] << _32 | w[:, 1]) >> np.uint64(1)).astype(np.int64)

    def generator(self, index: int) -> np.random.Generator:
        """A NumPy Generator for sample ``index`` of these streams, seeded from its stream
        (for kernels that draw many values or need NumPy's distributions)."""
        seed = int(SampleStreams(self.key, self.iteration, self.ids[index : index + 1]).seeds()[0])
        return np.random.Generator(np.random.Philox(key=seed))


def sample_streams(key: int, iteration: int, n: int) -> SampleStreams:
    """The streams of samples ``0 .. n-1`` of a batch."""
    return SampleStreams(key, iteration, np.arange(n))


def batch_seed(key: int, iteration: int) -> int:
    """A 63-bit seed for a whole batch of one iteration (the stream of id ``BATCH_ID``)."""
    return int(SampleStreams(key, iteration, np.array([BATCH_ID])).seeds()[0])


def epoch_rng(op_seed: int, epoch: int) -> np.random.Generator:
    """The random stream of one epoch of a reader (its shuffle)."""
    counter = np.array([0, 0, _EPOCH, epoch], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=op_seed, counter=counter))


# Held by every call that seeds and uses the global generators: they are process-wide, so two
# such calls (two threads, two iterations in flight) must not interleave.
GLOBAL_RNG_LOCK = threading.RLock()

_call = threading.local()


def call_seed() -> int:
    """The seed of the Python-operator call running on this thread: a 63-bit integer from the
    operator's streams for (shard, iteration, sample), or (shard, iteration) in batch mode.
    The same in every mode (threads, worker processes, debug, eager) and for every thread or
    worker count: seed a library's own generator with it to make a function reproducible.

    The global generators of ``random``, ``numpy.random`` and torch are seeded for you (where
    the call runs serially or in a worker process); libraries with generators of their own are
    not: an Albumentations transform, a ``np.random.default_rng`` object, OpenCV's RNG.

    Example: functions for ``fn.python_function``, as a notebook cell or a script defines
    them::

        import threading

        import albumentations as A
        import numpy as np

        import augkit.random

        _local = threading.local()  # one Compose per thread


        def per_thread_transform():
            transform = getattr(_local, "transform", None)
            if transform is None:
                transform = _local.transform = A.Compose(
                    [A.HorizontalFlip(p=0.5), A.Affine(rotate=(-25, 25), p=1.0)]
                )
            return transform


        def augment(image):
            transform = per_thread_transform()
            transform.set_random_seed(augkit.random.call_seed())
            return transform(image=image)["image"]


        def noisy(image):  # uint8 in, uint8 out
            rng = np.random.default_rng(augkit.random.call_seed())
            noise = rng.normal(0, 4, image.shape)
            return np.clip(image + noise, 0, 255).astype(np.uint8)

    A transform is seeded by one call and then used by it, so calls on two threads must not
    share one: hence one per thread. The same code runs in worker processes
    (``py_num_workers`` > 1), also when defined in a notebook or ``__main__`` (sent by value):
    the ``threading.local`` reaches each worker empty (so does a ``threading.Lock``, unlocked;
    ``augkit.workers`` lists what travels fresh), and each worker makes its own transform on
    its first call. Threads, workers and serial runs give the same images for the same
    pipeline seed.

    Raises:
        RuntimeError: outside a function called by a Python operator.
    """
    seed = getattr(_call, "seed", None)
    if seed is None:
        raise RuntimeError(
            "call_seed() is known only inside a function that a Python operator calls "
            "(fn.python_function, fn.dl_tensor_python_function, TorchPythonFunction)"
        )
    return seed


@contextlib.contextmanager
def calling(seed: int) -> Iterator[None]:
    """Make ``seed`` what ``call_seed()`` gives on this thread inside the block."""
    previous = getattr(_call, "seed", None)
    _call.seed = seed
    try:
        yield
    finally:
        _call.seed = previous


def imported(name: str) -> Any:
    """The module ``name`` if it is imported *and finished importing*, else ``None``.

    A module another thread is still importing is in ``sys.modules`` half made; touching its
    objects then can crash the process (torch: a segmentation fault when its default generator
    is read while ``import torch`` runs in a notebook cell). Python marks such a module with
    ``__spec__._initializing`` until its import is done.
    """
    module = sys.modules.get(name)
    if module is None:
        return None
    spec = getattr(module, "__spec__", None)
    if spec is None or getattr(spec, "_initializing", False):
        return None
    return module


def _torch_generator() -> Any:
    return getattr(imported("torch"), "default_generator", None)


def global_rng_fingerprint() -> dict[str, Any]:
    """A value that changes whenever ``random``, ``numpy.random`` or torch's CPU generator
    draws a number (cheap: tens of microseconds). Compare two with ``drew_between``: torch
    counts only once it is fully imported."""
    # the default (legacy) form, a tuple; NumPy's stubs take get_state() for the dict form
    np_state = cast("tuple[Any, ...]", np.random.get_state())
    fingerprint: dict[str, Any] = {
        "random": random.getstate(),
        "numpy": (np_state[1].tobytes(), np_state[2:]),
    }
    generator = _torch_generator()
    if generator is not None:
        fingerprint["torch"] = bytes(generator.get_state().numpy())
    return fingerprint


def drew_between(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a generator present in both fingerprints drew in between (a library imported
    in between, torch in a notebook cell, is no draw)."""
    return any(before[name] != after[name] for name in before.keys() & after.keys())


@dataclasses.dataclass
class Draws:
    """Whether the call inside ``seeded_globals(..., detect=True)`` drew from a global
    generator (``None`` when not detected)."""

    drew: bool | None = None


@contextlib.contextmanager
def seeded_globals(seed: int, detect: bool = False) -> Iterator[Draws]:
    """Seed ``random``, ``numpy.random`` and torch's CPU generator for one call, and put their
    states back afterwards; with ``detect``, also tell whether the call drew from them.

    The caller holds ``GLOBAL_RNG_LOCK`` when other threads may use the generators. torch's
    ``default_generator`` is used directly (and only once torch is fully imported):
    ``torch.manual_seed`` also seeds CUDA and, on CUDA builds, costs far more per call
    (measured: 2-3% of the tutorial pipeline).
    """
    saved_random = random.getstate()
    saved_numpy = np.random.get_state()
    generator = _torch_generator()
    saved_torch = generator.get_state() if generator is not None else None
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if generator is not None:
        generator.manual_seed(seed)
    draws = Draws()
    seeded = global_rng_fingerprint() if detect else None
    try:
        yield draws
        if detect:
            assert seeded is not None
            draws.drew = drew_between(seeded, global_rng_fingerprint())
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)
        if generator is not None:
            generator.set_state(saved_torch)
