"""Derive a larger JPEG benchmark set from the sample photos in ``data/images``.

Every output image is a random crop of one source photo:

* the crop width and height are drawn independently and uniformly from
  ``[--min-size, --max-size]`` (default 300..1200 px);
* if the source is smaller than the crop in either dimension, the source is
  first upscaled (aspect ratio kept, Pillow ``BICUBIC``) just enough to hold
  the crop; the crop box then always lies inside the (possibly upscaled)
  source, so the output has exactly the drawn size;
* the crop is mirrored horizontally with probability 0.5;
* it is saved as a baseline JPEG, quality 90, 4:2:0 chroma subsampling, no
  EXIF and no ICC profile.

Sources are used round-robin in sorted order (class folder, then file name),
so every photo contributes the same number of crops (give or take one).
The class folder structure is kept: ``<out>/<class>/<stem>_<index>.jpg``,
so a file reader that maps sorted folder names to labels 0, 1, 2, ... gives
the same labels as for ``data/images``.

The output is deterministic for a given ``--seed`` (with the same NumPy and
Pillow versions): all randomness comes from ``numpy.random.default_rng(seed)``.

Usage (from the repository root)::

    python data/make_bench_set.py --out data/bench --count 256 --seed 0

Options: ``--src`` (default: the ``images`` folder next to this script),
``--out`` (default: the ``bench`` folder next to this script, git-ignored),
``--count``, ``--seed``, ``--min-size``, ``--max-size``, ``--quality``,
``--force`` (replace the JPEGs of an existing output folder).

Needs only the standard library, NumPy and Pillow.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

HERE = Path(__file__).resolve().parent
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png"}


@dataclass(frozen=True)
class Source:
    """One source photo: its class folder name, path and decoded RGB pixels."""

    label_name: str
    path: Path
    image: Image.Image


def find_sources(src: Path) -> list[Source]:
    """Load every image under ``src/<class>/`` in sorted order, as RGB."""
    if not src.is_dir():
        raise SystemExit(f"source folder not found: {src}")
    sources: list[Source] = []
    for class_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        for path in sorted(class_dir.iterdir()):
            if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
                with Image.open(path) as im:
                    rgb = im.convert("RGB")
                sources.append(Source(class_dir.name, path, rgb))
    if not sources:
        raise SystemExit(f"no images found in class folders under {src}")
    return sources


def random_crop(
    image: Image.Image,
    rng: np.random.Generator,
    min_size: int,
    max_size: int,
) -> tuple[Image.Image, bool]:
    """Return a random crop (upscaling the source first if needed) and whether it was flipped."""
    crop_w = int(rng.integers(min_size, max_size + 1))
    crop_h = int(rng.integers(min_size, max_size + 1))
    flip = bool(rng.random() < 0.5)

    src_w, src_h = image.size
    scale = max(1.0, crop_w / src_w, crop_h / src_h)
    if scale > 1.0:
        new_w = max(crop_w, math.ceil(src_w * scale))
        new_h = max(crop_h, math.ceil(src_h * scale))
        image = image.resize((new_w, new_h), Image.Resampling.BICUBIC)
        src_w, src_h = new_w, new_h

    x0 = int(rng.integers(0, src_w - crop_w + 1))
    y0 = int(rng.integers(0, src_h - crop_h + 1))
    crop = image.crop((x0, y0, x0 + crop_w, y0 + crop_h))
    if flip:
        crop = ImageOps.mirror(crop)
    return crop, flip


def prepare_output(out: Path, force: bool) -> None:
    """Create ``out``; refuse to write into a non-empty folder unless ``force``."""
    if out.exists():
        existing = [p for p in out.rglob("*") if p.is_file()]
        if existing and not force:
            raise SystemExit(
                f"{out} is not empty ({len(existing)} files); use --force to replace its JPEGs"
            )
        if force:
            others = [p for p in existing if p.suffix.lower() != ".jpg"]
            if others:
                raise SystemExit(
                    f"{out} holds non-JPEG files (e.g. {others[0]}); refusing to clean it"
                )
            for p in existing:
                p.unlink()
            for d in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
                d.rmdir()
    out.mkdir(parents=True, exist_ok=True)


def make_bench_set(
    src: Path,
    out: Path,
    count: int,
    seed: int,
    min_size: int = 300,
    max_size: int = 1200,
    quality: int = 90,
) -> list[tuple[Path, int, int, int]]:
    """Write ``count`` JPEGs under ``out``; return (path, width, height, bytes) for each."""
    sources = find_sources(src)
    rng = np.random.default_rng(seed)
    digits = max(5, len(str(count - 1)))
    written: list[tuple[Path, int, int, int]] = []
    for index in range(count):
        source = sources[index % len(sources)]
        crop, _ = random_crop(source.image, rng, min_size, max_size)
        class_dir = out / source.label_name
        class_dir.mkdir(parents=True, exist_ok=True)
        path = class_dir / f"{source.path.stem}_{index:0{digits}d}.jpg"
        crop.save(
            path, format="JPEG", quality=quality, subsampling=2, optimize=False, progressive=False
        )
        written.append((path, crop.width, crop.height, path.stat().st_size))
    return written


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Derive a benchmark set of random JPEG crops from data/images.",
    )
    parser.add_argument(
        "--src", type=Path, default=HERE / "images", help="class folders of source photos"
    )
    parser.add_argument(
        "--out", type=Path, default=HERE / "bench", help="output folder (default: data/bench)"
    )
    parser.add_argument("--count", type=int, default=256, help="number of JPEGs to write")
    parser.add_argument("--seed", type=int, default=0, help="seed for numpy.random.default_rng")
    parser.add_argument("--min-size", type=int, default=300, help="smallest crop side in px")
    parser.add_argument("--max-size", type=int, default=1200, help="largest crop side in px")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality")
    parser.add_argument(
        "--force", action="store_true", help="replace the JPEGs of a non-empty output folder"
    )
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    if not 1 <= args.min_size <= args.max_size:
        parser.error("need 1 <= --min-size <= --max-size")
    if not 1 <= args.quality <= 100:
        parser.error("--quality must be in 1..100")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    prepare_output(args.out, args.force)
    written = make_bench_set(
        args.src, args.out, args.count, args.seed, args.min_size, args.max_size, args.quality
    )
    elapsed = time.perf_counter() - start

    widths = np.array([w for _, w, _, _ in written])
    heights = np.array([h for _, _, h, _ in written])
    sizes = np.array([b for _, _, _, b in written])
    per_class: dict[str, int] = {}
    for path, _, _, _ in written:
        per_class[path.parent.name] = per_class.get(path.parent.name, 0) + 1

    print(f"wrote {len(written)} JPEGs to {args.out} in {elapsed:.1f} s (seed {args.seed})")
    print("per class: " + ", ".join(f"{name}={n}" for name, n in sorted(per_class.items())))
    print(f"width  {widths.min()}..{widths.max()} px, mean {widths.mean():.1f}")
    print(f"height {heights.min()}..{heights.max()} px, mean {heights.mean():.1f}")
    print(f"mean pixels per image {np.mean(widths * heights) / 1e6:.3f} MP")
    print(f"file size {sizes.min()}..{sizes.max()} bytes, mean {sizes.mean():.0f}")
    print(f"total {int(sizes.sum())} bytes ({sizes.sum() / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
