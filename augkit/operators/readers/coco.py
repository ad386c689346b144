"""``readers.coco``: DALI 2.4's ``fn.readers.coco`` / ``ops.readers.COCO`` (legacy ``COCOReader``,
``coco_reader``): the images of a COCO data set with their boxes, labels and masks.

Outputs, in DALI's order: the image file's bytes (uint8 1-D, kind "encoded"), the boxes
(float32 N×4, xywh or ``ltrb``, in pixels or relative with ``ratio``), the labels (int32 of shape
(N,), as DALI since 0.28), then ``polygons`` (int32 P×3 rows [mask_idx, start_vertex,
end_vertex]) and ``vertices`` (float32 V×2 (x, y), relative with ``ratio``) when
``polygon_masks``, or the pixelwise mask (int32 H×W×1, layout "HWC", each pixel its object's
label, 0 for background) when ``pixelwise_masks``, then the image id (int32 of shape (1,)) when
``image_ids``. ``source_info`` of every output is the image's ``file_name``.

What DALI does, measured on DALI 2.4 (CPU) and followed here:

- Samples are the JSON's images sorted by id (or the names in ``images``, in that order, copies
  for repeated names); an object belongs to its image by ``image_id``, objects in JSON order.
- Labels: categories numbered 1..K **in the order the JSON lists them** (not sorted by id; a
  repeated id keeps its first number, the count goes on), or the category id itself with
  ``avoid_class_remapping``. ``class_names()`` gives label -> category name either way.
- An object is dropped when its box's width or height (float32) is under ``size_threshold``,
  or when it is ``iscrowd`` and ``include_iscrowd`` is False; ``skip_empty`` drops images left
  without objects. ``ltrb`` adds x to w and y to h in float32; ``ratio`` divides by the
  image's ``width``/``height`` in float32.
- With ``polygon_masks``, an RLE (crowd) segmentation gives no polygons (its box and label
  stay). Pixelwise masks ignore ``ratio`` (DALI rasterises the absolute vertices).
- Pixelwise masks rasterise polygons as the COCO API's ``rleFrPoly`` does (vertices scaled by
  5 and rounded, the boundary walked point by point, each pixel column cut where the boundary
  crosses the column's centre; pixel (r, c) is the unit square from (c, r)), which is what
  DALI links; ``coco_masks`` re-implements it (and says how it is made fast), so masks are
  bit-exact with DALI's.
  Compressed (string) and uncompressed (list) RLE counts are column-major, as in COCO.
  Labels are merged by DALI's run-merging rule: on pixels two labels cover, the larger label
  wins, except on the image's last run, where DALI keeps the smaller (its merge loop reads the
  ended run's value); that quirk is reproduced too (``tests/data/coco/quirks.json``). Pillow's
  ``ImageDraw.polygon``, which also fills the pixels the outline touches, differs from this on
  0.7-0.9% of an object's area, all on its boundary (measured on the photos of
  ``tests/data/coco/photos.json``).

Where augkit does not follow DALI (DALI's behaviour is a crash or loses data):

- Refused with an ``ArgumentError`` naming the file and the annotation or image: a category id
  that ``categories`` does not list (DALI crashes or labels it 0), a box with a negative width
  or height (DALI drops it silently), a name in ``images`` that the JSON does not list (DALI
  skips it silently), two images with one id (DALI gives both the same objects), an RLE whose
  size is not its image's or whose counts do not cover it.
- An object without ``segmentation`` when masks are asked for has no polygons and no pixels
  (DALI crashes on it).
- For pixelwise masks every segmentation of a label is united: DALI drops the crowd RLE of a
  label that also has polygons in the image, and gives an all-zero mask when the smallest label
  of an image has no segmentation (``"segmentation": []``). augkit's mask is the
  union; such objects are simply left out of the mask.

Not supported, refused with an ``ArgumentError``: ``preprocessed_annotations`` and
``save_preprocessed_annotations`` (DALI's binary meta files), ``skip_cached_images`` (DALI
refuses it too). ``dont_use_mmap``, ``read_ahead``, ``lazy_init``... are accepted with no effect
(every reader's ``READER_ARGS``). DALI's deprecated ``masks`` (polygons counted in coordinates,
not vertices) and ``save_img_ids`` (= ``image_ids``) are accepted.

Traps: the JSON is parsed and checked when the pipeline is built (a missing image file is
refused then, one ``stat`` per image); measured on a synthetic 50,000-annotation file, about
1-2 s to DALI's 0.06 s. Pixelwise masks are made when their sample is read, on the pipeline's
threads. Measured on ``data/`` (11 images with objects, 300x300 to 660x550, 1 to 24 polygons),
batch 11, one thread, 2 shared cores, against DALI 2.4 CPU in the same script
(``fn.readers.coco(..., pixelwise_masks=True, skip_empty=True)``, medians of 3 runs, two
sessions): pixelwise masks ~1400-1450 samples/s to DALI's ~1170-1270 (1.1-1.2 times DALI's
speed; the step-by-step version made ~385, a third of DALI's); boxes only ~56,000 to DALI's
~19,000-31,000 (the file read is most of it); polygon_masks ~48,000 to DALI's ~13,000-22,000.
(``/tmp`` benchmark scripts, not kept.) The file's bytes are read straight into their array
(``_read_bytes``: half ``np.fromfile``'s time). The edge table costs ~0.6 s a million
vertices at build (a synthetic 50,000-polygon, 1M-vertex file: build 1.9 s with
pixelwise_masks, 0.9 s without). Boxes, labels and polygons of all images live in a few large
read-only arrays, each sample a slice of them, so a large data set costs no per-image arrays.
Subclass attributes must not be named ``_names`` (the base class's list of sample names).

Example:
    >>> from augkit import fn, pipeline_def
    >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    ... def coco():
    ...     jpegs, boxes, labels = fn.readers.coco(
    ...         file_root="tests/data/coco/images",
    ...         annotations_file="tests/data/coco/instances.json",
    ...         ltrb=True,
    ...         ratio=True,
    ...     )
    ...     return fn.decoders.image(jpegs), boxes, labels
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import finish
from augkit.operators.readers.base import READER_ARGS, Reader, listed
from augkit.operators.readers.coco_masks import (
    MaskSource,
    mask_of,
    polygon_table,
    rle_from_string,
)
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    register,
    to_bool,
    to_float,
    to_str,
)
from augkit.tensors import TensorList

# --- the annotations file -------------------------------------------------------------------


@dataclass
class _Image:
    """One image of the JSON and its kept objects."""

    id: int
    file_name: str
    width: int | None
    height: int | None
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    # per object: its polygons (float32 K×2 each) and its RLEs (counts), for the mask outputs
    polygons: list[list[np.ndarray]] = field(default_factory=list)
    rles: list[list[list[int]]] = field(default_factory=list)


# What json.load makes of numbers (type checks: isinstance with numbers.Real is slow on the
# millions of coordinates of a large data set, and bool must not count).
_NUMBER_TYPES = frozenset((int, float))


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER_TYPES


def _is_finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


class _Bad(Exception):
    """A problem in the annotations file (the message names the key)."""


def _get(entry: Any, key: str, where: str, check: Any, what: str) -> Any:
    if not isinstance(entry, dict):
        raise _Bad(f"{where} must be an object, got {type(entry).__name__}")
    if key not in entry:
        raise _Bad(f"{where} has no '{key}'")
    value = entry[key]
    if not check(value):
        raise _Bad(f"{where}: '{key}' must be {what}, got {value!r}")
    return value


def _array(doc: dict, key: str) -> list:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise _Bad(f"'{key}' must be a list, got {type(value).__name__}")
    return value


# --- argument converters --------------------------------------------------------------------


def _path(value: Any) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"expected a path (a string), got {value!r}")


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"expected a file name or a list of file names, got {value!r}")


_path.allowed = "a path"  # type: ignore[attr-defined]
_names.allowed = "a file name or a list of them"  # type: ignore[attr-defined]


def _polygons_out(args: dict[str, Any]) -> bool:
    return bool(args.get("polygon_masks") or args.get("masks"))


def _ids_out(args: dict[str, Any]) -> bool:
    return bool(args.get("image_ids") or args.get("save_img_ids"))


def _num_outputs(args: dict[str, Any]) -> int:
    return 3 + 2 * _polygons_out(args) + bool(args.get("pixelwise_masks")) + _ids_out(args)


def _validate(args: dict[str, Any]) -> None:
    if _polygons_out(args) and args.get("pixelwise_masks"):
        raise ValueError("polygon_masks and pixelwise_masks are mutually exclusive")
    if args.get("preprocessed_annotations"):
        raise ValueError(
            "preprocessed_annotations (DALI's binary meta files) is not supported by augkit; "
            "give the JSON file as annotations_file"
        )
    if args.get("save_preprocessed_annotations") or args.get("save_preprocessed_annotations_dir"):
        raise ValueError("save_preprocessed_annotations is not supported by augkit")
    if args.get("skip_cached_images"):
        raise ValueError("readers.coco does not support skip_cached_images (nor does DALI)")


# --- what the outputs are -------------------------------------------------------------------

ENCODED = OutputSpec(
    kind=kinds.ENCODED,
    ndim=1,
    layout="",
    what="1-D encoded bytes from readers.coco",
    hint="decode them first with fn.decoders.image",
)
LABELS = OutputSpec(
    kind=kinds.LABELS,
    ndim=1,
    layout="",
    what="int32 labels of shape (N,) from readers.coco",
    hint="labels are not images: use the reader's first output",
)
POLYGONS = OutputSpec(
    kind=kinds.POLYGONS,
    ndim=2,
    layout="",
    what="int32 polygons [mask_idx, start_vertex, end_vertex] from readers.coco",
)
MASK = OutputSpec(
    kind=kinds.MASK, ndim=3, layout="HWC", what="int32 pixelwise masks from readers.coco"
)
IMAGE_IDS = OutputSpec(ndim=1, layout="", what="int32 image ids from readers.coco")


def output_specs(args: dict[str, Any]) -> list[OutputSpec]:
    """The ``OutputSpec`` of each output of a readers.coco with these arguments."""
    ratio = bool(args.get("ratio", False))
    box_format = "ltrb" if args.get("ltrb", False) else "xywh"
    specs = [
        ENCODED,
        OutputSpec(
            kind=kinds.boxes(box_format, relative=ratio),
            ndim=2,
            layout="",
            what=f"float32 {box_format} boxes from readers.coco",
        ),
        LABELS,
    ]
    if _polygons_out(args):
        vertices = OutputSpec(
            kind=kinds.Kind(kinds.KindName.VERTICES, relative=ratio),
            ndim=2,
            layout="",
            what="float32 (x, y) vertices from readers.coco",
        )
        specs += [POLYGONS, vertices]
    if args.get("pixelwise_masks", False):
        specs.append(MASK)
    if _ids_out(args):
        specs.append(IMAGE_IDS)
    return specs


# --- the reader -----------------------------------------------------------------------------


class CocoReader(Reader):
    """A COCO data set: images, boxes, labels, masks; see the module docstring."""

    def open(self) -> list[str]:
        a = self.args
        root, path = a["file_root"], a["annotations_file"]
        if not path:
            raise self.error("'annotations_file' is required (the COCO JSON file)")
        if root is None:
            raise self.error("'file_root' is required (the folder the file names start from)")
        if not os.path.isdir(root):
            raise self.error(f"file_root {root!r} does not exist or is not a folder")
        if not os.path.isfile(path):
            raise self.error(f"annotations_file {path!r} does not exist or is not a file")
        self._polygon_out = _polygons_out(a)
        self._pixelwise = a["pixelwise_masks"]
        self._ids_out = _ids_out(a)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except json.JSONDecodeError as exc:
            raise self.error(
                f"annotations_file {path!r} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                f"column {exc.colno}"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise self.error(f"cannot read annotations_file {path!r}: {exc}") from None
        try:
            images = self._parse(doc)
        except _Bad as exc:
            raise self.error(f"annotations_file {path!r}: {exc}") from None
        if not images:
            raise self.error(
                f"no images to read in {path!r}"
                + (" (skip_empty left out every image)" if a["skip_empty"] else "")
            )
        self._build_arrays(images)
        self._paths = [os.path.abspath(os.path.join(root, im.file_name)) for im in images]
        missing = sorted({p for p in self._paths if not os.path.isfile(p)})
        if missing:
            raise self.error(
                f"{len(missing)} image file(s) of {path!r} are not in file_root {root!r}: "
                f"{listed(missing)}"
            )
        return [im.file_name for im in images]

    # --- parsing ------------------------------------------------------------------------------
    def _parse(self, doc: Any) -> list[_Image]:
        a = self.args
        if not isinstance(doc, dict):
            raise _Bad(f"the top level must be an object, got {type(doc).__name__}")
        need_size = a["ratio"] or self._pixelwise
        infos: list[_Image] = []
        for i, entry in enumerate(_array(doc, "images")):
            where = f"images[{i}]"
            image_id = _get(entry, "id", where, _is_int, "an integer")
            name = _get(entry, "file_name", where, lambda v: isinstance(v, str), "a string")
            size = [None, None]
            for j, key in enumerate(("width", "height")):
                if need_size or key in entry:
                    positive = lambda v: _is_int(v) and v > 0  # noqa: E731
                    size[j] = _get(entry, key, where, positive, "an integer > 0")
            infos.append(_Image(image_id, name, size[0], size[1]))
        seen: dict[int, int] = {}
        for i, image in enumerate(infos):
            if image.id in seen:
                raise _Bad(f"images[{i}] repeats the id {image.id} of images[{seen[image.id]}]")
            seen[image.id] = i

        self._categories: dict[int, int] = {}
        self._class_names: dict[int, str] = {}
        for n, entry in enumerate(_array(doc, "categories"), start=1):
            where = f"categories[{n - 1}]"
            cat_id = _get(entry, "id", where, _is_int, "an integer")
            if cat_id not in self._categories:
                self._categories[cat_id] = n
                label = cat_id if a["avoid_class_remapping"] else n
                self._class_names[label] = str(entry.get("name", cat_id))

        if a["images"] is not None:
            known = {im.file_name: im for im in infos}
            unknown = [n for n in a["images"] if n not in known]
            if unknown:
                shown = ", ".join(repr(n) for n in unknown[:5])
                raise _Bad(f"'images' names {len(unknown)} file(s) it does not list: {shown}")
            chosen = [known[n] for n in a["images"]]
        else:
            chosen = sorted(infos, key=lambda im: im.id)
        by_id = {im.id: im for im in chosen}

        threshold = np.float32(a["size_threshold"])
        for i, entry in enumerate(_array(doc, "annotations")):
            where = f"annotations[{i}]" + (
                f" (id {entry['id']})" if isinstance(entry, dict) and "id" in entry else ""
            )
            image_id = _get(entry, "image_id", where, _is_int, "an integer")
            cat = _get(entry, "category_id", where, _is_int, "an integer")
            box = _get(
                entry,
                "bbox",
                where,
                lambda v: isinstance(v, list) and len(v) == 4 and all(map(_is_finite, v)),
                "a list of 4 finite numbers [x, y, width, height]",
            )
            if cat not in self._categories:
                raise _Bad(f"{where}: category_id {cat} is not in 'categories'")
            x, y, w, h = (np.float32(v) for v in box)
            if w < 0 or h < 0:
                raise _Bad(f"{where}: the box {box} has a negative width or height")
            crowd = entry.get("iscrowd", 0)
            if not (_is_int(crowd) or isinstance(crowd, bool)):
                raise _Bad(f"{where}: 'iscrowd' must be 0 or 1, got {crowd!r}")
            owner = by_id.get(image_id)
            if owner is None:
                continue  # an image not read (as DALI: annotations of unknown images are left)
            if (crowd and not a["include_iscrowd"]) or w < threshold or h < threshold:
                continue
            self._add(owner, entry, where, cat, (x, y, w, h))
        if a["skip_empty"]:
            chosen = [im for im in chosen if im.labels]
        return chosen

    def _add(self, image: _Image, entry: dict, where: str, cat: int, box: tuple) -> None:
        a = self.args
        x, y, w, h = box
        if a["ltrb"]:
            w, h = x + w, y + h
        if a["ratio"]:
            fw, fh = np.float32(image.width), np.float32(image.height)
            x, y, w, h = x / fw, y / fh, w / fw, h / fh
        image.boxes.append((x, y, w, h))
        image.labels.append(cat if a["avoid_class_remapping"] else self._categories[cat])
        polygons: list[np.ndarray] = []
        rles: list[list[int]] = []
        seg = entry.get("segmentation")
        if (self._polygon_out or self._pixelwise) and seg is not None:
            if isinstance(seg, list):
                for k, polygon in enumerate(seg):
                    ok = isinstance(polygon, list) and all(map(_is_number, polygon))
                    if not ok or len(polygon) % 2:
                        raise _Bad(
                            f"{where}: segmentation[{k}] must be a list of an even number of "
                            "numbers (x0, y0, x1, y1, ...)"
                        )
                    polygons.append(np.asarray(polygon, np.float32).reshape(-1, 2))
            elif isinstance(seg, dict) and self._pixelwise:
                rles.append(self._rle(seg, image, where))
            elif not isinstance(seg, dict):
                raise _Bad(f"{where}: 'segmentation' must be a list of polygons or an RLE object")
        image.polygons.append(polygons)
        image.rles.append(rles)

    def _rle(self, seg: dict, image: _Image, where: str) -> list[int]:
        size = seg.get("size")
        if not (isinstance(size, list) and len(size) == 2 and all(map(_is_int, size))):
            raise _Bad(f"{where}: the RLE's 'size' must be [height, width], got {size!r}")
        if tuple(size) != (image.height, image.width):
            raise _Bad(
                f"{where}: the RLE's size {size} is not its image's [height, width] = "
                f"[{image.height}, {image.width}]"
            )
        counts = seg.get("counts")
        if isinstance(counts, str):
            try:
                runs = rle_from_string(counts)
            except ValueError as exc:
                raise _Bad(f"{where}: bad RLE 'counts': {exc}") from None
        elif isinstance(counts, list) and counts and all(_is_int(c) and c >= 0 for c in counts):
            runs = [int(c) for c in counts]
        else:
            raise _Bad(f"{where}: the RLE's 'counts' must be a string or a list of integers >= 0")
        if sum(runs) != size[0] * size[1]:
            raise _Bad(
                f"{where}: the RLE's counts add up to {sum(runs)} pixels, not "
                f"{size[0]} x {size[1]} = {size[0] * size[1]}"
            )
        return runs

    def _build_arrays(self, images: list[_Image]) -> None:
        """Every image's boxes, labels, polygons and vertices as slices of a few read-only
        arrays (see the module docstring)."""
        counts = [len(im.labels) for im in images]
        self._bounds = np.concatenate(([0], np.cumsum(counts))).astype(np.int64).tolist()
        boxes = np.array([b for im in images for b in im.boxes], np.float32).reshape(-1, 4)
        labels = np.array([lb for im in images for lb in im.labels], np.int32)
        self._boxes, self._labels = _frozen(boxes), _frozen(labels)
        self._ids = [_frozen(np.array([im.id], np.int32)) for im in images] if self._ids_out else []
        if self._polygon_out:
            legacy = bool(self.args["masks"]) and not self.args["polygon_masks"]
            polys, verts, p_off, v_off = [], [], [0], [0]
            for im in images:
                start = 0
                for obj, obj_polygons in enumerate(im.polygons):
                    for polygon in obj_polygons:
                        end = start + len(polygon)
                        row = (obj, 2 * start, 2 * end) if legacy else (obj, start, end)
                        polys.append(row)
                        verts.append(polygon)
                        start = end
                p_off.append(len(polys))
                v_off.append(v_off[-1] + start)
            vertices = np.concatenate(verts) if verts else np.zeros((0, 2), np.float32)
            if self.args["ratio"]:
                sizes = np.repeat(
                    np.array([(im.width, im.height) for im in images], np.float32).reshape(-1, 2),
                    np.diff(v_off),
                    axis=0,
                )
                vertices = vertices / sizes
            self._polygons = _frozen(np.array(polys, np.int32).reshape(-1, 3))
            self._vertices = _frozen(vertices.astype(np.float32).reshape(-1, 2))
            self._p_off, self._v_off = p_off, v_off
        if self._pixelwise:
            sources = [_mask_source(im) for im in images]
            self._edges = polygon_table(sources)
            # the polygons are in the table now
            self._mask_sources = [s._replace(polygons=None) for s in sources]

    # --- reading ------------------------------------------------------------------------------
    def labels_of(self, index: int) -> tuple[int, ...]:
        """The labels of the image's annotations (each once)."""
        lo, hi = self._bounds[index], self._bounds[index + 1]
        return tuple(sorted({int(v) for v in np.asarray(self._labels[lo:hi]).ravel()}))

    def load(self, index: int) -> tuple[np.ndarray, ...]:
        lo, hi = self._bounds[index], self._bounds[index + 1]
        out = [
            finish(_read_bytes(self._paths[index])),
            self._boxes[lo:hi],
            self._labels[lo:hi],
        ]
        if self._polygon_out:
            out.append(self._polygons[self._p_off[index] : self._p_off[index + 1]])
            out.append(self._vertices[self._v_off[index] : self._v_off[index + 1]])
        if self._pixelwise:
            out.append(finish(self.pixelwise_mask(index)))
        if self._ids_out:
            out.append(self._ids[index])
        return tuple(out)

    def pixelwise_mask(self, index: int) -> np.ndarray:
        """The int32 H×W×1 label map of sample ``index`` (see the module docstring)."""
        return mask_of(self._edges, index, self._mask_sources[index])

    def path_of(self, index: int) -> str:
        return self._paths[index]

    def empty_dtype(self, index: int) -> Any:
        return self._dtypes[index]

    def setup(self) -> None:
        specs = output_specs(self.args)
        self._layouts = [s.layout or "" for s in specs]
        dtypes = [np.uint8, np.float32, np.int32]
        if _polygons_out(self.args):
            dtypes += [np.int32, np.float32]
        if self.args["pixelwise_masks"]:
            dtypes.append(np.int32)
        if _ids_out(self.args):
            dtypes.append(np.int32)
        self._dtypes = dtypes
        super().setup()

    def _batches(self, data: list[tuple[np.ndarray, ...]], names: list[str]) -> list[TensorList]:
        return [
            TensorList([d[k] for d in data], self._layouts[k], names, dtype=self._dtypes[k])
            for k in range(self.num_outputs)
        ]

    def class_names(self) -> dict[int, str]:
        """Label -> category name, after DALI's remapping (the category id itself with
        ``avoid_class_remapping``)."""
        return dict(self._class_names)


