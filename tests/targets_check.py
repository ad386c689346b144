"""The consistency check of geometric operators over every kind (issue 13, "one random draw,
every kind"): draw a known rectangle into a real photo, derive its mask, boxes (relative ltrb
and absolute xywh), corner keypoints and label, run them all through one operator call (DALI's
multiple input sets, ``fn.rotate([images, masks, boxes, ...], angle=...)``) with random
per-sample arguments, and check that what comes out still agrees:

- the mask's class pixels span the box within ``tol`` pixels (the box is the bounding box of
  the moved rectangle, clipped to the image);
- the bright rectangle found in the output image spans the box within ``tol + 1`` pixels (the
  image is interpolated: its edge blurs over a pixel);
- the keypoints' bounding box, clipped to the image, is the box (to float precision);
- relative and absolute boxes say the same; labels are dropped exactly with their boxes; a
  dropped box leaves (almost) no mask pixels.

``check_operator(name, arguments)`` runs it; ``arguments(fn)`` returns the call's keyword
arguments (per-sample draws made with ``fn.random.*``).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

from augkit import fn, kinds, pipeline_def

ROOT = pathlib.Path(__file__).resolve().parents[1]
PHOTOS = sorted((ROOT / "data" / "images").glob("*/*.jpg"))
CLASS = 3
LABEL = 7
BRIGHT = 255


def scene(index: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A photo (dimmed to at most 140) with a white rectangle drawn in it, and the targets of
    that rectangle: mask (H×W×1 uint8, class 3), boxes, keypoints, labels."""
    photo = Image.open(PHOTOS[index % len(PHOTOS)]).convert("RGB")
    scale = rng.uniform(0.25, 0.45)
    photo = photo.resize((max(40, int(photo.width * scale)), max(40, int(photo.height * scale))))
    image = (np.asarray(photo, np.float32) * 0.55).astype(np.uint8)
    height, width = image.shape[:2]
    w = int(rng.integers(width // 5, width // 2))
    h = int(rng.integers(height // 5, height // 2))
    x0 = int(rng.integers(0, width - w))
    y0 = int(rng.integers(0, height - h))
    image[y0 : y0 + h, x0 : x0 + w] = BRIGHT
    mask = np.zeros((height, width, 1), np.uint8)
    mask[y0 : y0 + h, x0 : x0 + w] = CLASS
    ltrb = np.array([[x0, y0, x0 + w, y0 + h]], np.float32)
    relative = ltrb / np.array([width, height, width, height], np.float32)
    xywh = np.array([[x0, y0, w, h]], np.float32)
    corners = np.array([[x0, y0], [x0 + w, y0], [x0, y0 + h], [x0 + w, y0 + h]], np.float32)
    return {
        "image": image,
        "mask": mask,
        "boxes": relative,
        "boxes_abs": xywh,
        "keypoints": corners / np.array([width, height], np.float32),
        "labels": np.array([LABEL], np.int32),
    }


def _source(samples: list[np.ndarray], kind: Any, layout: str | None = None) -> Any:
    node = fn.external_source(source=lambda: samples, batch=True, layout=layout)
    return fn.python_function(node, function=lambda x: x, kind=kind)


def run_operator(
    name: str,
    arguments: Callable[[Any], dict[str, Any]],
    *,
    batch: int = 6,
    seed: int = 0,
    debug: bool = False,
    inputs: Callable[[Any], tuple] = lambda fn: (),
) -> tuple[list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """One batch of scenes through ``fn.<name>([image, mask, boxes, boxes_abs, keypoints,
    labels], *inputs(fn), **arguments(fn))``: (the scenes, the outputs per sample);
    ``inputs``: positional inputs after the data (slice's anchor and shape, a matrix)."""
    rng = np.random.default_rng(seed)
    scenes = [scene(seed * batch + i, rng) for i in range(batch)]
    operator = fn
    for part in name.split("."):
        operator = getattr(operator, part)

    def define() -> Any:
        images = fn.external_source(
            source=lambda: [s["image"] for s in scenes], batch=True, layout="HWC"
        )
        sets = [
            images,
            _source([s["mask"] for s in scenes], "mask", "HWC"),
            _source([s["boxes"] for s in scenes], kinds.boxes("ltrb", relative=True)),
            _source([s["boxes_abs"] for s in scenes], kinds.boxes("xywh", relative=False)),
            _source([s["keypoints"] for s in scenes], kinds.keypoints(relative=True)),
            _source([s["labels"] for s in scenes], "labels"),
        ]
        return tuple(operator(sets, *inputs(fn), **arguments(fn)))

    pipe = pipeline_def(define, batch_size=batch, num_threads=2, device_id=None, seed=seed)(
        debug=debug
    )
    try:
        batches = pipe.run()
    finally:
        pipe.close()
    keys = ["image", "mask", "boxes", "boxes_abs", "keypoints", "labels"]
    layouts = [b.layout() for b in batches]
    results = []
    for i in range(batch):
        sample = {k: np.asarray(b._samples[i]) for k, b in zip(keys, batches, strict=True)}
        sample["image_layout"] = np.array(layouts[0])
        results.append(sample)
    return scenes, results


def _extent(pixels: np.ndarray) -> np.ndarray | None:
    """[left, top, right, bottom] (pixel edges) of the true pixels, or None."""
    ys, xs = np.nonzero(pixels)
    if len(xs) == 0:
        return None
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)


def _hwc(image: np.ndarray, layout: str) -> np.ndarray:
    if layout == "CHW":
        image = np.moveaxis(image, 0, -1)
    return image if image.ndim == 3 else image[..., None]


def check_agreement(sample: dict[str, np.ndarray], tol: float = 1.0) -> str:
    """'' when the outputs of one sample agree, else what does not (see the module
    docstring)."""
    image = _hwc(sample["image"], str(sample["image_layout"]))
    height, width = image.shape[:2]
    mask = sample["mask"]
    mask2 = mask[..., 0] if mask.ndim == 3 else mask
    if mask2.shape != (height, width):
        return f"mask {mask2.shape} for an image {(height, width)}"
    if mask.dtype != np.uint8 or not set(np.unique(mask)) <= {0, CLASS}:
        return f"mask values changed: {np.unique(mask)} ({mask.dtype})"
    boxes, labels = sample["boxes"], sample["labels"]
    if len(boxes) != len(labels) or len(sample["boxes_abs"]) != len(boxes):
        return f"{len(boxes)} boxes, {len(sample['boxes_abs'])} absolute, {len(labels)} labels"
    region = _extent(mask2 == CLASS)
    if len(boxes) == 0:
        if region is not None and (region[2:] - region[:2]).min() > 1:
            return f"the box was dropped but the mask still spans {region}"
        return ""
    if labels.ravel().tolist() != [LABEL]:
        return f"labels {labels}"
    box = boxes[0].astype(np.float64) * [width, height, width, height]
    xywh = sample["boxes_abs"][0].astype(np.float64)
    absolute = np.array([xywh[0], xywh[1], xywh[0] + xywh[2], xywh[1] + xywh[3]])
    if np.abs(absolute - box).max() > 1e-3 * max(width, height):
        return f"relative box {box} != absolute box {absolute}"
    points = sample["keypoints"].astype(np.float64) * [width, height]
    spanned = np.concatenate([points.min(0), points.max(0)])
    spanned = np.clip(spanned, 0, [width, height, width, height])
    if np.abs(spanned - box).max() > 1e-3 * max(width, height):
        return f"keypoints span {spanned}, box {box}"
    if (box[2:] - box[:2]).min() <= 2 * tol:
        return ""  # a sliver: its pixels are a matter of rounding
    if region is None or np.abs(region - box).max() > tol:
        return f"mask spans {region}, box {box}"
    brightest = image.max(axis=-1).astype(np.float64)
    found = _extent(brightest > 197)  # between the dimmed photo (<= 140) and the white (255)
    if found is None or np.abs(found - box).max() > tol + 1:
        return f"image rectangle spans {found}, box {box}"
    return ""


def check_operator(
    name: str,
    arguments: Callable[[Any], dict[str, Any]],
    *,
    seeds: range = range(3),
    tol: float = 1.0,
    debug: bool = False,
    inputs: Callable[[Any], tuple] = lambda fn: (),
) -> None:
    """Assert that every sample of a few random batches agrees (``check_agreement``)."""
    problems = []
    for seed in seeds:
        _, results = run_operator(name, arguments, seed=seed, debug=debug, inputs=inputs)
        for i, sample in enumerate(results):
            problem = check_agreement(sample, tol)
            if problem:
                problems.append(f"seed {seed}, sample {i}: {problem}")
    assert not problems, f"fn.{name}: " + "; ".join(problems)
