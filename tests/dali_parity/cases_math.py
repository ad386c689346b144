"""Parity cases of DataNode's operators and DALI's ``math`` module (``augkit.math``): types,
integer division and remainder, powers, bit operations, the float functions."""

from __future__ import annotations

import importlib
from typing import Any

from tests.dali_parity.base import ParityCase


def _math(fn: Any) -> Any:
    """The ``math`` module of the library whose ``fn`` the body was given."""
    dali = fn.__name__.startswith("nvidia")
    return importlib.import_module("nvidia.dali.math" if dali else "augkit.math")


def _ints(fn: Any, types: Any, x: Any) -> Any:
    """int32 values with both signs, from the float vectors."""
    return fn.cast(x * 10, dtype=types.INT32)


def _function(name: str) -> Any:
    """The body applying ``math.<name>`` to the input."""
    return lambda fn, types, x: getattr(_math(fn), name)(x)


def _case(name: str, body: Any, input: str = "images", **kw: Any) -> ParityCase:
    return ParityCase(name, body, input=input, **kw)


_LIBM = (
    "NumPy's float32 functions against the C library's (DALI's): an ulp or two, from NumPy's "
    "AVX2/AVX-512 loops (its baseline loops, NPY_DISABLE_CPU_FEATURES, give DALI's bits)"
)

UNARY_FLOAT = [
    "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "fabs",
]  # fmt: skip

CASES = [
    # types: a Python int is an int32 constant, a float a float32 one
    _case("u8_plus_300", lambda fn, types, x: x + 300),
    _case("u8_times_half", lambda fn, types, x: x * 0.5),
    _case("u8_minus_u8", lambda fn, types, x: x - (x // 2 + 1)),
    _case("neg_u8", lambda fn, types, x: -x),
    _case("pos_u8", lambda fn, types, x: +x),
    _case("invert_u8", lambda fn, types, x: ~x),
    # integer division and remainder truncate toward zero (C++)
    _case("u8_floordiv_3", lambda fn, types, x: x // 3),
    _case("u8_mod_7", lambda fn, types, x: x % 7),
    _case("int_floordiv", lambda fn, types, x: _ints(fn, types, x) // -4, input="vectors"),
    _case("int_mod", lambda fn, types, x: _ints(fn, types, x) % 3, input="vectors"),
    _case(
        "int_floordiv_node",
        lambda fn, types, x: (lambda i: i // (_math(fn).abs(i) % 4 + 1) - i % (i * 0 + 3))(
            _ints(fn, types, x)
        ),
        input="vectors",
    ),
    _case("float_floordiv", lambda fn, types, x: x // 2, input="vectors"),
    _case(
        "float_mod",
        lambda fn, types, x: x % 1.5,
        input="vectors",
        note="a float remainder is exact (no rounding)",
    ),
    # powers
    _case("u8_pow_2", lambda fn, types, x: x**2),
    _case("u8_pow_u8", lambda fn, types, x: x ** (x % 4)),
    _case("two_pow_int", lambda fn, types, x: 2 ** (_ints(fn, types, x) % 40), input="vectors"),
    _case("float_pow_2", lambda fn, types, x: x**2, input="vectors", note="one rounding"),
    _case(
        "fpow_sqrt",
        lambda fn, types, x: _math(fn).fpow(x, 0.5),
        note="powf of the integers 0..255: bit for bit on every dispatch measured",
    ),
    _case("pow_int", lambda fn, types, x: _math(fn).pow(_ints(fn, types, x), 3), input="vectors"),
    # bit operations
    _case("u8_and", lambda fn, types, x: x & 0x0F),
    _case("u8_or", lambda fn, types, x: x | 1),
    _case("u8_xor", lambda fn, types, x: x ^ 255),
    _case("u8_shifts", lambda fn, types, x: (x >> 2, x << 3)),
    _case(
        "int_shifts",
        lambda fn, types, x: (lambda i: (i >> 1, i << 2))(_ints(fn, types, x)),
        input="vectors",
    ),
    _case(
        "bool_logic",
        lambda fn, types, x: ((x > 0) & (x < 2), (x > 1) | (x < -1.0), (x > 0) ^ (x > 1)),
        input="vectors",
        note="-1.0, not -1: DALI 2.4 compares a float node with a negative int constant wrongly",
    ),
    # comparisons in the promoted type
    _case("u8_eq_300", lambda fn, types, x: (x == 300, x < 128.5, x >= 200)),
    # Python constants as inputs: DALI's types.Constant
    _case("constant_full_like", lambda fn, types, x: (fn.full_like(x, 7), fn.full_like(x, 2.5))),
    _case(
        "constant_std_dev",
        lambda fn, types, x: fn.reductions.std_dev(x, [100.0, 110.0, 120.0], axis_names="HW"),
        max_diff=1e-4,
        mean_diff=1e-5,
        reason="float sums: augkit accumulates in float64 and rounds once, DALI in float32",
        note="the mean given as a list of Python floats (a scalar one: DALI 2.4 reads past it)",
    ),
    # math: abs, min, max, clamp, atan2
    _case("abs_int", lambda fn, types, x: _math(fn).abs(_ints(fn, types, x)), input="vectors"),
    _case("abs_u8", lambda fn, types, x: _math(fn).abs(x)),
    _case("clamp_u8", lambda fn, types, x: _math(fn).clamp(x, 50, 210)),
    _case("clamp_float", lambda fn, types, x: _math(fn).clamp(x, -1.0, 1.0), input="vectors"),
    _case("min_max", lambda fn, types, x: (_math(fn).min(x, 120), _math(fn).max(x, x // 2 + 60))),
    _case(
        "atan2",
        lambda fn, types, x: _math(fn).atan2(x, x * 0.5 - 1),
        input="vectors",
        max_diff=1e-6,
        mean_diff=1e-7,
        reason=_LIBM,
    ),
    *[
        _case(
            f"{name}_float",
            _function(name),
            input="vectors",
            max_diff=1e-4,
            mean_diff=1e-6,
            reason=_LIBM,
        )
        for name in UNARY_FLOAT
    ],
    *[
        _case(
            f"{name}_u8",
            _function(name),
            max_diff=1e-4,
            mean_diff=1e-6,
            reason=_LIBM,
            note="float32 result of a uint8 input",
        )
        for name in ("sqrt", "log", "sin")
    ],
    _case(
        "exp_u8",
        lambda fn, types, x: _math(fn).exp(x // 16),
        max_diff=0.25,
        mean_diff=0.02,
        reason=_LIBM + "; up to e**15 here, where one ulp is 0.25",
        note="float32 result of a uint8 input",
    ),
]
