"""The per-operator speed table (``python -m benchmarks --only operators``): images per second
of augkit, NVIDIA DALI 2.4 CPU and Albumentations 2.x, operator by operator, on the benchmark
photos resized once to 320×320 (uint8 HWC), with ratios taken in the same run.

``PAIRS`` is the table: for every operator of the augmentation vocabulary (and the ones augkit
had before it) one ``OperatorPair``: DALI's name, one ``body`` ``lambda fn, types, x: ...``
that both libraries run (as ``tests/dali_parity/base.py`` does), with fixed, typical arguments
(constants, or per-sample draws of ``fn.random.uniform`` where the operator is usually used
that way), and a factory of the Albumentations transform that does the same (``None`` where
Albumentations has none), always with ``p=1``.

How each contender is timed (one pass; the passes are interleaved, see ``measure``):

- **augkit** (in this process) and **DALI** (in the side venv's ``dali_runner.py``): a pipeline
  ``external_source -> body``, ``batch_size=32``, ``num_threads`` 1 and 2, ``device_id=None``,
  the default executor (prefetching). The source hands out dense 32×320×320×3 batches of the
  photos (slices of one array, cycled; the JPEG rows get lists of the encoded files). One
  untimed batch, then ``batches`` timed ``run()`` calls (fewer for a slow operator: a pass
  stops after the batch that ends past ``seconds``, 1 s); the outputs are not copied (both
  libraries return their batch object). The source is ``no_copy=True`` in both (DALI's
  argument: the arrays are taken as they are, not copied into the pipeline's buffers, as
  Albumentations' loop copies nothing either); nothing is subtracted for what the source
  still costs (the ``external_source`` row: the same work in both, part of what a user's
  pipeline costs). Both pipelines are built afresh for every pass
  (untimed) and closed (augkit) or deleted (DALI, which has no ``close()``) after it, so that
  no prefetching runs into the next contender's pass and the table's ~100 pipelines do not
  hold their buffers all at once.
- **Albumentations** (in the side venv's process too): a plain loop ``transform(image=img)``
  over the same images, one thread (``cv2.setNumThreads(1)``, as augkit's kernels have), the
  first image untimed.

An operator that augkit does not have yet (another engineer may be adding it right now) gets a
row that says so; one that DALI runs on the GPU only (``dali_cpu=False``) is compared with
Albumentations only. Bodies must only use arguments both libraries take with the same meaning.

This module is imported by the DALI venv's runner too: NumPy only at module level (augkit,
Pillow and the benchmark's other modules are imported inside the functions that need them).
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.functions import trivial  # NumPy only: the side venv imports it too

ROOT = Path(__file__).resolve().parent.parent
BATCH_SIZE = 32
SIZE = 320  # the photos are resized once to SIZE×SIZE
THREADS = (1, 2)
SEED = 42

# The batch size of the pipeline being built: the per-sample helpers below make one value per
# sample. Set by ``build_pipeline`` (tests build smaller batches).
_building_batch = BATCH_SIZE


def per_sample(fn: Any, values: Callable[[int], Any], dtype: Any = np.float32) -> Any:
    """An external source giving sample ``i`` the value ``values(i)`` (a scalar or a list), the
    same in both libraries (their random streams differ)."""
    batch = [np.asarray(values(i), dtype=dtype) for i in range(_building_batch)]
    return fn.external_source(source=lambda: batch, batch=True)


def same_for_all(fn: Any, value: Any, dtype: Any = np.float32) -> Any:
    """An external source giving every sample the same tensor (a filter kernel, a mean)."""
    return per_sample(fn, lambda i: value, dtype)


def this_and_next(fn: Any) -> Any:
    """``multi_paste``'s ``in_ids``: sample ``i`` pastes from itself, then from sample
    ``i + 1`` (the last one from the first)."""
    return per_sample(fn, lambda i: [i, (i + 1) % _building_batch], np.int32)


def _rotation_about_centre(degrees: float) -> list[float]:
    """The 2×3 affine matrix of a rotation by ``degrees`` about the centre of the photos."""
    a = math.radians(degrees)
    c, s, centre = math.cos(a), math.sin(a), SIZE / 2
    return [c, -s, centre - c * centre + s * centre, s, c, centre - s * centre - c * centre]


WARP_AFFINE_MATRIX = _rotation_about_centre(10.0)
WARP_PERSPECTIVE_MATRIX = [1.0, 0.05, -8.0, 0.02, 1.0, -5.0, 5e-5, 5e-5, 1.0]
SHARPEN_KERNEL = [[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]]
IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
INVERT = [255 - k for k in range(256)]


@dataclass(frozen=True)
class OperatorPair:
    """One row of the table.

    Args:
        name: DALI's functional name (``"noise.gaussian"``), also augkit's registry name.
        body: ``lambda fn, types, x: node`` run by both libraries on the input ``x``.
        albumentations: ``lambda A, cv2: transform`` (``p=1``), or None where Albumentations has
            no such transform.
        input: ``"images"`` (the 320×320 photos, uint8 HWC) or ``"jpegs"`` (the benchmark's
            JPEG files as they are, for the decoders).
        dali_cpu: False where DALI 2.4 runs the operator on the GPU only: no DALI CPU column.
        uses: other augkit operators the body needs (``fn.random.uniform`` is always there).
        note: what the row's reader must know (how the Albumentations transform differs).
        counted: False for a row that is not an operator of the goals (the source alone): it
            is shown, but left out of the medians and of the goals.
    """

    name: str
    body: Callable[[Any, Any, Any], Any]
    albumentations: Callable[[Any, Any], Any] | None = None
    input: str = "images"
    dali_cpu: bool = True
    uses: tuple[str, ...] = ()
    note: str = ""
    counted: bool = True


def _uniform(fn: Any, low: float, high: float) -> Any:
    return fn.random.uniform(range=[low, high])


def _jitter(A: Any, **kwargs: Any) -> Any:
    """Albumentations' ColorJitter with only the given factors moving (the others at their
    identity, which its kernels skip)."""
    base = {"brightness": (1.0, 1.0), "contrast": (1.0, 1.0), "saturation": (1.0, 1.0)}
    return A.ColorJitter(**{**base, "hue": (0.0, 0.0), **kwargs, "p": 1.0})


# --- inputs of the rows that take no image: boxes, labels, points, masks, derived from x ------


def _boxes(fn: Any) -> Any:
    """20 relative ltrb boxes per sample (drawn: the same work in both libraries)."""
    lt = fn.random.uniform(range=[0.0, 0.5], shape=[20, 2])
    return fn.cat(lt, lt + 0.4, axis=1)


def _box_labels(fn: Any, types: Any) -> Any:
    return fn.cast(fn.random.uniform(range=[0.0, 10.0], shape=[20, 1]), dtype=types.INT32)


def _points(fn: Any) -> Any:
    return fn.random.uniform(range=[0.0, 1.0], shape=[50, 2])


def _mask(fn: Any, types: Any, x: Any) -> Any:
    """A label map of the photo (values 0..3, HWC with one channel): its grey levels / 64."""
    grey = fn.color_space_conversion(x, image_type=types.RGB, output_type=types.GRAY)
    return fn.cast(grey // 64, dtype=types.UINT8)


def _anchors(cells: int = 10) -> list[float]:
    """SSD-like ltrb anchors: a cells x cells grid, two square sizes."""
    out: list[float] = []
    for size in (0.1, 0.3):
        for i in range(cells):
            for j in range(cells):
                cx, cy = (j + 0.5) / cells, (i + 0.5) / cells
                out += [cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2]
    return out


_NOT_AN_IMAGE = "not an image operator: the photos are not used (their source is pruned)"


PAIRS: list[OperatorPair] = [
    # --- the floor: the source alone, no operator (not counted in the medians) --------------
    OperatorPair(
        "external_source",
        lambda fn, types, x: x,
        lambda A, cv2: A.NoOp(p=1),
        counted=False,
        note="no operator: the pipeline's cost per batch (the source's batch delivered as it "
        "is) and Albumentations' per-call cost; not counted",
    ),
    # --- augkit's operators before the vocabulary issue -------------------------------------
    OperatorPair(
        "brightness_contrast",
        lambda fn, types, x: fn.brightness_contrast(
            x, brightness=_uniform(fn, 0.8, 1.2), contrast=_uniform(fn, 0.8, 1.2)
        ),
        lambda A, cv2: A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=0.2, p=1),
        note="Albumentations' brightness is additive (DALI's multiplies)",
    ),
    OperatorPair(
        "crop_mirror_normalize",
        lambda fn, types, x: fn.crop_mirror_normalize(
            x,
            crop=(224, 224),
            mean=IMAGENET_MEAN,
            std=IMAGENET_STD,
            mirror=fn.random.coin_flip(),
            dtype=types.FLOAT,
        ),
        lambda A, cv2: A.Compose(
            [A.CenterCrop(224, 224), A.HorizontalFlip(p=0.5), A.Normalize(p=1)]
        ),
        uses=("random.coin_flip",),
        note="DALI's default output is CHW; Albumentations' Compose stays HWC",
    ),
    OperatorPair(
        "flip",
        lambda fn, types, x: fn.flip(x, horizontal=1),
        lambda A, cv2: A.HorizontalFlip(p=1),
    ),
    OperatorPair(
        "rotate",
        lambda fn, types, x: fn.rotate(
            x, angle=_uniform(fn, -30.0, 30.0), keep_size=True, fill_value=0
        ),
        lambda A, cv2: A.Rotate(limit=30, border_mode=cv2.BORDER_CONSTANT, fill=0, p=1),
    ),
    OperatorPair(
        "resize",
        lambda fn, types, x: fn.resize(x, resize_x=224, resize_y=224),
        lambda A, cv2: A.Resize(224, 224, p=1),
        note="DALI antialiases by default, Albumentations' INTER_LINEAR does not",
    ),
    OperatorPair(
        "crop",
        lambda fn, types, x: fn.crop(
            x, crop=(224, 224), crop_pos_x=_uniform(fn, 0, 1), crop_pos_y=_uniform(fn, 0, 1)
        ),
        lambda A, cv2: A.RandomCrop(224, 224, p=1),
    ),
    OperatorPair(
        "cast",
        lambda fn, types, x: fn.cast(x, dtype=types.FLOAT),
        lambda A, cv2: A.ToFloat(p=1),
        note="Albumentations' ToFloat also divides by 255",
    ),
    # --- decoders: on the benchmark's JPEG files as they are (300-1200 px) ------------------
    OperatorPair(
        "decoders.image",
        lambda fn, types, x: fn.decoders.image(x, output_type=types.RGB),
        input="jpegs",
        note="for scale: the plain decode of the same files",
    ),
    OperatorPair(
        "decoders.image_crop",
        lambda fn, types, x: fn.decoders.image_crop(x, crop=(224, 224), output_type=types.RGB),
        input="jpegs",
    ),
    OperatorPair(
        "decoders.image_random_crop",
        lambda fn, types, x: fn.decoders.image_random_crop(x, output_type=types.RGB),
        input="jpegs",
    ),
    OperatorPair(
        "decoders.image_slice",
        lambda fn, types, x: fn.decoders.image_slice(
            x, rel_start=(0.1, 0.1), rel_shape=(0.8, 0.8), output_type=types.RGB
        ),
        input="jpegs",
    ),
    # --- geometry ---------------------------------------------------------------------------
    OperatorPair(
        "random_resized_crop",
        lambda fn, types, x: fn.random_resized_crop(x, size=(224, 224)),
        lambda A, cv2: A.RandomResizedCrop(size=(224, 224), p=1),
        note="DALI antialiases by default, Albumentations' INTER_LINEAR does not",
    ),
    OperatorPair(
        "slice",
        lambda fn, types, x: fn.slice(x, rel_start=(0.1, 0.1), rel_shape=(0.8, 0.8)),
        lambda A, cv2: A.Crop(x_min=32, y_min=32, x_max=288, y_max=288, p=1),
    ),
    OperatorPair(
        "pad",
        lambda fn, types, x: fn.pad(x, axis_names="HW", shape=(384, 384), fill_value=0),
        lambda A, cv2: A.PadIfNeeded(
            384, 384, position="top_left", border_mode=cv2.BORDER_CONSTANT, fill=0, p=1
        ),
    ),
    OperatorPair(
        "paste",
        lambda fn, types, x: fn.paste(
            x,
            ratio=1.5,
            paste_x=_uniform(fn, 0, 1),
            paste_y=_uniform(fn, 0, 1),
            fill_value=(0, 0, 0),
        ),
        lambda A, cv2: A.PadIfNeeded(
            480, 480, position="random", border_mode=cv2.BORDER_CONSTANT, fill=0, p=1
        ),
        note="Albumentations: PadIfNeeded at a random position (a zoom-out canvas)",
    ),
    OperatorPair(
        "multi_paste",
        lambda fn, types, x: fn.multi_paste(
            x,
            in_ids=this_and_next(fn),
            in_anchors=same_for_all(fn, [[0, 0], [40, 40]], np.int32),
            shapes=same_for_all(fn, [[SIZE, SIZE], [160, 160]], np.int32),
            out_anchors=same_for_all(fn, [[0, 0], [80, 80]], np.int32),
            output_size=(SIZE, SIZE),
        ),
        note="each sample, then a 160×160 patch of the next sample over it (CutMix-like)",
    ),
    OperatorPair(
        "warp_affine",
        lambda fn, types, x: fn.warp_affine(x, matrix=WARP_AFFINE_MATRIX, fill_value=0),
        lambda A, cv2: A.Affine(rotate=(10, 10), border_mode=cv2.BORDER_CONSTANT, fill=0, p=1),
        note="a fixed 10° rotation about the centre",
    ),
    OperatorPair(
        "experimental.warp_perspective",
        lambda fn, types, x: fn.experimental.warp_perspective(
            x, matrix=WARP_PERSPECTIVE_MATRIX, fill_value=0
        ),
        lambda A, cv2: A.Perspective(
            scale=(0.05, 0.05), border_mode=cv2.BORDER_CONSTANT, fill=0, p=1
        ),
    ),
    OperatorPair("water", lambda fn, types, x: fn.water(x)),
    OperatorPair("sphere", lambda fn, types, x: fn.sphere(x)),
    OperatorPair("jitter", lambda fn, types, x: fn.jitter(x), dali_cpu=False),
    # --- filters and morphology -------------------------------------------------------------
    OperatorPair(
        "experimental.median_blur",
        lambda fn, types, x: fn.experimental.median_blur(x, window_size=5),
        lambda A, cv2: A.MedianBlur(blur_limit=(5, 5), p=1),
        dali_cpu=False,
    ),
    OperatorPair(
        "experimental.dilate",
        lambda fn, types, x: fn.experimental.dilate(x, mask_size=(3, 3)),
        lambda A, cv2: A.Morphological(scale=(3, 3), operation="dilation", p=1),
        dali_cpu=False,
    ),
    OperatorPair(
        "experimental.erode",
        lambda fn, types, x: fn.experimental.erode(x, mask_size=(3, 3)),
        lambda A, cv2: A.Morphological(scale=(3, 3), operation="erosion", p=1),
        dali_cpu=False,
    ),
    OperatorPair(
        "gaussian_blur",
        lambda fn, types, x: fn.gaussian_blur(x, window_size=5, sigma=_uniform(fn, 0.5, 1.5)),
        lambda A, cv2: A.GaussianBlur(blur_limit=(5, 5), sigma_limit=(0.5, 1.5), p=1),
    ),
    OperatorPair(
        "laplacian",
        lambda fn, types, x: fn.laplacian(x, window_size=3),
    ),
    OperatorPair(
        "filter",
        lambda fn, types, x: fn.filter(x, same_for_all(fn, SHARPEN_KERNEL)),
        lambda A, cv2: A.Sharpen(alpha=(1.0, 1.0), lightness=(1.0, 1.0), method="kernel", p=1),
        note="a 3×3 sharpening kernel; Albumentations' Sharpen is cv2.filter2D with one",
    ),
    # --- colour -----------------------------------------------------------------------------
    OperatorPair(
        "hsv",
        lambda fn, types, x: fn.hsv(
            x,
            hue=_uniform(fn, -20.0, 20.0),
            saturation=_uniform(fn, 0.8, 1.2),
            value=_uniform(fn, 0.8, 1.2),
        ),
        lambda A, cv2: A.HueSaturationValue(
            hue_shift_limit=10, sat_shift_limit=25, val_shift_limit=25, p=1
        ),
        note="Albumentations shifts S and V (DALI multiplies)",
    ),
    OperatorPair(
        "hue",
        lambda fn, types, x: fn.hue(x, hue=_uniform(fn, -30.0, 30.0)),
        lambda A, cv2: _jitter(A, hue=(-30 / 360, 30 / 360)),
    ),
    OperatorPair(
        "saturation",
        lambda fn, types, x: fn.saturation(x, saturation=_uniform(fn, 0.5, 1.5)),
        lambda A, cv2: _jitter(A, saturation=(0.5, 1.5)),
    ),
    OperatorPair(
        "brightness",
        lambda fn, types, x: fn.brightness(x, brightness=_uniform(fn, 0.8, 1.2)),
        lambda A, cv2: _jitter(A, brightness=(0.8, 1.2)),
    ),
    OperatorPair(
        "contrast",
        lambda fn, types, x: fn.contrast(x, contrast=_uniform(fn, 0.8, 1.2)),
        lambda A, cv2: _jitter(A, contrast=(0.8, 1.2)),
        note="Albumentations' centre is the image's mean grey (DALI's a fixed level)",
    ),
    OperatorPair(
        "color_twist",
        lambda fn, types, x: fn.color_twist(
            x,
            brightness=_uniform(fn, 0.8, 1.2),
            contrast=_uniform(fn, 0.8, 1.2),
            saturation=_uniform(fn, 0.8, 1.2),
            hue=_uniform(fn, -20.0, 20.0),
        ),
        lambda A, cv2: _jitter(
            A,
            brightness=(0.8, 1.2),
            contrast=(0.8, 1.2),
            saturation=(0.8, 1.2),
            hue=(-20 / 360, 20 / 360),
        ),
        note="DALI: one colour matrix; Albumentations: four steps in a random order",
    ),
    OperatorPair(
        "color_space_conversion",
        lambda fn, types, x: fn.color_space_conversion(
            x, image_type=types.RGB, output_type=types.GRAY
        ),
        lambda A, cv2: A.ToGray(num_output_channels=1, method="weighted_average", p=1),
    ),
    OperatorPair(
        "equalize",
        lambda fn, types, x: fn.equalize(x),
        lambda A, cv2: A.Equalize(mode="cv", by_channels=True, p=1),
    ),
    OperatorPair(
        "clahe",
        lambda fn, types, x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0),
        lambda A, cv2: A.CLAHE(clip_limit=(2.0, 2.0), tile_grid_size=(8, 8), p=1),
        note="both on the luminance of an RGB image",
    ),
    OperatorPair(
        "lookup_table",
        lambda fn, types, x: fn.lookup_table(
            x, keys=list(range(256)), values=INVERT, dtype=types.UINT8
        ),
        lambda A, cv2: A.InvertImg(p=1),
        note="an inversion table; Albumentations' InvertImg is a LUT for uint8",
    ),
    OperatorPair(
        "normalize",
        lambda fn, types, x: fn.normalize(x, axes=(0, 1)),
        lambda A, cv2: A.Normalize(normalization="image_per_channel", p=1),
        note="each image by its own per-channel mean and standard deviation",
    ),
    # --- noise and erasing ------------------------------------------------------------------
    OperatorPair(
        "noise.gaussian",
        lambda fn, types, x: fn.noise.gaussian(x, stddev=_uniform(fn, 5.0, 20.0)),
        lambda A, cv2: A.GaussNoise(
            std_range=(5 / 255, 20 / 255), mean_range=(0.0, 0.0), per_channel=True, p=1
        ),
    ),
    OperatorPair(
        "noise.salt_and_pepper",
        lambda fn, types, x: fn.noise.salt_and_pepper(x, prob=0.05),
        lambda A, cv2: A.SaltAndPepper(amount=(0.05, 0.05), salt_vs_pepper=(0.5, 0.5), p=1),
    ),
    OperatorPair(
        "noise.shot",
        lambda fn, types, x: fn.noise.shot(x, factor=20.0),
        lambda A, cv2: A.ShotNoise(scale_range=(0.1, 0.3), p=1),
        note="different parametrisations of the same Poisson noise",
    ),
    OperatorPair(
        "erase",
        lambda fn, types, x: fn.erase(
            x,
            anchor=fn.random.uniform(range=[0.0, 260.0], shape=[2]),
            shape=(60.0, 60.0),
            axis_names="HW",
            fill_value=0,
        ),
        lambda A, cv2: A.CoarseDropout(
            num_holes_range=(1, 1), hole_height_range=(60, 60), hole_width_range=(60, 60), p=1
        ),
        note="one 60×60 region at a random place",
    ),
    OperatorPair(
        "grid_mask",
        lambda fn, types, x: fn.grid_mask(x, ratio=0.5, tile=64),
        lambda A, cv2: A.GridDropout(ratio=0.5, holes_number_xy=(5, 5), random_offset=False, p=1),
    ),
    OperatorPair(
        "jpeg_compression_distortion",
        lambda fn, types, x: fn.jpeg_compression_distortion(x, quality=50),
        lambda A, cv2: A.ImageCompression(compression_type="jpeg", quality_range=(50, 50), p=1),
    ),
    # --- tensor operators and reductions ----------------------------------------------------
    OperatorPair(
        "transpose",
        lambda fn, types, x: fn.transpose(x, perm=(1, 0, 2)),
        lambda A, cv2: A.Transpose(p=1),
        note="H and W swapped, as Albumentations' Transpose does",
    ),
    OperatorPair("reshape", lambda fn, types, x: fn.reshape(x, shape=(SIZE, SIZE * 3))),
    OperatorPair("cat", lambda fn, types, x: fn.cat(x, x, axis=2)),
    OperatorPair("stack", lambda fn, types, x: fn.stack(x, x)),
    OperatorPair("reductions.mean", lambda fn, types, x: fn.reductions.mean(x, axes=(0, 1))),
    OperatorPair(
        "reductions.std_dev",
        lambda fn, types, x: fn.reductions.std_dev(
            x, same_for_all(fn, [120.0, 115.0, 105.0]), axes=(0, 1)
        ),
        note="per-channel, around a given mean",
    ),
    # --- the rest of DALI's vocabulary: tensors, reductions, draws, transforms -------------
    OperatorPair("expand_dims", lambda fn, types, x: fn.expand_dims(x, axes=[0])),
    OperatorPair(
        "squeeze",
        lambda fn, types, x: fn.squeeze(fn.reshape(x, shape=[320, 320, 3, 1]), axes=[3]),
        uses=("reshape",),
        note="after a reshape adding the axis (a view in both)",
    ),
    OperatorPair("copy", lambda fn, types, x: fn.copy(x)),
    OperatorPair("zeros_like", lambda fn, types, x: fn.zeros_like(x)),
    OperatorPair("ones_like", lambda fn, types, x: fn.ones_like(x)),
    OperatorPair("full_like", lambda fn, types, x: fn.full_like(x, 7)),
    OperatorPair(
        "cast_like",
        lambda fn, types, x: fn.cast_like(x, fn.random.uniform()),
        note="to float32, the type of a random draw",
    ),
    OperatorPair("shapes", lambda fn, types, x: fn.shapes(x)),
    OperatorPair(
        "one_hot",
        lambda fn, types, x: fn.one_hot(_box_labels(fn, types), num_classes=10),
        uses=("cast",),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair("peek_image_shape", lambda fn, types, x: fn.peek_image_shape(x), input="jpegs"),
    OperatorPair("reductions.sum", lambda fn, types, x: fn.reductions.sum(x, axes=(0, 1))),
    OperatorPair(
        "reductions.mean_square", lambda fn, types, x: fn.reductions.mean_square(x, axes=(0, 1))
    ),
    OperatorPair("reductions.rms", lambda fn, types, x: fn.reductions.rms(x, axes=(0, 1))),
    OperatorPair("reductions.min", lambda fn, types, x: fn.reductions.min(x, axes=(0, 1))),
    OperatorPair("reductions.max", lambda fn, types, x: fn.reductions.max(x, axes=(0, 1))),
    OperatorPair(
        "reductions.variance",
        lambda fn, types, x: fn.reductions.variance(
            x, same_for_all(fn, [120.0, 115.0, 105.0]), axes=(0, 1)
        ),
        note="per-channel, around a given mean",
    ),
    OperatorPair(
        "random.normal", lambda fn, types, x: fn.random.normal(x), note="image-sized draws"
    ),
    OperatorPair(
        "random.beta",
        lambda fn, types, x: fn.random.beta(alpha=2.0, beta=5.0, shape=[64]),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "random.choice",
        lambda fn, types, x: fn.random.choice(10, shape=[64]),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "python_function",
        lambda fn, types, x: fn.python_function(x, function=trivial),
        note="a function that returns its input (benchmarks/functions.py)",
    ),
    OperatorPair(
        "transforms.rotation",
        lambda fn, types, x: fn.transforms.rotation(
            angle=_uniform(fn, -30.0, 30.0), center=[160.0, 160.0]
        ),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "transforms.scale",
        lambda fn, types, x: fn.transforms.scale(scale=[1.2, 0.8], center=[160.0, 160.0]),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "transforms.shear",
        lambda fn, types, x: fn.transforms.shear(angles=[10.0, 5.0]),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "transforms.translation",
        lambda fn, types, x: fn.transforms.translation(offset=[10.0, -5.0]),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "transforms.crop",
        lambda fn, types, x: fn.transforms.crop(
            from_start=[0.0, 0.0],
            from_end=[1.0, 1.0],
            to_start=[10.0, 10.0],
            to_end=[300.0, 300.0],
        ),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "transforms.combine",
        lambda fn, types, x: fn.transforms.combine(
            fn.transforms.rotation(angle=_uniform(fn, -30.0, 30.0)),
            fn.transforms.translation(offset=[160.0, 160.0]),
        ),
        uses=("transforms.rotation", "transforms.translation"),
        note=_NOT_AN_IMAGE,
    ),
    # --- boxes, points and masks (issue 13's first operators) ------------------------------
    OperatorPair(
        "bb_flip",
        lambda fn, types, x: fn.bb_flip(_boxes(fn), ltrb=True, horizontal=1),
        uses=("cat",),
        note=_NOT_AN_IMAGE + "; 20 boxes a sample",
    ),
    OperatorPair(
        "coord_flip",
        lambda fn, types, x: fn.coord_flip(_points(fn), flip_x=1),
        note=_NOT_AN_IMAGE + "; 50 points a sample",
    ),
    OperatorPair(
        "coord_transform",
        lambda fn, types, x: fn.coord_transform(_points(fn), M=[0.5, 0.0, 0.0, 2.0], T=[0.1, 0.2]),
        note=_NOT_AN_IMAGE + "; 50 points a sample",
    ),
    OperatorPair(
        "bbox_paste",
        lambda fn, types, x: fn.bbox_paste(
            _boxes(fn), ratio=2.0, paste_x=0.3, paste_y=0.6, ltrb=True
        ),
        uses=("cat",),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "bbox_rotate",
        lambda fn, types, x: fn.bbox_rotate(
            _boxes(fn),
            _box_labels(fn, types),
            angle=_uniform(fn, -30.0, 30.0),
            input_shape=[320, 320],
        ),
        uses=("cat", "cast"),
        note=_NOT_AN_IMAGE + "; with labels",
    ),
    OperatorPair(
        "random_bbox_crop",
        lambda fn, types, x: fn.random_bbox_crop(
            _boxes(fn),
            _box_labels(fn, types),
            thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9],
            scaling=[0.3, 1.0],
            aspect_ratio=[0.5, 2.0],
            bbox_layout="xyXY",
            allow_no_crop=True,
            num_attempts=50,
        ),
        uses=("cat", "cast"),
        note=_NOT_AN_IMAGE + "; SSD's thresholds",
    ),
    OperatorPair(
        "roi_random_crop",
        lambda fn, types, x: fn.roi_random_crop(
            crop_shape=[224, 224],
            roi_start=[30, 30],
            roi_end=[300, 300],
            in_shape=[320, 320],
        ),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "random_crop_generator",
        lambda fn, types, x: fn.random_crop_generator(same_for_all(fn, [320, 320, 3], np.int64)),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "box_encoder",
        lambda fn, types, x: fn.box_encoder(_boxes(fn), _box_labels(fn, types), anchors=_anchors()),
        uses=("cat", "cast"),
        note=_NOT_AN_IMAGE + "; 200 anchors",
    ),
    OperatorPair(
        "segmentation.random_mask_pixel",
        lambda fn, types, x: fn.segmentation.random_mask_pixel(_mask(fn, types, x)),
        uses=("color_space_conversion", "cast"),
        note="on a label map made from the photo (its cost is in both)",
    ),
    OperatorPair(
        "segmentation.random_object_bbox",
        lambda fn, types, x: fn.segmentation.random_object_bbox(_mask(fn, types, x), format="box"),
        uses=("color_space_conversion", "cast"),
        note="on a label map made from the photo (its cost is in both)",
    ),
    OperatorPair(
        "segmentation.select_masks",
        lambda fn, types, x: fn.segmentation.select_masks(
            same_for_all(fn, [1, 3], np.int32),
            same_for_all(fn, [[1, 0, 20], [2, 20, 30], [3, 30, 50]], np.int32),
            _points(fn),
        ),
        note=_NOT_AN_IMAGE,
    ),
    OperatorPair(
        "readers.coco",
        lambda fn, types, x: fn.readers.coco(
            file_root=str(ROOT / "data" / "images"),
            annotations_file=str(ROOT / "data" / "annotations" / "instances.json"),
            ltrb=True,
            ratio=True,
            pixelwise_masks=True,
            image_ids=True,
            skip_empty=True,
        )[-1],
        note="the annotated photos of data/images: files, boxes, labels and pixelwise masks "
        "read and made; the image ids are the output (the photos are unused)",
    ),
]

PAIRS_BY_NAME = {pair.name: pair for pair in PAIRS}


# --- the inputs -----------------------------------------------------------------------------


def resized_photos(data_root: Path) -> np.ndarray:
    """The benchmark set's photos, each resized once to SIZE×SIZE with Pillow (``BILINEAR``),
    as one uint8 array (N, SIZE, SIZE, 3), N a multiple of BATCH_SIZE."""
    import io

    from PIL import Image

    from benchmarks import workloads as wl

    files = wl.load_bench_set(data_root)
    count = (len(files) // BATCH_SIZE) * BATCH_SIZE
    if count == 0:
        raise ValueError(f"{data_root}: fewer than {BATCH_SIZE} JPEGs")
    photos = np.empty((count, SIZE, SIZE, 3), np.uint8)
    for i, f in enumerate(files[:count]):
        image = Image.open(io.BytesIO(f.data)).convert("RGB")
        photos[i] = np.asarray(image.resize((SIZE, SIZE), Image.BILINEAR))
    return photos


def jpeg_paths(data_root: Path) -> list[str]:
    """The benchmark set's JPEG files (a multiple of BATCH_SIZE of them), in the reader's
    order."""
    from benchmarks import workloads as wl

    names = wl.list_bench_files(data_root)
    return [str(data_root / n) for n in names[: (len(names) // BATCH_SIZE) * BATCH_SIZE]]


class Inputs:
    """What the sources hand out: batches of the photos (dense slices of one array) and of the
    encoded JPEGs (lists of 1-D uint8 arrays), cycled from ``start``."""

    def __init__(self, photos: np.ndarray, jpegs: list[np.ndarray]) -> None:
        self.photos = photos
        self.jpegs = jpegs

    @classmethod
    def load(cls, photos_path: str, jpeg_files: Sequence[str]) -> Inputs:
        jpegs = [np.fromfile(p, dtype=np.uint8) for p in jpeg_files]
        return cls(np.load(photos_path), jpegs)

    def batches(self, kind: str) -> list[Any]:
        if kind == "images":
            return [self.photos[i : i + BATCH_SIZE] for i in range(0, len(self.photos), BATCH_SIZE)]
        if kind == "jpegs":
            return [self.jpegs[i : i + BATCH_SIZE] for i in range(0, len(self.jpegs), BATCH_SIZE)]
        raise ValueError(f"unknown input {kind!r}")

    def source(self, kind: str, start: int = 0) -> Callable[[], Any]:
        """A source callable: the batches in turn, from batch ``start`` on."""
        batches = self.batches(kind)
        cycle = itertools.cycle(batches[start % len(batches) :] + batches[: start % len(batches)])
        return lambda: next(cycle)

    def images(self, kind: str, start: int, count: int) -> list[np.ndarray]:
        """``count`` single images in the order the sources deliver them (Albumentations)."""
        flat = [image for batch in self.batches(kind) for image in batch]
        start = (start * BATCH_SIZE) % len(flat)
        return [flat[(start + k) % len(flat)] for k in range(count)]


# --- pipelines (the same code for augkit and DALI) ------------------------------------------


def build_pipeline(
    pipeline_class: Any,
    fn: Any,
    types: Any,
    pair: OperatorPair,
    source: Callable[[], Any],
    threads: int,
    seed: int,
    batch_size: int = BATCH_SIZE,
) -> Any:
    """``external_source -> pair.body``, built, in the library of ``pipeline_class``/``fn``."""
    global _building_batch
    _building_batch = batch_size
    pipe = pipeline_class(batch_size=batch_size, num_threads=threads, device_id=None, seed=seed)
    with pipe:
        layout = "HWC" if pair.input == "images" else None
        # no_copy: both libraries take the source's arrays without copying them (the source is
        # not the operator; Albumentations' loop copies nothing either)
        x = fn.external_source(source=source, batch=True, layout=layout, no_copy=True)
        outs = pair.body(fn, types, x)
        pipe.set_outputs(*(outs if isinstance(outs, (tuple, list)) else (outs,)))
    pipe.build()
    return pipe


def time_runs(pipe: Any, batches: int, seconds: float = math.inf) -> tuple[int, float]:
    """One untimed ``run()`` (start-up, filling the prefetch queue), then ``batches`` more, or
    fewer when they take longer than ``seconds`` (at least one): (batches, seconds) timed."""
    pipe.run()
    start = time.perf_counter()
    done, elapsed = 0, 0.0
    while done < batches and (done == 0 or elapsed < seconds):
        pipe.run()
        done += 1
        elapsed = time.perf_counter() - start
    return done, elapsed


def time_albumentations(
    transform: Any, images: list[np.ndarray], seconds: float = math.inf
) -> tuple[int, float]:
    """``transform(image=...)`` on each of ``images`` but the first (untimed), or on fewer
    when they take longer than ``seconds`` (at least one): (images, seconds) timed."""
    transform(image=images[0])
    start = time.perf_counter()
    done, elapsed = 0, 0.0
    for image in images[1:]:
        transform(image=image)
        done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return done, elapsed


# --- augkit's side (this process) -----------------------------------------------------------


def augkit_missing(pair: OperatorPair) -> str | None:
    """Why augkit cannot run the pair (an operator not registered yet), or None."""
    from augkit.operators.registry import resolve

    missing = []
    for name in (pair.name, *pair.uses, "random.uniform"):
        try:
            resolve(name)
        except KeyError:
            missing.append(name)
    if not missing:
        return None
    return "not in augkit yet: " + ", ".join(f"`{n}`" for n in missing)


class AugkitOperator:
    """augkit's pipeline of a pair with ``threads`` threads, built afresh for every pass
    (untimed) and closed and dropped after it, as DALI's is (so that the table's ~100
    pipelines do not all hold their buffers at once); a pass runs one untimed batch and times
    ``batches``."""

    def __init__(
        self,
        pair: OperatorPair,
        inputs: Inputs,
        threads: int,
        batches: int,
        seconds: float = math.inf,
    ) -> None:
        self.pair, self.inputs, self.threads, self.batches = pair, inputs, threads, batches
        self.seconds = seconds
        self.passes = 0

    def _build(self) -> Any:
        from augkit import fn, types
        from augkit.pipeline import Pipeline

        source = self.inputs.source(self.pair.input, start=self.passes)
        return build_pipeline(
            Pipeline, fn, types, self.pair, source, self.threads, SEED + self.passes
        )

    def setup(self) -> None:
        """Build the pipeline once (untimed): an operator that refuses the arguments fails
        here, before the rounds."""
        self._build().close()

    def run_pass(self) -> tuple[int, float]:
        pipe = self._build()
        self.passes += 1
        try:
            done, seconds = time_runs(pipe, self.batches, self.seconds)
        finally:
            pipe.close()
            del pipe
        return done * BATCH_SIZE, seconds

    def close(self) -> None:
        pass


class PassFailed(RuntimeError):
    """A pass in the side venv raised; the message is its exception, on one line."""


class RunnerOperator:
    """DALI's pipeline of a pair, or Albumentations' transform, timed in the side venv's
    ``dali_runner.py`` (``library``: ``"dali"`` or ``"albumentations"``)."""

    def __init__(
        self,
        pair: OperatorPair,
        runner: Any,
        library: str,
        threads: int,
        batches: int,
        seconds: float = math.inf,
    ) -> None:
        self.pair, self.runner, self.library = pair, runner, library
        self.threads, self.batches, self.seconds = threads, batches, seconds
        self.passes = 0

    def setup(self) -> None:
        pass

    def run_pass(self) -> tuple[int, float]:
        from benchmarks.dali import DaliUnavailable

        try:
            reply = self._request()
        except DaliUnavailable as exc:
            # The runner's one-line account of the pass's exception, without the traceback.
            text, marker = str(exc), "answered 'op_pass' with: "
            if marker not in text:
                raise
            raise PassFailed(text.split(marker, 1)[1].splitlines()[0]) from None
        self.passes += 1
        return int(reply["images"]), float(reply["seconds"])

    def _request(self) -> dict[str, Any]:
        return self.runner.request(
            {
                "cmd": "op_pass",
                "library": self.library,
                "operator": self.pair.name,
                "threads": self.threads,
                "batches": self.batches,
                "seconds": self.seconds if math.isfinite(self.seconds) else None,
                "seed": SEED + self.passes,
                "start": self.passes,
            }
        )

    def close(self) -> None:
        pass


# --- the measurement ------------------------------------------------------------------------

CONTENDERS = ("augkit 1", "augkit 2", "DALI 1", "DALI 2", "Albumentations")
NO_TRANSFORM = "Albumentations has no such transform"


@dataclass
class Row:
    """One operator's timings by contender (``CONTENDERS``), with why a contender is absent."""

    pair: OperatorPair
    timings: dict[str, Any] = field(default_factory=dict)  # contender -> report.Timing
    absent: dict[str, str] = field(default_factory=dict)  # contender -> why it is not timed


