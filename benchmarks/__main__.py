"""``python -m benchmarks``: augkit, NVIDIA DALI (CPU), plain Python, a torch DataLoader and
a bound (augkit's kernels on the same threads, no pipeline), side by side in one run.

Every contender is set up and warmed up, then timed in rounds: each round times one pass of
every contender of every workload, in an order rotated by one each round, so slow spells of a
noisy machine fall on all of them alike. The table gives each contender's median images/s over
the rounds (with min–max), and its ratios to DALI and to plain Python: the median over rounds
of the ratio within the round. DALI runs in a subprocess of its own venv (``dali.py``). After
the rounds, the first-run latency is measured in fresh processes (``first_run.py``). Then the
per-operator table (``operators.py``): augkit, DALI CPU and Albumentations operator by operator
on 320×320 photos (``--only operators`` runs it alone, ``--only workloads`` leaves it out). See
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from benchmarks import dali
from benchmarks import first_run as fr
from benchmarks import machine as mc
from benchmarks import operators as ops
from benchmarks import report as rp
from benchmarks import workloads as wl

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
RESULTS = HERE / "results"
DEFAULT_DATA = ROOT / "data" / "bench"
BENCH_SET_COUNT = 256
BENCH_SET_SEED = 0
ACCURACY_BAR = 0.5
BUSY_AFTER_LIMIT = 0.1  # cores a contender may keep busy after its pass (noise: ~0.02)
OVERHEAD_SIZE = 16  # float32 elements per sample of the python_function overhead pipeline

# Cited for reference: ../shared/PERF_FACTS.md, "Pipelines" table (DALI 2.4 CPU, measured in
# another session on the same kind of machine).
DALI_CITED = {"a": 448.0, "b": 261.0}

# Issue 3's targets (ratios in one run on the 2-core machine).
TARGETS = {"a": 3.0, "b": 2.3, "c": 1.7, "scaling": 1.7, "overhead_us": 50.0}
# Issue 4's target: debug mode against the normal pipeline, same threads, on (b).
DEBUG_TARGET = 0.7
DEBUG_WORKLOAD = "b"
# Issue 11's targets: augkit's default against the bound (its own kernels on the same threads,
# no pipeline) on (a) and (b); the per-sample framework overhead (the "without python_function"
# figure of the overhead pipeline); the first run() after build() in a fresh process.
BOUND_TARGET = 0.9
FRAMEWORK_OVERHEAD_TARGET_US = 5.0
FIRST_RUN_TARGET_S = 0.3
# The bound must compute what augkit's pipeline does: at most this many levels on any pixel
# (the same kernels give 0; more means a different kernel or path, named in the report).
BOUND_TOLERANCE = 2


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Throughput of augkit, DALI (CPU), plain Python and a torch DataLoader, "
        "side by side.",
    )
    parser.add_argument(
        "--images",
        type=int,
        default=None,
        help="images timed per pass, a multiple of 128: an even number of batches of 32 "
        "pairs (default 256; 128 with --quick)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed rounds (default 11; 3 with --quick)"
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed warm-up passes per contender (default 1)"
    )
    parser.add_argument("--quick", action="store_true", help="a ~1 minute run: fewer, smaller")
    parser.add_argument(
        "--workloads", default="abc", help="which workloads, e.g. 'a' or 'bc' (default 'abc')"
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="benchmark set (default data/bench)"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="DataLoader worker processes (default 2)"
    )
    parser.add_argument(
        "--py-workers",
        type=int,
        default=2,
        help="py_num_workers of the second augkit contender (default 2)",
    )
    parser.add_argument(
        "--pillow-blocks-max",
        type=int,
        default=4,
        help="Image.core.set_blocks_max for every Pillow contender (default 4)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the Markdown report; the chart goes next to it as throughput.png (default "
        "benchmarks/results/results.md for a full run, benchmarks/_work/results.md with "
        "--quick, --profile or a subset of --workloads)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="afterwards, cProfile two passes of augkit (num_threads=1) per workload",
    )
    parser.add_argument(
        "--first-runs",
        type=int,
        default=3,
        help="fresh processes per mode for the first-run latency (default 3; 0: not measured)",
    )
    parser.add_argument("--no-dali", action="store_true", help="leave DALI out")
    parser.add_argument(
        "--dali-venv",
        type=Path,
        default=WORK / "dali-venv",
        help="the venv DALI is installed into and run from (default benchmarks/_work/dali-venv)",
    )
    parser.add_argument(
        "--dali-sync",
        action="store_true",
        help="also time DALI with the tutorial's exec_async=False, exec_pipelined=False",
    )
    parser.add_argument(
        "--only",
        choices=(
            "all",
            "workloads",
            "operators",
            "iterator",
            "targets",
            "viewer",
            "conditionals",
            "ray",
            "gpu",
        ),
        default="all",
        help="what to run: the workloads' table, the per-operator table, the PyTorch "
        "iterator's cost (benchmarks/iterator.py), images with their targets "
        "(benchmarks/targets.py), the viewer's speed (benchmarks/viewer.py), the cost of a "
        "per-sample if (benchmarks/conditionals.py), read_pipeline against the same pipeline "
        "in-process (benchmarks/ray_stage.py), or all of them (default); gpu (augkit on the GPU "
        "against the CPU, benchmarks/gpu.py) runs only when asked for",
    )
    parser.add_argument(
        "--ops",
        default=None,
        help="the per-operator table's operators, comma-separated DALI names (default: all)",
    )
    parser.add_argument(
        "--op-rounds",
        type=int,
        default=None,
        help="rounds of the per-operator table (default 3; 1 with --quick)",
    )
    parser.add_argument(
        "--op-batches",
        type=int,
        default=None,
        help="timed batches of 32 per pass of the per-operator table (default 8; 2 with --quick)",
    )
    parser.add_argument(
        "--op-seconds",
        type=float,
        default=1.0,
        help="a pass of the per-operator table stops timing after the batch that ends past "
        "this many seconds (at least one batch; default 1.0)",
    )
    parser.add_argument(
        "--op-warmup",
        type=int,
        default=None,
        help="untimed warm-up passes per contender of the per-operator table (default 1; 0 "
        "with --quick)",
    )
    parser.add_argument(
        "--ops-out",
        type=Path,
        default=None,
        help="the per-operator report (default benchmarks/results/operators.md for a full run "
        "of every operator, benchmarks/_work/operators.md otherwise)",
    )
    args = parser.parse_args(argv)
    if args.op_rounds is None:
        args.op_rounds = 1 if args.quick else 3
    if args.op_batches is None:
        args.op_batches = 2 if args.quick else 8
    if args.op_warmup is None:
        args.op_warmup = 0 if args.quick else 1
    if args.op_rounds < 1 or args.op_batches < 1 or args.op_warmup < 0 or args.op_seconds <= 0:
        parser.error(
            "need --op-rounds >= 1, --op-batches >= 1, --op-warmup >= 0 and --op-seconds > 0"
        )
    try:
        args.op_pairs = ops.select(args.ops)
    except ValueError as exc:
        parser.error(str(exc))
    if args.ops_out is None:
        official = not args.quick and args.ops is None and args.op_rounds >= 3
        args.ops_out = (RESULTS if official else WORK) / "operators.md"
    if args.images is None:
        args.images = 128 if args.quick else 256
    if args.rounds is None:
        args.rounds = 3 if args.quick else 11
    if args.images < 128 or args.images % 128:
        # Two workers (or two iterations in flight) deliver batches in pairs: timing from one
        # delivery to another, an even number of batches apart, measures their steady rate.
        parser.error("--images must be a positive multiple of 128 (two batches of 32 pairs)")
    if args.rounds < 1 or args.warmup < 0 or args.workers < 1 or args.py_workers < 1:
        parser.error("need --rounds >= 1, --warmup >= 0, --workers >= 1 and --py-workers >= 1")
    if args.first_runs < 0:
        parser.error("need --first-runs >= 0")
    if not args.workloads or set(args.workloads) - set(wl.WORKLOADS):
        parser.error("--workloads takes letters among 'abc'")
    args.workloads = "".join(k for k in wl.WORKLOADS if k in args.workloads)
    if args.out is None:
        official = not args.quick and not args.profile and args.workloads == "abc"
        args.out = (RESULTS if official else WORK) / "results.md"
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


def start_dali(args: argparse.Namespace) -> tuple[dali.DaliRunner | None, str | None]:
    """DALI's runner, or None and the reason it is not available."""
    if args.no_dali:
        return None, "left out with --no-dali"
    try:
        python = dali.ensure_dali_venv(args.dali_venv.resolve(), log)
        runner = dali.DaliRunner(python, WORK / "dali-runner.stderr.txt")
    except dali.DaliUnavailable as exc:
        log(f"DALI is not available, going on without it: {exc}")
        return None, str(exc).split("; last lines")[0].splitlines()[0]
    log(
        f"DALI {runner.version} runner started: CUDA devices {runner.hello['cuda_devices']}, "
        f"libcuda loaded: {runner.hello['libcuda_loaded']}"
    )
    return runner, None


