"""``fn.color_space_conversion``: converts images between RGB, BGR, GRAY and YCbCr
(``image_type`` -> ``output_type``), as DALI's ColorSpaceConversion.

DALI's conversions (checked level by level against DALI 2.4's uint8 outputs):

- GRAY is BT.601 luma, ``0.299 R + 0.587 G + 0.114 B``, computed for uint8 as OpenCV's
  ``cvtColor`` computes it (fixed point, 14 bits), which is what DALI's CPU operator gives: at
  near-halves (106.499) it can differ by a level from rounding the float formula.
- YCbCr is BT.601 **limited range** (studio swing), not JPEG's full range:
  ``Y = 16 + (65.481 R + 128.553 G + 24.966 B) / 255``,
  ``Cb = 128 + (-37.797 R - 74.203 G + 112 B) / 255``,
  ``Cr = 128 + (112 R - 93.786 G - 18.214 B) / 255``; black is (16, 128, 128) and white
  (235, 128, 128). The inverse is its exact inverse matrix (``R = 255/219 (Y - 16) + ...``),
  saturated to 0..255.
- GRAY -> YCbCr gives ``(16 + 219/255 G, 128, 128)``; YCbCr -> GRAY is ``255/219 (Y - 16)``
  (the chroma is ignored); GRAY -> RGB/BGR repeats the channel.
- Differences from DALI: DALI's CPU operator takes uint8 only and refuses a conversion to the
  same space; augkit also takes float32/float64 images in [0, 1] (the same matrices with the
  offsets divided by 255, no rounding) and returns a copy for a conversion to the same space.

The kernel is one ``cv2.transform`` (a 3x4 or 1x4 matrix with the offsets) or ``cv2.cvtColor``
(channel swaps, GRAY <-> RGB) per image. Trap: OpenCV's uint8 ``transform`` is fixed-point and
misses DALI's YCbCr level on about one pixel in ten; augkit transforms the image as float32 (as
DALI computes) and rounds with ``convert_sat`` (halves away from zero, saturated). That matches
DALI except at exact-looking ties (Cr of 128.49999 from RGB (14, 14, 7)), where DALI's order of
float32 operations rounds the other way: 1 or 2 pixels in 15,000, by one level (parity notes).
Any layout with the channels last is accepted (HWC, DHWC, FHWC, FDHWC; no layout: HWC).

GPU (``device="gpu"``): ``ColorSpaceConversion.gpu`` is written once against the array module
(CuPy there): channel swaps and copies are slices and ``broadcast_to`` (exact); uint8 luma is
OpenCV 5's 15-bit fixed point in int32 (exact: checked on all 2**24 colours); the rest is
``affine``, one float32 ufunc per multiply and add with the matrices computed on the host, then
``convert_sat``. OpenCV's ``transform`` uses fused multiply-adds, so these differ from the
CPU's by an ulp or two (floats) or a level at a few pixels in 10**6 (uint8), within the CPU's
own distance to DALI (tests/dali_parity/cases_color_convert.py: one level, mean 2e-4).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.layouts import COLOR_IMAGE
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
)

_SPACES = ("RGB", "BGR", "GRAY", "YCbCr")
# The one float32 below 0.5 whose sum with 0.5 rounds up to 1.0 (see _transform_uint8).
_BELOW_HALF = np.nextafter(np.float32(0.5), np.float32(0))
_CHANNELS = {"RGB": 3, "BGR": 3, "GRAY": 1, "YCbCr": 3}


@described("types.RGB, types.BGR, types.GRAY or types.YCbCr")
def to_color_space(value: Any) -> types.DALIImageType:
    if isinstance(value, str):
        for name in _SPACES:
            if value.upper() == name.upper():
                return types.DALIImageType[name]
    if isinstance(value, (types.DALIImageType, int)) and not isinstance(value, bool):
        try:
            space = types.DALIImageType(value)
        except ValueError:
            space = None
        if space is not None and space.name in _SPACES:
            return space
    raise ValueError(f"expected types.RGB, types.BGR, types.GRAY or types.YCbCr, got {value!r}")


# RGB -> YCbCr (BT.601, limited range), per unit of 8-bit level.
_YCBCR = (
    np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]])
    / 255.0
)
_YCBCR_OFFSET = np.array([16.0, 128.0, 128.0])
_LUMA = np.array([0.299, 0.587, 0.114])
_RGB_OF_YCBCR = np.linalg.inv(_YCBCR)


def conversion_matrix(src: str, dst: str, scale: float) -> np.ndarray | None:
    """The affine map ``src`` -> ``dst`` as a ``(C_out, C_in + 1)`` matrix (last column: the
    offset) for values in ``[0, scale]`` (255 for uint8, 1 for floats); ``None`` where the
    conversion is a channel copy or swap (cvtColor)."""
    unit = scale / 255.0
    if src in ("RGB", "BGR") and dst in ("RGB", "BGR"):
        return None
    if src == "GRAY" and dst in ("RGB", "BGR"):
        return None
    if src in ("RGB", "BGR"):
        order = slice(None) if src == "RGB" else slice(None, None, -1)
        if dst == "GRAY":
            return np.concatenate([_LUMA[order], [0.0]])[None]
        return np.concatenate([_YCBCR[:, order], (_YCBCR_OFFSET * unit)[:, None]], axis=1)
    if src == "GRAY":  # -> YCbCr
        return np.array([[219.0 / 255.0, 16.0 * unit], [0.0, 128.0 * unit], [0.0, 128.0 * unit]])
    # src == "YCbCr"
    if dst == "GRAY":
        return np.array([[255.0 / 219.0, 0.0, 0.0, -16.0 * unit * 255.0 / 219.0]])
    order = slice(None) if dst == "RGB" else slice(None, None, -1)
    m = _RGB_OF_YCBCR[order]
    return np.concatenate([m, (-(m @ _YCBCR_OFFSET) * unit)[:, None]], axis=1)


# OpenCV 5's uint8 RGB -> GRAY: round(2**15 * (0.299, 0.587, 0.114)), with a rounding shift of
# 15 bits (checked against cv2.cvtColor on all 2**24 colours).
_R15, _G15, _B15 = 9798, 19235, 3735


def affine(sample: Any, matrix: np.ndarray, xp: Any) -> Any:
    """``matrix`` (``(C_out, C_in + 1)``, offsets last, on the host) applied to every pixel
    of a channel-last ``sample`` of ``xp``: per output channel ``((m0*x0 + m1*x1) + m2*x2) +
    m3`` in float32 (float64 for float64 samples), one ufunc call per operation; uint8
    results are rounded with ``convert_sat``, float ones keep the input type. OpenCV's
    ``transform`` (the CPU kernel) sums with fused multiply-adds: the float results differ by
    an ulp or two, uint8 ones by a level at about 5 pixels in 10**6 (all 2**24 colours)."""
    work = np.dtype(np.float64 if sample.dtype == np.float64 else np.float32)
    m = np.asarray(matrix, work)
    inputs = [sample[..., j].astype(work) for j in range(m.shape[1] - 1)]
    planes = []
    with np.errstate(over="ignore", invalid="ignore"):
        for row in m:
            acc = inputs[0] * row[0]
            for x, weight in zip(inputs[1:], row[1:-1], strict=True):
                acc = acc + x * weight
            acc = acc + row[-1]
            planes.append(convert_sat(acc, sample.dtype, xp))
    return xp.stack(planes, axis=-1)


class ColorSpaceConversion(SampleOperator):
    """One cv2 call per image (``conversion_matrix``)."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()
        self.src = self.args["image_type"].name
        self.dst = self.args["output_type"].name
        self.scratch = _Scratch()
        self.matrices = {
            scale: conversion_matrix(self.src, self.dst, scale) for scale in (255.0, 1.0)
        }

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if layout and not layout.endswith("C"):
            raise ValueError(
                f"color_space_conversion needs the channels last (HWC, DHWC, FHWC, FDHWC), got "
                f'layout "{layout}"'
            )
        if sample.ndim < 3:
            raise ValueError(
                f"color_space_conversion needs images with a channel axis (HWC), got a sample "
                f"of shape {tuple(sample.shape)}"
            )
        need = _CHANNELS[self.src]
        if sample.shape[-1] != need:
            raise ValueError(
                f"color_space_conversion: image_type {self.src} needs {need} channel(s), got a "
                f"sample of shape {tuple(sample.shape)}"
            )
        if sample.dtype not in (np.uint8, np.float32, np.float64):
            raise ValueError(
                f"color_space_conversion takes uint8 images (or float32/float64 in [0, 1]); got "
                f"{sample.dtype.name}"
            )

    def cpu(self, sample: Any, **_: Any) -> Any:
        cv2 = self.cv2
        shape = sample.shape
        if self.src == self.dst:
            return np.array(sample)
        if sample.size == 0:
            return np.zeros((*shape[:-1], _CHANNELS[self.dst]), sample.dtype)
        # Rows of whole image rows: OpenCV's per-row overhead makes (N, 1) rows ten times slower.
        flat = np.ascontiguousarray(sample).reshape(-1, shape[-2], shape[-1])
        if max(flat.shape[:2]) > np.iinfo(np.int32).max:
            raise ValueError("color_space_conversion: the image is too large for OpenCV")
        if self.src in ("RGB", "BGR") and self.dst in ("RGB", "BGR"):
            out = cv2.cvtColor(flat, cv2.COLOR_RGB2BGR)
        elif self.src == "GRAY" and self.dst in ("RGB", "BGR"):
            out = cv2.cvtColor(flat, cv2.COLOR_GRAY2RGB)
        elif self.dst == "GRAY" and self.src != "YCbCr" and sample.dtype == np.uint8:
            # OpenCV's fixed-point luma: DALI's CPU levels exactly (its float32 formula is
            # off by a level near halves).
            code = cv2.COLOR_RGB2GRAY if self.src == "RGB" else cv2.COLOR_BGR2GRAY
            out = cv2.cvtColor(flat, code)
        else:
            if sample.dtype == np.uint8:
                # In float32 (cv2's uint8 transform is fixed-point: off by a level at times).
                out = self._transform_uint8(flat)
            else:
                out = cv2.transform(flat, self.matrices[1.0])
        return out.reshape(*shape[:-1], _CHANNELS[self.dst])

    def gpu(self, sample: Any, **_: Any) -> Any:
        """The CPU kernel's conversions without OpenCV, on ``sample``'s array module (CuPy on
        the GPU; see the module docstring): swaps and copies of channels, OpenCV's 15-bit
        fixed-point luma for uint8 GRAY, else the affine map in float32 (float64 for float64
        images), rounded with ``convert_sat`` for uint8."""
        xp = backend.array_module(sample)
        shape = sample.shape
        channels = _CHANNELS[self.dst]
        if self.src == self.dst:
            return xp.array(sample, copy=True)
        if sample.size == 0:
            return xp.zeros((*shape[:-1], channels), sample.dtype)
        colour = ("RGB", "BGR")
        if self.src in colour and self.dst in colour:
            return xp.ascontiguousarray(sample[..., ::-1])
        if self.src == "GRAY" and self.dst in colour:
            return xp.ascontiguousarray(xp.broadcast_to(sample, (*shape[:-1], channels)))
        if self.dst == "GRAY" and self.src != "YCbCr" and sample.dtype == np.uint8:
            r, b = (0, 2) if self.src == "RGB" else (2, 0)
            x = sample.astype(np.int32)
            luma = x[..., r] * _R15 + x[..., 1] * _G15 + x[..., b] * _B15 + (1 << 14)
            return xp.right_shift(luma, 15).astype(np.uint8)[..., None]
        matrix = self.matrices[255.0 if sample.dtype == np.uint8 else 1.0]
        assert matrix is not None  # the copies and swaps (no matrix) are handled above
        return affine(sample, matrix, xp)

    def _transform_uint8(self, flat: np.ndarray) -> np.ndarray:
        """``convert_sat(cv2.transform(float32(flat), m), uint8)``, fast: in this thread's
        scratch buffers (no fresh pages per image), rounded as ``floor(v + 0.5)``, which is
        round-half-away-from-zero with saturation for every float32 ``v`` except
        0.49999997 (the sum rounds up to 1.0), set back to 0 here."""
        scratch = self.scratch
        rows, cols, _ = flat.shape
        channels = _CHANNELS[self.dst]
        values_in = scratch.get("in", flat.shape, np.float32)
        np.copyto(values_in, flat)
        values = scratch.get("out", (rows, cols, channels), np.float32)
        dst = values if channels > 1 else values[..., 0]
        self.cv2.transform(values_in, self.matrices[255.0], dst=dst)
        below_half = scratch.get("mask", values.shape, np.bool_)
        np.equal(values, _BELOW_HALF, out=below_half)
        values += np.float32(0.5)
        np.floor(values, out=values)
        if below_half.any():
            values[below_half] = 0
        np.clip(values, 0, 255, out=values)
        return values.astype(np.uint8)


