"""Shared fixtures: the real photos under data/images, decoded once with Pillow."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from PIL import Image

from augkit.backend import gpu_unavailable_reason

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMAGES = ROOT / "data" / "images"


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` where no CUDA device and CuPy are usable, saying why."""
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
