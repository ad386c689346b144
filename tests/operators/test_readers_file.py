"""fn.readers.file through the pipeline: the files it lists and their labels, the order it reads
them in (sorted, shuffled, sharded, padded) and how epochs end."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

from augkit import fn, ops
from augkit.errors import ArgumentError, OperatorError
from augkit.pipeline import Pipeline

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png"}


def listing(root: pathlib.Path) -> list[tuple[str, int]]:
    """The data set in DALI's order, listed independently of the reader."""
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    return [
        (f"{cls}/{name}", label)
        for label, cls in enumerate(classes)
        for name in sorted(os.listdir(root / cls))
        if pathlib.Path(name).suffix.lower() in IMAGE_SUFFIXES
    ]


def make_tree(root: pathlib.Path, layout: dict[str, list[str]]) -> pathlib.Path:
    """Folders of small files whose content is their own "folder/name"."""
    for folder, files in layout.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in files:
            (root / folder / name).write_bytes(f"{folder}/{name}".encode())
    return root


def reader_pipe(
    batch_size: int = 4, num_threads: int = 1, pipe_seed: int = 7, **kwargs
) -> Pipeline:
    pipe = Pipeline(batch_size=batch_size, num_threads=num_threads, device_id=None, seed=pipe_seed)
    with pipe:
        data, labels = fn.readers.file(name="Reader", **kwargs)
        pipe.set_outputs(data, labels)
    return pipe


def names(batch) -> list[str]:
    return [t.source_info() for t in batch]


def epoch_names(pipe: Pipeline, policy: str = "partial") -> list[str]:
    return [n for data, _ in pipe.epoch(policy) for n in names(data)]


def read_all(pipe: Pipeline) -> list[tuple[str, int, bytes]]:
    """(source_info, label, bytes) of every sample of one epoch."""
    out = []
    for data, labels in pipe.epoch("partial"):
        for k in range(len(data)):
            out.append((data[k].source_info(), int(labels.at(k)[0]), data.at(k).tobytes()))
    return out


# --- what is read ----------------------------------------------------------------------------


def test_labels_are_sorted_subfolders_and_data_is_the_file(image_dir):
    expected = listing(image_dir)
    assert len(expected) == 15
    pipe = reader_pipe(file_root=str(image_dir))
    got = read_all(pipe)
    assert [(n, label) for n, label, _ in got] == expected
    for name, _, data in got:
        assert data == (image_dir / name).read_bytes(), name


def test_output_types_and_source_info_on_both_outputs(image_dir):
    data, labels = reader_pipe(file_root=image_dir).run()
    assert data.dtype.name == "UINT8" and labels.dtype.name == "INT32"
    for k in range(len(data)):
        assert data.at(k).ndim == 1 and data.at(k).dtype == np.uint8
        assert labels.at(k).shape == (1,) and labels.at(k).dtype == np.int32
    assert names(data) == names(labels) == [n for n, _ in listing(image_dir)[:4]]
    assert not np.asarray(data[0]).flags.writeable


def test_folders_and_files_sorted_bytewise_root_files_ignored(tmp_path):
    make_tree(tmp_path, {"b": ["b10.jpg", "b2.jpg"], "B": ["z.jpg"], "_c": ["c.jpg"], "a": []})
    (tmp_path / "top.jpg").write_bytes(b"x")
    make_tree(tmp_path / "b", {"deeper": ["d.jpg"]})
    got = [(n, label) for n, label, _ in read_all(reader_pipe(file_root=tmp_path))]
    # Folders B, _c, a, b (bytewise); the empty "a" still takes label 2.
    assert got == [("B/z.jpg", 0), ("_c/c.jpg", 1), ("b/b10.jpg", 3), ("b/b2.jpg", 3)]


@pytest.fixture
def filter_tree(tmp_path) -> pathlib.Path:
    return make_tree(
        tmp_path, {"B": ["x.jpg", "y.txt", "UP.JPG", "Z.Png"], "a": ["w.jpeg"], "_c": []}
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, [("B/UP.JPG", 0), ("B/Z.Png", 0), ("B/x.jpg", 0), ("a/w.jpeg", 2)]),
        ({"case_sensitive_filter": True}, [("B/x.jpg", 0), ("a/w.jpeg", 2)]),
        ({"file_filters": ["*.txt"]}, [("B/y.txt", 0)]),
        ({"file_filters": ["*.JPG"], "case_sensitive_filter": True}, [("B/UP.JPG", 0)]),
        ({"dir_filters": ["a", "_*"]}, [("a/w.jpeg", 1)]),
        ({"dir_filters": ["b"]}, [("B/UP.JPG", 0), ("B/Z.Png", 0), ("B/x.jpg", 0)]),
    ],
)
def test_file_and_dir_filters(filter_tree, args, expected):
    got = [(n, label) for n, label, _ in read_all(reader_pipe(file_root=filter_tree, **args))]
    assert got == expected


