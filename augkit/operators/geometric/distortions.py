"""``fn.water``, ``fn.sphere`` and ``fn.jitter``: DALI's displacement filters on HWC images.

Each output pixel ``(x, y)`` reads the input at a displaced point, sampled by DALI's
``Sampler2D`` (``warp.sample_points``: nearest is exact, linear is OpenCV's ``remap``):

- ``water``: ``(x + ampl_x * sin(freq_x * y + phase_x), y + ampl_y * cos(freq_y * x +
  phase_y))``. The default frequencies are ``2 * pi / 128`` (DALI's docs print 0.049087; the
  rounded value moves some pixels).
- ``sphere``: with the image centre ``m = (W / 2, H / 2)``, ``d = int(max(m))`` (truncated, as
  DALI), ``t = (x + 0.5, y + 0.5) - m``: ``m + t * |t| / d``.
- ``jitter``: ``(x + dx, y + dy)`` with ``dx, dy`` drawn uniformly from
  ``[-nDegree // 2, nDegree - 1 - nDegree // 2]`` per pixel (DALI's ``rand() % nDegree -
  nDegree / 2``), then clamped to ``[0, W]`` and ``[0, H]``, as DALI's GPU kernel does (DALI has
  jitter on the GPU only; augkit has it on both devices, its draws from the sample's random
  stream, so they differ from DALI's).

Decisions and traps, checked against DALI 2.4 (``displacement_filter_impl_cpu.h``,
``water.h``, ``sphere.h``, ``jitter.cuh``) and by running it:

- The displaced points are corner coordinates *without* the half-pixel offset (``water``,
  ``jitter``: the pixel index itself): nearest sampling reads pixel ``floor(p)`` (zero
  amplitude: the identity), but linear sampling interpolates around ``p - 0.5``, so even a
  zero-amplitude linear ``water`` shifts the image by half a pixel and blends the top and left
  edges with the fill value. Tested.
- Points are computed in float32 in DALI's order (``sin``/``cos`` of the float32 argument).
- Outside the image taps read ``fill_value`` (default 0), converted to the input type the way
  C++ converts a float to uint8: truncated toward zero and wrapped modulo 256 (300 -> 44, -5
  -> 251; beyond the int32 range: 0), as DALI does; there is no border clamping.
- ``mask`` (per sample, default 1): 0 gives the input unchanged.
- Types: uint8 and float32 only; layout HWC; only INTERP_NN (the default) and INTERP_LINEAR.
- Speed (320x320 uint8 RGB, one thread, DALI 2.4 timed in the same process): water 3.3x
  DALI's (linear 4.4x), sphere 1.3x (linear 3.4x). Parity: nearest equal; linear (OpenCV 5's
  float32 ``remap`` at DALI's points) equal on the parity inputs, 1 level possible where a
  value lands next to .5.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.geometric import warp
from augkit.operators.layouts import HWC_IMAGE, check_image
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_float,
    to_int,
)

_TYPES = (np.dtype(np.uint8), np.dtype(np.float32))
_F32 = np.float32
DEFAULT_FREQ = 2 * math.pi / 128


def dali_fill(value: float, dtype: np.dtype) -> float:
    """``fill_value`` as DALI's displacement filters store it in the input type: a C++
    float-to-uint8 conversion (truncate toward zero, keep the low byte; 0 beyond int32) for
    uint8, float32 for float."""
    if np.dtype(dtype) == np.uint8:
        whole = math.trunc(value)
        return float(whole & 0xFF) if -(2**31) <= whole < 2**31 else 0.0
    with np.errstate(over="ignore"):  # beyond float32's range: inf, as in C++
        return float(_F32(value))


class DisplacementImpl(SampleOperator):
    """A displacement filter: ``points(image shape, rng?, **args)`` gives the float32 source
    points (x, y), which the sampler reads."""

    moves_geometry = True
    """It moves pixels (a displacement field) (``OperatorImpl.moves_geometry``)."""

    label_name = ""

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_image(self.label_name, sample, layout, ("HWC",), _TYPES)

    def points(self, height: int, width: int, **args: Any) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def cpu(self, image: np.ndarray, **args: Any) -> np.ndarray:
        return self._displace(image, self.cv2, **args)

    def gpu(self, image: Any, **args: Any) -> Any:
        """The CPU kernel's host-made points (the same draws, for jitter), sampled on
        ``image``'s device by DALI's formulas (``warp._sample_numpy``; see the module
        docstring)."""
        return self._displace(image, None, **args)

    def _displace(
        self,
        image: Any,
        cv2: Any,
        *,
        mask: int,
        fill_value: float,
        interp_type: types.DALIInterpType,
        **args: Any,
    ) -> Any:
        if not mask:
            return image
        height, width = image.shape[:2]
        sx, sy = self.points(height, width, **args)
        interp = warp.NEAREST if interp_type == types.INTERP_NN else warp.LINEAR
        fill = dali_fill(fill_value, image.dtype)
        if cv2 is not None:
            return warp.sample_points(image, sx, sy, interp=interp, fill=fill, cv2=cv2)
        xp = backend.array_module(image)
        return warp._sample_numpy(
            image, xp.asarray(sx), xp.asarray(sy), interp, fill, np.dtype(image.dtype)
        )


def water_points(
    height: int,
    width: int,
    ampl_x: float,
    ampl_y: float,
    freq_x: float,
    freq_y: float,
    phase_x: float,
    phase_y: float,
) -> tuple[np.ndarray, np.ndarray]:
    """DALI's water source points, float32: x moves with the row, y with the column."""
    rows = np.arange(height, dtype=_F32)
    cols = np.arange(width, dtype=_F32)
    with np.errstate(over="ignore", invalid="ignore"):
        dx = _F32(ampl_x) * np.sin(_F32(freq_x) * rows + _F32(phase_x))
        dy = _F32(ampl_y) * np.cos(_F32(freq_y) * cols + _F32(phase_y))
        sx = cols[None, :] + dx[:, None]
        sy = rows[:, None] + dy[None, :]
    return sx, sy


