"""DALI's PyTorch iterators (``augkit.plugin.pytorch``, ``augkit.plugin.base_iterator``).

The matrix: every case of ``tests/data/iterators/reference.json`` (DALI 2.4's own numbers,
made by ``tests/iterators_reference.py`` with DALI's venv): batch sizes 3/4/5, 7 or 10 files,
1-3 shards, ``pad_last_batch``, ``stick_to_shard``, every policy, ``reader_name`` or ``size``,
one or two pipelines, three epochs with ``reset()``. A sample's label is its index in the file
list, so a batch is its list of labels. Then DALI's documented example, the copies, the
epoch rules with prefetching, worker processes and skipped files, the errors, the ragged and
classification iterators.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import warnings

import numpy as np
import pytest
import torch

from augkit import fn, pipeline_def, types
from augkit.errors import ArgumentError, RaggedBatchError
from augkit.plugin.pytorch import (
    DALIClassificationIterator,
    DALIGenericIterator,
    DALIRaggedIterator,
    LastBatchPolicy,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "tests" / "data" / "iterators" / "reference.json").read_text())
FILES = [str(ROOT / f) for f in REFERENCE["files"]]


@pipeline_def(num_threads=1, device_id=None, seed=1)
def label_pipe(n, shard_id=0, num_shards=1, pad=False, stick=False):
    _, labels = fn.readers.file(
        files=FILES[:n],
        labels=list(range(n)),
        shard_id=shard_id,
        num_shards=num_shards,
        pad_last_batch=pad,
        stick_to_shard=stick,
        name="Reader",
    )
    return labels


def _iterator(case, **pipe_kwargs):
    pipes = [
        label_pipe(
            case["n"],
            shard_id=s,
            num_shards=case["num_shards"],
            pad=case["pad_last_batch"],
            stick=case["stick_to_shard"],
            batch_size=case["batch_size"],
            **pipe_kwargs,
        )
        for s in case["shard_ids"]
    ]
    kwargs = {"last_batch_policy": LastBatchPolicy[case["policy"]]}
    if case["mode"] == "reader":
        kwargs["reader_name"] = "Reader"
    else:
        n, k = case["n"], case["num_shards"]
        kwargs["size"] = sum(n * (s + 1) // k - n * s // k for s in case["shard_ids"])
        kwargs["last_batch_padded"] = case["pad_last_batch"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DALI's deprecation warning of size=
        return DALIGenericIterator(pipes, ["label"], **kwargs)


def _epochs(it, count):
    epochs = []
    for _ in range(count):
        record = {"len": len(it), "batches": []}
        while True:
            try:
                batch = next(it)
            except StopIteration:
                break
            record["batches"].append([b["label"].reshape(-1).tolist() for b in batch])
            assert len(record["batches"]) <= 50, "no end of epoch"
        epochs.append(record)
        it.reset()
    return epochs


CASES = sorted(REFERENCE["cases"])


@pytest.mark.parametrize("name", CASES)
def test_matches_dali(name):
    case = REFERENCE["cases"][name]
    if "error" in case:
        with pytest.raises(RuntimeError, match="no data in the pipeline"):
            _iterator(case, exec_async=False, exec_pipelined=False)
        return
    it = _iterator(case, exec_async=False, exec_pipelined=False)
    assert _epochs(it, len(case["epochs"])) == case["epochs"]


PREFETCHED = [c for c in CASES if "n10-bs4" in c and "error" not in REFERENCE["cases"][c]][::6]


@pytest.mark.parametrize("name", PREFETCHED)
def test_matches_dali_with_prefetching(name):
    """exec_async (the default) reads ahead: the numbers do not change."""
    case = REFERENCE["cases"][name]
    it = _iterator(case, prefetch_queue_depth=3)
    assert _epochs(it, len(case["epochs"])) == case["epochs"]


def test_reference_covers_the_matrix():
    cases = REFERENCE["cases"].values()
    assert {c["policy"] for c in cases} == {"FILL", "DROP", "PARTIAL"}
    assert {c["batch_size"] for c in cases} == {3, 4, 5}
    assert {c["num_shards"] for c in cases} == {1, 2, 3}
    assert {len(c["shard_ids"]) for c in cases} == {1, 2}
    assert {(c["pad_last_batch"], c["stick_to_shard"]) for c in cases} == {
        (False, False),
        (False, True),
        (True, False),
        (True, True),
    }
    assert {c["mode"] for c in cases} == {"reader", "size"}


# DALI's documentation (base_iterator's docstring): data [1..7], batch 2: the epoch's last batch
# and the first batch of the next epoch, per (policy, last_batch_padded). Labels here are 0..6.
DOCUMENTED = {
    ("PARTIAL", True): ([6], [0, 1]),
    ("PARTIAL", False): ([6], [1, 2]),
    ("FILL", True): ([6, 6], [0, 1]),
    ("FILL", False): ([6, 0], [1, 2]),
    ("DROP", True): ([4, 5], [0, 1]),
    ("DROP", False): ([4, 5], [1, 2]),
}


@pytest.mark.parametrize(("policy", "padded"), sorted(DOCUMENTED))
def test_documented_example(policy, padded):
    pipe = label_pipe(7, pad=padded, batch_size=2)
    it = DALIGenericIterator(
        pipe, ["label"], reader_name="Reader", last_batch_policy=LastBatchPolicy[policy]
    )
    epoch = [b[0]["label"].reshape(-1).tolist() for b in it]
    nxt = [b[0]["label"].reshape(-1).tolist() for b in it]
    assert (epoch[-1], nxt[0]) == DOCUMENTED[(policy, padded)]
    assert len(epoch) == (3 if policy == "DROP" else 4)


def _until_stop(it):
    sizes = []
    while True:
        try:
            sizes.append(len(next(it)[0]["label"]))
        except StopIteration:
            return sizes


@pytest.mark.parametrize("auto", [True, "yes", False, "no", None])
def test_auto_reset(auto):
    it = DALIGenericIterator(
        label_pipe(7, batch_size=3),
        ["label"],
        reader_name="Reader",
        auto_reset=auto,
        last_batch_policy=LastBatchPolicy.PARTIAL,
    )
    assert _until_stop(it) == [3, 3, 1]
    if auto in (True, "yes"):
        assert _until_stop(it) == [3, 3, 1]  # reset itself at the StopIteration
    else:
        assert _until_stop(it) == []  # the epoch stays over until reset()
        it.reset()
        assert _until_stop(it) == [3, 3, 1]
    assert [len(b[0]["label"]) for b in it] == [3, 3, 1]  # iter() resets (nothing to do here)
    assert [len(b[0]["label"]) for b in it] == [3, 3, 1]  # iter() resets


def test_reset_before_the_end_is_ignored(caplog):
    it = DALIGenericIterator(label_pipe(7, batch_size=3), ["label"], reader_name="Reader")
    first = next(it)[0]["label"].reshape(-1).tolist()
    with caplog.at_level("WARNING", logger="augkit.plugin.base_iterator"):
        it.reset()
    assert "resetting while epoch is not finished" in caplog.text  # logged, as DALI does
    assert first == [0, 1, 2]
    assert next(it)[0]["label"].reshape(-1).tolist() == [3, 4, 5]


@pytest.mark.parametrize("prepare", [True, False])
def test_prepare_first_batch(prepare):
    calls = []

    @pipeline_def(
        batch_size=2, num_threads=1, device_id=None, seed=1, exec_async=False, exec_pipelined=False
    )
    def pipe():
        _, labels = fn.readers.file(files=FILES[:5], name="Reader")
        return fn.python_function(labels, function=lambda x: calls.append(1) or x)

    it = DALIGenericIterator(pipe(), ["label"], reader_name="Reader", prepare_first_batch=prepare)
    assert len(calls) == (2 if prepare else 0)  # a sample each: the first batch, or nothing
    assert next(iter(it))[0]["label"].reshape(-1).tolist() == [0, 1]


def test_fill_last_batch_is_deprecated():
    with pytest.warns(Warning, match="fill_last_batch"):
        it = DALIGenericIterator(
            label_pipe(7, batch_size=3), ["label"], reader_name="Reader", fill_last_batch=False
        )
    assert it._last_batch_policy == LastBatchPolicy.PARTIAL
    assert [len(b[0]["label"]) for b in it] == [3, 3, 1]
    with pytest.warns(Warning, match="fill_last_batch"):
        it = DALIGenericIterator(
            label_pipe(7, batch_size=3), ["label"], reader_name="Reader", fill_last_batch=True
        )
    assert it._last_batch_policy == LastBatchPolicy.FILL


def test_size_warns_as_dali():
    with pytest.warns(Warning, match="Please set `reader_name`"):
        it = DALIGenericIterator(label_pipe(7, batch_size=3), ["label"], size=7)
    assert len(it) == 3


def test_external_source_ends_the_epoch():
    """size=-1 without reader_name: until the pipeline's StopIteration, then reset()."""

    class Source:
        def __init__(self):
            self.i = 0

        def __call__(self):
            if self.i == 3:
                self.i = 0
                raise StopIteration
            self.i += 1
            return [np.full((2,), self.i, np.int32)] * 2

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        return fn.external_source(source=Source())

    it = DALIGenericIterator(pipe(), ["x"])
    for _ in range(2):
        assert [int(b[0]["x"][0, 0]) for b in it] == [1, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 7}, "size should not be set"),
        ({"last_batch_padded": True}, "last_batch_padded should not be set"),
        ({"auto_reset": "maybe"}, "auto_reset"),
        ({"last_batch_policy": "partial"}, "last_batch_policy"),
        ({"reader_name": "Nope"}, "reader_name='Nope'"),
    ],
)
def test_errors(kwargs, match):
    pipe = label_pipe(7, batch_size=3)
    args = {"reader_name": "Reader", **kwargs}
    with pytest.raises(ArgumentError, match=match):
        DALIGenericIterator(pipe, ["label"], **args)
    # The pipeline stays usable.
    it = DALIGenericIterator(pipe, ["label"], reader_name="Reader")
    assert len(it) == 3
    assert next(it)[0]["label"].shape[0] == 3


