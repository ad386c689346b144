"""DALI's automatic augmentations (``nvidia.dali.auto_aug``), the layer the policies stand on:
the ``augmentation`` decorator, ``Augmentation``, ``signed_bin`` (``augkit.auto_aug.core``) and
the standard suite of augmentations (``augkit.auto_aug.augmentations``: shear_x, rotate,
brightness, posterize, equalize...).

    >>> from augkit.auto_aug import augmentations
    >>> augmentations.shear_x.mag_range
    (0, 0.3)

The policies themselves (``auto_augment``, ``rand_augment``, ``trivial_augment_wide``) choose one
augmentation per sample with ``if``: they need the pipeline's conditionals
(``enable_conditionals=True``), which augkit does not have yet.
"""

from augkit.auto_aug import augmentations
from augkit.auto_aug.core import (
    Augmentation,
    MissingArgException,
    UnusedArgException,
    augmentation,
    signed_bin,
)

__all__ = [
    "Augmentation",
    "MissingArgException",
    "UnusedArgException",
    "augmentation",
    "augmentations",
    "signed_bin",
]
