"""``_split`` and ``_merge``: the graph nodes of conditionals (``augkit.conditionals``; DALI's
``fn._conditional.split`` and ``merge``).

- ``_split(data, selector, case=c)``: the samples of ``data`` whose selector equals ``c``, in
  order: a node of an enclosing scope read inside a branch (``augkit.graph`` makes it, one
  per node and branch scope).
- ``_merge(selector, v0, v1, ..., cases=(c0, c1, ...))``: the batch of the scope the ``if``
  is in, sample ``i`` taken from the branch of case ``selector[i]``, in the original order:
  a variable assigned in the branches, after the ``if``.

Both move samples (no copy of their data) and keep each sample's ``source_info``. Their role
is "conditional": not in ``fn``/``ops``/``eager``, and not counted when operator seeds are
numbered, so that an ``if`` does not change the seeds of the operators after it.

Decisions and traps:

- The branches of a variable must agree on the type, the number of dimensions and the layout
  of their samples (DALI's rule); a mismatch is an ``OperatorError`` naming the variable, the
  ``if`` and both types. A branch that no sample took has no samples to disagree with.
- GPU batches: split and merge move CuPy samples as they move NumPy ones, and the merge's
  check reads only their metadata (``dtype``, ``ndim``: ``np.asarray`` of a CuPy array is
  refused). Conditions stay on the CPU (an ``if`` refuses a GPU one at definition), and a GPU
  operand of ``and``/``or``/``not`` is refused at run time in DALI's words ("Got a GPU input").
- ``_merge`` takes inputs of different batch sizes (one per branch): the core's check that
  inputs have one sample per sample of the batch does not apply to this role.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.errors import OperatorError
from augkit.kinds import GENERIC
from augkit.operators.base import OperatorImpl, RunContext, finish
from augkit.operators.registry import Arg, OperatorSchema, OutputSpec, keeps_kind, register
from augkit.scopes import Choice, cases_of
from augkit.tensors import TensorList


def _choice(args: dict[str, Any]) -> Choice:
    return Choice(
        None, args["label"], dict(args["names"]), bool(args["boolean"]), args.get("where", "")
    )


class Split(OperatorImpl):
    """The samples of ``data`` whose selector takes this branch's case."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        data, selector = inputs
        cases = cases_of(selector, _choice(self.args))
        keep = np.flatnonzero(cases == self.args["case"])
        infos = data.sources
        out = TensorList(
            [data.samples[i] for i in keep],
            data.layout(),
            [infos[i] for i in keep],
            dtype=data.dtype.numpy if not len(keep) and data.samples else None,
            kind=data.kind,
        )
        return [out]


