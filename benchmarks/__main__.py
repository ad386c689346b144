"""``python -m benchmarks``: time augkit, plain Python and a torch DataLoader side by side.

Every contender is set up and warmed up, then timed in rounds: each round times one pass of
every contender of every workload, in an order rotated by one each round, so slow spells of a
noisy machine fall on all of them alike. The table gives each contender's median images/s over
the rounds (with min–max), and its ratio to the plain-Python baseline: the median over rounds
of the ratio within the round. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from benchmarks import workloads as wl

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(__file__).resolve().parent / "_work"
DEFAULT_DATA = ROOT / "data" / "bench"
BENCH_SET_COUNT = 256
BENCH_SET_SEED = 0
ACCURACY_BAR = 0.5

# Cited, not measured here: ../shared/PERF_FACTS.md, "Pipelines" table (NVIDIA DALI 2.4, CPU,
# batch 32, 2 threads, the same kind of machine: 2 cores, no GPU). Its (a) ran two readers.
DALI_CITED = {"a": 448.0, "b": 261.0}
DALI_CITED_PLAIN = {"a": 219.0}  # plain Python, 1 process, in the same session as DALI


@dataclass
class Timing:
    """The passes of one contender: images/s per round, in round order."""

    rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Throughput of augkit, plain Python and a torch DataLoader, side by side.",
    )
    parser.add_argument(
        "--images",
        type=int,
        default=None,
        help="images per timed pass, a multiple of 64 (default 256; 128 with --quick)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed rounds (default 11; 3 with --quick)"
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed warm-up passes per contender (default 1)"
    )
    parser.add_argument("--quick", action="store_true", help="a ~30 s run: fewer, smaller passes")
    parser.add_argument(
        "--workloads", default="ab", help="which workloads: 'a', 'b' or 'ab' (default)"
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="benchmark set (default data/bench)"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="DataLoader worker processes (default 2)"
    )
    parser.add_argument(
        "--pillow-blocks-max",
        type=int,
        default=4,
        help="Image.core.set_blocks_max for every contender (default 4)",
    )
    parser.add_argument(
        "--out", type=Path, default=WORK / "results.md", help="where to write the Markdown table"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="afterwards, cProfile two passes of augkit (num_threads=1) per workload",
    )
    args = parser.parse_args(argv)
    if args.images is None:
        args.images = 128 if args.quick else 256
    if args.rounds is None:
        args.rounds = 3 if args.quick else 11
    if args.images < 64 or args.images % 64:
        parser.error("--images must be a positive multiple of 64 (one batch of pairs)")
    if args.rounds < 1 or args.warmup < 0 or args.workers < 1:
        parser.error("need --rounds >= 1, --warmup >= 0 and --workers >= 1")
    if not args.workloads or set(args.workloads) - {"a", "b"}:
        parser.error("--workloads takes 'a', 'b' or 'ab'")
    return args


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_bench_set(root: Path) -> None:
    """Create the benchmark set with ``data/make_bench_set.py`` when it is missing."""
    if root.is_dir() and any(root.glob("*/*.jp*g")):
        return
    log(f"creating the benchmark set in {root} ({BENCH_SET_COUNT} JPEGs, seed {BENCH_SET_SEED})")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "data" / "make_bench_set.py"),
            "--out",
            str(root),
            "--count",
            str(BENCH_SET_COUNT),
            "--seed",
            str(BENCH_SET_SEED),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def machine_info(blocks_max: int) -> list[str]:
    """Lines describing the machine and the library versions, for the report."""
    import numpy
    import PIL

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        nproc = str(len(os.sched_getaffinity(0)))
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return [
        f"- date: {dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- machine: `nproc` = {nproc}, {cpu}, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, numpy {numpy.__version__}, Pillow "
        f"{PIL.__version__} (blocks_max {blocks_max}), torch {torch_version}, augkit at "
        f"{commit or 'unknown commit'}",
    ]


def load_average() -> str:
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def make_contenders(args: argparse.Namespace, files: list[wl.BenchFile]) -> list[wl.Contender]:
    """Every contender of the chosen workloads, DataLoaders first (they fork workers, which is
    safest before augkit starts its threads)."""
    contenders: list[wl.Contender] = []
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
        log("torch is not installed: the DataLoader contender is skipped")
    for key in args.workloads:
        workload = wl.WORKLOADS[key]
        batches = args.images // workload.images_per_batch
        if have_torch:
            contenders.append(wl.TorchLoader(workload, batches, files, args.workers))
    for key in args.workloads:
        workload = wl.WORKLOADS[key]
        batches = args.images // workload.images_per_batch
        contenders.append(wl.PlainPython(workload, batches, files))
        for threads in (1, 2):
            contenders.append(wl.AugkitPipeline(workload, batches, args.data, threads))
    return contenders


def timed_pass(contender: wl.Contender) -> float:
    """Images/s of one pass."""
    gc.collect()
    start = time.perf_counter()
    images = contender.run_pass()
    return images / (time.perf_counter() - start)


def run_rounds(contenders: list[wl.Contender], rounds: int, warmup: int) -> dict[int, Timing]:
    """Warm every contender up, then time ``rounds`` round-robin rounds; timings by index."""
    for k in range(warmup):
        for contender in contenders:
            log(f"warm-up {k + 1}/{warmup}: ({contender.workload.key}) {contender.label}")
            timed_pass(contender)
    timings = {i: Timing() for i in range(len(contenders))}
    for r in range(rounds):
        start = time.perf_counter()
        order = [(r + j) % len(contenders) for j in range(len(contenders))]
        for i in order:
            timings[i].rates.append(timed_pass(contenders[i]))
        log(f"round {r + 1}/{rounds}: {time.perf_counter() - start:.1f} s")
    return timings


def paired_ratio(rates: list[float], baseline: list[float]) -> float:
    """Median over rounds of the rate divided by the baseline's rate in the same round."""
    return statistics.median(r / b for r, b in zip(rates, baseline, strict=True))


