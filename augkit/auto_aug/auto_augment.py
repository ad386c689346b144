"""DALI 2.4's AutoAugment (``nvidia.dali.auto_aug.auto_augment``; Cubuk et al.,
https://arxiv.org/abs/1805.09501): for each sample one *sub-policy* of a ``Policy`` is picked
uniformly at random, and its steps run in order, each with its probability, at its magnitude
bin. The predefined policies are the paper's: ``image_net`` (the default), ``reduced_image_net``,
``svhn`` and ``reduced_cifar10``, with DALI's magnitude ranges (11 bins).

    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.auto_aug import auto_augment
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    ... def pipe():
    ...     images = fn.external_source(
    ...         source=lambda: [np.full((8, 8, 3), 60, np.uint8)] * 4, batch=True, layout="HWC"
    ...     )
    ...     return auto_augment.auto_augment(images)
    >>> (out,) = pipe().run()
    >>> out.at(0).shape
    (8, 8, 3)

Decisions and traps (DALI's, kept):

- A policy runs as ``max(len(sub-policy))`` stages. Per sample, three draws are made up front
  (before any split, so a sample draws the same whatever the others chose): the sub-policy
  (``fn.random.uniform(values=[0..n-1])``), one uniform ``[0, 1)`` number per stage (the step
  runs where it is below the step's probability) and, when an augmentation of the policy is
  negated at random, one sign per stage (``signed_bin``). The step's probability, bin and
  augmentation come from a table indexed by the sub-policy (``types.Constant(table)
  [sub_policy_id]``: DALI has three such tables, augkit one, so ``Pipeline.draws`` lists the
  sub-policy once, as ``_TensorSubscript_<k>.at_0``). A sub-policy shorter than the longest one
  has probability 0 in its missing stages.
- ``shape`` given: the translations are relative to it (``max_translate_rel``, default 1: up to
  the whole image); not given: in pixels (``max_translate_abs``, default 250). A pair limits
  (height, width). ``reduced_image_net`` has no translation and refuses those three arguments.
- The keywords (``shape``, ``fill_value``, ``interp_type``) go to each augmentation that takes
  them; one that none takes is an ``UnusedArgException``; a shape-relative translation without
  ``shape`` is DALI's ``MissingArgException`` hint.

Differences from DALI:

- Each stage is one choice among "skip" and the augmentations the stage can run (DALI: an
  ``if`` on the probability, then a binary tree of ``if`` over the stage's augmentations plus an
  identity for the short sub-policies). The same per-sample result; ``Pipeline.draws`` shows
  ``{"auto_augment[0]": "skip", "auto_augment[1]": "rotate", ...}``.
- ``seed`` gives each of the three draws its own seed derived from it (DALI passes the same
  seed to each, so they come from one random stream and are correlated); augkit's random
  streams are not DALI's, so the draws differ from DALI's in any case.
- The magnitude bin of a step without magnitude is 0 in the table (DALI: -999; never read).
- Errors are ``augkit.ArgumentError`` with DALI's messages; the one for a pipeline without
  ``enable_conditionals=True`` adds the name of the call.
- DALI 2.4's ``auto_augment`` has no ``monotonic_mag`` nor ``excluded`` (``rand_augment`` has
  both, ``trivial_augment_wide`` the second); neither has augkit's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import fn as _fn_module
from augkit import types
from augkit.auto_aug import augmentations as a
from augkit.auto_aug._policy_common import (
    check_kwargs,
    draw_seeds,
    paper_colour,
    policy_kwargs,
    signed,
    step,
    translations,
    warps,
)
from augkit.auto_aug.core import Augmentation, forbid_unused_kwargs
from augkit.auto_aug.policy import Policy
from augkit.errors import ArgumentError
from augkit.graph import DataNode

# augkit.fn's functions are made from the operator registry when it is imported (populate_fn):
# mypy cannot see them, so this module reads them through an Any.
fn: Any = _fn_module

__all__ = [
    "apply_auto_augment",
    "auto_augment",
    "auto_augment_image_net",
    "get_image_net_policy",
    "get_reduced_cifar10_policy",
    "get_reduced_image_net_policy",
    "get_svhn_policy",
]

NUM_MAGNITUDE_BINS = 11
# The default (max_translate_abs, max_translate_rel).
_DEFAULT_TRANSLATE = (250, 1.0)

# The paper's sub-policies as (augmentation name, probability, magnitude bin) steps; the names
# are resolved by ``_policy`` against each policy's own set-up of the augmentations.
_IMAGE_NET = (
    (("equalize", 0.8, None), ("shear_y", 0.8, 4)),
    (("color", 0.4, 9), ("equalize", 0.6, None)),
    (("color", 0.4, 1), ("rotate", 0.6, 8)),
    (("solarize", 0.8, 3), ("equalize", 0.4, None)),
    (("solarize", 0.4, 2), ("solarize", 0.6, 2)),
    (("color", 0.2, 0), ("equalize", 0.8, None)),
    (("equalize", 0.4, None), ("solarize_add", 0.8, 3)),
    (("shear_x", 0.2, 9), ("rotate", 0.6, 8)),
    (("color", 0.6, 1), ("equalize", 1.0, None)),
    (("invert", 0.4, None), ("rotate", 0.6, 0)),
    (("equalize", 1.0, None), ("shear_y", 0.6, 3)),
    (("color", 0.4, 7), ("equalize", 0.6, None)),
    (("posterize", 0.4, 6), ("auto_contrast", 0.4, None)),
    (("solarize", 0.6, 8), ("color", 0.6, 9)),
    (("solarize", 0.2, 4), ("rotate", 0.8, 9)),
    (("rotate", 1.0, 7), ("translate_y", 0.8, 9)),
    (("solarize", 0.8, 4),),
    (("shear_y", 0.8, 0), ("color", 0.6, 4)),
    (("color", 1.0, 0), ("rotate", 0.6, 2)),
    (("equalize", 0.8, None),),
    (("equalize", 1.0, None), ("auto_contrast", 0.6, None)),
    (("shear_y", 0.4, 7), ("solarize_add", 0.6, 7)),
    (("posterize", 0.8, 2), ("solarize", 0.6, 10)),
    (("solarize", 0.6, 8), ("equalize", 0.6, None)),
    (("color", 0.8, 6), ("rotate", 0.4, 5)),
)

_REDUCED_CIFAR10 = (
    (("invert", 0.1, None), ("contrast", 0.2, 6)),
    (("rotate", 0.7, 2), ("translate_x", 0.3, 9)),
    (("sharpness", 0.8, 1), ("sharpness", 0.9, 3)),
    (("shear_y", 0.5, 8), ("translate_y", 0.7, 9)),
    (("auto_contrast", 0.5, None), ("equalize", 0.9, None)),
    (("shear_y", 0.2, 7), ("posterize", 0.3, 7)),
    (("color", 0.4, 3), ("brightness", 0.6, 7)),
    (("sharpness", 0.3, 9), ("brightness", 0.7, 9)),
    (("equalize", 0.6, None), ("equalize", 0.5, None)),
    (("contrast", 0.6, 7), ("sharpness", 0.6, 5)),
    (("color", 0.7, 7), ("translate_x", 0.5, 8)),
    (("equalize", 0.3, None), ("auto_contrast", 0.4, None)),
    (("translate_y", 0.4, 3), ("sharpness", 0.2, 6)),
    (("brightness", 0.9, 6), ("color", 0.2, 8)),
    (("solarize", 0.5, 2),),
    (("equalize", 0.2, None), ("auto_contrast", 0.6, None)),
    (("equalize", 0.2, None), ("equalize", 0.6, None)),
    (("color", 0.9, 9), ("equalize", 0.6, None)),
    (("auto_contrast", 0.8, None), ("solarize", 0.2, 8)),
    (("brightness", 0.1, 3), ("color", 0.7, 0)),
    (("solarize", 0.4, 5), ("auto_contrast", 0.9, None)),
    (("translate_y", 0.9, 9), ("translate_y", 0.7, 9)),
    (("auto_contrast", 0.9, None), ("solarize", 0.8, 3)),
    (("equalize", 0.8, None), ("invert", 0.1, None)),
    (("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)),
)

_SVHN = (
    (("shear_x", 0.9, 4), ("invert", 0.2, None)),
    (("shear_y", 0.9, 8), ("invert", 0.7, None)),
    (("equalize", 0.6, None), ("solarize", 0.6, 6)),
    (("invert", 0.9, None), ("equalize", 0.6, None)),
    (("equalize", 0.6, None), ("rotate", 0.9, 3)),
    (("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)),
    (("shear_y", 0.9, 8), ("invert", 0.4, None)),
    (("shear_y", 0.9, 5), ("solarize", 0.2, 6)),
    (("invert", 0.9, None), ("auto_contrast", 0.8, None)),
    (("equalize", 0.6, None), ("rotate", 0.9, 3)),
    (("shear_x", 0.9, 4), ("solarize", 0.3, 3)),
    (("shear_y", 0.8, 8), ("invert", 0.7, None)),
    (("equalize", 0.9, None), ("translate_y", 0.6, 6)),
    (("invert", 0.9, None), ("equalize", 0.6, None)),
    (("contrast", 0.3, 3), ("rotate", 0.8, 4)),
    (("invert", 0.8, None),),
    (("shear_y", 0.7, 6), ("solarize", 0.4, 8)),
    (("invert", 0.6, None), ("rotate", 0.8, 4)),
    (("shear_y", 0.3, 7), ("translate_x", 0.9, 3)),
    (("shear_x", 0.1, 6), ("invert", 0.6, None)),
    (("solarize", 0.7, 2), ("translate_y", 0.6, 7)),
    (("shear_y", 0.8, 4), ("invert", 0.8, None)),
    (("shear_x", 0.7, 9), ("translate_y", 0.8, 3)),
    (("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)),
    (("shear_x", 0.7, 2), ("invert", 0.1, None)),
)

_REDUCED_IMAGE_NET = (
    (("posterize", 0.4, 8), ("rotate", 0.6, 9)),
    (("solarize", 0.6, 5), ("auto_contrast", 0.6, None)),
    (("equalize", 0.8, None), ("equalize", 0.6, None)),
    (("posterize", 0.6, 7), ("posterize", 0.6, 6)),
    (("equalize", 0.4, None), ("solarize", 0.2, 4)),
    (("equalize", 0.4, None), ("rotate", 0.8, 8)),
    (("solarize", 0.6, 3), ("equalize", 0.6, None)),
    (("posterize", 0.8, 5), ("equalize", 1.0, None)),
    (("rotate", 0.2, 3), ("solarize", 0.6, 8)),
    (("equalize", 0.6, None), ("posterize", 0.4, 6)),
    (("rotate", 0.8, 8), ("color", 0.4, 0)),
    (("rotate", 0.4, 9), ("equalize", 0.6, None)),
    (("equalize", 0.8, None),),
    (("invert", 0.6, None), ("equalize", 1.0, None)),
    (("color", 0.6, 4), ("contrast", 1.0, 8)),
    (("rotate", 0.8, 8), ("color", 1.0, 2)),
    (("color", 0.8, 8), ("solarize", 0.8, 7)),
    (("sharpness", 0.4, 7), ("invert", 0.6, None)),
    (("shear_x", 0.6, 5), ("equalize", 1.0, None)),
    (("color", 0.4, 0), ("equalize", 0.6, None)),
    (("equalize", 0.4, None), ("solarize", 0.2, 4)),
    (("solarize", 0.6, 5), ("auto_contrast", 0.6, None)),
    (("invert", 0.6, None), ("equalize", 1.0, None)),
    (("color", 0.6, 4), ("contrast", 1.0, 8)),
    (("equalize", 0.8, None), ("equalize", 0.6, None)),
)


def _paper_augmentations() -> dict[str, Augmentation]:
    """The AutoAugment paper's set-up of the augmentations (DALI's, for every policy): the
    enhance ones take the factor itself in ``[0.1, 1.9]`` (not ``1 + m``, not negated),
    posterize keeps 0..4 bits, solarize's threshold grows with the bin (0..256), so those
    three get weaker as the bin grows; the geometric ones as in the standard suite."""
    augs = [
        *warps((0, 0.3), (0, 30)),
        *paper_colour(),
        a.solarize_add.augmentation((0, 110), False),
        a.invert,
        a.equalize,
        a.auto_contrast,
    ]
    return {aug.name: aug for aug in augs}


def _policy(
    name: str,
    table: Sequence[Sequence[tuple[str, float, int | None]]],
    translate: Sequence[Augmentation] = (),
) -> Policy:
    """The ``Policy`` of a table, ``translate`` being ``[translate_x, translate_y]``."""
    augs = _paper_augmentations()
    augs.update(zip(("translate_x", "translate_y"), translate, strict=False))
    return Policy(
        name=name,
        num_magnitude_bins=NUM_MAGNITUDE_BINS,
        sub_policies=[[(augs[aug], p, mag) for aug, p, mag in sub] for sub in table],
    )


def get_image_net_policy(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> Policy:
    """The AutoAugment policy found on ImageNet: 25 sub-policies of one or two steps over
    shear_x/y, rotate, color, posterize, solarize, solarize_add, invert, equalize,
    auto_contrast and translate_y; 11 magnitude bins. Run it with ``apply_auto_augment``.

    Args:
        use_shape: translate by a fraction of each sample's shape (then ``shape=`` must be given
            to ``apply_auto_augment``); otherwise by pixels.
        max_translate_abs: without ``use_shape``: the largest shift in pixels, or a (height,
            width) pair (default 250).
        max_translate_rel: with ``use_shape``: the largest shift as a fraction of the shape, or
            a (height, width) pair (default 1).

    Raises:
        ArgumentError: ``use_shape`` not a bool, or a limit given for the other mode.

    Example:
        >>> policy = get_image_net_policy()
        >>> policy.name, policy.num_magnitude_bins, len(policy.sub_policies)
        ('ImageNetPolicy', 11, 25)
        >>> [(aug.name, p, mag) for aug, p, mag in policy.sub_policies[0]]
        [('equalize', 0.8, None), ('shear_y', 0.8, 4)]
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return _policy("ImageNetPolicy", _IMAGE_NET, translate)


