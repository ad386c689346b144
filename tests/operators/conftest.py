"""Fixtures of the operator tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.operator_check import CUPY_BRANCHES


@pytest.fixture(params=["numpy", "cupy_branches"])
def xp(request: pytest.FixtureRequest) -> Any:
    """The array module a GPU kernel is run with on the CPU (``operator_check.run_gpu_kernel``):
    NumPy, and NumPy under another name, so that every ``xp is np`` shortcut is off."""
    return np if request.param == "numpy" else CUPY_BRANCHES