def make_loaders(args: argparse.Namespace, files: list[wl.BenchFile]) -> list[wl.Contender]:
    """The torch DataLoaders, set up already: their workers are forked (with one untimed
    epoch) before anything else starts threads or processes (DALI's runner, augkit)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        log("torch is not installed: the DataLoader contender is skipped")
        return []
    batches = args.images // (wl.BATCH_SIZE * 2)
    loaders: list[wl.Contender] = []
    for key in args.workloads:
        loader = wl.TorchLoader(wl.WORKLOADS[key], batches, files, args.workers)
        log(f"starting ({key}) {loader.label}")
        loader.setup()
        loaders.append(loader)
    return loaders


def make_contenders(
    args: argparse.Namespace, files: list[wl.BenchFile], runner: dali.DaliRunner | None
) -> list[wl.Contender]:
    """DALI's, plain Python's and augkit's contenders of the chosen workloads (not set up)."""
    contenders: list[wl.Contender] = []
    batches = args.images // (wl.BATCH_SIZE * 2)
    for key in args.workloads:
        workload = wl.WORKLOADS[key]
        if runner is not None:
            contenders.append(dali.DaliPipeline(workload, batches, args.data, runner))
            if args.dali_sync:
                contenders.append(dali.DaliPipeline(workload, batches, args.data, runner, "sync"))
        contenders.append(wl.PlainPython(workload, batches, files))
        if key in wl.BOUND_WORKLOADS:
            # Issue 11: augkit's own kernels on the same threads, no pipeline.
            contenders.append(wl.KernelBound(workload, batches, args.data))
        contenders.append(wl.AugkitPipeline(workload, batches, args.data))
        contenders.append(
            wl.AugkitPipeline(workload, batches, args.data, py_num_workers=args.py_workers)
        )
        if key == "c" and one_worker_label() != "augkit, default" and args.py_workers != 1:
            # Worker scaling 1 -> 2 needs a one-worker point, which the default is not.
            contenders.append(wl.AugkitPipeline(workload, batches, args.data, py_num_workers=1))
        if key == DEBUG_WORKLOAD:
            # Issue 4: debug mode, and the synchronous normal pipeline (no prefetching, which
            # debug mode cannot do either) as its second point of comparison.
            for settings in (wl.DEBUG_SETTINGS, wl.SYNC_SETTINGS):
                contenders.append(
                    wl.AugkitPipeline(workload, batches, args.data, settings=settings)
                )
    return contenders


