"""``fn.crop_mirror_normalize``: crop (``fn.crop``'s window rules), mirror, normalize, pad the
channels, transpose and convert, in one operator, as DALI's CropMirrorNormalize.

DALI's order and arithmetic (``crop_mirror_normalize.h``, the slice-flip-normalize kernel):

1. The crop window is chosen as ``fn.crop`` chooses it (``crop_window``, ``fit_window``).
2. ``out = scale * (in - mean) / std + shift`` is computed as ``(float32(in) - mean') * inv``
   with ``mean' = mean - shift * std / scale`` and ``inv = scale / std``, all in float32, then
   converted with ``convert_sat`` (integer outputs: halves away from zero, saturated). mean and
   std are in input units (``mean=0.485 * 255`` for uint8 images); a scalar is broadcast over
   the channels, a list must have one value per channel. When ``mean' == 0`` and ``inv == 1``
   there is no arithmetic: the values are only converted.
3. Pixels of the window outside the image (``out_of_bounds_policy="pad"``) get ``fill_values``
   as they are (not normalized).
4. ``mirror`` flips the window along W.
5. ``pad_output`` appends channels filled with 0 up to the next power of two (3 -> 4).
6. The axes are permuted to ``output_layout`` (default "CHW": an HWC image comes out CHW; ""
   keeps the input layout). dtype defaults to FLOAT, whatever the input type.

Targets (``fn.crop_mirror_normalize([images, masks, boxes, labels], crop=..., mirror=...)``,
``geometric/targets.py``): masks, boxes and keypoints get the image's window (``window``: the
same cached ``crop_window`` + ``fit_window``) and its mirror, and nothing else: a mask is cut
and mirrored bit for bit as the image is (class 0 outside the image with policy "pad",
whatever ``fill_values`` is), never normalized, converted, channel-padded or transposed: it
keeps its dtype and its own layout (HWC or HW, also when the images come out CHW: a label map
stays a label map, and ``output_layout`` applies to images only). Boxes are clipped to the
window and dropped with their labels when nothing of them is left; keypoints are moved and
never dropped.

The tutorial's ``ops.CropMirrorNormalize(std=255., mean=0.)`` on uint8 HWC images therefore gives
float32 CHW images in [0, 1] with layout "CHW".

Speed (the common case: uint8 HWC in, a window inside the image, HWC or CHW out, no channel
padding, an output type cv2.LUT has): every output value depends only on the input level and
the channel, so the kernel computes a 256-entry table per channel with exactly the float32
operations and ``convert_sat`` of the general path (same numbers, bit for bit; tested against
the general path), mirrors the uint8 window with ``cv2.flip``, splits it into planes and
applies the tables with ``cv2.LUT`` straight into the CHW output (one LUT call for HWC output).
Tables, normalizations and windows are cached per argument values; a dense uint8 batch goes
through the same path in a batch kernel (``cpu_batch``), into one dense output. Everything
else (other types and layouts, windows that leave the image, pad_output, CuPy) takes the
general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.errors import ArgumentError, OperatorError
from augkit.kinds import IMAGE, Kind
from augkit.operators.base import dense_batch, per_sample_column
from augkit.operators.color.cast import convert_sat
from augkit.operators.geometric.crop import (
    CROP_ARGS,
    crop_request,
    crop_window,
    cut_window,
    fill_array,
    fit_window,
    window_geometry,
)
from augkit.operators.geometric.flip import to_flag
from augkit.operators.geometric.targets import TARGET_KINDS, Geometry, MovesTargets, movable
from augkit.operators.layouts import IMAGE_WITH_CHANNELS, ImageOperator, axis_letters, image_layout
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    register,
    to_bool,
    to_dtype,
    to_float,
    to_floats,
)
from augkit.tensors import TensorList

# Output types cv2.LUT produces (the fast path of uint8 HWC images).
_LUT_DTYPES = {
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64)
}


_MISSING = object()


def _tables(
    norm: tuple[np.ndarray, np.ndarray] | None, out_dtype: np.dtype, channels: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The fast path's lookup tables: every uint8 level through the general path's float32
    arithmetic and ``convert_sat``, as one ``(1, 256, C)`` table and C ``(1, 256)`` ones."""
    levels = np.arange(256, dtype=np.float32)[:, None]
    if norm is None:
        table = convert_sat(np.broadcast_to(levels, (256, channels)), out_dtype)
    else:
        shifted_mean, inv = norm
        with np.errstate(over="ignore", invalid="ignore"):
            table = convert_sat((levels - shifted_mean) * inv, out_dtype)
    table = np.ascontiguousarray(np.broadcast_to(table, (256, channels)))
    planes = [np.ascontiguousarray(table[:, c]).reshape(1, 256) for c in range(channels)]
    return table.reshape(1, 256, channels), planes


