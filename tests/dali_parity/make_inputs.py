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
