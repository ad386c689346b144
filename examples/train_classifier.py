"""Train a small CNN on ``data/images`` (15 photos, 5 class folders) on the CPU, fed by
augkit's ``DALIClassificationIterator``: the data-loading code of DALI's ResNet-50 example
(``readers.file`` with shards, ``decoders.image_random_crop``, ``resize``, a coin for the
mirror, ``crop_mirror_normalize``, the iterator with ``reader_name``), with only the imports
changed (``nvidia.dali`` -> ``augkit``) and ``device="cpu"`` throughout.

Run::

    python examples/train_classifier.py --epochs 30 --batch-size 5 --seed 0
    torchrun --nproc_per_node=2 examples/train_classifier.py   # DDP, gloo on the CPU

It prints the mean loss of each epoch, then the accuracy on the training set (centre crops,
no augmentation): a tiny model learns these 15 photos. The same ``--seed`` gives the same
numbers (pipeline seed, torch seed, one torch thread).

Under ``torchrun`` (``WORLD_SIZE`` > 1) each rank reads its shard (``shard_id=rank``,
``num_shards=world_size``), ``pad_last_batch=True`` makes every shard the same size so that
ranks step together, and the model is wrapped in ``DistributedDataParallel`` (gloo).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from augkit import fn, pipeline_def, types
from augkit.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

DATA = Path(__file__).resolve().parent.parent / "data" / "images"
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pipeline_def
def create_pipeline(data_dir, crop, shard_id, num_shards, is_training=True):
    """DALI's ResNet-50 example pipeline (``create_dali_pipeline``), on the CPU."""
    images, labels = fn.readers.file(
        file_root=data_dir,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=is_training,
        pad_last_batch=True,
        name="Reader",
    )
    if is_training:
        images = fn.decoders.image_random_crop(
            images,
            device="cpu",
            output_type=types.RGB,
            random_aspect_ratio=[0.75, 1.33],
            random_area=[0.35, 1.0],
            num_attempts=100,
        )
        images = fn.resize(
            images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR
        )
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(images, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=crop, interp_type=types.INTERP_TRIANGULAR)
        mirror = False
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        crop=(crop, crop),
        mean=MEAN,
        std=STD,
        mirror=mirror,
    )
    return images, labels


class SmallCNN(nn.Module):
    """Three conv blocks and a linear head: about 24k parameters."""

    def __init__(self, classes: int, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1),
            nn.BatchNorm2d(4 * width),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(4 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA), help="class folders of images")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--crop", type=int, default=48, help="training crop size (pixels)")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--threads", type=int, default=2, help="pipeline threads")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    """Train; returns ``{"losses": [mean loss per epoch], "accuracy": training-set accuracy,
    "seconds": wall time}``."""
    args = parse_args(argv)
    started = time.perf_counter()
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    quiet = args.quiet or rank != 0  # under DDP, rank 0 prints (its shard's numbers)
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    if world > 1:
        torch.distributed.init_process_group(
            "gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120)
        )
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the same numbers on every machine, and room for the pipeline

    classes = len([p for p in Path(args.data).iterdir() if p.is_dir()])
    common = dict(
        batch_size=args.batch_size,
        num_threads=args.threads,
        device_id=None,
        data_dir=args.data,
        crop=args.crop,
        shard_id=rank,
        num_shards=world,
    )
    train_pipe = create_pipeline(seed=args.seed + 1, is_training=True, **common)
    train_loader = DALIClassificationIterator(
        train_pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True
    )
    model = SmallCNN(classes)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    for epoch in range(args.epochs):
        model.train()
        total, count = 0.0, 0
        for batch in train_loader:
            images = batch[0]["data"]
            labels = batch[0]["label"].squeeze(-1).long()
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
            count += len(labels)
        losses.append(total / count)
        say(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}")

    eval_pipe = create_pipeline(seed=args.seed + 2, is_training=False, **common)
    eval_loader = DALIClassificationIterator(
        eval_pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
    )
    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for batch in eval_loader:
            labels = batch[0]["label"].squeeze(-1).long()
            correct += int((model(batch[0]["data"]).argmax(1) == labels).sum())
            seen += len(labels)
    accuracy = correct / seen
    seconds = time.perf_counter() - started
    say(f"training-set accuracy {accuracy:.2f} ({correct}/{seen}), {seconds:.1f} s")
    for pipe in (train_pipe, eval_pipe):
        pipe.close()
    if world > 1:
        torch.distributed.destroy_process_group()
    return {"losses": losses, "accuracy": accuracy, "seconds": seconds}


if __name__ == "__main__":
    main(sys.argv[1:])
