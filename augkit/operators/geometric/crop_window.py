"""DALI's random crop window generator (``RandomCropGenerator``, ``random_crop_generator.cc``),
shared by ``fn.random_resized_crop`` and ``fn.decoders.image_random_crop``.

The algorithm, in float32 where DALI uses float (verified against DALI 2.4's source and its
outputs; the *values* drawn differ from DALI's, whose Philox streams augkit does not share):

1. Two impossible cases first: with ``maxW = max(1, int(H * max_ratio))`` and
   ``maxH = max(1, int(W / min_ratio))``, an image too wide for even the smallest area at the
   largest aspect ratio (``H * maxW < min_area``) gets the window (H, maxW); one too tall gets
   (maxH, W).
2. Otherwise up to ``num_attempts`` times: area fraction ``s ~ U(area)``, aspect ratio
   ``r = exp(U(log ratio range))`` (log-uniform: symmetric between r and 1/r),
   ``w = max(1, roundf(sqrt(s*H*W*r)))``, ``h = max(1, roundf(sqrt(s*H*W/r)))``; accept when
   it fits the image and ``w / h`` (after rounding) is still in the ratio range.
3. After the attempts fail, the fall-back: the whole image, or the widest/tallest window of the
   extreme aspect ratio where the image's own ratio is outside the range, shrunk (by
   ``sqrt(scale)`` on each side) to at most the largest area fraction.
4. The anchor is uniform over the positions that keep the window inside the image (also for
   the fall-back: a non-square fall-back window is placed at random, not centred).

``random_crop_window`` takes the sample's NumPy Generator (the operator's per-sample stream),
so a sample's window depends only on its seed, its iteration and its index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit.operators.registry import described, to_floats

_f32 = np.float32


def _roundf(x: np.float32) -> int:
    """C's ``roundf``: halves away from zero."""
    return math.floor(abs(float(x)) + 0.5) * (1 if x >= 0 else -1)


def random_crop_window(
    height: int,
    width: int,
    rng: np.random.Generator,
    aspect_ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    area: Sequence[float] = (0.08, 1.0),
    num_attempts: int = 10,
) -> tuple[int, int, int, int]:
    """One random window ``(y, x, h, w)`` of an ``height`` x ``width`` image (module docstring).

    Example:
        >>> random_crop_window(100, 120, np.random.default_rng(0), area=(1.5, 2.0))
        (0, 0, 100, 120)
    """
    if height <= 0 or width <= 0:
        return 0, 0, 0, 0
    min_ratio, max_ratio = _f32(aspect_ratio[0]), _f32(aspect_ratio[1])
    area_lo, area_hi = _f32(area[0]), _f32(area[1])
    with np.errstate(all="ignore"):
        log_lo, log_hi = np.log(min_ratio), np.log(max_ratio)
        min_area = _f32(_f32(width * height) * area_lo)
        max_w = max(1, _trunc(_f32(height) * max_ratio))
        max_h = max(1, _trunc(_f32(width) * (_f32(1) / min_ratio)))
        if height * max_w < min_area:  # too wide
            h, w = height, max_w
        elif width * max_h < min_area:  # too tall
            h, w = max_h, width
        else:
            found = False
            original = _f32(height * width)
            for _ in range(num_attempts):
                scale = _f32(area_lo + _f32(area_hi - area_lo) * _f32(rng.random()))
                target = _f32(scale * original)
                ratio = _f32(np.exp(_f32(log_lo + _f32(log_hi - log_lo) * _f32(rng.random()))))
                w = max(1, _roundf(np.sqrt(_f32(target * ratio))))
                h = max(1, _roundf(np.sqrt(_f32(target / ratio))))
                got = _f32(_f32(w) / _f32(h))
                if w <= width and h <= height and min_ratio <= got <= max_ratio:
                    found = True
                    break
            if not found:
                max_area = _f32(_f32(area_hi * width) * height)
                own = _f32(_f32(width) / _f32(height))
                if own > max_ratio:
                    h, w = height, max_w
                elif own < min_ratio:
                    h, w = max_h, width
                else:
                    h, w = height, width
                scale = min(_f32(1.0), _f32(max_area / _f32(h * w)))
                root = np.sqrt(scale)
                h = max(1, _trunc(_f32(h * root)))
                w = max(1, _trunc(_f32(w * root)))
    h, w = min(h, height), min(w, width)
    y = int(rng.integers(0, height - h + 1))
    x = int(rng.integers(0, width - w + 1))
    return y, x, h, w


def _trunc(x: Any) -> int:
    value = float(x)
    return int(value) if math.isfinite(value) else 0


@described("1 or 2 numbers (low, high), low <= high")
def to_range(value: Any) -> tuple[float, float]:
    """A (low, high) range from one value (low = high) or two, as DALI's
    ``GetSingleOrRepeatedArg``; refuses an empty range (low > high)."""
    values = to_floats()(value)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ValueError(f"expected 1 or 2 numbers (low, high), got {len(values)}")
    if values[0] > values[1]:
        raise ValueError(f"provided empty range: {values[0]} > {values[1]}")
    return values


@described("1 or 2 positive numbers (low, high), low <= high")
def to_ratio_range(value: Any) -> tuple[float, float]:
    values = to_range(value)
    if values[0] <= 0:
        raise ValueError(f"aspect ratios must be > 0, got {values[0]}")
    return values
