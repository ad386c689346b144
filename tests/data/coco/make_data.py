"""Writes the small COCO data set of the readers.coco tests (run once with augkit's venv:
``.venv/bin/python tests/data/coco/make_data.py``; the files it writes are stored).

- ``images/*.jpg``: five small crops of the real photos of ``data/images`` (JPEG, quality 80);
- ``instances.json``: their annotations (file_root ``tests/data/coco/images``), made to cover
  what readers.coco does: categories with non-contiguous ids listed out of id order, images
  listed out of id order, an image without annotations, a two-polygon object, iscrowd objects
  with a compressed (string) RLE and with an uncompressed (counts list) RLE, a box under
  ``size_threshold``, annotations of different images interleaved;
- ``photos.json``: three of the real photos (file_root ``data/images``) with hand-placed
  polygons, for tests on full-size images;
- ``quirks.json``: overlapping objects of two labels, one overlap at the end of the image
  (where DALI's label merging keeps the smaller label).

The RLE counts are column-major (COCO's order) and the string form is COCO's (6 bits a
character, counts after the second stored as differences), written by ``rle_string`` here.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PHOTOS = ROOT / "data" / "images"


def rle_counts(mask: np.ndarray) -> list[int]:
    """COCO's uncompressed RLE of a boolean mask: run lengths in column-major order, starting
    with a run of zeros (possibly empty)."""
    flat = np.asarray(mask, bool).T.reshape(-1)
    counts, value, run = [], False, 0
    for pixel in flat:
        if pixel != value:
            counts.append(run)
            value, run = pixel, 0
        run += 1
    counts.append(run)
    return counts


def rle_string(counts: list[int]) -> str:
    """COCO's compressed RLE string of ``counts``."""
    out = []
    for i, count in enumerate(counts):
        x = count - counts[i - 2] if i > 2 else count
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def crop(name: str, box: tuple[int, int, int, int], size: tuple[int, int], out: str) -> None:
    image = Image.open(PHOTOS / name).convert("RGB").crop(box).resize(size, Image.BILINEAR)
    image.save(HERE / "images" / out, quality=80)


def poly(*xy: float) -> list[float]:
    return [float(v) for v in xy]


