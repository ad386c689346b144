"""fn.readers.coco through the pipeline: its outputs against the JSON read independently here,
masks against Pillow's rasterisation and the RLE regions rebuilt with NumPy, every argument,
sharding, padding and epochs (the base reader's), shuffling by its properties, debug mode, and
the errors (DALI parity of the same outputs: tests/test_dali_parity_coco.py)."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
from PIL import Image, ImageDraw

from augkit import fn, kinds, ops, pipeline_def
from augkit.errors import ArgumentError, OperatorError, SkippedSampleWarning
from augkit.operators.readers.coco import _Image, _image_mask, _read_bytes
from augkit.operators.readers.coco_masks import (
    _fill,
    merge_labels,
    rle_decode,
    rle_encode,
    rle_from_polygon,
    rle_from_string,
)
from augkit.pipeline import Pipeline

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "coco"
IMAGES = DATA / "images"
INSTANCES = DATA / "instances.json"
PHOTOS = DATA / "photos.json"
DOC = json.loads(INSTANCES.read_text())
# The images in id order, and the labels DALI gives (categories numbered in the JSON's order).
ORDER = [im["file_name"] for im in sorted(DOC["images"], key=lambda im: im["id"])]
REMAP = {c["id"]: n for n, c in enumerate(DOC["categories"], start=1)}


def coco_pipe(
    batch_size: int = 5, num_threads: int = 1, seed: int = 7, debug: bool = False, **kwargs
) -> Pipeline:
    kwargs.setdefault("file_root", str(IMAGES))
    kwargs.setdefault("annotations_file", str(INSTANCES))

    @pipeline_def(
        batch_size=batch_size, num_threads=num_threads, device_id=None, seed=seed, debug=debug
    )
    def pipe():
        return tuple(fn.readers.coco(name="Reader", **kwargs))

    return pipe()


def names(batch) -> list[str]:
    return [t.source_info() for t in batch]


def epoch_names(pipe: Pipeline) -> list[str]:
    return [n for out in pipe.epoch("partial") for n in names(out[0])]


def expected(file_name: str, *, include_iscrowd: bool = True, threshold: float = 0.1) -> list:
    """The objects of an image as the JSON has them: (bbox, category id, annotation)."""
    image = next(im for im in DOC["images"] if im["file_name"] == file_name)
    return [
        (a["bbox"], a["category_id"], a)
        for a in DOC["annotations"]
        if a["image_id"] == image["id"]
        and (include_iscrowd or not a.get("iscrowd"))
        and min(a["bbox"][2:]) >= threshold
    ]


def size_of(file_name: str) -> tuple[int, int]:
    image = next(im for im in DOC["images"] if im["file_name"] == file_name)
    return image["width"], image["height"]


def write_json(tmp_path: pathlib.Path, doc: dict, name: str = "ann.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def modified(**changes) -> dict:
    doc = json.loads(INSTANCES.read_text())
    doc.update(changes)
    return doc


# --- outputs ---------------------------------------------------------------------------------


def test_images_boxes_labels_and_source_info_follow_the_json():
    pipe = coco_pipe()
    images, boxes, labels = pipe.run()
    assert names(images) == names(boxes) == names(labels) == ORDER
    for i, name in enumerate(ORDER):
        assert images.at(i).tobytes() == (IMAGES / name).read_bytes()
        objects = expected(name)
        want = np.array([b for b, _, _ in objects], np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(boxes.at(i), want)
        assert labels.at(i).tolist() == [REMAP[c] for _, c, _ in objects]
    assert images.dtype.name == "UINT8" and boxes.dtype.name == "FLOAT"
    assert labels.dtype.name == "INT32" and labels.at(4).shape == (0,)
    assert boxes.at(4).shape == (0, 4)
    assert (images.kind, labels.kind) == (kinds.ENCODED, kinds.LABELS)
    assert boxes.kind == kinds.boxes("xywh", relative=False)


@pytest.mark.parametrize(("ltrb", "ratio"), [(True, False), (False, True), (True, True)])
def test_ltrb_and_ratio(ltrb, ratio):
    _, boxes, _ = coco_pipe(ltrb=ltrb, ratio=ratio).run()
    for i, name in enumerate(ORDER):
        want = np.array([b for b, _, _ in expected(name)], np.float32).reshape(-1, 4)
        if ltrb:
            want[:, 2:] += want[:, :2]
        if ratio:
            want /= np.array(size_of(name) * 2, np.float32)
        np.testing.assert_allclose(boxes.at(i), want, rtol=1e-6)
    assert boxes.kind == kinds.boxes("ltrb" if ltrb else "xywh", relative=ratio)


def test_polygons_and_vertices_index_the_objects():
    _, _, _, polygons, vertices, ids = coco_pipe(
        polygon_masks=True, image_ids=True, ratio=True
    ).run()
    for i, name in enumerate(ORDER):
        rows, flat = [], []
        for obj, (_, _, ann) in enumerate(expected(name)):
            seg = ann["segmentation"]
            for poly in seg if isinstance(seg, list) else []:  # a crowd's RLE gives none
                rows.append([obj, len(flat), len(flat) + len(poly) // 2])
                flat += np.asarray(poly, np.float32).reshape(-1, 2).tolist()
        assert polygons.at(i).tolist() == rows
        want = np.array(flat, np.float32).reshape(-1, 2) / np.array(size_of(name), np.float32)
        np.testing.assert_allclose(vertices.at(i), want, rtol=1e-6)
        image_id = next(im["id"] for im in DOC["images"] if im["file_name"] == name)
        assert ids.at(i).tolist() == [image_id] and ids.at(i).dtype == np.int32
    assert polygons.at(0).tolist() == [[0, 0, 4], [1, 4, 8], [1, 8, 11]]  # two-polygon object
    assert polygons.kind == kinds.POLYGONS
    assert vertices.kind == kinds.Kind("vertices", relative=True)
    assert polygons.dtype.name == "INT32" and vertices.dtype.name == "FLOAT"


def test_legacy_masks_and_save_img_ids_are_dalis_deprecated_forms():
    new = coco_pipe(polygon_masks=True, image_ids=True).run()
    old = coco_pipe(masks=True, save_img_ids=True).run()
    assert len(old) == 6
    for i in range(5):
        np.testing.assert_array_equal(old[3].at(i)[:, 1:], 2 * new[3].at(i)[:, 1:])
        np.testing.assert_array_equal(old[5].at(i), new[5].at(i))


def test_pixelwise_masks_are_hwc_int32_label_maps_of_the_json_sizes():
    _, _, labels, masks = coco_pipe(pixelwise_masks=True).run()
    assert masks.layout() == "HWC" and masks.kind == kinds.MASK and masks.dtype.name == "INT32"
    for i, name in enumerate(ORDER):
        w, h = size_of(name)
        assert masks.at(i).shape == (h, w, 1)
        assert set(np.unique(masks.at(i))) - {0} == set(labels.at(i).tolist())
    assert not masks.at(4).any()  # the image without objects


def test_crowd_rles_decode_to_the_regions_drawn_with_numpy():
    """cup.jpg's crowd is a compressed RLE string of an ellipse, hubble.jpg's an uncompressed
    one of two blocks (tests/data/coco/make_data.py); rebuilt here independently."""
    yy, xx = np.mgrid[:40, :50]
    ellipse = ((xx - 30) / 12.0) ** 2 + ((yy - 22) / 9.0) ** 2 <= 1
    blocks = np.zeros((40, 60), bool)
    blocks[5:15, 40:55] = True
    blocks[25:38, 2:10] = True
    masks = coco_pipe(pixelwise_masks=True).run()[3]
    cup, hubble = ORDER.index("cup.jpg"), ORDER.index("hubble.jpg")
    person, dog = REMAP[1], REMAP[18]
    # The crowd (person, label 4) is the larger label where it overlaps the cup (label 3).
    np.testing.assert_array_equal(masks.at(cup)[..., 0] == person, ellipse)
    np.testing.assert_array_equal(masks.at(hubble)[..., 0] == dog, blocks)
    without = coco_pipe(pixelwise_masks=True, include_iscrowd=False).run()[3]
    assert person not in without.at(cup) and dog not in without.at(hubble)


def test_polygon_masks_agree_with_pillow_on_the_real_photos():
    """COCO's rasterisation (a pixel is in when its centre is) against Pillow's ImageDraw
    (which also fills the pixels the outline touches): they differ only on the boundary, by
    under 1.5% of the object's area (measured: 0.7-0.9%)."""
    doc = json.loads(PHOTOS.read_text())

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=1)
    def photos():
        jpegs, _, labels, masks = fn.readers.coco(
            file_root=str(ROOT / "data" / "images"),
            annotations_file=str(PHOTOS),
            pixelwise_masks=True,
        )
        return fn.decoders.image(jpegs), labels, masks

    decoded, labels, masks = photos().run()
    for i, image in enumerate(doc["images"]):
        photo = np.array(Image.open(ROOT / "data" / "images" / image["file_name"]))
        assert decoded.at(i).shape == photo.shape
        assert masks.at(i).shape == (*photo.shape[:2], 1)  # the JSON's sizes are the photo's
        ann = next(a for a in doc["annotations"] if a["image_id"] == image["id"])
        drawn = Image.new("1", (image["width"], image["height"]))
        for poly in ann["segmentation"]:
            xy = np.asarray(poly, float).reshape(-1, 2) - 0.5  # Pillow's pixel centres
            ImageDraw.Draw(drawn).polygon([tuple(p) for p in xy], fill=1)
        drawn = np.array(drawn, bool)
        ours = masks.at(i)[..., 0] == labels.at(i)[0]
        differ = ours ^ drawn
        assert differ.sum() < 0.015 * drawn.sum()
        edge = drawn & ~_eroded(drawn) | ~drawn & _dilated(drawn)
        assert not (differ & ~_dilated(edge)).any()  # only at the boundary


