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
  DALI links; this module re-implements it (below), so masks are bit-exact with DALI's.
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

How masks are made fast (each output bit-exact with the step-by-step algorithm, which
``tests/operators/test_readers_coco.py`` keeps as its reference and compares on random,
degenerate, self-intersecting, out-of-image and tiny polygons and random RLEs): no mask is
ever made per polygon or per label, and no RLE counts are made. rleFrPoly's boundary points
(where an outline toggles the mask, as column-major pixel positions) come from its edges:
on an x-major edge only the steps onto a pixel column's centre inside the image are made
(every 5th step), a y-major edge is walked, the points across two edges are made once. The
edge-level work of every polygon of the data set is done when the pipeline is built, in one
vectorised pass (``_EdgeTable``: about 25 bytes a vertex, 3 times the float32 vertices; no
per-image arrays of it). Each part's toggles pair into runs, the runs of a label are united and the
labels merged by DALI's rule on the segments between consecutive cut points (a few thousand
an image), never pixel by pixel; only the last step fills the H×W array, transposed from
column-major in uint8 and 64 columns at a time (an int32 transposed copy is ~6 times slower
and a whole-image one thrashes the cache at a power-of-two height), widened to int32 after.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import finish
from augkit.operators.readers.base import READER_ARGS, Reader
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

_SCALE = 5  # rleFrPoly's upsampling of the polygon
_BLOCK = 64  # columns transposed at a time in _fill


# --- run-length encodings (COCO's, column-major) --------------------------------------------


def rle_from_string(text: str) -> list[int]:
    """The counts of COCO's compressed RLE string (6 bits a character from '0', counts after
    the second stored as differences to the count two before).

    Raises:
        ValueError: a character outside COCO's alphabet.
    """
    counts: list[int] = []
    p, n = 0, len(text)
    while p < n:
        x, k, more = 0, 0, True
        while more:
            if p >= n:
                raise ValueError("the RLE string ends inside a count")
            c = ord(text[p]) - 48
            if not 0 <= c < 64:
                raise ValueError(f"character {text[p]!r} is not in COCO's RLE alphabet")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x & 0xFFFFFFFF)  # DALI keeps them as uint32
    return counts


def rle_encode(mask: np.ndarray) -> list[int]:
    """COCO's canonical RLE of a boolean H×W mask: column-major runs, zeros first."""
    flat = np.ascontiguousarray(np.asarray(mask, bool).T).reshape(-1)
    if flat.size == 0:
        return [0]
    edges = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate(([0], edges, [flat.size]))
    runs = np.diff(bounds).tolist()
    return [0, *runs] if flat[0] else runs


def rle_decode(counts: Sequence[int], height: int, width: int) -> np.ndarray:
    """The boolean H×W mask of column-major ``counts`` (which must cover it exactly)."""
    counts_arr = np.asarray(counts, dtype=np.int64)
    values = (np.arange(counts_arr.size) % 2).astype(bool)
    flat = np.repeat(values, counts_arr)
    return flat.reshape(width, height).T


