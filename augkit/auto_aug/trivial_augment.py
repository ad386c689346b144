"""DALI 2.4's TrivialAugment Wide (``nvidia.dali.auto_aug.trivial_augment``; Müller and Hutter,
https://arxiv.org/abs/2103.10158): each sample goes through one augmentation drawn uniformly from
a suite, at a magnitude bin drawn uniformly from ``[0, num_magnitude_bins - 1]``.

    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.auto_aug import trivial_augment
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    ... def pipe():
    ...     images = fn.external_source(
    ...         source=lambda: [np.full((8, 8, 3), 60, np.uint8)] * 4, batch=True, layout="HWC"
    ...     )
    ...     return trivial_augment.trivial_augment_wide(images)
    >>> (out,) = pipe().run()
    >>> out.at(0).shape
    (8, 8, 3)

The wide suite (``get_trivial_augment_wide_suite``, DALI's order; 31 bins by default):
translate_x, translate_y (up to 32 pixels, or the whole shape with ``shape``), shear_x,
shear_y (0..0.99), rotate (0..135 degrees), brightness, contrast, color, sharpness (``1 + m``,
m in 0.01..0.99), all negated at random; posterize (8..2 bits), solarize (threshold 256..0),
equalize, auto_contrast, identity.

Decisions and traps (DALI's, kept):

- Three draws per sample, before any split: the bin (``fn.random.uniform(values=[0..bins-1])``),
  its sign (``signed_bin``, when an augmentation of the suite is negated at random) and the
  augmentation's index.
- ``shape`` given: translations relative to it (``max_translate_rel``, default 1); not given: in
  pixels (``max_translate_abs``, default 32); the other limit is refused. ``excluded`` names
  suite augmentations to leave out. The keywords go to each augmentation that takes them.

Differences from DALI:

- The step is one choice among the suite (DALI: a binary tree of ``if``); ``Pipeline.draws``
  shows ``{"trivial_augment": "rotate"}``.
- ``seed`` gives each draw its own seed derived from it (DALI passes it to all three).
- Errors are ``augkit.ArgumentError`` with DALI's messages (see ``rand_augment``).
"""

from __future__ import annotations

from typing import Any

