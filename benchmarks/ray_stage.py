"""``python -m benchmarks.ray_stage``: ``augkit.ray.read_pipeline`` with 2 shards against the
same pipeline run in this process (issue 17's speed requirement: >= 0.8x on the tutorial
pipeline), and Ray's cost per pass and per batch.

The pipeline is workload (b) of the workloads' table (``benchmarks/workloads.py``: the
Python operators tutorial's pipeline): two shuffled ``fn.readers.file`` over ``data/bench``
(256 photos; ``data/images`` if it is missing), decode, resize to 300x300, and the tutorial's
``edit_images`` on the pairs as ``fn.python_function``; batch 32 pairs, seed 42; the readers get
``shard_id`` and ``num_shards``. Contenders, all on the same 2 cores:

- **in-process**: ``num_shards=1``, ``num_threads=2``, run by ``augkit.ray.datasource.
  read_shard`` (what a read task runs: build, then ``epoch("partial")`` per epoch, outputs as
  NumPy columns) in this process;
- **Ray, 2 shards x num_threads=1**: ``read_pipeline(num_shards=2, num_threads=1)``: two read
  tasks of 1 CPU each, side by side (as many threads as the in-process pipeline);
- **Ray, 2 shards x num_threads=2**: the same with ``num_threads=2``: each read task asks for
  2 CPUs (``augkit.ray``'s CPU rule), so Ray runs the shards one after the other.

A Ray pass makes a new dataset and iterates ``ds.iter_batches(batch_size=None,
batch_format="numpy")`` to its end (streaming: the blocks go through Ray's object store and are
read back in this process, as a training loop would read them); an in-process pass builds the
pipeline and reads its epochs. Both are timed from the start (the build, the dataset's planning
and its tasks' scheduling included) to the last batch. Ray is started once
(``augkit.ray.init_local(num_cpus=2)``) and warmed up: one untimed pass of every contender, so
that Ray's worker processes have imported augkit and torch before anything is timed.

Passes of two sizes (``--epochs``, default 1 and 3 epochs of the data set, 8 and 24 batches
of 32 pairs on ``data/bench``): a pass's seconds are fixed + batches x per-batch, and the two
sizes of the same round give both (the fixed cost per pass: the intercept; the per-batch time:
the slope). Each round times every contender at every size, in an order rotated by one each
round. The report: images/s (median over rounds, min-max), the ratio to in-process of the same
round and size (median over rounds), the fixed cost and the per-batch time, and Ray's overheads
(differences to in-process within the round, median over rounds). Nothing is asserted: the
figures are a shared 2-core machine's. The report goes to ``benchmarks/results/ray_stage.md``
(``--out``).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import machine as mc
from benchmarks import report as rp
from benchmarks import workloads as wl

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
BENCH = ROOT / "data" / "bench"
FALLBACK = ROOT / "data" / "images"
SHARDS = 2
RAY_CPUS = 2
TARGET = 0.8
NAMES = ["image1", "image2"]
IN_PROCESS = "in-process"


def ray_label(threads: int) -> str:
    return f"Ray, {SHARDS} shards × num_threads={threads}"


def tutorial_pipeline(
    shard_id: int = 0,
    num_shards: int = 1,
    *,
    root: str,
    num_threads: int,
    batch_size: int = wl.BATCH_SIZE,
    seed: int = wl.PIPELINE_SEED,
) -> Any:
    """Workload (b)'s pipeline (``workloads.define_pairs`` with ``edit_images``), not built,
    its two readers reading shard ``shard_id`` of ``num_shards``."""
    from augkit import pipeline_def

    pairs = pipeline_def(
        wl.define_pairs,
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=None,
        seed=seed,
    )
    reader = {"random_shuffle": True, "shard_id": shard_id, "num_shards": num_shards}
    return pairs(root, wl.WORKLOADS["b"].function, [reader, reader])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ray_stage", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (median; 5)")
    parser.add_argument(
        "--epochs",
        default="1,3",
        help="the pass sizes, in epochs of the data set, two or more (default 1,3)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=wl.BATCH_SIZE, help="pairs per batch (32)"
    )
    parser.add_argument(
        "--data", type=Path, default=None, help="the photos (default data/bench, else data/images)"
    )
    parser.add_argument(
        "--no-serial",
        action="store_true",
        help="leave out the 2 shards x num_threads=2 contender",
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "ray_stage.md", help="the Markdown report"
    )
    args = parser.parse_args(argv)
    try:
        args.epochs = sorted({int(e) for e in args.epochs.split(",")})
    except ValueError:
        parser.error("--epochs takes comma-separated ints, e.g. 1,3")
    if len(args.epochs) < 2 or args.epochs[0] < 1:
        parser.error("--epochs needs two or more sizes >= 1")
    if args.rounds < 1 or args.batch_size < 1:
        parser.error("need --rounds >= 1 and --batch-size >= 1")
    if args.data is None:
        args.data = BENCH if any(BENCH.glob("*/*.jp*g")) else FALLBACK
    return args


# --- the contenders --------------------------------------------------------------------------


@dataclass
class Contender:
    """One way of reading the pipeline; ``seconds[(round, epochs)]`` of each timed pass."""

    label: str
    threads: int
    ray: bool
    seconds: dict[tuple[int, int], float] = field(default_factory=dict)
    images: dict[int, int] = field(default_factory=dict)  # by epochs

    def run_pass(self, args: argparse.Namespace, epochs: int) -> tuple[int, float]:
        """Read ``epochs`` epochs; returns (images, seconds)."""
        kwargs = {"root": str(args.data), "num_threads": self.threads}
        kwargs["batch_size"] = args.batch_size
        rows = 0
        start = time.perf_counter()
        if self.ray:
            import augkit.ray

            ds = augkit.ray.read_pipeline(
                tutorial_pipeline,
                num_shards=SHARDS,
                output_names=NAMES,
                epochs=epochs,
                **kwargs,
            )
            for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
                rows += len(batch[NAMES[0]])
        else:
            from augkit.ray.datasource import read_shard

            for columns in read_shard(tutorial_pipeline, 0, 1, NAMES, epochs, kwargs):
                rows += len(columns[NAMES[0]])
        return rows * len(NAMES), time.perf_counter() - start


def make_contenders(args: argparse.Namespace) -> list[Contender]:
    contenders = [
        Contender(IN_PROCESS, wl.NUM_THREADS, ray=False),
        Contender(ray_label(1), 1, ray=True),
    ]
    if not args.no_serial:
        contenders.append(Contender(ray_label(2), 2, ray=True))
    return contenders


def quiet_ray_data() -> None:
    """No progress bars or per-dataset log lines from Ray Data (Ray must be started)."""
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    if hasattr(context, "print_on_execution_start"):
        context.print_on_execution_start = False
    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.ERROR)


def measure(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    import augkit.ray

    contenders = make_contenders(args)
    started = time.perf_counter()
    running = sys.modules.get("ray")
    own = running is None or not running.is_initialized()  # a test may have started one
    if own:
        augkit.ray.init_local(num_cpus=RAY_CPUS)
    try:
        quiet_ray_data()
        init_seconds = time.perf_counter() - started if own else None
        warmup = {}
        for c in contenders:  # untimed: Ray's workers import augkit and torch
            warmup[c.label] = c.run_pass(args, args.epochs[0])[1]
        log(f"Ray warmed up; {args.rounds} rounds")
        meter = mc.CpuMeter()
        meter.start()
        passes = [(c, e) for e in args.epochs for c in contenders]
        for r in range(args.rounds):
            k = r % len(passes)
            for c, epochs in passes[k:] + passes[:k]:
                images, seconds = c.run_pass(args, epochs)
                c.seconds[(r, epochs)] = seconds
                c.images[epochs] = images
            log(f"round {r + 1}/{args.rounds} done")
        share = meter.stop()
    finally:
        if own:
            augkit.ray.shutdown_local()
    return {"contenders": contenders, "share": share, "init": init_seconds, "warmup": warmup}


# --- the figures -----------------------------------------------------------------------------


def batches_per_pass(args: argparse.Namespace, images: int) -> float:
    """Pipeline batches in a pass of ``images`` images (the last one of a shard may be short:
    counted as a fraction)."""
    return images / len(NAMES) / args.batch_size


def fit(c: Contender, r: int, args: argparse.Namespace) -> tuple[float, float]:
    """(fixed seconds per pass, seconds per batch) of round ``r``: the least-squares line through
    the round's passes (seconds against batches)."""
    xs = [batches_per_pass(args, c.images[e]) for e in args.epochs]
    ys = [c.seconds[(r, e)] for e in args.epochs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - slope * mx, slope


def rate(c: Contender, r: int, epochs: int) -> float:
    return c.images[epochs] / c.seconds[(r, epochs)]


def figures(contenders: list[Contender], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per contender: img/s per size (median, min, max), ratio to in-process per size, fixed
    cost and per-batch time, and their differences to in-process (medians over rounds)."""
    base = contenders[0]
    out: dict[str, dict[str, Any]] = {}
    for c in contenders:
        rounds = sorted({r for r, _ in c.seconds})
        fits = {r: fit(c, r, args) for r in rounds}
        base_fits = {r: fit(base, r, args) for r in rounds}
        row: dict[str, Any] = {"rates": {}, "ratios": {}}
        for e in args.epochs:
            rates = [rate(c, r, e) for r in rounds]
            row["rates"][e] = (statistics.median(rates), min(rates), max(rates))
            row["ratios"][e] = statistics.median(rate(c, r, e) / rate(base, r, e) for r in rounds)
        row["fixed"] = statistics.median(f[0] for f in fits.values())
        row["per_batch"] = statistics.median(f[1] for f in fits.values())
        row["fixed_over"] = statistics.median(fits[r][0] - base_fits[r][0] for r in rounds)
        row["batch_over"] = statistics.median(fits[r][1] - base_fits[r][1] for r in rounds)
        out[c.label] = row
    return out


def report(result: dict[str, Any], args: argparse.Namespace) -> str:
    contenders: list[Contender] = result["contenders"]
    table = figures(contenders, args)
    largest = args.epochs[-1]
    sizes = [f"{e} epoch{'s' if e > 1 else ''}" for e in args.epochs]
    head = ["contender"]
    for size in sizes:
        head += [f"img/s, {size}", f"× in-process, {size}"]
    head += [
        "fixed s/pass",
        "ms/batch",
        "Ray's fixed cost, s/pass",
        "Ray's overhead, ms/batch",
    ]
    rows = []
    for c in contenders:
        row = table[c.label]
        cells = [c.label]
        for e in args.epochs:
            median, low, high = row["rates"][e]
            cells.append(f"{median:.0f} ({low:.0f}–{high:.0f})")
            cells.append("1.00" if c.label == IN_PROCESS else f"{row['ratios'][e]:.2f}")
        cells += [f"{row['fixed']:.2f}", f"{1e3 * row['per_batch']:.1f}"]
        if c.label == IN_PROCESS:
            cells += ["", ""]
        else:
            cells += [f"{row['fixed_over']:+.2f}", f"{1e3 * row['batch_over']:+.1f}"]
        rows.append(f"| {' | '.join(cells)} |")
    share = result["share"]
    busy = (
        " (**a busy machine**: the absolute figures are low and spread; the paired ratios hold "
        "up better)"
        if share.others > 0.1
        else ""
    )
    parallel = table[ray_label(1)]["ratios"][largest]
    verdict = "met" if parallel >= TARGET else "**missed**"
    images = contenders[0].images
    data_files = round(images[args.epochs[0]] / len(NAMES) / args.epochs[0])
    lines = [
        "# `read_pipeline` against the same pipeline in-process (issue 17)",
        "",
        *mc.machine_info(ROOT, 4),
        f"- the tutorial pipeline (workload (b)): two shuffled readers over {data_files} photos "
        f"of `{rp.shown(args.data)}`, decode, resize to 300×300, `edit_images` as "
        f"`fn.python_function`; batch {args.batch_size} pairs; img/s counts images (2 per "
        f"pair); passes of {', '.join(sizes)} ({', '.join(str(images[e]) for e in args.epochs)} "
        "images)",
        f"- in-process: `num_threads={wl.NUM_THREADS}`, one shard, run by `read_shard` (what a "
        f"read task runs) in this process; Ray: `init_local(num_cpus={RAY_CPUS})` once, "
        f"`read_pipeline(num_shards={SHARDS})` made anew every pass and read to its end with "
        '`iter_batches(batch_size=None, batch_format="numpy")`; every pass timed from the '
        "start (build, planning, scheduling) to its last batch",
        (
            f"- Ray started in {result['init']:.1f} s"
            if result["init"] is not None
            else "- Ray started before (by the caller)"
        )
        + "; one untimed pass per contender first, so that Ray's workers have imported "
        "augkit and torch (its seconds: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in result["warmup"].items())
        + ")",
        f"- {args.rounds} round{'s' if args.rounds > 1 else ''}, each timing every contender "
        "at every size in an order rotated by one each round; img/s: median over rounds "
        "(min–max); × in-process: median over rounds of the ratio within the round "
        "(`python -m benchmarks.ray_stage`)",
        f"- during the rounds ({share.seconds:.0f} s): the benchmark (with Ray's processes) "
        f"used {share.tree:.0%} of the machine's CPU time, other processes {share.others:.0%}"
        f"{busy}",
        "",
        f"| {' | '.join(head)} |",
        "| --- |" + " ---: |" * (len(head) - 1),
        *rows,
        "",
        f"The issue's requirement, `read_pipeline` with {SHARDS} shards at least {TARGET}× of "
        f"the same pipeline in-process on the tutorial pipeline: {parallel:.2f}× on passes of "
        f"{sizes[-1]} ({ray_label(1)}: {verdict}).",
        "",
        "Fixed s/pass and ms/batch: the line through each round's passes of different sizes "
        "(seconds against batches of 32 pairs; its intercept and slope), median over rounds. "
        "Ray's fixed cost and overhead: the contender's intercept and slope minus in-process's "
        "of the same round, median over rounds (a negative overhead per batch: Ray's two "
        "processes did a batch's work faster than one process's two threads).",
        "",
    ]
    if ray_label(2) in table:
        lines += [
            f"{ray_label(2)}: each read task asks for {RAY_CPUS} CPUs (the CPU rule of "
            "`augkit.ray`), so the two shards run one after the other, each on two threads.",
            "",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    try:
        import ray.data  # noqa: F401
    except ImportError:
        rp.log("Ray is not installed (pip install 'augkit[ray]'): the Ray stage is not measured")
        return 0
    result = measure(args, rp.log)
    text = report(result, args)
    rp.publish(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