def _dilated(m: np.ndarray) -> np.ndarray:
    p = np.pad(m, 1)
    return p[1:-1, 1:-1] | p[:-2, 1:-1] | p[2:, 1:-1] | p[1:-1, :-2] | p[1:-1, 2:]


def _eroded(m: np.ndarray) -> np.ndarray:
    return ~_dilated(~m)


def test_a_labels_rle_and_polygons_are_united(tmp_path):
    """DALI drops a crowd RLE of a label that also has polygons in the image; augkit unites
    them (augkit/operators/readers/coco.py's docstring)."""
    doc = modified()
    block = np.zeros((40, 50), bool)
    block[2:7, 40:48] = True
    doc["annotations"].append(
        {
            "id": 50,
            "image_id": 12,
            "category_id": 44,
            "iscrowd": 1,
            "bbox": [40, 2, 8, 5],
            "segmentation": {"size": [40, 50], "counts": rle_encode(block)},
        }
    )
    # an object of the smallest label with no polygon (DALI's mask is then all zeros) and an
    # object with a box only (DALI crashes): left out of the mask, the others stay
    doc["annotations"].append(
        {
            "id": 52,
            "image_id": 12,
            "category_id": 18,
            "iscrowd": 0,
            "bbox": [1, 1, 5, 5],
            "segmentation": [],
        }
    )
    doc["annotations"].append(
        {"id": 51, "image_id": 7, "category_id": 18, "iscrowd": 0, "bbox": [1, 1, 5, 5]}
    )
    pipe = coco_pipe(annotations_file=write_json(tmp_path, doc), pixelwise_masks=True)
    _, _, labels, masks = pipe.run()
    base = coco_pipe(pixelwise_masks=True).run()[3]
    cup = ORDER.index("cup.jpg")
    cup_mask = masks.at(cup)[..., 0]
    assert (cup_mask[block] == REMAP[44]).all()
    np.testing.assert_array_equal(cup_mask[~block], base.at(cup)[..., 0][~block])
    np.testing.assert_array_equal(masks.at(0), base.at(0))
    assert labels.at(0).tolist() == [REMAP[3], REMAP[18], REMAP[18]]