def normalization(
    mean: Sequence[float], std: Sequence[float], scale: float, shift: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """DALI's ``(mean', inv)`` in float32, each of 1 or C values; ``None`` when they leave the
    values unchanged (``mean' == 0`` and ``inv == 1``).

    Raises:
        ValueError: mean or std empty, or of different lengths, neither being a single value; values
            that give no finite normalization in float32 (std=1e-40, scale=1e300).
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        mean32, std32 = np.asarray(mean, np.float32), np.asarray(std, np.float32)
        scale32, shift32 = np.float32(scale), np.float32(shift)
    if 0 in (mean32.size, std32.size):
        raise ValueError("mean and std need at least one value each (one, or one per channel)")
    if mean32.size != std32.size and 1 not in (mean32.size, std32.size):
        raise ValueError(
            f"mean ({mean32.size} values) and std ({std32.size} values) must have the same "
            f"length, or one of them a single value"
        )
    n = max(mean32.size, std32.size)
    mean32, std32 = np.broadcast_to(mean32, (n,)), np.broadcast_to(std32, (n,))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        shifted_mean = mean32 - shift32 * std32 / scale32
        inv = scale32 / std32
    if not (np.isfinite(shifted_mean).all() and np.isfinite(inv).all() and inv.all()):
        raise ValueError(
            f"mean={mean}, std={std}, scale={scale} and shift={shift} give no "
            f"finite normalization in float32 (out = (in - mean) / std * scale + shift): "
            f"keep them within float32's range (about 1e-38 to 3e38 in magnitude)"
        )
    if not shifted_mean.any() and (inv == 1).all():
        return None
    return shifted_mean, inv


def _nonzero(convert: Any) -> Any:
    @described(f"{convert.allowed}, nonzero")
    def check(value: Any) -> Any:
        out = convert(value)
        if any(v == 0 for v in np.atleast_1d(out)):
            raise ValueError(f"must be nonzero, got {value!r}")
        return out

    return check


_output_layout = axis_letters(
    "a layout string naming each axis once, e.g. 'CHW'",
    "a layout names each axis once, got {value!r}",
)


class CropMirrorNormalize(MovesTargets, ImageOperator):
    """One sample: window, normalize + convert, fill, mirror, channel padding, transpose (and
    masks, boxes and keypoints: the window and the mirror, ``targets.py``)."""

    need_channel = True

    def target_batch_args(self, inputs: Sequence[TensorList], kind: Kind) -> dict[str, Any]:
        if kind.name == "mask":  # an H×W label map has no channel axis
            batch = inputs[0]
            return {"layout": image_layout(batch.layout(), batch.samples[0].ndim)}
        return super().target_batch_args(inputs, kind)

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        layout = args["layout"]
        anchor, size = self.window(
            tuple(shape), layout, args, args["rounding"], args["out_of_bounds_policy"]
        )
        return window_geometry(shape, layout, anchor, size, mirror=bool(args["mirror"]))

    def setup(self) -> None:
        args = self.args
        try:
            normalization(args["mean"], args["std"], args["scale"], args["shift"])
        except ValueError as exc:
            raise ArgumentError(f"{self.schema.class_name}: {exc}") from None
        self.setup_fast()

    def cpu(
        self,
        sample: Any,
        *,
        layout: str,
        dtype: Any,
        mirror: int,
        mean: Sequence[float],
        std: Sequence[float],
        scale: float,
        shift: float,
        output_layout: str,
        pad_output: bool,
        rounding: str,
        out_of_bounds_policy: str,
        fill_values: Sequence[float],
        **args: Any,
    ) -> Any:
        xp = backend.array_module(sample)
        out_dtype = dtype.numpy
        spatial = sum(axis in "DHW" for axis in layout)
        if spatial not in (2, 3):
            raise ValueError(f"only 2-D or 3-D images are supported, got layout {layout}")
        target = output_layout or layout
        if sorted(target) != sorted(layout):
            raise ValueError(
                f'output_layout "{target}" is not a permutation of the input layout "{layout}"'
            )
        channel = layout.index("C")
        channels = sample.shape[channel]
        norm = self.normalization(mean, std, scale, shift)
        if norm is not None and norm[0].size not in (1, channels):
            raise ValueError(
                f"mean/std have {norm[0].size} values, but the sample (shape {sample.shape}, "
                f"layout {layout}) has {channels} channels"
            )

        def convert(region: Any) -> Any:
            if norm is None:
                return convert_sat(region, out_dtype, xp)
            bshape = [1] * region.ndim
            bshape[channel] = norm[0].size
            shifted_mean = xp.asarray(norm[0].reshape(bshape))
            inv = xp.asarray(norm[1].reshape(bshape))
            # float32, as DALI: beyond its range values become inf and saturate, silently.
            with np.errstate(over="ignore", invalid="ignore"):
                normalized = (region.astype(np.float32) - shifted_mean) * inv
                return convert_sat(normalized, out_dtype, xp)

        anchor, size = self.window(sample.shape, layout, args, rounding, out_of_bounds_policy)
        if xp is np:
            fast = self._uint8_hwc(sample, layout, target, anchor, size, norm, out_dtype, mirror)
            if fast is not None:
                return fast
        fill = None
        if out_of_bounds_policy == "pad":
            fill = fill_array(fill_values, sample.shape, layout, out_dtype, xp)
        out = cut_window(sample, anchor, size, convert, fill, xp)
        if mirror:
            out = xp.flip(out, axis=layout.index("W"))
        if pad_output:
            extra = (1 << (channels - 1).bit_length()) - channels if channels else 0
            if extra:
                zeros_shape = list(out.shape)
                zeros_shape[channel] = extra
                out = xp.concatenate([out, xp.zeros(zeros_shape, out.dtype)], axis=channel)
        out = xp.transpose(out, [layout.index(axis) for axis in target])
        return xp.ascontiguousarray(out)

    gpu = cpu

    def setup_fast(self) -> None:
        self.cv2 = backend.opencv()
        # Caches (dict operations are atomic under the GIL; a race computes a value twice).
        self._norms: dict[tuple, Any] = {}
        self._luts: dict[tuple, Any] = {}
        self._windows: dict[tuple, Any] = {}

    def _uint8_hwc(
        self,
        sample: np.ndarray,
        layout: str,
        target: str,
        anchor: Sequence[int],
        size: Sequence[int],
        norm: tuple[np.ndarray, np.ndarray] | None,
        out_dtype: Any,
        mirror: int,
        out: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """The common case, fast: a uint8 HWC image, a window inside it, HWC or CHW out, no
        channel padding. Each output value depends only on the input level and the channel,
        so a 256-entry table per channel, computed with the very float32 operations of the
        general path, gives the same numbers: ``cv2.LUT`` applies it (one call for HWC
        output, one per channel plane for CHW), and ``cv2.flip`` mirrors the uint8 window.
        Into ``out`` (C-contiguous, of the output's shape and dtype) when given. Returns
        ``None`` where it does not apply."""
        out_dtype = np.dtype(out_dtype)
        channels = sample.shape[-1] if sample.ndim == 3 else 0
        if (
            sample.dtype != np.uint8
            or layout != "HWC"
            or target not in ("HWC", "CHW")
            or self.args["pad_output"]
            or not 1 <= channels <= 4
            or out_dtype not in _LUT_DTYPES
            or not all(
                a >= 0 and s > 0 and a + s <= e
                for a, s, e in zip(anchor, size, sample.shape, strict=True)
            )
            or size[2] != channels
            or sample.strides[2] != 1
            or sample.strides[1] != channels
        ):
            return None
        cv2 = self.cv2
        key = (id(norm), out_dtype, channels)
        luts = self._luts.get(key)
        if luts is None:
            luts = self._luts[key] = _tables(norm, out_dtype, channels)
        (y, x, _), (h, w, _) = anchor, size
        window = sample[y : y + h, x : x + w]
        if mirror:
            window = cv2.flip(window, 1)
        if target == "HWC":
            if out is None:
                out = np.empty((h, w, channels), out_dtype)
            cv2.LUT(window, luts[0], dst=out if channels > 1 else out[..., 0])
            return out
        if out is None:
            out = np.empty((channels, h, w), out_dtype)
        if channels > 1:
            planes = [np.empty((h, w), np.uint8) for _ in range(channels)]
            cv2.split(window, planes)
        else:
            planes = [np.ascontiguousarray(window.reshape(h, w))]
        for c in range(channels):
            cv2.LUT(planes[c], luts[1][c], dst=out[c])
        return out

    def cpu_batch(
        self, ctx: Any, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """A dense uint8 HWC batch (the benchmark's and a reader's resized batches) in the
        fast path, into one dense output: the per-sample work without the per-sample Python
        (arguments, windows and tables once per batch; per-sample ``mirror`` and crop
        positions are taken). Anything else, or anything the per-sample path would refuse,
        returns ``None``: the per-sample kernel runs (and raises its own errors)."""
        dense = dense_batch(inputs)
        if (
            not isinstance(dense, np.ndarray)
            or dense.dtype != np.uint8
            or dense.ndim != 4
            or len(dense) == 0
            or set(arg_inputs) - {"mirror", "crop_pos_x", "crop_pos_y"}
        ):
            return None
        try:
            plan = self._batch_plan(dense, inputs, arg_inputs)
        except (ValueError, TypeError, ArgumentError, OperatorError):
            return None
        if plan is None:
            return None
        windows, mirrors, norm, target, out_dtype = plan
        (_, _, channels), (h, w, _) = dense.shape[1:], windows[0][1]
        shape = (h, w, channels) if target == "HWC" else (channels, h, w)
        out = np.empty((len(dense), *shape), out_dtype)

        def one(i: int) -> None:
            (anchor, size), mirror = windows[i], mirrors[i]
            self._uint8_hwc(dense[i], "HWC", target, anchor, size, norm, out_dtype, mirror, out[i])

        ctx.map(one, len(dense))
        return [self.dense_output(out, inputs)]

    def _batch_plan(
        self, dense: np.ndarray, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> tuple | None:
        """What ``cpu_batch`` needs, checked as the per-sample path checks it; ``None`` where
        the fast path does not apply to every sample alike."""
        a = self.args
        n = len(dense)
        layout = self.batch_args(inputs)["layout"]
        target = a["output_layout"] or layout
        out_dtype = np.dtype(a["dtype"].numpy)
        channels = dense.shape[-1]
        if (
            layout != "HWC"
            or target not in ("HWC", "CHW")
            or a["pad_output"]
            or not 1 <= channels <= 4
            or out_dtype not in _LUT_DTYPES
            or not dense.flags.c_contiguous
        ):
            return None
        norm = self.normalization(a["mean"], a["std"], a["scale"], a["shift"])
        if norm is not None and norm[0].size not in (1, channels):
            return None
        columns = {key: per_sample_column(self, arg_inputs, key, n) for key in arg_inputs}
        mirror_column = columns.get("mirror")
        mirrors = (
            [bool(m) for m in mirror_column]
            if mirror_column is not None
            else [bool(a["mirror"])] * n
        )
        windows = []
        for i in range(n):
            args = dict(a)
            for key in ("crop_pos_x", "crop_pos_y"):
                column = columns.get(key)  # (an argument input's column is never None)
                if column is not None:
                    args[key] = float(column[i])
            anchor, size = self.window(
                dense.shape[1:], layout, args, a["rounding"], a["out_of_bounds_policy"]
            )
            if not all(
                p >= 0 and s > 0 and p + s <= e
                for p, s, e in zip(anchor, size, dense.shape[1:], strict=True)
            ):
                return None
            windows.append((anchor, size))
        if len({size for _, size in windows}) != 1 or windows[0][1][2] != channels:
            return None
        return windows, mirrors, norm, target, out_dtype

    def window(
        self, shape: tuple[int, ...], layout: str, args: dict[str, Any], rounding: str, policy: str
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``crop_window`` + ``fit_window``, kept for the shapes and crop arguments seen (the
        usual batch has one image size and a few crop positions)."""
        request = crop_request(args)
        key = (shape, layout, tuple(sorted(request.items())), rounding, policy)
        found = self._windows.get(key)
        if found is None:
            anchor, size = crop_window(shape, layout, request, rounding)
            found = fit_window(policy, shape, anchor, size, layout)
            if len(self._windows) >= 256:
                self._windows.clear()
            self._windows[key] = found
        return found

    def normalization(
        self, mean: Sequence[float], std: Sequence[float], scale: float, shift: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``normalization(...)``, kept for the constant arguments (the same object for the
        same values, which keys the tables of the fast path)."""
        key = (tuple(mean), tuple(std), scale, shift)
        found = self._norms.get(key, _MISSING)
        if found is _MISSING:
            found = normalization(mean, std, scale, shift)
            if len(self._norms) >= 64:  # per-sample mean/std: keep the cache small
                self._norms.clear()
                self._luts.clear()
            self._norms[key] = found
        return found

    def output_layout(self, index: int, inputs: Sequence[TensorList]) -> str:
        return self.args["output_layout"] or inputs[0].layout()


def _output_kinds(args: dict[str, Any], inputs: Sequence[OutputSpec | None]) -> list[Any]:
    """Images with the input's number of dimensions and ``output_layout`` (when the input's
    layout is known); masks, boxes, keypoints... keep their kind, dimensions and layout."""
    spec = inputs[0] if inputs else None
    if spec is not None and spec.kind.name in TARGET_KINDS:
        return [spec]
    if spec is None or spec.ndim is None:
        return [OutputSpec(kind=IMAGE, what="normalized images")]
    layout = args.get("output_layout") or spec.layout
    return [
        OutputSpec(
            kind=IMAGE,
            ndim=spec.ndim,
            layout=layout if spec.layout is not None else None,
            what=f"normalized images{f' with layout {layout}' if layout else ''}",
        )
    ]


register(
    OperatorSchema(
        name="crop_mirror_normalize",
        class_name="CropMirrorNormalize",
        impl=CropMirrorNormalize,
        accepts=[movable(IMAGE_WITH_CHANNELS)],
        output_kinds=_output_kinds,
        devices=("cpu", "gpu"),
        doc=(
            "Fused crop, mirror, normalization, channel padding, layout change and type "
            "conversion: ``output = scale * (input - mean) / std + shift`` on the crop window "
            "(crop arguments as ``fn.crop``; no crop arguments: the whole image), flipped "
            "left-right where ``mirror`` is nonzero, with ``pad_output`` adding zero channels up "
            'to a power of two, transposed to ``output_layout`` (default "CHW") and converted '
            "to ``dtype`` (default FLOAT; integer types round halves away from zero and "
            "saturate). mean and std are in input units, a single value or one per channel, and "
            "may be per sample, as may ``mirror`` and the crop arguments. The input needs a C "
            "axis (HWC, CHW, DHWC, FHWC, ...; no layout: HWC). E.g. the tutorial's "
            "``ops.CropMirrorNormalize(std=255., mean=0.)`` turns uint8 HWC images into float32 "
            "CHW images in [0, 1]. Moves masks, boxes, keypoints and labels with the images when "
            "given with them as input sets (``fn.crop_mirror_normalize([images, masks, boxes, "
            "labels], ...)``): masks are cropped and mirrored, never normalized, and keep their "
            "dtype and layout; boxes are clipped and dropped with their labels when nothing of "
            "them is left in the window. Differences from DALI: std and scale of 0 are refused "
            "(DALI produces inf/NaN); any input and output dtype is accepted (DALI: FLOAT, "
            "FLOAT16, UINT8, INT8 outputs); on the GPU integer outputs round halves away from "
            "zero as on the CPU (DALI's GPU rounds them to even)."
        ),
        args=[
            *CROP_ARGS,
            Arg("mirror", "nonzero: flip the window left-right", 0, to_flag, per_sample=True),
            Arg(
                "mean",
                "subtracted, in input units: one value or one per channel",
                (0.0,),
                to_floats(),
                per_sample=True,
            ),
            Arg(
                "std",
                "divides, in input units: one value or one per channel (nonzero)",
                (1.0,),
                _nonzero(to_floats()),
                per_sample=True,
            ),
            Arg("scale", "multiplies the normalized value (nonzero)", 1.0, _nonzero(to_float())),
            Arg("shift", "added after scaling", 0.0, to_float()),
            Arg("dtype", "output data type", types.FLOAT, to_dtype),
            Arg(
                "output_layout",
                "layout of the output, a permutation of the input's (\"\": the input's)",
                "CHW",
                _output_layout,
            ),
            Arg("pad_output", "pad the channels with zeros to a power of two", False, to_bool),
        ],
    )
)
