"""Write the label-map masks of ``data/masks/`` from ``data/annotations/instances.json``.

The JSON is the source: its polygons were drawn by hand on the photos of ``data/images/`` (see
``data/README.md``, "Annotations and masks"). This script checks it and draws the masks from it,
so the masks always agree with the polygons:

    python data/make_annotations.py            # check the JSON, rewrite data/masks/
    python data/make_annotations.py --check    # check the JSON and that data/masks/ is current

and, with DALI's venv (``benchmarks/_work/dali-venv/bin/python``), ``--dali-reference`` rewrites
``data/annotations/dali_coco_reference.json``: what DALI's ``readers.coco`` makes of the JSON,
which the tests compare with the masks (they never run DALI).

Decisions and traps:

* Class index = DALI's remapped label: the categories sorted by COCO id get 1..K, 0 is the
  background (``fn.readers.coco`` without ``avoid_class_remapping``). The COCO ids themselves are
  not contiguous (person=1, cat=17, ...), so never use them as pixel values.
* One palette ("P" mode) PNG per image that has annotations, at the image's relative path with
  ``.png``. Images without annotations get no mask file.
* Overlaps: annotations are drawn in ascending annotation id, so a later one covers an earlier
  one. The ids are given so that occluders come after what they hide (saucer, cup, spoon). Where
  two polygons overlap, DALI's ``pixelwise_masks`` may differ: DALI lets the higher class index
  win. The polygons are drawn so that overlaps are few (the spoon over the cup, the tripod over
  the coat, where both rules agree) or only a shared outline (flag and person).
* Rasterisation: Pillow's ``ImageDraw.polygon`` fills the pixels whose centres are inside the
  polygon and also its outline, so a mask can be about one pixel wider than pycocotools' (and
  DALI's) rasterisation of the same polygon. Boxes and pixel extents agree within 1-2 px.
* ``greek_coins.instances.png`` is the one instance-id map: 16-bit ("I;16"), pixel value =
  annotation id (901..924, above 255, hence 16 bits), 0 = background.
* Only Pillow and the standard library are needed (no NumPy) except for ``--dali-reference``.
* Errors in the JSON are ``AnnotationError`` naming the annotation or image id and the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw

DATA = Path(__file__).resolve().parent
IMAGES = DATA / "images"
MASKS = DATA / "masks"
ANNOTATIONS = DATA / "annotations" / "instances.json"
#: What DALI's readers.coco gives for instances.json (written by --dali-reference).
DALI_REFERENCE = DATA / "annotations" / "dali_coco_reference.json"
#: The image whose 16-bit instance-id map is written beside its label map.
INSTANCE_EXAMPLE = "objects/greek_coins.jpg"

# Palette entry per class index (index 0 = background, black); repeated if K grows past it.
_COLOURS = [
    (0, 0, 0),
    (220, 20, 60),
    (255, 165, 0),
    (30, 144, 255),
    (50, 205, 50),
    (255, 215, 0),
    (138, 43, 226),
    (0, 206, 209),
    (255, 105, 180),
    (0, 255, 127),
    (0, 128, 128),
    (128, 128, 0),
    (240, 128, 128),
]


class AnnotationError(ValueError):
    """A problem in instances.json; the message names the annotation or image."""


def load(path: Path = ANNOTATIONS) -> dict:
    """Read and check instances.json; return the parsed COCO dict."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    check(doc)
    return doc


def class_indices(doc: dict) -> dict[int, int]:
    """COCO category id -> class index (categories sorted by id get 1..K), as DALI remaps."""
    return {cid: k for k, cid in enumerate(sorted(c["id"] for c in doc["categories"]), 1)}


def palette() -> list[int]:
    """768 ints: _COLOURS for the first indices, then arbitrary distinct-ish colours."""
    flat: list[int] = []
    for k in range(256):
        c = _COLOURS[k] if k < len(_COLOURS) else ((k * 67) % 256, (k * 131) % 256, (k * 199) % 256)
        flat.extend(c)
    return flat


def polygons(ann: dict) -> list[list[tuple[float, float]]]:
    """The polygons of one annotation as lists of (x, y)."""
    return [list(zip(p[0::2], p[1::2], strict=True)) for p in ann["segmentation"]]


def _fail(msg: str) -> None:
    raise AnnotationError(msg)


