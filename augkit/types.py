"""DALI's enums: data types, image types, interpolation types, and their NumPy equivalents;
and what an external source's callable is told about the data it is asked for (``SampleInfo``,
``BatchInfo``).

Names and members follow ``nvidia.dali.types`` so that ``import augkit.types as types`` is a
drop-in replacement: ``types.RGB``, ``types.FLOAT``, ``types.INTERP_LINEAR``, ...

Example:
    >>> import augkit.types as types
    >>> types.FLOAT.numpy
    dtype('float32')
    >>> types.to_dtype("uint8") is types.UINT8
    True
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class DALIDataType(enum.IntEnum):
    """Element types of tensors, numbered as DALI numbers them."""

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of this type (``NO_TYPE`` has none and raises)."""
        try:
            return _TO_NUMPY[self]
        except KeyError:
            raise TypeError(f"{self.name} has no NumPy equivalent") from None

    def __str__(self) -> str:
        return f"DALIDataType.{self.name}"


class DALIImageType(enum.IntEnum):
    """Colour spaces a decoder can produce."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4

    def __str__(self) -> str:
        return f"DALIImageType.{self.name}"


class DALIInterpType(enum.IntEnum):
    """Interpolation methods of resize, rotate and the other geometric operators."""

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5

    def __str__(self) -> str:
        return f"DALIInterpType.{self.name}"


_TO_NUMPY: dict[DALIDataType, np.dtype] = {
    DALIDataType.UINT8: np.dtype(np.uint8),
    DALIDataType.UINT16: np.dtype(np.uint16),
    DALIDataType.UINT32: np.dtype(np.uint32),
    DALIDataType.UINT64: np.dtype(np.uint64),
    DALIDataType.INT8: np.dtype(np.int8),
    DALIDataType.INT16: np.dtype(np.int16),
    DALIDataType.INT32: np.dtype(np.int32),
    DALIDataType.INT64: np.dtype(np.int64),
    DALIDataType.FLOAT16: np.dtype(np.float16),
    DALIDataType.FLOAT: np.dtype(np.float32),
    DALIDataType.FLOAT64: np.dtype(np.float64),
    DALIDataType.BOOL: np.dtype(np.bool_),
}
_FROM_NUMPY: dict[np.dtype, DALIDataType] = {v: k for k, v in _TO_NUMPY.items()}

# Module-level aliases, as in nvidia.dali.types.
NO_TYPE = DALIDataType.NO_TYPE
UINT8 = DALIDataType.UINT8
UINT16 = DALIDataType.UINT16
UINT32 = DALIDataType.UINT32
UINT64 = DALIDataType.UINT64
INT8 = DALIDataType.INT8
INT16 = DALIDataType.INT16
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT64 = DALIDataType.FLOAT64
BOOL = DALIDataType.BOOL

RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr
ANY_DATA = DALIImageType.ANY_DATA

INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN


@dataclass(frozen=True)
class SampleInfo:
    """The sample a per-sample ``fn.external_source(..., batch=False)`` callable is asked for
    (DALI's ``nvidia.dali.types.SampleInfo``).

    Attributes:
        idx_in_epoch: 0-based index of the sample within the epoch.
        idx_in_batch: 0-based index of the sample within its batch.
        iteration: 0-based index of its batch within the epoch.
        epoch_idx: 0-based index of the epoch (``Pipeline.reset()`` starts the next one).

    Example:
        >>> def source(info):
        ...     return np.full((2,), info.idx_in_epoch, np.int32)
        >>> source(SampleInfo(5, 1, 2, 0)).tolist()
        [5, 5]
    """

    idx_in_epoch: int
    idx_in_batch: int
    iteration: int
    epoch_idx: int


@dataclass(frozen=True)
class BatchInfo:
    """The batch a batch-mode ``fn.external_source(..., batch_info=True)`` callable is asked
    for (DALI's ``nvidia.dali.types.BatchInfo``).

    Attributes:
        iteration: 0-based index of the batch within the epoch.
        epoch_idx: 0-based index of the epoch.

    Example:
        >>> BatchInfo(iteration=3, epoch_idx=1)
        BatchInfo(iteration=3, epoch_idx=1)
    """

    iteration: int
    epoch_idx: int


def to_dtype(value: Any) -> DALIDataType:
    """Accept a DALIDataType, a NumPy dtype (or its name) or a torch dtype; return DALIDataType.

    Raises:
        TypeError: the value names no supported element type.
    """
    if isinstance(value, DALIDataType):
        return value
    if type(value).__module__ == "torch":
        value = str(value).removeprefix("torch.")
    if isinstance(value, str) and value.upper() in DALIDataType.__members__:
        return DALIDataType[value.upper()]
    try:
        return _FROM_NUMPY[np.dtype(value)]
    except (TypeError, KeyError):
        allowed = ", ".join(t.name for t in _TO_NUMPY)
        raise TypeError(f"{value!r} is not a supported data type; use one of {allowed}") from None


def from_numpy(dtype: np.dtype) -> DALIDataType:
    """The DALIDataType of a NumPy dtype."""
    return to_dtype(dtype)


# --- Constant ------------------------------------------------------------------------------------
# DALI's ``types.Constant``: a scalar (no shape, layout, device) is a ``ScalarConstant``, a number
# with a DALI type for arithmetic's type promotion (``images + types.Constant(3, types.UINT8)``
# stays uint8, where ``images + 3`` is int32); anything else (a list, an array, a scalar with a
# shape, a layout or a device) is an ``fn.constant`` node, the same tensor for every sample.
# Measured on DALI 2.4 (tests/subscript_reference.py): a NumPy array keeps its dtype, except
# float64 -> float32 and, without ``dtype``, int64/uint64 -> int32/uint32 (an OverflowError when
# a value does not fit); a list of ints is INT32, with a float FLOAT, of bools BOOL; a nested
# list is refused (DALI: TypeError "Unexpected type"); ``shape`` reshapes an array (same volume)
# or fills it with a scalar; ``Constant(3, device="cpu")`` is 0-D. Enum constants (DALI's
# DATA_TYPE tensors) are not supported.

_INT_TYPES = frozenset(
    {INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64}
)  # DALI's _int_types
_FLOAT_TYPES = frozenset({FLOAT16, FLOAT, FLOAT64})


class ScalarConstant:
    """A number with a DALI type, for mathematical expressions (DALI's ``ScalarConstant``);
    make it with ``Constant``. Python ``bool``/``int``/``float`` are BOOL/INT32/FLOAT; a NumPy
    scalar or 0-D array keeps its type; ``dtype`` converts the value (``Constant(2.7,
    INT16).value`` is 2, truncated as Python's ``int``).

    With a DataNode (``c + node``, ``node * c``, ``c < node``) the node's operators make the
    expression (``augkit.graph``, which takes the constant as a NumPy scalar of its type):
    a ScalarConstant has no arithmetic of its own, so Python asks the node.

    Example:
        >>> Constant(3, UINT8)
        3
        >>> Constant(2.7, dtype=INT16).value
        2
        >>> str(Constant(np.int8(3)))
        '3:DALIDataType.INT8'
    """

    def __init__(self, value: Any, dtype: DALIDataType | None = None) -> None:
        if isinstance(value, (np.generic, np.ndarray)):
            kind = to_dtype(value.dtype)
            value = value.item()
            dtype = kind if dtype is None else dtype
        if not isinstance(value, (bool, int, float)):
            raise TypeError(
                f"Expected scalar value of type 'bool', 'int' or 'float', got {type(value)}."
            )
        if dtype is not None:
            dtype = to_dtype(dtype)
            if dtype == BOOL:
                value = bool(value)
            elif dtype in _INT_TYPES:
                value = int(value)
            else:
                value = float(value)
        else:
            dtype = BOOL if isinstance(value, bool) else INT32 if isinstance(value, int) else FLOAT
        self.value: bool | int | float = value
        self.dtype: DALIDataType = dtype
        self.shape: list[int] = []

    def numpy(self) -> np.generic:
        """The value as a NumPy scalar of its type (what arithmetic gets)."""
        return self.dtype.numpy.type(self.value)

    def _cast(self, dtype: DALIDataType) -> ScalarConstant:
        return ScalarConstant(self.value, dtype)

    def bool(self) -> ScalarConstant:
        return self._cast(BOOL)

    def int8(self) -> ScalarConstant:
        return self._cast(INT8)

    def int16(self) -> ScalarConstant:
        return self._cast(INT16)

    def int32(self) -> ScalarConstant:
        return self._cast(INT32)

    def int64(self) -> ScalarConstant:
        return self._cast(INT64)

    def uint8(self) -> ScalarConstant:
        return self._cast(UINT8)

    def uint16(self) -> ScalarConstant:
        return self._cast(UINT16)

    def uint32(self) -> ScalarConstant:
        return self._cast(UINT32)

    def uint64(self) -> ScalarConstant:
        return self._cast(UINT64)

    def float16(self) -> ScalarConstant:
        return self._cast(FLOAT16)

    def float32(self) -> ScalarConstant:
        return self._cast(FLOAT)

    def float64(self) -> ScalarConstant:
        return self._cast(FLOAT64)

    def __bool__(self) -> builtins.bool:  # `bool` here is the method above
        if self.dtype in _INT_TYPES or self.dtype == BOOL:
            return bool(self.value)
        raise TypeError(f"convert the {self.dtype.name} ScalarConstant to bool or int first")

    def __int__(self) -> int:
        if self.dtype in _INT_TYPES or self.dtype == BOOL:
            return int(self.value)
        raise TypeError(f"convert the {self.dtype.name} ScalarConstant to an int type first")

    def __index__(self) -> int:
        return self.__int__()

    def __float__(self) -> float:
        if self.dtype in _FLOAT_TYPES:
            return float(self.value)
        raise TypeError(f"convert the {self.dtype.name} ScalarConstant to a float type first")

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, ScalarConstant):
            return self.value == other.value and self.dtype == other.dtype
        return NotImplemented  # a DataNode's __eq__ makes the per-sample node

    def __ne__(self, other: Any) -> Any:
        if isinstance(other, ScalarConstant):
            return self.value != other.value or self.dtype != other.dtype
        return NotImplemented

    __hash__ = object.__hash__

    def __neg__(self) -> ScalarConstant:
        return ScalarConstant(-self.value, self.dtype)

    def __str__(self) -> str:
        return f"{self.value}:{self.dtype}"

    def __repr__(self) -> str:
        return f"{self.value}"


def _no_graph(**arguments: Any) -> Any:
    raise RuntimeError("types.Constant of a tensor makes a node: import augkit first")


constant_node: Callable[..., Any] = _no_graph
"""``fn.constant(**arguments)``, the node ``Constant`` returns for a tensor: set by
``augkit.graph``, the layer that makes nodes (this module, DALI's enums, is below it and
imports nothing of augkit's)."""


def _is_scalar_shape(shape: Any) -> bool:
    return shape is None or (not isinstance(shape, str) and list(np.atleast_1d(shape)) in ([], [1]))


def Constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    layout: str | None = None,
    device: str | None = None,
    **kwargs: Any,
) -> Any:
    """DALI's ``types.Constant``: a ``ScalarConstant`` for a scalar without ``shape``,
    ``layout``, ``device`` or other arguments; otherwise an ``fn.constant`` node, the same
    tensor for every sample (see the comment above this function for DALI's types).

    Raises:
        TypeError: a value that is not numbers (a string, a nested list).
        OverflowError: an int64 array that does not fit int32 without ``dtype``.

    Example:
        >>> Constant(2.5).dtype
        <DALIDataType.FLOAT: 9>
    """
    if isinstance(value, (DALIDataType, DALIImageType, DALIInterpType)):
        raise TypeError(f"augkit has no enum constants (DALI's DATA_TYPE tensors): {value!r}")
    if dtype is not None:
        dtype = to_dtype(dtype)
    is_array = isinstance(value, (np.ndarray, np.generic))
    # DALI's test: whatever is not a list, a tuple or an array of dimensions is a scalar (so a
    # string is refused by ScalarConstant, with its message).
    scalar = (
        not isinstance(value, (list, tuple))
        and not (is_array and np.ndim(value) > 0)
        and _is_scalar_shape(shape)
    )
    if scalar and device is None and layout is None and not kwargs:
        return ScalarConstant(value, dtype)
    if is_array:
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif dtype is None and array.dtype in (np.int64, np.uint64):
            limits = np.iinfo(np.int32 if array.dtype == np.int64 else np.uint32)
            if array.size and (array.min() < limits.min or array.max() > limits.max):
                bad = array.min() if array.min() < limits.min else array.max()
                raise OverflowError(f"Integer {bad} out of range for {limits.dtype}")
            array = array.astype(limits.dtype)
        actual = to_dtype(array.dtype)
        if shape is not None:
            array = array.reshape(shape)
        shape = list(array.shape)
        data: Any = array.ravel().tolist()
    else:
        if shape is None:
            shape = [len(value)] if isinstance(value, (list, tuple)) else []
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if not isinstance(item, (bool, int, float)):
                raise TypeError("Unexpected type: " + str(type(item)))
        actual = (
            FLOAT
            if any(isinstance(v, float) for v in items) or not items
            else INT32
            if any(not isinstance(v, bool) for v in items)
            else BOOL
        )
        data = items
    if dtype is None:
        dtype = actual
    integers = actual in _INT_TYPES or actual == BOOL
    data = [int(v) for v in data] if integers else [float(v) for v in data]
    key = "idata" if integers else "fdata"
    place = {} if device is None else {"device": device}
    return constant_node(
        **{key: data}, shape=list(shape), dtype=dtype, layout=layout, **place, **kwargs
    )
