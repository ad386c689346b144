"""Checks of the sample annotations: data/annotations/instances.json and data/masks/.

The references are independent of ``data/make_annotations.py`` (which draws the masks with
Pillow): the JPEGs' real sizes read from the files, box extents and areas recomputed with NumPy,
the polygons rasterised again with OpenCV's ``fillPoly``, and DALI's own ``fn.readers.coco``
outputs for the same JSON, stored in ``data/annotations/dali_coco_reference.json`` (DALI is not
run here; ``make_annotations.py --dali-reference`` rewrites that file from DALI's venv).

Traps:

* Pillow fills a polygon's outline too, OpenCV and pycocotools (DALI) do not quite: the masks are
  up to about one pixel wider on every side, so pixel extents are compared with a 2 px
  tolerance and pixel counts with a tolerance of the class's polygon perimeter.
* Where two annotations overlap, the mask keeps the later one (the occluder) and DALI keeps the
  higher class index; the JSON is drawn so that overlaps are only a few pixels.
* The class index in a mask is DALI's remapped label: categories sorted by COCO id -> 1..K.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import pathlib
import shutil

import cv2
import numpy as np
import pytest
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
IMAGES = DATA / "images"
MASKS = DATA / "masks"
JSON_PATH = DATA / "annotations" / "instances.json"
DALI_PATH = DATA / "annotations" / "dali_coco_reference.json"
INSTANCE_MAP = MASKS / "objects" / "greek_coins.instances.png"
TOL = 2  # px, between a box and the pixel extent of its mask


@pytest.fixture(scope="module")
def doc() -> dict:
    with open(JSON_PATH, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def tool():
    """data/make_annotations.py imported as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("make_annotations", DATA / "make_annotations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _class_index(doc: dict) -> dict[int, int]:
    ids = sorted(c["id"] for c in doc["categories"])
    return {cid: k + 1 for k, cid in enumerate(ids)}


def _polys(ann: dict) -> list[np.ndarray]:
    return [np.asarray(p, dtype=np.float64).reshape(-1, 2) for p in ann["segmentation"]]


def _by_image(doc: dict) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {im["id"]: [] for im in doc["images"]}
    for a in doc["annotations"]:
        out[a["image_id"]].append(a)
    return out


def _mask_file(file_name: str) -> pathlib.Path:
    return MASKS / pathlib.Path(file_name).with_suffix(".png")


def _extent(mask: np.ndarray) -> tuple[int, int, int, int]:
    """x0, y0, x1, y1 of the True pixels, x1/y1 exclusive (the pixels' far edges)."""
    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def _union_ltrb(anns: list[dict]) -> np.ndarray:
    b = np.array([a["bbox"] for a in anns], dtype=np.float64)
    return np.array(
        [b[:, 0].min(), b[:, 1].min(), (b[:, 0] + b[:, 2]).max(), (b[:, 1] + b[:, 3]).max()]
    )


def _perimeter(anns: list[dict]) -> float:
    total = 0.0
    for a in anns:
        for p in _polys(a):
            total += float(np.linalg.norm(p - np.roll(p, 1, axis=0), axis=1).sum())
    return total


# --- the JSON ------------------------------------------------------------------------------


def test_json_is_coco_with_unique_ids(doc):
    assert {"images", "annotations", "categories"} <= set(doc)
    for key in ("images", "annotations", "categories"):
        ids = [x["id"] for x in doc[key]]
        assert len(ids) == len(set(ids)), f"{key}: ids are not unique"
    for c in doc["categories"]:
        assert isinstance(c["id"], int) and c["name"] and c["supercategory"]
    names = [c["name"] for c in doc["categories"]]
    assert len(names) == len(set(names))
    cat_ids = sorted(c["id"] for c in doc["categories"])
    # COCO-style ids: not 1..K, so the remapping to class indices matters
    assert cat_ids != list(range(1, len(cat_ids) + 1))
    assert {1: "person", 17: "cat", 47: "cup", 85: "clock"}.items() <= {
        c["id"]: c["name"] for c in doc["categories"]
    }.items()
    img_ids = {im["id"] for im in doc["images"]}
    used = set()
    for a in doc["annotations"]:
        assert a["image_id"] in img_ids, a["id"]
        assert a["category_id"] in cat_ids, a["id"]
        assert a["iscrowd"] == 0, a["id"]  # polygons; iscrowd=1 would need RLE in COCO
        assert isinstance(a["segmentation"], list) and a["segmentation"], a["id"]
        used.add(a["category_id"])
    assert used == set(cat_ids), "every category is used"


def test_json_lists_every_photo_with_its_real_size(doc):
    listed = {im["file_name"]: im for im in doc["images"]}
    on_disk = sorted(str(p.relative_to(IMAGES)) for p in IMAGES.glob("*/*.jpg"))
    assert sorted(listed) == on_disk
    for name, im in listed.items():
        with Image.open(IMAGES / name) as pil:
            assert pil.size == (im["width"], im["height"]), name


def test_some_images_have_no_annotations_and_some_objects_two_polygons(doc):
    per_image = _by_image(doc)
    names = {im["id"]: im["file_name"] for im in doc["images"]}
    empty = {names[i] for i, anns in per_image.items() if not anns}
    assert "space/hubble_deep_field.jpg" in empty
    multi = [a for a in doc["annotations"] if len(a["segmentation"]) >= 2]
    assert multi, "at least one object made of two polygons"
    # a crowd of one category in one image: the coins
    coins = [a for a in doc["annotations"] if a["category_id"] == 95]
    assert len(coins) >= 20 and len({a["image_id"] for a in coins}) == 1


def test_polygons_are_real_outlines(doc):
    for a in doc["annotations"]:
        for p in a["segmentation"]:
            assert len(p) % 2 == 0, a["id"]
            assert 10 <= len(p) // 2 <= 40, f"annotation {a['id']}: {len(p) // 2} vertices"


def test_boxes_inside_images_and_around_polygons(doc):
    sizes = {im["id"]: (im["width"], im["height"]) for im in doc["images"]}
    for a in doc["annotations"]:
        w_img, h_img = sizes[a["image_id"]]
        x, y, w, h = a["bbox"]
        assert w > 0 and h > 0, a["id"]
        assert x >= 0 and y >= 0 and x + w <= w_img and y + h <= h_img, a["id"]
        pts = np.concatenate(_polys(a))
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        np.testing.assert_allclose([x, y, x + w, y + h], [*lo, *hi], atol=1e-6, err_msg=a["id"])


def test_area_is_the_polygons_area(doc):
    for a in doc["annotations"]:
        area = 0.0
        for p in _polys(a):
            x, y = p[:, 0], p[:, 1]
            area += 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
        assert a["area"] == pytest.approx(area, abs=0.1), a["id"]
        assert a["area"] <= a["bbox"][2] * a["bbox"][3]


def test_make_annotations_check_accepts_the_json(doc, tool):
    tool.check(doc)  # raises AnnotationError otherwise
    assert tool.class_indices(doc) == _class_index(doc)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["annotations"][0]["bbox"].__setitem__(2, 10), ["annotation id 101", "bbox"]),
        (lambda d: d["annotations"][1].__setitem__("id", 101), ["annotation id 101", "unique"]),
        (lambda d: d["images"][0].__setitem__("width", 450), ["chelsea_cat.jpg", "451x300"]),
        (
            lambda d: d["images"][0].__setitem__("file_name", "animals/nope.jpg"),
            ["image id 1", "nope.jpg"],
        ),
        (lambda d: d["annotations"][0].__setitem__("category_id", 2), ["category_id 2"]),
        (lambda d: d["annotations"][0]["segmentation"][0].append(5.0), ["annotation id 101"]),
    ],
)
def test_make_annotations_check_names_the_problem(doc, tool, change, words):
    bad = copy.deepcopy(doc)
    change(bad)
    with pytest.raises(tool.AnnotationError) as info:
        tool.check(bad)
    for word in words:
        assert word in str(info.value)


