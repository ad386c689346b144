"""Indexing a DataNode: ``x[1]``, ``x[-1]``, ``x[1:3, :, 0]``, ``x[::2]``, ``x[idx]`` with a
per-sample ``idx = fn.random.uniform(range=(0, 4), dtype=types.INT32)``, and
``x[newaxis("N")]``, as DALI 2.4's ``DataNode.__getitem__`` (its internal
``_tensor_subscript``, then ``expand_dims`` for new axes). This module is the operator and
``parse``, DALI's reading of an index; the front ends use them: ``DataNode.__getitem__``
(``augkit.graph``) makes the nodes, and ``augkit.subscripts.subscript`` also takes what
``augkit.eager`` calls return (a NumPy sample, a list of them, a TensorList) and then runs
eagerly; there a per-sample index is a list of 0-D arrays or a TensorList (a list of Python
ints is still refused).

Decisions and traps (DALI 2.4, measured on its CPU backend; ``tests/subscript_reference.py``):

- Each index applies to one sample, never to the batch: ``x[0]`` is the first row of every
  image. An integer (Python, NumPy, a 0-D array, ``True`` as 1, or a DataNode of integer
  scalars, one per sample) picks one position and removes the axis; negative counts from the
  end. Outside ``[-extent, extent)`` it is an ``OperatorError`` naming the sample, the axis and
  its length ("Index 7 is out of range for axis 0 of length 5"), as DALI's pipeline fails.
- A slice keeps the axis; its bounds and step may be constants or per-sample DataNodes, with
  Python's rules (bounds clamp: ``x[1:100]`` is ``x[1:]``; a negative step walks back;
  ``x[3:1]`` is empty). A zero step is an error at run time, as in DALI.
- ``None`` is NOT a new axis in DALI (so neither ``np.newaxis``): it is a full slice, ``x[None]``
  is ``x[:]``. A new axis is ``newaxis`` (this module; DALI's ``nvidia.dali.newaxis``), named
  with ``newaxis("N")``: all new axes named or none ("New axis name must be specified for all
  axes or none."). Without names the result has NO layout (DALI's expand_dims); with names the
  letters go in at the new axes.
- The layout: the input's, less the letters of the axes an integer removed (``HWC[:, 0]`` is
  ``HC``; ``x[0, 0, 0]`` is a scalar with no layout).
- More indices than the sample has dimensions is an error at run time (DALI's too): ``x[:, :]``
  is checked as well (DALI's ``_subscript_dim_check``), except when the last index is a new axis.
- Refused at graph time with an ``ArgumentError`` naming what was given (DALI raises TypeError
  or NotImplementedError): a float, a string, a list or tuple of indices, ``Ellipsis``, another
  object. A per-sample index must be integers, 0-D: a float or 1-D DataNode is an error when
  the pipeline runs, naming the sample ("Array index must be of integral type").
- The result is a contiguous copy (DALI's kernel copies too).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from augkit import types
from augkit.errors import ArgumentError
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, described, register, to_int
from augkit.operators.tensors.shape import TensorOperator

MAX_SUBSCRIPTS = 32
"""Indices in one subscript at most (DALI's limit for tensor dimensions)."""


class NewAxis:
    """A new axis of extent 1 in a subscript (DALI's ``nvidia.dali.newaxis``):
    ``x[newaxis]``, or named, ``x[:, newaxis("N")]``."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            if not isinstance(name, str):
                raise ArgumentError(f"a new axis's name must be one letter, got {name!r}")
            if len(name) != 1:
                raise ArgumentError(f"a new axis's name must be one letter, got {name!r}")
        self._name = name

    @property
    def name(self) -> str | None:
        return self._name

    def __call__(self, name: str | None = None) -> NewAxis:
        return NewAxis(name)

    def __repr__(self) -> str:
        return "newaxis" if self._name is None else f"newaxis({self._name!r})"


newaxis = NewAxis()


@described("an integer scalar")
def _index(value: Any) -> int:
    """A per-sample or constant index: an integer scalar (DALI's messages)."""
    array = np.asarray(value)
    if array.ndim != 0:
        raise ValueError(f"Array indices must be scalar (0D). Got {array.ndim}D tensor.")
    if array.dtype.kind not in "biu":
        raise ValueError(f"Array index must be of integral type. Got: {array.dtype}")
    return int(array)


class TensorSubscript(TensorOperator):
    def cpu(self, sample: Any, *, num_subscripts: int, **args: Any) -> Any:
        ndim = np.ndim(sample)
        if num_subscripts > ndim:
            raise ValueError(f"Too many indices ({num_subscripts}) for a {ndim}-D tensor.")
        index: list[Any] = []
        for axis in range(num_subscripts):
            at = args.get(f"at_{axis}")
            extent = sample.shape[axis]
            if at is not None:
                if not -extent <= at < extent:
                    raise ValueError(
                        f"Index {at} is out of range for axis {axis} of length {extent}"
                    )
                index.append(at)
                continue
            step = args.get(f"step_{axis}")
            if step == 0:
                raise ValueError(f"Step cannot be zero. Detected step == 0 at axis {axis}")
            index.append(slice(args.get(f"lo_{axis}"), args.get(f"hi_{axis}"), step))
        return np.array(sample[tuple(index)])  # a copy; 0-D stays 0-D

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        if len(in_layout) != in_ndim:
            return ""
        n = args["num_subscripts"]
        return "".join(
            c for axis, c in enumerate(in_layout) if axis >= n or args.get(f"at_{axis}") is None
        )


def _kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    return [OutputSpec(what="a subscript of a tensor")]


register(
    OperatorSchema(
        name="_tensor_subscript",
        class_name="_TensorSubscript",
        impl=TensorSubscript,
        role="internal",
        output_kinds=_kinds,
        doc="``x[...]`` on a DataNode (DALI's _tensor_subscript): see augkit.graph.",
        args=[
            Arg("num_subscripts", "the number of indices given", 0, to_int(0, MAX_SUBSCRIPTS)),
            *(
                Arg(f"{kind}_{axis}", f"{what} of axis {axis}", None, _index, per_sample=True)
                for axis in range(MAX_SUBSCRIPTS)
                for kind, what in (
                    ("at", "the index"),
                    ("lo", "the slice's start"),
                    ("hi", "the slice's stop"),
                    ("step", "the slice's step"),
                )
            ),
        ],
    )
)


def _is_integer(value: Any) -> bool:
    if isinstance(value, (Integral, np.integer, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biu"


def _bound(value: Any, what: str, is_node: Any) -> Any:
    """A constant or per-sample index or slice bound, or an ArgumentError naming it."""
    if value is None or is_node(value):
        return value
    if isinstance(value, types.ScalarConstant) and value.dtype.numpy.kind in "biu":
        return int(value)
    if _is_integer(value):
        return int(value)
    if value is Ellipsis:
        raise ArgumentError(
            "x[...]: Ellipsis (...) in a subscript is not supported (DALI: not implemented)"
        )
    raise ArgumentError(
        f"x[...]: {what} must be an integer or a DataNode of integers, got "
        f"{type(value).__name__} {value!r}"
    )


def parse(index: Any, is_node: Any) -> tuple[dict[str, Any], list[int], str | None, bool]:
    """DALI's reading of a subscript: the ``_tensor_subscript`` arguments, the new axes (their
    positions in the output), their names (or None), and whether the last index is a new axis.

    Raises:
        ArgumentError: an index of a type DALI refuses, or names on some new axes only.
    """
    items = index if isinstance(index, tuple) else (index,)
    args: dict[str, Any] = {}
    new_axes: list[int] = []
    names: list[str] = []
    position = 0  # in the output
    axis = 0  # in the input
    for item in items:
        if isinstance(item, NewAxis):
            new_axes.append(position)
            if item.name is not None:
                names.append(item.name)
            position += 1
            continue
        if axis >= MAX_SUBSCRIPTS:
            raise ArgumentError(f"x[...]: more than {MAX_SUBSCRIPTS} indices")
        if item is None:
            position += 1
        elif isinstance(item, slice):
            for kind, value in (("lo", item.start), ("hi", item.stop), ("step", item.step)):
                value = _bound(value, f"the slice {kind} of axis {axis}", is_node)
                if value is not None:
                    args[f"{kind}_{axis}"] = value
            position += 1
        else:
            args[f"at_{axis}"] = _bound(item, f"the index of axis {axis}", is_node)
        axis += 1
    args["num_subscripts"] = axis
    if names and len(names) != len(new_axes):
        raise ArgumentError(
            "x[...]: New axis name must be specified for all axes or none (got "
            f"{', '.join(repr(i) for i in items if isinstance(i, NewAxis))})"
        )
    last_new = bool(items) and isinstance(items[-1], NewAxis)
    return args, new_axes, "".join(names) or None, last_new


__all__: Sequence[str] = ("NewAxis", "newaxis", "parse")
