"""DALI 2.4's ``Policy`` (``nvidia.dali.auto_aug.core.policy``): an AutoAugment policy, a named
list of *sub-policies*, each a short sequence of ``(augmentation, probability, magnitude_bin)``.
``apply_auto_augment`` (``augkit.auto_aug.auto_augment``) picks one sub-policy per sample,
uniformly, then runs its steps in order, each with its probability, at its magnitude bin.

    >>> from augkit.auto_aug import augmentations as a
    >>> from augkit.auto_aug.core import Policy
    >>> policy = Policy(
    ...     "MyPolicy",
    ...     num_magnitude_bins=11,
    ...     sub_policies=[
    ...         [(a.rotate, 0.8, 4), (a.equalize, 0.5, None)],
    ...         [(a.invert, 0.2, None)],
    ...     ],
    ... )
    >>> list(policy.augmentations)
    ['equalize', 'invert', 'rotate']

Decisions and traps (DALI's, kept):

- The magnitude bin of an augmentation without ``mag_range`` (equalize, invert...) is ``None``;
  ``None`` for one with a ``mag_range`` is an error, and a bin given to one without is ignored
  with a warning. A probability of 0 warns (the step never runs).
- Two different augmentations with one name (``rotate`` and ``rotate.augmentation(mag_range=(0,
  10))``) are renamed ``0__rotate``, ``1__rotate``... in the order they first appear, so that
  ``augmentations`` (a dict by name, sorted by name) and the repr name each one once.
- The checks run in DALI's order, so the first problem found is DALI's first.

Differences from DALI:

- Errors are ``augkit.ArgumentError`` (DALI raises plain ``Exception``) with DALI's wording.
- NumPy integers are taken as magnitude bins and ``num_magnitude_bins`` (DALI wants ``int``);
  ``bool`` is refused there (DALI takes ``True`` as 1).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit.auto_aug._augmentation import Augmentation, _int_like
from augkit.errors import ArgumentError

__all__ = ["Policy"]

SubPolicy = Sequence[tuple[Augmentation, float, int | None]]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


class Policy:
    """An AutoAugment policy (DALI's ``Policy``): run it with ``apply_auto_augment``.

    Args:
        name: the policy's name (for display).
        num_magnitude_bins: the number of bins the augmentations' magnitude ranges are split
            into; the bins of the sub-policies are in ``[0, num_magnitude_bins - 1]``.
        sub_policies: a list (or tuple) of sub-policies, each a list (or tuple) of triples
            ``(augmentation, probability, magnitude_bin)``: the ``Augmentation`` to run, the
            probability in ``[0, 1]`` of running it, and its magnitude bin (``None`` for an
            augmentation without ``mag_range``).

    Attributes:
        name: the name given.
        num_magnitude_bins: the number given.
        sub_policies: the sub-policies, as a tuple of tuples of triples (with augmentations
            renamed where two share a name).

    Raises:
        ArgumentError: with DALI's message, for a ``num_magnitude_bins`` that is not a positive
            int, sub-policies that are not lists or tuples, a step that is not a triple, an
            augmentation not made by ``@augmentation``, a probability outside ``[0, 1]``, a
            ``None`` bin for an augmentation with a ``mag_range``, or a bin outside
            ``[0, num_magnitude_bins - 1]``.

    Example:
        >>> from augkit.auto_aug import augmentations as a
        >>> Policy("P", 11, [[(a.solarize, 0.6, 8), (a.color, 0.6, 9)]]).sub_policies[0][0][1:]
        (0.6, 8)
    """

    def __init__(
        self,
        name: str,
        num_magnitude_bins: int,
        sub_policies: Sequence[SubPolicy],
    ) -> None:
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        if not _int_like(num_magnitude_bins) or num_magnitude_bins < 1:
            raise ArgumentError(
                f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins}."
            )
        if not isinstance(sub_policies, (list, tuple)):
            raise ArgumentError(
                f"The `sub_policies` must be a list or tuple of sub policies, "
                f"got {type(sub_policies)}."
            )
        for sub_policy in sub_policies:
            if not isinstance(sub_policy, (list, tuple)):
                raise ArgumentError(f"Each sub policy must be a list or tuple, got {sub_policy}.")
            for step in sub_policy:
                self._check_step(step)
        self.sub_policies = _unique_names(sub_policies)

    def _check_step(self, step: Any) -> None:
        name, bins = self.name, self.num_magnitude_bins
        if not isinstance(step, (list, tuple)) or len(step) != 3:
            raise ArgumentError(
                f"Each operation in sub policy must be specified as a triple: "
                f"(augmentation, probability, magnitude). Got {step}."
            )
        aug, p, mag = step
        if not isinstance(aug, Augmentation):
            raise ArgumentError(
                f"Each augmentation in sub policies must be an instance of Augmentation. "
                f"Got `{aug}`. Did you forget to use `@augmentation` decorator?"
            )
        if not _number(p) or not 0 <= p <= 1:
            raise ArgumentError(
                f"Probability of applying the augmentation must be a number from `[0, 1]` "
                f"range. Got `{p}` for augmentation `{aug.name}`."
            )
        if p == 0:
            warnings.warn(
                f"The augmentation `{aug.name}` in policy `{name}` is used with probability 0 "
                f"in one of the sub-policies.",
                UserWarning,
                stacklevel=3,
            )
        if mag is None:
            if aug.mag_range is not None:
                raise ArgumentError(
                    f"The augmentation `{aug.name}` has `mag_range` specified, so the magnitude "
                    f"bin is required. However, got `None` in the policy `{name}`."
                )
            return
        if aug.mag_range is None:
            warnings.warn(
                f"The magnitude bin `{mag}` for augmentation `{aug.name}` in policy `{name}` "
                f"will be ignored. The augmentation does not accept magnitudes (as it has no "
                f"`mag_range` specified). You can specify `None` instead of `{mag}` to silence "
                f"this warning.",
                UserWarning,
                stacklevel=3,
            )
        if not _int_like(mag) or not 0 <= mag < bins:
            raise ArgumentError(
                f"Magnitude of the augmentation must be an integer from `[0, {bins - 1}]` "
                f"range. Got `{mag}` for augmentation `{aug.name}`."
            )

    @property
    def augmentations(self) -> dict[str, Augmentation]:
        """Every augmentation the sub-policies use, once, by name (sorted by name)."""
        unique = {id(aug): aug for sub in self.sub_policies for aug, _, _ in sub}
        return {aug.name: aug for aug in sorted(unique.values(), key=lambda aug: aug.name)}

    def __repr__(self) -> str:
        subs = ",\n\t".join(
            repr([(aug.name, p, mag) for aug, p, mag in sub]) for sub in self.sub_policies
        )
        augs = ",\n\t".join(f"'{name}': {aug!r}" for name, aug in self.augmentations.items())
        return (
            f"Policy(name={self.name!r}, num_magnitude_bins={self.num_magnitude_bins!r}, "
            f"sub_policies=[{subs and chr(10) + chr(9)}{subs}], "
            f"augmentations={{{augs and chr(10) + chr(9)}{augs}}})"
        )


def _unique_names(sub_policies: Sequence[SubPolicy]) -> tuple[tuple[Any, ...], ...]:
    """The sub-policies as tuples; where two distinct augmentations share a name, every
    augmentation is renamed ``<k>__<name>`` (``k`` zero-padded, in order of first use)."""
    used = [aug for sub in sub_policies for aug, _, _ in sub]
    distinct = list({id(aug): aug for aug in used}.values())
    if len({aug.name for aug in distinct}) == len(distinct):
        return tuple(tuple(sub) for sub in sub_policies)
    digits = len(str(len(distinct) - 1))
    renamed = {
        id(aug): aug.augmentation(name=f"{str(k).zfill(digits)}__{aug.name}")
        for k, aug in enumerate(distinct)
    }
    return tuple(tuple((renamed[id(aug)], p, mag) for aug, p, mag in sub) for sub in sub_policies)