class Merge(OperatorImpl):
    """One batch of the enclosing scope, each sample from the branch its selector chose."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        selector, *branches = inputs
        choice = _choice(self.args)
        cases = cases_of(selector, choice)
        order = list(self.args["cases"])
        filled = [(k, b) for k, b in enumerate(branches) if len(b)]
        self._check_agree(choice, order, filled)
        taken = [0] * len(branches)
        samples: list[Any] = []
        infos: list[str] = []
        for i, case in enumerate(cases.tolist()):
            k = order.index(case) if case in order else -1
            if k < 0 or taken[k] >= len(branches[k]):
                raise OperatorError(
                    f"sample {i} took the case {case!r}, which has no value for "
                    f"'{self.args['variable']}'",
                    operator=choice.label,
                    sample_index=i,
                )
            samples.append(branches[k].samples[taken[k]])
            infos.append(branches[k].sources[taken[k]])
            taken[k] += 1
        first = filled[0][1] if filled else (branches[0] if branches else None)
        layout = first.layout() if first is not None else ""
        kind = first.kind if first is not None else GENERIC
        return [TensorList(samples, layout, infos, kind=kind)]

    def _check_agree(
        self, choice: Choice, order: list[Any], filled: list[tuple[int, TensorList]]
    ) -> None:
        if len(filled) < 2:
            return
        (k0, first), *others = filled

        def describe(batch: TensorList) -> tuple[str, int, str]:
            sample = batch.samples[0]  # NumPy or CuPy: read its metadata, not its data
            return _c_name(np.dtype(sample.dtype)), int(sample.ndim), batch.layout()

        want = describe(first)
        for k, batch in others:
            got = describe(batch)
            if got == want:
                continue
            what = ("types", "sample dimensions", "layouts")
            found = next(j for j in range(3) if got[j] != want[j])
            a, b = want[found], got[found]
            if found == 2:
                a, b = f'"{a}"', f'"{b}"'
            names = choice.names
            where = f" at {choice.where}" if choice.where else ""
            raise OperatorError(
                "Divergent data found in different branches of conditional operation. All "
                "paths in conditional operation are merged into one batch which must have "
                "consistent type, number of dimensions, layout and other metadata. Found "
                f"distinct {what[found]}: {a} and {b}. (The variable "
                f"'{self.args['variable']}' of the `if`{where}, in its "
                f"{names.get(order[k0], order[k0])} and {names.get(order[k], order[k])} "
                "branches: use fn.cast, fn.reshape or fn.expand_dims in a branch.)",
                operator=choice.label,
            )


_CHOICE_ARGS = [
    Arg("label", "how the choice is named (its if statement)", ""),
    Arg("names", "the name of each case's branch, as (case, name) pairs", ()),
    Arg("boolean", "an if: the selector is boolean", True),
    Arg("where", "the statement's place in the user's code", ""),
]


register(
    OperatorSchema(
        name="_split",
        class_name="_Split",
        impl=Split,
        role="conditional",
        min_inputs=2,
        max_inputs=2,
        input_sets=False,
        output_kinds=keeps_kind,
        doc="The samples of a batch that take one branch of a conditional.",
        args=[Arg("case", "the case of the branch", None), *_CHOICE_ARGS],
    )
)


def _merged_kind(
    args: dict[str, Any], inputs: Sequence[OutputSpec | None]
) -> list[OutputSpec | None]:
    branches = list(inputs[1:])
    first = branches[0] if branches else None
    if first is not None and all(spec == first for spec in branches):
        return [first]
    return [None]


register(
    OperatorSchema(
        name="_merge",
        class_name="_Merge",
        impl=Merge,
        role="conditional",
        min_inputs=2,
        max_inputs=None,
        input_sets=False,
        output_kinds=_merged_kind,
        doc="A variable assigned in the branches of a conditional, merged in sample order.",
        args=[
            Arg("cases", "the case of each branch input, in order", ()),
            Arg("variable", "the variable's name (for messages)", ""),
            *_CHOICE_ARGS,
        ],
    )
)


class LogicalCheck(OperatorImpl):
    """An operand of ``and``/``or``/``not`` on DataNodes, checked as DALI checks it (a scalar
    per sample; of type bool for ``and``/``or``, any number for ``not``), and negated for
    ``not``."""

    def run(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList]:
        (batch,) = inputs
        expression, side = self.args["expression"], self.args["side"]
        negate = self.args["negate"]
        where = f" (at {self.args['where']})" if self.args["where"] else ""
        wanted = "" if negate else " of `bool` type"
        prefix = (
            f"Logical expression `{expression}` is restricted to scalar (0-d tensors) "
            f"inputs{wanted}, that are placed on CPU."
        )
        side_text = f"as the {side} argument " if side else ""
        for i, sample in enumerate(batch.samples):
            if backend.is_gpu_array(sample):  # DALI refuses GPU operands (its words)
                raise OperatorError(
                    f"{prefix} Got a GPU input {side_text}in logical expression{where}. Move "
                    "it with .cpu() first.",
                    operator=self.name,
                    sample_index=i,
                    source_info=batch.sources[i],
                )
            if np.ndim(sample) != 0:
                raise OperatorError(
                    f"{prefix} Got a {np.ndim(sample)}-d input {side_text}in logical "
                    f"expression{where}.",
                    operator=self.name,
                    sample_index=i,
                    source_info=batch.sources[i],
                )
        values = np.array([np.asarray(s).reshape(()) for s in batch.samples])
        if len(values) and (
            values.dtype.kind != "b" if not negate else values.dtype.kind not in "biuf"
        ):
            raise OperatorError(
                f"{prefix} Got an input of type `{_c_name(values.dtype)}` {side_text}in logical "
                f"expression{where}.",
                operator=self.name,
            )
        values = values.astype(bool) if len(values) else np.zeros(0, bool)
        return [TensorList.from_array(finish(~values if negate else values), "", batch.sources)]


def _c_name(dtype: np.dtype) -> str:
    """A type as DALI's messages spell it: int32, uint8, float, double."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name, dtype.name)


register(
    OperatorSchema(
        name="_logical_check",
        class_name="_LogicalCheck",
        impl=LogicalCheck,
        role="internal",
        input_sets=False,
        doc="An operand of and/or/not on DataNodes: a boolean scalar per sample (or negated).",
        args=[
            Arg("expression", "and, or or not", ""),
            Arg("side", "which operand", ""),
            Arg("where", "the expression's place in the user's code", ""),
            Arg("negate", "give `not` of the values", False),
        ],
    )
)
