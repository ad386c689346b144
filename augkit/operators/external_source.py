"""``fn.external_source``: batches from Python (a callable or an iterable) into the graph, as
DALI's external source does; the way to feed arrays to a pipeline and to test operators.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, kinds
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import (
    MAX_OUTPUTS,
    Arg,
    OperatorSchema,
    OutputSpec,
    described,
    register,
    to_bool,
    to_dtype,
    to_int,
    to_str,
)
from augkit.tensors import TensorList


@described("a function, or an iterable of batches")
def _source(value: Any) -> Any:
    if isinstance(value, (str, bytes)) or not (callable(value) or hasattr(value, "__iter__")):
        raise TypeError(
            f"expected a function or an iterable of batches, got {type(value).__name__}"
        )
    return value


@described("True, False, 'quiet' or 'raise'")
def _cycle(value: Any) -> Any:
    if value in (True, False, "quiet", "raise"):
        return value
    raise ValueError(f"must be True, False, 'quiet' or 'raise', got {value!r}")


class ExternalSource(OperatorImpl):
    """Calls ``source()`` (or ``source(iteration)``), or takes ``next()`` of an iterable."""

    def setup(self) -> None:
        source = self.args["source"]
        if source is None:
            raise ArgumentError(
                f"{self.name}: argument 'source' is required (a callable or an iterable of batches)"
            )
        self._callable = callable(source) and not hasattr(source, "__next__")
        if self._callable:
            try:
                params = inspect.signature(source).parameters.values()
            except (TypeError, ValueError):
                params = []
            # Called with the iteration number when it has a required positional parameter.
            self._takes_iteration = any(
                p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in params
            )
        elif not hasattr(source, "__iter__"):
            raise ArgumentError(
                f"{self.name}: argument 'source' must be callable or iterable, "
                f"got {type(source).__name__}"
            )
        self._iterator: Any = None

    def _next(self, iteration: int) -> Any:
        source = self.args["source"]
        if self._callable:
            return source(iteration) if self._takes_iteration else source()
        if self._iterator is None:
            self._iterator = iter(source)
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = None
            if self.args["cycle"] in (True, "quiet"):
                self._iterator = iter(source)
                return next(self._iterator)
            raise

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        data = self._next(ctx.iteration)
        num_outputs = self.num_outputs
        outputs = list(data) if num_outputs > 1 else [data]
        if len(outputs) != num_outputs:
            raise OperatorError(
                f"source gave {len(outputs)} outputs, expected {num_outputs}", operator=self.name
            )
        layouts = self.args["layout"]
        layouts = [layouts] * num_outputs if isinstance(layouts, str) else list(layouts)
        return [self._batch(out, layout) for out, layout in zip(outputs, layouts, strict=True)]

    def _batch(self, data: Any, layout: str) -> TensorList:
        if isinstance(data, TensorList):
            return data
        samples = [s if backend.is_gpu_array(s) else np.asarray(s) for s in data]
        dtype = self.args["dtype"]
        for k, sample in enumerate(samples):
            if dtype is not None and sample.dtype != dtype.numpy:
                raise OperatorError(
                    f"sample {k} has dtype {sample.dtype}, expected {dtype.numpy}",
                    operator=self.name,
                    sample_index=k,
                )
            if self.args["ndim"] is not None and sample.ndim != self.args["ndim"]:
                raise OperatorError(
                    f"sample {k} has {sample.ndim} dimensions, expected {self.args['ndim']}",
                    operator=self.name,
                    sample_index=k,
                )
            if layout and sample.ndim != len(layout):
                raise OperatorError(
                    f"sample {k} has shape {sample.shape}, which does not fit layout {layout!r}",
                    operator=self.name,
                    sample_index=k,
                )
        if self.device == "gpu":
            samples = [backend.to_gpu(s) for s in samples]
        # The pipeline must not see later changes the caller makes to its own arrays.
        return TensorList(
            [finish(np.array(s) if isinstance(s, np.ndarray) else s) for s in samples], layout
        )


@described("a layout string, or one per output")
def _layout(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(to_str(v) for v in value)
    return to_str(value)


def _output_kinds(args: dict[str, Any], inputs: Any) -> list[OutputSpec]:
    n = args.get("num_outputs") or 1
    layouts = args.get("layout") or ""
    layouts = [layouts] * n if isinstance(layouts, str) else list(layouts)
    return [OutputSpec(kind=kinds.from_layout(layout), layout=layout or None) for layout in layouts]


register(
    OperatorSchema(
        name="external_source",
        class_name="ExternalSource",
        impl=ExternalSource,
        min_inputs=0,
        max_inputs=0,
        num_outputs=lambda a: a.get("num_outputs") or 1,
        devices=("cpu", "gpu"),
        role="source",
        output_kinds=_output_kinds,
        doc="Batches from Python: ``source`` is a callable returning a batch (a list of arrays or "
        "one array whose first axis is the batch), optionally taking the iteration number, or "
        "an iterable of batches. With ``num_outputs`` it returns that many batches per call.",
        args=[
            Arg("source", "callable or iterable giving batches", None, _source),
            Arg(
                "num_outputs",
                "number of outputs the source gives per call",
                None,
                to_int(1, MAX_OUTPUTS),
            ),
            Arg("layout", "layout of the samples (one per output, or one for all)", "", _layout),
            Arg(
                "cycle",
                "for iterables: True/'quiet' restarts at the end; False/'raise' raises "
                "StopIteration from run()",
                False,
                _cycle,
            ),
            Arg("dtype", "expected data type of the samples (checked)", None, to_dtype),
            Arg("ndim", "expected number of dimensions of the samples (checked)", None, to_int(0)),
            Arg(
                "batch",
                "accepted for DALI compatibility; the source gives whole batches",
                True,
                to_bool,
            ),
            Arg("no_copy", "accepted for DALI compatibility; augkit always copies", False, to_bool),
        ],
    )
)
