"""check_pairing on real pipelines: two fn.readers.file over an image folder and a mask folder
written into tmp_path (DALI's segmentation idiom). Where the check warns, the pipeline is also
run to show that the pairs do break (or could, by the rule); where it is silent, they are shown
to hold over several epochs."""

from __future__ import annotations

import shutil
import warnings

import pytest

from augkit import fn
from augkit.operators.readers.pairing import (
    ReaderPairingWarning,
    check_pairing,
    name_stem,
    path_stem,
)
from augkit.pipeline import Pipeline


@pytest.fixture
def tree(tmp_path, image_dir, photo_paths):
    """tmp_path/images: the 15 photos of data/images; tmp_path/masks: a .png per photo (its
    bytes do not matter to the readers)."""
    for photo in photo_paths:
        rel = photo.relative_to(image_dir)
        for root, suffix in (("images", ".jpg"), ("masks", ".png")):
            target = (tmp_path / root / rel).with_suffix(suffix)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(photo, target)
    return tmp_path


def _pipeline(images: dict, masks: dict, seed: int = 12) -> Pipeline:
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=seed)
    with pipe:
        a, _ = fn.readers.file(name="images", **images)
        b, _ = fn.readers.file(name="masks", **masks)
        pipe.set_outputs(a, b)
    with warnings.catch_warnings(record=True) as caught:  # Pipeline.build() checks the pairs
        warnings.simplefilter("always")
        pipe.build()
    pipe.build_warnings = [str(w.message) for w in caught if w.category is ReaderPairingWarning]
    return pipe


def _warnings(pipe: Pipeline) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_pairing(pipe._runner.readers())
    assert all(w.category is ReaderPairingWarning for w in caught)
    messages = [str(w.message) for w in caught]
    assert messages == pipe.build_warnings  # what build() said
    return messages


def _one_warning(pipe: Pipeline, *words: str) -> str:
    messages = _warnings(pipe)
    assert len(messages) == 1, messages
    message = messages[0]
    assert "readers 'images' and 'masks' look like a pair" in message
    assert "the same seed=" in message and "fn.readers.image_mask" in message
    for word in words:
        assert word in message, message
    return message


def _stems_per_sample(pipe: Pipeline, batches: int = 12) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(batches):
        a, b = pipe.run()
        pairs += [(path_stem(a[k].source_info()), path_stem(b[k].source_info())) for k in range(4)]
    return pairs


def _roots(tree, shuffle: dict | None = None, **both) -> tuple[dict, dict]:
    extra = shuffle or {}
    return (
        {"file_root": str(tree / "images"), **extra, **both},
        {"file_root": str(tree / "masks"), **extra, **both},
    )


# --- silent where the pairs hold -------------------------------------------------------------


@pytest.mark.parametrize(
    "both",
    [
        {},
        {"random_shuffle": True, "seed": 5},
        {"random_shuffle": True, "seed": 5, "num_shards": 2, "shard_id": 1},
        {"shuffle_after_epoch": True},  # one data-set-wide key: the reader seeds do not matter
    ],
    ids=["plain", "same-seed", "same-shard", "after-epoch"],
)
def test_same_settings_are_silent_and_stay_paired(tree, both):
    pipe = _pipeline(*_roots(tree, **both))
    assert _warnings(pipe) == []
    pairs = _stems_per_sample(pipe)  # 48 samples: three epochs and more
    assert all(a == b for a, b in pairs), pairs


def test_two_readers_of_the_same_files_are_no_pair(tree):
    # A second reader of one data set (mixup): different seeds on purpose.
    root = {"file_root": str(tree / "images"), "random_shuffle": True}
    assert _warnings(_pipeline(root, root)) == []


def test_unrelated_data_sets_are_silent(tree, image_dir):
    other = tree / "other" / "cls"
    other.mkdir(parents=True)
    for k in range(15):
        (other / f"frame_{k}.png").write_bytes(b"x")
    pipe = _pipeline(
        {"file_root": str(tree / "images"), "random_shuffle": True},
        {"file_root": str(tree / "other"), "random_shuffle": True},
    )
    assert _warnings(pipe) == []


def test_file_lists_in_other_folders_pair_by_file_name(tree, photo_paths, image_dir):
    rels = [p.relative_to(image_dir) for p in photo_paths]
    images = [f"images/{r}" for r in rels]
    masks = [f"masks/{r.with_suffix('.png')}" for r in rels]
    pipe = _pipeline(
        {"file_root": str(tree), "files": images}, {"file_root": str(tree), "files": masks}
    )
    assert _warnings(pipe) == []
    shuffled = _pipeline(
        {"file_root": str(tree), "files": images, "random_shuffle": True},
        {"file_root": str(tree), "files": masks, "random_shuffle": True},
    )
    _one_warning(shuffled, "file name without extension", "their seeds differ")


# --- warnings where they may not -------------------------------------------------------------


def test_the_pipeline_seed_gives_different_orders(tree):
    pipe = _pipeline(*_roots(tree, random_shuffle=True))
    _one_warning(pipe, "100% of their samples match", "their seeds differ", "random_shuffle")
    pairs = _stems_per_sample(pipe)
    assert any(a != b for a, b in pairs)  # the warning is right: they do mispair