def test_more_errors():
    pipe = label_pipe(7, batch_size=3)
    with pytest.raises(ArgumentError, match="size cannot be 0"):
        DALIGenericIterator(pipe, ["label"], size=0)
    with pytest.raises(ArgumentError, match="distinct"):
        DALIGenericIterator(pipe, ["a", "a"], reader_name="Reader")
    with pytest.raises(ArgumentError, match="single pipeline"):
        DALIGenericIterator([pipe, label_pipe(7, batch_size=3)], ["label"])
    with pytest.raises(ArgumentError, match="same batch size"):
        DALIGenericIterator([pipe, label_pipe(7, batch_size=2)], ["label"], reader_name="Reader")
    with pytest.raises(ArgumentError, match="Reader Operator should have the same"):
        DALIGenericIterator(
            [label_pipe(7, batch_size=3), label_pipe(7, batch_size=3, num_shards=2)],
            ["label"],
            reader_name="Reader",
        )
    with pytest.raises(ArgumentError, match="output_map names 2 outputs"):
        DALIGenericIterator(pipe, ["label", "other"], reader_name="Reader")
    with pytest.raises(ArgumentError, match="output_types"):
        DALIRaggedIterator(pipe, ["label"], reader_name="Reader", output_types=["ragged"])


# --- copies ------------------------------------------------------------------------------------
def test_zero_copy_of_one_array_batches_and_copy_of_stacks():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=FILES, name="Reader")
        images = fn.resize(fn.decoders.image(jpegs), size=(8, 8))
        noise = fn.random.uniform(range=(0, 1), shape=(3,))
        return images, labels, noise

    p = pipe()
    it = DALIGenericIterator(
        p, ["images", "labels", "noise"], reader_name="Reader", prepare_first_batch=False
    )
    batch = next(it)[0]
    noise_batch = p._runner.last[p._outputs[2]]
    first_image = p._runner.last[p._outputs[0]][0]._data
    assert noise_batch._dense is not None
    assert batch["noise"].data_ptr() == noise_batch._dense.ctypes.data  # shared
    kept = batch["noise"].clone()
    for _ in range(3):
        next(it)  # later batches do not write into the shared memory
    assert torch.equal(batch["noise"], kept)
    images_batch = p._runner.last[p._outputs[0]]
    assert batch["images"].data_ptr() != first_image.ctypes.data  # stacked: a copy
    np.testing.assert_array_equal(batch["images"][0].numpy(), first_image)
    del images_batch
    assert batch["images"].shape == (4, 8, 8, 3)
    assert batch["images"].dtype == torch.uint8