def check(doc: dict, images_root: Path = IMAGES) -> None:
    """Check the COCO structure, ids, files, sizes, and that every box is its polygons' extent."""
    for key in ("images", "annotations", "categories"):
        if not isinstance(doc.get(key), list):
            _fail(f"instances.json: '{key}' must be a list")
    cats = {}
    for c in doc["categories"]:
        if c["id"] in cats:
            _fail(f"category id {c['id']} is not unique")
        if not c.get("name") or not c.get("supercategory"):
            _fail(f"category id {c['id']}: needs a name and a supercategory")
        cats[c["id"]] = c["name"]
    images = {}
    names = set()
    for im in doc["images"]:
        if im["id"] in images:
            _fail(f"image id {im['id']} is not unique")
        if im["file_name"] in names:
            _fail(f"image {im['file_name']} is listed twice")
        path = images_root / im["file_name"]
        if not path.is_file():
            _fail(f"image id {im['id']}: file {path} does not exist")
        with Image.open(path) as pil:
            if pil.size != (im["width"], im["height"]):
                _fail(
                    f"image {im['file_name']}: JSON size {im['width']}x{im['height']} but the"
                    f" file is {pil.size[0]}x{pil.size[1]}"
                )
        images[im["id"]] = im
        names.add(im["file_name"])
    ann_ids = set()
    for a in doc["annotations"]:
        where = f"annotation id {a.get('id')}"
        if a["id"] in ann_ids:
            _fail(f"{where} is not unique")
        ann_ids.add(a["id"])
        if a["image_id"] not in images:
            _fail(f"{where}: image_id {a['image_id']} is not in 'images'")
        if a["category_id"] not in cats:
            _fail(f"{where}: category_id {a['category_id']} is not in 'categories'")
        if a.get("iscrowd") not in (0, 1):
            _fail(f"{where}: iscrowd must be 0 or 1")
        seg = a["segmentation"]
        if not isinstance(seg, list) or not seg:
            _fail(f"{where}: segmentation must be a non-empty list of polygons")
        for p in seg:
            if len(p) % 2 or len(p) < 6:
                _fail(f"{where}: a polygon needs an even number of coordinates, 3 vertices or more")
        im = images[a["image_id"]]
        pts = [q for p in polygons(a) for q in p]
        xs = [x for x, _ in pts]
        ys = [y for _, y in pts]
        if min(xs) < 0 or min(ys) < 0 or max(xs) > im["width"] or max(ys) > im["height"]:
            _fail(
                f"{where}: a vertex lies outside {im['file_name']} ({im['width']}x{im['height']})"
            )
        x, y, w, h = a["bbox"]
        extent = (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        if any(abs(u - v) > 1e-6 for u, v in zip((x, y, w, h), extent, strict=True)):
            _fail(f"{where}: bbox {a['bbox']} is not its polygons' extent {list(extent)}")
        if not 0 < a["area"] <= w * h + 1e-6:
            _fail(f"{where}: area {a['area']} must be positive and at most the box's {w * h}")


def mask_path(file_name: str, suffix: str = "") -> Path:
    """data/masks/<file_name without .jpg><suffix>.png"""
    rel = Path(file_name)
    return MASKS / rel.parent / f"{rel.stem}{suffix}.png"


def render(doc: dict) -> dict[str, Image.Image]:
    """file_name -> label map ("P"), plus the instance map of INSTANCE_EXAMPLE ("I;16")."""
    index = class_indices(doc)
    by_image: dict[int, list[dict]] = {}
    for a in sorted(doc["annotations"], key=lambda a: a["id"]):
        by_image.setdefault(a["image_id"], []).append(a)
    out: dict[str, Image.Image] = {}
    pal = palette()
    for im in doc["images"]:
        anns = by_image.get(im["id"])
        if not anns:
            continue
        size = (im["width"], im["height"])
        labels = Image.new("P", size, 0)
        labels.putpalette(pal)
        draw = ImageDraw.Draw(labels)
        for a in anns:
            for p in polygons(a):
                draw.polygon(p, fill=index[a["category_id"]])
        out[im["file_name"]] = labels
        if im["file_name"] == INSTANCE_EXAMPLE:
            inst = Image.new("I", size, 0)  # drawn in 32-bit, saved as 16-bit
            d = ImageDraw.Draw(inst)
            for a in anns:
                if not 0 < a["id"] < 65536:
                    _fail(f"annotation id {a['id']} does not fit a 16-bit instance map")
                for p in polygons(a):
                    d.polygon(p, fill=a["id"])
            out[im["file_name"] + "#instances"] = inst.convert("I;16")
    return out


def _target(key: str) -> Path:
    if key.endswith("#instances"):
        return mask_path(key[: -len("#instances")], ".instances")
    return mask_path(key)


def write(doc: dict) -> list[Path]:
    written = []
    for key, img in render(doc).items():
        path = _target(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path, optimize=True)
        written.append(path)
    return written


def stale(doc: dict) -> list[str]:
    """Mask files that are missing or differ from what the JSON draws (pixel by pixel)."""
    bad = []
    for key, img in render(doc).items():
        path = _target(key)
        if not path.is_file():
            bad.append(f"{path} is missing")
            continue
        with Image.open(path) as old:
            if old.mode != img.mode or old.size != img.size or old.tobytes() != img.tobytes():
                bad.append(f"{path} differs from instances.json")
    expected = {_target(k) for k in render(doc)}
    for path in sorted(MASKS.rglob("*.png")):
        if path not in expected:
            bad.append(f"{path} has no annotations in instances.json")
    return bad


def dali_reference(path: Path = DALI_REFERENCE) -> dict:
    """Run DALI's ``fn.readers.coco`` on instances.json and store what it outputs, in short.

    Needs DALI, so run it with the DALI venv (never augkit's):
    ``benchmarks/_work/dali-venv/bin/python data/make_annotations.py --dali-reference``.
    Stored per image with annotations: DALI's labels, ltrb boxes, and for each class index of
    its ``pixelwise_masks`` the pixel count and the extent [x0, y0, x1, y1] (x1, y1 exclusive).
    """
    import numpy as np
    from nvidia.dali import fn, pipeline_def

    doc = load()
    n = len(doc["images"])

    @pipeline_def(batch_size=n, num_threads=1, device_id=None)
    def pipe():
        _, boxes, labels, masks, ids = fn.readers.coco(
            file_root=str(IMAGES),
            annotations_file=str(ANNOTATIONS),
            pixelwise_masks=True,
            image_ids=True,
            ltrb=True,
        )
        return boxes, labels, masks, ids

    p = pipe()
    p.build()
    boxes, labels, masks, ids = p.run()
    names = {im["id"]: im["file_name"] for im in doc["images"]}
    out = {}
    for i in range(n):
        iid = int(np.asarray(ids[i]).ravel()[0])
        lab = np.asarray(labels[i]).ravel().astype(int).tolist()
        mask = np.asarray(masks[i])[..., 0]
        classes = {}
        for k in np.unique(mask):
            if k == 0:
                continue
            ys, xs = np.nonzero(mask == k)
            ext = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
            classes[str(int(k))] = [len(xs), *ext]
        out[names[iid]] = {
            "image_id": iid,
            "labels": lab,
            "boxes_ltrb": np.asarray(boxes[i]).reshape(-1, 4).round(3).tolist(),
            "mask_shape": list(np.asarray(masks[i]).shape),
            "classes": classes,
        }
    import nvidia.dali

    ref = {"dali_version": nvidia.dali.__version__, "images": out}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    return ref


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; write nothing")
    parser.add_argument(
        "--dali-reference",
        action="store_true",
        help=f"run DALI's readers.coco and write {DALI_REFERENCE.name} (needs DALI)",
    )
    args = parser.parse_args(argv)
    if args.dali_reference:
        ref = dali_reference()
        print(f"wrote {DALI_REFERENCE.relative_to(DATA)} (DALI {ref['dali_version']})")
        return 0
    try:
        doc = load()
    except (AnnotationError, KeyError, TypeError) as e:
        print(f"instances.json is wrong: {e!r}", file=sys.stderr)
        return 1
    if args.check:
        bad = stale(doc)
        for line in bad:
            print(line, file=sys.stderr)
        print("ok" if not bad else f"{len(bad)} problem(s); run data/make_annotations.py")
        return 1 if bad else 0
    for path in write(doc):
        print(path.relative_to(DATA))
    return 0


if __name__ == "__main__":
    sys.exit(main())
