"""DALI training code with only the imports changed (issue 14's "done when"): the data loading of
DALI's ResNet-50 PyTorch example (``docs/examples/use_cases/pytorch/resnet50/main.py``:
``create_dali_pipeline`` and the ``DALIClassificationIterator`` built in ``main``), written as
DALI's users have it, runs on augkit after ``nvidia.dali`` is replaced by ``augkit`` in its
imports, and nowhere else.

The one line of the example that this CPU-only machine cannot run is ``labels.gpu()`` (the
example moves the labels to the GPU in every mode); the code below keeps it under
``if not dali_cpu`` so that ``dali_cpu=True`` runs here, as it would on DALI's CPU-only path.
"""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

DALI_CODE = """
from nvidia.dali.pipeline import pipeline_def
import nvidia.dali.types as types
import nvidia.dali.fn as fn
from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy


@pipeline_def
def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards, dali_cpu=False,
                         is_training=True):
    images, labels = fn.readers.file(file_root=data_dir,
                                     shard_id=shard_id,
                                     num_shards=num_shards,
                                     random_shuffle=is_training,
                                     pad_last_batch=True,
                                     name="Reader")
    dali_device = 'cpu' if dali_cpu else 'gpu'
    decoder_device = 'cpu' if dali_cpu else 'mixed'
    # ask nvJPEG to preallocate memory for the biggest sample in ImageNet for CPU and GPU to
    # avoid reallocations in runtime
    device_memory_padding = 211025920 if decoder_device == 'mixed' else 0
    host_memory_padding = 140544512 if decoder_device == 'mixed' else 0
    # ask HW NVJPEG to allocate memory ahead for the biggest image in the data set to avoid
    # reallocations in runtime
    preallocate_width_hint = 5980 if decoder_device == 'mixed' else 0
    preallocate_height_hint = 6430 if decoder_device == 'mixed' else 0
    if is_training:
        images = fn.decoders.image_random_crop(images,
                                               device=decoder_device, output_type=types.RGB,
                                               device_memory_padding=device_memory_padding,
                                               host_memory_padding=host_memory_padding,
                                               preallocate_width_hint=preallocate_width_hint,
                                               preallocate_height_hint=preallocate_height_hint,
                                               random_aspect_ratio=[0.8, 1.25],
                                               random_area=[0.1, 1.0],
                                               num_attempts=100)
        images = fn.resize(images,
                           device=dali_device,
                           resize_x=crop,
                           resize_y=crop,
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(images,
                                   device=decoder_device,
                                   output_type=types.RGB)
        images = fn.resize(images,
                           device=dali_device,
                           size=size,
                           mode="not_smaller",
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = False

    images = fn.crop_mirror_normalize(images,
                                      dtype=types.FLOAT,
                                      output_layout="CHW",
                                      crop=(crop, crop),
                                      mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                      std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                      mirror=mirror)
    if not dali_cpu:
        labels = labels.gpu()
    return images, labels


def make_loaders(traindir, valdir, batch_size, workers, local_rank, world_size, crop_size,
                 val_size, dali_cpu):
    pipe = create_dali_pipeline(batch_size=batch_size,
                                num_threads=workers,
                                device_id=local_rank,
                                seed=12 + local_rank,
                                data_dir=traindir,
                                crop=crop_size,
                                size=val_size,
                                dali_cpu=dali_cpu,
                                shard_id=local_rank,
                                num_shards=world_size,
                                is_training=True)
    pipe.build()
    train_loader = DALIClassificationIterator(pipe, reader_name="Reader",
                                              last_batch_policy=LastBatchPolicy.PARTIAL,
                                              auto_reset=True)

    pipe = create_dali_pipeline(batch_size=batch_size,
                                num_threads=workers,
                                device_id=local_rank,
                                seed=12 + local_rank,
                                data_dir=valdir,
                                crop=crop_size,
                                size=val_size,
                                dali_cpu=dali_cpu,
                                shard_id=local_rank,
                                num_shards=world_size,
                                is_training=False)
    pipe.build()
    val_loader = DALIClassificationIterator(pipe, reader_name="Reader",
                                            last_batch_policy=LastBatchPolicy.PARTIAL,
                                            auto_reset=True)
    return train_loader, val_loader
"""


def _augkit_namespace() -> dict:
    code = DALI_CODE.replace("nvidia.dali", "augkit")
    assert code.count("augkit") == 4  # the imports, and nothing else
    namespace: dict = {}
    exec(compile(code, "dali_resnet50_data_loading", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("world_size", [1, 2])
def test_dalis_resnet50_data_loading_runs_with_only_the_imports_changed(world_size):
    torch = pytest.importorskip("torch")
    namespace = _augkit_namespace()
    images = str(ROOT / "data" / "images")
    seen = []
    for rank in range(world_size):
        train_loader, val_loader = namespace["make_loaders"](
            images, images, 4, 2, rank, world_size, 64, 73, dali_cpu=True
        )
        # DALI's shards: 15 * k // n to 15 * (k + 1) // n (7 and 8 samples for n = 2), which
        # rotate between epochs (no stick_to_shard); pad_last_batch makes every shard last
        # ceil(15 / n) samples for the count, and PARTIAL gives a shard's own samples only.
        shard = -(-15 // world_size)
        assert len(train_loader) == -(-shard // 4)
        sizes = {15 * (k + 1) // world_size - 15 * k // world_size for k in range(world_size)}
        for epoch in range(2):
            labels = []
            for data in train_loader:  # the example's loop: data[0]["data"], data[0]["label"]
                inputs = data[0]["data"]
                target = data[0]["label"].squeeze(-1).long()
                assert inputs.dtype == torch.float32 and inputs.shape[1:] == (3, 64, 64)
                assert inputs.shape[0] == target.shape[0] <= 4
                labels += target.tolist()
            assert len(labels) in sizes
            seen.append((epoch, labels))
        val = [d[0]["data"].shape for d in val_loader]
        assert all(shape[1:] == (3, 64, 64) for shape in val)
        assert sum(shape[0] for shape in val) in sizes
    # Every epoch, the shards together hold every file once (3 photos per class folder).
    for epoch in range(2):
        labels = sorted(label for e, batch in seen if e == epoch for label in batch)
        assert labels == sorted(list(range(5)) * 3)
