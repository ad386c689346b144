"""DALI 2.4's standard suite of augmentations (``nvidia.dali.auto_aug.augmentations``), the ones
AutoAugment's ImageNet policy, RandAugment and TrivialAugmentWide choose from, on augkit's
operators, for uint8 HWC images. Each is an ``Augmentation`` (``augkit.auto_aug.core``) with
DALI's setup:

- shear_x / shear_y: mag_range (0, 0.3), negated at random; the shear ``[m, 0]`` / ``[0, m]``.
- translate_x / translate_y: (0, 1), negated; ``[m, 0]`` / ``[0, m]`` times the width /
  height, so they need ``shape=`` (each sample's HWC shape).
- translate_x_no_shape / translate_y_no_shape (named translate_x / translate_y): (0, 250),
  negated; ``[m, 0]`` / ``[0, m]`` pixels.
- rotate: (0, 30), negated; the angle in degrees.
- brightness, contrast, color: (0, 0.9), negated; the factor ``1 + m``.
- sharpness: (0, 0.9), negated; the 3x3 kernel ``-m * blur + (1 + m) * identity``;
  param_device "auto".
- posterize: (0, 4); the uint8 mask keeping ``round(m)`` high bits (at least 1); "auto".
- solarize: (256, 0); the threshold; "auto".
- solarize_add: (0, 110); the uint8 shift (below 128); "auto".
- equalize, auto_contrast, invert, identity: no magnitude.

The other settings are the defaults: not negated, param_device "cpu".

Change a setup by calling the augmentation's ``augmentation`` method:
``my_shear_x = shear_x.augmentation(mag_range=(0, 0.5))``.

The geometric ones take ``fill_value=128`` and ``interp_type=None`` (linear), rotate also
``rotate_keep_size=True``; they warp with ``inverse_map=False`` (the matrix maps source to
destination), as DALI's do.

Decisions and traps (checked against DALI 2.4's CPU outputs: tests/auto_aug_reference.py):

- contrast is PIL's: the centre is the channel-weighted (0.299, 0.587, 0.114) mean of the
  image, ``center + (data - center) * factor`` in float32, converted back with ``cast_like``.
- color is ``fn.saturation``; brightness ``fn.brightness``; equalize ``fn.equalize`` (OpenCV's
  equalizeHist per channel; DALI calls its deprecated alias ``fn.experimental.equalize``);
  sharpness ``fn.filter`` (DALI: ``fn.experimental.filter``) with reflect-101 borders, so unlike
  PIL's the 1-pixel border is filtered too.
- ``translate_x``/``translate_y`` read the width/height from ``shape`` (a DataNode of each
  sample's HWC shape, e.g. ``fn.shapes(images)`` or ``fn.peek_image_shape(encoded)``, or a
  constant sequence): DALI's ``shape[1]``, written with ``fn.slice`` because augkit's DataNodes
  cannot be subscripted.
- invert and solarize compute ``uint8(255) - data`` (DALI's ``Constant(255, UINT8) - data``);
  solarize keeps pixels ``< threshold`` and inverts the rest, so the threshold 256 of bin 0
  changes nothing; solarize_add adds the shift to the pixels below 128 (no overflow, the shift
  is below 128). auto_contrast stretches each channel's [min, max] to [0, 255] (a constant
  channel is kept).
- Parity with DALI 2.4: exact, but for shear_x/y and rotate: augkit's uint8 warps run
  ``cv2.warpAffine`` (exact source points, ties rounded half to even) where DALI sums float32
  points along each row: 1 level off at up to 4 % of the values of a 0.3 shear, 0.04 % of a
  30 degree rotation (tests/test_auto_aug_augmentations.py).
- ``uint8(255) - data`` needs a uint8 *node* on the left (``_uint8``): a NumPy scalar there is
  turned into a Python int by NumPy before the DataNode sees it, an int32 constant, and the
  result would be int32.
- The magnitude of posterize is rounded to bits and 0 becomes 1 (the RandAugment paper's
  implementations): the image never goes blank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import fn as _fn_module
from augkit.auto_aug._augmentation import augmentation
from augkit.errors import ArgumentError
from augkit.graph import DataNode, _value

# augkit.fn's functions are made from the operator registry when it is imported (populate_fn):
# mypy cannot see them, so this module reads them through an Any.
fn: Any = _fn_module

__all__ = [
    "auto_contrast",
    "brightness",
    "color",
    "contrast",
    "equalize",
    "identity",
    "invert",
    "posterize",
    "rotate",
    "sharpness",
    "shear_x",
    "shear_y",
    "solarize",
    "solarize_add",
    "translate_x",
    "translate_x_no_shape",
    "translate_y",
    "translate_y_no_shape",
]


def _uint8(value: int) -> DataNode:
    """DALI's ``types.Constant(value, dtype=types.UINT8)``: a uint8 node. (A NumPy scalar on the
    left of a DataNode does not work: NumPy turns it into a Python int, an int32 constant.)"""
    return _value(np.uint8(value))


def warp_x_param(magnitude: float) -> list[float]:
    """The magnitude along x: ``[m, 0]``."""
    return [magnitude, 0]


def warp_y_param(magnitude: float) -> list[float]:
    """The magnitude along y: ``[0, m]``."""
    return [0, magnitude]


def _warp(data: DataNode, mt: DataNode, fill_value: Any, interp_type: Any) -> DataNode:
    return fn.warp_affine(
        data, matrix=mt, fill_value=fill_value, interp_type=interp_type, inverse_map=False
    )


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_x_param)
def shear_x(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_y_param)
def shear_y(data, shear, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


def _extent(shape: Any, axis: int) -> Any:
    """``shape[axis]`` of each sample's shape (a DataNode) or of a constant shape."""
    if isinstance(shape, DataNode):
        return fn.reshape(fn.slice(shape, start=[axis], shape=[1], axes=[0]), shape=[])
    try:
        return float(np.asarray(shape)[axis])
    except (IndexError, TypeError, ValueError):
        raise ArgumentError(
            f"translate: `shape` must be a DataNode of HWC shapes or a sequence (H, W, ...), "
            f"got {shape!r}"
        ) from None


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_x_param)
def translate_x(data, rel_offset, shape, fill_value=128, interp_type=None):
    offset = rel_offset * _extent(shape, 1)
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(
    mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_x_param, name="translate_x"
)
def translate_x_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_y_param)
def translate_y(data, rel_offset, shape, fill_value=128, interp_type=None):
    offset = rel_offset * _extent(shape, 0)
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(
    mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_y_param, name="translate_y"
)
def translate_y_no_shape(data, offset, fill_value=128, interp_type=None):
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(data, angle, fill_value=128, interp_type=None, rotate_keep_size=True):
    return fn.rotate(
        data,
        angle=angle,
        fill_value=fill_value,
        interp_type=interp_type,
        keep_size=rotate_keep_size,
    )


