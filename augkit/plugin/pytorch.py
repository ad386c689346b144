"""PyTorch plugin (DALI's ``nvidia.dali.plugin.pytorch``): ``TorchPythonFunction``, its functional
form ``fn.torch_python_function``, and conversion of batches to torch tensors.

Unlike DALI's, ``TorchPythonFunction`` runs on the CPU too: the function gets torch tensors that
share memory with the pipeline's NumPy data (zero-copy).

Example:
    >>> import augkit.plugin.pytorch as dalitorch
    >>> op = dalitorch.TorchPythonFunction(function=lambda t: t.flip(0))
"""

from __future__ import annotations

import sys
import types as pytypes
from typing import Any

import torch
import torch.utils.dlpack

import augkit.operators  # noqa: F401  (fills the registry)
from augkit import backend
from augkit.frontends import populate_fn, populate_ops
from augkit.tensors import Tensor, TensorList

fn = pytypes.ModuleType(f"{__name__}.fn", "Functional forms of the PyTorch plugin's operators.")
sys.modules[fn.__name__] = fn
populate_fn(fn, "plugin.pytorch")
populate_ops(sys.modules[__name__], "plugin.pytorch")


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
    if isinstance(batch, TensorList):
        data = batch._dense if batch._dense is not None else batch.as_tensor()._data
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
