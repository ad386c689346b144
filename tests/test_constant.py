"""``fn.constant`` and ``types.Constant`` against DALI 2.4 (``tests/subscript_reference.py``
wrote the reference): dtypes, shapes, layouts and conversions, compared exactly in a normal
pipeline and in debug mode; a ``ScalarConstant``'s type in arithmetic; and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import eager, types
from augkit.errors import ArgumentError, OperatorError
from tests import subscript_reference as ref
from tests.test_subscript import assert_as_dali, run_case


@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
@pytest.mark.parametrize("name", sorted(ref.CONSTANTS))
def test_constants_match_dali(name: str, debug: bool) -> None:
    assert_as_dali(name, run_case(ref.CONSTANTS[name], debug))


ERRORS = {
    "volume_mismatch": (ArgumentError, r"number of values \(4\) does not match.*\[2, 3\]"),
    "both_data": (ArgumentError, r"`fdata` and `idata` arguments are mutually exclusive"),
    "no_data": (OperatorError, r"either `fdata` or `idata` must be present"),
    "float64": (ArgumentError, r"Unsupported type: double"),
    "layout_mismatch": (ArgumentError, r'layout "HW" has dimensionality.*\[3\]'),
    "nested_list": (TypeError, r"Unexpected type: <class 'list'>"),
    "C_string": (TypeError, r"Expected scalar value of type 'bool', 'int' or 'float'"),
}


def test_every_refused_constant_is_refused_by_dali_too() -> None:
    assert set(ERRORS) == set(ref.CONSTANT_ERRORS)
    for name in ERRORS:
        assert f"error/{name}" in ref.np.load(ref.OUT).files, name


@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_constants_are_clear_errors(name: str, debug: bool) -> None:
    kind, words = ERRORS[name]
    with pytest.raises(kind, match=words):
        run_case(ref.CONSTANT_ERRORS[name], debug)


@pytest.mark.parametrize(
    ("value", "dtype", "want_value", "want_dtype"),
    [
        (3, None, 3, types.INT32),
        (3.5, None, 3.5, types.FLOAT),
        (True, None, True, types.BOOL),
        (np.int8(3), None, 3, types.INT8),
        (np.float64(2.5), None, 2.5, types.FLOAT64),
        (3, types.UINT8, 3, types.UINT8),
        (2.7, types.INT16, 2, types.INT16),
        (np.array(5, np.uint16), None, 5, types.UINT16),
        (1, types.BOOL, True, types.BOOL),
        (3, None, 3, types.INT32),
    ],
)
def test_scalar_constants_are_typed_as_dali_types_them(value, dtype, want_value, want_dtype):
    c = types.Constant(value, dtype=dtype)
    assert isinstance(c, types.ScalarConstant)
    assert c.value == want_value and type(c.value) is type(want_value)
    assert c.dtype == want_dtype


def test_scalar_constant_conversions() -> None:
    c = types.Constant(2.5)
    assert c.int8().value == 2 and c.int8().dtype == types.INT8
    assert float(c) == 2.5
    with pytest.raises(TypeError, match="FLOAT"):
        int(c)
    assert int(types.Constant(7)) == 7
    assert types.Constant(3, types.UINT8) == types.Constant(3, types.UINT8)
    assert types.Constant(3, types.UINT8) != types.Constant(3)
    assert str(types.Constant(3, types.UINT8)) == "3:DALIDataType.UINT8"


def test_a_constant_node_is_an_eager_operator_too() -> None:
    out = eager.constant(idata=[1, 2, 3, 4], shape=[2, 2], layout="HW", batch_size=2)
    assert len(out) == 2
    np.testing.assert_array_equal(out[1], [[1, 2], [3, 4]])
