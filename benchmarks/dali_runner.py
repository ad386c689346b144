"""NVIDIA DALI's side of the benchmark, run by the DALI venv's Python in a subprocess.

``python -m benchmarks`` starts it as ``<dali-venv>/bin/python benchmarks/dali_runner.py`` and
talks to it in JSON lines: one command per line on stdin, one reply per line on stdout (DALI's
own prints go to stderr). Commands:

- ``{"cmd": "pass", "workload": "a", "batches": 4, "data": DIR, "threads": 2, "seed": 42,
  "exec": "default"}``: build a CPU-only pipeline of the workload (``device_id=None``), run one
  untimed batch, time ``batches`` batches, delete the pipeline (so that nothing keeps computing
  while the other contenders are timed); reply with images, seconds and images/s.
- ``{"cmd": "overhead", "batches": 200, "size": 16, "threads": 2}``: the per-sample cost of
  ``fn.python_function`` with a trivial function: the same pipeline with and without it.
- ``{"cmd": "op_load", "images": NPY, "jpegs": [FILE, ...]}``: load the inputs of the
  per-operator table (``benchmarks/operators.py``): the 320×320 photos (an ``.npy`` written by
  the benchmark, so that both processes use the same pixels) and the JPEG files; import
  Albumentations (``cv2.setNumThreads(1)``); reply with its version, or why it is missing.
- ``{"cmd": "op_pass", "library": "dali" | "albumentations", "operator": NAME, "threads": 1,
  "batches": 8, "seconds": 1.0, "seed": 42, "start": 0}``: one pass of an operator of that
  table: DALI's pipeline ``external_source -> body`` (built afresh, one untimed batch,
  ``batches`` timed, deleted), or Albumentations' transform in a plain loop over the same
  images (one untimed);
  the batches start at batch ``start`` of the inputs; timing stops early after the batch (or
  image) that ends past ``seconds`` (null: never). Reply with images and seconds timed.
- ``{"cmd": "quit"}``.

Every reply has an ``event``: ``hello`` (first line: versions and the CPU-only checks),
``pass``, ``overhead``, ``op_load``, ``op_pass`` or ``error`` (with the traceback; for
``op_pass``, the exception's message on one line first). ``exec`` is ``"default"`` (DALI 2.4's
defaults: ``exec_async=True, exec_pipelined=True``, which select the dynamic executor) or
``"sync"`` (the tutorial's ``exec_async=False, exec_pipelined=False``).

It needs the DALI venv's packages only (nvidia-dali, NumPy, Pillow) and imports the Python
operators from ``benchmarks/functions.py`` (NumPy only), the same code as the other contenders.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.functions import blur_patches, edit_images, trivial

# The per-operator table's state: its inputs, Albumentations and its transforms.
OPERATORS: dict[str, Any] = {}

BATCH_SIZE = 32
OUT_SIZE = 300
FUNCTIONS = {"a": None, "b": edit_images, "c": blur_patches}
EXEC_SETTINGS: dict[str, dict[str, bool]] = {
    "default": {},
    "sync": {"exec_async": False, "exec_pipelined": False},
}


def libcuda_loaded() -> bool:
    """Whether the CUDA driver library is mapped into this process."""
    try:
        return "libcuda.so" in Path("/proc/self/maps").read_text()
    except OSError:
        return False


def hello() -> dict[str, Any]:
    import numpy
    import PIL
    from nvidia import dali
    from nvidia.dali import backend

    try:
        cuda_devices: int | str = backend.GetCUDADeviceCount()
    except Exception as exc:  # no driver: DALI raises, which also means CPU only
        cuda_devices = f"unavailable ({exc})"
    return {
        "event": "hello",
        "dali": dali.__version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
        "cuda_devices": cuda_devices,
        "libcuda_loaded": libcuda_loaded(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def build_pipeline(workload: str, data: str, threads: int, seed: int, exec_mode: str) -> Any:
    """Two shuffled readers, CPU decode to RGB, resize to 300×300 (DALI's default linear filter
    with antialiasing); then, for (b) and (c), the workload's Python function on the pairs."""
    from nvidia.dali import fn, pipeline_def, types

    function = FUNCTIONS[workload]

    @pipeline_def(
        batch_size=BATCH_SIZE,
        num_threads=threads,
        device_id=None,
        seed=seed,
        **EXEC_SETTINGS[exec_mode],
    )
    def pairs() -> Any:
        images = []
        for _ in range(2):
            jpegs, _ = fn.readers.file(file_root=data, random_shuffle=True)
            decoded = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images.append(fn.resize(decoded, resize_x=OUT_SIZE, resize_y=OUT_SIZE))
        if function is None:
            return tuple(images)
        out1, out2 = fn.python_function(*images, function=function, num_outputs=2)
        return out1, out2

    pipe = pairs()
    pipe.build()
    return pipe


def dense(outputs: Any) -> int:
    """Turn every output of a batch into a dense array, as the other contenders deliver them;
    the number of images."""
    images = 0
    for out in outputs:
        array = out.as_array()
        if array.shape != (BATCH_SIZE, OUT_SIZE, OUT_SIZE, 3) or array.dtype.name != "uint8":
            raise ValueError(f"unexpected batch {array.shape} {array.dtype}")
        images += len(array)
    return images


