"""DALI 2.4's RandAugment (``nvidia.dali.auto_aug.rand_augment``; Cubuk et al.,
https://arxiv.org/abs/1909.13719): each sample goes through ``n`` augmentations drawn uniformly
(with replacement) from a suite, one after the other, all at the magnitude bin ``m``.

    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.auto_aug import rand_augment
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    ... def pipe():
    ...     images = fn.external_source(
    ...         source=lambda: [np.full((8, 8, 3), 60, np.uint8)] * 4, batch=True, layout="HWC"
    ...     )
    ...     return rand_augment.rand_augment(images, n=2, m=9)
    >>> (out,) = pipe().run()
    >>> out.at(0).shape
    (8, 8, 3)

The suite (``get_rand_augment_suite``, DALI's order; 31 bins by default): translate_x,
translate_y (up to 100 pixels, or ``100 / 224`` of the shape with ``shape``), shear_x, shear_y
(0..0.3), rotate (0..30 degrees), brightness, contrast, color, sharpness (``1 + m``,
m in 0..0.9), all of those negated at random; posterize (8..4 bits), solarize (threshold
256..0), equalize, auto_contrast, identity. Every magnitude grows stronger with the bin; with
``monotonic_mag=False`` the enhance ones, posterize and solarize take AutoAugment's ranges
instead (``get_rand_augment_non_monotonic_suite``: factors 0.1..1.9, 0..4 bits, threshold
0..256), which do not.

Decisions and traps (DALI's, kept):

- The ``n`` operation indices are one draw of shape ``(n,)`` (a scalar for ``n = 1``), and
  where a suite augmentation is negated at random the ``n`` signs another (``signed_bin(m,
  shape=(n,))``), both before any split; step ``k`` then chooses by the ``k``-th of each.
- ``n = 0`` warns and returns ``data`` untouched; ``m`` must be in ``[0, num_magnitude_bins -
  1]``; ``excluded`` names suite augmentations to leave out (an unknown name is an error).
- ``shape`` given: translations relative to it (``max_translate_rel``); not given: in pixels
  (``max_translate_abs``); the other limit is refused. The keywords (``shape``,
  ``fill_value``, ``interp_type``) go to each augmentation that takes them.

Differences from DALI:

- Each step is one choice among the suite (DALI: a binary tree of ``if``); ``Pipeline.draws``
  shows ``{"rand_augment[0]": "rotate", "rand_augment[1]": "equalize"}``.
- ``seed`` gives the operation draw and the sign draw their own seeds derived from it (DALI
  passes it to both, which makes them one correlated stream).
- Errors are ``augkit.ArgumentError`` with DALI's messages (the ``excluded`` one lists the
  suite in its order, not a set's, and suggests a close name); the pipeline without
  ``enable_conditionals=True`` one adds the call's name; a wrong ``excluded`` type (a string)
  is refused. The ``n=0`` warning is a ``UserWarning`` (DALI: ``Warning``).
"""

from __future__ import annotations

import warnings
from typing import Any

from augkit import fn as _fn_module
from augkit import types
from augkit.auto_aug._augmentation import _int_like
from augkit.auto_aug._policy_common import (
    check_augmentations,
    check_kwargs,
    check_num_magnitude_bins,
    draw_seeds,
    exclude,
    monotonic_colour,
    paper_colour,
    policy_kwargs,
    signed,
    step,
    suite,
    translations,
)
from augkit.auto_aug.core import Augmentation
from augkit.errors import ArgumentError
from augkit.graph import DataNode

# augkit.fn's functions are made from the operator registry when it is imported (populate_fn):
# mypy cannot see them, so this module reads them through an Any.
fn: Any = _fn_module

__all__ = [
    "apply_rand_augment",
    "get_rand_augment_non_monotonic_suite",
    "get_rand_augment_suite",
    "rand_augment",
]

# The default (max_translate_abs, max_translate_rel).
_DEFAULT_TRANSLATE = (100, 100 / 224)


