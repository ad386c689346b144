"""``fn.paste`` (an image on a larger canvas) and ``fn.multi_paste`` (regions of several images
onto one canvas each), as DALI's ``Paste`` and ``MultiPaste``.

``fn.paste`` (DALI's ``paste.h``/``paste.cu``, checked against DALI 2.4's CPU outputs):

- The canvas is ``int(ratio * H)`` x ``int(ratio * W)`` (float32 products, truncated), at least
  ``int(min_canvas_size)`` on each side; the image goes at ``int(paste_y * (canvas_H - H))``,
  ``int(paste_x * (canvas_W - W))`` (truncated); the rest is ``fill_value``.
- uint8 HWC images only, with ``n_channels`` (default 3) channels; ``fill_value`` is one value
  or one per channel, an int converted to uint8 as C++ converts it (modulo 256: 300 -> 44,
  -2 -> 254, DALI's own behaviour). ``ratio`` >= 1, ``paste_x``/``paste_y`` in [0, 1] and
  ``min_canvas_size`` >= 0 are checked per sample. (DALI 2.4 crashes on an image whose channel
  count is not ``n_channels``; augkit raises.)

Targets: ``fn.paste([images, masks, boxes, labels], ratio=..., fill_value=...)`` moves masks,
boxes and keypoints with the images (``geometric/targets.py``), by the image's canvas and
position (``paste_geometry``, one computation): masks go on a canvas of class 0 whatever
``fill_value`` is (any integer mask type, not only uint8), boxes and keypoints are shifted and,
relative ones, rescaled to the canvas; nothing is dropped. ``fn.multi_paste`` moves no
targets (its regions come from several images): it refuses masks, boxes, keypoints... when
the pipeline is built.

``fn.multi_paste`` (DALI's ``multipaste.h``):

- With ``in_ids`` (one input): output sample ``i`` gets, in order, the regions of input samples
  ``in_ids[i]`` (any samples of the batch). Without: one region from each input, sample ``i``
  of input ``j`` being region ``j`` of output ``i``. Later regions overwrite earlier ones; the
  rest of the canvas is 0.
- Regions: ``in_anchors`` (absolute) or ``in_anchors_rel`` (``floor(extent * rel)``), shapes
  ``shapes`` or ``shapes_rel`` (``ceil(extent * rel)``: "shape rounded up, anchor down"), or by
  default from the anchor to the end of the input; ``out_anchors`` or ``out_anchors_rel``
  (``floor(canvas * rel)``). Each is a (number of regions) x 2 array of (H, W) per sample; the
  relative ones must lie in [0, 1]. A region leaving its input or the canvas raises.
- The canvas is ``output_size`` (H, W), or, when it is not given, the shape of the inputs,
  which must then all be equal. Channels: the pasted regions' (which must agree), else the
  input sample's.
- Types: uint8, int16, int32 and float in and out; ``dtype`` converts with ConvertSat
  (rounding half away from zero, saturating: ``cast.convert_sat``).

GPU (``device="gpu"``, ``fn.paste`` only): ``Paste.gpu`` is the CPU kernel on the image's array
module (``backend.array_module``: CuPy): the canvas and position are worked out on the host
(``paste_geometry``), the per-channel fill (three bytes) is moved with ``xp.asarray``, and the
device does ``xp.empty``, a broadcast row fill (``fill_canvas``) and one slice assignment:
equal to the CPU bit for bit. ``fn.multi_paste`` is CPU only.

Both need the whole batch (``multi_paste``'s ``in_ids`` pick any sample), so they never run in
a per-sample chain; the kernels are NumPy slice assignments.

Speed (``multi_paste``): converting each sample's region arrays into Python numbers took most
of the time (~60 µs a sample). The batch kernel works out every output's regions at once when
there is one input, ``in_ids`` and as many absolute regions per output (``_plan``: NumPy on
(samples, regions, 2) arrays, ~1 µs a sample), else converts the values in bulk and runs the
per-sample kernel on the rows of one output array. A region that covers the whole canvas hides
the zeros and the regions before it: neither the zeroing nor those copies are done. What is
left is the copies (memory traffic: ~35 µs for a 320x320x3 image and a 160x160 patch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.geometric.crop import fill_canvas
from augkit.operators.geometric.targets import TARGET_KINDS, Geometry, MovesTargets, movable
from augkit.operators.layouts import GEOMETRIC, check_image
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    InputSpec,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_dtype,
    to_float,
    to_int,
    to_ints,
)
from augkit.tensors import TensorList

_f32 = np.float32

# --- fn.paste --------------------------------------------------------------------------------


def paste_geometry(
    height: int, width: int, ratio: float, paste_x: float, paste_y: float, min_canvas: float
) -> tuple[int, int, int, int]:
    """DALI's canvas (H, W) and paste position (y, x) for one image.

    Example:
        >>> paste_geometry(5, 7, 1.5, 0.3, 0.9, 0.0)
        (7, 10, 1, 0)
    """
    if not ratio >= 1.0:
        raise ValueError(f"ratio of less than 1 is not supported, got {ratio}")
    if not 0.0 <= paste_x <= 1.0:
        raise ValueError(f"paste_x must be in range [0, 1], got {paste_x}")
    if not 0.0 <= paste_y <= 1.0:
        raise ValueError(f"paste_y must be in range [0, 1], got {paste_y}")
    if not min_canvas >= 0.0:
        raise ValueError(f"min_canvas_size of less than 0 is not supported, got {min_canvas}")
    with np.errstate(over="ignore"):
        out_h = _trunc(_f32(ratio) * _f32(height))
        out_w = _trunc(_f32(ratio) * _f32(width))
    least = _trunc(_f32(min_canvas))
    out_h, out_w = max(out_h, least), max(out_w, least)
    if out_h * out_w > _MAX_CANVAS:
        raise ValueError(
            f"the canvas {out_h}x{out_w} is too large (ratio {ratio}, min_canvas_size "
            f"{min_canvas}): at most {_MAX_CANVAS} pixels"
        )
    y = _trunc(_f32(paste_y) * _f32(out_h - height))
    x = _trunc(_f32(paste_x) * _f32(out_w - width))
    return out_h, out_w, y, x


_MAX_CANVAS = 2**31


def _trunc(value: Any) -> int:
    value = float(value)
    if not math.isfinite(value):
        return 2**62
    return int(value)


class Paste(MovesTargets, SampleOperator):
    """Pastes each image on its canvas (``paste_geometry``), and moves masks, boxes and
    keypoints with it (``targets.py``)."""

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        h, w = int(shape[0]), int(shape[1])
        out_h, out_w, y, x = paste_geometry(
            h, w, args["ratio"], args["paste_x"], args["paste_y"], args["min_canvas_size"]
        )
        return Geometry.scale_translate(1.0, 1.0, x, y, (w, h), (out_w, out_h))

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_image("paste", sample, layout, ("HWC",), (np.dtype(np.uint8),))
        channels = self.args["n_channels"]
        if sample.shape[2] != channels:
            raise ValueError(
                f"paste: the image has {sample.shape[2]} channels, but n_channels is "
                f"{channels}; give n_channels={sample.shape[2]} (and as many fill values)"
            )

    def setup(self) -> None:
        values = np.asarray(self.args["fill_value"], np.int64)
        self._fill = np.broadcast_to(values % 256, (self.args["n_channels"],)).astype(np.uint8)

    def cpu(self, image: np.ndarray, **args: Any) -> np.ndarray:
        return self._paste(image, np, **args)

    def gpu(self, image: Any, **args: Any) -> Any:
        """The CPU kernel on ``image``'s array module (CuPy); the geometry on the host."""
        return self._paste(image, backend.array_module(image), **args)

    def _paste(
        self,
        image: Any,
        xp: Any,
        *,
        ratio: float,
        paste_x: float,
        paste_y: float,
        min_canvas_size: float,
        **_: Any,
    ) -> Any:
        h, w = image.shape[:2]
        out_h, out_w, y, x = paste_geometry(h, w, ratio, paste_x, paste_y, min_canvas_size)
        out = xp.empty((out_h, out_w, image.shape[2]), np.uint8)
        fill = xp.asarray(self._fill.reshape(1, 1, -1))
        fill_canvas(out, fill, xp)  # rows, not 3-byte pixels: 100x
        out[y : y + h, x : x + w] = image
        return out