def debug_labels() -> tuple[str, str]:
    """The labels of the debug-mode contender and of the synchronous normal one."""
    return tuple(  # type: ignore[return-value]
        wl.AugkitPipeline(wl.WORKLOADS[DEBUG_WORKLOAD], 1, ROOT, settings=s).label
        for s in (wl.DEBUG_SETTINGS, wl.SYNC_SETTINGS)
    )


def render_debug_mode(results: rp.Results) -> list[str]:
    """Issue 4's measurement: debug mode's paired ratios to augkit's default (which prefetches
    in the background) and to the synchronous normal pipeline, on workload (b)."""
    key = DEBUG_WORKLOAD
    if key not in results.keys:
        return [f"Not measured: workload ({key}) was not run."]
    debug_label, sync_label = debug_labels()
    debug = results.get(debug_label, key)
    if debug is None:
        cell = results.cells.get((debug_label, key))
        return [f"Not measured: {debug_label} failed ({cell.failed if cell else 'not run'})."]
    lines = []
    for label, note in (
        ("augkit, default", "prefetches batches in the background, which debug mode cannot"),
        (sync_label, "no prefetching either: the same work, one batch at a time"),
    ):
        ratio = debug.ratio(results.get(label, key))
        if ratio is None:
            lines.append(f"- against {label}: not measured")
            continue
        verdict = "met" if ratio >= DEBUG_TARGET else "**missed**"
        lines.append(
            f"- against {label} ({note}): {ratio:.2f}× (target ≥ {DEBUG_TARGET}×: {verdict})"
        )
    return [
        f"({key}) with `debug=True` (the definition runs again on every `run()`), "
        f"`num_threads={wl.NUM_THREADS}` like the others; {debug.median:.0f} img/s. Paired "
        "ratios (median over rounds of the ratio within the round):",
        "",
        *lines,
    ]