def _on_grid(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rleFrPoly's vertices: (x, y) float64 V×2 upsampled by 5 and rounded as C's
    (int)(v + .5) does (towards zero), int64 x and y."""
    xs = np.trunc(_SCALE * xy[:, 0] + 0.5).astype(np.int64)
    ys = np.trunc(_SCALE * xy[:, 1] + 0.5).astype(np.int64)
    return xs, ys


@dataclass
class _EdgeTable:
    """The polygons of many images prepared for rleFrPoly (``_edge_table``), one image's rows
    after the other's (its rows are ``[off[i], off[i + 1])`` of each part). Point t of an edge
    (t = 0..steps from its lower end) is at (origin + t, line(t)) for an x-major edge, at
    (line(t), origin + t) for a y-major one, line(t) = (int)(base + slope * t + .5)."""

    # x-major edges, those with steps onto a pixel column's centre inside the image: t and x
    # of the first such step, how many (every 5th), base, slope, polygon (in its image)
    x_t: np.ndarray
    x_u: np.ndarray
    x_n: np.ndarray
    x_base: np.ndarray
    x_slope: np.ndarray
    x_owner: np.ndarray
    x_off: np.ndarray
    # y-major edges: base, slope, origin, steps, walked from the far end, polygon
    y_base: np.ndarray
    y_slope: np.ndarray
    y_origin: np.ndarray
    y_steps: np.ndarray
    y_flip: np.ndarray
    y_owner: np.ndarray
    y_off: np.ndarray
    # the boundary points made across two edges (at a vertex): polygon, pixel position
    c_owner: np.ndarray
    c_pos: np.ndarray
    c_off: np.ndarray


def _downsampled(
    u: np.ndarray, v: np.ndarray, height: Any, width: Any
) -> tuple[np.ndarray, np.ndarray]:
    """rleFrPoly's last step on pairs of points (u the x the pair steps over, v its lower y, on
    the 5-times grid): which pairs are on a pixel column's centre inside the image, and their
    column-major pixel positions (``height``, ``width``: numbers or one per pair)."""
    xd = (u.astype(np.float64) + 0.5) / _SCALE - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    if not np.isscalar(height):
        height = height[keep]
    yd = (v[keep].astype(np.float64) + 0.5) / _SCALE - 0.5
    rows = np.ceil(np.clip(yd, 0, height)).astype(np.int64)
    return keep, xd[keep].astype(np.int64) * height + rows


def _edge_table(
    xs: np.ndarray,
    ys: np.ndarray,
    sizes: np.ndarray,
    poly_image: np.ndarray,
    heights: np.ndarray,
    widths: np.ndarray,
) -> _EdgeTable:
    """The ``_EdgeTable`` of polygons (vertices ``xs``, ``ys`` on rleFrPoly's grid, one polygon
    after the other, ``sizes`` their vertex counts, ``poly_image`` the image of each, images in
    order) on images of ``heights`` x ``widths`` (int64, one per image): every edge-level
    step of rleFrPoly, for all images at once (vectorised, when the pipeline is built).

    rleFrPoly walks each edge point by point on the 5-times grid and keeps the pairs of
    consecutive points whose x differs, where that x is a pixel column's centre. The pairs are
    made without walking every point: along an x-major edge every step changes x, so only the
    steps onto a centre (x = 2 mod 5) inside the image are made (every 5th: ``_crossings``); a
    y-major edge is walked (its x changes on some steps only); the pairs across two edges of a
    polygon (the last point of one, the first of the next) are made here, once.
    """
    n_images = heights.size
    first_poly = np.searchsorted(poly_image, np.arange(n_images))
    owner = np.repeat(np.arange(sizes.size), sizes)  # global polygon of each edge
    image = poly_image[owner]
    local = owner - first_poly[image]
    height, width = heights[image], widths[image]
    # Each vertex starts an edge to the next one, the last of a polygon to its first: closed.
    ends = np.cumsum(sizes)
    nxt = np.arange(1, xs.size + 1)
    full = sizes > 0
    nxt[ends[full] - 1] = (ends - sizes)[full]
    x0, x1, y0, y1 = xs, xs[nxt], ys, ys[nxt]
    dx, dy = np.abs(x1 - x0), np.abs(y0 - y1)
    along_x = dx >= dy
    flip = np.where(along_x, x0 > x1, y0 > y1)  # walked from the far end
    x0, x1 = np.where(flip, x1, x0), np.where(flip, x0, x1)
    y0, y1 = np.where(flip, y1, y0), np.where(flip, y0, y1)
    steps = np.where(along_x, dx, dy)
    with np.errstate(divide="ignore", invalid="ignore"):
        # dx == dy == 0 gives 0/0: that point's v is never used (its u is its neighbours')
        slope = np.where(along_x, (y1 - y0) / dx, (x1 - x0) / dy)
    slope[steps == 0] = 0.0
    origin = np.where(along_x, x0, y0)
    base = np.where(along_x, y0, x0)
    # x-major edges: the steps t -> t + 1 with x0 + t a centre (2 mod 5) inside the image.
    xe = np.flatnonzero(along_x & (steps > 0))
    ox = x0[xe]
    lo = np.maximum(0, 2 - ox)
    hi = np.minimum(steps[xe] - 1, _SCALE * (width[xe] - 1) + 2 - ox)
    t_first = lo + (2 - ox - lo) % _SCALE
    n = np.where(hi >= t_first, (hi - t_first) // _SCALE + 1, 0)
    some = n > 0
    xe, t_first, n = xe[some], t_first[some], n[some]
    ye = np.flatnonzero(~along_x)
    # Across two edges of a polygon: the last point of one and the first of the next.
    e = np.flatnonzero(owner[1:] == owner[:-1])
    f = e + 1
    t_last, t_start = np.where(flip[e], 0, steps[e]), np.where(flip[f], steps[f], 0)
    l_line = np.trunc(base[e] + slope[e] * t_last + 0.5).astype(np.int64)
    f_line = np.trunc(base[f] + slope[f] * t_start + 0.5).astype(np.int64)
    up = np.where(along_x[e], origin[e] + t_last, l_line)
    vp = np.where(along_x[e], l_line, origin[e] + t_last)
    uj = np.where(along_x[f], origin[f] + t_start, f_line)
    vj = np.where(along_x[f], f_line, origin[f] + t_start)
    moved = np.flatnonzero(uj != up)
    uj, up, vj, vp, f = uj[moved], up[moved], vj[moved], vp[moved], f[moved]
    keep, c_pos = _downsampled(
        np.where(uj < up, uj, uj - 1), np.minimum(vj, vp), height[f], width[f]
    )
    f = f[keep]
    # the integers in int32 where they all fit (the usual case: a third of the memory)
    big = max((max(-int(a.min()), int(a.max())) for a in (xs, ys) if a.size), default=0)
    small = np.int32 if 2 * big + 10 < 2**31 else np.int64

    def offsets(rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(image[rows], np.arange(n_images + 1))

    return _EdgeTable(
        x_t=t_first.astype(small),
        x_u=(ox[some] + t_first).astype(small),
        x_n=n.astype(small),
        x_base=base[xe].astype(small),
        x_slope=slope[xe],
        x_owner=local[xe].astype(small),
        x_off=offsets(xe),
        y_base=base[ye].astype(small),
        y_slope=slope[ye],
        y_origin=origin[ye].astype(small),
        y_steps=steps[ye].astype(small),
        y_flip=flip[ye],
        y_owner=local[ye].astype(small),
        y_off=offsets(ye),
        c_owner=local[f].astype(small),
        c_pos=c_pos,
        c_off=offsets(f),
    )


def _crossings(
    table: _EdgeTable, index: int, height: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """rleFrPoly's boundary points of the polygons of image ``index`` of ``table``: (polygon
    index in the image, column-major pixel position) of each point where an outline toggles
    the mask (positions may repeat: a repeated one toggles twice)."""
    a, b = table.x_off[index], table.x_off[index + 1]
    n = table.x_n[a:b].astype(np.int64)
    rep = np.repeat(np.arange(n.size), n)
    k = _SCALE * (np.arange(rep.size) - (np.cumsum(n) - n)[rep])
    t = table.x_t[a:b][rep] + k
    base, slope = table.x_base[a:b][rep], table.x_slope[a:b][rep]
    x_u = table.x_u[a:b][rep] + k
    x_v = np.minimum(np.trunc(base + slope * t + 0.5), np.trunc(base + slope * (t + 1) + 0.5))
    x_owner = table.x_owner[a:b][rep]
    # y-major edges: every point, the steps where x changes
    a, b = table.y_off[index], table.y_off[index + 1]
    n = table.y_steps[a:b].astype(np.int64) + 1
    rep = np.repeat(np.arange(n.size), n)
    t = np.arange(rep.size) - (np.cumsum(n) - n)[rep]
    u = np.trunc(table.y_base[a:b][rep] + table.y_slope[a:b][rep] * t + 0.5).astype(np.int64)
    j = np.flatnonzero((u[1:] != u[:-1]) & (t[1:] != 0))  # step j -> j + 1 of one edge
    e = rep[j] + a
    flip = table.y_flip[e]
    earlier, later = np.where(flip, u[j + 1], u[j]), np.where(flip, u[j], u[j + 1])
    y_u = np.where(later < earlier, later, later - 1)
    y_v = table.y_origin[e] + t[j]
    keep, positions = _downsampled(
        np.concatenate((x_u, y_u)), np.concatenate((x_v.astype(np.int64), y_v)), height, width
    )
    owners = np.concatenate((x_owner, table.y_owner[e]))[keep]
    a, b = table.c_off[index], table.c_off[index + 1]
    return (
        np.concatenate((owners, table.c_owner[a:b])).astype(np.int64),
        np.concatenate((positions, table.c_pos[a:b])),
    )


def _zero_runs_merged(diffs: list[int]) -> list[int]:
    """rleFrPoly's last step: a zero-length run merges its two neighbours."""
    if 0 not in diffs[1:]:
        return diffs
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