def get_reduced_cifar10_policy(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> Policy:
    """The AutoAugment policy found on reduced CIFAR-10 (25 sub-policies, 11 bins); the
    arguments as ``get_image_net_policy``'s.

    Example:
        >>> get_reduced_cifar10_policy().name
        'ReducedCifar10Policy'
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return _policy("ReducedCifar10Policy", _REDUCED_CIFAR10, translate)


def get_svhn_policy(
    use_shape: bool = False,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
) -> Policy:
    """The AutoAugment policy found on SVHN (25 sub-policies, 11 bins); the arguments as
    ``get_image_net_policy``'s.

    Example:
        >>> get_svhn_policy().name
        'SvhnPolicy'
    """
    translate = translations(use_shape, _DEFAULT_TRANSLATE, max_translate_abs, max_translate_rel)
    return _policy("SvhnPolicy", _SVHN, translate)


def get_reduced_image_net_policy() -> Policy:
    """The AutoAugment policy found on reduced ImageNet (25 sub-policies, 11 bins, no
    translation).

    Example:
        >>> sorted(get_reduced_image_net_policy().augmentations)[:3]
        ['auto_contrast', 'color', 'contrast']
    """
    return _policy("ReducedImageNetPolicy", _REDUCED_IMAGE_NET)


_PREDEFINED: dict[str, Callable[..., Policy]] = {
    "image_net": get_image_net_policy,
    "reduced_image_net": get_reduced_image_net_policy,
    "svhn": get_svhn_policy,
    "reduced_cifar10": get_reduced_cifar10_policy,
}
_WITHOUT_TRANSLATION = ("reduced_image_net",)


def auto_augment(
    data: DataNode,
    policy_name: str = "image_net",
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
    seed: int | None = None,
) -> DataNode:
    """Applies one of the AutoAugment paper's policies to each sample (DALI's
    ``auto_augment``; the pipeline needs ``enable_conditionals=True``).

    Args:
        data: uint8 images, HWC (or videos, FHWC).
        policy_name: "image_net" (default), "reduced_image_net", "svhn" or "reduced_cifar10".
        shape: each sample's shape (e.g. ``fn.peek_image_shape(jpegs)``) or a constant
            (height, width): the translations are then relative to it, up to
            ``max_translate_rel`` of it; without it they are up to ``max_translate_abs`` pixels.
        fill_value: the value of the pixels the warps (translations, shears, rotations) bring
            in; ``None``: the border is repeated.
        interp_type: the warps' interpolation (default linear; ``types.INTERP_NN``).
        max_translate_abs: without ``shape``: the largest shift in pixels, or a (height,
            width) pair (default 250).
        max_translate_rel: with ``shape``: the largest shift as a fraction of the shape, or a
            (height, width) pair (default 1).
        seed: the seed of the draws (sub-policy, steps, signs); default: from the pipeline's.

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: an unknown ``policy_name``, a translation argument with
            ``reduced_image_net`` or for the other mode (``max_translate_abs`` with ``shape``),
            or a pipeline without ``enable_conditionals=True``.

    Example:
        >>> import inspect
        >>> inspect.signature(auto_augment).parameters["policy_name"].default
        'image_net'
    """
    if not isinstance(policy_name, str) or policy_name not in _PREDEFINED:
        names = ", ".join(f"`{name}`" for name in _PREDEFINED)
        raise ArgumentError(
            f"The `policy_name` must be a string that takes one of the values: {names}"
        )
    shape_args = (
        ("shape", shape),
        ("max_translate_abs", max_translate_abs),
        ("max_translate_rel", max_translate_rel),
    )
    if policy_name in _WITHOUT_TRANSLATION:
        given = next((arg for arg, value in shape_args if value is not None), None)
        if given is not None:
            raise ArgumentError(
                f"The policy `{policy_name}` does not contain any augmentations that rely on the "
                f"image shape. The `{given}` argument must not be specified in that case."
            )
        policy = _PREDEFINED[policy_name]()
    else:
        policy = _PREDEFINED[policy_name](
            use_shape=shape is not None,
            max_translate_abs=max_translate_abs,
            max_translate_rel=max_translate_rel,
        )
    return apply_auto_augment(policy, data, seed, **policy_kwargs(shape, fill_value, interp_type))


def auto_augment_image_net(
    data: DataNode,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | tuple[int, int] | None = None,
    max_translate_rel: float | tuple[float, float] | None = None,
    seed: int | None = None,
) -> DataNode:
    """``auto_augment(data, "image_net", ...)`` (DALI's ``auto_augment_image_net``).

    Example:
        >>> import inspect
        >>> list(inspect.signature(auto_augment_image_net).parameters)[:3]
        ['data', 'shape', 'fill_value']
    """
    return auto_augment(
        data,
        "image_net",
        shape,
        fill_value,
        interp_type,
        max_translate_abs,
        max_translate_rel,
        seed,
    )


def _table(policy: Policy) -> tuple[np.ndarray, list[list[Augmentation]]]:
    """Per sub-policy, three rows over the stages: the probability, the magnitude bin and the
    choice (0: skip, ``k + 1``: the stage's ``k``-th augmentation), in one float32 table (the
    bins and choices are small integers, exact in float32); and each stage's augmentations,
    in the order they first appear."""
    subs = policy.sub_policies
    stages = max(len(sub) for sub in subs)
    table = np.zeros((len(subs), 3, stages), np.float32)
    per_stage: list[list[Augmentation]] = [[] for _ in range(stages)]
    for i, sub in enumerate(subs):
        for stage, (aug, p, mag) in enumerate(sub):
            ids = [id(x) for x in per_stage[stage]]
            if id(aug) not in ids:
                per_stage[stage].append(aug)
                ids.append(id(aug))
            table[i, :, stage] = (p, 0 if mag is None else mag, ids.index(id(aug)) + 1)
    return table, per_stage


def _skip(data: DataNode, **_: Any) -> DataNode:
    return data


def apply_auto_augment(
    policy: Policy, data: DataNode, seed: int | None = None, **kwargs: Any
) -> DataNode:
    """Applies ``policy`` AutoAugment's way (DALI's ``apply_auto_augment``): per sample a
    sub-policy picked uniformly, its steps run in order, each with its probability.

    Args:
        policy: the ``Policy`` (e.g. ``get_image_net_policy()``, or your own).
        data: the batch.
        seed: the seed of the draws; default: from the pipeline's.
        kwargs: extra keywords (``shape``, ``fill_value``, ``interp_type``...), each passed to
            the augmentations that take it.

    Returns:
        The augmented batch.

    Raises:
        ArgumentError: ``policy`` not a Policy, or one without sub-policies (DALI's "Cannot
            run empty policy"), or a pipeline without ``enable_conditionals=True``.
            ``UnusedArgException``: a keyword no augmentation of the policy takes.
            ``MissingArgException``: a keyword an augmentation needs is missing (``shape`` for
            the shape-relative translations).

    Example:
        >>> import inspect
        >>> list(inspect.signature(apply_auto_augment).parameters)
        ['policy', 'data', 'seed', 'kwargs']
    """
    if not isinstance(policy, Policy):
        raise ArgumentError(
            f"apply_auto_augment: `policy` must be a Policy (e.g. get_image_net_policy()), "
            f"got {policy!r}"
        )
    if len(policy.sub_policies) == 0:
        raise ArgumentError(f"Cannot run empty policy. Got {policy} in `apply_auto_augment` call.")
    stages = max(len(sub) for sub in policy.sub_policies)
    run_seed, sub_seed, sign_seed = draw_seeds(seed, 3, "apply_auto_augment")
    if stages == 0:  # only empty sub-policies: nothing to apply
        forbid_unused_kwargs(policy.augmentations.values(), kwargs, "apply_auto_augment")
        return data
    table, per_stage = _table(policy)
    should_run = fn.random.uniform(range=[0, 1], shape=(stages,), dtype=types.FLOAT, seed=run_seed)
    sub_policy_id = fn.random.uniform(
        values=list(range(len(policy.sub_policies))), dtype=types.INT32, seed=sub_seed
    )
    # One lookup of the sub-policy's rows (so Pipeline.draws lists the sub-policy once).
    rows = types.Constant(table)[sub_policy_id]
    run_probabilities = rows[0]
    magnitude_bins = fn.cast(rows[1], dtype=types.INT32)
    choices = fn.cast(rows[2], dtype=types.INT32)
    augmentations = list(policy.augmentations.values())
    magnitude_bins = signed(augmentations, magnitude_bins, sign_seed, (stages,))
    check_kwargs(augmentations, kwargs, "apply_auto_augment", "get_image_net_policy")
    for stage in range(stages):
        # One per-sample choice: 0 where the step does not run (its coin is above its
        # probability, or the sub-policy has no such stage), else the augmentation's position.
        runs = should_run[stage] < run_probabilities[stage]
        index = choices[stage] * runs
        data = step(
            [_skip, *per_stage[stage]],
            index,
            data,
            magnitude_bins[stage],
            policy.num_magnitude_bins,
            kwargs,
            call_name="apply_auto_augment",
            label=f"auto_augment[{stage}]",
            names=["skip", *(aug.name for aug in per_stage[stage])],
        )
    return data
