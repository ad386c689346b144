"""DALI's automatic augmentations (``nvidia.dali.auto_aug``): the policies
(``augkit.auto_aug.auto_augment``, ``rand_augment``, ``trivial_augment``), the layer they stand
on (``augkit.auto_aug.core``: ``augmentation``, ``Augmentation``, ``signed_bin``, ``Policy``,
``select``) and the standard suite of augmentations (``augkit.auto_aug.augmentations``:
shear_x, rotate, brightness, posterize, equalize...).

    >>> from augkit.auto_aug import augmentations, rand_augment
    >>> augmentations.shear_x.mag_range
    (0, 0.3)
    >>> len(rand_augment.get_rand_augment_suite())
    14

The policies choose an augmentation per sample: they need the pipeline's conditionals
(``@pipeline_def(enable_conditionals=True)``), as in DALI.
"""

# The policy modules as modules, as DALI's (``from nvidia.dali.auto_aug import rand_augment``).
from augkit.auto_aug import augmentations, auto_augment, rand_augment, trivial_augment
from augkit.auto_aug.core import (
    Augmentation,
    MissingArgException,
    Policy,
    UnusedArgException,
    augmentation,
    select,
    signed_bin,
)

__all__ = [
    "Augmentation",
    "MissingArgException",
    "Policy",
    "UnusedArgException",
    "augmentation",
    "augmentations",
    "auto_augment",
    "rand_augment",
    "select",
    "signed_bin",
    "trivial_augment",
]
