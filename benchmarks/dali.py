"""NVIDIA DALI as a contender: its own venv, and a subprocess that runs its pipelines.

DALI (``nvidia-dali-cuda120``) is installed from PyPI into a venv of its own,
``benchmarks/_work/dali-venv`` by default, the first time the benchmark runs (a 424 MB wheel;
later runs find it and skip the installation), and with it Albumentations 2.x (the per-operator
table's CPU reference, ``operators.py``; it brings OpenCV, SciPy and pydantic). Its pipelines
run in one long-lived subprocess of that venv, ``dali_runner.py``, driven in JSON lines; DALI's
passes are interleaved with the other contenders' exactly like theirs. When the installation or
the subprocess fails, the benchmark goes on without DALI and says why; when only
Albumentations fails to install, DALI is kept and the per-operator table says that
Albumentations is not available.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.workloads import (
    BATCH_SIZE,
    NUM_THREADS,
    PIPELINE_SEED,
    Contender,
    Overhead,
    PassTiming,
    Workload,
)

DALI_REQUIREMENT = "nvidia-dali-cuda120==2.4.0"
RUNNER = Path(__file__).resolve().parent / "dali_runner.py"
ALBUMENTATIONS_REQUIREMENT = "albumentations>=2,<3"
IMPORT_CHECK = "import nvidia.dali, numpy, PIL; print(nvidia.dali.__version__)"
ALBUMENTATIONS_CHECK = "import albumentations, cv2; print(albumentations.__version__)"
REPLY_TIMEOUT_S = 300.0
INSTALL_TIMEOUT_S = 1800.0


class DaliUnavailable(RuntimeError):
    """DALI cannot be installed, started or run; the message says why."""


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _version(python: Path, check: str) -> str | None:
    """What ``check`` prints in that interpreter (a version), or None when it fails."""
    if not python.exists():
        return None
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    try:
        done = subprocess.run(
            [str(python), "-c", check], capture_output=True, text=True, timeout=120, env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _dali_version(python: Path) -> str | None:
    """DALI's version in that interpreter, or None when it cannot import it."""
    return _version(python, IMPORT_CHECK)


def albumentations_version(python: Path) -> str | None:
    """Albumentations' version in that interpreter, or None when it cannot import it (or
    OpenCV)."""
    return _version(python, ALBUMENTATIONS_CHECK)


def ensure_dali_venv(venv: Path, log: Callable[[str], None]) -> Path:
    """The Python of a venv where DALI imports: ``venv`` as it is when DALI and Albumentations
    are already there, otherwise created (``python -m venv``) and filled (``pip install
    nvidia-dali-cuda120==2.4.0 numpy pillow``, then ``pip install "albumentations>=2,<3"``),
    with pip's output in ``<venv>.install.log``. Albumentations is a separate step: when it
    fails, the venv is still returned (DALI works; the per-operator table says Albumentations
    is missing).

    Raises:
        DaliUnavailable: the venv cannot be created or DALI's installation fails.
    """
    python = _venv_python(venv)
    version = _dali_version(python)
    albumentations = albumentations_version(python) if version is not None else None
    if version is not None and albumentations is not None:
        log(f"DALI {version} and Albumentations {albumentations} found in {venv}")
        return python
    install_log = venv.with_name(venv.name + ".install.log")
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = []
    if version is None:
        log(
            f"installing {DALI_REQUIREMENT} into {venv} (one time: a 424 MB wheel; "
            f"pip's output in {install_log})"
        )
        if not python.exists():
            steps.append(("python -m venv", [sys.executable, "-m", "venv", str(venv)]))
        steps.append(
            (
                f"pip install {DALI_REQUIREMENT}",
                [*_pip(python), DALI_REQUIREMENT, "numpy", "pillow"],
            )
        )
    # The venv must not inherit the benchmark's own venv through the environment.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    with install_log.open("a" if version is not None else "w") as out:
        for name, step in steps:
            _run_step(name, step, out, env, install_log)
        if _dali_version(python) is None:
            raise DaliUnavailable(f"installed, but `import nvidia.dali` fails in {python}")
        log(
            f"installing {ALBUMENTATIONS_REQUIREMENT} into {venv} (one time; pip's output in "
            f"{install_log})"
        )
        try:
            _run_step(
                f"pip install {ALBUMENTATIONS_REQUIREMENT}",
                [*_pip(python), ALBUMENTATIONS_REQUIREMENT],
                out,
                env,
                install_log,
            )
        except DaliUnavailable as exc:
            log(f"Albumentations could not be installed (going on without it): {exc}")
    version = _dali_version(python)
    log(f"DALI {version} in {venv}; Albumentations {albumentations_version(python) or 'missing'}")
    return python


