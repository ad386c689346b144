"""The benchmark's results: timings per contender, the Markdown table and the bar chart."""

from __future__ import annotations

import statistics
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import workloads as wl

ROOT = Path(__file__).resolve().parent.parent


def log(message: str) -> None:
    """A benchmark's progress line, on stderr."""
    print(message, file=sys.stderr, flush=True)


def publish(text: str, path: Path) -> None:
    """Print a report and write it to ``path``, saying where."""
    print(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    log(f"written to {shown(path)}")


def shown(path: Path) -> str:
    """``path`` as the reports write it: relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


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


# --- the per-operator table (benchmarks/operators.py) ----------------------------------------

# The goals for the per-operator table (ratios in the same run).
OPERATOR_DALI_FLOOR = 1.0  # every operator, augkit / DALI CPU, one thread
OPERATOR_DALI_MEDIAN = 1.5  # the median of that column
OPERATOR_ALBUMENTATIONS_MEDIAN = 1.0  # the median of augkit / Albumentations


def _cell(text: str) -> str:
    """Text for a Markdown table cell (no pipes, one line)."""
    return " ".join(text.replace("|", "\\|").split())


def _median_of(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def render_operators(
    rows: list,
    *,
    rounds: int,
    batches: int,
    seconds_per_pass: float = float("inf"),
    images: int,
    data: Path,
    versions: dict,
    dali_missing: str | None,
    albumentations_missing: str | None,
    cpu: object,
    quick: bool,
    seconds: float,
    machine: list[str] | None = None,
) -> list[str]:
    """The per-operator report: a row per operator (images/s of augkit on one thread, DALI CPU
    on one thread, Albumentations; the paired ratios augkit/DALI on one and two threads and
    augkit/Albumentations), the medians of the ratio columns, the goals, and the calls.

    ``rows`` are ``benchmarks.operators.Row``: ``pair``, ``timings`` (contender -> Timing) and
    ``absent`` (contender -> why it was not timed)."""
    ratios: dict[str, list[tuple[str, float]]] = {"dali1": [], "dali2": [], "albu": []}
    table = [
        "| operator | augkit, 1 thread, img/s | DALI, 1 thread, img/s | Albumentations, img/s "
        "| augkit / DALI, 1 thread | augkit / DALI, 2 threads | augkit / Albumentations "
        "| notes |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    not_in_augkit, failures = [], []
    for row in rows:
        name = row.pair.name

        def timing(contender: str, row=row) -> Timing | None:
            t = row.timings.get(contender)
            return t if t is not None and t.rates else None

        notes = list(
            dict.fromkeys(
                why for c, why in row.absent.items() if not why.startswith("Albumentations has no")
            )
        )
        if not getattr(row.pair, "counted", True):
            notes.insert(0, "the floor, not counted in the medians")
        if any(c.startswith("augkit") for c in row.absent):
            not_in_augkit.append(name)
        for contender, t in row.timings.items():
            if t.failed:
                threads = contender.split()[-1]
                who = (
                    contender
                    if not threads.isdigit()
                    else (
                        f"{contender.split()[0]}, {threads} thread{'s' if threads != '1' else ''}"
                    )
                )
                late = " (in a later round)" if t.rates else ""
                notes.append(f"{who} failed{late}: {t.failed}")
                failures.append(f"{name}, {who}: {t.failed}")
        a1, a2 = timing("augkit 1"), timing("augkit 2")
        d1, d2, al = timing("DALI 1"), timing("DALI 2"), timing("Albumentations")
        r1 = a1.ratio(d1) if a1 else None
        r2 = a2.ratio(d2) if a2 else None
        ra = a1.ratio(al) if a1 else None
        for key, value in (("dali1", r1), ("dali2", r2), ("albu", ra)):
            if value is not None and getattr(row.pair, "counted", True):
                ratios[key].append((name, value))

        def rate(t: Timing | None) -> str:
            return "–" if t is None else f"{t.median:.0f}"

        table.append(
            f"| `{name}` | {rate(a1)} | {rate(d1)} | {rate(al)} | {_ratio(r1)} | {_ratio(r2)} "
            f"| {_ratio(ra)} | {_cell('; '.join(notes))} |"
        )
    med1 = _median_of([v for _, v in ratios["dali1"]])
    med2 = _median_of([v for _, v in ratios["dali2"]])
    meda = _median_of([v for _, v in ratios["albu"]])

    def verdict(ok: bool | None) -> str:
        return "not measured" if ok is None else ("met" if ok else "**missed**")

    below = sorted((v, n) for n, v in ratios["dali1"] if v < OPERATOR_DALI_FLOOR)
    below_text = ", ".join(f"`{n}` {v:.2f}×" for v, n in below) or "none"
    summary = [
        f"Medians of the ratio columns: augkit / DALI, 1 thread **{_ratio(med1)}** "
        f"({len(ratios['dali1'])} operators); 2 threads **{_ratio(med2)}** "
        f"({len(ratios['dali2'])}); augkit / Albumentations **{_ratio(meda)}** "
        f"({len(ratios['albu'])}).",
        "",
        "Goals:",
        "",
        f"- every operator ≥ {OPERATOR_DALI_FLOOR}× DALI CPU on one thread: "
        f"{verdict(None if not ratios['dali1'] else not below)}; below it: {below_text}",
        f"- median ≥ {OPERATOR_DALI_MEDIAN}× DALI CPU on one thread: {_ratio(med1)}: "
        f"{verdict(None if med1 is None else med1 >= OPERATOR_DALI_MEDIAN)}",
        f"- median ≥ {OPERATOR_ALBUMENTATIONS_MEDIAN}× Albumentations on the shared operators: "
        f"{_ratio(meda)}: "
        f"{verdict(None if meda is None else meda >= OPERATOR_ALBUMENTATIONS_MEDIAN)}",
    ]
    if not_in_augkit:
        summary.append(
            f"- not in augkit yet ({len(not_in_augkit)}, not counted): "
            + ", ".join(f"`{n}`" for n in not_in_augkit)
        )
    if failures:
        summary.append(f"- failed ({len(failures)}): " + "; ".join(failures))
    share = cpu
    busy = (
        " (**a busy machine**: the absolute figures are low and spread; the paired ratios "
        "hold up better)"
        if getattr(share, "others", 0.0) > 0.1
        else ""
    )
    albumentations = (
        f"Albumentations {versions.get('albumentations')} (OpenCV {versions.get('opencv')}, "
        "`cv2.setNumThreads(1)`)"
        if versions.get("albumentations")
        else f"Albumentations: **not available** ({albumentations_missing})"
    )
    dali = (
        f"NVIDIA DALI {versions['dali']} CPU (`device_id=None`)"
        if versions.get("dali")
        else f"NVIDIA DALI CPU: **not available** ({dali_missing})"
    )
    cap = (
        f", fewer for a slow operator (the pass stops after the batch that ends past "
        f"{seconds_per_pass:g} s)"
        if seconds_per_pass != float("inf")
        else ""
    )
    quick_note = " (`--quick`: the figures only show that the table runs)" if quick else ""
    head = [
        "# augkit per-operator throughput",
        "",
        *(machine or []),
        f"- augkit {versions.get('augkit', '?')} (this venv); {dali} and {albumentations} in "
        "the side venv's process (`benchmarks/dali_runner.py`)",
        f"- inputs: the {images} photos of `{data.name}` resized once to 320×320 (Pillow "
        "`BILINEAR`), uint8 HWC; the `decoders.*` rows decode the JPEG files themselves "
        "(300–1200 px)",
        f"- augkit and DALI: a pipeline `external_source(no_copy=True) -> operator`, batch 32, "
        "`num_threads` 1 and 2, the default executor; one untimed batch, then "
        f"{batches} batches timed per pass{cap} (the source's cost is in both and not "
        "subtracted); Albumentations: a plain loop `transform(image=img)` over the same images, "
        "one thread",
        f"- {rounds} round(s){quick_note}: each round goes through the operators in an order "
        "rotated by one, the contenders "
        "of an operator timed one after the other; img/s: median over rounds; ratios: median "
        "over rounds of the ratio of the two passes of the same round",
        f"- during the rounds ({getattr(share, 'seconds', 0.0):.0f} s): the benchmark's "
        f"processes used {getattr(share, 'tree', 0.0):.0%} of the machine's CPU time, other "
        f"processes {getattr(share, 'others', 0.0):.0%}{busy}",
        "",
    ]
    calls = [
        "## The calls",
        "",
        "The same body runs in augkit and in DALI (`x`: the external source); `_uniform(fn, a, "
        "b)` is `fn.random.uniform(range=[a, b])` (a draw per sample); `same_for_all(fn, v)` "
        "and `this_and_next(fn)` are external sources giving every sample `v`, and sample `i` "
        "the ids `[i, i + 1]`; `_jitter(A, ...)` is "
        "Albumentations' `ColorJitter` with only those factors moving (the others at their "
        "identity, which its kernels skip). Every transform has `p=1`. Albumentations' crops "
        "return views of the input (no copy), which DALI and augkit do not.",
        "",
        "| operator | augkit and DALI | Albumentations | note |",
        "|---|---|---|---|",
    ]
    from benchmarks.operators import lambda_text

    for row in rows:
        pair = row.pair
        albu = lambda_text(pair.albumentations)
        note = pair.note + ("; DALI runs it on the GPU only" if not pair.dali_cpu else "")
        calls.append(
            f"| `{pair.name}` | `{_cell(lambda_text(pair.body))}` | "
            f"{'–' if albu == '–' else '`' + _cell(albu) + '`'} | {_cell(note.strip('; '))} |"
        )
    return [
        *head,
        *table,
        "",
        *summary,
        "",
        *calls,
        "",
        f"Run time: {seconds:.0f} s.",
    ]
