"""Augment a whole data set offline with Ray Data: ``data/images`` read through an augkit pipeline
in 2 shards (``augkit.ray.read_pipeline``), augmented again on a pool of Ray actors
(``augkit.ray.Augment``, each row's draws keyed by its file), written as Parquet with Ray's
writer, read back and counted.

Run::

    python examples/augment_dataset_with_ray.py --out out/augmented

It starts a Ray on this machine that stays on loopback (``augkit.ray.init_local``), prints the
number of rows written (the 15 photos) and stops Ray. The same seeds give the same rows on any
number of actors and shards of the same count. On a cluster, replace
``init_local`` by ``ray.init(address="auto")`` and give a path every node can write (see
``docs/scale_out.md``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import augkit.ray
from augkit import fn, pipeline_def, types

DATA = Path(__file__).resolve().parent.parent / "data" / "images"


@pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=42)
def read_photos(shard_id: int = 0, num_shards: int = 1) -> Any:
    """Decode, resize to 64x64 and flip some: one shard of ``data/images`` per read task."""
    jpegs, labels = fn.readers.file(
        file_root=str(DATA), shard_id=shard_id, num_shards=num_shards, random_shuffle=True
    )
    images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=(64, 64))
    return fn.flip(images, horizontal=fn.random.coin_flip()), labels, fn.shapes(jpegs)


@pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=7)
def rotate_and_shade() -> Any:
    """The actors' stage: a random rotation and brightness per row."""
    images = fn.external_source(name="image", layout="HWC")
    images = fn.rotate(images, angle=fn.random.uniform(range=(-20, 20)), keep_size=True)
    return fn.brightness(images, brightness=fn.random.uniform(range=(0.7, 1.3)))


def augment_to_parquet(out: Path) -> int:
    """Read, augment and write ``data/images`` to ``out``; returns the number of rows read back
    from the files written. Ray must be started."""
    import ray

    ds = augkit.ray.read_pipeline(
        read_photos, num_shards=2, output_names=["image", "label", "size"]
    )
    # a stable id per row: its file's encoded size (the 15 files differ)
    ds = ds.map_batches(_with_ids, batch_format="numpy")
    stage = augkit.ray.Augment(
        rotate_and_shade, input_names=["image"], output_names=["image"], id_column="id"
    )
    # 2 read tasks of 1 CPU and 2 actors on 2 CPUs: the actors take half a CPU each, so
    # that the read tasks always find one (augkit.ray: the CPU rule).
    ds = ds.map_batches(
        stage, batch_format="numpy", num_cpus=0.5, compute=ray.data.ActorPoolStrategy(size=2)
    )
    ds.write_parquet(str(out))
    return ray.data.read_parquet(str(out)).count()


def _with_ids(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sizes = batch["size"].reshape(len(batch["size"]), -1)[:, 0].astype(np.int64)
    batch["id"] = sizes
    return batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/augmented"))
    args = parser.parse_args(argv)
    with augkit.ray.local_ray(num_cpus=2):
        rows = augment_to_parquet(args.out)
    print(f"{rows} rows written to {args.out}")
    return 0 if rows == 15 else 1


if __name__ == "__main__":
    sys.exit(main())
