"""``fn.transpose``, ``fn.reshape``, ``fn.expand_dims`` and ``fn.squeeze``: operators that change
the shape and layout of generic tensors, and ``TensorOperator``, the base of the tensor family
(a per-sample kernel whose output layout depends on the arguments and the output's rank).

Decisions and traps (DALI 2.4, measured on its CPU backend):

- ``transpose``: output axis i is input axis ``perm[i]``; no ``perm`` reverses the axes. The
  layout is permuted too (``HWC`` with ``perm=[2, 0, 1]`` gives ``CHW``) unless
  ``transpose_layout=False`` (the input's layout is kept as it is); ``output_layout`` overrides
  both. The kernel copies (a contiguous result); swapping the first two axes (HWC -> WHC) is
  OpenCV's ``cv2.transpose`` on the pixels as opaque blocks (~25x NumPy's strided copy).
- ``reshape``: the new shape comes from ``shape`` (argument or the second input, int per
  sample; not both), or from ``rel_shape`` (``out[i] = round(in[src_dims[i] or i] * rel_shape[i])``,
  rounded half away from zero: 2.5 -> 3), or from ``src_dims`` alone (``-1`` inserts an extent
  1). One extent may be negative (``-1``, or any negative ``rel_shape``): it takes what the
  volume needs. A ``rel_shape`` shorter than the input gives fewer dimensions; a longer one
  only when its last entry is negative (a trailing dimension is added). The volume must stay
  the same. The layout: ``layout`` when given (``""`` clears it), else the input's when the
  number of dimensions is kept, else none. With ``src_dims`` and a changed number of
  dimensions, DALI 2.4's pipeline itself fails ("Unexpected layout of output 0"); augkit gives
  an empty layout. Giving none of shape, rel_shape, src_dims and layout is an error in DALI ("is
  no-op"); augkit passes the data through (an ``ops`` object may get its arguments at the
  call, so no single call can tell). The output is a view of the input (no copy), as in DALI.
- ``expand_dims``: ``axes`` are positions in the output (``axes=[2, 0]`` on (2, 3) gives
  (1, 2, 1, 3)), non-negative, distinct and below the output's rank. ``new_axis_names`` names
  them (one letter per axis, paired with ``axes`` in order) and needs an input with a layout;
  without it the output has no layout, as in DALI.
- ``squeeze``: ``axes`` (per sample too) or ``axis_names``, exactly one; every removed axis
  must have extent 1. A negative axis is refused: DALI 2.4 silently removes nothing for
  ``axes=-1``. The removed axes' letters leave the layout.

GPU (``device="gpu"``, issue 18): the four have ``gpu`` kernels on the sample's array module
(``backend.array_module``: CuPy): ``reshape`` (a view; a shape given as the second input is
read on the host), ``expand_dims`` and ``squeeze`` (views) are ``gpu = cpu``; ``transpose`` is
``xp.ascontiguousarray(xp.transpose(...))`` (OpenCV's fast path is the CPU's only). Shapes,
permutations and layouts are worked out on the host. ``SameBatchSize``'s check serves both
devices (``gpu_batch = cpu_batch``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import ArgumentError
from augkit.operators.base import SampleOperator
from augkit.operators.layouts import axis_letters, exclusive
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    register,
    to_bool,
    to_floats,
    to_ints,
)
from augkit.tensors import TensorList


class SameBatchSize:
    """A mixin for operators of several inputs: their batches must have one size (an eager
    call can give lists of different lengths). The check is a batch kernel that declines."""

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> None:
        sizes = [len(x) for x in inputs]
        if len(set(sizes)) > 1:
            raise ValueError(f"the inputs must have one batch size, got batches of {sizes}")
        return None

    gpu_batch = cpu_batch


class TensorOperator(SameBatchSize, SampleOperator):
    """A per-sample tensor operator whose output layout is worked out from the input layout,
    the ranks and the arguments of sample 0 (``out_layout``); every output sample must have
    one rank, as DALI requires of a batch."""

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        return ""

    def input_layout(self, inputs: Sequence[TensorList]) -> str:
        """The layout ``out_layout`` starts from: the first input's."""
        return inputs[0].layout() if inputs else ""

    def run(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        outs = super().run(ctx, inputs, arg_inputs)
        if not outs or not len(outs[0]):
            return outs
        ndims = sorted({np.ndim(s) for s in outs[0].samples})
        if len(ndims) > 1:
            raise self.fail(
                f"the outputs of one batch must have one number of dimensions, got {ndims}",
                None,
                inputs,
            )
        args = self.sample_args(arg_inputs, 0)
        in_layout = self.input_layout(inputs)
        in_ndim = np.ndim(inputs[0].samples[0]) if inputs else 0
        try:
            layout = self.out_layout(in_layout, in_ndim, ndims[0], args)
        except ValueError as exc:
            raise self.fail(str(exc), None, inputs) from None
        if len(layout) not in (0, ndims[0]):
            raise self.fail(
                f'the layout "{layout}" does not fit outputs with {ndims[0]} dimensions',
                None,
                inputs,
            )
        return [relabel(out, layout) for out in outs]


def relabel(batch: TensorList, layout: str) -> TensorList:
    """``batch``'s samples (shared) with ``layout``."""
    out = TensorList(batch.samples, layout, batch.sources, kind=batch.kind)
    out._dtype = batch._dtype
    out._dense = batch.dense
    return out


to_layout = axis_letters("a layout string (one letter per axis)", 'axis names repeat in "{value}"')


def axis_index(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[-ndim, ndim - 1]`` as an index in ``[0, ndim - 1]``."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of range for {ndim} dimensions")
    return axis % ndim


# --- transpose ------------------------------------------------------------------------------


@described("a permutation of 0 .. ndim-1, e.g. [2, 0, 1]")
def _perm(value: Any) -> tuple[int, ...]:
    perm = to_ints(low=0)(value)
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"{list(perm)} is not a permutation of 0 .. {len(perm) - 1}")
    return perm


