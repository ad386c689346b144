"""The table of operator cases (tests/operator_cases.py) covers the registry: a new operator is
under the registry-wide tests (debug == normal == eager, fuzzing, bad arguments) once it has a
row, and this test fails until it has one."""

from __future__ import annotations

from tests.operator_cases import CASES, PUBLIC


def test_every_registered_operator_has_a_row_and_every_row_an_operator() -> None:
    missing = [name for name in PUBLIC if name not in CASES]
    stale = sorted(set(CASES) - set(PUBLIC))
    assert not missing and not stale, (
        f"tests/operator_cases.py's CASES: operators without a row: {missing} (give each one: "
        f"see the module's docstring); rows of operators that are not registered: {stale}"
    )