def test_file_list_with_spaces_relative_to_the_list(tmp_path):
    make_tree(tmp_path, {"sub dir": ["dog 2.jpg"], ".": ["my cat.jpg", "z.png"]})
    (tmp_path / "list.txt").write_text("my cat.jpg 3\n\n   \nsub dir/dog 2.jpg\t7   \r\nz.png 0")
    got = read_all(reader_pipe(file_list=str(tmp_path / "list.txt")))
    assert [(n, label) for n, label, _ in got] == [
        ("my cat.jpg", 3),
        ("sub dir/dog 2.jpg", 7),
        ("z.png", 0),
    ]
    assert [data for *_, data in got] == [b"./my cat.jpg", b"sub dir/dog 2.jpg", b"./z.png"]


def test_file_list_relative_to_file_root(tmp_path):
    root = make_tree(tmp_path / "data", {"cls": ["a.jpg", "b.jpg"]})
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "l.txt").write_text("cls/b.jpg 1\ncls/a.jpg 0\n")
    got = read_all(reader_pipe(file_list=tmp_path / "lists" / "l.txt", file_root=root))
    assert got == [("cls/b.jpg", 1, b"cls/b.jpg"), ("cls/a.jpg", 0, b"cls/a.jpg")]


def test_files_with_and_without_labels(tmp_path):
    make_tree(tmp_path, {"cls": ["a.jpg", "b.jpg", "c.jpg"]})
    files = ["cls/c.jpg", "cls/a.jpg"]
    got = read_all(reader_pipe(file_root=tmp_path, files=files, labels=[5, -2]))
    assert got == [("cls/c.jpg", 5, b"cls/c.jpg"), ("cls/a.jpg", -2, b"cls/a.jpg")]
    absolute = [str(tmp_path / "cls" / "b.jpg"), str(tmp_path / "cls" / "a.jpg")]
    got = read_all(reader_pipe(files=absolute))
    assert [(n, label) for n, label, _ in got] == [(absolute[0], 0), (absolute[1], 1)]


def test_ops_class_and_legacy_alias(image_dir):
    class Pipe(Pipeline):
        def __init__(self, reader_class):
            super().__init__(batch_size=3, num_threads=1, device_id=None, seed=1)
            self.read = reader_class(file_root=str(image_dir), random_shuffle=True)

        def define_graph(self):
            return self.read()

    a, b = Pipe(ops.readers.File).run(), Pipe(ops.FileReader).run()
    assert names(a[0]) == names(b[0])


def test_threads_do_not_change_the_batch(image_dir):
    one = reader_pipe(num_threads=1, file_root=image_dir, random_shuffle=True).run()
    three = reader_pipe(num_threads=3, file_root=image_dir, random_shuffle=True).run()
    assert names(one[0]) == names(three[0])
    for k in range(4):
        np.testing.assert_array_equal(one[0].at(k), three[0].at(k))


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"file_root": "{tmp}/missing"}, "file_root '{tmp}/missing' does not exist"),
        (
            {"file_root": "{tmp}/empty"},
            "No files found in {tmp}/empty: its 1 subfolder(s) hold no files matching ['*.jpg'",
        ),
        ({"file_list": "{tmp}/nolist.txt"}, "file_list '{tmp}/nolist.txt' does not exist"),
        ({"file_list": "{tmp}/bad.txt"}, 'list file "{tmp}/bad.txt", line 3'),
        ({"files": ["a.jpg"], "file_list": "{tmp}/bad.txt"}, "'files' or 'file_list', but not"),
        ({"file_root": "{tmp}/data", "labels": [1]}, "'labels' is valid only together with"),
        ({"files": ["a.jpg", "b.jpg"], "labels": [1]}, "provided 1 labels for 2 files"),
        ({"file_root": "{tmp}/data", "shard_id": 2, "num_shards": 2}, "shard_id must be smaller"),
        ({"file_root": "{tmp}/data", "num_shards": 3}, "has 2 samples, fewer than num_shards=3"),
        (
            {"file_root": "{tmp}/data", "random_shuffle": True, "shuffle_after_epoch": True},
            "shuffle_after_epoch and random_shuffle cannot be both true",
        ),
        (
            {"file_root": "{tmp}/data", "stick_to_shard": True, "shuffle_after_epoch": True},
            "shuffle_after_epoch and stick_to_shard cannot be both true",
        ),
        ({}, "'file_root' is required"),
    ],
)
def test_bad_arguments_raise_at_build_naming_reader_and_path(tmp_path, args, message):
    make_tree(tmp_path, {"data/cls": ["a.jpg", "b.jpg"], "empty/cls": ["notes.txt"]})
    (tmp_path / "bad.txt").write_text("a.jpg 1\n\nb.jpg\n")
    args = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in args.items()}
    pipe = reader_pipe(**args)
    with pytest.raises(ArgumentError) as info:
        pipe.build()
    assert str(info.value).startswith("Reader: ")
    assert message.format(tmp=tmp_path) in str(info.value)


