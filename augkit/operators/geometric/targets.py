"""One random draw, every kind: how the geometric operators move masks, boxes, keypoints and
polygons with the same per-sample parameters as their images.

A geometric operator (flip, rotate, warp_affine, resize, crop, slice, paste, pad,
random_resized_crop, crop_mirror_normalize, experimental.warp_perspective) derives from
``MovesTargets`` and writes one method beside its image kernel:

    geometry(shape, layout, args, rng, extra) -> Geometry

the per-sample transform of an image of ``shape``: a 3×3 matrix taking *continuous* input
coordinates (x, y) to output coordinates (pixel (i, j) covers [j, j + 1) × [i, i + 1); a pixel's
centre is (j + 0.5, i + 0.5), as in DALI's warps) and the output's (width, height). ``args`` are
the sample's arguments, exactly what the image kernel gets (``batch_args`` included); ``rng`` is
the sample's generator for an operator that draws (``random = True``), and ``geometry`` must draw
from it exactly as the image kernel does, so that the image and its targets get one window.
Everything else is here, written once:

- **Masks** (kind ``mask``: a label map, H×W or H×W×1, any integer or bool type) are warped by
  the nearest neighbour from the same matrix: each output pixel centre maps back to the input
  pixel that contains it; outside the input, class 0. Never interpolated, never antialiased, the
  dtype and the label values kept. Crops, flips, pads and resizes (matrices without rotation)
  take one gather per axis; rotations and warps a gather per pixel. A mask must have its image's
  height and width (checked when the image is in the same call).
- **Boxes** (kind ``boxes``: N×4, ltrb or xywh, relative or absolute, as the kind says) are
  moved by their four corners; the new box is the corners' bounding box (a rotated box grows to
  the axis-aligned box around it, as in DALI's ``bbox_rotate`` with ``mode="expand"``), then
  clipped to the output image. **The documented rule: a box with no area left inside the output
  image is dropped, and so is its label** (the row of every ``labels`` input of the same call).
  Boxes keep their format, dtype and relative/absolute.
- **Keypoints** and **vertices** (N×2 (x, y)) are moved point by point and never dropped: a
  point that leaves the image keeps its (outside) coordinates, so that keypoints keep their
  order and count (a skeleton's joint k stays joint k). Vertices are relative when their kind
  says so (``readers.coco(ratio=True)``), else absolute.
- **Polygons** ([mask_idx, start_vertex, end_vertex] rows) index vertices, which move; they
  pass through unchanged.
- **Labels** travel with boxes: in a call with a ``boxes`` input set they are filtered with the
  boxes' rule; without one they pass through (a reader's per-image label). A labels input in a
  call without any other input set is refused: there is nothing to follow.

Which image a target belongs to: DALI's multiple input sets. ``fn.rotate([images, masks,
boxes, labels], angle=a)`` makes one node per input set, sharing one seed (so an operator's own
draws, random_resized_crop's window, are the same), and augkit gives each node the *other* sets'
first inputs as hidden trailing inputs, its **companions** (``OperatorNode.companions``): a boxes
node finds its image there (the first companion of kind image, else mask, else a generic one
with two or more dimensions), and a labels node its boxes. Relative boxes and keypoints need no
image where the transform does not depend on the size (a flip); an absolute box, a resize or a
crop does, and without the image in the call the error says to use the input-set form.

The kernels of the image path are unchanged: an image node without companions whose inputs the
build knows to be images (or generic) still runs in chains, sample by sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit import backend
from augkit.calls import SampleCall
from augkit.kinds import Kind
from augkit.operators.base import Given, Kernel, SampleOperator
from augkit.operators.registry import TARGET_KINDS, InputSpec
from augkit.tensors import TensorList

_PIXEL_KINDS = ("image", "generic")


def movable(image: InputSpec, kinds: Sequence[str] = TARGET_KINDS) -> InputSpec:
    """What a geometric operator accepts: an image as ``image`` says (its kinds, numbers of
    dimensions and layouts), or a target of ``kinds`` (labels of 1 or more dimensions, the
    others of 2 or more)."""
    hints = {k: v for k, v in image.hints.items() if k not in kinds}
    return InputSpec(
        f"{image.what}, or {', '.join(kinds)} to move with it",
        kinds=(*(image.kinds or ("image",)), *kinds),
        ndims=image.ndims,
        min_ndim=image.min_ndim,
        layouts=image.layouts,
        hints=hints,
        min_ndims={k: 1 if k == "labels" else 2 for k in kinds},
    )


@dataclass(frozen=True)
class Geometry:
    """The per-sample transform of a geometric operator (see the module docstring).

    Attributes:
        matrix: 3×3, continuous input (x, y, 1) -> output (x, y, w) (divide by w: a
            perspective warp; the last row is (0, 0, 1) for every affine operator).
        in_size: the input's (width, height).
        out_size: the output's (width, height).
    """

    matrix: np.ndarray
    in_size: tuple[int, int]
    out_size: tuple[int, int]

    @staticmethod
    def affine(matrix: Any, in_size: tuple[int, int], out_size: tuple[int, int]) -> Geometry:
        """From a 2×3 (or 3×3) input -> output matrix."""
        m = np.eye(3)
        a = np.asarray(matrix, np.float64)
        m[: a.shape[0], :3] = a[:, :3]
        return Geometry(m, (int(in_size[0]), int(in_size[1])), (int(out_size[0]), int(out_size[1])))

    @staticmethod
    def inverse_of(
        dst_to_src: Any, in_size: tuple[int, int], out_size: tuple[int, int]
    ) -> Geometry:
        """From a destination -> source matrix (what warp kernels sample with)."""
        m = np.eye(3)
        a = np.asarray(dst_to_src, np.float64)
        m[: a.shape[0], :3] = a[:, :3]
        return Geometry.affine(np.linalg.inv(m), in_size, out_size)

    @staticmethod
    def scale_translate(
        sx: float,
        sy: float,
        tx: float,
        ty: float,
        in_size: tuple[int, int],
        out_size: tuple[int, int],
    ) -> Geometry:
        """x' = sx * x + tx, y' = sy * y + ty (crops, flips, pads, resizes)."""
        return Geometry.affine([[sx, 0.0, tx], [0.0, sy, ty]], in_size, out_size)

    def then(self, other: Geometry) -> Geometry:
        """This transform followed by ``other`` (whose input is this one's output)."""
        return Geometry(other.matrix @ self.matrix, self.in_size, other.out_size)

    @property
    def separable(self) -> bool:
        """x' depends on x only and y' on y only (no rotation, shear or perspective)."""
        m = self.matrix
        return m[0, 1] == 0 and m[1, 0] == 0 and m[2, 0] == 0 and m[2, 1] == 0


def image_size(shape: Sequence[int], layout: str) -> tuple[int, int]:
    """(width, height) of a sample of ``shape`` with ``layout`` ("" : HW or HWC)."""
    if layout and "H" in layout and "W" in layout:
        return int(shape[layout.index("W")]), int(shape[layout.index("H")])
    return int(shape[1]), int(shape[0])


# --- moving each kind ------------------------------------------------------------------------
def move_points(points: np.ndarray, geometry: Geometry, relative: bool) -> np.ndarray:
    """(N, 2) (x, y) points through ``geometry`` (relative: fractions of the sizes)."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    if relative:
        p = p * geometry.in_size
    h = np.concatenate([p, np.ones((len(p), 1))], axis=1) @ geometry.matrix.T
    with np.errstate(divide="ignore", invalid="ignore"):
        out = h[:, :2] / h[:, 2:3]
    if relative:
        out = out / geometry.out_size
    return out


def move_boxes(boxes: np.ndarray, kind: Kind, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """Boxes through ``geometry``: (the kept boxes, in the input's format and dtype; a bool
    mask of the boxes kept). See the module docstring for the rule."""
    b = np.asarray(boxes, np.float64)
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"boxes must be N×4 (one row per box), got shape {tuple(np.shape(boxes))}")
    if kind.box_format == "xywh":
        b = np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1)
    if kind.relative:
        b = b * np.tile(geometry.in_size, 2)
    left, top, right, bottom = b.T
    corners = np.stack(
        [
            np.stack([left, top], 1),
            np.stack([right, top], 1),
            np.stack([left, bottom], 1),
            np.stack([right, bottom], 1),
        ],
        axis=1,
    ).reshape(-1, 2)
    moved = move_points(corners, geometry, relative=False).reshape(-1, 4, 2)
    width, height = geometry.out_size
    lo = np.clip(moved.min(axis=1), 0, [width, height])
    hi = np.clip(moved.max(axis=1), 0, [width, height])
    # A box whose edge lies on the window's edge must not survive as a float32 sliver (its
    # relative form would, its absolute twin would not).
    eps = 1e-5 * max(width, height, *geometry.in_size, 1)
    keep = (hi[:, 0] - lo[:, 0] > eps) & (hi[:, 1] - lo[:, 1] > eps)
    out = np.concatenate([lo, hi], axis=1)[keep]
    if kind.relative:
        out = out / np.tile(geometry.out_size, 2)
    if kind.box_format == "xywh":
        out = np.concatenate([out[:, :2], out[:, 2:] - out[:, :2]], axis=1)
    dtype = boxes.dtype if np.issubdtype(boxes.dtype, np.floating) else np.float32
    return out.astype(dtype), keep


def warp_mask(mask: np.ndarray, layout: str, geometry: Geometry) -> np.ndarray:
    """A label map through ``geometry`` by the nearest neighbour (class 0 outside)."""
    hw = mask if mask.ndim == 2 else None
    if hw is None:
        if mask.ndim != 3:
            raise ValueError(
                f"a mask must be H×W or H×W×C (a label map), got shape {tuple(mask.shape)}"
            )
        hw = mask if not layout or layout == "HWC" else None
        if hw is None:
            raise ValueError(f'a mask must have layout "HW" or "HWC", got "{layout}"')
    height_in, width_in = mask.shape[:2]
    width, height = geometry.out_size
    inverse = np.linalg.inv(geometry.matrix)
    fill = np.zeros((), mask.dtype)
    if geometry.separable:
        x_axis = _nearest_axis(width, width_in, inverse[0, 0], inverse[0, 2])
        y_axis = _nearest_axis(height, height_in, inverse[1, 1], inverse[1, 2])
        covered = (
            x_axis is not None
            and y_axis is not None
            and (x_axis[0].stop - x_axis[0].start, y_axis[0].stop - y_axis[0].start)
            == (width, height)
        )
        shape = (height, width, *mask.shape[2:])
        out = np.empty(shape, mask.dtype) if covered else np.full(shape, fill, mask.dtype)
        if x_axis is not None and y_axis is not None:
            (out_x, in_x), (out_y, in_y) = x_axis, y_axis
            if isinstance(in_x, slice) and isinstance(in_y, slice):
                out[out_y, out_x] = _sliced(mask, in_y, in_x)  # a shift, flip or whole step
            else:
                out[out_y, out_x] = mask[in_y][:, in_x]
        return out
    fast = _warp_nearest(mask, inverse, width, height)
    if fast is not None:
        return fast
    gx, gy = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    h = inverse @ np.stack([gx.ravel(), gy.ravel(), np.ones(gx.size)])
    with np.errstate(divide="ignore", invalid="ignore"):
        sx = np.floor(h[0] / h[2])
        sy = np.floor(h[1] / h[2])
    valid = (sx >= 0) & (sx < width_in) & (sy >= 0) & (sy < height_in)
    out = np.full((height * width, *mask.shape[2:]), fill, mask.dtype)
    out[valid] = mask[sy[valid].astype(np.int64), sx[valid].astype(np.int64)]
    return out.reshape(height, width, *mask.shape[2:])


def _nearest_axis(
    n_out: int, n_in: int, scale: float, shift: float
) -> tuple[slice, slice | np.ndarray] | None:
    """One axis of a separable nearest-neighbour warp: (the output range that falls inside the
    input, the input positions it reads: a slice where they step evenly, as a shift, a flip or
    a whole-number downscale do, else an index array); ``None`` when nothing falls inside."""
    idx = np.floor((np.arange(n_out) + 0.5) * scale + shift).astype(np.int64)
    valid = np.flatnonzero((idx >= 0) & (idx < n_in))
    if len(valid) == 0:
        return None
    lo, hi = int(valid[0]), int(valid[-1]) + 1  # contiguous: idx is monotone
    src = idx[lo:hi]
    step = int(src[1] - src[0]) if len(src) > 1 else 1
    if step != 0 and (len(src) < 3 or bool(np.all(np.diff(src) == step))):
        stop = int(src[-1]) + step
        return slice(lo, hi), slice(int(src[0]), stop if stop >= 0 else None, step)
    return slice(lo, hi), src


def _sliced(mask: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """``mask[rows, cols]``, with a flip (a step of -1) done by ``cv2.flip``: NumPy copies a
    negative-stride view element by element, ~10x slower."""
    flips = [s.step == -1 for s in (rows, cols)]
    plane = mask if mask.ndim == 2 else (mask[..., 0] if mask.shape[2] == 1 else None)
    if not any(flips) or plane is None or mask.dtype not in _CV2_WARP_TYPES:
        return mask[rows, cols]

    def forward(s: slice) -> slice:
        if s.step != -1:
            return s
        stop = -1 if s.stop is None else s.stop
        return slice(stop + 1, s.start + 1, 1)

    region = plane[forward(rows), forward(cols)]
    code = -1 if all(flips) else (0 if flips[0] else 1)
    flipped = backend.opencv().flip(region, code)
    return flipped if mask.ndim == 2 else flipped[..., None]


# What cv2.warpAffine / warpPerspective take (4 channels at most).
_CV2_WARP_TYPES = {np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32, np.float64)}


def _warp_nearest(
    mask: np.ndarray, inverse: np.ndarray, width: int, height: int
) -> np.ndarray | None:
    """The per-pixel nearest-neighbour warp with OpenCV (5-10x NumPy's gather): its nearest
    is ``floor(v + 0.5)`` of the source point in pixel-centre coordinates, which is NumPy's
    ``floor`` of the continuous point, up to OpenCV's fixed-point rounding (1/1024 px): only
    points within that of a pixel edge can pick the neighbour. ``None`` where OpenCV does not
    apply (int32, bool, more than 4 channels, sizes past its limits)."""
    channels = mask.shape[2] if mask.ndim == 3 else 1
    if mask.dtype not in _CV2_WARP_TYPES or channels > 4 or 0 in mask.shape:
        return None
    if max(*mask.shape[:2], width, height) >= 32767:
        return None

    cv2 = backend.opencv()
    half = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
    back = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])
    matrix = back @ inverse @ half  # output pixel index -> input pixel-centre coordinates
    plane = mask[..., 0] if mask.ndim == 3 and channels == 1 else mask
    flags = cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP
    border = {"borderMode": cv2.BORDER_CONSTANT, "borderValue": 0}
    if np.allclose(matrix[2], [0.0, 0.0, 1.0], rtol=0, atol=0):
        out = cv2.warpAffine(plane, matrix[:2], (width, height), flags=flags, **border)
    else:
        out = cv2.warpPerspective(plane, matrix, (width, height), flags=flags, **border)
    return out.reshape(height, width, *mask.shape[2:])


# --- the operator side -----------------------------------------------------------------------
def _shapes_on_host(batch: TensorList) -> TensorList:
    """A companion of targets moved on the host (the GPU entries of the table): images by
    their shape and dtype only (read-only zero-byte NumPy stand-ins: the geometry reads no
    pixel), other targets (boxes, whose kept rows labels follow) copied to the host."""
    if batch.device == "cpu":
        return batch
    if batch.kind.name not in _PIXEL_KINDS:
        return batch.as_cpu()
    samples = [np.broadcast_to(np.zeros((), s.dtype), s.shape) for s in batch.samples]
    return TensorList(samples, batch.layout(), batch.sources, kind=batch.kind)


def _on_host(rule: Kernel) -> Kernel:
    """The GPU entry of a target rule: targets are a few numbers per sample, moved on the host
    as on the CPU (the same code, the same results), then put back on the GPU. The images
    they travel with are read for their shapes only: zero-byte stand-ins, never a copy of the
    pixels."""

    def on_host(impl: Any, ctx: Any, given: Given) -> list[TensorList]:
        host = Given(
            [t.as_cpu() for t in given.inputs],
            [_shapes_on_host(c) for c in given.companions],
            given.arg_inputs,
            given.kind,
        )
        return [t.as_gpu(ctx.device_id or 0) for t in rule(impl, ctx, host)]

    on_host.__doc__ = f"{rule.__name__}, on the host, for targets on the GPU."
    on_host.__name__ = f"{rule.__name__}_on_host"
    return on_host


class MovesTargets(SampleOperator):
    """A geometric operator that moves masks, boxes, keypoints, polygons and labels with its
    images (see the module docstring). Subclasses write ``geometry``; put this class first
    among the bases (``class Flip(MovesTargets, ImageOperator)``). Its kernel table adds the
    target rules (``TARGET_RULES``) to the image kernels, on both devices."""

    moves_geometry = True

    @classmethod
    def kernel_table(cls) -> dict[tuple[str, str], Kernel]:
        table = super().kernel_table()
        devices = {device for device, _ in table}  # where the operator has image kernels
        for kind, rule in TARGET_RULES.items():
            if "cpu" in devices:
                table[("cpu", kind)] = rule
            if "gpu" in devices:
                table[("gpu", kind)] = _on_host(rule)
        return table

    def geometry(
        self,
        shape: Sequence[int],
        layout: str,
        args: dict[str, Any],
        rng: Any,
        extra: Sequence[Any] = (),
    ) -> Geometry:
        """The transform of sample ``i``'s image of ``shape`` (see the module docstring);
        ``extra``: the sample's other positional inputs (slice's anchor and shape,
        warp_affine's matrix), as the image kernel gets them."""
        raise NotImplementedError

    def geometry_needs_size(self) -> bool:
        """Whether the transform of relative coordinates depends on the image's size (a flip
        does not; a crop, a resize of absolute boxes or a rotation does). Default: it does."""
        return True

    def target_batch_args(self, inputs: Sequence[TensorList], kind: Kind) -> dict[str, Any]:
        """``batch_args`` when the node moves targets of ``kind``: ``inputs[0]`` is the image
        they belong to (or, without one, the mask itself). Default: the image's."""
        return self.batch_args(inputs)


# --- the target rules: the kernel table's entries for each target kind -------------------------
def _geometric_call(
    impl: MovesTargets,
    ctx: Any,
    given: Given,
    reference: TensorList | None,
    rule: Callable[..., Any],
    more: Sequence[TensorList] = (),
) -> list[TensorList]:
    """Target ``rule(sample, geometry, *more_samples)`` for each sample of the node's target
    (its first input), through one ``SampleCall``: the sample's arguments and generator are
    the image kernel's, so ``geometry`` draws the image's window. The call's inputs are the
    target, the node's other inputs (``extra``: checked by ``check_input``), the ``reference``
    image (for its shape and layout) and ``more`` (the boxes labels follow)."""
    data, extra = given.inputs[0], given.inputs[1:]
    if reference is None and (impl.geometry_needs_size() or not _relative(given.kind)):
        raise impl.fail(
            f"cannot move {given.kind} without the image they belong to (the transform depends "
            f"on its size): give both in one call, fn.{impl.schema.name}([images, "
            f"{given.kind.name}], ...), DALI's multiple input sets",
            None,
            given.inputs,
        )
    base = [reference, *extra] if reference is not None else given.inputs
    n = len(data)
    batch_args = impl.target_batch_args(base, given.kind) if n else {}
    ref_layout = reference.layout() if reference is not None else "HW"
    more_at = len(extra) + (reference is not None)  # where ``more`` starts in ``others``

    def kernel(sample: Any, *others: Any, rng: Any = None, **args: Any) -> Any:
        shape = others[len(extra)].shape if reference is not None else (1, 1)
        geo = impl.geometry(shape, ref_layout, args, rng, others[: len(extra)])
        return rule(np.asarray(sample), geo, *others[more_at:])

    inputs = [data, *extra, *([reference] if reference is not None else []), *more]
    call = SampleCall.of(
        impl,
        ctx,
        inputs,
        given.arg_inputs,
        kernel=kernel,
        batch_args=batch_args,
        checked=range(1, 1 + len(extra)),
    )
    columns = [x.samples for x in inputs]
    results = ctx.map(lambda i: call(i, [c[i] for c in columns]), n)
    out = TensorList([r[0] for r in results], data.layout(), data.sources)
    return [out] * impl.num_outputs


def move_masks(impl: MovesTargets, ctx: Any, given: Given) -> list[TensorList]:
    """Masks: warped by the nearest neighbour with the image's geometry (the image's layout:
    a CHW image's axes), else the mask's own."""
    masks = given.inputs[0]
    image = _first(given.companions, "image")
    if image is not None:
        _check_mask_sizes(impl, masks, image)
    layout = masks.layout()
    return _geometric_call(
        impl,
        ctx,
        given,
        image if image is not None else masks,
        lambda sample, geo: warp_mask(sample, layout, geo),
    )


def move_boxes_rule(impl: MovesTargets, ctx: Any, given: Given) -> list[TensorList]:
    """Boxes: by their corners, clipped; a box with no area left is dropped."""
    kind = given.kind
    return _geometric_call(
        impl,
        ctx,
        given,
        _reference(given.companions),
        lambda sample, geo: move_boxes(sample, kind, geo)[0],
    )


def move_keypoints(impl: MovesTargets, ctx: Any, given: Given) -> list[TensorList]:
    """Keypoints and vertices: point by point, never dropped."""
    relative = _relative(given.kind)

    def rule(points: np.ndarray, geo: Geometry) -> np.ndarray:
        moved = move_points(points, geo, relative)
        dtype = points.dtype if np.issubdtype(points.dtype, np.floating) else np.float32
        return moved.reshape(points.shape).astype(dtype)

    return _geometric_call(impl, ctx, given, _reference(given.companions), rule)


def move_labels(impl: MovesTargets, ctx: Any, given: Given) -> list[TensorList]:
    """Labels: filtered with their boxes (the boxes' rule); without boxes in the call they pass
    through; alone they are refused."""
    if not given.companions:
        raise impl.fail(
            "got labels alone; labels travel with their boxes: give them in one call "
            f"with the images and boxes (fn.{impl.schema.name}([images, boxes, "
            "labels], ...))",
            None,
            given.inputs,
        )
    boxes = _first(given.companions, "boxes")
    if boxes is None:
        return [given.inputs[0]] * impl.num_outputs
    box_kind = boxes.kind

    def rule(labels: np.ndarray, geo: Geometry, their_boxes: Any) -> np.ndarray:
        _, keep = move_boxes(np.asarray(their_boxes), box_kind, geo)
        if len(labels) != len(keep):
            raise ValueError(
                f"{len(labels)} labels for {len(keep)} boxes: labels that travel "
                f"with boxes need one label per box"
            )
        return labels[keep]

    return _geometric_call(impl, ctx, given, _reference(given.companions), rule, [boxes])


def pass_polygons(impl: MovesTargets, ctx: Any, given: Given) -> list[TensorList]:
    """Polygons: [mask_idx, start_vertex, end_vertex] rows index vertices, which move: they
    pass through unchanged."""
    return [given.inputs[0]] * impl.num_outputs


TARGET_RULES: dict[str, Kernel] = {
    "mask": move_masks,
    "boxes": move_boxes_rule,
    "keypoints": move_keypoints,
    "vertices": move_keypoints,
    "labels": move_labels,
    "polygons": pass_polygons,
}
"""The target kinds' entries of every geometric operator's kernel table (``MovesTargets``)."""


def _relative(kind: Kind) -> bool:
    return bool(kind.relative)


def _reference(companions: Sequence[TensorList]) -> TensorList | None:
    """The image a target belongs to, among the call's other input sets."""
    for wanted in ("image", "mask"):
        found = _first(companions, wanted)
        if found is not None:
            return found
    for batch in companions:
        if batch.kind.is_generic and len(batch) and np.ndim(batch.samples[0]) >= 2:
            return batch
    return None


def _first(batches: Sequence[TensorList], kind: str) -> TensorList | None:
    return next((b for b in batches if b.kind.name == kind), None)


def _check_mask_sizes(impl: MovesTargets, masks: TensorList, images: TensorList) -> None:
    for i in range(len(masks)):
        m = image_size(
            masks.samples[i].shape, masks.layout() if masks.samples[i].ndim == 3 else "HW"
        )
        im = image_size(images.samples[i].shape, images.layout())
        if m != im:
            raise impl.fail(
                f"the mask is {m[0]}×{m[1]} (width×height) but its image is {im[0]}×{im[1]}; a "
                f"mask must have its image's size to move with it (resize masks with "
                f"interp_type=types.INTERP_NN first)",
                i,
                [masks],
            )
