"""``python -m benchmarks.conditionals``: what a per-sample ``if`` costs, against running its
branch on every sample (the conditionals issue's target).

The issue's requirement: a pipeline with a p=0.5 branch costs no more than 0.55× + epsilon of
running the branch on every sample. Measured in one run, batch 32, ``num_threads=2``,
``device_id=None``, on 32 photos of ``data/images`` (its 15 files, cycled) decoded and resized
to 300 × 300 once up front (Pillow ``BILINEAR``) and fed by ``fn.external_source(no_copy=True)``
(the same 32 arrays every batch), so that decoding is not timed. Five pipelines, all drawing
the same cheap per-sample values (a random angle and a coin flip, both returned as outputs with
the images):

- **base**: the images returned as they are (no augmentation);
- **always**: the branch on every sample;
- **p=0.1**, **p=0.5**, **p=0.9**: ``enable_conditionals=True``, ``if taken:`` (``taken =
  fn.random.coin_flip(probability=p, dtype=types.BOOL)``) ``images = branch(images, angle)``,
  no ``else`` (the other samples keep their image).

The branch: ``fn.rotate(angle=angle, keep_size=True)`` by the sample's angle (uniform in
±30°) then ``fn.gaussian_blur(window_size=5)``, which costs about 30 times the base pipeline.

Every pipeline runs with ``exec_async=False, exec_pipelined=False``: each ``run()`` computes its
batch when asked, so a pass's time is the work of its own batches. With the default executor a
contender would compute batches ahead in the background while the next contender is timed,
and one pass's work would leak into another's; the branch's cost is what is compared here, not
the overlap of batches. Each pipeline is built once, run twice untimed, and its outputs of the
last warm-up batch are checked (every sample: the branch's output where ``taken`` is true, the
input where it is false, against a pipeline without conditionals fed the same images and
angles); then ``--rounds`` rounds: in each, every contender runs ``--batches`` timed
``run()`` calls, one contender after the other, in an order rotated by one each round, so that
slow spells of a noisy machine fall on all of them alike.

The table: each contender's batches/s (median over rounds); for the conditional pipelines the
fraction of samples that took the branch (counted from ``taken`` over all timed batches: the
coin draws differently every batch, so the passes are long enough for it to average near p),
the branch cost ratio (t_p − t_base) / (t_always − t_base) with t the seconds per batch of the
same round (median over rounds), next to the target p + 0.05 (ratio / target below 1 meets
it), that ratio over the measured fraction (the cost of a sample in a branch against the
same sample without the ``if``: 1 is no overhead at all), and the plain ratio t_p / t_always.
The report goes to ``benchmarks/results/conditionals.md`` (``--out``). Nothing is asserted:
the figures are a shared 2-core machine's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from augkit import Pipeline, fn, pipeline_def, types
from benchmarks import machine as mc
from benchmarks import report as rp

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
DATA = ROOT / "data" / "images"
BATCH, SIZE, THREADS, SEED = 32, 300, 2, 1
ANGLE = 30.0
PROBABILITIES = (0.1, 0.5, 0.9)
EPSILON = 0.05  # the target of a branch taken with probability p: p + EPSILON
WARMUP = 2  # untimed batches per pipeline; the last one is checked
BASE, ALWAYS = "base", "always"


def label(p: float) -> str:
    return f"p={p:g}"


LABELS = (BASE, ALWAYS, *(label(p) for p in PROBABILITIES))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.conditionals", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds (median; 15)")
    parser.add_argument(
        "--batches", type=int, default=40, help="timed run() calls per contender per round (40)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=BATCH, help=f"samples per batch ({BATCH})"
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "conditionals.md", help="the Markdown report"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.batches < 1 or args.batch_size < 1:
        parser.error("need --rounds >= 1, --batches >= 1 and --batch-size >= 1")
    return args


def load_photos(count: int, data: Path = DATA, size: int = SIZE) -> list[np.ndarray]:
    """``count`` photos of ``data`` (cycled, in path order), each decoded and resized once to
    ``size`` × ``size`` (uint8 HWC)."""
    from PIL import Image

    files = sorted(p for p in data.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    if not files:
        raise FileNotFoundError(f"no JPEG under {data}")
    decoded = []
    for path in files[:count]:
        with Image.open(path) as image:
            decoded.append(np.asarray(image.convert("RGB").resize((size, size), Image.BILINEAR)))
    return [decoded[i % len(decoded)] for i in range(count)]


# --- the pipelines --------------------------------------------------------------------------


def branch(images, angle):
    """The augmentation: a rotation by the sample's angle, then a 5 × 5 Gaussian blur."""
    images = fn.rotate(images, angle=angle, keep_size=True, fill_value=0)
    return fn.gaussian_blur(images, window_size=5)


