"""``Pipeline.pick``: one batch of chosen samples (by name or label), the readers left where
they were; what the viewer's pin and pick are built on."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest

from augkit import ArgumentError, GraphError, Pipeline, fn, pipeline_def, types
from augkit.errors import SkippedSampleWarning

ROOT = pathlib.Path(__file__).resolve().parents[1]
ANNOTATIONS = ROOT / "data" / "annotations" / "instances.json"


def files(batch) -> list[str]:
    return [batch.source_info(i) for i in range(len(batch))]


def file_pipe(root, prefetch: bool, **reader) -> Pipeline:
    settings = {} if prefetch else {"exec_async": False, "exec_pipelined": False}
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=3, **settings)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(root), name="reader", **reader)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        angle = fn.random.uniform(range=(-30.0, 30.0))
        pipe.set_outputs(fn.rotate(images, angle=angle), labels)
    return pipe


@pytest.mark.parametrize("prefetch", [False, True], ids=["sync", "prefetch"])
def test_picked_samples_in_the_order_asked_and_the_reader_stays_put(image_dir, prefetch):
    plain = file_pipe(image_dir, prefetch)
    picking = file_pipe(image_dir, prefetch)
    try:
        expected = [files(plain.run()[0]) for _ in range(3)]
        assert files(picking.run()[0]) == expected[0]
        images, labels = picking.pick(["people/grace_hopper.jpg", "cameraman.jpg"])
        assert files(images) == ["people/grace_hopper.jpg", "people/cameraman.jpg"]
        people = {v: k for k, v in picking.class_names().items()}["people"]
        assert labels.as_array().ravel().tolist() == [people, people]
        assert files(picking.run()[0]) == expected[1]
        picking.pick(labels=[0])
        assert files(picking.run()[0]) == expected[2]
    finally:
        plain.close()
        picking.close()


def test_a_picked_sample_is_the_sample_the_reader_gave_with_new_draws(image_dir):
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=3)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
        angle = fn.random.uniform(range=(-30.0, 30.0), name="angle")
        pipe.set_outputs(fn.rotate(images, angle=angle, name="rotate"))
    try:
        pipe.run()
        name, decoded = pipe.value("decode").source_info(2), pipe.value("decode").at(2)
        angle = pipe.draws()[2]["rotate.angle"]
        (again,) = pipe.pick([name])
        assert files(again) == [name]
        np.testing.assert_array_equal(pipe.value("decode").at(0), decoded)
        assert pipe.draws()[0]["rotate.angle"] != angle  # a rerun's iteration: new draws
    finally:
        pipe.close()


def test_pick_by_label_takes_the_first_batch_of_them_by_number_or_class_name(image_dir):
    pipe = file_pipe(image_dir, prefetch=False)
    try:
        names = pipe.class_names()
        people = {v: k for k, v in names.items()}["people"]
        by_name, labels = pipe.pick(labels="people")
        assert all(f.startswith("people/") for f in files(by_name))
        assert set(labels.as_array().ravel().tolist()) == {people}
        by_number, _ = pipe.pick(labels=[people])
        assert files(by_number) == files(by_name)
        mixed, _ = pipe.pick(labels=["space", 0])
        assert len(mixed) == 4  # at most batch_size
        assert {f.split("/")[0] for f in files(mixed)} <= {"space", names[0]}
    finally:
        pipe.close()


def test_pick_from_coco_by_category(image_dir):
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        jpegs, boxes, labels = fn.readers.coco(
            file_root=str(image_dir), annotations_file=str(ANNOTATIONS), name="coco"
        )
        pipe.set_outputs(jpegs, boxes, labels)
    try:
        doc = json.loads(ANNOTATIONS.read_text())
        cats = {c["name"]: c["id"] for c in doc["categories"]}
        with_cat = {a["image_id"] for a in doc["annotations"] if a["category_id"] == cats["cat"]}
        images = {i["id"]: i["file_name"] for i in doc["images"]}
        jpegs, boxes, labels = pipe.pick(labels=["cat"])
        assert set(files(jpegs)) <= {images[i] for i in with_cat} and len(jpegs) >= 1
        cat_label = {v: k for k, v in pipe.class_names().items()}["cat"]
        for i in range(len(labels)):
            assert cat_label in labels.at(i).ravel().tolist()
    finally:
        pipe.close()


def test_wrong_names_and_labels_say_what_is_wrong_and_change_nothing(image_dir, tmp_path):
    pipe = file_pipe(image_dir, prefetch=False)
    try:
        first = files(pipe.run()[0])
        with pytest.raises(ArgumentError, match=r"no sample named 'grace_hoper\.jpg'"):
            pipe.pick(["grace_hoper.jpg"])
        with pytest.raises(ArgumentError, match=r"no class named 'cats'.*animals"):
            pipe.pick(labels=["cats"])
        with pytest.raises(ArgumentError, match=r"no sample of reader has the label\(s\) \[99\]"):
            pipe.pick(labels=99)
        with pytest.raises(ArgumentError, match="names or their labels"):
            pipe.pick()
        with pytest.raises(ArgumentError, match="names or their labels"):
            pipe.pick(["cameraman.jpg"], labels=[1])
        with pytest.raises(GraphError, match="no reader named 'other'"):
            pipe.pick(["cameraman.jpg"], reader="other")
        assert files(pipe.run()[0]) != first  # the reader went on as if nothing happened
    finally:
        pipe.close()
    # A base name two samples share must be given whole.
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(image_dir / "people" / "cameraman.jpg", tmp_path / folder / "same.jpg")
    twice = file_pipe(tmp_path, prefetch=False)
    try:
        with pytest.raises(ArgumentError, match=r"several samples of reader: a/same\.jpg, b/same"):
            twice.pick(["same.jpg"])
        assert files(twice.pick(["b/same.jpg"])[0]) == ["b/same.jpg"]
    finally:
        twice.close()


def test_pipelines_without_named_samples_refuse(image_dir):
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda: [np.zeros((2, 2), np.uint8)] * 2))
    try:
        with pytest.raises(GraphError, match="external source, whose samples have no names"):
            pipe.pick(["x.jpg"])
    finally:
        pipe.close()

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, debug=True)
    def debugged():
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        return jpegs

    debug = debugged()
    with pytest.raises(GraphError, match="normal pipeline"):
        debug.pick(["cameraman.jpg"])


def test_a_picked_file_that_is_skipped_leaves_a_shorter_batch(image_dir, tmp_path):
    (tmp_path / "c").mkdir()
    shutil.copy(image_dir / "people" / "cameraman.jpg", tmp_path / "c" / "good.jpg")
    (tmp_path / "c" / "broken.jpg").write_bytes(b"not a jpeg")
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(tmp_path))
        pipe.set_outputs(fn.decoders.image(jpegs, on_error="skip"))
    try:
        with pytest.warns(SkippedSampleWarning, match="broken.jpg.*left out of the batch"):
            (images,) = pipe.pick(["broken.jpg", "good.jpg"])
        assert files(images) == ["c/good.jpg"]
        assert pipe.skipped[-1].source_info == "c/broken.jpg"
        assert not pipe.skipped[-1].refilled
    finally:
        pipe.close()
