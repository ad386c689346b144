"""What the policies (``auto_augment``, ``rand_augment``, ``trivial_augment``) share: their
argument checks (DALI's messages), the seeds of their draws, the translations and the other
building blocks of their suites, the keywords their top-level calls hand down, and the
per-sample step each stage of a policy is (one labelled ``select.choose``).

    >>> from augkit.auto_aug._policy_common import policy_kwargs, suite, warps
    >>> [aug.name for aug in warps((0, 0.3), (0, 30))]
    ['shear_x', 'shear_y', 'rotate']
    >>> [aug.name for aug in suite([], (0, 0.3), (0, 30), [])]
    ['shear_x', 'shear_y', 'rotate', 'equalize', 'auto_contrast', 'identity']
    >>> policy_kwargs(None, 128, None)
    {'fill_value': 128, 'interp_type': None}

Decisions and traps:

- The suites' augmentations are made anew on each call (``aug.augmentation(...)``), as DALI's
  suite getters make them; only the ones without settings (equalize, identity...) are the
  module's own objects.
- The helpers keep the policies' order of draws and checks: a policy draws its random numbers
  (and its signs, ``signed``) in its own order, then ``check_kwargs``, then runs its steps.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit.auto_aug import augmentations as a
from augkit.auto_aug._augmentation import (
    Augmentation,
    MissingArgException,
    _extra_params,
    _int_like,
    forbid_unused_kwargs,
    signed_bin,
)
from augkit.auto_aug.select import choose
from augkit.errors import ArgumentError, suggest
from augkit.graph import DataNode

# --- argument checks ---------------------------------------------------------------------------


def check_missing_kwargs(
    augmentations: Sequence[Augmentation],
    kwargs: dict[str, Any],
    call_name: str,
    ref_suite_name: str,
) -> None:
    """Refuse, before anything is built, an augmentation that needs a keyword the call does
    not give: for the shape-relative translations DALI's hint (pass ``shape``, or use the
    ``_no_shape`` ones), otherwise the ``MissingArgException`` the augmentation would raise.

    Raises:
        MissingArgException: naming the augmentation and the argument.
    """
    for aug in augmentations:
        missing = [
            p.name
            for p in _extra_params(aug.op)
            if p.default is inspect.Parameter.empty and p.name not in kwargs
        ]
        if not missing:
            continue
        if missing == ["shape"] and aug.op in (a.translate_x.op, a.translate_y.op):
            message = (
                f"The augmentation `{aug.name}` requires `shape` argument that describes image "
                f"shape (in HWC layout). Please provide it as `shape` argument to "
                f"`{call_name}` call. You can get the image shape from encoded images with "
                f"`fn.peek_image_shape`. Alternatively, you can use "
                f"`translate_x_no_shape`/`translate_y_no_shape` that does not rely on image "
                f"shape, but uses offset from fixed range: for reference see "
                f"`{ref_suite_name}` and its `use_shape` argument. "
            )
        else:
            message = (
                f"The augmentation `{aug.name}` requires following named argument(s) which were "
                f"not provided to the call: {', '.join(missing)}. Please make sure to pass the "
                f"required arguments when calling the augmentation (give them to `{call_name}`)."
            )
        raise MissingArgException(message, augmentation=aug, missing_args=missing)


def check_kwargs(
    augmentations: Sequence[Augmentation],
    kwargs: dict[str, Any],
    call_name: str,
    ref_suite_name: str,
) -> None:
    """The policies' check of their extra keywords, in DALI's order: one that no augmentation
    takes (``forbid_unused_kwargs``), then one that an augmentation needs and did not get
    (``check_missing_kwargs``)."""
    forbid_unused_kwargs(augmentations, kwargs, call_name)
    check_missing_kwargs(augmentations, kwargs, call_name, ref_suite_name)


def exclude(
    augmentations: Sequence[Augmentation], excluded: Any, suite_name: str
) -> list[Augmentation]:
    """The suite without the augmentations named in ``excluded``.

    Raises:
        ArgumentError: ``excluded`` is not a list of names, or names an augmentation the suite
            does not have (DALI's message, the suite's names in its order).
    """
    names = [aug.name for aug in augmentations]
    if excluded is None:
        excluded = []
    if isinstance(excluded, str) or not isinstance(excluded, (list, tuple, set, frozenset)):
        raise ArgumentError(
            f"The `excluded` must be a list of names of augmentations of the {suite_name} "
            f"suite, got {excluded!r}."
        )
    for name in excluded:
        if name not in names:
            raise ArgumentError(
                f"The `{name}` was specified in `excluded`, but the {suite_name} suite does not "
                f"contain augmentation with this name. The augmentations in the suite are: "
                f"{', '.join(names)}.{suggest(str(name), names)}"
            )
    return [aug for aug in augmentations if aug.name not in excluded]


def check_augmentations(augmentations: Any, call_name: str) -> list[Augmentation]:
    """``augmentations`` as a list, every one an ``Augmentation``.

    Raises:
        ArgumentError: not a list or tuple, or an element that is not an ``Augmentation``.
    """
    if not isinstance(augmentations, (list, tuple)):
        raise ArgumentError(
            f"{call_name}: `augmentations` must be a list of augmentations, got {augmentations!r}"
        )
    for aug in augmentations:
        if not isinstance(aug, Augmentation):
            raise ArgumentError(
                f"{call_name}: every element of `augmentations` must be an Augmentation (a "
                f"function decorated with `@augmentation`), got {aug!r}"
            )
    return list(augmentations)


def check_num_magnitude_bins(num_magnitude_bins: Any) -> None:
    """Raises ArgumentError (DALI's message) for a ``num_magnitude_bins`` that is not a
    positive int."""
    if not _int_like(num_magnitude_bins) or num_magnitude_bins < 1:
        raise ArgumentError(
            f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins}."
        )


# --- draws and steps ------------------------------------------------------------------------


def draw_seeds(seed: Any, count: int, call_name: str) -> list[int | None]:
    """One seed per random draw of a policy, derived from the user's ``seed``; ``None`` (the
    pipeline's seed) for each when ``seed`` is ``None`` or -1.

    DALI gives the same ``seed`` to each of its draws, which then come from one random stream
    (the operation index and the sign, or the coin and the sub-policy, are correlated); here
    each draw gets its own seed, ``random.operator_seed(seed, k)``.

    Raises:
        ArgumentError: a seed that is not an int.
    """
    if seed is None or (_int_like(seed) and seed == -1):
        return [None] * count
    if not _int_like(seed) or seed < 0:
        raise ArgumentError(
            f"{call_name}: `seed` must be a non-negative int (or None), got {seed!r}"
        )
    from augkit.random import operator_seed

    return [operator_seed(int(seed), k) for k in range(count)]


def policy_kwargs(shape: Any, fill_value: Any, interp_type: Any) -> dict[str, Any]:
    """The keywords a top-level policy call (``auto_augment``, ``rand_augment``,
    ``trivial_augment_wide``) hands to its ``apply_*``: ``fill_value`` and ``interp_type``, and
    ``shape`` where it is given."""
    kwargs: dict[str, Any] = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return kwargs


def signed(
    augmentations: Sequence[Augmentation],
    magnitude_bin: Any,
    seed: int | None,
    shape: Sequence[int] | None = None,
) -> Any:
    """``signed_bin(magnitude_bin, seed=seed, shape=shape)`` where an augmentation is negated
    at random (the sign is drawn then, before any split), else ``magnitude_bin`` itself."""
    if any(aug.randomly_negate for aug in augmentations):
        return signed_bin(magnitude_bin, seed=seed, shape=shape)
    return magnitude_bin


def step(
    ops: Sequence[Any],
    index: DataNode | int,
    data: DataNode,
    magnitude_bin: Any,
    num_magnitude_bins: int,
    kwargs: dict[str, Any],
    *,
    call_name: str,
    label: str,
    names: Sequence[str] | None = None,
) -> Any:
    """One step of a policy: ``ops[index](data=data, magnitude_bin=..., num_magnitude_bins=...,
    **kwargs)`` per sample, as one choice labelled ``label`` (``select.choose``)."""
    step_kwargs = dict(
        data=data, magnitude_bin=magnitude_bin, num_magnitude_bins=num_magnitude_bins, **kwargs
    )
    return choose(ops, index, (), step_kwargs, call_name=call_name, label=label, names=names)


# --- the suites' building blocks -------------------------------------------------------------


def _max_translate_hw(value: Any, arg: str) -> tuple[float, float]:
    """``(height, width)`` of a ``max_translate_*`` argument: a number, or a pair."""

    def ok(x: Any) -> bool:
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)

    if isinstance(value, (tuple, list)) and len(value) == 2 and all(ok(x) for x in value):
        return value[0], value[1]
    if ok(value):
        return value, value
    raise ArgumentError(
        f"The argument `{arg}` must be a number or a (height, width) pair of numbers, "
        f"got {value!r}."
    )


def translations(
    use_shape: Any,
    defaults: tuple[float, float],
    max_translate_abs: Any = None,
    max_translate_rel: Any = None,
) -> list[Augmentation]:
    """``[translate_x, translate_y]`` for a suite (DALI's ``get_translations``): relative to
    each sample's shape (``translate_x``/``translate_y``, mag_range ``(0,
    max_translate_rel)``) with ``use_shape``, else by pixels (``translate_x_no_shape``/
    ``translate_y_no_shape``, ``(0, max_translate_abs)``); both negated at random. ``defaults``
    are the suite's ``(max_translate_abs, max_translate_rel)``. A pair limits ``(height,
    width)``: y takes the first, x the second.

    Raises:
        ArgumentError: ``use_shape`` not a bool, ``max_translate_abs`` with ``use_shape``,
            ``max_translate_rel`` without, or a limit that is not a number or a pair.
    """
    if not isinstance(use_shape, bool):
        raise ArgumentError(
            f"The `use_shape` is a flag that should be set to either True or False, "
            f"got {use_shape}."
        )
    # (name, value, default) of the limit of each mode: the mode's own applies, the other's
    # is refused.
    default_abs, default_rel = defaults
    own = ("max_translate_abs", max_translate_abs, default_abs)
    other = ("max_translate_rel", max_translate_rel, default_rel)
    if use_shape:
        own, other = other, own
    arg, value, default = own
    if other[1] is not None:
        raise ArgumentError(
            f"The argument `{other[0]}` cannot be used {'with' if use_shape else 'without'} "
            f"image shapes. You may use `{arg}` instead."
        )
    if use_shape:
        x_aug, y_aug = a.translate_x, a.translate_y
    else:
        x_aug, y_aug = a.translate_x_no_shape, a.translate_y_no_shape
    height, width = _max_translate_hw(default if value is None else value, arg)
    return [x_aug.augmentation((0, width), True), y_aug.augmentation((0, height), True)]


def warps(shear: tuple[float, float], rotate: tuple[float, float]) -> list[Augmentation]:
    """shear_x, shear_y and rotate with these magnitude ranges, negated at random."""
    return [
        a.shear_x.augmentation(shear, True),
        a.shear_y.augmentation(shear, True),
        a.rotate.augmentation(rotate, True),
    ]


def monotonic_colour(
    enhance: tuple[float, float], posterize: tuple[int, int]
) -> list[Augmentation]:
    """brightness, contrast, color and sharpness (``1 + m``, ``m`` in ``enhance``, negated at
    random), posterize (``posterize`` bits) and solarize (threshold 256..0): RandAugment's
    and TrivialAugment's set-up, where every magnitude grows stronger with the bin."""
    return [
        a.brightness.augmentation(enhance, True, a.shift_enhance_range),
        a.contrast.augmentation(enhance, True, a.shift_enhance_range),
        a.color.augmentation(enhance, True, a.shift_enhance_range),
        a.sharpness.augmentation(enhance, True, a.sharpness_kernel),
        a.posterize.augmentation(posterize, False, a.poster_mask_uint8),
        # The threshold falls as the bin grows: more of the image is inverted.
        a.solarize.augmentation((256, 0)),
    ]


def paper_colour() -> list[Augmentation]:
    """brightness, contrast, color and sharpness (the factor itself in ``[0.1, 1.9]``, not
    ``1 + m``, not negated), posterize (0..4 bits) and solarize (threshold 0..256): the
    AutoAugment paper's set-up (DALI's for every AutoAugment policy, and RandAugment's with
    ``monotonic_mag=False``), where those get weaker as the bin grows."""
    return [
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False),
    ]


def suite(
    translate: Sequence[Augmentation],
    shear: tuple[float, float],
    rotate: tuple[float, float],
    colour: Sequence[Augmentation],
) -> list[Augmentation]:
    """A suite in the order of DALI's RandAugment and TrivialAugment ones: ``translate``, the
    ``warps``, ``colour``, then equalize, auto_contrast and identity."""
    return [*translate, *warps(shear, rotate), *colour, a.equalize, a.auto_contrast, a.identity]
