"""DALI 2.4's ``fn.readers.coco`` outputs on the COCO files of ``tests/data/coco``, stored in
``tests/dali_parity/reference/coco.npz`` and compared with augkit's by
``tests/test_dali_parity_coco.py``.

Run with DALI's venv, from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/dali_parity/coco_reference.py

Why a generator of its own: the shared harness (``base.py``/``generate.py``) feeds operators
from external-source input sets, and a reader has no input. The cases live here (not in a
``cases_coco.py``, which ``base.families()`` would pick up as a family of external-source cases
and ``generate.py`` would overwrite ``coco.npz`` with).

A case reads whole batches: ``batch_size`` samples, ``iterations`` times (more than an epoch
where it says so), shuffling off. Stored per case: every output's samples
("<case>:<output>/<sample>"; the images' bytes as their SHA-256), the layouts and each sample's
``source_info``.
NumPy and DALI only: this file must import in both venvs (DALI is imported in ``main``).
"""

from __future__ import annotations

import hashlib
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "coco"
OUT = pathlib.Path(__file__).resolve().parent / "reference" / "coco.npz"
SETS = {  # name -> (file_root, annotations_file), relative to the repository root
    "instances": ("tests/data/coco/images", "tests/data/coco/instances.json"),
    "photos": ("data/images", "tests/data/coco/photos.json"),
    "quirks": ("tests/data/coco/images", "tests/data/coco/quirks.json"),
}


@dataclass(frozen=True)
class CocoCase:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    data: str = "instances"
    batch_size: int = 5
    iterations: int = 1
    note: str = ""


CASES = [
    CocoCase("default"),
    CocoCase("ltrb", {"ltrb": True}),
    CocoCase("ratio", {"ratio": True}),
    CocoCase("ltrb_ratio_ids", {"ltrb": True, "ratio": True, "image_ids": True}),
    CocoCase("polygons", {"polygon_masks": True}),
    CocoCase("polygons_ratio", {"polygon_masks": True, "ratio": True}),
    CocoCase(
        "polygons_ltrb_ratio_ids",
        {"polygon_masks": True, "ltrb": True, "ratio": True, "image_ids": True},
    ),
    CocoCase("legacy_masks", {"masks": True}),
    CocoCase("pixelwise", {"pixelwise_masks": True}),
    CocoCase(
        "pixelwise_ratio_ltrb_ids",
        {"pixelwise_masks": True, "ratio": True, "ltrb": True, "image_ids": True},
    ),
    CocoCase("pixelwise_no_iscrowd", {"pixelwise_masks": True, "include_iscrowd": False}),
    CocoCase("no_iscrowd_polygons", {"include_iscrowd": False, "polygon_masks": True}),
    CocoCase("avoid_class_remapping", {"avoid_class_remapping": True, "image_ids": True}),
    CocoCase("avoid_remapping_pixelwise", {"avoid_class_remapping": True, "pixelwise_masks": True}),
    CocoCase("skip_empty", {"skip_empty": True, "image_ids": True}, batch_size=4),
    CocoCase(
        "skip_empty_polygons_remap",
        {"skip_empty": True, "polygon_masks": True, "avoid_class_remapping": True},
        batch_size=4,
    ),
    CocoCase("size_threshold_small", {"size_threshold": 0.01, "polygon_masks": True}),
    CocoCase("size_threshold_large", {"size_threshold": 20.0, "skip_empty": True}, batch_size=3),
    CocoCase(
        "images_listed",
        {"images": ["hubble.jpg", "cat.jpg", "hubble.jpg", "coins.jpg"], "image_ids": True},
        batch_size=4,
    ),
    CocoCase("two_epochs", {"image_ids": True}, batch_size=3, iterations=4),
    CocoCase(
        "shard_0_of_2",
        {"num_shards": 2, "shard_id": 0, "image_ids": True},
        batch_size=2,
        iterations=2,
    ),
    CocoCase(
        "shard_1_of_2_padded",
        {"num_shards": 2, "shard_id": 1, "pad_last_batch": True, "image_ids": True},
        batch_size=2,
        iterations=3,
    ),
    CocoCase(
        "photos_pixelwise",
        {"pixelwise_masks": True, "image_ids": True},
        data="photos",
        batch_size=3,
    ),
    CocoCase(
        "photos_polygons_ratio",
        {"polygon_masks": True, "ratio": True, "ltrb": True},
        data="photos",
        batch_size=3,
    ),
    CocoCase("quirks_pixelwise", {"pixelwise_masks": True}, data="quirks", batch_size=2),
]


