"""DALI 2.4's ``nvidia.dali.auto_aug.core``: the names the automatic augmentation policies are
built from, gathered as DALI's ``core`` package gathers them. ``augmentation``, the
``Augmentation`` class it makes, ``signed_bin`` and the argument checks are in
``augkit.auto_aug._augmentation`` (DALI's ``core._augmentation``, where its decisions and
traps are written down), ``Policy`` in ``augkit.auto_aug.policy`` and ``select`` in
``augkit.auto_aug.select``.

    >>> from augkit.auto_aug.core import Policy, augmentation, select, signed_bin
    >>> augmentation.__module__
    'augkit.auto_aug._augmentation'
"""

from __future__ import annotations

from augkit.auto_aug._augmentation import (
    Augmentation,
    MissingArgException,
    UnusedArgException,
    _extra_params,  # noqa: F401 (augkit.auto_aug.select reaches it here)
    _signed,  # noqa: F401 (the tests reach it here)
    accepted_kwargs,
    augmentation,
    forbid_unused_kwargs,
    signed_bin,
)
from augkit.auto_aug.policy import Policy
from augkit.auto_aug.select import select

__all__ = [
    "Augmentation",
    "MissingArgException",
    "Policy",
    "UnusedArgException",
    "accepted_kwargs",
    "augmentation",
    "forbid_unused_kwargs",
    "select",
    "signed_bin",
]