def _pip(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check"]


def _run_step(name: str, step: list[str], out: Any, env: dict[str, str], install_log: Path) -> None:
    """One installation step, its output appended to ``out``.

    Raises:
        DaliUnavailable: it could not run or exited with a non-zero status.
    """
    out.write(f"$ {' '.join(step)}\n")
    out.flush()
    try:
        done = subprocess.run(
            step, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=INSTALL_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DaliUnavailable(f"`{name}` failed: {exc}") from None
    if done.returncode != 0:
        out.flush()
        raise DaliUnavailable(
            f"`{name}` exited with status {done.returncode}"
            f"{_last_error(install_log)}; last lines of {install_log}:\n" + _tail(install_log)
        )


def _last_error(path: Path) -> str:
    """``": <pip's last ERROR line>"``, or nothing."""
    try:
        errors = [s for s in path.read_text().splitlines() if s.startswith("ERROR")]
    except OSError:
        return ""
    return f": {errors[-1]}" if errors else ""


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join("    " + s for s in path.read_text().splitlines()[-lines:])
    except OSError:
        return "    (no log)"


class DaliRunner:
    """The subprocess ``<venv python> benchmarks/dali_runner.py``: one request, one reply.

    ``hello`` holds its first reply (versions, and the CPU-only checks: CUDA devices, whether
    ``libcuda`` is mapped). DALI's stderr goes to ``stderr_path``.
    """

    def __init__(self, python: Path, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("w")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        self.process = subprocess.Popen(
            [str(python), str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            cwd=str(RUNNER.parent.parent),
            env=env,
        )
        self._replies: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self._reply("hello", timeout=120.0)
        self.version = str(self.hello.get("dali", "?"))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._replies.put(line)
        self._replies.put(None)

    def _reply(self, expected: str, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        try:
            line = self._replies.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise DaliUnavailable(f"no reply from dali_runner.py in {timeout:.0f} s") from None
        if line is None:
            self.process.wait(timeout=10)
            raise DaliUnavailable(
                f"dali_runner.py exited (status {self.process.returncode}); last lines of "
                f"{self.stderr_path}:\n" + _tail(self.stderr_path)
            )
        reply = json.loads(line)
        if reply.get("event") != expected:
            message = reply.get("message", reply)
            raise DaliUnavailable(f"dali_runner.py answered {expected!r} with: {message}")
        return reply

    def request(self, command: dict[str, Any]) -> dict[str, Any]:
        if self.process.poll() is not None:
            raise DaliUnavailable(f"dali_runner.py is not running (see {self.stderr_path})")
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._reply(command["cmd"])

    def overhead(self, batches: int, size: int = 16) -> Overhead:
        reply = self.request(
            {"cmd": "overhead", "batches": batches, "size": size, "threads": NUM_THREADS}
        )
        return Overhead(f"DALI {self.version} CPU", reply["without_us"], reply["with_us"])

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write('{"cmd": "quit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self._stderr.close()


class DaliPipeline(Contender):
    """DALI's CPU-only pipeline of a workload (``device_id=None``), run by ``runner``: built
    afresh for every pass (with a new seed) and deleted after it, one untimed batch, then
    ``batches`` timed."""

    def __init__(
        self,
        workload: Workload,
        batches: int,
        file_root: Path,
        runner: DaliRunner,
        exec_mode: str = "default",
    ) -> None:
        super().__init__(workload, batches)
        self.file_root = file_root
        self.runner = runner
        self.exec_mode = exec_mode
        self.label = f"NVIDIA DALI {runner.version} CPU"
        if exec_mode == "sync":
            self.label += ", exec_async=False, exec_pipelined=False"
        self.libcuda_loaded = False
        self.setup_seconds: list[float] = []
        self.passes = 0

    def run_pass(self) -> PassTiming:
        reply = self.runner.request(
            {
                "cmd": "pass",
                "workload": self.workload.key,
                "batches": self.batches,
                "data": str(self.file_root),
                "threads": NUM_THREADS,
                # A new seed for every fresh pipeline: the passes shuffle the files anew,
                # instead of repeating the same first batches.
                "seed": PIPELINE_SEED + self.passes,
                "exec": self.exec_mode,
            }
        )
        self.passes += 1
        if reply["images"] != self.batches * BATCH_SIZE * self.workload.images_per_sample:
            raise DaliUnavailable(f"DALI delivered {reply['images']} images")
        self.libcuda_loaded |= bool(reply["libcuda_loaded"])
        self.setup_seconds.append(reply["setup_s"])
        return PassTiming(reply["images"], reply["seconds"])