def render_table(
    contenders: list[wl.Contender], timings: dict[int, Timing], keys: str
) -> list[str]:
    """The Markdown table: one row per contender, two columns (img/s, × plain) per workload."""
    labels = list(dict.fromkeys(c.label for c in contenders))
    baseline = next(label for label in labels if label.startswith("plain Python"))
    labels.sort(key=lambda label: label != baseline)  # the baseline first, the others in order
    by_cell = {(c.label, c.workload.key): timings[i] for i, c in enumerate(contenders)}
    plain = {k: by_cell[(baseline, k)] for k in keys}
    header = "| contender |"
    rule = "|---|"
    for k in keys:
        header += f" ({k}) img/s, median (min–max) | ({k}) × plain |"
        rule += "---:|---:|"
    if keys == "ab":
        header += " (b) / (a) |"
        rule += "---:|"
    lines = [header, rule]
    for label in labels:
        row = f"| {label} |"
        for k in keys:
            t = by_cell[(label, k)]
            row += (
                f" {t.median:.0f} ({min(t.rates):.0f}–{max(t.rates):.0f}) |"
                f" {paired_ratio(t.rates, plain[k].rates):.2f}× |"
            )
        if keys == "ab":
            row += (
                f" {paired_ratio(by_cell[(label, 'b')].rates, by_cell[(label, 'a')].rates):.2f} |"
            )
        lines.append(row)
    row = "| NVIDIA DALI 2.4 CPU, 2 threads: **not measured here**, cited ¹ |"
    for k in keys:
        cited_plain = DALI_CITED_PLAIN.get(k)
        ratio = f"{DALI_CITED[k] / cited_plain:.2f}× ²" if cited_plain else "–"
        row += f" {DALI_CITED[k]:.0f} ¹ | {ratio} |"
    if keys == "ab":
        row += f" {DALI_CITED['b'] / DALI_CITED['a']:.2f} ¹ |"
    lines.append(row)
    return lines