def _check_paste(given: dict[str, Any]) -> None:
    fill, channels = given.get("fill_value"), given.get("n_channels", 3)
    if fill is not None and not isinstance(channels, int):
        return
    if fill is not None and len(fill) not in (1, channels):
        raise ValueError(
            f"argument 'fill_value' expects either a single value or a list of {channels} "
            f"elements (n_channels); {len(fill)} given"
        )


@described("an integer or a list of integers (one per channel)")
def _fill_ints(value: Any) -> tuple[int, ...]:
    return to_ints()(value)


register(
    OperatorSchema(
        name="paste",
        class_name="Paste",
        impl=Paste,
        validate=_check_paste,
        accepts=[
            movable(
                InputSpec(
                    "a uint8 image with layout HWC",
                    kinds=("image",),
                    ndims=(3,),
                    layouts=("HWC",),
                    hints=GEOMETRIC,
                )
            )
        ],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Pastes each image on a larger canvas of ``ratio`` times its size (at least "
            "``min_canvas_size`` a side) at the normalized position ``paste_x``/``paste_y``, "
            "filling the rest with ``fill_value``, as DALI's ``fn.paste`` (sizes and positions "
            "truncated). uint8 HWC images with ``n_channels`` channels. Example: "
            "``fn.paste(images, ratio=fn.random.uniform(range=(1, 2)), fill_value=(118, 185, 0))`` "
            "(zoom-out augmentation). Moves masks, boxes, keypoints and labels with the images "
            "when given with them as input sets (``fn.paste([images, masks, boxes, labels], "
            "...)``: masks on a canvas of class 0 whatever ``fill_value`` is)."
        ),
        args=[
            Arg("ratio", "canvas size / image size (>= 1)", REQUIRED, to_float(), True),
            Arg(
                "fill_value",
                "the canvas colour: one int, or one per channel (taken modulo 256, as DALI)",
                REQUIRED,
                _fill_ints,
            ),
            Arg("n_channels", "the number of channels of the images", 3, to_int(1, 1024)),
            Arg("paste_x", "horizontal position of the image (0..1)", 0.5, to_float(), True),
            Arg("paste_y", "vertical position of the image (0..1)", 0.5, to_float(), True),
            Arg(
                "min_canvas_size",
                "the least canvas extent, after scaling by ratio",
                0.0,
                to_float(),
                True,
            ),
        ],
    )
)