def test_rle_helpers_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        h, w = rng.integers(1, 30, 2)
        mask = rng.random((h, w)) < rng.random()
        counts = rle_encode(mask)
        assert sum(counts) == h * w
        np.testing.assert_array_equal(rle_decode(counts, h, w), mask)
    # COCO's own example string form: counts [3, 2, 5] -> "32" + "5" as 6-bit digits
    assert rle_from_string("325") == [3, 2, 5]
    assert rle_from_string("3250") == [3, 2, 5, 2]  # the 4th is a difference to the 2nd
    assert rle_from_string("325O") == [3, 2, 5, 1]  # 'O' is -1: a negative difference
    # a rectangle from (1, 1) to (4, 3) covers the pixels [1, 4) x [1, 3) (COCO's pixel (r, c)
    # is the unit square from (c, r))
    square = rle_decode(
        rle_from_polygon(np.array([[1, 1], [4, 1], [4, 3], [1, 3]], float), 5, 6), 5, 6
    )
    want = np.zeros((5, 6), bool)
    want[1:3, 1:4] = True
    np.testing.assert_array_equal(square, want)
    layered = merge_labels([(1, rle_encode(want)), (2, rle_encode(want[:, ::-1]))], 5, 6)
    assert layered[..., 0][2].tolist() == [0, 1, 2, 2, 2, 0]  # the larger label wins


# --- arguments -------------------------------------------------------------------------------


def test_class_remapping_and_class_names():
    pipe = coco_pipe(skip_empty=True, batch_size=4)
    labels = pipe.run()[2]
    assert [labels.at(i).tolist() for i in range(len(labels))] == [
        [REMAP[3], REMAP[18]],
        [REMAP[1]],
        [REMAP[1], REMAP[44]],
        [REMAP[90], REMAP[18]],
    ]
    names_by_label = {REMAP[c["id"]]: c["name"] for c in DOC["categories"]}
    assert pipe.class_names() == names_by_label
    assert names_by_label[1] == "dog"  # numbered in the JSON's order, not by id
    raw = coco_pipe(avoid_class_remapping=True, skip_empty=True, batch_size=4)
    assert [np.asarray(lb).tolist() for lb in raw.run()[2]] == [[3, 18], [1], [1, 44], [90, 18]]
    assert raw.class_names() == {c["id"]: c["name"] for c in DOC["categories"]}


