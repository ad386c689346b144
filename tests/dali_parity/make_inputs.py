"""Writes ``reference/inputs.npz``, the fixed inputs of the parity cases (run once, in augkit's
venv: ``python -m tests.dali_parity.make_inputs``; the file is committed). Changing it makes
every stored DALI reference stale: run ``make dali-reference`` afterwards."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from tests.dali_parity.base import INPUTS_FILE, PHOTOS, PHOTOS_DIR

SIZES = [(64, 48), (80, 60), (56, 56), (72, 40)]  # (width, height)


def main() -> None:
    images = []
    for name, size in zip(PHOTOS, SIZES, strict=True):
        with Image.open(PHOTOS_DIR / name) as im:
            images.append(np.asarray(im.convert("RGB").resize(size, Image.BILINEAR)))
    rng = np.random.default_rng(7)
    sets = {
        "images": images,
        "gray": [np.asarray(Image.fromarray(im).convert("L"))[..., None] for im in images],
        "float": [(im / 255).astype(np.float32) for im in images],
        "chw": [np.ascontiguousarray(im.transpose(2, 0, 1)) for im in images],
        "vectors": [rng.normal(0, 2, n).astype(np.float32) for n in (5, 8, 3, 6)],
        "matrices": [
            rng.normal(0, 2, shape).astype(np.float32) for shape in ((3, 4), (5, 2), (2, 2), (4, 3))
        ],
    }
    # Annotations, from a generator of their own (the sets above stay as they were).
    notes = np.random.default_rng(12)
    boxes, box_labels, masks, keypoints = [], [], [], []
    for image, n, k in zip(images, (3, 1, 0, 5), (4, 2, 1, 3), strict=True):
        corners = np.sort(notes.uniform(0, 1, (n, 2, 2)), axis=1)  # (n, [lt, rb], [x, y])
        boxes.append(corners.reshape(n, 4).astype(np.float32))
        box_labels.append(notes.integers(1, 10, (n, 1)).astype(np.int32))
        h, w = image.shape[:2]
        mask = np.zeros((h, w, 1), np.uint8)
        for label in (1, 2, 3):
            y0, x0 = notes.integers(0, h - 8), notes.integers(0, w - 8)
            mask[y0 : y0 + notes.integers(4, h // 2), x0 : x0 + notes.integers(4, w // 2)] = label
        masks.append(mask)
        keypoints.append(notes.uniform(0, 1, (k, 2)).astype(np.float32))
    sets.update(boxes=boxes, box_labels=box_labels, masks=masks, keypoints=keypoints)
    # Small JPEG files (the photos above, encoded by Pillow: 4:2:0 and one 4:4:4), so that the
    # decoders' stored outputs stay small; the decoders read them as any JPEG file.
    encoded = []
    for k, image in enumerate(images):
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="JPEG", quality=90, subsampling=2 if k else 0)
        encoded.append(np.frombuffer(buffer.getvalue(), np.uint8))
    sets["jpegs"] = encoded
    INPUTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        INPUTS_FILE, **{f"{k}/{i}": s for k, samples in sets.items() for i, s in enumerate(samples)}
    )
    print(f"wrote {INPUTS_FILE}")


if __name__ == "__main__":
    main()