@pytest.mark.parametrize(
    ("images", "masks", "words"),
    [
        ({"random_shuffle": True}, {}, "random_shuffle differs (images: True, masks: False)"),
        ({"num_shards": 2, "shard_id": 1}, {}, "shard_id differs"),
        ({"num_shards": 2}, {}, "num_shards differs (images: 2, masks: 1)"),
        ({"stick_to_shard": True}, {}, "stick_to_shard differs"),
        ({"pad_last_batch": True}, {}, "pad_last_batch differs"),
        ({"shuffle_after_epoch": True}, {}, "shuffle_after_epoch differs"),
        (
            {"shuffle_after_epoch": True, "shuffle_after_epoch_seed": 1},
            {"shuffle_after_epoch": True},
            "shuffle_after_epoch_seed differs (images: 1, masks: None)",
        ),
        (
            {"random_shuffle": True, "seed": 5, "initial_fill": 100},
            {"random_shuffle": True, "seed": 5},
            "initial_fill differs (images: 100, masks: 1024): no effect in augkit",
        ),
    ],
    ids=["shuffle", "shard", "shards", "stick", "pad", "after-epoch", "after-seed", "fill"],
)
def test_arguments_that_differ_are_named(tree, images, masks, words):
    a, b = _roots(tree)
    _one_warning(_pipeline({**a, **images}, {**b, **masks}), words)


def test_a_missing_mask_shifts_every_later_pair(tree):
    (tree / "masks" / "medical" / "retina_fundus.png").unlink()
    pipe = _pipeline(*_roots(tree))
    _one_warning(
        pipe,
        "sample counts differ (images: 15, masks: 14)",
        "masks has no partner for 'medical/retina_fundus.jpg' of images",
    )
    pairs = _stems_per_sample(pipe, batches=3)
    assert any(a != b for a, b in pairs)


def test_partly_matching_names_name_a_mismatching_pair(tree):
    (tree / "masks" / "objects" / "coffee_cup.png").rename(tree / "masks" / "objects" / "mug.png")
    pipe = _pipeline(*_roots(tree))
    _one_warning(
        pipe,
        "93% of their samples match",
        "1 of their 15 samples have no partner",
        "pairs 'objects/coffee_cup.jpg' (images) with 'objects/greek_coins.png' (masks)",
    )


def test_under_80_percent_is_no_pair(tree):
    for name in ("chelsea_cat", "chelsea_cat_face_crop", "chelsea_cat_mirrored"):
        path = tree / "masks" / "animals" / f"{name}.png"
        path.rename(path.with_name(f"x_{name}.png"))
    pipe = _pipeline(*_roots(tree, random_shuffle=True))  # 12 of 15 = 80%: still a pair
    assert len(_warnings(pipe)) == 1
    (tree / "masks" / "objects" / "mug.png").write_bytes(b"x")
    (tree / "masks" / "objects" / "coffee_cup.png").unlink()
    assert _warnings(_pipeline(*_roots(tree, random_shuffle=True))) == []  # 11 of 15


def test_same_names_in_another_order(tree, photo_paths, image_dir):
    rels = [p.relative_to(image_dir) for p in photo_paths]
    images = [str(r) for r in rels]
    masks = [str(r.with_suffix(".png")) for r in reversed(rels)]
    pipe = _pipeline(
        {"file_root": str(tree / "images"), "files": images},
        {"file_root": str(tree / "masks"), "files": masks},
    )
    _one_warning(
        pipe, "same names in a different order", "sample 0 pairs 'animals/chelsea_cat.jpg'"
    )


def test_stems():
    assert path_stem("animals/cat.jpg") == "animals/cat"
    assert path_stem("a.b/c.tar.gz") == "a.b/c.tar"
    assert path_stem(".hidden") == ".hidden"
    assert name_stem("masks/x/cat.png") == "cat"


# --- readers.file's class_names (what Pipeline.class_names() collects) -------------------------


def _file_pipe(**args) -> Pipeline:
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        data, labels = fn.readers.file(name="files", **args)
        pipe.set_outputs(data, labels)
    return pipe


def test_class_names_are_the_class_folders(image_dir):
    pipe = _file_pipe(file_root=str(image_dir))
    expected = {0: "animals", 1: "medical", 2: "objects", 3: "people", 4: "space"}
    assert pipe.class_names() == expected
    assert pipe._runner.readers()["files"].class_names() == expected
    # The labels the reader gives are those names' numbers.
    for data, labels in pipe.epoch("partial"):
        for k in range(len(data)):
            folder = data[k].source_info().split("/")[0]
            assert expected[int(labels.at(k)[0])] == folder


def test_class_names_skip_the_number_of_an_empty_folder(tmp_path):
    for folder in ("b_dogs", "c_empty", "a_cats"):
        (tmp_path / folder).mkdir()
    (tmp_path / "a_cats" / "1.jpg").write_bytes(b"x")
    (tmp_path / "b_dogs" / "2.jpg").write_bytes(b"x")
    (tmp_path / "b_dogs" / "3.jpg").write_bytes(b"x")
    (tmp_path / "d_birds").mkdir()
    (tmp_path / "d_birds" / "4.png").write_bytes(b"x")
    assert _file_pipe(file_root=str(tmp_path)).class_names() == {
        0: "a_cats",
        1: "b_dogs",
        3: "d_birds",
    }


def test_no_class_names_for_files_and_file_lists(tmp_path, image_dir):
    files = ["animals/chelsea_cat.jpg", "space/rocket_launch_dscovr.jpg"]
    assert _file_pipe(file_root=str(image_dir), files=files, labels=[4, 7]).class_names() == {}
    (tmp_path / "list.txt").write_text(f"{image_dir}/animals/chelsea_cat.jpg 3\n")
    assert _file_pipe(file_list=str(tmp_path / "list.txt")).class_names() == {}