def test_skip_empty_size_threshold_and_include_iscrowd():
    assert names(coco_pipe(skip_empty=True, batch_size=4).run()[0]) == [
        n for n in ORDER if n != "coins.jpg"
    ]
    small = coco_pipe(size_threshold=0.01).run()
    hubble = ORDER.index("hubble.jpg")
    assert len(small[2].at(hubble)) == 3  # the 0.05-wide box is kept
    for threshold in (0.1, 12.5, 20.0):
        labels = coco_pipe(size_threshold=threshold).run()[2]
        for i, name in enumerate(ORDER):
            want = [REMAP[c] for _, c, _ in expected(name, threshold=threshold)]
            assert labels.at(i).tolist() == want
    no_crowd = coco_pipe(include_iscrowd=False).run()[2]
    for i, name in enumerate(ORDER):
        want = [REMAP[c] for _, c, _ in expected(name, include_iscrowd=False)]
        assert no_crowd.at(i).tolist() == want


def test_images_restricts_and_orders_with_copies():
    listed = ["hubble.jpg", "cat.jpg", "hubble.jpg"]
    pipe = coco_pipe(images=listed, batch_size=3)
    assert names(pipe.run()[0]) == listed
    assert pipe.epoch_size() == {"Reader": 3}
    assert names(coco_pipe(images="cat.jpg", batch_size=1).run()[0]) == ["cat.jpg"]


def test_ops_class_and_legacy_aliases():
    for make in (ops.readers.COCO, ops.COCOReader):
        op = make(file_root=str(IMAGES), annotations_file=str(INSTANCES), ltrb=True)
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
        with pipe:
            pipe.set_outputs(*op())
        assert names(pipe.run()[0]) == ORDER[:2]
    with Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1) as pipe:
        pipe.set_outputs(*fn.coco_reader(file_root=str(IMAGES), annotations_file=str(INSTANCES)))
    assert len(pipe.run()) == 3


def test_threads_and_debug_mode_do_not_change_the_batches():
    def runs(**kwargs) -> list:
        pipe = coco_pipe(
            batch_size=3, pixelwise_masks=True, image_ids=True, random_shuffle=True, **kwargs
        )
        return [[[t.at(i).copy() for i in range(len(t))] for t in pipe.run()] for _ in range(4)]

    plain = runs()
    for other in (runs(num_threads=3), runs(debug=True)):
        for a, b in zip(plain, other, strict=True):
            for x, y in zip(a, b, strict=True):
                assert all(np.array_equal(p, q) for p, q in zip(x, y, strict=True))


# --- order: shuffling, shards, padding, epochs -------------------------------------------------


def test_random_shuffle_is_seeded_and_reads_every_image_once_per_epoch():
    def two_epochs(seed: int) -> list[list[str]]:
        pipe = coco_pipe(random_shuffle=True, seed=seed)
        return [epoch_names(pipe) for _ in range(2)]

    first = two_epochs(1)
    assert first == two_epochs(1)
    orders = [tuple(e) for s in (1, 2, 3) for e in two_epochs(s)]
    assert all(sorted(e) == sorted(ORDER) for e in orders)
    assert len(set(orders)) > 1
    after = coco_pipe(shuffle_after_epoch=True)
    epochs = [epoch_names(after) for _ in range(3)]
    assert all(sorted(e) == sorted(ORDER) for e in epochs) and len(set(map(tuple, epochs))) > 1


@pytest.mark.parametrize("num_shards", [2, 3])
def test_shards_are_disjoint_and_cover_the_data_set(num_shards):
    bounds = [5 * k // num_shards for k in range(num_shards + 1)]
    seen = []
    for k in range(num_shards):
        pipe = coco_pipe(shard_id=k, num_shards=num_shards, stick_to_shard=True)
        got = epoch_names(pipe)
        assert got == ORDER[bounds[k] : bounds[k + 1]]
        seen += got
        # the boxes travel with their images
        boxes = [b for out in pipe.epoch("partial") for b in out[1]]
        assert [np.asarray(b).shape[0] for b in boxes] == [len(expected(n)) for n in got]
    assert sorted(seen) == sorted(ORDER)


def test_pad_last_batch_and_epoch_policies():
    pipe = coco_pipe(batch_size=2, pad_last_batch=True, image_ids=True)
    batches = [names(out[0]) for out in pipe.epoch("fill")]
    assert batches == [ORDER[0:2], ORDER[2:4], [ORDER[4], ORDER[4]]]
    plain = coco_pipe(batch_size=2)
    assert [len(out[0]) for out in plain.epoch("partial")] == [2, 2, 1]
    assert [len(out[0]) for out in plain.epoch("drop")] == [2, 2]
    assert plain.epoch_size() == {"Reader": 5}
    # run() goes on into the next epoch
    cont = coco_pipe(batch_size=3)
    assert names(cont.run()[0]) + names(cont.run()[0]) == ORDER + ORDER[:1]


# --- errors ----------------------------------------------------------------------------------


def _bad(tmp_path, change) -> str:
    doc = modified()
    change(doc)
    return write_json(tmp_path, doc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"annotations_file": "{tmp}/none.json"}, "annotations_file '{tmp}/none.json' does not"),
        ({"annotations_file": ""}, "'annotations_file' is required"),
        ({"file_root": "{tmp}/nowhere"}, "file_root '{tmp}/nowhere' does not exist"),
        ({"annotations_file": "{tmp}/broken.json"}, "is not valid JSON: Expecting"),
        ({"images": ["cat.jpg", "dog.jpg"]}, "'images' names 1 file(s) it does not list: 'dog"),
        ({"num_shards": 6}, "has 5 samples, fewer than num_shards=6"),
        ({"skip_empty": True, "images": ["coins.jpg"]}, "skip_empty left out every image"),
    ],
)
def test_bad_arguments_raise_at_build_naming_the_reader_and_file(tmp_path, args, message):
    (tmp_path / "broken.json").write_text('{"images": [{"id": 1,')
    args = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in args.items()}
    pipe = coco_pipe(**args)
    with pytest.raises(ArgumentError) as info:
        pipe.build()
    assert str(info.value).startswith("Reader: ")
    assert message.format(tmp=tmp_path) in str(info.value)