# --- fn.multi_paste --------------------------------------------------------------------------

_MP_TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int16, np.int32, np.float32))

# multi_paste's inputs: images (or tensors of unknown kind); masks, boxes... are refused at
# build: its regions come from several images, no one transform moves them.
_MP_NOT_MOVED = (
    "multi_paste does not move {kind}: each output is pasted from regions of several images, "
    "so no one transform takes the {kind} along (fn.paste, fn.crop, fn.slice... move them: "
    "fn.paste([images, {kind}], ...)); paste a mask's regions as pixels by giving it as an "
    "image: fn.python_function(masks, function=lambda m: m, kind='image')"
)
_MP_IMAGES = InputSpec(
    "images with layout HWC (2-D data with channels)",
    kinds=("image",),
    hints={
        **GEOMETRIC,
        **{
            k: _MP_NOT_MOVED.format(kind="masks" if k == "mask" else k)
            for k in TARGET_KINDS
            if k != "labels"
        },
    },
)


def _coords(kind: str) -> Any:
    """A converter of an (n, 2) coordinate array (ints, or floats for the relative ones)."""

    @described(f"an (number of regions) x 2 array of {kind}")
    def convert(value: Any) -> tuple[tuple[float, ...], ...]:
        arr = np.asarray(value)
        if arr.dtype == object or arr.dtype.kind not in "iuf" or (arr.size and arr.ndim > 2):
            raise TypeError(f"expected an (n, 2) array of {kind}, got {value!r}")
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            raise ValueError("expected finite numbers")
        if kind == "integers" and not (arr == np.round(arr)).all():
            raise TypeError(f"expected integers, got {value!r}")
        if arr.ndim < 2:
            arr = arr.reshape(-1, 2) if arr.size % 2 == 0 else arr.reshape(1, -1)
        cast = int if kind == "integers" else float
        return tuple(tuple(cast(v) for v in row) for row in arr)

    return convert


