"""The benchmark's results: timings per contender, the Markdown table and the bar chart."""

from __future__ import annotations

import statistics
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import workloads as wl


@dataclass
class Timing:
    """The passes of one contender of one workload: images/s by round number; ``failed`` says
    why it stopped being timed, if it did; ``busy_after``, how many cores it kept busy for a
    moment after its warm-up pass, when it should have left them idle."""

    rates: dict[int, float] = field(default_factory=dict)
    failed: str | None = None
    busy_after: float = 0.0  # cores kept busy just after a warm-up pass

    @property
    def median(self) -> float:
        return statistics.median(self.rates.values())

    def ratio(self, baseline: Timing | None) -> float | None:
        """Median over the rounds both were timed in of this rate over the baseline's rate in
        the same round (None when they share no round)."""
        if baseline is None:
            return None
        common = sorted(set(self.rates) & set(baseline.rates))
        if not common:
            return None
        return statistics.median(self.rates[r] / baseline.rates[r] for r in common)


@dataclass
class Results:
    """Every timing, by (contender label, workload key); ``labels`` in table order."""

    labels: list[str]
    keys: str
    cells: dict[tuple[str, str], Timing]
    dali_label: str | None
    plain_label: str
    bound_label: str | None = None

    def bound_keys(self) -> str:
        """The workloads that have a bound row (issue 11: (a) and (b))."""
        return "".join(k for k in self.keys if (self.bound_label, k) in self.cells)

    def get(self, label: str | None, key: str) -> Timing | None:
        if label is None:
            return None
        timing = self.cells.get((label, key))
        return timing if timing is not None and timing.rates else None


def collect(contenders: list[wl.Contender], timings: dict[int, Timing]) -> Results:
    """Group the timings by contender label and workload; DALI first, then plain Python."""
    labels = list(dict.fromkeys(c.label for c in contenders))
    dalis = [label for label in labels if "DALI" in label]
    plain = next(label for label in labels if label.startswith("plain Python"))
    first = [*dalis, plain]
    labels = first + [label for label in labels if label not in first]
    cells = {(c.label, c.workload.key): timings[i] for i, c in enumerate(contenders)}
    keys = "".join(dict.fromkeys(c.workload.key for c in contenders))
    bound = next((label for label in labels if label == wl.BOUND_LABEL), None)
    return Results(labels, keys, cells, dalis[0] if dalis else None, plain, bound)


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def render_table(results: Results, dali_missing: str | None) -> list[str]:
    """The Markdown table: a row per contender, three columns per workload (median img/s with
    min–max, × DALI, × plain Python), and a fourth, × bound, for the workloads with a bound
    row (issue 11)."""
    header, rule = "| contender |", "|---|"
    bound_keys = results.bound_keys()
    for k in results.keys:
        header += f" ({k}) img/s, median (min–max) | ({k}) × DALI | ({k}) × plain |"
        rule += "---:|---:|---:|"
        if k in bound_keys:
            header += f" ({k}) × bound |"
            rule += "---:|"
    lines = [header, rule]
    late_failures = []
    for label in results.labels:
        row = f"| {label} |"
        for k in results.keys:
            cell = results.cells.get((label, k))
            timing = results.get(label, k)
            empty = " – |" if k in bound_keys else ""
            if cell is None:
                row += " – | – | – |" + empty
                continue
            if timing is None:
                row += f" failed ({cell.failed}) | – | – |" + empty
                continue
            note = ""
            if cell.failed:
                late_failures.append(f"({k}) {label}: {cell.failed}")
                note = " ³"
            dali = timing.ratio(results.get(results.dali_label, k))
            plain = timing.ratio(results.get(results.plain_label, k))
            rates = timing.rates.values()
            row += (
                f" {timing.median:.0f} ({min(rates):.0f}–{max(rates):.0f}){note} |"
                f" {_ratio(dali)} | {_ratio(plain)} |"
            )
            if k in bound_keys:
                row += f" {_ratio(timing.ratio(results.get(results.bound_label, k)))} |"
        lines.append(row)
    if dali_missing is not None:
        row = f"| NVIDIA DALI CPU: **not available** ({dali_missing}) |"
        row += "".join(" – | – | – |" + (" – |" if k in bound_keys else "") for k in results.keys)
        lines.append(row)
    if late_failures:
        lines += ["", "³ failed in a later round (timed in the rounds before it): "]
        lines[-1] += "; ".join(late_failures) + "."
    return lines


def render_busy_after(results: Results, limit: float) -> list[str]:
    """A warning line for every contender that kept computing after its pass."""
    busy = [
        f"({k}) {label}: {t.busy_after:.2f} cores"
        for (label, k), t in results.cells.items()
        if t.busy_after > limit
    ]
    if not busy:
        return []
    return [
        "**Kept the CPUs busy after its pass** (measured over 0.25 s after the warm-up pass; "
        "it slows down whichever contender comes next, and its own figure is too high): "
        + "; ".join(busy)
        + ".",
        "",
    ]


def write_chart(results: Results, path: Path, title: str) -> None:
    """A grouped bar chart of the median images/s (whiskers: min–max over rounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = results.keys
    labels = [lab for lab in results.labels if any((lab, k) in results.cells for k in keys)]
    width = 0.8 / max(len(labels), 1)
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=80)
    colors = plt.get_cmap("tab10").colors
    for j, label in enumerate(labels):
        xs, ys, lows, highs = [], [], [], []
        for i, k in enumerate(keys):
            timing = results.get(label, k)
            x = i - 0.4 + width * (j + 0.5)
            if timing is None:
                if (label, k) in results.cells:  # timed nowhere: it failed
                    ax.text(x, 0, " failed", rotation=90, ha="center", va="bottom", fontsize=7)
                continue
            rates = timing.rates.values()
            xs.append(x)
            ys.append(timing.median)
            lows.append(timing.median - min(rates))
            highs.append(max(rates) - timing.median)
        bars = ax.bar(
            xs,
            ys,
            width * 0.92,
            yerr=[lows, highs],
            capsize=2,
            label=label,
            color=colors[j % len(colors)],
            error_kw={"linewidth": 0.8},
        )
        ax.bar_label(bars, labels=[f"{y:.0f}" for y in ys], fontsize=7, padding=1)
    ticks = [textwrap.fill(f"({k}) {wl.WORKLOADS[k].title}", 34) for k in keys]
    ax.set_xticks(range(len(keys)), ticks, fontsize=8)
    ax.set_ylabel("images/s (median over rounds)")
    ax.set_title(title, fontsize=9)
    top = max((t.rates and max(t.rates.values())) or 0 for t in results.cells.values())
    ax.set_ylim(0, top * 1.35 if top else 1)
    ax.legend(fontsize=7, loc="upper center", ncols=3, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
