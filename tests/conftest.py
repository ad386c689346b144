"""Shared fixtures: the real photos under data/images, decoded once with Pillow."""

from __future__ import annotations

import os
import pathlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image

from augkit import backend

FAKE_GPU = os.environ.get("AUGKIT_FAKE_GPU") == "1"
"""Run the GPU path on ``tests/fake_cupy`` (CuPy's rules on NumPy's arithmetic), as ``make
test`` does for the ``gpu`` tests not marked ``cuda``."""
if FAKE_GPU:
    from tests import fake_cupy

    fake_cupy.install()

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMAGES = ROOT / "data" / "images"


@pytest.fixture(autouse=True, scope="session")
def _sigint_raises_keyboard_interrupt() -> Iterator[None]:
    """The interrupt tests (test_faults, test_workers) send SIGINT to this process, as
    Jupyter's stop button does: a process started in the background inherits SIGINT ignored,
    so Python's own handler is installed for the session."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def image_dir() -> pathlib.Path:
    return IMAGES


@pytest.fixture(scope="session")
def photo_paths() -> list[pathlib.Path]:
    return sorted(IMAGES.glob("*/*.jpg"))


@pytest.fixture(scope="session")
def photos(photo_paths: list[pathlib.Path]) -> list[np.ndarray]:
    """Six real photos as uint8 HWC RGB arrays, decoded by Pillow (of different sizes)."""
    picked = photo_paths[::2][:6]
    return [np.asarray(Image.open(p).convert("RGB")) for p in picked]


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``tests/fake_cupy`` as ``cupy`` (one CUDA device, CuPy's rules) for one test."""
    from tests import fake_cupy

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.cupy)
    # backend's cached lookups are replaced for the test, not only cleared: a pipeline of an
    # earlier test still computing ahead in the background could otherwise cache "CuPy is not
    # installed" in them while the test runs (a race seen once in four clean-clone runs).
    monkeypatch.setattr(backend, "_cupy", lambda: fake_cupy.cupy)
    monkeypatch.setattr(
        backend, "gpu_unavailable_reason", backend.gpu_unavailable_reason.__wrapped__
    )
    yield fake_cupy.cupy
    monkeypatch.undo()
    backend._cupy.cache_clear()
    backend.gpu_unavailable_reason.cache_clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` where no CUDA device and CuPy are usable, saying why; on the
    fake GPU (``AUGKIT_FAKE_GPU=1``) skip those marked ``cuda`` too."""
    reason = backend.gpu_unavailable_reason()
    if FAKE_GPU:
        skip = pytest.mark.skip(
            reason="needs CUDA itself (torch CUDA tensors, nvJPEG): AUGKIT_FAKE_GPU runs the "
            "GPU path on tests/fake_cupy, CuPy's rules without a device"
        )
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip)
        return
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords or "cuda" in item.keywords:
            item.add_marker(skip)