@described("an integer or a list of integers (sample indices)")
def _ids(value: Any) -> tuple[int, ...]:
    arr = np.asarray(value)
    if arr.size == 0:
        return ()
    return to_ints()(arr.reshape(-1))


def _regions(args: dict[str, Any], name: str, rel: str, count: int) -> Any:
    absolute, relative = args.get(name), args.get(rel)
    if absolute is not None and relative is not None:
        raise ValueError(f"The `{name}` and `{rel}` cannot be specified together")
    given, which = (absolute, name) if absolute is not None else (relative, rel)
    if given is None:
        return None, which
    if len(given) != count or any(len(row) != 2 for row in given):
        raise ValueError(
            f"unexpected shape for argument `{which}`: it should be a 2-D array of shape "
            f"(number of pasted regions, 2) = ({count}, 2), got {len(given)} rows"
        )
    if which == rel:
        for row in given:
            for v in row:
                if not 0.0 <= v <= 1.0:
                    raise ValueError(f"the `{rel}` must be floats in [0, 1] range, got {v}")
    return given, which


class MultiPaste(SampleOperator):
    moves_geometry = True
    """It moves pixels: regions pasted to other places (``OperatorImpl.moves_geometry``)."""

    def chainable(self) -> bool:
        return False  # in_ids pick any sample of the batch

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim != 3:
            raise ValueError(
                f"multi_paste supports 2-D data with channels (HWC) only, got a sample of shape "
                f"{sample.shape}"
            )
        if sample.dtype not in _MP_TYPES:
            raise ValueError(
                f"multi_paste: unsupported input type {sample.dtype.name}; supported: uint8, "
                f"int16, int32, float32"
            )

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"batches": [batch.samples for batch in inputs]}

    def cpu(
        self,
        *samples: np.ndarray,
        batches: list[list[np.ndarray]],
        in_ids: Sequence[int] | None,
        output_size: Sequence[int] | None,
        dtype: Any,
        into: np.ndarray | None = None,
        **args: Any,
    ) -> np.ndarray:
        """One output sample; ``into`` (from the batch kernel): the array to paint it in
        (zeroed here as needed), used when it has the output's shape and type (else a new
        one is made)."""
        if in_ids is not None:
            if len(batches) != 1:
                raise ValueError(
                    f"if `in_ids` is specified, the operator accepts exactly one input batch; "
                    f"got {len(batches)} inputs"
                )
            n = len(batches[0])
            for k in in_ids:
                if not 0 <= k < n:
                    raise ValueError(
                        f"the `in_ids` must be in range [0, {n - 1}] (the batch size is {n}), "
                        f"got {k}"
                    )
            sources = [batches[0][k] for k in in_ids]
        else:
            sources = list(samples)
        types_in = {s.dtype for batch in batches for s in batch}
        if len(types_in) > 1:
            raise ValueError(
                f"all inputs must have the same type, got {sorted(map(str, types_in))}"
            )
        in_dtype = samples[0].dtype
        out_dtype = in_dtype if dtype is None else np.dtype(dtype.numpy)
        if out_dtype not in _MP_TYPES:
            raise ValueError(
                f"multi_paste: unsupported output type {out_dtype.name}; supported: uint8, "
                f"int16, int32, float32"
            )
        if output_size is not None:
            if len(output_size) < 2:
                raise ValueError(f"the `output_size` should be (H, W), got {tuple(output_size)}")
            if output_size[0] < 0 or output_size[1] < 0:
                raise ValueError(f"the `output_size` must be non-negative, got {output_size}")
            canvas = (int(output_size[0]), int(output_size[1]))
        else:
            ref = batches[0][0].shape[:2]
            for batch in batches:
                for s in batch:
                    if s.shape[:2] != ref:
                        raise ValueError(
                            f"if the `output_size` is not specified, all the input samples must "
                            f"have the same shape; got {ref} and {s.shape[:2]}"
                        )
            canvas = ref
        channels = {s.shape[2] for s in sources}
        if len(channels) > 1:
            raise ValueError(
                f"all regions pasted into one output sample must have the same number of "
                f"channels, got {sorted(channels)}"
            )
        c = channels.pop() if channels else samples[0].shape[2]
        if canvas[0] * canvas[1] * c > _MAX_CANVAS:
            raise ValueError(f"the output size {canvas} is too large")
        count = len(sources)
        in_anchors, in_which = _regions(args, "in_anchors", "in_anchors_rel", count)
        shapes, shape_which = _regions(args, "shapes", "shapes_rel", count)
        out_anchors, out_which = _regions(args, "out_anchors", "out_anchors_rel", count)
        pastes = []  # (source region, output region), checked, in order
        for j, src in enumerate(sources):
            extent = src.shape[:2]
            anchor = [0, 0]
            if in_anchors is not None:
                anchor = [
                    int(v) if in_which == "in_anchors" else math.floor(_f32(e) * _f32(v))
                    for v, e in zip(in_anchors[j], extent, strict=True)
                ]
            if shapes is not None:
                size = [
                    int(v) if shape_which == "shapes" else math.ceil(_f32(e) * _f32(v))
                    for v, e in zip(shapes[j], extent, strict=True)
                ]
            else:
                size = [e - a for e, a in zip(extent, anchor, strict=True)]
            at = [0, 0]
            if out_anchors is not None:
                at = [
                    int(v) if out_which == "out_anchors" else math.floor(_f32(e) * _f32(v))
                    for v, e in zip(out_anchors[j], canvas, strict=True)
                ]
            for k in range(2):
                if not (anchor[k] >= 0 and size[k] >= 0 and anchor[k] + size[k] <= extent[k]):
                    raise ValueError(
                        f"the pasted region must be within the input sample: input anchor "
                        f"{tuple(anchor)}, region shape {tuple(size)}, input shape "
                        f"{tuple(extent)}, for the region at index {j}"
                    )
                if not (at[k] >= 0 and at[k] + size[k] <= canvas[k]):
                    raise ValueError(
                        f"the pasted region must be within output bounds: output anchor "
                        f"{tuple(at)}, region shape {tuple(size)}, output shape {canvas}, for "
                        f"the region at index {j}"
                    )
            region = src[anchor[0] : anchor[0] + size[0], anchor[1] : anchor[1] + size[1]]
            pastes.append((region, at, size))
        # A region that covers the whole canvas hides the zeros and every region before it.
        whole = [
            j for j, (_, at, size) in enumerate(pastes) if at == [0, 0] and tuple(size) == canvas
        ]
        if whole:
            pastes = pastes[whole[-1] :]
        if into is not None and into.shape == (*canvas, c) and into.dtype == out_dtype:
            out = into
            if not whole:
                out[...] = 0
        else:
            out = (np.empty if whole else np.zeros)((*canvas, c), out_dtype)
        for region, at, size in pastes:
            out[at[0] : at[0] + size[0], at[1] : at[1] + size[1]] = convert_sat(
                region, out_dtype, np
            )
        return out

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return inputs[0].layout() if inputs else "HWC"

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """The per-sample kernel, run on the rows of one output array for the batch, with
        the argument inputs converted in bulk (integer arrays of (regions, 2), ids): the
        per-sample conversion of every value to Python numbers was most of the operator's
        time. It declines (``None``: the per-sample path runs and names what is wrong) when a
        value is not of the plain kinds, the canvases would differ, or a sample fails."""
        n = len(inputs[0]) if inputs else 0
        batches = [batch.samples for batch in inputs]
        if n < 2 or any(not isinstance(s, np.ndarray) for b in batches for s in b):
            return None
        first = batches[0][0]
        try:
            for k, (b, batch) in enumerate(zip(batches, inputs, strict=True)):
                for s in b:
                    self.check_input(k, s, batch.layout())
        except ValueError:
            return None
        columns = {}
        for key, batch in arg_inputs.items():
            convert = _FAST.get(key)
            if convert is None:
                return None
            values = [convert(v) if isinstance(v, np.ndarray) else None for v in batch.samples]
            if any(v is None for v in values):
                return None
            columns[key] = values
        size = self.args["output_size"]
        if size is None:
            shapes = {s.shape[:2] for b in batches for s in b}
            if len(shapes) != 1:
                return None
            canvas = shapes.pop()
        elif len(size) >= 2 and size[0] >= 0 and size[1] >= 0:
            canvas = (int(size[0]), int(size[1]))
        else:
            return None
        if len({s.shape[2] for b in batches for s in b}) != 1:
            return None
        dtype = self.args["dtype"]
        out_dtype = first.dtype if dtype is None else np.dtype(dtype.numpy)
        if out_dtype not in _MP_TYPES or canvas[0] * canvas[1] * first.shape[2] > _MAX_CANVAS:
            return None
        out = np.empty((n, *canvas, first.shape[2]), out_dtype)  # the kernel zeroes a row
        plan = self._plan(batches, arg_inputs, canvas)
        if plan is not None:
            ids, anchor, size, at, start = plan
            sources = batches[0]

            def paint(i: int) -> None:
                if start[i] < 0:
                    out[i] = 0
                for k, (y, x), (h, w), (oy, ox) in list(
                    zip(ids[i], anchor[i], size[i], at[i], strict=True)
                )[max(start[i], 0) :]:
                    out[i, oy : oy + h, ox : ox + w] = convert_sat(
                        sources[k][y : y + h, x : x + w], out_dtype, np
                    )

            ctx.map(paint, n)
            return [self.dense_output(out, inputs)]

        def one(i: int) -> bool:
            args = {**self.args, **{key: values[i] for key, values in columns.items()}}
            row = out[i]
            try:
                return self.cpu(*[b[i] for b in batches], batches=batches, into=row, **args) is row
            except Exception:
                return False

        if not all(ctx.map(one, n)):
            return None
        return [self.dense_output(out, inputs)]

    def _plan(
        self, batches: list[list[np.ndarray]], arg_inputs: dict[str, TensorList], canvas: tuple
    ) -> tuple[list, list, list, list, list] | None:
        """The regions of every output at once, for the common case: one input of samples of
        one shape, ``in_ids``, absolute integer regions, as many per output (arrays of (n,
        regions, ...)), all within bounds: per output, its ids, input anchors, sizes, output
        anchors (as lists) and the last region that covers the whole canvas (-1: none); what
        the per-sample kernel works out region by region. ``None`` for anything else."""
        args = self.args
        if len(batches) != 1 or any(args[k] is not None for k in _RELATIVE):
            return None
        if any(k in arg_inputs for k in _RELATIVE) or "output_size" in arg_inputs:
            return None
        samples = batches[0]
        n = len(samples)
        if len({s.shape for s in samples}) != 1 or len({s.dtype for s in samples}) != 1:
            return None
        columns = {}
        for key, ndim in (("in_ids", 1), ("in_anchors", 2), ("shapes", 2), ("out_anchors", 2)):
            if key in arg_inputs:
                values = arg_inputs[key].samples
                if any(
                    not isinstance(v, np.ndarray)
                    or v.dtype.kind not in "iu"
                    or v.dtype == np.uint64
                    or v.ndim != ndim
                    or v.shape != values[0].shape
                    for v in values
                ):
                    return None
                column = np.stack(values).astype(np.int64)
            elif args[key] is not None:
                column = np.asarray(args[key], np.int64)[None]
            else:
                column = None
            columns[key] = column
        ids = columns["in_ids"]
        if ids is None or ids.ndim != 2:
            return None
        count = ids.shape[1]
        ids = np.broadcast_to(ids, (n, count))
        extent = np.array(samples[0].shape[:2], np.int64)
        bounds = np.array(canvas, np.int64)
        coords = {}
        for key in ("in_anchors", "shapes", "out_anchors"):
            column = columns[key]
            if column is not None:
                if column.ndim != 3 or column.shape[1:] != (count, 2):
                    return None
                column = np.broadcast_to(column, (n, count, 2))
            coords[key] = column
        zeros = np.zeros((n, count, 2), np.int64)
        anchor = coords["in_anchors"] if coords["in_anchors"] is not None else zeros
        size = coords["shapes"] if coords["shapes"] is not None else extent - anchor
        at = coords["out_anchors"] if coords["out_anchors"] is not None else zeros
        inside = (anchor >= 0) & (size >= 0) & (anchor + size <= extent)
        inside &= (at >= 0) & (at + size <= bounds)
        if not inside.all() or not ((ids >= 0) & (ids < n)).all():
            return None  # the per-sample kernel names the region
        whole = (at == 0).all(axis=2) & (size == bounds).all(axis=2)  # (n, count)
        last = np.where(whole, np.arange(count), -1).max(axis=1, initial=-1)
        return ids.tolist(), anchor.tolist(), size.tolist(), at.tolist(), last.tolist()