# Pixel sizes (bytes) cv2.transpose handles, as NumPy dtypes of that size: it swaps rows and
# columns of an image whose elements are opaque blocks.
_CV_PIXELS: dict[int, str | tuple[str, int]] = {
    1: "u1",
    2: "u2",
    4: "i4",
    8: "f8",
    3: ("u1", 3),
    6: ("u2", 3),
    12: ("i4", 3),
}


def _cv_transpose(cv2: Any, rows: np.ndarray, pixel: int) -> np.ndarray:
    """The (W, H, pixel) byte array of the transposed (H, W * pixel) byte array ``rows``."""
    h = rows.shape[0]
    spec = _CV_PIXELS[pixel]
    image: np.ndarray
    if isinstance(spec, tuple):  # 3 channels of 1, 2 or 4 bytes
        base, channels = spec
        image = rows.view(base).reshape(h, -1, channels)
    else:
        image = rows.view(spec).reshape(h, -1)
    return np.ascontiguousarray(cv2.transpose(image)).view(np.uint8)


class Transpose(TensorOperator):
    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def permutation(self, ndim: int) -> tuple[int, ...]:
        perm = self.args["perm"]
        if perm is None:
            return tuple(range(ndim - 1, -1, -1))
        if len(perm) != ndim:
            raise ValueError(
                f"the input has {ndim} dimensions but perm {list(perm)} has {len(perm)} entries"
            )
        return tuple(perm)

    def cpu(self, sample: Any, **_: Any) -> Any:
        perm = self.permutation(sample.ndim)
        if perm == tuple(range(sample.ndim)):
            return sample
        if perm == (1, 0, *range(2, sample.ndim)) and sample.flags.c_contiguous and sample.size:
            # The first two axes swapped, the rest kept: OpenCV's transpose of an image whose
            # pixels are the remaining axes, ~25x faster than NumPy's strided copy.
            pixel = int(np.prod(sample.shape[2:])) * sample.itemsize
            if pixel in _CV_PIXELS and max(sample.shape[:2]) < 2**31:
                flat = sample.reshape(sample.shape[0], sample.shape[1], -1).view(np.uint8)
                flat = flat.reshape(sample.shape[0], sample.shape[1] * pixel)
                return (
                    _cv_transpose(self.cv2, flat, pixel)
                    .view(sample.dtype)
                    .reshape(sample.shape[1], sample.shape[0], *sample.shape[2:])
                )
        return np.ascontiguousarray(np.transpose(sample, perm))

    def gpu(self, sample: Any, **_: Any) -> Any:
        """``xp.transpose`` on the sample's device, made contiguous (a copy, as on the CPU)."""
        xp = backend.array_module(sample)
        perm = self.permutation(sample.ndim)
        if perm == tuple(range(sample.ndim)):
            return sample
        return xp.ascontiguousarray(xp.transpose(sample, perm))

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        if args["output_layout"] is not None:
            return args["output_layout"]
        if not args["transpose_layout"] or len(in_layout) != in_ndim:
            return in_layout
        return "".join(in_layout[p] for p in self.permutation(in_ndim))


