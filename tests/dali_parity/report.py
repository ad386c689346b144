"""Writes ``docs/dali_parity.md``: for every parity case, how close augkit's output is to DALI
2.4's stored one (``make dali-parity``; run in augkit's venv from the repository root)."""

from __future__ import annotations

import pathlib

import numpy as np

from augkit import fn, types
from augkit.pipeline import Pipeline
from tests.dali_parity.base import families, load_inputs, run_case, stored_outputs

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "dali_parity.md"

HEADER = """# augkit against DALI 2.4 (CPU), operator by operator

Written by `make dali-parity` (`tests/dali_parity/report.py`) from the parity cases of
`tests/dali_parity/cases_*.py`: each case runs on the same fixed inputs (small photos of
`data/images`, `tests/dali_parity/reference/inputs.npz`) in augkit and in DALI 2.4 on the CPU
(DALI's outputs are stored in `tests/dali_parity/reference/`, and `tests/test_dali_parity.py`
checks augkit against them on every `make test`). Differences are in the output's units (levels
for uint8 outputs); "identical" is the share of output elements that are bit for bit DALI's.
The tolerance column is what the test allows (largest / mean).

Operators DALI runs on the GPU only (`jitter`, `experimental.median_blur`, `experimental.dilate`,
`experimental.erode`) and random operators (whose streams differ from DALI's by design) are
checked against independent references and by their distributions instead, in
`tests/operators/`. `readers.coco` has cases of its own (a reader, not an operator on fixed
inputs: `tests/dali_parity/coco_reference.py`, checked by `tests/test_dali_parity_coco.py`): 25
cases over COCO files with non-contiguous category ids, empty images, two-polygon and crowd
(RLE) objects, every output bit for bit DALI's, pixelwise masks included.
"""


def main() -> None:
    inputs = load_inputs()
    lines = [HEADER]
    summary: list[str] = []
    for family, cases in families().items():
        stored = stored_outputs(family)
        rows: list[tuple[float, float]] = []
        lines += [
            f"\n## {family.replace('_', ' ')}\n",
            "| case | max \\|diff\\| | mean \\|diff\\| | identical | tolerance | note |",
            "| --- | ---: | ---: | ---: | --- | --- |",
        ]
        for case in cases:
            if case.name not in stored:
                lines.append(f"| `{case.name}` | – | – | – | – | no DALI reference |")
                continue
            (ours, _), (dalis, _) = run_case(Pipeline, fn, types, case, inputs), stored[case.name]
            largest, total, same, count = 0.0, 0.0, 0, 0
            for mine, theirs in zip(ours, dalis, strict=True):
                for a, b in zip(mine, theirs, strict=True):
                    if a.shape != b.shape:
                        largest = float("inf")
                        continue
                    a, b = a.astype(np.float64), b.astype(np.float64)
                    equal = (a == b) | (np.isnan(a) & np.isnan(b))
                    with np.errstate(invalid="ignore"):
                        d = np.where(equal, 0.0, np.abs(a - b))
                    d = np.where(np.isnan(d), np.inf, d)
                    largest = max(largest, float(d.max(initial=0)))
                    total += float(d.sum())
                    same += int((d == 0).sum())
                    count += d.size
            mean = total / count if count else 0.0
            share = same / count if count else 1.0
            tolerance = f"{'any' if case.max_diff is None else f'{case.max_diff:g}'} / "
            tolerance += f"{case.mean_diff:g}"
            lines.append(
                f"| `{case.name}` | {largest:.4g} | {mean:.3g} | {share:.1%} | {tolerance} "
                f"| {case.note} |"
            )
            rows.append((largest, mean))
        exact = sum(1 for largest, _ in rows if largest == 0)
        worst = max((largest for largest, _ in rows), default=0.0)
        worst_mean = max((mean for _, mean in rows), default=0.0)
        summary.append(
            f"| {family.replace('_', ' ')} | {len(cases)} | {exact} | {worst:.4g} | "
            f"{worst_mean:.3g} |"
        )
    total = sum(int(row.split("|")[2]) for row in summary)
    exact_total = sum(int(row.split("|")[3]) for row in summary)
    lines[1:1] = [
        "\n## Summary\n",
        f"{total} cases, {exact_total} of them bit for bit DALI's output.\n",
        "| family | cases | identical to DALI | largest \\|diff\\| | largest mean \\|diff\\| |",
        "| --- | ---: | ---: | ---: | ---: |",
        *summary,
    ]
    DOC.write_text("\n".join(lines) + "\n")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