def rle_from_polygon(xy: np.ndarray, height: int, width: int) -> list[int]:
    """COCO's ``rleFrPoly``: the RLE counts of the polygon of (x, y) vertices ``xy`` (float64
    K×2) on an H×W grid (DALI's pixelwise masks use it; the reader itself keeps the boundary
    points, ``_crossings``, and never makes these counts)."""
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    one = np.zeros(1, np.int64)
    size = np.array([len(xy)], np.int64)
    table = _edge_table(*_on_grid(xy), size, one, one + height, one + width)
    _, positions = _crossings(table, 0, height, width)
    a = np.sort(np.concatenate((positions, [height * width])))
    return _zero_runs_merged(np.diff(a, prepend=0).tolist())


def _label_map(
    height: int,
    width: int,
    labels: Sequence[int],
    bounds: np.ndarray,
    part_of: np.ndarray,
    group_of_part: np.ndarray,
) -> np.ndarray:
    """The int32 H×W×1 label map of parts given by their toggle positions: ``bounds`` (column-
    major pixel positions, each toggling its part ``part_of`` on or off from there on; repeats
    allowed), parts united by group (``group_of_part``: groups 0..G-1; a group may have no
    toggles), group g labelled ``labels[g]`` and merged in group order by DALI's rule (module
    docstring).

    All of it works on the segments between consecutive distinct positions (a few thousand),
    never pixel by pixel; only the last step fills the H×W array.
    """
    hw = height * width
    n_groups = len(labels)
    if not n_groups:
        return np.zeros((height, width, 1), np.int32)
    # Each part's toggles sorted, an end at hw for a part left on: its runs are the pairs
    # (start, end) of consecutive toggles.
    stride = hw + 1
    odd = np.flatnonzero(np.bincount(part_of, minlength=group_of_part.size) & 1)
    keys = np.sort(np.concatenate((part_of * stride + bounds, odd * stride + hw)))
    part = keys[0::2] // stride
    start, end = keys[0::2] - part * stride, keys[1::2] - part * stride
    full = start < end
    start, end, group = start[full], end[full], group_of_part[part[full]]
    cuts = np.sort(np.concatenate((start, end, [0, hw])))
    cuts = cuts[np.concatenate(([True], cuts[1:] != cuts[:-1]))]  # segment starts, then hw
    n_seg = cuts.size - 1
    # cover[g, s]: segment s is in a run of a part of group g
    row = group * (n_seg + 1)
    size = n_groups * (n_seg + 1)
    opened = np.bincount(row + np.searchsorted(cuts, start), minlength=size)
    closed = np.bincount(row + np.searchsorted(cuts, end), minlength=size)
    depth = (opened - closed).reshape(n_groups, n_seg + 1)[:, :n_seg]
    cover = np.cumsum(depth, axis=1) > 0
    # The segment where each group's last run starts (0 for a constant group), and where the
    # image's last run starts at each merge: the latest of those of the groups so far.
    if n_seg > 1 and n_groups > 1:
        changes = cover[:, 1:] != cover[:, :-1]
        last = np.where(changes.any(axis=1), n_seg - 1 - np.argmax(changes[:, ::-1], axis=1), 0)
        tail = np.maximum.accumulate(last)
    else:
        tail = np.zeros(n_groups, np.int64)
    merged = np.where(cover[0], np.int64(labels[0]), np.int64(0))
    for g in range(1, n_groups):
        s = tail[g]
        if merged[s]:  # the last run is labelled: DALI keeps its label there
            merged[:s][cover[g, :s]] = labels[g]
        else:
            merged[cover[g]] = labels[g]
    return _fill(merged, np.diff(cuts), height, width)


