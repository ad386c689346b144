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

import augkit.operators  # noqa: F401  (fills the registry)
from augkit import backend
from augkit.frontends import populate_fn, populate_ops
from augkit.tensors import Tensor, TensorList

fn = pytypes.ModuleType(f"{__name__}.fn", "Functional forms of the PyTorch plugin's operators.")
sys.modules[fn.__name__] = fn
populate_fn(fn, "plugin.pytorch")
populate_ops(sys.modules[__name__], "plugin.pytorch")


def to_torch(batch: TensorList | Tensor, device: str | None = None) -> Any:
    """A batch (dense) or a sample as a torch tensor, sharing memory where possible.

    Raises:
        RaggedBatchError: a batch whose samples differ in shape (use ``[to_torch(t) for t in
            batch]`` instead).
    """
    data = batch.as_tensor()._data if isinstance(batch, TensorList) else batch._data
    if backend.is_gpu_array(data):
        tensor = torch.from_dlpack(data)
    else:
        tensor = torch.from_numpy(data.copy() if not data.flags.writeable else data)
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
