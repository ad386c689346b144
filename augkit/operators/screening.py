"""Dropping bad samples without losing batch size: the protocol between operators that may drop
a sample (``decoders.image(on_error="skip")``) and readers that replace it with their next one.

Two roles, each one small interface:

- A **screening operator** (``Screening``) can tell, for each sample of its first input, either
  its output for that sample or a ``Rejected(reason)``: ``screen(ctx, batch)``. Its ``run``
  takes the values a reader already screened for it from the iteration's notes
  (``ctx.notes.screened[name]``), or screens the batch itself (debug mode, eager calls), and
  leaves the rejected samples out, recording each in ``ctx.notes.skipped``.
- A **refilling source** (``Refilling``, every reader built on ``readers/base.py``) takes
  screens at build time (``attach_screen``), runs them in its read stage as it reads, leaves
  the rejected samples out and reads on until its batch is full, so batches stay full and every
  output of the reader (labels too) stays with its image. In debug mode, where the screening
  operator runs after the reader delivered, ``refill`` replaces the rejected samples of the
  batch it already gave: the same sequence of reads, so the same batches.

The executor connects the two when the pipeline is built (``Executor``): a screening operator
whose input does not come straight from a refilling source is an error then. A new reader
(COCO, a per-sample external source) gets all of this by deriving from ``readers.base.Reader``;
a new operator that may drop samples by implementing ``Screening``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from augkit.errors import SkippedSample
from augkit.operators.base import RunContext
from augkit.tensors import TensorList


@dataclass(frozen=True)
class Rejected:
    """A sample a screening operator cannot process, and why (plain words)."""

    reason: str


Screen = Callable[[RunContext, TensorList], list[Any]]
"""``screen(ctx, batch)`` -> per sample of ``batch``: its output, or a ``Rejected``."""


@runtime_checkable
class Screening(Protocol):
    """An operator that may drop samples of its first input (see the module docstring)."""

    name: str

    def screens(self) -> bool:
        """Whether this instance drops samples (a decoder only with ``on_error="skip"``)."""
        ...

    def screen(self, ctx: RunContext, batch: TensorList) -> list[Any]: ...


@runtime_checkable
class Refilling(Protocol):
    """A source that replaces the samples a screening operator drops (every ``Reader``)."""

    name: str

    def attach_screen(self, output: int, operator: str, screen: Screen) -> None:
        """Screen output ``output`` of every batch with ``screen`` as it is read, on behalf of
        the operator named ``operator``."""
        ...

    def refill(
        self,
        ctx: RunContext,
        outputs: Sequence[TensorList],
        output: int,
        operator: str,
        values: Sequence[Any],
        screen: Screen,
    ) -> list[TensorList]:
        """The batch ``outputs`` (this source's last, already delivered) without the samples
        whose ``values`` (the screening of output ``output``) are ``Rejected``, filled up with
        the next good samples."""
        ...


def screens(impl: Any) -> bool:
    """Whether ``impl`` is a screening operator that drops samples."""
    return isinstance(impl, Screening) and impl.screens()


def keep_screened(
    ctx: RunContext,
    name: str,
    batch: TensorList,
    values: Sequence[Any],
    place: Callable[[Any], Any],
    layout: str,
    dtype: Any,
) -> TensorList:
    """The output of a screening operator: the values that are not ``Rejected`` (``place``d:
    made read-only, or moved to the GPU), each rejected one recorded in ``ctx.notes``."""
    keep = [i for i, v in enumerate(values) if not isinstance(v, Rejected)]
    for i, value in enumerate(values):
        if isinstance(value, Rejected):
            ctx.notes.skipped.append(
                SkippedSample(name, "", batch.sources[i], "", value.reason, ctx.iteration)
            )
    return TensorList(
        [place(values[i]) for i in keep],
        layout,
        [batch.sources[i] for i in keep],
        dtype=dtype,
    )