class _Scratch(threading.local):
    """Per-thread work arrays, kept between images of one shape."""

    def get(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        buf = self.__dict__.get(name)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = np.empty(shape, dtype)
            setattr(self, name, buf)
        return buf


register(
    OperatorSchema(
        name="color_space_conversion",
        class_name="ColorSpaceConversion",
        impl=ColorSpaceConversion,
        accepts=[COLOR_IMAGE],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Converts images from ``image_type`` to ``output_type`` (types.RGB, types.BGR, "
            "types.GRAY, types.YCbCr), channels last (HWC, DHWC, FHWC, FDHWC). GRAY is BT.601 "
            "luma (0.299 R + 0.587 G + 0.114 B); YCbCr is BT.601 limited range (Y in 16..235, "
            "Cb and Cr in 16..240, centred at 128), as in DALI; uint8 results are rounded to "
            "the nearest level and saturated. Differences from DALI: float32/float64 images in "
            "[0, 1] are accepted too (DALI's CPU operator: uint8 only), and a conversion to the "
            "same space gives a copy (DALI refuses it)."
        ),
        args=[
            Arg("image_type", "the colour space of the input", REQUIRED, to_color_space),
            Arg("output_type", "the colour space of the output", REQUIRED, to_color_space),
        ],
    )
)