def test_bad_argument_values_raise_when_the_operator_is_made():
    with pytest.raises(ArgumentError, match="file_filters"):
        fn.readers.file(file_root="x", file_filters=[])
    with pytest.raises(ArgumentError, match="list of file paths"):
        fn.readers.file(files="a.jpg")


def test_unreadable_file_names_it_and_the_batch_is_read_again(tmp_path):
    make_tree(tmp_path, {"cls": ["a.jpg", "b.jpg", "c.jpg"]})
    pipe = reader_pipe(batch_size=2, file_root=tmp_path)
    pipe.build()
    (tmp_path / "cls" / "b.jpg").unlink()
    with pytest.raises(OperatorError) as info:
        pipe.run()
    message = str(info.value)
    assert "operator Reader, sample #1 (cls/b.jpg)" in message
    assert str(tmp_path / "cls" / "b.jpg") in message
    (tmp_path / "cls" / "b.jpg").write_bytes(b"back")
    data, _ = pipe.run()
    assert names(data) == ["cls/a.jpg", "cls/b.jpg"] and data.at(1).tobytes() == b"back"


# --- shuffling -------------------------------------------------------------------------------


def test_random_shuffle_is_seeded_and_reads_every_file_once_per_epoch(image_dir):
    everything = sorted(n for n, _ in listing(image_dir))

    def two_epochs(pipe_seed: int, **kwargs) -> list[list[str]]:
        pipe = reader_pipe(pipe_seed=pipe_seed, file_root=image_dir, random_shuffle=True, **kwargs)
        return [epoch_names(pipe), epoch_names(pipe)]

    first, second = two_epochs(1)
    assert sorted(first) == sorted(second) == everything
    assert first != second and first != everything
    assert two_epochs(1) == [first, second]
    assert two_epochs(2)[0] != first
    # The reader's own seed overrides the pipeline's.
    assert two_epochs(1, seed=5) == two_epochs(2, seed=5)


def test_shuffle_after_epoch_is_the_same_for_every_pipeline_seed(image_dir):
    everything = sorted(n for n, _ in listing(image_dir))
    runs = []
    for seed in (1, 2):
        pipe = reader_pipe(pipe_seed=seed, file_root=image_dir, shuffle_after_epoch=True)
        runs.append([epoch_names(pipe) for _ in range(3)])
    assert runs[0] == runs[1]
    epochs = runs[0]
    assert all(sorted(e) == everything for e in epochs)
    assert epochs[0] != everything  # epoch 0 is already shuffled, as in DALI
    assert len({tuple(e) for e in epochs}) == 3


def test_shuffle_after_epoch_shards_split_each_permutation(image_dir):
    everything = sorted(n for n, _ in listing(image_dir))
    shards = [
        reader_pipe(file_root=image_dir, shuffle_after_epoch=True, shard_id=k, num_shards=2)
        for k in range(2)
    ]
    for _ in range(3):
        parts = [epoch_names(p) for p in shards]
        assert [len(p) for p in parts] == [7, 8]
        assert sorted(parts[0] + parts[1]) == everything


# --- sharding and padding --------------------------------------------------------------------


