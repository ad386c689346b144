"""Indexing, the front end: ``newaxis`` (DALI's ``nvidia.dali.newaxis``, ``augkit.newaxis``)
and ``subscript(x, index)``, which is ``x[index]`` with DALI's semantics on a DataNode and also
on what ``augkit.eager`` calls return (a NumPy sample, a list of them, a TensorList), where it
runs now. The semantics, the operator and DALI's reading of an index (``parse``) are in
``augkit.operators.tensors.subscript``; ``DataNode.__getitem__`` (``augkit.graph``) makes the
nodes. This module stands beside ``augkit.eager``, above the operators, which import no front
end.

Example:
    >>> import numpy as np
    >>> subscript(np.arange(6).reshape(2, 3), (slice(None), -1)).tolist()
    [2, 5]
    >>> subscript(np.arange(3), newaxis).shape
    (1, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import eager
from augkit.graph import DataNode
from augkit.operators.registry import REGISTRY
from augkit.operators.tensors.subscript import NewAxis, newaxis, parse
from augkit.tensors import TensorList


def subscript(x: Any, index: Any) -> Any:
    """``x[index]`` with DALI's semantics (``augkit.operators.tensors.subscript``): ``x`` a
    DataNode (a pipeline definition, debug mode) or what ``augkit.eager`` takes (then it runs
    now, and a per-sample index is a TensorList or a list of 0-D arrays).

    Raises:
        ArgumentError: an index of a type DALI refuses.
    """
    if isinstance(x, DataNode):
        return x[index]

    def per_sample(value: Any) -> bool:  # what eager calls return for a batch
        if isinstance(value, TensorList):
            return True
        return isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value)

    args, new_axes, names, _ = parse(index, per_sample)
    out = eager.call(REGISTRY["_tensor_subscript"], x, **args)
    if new_axes:
        out = eager.call(REGISTRY["expand_dims"], out, axes=new_axes, new_axis_names=names)
    return out


__all__: Sequence[str] = ("NewAxis", "newaxis", "subscript")