register(
    OperatorSchema(
        name="transpose",
        class_name="Transpose",
        impl=Transpose,
        devices=("cpu", "gpu"),
        doc=(
            "Reorders the dimensions: output axis i is input axis ``perm[i]`` (no ``perm``: "
            "reversed). The layout is permuted the same way unless ``transpose_layout`` is "
            "False; ``output_layout`` sets it outright."
        ),
        args=[
            Arg("perm", "the permutation of the input's axes (default: reversed)", None, _perm),
            Arg(
                "transpose_layout",
                "permute the layout's letters too (else keep the input's layout)",
                True,
                to_bool,
            ),
            Arg(
                "output_layout", "the output's layout (overrides transpose_layout)", None, to_layout
            ),
        ],
    )
)


# --- reshape --------------------------------------------------------------------------------


def _wildcard(out: Sequence[float], volume: int, negative: Sequence[int]) -> list[int]:
    """``out`` with its one negative extent (at ``negative``) set from ``volume``."""
    if len(negative) > 1:
        raise ValueError(f"only one extent may be negative (inferred), got shape {out}")
    if negative:
        known = math.prod(int(e) for i, e in enumerate(out) if i != negative[0])
        if known == 0 or volume % known:
            raise ValueError(
                f"cannot infer the negative extent of {out}: {volume} elements do not divide "
                f"into extents of volume {known}"
            )
        filled = list(out)
        filled[negative[0]] = volume // known
        return [int(e) for e in filled]
    return [int(e) for e in out]


def _round_half_away(x: float) -> int:
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def new_shape(
    in_shape: tuple[int, ...],
    shape: Sequence[int] | None,
    rel_shape: Sequence[float] | None,
    src_dims: Sequence[int] | None,
) -> tuple[int, ...]:
    """The output shape of ``reshape`` (see the module docstring)."""
    volume = math.prod(in_shape)
    ndim = len(in_shape)
    if src_dims is not None:
        for d in src_dims:
            if not -1 <= d < ndim:
                raise ValueError(f"src_dims entry {d} is not -1 or an axis of {ndim} dimensions")
    if shape is not None:
        if any(e < -1 for e in shape):
            raise ValueError(f"shape extents must be >= 0 (or -1: inferred), got {list(shape)}")
        out = _wildcard(list(shape), volume, [i for i, e in enumerate(shape) if e < 0])
    elif rel_shape is not None:
        rel = list(rel_shape)
        if src_dims is not None:
            if len(src_dims) != len(rel):
                raise ValueError(
                    f"src_dims has {len(src_dims)} entries and rel_shape {len(rel)}; they must "
                    f"have as many"
                )
            base = [in_shape[d] if d >= 0 else 1 for d in src_dims]
        else:
            extra = len(rel) - ndim
            if extra > 1 or (extra == 1 and rel[-1] >= 0):
                raise ValueError(
                    f"rel_shape has {len(rel)} entries for an input of {ndim} dimensions (one "
                    f"more is allowed only when the last is negative)"
                )
            base = [*in_shape, 1][: len(rel)]
        negative = [i for i, r in enumerate(rel) if r < 0]
        scaled = [_round_half_away(b * r) if r >= 0 else -1 for b, r in zip(base, rel, strict=True)]
        out = _wildcard(scaled, volume, negative)
    elif src_dims is not None:
        out = [in_shape[d] if d >= 0 else 1 for d in src_dims]
    else:
        out = list(in_shape)
    if math.prod(out) != volume:
        raise ValueError(
            f"cannot reshape {tuple(in_shape)} ({volume} elements) to {tuple(out)} "
            f"({math.prod(out)} elements): the volume must stay the same"
        )
    return tuple(out)


