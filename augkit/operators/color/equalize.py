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
- Differences from DALI: tiles_x/tiles_y must be in 1..256 (DALI's CPU operator crashes on 0;
  more tiles than that would only allocate tables for tiles of less than a pixel).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.base import SampleOperator
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

_EQUALIZE_LAYOUTS = ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW")


def _uint8(operator: str, sample: Any) -> None:
    if sample.dtype != np.uint8:
        raise ValueError(f"{operator} takes uint8 images, got {sample.dtype.name}")


class Equalize(SampleOperator):
    """``cv2.equalizeHist`` on every 2-D plane (channel, frame)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

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

    def cpu(self, sample: Any, *, layout: str, **_: Any) -> Any:
        if not layout:
            layout = {2: "HW", 3: "HWC"}[sample.ndim]
        x = np.ascontiguousarray(sample)
        if x.size == 0:
            return np.array(x)
        cv2 = self.cv2
        if layout.endswith("HWC") and x.shape[-1] <= 512:
            # Channels interleaved: split, equalize each plane, merge (frame by frame).
            h, w, c = x.shape[-3:]
            frames = x.reshape(-1, h, w, c)
            out = np.empty_like(frames)
            for f in range(frames.shape[0]):
                if c == 1:
                    out[f, :, :, 0] = cv2.equalizeHist(frames[f, :, :, 0])
                else:
                    planes = [cv2.equalizeHist(p) for p in cv2.split(frames[f])]
                    cv2.merge(planes, dst=out[f])
            return out.reshape(x.shape)
        # To planes: (P, H, W).
        planes = np.moveaxis(x, -1, -3) if layout.endswith("HWC") else x
        shape = planes.shape
        planes = planes.reshape(-1, shape[-2], shape[-1])
        out = np.empty(planes.shape, np.uint8)
        for k in range(planes.shape[0]):
            out[k] = cv2.equalizeHist(np.ascontiguousarray(planes[k]))
        out = out.reshape(shape)
        if layout.endswith("HWC"):
            out = np.moveaxis(out, -3, -1)
        return np.ascontiguousarray(out)


register(
    OperatorSchema(
        name="equalize",
        class_name="Equalize",
        impl=Equalize,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
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


class Clahe(SampleOperator):
    """OpenCV's CLAHE on the plane(s): the gray channel, the L of Lab, or each channel."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

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
        **_: Any,
    ) -> Any:
        cv2 = self.cv2
        # One object per call: an OpenCV CLAHE keeps buffers, so it is not shared by threads.
        # A limit above 256 never clips (it exceeds every bin); OpenCV's int conversion of a
        # huge one overflows, so it is capped where the result cannot change.
        limit = min(float(clip_limit), 512.0)
        clahe = cv2.createCLAHE(clipLimit=limit, tileGridSize=(tiles_x, tiles_y))
        x = np.ascontiguousarray(sample)
        if x.shape[2] == 1:
            return clahe.apply(x[:, :, 0])[:, :, None]
        if luma_only:
            lab = cv2.cvtColor(x, cv2.COLOR_RGB2LAB)
            lab[:, :, 0] = clahe.apply(np.ascontiguousarray(lab[:, :, 0]))
            return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
        return cv2.merge([clahe.apply(p) for p in cv2.split(x)])


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