def _inputs(source: Callable[[], list[np.ndarray]], p: float):
    images = fn.external_source(source=source, batch=True, layout="HWC", no_copy=True)
    angle = fn.random.uniform(range=(-ANGLE, ANGLE))
    taken = fn.random.coin_flip(probability=p, dtype=types.BOOL)
    return images, angle, taken


@pipeline_def
def base_pipe(source):
    images, angle, taken = _inputs(source, 0.5)
    return images, angle, taken


@pipeline_def
def always_pipe(source):
    images, angle, taken = _inputs(source, 0.5)
    return branch(images, angle), angle, taken


@pipeline_def(enable_conditionals=True)
def conditional_pipe(source, p):
    images, angle, taken = _inputs(source, p)
    if taken:
        images = branch(images, angle)
    return images, angle, taken


@pipeline_def
def reference_pipe(source, angles):
    """The branch alone on given images and angles (no conditionals): the check's expectation."""
    images = fn.external_source(source=source, batch=True, layout="HWC")
    angle = fn.external_source(source=angles, batch=True)
    return branch(images, angle)


def make_pipe(name: str, photos: list[np.ndarray]) -> Pipeline:
    """The contender ``name`` (one of ``LABELS``), built, batch ``len(photos)``."""
    settings = dict(
        batch_size=len(photos),
        num_threads=THREADS,
        device_id=None,
        seed=SEED,
        exec_async=False,
        exec_pipelined=False,
    )

    def source() -> list[np.ndarray]:
        return photos

    if name == BASE:
        pipe = base_pipe(source, **settings)
    elif name == ALWAYS:
        pipe = always_pipe(source, **settings)
    else:
        pipe = conditional_pipe(source, float(name.removeprefix("p=")), **settings)
    pipe.build()
    return pipe


def expected(name: str, photos: list[np.ndarray], angles: np.ndarray, taken: np.ndarray):
    """What contender ``name`` must output for ``photos`` given its batch's angles and coins."""
    if name == BASE:
        return list(photos)
    pipe = reference_pipe(
        lambda: photos,
        lambda: [np.float32(a) for a in angles],
        batch_size=len(photos),
        num_threads=THREADS,
        device_id=None,
        seed=SEED,
        exec_async=False,
        exec_pipelined=False,
    )
    try:
        (out,) = pipe.run()
        augmented = [np.asarray(s) for s in out]
    finally:
        pipe.close()
    if name == ALWAYS:
        return augmented
    return [augmented[i] if taken[i] else photos[i] for i in range(len(photos))]


def check(name: str, outputs: Sequence, photos: list[np.ndarray]) -> None:
    """Raise RuntimeError unless ``outputs`` (one ``run()`` of contender ``name``) are the
    branch's output where ``taken`` is true and the input where it is false."""
    images, angles, taken = outputs
    angles = np.asarray([np.asarray(a) for a in angles], np.float32).reshape(-1)
    taken = np.asarray([np.asarray(t) for t in taken], bool).reshape(-1)
    want = expected(name, photos, angles, taken)
    bad = [
        i
        for i, (got, exp) in enumerate(zip(images, want, strict=True))
        if np.asarray(got).shape != exp.shape or not np.array_equal(np.asarray(got), exp)
    ]
    if bad:
        raise RuntimeError(
            f"{name}: samples {bad} are not what they should be (taken: "
            f"{[bool(taken[i]) for i in bad]})"
        )


# --- the timing -----------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    pipe: Pipeline
    seconds: dict[int, float] = field(default_factory=dict)  # per batch, by round
    taken: int = 0
    samples: int = 0

    @property
    def rate(self) -> float:
        """Batches/s, median over rounds."""
        return statistics.median(1.0 / s for s in self.seconds.values())

    @property
    def fraction(self) -> float:
        return self.taken / self.samples if self.samples else float("nan")


def time_pass(contender: Contender, batches: int, round_: int) -> None:
    """``batches`` timed ``run()`` calls; the coins are counted outside the timed calls."""
    total = 0.0
    for _ in range(batches):
        start = time.perf_counter()
        outputs = contender.pipe.run()
        total += time.perf_counter() - start
        contender.taken += sum(bool(np.asarray(t)) for t in outputs[2])
        contender.samples += len(outputs[2])
    contender.seconds[round_] = total / batches