_SHAPES = ("shape", "rel_shape")


class Reshape(TensorOperator):
    def setup(self) -> None:
        if self.num_inputs > 1 and any(self.args.get(k) is not None for k in _SHAPES):
            raise ArgumentError(
                f"{self.schema.class_name}: give the new shape as the second input or as an "
                f"argument (shape, rel_shape), not both"
            )

    def cpu(
        self,
        sample: Any,
        shape_input: Any = None,
        *,
        shape: Any,
        rel_shape: Any,
        src_dims: Any,
        **_: Any,
    ) -> Any:
        if shape_input is not None:
            values = backend.to_cpu(shape_input)  # a few numbers: read on the host
            if values.ndim > 1 or values.dtype.kind not in "iu":
                raise ValueError(
                    f"the shape input must be a 1-D array of integers, got shape "
                    f"{values.shape} of type {values.dtype}"
                )
            shape = tuple(int(v) for v in values.reshape(-1))
        out = new_shape(tuple(sample.shape), shape, rel_shape, src_dims)
        return sample.reshape(out)  # a view, on the sample's device

    gpu = cpu

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        if args["layout"] is not None:
            return args["layout"]
        return in_layout if out_ndim == in_ndim else ""


register(
    OperatorSchema(
        name="reshape",
        class_name="Reshape",
        impl=Reshape,
        devices=("cpu", "gpu"),
        min_inputs=1,
        max_inputs=2,
        validate=exclusive("shape", "rel_shape", "shape and rel_shape are mutually exclusive"),
        doc=(
            "Gives the data a new shape of the same volume (no copy): ``shape`` (or the second "
            "input), ``rel_shape`` (relative to the input's extents, or to those of "
            "``src_dims``), or ``src_dims`` (input axes to keep, -1 inserting an extent 1); one "
            "negative extent is inferred. ``layout`` sets the new layout; without it the "
            "input's is kept when the number of dimensions is, else cleared."
        ),
        args=[
            Arg("shape", "the new shape (one extent may be -1)", None, to_ints(), per_sample=True),
            Arg(
                "rel_shape",
                "the new shape relative to the input's (one entry may be negative)",
                None,
                to_floats(),
                per_sample=True,
            ),
            Arg("layout", "the new layout", None, to_layout),
            Arg(
                "src_dims",
                "the input axes the output's come from (-1: a new axis of extent 1)",
                None,
                to_ints(low=-1),
                per_sample=True,
            ),
        ],
    )
)


# --- expand_dims / squeeze ------------------------------------------------------------------


@described("a list of distinct integers >= 0")
def _axes(value: Any) -> tuple[int, ...]:
    axes = to_ints(low=0)(value)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes repeat: {list(axes)}")
    return axes


@described("a list of distinct integers >= 0 (axes of the input)")
def _squeeze_axes(value: Any) -> tuple[int, ...]:
    axes = to_ints()(value)
    if any(a < 0 for a in axes):
        raise ValueError(
            f"axes must be >= 0, got {list(axes)} (DALI 2.4 silently removes nothing for a "
            f"negative axis)"
        )
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes repeat: {list(axes)}")
    return axes


