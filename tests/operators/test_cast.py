"""fn.cast: DALI's ConvertSat (halves away from zero, saturation) against explicit rounding, on
real photos and on a table of edge values, and GPU = CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import fn, types
from augkit.errors import ArgumentError
from augkit.operators.color.cast import convert_sat
from tests.operator_check import check_operator, gpu_matches_cpu


def half_away(x: np.ndarray) -> np.ndarray:
    """Reference rounding for float32 data: in float64, |x| + 0.5 is exact."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def shifted(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Real pixel data as float32 with exact halves, negatives and values beyond 255."""
    return [p.astype(np.float32) * np.float32(1.5) - np.float32(100.25) for p in photos]


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT8, types.INT16, types.UINT16])
def test_float_to_int_rounds_half_away_and_saturates(
    photos: list[np.ndarray], dtype: types.DALIDataType
) -> None:
    info = np.iinfo(dtype.numpy)
    check_operator(
        "cast",
        [shifted(photos)],
        lambda x, **_: np.clip(half_away(x), info.min, info.max).astype(dtype.numpy),
        layout="HWC",
        args={"dtype": dtype},
        expected_layout="HWC",
    )


def test_int_to_int_saturates(photos: list[np.ndarray]) -> None:
    wide = [p.astype(np.int16) * 3 - 200 for p in photos]
    check_operator(
        "cast",
        [wide],
        lambda x, **_: np.clip(x, 0, 255).astype(np.uint8),
        layout="HWC",
        args={"dtype": types.UINT8},
    )


def test_to_float_is_a_plain_cast(photos: list[np.ndarray]) -> None:
    check_operator(
        "cast",
        [photos],
        lambda x, **_: x.astype(np.float32),
        layout="HWC",
        args={"dtype": types.FLOAT},
    )
    doubles = [p / 7.0 for p in photos]
    check_operator(
        "cast", [doubles], lambda x, **_: x.astype(np.float16), args={"dtype": "float16"}
    )


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([2.5, -2.5, 0.5, -0.5, 1.5, 3.5], types.INT8, [3, -3, 1, -1, 2, 4]),
        ([300.7, -1.0, 254.5, 0.49999997, 1000.0, -0.6], types.UINT8, [255, 0, 255, 0, 255, 0]),
        ([-1000.0, 127.5, -128.5, 126.4], types.INT8, [-128, 127, -128, 126]),
        (
            [3e9, -3e9, 2147483520.0, 2147483647.0],
            types.INT32,
            [2**31 - 1, -(2**31), 2147483520, 2**31 - 1],
        ),
        ([0.0, -0.0, 2.0, np.nan], types.BOOL, [False, False, True, True]),
    ],
)
def test_rounding_table(
    values: list[float], dtype: types.DALIDataType, expected: list[Any]
) -> None:
    data = np.asarray(values, np.float32)
    want = np.asarray(expected, dtype.numpy)
    check_operator("cast", [[data]], lambda x, **_: want, args={"dtype": dtype}, iterations=1)


def test_nan_becomes_zero_and_inf_saturates() -> None:
    out = convert_sat(np.array([np.nan, np.inf, -np.inf], np.float32), np.uint8)
    np.testing.assert_array_equal(out, [0, 255, 0])


def test_dtype_is_required() -> None:
    with pytest.raises(ArgumentError, match="missing required argument 'dtype'"):
        fn.cast(None)


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    gpu_matches_cpu("cast", shifted(photos), layout="HWC", args={"dtype": types.INT8})


@pytest.mark.parametrize("out", [np.uint8, np.int8, np.uint16, np.int16])
@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64])
def test_the_fast_path_to_small_integers_rounds_and_saturates_as_dalis_convert_sat(src, out):
    """8/16-bit outputs take a shorter path (rint, then the exact halves moved away from
    zero); it must give what C's round-then-clamp gives, written here in Python floats."""
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [
            rng.uniform(-70000, 70000, 2000),
            rng.integers(-300, 300, 400) + 0.5,  # exact halves
            np.nextafter(np.arange(-5, 5) + 0.5, 0),  # just below a half
            np.nextafter(np.arange(-300, 300) + 0.5, -np.inf),  # either side of every half
            np.nextafter(np.arange(-300, 300) + 0.5, np.inf),
            2.0 ** np.arange(0, 17) - 0.5,  # halves just below a power of two
            np.nextafter(2.0 ** np.arange(0, 17) - 0.5, np.inf),
            np.nextafter(2.0 ** np.arange(0, 17) - 0.5, -np.inf),
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30],
        ]
    )
    with np.errstate(over="ignore"):  # float16 holds up to 65504: beyond is inf
        values = values.astype(src)
    info = np.iinfo(out)

    def reference(v: float) -> int:
        if np.isnan(v):
            return 0
        if np.isinf(v):
            return info.max if v > 0 else info.min
        whole = float(np.trunc(v))
        rounded = whole + np.sign(v) if abs(v - whole) >= 0.5 else whole
        return int(min(max(rounded, info.min), info.max))

    got = convert_sat(values, out)
    assert got.dtype == np.dtype(out)
    want = np.array([reference(float(v)) for v in values.astype(np.float64)], out)
    np.testing.assert_array_equal(got, want)