def paired(
    contenders: dict[str, Contender], formula: Callable[[float, float, float], float]
) -> dict[str, float]:
    """Per conditional contender: the median over rounds of ``formula(t_p, t_base, t_always)``
    with the seconds per batch of the same round."""
    base, always = contenders[BASE], contenders[ALWAYS]
    result = {}
    for p in PROBABILITIES:
        c = contenders[label(p)]
        result[c.name] = statistics.median(
            formula(c.seconds[r], base.seconds[r], always.seconds[r]) for r in c.seconds
        )
    return result


def measure(args: argparse.Namespace, log: Callable[[str], None]) -> dict:
    photos = load_photos(args.batch_size)
    contenders = {}
    try:
        for name in LABELS:
            contenders[name] = Contender(name, make_pipe(name, photos))
        for c in contenders.values():
            for _ in range(WARMUP):
                outputs = c.pipe.run()
            check(c.name, outputs, photos)
        log(f"outputs checked; {args.rounds} rounds of {args.batches} batches per contender")
        meter = mc.CpuMeter()
        meter.start()
        order = list(contenders.values())
        for r in range(args.rounds):
            k = r % len(order)
            for c in order[k:] + order[:k]:
                time_pass(c, args.batches, r)
        share = meter.stop()
    finally:
        for c in contenders.values():
            c.pipe.close()
    return {
        "contenders": contenders,
        "branch": paired(contenders, lambda tp, tb, ta: (tp - tb) / (ta - tb)),
        "plain": paired(contenders, lambda tp, tb, ta: tp / ta),
        "share": share,
    }


def report(figures: dict, args: argparse.Namespace) -> str:
    contenders: dict[str, Contender] = figures["contenders"]
    branch_ratio, plain = figures["branch"], figures["plain"]
    rows = []
    for name, c in contenders.items():
        cells = [name, f"{c.rate:.1f}", f"{1e3 / c.rate:.1f}"]
        if name in (BASE, ALWAYS):
            cells[0] += " (no augmentation)" if name == BASE else " (the branch on every sample)"
            cells += [""] * 6
        else:
            target = float(name.removeprefix("p=")) + EPSILON
            ratio = branch_ratio[name]
            cells += [
                f"{c.fraction:.3f}",
                f"{ratio:.3f}",
                f"≤ {target:.2f}",
                f"{ratio / target:.2f}",
                f"{ratio / c.fraction:.2f}" if c.fraction else "–",
                f"{plain[name]:.3f}",
            ]
        rows.append(f"| {' | '.join(cells)} |")
    share = figures["share"]
    busy = (
        " (**a busy machine**: the absolute figures are low and spread; the paired ratios hold "
        "up better)"
        if share.others > 0.1
        else ""
    )
    p05 = label(0.5)
    verdict = "met" if branch_ratio[p05] <= 0.5 + EPSILON else "**missed**"
    lines = [
        "# The cost of a per-sample `if` (conditionals)",
        "",
        *mc.machine_info(ROOT, 4),
        f"- {args.batch_size} photos of `data/images` (cycled) decoded and resized to "
        f"{SIZE}×{SIZE} once, fed by `fn.external_source(no_copy=True)`; batch "
        f"{args.batch_size}, `num_threads={THREADS}`, `exec_async=False, exec_pipelined=False`; "
        f"the branch: `fn.rotate(angle=uniform(±{ANGLE:g}°), keep_size=True)` then "
        "`fn.gaussian_blur(window_size=5)`; every pipeline also draws the angle and the coin "
        "and returns them",
        f"- {args.rounds} round{'s' if args.rounds > 1 else ''} of {args.batches} batches per "
        "contender, the contenders in an "
        "order rotated by one each round; batches/s: median over rounds; ratios: median over "
        "rounds of the ratio within the round (`python -m benchmarks.conditionals`)",
        f"- during the rounds ({share.seconds:.0f} s): the benchmark used {share.tree:.0%} of "
        f"the machine's CPU time, other processes {share.others:.0%}{busy}",
        "",
        "| contender | batches/s | ms per batch | fraction taken | branch cost ratio "
        "(t_p − t_base) / (t_always − t_base) | target p + 0.05 | ratio / target | "
        "ratio / fraction | t_p / t_always |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        f"The issue's requirement, p=0.5 at most 0.55× of the branch on every sample: "
        f"{branch_ratio[p05]:.3f} ({verdict}). The fraction taken is counted over all "
        f"{args.rounds * args.batches * args.batch_size} timed samples of each conditional "
        "pipeline; ratio / fraction is the cost of a sample in the branch against the same "
        "sample without the `if` (1: the split and the merge cost nothing).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    figures = measure(args, rp.log)
    text = report(figures, args)
    rp.publish(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
