"""PyTorch plugin (DALI's ``nvidia.dali.plugin.pytorch``): ``TorchPythonFunction``, its functional
form ``fn.torch_python_function``, and conversion of batches to torch tensors (``to_torch``,
``feed_ndarray``: ``augkit.plugin.torch_tensors``, which ``PipelineDataset`` uses too).

Unlike DALI's, ``TorchPythonFunction`` runs on the CPU too: the function gets torch tensors that
share memory with the pipeline's NumPy data (zero-copy).

The iterators (DALI's ``DALIGenericIterator``, ``DALIClassificationIterator``,
``DALIRaggedIterator``; their epoch logic and ``LastBatchPolicy`` are in
``augkit.plugin.base_iterator``) return what DALI's return: a list with one dict per pipeline,
``{output name: tensor}``, shorter than the pipelines in DALI's one case (``size=`` with PARTIAL,
where the last batch ends inside an earlier pipeline's part). What is copied, and when:

- a dense output whose batch is one array already (``to_torch``'s rule: random values, casts,
  arithmetic, a batch-mode Python function) is shared with the pipeline, zero-copy: the tensor
  is read-only memory that the pipeline does not reuse; **do not write into it** (``.clone()``);
- a dense output whose samples are separate arrays (decoded images, reader outputs) is stacked
  into a new tensor (one copy);
- samples of different shapes in a dense output: ``RaggedBatchError`` naming the output (DALI's
  iterator fails there too, whatever ``dynamic_shape`` says, an argument DALI 2.x ignores);
  ``DALIRaggedIterator`` with ``SPARSE_LIST_TAG`` or ``SPARSE_COO_TAG`` takes them;
- PARTIAL's last batch is a slice ``tensor[:k]`` of the batch's tensor (a view, no copy);
- SPARSE_LIST: one tensor per sample, each shared (samples are arrays of their own);
  SPARSE_COO: the samples concatenated along their first dimension (a copy) as
  ``torch.sparse_coo_tensor`` with indices ``(sample, row)`` and size ``(samples, most rows,
  *trailing)``. DALI concatenates with ``torch.hstack``, which is the same for 1-D samples
  (labels) and fails for 2-D samples of different row counts (boxes); augkit makes a hybrid COO
  tensor there (``(sample, row)`` sparse, the trailing dimension dense), and gives the size
  explicitly (DALI lets torch infer it, which drops trailing empty samples).
- GPU pipelines (``device_id`` set, GPU operators): tensors on that CUDA device, through DLPack.

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
from augkit.errors import ArgumentError, RaggedBatchError
from augkit.frontends import populate_fn, populate_ops
from augkit.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator
from augkit.plugin.dataset import PipelineDataset  # noqa: F401  (re-exported)
from augkit.plugin.torch_tensors import feed_ndarray, to_torch  # noqa: F401  (DALI's names)
from augkit.tensors import TensorList

fn = pytypes.ModuleType(f"{__name__}.fn", "Functional forms of the PyTorch plugin's operators.")
sys.modules[fn.__name__] = fn
populate_fn(fn, "plugin.pytorch")
populate_ops(sys.modules[__name__], "plugin.pytorch")


def _dense(batch: TensorList, name: str, kept: int) -> Any:
    try:
        tensor = to_torch(batch)
    except RaggedBatchError as exc:
        raise RaggedBatchError(
            f"output {name!r}: the samples of the batch differ in shape ({exc}); "
            f"DALIGenericIterator needs uniform shapes: use DALIRaggedIterator with "
            f"output_types SPARSE_LIST_TAG or SPARSE_COO_TAG for {name!r}"
        ) from None
    return tensor if kept == len(batch) else tensor[:kept]


def _samples(batch: TensorList, kept: int) -> list[Any]:
    return [to_torch(batch[i]) for i in range(kept)]


def _coo(samples: list[Any], dtype: Any) -> Any:
    rows = [int(t.shape[0]) if t.ndim else 1 for t in samples]
    trailing = tuple(samples[0].shape[1:]) if samples and samples[0].ndim > 1 else ()
    if samples:
        values = torch.cat([t.reshape(r, *trailing) for t, r in zip(samples, rows, strict=True)])
    else:
        values = torch.empty((0, *trailing), dtype=dtype)
    index = torch.tensor(
        [[i, j] for i, r in enumerate(rows) for j in range(r)], dtype=torch.int64
    ).reshape(-1, 2)
    size = (len(samples), max(rows, default=0), *trailing)
    return torch.sparse_coo_tensor(index.T, values, size=size, check_invariants=True)


class DALIGenericIterator(_DaliBaseIterator):
    """DALI's general PyTorch iterator: batches of a list of pipelines as a list (one entry per
    pipeline) of dicts ``{output name: tensor}`` (see the module docstring for what is copied,
    and ``augkit.plugin.base_iterator`` for the epoch rules).

    Args:
        pipelines: a pipeline, or a list of them (one per device).
        output_map: a name for each output of the pipelines, in order (distinct).
        size, reader_name, auto_reset, fill_last_batch, last_batch_padded,
        last_batch_policy, prepare_first_batch: DALI's (``augkit.plugin.base_iterator``).
        dynamic_shape: accepted, ignored (as in DALI 2.x).

    Example:
        >>> from augkit import fn, pipeline_def
        >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
        ... def pipe():
        ...     jpegs, labels = fn.readers.file(file_root="data/images", name="Reader")
        ...     return labels
        >>> it = DALIGenericIterator(pipe(), ["label"], reader_name="Reader")
        >>> len(it)
        8
        >>> tuple(next(it)[0]["label"].shape)
        (2, 1)
    """

    def __init__(
        self,
        pipelines: Any,
        output_map: list[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str | None = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool | None = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        if isinstance(output_map, str) or not all(isinstance(n, str) for n in output_map):
            raise ArgumentError(f"output_map must be a list of names, got {output_map!r}")
        if len(set(output_map)) != len(output_map):
            raise ArgumentError(f"output_map names should be distinct, got {output_map!r}")
        self.output_map = list(output_map)
        self._output_categories = set(output_map)
        self._check_types()
        super().__init__(
            pipelines,
            size,
            reader_name,
            auto_reset,
            fill_last_batch,
            last_batch_padded,
            last_batch_policy,
            prepare_first_batch,
        )
        self._first_batch = None
        if self._prepare_first_batch:
            try:
                self._first_batch = self._next_batch()
            except StopIteration:
                self._report_no_data_in_pipeline()

    def _check_types(self) -> None:
        """Subclasses check their own arguments before any pipeline runs."""

    def __next__(self) -> list[dict[str, Any]]:
        self._ever_consumed = True
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            return batch
        return self._next_batch()

    def _next_batch(self) -> list[dict[str, Any]]:
        outputs, kept = self._next_outputs()
        if kept is None:
            kept = [self.batch_size] * len(outputs)
        batches = []
        for out, k in zip(outputs, kept, strict=False):  # kept may be shorter: those pipelines only
            if len(out) != len(self.output_map):
                raise ArgumentError(
                    f"output_map names {len(self.output_map)} outputs "
                    f"({self.output_map}), the pipeline has {len(out)}"
                )
            batches.append(
                {
                    name: self._output(j, name, o, k)
                    for j, (name, o) in enumerate(zip(self.output_map, out, strict=True))
                }
            )
        return batches

    def _output(self, j: int, name: str, batch: TensorList, kept: int) -> Any:
        return _dense(batch, name, min(kept, len(batch)))


class DALIClassificationIterator(DALIGenericIterator):
    """``DALIGenericIterator`` with the outputs ``["data", "label"]`` (DALI's classification
    iterator): pipelines of two outputs, images and labels."""

    def __init__(
        self,
        pipelines: Any,
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str | None = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool | None = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        super().__init__(
            pipelines,
            ["data", "label"],
            size,
            reader_name=reader_name,
            auto_reset=auto_reset,
            fill_last_batch=fill_last_batch,
            dynamic_shape=dynamic_shape,
            last_batch_padded=last_batch_padded,
            last_batch_policy=last_batch_policy,
            prepare_first_batch=prepare_first_batch,
        )


class DALIRaggedIterator(DALIGenericIterator):
    """DALI's iterator for outputs whose samples differ in shape (boxes, labels per object):
    ``output_types`` gives each output's form: ``DENSE_TAG`` (one tensor, as
    ``DALIGenericIterator``), ``SPARSE_LIST_TAG`` (a list of per-sample tensors) or
    ``SPARSE_COO_TAG`` (a ``torch.sparse_coo_tensor``; see the module docstring). ``None``:
    every output dense. The other arguments are ``DALIGenericIterator``'s.
    """

    DENSE_TAG: str = "dense"
    SPARSE_LIST_TAG: str = "sparse_list"
    SPARSE_COO_TAG: str = "sparse_coo"

    def __init__(
        self,
        pipelines: Any,
        output_map: list[str],
        size: int = -1,
        reader_name: str | None = None,
        output_types: list[str] | None = None,
        auto_reset: bool | str | None = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool | None = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        self._outputs_types = None if output_types is None else list(output_types)
        super().__init__(
            pipelines,
            output_map,
            size,
            reader_name,
            auto_reset,
            fill_last_batch,
            dynamic_shape,
            last_batch_padded,
            last_batch_policy,
            prepare_first_batch,
        )

    def _check_types(self) -> None:
        types_ = self._outputs_types
        if types_ is None:
            return
        tags = (self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG)
        bad = [t for t in types_ if t not in tags]
        if bad:
            raise ArgumentError(
                f"output_types: Only DENSE_TAG, SPARSE_LIST_TAG and SPARSE_COO_TAG are allowed "
                f"({tags}), got {bad}"
            )
        if len(types_) != len(self.output_map):
            raise ArgumentError(
                f"output_types has {len(types_)} entries, output_map {len(self.output_map)}: "
                f"one type per output"
            )

    def _output(self, j: int, name: str, batch: TensorList, kept: int) -> Any:
        kind = self.DENSE_TAG if self._outputs_types is None else self._outputs_types[j]
        kept = min(kept, len(batch))
        if kind == self.DENSE_TAG:
            return _dense(batch, name, kept)
        samples = _samples(batch, kept)
        if kind == self.SPARSE_LIST_TAG:
            return samples
        return _coo(samples, to_torch(batch[0]).dtype if len(batch) else torch.float32)
