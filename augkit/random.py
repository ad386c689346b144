"""The seed tree: pipeline seed -> one seed per operator -> one stream per (iteration, sample).

The rule that makes results independent of thread counts, worker counts and scheduling:

1. A pipeline with ``seed=-1`` draws one seed from the OS; any other seed is used as given.
2. Operator ``k`` (counted in the order operators were created while the pipeline was defined)
   gets ``operator_seed(pipeline_seed, k)``, unless it was given ``seed=`` itself.
3. Every random value for sample ``s`` of iteration ``i`` comes from a counter-based Philox
   stream keyed by the operator's seed, at counter ``(i, s)``: no state is shared between
   samples, so it does not matter which thread or process computes which sample, or in which
   order.

Example:
    >>> rng = sample_rng(operator_seed(42, 0), iteration=0, sample=3)
    >>> float(rng.uniform()) == float(sample_rng(operator_seed(42, 0), 0, 3).uniform())
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import secrets
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

_BATCH = 2**64 - 1  # the counter word used for whole-batch streams
_EPOCH = 2**64 - 2  # the counter word used for per-epoch streams (reader shuffles)


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


def _stream(key: int, word2: int, word3: int) -> np.random.Generator:
    counter = np.array([0, 0, word2, word3], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=key, counter=counter))


def sample_rng(op_seed: int, iteration: int, sample: int) -> np.random.Generator:
    """The random stream of one sample of one iteration of one operator."""
    return _stream(op_seed, sample, iteration)


def batch_rng(op_seed: int, iteration: int) -> np.random.Generator:
    """The random stream of a whole batch (for functions called once per batch)."""
    return _stream(op_seed, _BATCH, iteration)


def epoch_rng(op_seed: int, epoch: int) -> np.random.Generator:
    """The random stream of one epoch of a reader (its shuffle)."""
    return _stream(op_seed, _EPOCH, epoch)


# Held by every call that seeds and uses the global generators: they are process-wide, so two
# such calls (two threads, two iterations in flight) must not interleave.
GLOBAL_RNG_LOCK = threading.RLock()


def global_rng_fingerprint() -> tuple[Any, ...]:
    """A value that changes whenever ``random``, ``numpy.random`` or torch's CPU generator
    draws a number (cheap: tens of microseconds)."""
    np_state = np.random.get_state()
    generator = getattr(sys.modules.get("torch"), "default_generator", None)
    torch_state = bytes(generator.get_state().numpy()) if generator is not None else b""
    return random.getstate(), np_state[1].tobytes(), np_state[2:], torch_state


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
    ``default_generator`` is used directly: ``torch.manual_seed`` also seeds CUDA and, on CUDA
    builds, costs far more per call (measured: 2-3% of the tutorial pipeline).
    """
    saved_random = random.getstate()
    saved_numpy = np.random.get_state()
    torch = sys.modules.get("torch")
    generator = getattr(torch, "default_generator", None)
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
            draws.drew = global_rng_fingerprint() != seeded
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)
        if generator is not None:
            generator.set_state(saved_torch)
