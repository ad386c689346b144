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

The arguments (``window_args``: DALI's ``RandomCropAttr`` schema, the parent of
``fn.random_resized_crop``, ``fn.decoders.image_random_crop`` and ``fn.random_crop_generator``)
are declared here once, with DALI's defaults and checks: ``random_area`` and
``random_aspect_ratio`` take one value or a non-empty (low, high) range (DALI's
``GetSingleOrRepeatedArg`` and "Provided empty range"), and the default ratio range is
(3/4, 4/3) as in DALI's source (its documentation prints 4/3 rounded to 1.333333: a 4:3 window
is in range). ``num_attempts`` is any (32-bit) integer: DALI checks nothing, and a count <= 0
makes no attempt, so the window is the fall-back (``random_crop_attr.cc``/``.h``,
``random_crop_generator_util.cc``: ``for (; attempts_left > 0; ...)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit.operators.registry import Arg, described, to_floats, to_int

_f32 = np.float32

#: DALI's defaults of the window arguments (``RandomCropAttr``).
DEFAULT_AREA = (0.08, 1.0)
DEFAULT_ASPECT_RATIO = (3.0 / 4.0, 4.0 / 3.0)
DEFAULT_NUM_ATTEMPTS = 10


def _roundf(x: np.float32) -> int:
    """C's ``roundf``: halves away from zero."""
    return math.floor(abs(float(x)) + 0.5) * (1 if x >= 0 else -1)


def random_crop_window(
    height: int,
    width: int,
    rng: np.random.Generator,
    aspect_ratio: Sequence[float] = DEFAULT_ASPECT_RATIO,
    area: Sequence[float] = DEFAULT_AREA,
    num_attempts: int = DEFAULT_NUM_ATTEMPTS,
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


def window_args(whole: str = "image") -> tuple[Arg, ...]:
    """The window arguments of DALI's ``RandomCropAttr`` (module docstring): ``random_area``,
    ``random_aspect_ratio`` and ``num_attempts``, for an operator's ``args``; ``whole`` names
    what the area is a fraction of in the argument's doc line.

    Example:
        >>> [arg.name for arg in window_args()]
        ['random_area', 'random_aspect_ratio', 'num_attempts']
    """
    return (
        Arg(
            "random_area",
            f"range of the window's area as a fraction of the {whole}'s",
            DEFAULT_AREA,
            to_range,
        ),
        Arg(
            "random_aspect_ratio",
            "range of the window's aspect ratio (width / height), drawn log-uniformly",
            DEFAULT_ASPECT_RATIO,
            to_ratio_range,
        ),
        Arg(
            "num_attempts",
            "tries at a window that fits before the fall-back (<= 0: the fall-back at once)",
            DEFAULT_NUM_ATTEMPTS,
            to_int(-(2**31), 2**31 - 1),  # DALI reads it as a C++ int
        ),
    )