def test_partial_last_batch_is_a_view():
    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
    def pipe():
        _, labels = fn.readers.file(files=FILES[:7], name="Reader")
        return fn.random.uniform(range=(0, 1), shape=(2,)), labels

    p = pipe()
    it = DALIGenericIterator(
        p, ["noise", "labels"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
    )
    *_, last = list(it)
    assert last[0]["noise"].shape == (1, 2)
    assert last[0]["noise"].data_ptr() == p._runner.last[p._outputs[0]]._dense.ctypes.data


def test_samples_of_different_shapes_are_an_error():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        jpegs, _ = fn.readers.file(files=FILES[:4], name="Reader")
        return fn.decoders.image(jpegs)

    p = pipe()
    with pytest.raises(RaggedBatchError, match=r"output 'images'.*DALIRaggedIterator"):
        DALIGenericIterator(p, ["images"], reader_name="Reader", dynamic_shape=False)
    it = DALIRaggedIterator(
        p, ["images"], reader_name="Reader", output_types=[DALIRaggedIterator.SPARSE_LIST_TAG]
    )
    images = next(it)[0]["images"]
    assert isinstance(images, list) and len(images) == 2


@pytest.mark.gpu
@pytest.mark.cuda
def test_gpu_pipeline_gives_cuda_tensors():
    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=FILES[:4], name="Reader")
        images = fn.resize(fn.decoders.image(jpegs, device="mixed"), size=(8, 8))
        return images, labels.gpu()

    it = DALIClassificationIterator(pipe(), reader_name="Reader")
    batch = next(it)[0]
    assert batch["data"].is_cuda and batch["label"].is_cuda