def run_pass(cmd: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    pipe = build_pipeline(
        cmd["workload"],
        cmd["data"],
        cmd.get("threads", 2),
        cmd.get("seed", 42),
        cmd.get("exec", "default"),
    )
    dense(pipe.run())  # untimed: fills the pipeline (and its prefetch queue)
    ready = time.perf_counter()
    images = 0
    for _ in range(cmd["batches"]):
        images += dense(pipe.run())
    seconds = time.perf_counter() - ready
    del pipe  # stops DALI's executor threads: nothing runs between passes
    gc.collect()
    return {
        "event": "pass",
        "images": images,
        "seconds": seconds,
        "images_per_s": images / seconds,
        "setup_s": ready - start,
        "libcuda_loaded": libcuda_loaded(),
    }


def run_overhead(cmd: dict[str, Any]) -> dict[str, Any]:
    """Microseconds per sample: the pipeline ``uniform -> python_function(trivial)`` minus the
    pipeline ``uniform`` alone, each the best of three timings of ``batches`` batches."""
    from nvidia.dali import fn, pipeline_def

    size, batches, threads = cmd.get("size", 16), cmd["batches"], cmd.get("threads", 2)
    exec_mode = cmd.get("exec", "default")
    results = {}
    for with_function in (False, True):

        @pipeline_def(
            batch_size=BATCH_SIZE,
            num_threads=threads,
            device_id=None,
            seed=1,
            **EXEC_SETTINGS[exec_mode],
        )
        def small(with_function: bool = with_function) -> Any:
            values = fn.random.uniform(range=[0.0, 1.0], shape=[size])
            return fn.python_function(values, function=trivial) if with_function else values

        pipe = small()
        pipe.build()
        for _ in range(10):
            pipe.run()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(batches):
                pipe.run()
            best = min(best, time.perf_counter() - start)
        del pipe
        gc.collect()
        results[with_function] = best / (batches * BATCH_SIZE)
    return {
        "event": "overhead",
        "without_us": results[False] * 1e6,
        "with_us": results[True] * 1e6,
        "overhead_us": (results[True] - results[False]) * 1e6,
    }


def run_op_load(cmd: dict[str, Any]) -> dict[str, Any]:
    from benchmarks import operators

    inputs = operators.Inputs.load(cmd["images"], cmd["jpegs"])
    OPERATORS.clear()
    OPERATORS["inputs"] = inputs
    OPERATORS["transforms"] = {}
    version, missing = None, None
    try:
        import albumentations
        import cv2

        cv2.setNumThreads(1)  # one thread, as augkit's kernels have
        OPERATORS["albumentations"] = (albumentations, cv2)
        version = albumentations.__version__
    except Exception as exc:
        missing = f"{type(exc).__name__}: {exc}"
    return {
        "event": "op_load",
        "images": len(inputs.photos),
        "jpegs": len(inputs.jpegs),
        "albumentations": version,
        "albumentations_missing": missing,
        "opencv": OPERATORS["albumentations"][1].__version__ if version else None,
    }


def run_op_pass(cmd: dict[str, Any]) -> dict[str, Any]:
    from benchmarks import operators

    pair = operators.PAIRS_BY_NAME[cmd["operator"]]
    inputs = OPERATORS["inputs"]
    batches, start = cmd["batches"], cmd.get("start", 0)
    limit = math.inf if cmd.get("seconds") is None else float(cmd["seconds"])
    if cmd["library"] == "dali":
        from nvidia.dali import fn, types
        from nvidia.dali.pipeline import Pipeline

        source = inputs.source(pair.input, start)
        pipe = operators.build_pipeline(
            Pipeline, fn, types, pair, source, cmd.get("threads", 1), cmd.get("seed", 42)
        )
        done, seconds = operators.time_runs(pipe, batches, limit)
        images = done * BATCH_SIZE
        del pipe  # stops DALI's executor threads: nothing runs between passes
        gc.collect()
    elif cmd["library"] == "albumentations":
        if "albumentations" not in OPERATORS:
            raise RuntimeError("Albumentations is not importable in the DALI venv")
        transforms = OPERATORS["transforms"]
        if pair.name not in transforms:
            transforms[pair.name] = pair.albumentations(*OPERATORS["albumentations"])
        inputs_ = inputs.images(pair.input, start, batches * BATCH_SIZE + 1)
        images, seconds = operators.time_albumentations(transforms[pair.name], inputs_, limit)
    else:
        raise ValueError(f"unknown library {cmd['library']!r}")
    return {"event": "op_pass", "images": images, "seconds": seconds}


def one_line(exc: BaseException) -> str:
    """An exception's type and message on one line. DALI's span several and bury the reason
    after "encountered:", before its "C++ context": that part alone."""
    text = str(exc)
    if "encountered:" in text:
        text = text.split("encountered:", 1)[1].split("C++ context", 1)[0]
    message = " / ".join(s.strip() for s in text.splitlines() if s.strip())
    return f"{type(exc).__name__}: {message}"[:400]


def main() -> int:
    # Replies go to the original stdout; anything DALI or a library prints, from Python or C,
    # goes to stderr instead, so that it cannot break the JSON lines.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    try:
        reply(hello())
    except Exception:
        reply({"event": "error", "message": traceback.format_exc()})
        return 1
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
            if cmd["cmd"] == "quit":
                break
            if cmd["cmd"] == "pass":
                reply(run_pass(cmd))
            elif cmd["cmd"] == "overhead":
                reply(run_overhead(cmd))
            elif cmd["cmd"] == "op_load":
                reply(run_op_load(cmd))
            elif cmd["cmd"] == "op_pass":
                try:
                    reply(run_op_pass(cmd))
                except Exception as exc:
                    message = one_line(exc) + "\n" + traceback.format_exc()
                    reply({"event": "error", "message": message})
            else:
                reply({"event": "error", "message": f"unknown command {cmd['cmd']!r}"})
        except Exception:
            reply({"event": "error", "message": traceback.format_exc()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
