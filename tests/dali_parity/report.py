"""Writes ``docs/dali_parity.md``: for every parity case, how close augkit's output is to DALI
2.4's stored one (``make dali-parity``; run in augkit's venv from the repository root)."""

from __future__ import annotations

import pathlib

from augkit import fn, types
from augkit.pipeline import Pipeline
from tests.dali_parity.base import differences, families, load_inputs, run_case, stored_outputs

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "dali_parity.md"

HEADER = """# augkit against DALI 2.4 (CPU), operator by operator

Written by `make dali-parity` (`tests/dali_parity/report.py`) from the parity cases of
`tests/dali_parity/cases_*.py`: each case runs on the same fixed inputs (small photos of
`data/images`, `tests/dali_parity/reference/inputs.npz`) in augkit and in DALI 2.4 on the CPU
(DALI's outputs are stored in `tests/dali_parity/reference/`, and `tests/test_dali_parity.py`
checks augkit against them on every `make test`). Differences are in the output's units (levels
for uint8 outputs); "identical" is the share of output elements that are bit for bit DALI's.
The tolerance column is what the test allows: "exact", or the largest / the mean difference of a
sample ("–": not bounded apart), and "on ≤ k a sample" where at most k elements of a sample may
differ at all. A case that is not exact gives its reason (`reason` in the case; a case without
one is refused).

Operators DALI runs on the GPU only (`jitter`, `experimental.median_blur`, `experimental.dilate`,
`experimental.erode`) and random operators (whose streams differ from DALI's by design) are
checked against independent references and by their distributions instead, in
`tests/operators/`. `readers.coco` has cases of its own (a reader, not an operator on fixed
inputs: `tests/dali_parity/coco_reference.py`, checked by `tests/test_dali_parity_coco.py`): 25
cases over COCO files with non-contiguous category ids, empty images, two-polygon and crowd
(RLE) objects, every output bit for bit DALI's, pixelwise masks included.

## Results that depend on the CPU

DALI's references were stored on an Intel Xeon; augkit's outputs are computed wherever the tests
run. OpenCV (and the Intel IPP inside it), NumPy and torch choose SIMD code when they load, by
the CPU's features, and some of those paths round floats differently, so a case can be bit for
bit DALI's on one CPU and a level off on another: `filters/filter_gray_large` was exact on an
AVX-512 AMD EPYC and one pixel a level off on another EPYC (as it is with OpenCV's AVX2 or
SSE4.2 IPP, emulated). A case is exact here only where its result is the same on every
dispatch; otherwise its tolerance covers every dispatch seen, and its reason says which path
depends on the CPU.

`test_matches_dali_on_other_cpus` (in `tests/test_dali_parity.py`) runs every case again with
another CPU's dispatch taken on the machine at hand (`OPENCV_CPU_DISABLE`, `OPENCV_IPP`,
`NPY_DISABLE_CPU_FEATURES`, `ATEN_CPU_CAPABILITY`, `JSIMD_FORCENONE`): an AVX2 CPU without
AVX-512, and nothing beyond x86-64's baseline. What depends on the dispatch (OpenCV 5.0 with IPP
2026.0, NumPy 2.4, torch 2.14; `tests/dali_parity/base.py` has the details):

- `cv2.filter2D` through a DFT (from 130 taps for 8-bit or float32 in and out, 50 for other
  type pairs): its float32 rounding follows the variant of IPP inside OpenCV. AVX-512 IPP (k0)
  or no IPP give DALI's bits; AVX2 (l9) or SSE4.2 (y8) IPP one pixel a level off
  (`filter_gray_large`).
- Float multiply-adds in `filter2D`'s direct loop, `sepFilter2D`, `warpAffine`,
  `warpPerspective` and `cv2.transform`: OpenCV's AVX2 dispatch fuses them (FMA), SSE4.x/AVX
  does not (AVX-512 gives AVX2's bits everywhere). Without FMA: a pixel a level off
  (`filter_per_sample_3x3`), 2.4e-6 on float32 values that are DALI's bits with FMA
  (`warp_perspective_input_reflect_float`), 6e-7 (`filter_float_input`); within the bounds of
  the gaussian, laplacian, warp and YCbCr cases.
- NumPy's float32 `exp`, `sin`, `arctan2`... (the `math` cases, the gaussian windows,
  `transforms`): its AVX2/AVX-512 loops differ from its baseline loop by an ulp (the baseline
  gives DALI's bits); one more gaussian blur pixel a level off (`gaussian_chw`).
- torch's bilinear resize (the linear resize's fast path): its AVX2/AVX-512 kernel against its
  scalar one, a level on 1-6% of the pixels (`resize_linear_default`, `rrc_fallback_linear`,
  within their bounds).

Not dependent on the dispatch: integer and fixed-point paths (`cvtColor`, `LUT`, Pillow's 8-bit
resampling, sums of integers), libjpeg-turbo's decoding (its SIMD is bit exact) and the float
paths without reassociation. `cv2.setUseOptimized(False)` shows OpenCV's part in-process (it
turns off both the dispatch and IPP).
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
            "| case | max \\|diff\\| | mean \\|diff\\| | identical | tolerance | reason / note |",
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
                    d = differences(a, b)
                    largest = max(largest, float(d.max(initial=0)))
                    total += float(d.sum())
                    same += int((d == 0).sum())
                    count += d.size
            mean = total / count if count else 0.0
            share = same / count if count else 1.0
            remark = "; ".join(text for text in (case.reason, case.note) if text)
            lines.append(
                f"| `{case.name}` | {largest:.4g} | {mean:.3g} | {share:.1%} | "
                f"{case.tolerance()} | {remark} |"
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
