"""Batches and samples: ``TensorList`` (what ``Pipeline.run()`` returns per output) and
``Tensor`` (one sample), with DALI's ``TensorListCPU`` / ``TensorCPU`` methods.

Samples are NumPy arrays on "cpu" and CuPy arrays on "gpu". Inside the pipeline they are
read-only; ``at(i)`` and ``as_array()`` return writable copies on the host, as DALI's do.

Every batch has a data kind (``batch.kind``: image, mask, boxes, labels, encoded, generic...;
``augkit.kinds``) beside its dtype and layout. A batch that an operator computed as one array
(random values, a cast or a flip of a dense batch, an external source fed an array) keeps that
array (``TensorList.from_array``): its samples are views of it, and ``as_tensor()`` and
``augkit.plugin.pytorch.to_torch`` share it instead of stacking the samples.

Example:
    >>> import numpy as np
    >>> tl = TensorList([np.zeros((2, 3, 3), np.uint8), np.ones((4, 1, 3), np.uint8)], "HWC")
    >>> tl.shape()
    [(2, 3, 3), (4, 1, 3)]
    >>> tl.is_dense_tensor()
    False
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from augkit import backend
from augkit.errors import RaggedBatchError
from augkit.kinds import GENERIC, Kind
from augkit.types import DALIDataType, from_numpy


class Tensor:
    """One sample of a batch (DALI's ``TensorCPU``/``TensorGPU``).

    ``np.asarray(t)`` (and so ``plt.imshow(t)``) gives its data; ``t.shape()``, ``t.layout()``,
    ``t.dtype``, ``t.kind`` (its batch's data kind) and ``t.source_info()`` describe it.
    """

    __slots__ = ("_data", "_layout", "_source_info", "kind")

    def __init__(
        self, data: Any, layout: str = "", source_info: str = "", kind: Kind = GENERIC
    ) -> None:
        self._data = data
        self._layout = layout
        self._source_info = source_info
        self.kind = kind

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = backend.to_cpu(self._data)
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        return data.copy() if copy else data

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()

    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> DALIDataType:
        return from_numpy(self._data.dtype)

    @property
    def device(self) -> str:
        return "gpu" if backend.is_gpu_array(self._data) else "cpu"

    def layout(self) -> str:
        return self._layout

    def source_info(self) -> str:
        """The file this sample was read from ("" when it has no source)."""
        return self._source_info

    def as_cpu(self) -> Tensor:
        return Tensor(backend.to_cpu(self._data), self._layout, self._source_info, self.kind)

    def as_array(self) -> np.ndarray:
        """A writable NumPy copy of the sample."""
        return np.array(backend.to_cpu(self._data))

    def __repr__(self) -> str:
        return (
            f"Tensor(shape={self.shape()}, dtype={self.dtype.name}, layout={self._layout!r}, "
            f"device={self.device!r}, source_info={self._source_info!r})"
        )


class TensorList:
    """A batch of samples, each with a shape of its own (DALI's ``TensorListCPU``).

    Args:
        samples: the arrays of the batch (NumPy or CuPy; all of one dtype and rank).
        layout: the layout of every sample, e.g. "HWC" ("" when unknown).
        source_info: per-sample origin (file paths), or ``None``.
        kind: what the samples are (``augkit.kinds``; default generic).

    Example:
        >>> tl = TensorList([np.full((2, 2, 3), 7, np.uint8)] * 2, layout="HWC")
        >>> tl.as_array().shape
        (2, 2, 2, 3)
    """

    def __init__(
        self,
        samples: Sequence[Any],
        layout: str = "",
        source_info: Sequence[str] | None = None,
        *,
        dtype: Any = None,
        kind: Kind = GENERIC,
    ) -> None:
        self._samples = list(samples)
        self.kind = kind
        self._dense: Any = None  # the (N, ...) array the samples are views of, when there is one
        self._layout = layout or ""
        if source_info is None:
            source_info = [""] * len(self._samples)
        self._source_info = list(source_info)
        if len(self._source_info) != len(self._samples):
            raise ValueError("source_info must have one entry per sample")
        if self._samples:
            self._dtype = from_numpy(self._samples[0].dtype)
        else:
            self._dtype = from_numpy(np.dtype(dtype)) if dtype is not None else DALIDataType.NO_TYPE

    @classmethod
    def from_array(
        cls,
        array: Any,
        layout: str = "",
        source_info: Sequence[str] | None = None,
        kind: Kind = GENERIC,
    ) -> TensorList:
        """A batch whose samples are the rows of ``array`` (first axis: the batch), kept as one
        array: ``as_tensor()`` and ``to_torch`` share it. The pipeline makes it read-only."""
        tl = cls(list(array), layout, source_info, dtype=array.dtype, kind=kind)
        tl._dense = array
        return tl

    def with_kind(self, kind: Kind) -> TensorList:
        """The same samples (shared, not copied) as a batch of ``kind``."""
        tl = TensorList(self._samples, self._layout, self._source_info, kind=kind)
        tl._dtype = self._dtype
        tl._dense = self._dense
        return tl

    # --- DALI's TensorList API -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._samples)

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self._samples)))

    @overload
    def __getitem__(self, index: int) -> Tensor: ...

    @overload
    def __getitem__(self, index: slice) -> TensorList: ...

    def __getitem__(self, index: int | slice) -> Tensor | TensorList:
        if isinstance(index, slice):
            part = TensorList(
                self._samples[index], self._layout, self._source_info[index], kind=self.kind
            )
            part._dtype = self._dtype
            if self._dense is not None:
                part._dense = self._dense[index]
            return part
        return Tensor(self._samples[index], self._layout, self._source_info[index], self.kind)

    # --- augkit's accessors: what operators, runners and clients read, without a copy -------
    @property
    def samples(self) -> list[Any]:
        """The sample arrays as the graph keeps them (NumPy or CuPy; read-only on the CPU), not
        copied: read them, never change the list (``at`` gives a writable copy)."""
        return self._samples

    @property
    def sources(self) -> list[str]:
        """Each sample's ``source_info`` (its file path, or ""), not copied: never change it."""
        return self._source_info

    @property
    def dense(self) -> Any:
        """The one (N, ...) array the samples are rows of (``from_array``), or ``None``: what
        batch kernels work on."""
        return self._dense

    def at(self, index: int) -> np.ndarray:
        """A writable NumPy copy of sample ``index``."""
        return np.array(backend.to_cpu(self._samples[index]))

    def shape(self) -> list[tuple[int, ...]]:
        """The shape of each sample."""
        return [tuple(s.shape) for s in self._samples]

    def layout(self) -> str:
        return self._layout

    @property
    def dtype(self) -> DALIDataType:
        return self._dtype

    @property
    def device(self) -> str:
        return "gpu" if self._samples and backend.is_gpu_array(self._samples[0]) else "cpu"

    def is_dense_tensor(self) -> bool:
        """True when every sample has the same shape, so that the batch is one array."""
        if self._dense is not None:
            return True
        shapes = self.shape()
        return all(s == shapes[0] for s in shapes)

    def as_array(self) -> np.ndarray:
        """The batch as one writable NumPy array of shape ``(N, *sample_shape)``.

        Raises:
            RaggedBatchError: the samples do not all have one shape.
        """
        self._check_dense("as_array")
        if self._dense is not None:
            return np.array(backend.to_cpu(self._dense))
        return (
            np.stack([backend.to_cpu(s) for s in self._samples])
            if self._samples
            else (np.empty((0,), self._dtype.numpy))
        )

    def as_tensor(self) -> Tensor:
        """The batch as one ``Tensor`` (on the batch's device), layout ``"N" + layout``."""
        self._check_dense("as_tensor")
        layout = "N" + self._layout if self._layout else ""
        if self._dense is not None:
            return Tensor(self._dense, layout, kind=self.kind)
        xp = backend.array_module(self._samples[0]) if self._samples else np
        return Tensor(xp.stack(self._samples), layout, kind=self.kind)

    def as_cpu(self) -> TensorList:
        """This batch on the host (itself when it is already there)."""
        if self.device == "cpu":
            return self
        return TensorList(
            [backend.to_cpu(s) for s in self._samples],
            self._layout,
            self._source_info,
            kind=self.kind,
        )

    def as_gpu(self, device_id: int = 0) -> TensorList:
        """This batch copied to GPU ``device_id`` (CuPy arrays), layout, files and kind kept."""
        return TensorList(
            [backend.to_gpu(s, device_id) for s in self._samples],
            self._layout,
            self._source_info,
            kind=self.kind,
        )

    def source_info(self, index: int | None = None) -> str | list[str]:
        """The file sample ``index`` came from, or the list of them for the whole batch."""
        if index is None:
            return list(self._source_info)
        return self._source_info[index]

    def _check_dense(self, method: str) -> None:
        if self.is_dense_tensor():
            return
        shapes = self.shape()
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        raise RaggedBatchError(
            f"{method}() needs samples of one shape, but this batch is ragged: sample 0 has shape "
            f"{shapes[0]} and sample {odd} has shape {shapes[odd]}. Use at(i) per sample, or "
            f"resize or crop to one size first."
        )

    # --- notebook display --------------------------------------------------------------------
    def __repr__(self) -> str:
        shapes = self.shape()
        shown = shapes if len(shapes) <= 4 else [*shapes[:3], "...", shapes[-1]]
        return (
            f"TensorList(batch_size={len(self)}, dtype={self._dtype.name}, "
            f"layout={self._layout!r}, kind={str(self.kind)!r}, device={self.device!r}, "
            f"shapes={shown})"
        ).replace("'...'", "...")

    def _repr_png_(self) -> bytes | None:
        from augkit import grid

        if not grid.looks_like_images(self):
            return None
        return grid.to_png(grid.render(self))


# DALI's names for the CPU classes (``isinstance(out, tensors.TensorCPU)`` in DALI's examples):
# augkit has one class for each, whatever the device.
TensorCPU = Tensor
TensorListCPU = TensorList
