"""The per-sample contract, written once: what a per-sample kernel receives and how its result
is treated. Every per-sample path builds one ``SampleCall`` per node per batch and calls it
sample by sample: ``SampleOperator.run`` (``augkit.operators.base``), the chains of
``augkit.core`` (a chain is a list of calls), the target rules of the geometric operators
(``augkit.operators.geometric.targets``) and ``random_bbox_crop``'s batched search
(``augkit.operators.box_crops``).

The contract, for sample ``i`` of a node's batch:

- **arguments**: the operator's checked constant arguments, overlaid with sample ``i`` of each
  argument input (checked by the argument's schema: a bad value is an ``OperatorError`` naming
  the argument's sample), then with the node's ``batch_args`` (worked out once per batch from
  its inputs: a layout, a batch's largest extents), then, for an operator that draws
  (``random = True``), ``rng``: sample ``i``'s NumPy generator (``SampleStreams.generator``);
- **checks**: ``check_input(k, sample, layout)`` for each input ``k`` the call checks (a
  target rule does not check the target it moves as an image: ``checked``);
- **errors**: an ``AugkitError`` passes as it is; any other exception becomes the operator's
  ``OperatorError`` naming the sample's index and its source (``impl.fail``), chained;
- **outputs**: a tuple, each sample contiguous and, on the CPU, read-only (``finish``).

``SampleCall`` knows nothing of threads: the callers map it over the samples (``RunContext.map``)
or, in a chain, over the nodes of one sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import ArgumentError, AugkitError, OperatorError
from augkit.random import SampleStreams
from augkit.tensors import TensorList

__all__ = ["SampleCall", "finish", "overlay_args"]


def finish(array: Any) -> Any:
    """An output sample as the graph keeps it: contiguous and, on the CPU, read-only."""
    if isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        if array.flags.writeable:
            # A view, so that an array the kernel (or user function) still holds stays writable.
            array = array.view()
            array.flags.writeable = False
    return array


def overlay_args(impl: Any, arg_inputs: dict[str, TensorList], i: int) -> dict[str, Any]:
    """``impl``'s constant arguments overlaid with sample ``i`` of each argument input, each
    checked by its argument's schema (an ``OperatorError`` naming the argument input's sample
    and source when one does not fit)."""
    if not arg_inputs:
        return impl.args
    args = dict(impl.args)
    for key, batch in arg_inputs.items():
        try:
            args[key] = impl.schema.arguments[key].check(
                backend.to_cpu(batch.samples[i]), impl.label()
            )
        except ArgumentError as exc:
            raise OperatorError(
                str(exc),
                operator=impl.label(),
                sample_index=i,
                source_info=batch.sources[i],
            ) from None
    return args


class SampleCall:
    """One node's per-sample call on one batch (see the module docstring).

    Args:
        impl: the node's operator (``OperatorImpl``): its checked constants ``args``, its
            ``schema`` (to check argument inputs), ``check_input``, ``fail`` and ``label``.
        kernel: ``kernel(*samples, **args)`` for one sample.
        n: the batch's samples.
        arg_inputs: the node's argument inputs, one batch of per-sample values each.
        layouts: the layout of each input (``check_input`` gets it).
        sources: the ``source_info`` of each sample (of the first input): errors name it.
        streams: the samples' random streams, for an operator that draws; ``None`` otherwise.
        batch_args: the node's ``batch_args``; ``None`` when the caller works them out later
            (a chain, from its first sample: ``set_batch_args``).
        checked: the indices of the inputs ``check_input`` sees (``None``: all).
    """

    __slots__ = (
        "_args",
        "_check",
        "_per_sample",
        "arg_inputs",
        "batch_args",
        "checked",
        "impl",
        "kernel",
        "layouts",
        "n",
        "sources",
        "streams",
    )

    def __init__(
        self,
        impl: Any,
        kernel: Callable[..., Any],
        n: int,
        arg_inputs: dict[str, TensorList],
        layouts: Sequence[str],
        sources: Sequence[str] | None,
        streams: SampleStreams | None = None,
        batch_args: dict[str, Any] | None = None,
        checked: Sequence[int] | None = None,
    ) -> None:
        self.impl = impl
        self.kernel = kernel
        self.n = n
        self.arg_inputs = arg_inputs
        self.layouts = list(layouts)
        self.sources = sources
        self.streams = streams
        self.checked = list(range(len(self.layouts))) if checked is None else list(checked)
        self.batch_args: dict[str, Any] | None = None
        self._args: dict[str, Any] = impl.args
        self._check = impl.check_input
        # Whether a sample's arguments differ from the batch's (argument inputs, an rng):
        # else every call takes the one dict (the hot path of small kernels).
        self._per_sample = bool(arg_inputs) or streams is not None
        if batch_args is not None:
            self.set_batch_args(batch_args)

    @classmethod
    def of(
        cls,
        impl: Any,
        ctx: Any,
        inputs: Sequence[TensorList],
        arg_inputs: dict[str, TensorList],
        kernel: Callable[..., Any] | None = None,
        batch_args: dict[str, Any] | None = None,
        checked: Sequence[int] | None = None,
    ) -> SampleCall:
        """The call of ``impl`` (a ``SampleOperator``) on the batches ``inputs`` of iteration
        ``ctx``: its device's kernel unless ``kernel`` is given, its ``batch_args`` worked out
        from ``inputs`` unless given."""
        n = len(inputs[0]) if inputs else ctx.batch_size
        if batch_args is None:
            batch_args = impl.batch_args(inputs) if n else {}
        return cls(
            impl,
            kernel if kernel is not None else getattr(impl, impl.device),
            n,
            arg_inputs,
            [x.layout() for x in inputs],
            inputs[0].sources if inputs else None,
            ctx.streams(impl.stream_key, n) if getattr(impl, "random", False) else None,
            batch_args,
            checked,
        )

    def set_batch_args(self, value: dict[str, Any]) -> None:
        """The node's ``batch_args`` for this batch (see ``SampleOperator.batch_args``)."""
        self.batch_args = value
        self._args = {**self.impl.args, **value} if value else self.impl.args

    # --- the contract ------------------------------------------------------------------------
    def args(self, i: int) -> dict[str, Any]:
        """Sample ``i``'s keyword arguments: constants, argument inputs, ``batch_args``,
        ``rng``."""
        args = self._args
        if self.arg_inputs:
            args = self.sample_args(i)
            if self.batch_args:
                args = {**args, **self.batch_args}
        if self.streams is not None:
            args = {**args, "rng": self.streams.generator(i)}
        return args

    def sample_args(self, i: int) -> dict[str, Any]:
        """The constant arguments overlaid with sample ``i`` of each argument input
        (``overlay_args``)."""
        return overlay_args(self.impl, self.arg_inputs, i)

    def check(self, samples: Sequence[Any]) -> None:
        """``check_input`` on the samples of the inputs the call checks."""
        check, layouts = self._check, self.layouts
        for k in self.checked:
            check(k, samples[k], layouts[k])

    def error(self, exc: Exception, i: int | None) -> OperatorError:
        """What a failure of sample ``i`` that is not augkit's raises (an ``AugkitError``
        passes as it is): the operator's ``OperatorError`` naming the sample and its source,
        the exception chained."""
        source = self.sources[i] if self.sources is not None and i is not None else ""
        error = OperatorError(
            f"{type(exc).__name__}: {exc}",
            operator=self.impl.label(),
            sample_index=i,
            source_info=source,
        )
        error.__cause__ = exc
        return error

    def __call__(self, i: int, samples: Sequence[Any]) -> tuple[Any, ...]:
        """Sample ``i``'s outputs (finished) from its input ``samples``."""
        # _run and check written inline: this runs once per sample and node, and a small
        # kernel (a reduction of a small image) takes ~20 us, of which each call layer is ~2%.
        args = self.args(i) if self._per_sample else self._args
        try:
            check, layouts = self._check, self.layouts
            for k in self.checked:
                check(k, samples[k], layouts[k])
            out = self.kernel(*samples, **args)
        except AugkitError:
            raise
        except Exception as exc:
            raise self.error(exc, i) from exc
        if type(out) is tuple:
            return tuple(finish(o) for o in out)
        return (finish(out),)

    def write(self, i: int, samples: Sequence[Any], out: Any) -> None:
        """Sample ``i`` computed into ``out``, a row of a batch allocated once (a batch
        kernel's output): the kernel gets it as ``out=``; the arguments, checks and errors of
        a call."""
        self._run(i, samples, {**self.args(i), "out": out})

    def _run(self, i: int, samples: Sequence[Any], args: dict[str, Any]) -> Any:
        try:
            self.check(samples)
            return self.kernel(*samples, **args)
        except AugkitError:
            raise
        except Exception as exc:
            raise self.error(exc, i) from exc
