"""Row of ``readers.coco`` (``augkit/operators/readers/coco.py``) in the table of operator cases:
the small COCO set of ``tests/data/coco`` (five tiny JPEGs, with polygons, crowd RLEs, an image
without objects), read shuffled with polygon outputs; the fuzzer always gets the two paths."""

from __future__ import annotations

import pathlib

from tests.cases._row import OperatorCase

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "coco"
PATHS = {"file_root": str(DATA / "images"), "annotations_file": str(DATA / "instances.json")}

CASES = {
    "readers.coco": OperatorCase(
        input="none",
        body=lambda op, x: op("readers.coco")(
            **PATHS, random_shuffle=True, polygon_masks=True, ratio=True, name="coco"
        ),
        eager=False,
        required=PATHS,
    ),
}
