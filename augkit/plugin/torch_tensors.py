"""Batches as torch tensors: ``to_torch`` (shared with the pipeline where the batch is one array
already, stacked otherwise) and ``feed_ndarray`` (DALI's copy into a preallocated tensor).

``augkit.plugin.pytorch`` (DALI's names, with the iterators) and ``augkit.plugin.dataset``
(``PipelineDataset``) both convert through these; a module of its own, so that neither of them
imports the other for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.utils.dlpack
from numpy.typing import DTypeLike

from augkit import backend
from augkit.tensors import Tensor, TensorList

__all__ = ["feed_ndarray", "to_torch"]


def to_torch(batch: TensorList | Tensor, device: str | None = None) -> Any:
    """A batch (dense) or a sample as a torch tensor: shared with the pipeline where the data
    is one array already, copied otherwise.

    - Shared (zero-copy): a sample (``batch[i]``), and a batch that an operator made as one
      array (random values, casts, flips and arithmetic of such batches, an external source
      fed one array, a batch-mode Python function returning one array: ``TensorList``'s
      ``from_array``). The pipeline's arrays are read-only and torch has no read-only tensors:
      **do not write into a shared tensor** (it would change the pipeline's data; ``.clone()``
      first). They travel as DLPack 1.0 capsules, which carry the read-only flag.
    - Copied: a batch whose samples are separate arrays (decoded and resized images: each
      sample was made on its own), stacked into a new, writable tensor.
    ``device="cuda"`` then moves the tensor (a copy).

    Raises:
        RaggedBatchError: a batch whose samples differ in shape (use ``[to_torch(t) for t in
            batch]`` instead).
    """
    if isinstance(batch, TensorList) and len(batch) == 0 and batch.dense is None:
        # A batch whose every sample was skipped (an epoch walked with holes): no shape to
        # stack, so a tensor of no samples.
        dtype: DTypeLike
        try:
            dtype = batch.dtype.numpy
        except TypeError:  # an operator's output that never had a sample to type it
            dtype = np.uint8
        return torch.from_numpy(np.empty((0,), dtype))
    if isinstance(batch, TensorList):
        data = batch.dense if batch.dense is not None else batch.as_tensor()._data
    else:
        data = batch._data
    if backend.is_gpu_array(data):
        tensor = torch.from_dlpack(data)
    elif data.flags.writeable:
        tensor = torch.from_numpy(data)  # a stack made just now: the caller's alone
    else:
        tensor = torch.utils.dlpack.from_dlpack(data.__dlpack__(max_version=(1, 0)))
    return tensor.to(device) if device is not None else tensor


def feed_ndarray(batch: TensorList | Tensor, arr: Any) -> Any:
    """Copy ``batch`` into the preallocated torch tensor ``arr`` (DALI's ``feed_ndarray``)."""
    source = to_torch(batch)
    if tuple(arr.shape) != tuple(source.shape):
        raise ValueError(
            f"feed_ndarray: shapes differ: {tuple(source.shape)} into {tuple(arr.shape)}"
        )
    arr.copy_(source)
    return arr