# --- epochs with prefetching, workers and skipped files ----------------------------------------
def _labels_of_epochs(it, epochs):
    return [sorted(int(v) for b in it for v in b[0]["label"].reshape(-1)) for _ in range(epochs)]


def test_workers_and_prefetching_keep_epochs():
    @pipeline_def(
        batch_size=4,
        num_threads=2,
        device_id=None,
        seed=1,
        py_num_workers=2,
        py_start_method="fork",
    )
    def pipe():
        jpegs, labels = fn.readers.file(files=FILES, labels=list(range(15)), name="Reader")
        size = fn.python_function(jpegs, function=lambda j: np.array([j.size], np.int64))
        return size, labels

    it = DALIGenericIterator(
        pipe(), ["size", "label"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
    )
    sizes = {i: pathlib.Path(f).stat().st_size for i, f in enumerate(FILES)}
    for _ in range(2):
        seen = []
        for b in it:
            for s, lab in zip(b[0]["size"].reshape(-1), b[0]["label"].reshape(-1), strict=True):
                assert int(s) == sizes[int(lab)]  # each label with its file
                seen.append(int(lab))
        assert sorted(seen) == list(range(15))


def test_skipped_files_every_good_file_once_per_epoch(tmp_path):
    root = tmp_path / "images"
    shutil.copytree(ROOT / "data" / "images", root)
    bad = root / "animals" / "chelsea_cat_face_crop.jpg"
    bad.write_bytes(b"not a jpeg")

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(root), name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB, on_error="skip")
        return fn.resize(images, size=(8, 8)), labels

    names = sorted(str(f.relative_to(root)) for f in root.rglob("*.jpg"))
    classes = sorted({n.split("/")[0] for n in names})
    good = sorted(classes.index(n.split("/")[0]) for n in names if "face_crop" not in n)
    p = pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SkippedSampleWarning of each epoch
        it = DALIClassificationIterator(
            p, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
        )
        for _ in range(3):
            labels = []
            count = 0
            for b in it:
                assert b[0]["data"].shape[0] == b[0]["label"].shape[0]
                labels += b[0]["label"].reshape(-1).tolist()
                count += b[0]["data"].shape[0]
            assert sorted(labels) == good and count == 14


@pytest.mark.parametrize("policy", ["PARTIAL", "DROP"])
def test_skipped_files_two_pipelines_two_shards(tmp_path, policy):
    """Two pipelines (shards 0 and 1 of 2, rotating): each epoch has len() batches, and the
    shards together deliver every good file once (PARTIAL), or batches of distinct files, each
    of batch_size positions, the bad file leaving a hole (DROP)."""
    root = tmp_path / "images"
    shutil.copytree(ROOT / "data" / "images", root)
    files = sorted(str(f) for f in root.rglob("*.jpg"))
    pathlib.Path(files[2]).write_bytes(b"not a jpeg")
    files_good = [i for i in range(len(files)) if i != 2]

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
    def pipe(shard_id):
        jpegs, labels = fn.readers.file(
            files=files,
            labels=list(range(len(files))),
            shard_id=shard_id,
            num_shards=2,
            name="Reader",
        )
        images = fn.decoders.image(jpegs, on_error="skip")
        return fn.resize(images, size=(8, 8)), labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SkippedSampleWarnings
        it = DALIClassificationIterator(
            [pipe(0), pipe(1)], reader_name="Reader", last_batch_policy=LastBatchPolicy[policy]
        )
        for _ in range(3):
            seen = []
            steps = 0
            for batch in it:
                steps += 1
                for part in batch:
                    assert part["data"].shape[0] == part["label"].shape[0]
                    assert part["label"].shape[0] <= 3
                    seen += part["label"].reshape(-1).tolist()
            assert steps == len(it)
            assert len(seen) == len(set(seen))
            if policy == "PARTIAL":
                assert sorted(seen) == files_good
            else:
                assert set(seen) <= set(files_good) and len(seen) >= 2 * 2 * 3 - 1