def make_rows(
    pairs: Sequence[OperatorPair],
    inputs: Inputs,
    batches: int,
    runner: Any | None,
    runner_missing: str | None,
    albumentations_missing: str | None,
    seconds: float = math.inf,
) -> tuple[list[Row], list[tuple[Row, str, Any]]]:
    """The rows, and the contenders to time: (row, contender name, contender object); each
    pass times ``batches`` batches, or fewer past ``seconds`` (at least one)."""
    from benchmarks import report as rp

    rows, contenders = [], []
    for pair in pairs:
        row = Row(pair)
        rows.append(row)
        missing = augkit_missing(pair)
        for threads in THREADS:
            name = f"augkit {threads}"
            if missing:
                row.absent[name] = missing
            else:
                contenders.append(
                    (row, name, AugkitOperator(pair, inputs, threads, batches, seconds))
                )
            name = f"DALI {threads}"
            if not pair.dali_cpu:
                row.absent[name] = "DALI 2.4 runs it on the GPU only"
            elif runner is None:
                row.absent[name] = f"DALI not available ({runner_missing})"
            else:
                dali = RunnerOperator(pair, runner, "dali", threads, batches, seconds)
                contenders.append((row, name, dali))
        name = "Albumentations"
        if pair.albumentations is None:
            row.absent[name] = NO_TRANSFORM
        elif runner is None or albumentations_missing:
            why = albumentations_missing or runner_missing
            row.absent[name] = f"Albumentations not available ({why})"
        else:
            contenders.append(
                (row, name, RunnerOperator(pair, runner, "albumentations", 1, batches, seconds))
            )
        for _, name, _ in contenders:
            row.timings.setdefault(name, rp.Timing())
        for name in CONTENDERS:
            if name not in row.absent:
                row.timings.setdefault(name, rp.Timing())
    return rows, contenders