def describe(exc: BaseException) -> str:
    """A one-line account of an exception, for the table and the log."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}".rstrip(": ")[:160]


def one_worker_label() -> str:
    """The contender that is the one-worker point of the scaling: augkit's default when its
    ``py_num_workers`` defaults to 1 (DALI's default too), else an explicit one."""
    if wl.augkit_default_py_num_workers() == 1:
        return "augkit, default"
    return "augkit, py_num_workers=1"


def timed_pass(contender: wl.Contender) -> float:
    """Images/s of one pass."""
    gc.collect()
    return contender.run_pass().rate


def set_up(contenders: list[wl.Contender], timings: dict[int, rp.Timing], only: set[int]) -> None:
    """Set up the contenders ``only`` lists; one that raises is marked failed."""
    for i in sorted(only):
        try:
            contenders[i].setup()
        except Exception as exc:
            timings[i].failed = describe(exc)
            log(f"({contenders[i].workload.key}) {contenders[i].label}: set-up failed: {exc}")


def run_rounds(
    contenders: list[wl.Contender], timings: dict[int, rp.Timing], rounds: int, warmup: int
) -> mc.CpuShare:
    """Warm every contender up, then time ``rounds`` round-robin rounds into ``timings`` (by
    index). A contender that raises is marked failed and left out of the later rounds. Returns
    who used the CPUs during the rounds."""

    def attempt(i: int, round_number: int | None) -> None:
        contender = contenders[i]
        try:
            rate = timed_pass(contender)
        except Exception as exc:
            timings[i].failed = describe(exc)
            log(f"({contender.workload.key}) {contender.label} failed: {timings[i].failed}")
            return
        if round_number is not None:
            timings[i].rates[round_number] = rate

    for k in range(warmup):
        for i, contender in enumerate(contenders):
            if timings[i].failed is None:
                log(f"warm-up {k + 1}/{warmup}: ({contender.workload.key}) {contender.label}")
                attempt(i, None)
                # A pass must leave the CPUs idle, or it slows the next contender down.
                timings[i].busy_after = max(timings[i].busy_after, mc.busy_after())
                if timings[i].busy_after > BUSY_AFTER_LIMIT:
                    log(f"  still busy after its pass: {timings[i].busy_after:.2f} cores")
    overall, meter = mc.CpuMeter(), mc.CpuMeter()
    overall.start()
    for r in range(rounds):
        meter.start()
        order = [(r + j) % len(contenders) for j in range(len(contenders))]
        for i in order:
            if timings[i].failed is None:
                attempt(i, r)
        share = meter.stop()
        log(
            f"round {r + 1}/{rounds}: {share.seconds:.1f} s; CPU: benchmark {share.tree:.0%}, "
            f"other processes {share.others:.0%}, stolen {share.stolen:.0%}"
        )
    return overall.stop()


def measure_overheads(
    args: argparse.Namespace, runner: dali.DaliRunner | None
) -> tuple[float, list[wl.Overhead], list[str]]:
    """The direct call's cost and the per-sample overheads of python_function (augkit default,
    augkit with workers, DALI); failures as lines."""
    batches = 50 if args.quick else 200
    direct = wl.measure_direct_call(OVERHEAD_SIZE)
    results, failures = [], []
    for label, workers in (
        ("augkit, default", None),
        (f"augkit, py_num_workers={args.py_workers}", args.py_workers),
    ):
        try:
            results.append(wl.measure_augkit_overhead(label, batches, OVERHEAD_SIZE, workers))
        except Exception as exc:
            failures.append(f"- {label}: failed ({describe(exc)})")
    if runner is not None:
        try:
            results.append(runner.overhead(batches, OVERHEAD_SIZE))
        except dali.DaliUnavailable as exc:
            failures.append(f"- DALI: failed ({exc})")
    return direct, results, failures


def render_overheads(direct: float, overheads: list[wl.Overhead], failures: list[str]) -> list[str]:
    lines = [
        "| pipeline | without python_function, µs/sample | with, µs/sample | "
        "python_function, µs/sample | over a direct call, µs/sample |",
        "|---|---:|---:|---:|---:|",
    ]
    for o in overheads:
        lines.append(
            f"| {o.label} | {o.without_us:.1f} | {o.with_us:.1f} | {o.overhead_us:.1f} | "
            f"{o.overhead_us - direct:.1f} |"
        )
    return [*lines, *(["", *failures] if failures else [])]


def verdict(value: float | None, target: float, higher_is_better: bool = True) -> str:
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "met" if ok else "**missed**"


def render_targets(
    results: rp.Results,
    overheads: list[wl.Overhead],
    direct: float,
    workers_label: str,
    scaling: wl.Scaling | None,
) -> list[str]:
    """Issue 3's targets against this run's ratios."""
    lines = []
    dali_label = results.dali_label
    # Issue 3's targets are about augkit's default and its workers, not the debug-mode rows.
    augkit_labels = [
        lab for lab in results.labels if lab.startswith("augkit") and lab not in debug_labels()
    ]
    for key, name in (("a", "(a)"), ("b", "(b)")):
        if key not in results.keys:
            continue
        best_label, best = None, None
        for label in augkit_labels:
            timing = results.get(label, key)
            ratio = timing.ratio(results.get(dali_label, key)) if timing else None
            if ratio is not None and (best is None or ratio > best):
                best_label, best = label, ratio
        shown = "–" if best is None else f"{best:.2f}× ({best_label})"
        lines.append(
            f"- {name} augkit ≥ {TARGETS[key]}× DALI CPU: {shown}: {verdict(best, TARGETS[key])}"
        )
    if scaling is not None:
        lines.append(
            f"- (c) worker scaling, 1 → 2 worker processes ≥ {TARGETS['scaling']}×: "
            f"{scaling.ratio:.2f}× ((c)'s function alone, parallel='processes': "
            f"{scaling.one_ms:.1f} → {scaling.two_ms:.1f} ms per batch of 32 pairs): "
            f"{verdict(scaling.ratio, TARGETS['scaling'])}"
        )
    if "c" in results.keys:
        two = results.get(workers_label, "c")
        vs_dali = two.ratio(results.get(dali_label, "c")) if two else None
        shown = "–" if vs_dali is None else f"{vs_dali:.2f}×"
        lines.append(
            f"- (c) augkit with workers ≥ {TARGETS['c']}× DALI CPU: {shown} ({workers_label}): "
            f"{verdict(vs_dali, TARGETS['c'])}"
        )
    default = next((o for o in overheads if o.label == "augkit, default"), None)
    over = None if default is None else default.overhead_us - direct
    shown = "–" if over is None else f"{over:.1f} µs"
    lines.append(
        f"- python_function overhead per sample ≤ {TARGETS['overhead_us']:.0f} µs over a direct "
        f"call: {shown} (augkit, default): {verdict(over, TARGETS['overhead_us'], False)}"
    )
    return lines


def bound_differs(checks: list[wl.BoundCheck]) -> bool:
    return any(c.max_abs_diff > BOUND_TOLERANCE for c in checks)


def render_issue11_targets(
    results: rp.Results,
    overheads: list[wl.Overhead],
    checks: list[wl.BoundCheck],
    first: fr.FirstRuns | None,
) -> list[str]:
    """Issue 11's targets: augkit's default against the bound, the per-sample framework
    overhead beside DALI's, the first run() after build()."""
    lines = []
    caveat = (
        " (**the bound's output differs from augkit's**: see the bound's section)"
        if bound_differs(checks)
        else ""
    )
    for key in results.bound_keys():
        default = results.get("augkit, default", key)
        bound = results.get(results.bound_label, key)
        ratio = default.ratio(bound) if default else None
        shown = (
            "–"
            if ratio is None or default is None or bound is None
            else f"{ratio:.2f}× ({default.median:.0f} against {bound.median:.0f} img/s)"
        )
        lines.append(
            f"- ({key}) augkit, default ≥ {BOUND_TARGET}× bound: {shown}{caveat}: "
            f"{verdict(ratio, BOUND_TARGET)}"
        )
    default_o = next((o for o in overheads if o.label == "augkit, default"), None)
    dali_o = next((o for o in overheads if "DALI" in o.label), None)
    ours = None if default_o is None else default_o.without_us
    if ours is None:
        shown = "–"
    else:
        shown = f"{ours:.1f} µs/sample (augkit, default)"
        if dali_o is not None:
            shown += (
                f"; {dali_o.label} {dali_o.without_us:.1f} µs/sample, augkit at "
                f"{ours / dali_o.without_us:.1f}× DALI's"
            )
        else:
            shown += "; DALI's: not measured"
    lines.append(
        f"- per-sample framework overhead (`fn.random.uniform(shape=[{OVERHEAD_SIZE}])`, batch "
        f"{wl.BATCH_SIZE}) ≤ {FRAMEWORK_OVERHEAD_TARGET_US:.0f} µs/sample: {shown}: "
        f"{verdict(ours, FRAMEWORK_OVERHEAD_TARGET_US, False)}"
    )
    first_run = None if first is None else first.median("build", "first_run")
    runs = "" if first is None else f" (median of {len(first.values('build', 'first_run'))} "
    shown = "–" if first_run is None else f"{first_run:.2f} s{runs}fresh processes)"
    lines.append(
        f"- first `run()` after `build()` (decode + resize, batch {wl.BATCH_SIZE}, "
        f"`num_threads={wl.NUM_THREADS}`) ≤ {FIRST_RUN_TARGET_S} s: {shown}: "
        f"{verdict(first_run, FIRST_RUN_TARGET_S, False)}"
    )
    return lines


def render_bound(
    results: rp.Results,
    kernels: wl.BoundKernels | None,
    checks: list[wl.BoundCheck],
    check_failures: list[str],
) -> list[str]:
    """What the bound runs, and its check against augkit's pipeline."""
    keys = results.bound_keys()
    if not keys:
        return ["Not measured: neither (a) nor (b) was run."]
    kernels_line = (
        f"The kernels: {kernels.description}." if kernels else "The kernels: not available."
    )
    lines = [
        f"`{wl.BOUND_LABEL}` on {', '.join(f'({k})' for k in keys)}: augkit's decode and "
        f"resize kernels called directly on a `ThreadPoolExecutor` of {wl.NUM_THREADS} threads; "
        "each task reads one pair of files from disk (`np.fromfile`, as `fn.readers.file` "
        "does), decodes and resizes both images to 300×300 and, on (b), runs `edit_images` on "
        "the pair; the main thread stacks each batch (`np.stack`) as the other contenders "
        f"deliver it; {wl.BOUND_DEPTH} batches are submitted ahead of the one delivered, so the "
        "threads never wait. Timed as augkit is (one untimed batch, then the steady rate), in "
        "the same rounds. × bound: median over rounds of the contender's rate over the "
        "bound's in the same round.",
        "",
        kernels_line,
        "",
        "Check (untimed, once): augkit's pipeline of the workload (both readers in file order, "
        "the second one's list rotated by one file) against the bound on the same files, "
        "output by output:",
        "",
    ]
    for c in checks:
        same = (
            "the same computation"
            if c.max_abs_diff == 0
            else (
                "within the tolerance"
                if c.max_abs_diff <= BOUND_TOLERANCE
                else "**not the same computation**"
            )
        )
        lines.append(
            f"- ({c.workload}) {c.pairs} pairs: {c.identical} of {c.outputs} outputs "
            f"bit-identical, mean |difference| {c.mean_abs_diff:.4f}, largest "
            f"{c.max_abs_diff} (tolerance {BOUND_TOLERANCE}): {same}"
        )
    lines += [f"- {f}" for f in check_failures]
    return lines


def render_first_run(first: fr.FirstRuns | None) -> list[str]:
    if first is None:
        return ["Not measured (`--first-runs 0`)."]
    rows = [
        ("build", "import", "`import augkit` (with `fn`, `pipeline_def`, `types`)"),
        ("build", "build", "`pipe.build()`"),
        ("build", "first_run", "first `pipe.run()` after `build()`"),
        ("build", "second_run", "the next `run()` (prefetched meanwhile: often ready)"),
        ("run", "first_run", "first `pipe.run()` without `build()` (build + first batch)"),
    ]
    lines = [
        f"Fresh interpreters of this Python (`python -m benchmarks.first_run`), "
        f"{max(len(v) for v in first.runs.values()) if first.runs else 0} per mode, the two "
        "modes alternating, after the rounds: `fn.readers.file` on the benchmark set, "
        "`fn.decoders.image(output_type=types.RGB)`, `fn.resize(resize_x=300, resize_y=300)`, "
        f"batch {wl.BATCH_SIZE}, `num_threads={wl.NUM_THREADS}`. Whatever augkit does lazily "
        "lands in the step that triggers it. Target (issue 11): the first `run()` after "
        f"`build()` ≤ {FIRST_RUN_TARGET_S} s.",
        "",
        "| step | median, s | runs, s |",
        "|---|---:|---:|",
    ]
    for mode, step, name in rows:
        values = first.values(mode, step)
        if not values:
            lines.append(f"| {name} | – | – |")
            continue
        runs = ", ".join(f"{v:.3f}" for v in values)
        lines.append(f"| {name} | {first.median(mode, step):.3f} | {runs} |")
    flags = first.torch_loaded.get("build", [])
    if flags:
        at_build = sum(bool(f.get("build")) for f in flags)
        at_run = sum(bool(f.get("first_run")) for f in flags)
        lines += [
            "",
            f"torch (the resize kernel's library) was imported by `build()` in {at_build} of "
            f"{len(flags)} runs, by the end of the first `run()` in {at_run} of {len(flags)}.",
        ]
    if first.failures:
        lines += ["", *(f"- failed: {f}" for f in first.failures)]
    return lines


def profile_augkit(args: argparse.Namespace) -> list[str]:
    """cProfile two passes of augkit with one thread per workload; the top functions."""
    lines = []
    batches = args.images // (wl.BATCH_SIZE * 2)
    for key in args.workloads:
        contender = wl.AugkitPipeline(wl.WORKLOADS[key], batches, args.data, threads=1)
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


def dali_notes(
    runner: dali.DaliRunner | None, contenders: list[wl.Contender], venv: Path
) -> list[str]:
    if runner is None:
        return []
    hello = runner.hello
    dali_contenders = [c for c in contenders if isinstance(c, dali.DaliPipeline)]
    libcuda = hello["libcuda_loaded"] or any(c.libcuda_loaded for c in dali_contenders)
    setups = [s for c in dali_contenders for s in c.setup_seconds]
    setup = f"{min(setups):.2f}–{max(setups):.2f} s" if setups else "–"
    return [
        f"DALI {runner.version} (Python {hello['python']}, numpy {hello['numpy']}, Pillow "
        f"{hello['pillow']}) ran in a subprocess of the venv `{rp.shown(venv)}`, "
        f"CPU only: `device_id=None`, CUDA devices seen: {hello['cuda_devices']}, "
        f"libcuda mapped into the process: {'yes' if libcuda else 'no'}. Its pipelines use DALI "
        "2.4's default executor (`exec_async=True, exec_pipelined=True`, which select the "
        "dynamic executor); its Python operators run there without the tutorial's "
        "`exec_async=False, exec_pipelined=False` (`--dali-sync` times those too). Each pass "
        f"builds a fresh DALI pipeline and deletes it after (build + first batch, untimed: "
        f"{setup}). For reference, `../shared/PERF_FACTS.md` measured DALI 2.4 CPU at "
        f"{DALI_CITED['a']:.0f} img/s on (a) and {DALI_CITED['b']:.0f} on (b) in another "
        "session on the same kind of machine.",
        "",
    ]


def run_operators(args: argparse.Namespace) -> int:
    """The per-operator table (``benchmarks/operators.py``), printed and written to
    ``--ops-out``."""
    settings = ops.TableSettings(
        data_root=args.data,
        work=WORK,
        out=args.ops_out,
        pairs=args.op_pairs,
        rounds=args.op_rounds,
        warmup=args.op_warmup,
        batches=args.op_batches,
        seconds=args.op_seconds,
        dali_venv=None if args.no_dali else args.dali_venv,
        dali_missing="left out with --no-dali" if args.no_dali else None,
        quick=args.quick,
    )
    lines = ops.run_table(settings, log)
    print("\n".join(lines))
    log(f"written to {rp.shown(args.ops_out)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    # The same Pillow block cache for every contender: this process, its augkit threads, and
    # (through the environment and worker_init_fn) the DataLoader's worker processes.
    os.environ["PILLOW_BLOCKS_MAX"] = str(args.pillow_blocks_max)
    Image.core.set_blocks_max(args.pillow_blocks_max)
    args.data = args.data.resolve()
    ensure_bench_set(args.data)
    status = 0
    if args.only in ("all", "workloads"):
        status = run_workloads(args)
    if args.only in ("all", "operators"):
        status = max(status, run_operators(args))
    if args.only in ("all", "iterator"):
        from benchmarks import iterator

        status = max(status, iterator.main(["--data", str(args.data)]))
    if args.only in ("all", "targets"):
        from benchmarks import targets

        status = max(status, targets.main([]))
    if args.only in ("all", "viewer"):
        from benchmarks import viewer

        status = max(status, viewer.main([]))
    if args.only in ("all", "conditionals"):
        from benchmarks import conditionals

        status = max(status, conditionals.main([]))
    if args.only in ("all", "ray"):
        from benchmarks import ray_stage

        status = max(status, ray_stage.main(["--data", str(args.data)]))
    if args.only == "gpu":
        from benchmarks import gpu

        status = max(status, gpu.main(["--data", str(args.data)]))
    return status


def run_workloads(args: argparse.Namespace) -> int:
    """The workloads' table (``results.md``): everything but the per-operator table."""
    started = time.perf_counter()
    files = wl.load_bench_set(args.data)
    mib = sum(len(f.data) for f in files) / 2**20
    log(f"{len(files)} JPEGs from {args.data} ({mib:.1f} MiB) in memory")

    contenders = make_loaders(args, files)
    runner, dali_missing = start_dali(args)
    install_done = time.perf_counter()
    accuracy: wl.Accuracy | None = None
    accuracy_failure = ""
    bound_kernels: wl.BoundKernels | None = None
    bound_checks: list[wl.BoundCheck] = []
    bound_failures: list[str] = []
    try:
        contenders += make_contenders(args, files, runner)
        timings = {i: rp.Timing() for i in range(len(contenders))}
        log("accuracy: augkit decode + resize against plain Python, file by file")
        try:
            accuracy = wl.measure_accuracy(args.data, files, limit=64 if args.quick else None)
        except Exception as exc:
            accuracy_failure = describe(exc)
            log(f"accuracy check failed: {accuracy_failure}")
        bound_keys = [k for k in args.workloads if k in wl.BOUND_WORKLOADS]
        if bound_keys:
            log("the bound: its output against augkit's pipeline, file by file")
            try:
                bound_kernels = wl.bound_kernels()
            except Exception as exc:
                bound_failures.append(f"the kernels: {describe(exc)}")
        for key in bound_keys if bound_kernels else []:
            try:
                bound_checks.append(
                    wl.check_bound(wl.WORKLOADS[key], args.data, limit=64 if args.quick else None)
                )
            except Exception as exc:
                bound_failures.append(f"({key}) check failed: {describe(exc)}")
                log(f"bound check ({key}) failed: {describe(exc)}")
        log("python_function overhead: a trivial function on a small array")
        direct, overheads, overhead_failures = measure_overheads(args, runner)
        scaling = None
        if "c" in args.workloads:
            log("worker scaling: (c)'s function in 1 and 2 worker processes")
            try:
                scaling = wl.measure_worker_scaling(batches=2 if args.quick else 4)
            except Exception as exc:
                log(f"worker scaling failed: {describe(exc)}")
        set_up(
            contenders,
            timings,
            {i for i, c in enumerate(contenders) if c.__class__ is not wl.TorchLoader},
        )
        load_before = mc.load_average()
        cpu = run_rounds(contenders, timings, args.rounds, args.warmup)
        load_after = mc.load_average()
    finally:
        for contender in contenders:
            contender.close()
        if runner is not None:
            runner.close()
    first_runs = None
    if args.first_runs:
        # After the rounds, with every contender closed: nothing else of ours runs.
        log(f"first-run latency: {args.first_runs} fresh processes per mode")
        first_runs = fr.measure(args.data, args.first_runs)

    results = rp.collect(contenders, timings)
    workers_label = f"augkit, py_num_workers={args.py_workers}"
    if accuracy is None:
        accuracy_ok = False
        accuracy_line = f"The accuracy check failed: {accuracy_failure}."
    else:
        accuracy_ok = accuracy.mean_abs_diff <= ACCURACY_BAR
        worst = (
            f"; worst file {accuracy.worst_file} at {accuracy.worst_file_mean:.3f}"
            if accuracy.worst_file_mean > 0
            else ""
        )
        accuracy_line = (
            f"augkit decode + resize (one reader in file order): mean |difference| to the "
            f"plain-Python reference {accuracy.mean_abs_diff:.3f} over {accuracy.files} files "
            f"(bar: ≤ {ACCURACY_BAR}, {'within' if accuracy_ok else '**ABOVE**'}){worst}; "
            f"largest single difference {accuracy.max_abs_diff}."
        )
    quiet = (
        " (**a busy machine**: the absolute figures are low and spread; the paired ratios "
        "hold up better)"
        if cpu.others > 0.1
        else ""
    )
    chart = args.out.with_name("throughput.png")
    report = [
        "# augkit throughput, side by side",
        "",
        *mc.machine_info(ROOT, args.pillow_blocks_max),
        f"- data: {len(files)} JPEGs of `{rp.shown(args.data)}` (bytes in memory for plain "
        "Python and the DataLoader; augkit and DALI read the files with `fn.readers.file`)",
        f"- batch 32 pairs (two readers), `num_threads=2`; {args.images} images timed per pass; "
        f"{args.warmup} warm-up pass(es), then {args.rounds} rounds, contenders interleaved "
        f"round-robin",
        f"- during the rounds ({cpu.seconds:.0f} s): the benchmark's processes used "
        f"{cpu.tree:.0%} of the machine's CPU time, other processes {cpu.others:.0%}"
        f"{quiet}, the hypervisor stole {cpu.stolen:.0%}; load average {load_before} "
        f"before, {load_after} after",
        "",
        "Workloads: " + "; ".join(f"({k}) {wl.WORKLOADS[k].title}" for k in args.workloads) + ".",
        "",
        *rp.render_table(results, dali_missing),
        "",
        *rp.render_busy_after(results, BUSY_AFTER_LIMIT),
        "img/s: decoded-and-resized images per second (a batch is 32 pairs, 64 images), median "
        "over rounds (min–max). × DALI, × plain"
        + (", × bound" if results.bound_keys() else "")
        + ": median over rounds of the ratio to DALI's, plain Python's"
        + (", the bound's" if results.bound_keys() else "")
        + " pass of the same round.",
        "",
        f"![throughput]({chart.name})",
        "",
        "## Targets",
        "",
        "Issue 3 (ratios to DALI, worker scaling, the Python operator's cost):",
        "",
        *render_targets(results, overheads, direct, workers_label, scaling),
        "",
        "Issue 11 (augkit against its own kernels, framework overhead, first-run latency):",
        "",
        *render_issue11_targets(results, overheads, bound_checks, first_runs),
        "",
        "## The bound (issue 11)",
        "",
        *render_bound(results, bound_kernels, bound_checks, bound_failures),
        "",
        "## Debug mode (issue 4)",
        "",
        *render_debug_mode(results),
        "",
        "## python_function overhead",
        "",
        f"`fn.random.uniform(shape=[{OVERHEAD_SIZE}])` with and without "
        "`fn.python_function(function=trivial)` (returns its input), batch 32, `num_threads=2`, "
        f'best of 3 timings; a direct call of `trivial` costs {direct:.3f} µs. The "without '
        "python_function\" column is the per-sample framework overhead of issue 11's target "
        f"(≤ {FRAMEWORK_OVERHEAD_TARGET_US:.0f} µs/sample).",
        "",
        *render_overheads(direct, overheads, overhead_failures),
        "",
        "## First-run latency (issue 11)",
        "",
        *render_first_run(first_runs),
        "",
        "## DALI",
        "",
        *(
            dali_notes(runner, contenders, args.dali_venv)
            or [f"Not available: {dali_missing}.", ""]
        ),
        "## Accuracy",
        "",
        accuracy_line,
        "",
    ]
    if args.profile:
        report += profile_augkit(args)
    report.append(
        f"Run time: {time.perf_counter() - started:.0f} s "
        f"({time.perf_counter() - install_done:.0f} s after DALI's set-up)."
    )
    text = "\n".join(report) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    try:
        rp.write_chart(
            results,
            chart,
            f"batch 32 pairs, num_threads=2, median of {args.rounds} interleaved rounds, "
            f"{dt.date.today().isoformat()}",
        )
        log(f"written to {rp.shown(args.out)} and {rp.shown(chart)}")
    except ImportError as exc:
        log(f"written to {rp.shown(args.out)}; no chart ({exc})")
    return 0 if accuracy_ok else 1


if __name__ == "__main__":
    sys.exit(main())