def _mask_source(image: _Image) -> MaskSource:
    """What a pixelwise mask of ``image`` is made of, gathered when the pipeline is built (see
    ``MaskSource``)."""
    with_parts = {
        label
        for label, polys, rles in zip(image.labels, image.polygons, image.rles, strict=True)
        if polys or rles
    }
    labels = sorted(with_parts)
    group = {label: g for g, label in enumerate(labels)}
    polygons, poly_group, rle_sums, rle_group = [], [], [], []
    for label, polys, rles in zip(image.labels, image.polygons, image.rles, strict=True):
        if not (polys or rles):
            continue
        polygons += polys
        poly_group += [group[label]] * len(polys)
        rle_sums += [np.cumsum(np.asarray(r, np.int64)) for r in rles]
        rle_group += [group[label]] * len(rles)
    n = len(polygons)
    rle_part = np.repeat(np.arange(n, n + len(rle_sums)), [s.size for s in rle_sums])
    # pixelwise masks make an image's width and height required (_parse)
    assert image.height is not None and image.width is not None
    return MaskSource(
        image.height,
        image.width,
        labels,
        polygons,
        np.array(poly_group, np.int64),
        np.concatenate(rle_sums) if rle_sums else np.zeros(0, np.int64),
        rle_part.astype(np.int64),
        np.array(rle_group, np.int64),
    )