def measure(
    contenders: list[tuple[Row, str, Any]],
    rounds: int,
    warmup: int,
    log: Callable[[str], None],
) -> None:
    """Set up, warm up (``warmup`` untimed passes each), then ``rounds`` rounds: every round
    goes through the operators in an order rotated by one each round, and times each operator's
    contenders one after the other (their order rotated too), so that a slow spell of the
    machine falls on the contenders of an operator alike. A contender that raises is marked
    failed (the reason goes to the table) and left out from then on."""

    def attempt(row: Row, name: str, contender: Any, round_number: int | None) -> None:
        timing = row.timings[name]
        if timing.failed is not None:
            return
        try:
            gc.collect()
            images, seconds = contender.run_pass()
        except Exception as exc:
            timing.failed = describe(exc)
            log(f"{row.pair.name}, {name}: failed: {timing.failed}")
            return
        if round_number is not None:
            timing.rates[round_number] = images / seconds

    for row, name, contender in contenders:
        try:
            contender.setup()
        except Exception as exc:
            row.timings[name].failed = describe(exc)
            log(f"{row.pair.name}, {name}: set-up failed: {row.timings[name].failed}")
    by_row: dict[int, list[tuple[Row, str, Any]]] = {}
    for entry in contenders:
        by_row.setdefault(id(entry[0]), []).append(entry)
    groups = list(by_row.values())
    for k in range(warmup):
        log(f"operators: warm-up {k + 1}/{warmup}")
        for group in groups:
            for row, name, contender in group:
                attempt(row, name, contender, None)
    for r in range(rounds):
        started = time.perf_counter()
        for j in range(len(groups)):
            group = groups[(r + j) % len(groups)]
            for i in range(len(group)):
                row, name, contender = group[(r + i) % len(group)]
                attempt(row, name, contender, r)
        log(f"operators: round {r + 1}/{rounds}: {time.perf_counter() - started:.1f} s")


