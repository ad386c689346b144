"""DataNode's other operators (``//``, ``%``, ``**``, ``&``, ``|``, ``^``, ``<<``, ``>>``, ``~``,
unary ``+``) and ``augkit.math``, in normal and debug mode, against NumPy formulas written out
here with the semantics measured on DALI 2.4 (the comparison with DALI's own outputs is
``tests/dali_parity/cases_math.py``): C++'s truncating integer division and remainder, float
``//`` as plain division, wrapping integer powers, float results of the float functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import augkit
from augkit import fn, math, pipeline_def
from augkit.errors import OperatorError

MODES = [pytest.param(False, id="normal"), pytest.param(True, id="debug")]
INTS = [np.array([-7, -3, 0, 3, 7, 200], np.int32), np.array([5, -9, 1, -1, 2, 64], np.int32)]
DIVISORS = [np.array([2, 2, 5, -2, -2, 3], np.int32), np.array([-3, 4, 1, 7, -5, 6], np.int32)]
U8 = [np.array([1, 100, 200, 250], np.uint8), np.array([0, 7, 128, 255], np.uint8)]
FLOATS = [
    np.array([-2.5, -0.5, 0.5, 1.5, 2.5], np.float32),
    np.array([4, -1, 0, 9, 0.25], np.float32),
]


def _giving(batch: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    return lambda: batch


def _run(define: Callable[..., Any], debug: bool, *batches: list[np.ndarray]) -> list[Any]:
    """``define(*nodes)`` once, each batch given by an external source; the outputs as lists of
    NumPy samples."""

    @pipeline_def(batch_size=len(batches[0]), num_threads=2, device_id=None, seed=5, debug=debug)
    def pipe() -> Any:
        nodes = [fn.external_source(source=_giving(b)) for b in batches]
        return define(*nodes)

    p = pipe()
    try:
        outs = p.run()
    finally:
        p.close()
    return [[out.at(i) for i in range(len(out))] for out in outs]


def _c_division(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's integer quotient (truncated toward zero) and remainder, in Python's exact integers."""
    pairs = [(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    quotient = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in pairs]
    remainder = [x - q * y for (x, y), q in zip(pairs, quotient, strict=True)]
    return np.array(quotient, a.dtype), np.array(remainder, a.dtype)


def _equal(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, f"sample {i}: {g.dtype}, expected {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"sample {i}")


@pytest.mark.parametrize("debug", MODES)
def test_integer_division_and_remainder_truncate_as_in_c(debug: bool) -> None:
    quotient, remainder = _run(lambda a, b: (a // b, a % b), debug, INTS, DIVISORS)
    expected = [_c_division(a, b) for a, b in zip(INTS, DIVISORS, strict=True)]
    _equal(quotient, [q for q, _ in expected])
    _equal(remainder, [r for _, r in expected])
    assert quotient[0][0] == -3 and remainder[0][0] == -1  # -7 // 2 is -3, -7 % 2 is -1


@pytest.mark.parametrize("debug", MODES)
def test_float_floor_division_is_division_and_remainder_is_fmod(debug: bool) -> None:
    quotient, remainder = _run(lambda x: (x // 2, x % 1.5), debug, FLOATS)
    _equal(quotient, [x / np.float32(2) for x in FLOATS])
    _equal(remainder, [np.fmod(x, np.float32(1.5)) for x in FLOATS])


@pytest.mark.parametrize("debug", MODES)
def test_constants_are_int32_and_float32(debug: bool) -> None:
    plus, times, shifted, floor_div = _run(lambda x: (x + 300, x * 0.5, x << 1, x // 3), debug, U8)
    _equal(plus, [x.astype(np.int32) + 300 for x in U8])
    _equal(times, [x.astype(np.float32) * np.float32(0.5) for x in U8])
    _equal(shifted, [x.astype(np.int32) * 2 for x in U8])
    _equal(floor_div, [(x // 3).astype(np.int32) for x in U8])


@pytest.mark.parametrize("debug", MODES)
def test_integer_powers_wrap_and_negative_exponents_give_zero(debug: bool) -> None:
    bases = [np.array([2, 2, 2, 1, -1, -1, 7, 0], np.int32)] * 2
    exponents = [np.array([3, 31, 32, -5, -3, -4, -1, 0], np.int32)] * 2
    (power,) = _run(lambda a, b: (a**b,), debug, bases, exponents)
    want = np.array([8, -(2**31), 0, 1, -1, 1, 0, 1], np.int32)
    _equal(power, [want, want])
    squares, cubes = _run(lambda x: (x**2, math.pow(x, 3)), debug, U8)
    _equal(squares, [x.astype(np.int64).__pow__(2).astype(np.int32) for x in U8])
    _equal(cubes, [(x.astype(np.int64) ** 3).astype(np.int32) for x in U8])


@pytest.mark.parametrize("debug", MODES)
def test_bit_operators(debug: bool) -> None:
    outs = _run(lambda x: (x & 0x0F, x | 1, x ^ 255, ~x, x >> 2, +x, -x), debug, U8)
    i32 = [x.astype(np.int32) for x in U8]
    _equal(outs[0], [x & 15 for x in i32])
    _equal(outs[1], [x | 1 for x in i32])
    _equal(outs[2], [x ^ 255 for x in i32])
    _equal(outs[3], [(255 - x).astype(np.uint8) for x in U8])  # ~ keeps uint8
    _equal(outs[4], [x // 4 for x in i32])
    _equal(outs[5], U8)
    _equal(outs[6], [((256 - x.astype(np.int32)) % 256).astype(np.uint8) for x in U8])
    (shift,) = _run(lambda a: (a << 33,), debug, INTS)  # the count is taken modulo 32
    _equal(shift, [a * 2 for a in INTS])


@pytest.mark.parametrize("debug", MODES)
def test_bool_operands_of_logical_operators_stay_bool(debug: bool) -> None:
    both, either, one = _run(
        lambda x: ((x > 0) & (x < 2), (x > 1) | (x < -1), (x > 0) ^ (x > 1)), debug, FLOATS
    )
    _equal(both, [(x > 0) & (x < 2) for x in FLOATS])
    _equal(either, [(x > 1) | (x < -1) for x in FLOATS])
    _equal(one, [(x > 0) ^ (x > 1) for x in FLOATS])


@pytest.mark.parametrize("debug", MODES)
def test_math_functions(debug: bool) -> None:
    outs = _run(
        lambda x, i: (
            math.abs(i),
            math.sqrt(math.abs(x)),
            math.floor(i),
            math.atan2(x, x * 0.5 - 1),
            math.clamp(x, -1.0, 1.0),
            math.min(x, 0.5),
            math.max(i, 1),
            math.rsqrt(math.abs(x) + 1),
            math.fpow(i * 0 + 2, 3),
        ),
        debug,
        [FLOATS[0][:4], FLOATS[1][:4]],
        [INTS[0][:4], INTS[1][:4]],
    )
    xs, ints = [FLOATS[0][:4], FLOATS[1][:4]], [INTS[0][:4], INTS[1][:4]]
    _equal(outs[0], [np.abs(i) for i in ints])
    _equal(outs[1], [np.sqrt(np.abs(x)) for x in xs])
    _equal(outs[2], [np.floor(i.astype(np.float32)) for i in ints])
    _equal(outs[3], [np.arctan2(x, x * np.float32(0.5) - np.float32(1)) for x in xs])
    _equal(outs[4], [np.clip(x, -1, 1) for x in xs])
    _equal(outs[5], [np.minimum(x, np.float32(0.5)) for x in xs])
    _equal(outs[6], [np.maximum(i, 1) for i in ints])
    _equal(outs[7], [np.float32(1) / np.sqrt(np.abs(x) + np.float32(1)) for x in xs])
    _equal(outs[8], [np.full(4, 8, np.float32)] * 2)


@pytest.mark.parametrize("debug", MODES)
def test_min_max_and_clamp_follow_cs_comparisons(debug: bool) -> None:
    nan = [np.array([np.nan, 2.0, 0.0], np.float32)] * 2
    low, high, clamped, reversed_ = _run(
        lambda x: (
            math.min(x, 1.0),
            math.max(x, 1.0),
            math.clamp(x, 0.5, 1.0),
            math.clamp(x, 1.0, 0.5),
        ),
        debug,
        nan,
    )
    _equal(low, [np.array([1.0, 1.0, 0.0], np.float32)] * 2)  # a NaN in the first operand loses
    _equal(high, [np.array([1.0, 2.0, 1.0], np.float32)] * 2)
    _equal(clamped, [np.array([np.nan, 1.0, 0.5], np.float32)] * 2)  # NaN stays NaN
    _equal(reversed_, [np.array([np.nan, 0.5, 0.5], np.float32)] * 2)  # lo > hi gives hi


@pytest.mark.parametrize("debug", MODES)
def test_shapes_broadcast_as_numpys(debug: bool) -> None:
    m = [np.arange(20, dtype=np.float32).reshape(4, 5)] * 2
    row, column = [np.ones(5, np.float32)] * 2, [np.arange(4, dtype=np.float32)[:, None]] * 2
    plus_row, plus_column = _run(lambda a, b, c: (a + b, a * c), debug, m, row, column)
    _equal(plus_row, [x + 1 for x in m])
    _equal(plus_column, [x * np.arange(4, dtype=np.float32)[:, None] for x in m])
    with pytest.raises(OperatorError, match=r"\(4, 5\) and \(5, 4\) do not broadcast"):
        _run(lambda a, b: a + b, debug, m, [np.ones((5, 4), np.float32)] * 2)


def test_dense_batches_give_what_samples_give() -> None:
    """Random values are one dense array: the batch kernel must compute what the per-sample
    kernel computes (the second output goes through a per-sample python_function first)."""

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=9)
    def pipe() -> Any:
        x = fn.random.uniform(range=(-50, 50), shape=[6], dtype=augkit.types.INT32)
        y = fn.python_function(x, function=lambda a: a.copy())
        d = fn.random.uniform(range=(1, 9), shape=[6], dtype=augkit.types.INT32)
        return (
            x // d,
            x % 7,
            x**2,
            y // d,
            y % 7,
            y**2,
            math.clamp(x, -10, 10),
            math.clamp(y, -10, 10),
        )

    outs = pipe().run()
    for dense, sampled in ((0, 3), (1, 4), (2, 5), (6, 7)):
        for i in range(4):
            np.testing.assert_array_equal(outs[dense].at(i), outs[sampled].at(i))


@pytest.mark.parametrize("debug", MODES)
def test_integer_division_by_zero_names_the_sample_and_the_pipeline_goes_on(debug: bool) -> None:
    calls = []

    def divisors() -> list[np.ndarray]:
        calls.append(1)
        first = len(calls) == 1
        return [np.array([1, 2], np.int32), np.array([3, 0 if first else 4], np.int32)]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5, debug=debug)
    def pipe() -> Any:
        a = fn.external_source(source=lambda: INTS_PAIR)
        return a // fn.external_source(source=divisors)

    p = pipe()
    with pytest.raises(OperatorError, match="by zero") as info:
        p.run()
    assert info.value.sample_index == 1
    (out,) = p.run()
    np.testing.assert_array_equal(out.at(1), np.array([0, 1], np.int32))  # [0, 5] // [3, 4]


INTS_PAIR = [np.array([7, -8], np.int32), np.array([0, 5], np.int32)]


@pytest.mark.parametrize("debug", MODES)
def test_bitwise_operators_refuse_floats_by_name(debug: bool) -> None:
    with pytest.raises(OperatorError, match=r"bitwise operator & needs integer or bool operands"):
        _run(lambda x: x & 1, debug, FLOATS)


def test_math_needs_a_node() -> None:
    with pytest.raises(TypeError, match=r"augkit.math.sqrt takes DataNodes"):
        math.sqrt(4.0)
    with pytest.raises(TypeError, match=r"augkit.math.clamp takes DataNodes"):
        math.clamp("text", 0, 1)


def test_math_has_dalis_functions() -> None:
    dali_math = {
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
        "clamp", "cos", "cosh", "exp", "fabs", "floor", "fpow", "log", "log10", "log2", "max",
        "min", "pow", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh",
    }  # fmt: skip
    assert dali_math <= set(math.__all__)
    assert all(callable(getattr(math, name)) for name in dali_math)
