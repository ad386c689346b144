"""Every operator called directly on data, outside any pipeline: ``eager.resize(image,
size=(300, 300))``, ``eager.python_function(a, b, function=edit_images, num_outputs=2)``.

- Inputs: a NumPy array (one sample: the result is one array), a list of arrays (a batch: the
  result is a list), a TensorList (the result is a TensorList), or torch tensors.
- Operators without inputs (``eager.random.uniform``) take ``batch_size=`` (default 1).
- Per-sample arguments take one value per sample as a TensorList or a list of arrays, what
  eager calls return for a batch: ``eager.rotate(images, angle=eager.random.uniform(
  range=(-30, 30), batch_size=len(images)))``, as ``angle=fn.random.uniform(...)`` in a
  pipeline.
- Randomness: give ``seed=``, or call inside ``with eager.rng_state(seed):``, where the k-th
  operator call gets the seed a pipeline with that seed gives its k-th operator. So the same
  calls give the same numbers as the pipeline's first iteration (``rng_state(seed,
  iteration=i)`` for its i-th). Without either, each call draws a fresh seed.
- Devices: eager calls have no pipeline, and run as a pipeline with ``device_id=0`` would
  (``EAGER_DEVICE_ID``): ``device="gpu"`` (or "mixed") runs on the first CUDA device where CuPy
  and a CUDA device are usable, and is refused where not, by the rule a pipeline's build
  applies (``backend.check_device``: a ``DeviceError`` naming the operator and why). GPU data
  given as input (CuPy arrays, a TensorList on the GPU) makes an operator with a GPU kernel
  run on the GPU, as GPU data does in a pipeline (DALI's rule); a CPU-only operator refuses it
  and points at ``.cpu()``. Results come back as they are given: a TensorList stays on its
  device, arrays and lists of arrays are NumPy copies.
- Readers are iterables over one epoch: ``for jpegs, labels in eager.readers.file(
  file_root="data/images", batch_size=8): ...`` (the last batch holds what is left).

The kernels, threads and seeds are those of the pipeline, so eager results equal pipeline
results for the same inputs and seeds.

Example:
    >>> import numpy as np
    >>> from augkit import eager
    >>> eager.flip(np.arange(6, dtype=np.uint8).reshape(1, 2, 3), horizontal=1).shape
    (1, 2, 3)
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import types as pytypes
from collections.abc import Iterator
from typing import Any

import numpy as np

import augkit.operators  # noqa: F401  (fills the registry)
from augkit.core import Engine
from augkit.debug import DebugSession
from augkit.errors import OperatorError, report_skips
from augkit.frontends import operator_class
from augkit.graph import DataNode, per_sample_value, tracing
from augkit.operators.constant import is_constant
from augkit.operators.registry import REGISTRY, OperatorSchema
from augkit.random import operator_seed, resolve_seed
from augkit.tensors import TensorList

_local = threading.local()


class _RngState:
    def __init__(self, seed: int, iteration: int) -> None:
        self.seed = seed
        self.iteration = iteration
        self.calls = 0

    def next_seed(self) -> int:
        seed = operator_seed(self.seed, self.calls)
        self.calls += 1
        return seed


@contextlib.contextmanager
def rng_state(seed: int, iteration: int = 0) -> Iterator[None]:
    """Number the eager calls inside the block as a pipeline with ``seed`` numbers its
    operators, for its ``iteration``-th run."""
    stack = _local.__dict__.setdefault("states", [])
    stack.append(_RngState(resolve_seed(seed), iteration))
    try:
        yield
    finally:
        stack.pop()


def _state() -> _RngState | None:
    stack = _local.__dict__.get("states")
    return stack[-1] if stack else None


EAGER_DEVICE_ID = 0
"""The ``device_id`` of eager calls (they have no pipeline to give one): the first CUDA device,
so that GPU operators run wherever a GPU is usable (see the module docstring, "Devices")."""


@functools.cache
def _engine() -> Engine:
    """The execution core every eager call runs on (a thread per core, ``EAGER_DEVICE_ID``)."""
    return Engine(os.cpu_count() or 1, EAGER_DEVICE_ID)


def _session(batch_size: int, iteration: int) -> DebugSession:
    session = DebugSession(_engine(), 0, batch_size, bounded=False)
    session.begin(iteration, partial=False)
    return session


def _as_inputs(inputs: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """How the results should come back ("sample", "list", "tensorlist") and the inputs as
    the session takes them."""
    kind = "tensorlist"
    converted = []
    for value in inputs:
        if _python_constant(value) or isinstance(
            value, TensorList
        ):  # DALI's types.Constant: the graph makes its node
            converted.append(value)
        elif isinstance(value, list):
            kind = "list" if kind != "sample" else kind
            converted.append(value)
        else:  # one sample
            kind = "sample"
            converted.append([value])
    if not any(not _python_constant(v) for v in inputs):
        kind = "list"
    return kind, converted


def _python_constant(value: Any) -> bool:
    """A Python number or list of Python numbers given as an input: the same value for every
    sample (a NumPy array is one sample, a list of arrays a batch)."""
    return is_constant(value) and not isinstance(value, (np.ndarray, np.generic))


def _back(batch: TensorList, kind: str) -> Any:
    if kind == "tensorlist":
        return batch
    samples = [batch.at(i) for i in range(len(batch))]
    return samples[0] if kind == "sample" else samples


def call(schema: OperatorSchema, *inputs: Any, batch_size: int | None = None, **kwargs: Any) -> Any:
    """Run operator ``schema`` once on ``inputs`` (see the module docstring)."""
    if schema.positional and schema.max_inputs == 0 and inputs:  # fn.random.choice(5)
        kwargs = schema.named(inputs, kwargs)
        inputs = ()
    kind, batches = _as_inputs(inputs)
    state = _state()
    if kwargs.get("seed", -1) == -1:
        kwargs["seed"] = state.next_seed() if state is not None else resolve_seed(-1)
    sized = [b for b in batches if not _python_constant(b)]
    size = len(sized[0]) if sized else (batch_size or 1)
    session = _session(size, state.iteration if state is not None else 0)
    try:
        # a DebugSession stands for the node list: tracing appends to it
        with tracing(session):  # type: ignore[arg-type]
            nodes = [b if _python_constant(b) else session.constant(b) for b in batches]
            for key, value in kwargs.items():
                if per_sample_value(schema, key, value):
                    kwargs[key] = session.constant(value)
            out = operator_class(schema)(**kwargs)(*nodes)
        if out is None:
            return None
        skipped = session.notes.skipped
        if skipped and kind == "sample":  # one sample, skipped: nothing is left to return
            raise OperatorError(skipped[0].reason, operator=skipped[0].operator, sample_index=0)
        report_skips(skipped, [], stacklevel=4)
        if isinstance(out, DataNode):
            return _back(out.get(), kind)
        return tuple(_back(node.get(), kind) for node in out)
    finally:
        session.release()  # the nodes' batches go now, not at the next garbage collection


class ReaderIterable:
    """One epoch of a reader, batch by batch (the last batch holds what is left)."""

    def __init__(self, schema: OperatorSchema, batch_size: int, kwargs: dict[str, Any]) -> None:
        self._schema = schema
        self._batch_size = batch_size
        self._kwargs = kwargs

    def __iter__(self) -> Iterator[tuple[TensorList, ...]]:
        state = _state()
        kwargs = dict(self._kwargs)
        if kwargs.get("seed", -1) == -1:
            kwargs["seed"] = state.next_seed() if state is not None else resolve_seed(-1)
        session = DebugSession(_engine(), 0, self._batch_size)
        cls = operator_class(self._schema)
        iteration = 0
        try:
            while True:
                session.begin(iteration, partial=True)
                # a DebugSession stands for the node list: tracing appends to it
                with tracing(session):  # type: ignore[arg-type]
                    outputs = cls(**kwargs)()
                reader = next(iter(session.readers().values()))
                yield tuple(node.get() for node in outputs)
                iteration += 1
                if reader.left_in_epoch() == 0:
                    return
        finally:
            session.release()


def _function(schema: OperatorSchema) -> Any:
    if schema.role == "reader":

        def reader(*, batch_size: int = 1, **kwargs: Any) -> ReaderIterable:
            return ReaderIterable(schema, batch_size, kwargs)

        function = reader
    else:

        def operator(*inputs: Any, batch_size: int | None = None, **kwargs: Any) -> Any:
            return call(schema, *inputs, batch_size=batch_size, **kwargs)

        function = operator
    function.__name__ = schema.name.rsplit(".", 1)[-1]
    function.__qualname__ = schema.name
    function.__doc__ = f"Eager form of ``fn.{schema.name}``; see augkit.eager.\n\n{schema.doc}"
    return function


def _populate() -> None:
    root = sys.modules[__name__]
    for schema in REGISTRY.values():
        if not schema.public:
            continue
        holder = root
        *parents, last = schema.name.split(".")
        for part in parents:
            child = getattr(holder, part, None)
            if child is None:
                child = pytypes.ModuleType(f"{holder.__name__}.{part}")
                setattr(holder, part, child)
                sys.modules[child.__name__] = child
            holder = child
        setattr(holder, last, _function(schema))


_populate()