def close_all(contenders: list[tuple[Row, str, Any]]) -> None:
    for _, _, contender in contenders:
        contender.close()


def select(names: str | None) -> list[OperatorPair]:
    """The pairs named in ``names`` (comma-separated; all when None).

    Raises:
        ValueError: a name that is not in the table.
    """
    if not names:
        return list(PAIRS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in PAIRS_BY_NAME]
    if unknown:
        raise ValueError(f"not in the operator table: {', '.join(unknown)}")
    return [PAIRS_BY_NAME[n] for n in wanted]


def describe(exc: BaseException) -> str:
    """A one-line account of an exception, for the table and the log."""
    if isinstance(exc, PassFailed):
        return str(exc)[:240]
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}".rstrip(": ")[:160]


def lambda_text(f: Callable[..., Any] | None) -> str:
    """The expression of a ``lambda`` of this module, on one line ("–" for None)."""
    import inspect

    if f is None:
        return "–"
    try:
        text = " ".join(inspect.getsource(f).split())
    except (OSError, TypeError):
        return "?"
    start = text.find("lambda")
    colon = text.find(":", start)
    if start < 0 or colon < 0:
        return "?"
    depth, end = 0, len(text)
    for i in range(colon + 1, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
        elif ch in ")]}," and depth == 0:
            end = i
            break
    text = text[colon + 1 : end].strip()
    for before, after in (("( ", "("), ("[ ", "["), (", )", ")"), (" )", ")"), (" ]", "]")):
        text = text.replace(before, after)
    return text


# --- the whole table ------------------------------------------------------------------------


@dataclass
class TableSettings:
    """How ``run_table`` measures (``python -m benchmarks --only operators``' options)."""

    data_root: Path
    work: Path
    out: Path
    pairs: list[OperatorPair]
    rounds: int = 5
    warmup: int = 1
    batches: int = 8
    seconds: float = 1.0  # a pass stops timing after the batch that ends past this
    dali_venv: Path | None = None  # None: without DALI and Albumentations
    dali_missing: str | None = None  # why, when dali_venv is None
    quick: bool = False


def start_runner(settings: TableSettings, log: Callable[[str], None]) -> tuple[Any, str | None]:
    """The side venv's runner (DALI and Albumentations), or None and why not."""
    from benchmarks import dali

    if settings.dali_venv is None:
        return None, settings.dali_missing or "left out"
    try:
        python = dali.ensure_dali_venv(settings.dali_venv.resolve(), log)
        runner = dali.DaliRunner(python, settings.work / "dali-runner-operators.stderr.txt")
    except dali.DaliUnavailable as exc:
        log(f"DALI is not available, going on without it: {exc}")
        return None, str(exc).split("; last lines")[0].splitlines()[0]
    return runner, None


def run_table(settings: TableSettings, log: Callable[[str], None]) -> list[str]:
    """Measure the table and return the report's lines (also written to ``settings.out``)."""
    from benchmarks import machine as mc
    from benchmarks import report as rp

    started = time.perf_counter()
    settings.work.mkdir(parents=True, exist_ok=True)
    log(f"operators: resizing the photos of {settings.data_root} to {SIZE}×{SIZE}")
    photos = resized_photos(settings.data_root)
    photos_path = settings.work / "operators_photos.npy"
    np.save(photos_path, photos)
    jpeg_files = jpeg_paths(settings.data_root)
    inputs = Inputs(photos, [np.fromfile(p, dtype=np.uint8) for p in jpeg_files])
    runner, runner_missing = start_runner(settings, log)
    versions: dict[str, Any] = {}
    albumentations_missing: str | None = runner_missing
    contenders: list[tuple[Row, str, Any]] = []
    try:
        if runner is not None:
            versions = runner.request(
                {"cmd": "op_load", "images": str(photos_path), "jpegs": jpeg_files}
            )
            versions["dali"] = runner.version
            albumentations_missing = versions.get("albumentations_missing")
            if albumentations_missing:
                log(f"Albumentations is not available: {albumentations_missing}")
        rows, contenders = make_rows(
            settings.pairs,
            inputs,
            settings.batches,
            runner,
            runner_missing,
            albumentations_missing,
            settings.seconds,
        )
        log(
            f"operators: {len(rows)} operators, {len(contenders)} contenders, "
            f"{settings.rounds} rounds of {settings.batches} batches of {BATCH_SIZE}"
        )
        meter = mc.CpuMeter()
        meter.start()
        measure(contenders, settings.rounds, settings.warmup, log)
        cpu = meter.stop()
    finally:
        close_all(contenders)
        if runner is not None:
            runner.close()
    import augkit

    versions["augkit"] = augkit.__version__
    lines = rp.render_operators(
        rows,
        rounds=settings.rounds,
        batches=settings.batches,
        seconds_per_pass=settings.seconds,
        images=len(photos),
        data=settings.data_root,
        versions=versions,
        dali_missing=runner_missing,
        albumentations_missing=albumentations_missing,
        cpu=cpu,
        quick=settings.quick,
        seconds=time.perf_counter() - started,
        machine=mc.machine_info(ROOT, int(os.environ.get("PILLOW_BLOCKS_MAX", "4"))),
    )
    settings.out.parent.mkdir(parents=True, exist_ok=True)
    settings.out.write_text("\n".join(lines) + "\n")
    return lines
