"""fn.lookup_table against a Python dict lookup on real photos and integer arrays: DALI's
documented example, repeated keys (the last wins), defaults outside the keys, the conversion of
the values to ``dtype`` (rounding, saturation), every integer input type (cv2.LUT for uint8,
a gather otherwise), and bad arguments and inputs."""

from __future__ import annotations

import numpy as np
import pytest

import augkit.eager
from augkit import types
from augkit.errors import ArgumentError, OperatorError
from tests.operator_check import check_operator


def by_dict(x: np.ndarray, keys, values, default, dtype=np.float32) -> np.ndarray:
    table = dict(zip(keys, values, strict=True))  # later keys overwrite earlier ones
    flat = [table.get(int(v), default) for v in np.asarray(x).ravel()]
    return np.array(flat, np.float64).reshape(np.shape(x)).astype(dtype)


def test_dalis_documented_example() -> None:
    keys, values = [0, 2, 3, 4, 5, 3], [0.2, 0.4, 0.5, 0.6, 0.7, 0.10]
    x = np.array([1, 4, 1, 0, 100, 2, 3, 4], np.int32)
    out = augkit.eager.lookup_table(x, keys=keys, values=values, default_value=0.99)
    np.testing.assert_array_equal(
        out, np.array([0.99, 0.6, 0.99, 0.2, 0.99, 0.4, 0.10, 0.6], np.float32)
    )


def test_photos_through_a_table(photos: list[np.ndarray]) -> None:
    keys = list(range(0, 256, 7))
    values = [float((k * 31) % 97) - 40.5 for k in keys]
    check_operator(
        "lookup_table",
        [[p[::3, ::3] for p in photos[:3]]],
        lambda x, **_: by_dict(x, keys, values, -1.0),
        layout="HWC",
        args={"keys": keys, "values": values, "default_value": -1.0},
        expected_layout="HWC",
    )


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint64])
def test_integer_input_types(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 1, 2, 5, 300 % (int(info.max) + 1), info.max], dtype)
    keys, values = [1, 2, 5, 255], [10.0, 20.0, 50.0, 2550.0]
    out = augkit.eager.lookup_table(x, keys=keys, values=values, default_value=-3.0)
    np.testing.assert_array_equal(out, by_dict(x, keys, values, -3.0))


def test_values_are_converted_to_dtype_with_rounding_and_saturation() -> None:
    x = np.array([-3, 0, 1, 2, 3, 4, 5, 300], np.int32)
    out = augkit.eager.lookup_table(
        x,
        keys=[0, 2, 3, 4],
        values=[2.5, -2.5, 300.0, -1.0],
        default_value=7.5,
        dtype=types.UINT8,
    )
    np.testing.assert_array_equal(out, np.array([8, 3, 8, 0, 255, 0, 8, 8], np.uint8))
    out = augkit.eager.lookup_table(
        x.astype(np.uint8),
        keys=[0, 2],
        values=[2.5, -2.5],
        default_value=-7.5,
        dtype=types.INT8,
    )
    np.testing.assert_array_equal(out, by_dict(x.astype(np.uint8), [0, 2], [3, -3], -8, np.int8))


def test_uint8_table_for_every_level() -> None:
    levels = np.arange(256, dtype=np.uint8).reshape(16, 16)
    keys = list(range(0, 200))
    values = [255.0 - k for k in keys]
    out = augkit.eager.lookup_table(levels, keys=keys, values=values, dtype=types.INT16)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, by_dict(levels, keys, values, 0.0, np.int16))
    for dtype in (types.INT64, types.FLOAT16, types.BOOL):  # no cv2.LUT for these
        got = augkit.eager.lookup_table(levels, keys=keys, values=values, dtype=dtype)
        assert got.dtype == dtype.numpy
        np.testing.assert_array_equal(got, by_dict(levels, keys, values, 0.0, dtype.numpy))


def test_no_keys_gives_the_default_everywhere() -> None:
    out = augkit.eager.lookup_table(np.arange(6, dtype=np.int16), default_value=4.0)
    np.testing.assert_array_equal(out, np.full(6, 4.0, np.float32))


def test_bad_arguments_and_inputs() -> None:
    x = np.zeros((2, 2), np.uint8)
    with pytest.raises(ArgumentError, match=r"LookupTable.*same length"):
        augkit.eager.lookup_table(x, keys=[1, 2], values=[1.0])
    with pytest.raises(ArgumentError, match="LookupTable: argument 'keys'"):
        augkit.eager.lookup_table(x, keys=[70000], values=[1.0])
    with pytest.raises(ArgumentError, match="LookupTable: argument 'keys'"):
        augkit.eager.lookup_table(x, keys=[-1], values=[1.0])
    with pytest.raises(ArgumentError, match="LookupTable: argument 'keys'"):
        augkit.eager.lookup_table(x, keys=[1.5], values=[1.0])
    with pytest.raises(OperatorError, match="integer inputs"):
        augkit.eager.lookup_table(np.zeros(3, np.float32), keys=[1], values=[1.0])
