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

import enum
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
