"""COCO's masks made as DALI 2.4 makes them, for ``readers.coco`` (``pixelwise_masks``): COCO's
run-length encodings (RLE, compressed strings and lists of counts), the COCO API's polygon
rasteriser ``rleFrPoly`` re-implemented bit-exact, and DALI's merge of the labels of an image
into one int32 H×W×1 label map.

- RLE counts are column-major, zeros first, as in COCO (``rle_from_string``, ``rle_encode``,
  ``rle_decode``).
- Polygons are rasterised as ``rleFrPoly`` does (vertices scaled by 5 and rounded, the boundary
  walked point by point, each pixel column cut where the boundary crosses the column's centre;
  pixel (r, c) is the unit square from (c, r)), which is what DALI links
  (``rle_from_polygon``).
- Labels are merged by DALI's run-merging rule: on pixels two labels cover, the larger label
  wins, except on the image's last run, where DALI keeps the smaller (its merge loop reads the
  ended run's value); that quirk is reproduced too (``tests/data/coco/quirks.json``;
  ``merge_labels``).

The reader gathers each image's segmentations into a ``MaskSource`` when the pipeline is built,
the polygons of all images into one ``EdgeTable`` (``polygon_table``), and makes an image's
label map from them when its sample is read (``mask_of``).

How masks are made fast (each output bit-exact with the step-by-step algorithm, which
``tests/operators/test_readers_coco.py`` keeps as its reference and compares on random,
degenerate, self-intersecting, out-of-image and tiny polygons and random RLEs): no mask is
ever made per polygon or per label, and no RLE counts are made. rleFrPoly's boundary points
(where an outline toggles the mask, as column-major pixel positions) come from its edges:
on an x-major edge only the steps onto a pixel column's centre inside the image are made
(every 5th step), a y-major edge is walked, the points across two edges are made once. The
edge-level work of every polygon of the data set is done when the pipeline is built, in one
vectorised pass (``EdgeTable``: about 25 bytes a vertex, 3 times the float32 vertices; no
per-image arrays of it). Each part's toggles pair into runs, the runs of a label are united
and the labels merged by DALI's rule on the segments between consecutive cut points (a few
thousand an image), never pixel by pixel; only the last step fills the H×W array, transposed
from column-major in uint8 and 64 columns at a time (an int32 transposed copy is ~6 times
slower and a whole-image one thrashes the cache at a power-of-two height), widened to int32
after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

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
class EdgeTable:
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
) -> EdgeTable:
    """The ``EdgeTable`` of polygons (vertices ``xs``, ``ys`` on rleFrPoly's grid, one polygon
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

    return EdgeTable(
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
    table: EdgeTable, index: int, height: int, width: int
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


# --- the reader's masks: all polygons prepared at build, an image's label map when read -----


class MaskSource(NamedTuple):
    """What the pixelwise mask of one image is made of (gathered when the pipeline is built):
    its size, the labels that have a segmentation (ascending: the groups), its polygons
    (float32 K×2 each, for ``polygon_table``; ``None`` once they are in the table) and each
    one's group, and its RLEs as toggle positions (the counts' running sums) with their part
    (numbered after the polygons) and group."""

    height: int
    width: int
    labels: list[int]
    polygons: list[np.ndarray] | None
    poly_group: np.ndarray
    rle_bounds: np.ndarray
    rle_part: np.ndarray
    rle_group: np.ndarray


def polygon_table(sources: Sequence[MaskSource]) -> EdgeTable:
    """The ``EdgeTable`` of the polygons of ``sources``, image i's rows the i-th."""
    per_source: list[list[np.ndarray]] = []
    for source in sources:
        if source.polygons is None:  # (the TypeError iterating over None gave)
            raise TypeError("polygon_table: a MaskSource whose polygons are in a table already")
        per_source.append(source.polygons)
    polygons = [p for ps in per_source for p in ps]
    counts = [len(ps) for ps in per_source]
    xy = np.concatenate(polygons).astype(np.float64) if polygons else np.zeros((0, 2))
    return _edge_table(
        *_on_grid(xy.reshape(-1, 2)),
        np.array([len(p) for p in polygons], np.int64),
        np.repeat(np.arange(len(sources)), counts),
        np.array([source.height for source in sources], np.int64),
        np.array([source.width for source in sources], np.int64),
    )


def mask_of(table: EdgeTable, index: int, source: MaskSource) -> np.ndarray:
    """The int32 H×W×1 label map of image ``index`` of ``table``, made of ``source``."""
    height, width, labels, _, poly_group, rle_bounds, rle_part, rle_group = source
    part, positions = _crossings(table, index, height, width)
    bounds = np.concatenate((positions, rle_bounds))
    part_of = np.concatenate((part, rle_part))
    groups = np.concatenate((poly_group, rle_group))
    return _label_map(height, width, labels, bounds, part_of, groups)