def _image_mask(image: _Image) -> np.ndarray:
    """The int32 H×W×1 label map of one ``_Image`` (what the reader gives for it)."""
    source = _mask_source(image)
    return mask_of(polygon_table([source]), 0, source)


def _read_bytes(path: str) -> np.ndarray:
    """The bytes of the file ``path`` (uint8 1-D), read straight into their array: what
    ``np.fromfile`` gives, in half its time (one fstat, one read; no stdio buffer)."""
    with open(path, "rb", buffering=0) as f:
        data = np.empty(os.fstat(f.fileno()).st_size, np.uint8)
        # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12
        view, done = memoryview(data), 0  # type: ignore[arg-type]
        while done < data.size:
            n = f.readinto(view[done:])
            if not n:  # the file shrank since its size was read
                return data[:done]
            done += n
    return data


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


register(
    OperatorSchema(
        name="readers.coco",
        class_name="readers.COCO",
        impl=CocoReader,
        min_inputs=0,
        max_inputs=0,
        num_outputs=_num_outputs,
        aliases=("COCOReader",),
        fn_aliases=("coco_reader",),
        output_kinds=lambda args, inputs: output_specs(args),
        role="reader",
        validate=_validate,
        doc=(
            "Reads a COCO data set (a folder of images and a JSON annotations file), as DALI's "
            "COCO reader: outputs the image bytes, boxes (xywh, or ltrb; pixels, or relative "
            "with ratio), int32 labels of shape (N,), then polygons and vertices "
            "(polygon_masks) or an int32 HWC pixelwise mask (pixelwise_masks), then int32 "
            "image ids (image_ids). Categories are numbered 1..K in the JSON's order unless "
            "avoid_class_remapping. Each sample's source_info is the image's file_name; "
            "class_names() of the reader maps labels to category names."
        ),
        args=[
            Arg("file_root", "folder the images' file_name paths start from", None, _path),
            Arg("annotations_file", "path of the COCO JSON annotations file", "", _path),
            Arg("ltrb", "boxes as [left, top, right, bottom] (else [x, y, w, h])", False),
            Arg("ratio", "boxes and polygon vertices relative to the image size", False),
            Arg("polygon_masks", "output polygons and vertices", False),
            Arg("masks", "deprecated: polygon_masks with polygons counted in coordinates", False),
            Arg("pixelwise_masks", "output an int32 HWC mask of each object's label", False),
            Arg("image_ids", "output each image's id", False),
            Arg("save_img_ids", "deprecated alias of image_ids", False),
            Arg("skip_empty", "leave out images without objects", False),
            Arg(
                "size_threshold",
                "drop objects whose box width or height (pixels) is under this",
                0.1,
                to_float(),
            ),
            Arg("include_iscrowd", "keep objects marked iscrowd=1", True),
            Arg(
                "avoid_class_remapping",
                "labels are the category ids (else 1..K in the JSON's order)",
                False,
            ),
            Arg("images", "read only these file names, in this order", None, _names),
            Arg("preprocessed_annotations", "not supported (DALI's meta files)", "", to_str),
            Arg("save_preprocessed_annotations", "not supported", False, to_bool),
            Arg("save_preprocessed_annotations_dir", "not supported", "", to_str),
            *READER_ARGS,
        ],
    )
)
