"""``python -m benchmarks.gpu``: augkit on the GPU (``fn.decoders.image(device="mixed")`` and
operators with ``device="gpu"``) against augkit on the CPU, on the same photos, in one run.

Workloads (batch 32, ``--batch-size``; the photos of ``data/bench``, else ``data/images``):

- **decode**: ``fn.readers.file(random_shuffle=True)`` -> ``fn.decoders.image`` (RGB);
- **(a)** decode, then ``fn.resize(resize_x=224, resize_y=224)``;
- **(b)** the Python operators tutorial's pipeline (workload (b) of ``workloads.py``): two
  shuffled readers, decode, resize to 300x300, and the tutorial's ``edit_images`` on the pairs
  as ``fn.python_function`` (on the GPU: the same function written against the array module,
  ``edit_images_xp``, so that it runs on CuPy arrays; img/s counts both images of a pair).

Contenders, each with ``num_threads`` = the machine's cores: **augkit CPU** (``device_id=None``,
every operator on "cpu") and **augkit GPU** (``device_id=0``, the decoder on "mixed", the other
operators on "gpu"). A pipeline is built once (untimed) and closed after every pass (so that no
prefetching runs into another contender's pass); a pass runs one untimed batch, then
``--batches`` timed ``run()`` calls, then waits for the GPU (``deviceSynchronize``) before the
clock stops. Outputs stay where the pipeline leaves them (CuPy on the GPU, NumPy on the CPU), as
a training loop would take them. Rounds are interleaved (every contender of every workload once
per round, in an order rotated by one each round); img/s is the median over rounds, the ratio
GPU / CPU the median over rounds of the ratio within the round. Untimed, the mixed decoder's
pixels are compared with the CPU decoder's on the photos (mean and max |difference|, and how
many went through nvJPEG), which is what the tests' tolerance must cover.

What it cannot do:

- **Without a GPU** (here, or where CuPy finds no device) it runs the CPU rows only and says
  why (``augkit.backend.gpu_unavailable_reason()``); the GPU rows say "not available". That is
  the degraded mode ``tests/test_benchmark_gpu.py`` checks.
- An operator whose schema has no "gpu" in ``devices`` when this runs (the GPU kernels of
  resize and the rest are being written) makes that workload's GPU row "not available", naming
  the operator, instead of crashing.
- **No DALI row**: DALI's GPU wheel (~500 MB) cannot travel to the GPU machine (64 MiB per
  copy, no package index there), so the DALI-on-GPU anchor cannot be measured there.

The report goes to ``benchmarks/_work/gpu.md`` (``--out``); ``benchmarks/gpu_check.sh`` runs it
on the GPU machine (see benchmarks/README.md). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import machine as mc
from benchmarks import report as rp

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(__file__).resolve().parent / "_work"
BENCH = ROOT / "data" / "bench"
FALLBACK = ROOT / "data" / "images"
BATCH = 32
SEED = 42
SIZE_A = 224
SIZE_B = 300
CPU_LABEL = "augkit CPU"
GPU_LABEL = "augkit GPU (decoder mixed, operators gpu)"
WORKLOADS = {
    "decode": "decode (readers.file -> decoders.image, RGB)",
    "a": f"(a) decode + resize to {SIZE_A}×{SIZE_A}",
    "b": f"(b) the tutorial: two readers, decode, resize to {SIZE_B}×{SIZE_B}, edit_images",
}
# The operators each workload runs on device="gpu" besides the decoder ("mixed").
GPU_OPERATORS = {"decode": (), "a": ("resize",), "b": ("resize", "python_function")}


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (median; 5)")
    parser.add_argument("--batches", type=int, default=10, help="timed batches per pass (10)")
    parser.add_argument("--batch-size", type=int, default=BATCH, help=f"batch size ({BATCH})")
    parser.add_argument("--threads", type=int, default=cores(), help="num_threads (all cores)")
    parser.add_argument(
        "--workloads", default="decode,a,b", help="comma-separated: decode, a, b (all)"
    )
    parser.add_argument(
        "--data", type=Path, default=None, help="the photos (default data/bench, else data/images)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 round of 2 batches of 8: does it run?"
    )
    parser.add_argument("--out", type=Path, default=WORK / "gpu.md", help="the Markdown report")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.batches, args.batch_size = 1, 2, 8
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown or not args.workloads:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if min(args.rounds, args.batches, args.batch_size, args.threads) < 1:
        parser.error("--rounds, --batches, --batch-size and --threads must be >= 1")
    if args.data is None:
        args.data = BENCH if BENCH.is_dir() and any(BENCH.iterdir()) else FALLBACK
    return args


# --- the pipelines --------------------------------------------------------------------------


def edit_images_xp(image1: Any, image2: Any) -> tuple[Any, Any]:
    """The tutorial's ``edit_images`` (``benchmarks/functions.py``) on NumPy or CuPy arrays:
    swaps the pixels outside a central disc."""
    from augkit import backend

    xp = backend.array_module(image1)
    h, w = image1.shape[:2]
    y, x = xp.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    result1 = image1.copy()
    result1[mask] = image2[mask]
    result2 = image2.copy()
    result2[mask] = image1[mask]
    return result1, result2


def define(workload: str, root: str, gpu: bool) -> Any:
    """The pipeline of ``workload`` (its outputs), on the GPU or the CPU."""
    from augkit import fn, types

    decoder, device = ("mixed", "gpu") if gpu else ("cpu", "cpu")
    readers = 2 if workload == "b" else 1
    images = []
    for _ in range(readers):
        jpegs, _ = fn.readers.file(file_root=root, random_shuffle=True)
        images.append(fn.decoders.image(jpegs, device=decoder, output_type=types.RGB))
    if workload == "decode":
        return tuple(images)
    size = SIZE_A if workload == "a" else SIZE_B
    images = [fn.resize(x, resize_x=size, resize_y=size, device=device) for x in images]
    if workload == "a":
        return tuple(images)
    out1, out2 = fn.python_function(*images, function=edit_images_xp, num_outputs=2, device=device)
    return out1, out2


def missing_gpu_kernels(workload: str) -> list[str]:
    """The operators of ``workload`` whose schema has no "gpu" device (yet)."""
    from augkit.operators.registry import REGISTRY

    needed = [("decoders.image", "mixed")] + [(op, "gpu") for op in GPU_OPERATORS[workload]]
    return [
        f"fn.{name} (devices {tuple(REGISTRY[name].devices)})"
        for name, device in needed
        if device not in REGISTRY[name].devices
    ]


def synchronize() -> None:
    from augkit import backend

    if backend.gpu_unavailable_reason() is None:
        backend._cupy().cuda.runtime.deviceSynchronize()


@dataclass
class Contender:
    workload: str
    label: str
    gpu: bool
    pipe: Any = None
    rates: dict[int, float] = field(default_factory=dict)
    failed: str | None = None

    def setup(self, args: argparse.Namespace) -> None:
        from augkit import pipeline_def

        build = pipeline_def(
            define,
            batch_size=args.batch_size,
            num_threads=args.threads,
            device_id=0 if self.gpu else None,
            seed=SEED,
        )
        self.pipe = build(self.workload, str(args.data), self.gpu)
        self.pipe.build()
        self.pipe.close()

    def run_pass(self, batches: int) -> float:
        """Images/s of one pass (one untimed batch, then ``batches`` timed)."""
        try:
            self.pipe.run()
            synchronize()
            start = time.perf_counter()
            images = 0
            for _ in range(batches):
                images += sum(len(out) for out in self.pipe.run())
            synchronize()
            return images / (time.perf_counter() - start)
        finally:
            self.pipe.close()

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None


def make_contenders(args: argparse.Namespace, gpu_reason: str | None) -> list[Contender]:
    contenders = []
    for workload in args.workloads:
        contenders.append(Contender(workload, f"{CPU_LABEL}, num_threads={args.threads}", False))
        gpu = Contender(workload, f"{GPU_LABEL}, num_threads={args.threads}", True)
        missing = missing_gpu_kernels(workload)
        if gpu_reason is not None:
            gpu.failed = f"not available: no GPU found ({gpu_reason})"
        elif missing:
            gpu.failed = "not available: no GPU kernel yet for " + ", ".join(missing)
        contenders.append(gpu)
    return contenders


def measure(args: argparse.Namespace, log: Callable[[str], None]) -> list[Contender]:
    from augkit import backend

    contenders = make_contenders(args, backend.gpu_unavailable_reason())
    try:
        for c in contenders:
            if c.failed:
                continue
            try:
                c.setup(args)
                c.run_pass(1)  # warm-up (CUDA contexts, nvJPEG handles, kernels)
            except Exception as exc:
                c.failed = f"failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:400]
                log(f"{c.workload} / {c.label}: {c.failed}")
        live = [c for c in contenders if not c.failed]
        log(f"{len(live)} contenders, {args.rounds} rounds of {args.batches} batches each")
        for r in range(args.rounds):
            k = r % max(len(live), 1)
            for c in live[k:] + live[:k]:
                if c.failed:
                    continue
                try:
                    c.rates[r] = c.run_pass(args.batches)
                except Exception as exc:
                    c.failed = f"failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:400]
            log(f"round {r + 1}/{args.rounds} done")
    finally:
        for c in contenders:
            c.close()
    return contenders


@dataclass
class DecodeCheck:
    files: int
    via_gpu: int
    mean: float
    max: int
    worst: str


def check_decoder(root: Path, limit: int = 64) -> DecodeCheck | str:
    """The mixed decoder's pixels against the CPU decoder's, on up to ``limit`` photos."""
    from augkit import backend
    from augkit.operators.decoders import nvjpeg
    from augkit.operators.decoders.image import ImageDecoder, decode_image

    reason = backend.gpu_unavailable_reason() or nvjpeg.unavailable_reason()
    if reason is not None:
        return f"not run: {reason}"
    paths = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[:limit]
    datas = [np.fromfile(p, np.uint8) for p in paths]
    # ImageDecoder.gpu_decode_device: "cpu" where tests run this on tests/fake_cupy
    values, via = nvjpeg.decode_images(
        datas, ImageDecoder.gpu_decode_device or "cuda:0", decode_image
    )
    means, maxes = [], []
    for data, value in zip(datas, values, strict=True):
        if isinstance(value, BaseException):
            return f"failed: {type(value).__name__}: {value}"
        diff = np.abs(backend.to_cpu(value).astype(np.int16) - decode_image(data))
        means.append(float(diff.mean()))
        maxes.append(int(diff.max()))
    worst = int(np.argmax(means))
    return DecodeCheck(
        len(paths), via.count(nvjpeg.GPU), float(np.mean(means)), max(maxes), paths[worst].name
    )


# --- the report -----------------------------------------------------------------------------


def environment(gpu_reason: str | None) -> list[str]:
    """Lines on the machine, the libraries and the GPU."""
    from augkit.operators.decoders import nvjpeg

    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for name in ("torch", "torchvision", "cupy", "PIL", "simplejpeg", "cv2"):
        try:
            module = __import__(name)
            versions.append(f"{name} {getattr(module, '__version__', '?')}")
        except Exception:
            versions.append(f"{name} not installed")
    cpu = mc.cpu_model()
    if gpu_reason is None:
        from augkit import backend

        props = backend._cupy().cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        gpu = f"- GPU: {name.decode() if isinstance(name, bytes) else name} (device 0)"
    else:
        gpu = f"- **no GPU found**: {gpu_reason}; only the CPU rows are measured"
    decoder = nvjpeg.unavailable_reason()
    return [
        f"- machine: {cores()} cores available, {cpu}, {platform.system()} {platform.release()}",
        f"- {', '.join(versions)}",
        gpu,
        "- the mixed decoder: torchvision's batched nvJPEG"
        + ("" if decoder is None else f" **unavailable** ({decoder}): every file on the CPU"),
    ]


def _rate(c: Contender) -> str:
    if c.failed or not c.rates:
        return c.failed or "not measured"
    values = list(c.rates.values())
    return f"{statistics.median(values):.0f} ({min(values):.0f}–{max(values):.0f})"


def _ratio(gpu: Contender, cpu: Contender) -> str:
    common = sorted(set(gpu.rates) & set(cpu.rates))
    if gpu.failed or cpu.failed or not common:
        return ""
    return f"{statistics.median(gpu.rates[r] / cpu.rates[r] for r in common):.2f}×"


def report(
    contenders: list[Contender],
    args: argparse.Namespace,
    gpu_reason: str | None,
    check: DecodeCheck | str,
) -> str:
    rows = []
    for workload in args.workloads:
        cpu, gpu = [c for c in contenders if c.workload == workload]
        rows.append(f"| {WORKLOADS[workload]} | {cpu.label} | {_rate(cpu)} | |")
        rows.append(f"| | {gpu.label} | {_rate(gpu)} | {_ratio(gpu, cpu)} |")
    if isinstance(check, str):
        accuracy = f"The mixed decoder against the CPU decoder: {check}."
    else:
        accuracy = (
            f"The mixed decoder against the CPU decoder on {check.files} photos "
            f"({check.via_gpu} through nvJPEG): mean |difference| {check.mean:.3f} levels, "
            f"max {check.max} (the worst mean: {check.worst}); "
            "tests/operators/test_gpu_decoder.py allows a mean of 2 and a max of 96."
        )
    mode = " (**degraded: CPU only**)" if gpu_reason is not None else ""
    quick = " (`--quick`: figures that only show it runs)" if args.quick else ""
    lines = [
        f"# augkit on the GPU against augkit on the CPU{mode}",
        "",
        *environment(gpu_reason),
        f"- photos: `{rp.shown(args.data)}`, batch {args.batch_size}, `num_threads="
        f"{args.threads}` for both; {args.rounds} round{'s' if args.rounds > 1 else ''} of "
        f"{args.batches} timed batches per contender, interleaved (rotated each round){quick}",
        "- img/s: median over rounds (min–max), decoded images delivered (both images of a pair "
        "in (b)); × CPU: median over rounds of GPU / CPU within the round",
        "",
        "| workload | contender | img/s | × CPU |",
        "| --- | --- | ---: | ---: |",
        *rows,
        "",
        accuracy,
        "",
        "Not measured: NVIDIA DALI on the GPU (its ~500 MB wheel cannot travel to the GPU "
        "machine, which has no package index), so there is no DALI anchor in this table.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    from augkit import backend

    gpu_reason = backend.gpu_unavailable_reason()
    if gpu_reason is not None:
        rp.log(f"no GPU found ({gpu_reason}): CPU rows only")
    contenders = measure(args, rp.log)
    check = check_decoder(args.data)
    text = report(contenders, args, gpu_reason, check)
    rp.publish(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
