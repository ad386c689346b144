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
from augkit.operators.readers.coco import (
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
    them (module docstring)."""
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
