"""Functions built on libraries with generators of their own (issue 11): an Albumentations
transform inside a ``python_function``, a ``np.random.default_rng`` object. augkit seeds the
global generators of ``random``, ``numpy.random`` and torch per call, which does not reach
them; ``augkit.random.call_seed()`` gives the function the same per-call seed to seed them
with, so that the pipeline is reproducible whatever its threads, workers or mode.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no network check at import

import albumentations as A

import augkit.random
from augkit import eager, fn, pipeline_def, types

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"

_local = threading.local()


def _transform() -> Any:
    """One Compose per thread: a transform is seeded by one call and then used by it, so calls
    on two threads must not share one."""
    transform = getattr(_local, "transform", None)
    if transform is None:
        transform = _local.transform = A.Compose(
            [
                A.HorizontalFlip(p=0.5),
                A.RandomBrightnessContrast(brightness_limit=0.3, contrast_limit=0.3, p=1.0),
                A.Affine(rotate=(-25, 25), p=1.0),
            ]
        )
    return transform


def albumentations_augment(image: np.ndarray) -> np.ndarray:
    transform = _transform()
    transform.set_random_seed(augkit.random.call_seed())
    return transform(image=image)["image"]


def unseeded_augment(image: np.ndarray) -> np.ndarray:
    return _transform()(image=image)["image"]


def generator_noise(image: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(augkit.random.call_seed())
    noise = rng.integers(-20, 21, image.shape)
    return np.clip(image.astype(np.int32) + noise, 0, 255).astype(np.uint8)


def _run(function: Any, **settings: Any) -> list[np.ndarray]:
    @pipeline_def(batch_size=4, device_id=None, seed=2024, **settings)
    def augmented():
        jpegs, _ = fn.readers.file(file_root=str(IMAGES))
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=(48, 64))
        return fn.python_function(images, function=function)

    pipe = augmented()
    try:
        return [batch.at(i) for _ in range(2) for batch in pipe.run() for i in range(len(batch))]
    finally:
        pipe.close()


@pytest.mark.parametrize("function", [albumentations_augment, generator_noise])
def test_a_function_seeded_with_call_seed_is_reproducible_in_every_mode(function: Any) -> None:
    reference = _run(function, num_threads=1)
    for settings in (
        {"num_threads": 1},
        {"num_threads": 3},
        {"num_threads": 2, "debug": True},
        {"num_threads": 2, "py_num_workers": 2},
    ):
        got = _run(function, **settings)
        for i, (a, b) in enumerate(zip(got, reference, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{settings}, sample {i}")
    assert any(not np.array_equal(a, reference[0]) for a in reference[1:])


def test_without_call_seed_the_library_is_not_reproducible() -> None:
    """What the hook is for: a transform left to its own generator draws anew every run."""
    first, second = _run(unseeded_augment, num_threads=1), _run(unseeded_augment, num_threads=1)
    assert any(not np.array_equal(a, b) for a, b in zip(first, second, strict=True))


def test_call_seed_is_the_same_per_call_seed_in_eager_calls() -> None:
    images = [np.full((8, 8, 3), 100, np.uint8)] * 3
    with eager.rng_state(5):
        first = eager.python_function(images, function=generator_noise)
    with eager.rng_state(5):
        again = eager.python_function(images, function=generator_noise)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])  # a seed per sample


def test_call_seed_outside_a_python_operator_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match="only inside a function that a Python operator"):
        augkit.random.call_seed()


# The recipe of ``call_seed``'s docstring as a notebook or a script writes it: everything in
# ``__main__``, so cloudpickle sends the function to workers by value, with its globals (the
# threading.local among them). Run in a fresh interpreter with ``python -c``.
MAIN_SCRIPT = """
import sys, threading

import albumentations as A
import numpy as np

import augkit.random
from augkit import fn, pipeline_def, types

_local = threading.local()  # one Compose per thread


def per_thread_transform():
    transform = getattr(_local, "transform", None)
    if transform is None:
        transform = _local.transform = A.Compose(
            [
                A.HorizontalFlip(p=0.5),
                A.RandomBrightnessContrast(brightness_limit=0.3, contrast_limit=0.3, p=1.0),
                A.Affine(rotate=(-25, 25), p=1.0),
            ]
        )
    return transform


def augment(image):
    transform = per_thread_transform()
    transform.set_random_seed(augkit.random.call_seed())
    return transform(image=image)["image"]


def run(**settings):
    @pipeline_def(batch_size=4, device_id=None, seed=2024, **settings)
    def augmented():
        jpegs, _ = fn.readers.file(file_root=sys.argv[1])
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=(48, 64))
        return images, fn.python_function(images, function=augment)

    pipe = augmented()
    try:
        out = {}
        for iteration in range(2):
            images, augmented_images = pipe.run()
            for i in range(len(images)):
                out[f"input-{iteration}-{i}"] = images.at(i)
                out[f"output-{iteration}-{i}"] = augmented_images.at(i)
        return out
    finally:
        pipe.close()


assert augment.__module__ == "__main__"
arrays = {}
for mode, settings in [
    ("threads", dict(num_threads=2, py_num_workers=1)),
    ("workers", dict(num_threads=2, py_num_workers=2)),
    ("spawn", dict(num_threads=2, py_num_workers=2, py_start_method="spawn")),
]:
    arrays.update({f"{mode}/{key}": value for key, value in run(**settings).items()})
np.savez(sys.argv[2], **arrays)
"""


def test_the_recipe_defined_in_main_runs_in_worker_processes(tmp_path: pathlib.Path) -> None:
    """Issue 25: the module-level threading.local of a ``__main__`` function reaches each
    worker empty (it could not be pickled), and workers give what threads give."""
    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    )
    result_file = tmp_path / "results.npz"
    done = subprocess.run(
        [sys.executable, "-c", MAIN_SCRIPT, str(IMAGES), str(result_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    with np.load(result_file) as arrays:
        got = {key: arrays[key] for key in arrays.files}
    keys = sorted(key.split("/", 1)[1] for key in got if key.startswith("threads/"))
    assert len(keys) == 16  # 2 iterations of 4 images and their augmented versions
    for mode in ("workers", "spawn"):
        for key in keys:
            np.testing.assert_array_equal(got[f"{mode}/{key}"], got[f"threads/{key}"], err_msg=key)
    outputs = [key for key in keys if key.startswith("output-")]
    changed = [
        key
        for key in outputs
        if not np.array_equal(got[f"threads/{key}"], got[f"threads/input-{key[7:]}"])
    ]
    assert changed, "the transform left every image as it was: the comparison proves nothing"