def profile_augkit(args: argparse.Namespace) -> list[str]:
    """cProfile two passes of augkit with one thread per workload; the top functions."""
    lines = []
    for key in args.workloads:
        workload = wl.WORKLOADS[key]
        contender = wl.AugkitPipeline(
            workload, args.images // workload.images_per_batch, args.data, 1
        )
        contender.setup()
        contender.run_pass()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(2):
            contender.run_pass()
        profiler.disable()
        contender.close()
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(15)
        path = WORK / f"profile_{key}.txt"
        path.write_text(stream.getvalue())
        lines += [f"### cProfile, augkit num_threads=1, workload ({key}), by own time", ""]
        lines += ["```", *stream.getvalue().strip().splitlines()[:40], "```", ""]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    # The same Pillow block cache for every contender: this process, its augkit threads, and
    # (through the environment and worker_init_fn) the DataLoader's worker processes.
    os.environ["PILLOW_BLOCKS_MAX"] = str(args.pillow_blocks_max)
    Image.core.set_blocks_max(args.pillow_blocks_max)
    args.data = args.data.resolve()
    ensure_bench_set(args.data)
    files = wl.load_bench_set(args.data)
    mib = sum(len(f.data) for f in files) / 2**20
    log(f"{len(files)} JPEGs from {args.data} ({mib:.1f} MiB) in memory")
    load_before = load_average()

    log("accuracy: augkit (a) against plain Python, file by file")
    accuracy = wl.measure_accuracy(args.data, files, limit=64 if args.quick else None)

    contenders = make_contenders(args, files)
    for contender in contenders:
        contender.setup()
    try:
        timings = run_rounds(contenders, args.rounds, args.warmup)
    finally:
        for contender in contenders:
            contender.close()
    load_after = load_average()

    worst = (
        f"; worst file {accuracy.worst_file} at {accuracy.worst_file_mean:.3f}"
        if accuracy.worst_file_mean > 0
        else ""
    )
    verdict = "within" if accuracy.mean_abs_diff <= ACCURACY_BAR else "**ABOVE**"
    report = [
        "# augkit throughput, side by side",
        "",
        *machine_info(args.pillow_blocks_max),
        f"- data: {len(files)} JPEGs of `{_shown(args.data)}` (bytes in memory for the "
        f"baselines; augkit reads the files with `fn.readers.file`)",
        f"- batch 32; {args.images} images per timed pass; {args.warmup} warm-up pass(es), then "
        f"{args.rounds} rounds, contenders interleaved round-robin; load average "
        f"{load_before} before, {load_after} after",
        "",
        *render_table(contenders, timings, args.workloads),
        "",
        "img/s counts decoded-and-resized images (a batch of (b) is 32 pairs = 64 images). "
        "× plain: median over rounds of the ratio to the plain-Python pass of the same round.",
        "",
        '¹ not measured here: `../shared/PERF_FACTS.md` ("Pipelines" table), NVIDIA DALI 2.4 '
        "CPU, batch 32, 2 threads, measured elsewhere on the same kind of machine (2 cores, no "
        "GPU); its (a) ran two readers. ² ratio to the plain-Python figure of that same session "
        f"({DALI_CITED_PLAIN['a']:.0f} img/s), not to this run's.",
        "",
        f"Accuracy of augkit (a): mean |difference| to the plain-Python reference "
        f"{accuracy.mean_abs_diff:.3f} over {accuracy.files} files (bar: ≤ {ACCURACY_BAR}, "
        f"{verdict}){worst}; largest single difference {accuracy.max_abs_diff}.",
        "",
    ]
    if args.profile:
        report += profile_augkit(args)
    report.append(f"Run time: {time.perf_counter() - started:.0f} s.")
    text = "\n".join(report) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    log(f"written to {_shown(args.out)}")
    return 0 if accuracy.mean_abs_diff <= ACCURACY_BAR else 1


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
