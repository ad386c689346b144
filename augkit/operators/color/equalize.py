"""``fn.equalize`` (histogram equalization per channel) and ``fn.clahe`` (contrast limited
adaptive histogram equalization), as DALI's Equalize and Clahe, on uint8 images.

DALI facts (checked pixel for pixel against DALI 2.4's CPU outputs):

- ``equalize`` equalizes every channel (and every frame) on its own, exactly as OpenCV's
  ``equalizeHist``: ``lut[v] = round(255 * (cdf(v) - cdf(v_min)) / (N - cdf(v_min)))`` with
  ``v_min`` the smallest value present; a constant channel is left as it is. Layouts HW, HWC,
  CHW, FHW, FHWC, FCHW (no layout: HW or HWC); uint8 only. No arguments of its own.
  (``fn.experimental.equalize`` is DALI's deprecated alias; augkit has the one name.)
- ``clahe`` is OpenCV's CLAHE: ``tiles_x`` by ``tiles_y`` tiles (OpenCV's ``tileGridSize`` is
  ``(tiles_x, tiles_y)``: tiles along the width first), ``clip_limit`` relative to a uniform
  histogram (``<= 0``: no clipping, plain adaptive equalization), LUTs interpolated bilinearly
  between tile centres. A 1-channel image is equalized directly. A 3-channel RGB image with
  ``luma_only=True`` (the default) is equalized on the L of CIE L*a*b* (OpenCV's RGB <-> Lab
  conversions, a round trip that can move unchanged colours by a level, as DALI's does);
  ``luma_only=False`` equalizes each channel. HWC only, 1 or 3 channels, uint8; tiles_x,
  tiles_y and clip_limit are required, as in DALI.
- ``bins`` (default 256, a power of two) is accepted: DALI's CPU operator gives the same output
  for any value (its OpenCV-based kernel uses 256 bins), and so does augkit.
- Speed: the work is OpenCV's, as in DALI: equalizeHist per channel (~50 us per 320x320
  plane), and for CLAHE the RGB <-> Lab conversions (~400 and ~500 us for a 320x320 image on one
  thread) around CLAHE itself (~330 us): bound by those. Around them, every intermediate (the
  channel planes, the Lab image, L) lives in per-thread scratch arrays reused from call to call
  and a dense batch (the usual source) is written into one preallocated output (the batch
  kernel: the per-sample kernel given ``out``): fresh image-sized arrays cost page faults of
  up to ~80 us each while the batch's outputs are alive. equalize's kernel: split/merge into
  fresh arrays ~450 us a 320x320 RGB image, ~265 us now; in the pipeline (interleaved A/B, one
  thread) 415 -> 365 us an image. clahe: no gain beyond noise (1390 us an image either way:
  the conversions bound it). Same-run paired ratios vs DALI (benchmarks/operators.py, one
  thread, a busy machine): equalize 0.94x before, 1.24-1.91x after; clahe 0.98x before,
  1.02-1.18x after (DALI runs the same OpenCV functions: expect about 1x).
- Differences from DALI: tiles_x/tiles_y must be in 1..256 (DALI's CPU operator crashes on 0;
  more tiles than that would only allocate tables for tiles of less than a pixel).

GPU (``device="gpu"``): ``equalize`` has a GPU kernel (DALI 2.4 has it on the CPU and the GPU);
``clahe`` has none (DALI's is on the CPU only). ``Equalize.gpu`` is ``equalizeHist``'s
function written against the sample's array module (NumPy or CuPy), every plane of the
sample at once, no Python loop over planes: each value offset by ``256 * plane`` (the plane
numbers are a small host array moved with ``xp.asarray``), one ``xp.bincount`` for all the
histograms, ``xp.cumsum`` along the bins, and OpenCV's table per plane, ``lut[v] =
saturate_cast<uchar>(float32(cdf(v) - cdf(v_min)) * (255.f / float32(N - cdf(v_min))))``
(round half to even: ``xp.rint``), the identity for a constant plane, applied with one
``take``. The tables are computed on the device (no copy of the histograms to the host). Equal
to the CPU kernel, value for value (planes of up to 2**24 pixels, where float32 holds the
counts exactly, as in OpenCV).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.calls import SampleCall
from augkit.operators.base import RunContext, SampleOperator, dense_batch
from augkit.operators.layouts import COLOR_IMAGE
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_float,
    to_int,
)
from augkit.tensors import TensorList

_EQUALIZE_LAYOUTS = ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW")


def _uint8(operator: str, sample: Any) -> None:
    if sample.dtype != np.uint8:
        raise ValueError(f"{operator} takes uint8 images, got {sample.dtype.name}")


def _into(result: np.ndarray, target: np.ndarray) -> None:
    """Where OpenCV did not write into ``target`` (it reallocates a dst it cannot use), copy."""
    if result is not target:
        target[...] = result.reshape(target.shape)


class _Planes(SampleOperator):
    """What equalize and clahe share: per-thread scratch planes (fresh intermediate arrays of an
    image's size cost page faults, about as much as equalizeHist itself) and a batch kernel that
    writes every sample into one preallocated dense output (the per-sample kernel, with its
    checks and errors, given ``out``)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()
        self._local = threading.local()

    def scratch(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """This thread's uint8 scratch array ``name`` of ``shape`` (kept for the next call)."""
        arrays = self._local.__dict__
        array = arrays.get(name)
        if array is None or array.shape != shape:
            array = arrays[name] = np.empty(shape, np.uint8)
        return array

    def cpu_batch(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        x = dense_batch(inputs)
        if x is None or not isinstance(x, np.ndarray) or x.dtype != np.uint8:
            return None
        if x.ndim < 3 or len(x) == 0 or x[0].size == 0:
            return None
        out = np.empty(x.shape, np.uint8)
        call = SampleCall.of(self, ctx, inputs, arg_inputs)
        ctx.map(lambda i: call.write(i, [x[i]], out[i]), len(x))
        return [self.dense_output(out, inputs)]


class Equalize(_Planes):
    """``cv2.equalizeHist`` on every 2-D plane (channel, frame)."""

    def batch_args(self, inputs: Any) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if not layout:
            layout = {2: "HW", 3: "HWC"}.get(sample.ndim, "")
        if layout not in _EQUALIZE_LAYOUTS or len(layout) != sample.ndim:
            raise ValueError(
                f"equalize needs images with layout {', '.join(_EQUALIZE_LAYOUTS)}; got a sample "
                f"of shape {tuple(sample.shape)} with layout {layout!r}"
            )
        _uint8("equalize", sample)

    def cpu(self, sample: Any, *, layout: str, out: np.ndarray | None = None, **_: Any) -> Any:
        """The equalized sample; into ``out`` (contiguous, the sample's shape) when given."""
        if not layout:
            layout = {2: "HW", 3: "HWC"}[sample.ndim]
        x = np.ascontiguousarray(sample)
        if x.size == 0:
            return np.array(x)
        cv2 = self.cv2
        if layout.endswith("HWC") and x.shape[-1] <= 512:
            # Channels interleaved: each channel to a scratch plane, equalized there, merged
            # into the output (frame by frame).
            h, w, c = x.shape[-3:]
            frames = x.reshape(-1, h, w, c)
            if out is None:
                out = np.empty(x.shape, np.uint8)
            outs = out.reshape(frames.shape)
            for f in range(frames.shape[0]):
                if c == 1:
                    target = outs[f, :, :, 0]
                    _into(cv2.equalizeHist(frames[f, :, :, 0], dst=target), target)
                    continue
                planes = self.scratch("planes", (c, h, w))
                views = list(planes)
                for k, plane in enumerate(views):
                    _into(cv2.extractChannel(frames[f], k, dst=plane), plane)
                    _into(cv2.equalizeHist(plane, dst=plane), plane)
                target = outs[f]
                _into(cv2.merge(views, dst=target), target)
            return out
        # To planes: (P, H, W).
        out_given = out
        planes = np.moveaxis(x, -1, -3) if layout.endswith("HWC") else x
        shape = planes.shape
        planes = planes.reshape(-1, shape[-2], shape[-1])
        out = np.empty(planes.shape, np.uint8)
        for k in range(planes.shape[0]):
            out[k] = cv2.equalizeHist(np.ascontiguousarray(planes[k]))
        result = out.reshape(shape)
        if layout.endswith("HWC"):
            result = np.moveaxis(result, -3, -1)
        if out_given is not None:
            out_given[...] = result
            return out_given
        return np.ascontiguousarray(result)

    def gpu(self, sample: Any, *, layout: str, out: Any = None, **_: Any) -> Any:
        """``equalizeHist`` of every plane on ``sample``'s array module (CuPy on the GPU):
        one ``bincount``, ``cumsum`` and ``take`` for all planes (see the module docstring)."""
        if not layout:
            layout = {2: "HW", 3: "HWC"}[sample.ndim]
        xp = backend.array_module(sample)
        if sample.size == 0:
            return sample.copy()
        if layout.endswith("HWC"):  # (frames, pixels, channels): the planes are the channels
            h, w, c = sample.shape[-3:]
            values = sample.reshape(-1, h * w, c)
        else:  # (planes, pixels, 1)
            h, w = sample.shape[-2:]
            values = sample.reshape(-1, h * w, 1)
        frames, pixels, channels = values.shape
        planes = frames * channels
        plane = np.arange(planes, dtype=np.int64).reshape(frames, 1, channels) * 256
        index = values.astype(np.int64) + xp.asarray(plane)
        hist = xp.bincount(index.reshape(-1), minlength=256 * planes).reshape(planes, 256)
        cdf = xp.cumsum(hist, axis=1)
        # cdf(v_min): the smallest non-zero cumulative count (the counts before v_min are 0).
        first = xp.where(cdf > 0, cdf, pixels + 1).min(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = 255.0 / (pixels - first).astype(np.float32)  # float32, as OpenCV's
            lut = xp.rint((cdf - first).astype(np.float32) * scale)
        lut = xp.clip(lut, 0, 255)
        identity = xp.asarray(np.arange(256, dtype=np.float32))[None, :]
        lut = xp.where(first == pixels, identity, lut).astype(np.uint8)  # a constant plane
        result = lut.reshape(-1).take(index).reshape(sample.shape)
        if out is not None:
            out[...] = result
            return out
        return result


register(
    OperatorSchema(
        name="equalize",
        class_name="Equalize",
        impl=Equalize,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Histogram equalization of each channel (and each frame) of uint8 images, as "
            "OpenCV's equalizeHist: the cumulative histogram, from the smallest value present, "
            "stretched over 0..255 (a constant channel is left as it is). Layouts HW, HWC, CHW, "
            "FHW, FHWC, FCHW."
        ),
    )
)


@described("a power of two >= 2")
def _bins(value: Any) -> int:
    n = to_int(2)(value)
    if n & (n - 1):
        raise ValueError(f"must be a power of two, got {n}")
    return n


class Clahe(_Planes):
    """OpenCV's CLAHE on the plane(s): the gray channel, the L of Lab, or each channel."""

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if sample.ndim != 3 or layout not in ("HWC", "") or sample.shape[2] not in (1, 3):
            raise ValueError(
                f"clahe needs HWC images with 1 or 3 channels; got a sample of shape "
                f"{tuple(sample.shape)}{f' with layout {layout!r}' if layout else ''}"
            )
        _uint8("clahe", sample)
        if 0 in sample.shape or max(sample.shape[:2]) >= 2**31:
            raise ValueError(f"clahe needs a non-empty image, got shape {tuple(sample.shape)}")

    def cpu(
        self,
        sample: Any,
        *,
        tiles_x: int,
        tiles_y: int,
        clip_limit: float,
        luma_only: bool,
        out: np.ndarray | None = None,
        **_: Any,
    ) -> Any:
        """The equalized sample; into ``out`` (contiguous, the sample's shape) when given. The
        Lab image and the planes are this thread's scratch arrays."""
        cv2 = self.cv2
        # One object per call: an OpenCV CLAHE keeps buffers, so it is not shared by threads.
        # A limit above 256 never clips (it exceeds every bin); OpenCV's int conversion of a
        # huge one overflows, so it is capped where the result cannot change.
        limit = min(float(clip_limit), 512.0)
        clahe = cv2.createCLAHE(clipLimit=limit, tileGridSize=(tiles_x, tiles_y))
        x = np.ascontiguousarray(sample)
        h, w, c = x.shape
        if out is None:
            out = np.empty(x.shape, np.uint8)
        if c == 1:
            target = out[:, :, 0]
            _into(clahe.apply(x[:, :, 0], dst=target), target)
            return out
        if luma_only:
            lab = self.scratch("lab", (h, w, 3))
            light, equalized = self.scratch("light", (h, w)), self.scratch("equalized", (h, w))
            _into(cv2.cvtColor(x, cv2.COLOR_RGB2LAB, dst=lab), lab)
            _into(cv2.extractChannel(lab, 0, dst=light), light)
            _into(clahe.apply(light, dst=equalized), equalized)
            _into(cv2.insertChannel(equalized, lab, 0), lab)
            _into(cv2.cvtColor(lab, cv2.COLOR_LAB2RGB, dst=out), out)
            return out
        planes = list(self.scratch("planes", (c, h, w)))
        results = list(self.scratch("equalized_planes", (c, h, w)))
        for k, (plane, result) in enumerate(zip(planes, results, strict=True)):
            _into(cv2.extractChannel(x, k, dst=plane), plane)
            _into(clahe.apply(plane, dst=result), result)
        _into(cv2.merge(results, dst=out), out)
        return out


register(
    OperatorSchema(
        name="clahe",
        class_name="Clahe",
        impl=Clahe,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        doc=(
            "Contrast Limited Adaptive Histogram Equalization of uint8 HWC images (1 or 3 "
            "channels), as OpenCV's CLAHE: the image is cut into ``tiles_x`` by ``tiles_y`` "
            "tiles, each tile's histogram is clipped at ``clip_limit`` times the uniform bin "
            "height (the excess spread over all bins) and equalized, and the tiles' lookup "
            "tables are blended bilinearly. RGB images are equalized on their luminance (the L "
            "of L*a*b*) with ``luma_only=True`` (the default; the input must be RGB, not BGR), "
            "on each channel otherwise."
        ),
        args=[
            Arg("tiles_x", "number of tiles along the width", REQUIRED, to_int(1, 256)),
            Arg("tiles_y", "number of tiles along the height", REQUIRED, to_int(1, 256)),
            Arg(
                "clip_limit",
                "clip limit, relative to a uniform histogram (<= 0: no clipping)",
                REQUIRED,
                to_float(),
            ),
            Arg("bins", "number of histogram bins (the CPU kernel uses 256)", 256, _bins),
            Arg("luma_only", "RGB: equalize the luminance only", True, to_bool),
        ],
    )
)