def sphere_points(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """DALI's sphere source points, float32 (``d`` truncated to an integer, as DALI)."""
    mid_x = _F32(width) * _F32(0.5)
    mid_y = _F32(height) * _F32(0.5)
    d = _F32(int(max(mid_x, mid_y)))
    ty = (np.arange(height, dtype=_F32) + _F32(0.5) - mid_y)[:, None]
    tx = (np.arange(width, dtype=_F32) + _F32(0.5) - mid_x)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        rad = np.sqrt(tx * tx + ty * ty) / d
        return mid_x + rad * tx, mid_y + rad * ty


def jitter_points(
    height: int, width: int, n_degree: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """DALI's jitter source points: each pixel moved by ``r - n_degree // 2`` (``r`` uniform in
    ``[0, n_degree)``) in x and y, clamped to ``[0, W]`` x ``[0, H]``."""
    half = n_degree // 2
    draws = rng.integers(0, n_degree, size=(2, height, width), dtype=np.int32)
    cols = np.arange(width, dtype=np.int32)[None, :] - half
    rows = np.arange(height, dtype=np.int32)[:, None] - half
    sx = np.clip(draws[0] + cols, 0, width).astype(_F32)
    sy = np.clip(draws[1] + rows, 0, height).astype(_F32)
    return sx, sy


class WaterImpl(DisplacementImpl):
    label_name = "water"

    def points(self, height, width, **args):
        return water_points(
            height,
            width,
            args["ampl_x"],
            args["ampl_y"],
            args["freq_x"],
            args["freq_y"],
            args["phase_x"],
            args["phase_y"],
        )


class SphereImpl(DisplacementImpl):
    label_name = "sphere"

    def points(self, height, width, **args):
        return sphere_points(height, width)


class JitterImpl(DisplacementImpl):
    label_name = "jitter"
    random = True

    def points(self, height, width, **args):
        return jitter_points(height, width, args["nDegree"], args["rng"])


# --- the schemas -----------------------------------------------------------------------------

_INPUT = [HWC_IMAGE]


def _common(interp_doc: str) -> list[Arg]:
    return [
        Arg("fill_value", "value of the taps outside the image", 0.0, to_float()),
        Arg("interp_type", interp_doc, types.INTERP_NN, warp.to_warp_interp),
        Arg("mask", "per sample: 0 leaves the image unchanged, 1 applies", 1, to_int(), True),
    ]


_INTERP = "types.INTERP_NN (default) or types.INTERP_LINEAR"

register(
    OperatorSchema(
        name="water",
        class_name="Water",
        impl=WaterImpl,
        accepts=_INPUT,
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc="""Make images (uint8 or float, HWC) look seen through water, as DALI's
``fn.water``: the pixels of row y move along x by ``ampl_x * sin(freq_x * y + phase_x)``,
those of column x along y by ``ampl_y * cos(freq_y * x + phase_y)``.

Example, in a pipeline definition::

    images = fn.water(images, ampl_x=5, ampl_y=5, mask=fn.random.coin_flip(probability=0.5))
""",
        args=[
            Arg("ampl_x", "amplitude of the wave in the x direction (pixels)", 10.0),
            Arg("ampl_y", "amplitude of the wave in the y direction (pixels)", 10.0),
            Arg("freq_x", "frequency of the wave in the x direction", DEFAULT_FREQ),
            Arg("freq_y", "frequency of the wave in the y direction", DEFAULT_FREQ),
            Arg("phase_x", "phase of the wave in the x direction", 0.0),
            Arg("phase_y", "phase of the wave in the y direction", 0.0),
            *_common(_INTERP),
        ],
    )
)

register(
    OperatorSchema(
        name="sphere",
        class_name="Sphere",
        impl=SphereImpl,
        accepts=_INPUT,
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc="""Bulge images (uint8 or float, HWC) as if wrapped on a sphere, as DALI's
``fn.sphere``: each pixel reads the point ``m + t * |t| / d`` (``m``: the image centre, ``t``:
the pixel centre's offset from it, ``d``: half the longer side), so the centre is magnified and
the corners fill with ``fill_value``.""",
        args=_common(_INTERP),
    )
)


@described("an integer >= 1", 1)
def _n_degree(value: Any) -> int:
    return to_int(1, 2**31 - 1)(value)


register(
    OperatorSchema(
        name="jitter",
        class_name="Jitter",
        impl=JitterImpl,
        accepts=_INPUT,
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc="""Move each pixel of images (uint8 or float, HWC) by a random whole number of
pixels in x and y, within ``nDegree`` (DALI's ``fn.jitter``, which DALI runs on the GPU only;
augkit runs it on the CPU and the GPU, the draws from the operator's seeded per-sample streams,
the same on both devices).""",
        args=[
            Arg(
                "nDegree",
                "each pixel moves by a draw in [-nDegree // 2, nDegree - 1 - nDegree // 2]",
                2,
                _n_degree,
            ),
            *_common(_INTERP),
        ],
    )
)