_RELATIVE = ("in_anchors_rel", "shapes_rel", "out_anchors_rel")


def _fast_ints(value: Any) -> list[list[int]] | None:
    """An integer (regions, 2) array as ``_coords("integers")`` gives it (as lists), or None."""
    if value.dtype.kind not in "iu" or value.ndim != 2 or value.shape[1] != 2:
        return None
    return value.tolist()


def _fast_rel(value: Any) -> list[list[float]] | None:
    """A finite float (regions, 2) array as ``_coords("numbers")`` gives it, or None."""
    if value.dtype.kind != "f" or value.ndim != 2 or value.shape[1] != 2:
        return None
    value = value.astype(np.float64)
    return value.tolist() if np.isfinite(value).all() else None


def _fast_ids(value: Any) -> list[int] | None:
    """Integer sample ids as ``_ids`` gives them (within int64: out of range ids fail in the
    kernel), or None."""
    if value.dtype.kind not in "iu" or value.ndim > 1 or value.dtype == np.uint64:
        return None
    return value.reshape(-1).tolist()


_FAST = {
    "in_ids": _fast_ids,
    "in_anchors": _fast_ints,
    "shapes": _fast_ints,
    "out_anchors": _fast_ints,
    "in_anchors_rel": _fast_rel,
    "shapes_rel": _fast_rel,
    "out_anchors_rel": _fast_rel,
}


