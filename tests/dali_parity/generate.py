"""Runs every parity case on NVIDIA DALI 2.4 (CPU only) and stores its outputs.

Run with the DALI venv's Python from the repository root (``make dali-reference``)::

    benchmarks/_work/dali-venv/bin/python tests/dali_parity/generate.py [FAMILY ...] [--out DIR]

It writes ``<DIR>/<family>.npz`` (default DIR: ``tests/dali_parity/reference``) for the families
named (default: all): entries ``"<case>:<output>/<sample>"`` and ``"<case>:layouts"``. A case
DALI refuses is reported on stderr and left out (the augkit test then fails saying that its
reference is missing). Needs nvidia-dali and NumPy only.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import traceback

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from tests.dali_parity.base import REFERENCE, families, flatten, load_inputs, run_case


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="*")
    parser.add_argument("--out", type=pathlib.Path, default=REFERENCE)
    options = parser.parse_args()

    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    inputs = load_inputs()
    found = families()
    wanted = options.families or sorted(found)
    failed = 0
    for family in wanted:
        if family not in found:
            print(f"no family {family!r} (have: {', '.join(sorted(found))})", file=sys.stderr)
            return 2
        entries: dict[str, np.ndarray] = {}
        for case in found[family]:
            try:
                outputs, layouts = run_case(Pipeline, fn, types, case, inputs)
            except Exception:
                failed += 1
                print(
                    f"{family}/{case.name}: DALI failed:\n{traceback.format_exc()}", file=sys.stderr
                )
                continue
            for key, value in flatten(outputs, layouts).items():
                entries[f"{case.name}:{key}"] = value
        options.out.mkdir(parents=True, exist_ok=True)
        path = options.out / f"{family}.npz"
        np.savez_compressed(path, **entries)
        print(f"{family}: {len(found[family])} cases -> {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
