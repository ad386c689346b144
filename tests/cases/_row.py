"""What a row of the table of cases is (``OperatorCase``) and what rows use (``_uniform``): a
module of its own, which imports no rows, so that ``tests/operator_cases.py`` and the family
files of ``tests/cases/`` can both import it in any order (a family file imported first, as
pytest's doctest collection does, would otherwise import operator_cases, which imports the
family files, the first of them still half-initialised)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# ``op("rotate")`` -> the operator's function, in the front end the test picked.
Op = Callable[[str], Callable[..., Any]]
Body = Callable[[Op, Any], tuple[Any, ...]]

INPUTS = ("images", "jpegs", "none")


@dataclass(frozen=True)
class OperatorCase:
    """How the registry-wide tests use one operator.

    Attributes:
        input: what ``body`` gets as ``x``: "images" (small decoded photos, uint8 HWC),
            "jpegs" (encoded files), or "none" (it uses no input; ``x`` is still given).
        body: ``body(op, x)`` returns the outputs (a tuple), calling operators as
            ``op("rotate")(x, ...)``.
        eager: whether the parity tests also check ``augkit.eager`` == pipeline (readers are
            iterables in eager: tests/test_eager.py covers them).
        required: argument values the fuzzer gives when it did not draw that argument: every
            ``REQUIRED`` argument, and what the operator needs in practice.
        required_unless: arguments that say the same in another way: when the fuzzer draws one
            of them, it gives none of ``required`` (resize: ``size`` instead of ``resize_x``).
        held: arguments the fuzzer gives in every call and never draws.
        source_argument: for an operator that takes its data from a callable argument (the
            external source's ``source``): the fuzzer gives ``lambda: batch`` of a drawn batch
            there, never a drawn value.
        extra_inputs: for an operator whose inputs after the first are not data but
            parameters (``filter``'s kernel, ``warp_affine``'s matrix): ``extra_inputs(k, n)``
            gives a valid batch of ``n`` samples for input ``k`` (k >= 1; k >= 0 for a row
            whose ``input`` is "none", such as ``transforms.combine``'s matrices), which the
            fuzzer uses three times in four instead of a drawn batch.
        channels: the number of channels (last axis) the operator needs (3 for hsv, hue,
            saturation, color_twist): the image batches the fuzzer draws have it.
    """

    input: str
    body: Body
    eager: bool = True
    required: Mapping[str, Any] = field(default_factory=dict)
    required_unless: tuple[str, ...] = ()
    held: Mapping[str, Any] = field(default_factory=dict)
    source_argument: str = ""
    extra_inputs: Callable[[int, int], list[Any]] | None = None
    channels: int | None = None

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"OperatorCase: input must be one of {INPUTS}, got {self.input!r}")

    @property
    def never_drawn(self) -> frozenset[str]:
        """The arguments the fuzzer does not draw."""
        return frozenset(self.held) | ({self.source_argument} - {""})

    def fixed_arguments(self, drawn: Mapping[str, Any]) -> dict[str, Any]:
        """What the fuzzer gives beside the ``drawn`` arguments (which win over these)."""
        given = {} if set(self.required_unless) & set(drawn) else dict(self.required)
        return {**given, **self.held}


def _uniform(op: Op, low: float, high: float) -> Any:
    return op("random.uniform")(range=(low, high))
