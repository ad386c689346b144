"""The machine the benchmark runs on: what it is, and how busy other processes kept it.

On a shared machine the absolute figures move with whatever else runs; the rounds interleave
the contenders so that the paired ratios hold up, and ``CpuMeter`` says how much of the CPU
went to processes outside the benchmark's own process tree while it ran (if that is more than a
few percent, rerun on a quiet machine before trusting the absolute images/s).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_info(root: Path, blocks_max: int) -> list[str]:
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
    cpu = cpu_model()
    commit = subprocess.run(
        ["git", "-C", str(root), "describe", "--always", "--dirty"],
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


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def _machine_seconds() -> tuple[float, float]:
    """CPU seconds the machine (all cores) has spent busy, and stolen by the hypervisor."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = values[:7]
    steal = values[7] if len(values) > 7 else 0
    return (user + nice + system + irq + softirq) / CLOCK_TICKS, steal / CLOCK_TICKS


def tree_seconds() -> float:
    """CPU seconds of this process and all its descendants, live or reaped."""
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    parents: dict[int, int] = {}
    own: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        # utime, stime, and the times of its reaped children (cutime, cstime)
        own[pid] = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS
    me = os.getpid()
    for pid in own:
        ancestor, hops = parents.get(pid), 0
        while ancestor not in (None, 0, 1, me) and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor == me and pid != me:
            total += own[pid]
    return total


def busy_after(seconds: float = 0.25) -> float:
    """Cores that this process tree keeps busy while it should be idle: its CPU time over
    ``seconds`` of sleep, divided by them."""
    before = tree_seconds()
    time.sleep(seconds)
    return (tree_seconds() - before) / seconds


@dataclass
class CpuShare:
    """Over an interval: wall seconds, and the shares of the machine's CPU capacity used by
    the benchmark's process tree, by other processes, and stolen by the hypervisor."""

    seconds: float
    tree: float
    others: float
    stolen: float


class CpuMeter:
    """Measures, between ``start()`` and ``stop()``, who used the machine's CPUs."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1  # /proc/stat adds up every CPU of the machine
        self._start: tuple[float, float, float, float] | None = None

    def _sample(self) -> tuple[float, float, float, float]:
        busy, steal = _machine_seconds()
        return time.perf_counter(), busy, steal, tree_seconds()

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> CpuShare:
        assert self._start is not None
        wall0, busy0, steal0, tree0 = self._start
        wall1, busy1, steal1, tree1 = self._sample()
        capacity = max((wall1 - wall0) * self.cores, 1e-9)
        tree = tree1 - tree0
        others = max(busy1 - busy0 - tree, 0.0)
        return CpuShare(
            wall1 - wall0, tree / capacity, others / capacity, (steal1 - steal0) / capacity
        )
