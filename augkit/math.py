"""DALI's ``math`` module: element-wise functions of nodes, for use inside a pipeline definition
(``from augkit import math`` then ``math.clamp(images * 1.2, 0, 255)``), as
``nvidia.dali.math``'s. Each call makes a node of the internal ``_arithmetic`` operator; the
types follow DALI's rules (``augkit.operators.arithmetic``): ``abs`` keeps its input's type,
``min``, ``max``, ``clamp`` and ``pow`` promote their operands as ``+`` does (``clamp(uint8, 0,
255)`` is int32, because Python ints are int32 constants), and the float functions give
float32 for integer inputs and keep float64.

At least one operand must be a node; the others may be Python numbers::

    >>> from augkit import fn, math, pipeline_def
    >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    ... def pipe():
    ...     x = fn.random.uniform(range=(-4.0, 4.0), shape=[3])
    ...     return x, math.clamp(x, -1.0, 1.0), math.abs(x), math.sqrt(math.abs(x))
    >>> p = pipe()
    >>> x, clamped, absolute, root = p.run()
    >>> bool((clamped.at(0) == x.at(0).clip(-1, 1)).all())
    True
    >>> root.at(0).dtype
    dtype('float32')
"""

from __future__ import annotations

from typing import Any

from augkit.graph import _expression
from augkit.operators.arithmetic import FLOAT_UNARY

__all__ = [
    "abs",
    "atan2",
    "clamp",
    "fpow",
    "max",
    "min",
    "pow",
    *sorted(FLOAT_UNARY),
]


def _node(op: str, *operands: Any) -> Any:
    result = _expression(op, *operands)
    if result is NotImplemented:
        kinds = ", ".join(type(x).__name__ for x in operands)
        raise TypeError(
            f"augkit.math.{op} takes DataNodes and Python numbers (at least one node: it runs "
            f"in the pipeline), got {kinds}; for plain numbers use Python's math or NumPy"
        )
    return result


def abs(x: Any) -> Any:
    """``|x|`` in ``x``'s type (``abs`` of the most negative integer wraps around, as in C)."""
    return _node("abs", x)


def min(a: Any, b: Any) -> Any:
    """``a < b ? a : b``, element-wise, in the promoted type (a NaN in ``a`` gives ``b``)."""
    return _node("min", a, b)


def max(a: Any, b: Any) -> Any:
    """``a > b ? a : b``, element-wise, in the promoted type (a NaN in ``a`` gives ``b``)."""
    return _node("max", a, b)


def clamp(x: Any, lo: Any, hi: Any) -> Any:
    """``min(max(x, lo), hi)`` (C++'s std::min/std::max), in the promoted type of the three."""
    return _node("clamp", x, lo, hi)


def pow(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` in the promoted type (integers wrap around; a negative integer
    exponent gives 0 unless the base is 1 or -1)."""
    return _node("pow", base, exponent)


def fpow(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` in floating point (float32, or float64 for float64 operands)."""
    return _node("fpow", base, exponent)


def atan2(y: Any, x: Any) -> Any:
    """The angle of ``(x, y)`` in radians, in floating point."""
    return _node("atan2", y, x)


def _unary(name: str) -> Any:
    def function(x: Any) -> Any:
        return _node(name, x)

    function.__name__ = function.__qualname__ = name
    what = "1 / sqrt(x)" if name == "rsqrt" else f"NumPy's {FLOAT_UNARY[name]}"
    function.__doc__ = (
        f"``{name}(x)`` element-wise in floating point (float32 for integer inputs, float64 "
        f"kept): {what}."
    )
    return function


for _name in FLOAT_UNARY:
    globals()[_name] = _unary(_name)
del _name