# --- the masks -----------------------------------------------------------------------------


def test_one_palette_mask_per_annotated_image(doc):
    per_image = _by_image(doc)
    expected = set()
    for im in doc["images"]:
        path = _mask_file(im["file_name"])
        if not per_image[im["id"]]:
            assert not path.exists(), f"{path} for an image without annotations"
            continue
        expected.add(path)
        with Image.open(path) as m:
            assert m.mode == "P", path
            assert m.size == (im["width"], im["height"]), path
            pal = np.asarray(m.getpalette(), dtype=np.uint8).reshape(-1, 3)
        used = np.unique(np.asarray(Image.open(path)))
        assert tuple(pal[0]) == (0, 0, 0), "background is black"
        colours = {tuple(pal[k]) for k in used}
        assert len(colours) == len(used), f"{path}: two classes share a colour"
    found = set(MASKS.rglob("*.png")) - {INSTANCE_MAP}
    assert found == expected


def test_mask_classes_and_extents_match_the_boxes(doc):
    index = _class_index(doc)
    per_image = _by_image(doc)
    for im in doc["images"]:
        anns = per_image[im["id"]]
        if not anns:
            continue
        mask = np.asarray(Image.open(_mask_file(im["file_name"])))
        want = {index[a["category_id"]] for a in anns}
        assert set(np.unique(mask)) - {0} == want, im["file_name"]
        for k in want:
            box = _union_ltrb([a for a in anns if index[a["category_id"]] == k])
            ext = np.array(_extent(mask == k), dtype=np.float64)
            assert np.abs(ext - box).max() <= TOL, (im["file_name"], k, ext, box)