def _set(path: list, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["images"][1].pop("file_name"), "images[1] has no 'file_name'"),
        (_set(["images", 0, "id"], "12"), "images[0]: 'id' must be an integer"),
        (_set(["annotations", 2, "category_id"], 99), "annotations[2] (id 3): category_id 99"),
        (_set(["annotations", 0, "bbox"], [1, 2, -3, 4]), "(id 1): the box [1, 2, -3, 4] has a"),
        (_set(["annotations", 0, "bbox"], [1, 2, 3]), "'bbox' must be a list of 4 finite numbers"),
        (_set(["annotations", 0, "segmentation"], [[1, 2, 3]]), "segmentation[0] must be a list"),
        (_set(["annotations", 3, "segmentation", "size"], [41, 50]), "the RLE's size [41, 50]"),
        (_set(["annotations", 7, "segmentation", "counts"], [5, 5]), "add up to 10 pixels, not"),
        (_set(["annotations", 3, "segmentation", "counts"], "ab\x01"), "not in COCO's RLE alph"),
        (_set(["categories"], [{"name": "x"}]), "categories[0] has no 'id'"),
        (_set(["images", 1, "id"], 12), "images[1] repeats the id 12 of images[0]"),
        (_set(["annotations", 0, "iscrowd"], "no"), "(id 1): 'iscrowd' must be 0 or 1"),
        (_set(["annotations", 0, "bbox"], [1, 2, float("nan"), 4]), "4 finite numbers"),
        (_set(["images", 0, "width"], 0), "images[0]: 'width' must be an integer > 0"),
        (_set(["annotations"], {"a": 1}), "'annotations' must be a list"),
    ],
)
def test_malformed_annotations_name_the_file_and_the_key(tmp_path, change, message):
    path = _bad(tmp_path, change)
    pipe = coco_pipe(annotations_file=path, pixelwise_masks=True)
    with pytest.raises(ArgumentError) as info:
        pipe.build()
    text = str(info.value)
    assert text.startswith("Reader: ") and path in text and message in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"polygon_masks": True, "pixelwise_masks": True}, "mutually exclusive"),
        ({"preprocessed_annotations": "/x"}, "preprocessed_annotations (DALI's binary meta"),
        ({"save_preprocessed_annotations": True}, "save_preprocessed_annotations is not"),
        ({"skip_cached_images": True}, "does not support skip_cached_images"),
        ({"size_threshold": "big"}, "argument 'size_threshold'"),
        ({"images": [1, 2]}, "argument 'images'"),
    ],
)
def test_refused_arguments_raise_when_the_operator_is_made(args, message):
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(")):
        fn.readers.coco(file_root=str(IMAGES), annotations_file=str(INSTANCES), **args)


def test_missing_image_is_refused_at_build_and_a_vanished_one_at_read(tmp_path):
    root = tmp_path / "images"
    shutil.copytree(IMAGES, root)
    (root / "hubble.jpg").unlink()
    with pytest.raises(
        ArgumentError,
        match=r"1 image file\(s\) of .* are not in file_root .*"
        r"hubble\.jpg",
    ):
        coco_pipe(file_root=str(root)).build()
    shutil.copy(IMAGES / "hubble.jpg", root / "hubble.jpg")
    pipe = coco_pipe(file_root=str(root), batch_size=2)
    pipe.build()
    (root / "astronaut.jpg").unlink()
    with pytest.raises(OperatorError) as info:
        pipe.run()
    message = str(info.value)
    assert "Reader" in message and "sample #1 (astronaut.jpg)" in message
    assert str(root / "astronaut.jpg") in message
    shutil.copy(IMAGES / "astronaut.jpg", root / "astronaut.jpg")
    assert names(pipe.run()[0]) == ORDER[:2]  # the pipeline stays usable


def test_eager_reader_is_an_iterable_over_one_epoch():
    from augkit import eager

    batches = list(
        eager.readers.coco(
            file_root=str(IMAGES),
            annotations_file=str(INSTANCES),
            batch_size=2,
            pixelwise_masks=True,
        )
    )
    assert [len(b[0]) for b in batches] == [2, 2, 1]
    assert [n for b in batches for n in names(b[3])] == ORDER
    whole = coco_pipe(pixelwise_masks=True).run()
    for i, mask in enumerate(m for b in batches for m in b[3]):
        np.testing.assert_array_equal(np.asarray(mask), whole[3].at(i))


def test_a_skipping_decoder_keeps_boxes_and_masks_with_their_images(tmp_path):
    """decoders.image(on_error="skip") leaves out an undecodable image and the reader refills
    the batch (readers/base.py): every output still describes the image beside it."""
    root = tmp_path / "images"
    shutil.copytree(IMAGES, root)
    (root / "astronaut.jpg").write_bytes(b"not a jpeg")

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe_def():
        jpegs, boxes, labels, masks = fn.readers.coco(
            file_root=str(root), annotations_file=str(INSTANCES), pixelwise_masks=True
        )
        return fn.decoders.image(jpegs, on_error="skip"), boxes, labels, masks

    pipe = pipe_def()
    seen = []
    for k in range(2):
        if k == 0:
            with pytest.warns(SkippedSampleWarning, match="astronaut.jpg"):
                images, boxes, labels, masks = pipe.run()
        else:
            images, boxes, labels, masks = pipe.run()
        assert names(images) == names(boxes) == names(labels) == names(masks)
        for i, name in enumerate(names(images)):
            assert images.at(i).shape[:2] == masks.at(i).shape[:2]
            assert len(boxes.at(i)) == len(expected(name))
        seen += names(images)
    assert seen == [n for n in ORDER if n != "astronaut.jpg"]
    assert [s.source_info for s in pipe.skipped] == ["astronaut.jpg"]


@pytest.mark.parametrize(
    "compat",
    [
        {"dont_use_mmap": True},
        {"read_ahead": True},
        {"lazy_init": True},
        {"prefetch_queue_depth": 3},
        {"tensor_init_bytes": 1},
        {"initial_fill": 2},
        {"bytes_per_sample_hint": 100},
    ],
)
def test_dalis_loader_tuning_arguments_are_accepted_and_change_nothing(compat):
    plain = coco_pipe(pixelwise_masks=True).run()
    tuned = coco_pipe(pixelwise_masks=True, **compat).run()
    for a, b in zip(plain, tuned, strict=True):
        assert names(a) == names(b)
        assert all(np.array_equal(a.at(i), b.at(i)) for i in range(len(a)))


# --- the fast rasteriser against the step-by-step one ----------------------------------------
# The reader makes masks from polygon boundary points and run segments (the docstring of
# augkit/operators/readers/coco_masks.py); these are the implementations it replaced, kept as
# references: rleFrPoly point by point (every point of every edge made), the RLE counts decoded
# to a boolean mask per polygon, and DALI's run-merging loop over the counts.


def ref_rle_from_polygon(xy: np.ndarray, height: int, width: int) -> list[int]:
    if len(xy) == 0:
        return [height * width]
    xs = np.trunc(5 * xy[:, 0] + 0.5).astype(np.int64)
    ys = np.trunc(5 * xy[:, 1] + 0.5).astype(np.int64)
    xs, ys = np.append(xs, xs[0]), np.append(ys, ys[0])
    x0, x1, y0, y1 = xs[:-1], xs[1:], ys[:-1], ys[1:]
    dx, dy = np.abs(x1 - x0), np.abs(y0 - y1)
    along_x = dx >= dy
    flip = (along_x & (x0 > x1)) | (~along_x & (y0 > y1))
    x0, x1 = np.where(flip, x1, x0), np.where(flip, x0, x1)
    y0, y1 = np.where(flip, y1, y0), np.where(flip, y0, y1)
    steps = np.where(along_x, dx, dy)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(along_x, (y1 - y0) / dx, (x1 - x0) / dy)
    slope = np.where(steps == 0, 0.0, slope)
    counts = steps + 1
    edge = np.repeat(np.arange(len(steps)), counts)
    d = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    t = np.where(flip[edge], steps[edge] - d, d)
    line = np.where(along_x[edge], y0[edge], x0[edge]) + slope[edge] * t + 0.5
    line = np.trunc(line).astype(np.int64)
    u = np.where(along_x[edge], t + x0[edge], line)
    v = np.where(along_x[edge], line, t + y0[edge])
    change = np.flatnonzero(u[1:] != u[:-1]) + 1
    uj, up = u[change], u[change - 1]
    xd = np.where(uj < up, uj, uj - 1).astype(np.float64)
    xd = (xd + 0.5) / 5 - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    yd = np.minimum(v[change], v[change - 1]).astype(np.float64)
    yd = (yd + 0.5) / 5 - 0.5
    yd = np.ceil(np.clip(yd, 0, height))
    cols = xd[keep].astype(np.int64)
    rows = yd[keep].astype(np.int64)
    a = np.sort(np.concatenate((cols * height + rows, [height * width])))
    diffs = np.diff(a, prepend=0).tolist()
    out = [diffs[0]]
    j = 1
    while j < len(diffs):
        if diffs[j] > 0:
            out.append(diffs[j])
            j += 1
        else:
            j += 1
            if j < len(diffs):
                out[-1] += diffs[j]
                j += 1
    return out


def ref_merge_labels(layers, height: int, width: int) -> np.ndarray:
    mask = np.zeros(height * width, np.int32)
    if not layers:
        return mask.reshape(width, height).T.reshape(height, width, 1)
    first_label, first = layers[0]
    a_cnts = list(first)
    a_vals = [first_label if i % 2 else 0 for i in range(len(a_cnts))]
    for label, b in layers[1:]:
        cnt_a, cnt_b = a_cnts[0], b[0]
        next_val_a = val_a = a_vals[0]
        next_vb = vb = False
        na = nb = 1
        out_c, out_v = [], []
        total = 1
        while total > 0:
            c = min(cnt_a, cnt_b)
            cnt_a -= c
            if not cnt_a and na < len(a_cnts):
                cnt_a, next_val_a = a_cnts[na], a_vals[na]
                na += 1
            cnt_b -= c
            if not cnt_b and nb < len(b):
                cnt_b = b[nb]
                nb += 1
                next_vb = not next_vb
            total = cnt_a + cnt_b
            if val_a and vb:
                out_v.append(val_a if not cnt_a else label)
            elif val_a:
                out_v.append(val_a)
            else:
                out_v.append(label if vb else 0)
            out_c.append(c)
            val_a, vb = next_val_a, next_vb
            if not cnt_a:
                break
        a_cnts, a_vals = out_c, out_v
    flat = np.repeat(np.asarray(a_vals, np.int32), np.asarray(a_cnts, np.int64))
    n = min(flat.size, mask.size)
    mask[:n] = flat[:n]
    return np.ascontiguousarray(mask.reshape(width, height).T).reshape(height, width, 1)


def ref_pixelwise_mask(height, width, labels, polygons, rles) -> np.ndarray:
    per_label: dict[int, np.ndarray] = {}
    for label, obj_polygons, obj_rles in zip(labels, polygons, rles, strict=True):
        parts = [
            rle_decode(ref_rle_from_polygon(p.astype(np.float64), height, width), height, width)
            for p in obj_polygons
        ] + [rle_decode(r, height, width) for r in obj_rles]
        for part in parts:
            if label in per_label:
                per_label[label] |= part
            else:
                per_label[label] = part.copy()
    layers = [(label, rle_encode(per_label[label])) for label in sorted(per_label)]
    return ref_merge_labels(layers, height, width)


def random_polygon(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A float32 K×2 polygon of one of several shapes: random (self-intersecting) inside or
    around the image, far out of it, tiny (under a pixel), on half-pixel steps (vertices on
    the grid's cuts), with repeated vertices, collinear, or with 0 to 2 vertices."""
    kind = rng.integers(0, 9)
    k = int(rng.integers(3, 12))
    size = max(height, width)
    if kind == 0:
        xy = rng.uniform(-0.2 * size, 1.2 * size, (k, 2))
    elif kind == 1:
        xy = rng.uniform(-2e3, 2e3, (k, 2))
    elif kind == 2:
        xy = rng.uniform(0, 1.5, (k, 2)) + rng.uniform(-1, size, 2)
    elif kind == 3:
        xy = np.round(rng.uniform(-2, size + 2, (k, 2)) * 2) / 2
    elif kind == 4:
        xy = rng.uniform(0, size, (k, 2))
        xy[1::2] = xy[0]
    elif kind == 5:
        t = rng.uniform(0, 1, (k, 1))
        xy = rng.uniform(0, size, 2) + t * rng.uniform(-size, size, 2)
    elif kind == 6:
        xy = rng.uniform(0, size, (int(rng.integers(0, 3)), 2))
    elif kind == 7:  # a convex one, the usual COCO outline
        angles = np.sort(rng.uniform(0, 2 * np.pi, k))
        r = rng.uniform(1, size / 2)
        xy = rng.uniform(0, size, 2) + r * np.stack((np.cos(angles), np.sin(angles)), 1)
    else:
        xy = rng.integers(-3, size + 3, (k, 2)).astype(float)
    return xy.astype(np.float32)


def random_rle(rng: np.random.Generator, height: int, width: int) -> list[int]:
    """Column-major counts covering the image, zero counts included (first and in between)."""
    cuts = np.sort(rng.integers(0, height * width + 1, int(rng.integers(0, 12))))
    counts = np.diff(np.concatenate(([0], cuts, [height * width]))).tolist()
    return [0, *counts] if rng.random() < 0.3 else counts


def test_fast_polygon_rle_is_the_step_by_step_one():
    rng = np.random.default_rng(13)
    for _ in range(1000):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        xy = random_polygon(rng, h, w).astype(np.float64)
        assert rle_from_polygon(xy, h, w) == ref_rle_from_polygon(xy, h, w), (h, w, xy)


def test_fast_label_merge_is_dalis_run_merging_loop():
    rng = np.random.default_rng(14)
    for _ in range(400):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        labels = np.sort(rng.choice(np.arange(-2, 9), int(rng.integers(1, 5)), replace=False))
        layers = []
        for label in labels:
            mask = rng.random((h, w)) < rng.random()
            if rng.random() < 0.3:  # a block, so that runs end in the image's last column
                mask[:] = False
                mask[rng.integers(0, h) :, rng.integers(0, w) :] = True
            layers.append((int(label), rle_encode(mask)))
        got = merge_labels(layers, h, w)
        np.testing.assert_array_equal(got, ref_merge_labels(layers, h, w))
        assert got.dtype == np.int32 and got.shape == (h, w, 1) and got.flags.c_contiguous


@pytest.mark.parametrize("seed", range(4))
def test_fast_pixelwise_mask_is_the_step_by_step_one(seed):
    """Whole images: several objects of a few labels (0 and negative ones too, as with
    avoid_class_remapping), each with polygons, crowd RLEs, both or none."""
    rng = np.random.default_rng(100 + seed)
    for n in range(80):
        h, w = (int(v) for v in rng.integers(1, 60, 2))
        if n % 10 == 0:  # sizes where the transposition is done in blocks, 512 among them
            h, w = int(rng.choice([512, 64, 65, 130])), int(rng.choice([512, 63, 200]))
        image = _Image(0, "x.jpg", w, h)
        pool = rng.choice([-3, 0, 1, 2, 5, 7, 300, 70000], int(rng.integers(1, 5)), replace=False)
        for _ in range(int(rng.integers(0, 7))):
            image.labels.append(int(rng.choice(pool)))
            image.polygons.append(
                [random_polygon(rng, h, w) for _ in range(int(rng.choice([0, 1, 1, 2, 3])))]
            )
            image.rles.append([random_rle(rng, h, w) for _ in range(int(rng.random() < 0.25))])
        want = ref_pixelwise_mask(h, w, image.labels, image.polygons, image.rles)
        got = _image_mask(image)
        np.testing.assert_array_equal(got, want, err_msg=f"seed {seed}, image {n}")
        assert got.dtype == np.int32 and got.shape == (h, w, 1) and got.flags.c_contiguous


def test_fast_masks_of_the_reader_are_the_step_by_step_ones():
    """Through the pipeline, on the real photos' annotations (``tests/data/coco``)."""
    pipe = coco_pipe(batch_size=len(ORDER), pixelwise_masks=True)
    _, _, labels, masks = pipe.run()
    by_id = {im["file_name"]: im for im in DOC["images"]}
    compared = 0
    for i, name in enumerate(names(masks)):
        im = by_id[name]
        objects = [a for a in DOC["annotations"] if a["image_id"] == im["id"]]
        objects = [a for a in objects if min(np.float32(v) for v in a["bbox"][2:]) >= 0.1]
        polygons = [
            [np.asarray(p, np.float32).reshape(-1, 2) for p in a["segmentation"]]
            if isinstance(a.get("segmentation"), list)
            else []
            for a in objects
        ]
        rles = [
            [_counts(a["segmentation"]["counts"])]
            if isinstance(a.get("segmentation"), dict)
            else []
            for a in objects
        ]
        compared += 1
        want = ref_pixelwise_mask(im["height"], im["width"], labels.at(i).tolist(), polygons, rles)
        np.testing.assert_array_equal(masks.at(i), want, err_msg=name)
    assert compared == len(ORDER)


def _counts(counts) -> list[int]:
    return rle_from_string(counts) if isinstance(counts, str) else list(counts)


def test_file_bytes_are_read_as_np_fromfile_reads_them(tmp_path):
    files = sorted((ROOT / "data" / "images").glob("*/*.jpg"))[:4] + sorted(IMAGES.glob("*"))
    (tmp_path / "empty.jpg").write_bytes(b"")
    for path in [*files, tmp_path / "empty.jpg"]:
        got = _read_bytes(str(path))
        want = np.fromfile(path, dtype=np.uint8)
        assert got.dtype == np.uint8 and got.ndim == 1
        np.testing.assert_array_equal(got, want)
    with pytest.raises(FileNotFoundError):
        _read_bytes(str(tmp_path / "gone.jpg"))


def test_label_maps_of_many_or_large_labels_fill_as_plain_runs():
    """_fill transposes uint8 (labels 0..255, or indices of up to 256 distinct labels) and
    falls back to int32 beyond: each way gives the runs' values, column-major."""
    rng = np.random.default_rng(15)
    for values in (
        rng.integers(0, 256, 300),
        rng.integers(-(2**31), 2**31, 300),  # > 256 distinct
        rng.choice([-5, 1000, 2**31 - 1], 300),
    ):
        h, w = int(rng.integers(1, 80)), int(rng.integers(1, 200))
        runs = np.diff(np.concatenate(([0], np.sort(rng.integers(0, h * w, 299)), [h * w])))
        want = np.repeat(values.astype(np.int32), runs).reshape(w, h).T[..., None]
        got = _fill(values.astype(np.int64), runs, h, w)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int32 and got.flags.c_contiguous