def shift_enhance_range(magnitude: float) -> Any:
    """``1 + m``: the enhance operations (brightness, contrast, color, sharpness) are neutral at
    1 and take [0, 2]; the magnitudes are [0, 1], negated at random, then shifted."""
    return 1 + magnitude


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def brightness(data, parameter):
    return fn.brightness(data, brightness=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def contrast(data, parameter):
    """PIL's Contrast: the centre is the channel-weighted mean (HWC layout)."""
    mean = fn.reductions.mean(data, axis_names="HW", keep_dims=True)
    rgb_weights = _value(np.array([0.299, 0.587, 0.114], dtype=np.float32))
    center = fn.reductions.sum(mean * rgb_weights, axis_names="C", keep_dims=True)
    return fn.cast_like(center + (data - center) * parameter, data)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def color(data, parameter):
    return fn.saturation(data, saturation=parameter)


def sharpness_kernel(magnitude: float) -> np.ndarray:
    """The 3x3 kernel ``-m * blur + (1 + m) * identity`` for ``m`` in [-1, 1] (PIL's smoothing
    filter as ``blur``)."""
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13
    ident = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)
    return -magnitude * blur + (1 + magnitude) * ident


def sharpness_kernel_shifted(magnitude: float) -> np.ndarray:
    """``sharpness_kernel`` for magnitudes in [0, 2]."""
    return sharpness_kernel(magnitude - 1)


@augmentation(
    mag_range=(0, 0.9), randomly_negate=True, mag_to_param=sharpness_kernel, param_device="auto"
)
def sharpness(data, kernel):
    return fn.filter(data, kernel)


def poster_mask_uint8(magnitude: float) -> np.ndarray:
    """The uint8 mask that keeps the ``round(m)`` high bits (``m`` clipped to [1, 8]: 0 would
    blank the image)."""
    rounded = float(np.round(magnitude))
    # DALI casts to uint32: a negative magnitude wraps around to a huge one, i.e. 8 bits.
    bits = 8 if rounded < 0 else min(max(int(rounded), 1), 8)
    removal_mask = (1 << (8 - bits)) - 1
    return np.array(255 ^ removal_mask, dtype=np.uint8)


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8, param_device="auto")
def posterize(data, mask):
    return data & mask


@augmentation(mag_range=(256, 0), param_device="auto")
def solarize(data, threshold):
    sample_inv = _uint8(255) - data
    mask_unchanged = data < threshold
    mask_inverted = mask_unchanged ^ True
    return mask_unchanged * data + mask_inverted * sample_inv


def solarize_add_shift(shift: float) -> np.uint8:
    """The shift as uint8; 128 or more is an error (it would overflow)."""
    if shift >= 128:
        raise ArgumentError(
            f"augmentation `solarize_add`: the shift must be in [0, 128), got {shift}"
        )
    return np.uint8(shift)


@augmentation(mag_range=(0, 110), param_device="auto", mag_to_param=solarize_add_shift)
def solarize_add(data, shift):
    mask_shifted = data < _uint8(128)
    mask_id = mask_shifted ^ True
    sample_shifted = data + shift
    return mask_shifted * sample_shifted + mask_id * data


@augmentation
def invert(data, _):
    return _uint8(255) - data


@augmentation
def equalize(data, _):
    return fn.equalize(data)


@augmentation
def auto_contrast(data, _):
    lo = fn.reductions.min(data, axis_names="HW", keep_dims=True)
    hi = fn.reductions.max(data, axis_names="HW", keep_dims=True)
    diff = hi - lo
    mask_scale = diff > 0
    mask_id = mask_scale ^ True
    # 255 / diff where diff > 0, else 1
    div_by = diff * mask_scale + mask_id * _uint8(255)
    scale = 255 / div_by
    scaled = (data - lo * mask_scale) * scale
    return fn.cast_like(scaled, data)


@augmentation
def identity(data, _):
    return data