# --- the ragged and classification iterators -------------------------------------------------
@pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1)
def coco_pipe():
    _, boxes, labels = fn.readers.coco(
        file_root=str(ROOT / "data" / "images"),
        annotations_file=str(ROOT / "data" / "annotations" / "instances.json"),
        name="Reader",
    )
    return boxes, labels


def test_ragged_iterator_types_on_coco_boxes():
    p = coco_pipe()
    it = DALIRaggedIterator(
        p,
        ["boxes", "labels"],
        reader_name="Reader",
        output_types=[DALIRaggedIterator.SPARSE_LIST_TAG, DALIRaggedIterator.SPARSE_COO_TAG],
    )
    batch = next(it)[0]
    raw_boxes, raw_labels = p._runner.last[p._outputs[0]], p._runner.last[p._outputs[1]]
    boxes, labels = batch["boxes"], batch["labels"]
    assert isinstance(boxes, list) and len(boxes) == 3
    for k in range(3):
        np.testing.assert_array_equal(boxes[k].numpy(), np.asarray(raw_boxes[k]._data))
    assert labels.is_sparse and labels.shape[0] == 3
    dense = labels.to_dense()
    for k in range(3):
        row = np.asarray(raw_labels[k]._data).reshape(-1)
        np.testing.assert_array_equal(dense[k, : len(row)].reshape(-1).numpy(), row)
    it = DALIRaggedIterator(
        coco_pipe(),
        ["boxes", "labels"],
        reader_name="Reader",
        output_types=[DALIRaggedIterator.SPARSE_COO_TAG, DALIRaggedIterator.SPARSE_LIST_TAG],
    )
    boxes = next(it)[0]["boxes"]
    assert boxes.is_sparse and boxes.shape[0] == 3 and boxes.shape[-1] == 4
    assert len(it) > 0


def test_classification_iterator_on_images():
    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(ROOT / "data" / "images"), name="Reader")
        images = fn.resize(fn.decoders.image(jpegs), size=(16, 16))
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW"), labels

    it = DALIClassificationIterator(
        pipe(), reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
    )
    assert len(it) == 4
    batches = list(it)
    assert [b[0]["data"].shape[0] for b in batches] == [4, 4, 4, 3]
    assert batches[0][0]["data"].shape == (4, 3, 16, 16)
    assert batches[0][0]["data"].dtype == torch.float32
    labels = sorted(int(v) for b in batches for v in b[0]["label"].reshape(-1))
    assert labels == sorted([0] * 3 + [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3)


def test_documented_sharding_rules():
    """DALI's Sharding page: with pad_last_batch every shard gives the same number of batches;
    epoch 0 of the shards (one iterator per shard, PARTIAL) covers the data set exactly once."""
    groups: dict[str, list[dict]] = {}
    for name, case in REFERENCE["cases"].items():
        if case["mode"] == "reader" and len(case["shard_ids"]) == 1 and "error" not in case:
            groups.setdefault(name.rsplit("-shard", 1)[0], []).append(case)
    checked = 0
    for cases in groups.values():
        first = cases[0]
        if first["pad_last_batch"]:
            assert len({len(c["epochs"][0]["batches"]) for c in cases}) == 1
        if first["policy"] == "PARTIAL" and len(cases) == first["num_shards"]:
            its = [_iterator(c, exec_async=False) for c in cases]
            seen = sorted(v for it in its for b in it for v in b[0]["label"].reshape(-1).tolist())
            assert seen == list(range(first["n"]))
            checked += 1
    assert checked >= 20
