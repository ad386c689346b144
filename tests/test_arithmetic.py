"""Arithmetic on nodes (``+ - * /`` and unary ``-``; the other operators and ``augkit.math``:
tests/test_math.py) in normal and debug mode, against NumPy
with DALI's type promotion written out here independently of augkit's table:

- a Python ``int`` is an int32 constant, a ``float`` a float32 constant, a ``bool`` a bool;
- same type: that type; a float with a non-float: the float; two floats or two integers of the
  same signedness: the wider; signed intX with unsigned uintY: int(2Y) if X <= Y, else intX;
- ``/`` is float32, or float64 when an operand is float64.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from augkit import fn, pipeline_def
from augkit.errors import OperatorError

BATCH = 3
MODES = [pytest.param(False, id="normal"), pytest.param(True, id="debug")]


def _batch(dtype: str, seed: int, shape: tuple[int, ...] = (4, 5)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind
    if kind == "f":
        return [rng.uniform(-300, 300, shape).astype(dtype) for _ in range(BATCH)]
    info = np.iinfo(dtype)
    low, high = max(info.min, -200), min(info.max, 250)
    return [rng.integers(low, high, shape, endpoint=True).astype(dtype) for _ in range(BATCH)]


def _run(define: Callable[..., Any], debug: bool, *batches: list[np.ndarray]) -> Any:
    """Run ``define(*nodes)`` once, each batch fed through an external source."""

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=3, debug=debug)
    def pipe() -> Any:
        nodes = [fn.external_source(source=lambda b=b: b, layout="HW") for b in batches]
        return define(*nodes)

    p = pipe()
    try:
        return p.run()
    finally:
        p.close()


OPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


def _numpy(op: str, a: Any, b: Any, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return OPS[op](np.asarray(a).astype(dtype), np.asarray(b).astype(dtype))


def _assert_equal_samples(out: Any, expected: list[np.ndarray], dtype: str) -> None:
    assert len(out) == len(expected)
    for i, want in enumerate(expected):
        got = out.at(i)
        assert got.dtype == np.dtype(dtype), f"sample {i}: {got.dtype}, expected {dtype}"
        np.testing.assert_array_equal(got, want, err_msg=f"sample {i}")


# (left dtype, op, right dtype, result dtype): node <op> node
NODE_NODE = [
    ("uint8", "+", "uint8", "uint8"),
    ("uint8", "-", "uint8", "uint8"),  # wraps around, as in C++
    ("int8", "+", "uint8", "int16"),
    ("uint8", "*", "int8", "int16"),
    ("int16", "-", "uint8", "int16"),
    ("int32", "+", "uint32", "int64"),
    ("int64", "*", "uint64", "int64"),
    ("int8", "*", "int16", "int16"),
    ("uint16", "+", "uint8", "uint16"),
    ("uint16", "*", "float32", "float32"),
    ("float32", "-", "float64", "float64"),
    ("float64", "*", "float64", "float64"),
    ("uint8", "/", "uint8", "float32"),
    ("int32", "/", "int16", "float32"),
    ("float64", "/", "uint8", "float64"),
    ("float32", "/", "float32", "float32"),
]


@pytest.mark.parametrize("debug", MODES)
@pytest.mark.parametrize(("left", "op", "right", "result"), NODE_NODE)
def test_node_op_node(debug: bool, left: str, op: str, right: str, result: str) -> None:
    a, b = _batch(left, 1), _batch(right, 2)
    (out,) = _run(lambda x, y: OPS[op](x, y), debug, a, b)
    _assert_equal_samples(
        out, [_numpy(op, x, y, result) for x, y in zip(a, b, strict=True)], result
    )
    assert out.layout() == "HW"


# (node dtype, op, constant, constant on the left, result dtype)
NODE_CONSTANT = [
    ("uint8", "*", 2, False, "int32"),
    ("uint8", "+", 0.5, False, "float32"),
    ("uint8", "/", 2, False, "float32"),
    ("uint8", "-", 7, True, "int32"),
    ("uint8", "/", 1, True, "float32"),  # 1 / 0 is inf
    ("uint8", "+", True, False, "uint8"),
    ("int16", "*", 3, False, "int32"),
    ("int64", "-", 5, False, "int64"),
    ("uint32", "+", 1, False, "int64"),
    ("float64", "*", 2, False, "float64"),
    ("float64", "+", 0.5, True, "float64"),
    ("float64", "/", 3, False, "float64"),
    ("float32", "-", 1.5, True, "float32"),
    ("int8", "*", 0.25, False, "float32"),
]


@pytest.mark.parametrize("debug", MODES)
@pytest.mark.parametrize(("dtype", "op", "constant", "on_left", "result"), NODE_CONSTANT)
def test_node_op_constant(
    debug: bool, dtype: str, op: str, constant: Any, on_left: bool, result: str
) -> None:
    a = _batch(dtype, 3)
    if on_left:
        (out,) = _run(lambda x: OPS[op](constant, x), debug, a)
        expected = [_numpy(op, constant, x, result) for x in a]
    else:
        (out,) = _run(lambda x: OPS[op](x, constant), debug, a)
        expected = [_numpy(op, x, constant, result) for x in a]
    _assert_equal_samples(out, expected, result)


@pytest.mark.parametrize("debug", MODES)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64", "float32"])
def test_unary_minus_keeps_the_type(debug: bool, dtype: str) -> None:
    """As in DALI 2.4: ``-x`` of uint8 is uint8 (wrapping around: -1 is 255), not int32."""
    a = _batch(dtype, 4)
    (out,) = _run(lambda x: -x, debug, a)
    with np.errstate(over="ignore"):
        _assert_equal_samples(out, [np.negative(x) for x in a], dtype)


@pytest.mark.parametrize("debug", MODES)
def test_an_expression(debug: bool) -> None:
    """``(x - 128) / 64 * -1 + y``: each step promoted as its own operation."""
    a, b = _batch("uint8", 5), _batch("float32", 6)
    (out,) = _run(lambda x, y: -((x - 128) / 64) + y, debug, a, b)
    expected = []
    for x, y in zip(a, b, strict=True):
        step = x.astype(np.int32) - np.int32(128)
        step = step.astype(np.float32) / np.float32(64)
        expected.append(np.float32(0) - step + y)
    _assert_equal_samples(out, expected, "float32")


@pytest.mark.parametrize("debug", MODES)
@pytest.mark.parametrize("shape", [[], [1]], ids=["shape ()", "shape (1,)"])
def test_per_sample_scalar_broadcasts(debug: bool, shape: list[int]) -> None:
    a = _batch("uint8", 7)

    def define(x: Any) -> Any:
        factor = fn.random.uniform(range=(0, 2), shape=shape)
        return factor, x * factor

    factors, out = _run(define, debug, a)
    for i in range(BATCH):
        factor = factors.at(i)
        assert factor.shape == tuple(shape)
        want = a[i].astype(np.float32) * factor.reshape(()).astype(np.float32)
        np.testing.assert_array_equal(out.at(i), want)
    assert len({float(factors.at(i).reshape(())) for i in range(BATCH)}) == BATCH


def test_debug_and_normal_give_the_same_random_arithmetic() -> None:
    a = _batch("uint8", 8)

    def define(x: Any) -> Any:
        return x * fn.random.uniform(range=(0.5, 1.5)) - fn.random.coin_flip() * 10

    (normal,) = _run(define, False, a)
    (debug,) = _run(define, True, a)
    for i in range(BATCH):
        np.testing.assert_array_equal(normal.at(i), debug.at(i))


@pytest.mark.parametrize("debug", MODES)
def test_shape_mismatch_names_the_operator_and_the_sample(debug: bool) -> None:
    a = _batch("uint8", 9)
    b = [*_batch("uint8", 10)[:2], _batch("uint8", 11, (5, 4))[0]]  # sample 2 differs
    with pytest.raises(OperatorError) as info:
        _run(lambda x, y: x + y, debug, a, b)
    error = info.value
    assert error.sample_index == 2 and "sample #2" in str(error)
    assert error.operator in str(error) and "Arithmetic" in error.operator
    assert "(4,5)" in str(error).replace(" ", "") and "(5,4)" in str(error).replace(" ", "")


def test_unsupported_operand_is_a_type_error() -> None:
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=3)
    def pipe() -> Any:
        return fn.random.uniform() + "text"

    with pytest.raises(TypeError):
        pipe()