class ExpandDims(TensorOperator):
    def cpu(self, sample: Any, *, axes: tuple[int, ...], **_: Any) -> Any:
        out_ndim = sample.ndim + len(axes)
        for a in axes:
            if a >= out_ndim:
                raise ValueError(
                    f"axis {a} is out of range: the output has {out_ndim} dimensions "
                    f"({sample.ndim} + {len(axes)} new)"
                )
        return backend.array_module(sample).expand_dims(sample, tuple(axes)) if axes else sample

    gpu = cpu

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0 and self.args["new_axis_names"] and len(layout) != sample.ndim:
            raise ValueError("new_axis_names needs an input with a layout")

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        names = args["new_axis_names"]
        if not names:
            return ""
        letters = list(in_layout)
        for axis, name in sorted(zip(args["axes"], names, strict=True)):
            letters.insert(axis, name)
        return "".join(letters)


def _check_expand(args: dict[str, Any]) -> None:
    axes, names = args.get("axes"), args.get("new_axis_names")
    if names and axes is not None and len(names) != len(axes):
        raise ValueError(
            f"new_axis_names {names!r} has {len(names)} names for {len(axes)} axes; give one "
            f"per axis"
        )


register(
    OperatorSchema(
        name="expand_dims",
        class_name="ExpandDims",
        impl=ExpandDims,
        devices=("cpu", "gpu"),
        validate=_check_expand,
        doc=(
            "Inserts dimensions of extent 1 at the output positions ``axes``; "
            "``new_axis_names`` names them in the layout (without it the layout is cleared)."
        ),
        args=[
            Arg("axes", "positions of the new dimensions in the output", REQUIRED, _axes),
            Arg("new_axis_names", "layout letters of the new dimensions", "", to_layout),
        ],
    )
)


class Squeeze(TensorOperator):
    def removed(self, ndim: int, layout: str, args: dict) -> tuple[int, ...]:
        if args["axes"] is None and args["axis_names"] is None:
            raise ValueError("give the axes to remove: axes or axis_names")
        if args["axis_names"] is not None:
            missing = [c for c in args["axis_names"] if c not in layout]
            if missing or len(layout) != ndim:
                raise ValueError(
                    f'axis_names "{args["axis_names"]}" are not all in the layout "{layout}"'
                )
            return tuple(layout.index(c) for c in args["axis_names"])
        for a in args["axes"]:
            if a >= ndim:
                raise ValueError(f"axis {a} is out of range for {ndim} dimensions")
        return tuple(args["axes"])

    def cpu(self, sample: Any, *, layout: str, **args: Any) -> Any:
        axes = self.removed(sample.ndim, layout, args)
        wrong = [a for a in axes if sample.shape[a] != 1]
        if wrong:
            raise ValueError(
                f"cannot remove axes {wrong} of a sample of shape {tuple(sample.shape)}: only "
                f"axes of extent 1 can be squeezed"
            )
        return backend.array_module(sample).squeeze(sample, axis=axes) if axes else sample

    gpu = cpu

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        if len(in_layout) != in_ndim:
            return ""
        axes = self.removed(in_ndim, in_layout, args)
        return "".join(c for i, c in enumerate(in_layout) if i not in axes)


register(
    OperatorSchema(
        name="squeeze",
        class_name="Squeeze",
        impl=Squeeze,
        devices=("cpu", "gpu"),
        validate=exclusive(
            "axes", "axis_names", "axes and axis_names are mutually exclusive: give one"
        ),
        doc=(
            "Removes dimensions of extent 1, given as ``axes`` (per sample too) or as layout "
            "letters ``axis_names``; their letters leave the layout."
        ),
        args=[
            Arg("axes", "the axes to remove", None, _squeeze_axes, per_sample=True),
            Arg("axis_names", "the layout letters of the axes to remove", None, to_layout),
        ],
    )
)