def get_rand_augment_suite(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> list[Augmentation]:
    """RandAugment's 14 augmentations, with magnitudes that grow with the bin.

    Args:
        use_shape: translate by a fraction of each sample's shape (``shape=`` must then be
            given to ``apply_rand_augment``); otherwise by pixels.
        max_translate_abs: without ``use_shape``: the largest shift in pixels, or a (height,
            width) pair (default 100).
        max_translate_rel: with ``use_shape``: the largest shift as a fraction of the shape, or
            a (height, width) pair (default 100 / 224, about 0.45).

    Raises:
        ArgumentError: ``use_shape`` not a bool, or a limit given for the other mode.

    Example:
        >>> [aug.name for aug in get_rand_augment_suite()][:4]
        ['translate_x', 'translate_y', 'shear_x', 'shear_y']
        >>> get_rand_augment_suite()[-5].mag_range  # posterize: 8 bits at bin 0, 4 at the last
        (8, 4)
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return suite(translate, (0, 0.3), (0, 30), monotonic_colour((0, 0.9), (8, 4)))


def get_rand_augment_non_monotonic_suite(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> list[Augmentation]:
    """``get_rand_augment_suite`` with AutoAugment's ranges for brightness, contrast, color,
    sharpness (the factor in 0.1..1.9, not negated: weakest at the middle bin), posterize (0..4
    bits) and solarize (threshold 0..256): the strength does not grow with the bin.

    Example:
        >>> [aug.mag_range for aug in get_rand_augment_non_monotonic_suite()][5:7]
        [(0.1, 1.9), (0.1, 1.9)]
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return suite(translate, (0, 0.3), (0, 30), paper_colour())


def rand_augment(
    data: DataNode,
    n: int,
    m: int,
    num_magnitude_bins: int = 31,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
    seed: int | None = None,
    monotonic_mag: bool = True,
    excluded: list[str] | None = None,
) -> DataNode:
    """Applies RandAugment to each sample (DALI's ``rand_augment``; the pipeline needs
    ``enable_conditionals=True``): ``n`` augmentations of the suite drawn per sample, at bin
    ``m``.

    Args:
        data: uint8 images, HWC (or videos, FHWC).
        n: how many augmentations each sample goes through (0: none, with a warning).
        m: the magnitude bin of all of them, in ``[0, num_magnitude_bins - 1]``.
        num_magnitude_bins: the number of bins the magnitude ranges are split into.
        shape: each sample's shape or a constant (height, width): translations relative to
            it, up to ``max_translate_rel``; without it up to ``max_translate_abs`` pixels.
        fill_value: the value of the pixels the warps bring in; ``None``: the border repeated.
        interp_type: the warps' interpolation (default linear; ``types.INTERP_NN``).
        max_translate_abs: without ``shape``: the largest shift in pixels, or a (height,
            width) pair (default 100).
        max_translate_rel: with ``shape``: the largest shift as a fraction of the shape, or a
            (height, width) pair (default 100 / 224).
        seed: the seed of the draws (operations, signs); default: from the pipeline's.
        monotonic_mag: True: every magnitude grows with the bin (``get_rand_augment_suite``);
            False: AutoAugment's ranges for the enhance ones, posterize and solarize
            (``get_rand_augment_non_monotonic_suite``).
        excluded: names of suite augmentations to leave out (e.g. ``["solarize"]``).

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: ``n``, ``m`` or ``num_magnitude_bins`` out of range, an unknown name in
            ``excluded``, a translation limit for the other mode, or a pipeline without
            ``enable_conditionals=True``.

    Example:
        >>> import inspect
        >>> inspect.signature(rand_augment).parameters["num_magnitude_bins"].default
        31
    """
    kwargs = policy_kwargs(shape, fill_value, interp_type)
    suite_of = get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite
    augmentations = suite_of(shape is not None, max_translate_abs, max_translate_rel)
    chosen = exclude(augmentations, excluded, "RandAugment")
    return apply_rand_augment(
        chosen, data, n, m, num_magnitude_bins=num_magnitude_bins, seed=seed, **kwargs
    )


def apply_rand_augment(
    augmentations: list[Augmentation],
    data: DataNode,
    n: int,
    m: int,
    num_magnitude_bins: int = 31,
    seed: int | None = None,
    **kwargs: Any,
) -> DataNode:
    """Applies ``augmentations`` RandAugment's way (DALI's ``apply_rand_augment``): ``n`` of
    them drawn per sample (uniformly, with replacement), in sequence, each at bin ``m``.

    Args:
        augmentations: the suite (``Augmentation`` objects, e.g. ``get_rand_augment_suite()``
            or your own).
        data: the batch.
        n: how many per sample (0: none, with a warning).
        m: the magnitude bin, in ``[0, num_magnitude_bins - 1]``.
        num_magnitude_bins: the number of bins of the magnitude ranges.
        seed: the seed of the draws; default: from the pipeline's.
        kwargs: extra keywords (``shape``, ``fill_value``, ``interp_type``...), each passed to
            the augmentations that take it.

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: (DALI's messages) ``n`` not a non-negative int, ``num_magnitude_bins``
            not a positive int, ``m`` out of range, ``augmentations`` empty with ``n > 0``;
            an element that is not an Augmentation; a pipeline without
            ``enable_conditionals=True``. ``UnusedArgException``: a keyword no augmentation
            takes. ``MissingArgException``: ``shape`` missing for the shape-relative
            translations.

    Example:
        >>> from augkit import ArgumentError
        >>> try:
        ...     apply_rand_augment(get_rand_augment_suite(), None, n=2, m=40)
        ... except ArgumentError as error:
        ...     print(error)
        The magnitude bin `m` must be an integer from `[0, 30]` range. Got 40.
    """
    if not _int_like(n) or n < 0:
        raise ArgumentError(
            f"The number of operations to apply `n` must be a non-negative integer, got {n}."
        )
    check_num_magnitude_bins(num_magnitude_bins)
    if not _int_like(m) or not 0 <= m < num_magnitude_bins:
        raise ArgumentError(
            f"The magnitude bin `m` must be an integer from `[0, {num_magnitude_bins - 1}]` "
            f"range. Got {m}."
        )
    augmentations = check_augmentations(augmentations, "apply_rand_augment")
    if n == 0:
        warnings.warn(
            "The `apply_rand_augment` was called with `n=0`, no augmentation will be applied.",
            UserWarning,
            stacklevel=2,
        )
        return data
    if len(augmentations) == 0:
        raise ArgumentError(
            "The `augmentations` list cannot be empty, unless n=0. "
            "Got empty list in `apply_rand_augment` call."
        )
    n, m = int(n), int(m)
    op_seed, sign_seed = draw_seeds(seed, 2, "apply_rand_augment")
    shape = () if n == 1 else (n,)
    op_idx = fn.random.uniform(
        values=list(range(len(augmentations))), shape=shape, dtype=types.INT32, seed=op_seed
    )
    # One sign per step where the suite negates at random (the bin m is the same for all).
    mag_bin = signed(augmentations, m, sign_seed, shape)
    check_kwargs(augmentations, kwargs, "apply_rand_augment", "get_rand_augment_suite")
    for level in range(n):
        data = step(
            augmentations,
            op_idx if n == 1 else op_idx[level],
            data,
            mag_bin if n == 1 or isinstance(mag_bin, int) else mag_bin[level],
            num_magnitude_bins,
            kwargs,
            call_name="apply_rand_augment",
            label=f"rand_augment[{level}]",
        )
    return data
