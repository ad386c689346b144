"""Images + masks + boxes + labels moved together: augkit, NVIDIA DALI 2.4 CPU and
Albumentations 2.x on the same decoded photos, in one run, as ratios.

The work per sample (issue 13's "one random draw, every kind"): a random horizontal flip, a
rotation by a random angle in [-30, 30] degrees keeping the size (bilinear for the image,
nearest for the mask, the boxes' corners rotated and re-boxed, boxes left empty dropped with
their labels), then a resize to 320×320. Inputs: 64 photos of the benchmark set
(``data/bench``, decoded once, 300–1200 px), each with a label map (its own 4-class
quantisation, uint8 H×W×1) and 8 relative ltrb boxes with labels.

- **augkit**: ``fn.flip / fn.rotate / fn.resize`` each called once on
  ``[images, masks, boxes, labels]`` (DALI's input sets), batch 32, ``num_threads`` threads.
- **DALI 2.4 CPU**: the same through DALI's own operators: ``flip`` on images and masks,
  ``bb_flip``; ``rotate`` on images (linear) and masks (``interp_type=INTERP_NN``),
  ``bbox_rotate`` with the images' shapes; ``resize`` on both (nearest for masks); the same
  batch and threads.
- **Albumentations**: ``A.Compose([HorizontalFlip(p=0.5), Rotate(limit=30, p=1,
  border_mode=cv2.BORDER_CONSTANT), Resize(320, 320)], bbox_params=BboxParams("albumentations",
  label_fields=["labels"]))`` called per sample, one thread (its users parallelise with a
  DataLoader's processes; the ratio per thread is what compares).

The resize is each library's default: DALI's and augkit's antialias when shrinking (DALI's
Triangular filter), Albumentations' ``cv2.INTER_LINEAR`` does not (cheaper, and aliased).

Run: ``.venv/bin/python -m benchmarks.targets`` (DALI and Albumentations run in the side venv
that ``make dali-venv`` makes, in a subprocess of this same file). Writes
``benchmarks/results/targets.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "data" / "bench"
VENV_PYTHON = ROOT / "benchmarks" / "_work" / "dali-venv" / "bin" / "python"
OUT = ROOT / "benchmarks" / "results" / "targets.md"
SIZE = 320
BATCH = 32


def load_samples(count: int) -> list[dict[str, np.ndarray]]:
    """``count`` decoded photos with a mask, 8 boxes and labels each (fixed by a seed)."""
    from PIL import Image

    files = sorted(BENCH.glob("*/*.jpg"))[:count]
    if not files:
        raise SystemExit(f"no benchmark set in {BENCH}: run `make bench` once to make it")
    rng = np.random.default_rng(0)
    samples = []
    for path in files:
        image = np.asarray(Image.open(path).convert("RGB"))
        gray = image.mean(axis=2)
        mask = np.digitize(gray, np.quantile(gray, [0.25, 0.5, 0.75])).astype(np.uint8)
        lo = rng.uniform(0, 0.7, (8, 2))
        hi = lo + rng.uniform(0.05, 0.3, (8, 2))
        boxes = np.clip(np.concatenate([lo, hi], axis=1), 0, 1).astype(np.float32)
        samples.append(
            {
                "image": image,
                "mask": mask[..., None],
                "boxes": boxes,
                "labels": rng.integers(1, 5, 8).astype(np.int32),
            }
        )
    return samples


def _batches(samples: list[dict[str, np.ndarray]], key: str) -> Any:
    state = {"i": 0}

    def source() -> list[np.ndarray]:
        start = state["i"]
        state["i"] = (start + BATCH) % len(samples)
        return [samples[(start + k) % len(samples)][key] for k in range(BATCH)]

    return source


def augkit_pipeline(samples: list[dict[str, np.ndarray]], threads: int) -> Any:
    from augkit import fn, kinds, pipeline_def

    @pipeline_def(batch_size=BATCH, num_threads=threads, device_id=None, seed=1)
    def pipe() -> Any:
        images = fn.external_source(
            source=_batches(samples, "image"), batch=True, layout="HWC", no_copy=True
        )
        masks = fn.external_source(
            source=_batches(samples, "mask"), batch=True, layout="HWC", no_copy=True
        )
        boxes = fn.external_source(source=_batches(samples, "boxes"), batch=True, no_copy=True)
        labels = fn.external_source(source=_batches(samples, "labels"), batch=True, no_copy=True)
        masks = fn.python_function(masks, function=_same, kind="mask")
        boxes = fn.python_function(boxes, function=_same, kind=kinds.BOXES)
        labels = fn.python_function(labels, function=_same, kind="labels")
        sets = [images, masks, boxes, labels]
        sets = fn.flip(sets, horizontal=fn.random.coin_flip())
        sets = fn.rotate(sets, angle=fn.random.uniform(range=(-30, 30)), keep_size=True)
        sets = fn.resize(sets, size=(SIZE, SIZE))
        return tuple(sets)

    return pipe()


def _same(x: Any) -> Any:
    return x


def dali_pipeline(samples: list[dict[str, np.ndarray]], threads: int) -> Any:
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=BATCH, num_threads=threads, device_id=None, seed=1)
    def pipe() -> Any:
        images = fn.external_source(
            source=_batches(samples, "image"), batch=True, layout="HWC", no_copy=True
        )
        masks = fn.external_source(
            source=_batches(samples, "mask"), batch=True, layout="HWC", no_copy=True
        )
        boxes = fn.external_source(source=_batches(samples, "boxes"), batch=True, no_copy=True)
        labels = fn.external_source(source=_batches(samples, "labels"), batch=True, no_copy=True)
        flip = fn.random.coin_flip()
        images = fn.flip(images, horizontal=flip)
        masks = fn.flip(masks, horizontal=flip)
        boxes = fn.bb_flip(boxes, horizontal=flip, ltrb=True)
        angle = fn.random.uniform(range=(-30, 30))
        shape = images.shape()
        images = fn.rotate(images, angle=angle, keep_size=True)
        masks = fn.rotate(masks, angle=angle, keep_size=True, interp_type=types.INTERP_NN)
        boxes, labels = fn.bbox_rotate(
            boxes, labels, angle=angle, input_shape=fn.slice(shape, 0, 2, axes=[0]), keep_size=True
        )
        images = fn.resize(images, size=(SIZE, SIZE))
        masks = fn.resize(masks, size=(SIZE, SIZE), interp_type=types.INTERP_NN)
        return images, masks, boxes, labels

    return pipe()


def time_pipeline(pipe: Any, seconds: float, rounds: int) -> float:
    """Best images/s over ``rounds`` passes of at least ``seconds`` each."""
    pipe.build()
    for _ in range(2):
        pipe.run()
    best = 0.0
    for _ in range(rounds):
        start, count = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            pipe.run()
            count += BATCH
        best = max(best, count / (time.perf_counter() - start))
    return best


def time_albumentations(samples: list[dict[str, np.ndarray]], seconds: float, rounds: int) -> float:
    import albumentations as A
    import cv2

    cv2.setNumThreads(1)
    transform = A.Compose(
        [
            A.HorizontalFlip(p=0.5),
            A.Rotate(limit=30, p=1, border_mode=cv2.BORDER_CONSTANT),
            A.Resize(SIZE, SIZE),
        ],
        bbox_params=A.BboxParams(format="albumentations", label_fields=["labels"]),
        seed=1,
    )

    def one(s: dict[str, np.ndarray]) -> None:
        transform(image=s["image"], mask=s["mask"], bboxes=s["boxes"], labels=s["labels"])

    for s in samples[:8]:
        one(s)
    best = 0.0
    for _ in range(rounds):
        start, count = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            one(samples[count % len(samples)])
            count += 1
        best = max(best, count / (time.perf_counter() - start))
    return best


def side(args: argparse.Namespace) -> None:
    """In the side venv: time DALI (``threads``) and Albumentations; print JSON."""
    samples = load_samples(args.images)
    result = {}
    for threads in args.thread_counts:
        result[f"dali {threads}"] = time_pipeline(
            dali_pipeline(samples, threads), args.seconds, args.rounds
        )
    result["albumentations 1"] = time_albumentations(samples, args.seconds, args.rounds)
    print(json.dumps(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args(argv)
    args.thread_counts = [int(t) for t in args.threads.split(",")]
    if args.side:
        side(args)
        return 0
    samples = load_samples(args.images)
    timings: dict[str, float] = {}
    for threads in args.thread_counts:
        timings[f"augkit {threads}"] = time_pipeline(
            augkit_pipeline(samples, threads), args.seconds, args.rounds
        )
        print(f"augkit {threads}: {timings[f'augkit {threads}']:.0f} img/s", file=sys.stderr)
    if VENV_PYTHON.exists():
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        reply = subprocess.run(
            [str(VENV_PYTHON), __file__, "--side", *(argv or sys.argv[1:])],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=False,
        )
        if reply.returncode != 0:
            print(reply.stderr[-2000:], file=sys.stderr)
        else:
            timings.update(json.loads(reply.stdout.strip().splitlines()[-1]))
    else:
        print(f"no DALI venv at {VENV_PYTHON} (make dali-venv): augkit only", file=sys.stderr)
    lines = [
        "# Images, masks, boxes and labels moved together",
        "",
        "flip + rotate(±30°, keep_size) + resize(320×320) on image, mask, 8 boxes and labels "
        f"per sample; {args.images} decoded photos of data/bench; batch {BATCH}; best of "
        f"{args.rounds} passes of {args.seconds:g} s (`python -m benchmarks.targets`). DALI and "
        "augkit antialias the resize, Albumentations' INTER_LINEAR does not.",
        "",
        "| contender | threads | samples/s | augkit ÷ it (same threads) |",
        "| --- | --- | --- | --- |",
    ]
    for name, value in timings.items():
        library, threads = name.rsplit(" ", 1)
        mine = timings.get(f"augkit {threads}")
        ratio = f"{mine / value:.2f}×" if mine and library != "augkit" else ""
        lines.append(f"| {library} | {threads} | {value:.0f} | {ratio} |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    if "--side" in sys.argv:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
