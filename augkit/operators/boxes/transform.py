"""``fn.coord_transform``: ``out = M · in + T`` for the points (last axis) of each sample.

Decisions and traps (DALI 2.4 facts, checked by running it):

- The input has at least 2 dimensions; its last axis holds the ``n`` components of a point. ``M``
  is ``m × n`` row-major (a flat list, or per sample an array); a scalar ``M`` is that value on
  the diagonal of an ``n × n`` matrix; no ``M`` is the identity. ``T`` has ``m`` components (a
  scalar is broadcast). ``MT`` is the block matrix ``[M T]`` (``n + 1`` columns; a scalar is the
  same as a scalar ``M``); it excludes ``M`` and ``T``. A one-element list counts as a scalar.
- ``dtype``: FLOAT (the default) or the input's own type (DALI refuses any other: "output type
  must be the same as input type ... or float"); an integral output is rounded to nearest
  (halves away from zero) and saturated, DALI's ConvertSat.
- The sums are float32 NumPy ``matmul`` then ``+ T``; DALI accumulates in its own order, so a
  result may differ from DALI's in its last bit (parity: max 1e-6 on relative coordinates).
- Fast: one ``matmul`` per sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.registry import (
    Arg,
    OperatorSchema,
    keeps_kind,
    register,
    to_dtype,
    to_floats,
)


def _validate(args: dict[str, Any]) -> None:
    if "MT" in args and ("M" in args or "T" in args):
        raise ValueError("argument 'MT' is mutually exclusive with 'M' and 'T'")
    dtype = args.get("dtype")
    if isinstance(dtype, types.DALIDataType) and not (
        dtype.numpy.kind in "fiu" and dtype.numpy != np.dtype(np.bool_)
    ):
        raise ValueError(f"argument 'dtype': expected a numeric type, got types.{dtype.name}")


def matrix_and_offset(
    n: int, M: Any = None, T: Any = None, MT: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """See ``_matrix_and_offset``; values beyond float32's range become +-inf, as DALI's float
    arguments do (no NumPy overflow warning)."""
    with np.errstate(over="ignore"):
        return _matrix_and_offset(n, M, T, MT)


def _matrix_and_offset(
    n: int, M: Any = None, T: Any = None, MT: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """The float32 ``M`` (m × n) and ``T`` (m) for points of ``n`` components, from the
    arguments as their converter gives them (tuples of floats or ``None``).

    Example:
        >>> m, t = matrix_and_offset(2, M=(2.0,), T=(1.0,))
        >>> m.tolist(), t.tolist()
        ([[2.0, 0.0], [0.0, 2.0]], [1.0, 1.0])
    """
    if MT is not None:
        if len(MT) == 1:
            M, T = MT, None
        else:
            if len(MT) % (n + 1):
                raise ValueError(
                    f"coord_transform: cannot form a matrix [M T] with {n + 1} columns from "
                    f"{len(MT)} values of MT"
                )
            mt = np.asarray(MT, np.float32).reshape(-1, n + 1)
            return np.ascontiguousarray(mt[:, :n]), np.ascontiguousarray(mt[:, n])
    if M is None or len(M) == 1:
        value = 1.0 if M is None else M[0]
        matrix = np.eye(n, dtype=np.float32) * np.float32(value)
    else:
        if len(M) % n:
            raise ValueError(
                f"coord_transform: cannot form a matrix with {n} columns (the input's "
                f"components) from {len(M)} values of M"
            )
        matrix = np.asarray(M, np.float32).reshape(-1, n)
    m = matrix.shape[0]
    if T is None:
        offset = np.zeros(m, np.float32)
    elif len(T) == 1:
        offset = np.full(m, T[0], np.float32)
    elif len(T) == m:
        offset = np.asarray(T, np.float32)
    else:
        raise ValueError(
            f"coord_transform: T has {len(T)} components; M has {m} rows, so T needs {m}"
        )
    return matrix, offset


class CoordTransform(SampleOperator):
    """Applies an affine map to the points of each sample."""

    moves_geometry = True
    """It moves coordinates (through a matrix) (``OperatorImpl.moves_geometry``)."""

    def cpu(
        self, sample: Any, *, M: Any = None, T: Any = None, MT: Any = None, dtype: Any, **_: Any
    ) -> Any:
        if sample.ndim < 2:
            raise ValueError(
                "coord_transform: the input must have at least 2 dimensions (points along the "
                f"last), got shape {tuple(sample.shape)}"
            )
        if sample.dtype.kind not in "fiu" or sample.dtype == np.bool_:
            raise ValueError(f"coord_transform: the input must be numeric, got {sample.dtype}")
        out_type = dtype.numpy
        if out_type != np.float32 and out_type != sample.dtype:
            raise ValueError(
                "coord_transform: the output type must be the input's type "
                f"({sample.dtype}) or float32, got {out_type}"
            )
        n = sample.shape[-1]
        matrix, offset = matrix_and_offset(n, M, T, MT)
        xp = backend.array_module(sample)
        points = xp.asarray(sample, dtype=xp.float32)
        result = points @ xp.asarray(matrix.T) + xp.asarray(offset)
        if out_type == np.float32:
            return xp.ascontiguousarray(result)
        return convert_sat(result, out_type, xp)

    gpu = cpu


register(
    OperatorSchema(
        name="coord_transform",
        class_name="CoordTransform",
        impl=CoordTransform,
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        validate=_validate,
        doc=(
            "Applies a linear transformation ``out = M * in + T`` to points or vectors (the "
            "last axis of each sample). ``M`` is m x n (a scalar: that value on the "
            "diagonal; none: the identity), ``T`` has m components (a scalar is broadcast); "
            "``MT`` is the block matrix [M T] instead of both. The output has m components, of "
            "type ``dtype`` (FLOAT, or the input's type: then rounded and clamped)."
        ),
        args=[
            Arg("M", "the matrix (m x n, row-major; scalar: diagonal)", None, to_floats(), True),
            Arg("T", "the translation vector (m components; scalar: all)", None, to_floats(), True),
            Arg("MT", "the block matrix [M T] (m x (n + 1))", None, to_floats(), True),
            Arg("dtype", "the output type: FLOAT or the input's", types.FLOAT, to_dtype),
        ],
    )
)
