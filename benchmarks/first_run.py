"""First-run latency of augkit (issue 11), measured in a fresh interpreter.

``python -m benchmarks`` runs this module in fresh subprocesses of the venv's Python
(``python -m benchmarks.first_run --data DIR --mode build``), several times, and reports the
median. One run times, with ``time.perf_counter``:

- ``import``: ``import augkit`` (with ``fn``, ``pipeline_def`` and ``types``), the first thing
  the process does after the standard library's ``argparse``, ``json`` and ``time``;
- ``define``: calling the ``@pipeline_def`` function (the graph is traced, nothing runs);
- with ``--mode build``: ``build``, ``pipe.build()``; ``first_run``, the first ``pipe.run()``
  after it; ``second_run``, the next one;
- with ``--mode run``: ``first_run``, the first ``pipe.run()`` without an explicit
  ``build()`` (so it builds, then makes the first batch); ``second_run``, the next one.

The pipeline is decode + resize: ``fn.readers.file(file_root=DIR)``,
``fn.decoders.image(output_type=types.RGB)``, ``fn.resize(resize_x=300, resize_y=300)``,
batch 32, ``num_threads=2``, augkit's defaults otherwise. Whatever augkit does lazily (torch's
import for the resize kernel, thread start-up, the first file reads) lands in the step that
triggers it, so the three figures are kept apart; ``torch_loaded`` says after which steps
torch was in ``sys.modules``. The result is one JSON line on stdout.

This module imports nothing of the benchmark's (``benchmarks/__init__.py`` is a docstring), so
no NumPy or Pillow is loaded before ``import augkit`` is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

BATCH_SIZE = 32
NUM_THREADS = 2
OUT_SIZE = 300
MODES = ("build", "run")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_run")
    parser.add_argument("--data", required=True, help="file_root of fn.readers.file")
    parser.add_argument("--mode", choices=MODES, default="build")
    args = parser.parse_args(argv)
    seconds: dict[str, float] = {}

    start = time.perf_counter()
    import augkit
    from augkit import fn, pipeline_def, types

    seconds["import"] = time.perf_counter() - start
    torch_loaded = {"import": "torch" in sys.modules}

    @pipeline_def(batch_size=BATCH_SIZE, num_threads=NUM_THREADS, device_id=None, seed=1)
    def decode_resize(root: str) -> object:
        jpegs, _ = fn.readers.file(file_root=root)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        return fn.resize(images, resize_x=OUT_SIZE, resize_y=OUT_SIZE)

    start = time.perf_counter()
    pipe = decode_resize(args.data)
    seconds["define"] = time.perf_counter() - start
    try:
        if args.mode == "build":
            start = time.perf_counter()
            pipe.build()
            seconds["build"] = time.perf_counter() - start
            torch_loaded["build"] = "torch" in sys.modules
        for step in ("first_run", "second_run"):
            start = time.perf_counter()
            (out,) = pipe.run()
            seconds[step] = time.perf_counter() - start
            torch_loaded.setdefault(step, "torch" in sys.modules)
            if len(out) != BATCH_SIZE:
                raise RuntimeError(f"a batch of {len(out)} samples, expected {BATCH_SIZE}")
    finally:
        pipe.close()
    print(
        json.dumps(
            {
                "mode": args.mode,
                "seconds": seconds,
                "augkit": getattr(augkit, "__version__", "?"),
                "torch_loaded": torch_loaded,
            }
        )
    )
    return 0


@dataclass
class FirstRuns:
    """The runs of both modes, in the order they ran; ``failures``, why a run gave nothing."""

    runs: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    torch_loaded: dict[str, list[dict[str, bool]]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def values(self, mode: str, step: str) -> list[float]:
        return [run[step] for run in self.runs.get(mode, []) if step in run]

    def median(self, mode: str, step: str) -> float | None:
        values = self.values(mode, step)
        return statistics.median(values) if values else None


def measure(data: Path, runs: int = 3, timeout: float = 300.0) -> FirstRuns:
    """``runs`` fresh interpreters of this Python per mode (``build``, then ``run``,
    alternating), each running this module on ``data``."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    result = FirstRuns()
    for _ in range(runs):
        for mode in MODES:
            command = [sys.executable, "-m", "benchmarks.first_run", "--data", str(data)]
            try:
                done = subprocess.run(
                    [*command, "--mode", mode],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                if done.returncode != 0:
                    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                    raise RuntimeError(f"exit status {done.returncode}: {tail}")
                reply = json.loads(done.stdout.strip().splitlines()[-1])
            except Exception as exc:
                result.failures.append(f"{mode}: {type(exc).__name__}: {exc}"[:200])
                continue
            result.runs.setdefault(mode, []).append(reply["seconds"])
            result.torch_loaded.setdefault(mode, []).append(reply["torch_loaded"])
    return result


if __name__ == "__main__":
    sys.exit(main())
