"""Random crop windows for boxes and regions: ``fn.random_bbox_crop`` (DALI's prospective
random crop of a box coordinate space, the SSD crop search: the window (anchor, shape) and the
boxes, labels and indices that survive it), ``fn.roi_random_crop`` (a fixed-shape window
placed at random around a region of interest) and ``fn.random_crop_generator`` (the random
resized crop window of a shape).

random_bbox_crop, decisions and traps (DALI 2.4's ``bbox_crop.cc``, read and checked against
DALI):

- The options are the ``thresholds`` plus, with ``allow_no_crop``, one "no crop" option; each
  round picks one uniformly. "No crop" gives anchor 0, shape 1 (``input_shape`` with
  ``crop_shape``) and every box unchanged, in the input's order.
- A round makes ``num_attempts`` candidate windows. Relative windows: each extent drawn from
  ``scaling``; where an ``aspect_ratio`` range is a single value the extents are fixed to it
  (in a random order of the dimensions, then rescaled so that the largest extent is kept); a
  window whose aspect ratio (x/y; x/z, y/z in 3-D) is outside the range is dropped; the anchor
  is uniform in [0, 1 - extent]. Fixed windows (``crop_shape`` + ``input_shape``): integer
  anchors uniform in [0, input - crop]; anchor and shape are then absolute (pixels) while the
  boxes stay relative.
- The metric of a window is the smallest (``all_boxes_above_threshold``) or largest IoU
  (``threshold_type="iou"``) or overlap (intersection / box area) over the boxes (0 with no
  box); a window is valid when metric >= threshold and at least one box keeps its centre
  inside it. The best window so far (by metric) is kept, so that after
  ``total_num_attempts`` the best candidate is given (DALI warns; augkit does not).
- Kept boxes: those whose centre is inside the window (``bbox_prune_threshold`` unset; a centre
  on the window's edge is inside), or whose fraction of area inside the window is >= the
  prune threshold; each is clipped to the window and mapped to its coordinates.
- Labels (n,) or (n, k) are gathered with their boxes, dtype kept; indices are int32.
- Trap: DALI loops for ever when no window can be valid (a sample without boxes and no "no
  crop" option) and ``total_num_attempts`` is unset; augkit stops after 10000 attempts and
  gives the best window, as if ``total_num_attempts`` had been that (a sample without boxes
  and no "no crop" option stops at once: its best window is the first, as in DALI).
- Only the random draws differ from DALI (augkit's counter-based streams, not DALI's
  mt19937): the distributions, the thresholds and the geometry are DALI's; the deterministic
  cases (``scaling=[1, 1]``, ``crop_shape == input_shape``, ``thresholds`` unreachable...)
  match DALI exactly (tests/dali_parity/cases_box_crops.py).
- Boxes must be relative, inside [0, 1] with start <= end (DALI asserts the same).
- ``ltrb`` is DALI's deprecated spelling of ``bbox_layout`` ("xyXY" / "xyWH"); an explicit
  ``bbox_layout`` wins. DALI refuses both together, and ``allow_no_crop``/``scaling``/
  ``aspect_ratio`` given with ``crop_shape``; augkit cannot tell a default from a given value
  here, so it ignores ``allow_no_crop`` with ``crop_shape`` (DALI's behaviour when it is left
  default) and refuses nothing.
- Speed: the search is vectorised over windows and samples, with the draws of augkit's former
  sequential search (DALI's rule: one round at a time, stop at the first valid window) kept value
  for value: a sample draws blocks of rounds (one round, then up to 256 windows a block; a block's
  picks, then its windows: ``integers``, ``uniform``, [``integers``], ``random``, always of the same
  sizes) until a chunk of windows (its first block, then 256 windows) or a "no crop" pick, and the
  chunks of all the samples of a batch (of ``_PART``) are measured together, one (window, box) pair
  per element, one coordinate at a time, by the same float32 operations as the sequential search (so
  the same values). Each sample then takes its first valid window, or draws its next chunk. A
  chunk's draws past the window taken are never used: the generator is the sample's own and is not
  used after the search. With ``all_boxes_above_threshold`` a window is first measured against its
  sample's smallest box (failing there is failing) and only those that pass against all. The best
  window at the limit (``_best_so_far``) is found from the failed chunks: in attempt order the last
  valid one, then the first largest metric after it, if larger (DALI's "keep the best" loop).
  ``run`` seeds the samples' generators in one Philox pass for the batch (one
  ``SampleStreams.generator`` per sample costs ~55 us) and sets one Generator's state per sample
  (``_philox_state``: the state of ``Philox(key=seed)``; making a Philox costs a SeedSequence from
  the OS's entropy); overriding ``run`` makes the operator unchainable
  (``SampleOperator.chainable``): it runs as a node of its own. Traps: a threshold is compared as a
  float32 when the metric is float32 (NumPy's rule for a Python float), as a float64 for a sample
  without boxes; a scalar ``integers`` draw equals one of size 1 (used: 4x cheaper), but draws of
  other sizes do not split. The equality with the sequential search (kept verbatim in
  tests/operators/test_box_crops.py) is tested on random arguments (all of them) and boxes. Measured
  (coco reader of data/ + DALI's SSD call, ``thresholds`` 0.1 ... 0.9, no crop, ``num_attempts=50``,
  batch 32, 1 thread, same script, a shared 2-core machine): augkit 5.3k-8.8k samples/s (the
  sequential search: 1.7k-1.9k; with ``exec_async=False`` 9.4k against 2.7k), DALI 2.4 CPU 44k-50k.
  The search alone is ~95 us a sample: samples of data/ need 4.6 rounds on average (24 boxes never
  all pass a threshold), and a per-sample Python loop is left (the draws, ~7 us a block, and the
  generator's state kept between passes) as well as each pass's fixed NumPy work (~3 passes a
  batch).
- The number of outputs (3, +labels, +indices) depends on whether labels are given:
  ``_num_outputs(args, num_inputs)`` (``OperatorSchema.outputs_for``).

roi_random_crop (DALI's ``roi_random_crop.cc``): per dimension, a window as large as the ROI
starts at it; otherwise the start is uniform (integers) in [roi_start, roi_end - crop] (or the
reverse range when the window is larger than the ROI), clamped to [0, shape - crop] when the
input shape is known (``in_shape``, or the input's first ``len(crop_shape)`` dimensions).
int64 output. A range left empty by the clamp (the ROI wider than the input allows) gives its
low end. The ROI must lie inside a known input shape and the window must fit in it.

random_crop_generator (DALI's ``random_crop_generator.h``): the window of
``crop_window.random_crop_window`` (the same generator as ``fn.random_resized_crop``) for the
first two values (H, W) of the 1-D integer input; int32 anchor (y, x) and shape (h, w).
Difference: where DALI's impossible cases give a window larger than the image with an
undefined anchor (``random_area`` > 1 on a non-square shape), augkit's window is clamped to the
image with a drawn anchor.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import kinds
from augkit.calls import SampleCall
from augkit.errors import ArgumentError, AugkitError
from augkit.operators.base import RunContext, SampleOperator
from augkit.operators.geometric.crop_window import random_crop_window, window_args
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    one_of,
    register,
    to_bool,
    to_float,
    to_floats,
    to_int,
    to_ints,
    to_str,
)
from augkit.tensors import TensorList

# A bound on DALI's endless search (see the module docstring).
MAX_ATTEMPTS = 10_000

_START_END = {2: "xyXY", 3: "xyzXYZ"}
_START_SHAPE = {2: "xyWH", 3: "xyzWHD"}


def _num_outputs(args: dict[str, Any], num_inputs: int) -> int:
    """anchor, shape, boxes, [labels when labels are given], [indices]."""
    return 3 + (num_inputs > 1) + int(bool(args.get("output_bbox_indices")))


def _layout_perm(layout: str, ndim: int) -> tuple[np.ndarray, bool]:
    """Column order to read a box as start-end (lo..., hi...) or start-shape, and which."""
    for canonical, is_shape in ((_START_END[ndim], False), (_START_SHAPE[ndim], True)):
        if sorted(layout) == sorted(canonical):
            return np.array([layout.index(c) for c in canonical]), is_shape
    raise ValueError(
        f"bbox_layout should be a permutation of '{_START_END[ndim]}' or "
        f"'{_START_SHAPE[ndim]}', got '{layout}'"
    )


def _check_layout(value: Any) -> str:
    value = to_str(value)
    if value and not (
        any(sorted(value) == sorted(v) for v in (*_START_END.values(), *_START_SHAPE.values()))
    ):
        raise ValueError(
            f"must be a permutation of 'xyXY', 'xyWH', 'xyzXYZ' or 'xyzWHD', got {value!r}"
        )
    return value


def _check_shape_layout(value: Any) -> str:
    value = to_str(value)
    if value and sorted(value) not in (sorted("WH"), sorted("WHD")):
        raise ValueError(f"must be a permutation of 'WH' or 'WHD', got {value!r}")
    return value


def _check_range(name: str, value: tuple[float, ...], sizes: tuple[int, ...]) -> None:
    if len(value) not in sizes:
        raise ValueError(f"{name} must have {' or '.join(map(str, sizes))} values")
    for lo, hi in zip(value[::2], value[1::2], strict=True):
        if not 0 <= lo <= hi:
            raise ValueError(f"{name} ranges must be 0 <= min <= max, got [{lo}, {hi}]")


def _validate(args: dict[str, Any]) -> None:
    _check_range("scaling", args.get("scaling", (1.0, 1.0)), (2,))
    _check_range("aspect_ratio", args.get("aspect_ratio", (1.0, 1.0)), (2, 6))
    thresholds = args.get("thresholds", (0.0,))
    if any(not 0.0 <= t <= 1.0 for t in thresholds):
        raise ValueError("thresholds must be within [0, 1]")
    if not thresholds:
        raise ValueError("at least one threshold must be given")
    if args.get("total_num_attempts") == 0:
        raise ValueError("total_num_attempts must be > 0 (or -1: unlimited)")


def _volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.prod(np.maximum(hi - lo, 0.0), axis=-1)


_FIRST = 1  # windows measured at once in a sample's first chunk (one block: most stop there)
_CHUNK = 256  # and in its next chunks (see the module docstring)
_PART = 64  # samples searched together (parts of a larger batch go to the pipeline's threads)


def _philox_state(seed: int) -> dict[str, Any]:
    """The state of ``np.random.Philox(key=seed)``, the generator that
    ``SampleStreams.generator`` makes (made directly: a keyed Philox costs ~8 us, a
    SeedSequence drawn from the OS's entropy that it never uses)."""
    return {
        "bit_generator": "Philox",
        "state": {"counter": np.zeros(4, np.uint64), "key": np.array([seed, 0], np.uint64)},
        "buffer": np.zeros(4, np.uint64),
        "buffer_pos": 4,
        "has_uint32": 0,
        "uinteger": 0,
    }


_LOCAL = threading.local()


def _thread_generator() -> np.random.Generator:
    """This thread's Generator (any state): making one costs a SeedSequence from the OS's
    entropy (up to milliseconds here), and the samples set and keep their own states."""
    rng = getattr(_LOCAL, "rng", None)
    if rng is None:
        rng = _LOCAL.rng = np.random.Generator(np.random.Philox(np.random.SeedSequence(0)))
    return rng


@functools.lru_cache(maxsize=64)
def _layout_of(layout: str, ndim: int) -> tuple[np.ndarray | None, bool]:
    """``_layout_perm``, cached, with ``None`` for the identity permutation."""
    perm, is_shape = _layout_perm(layout, ndim)
    return (None if np.array_equal(perm, np.arange(2 * ndim)) else perm), is_shape


class RandomBBoxCropImpl(SampleOperator):
    moves_geometry = True
    """It crops boxes (``OperatorImpl.moves_geometry``)."""
    draws_window = True
    """Its outputs are a window it draws (``OperatorImpl.draws_window``)."""
    random = True

    def setup(self) -> None:
        has_labels = self.num_inputs > 1
        self.num_outputs = 3 + int(has_labels) + int(self.args["output_bbox_indices"])
        self.has_labels = has_labels

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.float32 if index < 3 else np.int32

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            if sample.ndim != 2 or sample.shape[1] not in (4, 6):
                raise ValueError(
                    f"boxes must be 2-D (n, 4) or (n, 6), got shape {tuple(sample.shape)}"
                )
            if sample.dtype.kind != "f":  # np.issubdtype(dtype, np.floating), 5x cheaper
                raise ValueError(f"boxes must be float, got {sample.dtype}")
        elif sample.ndim not in (1, 2) or sample.dtype.kind not in "ium":  # np.integer
            raise ValueError(
                f"labels must be 1-D or 2-D integers, got {sample.dtype} "
                f"of shape {tuple(sample.shape)}"
            )

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        """``SampleOperator.run``'s samples, arguments, checks, generators and errors, with the
        samples searched together (``_search``) in parts of ``_PART`` samples, and their
        generators seeded in one Philox pass (``SampleStreams.generator`` per sample costs
        ~55 us, more than the search)."""
        # The call's arguments, checks and errors; its streams seeded in one pass, not per
        # sample (no per-sample rng argument: call.sample_args, not call.args).
        call = SampleCall.of(self, ctx, inputs, arg_inputs, batch_args={})
        n = call.n
        streams = call.streams
        assert streams is not None  # random = True: SampleCall.of gives the call its streams
        seeds = streams.seeds().tolist() if n else []

        def part(p: int) -> list[tuple]:
            # one generator for the part's samples, each searching from its own state
            rng = _thread_generator()
            samples = []
            configs: dict[int, _Config] = {}  # by dimension, when no argument is per-sample
            for i in range(p * _PART, min(n, (p + 1) * _PART)):
                args = call.sample_args(i)
                data = [x.samples[i] for x in inputs]
                try:
                    call.check(data)
                    ndim = data[0].shape[1] // 2
                    config = configs.get(ndim) if not arg_inputs else None
                    if config is None:
                        config = _Config(self, args, ndim)
                        if not arg_inputs:
                            configs[ndim] = config
                    labels = data[1] if len(data) > 1 else None
                    samples.append(_Sample(config, data[0], labels, rng, _philox_state(seeds[i])))
                except AugkitError:
                    raise
                except Exception as exc:
                    raise call.error(exc, i) from exc
            return _search(samples)

        results = [r for rs in ctx.map(part, -(-n // _PART)) for r in rs]
        # outputs_of only reads ``inputs`` (its ``list`` annotation is narrower than it needs)
        return self.outputs_of(results, inputs)

    def cpu(self, boxes: np.ndarray, labels: np.ndarray | None = None, **a: Any) -> tuple:
        """One sample's crop (the same search as ``run``'s)."""
        config = _Config(self, a, boxes.shape[1] // 2)
        return _search([_Sample(config, boxes, labels, a["rng"])])[0]

    def _shapes(self, a: dict[str, Any], ndim: int) -> tuple[np.ndarray, np.ndarray]:
        in_shape = np.asarray(a["input_shape"], np.int64).reshape(-1)
        crop_shape = np.asarray(a["crop_shape"], np.int64).reshape(-1)
        if in_shape.size != ndim or crop_shape.size != ndim:
            raise ValueError(
                f"input_shape and crop_shape must have {ndim} values for {2 * ndim}-coordinate "
                f"boxes, got {in_shape.size} and {crop_shape.size}"
            )
        order = a["shape_layout"]
        if order:
            if len(order) != ndim:
                raise ValueError(f"shape_layout '{order}' does not have {ndim} dimensions")
            idx = [order.index(c) for c in "WHD"[:ndim]]
            in_shape, crop_shape = in_shape[idx], crop_shape[idx]
        if np.any(in_shape <= 0) or np.any(crop_shape < 0) or np.any(crop_shape > in_shape):
            raise ValueError(
                f"crop_shape {tuple(crop_shape)} must fit in input_shape {tuple(in_shape)} "
                "(and input_shape must be positive)"
            )
        return in_shape, crop_shape


class _Config:
    """What the search of a sample with boxes of ``ndim`` dimensions takes from the arguments
    (worked out once for a batch when no argument is per-sample): ``fields``, given to each
    ``_Sample``. Its errors are kept, to be raised where the sequential kernel raised them:
    ``layout_error`` before the boxes are checked, ``error`` after."""

    def __init__(self, impl: RandomBBoxCropImpl, a: dict[str, Any], ndim: int) -> None:
        self.layout = a["bbox_layout"] or (_START_END if a["ltrb"] else _START_SHAPE)[ndim]
        self.layout_error: ValueError | None = None
        self.error: ValueError | None = None
        try:
            self.perm, self.is_shape = _layout_of(self.layout, ndim)
        except ValueError as exc:
            self.layout_error = exc
            return
        self.fields: dict[str, Any] = {"ndim": ndim, "perm": self.perm, "is_shape": self.is_shape}
        try:
            absolute = a["crop_shape"] is not None
            if absolute != (a["input_shape"] is not None):
                raise ValueError("crop_shape and input_shape must be given together (or neither)")
            shapes = impl._shapes(a, ndim) if absolute else None
        except ValueError as exc:
            self.error = exc
            return
        options = list(a["thresholds"]) + ([None] if a["allow_no_crop"] and not absolute else [])
        total = a["total_num_attempts"]
        self.limit = total if total > 0 else MAX_ATTEMPTS
        # a sample without boxes and no "no crop" option is never valid: DALI's endless
        # search keeps its first window
        self.never = None not in options and total <= 0
        # The metric is float32 (float64 without boxes): a threshold compared with it as a
        # Python float is rounded to its dtype first (NumPy's rule), so these are too.
        self.thr32 = [0.0 if t is None else float(np.float32(t)) for t in options]
        self.thr64 = [0.0 if t is None else t for t in options]
        f = self.fields
        f |= {
            "shapes": shapes,
            "indices": a["output_bbox_indices"],
            "k": a["num_attempts"],
            "nopt": len(options),
            "no_crop": len(options) - 1 if options[-1] is None else -1,
            "iou": a["threshold_type"] == "iou",
            "prune": a["bbox_prune_threshold"],
            "all_boxes": a["all_boxes_above_threshold"],
        }
        if shapes is not None:  # absolute
            f["span"] = np.maximum(shapes[0] - shapes[1], 0) + 1
        else:
            ar = np.asarray(a["aspect_ratio"], np.float32).reshape(-1, 2)
            pairs = [ar[i % len(ar)] for i in range(ndim * (ndim - 1) // 2)]
            f["ar"] = ar
            # _fix_aspects draws (and changes the extents) only where a range is one value
            f["fix"] = any(lo_ == hi_ and lo_ > 0 for lo_, hi_ in pairs)
            # the float32 bounds as Python floats: uniform() takes doubles either way
            f["s0"], f["s1"] = (float(np.float32(v)) for v in a["scaling"][:2])


class _Sample:
    """One sample's crop search: its boxes and arguments (checked), its draws (the sequential
    search's, in its order: a block's picks, then its windows) and where the search stands."""

    # Set from ``_Config.fields`` (``__dict__.update``): the arguments' values for the search.
    ndim: int
    perm: np.ndarray | None
    is_shape: bool
    shapes: tuple[np.ndarray, np.ndarray] | None
    indices: bool
    k: int
    nopt: int
    no_crop: int
    iou: bool
    prune: float | None
    all_boxes: bool
    span: np.ndarray  # absolute windows (``shapes`` given)
    ar: np.ndarray  # relative windows
    fix: bool
    s0: float
    s1: float

    def __init__(
        self,
        config: _Config,
        boxes: np.ndarray,
        labels: np.ndarray | None,
        rng: np.random.Generator,
        state: dict[str, Any] | None = None,
    ) -> None:
        # The generator may serve other samples between this one's draws: the sample keeps
        # its state (``state``: where it starts; default: the generator's).
        self.rng = rng
        self.state = rng.bit_generator.state if state is None else state
        nboxes = boxes.shape[0]
        if labels is not None and labels.shape[0] != nboxes:
            raise ValueError(f"{nboxes} boxes but {labels.shape[0]} labels")
        if config.layout_error is not None:
            raise config.layout_error
        self.__dict__.update(config.fields)
        ndim = self.ndim
        b = boxes.astype(np.float32, copy=False)
        if self.perm is not None:
            b = b[:, self.perm]
        lo, hi = b[:, :ndim], b[:, ndim:]
        if self.is_shape:
            hi = lo + hi
        if nboxes and not ((lo >= 0).all() and (hi <= 1).all() and (lo <= hi).all()):
            bad = int(
                np.flatnonzero(~(np.all(lo >= 0, 1) & np.all(hi <= 1, 1) & np.all(lo <= hi, 1)))[0]
            )
            raise ValueError(
                f"box {bad} {boxes[bad].tolist()} ({config.layout}) is not inside [0, 1] with "
                "start <= end (boxes are relative coordinates)"
            )
        if config.error is not None:
            raise config.error
        self.limit = 1 if nboxes == 0 and config.never else config.limit
        self.thr = config.thr32 if nboxes else config.thr64
        self.nboxes, self.lo, self.hi, self.labels = nboxes, lo, hi, labels
        self.count = 0  # attempts made (all failed)
        self.block = 1
        self.failed: list[tuple] = []  # (pass, sample's position in it): the failed chunks
        self.best: tuple | None = None  # anchor, shape, kept boxes (lo, hi), indices
        self.done = False

    def next_chunk(self) -> None:
        """Draws blocks of rounds (one round first, then up to 256 windows a block), until a
        chunk of ``_FIRST`` / ``_CHUNK`` windows, the limit or a "no crop" pick; a "no crop"
        pick with no window before it ends the search."""
        rng, k, limit = self.rng, self.k, self.limit
        rng.bit_generator.state = self.state
        picked: list[int] = []
        draws: list[tuple] = []
        stop = False
        end = self.count
        target = _CHUNK if self.count else _FIRST
        while end < limit:
            rounds = max(1, min(self.block // k, -(-(limit - end) // k)))
            self.block = min(4 * self.block, 256)
            # (a scalar draw is the same as a draw of size 1, 4x cheaper)
            if rounds == 1:
                picks = [int(rng.integers(self.nopt))]
            else:
                picks = rng.integers(self.nopt, size=rounds).tolist()
            if self.no_crop in picks:
                picks = picks[: picks.index(self.no_crop)]
                stop = True
            if picks:
                used = min(len(picks) * k, limit - end)
                size = (rounds * k, self.ndim)
                if self.shapes is not None:
                    draws.append((rng.integers(0, self.span, size)[:used],))
                else:
                    ext = rng.uniform(self.s0, self.s1, size).astype(np.float32)
                    if self.fix:
                        ext = _fix_aspects(ext, self.ar, rng)
                    draws.append((ext[:used], rng.random(size)[:used]))
                picked += picks
                end += used
            if stop or end - self.count >= target:
                break
        self.state = rng.bit_generator.state
        self.picked, self.draws, self.stop, self.end = picked, draws, stop, end
        if not draws:
            self._no_crop()

    def _no_crop(self) -> None:
        z = np.zeros(self.ndim, np.float32)
        self.best = (z, np.ones(self.ndim, np.float32), self.lo, self.hi, np.arange(self.nboxes))
        self.done = True

    def settle(self, found: int, measured: _Pass, pos: int) -> None:
        """The chunk's outcome: window ``found`` of it (-1: none valid)."""
        if found >= 0:
            self.best = measured.window(pos, found)
            self.done = True
            return
        self.failed.append((measured, pos))
        self.count = self.end
        if self.stop:
            self._no_crop()
        elif self.count >= self.limit:
            self.best = _best_so_far(self.failed)
            self.done = True

    def outputs(self) -> tuple:
        ndim = self.ndim
        best = self.best
        if best is None:  # every attempt had a bad aspect ratio: DALI gives an empty window
            z = np.zeros(ndim, np.float32)
            best = (z, z, self.lo[:0], self.hi[:0], np.arange(0))
        anchor, shape, n_lo, n_hi, keep = best
        if self.is_shape:
            n_hi = n_hi - n_lo
        if self.perm is None:
            out_boxes = np.concatenate([n_lo, n_hi], axis=1)
        else:
            out_boxes = np.empty((len(keep), 2 * ndim), np.float32)
            out_boxes[:, self.perm] = np.concatenate([n_lo, n_hi], axis=1)
        outs: list[Any] = [
            np.asarray(anchor, np.float32),
            np.asarray(shape, np.float32),
            out_boxes,
        ]
        if self.labels is not None:
            outs.append(np.ascontiguousarray(self.labels[keep]))
        if self.indices:
            outs.append(keep.astype(np.int32))
        return tuple(outs)


def _search(samples: list[_Sample]) -> list[tuple]:
    """The crops of some samples: pass after pass, each sample not done draws its next chunk
    of windows, and the chunks of all (same dimension) are measured together."""
    active = [s for s in samples if not s.done]
    while active:
        for s in active:
            s.next_chunk()
        active = [s for s in active if not s.done]
        for ndim in {s.ndim for s in active}:
            group = [s for s in active if s.ndim == ndim]
            measured = _Pass(group)
            for pos, (s, found) in enumerate(zip(group, measured.first_valid(), strict=True)):
                s.settle(found, measured, pos)
        active = [s for s in active if not s.done]
    return [s.outputs() for s in samples]


class _Pass:
    """The chunks of windows of some samples (same dimension), measured at once: per window
    (all samples' windows in a row) the relative window, the output anchor/extent, the aspect
    check, the metric, validity and whether a box is kept; per (window, box) pair whether the
    box is kept. Pairs are window-major, one coordinate at a time. Every value is computed by
    the operations of the sequential search, elementwise, so every value is the same.

    With ``all_boxes_above_threshold`` (the metric is the smallest over the boxes), a window is
    first measured against one box of its sample (its smallest): a window that fails there
    fails, and only the others are measured against every box; then the metrics of the
    failed windows are unknown (``partial``), and ``full()`` measures them (the best window
    of a search that ran out of attempts needs them)."""

    def __init__(self, group: list[_Sample], prune: bool = True) -> None:
        s0 = group[0]
        ndim = s0.ndim
        self.group = group
        self.chunks = [(s.draws, s.picked, s.count, s.end) for s in group]
        counts = [s.end - s.count for s in group]
        self.starts = np.cumsum([0, *counts]).tolist()
        if s0.shapes is None:
            # the relative arguments are the same for every sample (constant arguments)
            ext = np.concatenate([p[0] for s in group for p in s.draws])
            u = np.concatenate([p[1] for s in group for p in s.draws])
            ok = _valid_aspects(ext, s0.ar)
            c_lo = (u * (1.0 - ext)).astype(np.float32)
            c_hi = c_lo + ext
            self.out_lo, self.out_ext = c_lo, ext
        else:  # crop_shape/input_shape may be per-sample arguments
            lows, highs, anchors, exts = [], [], [], []
            for s in group:
                assert s.shapes is not None  # a group's samples share s0's kind of window
                in_shape, crop_shape = s.shapes
                anchor = np.concatenate([p[0] for p in s.draws]).astype(np.float32)
                c = (anchor / in_shape).astype(np.float32)
                lows.append(c)
                highs.append((crop_shape / in_shape).astype(np.float32) + c)
                anchors.append(anchor)
                exts.append(np.broadcast_to(crop_shape.astype(np.float32), anchor.shape))
            c_lo, c_hi = np.concatenate(lows), np.concatenate(highs)
            self.out_lo, self.out_ext = np.concatenate(anchors), np.concatenate(exts)
            ok = np.ones(len(c_lo), bool)
        self.ok, self.c_lo, self.c_hi = ok, c_lo, c_hi
        nwin = len(c_lo)
        # each window's threshold: its round's (a round: k windows, the last maybe fewer)
        thr, per_round = [], []
        for s, count in zip(group, counts, strict=True):
            thr += [s.thr[p] for p in s.picked]
            per_round += [s.k] * (len(s.picked) - 1) + [count - s.k * (len(s.picked) - 1)]
        thr_w = np.repeat(np.array(thr), per_round)
        nb = np.array([s.nboxes for s in group])
        per_window = np.repeat(nb, counts)  # boxes per window
        box_start = np.cumsum(nb) - nb
        first_box = np.repeat(box_start, counts)  # each window's sample's first box
        # the boxes (all samples' in a row), per coordinate
        lo = np.concatenate([s.lo for s in group])
        hi = np.concatenate([s.hi for s in group])
        self.box_lo, self.box_hi = lo.T, hi.T
        self.centre = ((lo + hi) * np.float32(0.5)).T
        area = np.maximum(hi[:, 0] - lo[:, 0], 0.0)
        for d in range(1, ndim):
            area = area * np.maximum(hi[:, d] - lo[:, d], 0.0)
        self.box_area = area
        size = c_hi - c_lo
        w_area = size[:, 0]
        for d in range(1, ndim):
            w_area = w_area * size[:, d]
        self.win_area, self.win_lo, self.win_hi = w_area, c_lo.T, c_hi.T
        self.ms = np.zeros(nwin)  # float64: exact float32 metrics (0 without a box)
        self.kept = np.zeros(nwin, bool)
        # windows without a box: metric 0
        self.valid = ok & (self.ms >= thr_w)
        sel = np.flatnonzero(per_window > 0)
        self.partial = False
        if prune and s0.all_boxes and len(sel) and int(per_window.max()) > 1:
            # one box per window first: each sample's smallest (any box bounds the minimum)
            smallest = [
                int(area[b : b + n].argmin()) if n else 0
                for b, n in zip(box_start.tolist(), nb.tolist(), strict=True)
            ]
            one = np.repeat(box_start + np.array(smallest), counts)[sel]
            metric, _ = self._pairs(sel, one)
            passed = ok[sel] & (metric >= thr_w[sel])
            self.partial = not passed.all()
            sel = sel[passed]
            self.ms[:] = np.nan
            self.ms[per_window == 0] = 0.0
            self.valid &= per_window == 0  # the selected ones are measured below
        n_sel = per_window[sel]
        pstart = np.cumsum(n_sel) - n_sel  # each selected window's first pair
        npairs = int(n_sel.sum())
        win = np.repeat(sel, n_sel)
        box = np.arange(npairs) - np.repeat(pstart - first_box[sel], n_sel)
        metric, inside = self._pairs(win, box)
        self.inside = inside
        pair_start = np.full(nwin, -1)
        pair_start[sel] = pstart
        if npairs:
            reduce = np.minimum if s0.all_boxes else np.maximum
            self.ms[sel] = reduce.reduceat(metric, pstart)
            self.kept[sel] = np.logical_or.reduceat(inside, pstart)
            self.valid[sel] = ok[sel] & (self.ms[sel] >= thr_w[sel])
        self.pair_start: list[int] = pair_start.tolist()

    def _pairs(self, win: np.ndarray, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The metric and "kept" of (window, box) pairs (indices into the pass's arrays)."""
        s0 = self.group[0]
        prune = s0.prune
        by_centre = prune is None
        inter = inside = None
        for d in range(s0.ndim):
            w_lo, w_hi = self.win_lo[d][win], self.win_hi[d][win]
            gap = np.minimum(self.box_hi[d][box], w_hi) - np.maximum(self.box_lo[d][box], w_lo)
            gap = np.maximum(gap, 0.0, out=gap)
            # the intersection's volume: its extents multiplied in order (as np.prod does)
            inter = gap if inter is None else inter * gap
            if by_centre:
                c = self.centre[d][box]
                ins = (c >= w_lo) & (c <= w_hi)
                inside = ins if inside is None else inside & ins
        assert inter is not None
        box_area = self.box_area[box]
        if not s0.iou or not by_centre:
            frac = np.zeros_like(inter)
            np.divide(inter, box_area, out=frac, where=box_area > 0)
        if s0.iou:
            metric = np.zeros_like(inter)
            denom = box_area + self.win_area[win] - inter
            np.divide(inter, denom, out=metric, where=inter > 0)
        else:
            metric = frac
        if prune is None:  # by_centre
            assert inside is not None  # set for each of the ndim >= 2 dimensions
            return metric, inside
        return metric, frac >= prune

    def full(self, pos: int) -> _Pass:
        """Sample ``pos``'s chunk of this pass measured against every box."""
        s = copy.copy(self.group[pos])
        s.draws, s.picked, s.count, s.end = self.chunks[pos]
        return _Pass([s], prune=False)

    def first_valid(self) -> list[int]:
        """Per sample, its first window that is valid and keeps a box (-1: none)."""
        idx = np.flatnonzero(self.valid & self.kept)
        starts = self.starts
        pos = np.searchsorted(idx, starts[:-1]).tolist()
        found = idx.tolist()
        out = []
        for i, p in enumerate(pos):
            out.append(found[p] - starts[i] if p < len(found) and found[p] < starts[i + 1] else -1)
        return out

    def window(self, pos: int, j: int) -> tuple:
        """Window ``j`` of sample ``pos`` as the crop gives it: anchor, shape, the kept boxes
        clipped and mapped to it, their indices."""
        s = self.group[pos]
        g = self.starts[pos] + j
        w_lo, w_hi = self.c_lo[g], self.c_hi[g]
        p = self.pair_start[g]
        keep = np.flatnonzero(self.inside[p : p + s.nboxes]) if p >= 0 else np.arange(0)
        extent = w_hi - w_lo
        n_lo = np.clip((np.maximum(s.lo[keep], w_lo) - w_lo) / extent, 0.0, 1.0)
        n_hi = np.clip((np.minimum(s.hi[keep], w_hi) - w_lo) / extent, 0.0, 1.0)
        return self.out_lo[g], self.out_ext[g], n_lo, n_hi, keep


def _best_so_far(failed: list[tuple[_Pass, int]]) -> tuple | None:
    """DALI's best window after a search that found no valid one: in attempt order, an attempt
    with a good aspect ratio becomes the best when it is valid (metric >= threshold, no box
    kept) or its metric beats the best so far; None when no attempt had a good aspect ratio.
    Per chunk: after its last valid attempt, the first of the largest metrics, if larger."""
    best, best_metric = None, -1.0
    for m, pos in failed:
        if m.partial:
            m, pos = m.full(pos), 0
        a, b = m.starts[pos], m.starts[pos + 1]
        ok, ms = m.ok[a:b], m.ms[a:b]
        v = np.flatnonzero(m.valid[a:b])
        j = None
        if v.size:
            j = int(v[-1])
            best_metric = float(ms[j])
            cand = np.flatnonzero(ok[j + 1 :]) + (j + 1)
        else:
            cand = np.flatnonzero(ok)
        if cand.size:
            vals = ms[cand]
            i = int(vals.argmax())
            if float(vals[i]) > best_metric:
                j, best_metric = int(cand[i]), float(vals[i])
        if j is not None:
            best = m.window(pos, j)
    return best


def _fix_aspect(shape: np.ndarray, ar: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """DALI's FixAspectRatios: pairs whose aspect range is one value get that ratio."""
    ndim = shape.size
    fixed = np.zeros((ndim, ndim), np.float32)
    k = 0
    need = False
    for d0 in range(ndim):
        for d1 in range(d0 + 1, ndim):
            lo_, hi_ = ar[k % len(ar)]
            if lo_ == hi_ and lo_ > 0:
                fixed[d0, d1] = lo_
                fixed[d1, d0] = np.float32(1.0 / float(lo_))
                need = True
            k += 1
    if not need:
        return shape
    order = rng.permutation(ndim)
    max_extent = shape.max()
    shape = shape.copy()
    for i0 in range(ndim):
        for i1 in range(i0 + 1, ndim):
            d0, d1 = order[i0], order[i1]
            if fixed[d1, d0] > 0:
                shape[d1] = shape[d0] * fixed[d1, d0]
    new_max = shape.max()
    if new_max > 0:
        shape = (max_extent * shape / new_max).astype(np.float32)
    return shape


def _fix_aspects(ext: np.ndarray, ar: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``_fix_aspect`` for a (k, ndim) batch of extents (vectorised for 2-D windows)."""
    if ext.shape[1] != 2:
        return np.stack([_fix_aspect(e, ar, rng) for e in ext]) if len(ext) else ext
    lo_, hi_ = ar[0]
    if not (lo_ == hi_ and lo_ > 0):
        return ext
    first = rng.integers(0, 2, len(ext)) == 0  # the random order of the two dimensions
    max_extent = ext.max(axis=1)
    out = ext.copy()
    inv = np.float32(1.0 / float(lo_))
    out[first, 1] = ext[first, 0] * inv
    out[~first, 0] = ext[~first, 1] * lo_
    new_max = out.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(new_max[:, None] > 0, max_extent[:, None] * out / new_max[:, None], out)
    return out.astype(np.float32)


def _valid_aspects(ext: np.ndarray, ar: np.ndarray) -> np.ndarray:
    """``_valid_aspect`` for a (k, ndim) batch of extents."""
    ok = np.ones(len(ext), bool)
    k = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(ext.shape[1]):
            for j in range(i + 1, ext.shape[1]):
                lo_, hi_ = ar[k % len(ar)]
                r = ext[:, i] / ext[:, j]
                ok &= (lo_ <= r) & (r <= hi_)
                k += 1
    return ok


def _valid_aspect(shape: np.ndarray, ar: np.ndarray) -> bool:
    ndim = shape.size
    k = 0
    for i in range(ndim):
        for j in range(i + 1, ndim):
            lo_, hi_ = ar[k % len(ar)]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = shape[i] / shape[j]
            if not (lo_ <= r <= hi_):
                return False
            k += 1
    return True


def _boxes_kind(args: dict[str, Any]) -> Any:
    """The output boxes' kind: relative boxes in the input's layout (generic for a permuted
    layout that is neither ltrb nor xywh)."""
    layout = args.get("bbox_layout") or ("xyXY" if args.get("ltrb", True) else "xyWH")
    fmt = {"xyXY": "ltrb", "xyWH": "xywh"}.get(layout)
    return kinds.boxes(fmt, relative=True) if fmt else kinds.GENERIC


def _box_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec | None]:
    specs: list[OutputSpec | None] = [
        OutputSpec(ndim=1, layout=""),
        OutputSpec(ndim=1, layout=""),
        OutputSpec(kind=_boxes_kind(args), ndim=2),
    ]
    if len(inputs) > 1:
        specs.append(OutputSpec(kind=kinds.LABELS))
    if args.get("output_bbox_indices"):
        specs.append(OutputSpec(ndim=1, layout=""))
    return specs


register(
    OperatorSchema(
        name="random_bbox_crop",
        class_name="RandomBBoxCrop",
        impl=RandomBBoxCropImpl,
        doc=(
            "Applies a prospective random crop to a box coordinate space: gives the crop "
            "window (anchor, shape; for fn.slice) and the boxes (and labels, indices) that "
            "survive it, mapped to the window."
        ),
        min_inputs=1,
        max_inputs=2,
        num_outputs=_num_outputs,
        accepts=[
            InputSpec("boxes (n, 4) or (n, 6)", kinds=("boxes",), ndims=(2,)),
            InputSpec("labels of the boxes", kinds=("labels",)),
        ],
        output_kinds=_box_kinds,
        args=[
            Arg("all_boxes_above_threshold", "every box must pass the threshold", True, to_bool),
            Arg("allow_no_crop", "not cropping is one of the outcomes", True, to_bool),
            Arg("aspect_ratio", "range of the window's aspect ratio", (1.0, 1.0), to_floats()),
            Arg("bbox_layout", "the boxes' layout (xyXY, xyWH, ...)", "", _check_layout),
            Arg(
                "bbox_prune_threshold",
                "keep boxes with at least this fraction of area inside (unset: by centre)",
                None,
                to_float(0.0, 1.0),
            ),
            Arg("crop_shape", "fixed window shape (with input_shape)", None, to_ints(), True),
            Arg("input_shape", "the input's shape", None, to_ints(), True),
            Arg("ltrb", "deprecated: boxes are ltrb (else ltwh)", True, to_bool),
            Arg("num_attempts", "attempts per threshold pick", 1, to_int(1)),
            Arg("output_bbox_indices", "give the kept boxes' indices", False, to_bool),
            Arg("quiet", "no warning when no valid window is found", False, to_bool),
            Arg("scaling", "range of the window's extent", (1.0, 1.0), to_floats()),
            Arg("shape_layout", "layout of crop_shape/input_shape", "", _check_shape_layout),
            Arg("threshold_type", "'iou' or 'overlap'", "iou", one_of("iou", "overlap")),
            Arg("thresholds", "minimum overlap values to pick from", (0.0,), to_floats()),
            Arg("total_num_attempts", "total attempts (-1: unlimited)", -1, to_int(-1)),
        ],
        validate=_validate,
    )
)


# --- fn.roi_random_crop -------------------------------------------------------------------------


def _vector(a: dict[str, Any], key: str, ndim: int) -> np.ndarray:
    value = np.asarray(a[key], np.int64).reshape(-1)
    if value.size != ndim:
        raise ValueError(
            f"{key} must have {ndim} values (as crop_shape), got {value.size}: {value.tolist()}"
        )
    return value


def _validate_roi(args: dict[str, Any]) -> None:
    # Called with the arguments given so far (construction, then call): only a conflict can
    # be told here; a missing ROI end is the kernel's error.
    if args.get("roi_end") is not None and args.get("roi_shape") is not None:
        raise ValueError("roi_end and roi_shape cannot both be given (give one)")


class ROIRandomCropImpl(SampleOperator):
    random = True

    def setup(self) -> None:
        if self.num_inputs and self.args.get("in_shape") is not None:
            raise ArgumentError(
                f"{self.schema.class_name}: argument 'in_shape' is incompatible with giving an "
                "input (the input's shape is the input shape)"
            )

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int64

    def cpu(self, *samples: Any, **a: Any) -> np.ndarray:
        rng: np.random.Generator = a["rng"]
        crop = np.asarray(a["crop_shape"], np.int64).reshape(-1)
        ndim = crop.size
        start = _vector(a, "roi_start", ndim)
        if a["roi_end"] is not None:
            extent = _vector(a, "roi_end", ndim) - start
        elif a["roi_shape"] is None:
            raise ValueError("either roi_end or roi_shape must be given")
        else:
            extent = _vector(a, "roi_shape", ndim)
        shape = None
        if samples:
            if samples[0].ndim < ndim:
                raise ValueError(
                    f"the input has {samples[0].ndim} dimensions, fewer than crop_shape's {ndim}"
                )
            shape = np.asarray(samples[0].shape[:ndim], np.int64)
        elif a["in_shape"] is not None:
            shape = _vector(a, "in_shape", ndim)
        if shape is not None:
            if np.any(shape < 0) or np.any(crop < 0) or np.any(crop > shape):
                raise ValueError(
                    f"crop_shape {crop.tolist()} must be >= 0 and fit in the input shape "
                    f"{shape.tolist()}"
                )
            if np.any(start < 0) or np.any(start + extent > shape):
                raise ValueError(
                    f"the ROI [{start.tolist()}, {(start + extent).tolist()}) is out of the "
                    f"input shape {shape.tolist()}"
                )
        out = np.empty(ndim, np.int64)
        for d in range(ndim):
            if extent[d] == crop[d]:
                out[d] = start[d]
                continue
            lo, hi = sorted((int(start[d]), int(start[d] + extent[d] - crop[d])))
            if shape is not None:
                lo, hi = max(0, lo), min(int(shape[d] - crop[d]), hi)
            out[d] = rng.integers(lo, hi + 1) if hi >= lo else lo
        return out


register(
    OperatorSchema(
        name="roi_random_crop",
        class_name="ROIRandomCrop",
        impl=ROIRandomCropImpl,
        doc=(
            "Gives the start of a crop window of a fixed shape, placed at random so that as "
            "much of the region of interest (ROI) as possible is inside it (a window smaller "
            "than the ROI lies inside the ROI), and inside the input shape when it is known "
            "(``in_shape``, or the shape of the input given). int64, one value per dimension."
        ),
        min_inputs=0,
        max_inputs=1,
        output_kinds=fixed_kinds(OutputSpec(ndim=1, layout="")),
        args=[
            Arg("crop_shape", "the window's shape", REQUIRED, to_ints(), True),
            Arg("roi_start", "the ROI's start", REQUIRED, to_ints(), True),
            Arg("roi_end", "the ROI's end (or roi_shape)", None, to_ints(), True),
            Arg("roi_shape", "the ROI's shape (or roi_end)", None, to_ints(), True),
            Arg("in_shape", "the input's shape (without an input)", None, to_ints(), True),
        ],
        validate=_validate_roi,
    )
)


# --- fn.random_crop_generator -------------------------------------------------------------------


class RandomCropGeneratorImpl(SampleOperator):
    random = True

    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int32

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim != 1 or sample.shape[0] not in (2, 3):
            raise ValueError(
                "expected a 1-D shape of 2 or 3 values (HW or HWC), got an array of shape "
                f"{tuple(sample.shape)}"
            )
        if not np.issubdtype(sample.dtype, np.integer) or sample.dtype == np.uint64:
            raise ValueError(f"the shape must be integers (not uint64), got {sample.dtype}")

    def cpu(self, shape: np.ndarray, **a: Any) -> tuple[np.ndarray, np.ndarray]:
        h, w = (int(v) for v in shape[:2].astype(np.int32))
        y, x, ch, cw = random_crop_window(
            h,
            w,
            a["rng"],
            aspect_ratio=a["random_aspect_ratio"],
            area=a["random_area"],
            num_attempts=a["num_attempts"],
        )
        return np.array([y, x], np.int32), np.array([ch, cw], np.int32)


register(
    OperatorSchema(
        name="random_crop_generator",
        class_name="RandomCropGenerator",
        impl=RandomCropGeneratorImpl,
        doc=(
            "Gives a crop window with a random area and aspect ratio (DALI's random resized "
            "crop window) for a 1-D input shape (HW or HWC): two int32 outputs, the anchor "
            "(y, x) and the shape (h, w), for fn.slice(..., axes=[0, 1])."
        ),
        num_outputs=2,
        output_kinds=fixed_kinds(OutputSpec(ndim=1, layout=""), OutputSpec(ndim=1, layout="")),
        args=[
            *window_args("input"),
        ],
    )
)
