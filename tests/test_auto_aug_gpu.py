"""DALI's automatic augmentations on GPU images (issue 25 §3): DALI's EfficientNet example
(decoders.image -> resize -> ``.gpu()`` -> the policy, ``enable_conditionals=True``) with each of
``trivial_augment.trivial_augment_wide``, ``rand_augment.rand_augment`` and
``auto_augment.auto_augment_image_net``, which DALI 2.4 defines on GPU images. Their suites read
``fn.reductions`` (contrast: ``mean``, ``sum``; auto_contrast: ``min``, ``max``), which were
CPU-only and refused the GPU images at definition.

Each policy's GPU pipeline is compared with the same pipeline on the CPU (same seed, so the
same draws: the policies draw on the host, the copies to the GPU take no creation ordinal) on
the fake GPU (``tests/fake_cupy``: CuPy's rules on NumPy), and, ``gpu``-marked, wherever
``make test``'s second step or a CUDA machine runs it.

Bounds: those of the GPU kernels' own tests: the warps' (``LINEAR_WARP`` of
tests/operators/test_gpu_geometric.py: 1 level, a mean of 0.15 per sample), which also hold the
colour operators' 1 level. A policy chains operations (``rand_augment`` with ``n=2``,
AutoAugment's pairs), and an operation after a warp can turn the warp's one-level difference
into more (solarize's threshold, posterize's bits, equalize's histogram), so pixels more than 1
level apart are allowed on at most 1% of a sample (on the fake GPU: none; every sample within 1
level, means up to 0.004). Most samples come out exactly equal (asserted: at least half of
them), and a policy given another seed on the GPU is checked to break the bounds.

History: the reductions were the first refusal of the policies on GPU images ("augkit has
reductions.Mean for the CPU only"), not the only one: ``fn.cast_like`` (CPU only; contrast and
auto_contrast end in it) and the conditionals' merge (``np.asarray`` on GPU samples) stopped
them too. With all three fixed the comparisons below run; they failed before (an
``ArgumentError`` at definition, or the merge's failure at run time).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from augkit import fn, pipeline_def, types
from augkit.auto_aug import auto_augment, rand_augment, trivial_augment

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
BATCH = 8
SIZE = 64
SEED = 41
"""A seed whose draws, in two batches, send samples of every policy through auto_contrast
(min and max) and of rand_augment through contrast (mean and sum) too."""

POLICIES: dict[str, Callable[..., Any]] = {
    "trivial_augment_wide": lambda images: trivial_augment.trivial_augment_wide(images),
    "rand_augment": lambda images: rand_augment.rand_augment(images, n=2, m=9),
    "auto_augment_image_net": lambda images: auto_augment.auto_augment_image_net(
        images, shape=[SIZE, SIZE]
    ),
}


def run_policy(
    name: str, device: str, seed: int = SEED, iterations: int = 2
) -> tuple[list[np.ndarray], set[str]]:
    """The EfficientNet example's augmentation with policy ``name``, the images on ``device``
    from the resize on (``.gpu()``): ``iterations`` batches as host arrays, and the names of
    the augmentations the samples took (``Pipeline.draws``' choices)."""

    @pipeline_def(
        batch_size=BATCH,
        num_threads=2,
        device_id=0 if device == "gpu" else None,
        seed=seed,
        enable_conditionals=True,
    )
    def efficientnet():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=False)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, size=[SIZE, SIZE])
        if device == "gpu":
            images = images.gpu()
        return POLICIES[name](images), labels

    pipe = efficientnet()
    out, chosen = [], set()
    try:
        for _ in range(iterations):
            images, _labels = pipe.run()
            assert images.device == device, (name, images.device)
            host = images.as_cpu()
            out.extend(np.array(host.at(i)) for i in range(len(host)))
            chosen |= {v for record in pipe.draws() for v in record.values() if isinstance(v, str)}
    finally:
        # Closed, so that no batch is computed ahead in the background after the test: on the
        # fake GPU, a copy to the GPU read ahead after the fixture removed the fake CuPy could
        # leave backend's cached answer "CuPy is not installed" to the next test.
        pipe.close()
    return out, chosen


def assert_gpu_matches_cpu(name: str, cpu: list[np.ndarray], gpu: list[np.ndarray]) -> None:
    """The bounds of the module docstring."""
    exact = 0
    for i, (want, got) in enumerate(zip(cpu, gpu, strict=True)):
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (name, i, got.shape)
        diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
        exact += int(diff.max(initial=0) == 0)
        assert diff.mean() <= 0.15, f"{name}: sample {i} differs by {diff.mean()} on average"
        far = np.count_nonzero(diff > 1) / diff.size
        assert far <= 0.01, f"{name}: sample {i}: {far:.1%} of its pixels differ by more than 1"
    assert exact >= len(cpu) // 2, f"{name}: only {exact} of {len(cpu)} samples are equal"


# The augmentations of the suites that read fn.reductions (on the GPU images, on the GPU).
READ_REDUCTIONS = {"contrast", "auto_contrast"}


def _check_policy(name: str) -> None:
    (cpu, cpu_chosen), (gpu, gpu_chosen) = run_policy(name, "cpu"), run_policy(name, "gpu")
    assert gpu_chosen == cpu_chosen
    assert gpu_chosen & READ_REDUCTIONS, f"{name}: no sample took {READ_REDUCTIONS}"
    assert_gpu_matches_cpu(name, cpu, gpu)


@pytest.mark.parametrize("name", list(POLICIES))
def test_policies_run_on_gpu_images_on_the_fake_gpu(name: str, fake_gpu: Any) -> None:
    """Each policy on ``.gpu()`` images (tests/fake_cupy) gives the CPU pipeline's output."""
    _check_policy(name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(POLICIES))
def test_policies_run_on_gpu_images(name: str) -> None:
    """The same on the GPU at hand (a CUDA device, or the fake GPU of ``make test``)."""
    _check_policy(name)


def test_the_comparison_is_not_vacuous(fake_gpu: Any) -> None:
    """Another seed on the GPU (other draws) breaks the bounds that the same seed meets."""
    name = "trivial_augment_wide"
    cpu, _ = run_policy(name, "cpu", iterations=1)
    other, _ = run_policy(name, "gpu", seed=SEED + 1, iterations=1)
    with pytest.raises(AssertionError):
        assert_gpu_matches_cpu(name, cpu, other)