@pytest.mark.parametrize("num_shards", [2, 3])
def test_shards_are_disjoint_cover_everything_and_rotate(image_dir, num_shards):
    order = [n for n, _ in listing(image_dir)]
    bounds = [15 * k // num_shards for k in range(num_shards + 1)]
    ranges = [order[bounds[k] : bounds[k + 1]] for k in range(num_shards)]
    for k in range(num_shards):
        pipe = reader_pipe(file_root=image_dir, shard_id=k, num_shards=num_shards)
        for epoch in range(num_shards + 1):
            assert epoch_names(pipe) == ranges[(k + epoch) % num_shards], (k, epoch)
        sticky = reader_pipe(
            file_root=image_dir, shard_id=k, num_shards=num_shards, stick_to_shard=True
        )
        for _ in range(2):
            assert epoch_names(sticky) == ranges[k]
    assert pipe.epoch_size() == {"Reader": 15}


def test_pad_last_batch_repeats_the_last_sample(image_dir):
    order = [n for n, _ in listing(image_dir)]
    pipe = reader_pipe(file_root=image_dir, pad_last_batch=True)
    batches = [names(d) for d, _ in pipe.epoch("fill")]
    assert batches == [order[0:4], order[4:8], order[8:12], [*order[12:15], order[14]]]
    assert pipe.epoch_size("Reader") == 15
    # run() goes on with the next epoch's first sample.
    assert names(pipe.run()[0]) == order[0:4]


def test_pad_last_batch_pads_every_shard_to_the_same_size(image_dir):
    order = [n for n, _ in listing(image_dir)]
    # 15 files in 2 shards: 7 and 8 samples, both padded to 8; batch 7 adds a whole batch.
    shard0 = reader_pipe(batch_size=7, file_root=image_dir, pad_last_batch=True, num_shards=2)
    shard1 = reader_pipe(
        batch_size=7, file_root=image_dir, pad_last_batch=True, num_shards=2, shard_id=1
    )
    assert shard0.epoch_size() == {"Reader": 16}
    assert [names(d) for d, _ in shard0.epoch("fill")] == [order[0:7], [order[6]] * 7]
    assert [names(d) for d, _ in shard1.epoch("fill")] == [order[7:14], [order[14]] * 7]
    assert [names(d) for d, _ in shard0.epoch("partial")] == [order[7:14], [order[14]]]
    # Plain run(): the padded batch ends the epoch; the next one starts the next epoch.
    assert [names(shard1.run()[0]) for _ in range(3)] == [order[0:7], [order[6]] * 7, order[7:14]]


# --- epochs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "sizes"),
    [("fill", [4, 4, 4, 4]), ("partial", [4, 4, 4, 3]), ("drop", [4, 4, 4])],
)
def test_epoch_loop_last_batch_policies(image_dir, policy, sizes):
    order = [n for n, _ in listing(image_dir)]
    pipe = reader_pipe(file_root=image_dir)
    for _ in range(2):  # the second loop starts again from the epoch's first sample
        batches = [names(d) for d, _ in pipe.epoch(policy)]
        assert [len(b) for b in batches] == sizes
        flat = [n for b in batches for n in b]
        expected = {"fill": [*order, order[0]], "partial": order, "drop": order[:12]}[policy]
        assert flat == expected


def test_for_loop_is_an_epoch_with_fill(image_dir):
    pipe = reader_pipe(file_root=image_dir)
    assert sum(len(d) for d, _ in pipe) == 16
    assert names(next(iter(pipe))[0]) == [n for n, _ in listing(image_dir)[:4]]


def test_run_continues_into_the_next_epoch(image_dir):
    order = [n for n, _ in listing(image_dir)]
    pipe = reader_pipe(file_root=image_dir)
    got = [names(pipe.run()[0]) for _ in range(5)]
    assert got[3] == [*order[12:15], order[0]]
    assert got[4] == order[1:5]


def test_batch_larger_than_the_data_set_runs_through_several_epochs(tmp_path):
    make_tree(tmp_path, {"cls": ["a.jpg", "b.jpg", "c.jpg"]})
    pipe = reader_pipe(batch_size=8, file_root=tmp_path)
    short = ["a", "b", "c"] * 6
    assert [n[4] for n in names(pipe.run()[0])] == short[:8]
    assert [n[4] for n in names(pipe.run()[0])] == short[8:16]
    pipe.reset()
    assert [len(d) for d, _ in pipe.epoch("partial")] == [3]


def test_reset_starts_the_next_epoch_once(image_dir):
    reference = reader_pipe(file_root=image_dir, random_shuffle=True)
    epoch0, epoch1 = epoch_names(reference), epoch_names(reference)
    pipe = reader_pipe(file_root=image_dir, random_shuffle=True)
    pipe.reset()  # at the start of epoch 0: nothing to end
    assert names(pipe.run()[0]) == epoch0[:4]
    pipe.reset()
    pipe.reset()  # already at the start of epoch 1
    assert epoch_names(pipe) == epoch1
