"""The Python functions that the workloads run as Python operators.

This module needs NumPy only: both the benchmark (augkit's venv) and ``dali_runner.py`` (the
DALI venv) import it, so every contender runs the very same code.
"""

from __future__ import annotations

import numpy as np

# Side of the central patch that ``blur_patches`` blurs with Python loops: 24×24 costs about
# 2.5 ms per pair of 300×300 images on this kind of machine (the tutorial's ``edit_images``
# costs 3.3 ms).
PATCH = 24


def edit_images(image1: np.ndarray, image2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tutorial's Python operator, copied from ``examples/python_operators_tutorial.py``
    (only type hints and this docstring added): swaps the pixels outside a central disc.
    NumPy releases the GIL for most of it."""
    assert image1.shape == image2.shape
    h, w, c = image1.shape  # noqa: RUF059 (kept as the tutorial wrote it)
    y, x = np.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    result1 = np.copy(image1)
    result1[mask] = image2[mask]
    result2 = np.copy(image2)
    result2[mask] = image1[mask]
    return result1, result2


def blur_patch(image: np.ndarray, patch: int = PATCH) -> np.ndarray:
    """A copy of ``image`` whose central ``patch``×``patch`` square is blurred with a 3×3 box
    filter computed in pure-Python loops over Python ints: the GIL is held throughout."""
    h, w, channels = image.shape
    y0, x0 = (h - patch) // 2, (w - patch) // 2
    rows = image[y0 - 1 : y0 + patch + 1, x0 - 1 : x0 + patch + 1].tolist()
    out = [[[0] * channels for _ in range(patch)] for _ in range(patch)]
    for y in range(patch):
        for x in range(patch):
            pixel = out[y][x]
            for c in range(channels):
                total = 0
                for dy in range(3):
                    row = rows[y + dy]
                    for dx in range(3):
                        total += row[x + dx][c]
                pixel[c] = total // 9
    result = np.copy(image)
    result[y0 : y0 + patch, x0 : x0 + patch] = np.asarray(out, dtype=image.dtype)
    return result


def blur_patches(image1: np.ndarray, image2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Workload (c)'s Python operator: ``blur_patch`` on both images of a pair (a function that
    holds the GIL, ~2.5 ms per pair)."""
    return blur_patch(image1), blur_patch(image2)


def trivial(array: np.ndarray) -> np.ndarray:
    """The function of the ``python_function`` overhead measurement: returns its input."""
    return array