def run_case(fn: Any, pipeline_def: Any, case: CocoCase, root: pathlib.Path = ROOT) -> dict:
    """``case`` run by a library (DALI's or augkit's ``fn`` and ``pipeline_def``): per output,
    the samples of every iteration; the layouts; each sample's source_info."""
    file_root, annotations = SETS[case.data]

    @pipeline_def(batch_size=case.batch_size, num_threads=1, device_id=None, seed=1234)
    def pipe_def():
        outs = fn.readers.coco(
            file_root=str(root / file_root), annotations_file=str(root / annotations), **case.args
        )
        return tuple(outs)

    pipe = pipe_def()
    pipe.build()
    outputs: list[list[np.ndarray]] = []
    infos: list[str] = []
    layouts: list[str] = []
    for _ in range(case.iterations):
        result = pipe.run()
        layouts = [str(out.layout() or "") for out in result]
        while len(outputs) < len(result):
            outputs.append([])
        for k, out in enumerate(result):
            outputs[k] += [np.array(out.at(i)) for i in range(len(out))]
        infos += [result[0][i].source_info() for i in range(len(result[0]))]
    del pipe
    return {"outputs": outputs, "layouts": layouts, "source_info": infos}


def digest(data: np.ndarray) -> np.ndarray:
    """SHA-256 of an image's bytes (stored instead of the bytes: the photos are large)."""
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(data).tobytes()).digest(), np.uint8)


def flatten(case: str, result: dict) -> dict[str, np.ndarray]:
    """npz entries of a case's result; the images' bytes (output 0) as their ``digest``."""
    entries = {
        f"{case}:{k}/{i}": digest(sample) if k == 0 else sample
        for k, samples in enumerate(result["outputs"])
        for i, sample in enumerate(samples)
    }
    entries[f"{case}:layouts"] = np.array(result["layouts"], dtype="U16")
    # source_info relative to file_root, as the JSON writes it
    entries[f"{case}:source_info"] = np.array(result["source_info"], dtype="U200")
    return entries


def load(path: pathlib.Path = OUT) -> dict[str, dict]:
    """The stored outputs: case name -> {"outputs", "layouts", "source_info"}."""
    found: dict[str, dict] = {}
    with np.load(path, allow_pickle=False) as stored:
        for key in stored.files:
            case, rest = key.split(":", 1)
            entry = found.setdefault(case, {"outputs": []})
            if rest in ("layouts", "source_info"):
                entry[rest] = [str(s) for s in stored[key].tolist()]
                continue
            k, i = (int(p) for p in rest.split("/"))
            outputs = entry["outputs"]
            while len(outputs) <= k:
                outputs.append({})
            outputs[k][i] = stored[key]
    for entry in found.values():
        entry["outputs"] = [[d[i] for i in sorted(d)] for d in entry["outputs"]]
    return found


def main() -> int:
    import argparse

    import nvidia.dali.fn as fn
    from nvidia.dali import pipeline_def

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="the .npz to write")
    out = parser.parse_args().out

    entries: dict[str, np.ndarray] = {}
    for case in CASES:
        result = run_case(fn, pipeline_def, case)
        entries.update(flatten(case.name, result))
        print(
            f"{case.name}: {len(result['outputs'])} outputs, {len(result['source_info'])} samples"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **entries)
    print(f"{len(CASES)} cases -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