def _fill(values: np.ndarray, runs: np.ndarray, height: int, width: int) -> np.ndarray:
    """The int32 H×W×1 array of column-major ``runs`` of ``values``. Transposing is the cost:
    an int32 transposed copy is ~6 times slower than a uint8 one, and a whole-image one
    thrashes the cache when the height is a power of two (512: 3 times slower). So it is done
    on uint8 (the values, or their indices among the image's distinct values), 64 columns at
    a time, and widened after."""
    table = None
    if values.min() >= 0 and values.max() < 256:
        small = values.astype(np.uint8)
    else:
        table, index = np.unique(values, return_inverse=True)
        if table.size > 256:  # more than 256 labels in one image: the plain transpose
            flat = np.repeat(values.astype(np.int32), runs)
            return np.ascontiguousarray(flat.reshape(width, height).T).reshape(height, width, 1)
        small = index.astype(np.uint8)
        table = table.astype(np.int32)
    columns = np.repeat(small, runs).reshape(width, height)
    out = np.empty((height, width), np.uint8)
    for c in range(0, width, _BLOCK):
        out[:, c : c + _BLOCK] = columns[c : c + _BLOCK].T
    wide = out.astype(np.int32) if table is None else table[out]
    return wide.reshape(height, width, 1)


def merge_labels(layers: Sequence[tuple[int, list[int]]], height: int, width: int) -> np.ndarray:
    """The int32 label map of ``layers`` ((label, canonical RLE counts covering the H×W
    image), labels ascending), merged with DALI's run-merging rule (see the module docstring):
    the larger label wins where two cover a pixel, except on the last run of the image."""
    if not layers:
        return np.zeros((height, width, 1), np.int32)
    cums = [np.cumsum(np.asarray(counts, np.int64)) for _, counts in layers]
    part_of = np.repeat(np.arange(len(cums)), [c.size for c in cums])
    groups = np.arange(len(cums))
    labels = [label for label, _ in layers]
    return _label_map(height, width, labels, np.concatenate(cums), part_of, groups)


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
            kind=kinds.Kind("vertices", relative=ratio),
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
            shown = ", ".join(repr(p) for p in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise self.error(
                f"{len(missing)} image file(s) of {path!r} are not in file_root {root!r}: "
                f"{shown}{more}"
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
            image = by_id.get(image_id)
            if image is None:
                continue  # an image not read (as DALI: annotations of unknown images are left)
            if (crowd and not a["include_iscrowd"]) or w < threshold or h < threshold:
                continue
            self._add(image, entry, where, cat, (x, y, w, h))
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
            self._edges = _polygon_table(sources)
            # the polygons are in the table now
            self._mask_sources = [(*s[:3], None, *s[4:]) for s in sources]

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
        return _mask_of(self._edges, index, self._mask_sources[index])

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


def _mask_source(image: _Image) -> tuple:
    """What a pixelwise mask of ``image`` is made of, gathered when the pipeline is built: its
    size, the labels that have a segmentation (ascending: the groups), its polygons (float32
    K×2 each, for ``_polygon_table``) and each one's group, and its RLEs as toggle positions
    (the counts' running sums) with their part (numbered after the polygons) and group."""
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
    return (
        image.height,
        image.width,
        labels,
        polygons,
        np.array(poly_group, np.int64),
        np.concatenate(rle_sums) if rle_sums else np.zeros(0, np.int64),
        rle_part.astype(np.int64),
        np.array(rle_group, np.int64),
    )


def _polygon_table(sources: Sequence[tuple]) -> _EdgeTable:
    """The ``_EdgeTable`` of the polygons of ``_mask_source``s, image i's rows the i-th."""
    polygons = [p for source in sources for p in source[3]]
    counts = [len(source[3]) for source in sources]
    xy = np.concatenate(polygons).astype(np.float64) if polygons else np.zeros((0, 2))
    return _edge_table(
        *_on_grid(xy.reshape(-1, 2)),
        np.array([len(p) for p in polygons], np.int64),
        np.repeat(np.arange(len(sources)), counts),
        np.array([source[0] for source in sources], np.int64),
        np.array([source[1] for source in sources], np.int64),
    )


def _mask_of(table: _EdgeTable, index: int, source: tuple) -> np.ndarray:
    """The int32 H×W×1 label map of image ``index``, its ``_mask_source`` ``source``."""
    height, width, labels, _, poly_group, rle_bounds, rle_part, rle_group = source
    part, positions = _crossings(table, index, height, width)
    bounds = np.concatenate((positions, rle_bounds))
    part_of = np.concatenate((part, rle_part))
    groups = np.concatenate((poly_group, rle_group))
    return _label_map(height, width, labels, bounds, part_of, groups)


def _image_mask(image: _Image) -> np.ndarray:
    """The int32 H×W×1 label map of one ``_Image`` (what the reader gives for it)."""
    source = _mask_source(image)
    return _mask_of(_polygon_table([source]), 0, source)


def _read_bytes(path: str) -> np.ndarray:
    """The bytes of the file ``path`` (uint8 1-D), read straight into their array: what
    ``np.fromfile`` gives, in half its time (one fstat, one read; no stdio buffer)."""
    with open(path, "rb", buffering=0) as f:
        data = np.empty(os.fstat(f.fileno()).st_size, np.uint8)
        view, done = memoryview(data), 0
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