register(
    OperatorSchema(
        name="multi_paste",
        class_name="MultiPaste",
        impl=MultiPaste,
        min_inputs=1,
        max_inputs=64,
        accepts=[_MP_IMAGES] * 64,
        output_kinds=keeps_kind,
        doc=(
            "Pastes regions of images onto a canvas per output sample, as DALI's "
            "``fn.multi_paste``: with ``in_ids`` (one input), output ``i`` gets regions of the "
            "input samples ``in_ids[i]``; without it, one region of sample ``i`` of each input. "
            "Regions are given by ``in_anchors``/``in_anchors_rel``, ``shapes``/``shapes_rel`` "
            "and ``out_anchors``/``out_anchors_rel`` ((regions) x 2 arrays of (H, W) per "
            "sample); later regions overwrite earlier ones on a zero canvas of ``output_size`` "
            "(default: the inputs' common shape). ``dtype`` converts with saturation. Example "
            "(mosaic / cut-mix): ``fn.multi_paste(images, in_ids=ids, output_size=(256, 256), "
            "shapes=shapes, out_anchors=anchors)``. Moves no masks, boxes or keypoints (each "
            "output comes from several images): they are refused when the pipeline is built."
        ),
        args=[
            Arg("in_ids", "indices of the input samples to paste, per output", None, _ids, True),
            Arg(
                "output_size",
                "the canvas (H, W) (default: the inputs' shape)",
                None,
                to_ints(),
                True,
            ),
            Arg(
                "in_anchors",
                "(H, W) of each region's corner in its input",
                None,
                _coords("integers"),
                True,
            ),
            Arg(
                "in_anchors_rel",
                "in_anchors as fractions of the input's extent (floored)",
                None,
                _coords("numbers"),
                True,
            ),
            Arg("shapes", "(H, W) of each region", None, _coords("integers"), True),
            Arg(
                "shapes_rel",
                "shapes as fractions of the input's extent (rounded up)",
                None,
                _coords("numbers"),
                True,
            ),
            Arg(
                "out_anchors",
                "(H, W) of each region's corner on the canvas",
                None,
                _coords("integers"),
                True,
            ),
            Arg(
                "out_anchors_rel",
                "out_anchors as fractions of the canvas (floored)",
                None,
                _coords("numbers"),
                True,
            ),
            Arg(
                "dtype",
                "output type: uint8, int16, int32 or float (default: the input's)",
                None,
                to_dtype,
            ),
        ],
    )
)