from augkit import fn as _fn_module
from augkit import types
from augkit.auto_aug._policy_common import (
    check_augmentations,
    check_kwargs,
    check_num_magnitude_bins,
    draw_seeds,
    exclude,
    monotonic_colour,
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

__all__ = ["apply_trivial_augment", "get_trivial_augment_wide_suite", "trivial_augment_wide"]

# The default (max_translate_abs, max_translate_rel).
_DEFAULT_TRANSLATE = (32, 1.0)


def get_trivial_augment_wide_suite(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> list[Augmentation]:
    """TrivialAugment's 14 augmentations of the "wide" space.

    Args:
        use_shape: translate by a fraction of each sample's shape (``shape=`` must then be
            given to ``apply_trivial_augment``); otherwise by pixels.
        max_translate_abs: without ``use_shape``: the largest shift in pixels, or a (height,
            width) pair (default 32).
        max_translate_rel: with ``use_shape``: the largest shift as a fraction of the shape, or
            a (height, width) pair (default 1).

    Raises:
        ArgumentError: ``use_shape`` not a bool, or a limit given for the other mode.

    Example:
        >>> suite = get_trivial_augment_wide_suite()
        >>> len(suite), suite[4].name, suite[4].mag_range
        (14, 'rotate', (0, 135))
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return suite(translate, (0, 0.99), (0, 135), monotonic_colour((0.01, 0.99), (8, 2)))


def trivial_augment_wide(
    data: DataNode,
    num_magnitude_bins: int = 31,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
    seed: int | None = None,
    excluded: list[str] | None = None,
) -> DataNode:
    """Applies TrivialAugment Wide to each sample (DALI's ``trivial_augment_wide``; the
    pipeline needs ``enable_conditionals=True``): one augmentation of the wide suite per
    sample, at a random bin.

    Args:
        data: uint8 images, HWC (or videos, FHWC).
        num_magnitude_bins: the number of bins the magnitude ranges are split into.
        shape: each sample's shape or a constant (height, width): translations relative to
            it, up to ``max_translate_rel``; without it up to ``max_translate_abs`` pixels.
        fill_value: the value of the pixels the warps bring in; ``None``: the border repeated.
        interp_type: the warps' interpolation (default linear; ``types.INTERP_NN``).
        max_translate_abs: without ``shape``: the largest shift in pixels, or a (height,
            width) pair (default 32).
        max_translate_rel: with ``shape``: the largest shift as a fraction of the shape, or a
            (height, width) pair (default 1).
        seed: the seed of the draws (bin, sign, operation); default: from the pipeline's.
        excluded: names of suite augmentations to leave out (e.g. ``["solarize"]``).

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: ``num_magnitude_bins`` not a positive int, an unknown name in
            ``excluded``, a translation limit for the other mode, or a pipeline without
            ``enable_conditionals=True``.

    Example:
        >>> import inspect
        >>> inspect.signature(trivial_augment_wide).parameters["excluded"].default is None
        True
    """
    kwargs = policy_kwargs(shape, fill_value, interp_type)
    augmentations = get_trivial_augment_wide_suite(
        use_shape=shape is not None,
        max_translate_abs=max_translate_abs,
        max_translate_rel=max_translate_rel,
    )
    chosen = exclude(augmentations, excluded, "TrivialAugmentWide")
    return apply_trivial_augment(
        chosen, data, num_magnitude_bins=num_magnitude_bins, seed=seed, **kwargs
    )


def apply_trivial_augment(
    augmentations: list[Augmentation],
    data: DataNode,
    num_magnitude_bins: int = 31,
    seed: int | None = None,
    **kwargs: Any,
) -> DataNode:
    """Applies ``augmentations`` TrivialAugment's way (DALI's ``apply_trivial_augment``): one
    of them per sample, drawn uniformly, at a bin drawn uniformly.

    Args:
        augmentations: the suite (``Augmentation`` objects).
        data: the batch.
        num_magnitude_bins: the number of bins of the magnitude ranges.
        seed: the seed of the draws; default: from the pipeline's.
        kwargs: extra keywords (``shape``, ``fill_value``, ``interp_type``...), each passed to
            the augmentations that take it.

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: (DALI's messages) ``num_magnitude_bins`` not a positive int, an empty
            ``augmentations``; an element that is not an Augmentation; a pipeline without
            ``enable_conditionals=True``. ``UnusedArgException``: a keyword no augmentation
            takes. ``MissingArgException``: ``shape`` missing for the shape-relative
            translations.

    Example:
        >>> from augkit import ArgumentError
        >>> try:
        ...     apply_trivial_augment([], None)
        ... except ArgumentError as error:
        ...     print(error)
        The `augmentations` list cannot be empty. Got empty list in `apply_trivial_augment` call.
    """
    check_num_magnitude_bins(num_magnitude_bins)
    augmentations = check_augmentations(augmentations, "apply_trivial_augment")
    if len(augmentations) == 0:
        raise ArgumentError(
            "The `augmentations` list cannot be empty. "
            "Got empty list in `apply_trivial_augment` call."
        )
    bin_seed, sign_seed, op_seed = draw_seeds(seed, 3, "apply_trivial_augment")
    magnitude_bin = fn.random.uniform(
        values=list(range(num_magnitude_bins)), dtype=types.INT32, seed=bin_seed
    )
    magnitude_bin = signed(augmentations, magnitude_bin, sign_seed)
    check_kwargs(augmentations, kwargs, "apply_trivial_augment", "get_trivial_augment_wide_suite")
    op_idx = fn.random.uniform(
        values=list(range(len(augmentations))), dtype=types.INT32, seed=op_seed
    )
    return step(
        augmentations,
        op_idx,
        data,
        magnitude_bin,
        num_magnitude_bins,
        kwargs,
        call_name="apply_trivial_augment",
        label="trivial_augment",
    )
