"""augkit's exceptions. Every message names the operator, and where it applies the argument,
the sample index and the sample's source (the file it was read from).

``ArgumentError`` is also a ``ValueError`` and ``TypeError`` so that code written against
NumPy-style errors still catches it; ``OperatorError`` chains the user's exception so that its
traceback (and the user's line) is shown below augkit's message.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class AugkitError(Exception):
    """Base class of every error augkit raises on purpose."""


class ArgumentError(AugkitError, ValueError, TypeError):
    """An operator or pipeline was given an argument it cannot use."""


class DeviceError(AugkitError, RuntimeError):
    """A device (a GPU, CuPy) that the pipeline asks for is not available."""


class GraphError(AugkitError, RuntimeError):
    """The pipeline's definition cannot be turned into a graph (no outputs, a foreign node...)."""


class OperatorError(AugkitError, RuntimeError):
    """An operator failed while running on a batch.

    Attributes:
        operator: the operator's name in the graph, e.g. ``"PythonFunction_3"``.
        sample_index: index of the failing sample in its batch, or ``None`` for a whole batch.
        source_info: where that sample came from (a file path), or ``""``.
    """

    def __init__(
        self,
        message: str,
        *,
        operator: str,
        sample_index: int | None = None,
        source_info: str = "",
    ) -> None:
        where = f"operator {operator}"
        if sample_index is not None:
            where += f", sample #{sample_index}"
            if source_info:
                where += f" ({source_info})"
        super().__init__(f"{where}: {message}")
        self.message = message
        self.operator = operator
        self.sample_index = sample_index
        self.source_info = source_info

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (worker processes, Ray tasks) with its keyword-only arguments: the default
        # reduction calls the class with the message alone, which fails to rebuild it.
        return (
            _rebuild_operator_error,
            (type(self), self.message, self.operator, self.sample_index, self.source_info),
            self.__dict__,
        )


def _rebuild_operator_error(
    cls: type[OperatorError],
    message: str,
    operator: str,
    sample_index: int | None,
    source_info: str,
) -> OperatorError:
    return cls(message, operator=operator, sample_index=sample_index, source_info=source_info)


def suggest(name: str, valid: Iterable[str]) -> str:
    """ " Did you mean 'x'?" for the closest valid name, or "" when nothing is close."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


class RaggedBatchError(AugkitError, ValueError):
    """A dense batch was asked of a batch whose samples have different shapes."""


class SkippedSampleWarning(UserWarning):
    """A sample was skipped (``decoders.image(..., on_error="skip")``) and replaced by the
    reader's next one. The pipeline keeps every such record in ``Pipeline.skipped``."""


@dataclass(frozen=True)
class SkippedSample:
    """One sample a decoder skipped with ``on_error="skip"``.

    Attributes:
        operator: the decoder that could not decode it (or ``reader`` when the file could not
            even be read).
        reader: the reader that delivered it ("" outside a pipeline).
        source_info: the sample's name as the reader lists it, e.g. ``"animals/cat.jpg"``.
        path: the file's absolute path ("" when the sample did not come from a file).
        reason: what was wrong, in plain words.
        iteration: the pipeline iteration whose batch it would have been in.
        refilled: whether the reader read another sample in its place (not for the samples
            ``Pipeline.pick`` chose: the batch is shorter then).
    """

    operator: str
    reader: str
    source_info: str
    path: str
    reason: str
    iteration: int
    refilled: bool = True

    def __str__(self) -> str:
        where = self.path or self.source_info or "a sample"
        return f"{self.operator} skipped {where} (iteration {self.iteration}): {self.reason}"


def report_skips(
    records: Iterable[SkippedSample], into: list[SkippedSample], stacklevel: int = 3
) -> None:
    """Add the skip records of a delivered batch (its iteration's notes) to ``into``, with a
    ``SkippedSampleWarning`` for each, so that no skipped sample goes unreported."""
    for record in records:
        into.append(record)
        warnings.warn(
            f"{record}; replaced by the next sample (all skips: Pipeline.skipped)"
            if record.reader and record.refilled
            else f"{record}; left out of the batch",
            SkippedSampleWarning,
            stacklevel=stacklevel,
        )
