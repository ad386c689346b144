"""Run DALI's "Python Operators" tutorial on augkit and save its image grids as PNG files.

    python examples/tutorial.py --out out

The tutorial's code is ``examples/python_operators_tutorial.py`` (DALI's, imports changed);
this script runs it with matplotlib's non-interactive backend and writes each figure the
tutorial's ``show_images`` drew: ``python_function_1.png``, ``python_function_2.png`` (the two
outputs of ``edit_images``), ``torch_perspective.png`` and ``dlpack_sqrt_reversed.png``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import runpy
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "examples" / "python_operators_tutorial.py"
FIGURES = (
    "python_function_1",
    "python_function_2",
    "torch_perspective",
    "dlpack_sqrt_reversed",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "out")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)  # the tutorial's image_dir is relative to the repository root
    start = time.perf_counter()
    runpy.run_path(str(TUTORIAL), run_name="__main__")
    seconds = time.perf_counter() - start
    numbers = plt.get_fignums()
    if len(numbers) != len(FIGURES):
        raise SystemExit(f"the tutorial drew {len(numbers)} figures, expected {len(FIGURES)}")
    for number, name in zip(numbers, FIGURES, strict=True):
        figure = plt.figure(number)
        path = out / f"{name}.png"
        figure.savefig(path, dpi=40, bbox_inches="tight")
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    print(f"tutorial ran in {seconds:.1f} s")


if __name__ == "__main__":
    main()