def test_masks_agree_with_an_opencv_rasterisation(doc):
    """Per class, IoU >= 0.95 with cv2.fillPoly of the same polygons (painted in id order)."""
    index = _class_index(doc)
    per_image = _by_image(doc)
    for im in doc["images"]:
        anns = sorted(per_image[im["id"]], key=lambda a: a["id"])
        if not anns:
            continue
        ref = np.zeros((im["height"], im["width"]), np.uint8)
        for a in anns:
            pts = [np.round(p * 16).astype(np.int32) for p in _polys(a)]
            cv2.fillPoly(ref, pts, index[a["category_id"]], lineType=cv2.LINE_8, shift=4)
        mask = np.asarray(Image.open(_mask_file(im["file_name"])))
        for k in np.unique(ref[ref > 0]):
            inter = np.logical_and(ref == k, mask == k).sum()
            union = np.logical_or(ref == k, mask == k).sum()
            assert inter / union >= 0.95, (im["file_name"], int(k), inter / union)


def test_masks_agree_with_dali_readers_coco(doc):
    """DALI's labels, boxes and pixelwise_masks (stored) against the JSON and the PNGs."""
    with open(DALI_PATH, encoding="utf-8") as f:
        ref = json.load(f)["images"]
    index = _class_index(doc)
    per_image = _by_image(doc)
    names = {im["file_name"]: im for im in doc["images"]}
    assert set(ref) == set(names), "DALI reads every image (skip_empty=False)"
    for name, r in ref.items():
        im = names[name]
        anns = sorted(per_image[im["id"]], key=lambda a: a["id"])
        assert r["labels"] == [index[a["category_id"]] for a in anns], name
        ltrb = [[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in anns)]
        np.testing.assert_allclose(np.reshape(r["boxes_ltrb"], (-1, 4)), np.reshape(ltrb, (-1, 4)))
        assert r["mask_shape"] == [im["height"], im["width"], 1]
        if not anns:
            assert r["classes"] == {}
            continue
        mask = np.asarray(Image.open(_mask_file(name)))
        assert {int(k) for k in r["classes"]} == set(np.unique(mask)) - {0}, name
        for k, (count, *dali_ext) in r["classes"].items():
            k = int(k)
            ours = mask == k
            slack = _perimeter([a for a in anns if index[a["category_id"]] == k])
            assert abs(int(ours.sum()) - count) <= slack, (name, k, int(ours.sum()), count)
            assert np.abs(np.subtract(_extent(ours), dali_ext)).max() <= TOL, (name, k)


def test_instance_map_is_16_bit_annotation_ids(doc):
    with Image.open(INSTANCE_MAP) as m:
        assert m.mode == "I;16"
        ids = np.asarray(m)
    assert ids.dtype == np.uint16
    im = next(i for i in doc["images"] if i["file_name"] == "objects/greek_coins.jpg")
    assert ids.shape == (im["height"], im["width"])
    anns = {a["id"]: a for a in doc["annotations"] if a["image_id"] == im["id"]}
    assert set(np.unique(ids)) - {0} == set(anns)
    assert max(anns) > 255, "ids need the 16 bits"
    labels = np.asarray(Image.open(_mask_file(im["file_name"])))
    np.testing.assert_array_equal(ids > 0, labels > 0)
    for aid, a in anns.items():
        x, y, w, h = a["bbox"]
        ext = np.array(_extent(ids == aid), dtype=np.float64)
        assert np.abs(ext - [x, y, x + w, y + h]).max() <= TOL, aid


def test_masks_are_current(doc, tool):
    assert tool.stale(doc) == []


def test_make_annotations_rewrites_a_damaged_mask(doc, tool, tmp_path, monkeypatch):
    """The script, pointed at a copy of data/masks, detects and repairs a changed file."""
    masks = tmp_path / "masks"
    shutil.copytree(MASKS, masks)
    monkeypatch.setattr(tool, "MASKS", masks)
    victim = masks / "objects" / "coffee_cup.png"
    Image.new("P", (600, 400), 0).save(victim)
    (masks / "space" / "hubble_deep_field.png").write_bytes(victim.read_bytes())
    bad = tool.stale(doc)
    assert any("coffee_cup.png differs" in b for b in bad)
    assert any("hubble_deep_field.png has no annotations" in b for b in bad)
    (masks / "space" / "hubble_deep_field.png").unlink()
    tool.write(doc)
    assert tool.stale(doc) == []
    np.testing.assert_array_equal(
        np.asarray(Image.open(victim)), np.asarray(Image.open(MASKS / "objects" / "coffee_cup.png"))
    )


def test_data_stays_small():
    total = sum(p.stat().st_size for d in (DATA / "annotations", MASKS) for p in d.rglob("*"))
    assert total < 200 * 1024


def test_readme_table_states_the_class_indices(doc):
    """data/README.md's table of classes is the JSON's categories with DALI's remapping."""
    text = (DATA / "README.md").read_text(encoding="utf-8")
    section = text.split("## Annotations and masks", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit():
            rows.append((int(cells[0]), int(cells[1]), cells[2], cells[3]))
    cats = sorted(doc["categories"], key=lambda c: c["id"])
    index = _class_index(doc)
    assert rows == [(index[c["id"]], c["id"], c["name"], c["supercategory"]) for c in cats]