def main() -> None:
    crop("animals/chelsea_cat.jpg", (60, 20, 380, 260), (64, 48), "cat.jpg")
    crop("objects/coffee_cup.jpg", (100, 40, 500, 360), (50, 40), "cup.jpg")
    crop("people/astronaut_eileen_collins.jpg", (100, 0, 420, 320), (40, 40), "astronaut.jpg")
    crop("space/hubble_deep_field.jpg", (0, 0, 300, 200), (60, 40), "hubble.jpg")
    crop("objects/greek_coins.jpg", (0, 0, 384, 303), (48, 38), "coins.jpg")

    # A crowd region of cup.jpg (50x40) as an RLE: an ellipse.
    yy, xx = np.mgrid[:40, :50]
    crowd = ((xx - 30) / 12.0) ** 2 + ((yy - 22) / 9.0) ** 2 <= 1
    # A crowd region of hubble.jpg (60x40), uncompressed: two blocks.
    blocks = np.zeros((40, 60), bool)
    blocks[5:15, 40:55] = True
    blocks[25:38, 2:10] = True

    categories = [  # non-contiguous ids, not in id order
        {"id": 18, "name": "dog", "supercategory": "animal"},
        {"id": 3, "name": "cat", "supercategory": "animal"},
        {"id": 44, "name": "cup", "supercategory": "kitchen"},
        {"id": 1, "name": "person", "supercategory": "person"},
        {"id": 90, "name": "galaxy", "supercategory": "space"},
    ]
    images = [  # not in id order
        {"id": 12, "file_name": "cup.jpg", "width": 50, "height": 40},
        {"id": 7, "file_name": "cat.jpg", "width": 64, "height": 48},
        {"id": 30, "file_name": "coins.jpg", "width": 48, "height": 38},
        {"id": 9, "file_name": "astronaut.jpg", "width": 40, "height": 40},
        {"id": 21, "file_name": "hubble.jpg", "width": 60, "height": 40},
    ]
    annotations = [
        # cat.jpg: a cat (one polygon) and a dog made of two polygons
        {
            "id": 1,
            "image_id": 7,
            "category_id": 3,
            "iscrowd": 0,
            "area": 600.0,
            "bbox": [10.5, 6.25, 30.0, 28.5],
            "segmentation": [poly(10.5, 6.25, 40.5, 8.0, 38.0, 34.75, 12.0, 30.0)],
        },
        # the astronaut
        {
            "id": 2,
            "image_id": 9,
            "category_id": 1,
            "iscrowd": 0,
            "area": 500.0,
            "bbox": [8.0, 4.0, 24.0, 34.0],
            "segmentation": [poly(8.0, 38.0, 14.0, 4.0, 26.0, 4.0, 32.0, 38.0)],
        },
        {
            "id": 3,
            "image_id": 7,
            "category_id": 18,
            "iscrowd": 0,
            "area": 200.0,
            "bbox": [44.0, 20.0, 18.0, 24.0],
            "segmentation": [
                poly(44.0, 20.0, 52.0, 20.0, 52.0, 30.0, 44.0, 30.0),
                poly(54.2, 34.0, 61.7, 36.3, 58.0, 43.9),
            ],
        },
        # cup.jpg: a crowd (compressed RLE) and a cup polygon (another category)
        {
            "id": 4,
            "image_id": 12,
            "category_id": 1,
            "iscrowd": 1,
            "area": float(crowd.sum()),
            "bbox": [18.0, 13.0, 25.0, 19.0],
            "segmentation": {"size": [40, 50], "counts": rle_string(rle_counts(crowd))},
        },
        {
            "id": 5,
            "image_id": 12,
            "category_id": 44,
            "iscrowd": 0,
            "area": 300.0,
            "bbox": [4.0, 5.0, 20.0, 30.0],
            "segmentation": [poly(4.0, 5.0, 24.0, 5.0, 24.0, 35.0, 4.0, 35.0)],
        },
        # hubble.jpg: a galaxy, a tiny box under the default size_threshold (0.1) and a crowd
        # as an uncompressed RLE
        {
            "id": 6,
            "image_id": 21,
            "category_id": 90,
            "iscrowd": 0,
            "area": 120.0,
            "bbox": [20.0, 10.0, 15.0, 12.0],
            "segmentation": [poly(20.0, 16.0, 27.5, 10.0, 35.0, 16.0, 27.5, 22.0)],
        },
        {
            "id": 7,
            "image_id": 21,
            "category_id": 90,
            "iscrowd": 0,
            "area": 0.005,
            "bbox": [5.0, 5.0, 0.05, 3.0],
            "segmentation": [poly(5.0, 5.0, 5.05, 5.0, 5.05, 8.0)],
        },
        {
            "id": 8,
            "image_id": 21,
            "category_id": 18,
            "iscrowd": 1,
            "area": float(blocks.sum()),
            "bbox": [2.0, 5.0, 53.0, 33.0],
            "segmentation": {"size": [40, 60], "counts": rle_counts(blocks)},
        },
        # coins.jpg (id 30) has no annotations
    ]
    instances = {
        "info": {"description": "augkit readers.coco test set"},
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }
    (HERE / "instances.json").write_text(json.dumps(instances, indent=1))

    photos = {
        "images": [
            {"id": 1, "file_name": "animals/chelsea_cat.jpg", "width": 451, "height": 300},
            {"id": 2, "file_name": "objects/coffee_cup.jpg", "width": 600, "height": 400},
            {
                "id": 3,
                "file_name": "people/astronaut_eileen_collins.jpg",
                "width": 512,
                "height": 512,
            },
        ],
        "categories": [
            {"id": 17, "name": "cat"},
            {"id": 47, "name": "cup"},
            {"id": 1, "name": "person"},
        ],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 17,
                "iscrowd": 0,
                "bbox": [100.0, 20.0, 250.0, 270.0],
                "segmentation": [
                    poly(
                        120,
                        290,
                        100,
                        150,
                        140,
                        40,
                        180,
                        20,
                        230,
                        60,
                        300,
                        25,
                        340,
                        70,
                        350,
                        200,
                        320,
                        290,
                    )
                ],
            },
            {
                "id": 2,
                "image_id": 2,
                "category_id": 47,
                "iscrowd": 0,
                "bbox": [180.0, 60.0, 300.0, 280.0],
                "segmentation": [poly(200, 80, 420, 60, 480, 160, 430, 200, 400, 330, 220, 340)],
            },
            {
                "id": 3,
                "image_id": 3,
                "category_id": 1,
                "iscrowd": 0,
                "bbox": [120.0, 30.0, 300.0, 482.0],
                "segmentation": [
                    poly(180, 511, 150, 300, 190, 120, 250, 30, 330, 60, 350, 200, 420, 511),
                    poly(20, 400, 100, 380, 90, 470),
                ],
            },
        ],
    }
    (HERE / "photos.json").write_text(json.dumps(photos, indent=1))

    # Overlaps where DALI's label merging has its quirk: on the image's last run (the bottom of
    # the last column, in COCO's column-major order) the smaller label wins.
    quirks = {
        "images": [
            {"id": 1, "file_name": "cup.jpg", "width": 50, "height": 40},
            {"id": 2, "file_name": "cat.jpg", "width": 64, "height": 48},
        ],
        "categories": [{"id": 5, "name": "small"}, {"id": 6, "name": "large"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 5,
                "iscrowd": 0,
                "bbox": [30, 20, 20, 20],
                "segmentation": [poly(30, 20, 50, 20, 50, 40, 30, 40)],
            },
            {
                "id": 2,
                "image_id": 1,
                "category_id": 6,
                "iscrowd": 0,
                "bbox": [40, 0, 10, 40],
                "segmentation": [poly(40, 0, 50, 0, 50, 40, 40, 40)],
            },
            # overlaps away from the end: the larger label wins
            {
                "id": 3,
                "image_id": 2,
                "category_id": 6,
                "iscrowd": 0,
                "bbox": [5, 5, 20, 20],
                "segmentation": [poly(5, 5, 25, 5, 25, 25, 5, 25)],
            },
            {
                "id": 4,
                "image_id": 2,
                "category_id": 5,
                "iscrowd": 0,
                "bbox": [15.5, 10, 20, 20],
                "segmentation": [poly(15.5, 10, 35.5, 12, 30, 30, 15.5, 30)],
            },
        ],
    }
    (HERE / "quirks.json").write_text(json.dumps(quirks, indent=1))


if __name__ == "__main__":
    main()
