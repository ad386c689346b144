"""Fuzzing every operator of the registry (issue 6): drawn arguments (valid and invalid: numbers
of every size and sign, NaN, strings, None, lists, objects) and drawn input batches (0 to 4
dimensions, uint8/int16/float32/float64/bool, empty dimensions, non-contiguous samples, any
layout), run through ``augkit.eager``. The outcome must be a valid output or an
``AugkitError``; any other exception is a bug, and so is a NumPy warning turned into an
error by an operator (pytest runs with warnings as errors).

Fast by default (``AUGKIT_FUZZ_EXAMPLES``, default 25 examples per operator, derandomized so that
CI is reproducible). A longer run:

    AUGKIT_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz.py -q

What is held fixed comes from each operator's row in tests/operator_cases.py: its required
arguments (given unless drawn), a Python operator's ``function`` (a valid one; its own failures
are the user's), an external source's ``source`` (it gives a drawn batch), the reader's
``file_root`` (data/images) unless another way of listing files is drawn. Beside the rows,
``parallel="processes"`` is not drawn (a worker pool per call is slow; its errors are tested in
tests/operators/test_python_function_workers.py).

An operator passes only if at least one of its calls gives an output: a row that lacks a
required argument, or a kernel that always raises, would otherwise pass with every call ending
in an AugkitError, the kernel never run (``_never_ran``; the last tests check that this is
reported).
"""

from __future__ import annotations

import functools
import io
import math
import os
import pathlib
import re
import textwrap
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from augkit import eager, types
from augkit.errors import AugkitError
from augkit.operators.base import SampleOperator
from augkit.operators.registry import REGISTRY, REQUIRED, Arg, OperatorSchema
from augkit.tensors import TensorList
from tests.operator_cases import IMAGES, PUBLIC, OperatorCase, case

EXAMPLES = int(os.environ.get("AUGKIT_FUZZ_EXAMPLES", "25"))

DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.bool_]
LAYOUTS = ["", "HWC", "CHW", "HW", "DHWC", "FHWC", "C", "AB", "HHW", "WC"]


# --- drawn values ------------------------------------------------------------------------------

# Numbers small, or far too large for any allocation to be tried (1e15 and up fail at once):
# sizes in between (a 30000 x 30000 window) would allocate gigabytes, which is no bug but would
# take the machine's memory from everyone else running on it.
_HUGE = st.one_of(st.integers(10**15, 2**130), st.integers(-(2**130), -(10**15)))
_FLOATS = st.floats().filter(lambda v: not 300 < abs(v) < 1e15)
_NUMBERS = st.one_of(st.integers(-5, 300), _HUGE, _FLOATS, st.floats(-2.0, 2.0))
_LIST_ELEMENTS = st.one_of(st.integers(-5, 64), _HUGE, st.floats(-2.0, 70.0), _FLOATS)
_JUNK = st.sampled_from(
    [None, "", "abc", "HWC", -1, 0, 1, 2, 1e308, math.nan, [], [1, 2, 3], (0, -1), True, object()]
)


def _plausible(arg: Arg) -> st.SearchStrategy[Any]:
    """Values of the kind the argument takes (in and out of its range)."""
    allowed = arg.allowed or ""
    low = getattr(arg.convert, "low", None)
    high = getattr(arg.convert, "high", None)
    if arg.name == "device":
        return st.sampled_from(["cpu", "gpu", "mixed"])
    options: list[st.SearchStrategy[Any]] = [st.just(arg.default)]
    if allowed.startswith("an integer"):
        lo = int(low) - 2 if low is not None else -50
        hi = int(high) + 2 if high is not None else lo + 100
        options.append(st.integers(lo, hi))
    elif allowed.startswith("a number") and "list" not in allowed:
        lo = low - 1 if low is not None else -1000.0
        hi = high + 1 if high is not None else 1000.0
        options.append(st.floats(lo, hi))
    if "list" in allowed or "numbers" in allowed or "(low, high)" in allowed:
        options.append(st.lists(_LIST_ELEMENTS, max_size=4))
        options.append(st.lists(st.floats(-5, 50), min_size=1, max_size=3))
    if allowed.startswith(("True or False", "0 or 1")):
        options.append(st.sampled_from([True, False, 0, 1, 2, -1]))
    if getattr(arg.convert, "choices", None):
        options.append(st.sampled_from(arg.convert.choices))  # type: ignore[union-attr]
    if "data type" in allowed or arg.name == "dtype":
        options.append(st.sampled_from(list(types.DALIDataType)))
    if "INTERP" in allowed or "interp" in arg.name:
        options.append(st.sampled_from(list(types.DALIInterpType)))
    if "RGB" in allowed or arg.name == "output_type":
        options.append(st.sampled_from(list(types.DALIImageType)))
    if "layout" in allowed:
        options.append(st.sampled_from(LAYOUTS))
    return st.one_of(*options)


def _per_sample(n: int) -> st.SearchStrategy[Any]:
    """One value per sample, as eager takes per-sample arguments (a list of arrays)."""
    shapes = st.sampled_from([(), (1,), (2,), (0,)])
    value = st.one_of(
        hnp.arrays(np.float32, shapes, elements=st.floats(-100, 100, width=32)),
        hnp.arrays(np.int32, shapes, elements=st.integers(-100, 100)),
        hnp.arrays(np.uint8, shapes),
    )
    return st.lists(value, min_size=max(n - 1, 1), max_size=n + 1)


def _value(data: st.DataObject, arg: Arg, batch: int) -> Any:
    # Mostly values of the right kind (so that kernels run), sometimes anything.
    kind = data.draw(st.sampled_from(["plausible"] * 4 + ["number", "junk", "per-sample"]))
    if kind == "per-sample" and arg.per_sample:
        return data.draw(_per_sample(batch), label=arg.name)
    strategy = {"number": _NUMBERS, "junk": _JUNK}.get(kind, _plausible(arg))
    return data.draw(strategy, label=arg.name)


# Sides of a sample, an empty one now and then: drawn as integers(0, 6), most were 0 (Hypothesis
# favours the ends of a range), and resize's kernel never ran in 25 examples.
_SIDES = st.sampled_from([1, 2, 3, 4, 5, 6, 0])


@st.composite
def _sample(draw: st.DrawFn, dtype: Any, ndim: int, channels: int | None = None) -> np.ndarray:
    shape = tuple(draw(_SIDES) for _ in range(ndim))
    if channels is not None:  # an image for an operator that needs this many channels, last
        shape = (*shape[:-1], channels)
    if dtype == np.bool_:
        elements = st.booleans()
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    else:
        elements = st.floats(
            allow_nan=True, allow_infinity=True, width=np.dtype(dtype).itemsize * 8
        )
    array = draw(hnp.arrays(dtype, shape, elements=elements))
    if array.ndim and draw(st.booleans()):  # non-contiguous: every other row, reversed
        array = np.repeat(array, 2, axis=0)[::-2]
    if array.ndim >= 2 and draw(st.booleans()):
        array = array.swapaxes(0, 1)
    return array


@st.composite
def _batch(draw: st.DrawFn, channels: int | None = None) -> Any:
    """A list of 1 to 3 samples (one dtype, one rank, shapes of their own), or a TensorList of
    them with a drawn layout; half of the batches are images (3-D, HWC or CHW)."""
    dtype = draw(st.sampled_from(DTYPES))
    image = draw(st.sampled_from([True, False]))  # shrinks towards an image
    ndim = 3 if image else draw(st.integers(0, 4))
    samples = draw(
        st.lists(_sample(dtype, ndim, channels if image else None), min_size=1, max_size=3)
    )
    layouts = ["", "HWC", "CHW"] if image else LAYOUTS
    if draw(st.booleans()):
        return TensorList(samples, draw(st.sampled_from(layouts)))
    return samples


@functools.cache
def _files() -> tuple[np.ndarray, ...]:
    """Encoded images: four JPEGs of data/images and a small PNG."""
    jpegs = [np.fromfile(p, np.uint8) for p in sorted(IMAGES.glob("*/*.jpg"))[:4]]
    buffer = io.BytesIO()
    Image.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3)).save(buffer, "PNG")
    return (*jpegs, np.frombuffer(buffer.getvalue(), np.uint8))


@st.composite
def _encoded(draw: st.DrawFn) -> list[np.ndarray]:
    """A batch of real image files, most whole, some cut short."""
    picked = draw(st.lists(st.sampled_from(_files()), min_size=1, max_size=2))
    cut = st.sampled_from([False, False, True])
    return [b[: draw(st.integers(0, len(b)))] if draw(cut) else b for b in picked]


# --- one call, many calls --------------------------------------------------------------------


def _operator(name: str) -> Callable[..., Any]:
    target: Any = eager
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _check_outputs(out: Any) -> None:
    """A valid output: arrays (or tensors), no Python objects."""
    items = out if isinstance(out, tuple) else (out,)
    for item in items:
        if item is None:
            continue
        samples = list(item) if isinstance(item, list) else [item]
        if isinstance(item, TensorList):
            samples = [item.at(i) for i in range(len(item))]
        for sample in samples:
            array = np.asarray(sample)
            assert array.dtype != object, f"an output sample is a Python object: {sample!r}"


def _input_count(schema: OperatorSchema, data: st.DataObject) -> int:
    """How many input batches to give: the schema's number, or mostly one where it takes any."""
    low, high = schema.min_inputs, schema.max_inputs
    if low == high:
        return low
    counts = [c for c in (1, 1, 1, 0, 2) if c >= low and (high is None or c <= high)]
    return data.draw(st.sampled_from(counts), label="inputs")


def _run(
    schema: OperatorSchema, case: OperatorCase, call: Callable[..., Any], data: st.DataObject
) -> str:
    """One drawn call of ``call`` (the operator's eager form); returns "output" or the
    AugkitError it raised, in words."""
    name = schema.name
    n = data.draw(st.integers(1, 3), label="batch size")
    if case.input == "jpegs":
        inputs = [data.draw(st.one_of(_encoded(), _batch()), label="input")]
    elif schema.max_inputs == 0 or case.source_argument:
        inputs = []
    else:
        inputs = [
            data.draw(_batch(case.channels), label=f"input {k}")
            for k in range(_input_count(schema, data))
        ]
        if case.extra_inputs is not None and inputs:
            # a row without a data input ("none": transforms.combine's matrices) from input 0
            for k in range(0 if case.input == "none" else 1, len(inputs)):
                # valid three times in four: an operator of three parameter inputs
                # (select_masks) must get all of them valid often enough to reach its kernel
                if data.draw(st.sampled_from([True, True, True, False]), label=f"valid {k}"):
                    inputs[k] = case.extra_inputs(k, len(inputs[0]))
    source: dict[str, Any] = {}
    if case.source_argument:
        source_batch = data.draw(_batch(), label="source batch")
        source[case.source_argument] = lambda: source_batch
    batch_size = len(inputs[0]) if inputs else n
    fuzzable = [a for a in schema.arguments.values() if a.name not in case.never_drawn]
    picked = data.draw(
        st.lists(st.sampled_from(fuzzable), max_size=3, unique_by=lambda a: a.name),
        label="arguments",
    )
    drawn = {a.name: _value(data, a, batch_size) for a in picked}
    if drawn.get("parallel") == "processes":
        drawn["parallel"] = "threads"
    kwargs = {"seed": 1234, **case.fixed_arguments(drawn), **source, **drawn}
    try:
        if name.startswith("readers."):
            for k, outputs in enumerate(call(batch_size=n, **kwargs)):
                _check_outputs(outputs)
                if k == 2:
                    break
        elif not inputs:
            _check_outputs(call(batch_size=n, **kwargs))
        else:
            _check_outputs(call(*inputs, **kwargs))
    except AugkitError as exc:
        leak = _leak(exc)
        if leak:
            raise AssertionError(f"{name}: {leak}: {type(exc).__name__}: {exc}") from exc
        return f"{type(exc).__name__}: {exc}"
    return "output"


def _fuzz(
    schema: OperatorSchema,
    case: OperatorCase,
    call: Callable[..., Any],
    examples: int = EXAMPLES,
) -> Counter[str]:
    """Run ``examples`` drawn calls; returns how many gave an output ("output") and how many
    raised each AugkitError (by its message). Raises AssertionError for a bug (an exception
    that is no AugkitError, a warning, a slip: see ``_leak``)."""
    missing = schema.missing(set(case.required) | set(case.never_drawn))
    assert not missing, (
        f"{schema.name}: its row in tests/operator_cases.py gives no value for the required "
        f"argument(s) {missing}: put one in the row's `required` (or `held`), or no call can "
        f"get past the argument checks to the kernel"
    )
    outcomes: Counter[str] = Counter()

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            outcomes[_run(schema, case, call, data)] += 1

    fuzz()
    return outcomes


def _never_ran(name: str, outcomes: Counter[str]) -> str:
    """Why the fuzzing of ``name`` proves nothing ("" when some call gave an output): without
    one output, the kernel never ran, and every example passed only by raising an AugkitError
    (a required argument missing from the row, a kernel that always raises)."""
    if outcomes["output"]:
        return ""
    kinds: Counter[str] = Counter()
    example: dict[str, str] = {}
    for message, count in outcomes.items():
        kind = re.sub(r"\d+", "N", message)  # one kind of error, whatever its numbers
        kinds[kind] += count
        example.setdefault(kind, message)
    common = "\n".join(
        f"  {count} x {textwrap.shorten(example[kind], 300)}"
        for kind, count in kinds.most_common(5)
    )
    return (
        f"{name}: none of the {outcomes.total()} fuzzed calls gave an output, so its kernel never "
        f"ran (check its row in tests/operator_cases.py); the most common errors:\n{common}"
    )


# Exception types augkit never raises on purpose: seen inside an OperatorError, they are a slip in
# a kernel that was not expecting the input, not a message a user can act on.
_SLIPS = (IndexError, KeyError, ZeroDivisionError, AttributeError, NameError, RecursionError)


def _leak(exc: AugkitError) -> str:
    """Why an AugkitError is still a bug ("" when it is not): it wraps a warning (an error only
    under pytest's settings: users get the warning and a result), a slip, or an error raised
    inside NumPy/Pillow/torch, whose words are about their internals."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, AugkitError):
        return ""
    if isinstance(cause, Warning):
        return "a warning escapes the operator"
    if isinstance(cause, _SLIPS):
        return f"a {type(cause).__name__} escapes a kernel"
    frames = traceback.extract_tb(cause.__traceback__)
    if frames and _in_library(frames[-1].filename) and _is_augkit(frames):
        return f"an error of {pathlib.Path(frames[-1].filename).parent.name} escapes a kernel"
    return ""


def _in_library(filename: str) -> bool:
    """A frame of an installed package (Cython frames are named "numpy/random/_philox.pyx")."""
    return "site-packages" in filename or filename.endswith(".pyx")


def _is_augkit(frames: traceback.StackSummary) -> bool:
    """Whether augkit called the library (a user's function calling it is the user's affair)."""
    outside = [f for f in frames if not _in_library(f.filename)]
    return bool(outside) and f"{os.sep}augkit{os.sep}" in outside[-1].filename


@pytest.mark.parametrize("name", PUBLIC)
def test_operator_gives_an_output_or_an_augkit_error(name: str) -> None:
    """Every call gives a valid output or an AugkitError, and at least one gives an output."""
    report = _never_ran(name, _fuzz(REGISTRY[name], case(name), _operator(name)))
    if report:
        pytest.fail(report)


# --- the test of the test: an operator whose kernel never runs is reported ----------------------


class _AlwaysRaises(SampleOperator):
    def cpu(self, sample: Any, **_: Any) -> Any:
        raise ValueError("this kernel always raises")


class _NeedsAmount(SampleOperator):
    def cpu(self, sample: Any, *, amount: Any, **_: Any) -> Any:
        return np.array(sample)


def _fake(name: str, impl: type, args: tuple[Arg, ...] = ()) -> OperatorSchema:
    """A schema registered nowhere (so no other test sees it), called through ``eager.call``."""
    return OperatorSchema(name=name, class_name=name.title(), impl=impl, doc="", args=args)


def test_an_operator_whose_kernel_always_raises_is_reported() -> None:
    schema = _fake("_fuzz_always_raises", _AlwaysRaises)
    row = OperatorCase(input="images", body=lambda op, x: (op(schema.name)(x),))
    outcomes = _fuzz(schema, row, functools.partial(eager.call, schema), examples=10)
    report = _never_ran(schema.name, outcomes)
    assert re.match(r"_fuzz_always_raises: none of the \d+ fuzzed calls gave an output", report)
    assert "ValueError: this kernel always raises" in report


_NEEDS_AMOUNT = _fake("_fuzz_needs_amount", _NeedsAmount, (Arg("amount", "", REQUIRED),))


def test_an_operator_that_works_is_not_reported() -> None:
    schema = _NEEDS_AMOUNT
    row = OperatorCase(
        input="images", body=lambda op, x: (op(schema.name)(x),), required={"amount": 1}
    )
    outcomes = _fuzz(schema, row, functools.partial(eager.call, schema), examples=10)
    assert outcomes["output"] > 0, outcomes
    assert _never_ran(schema.name, outcomes) == ""


def test_a_row_without_a_required_argument_is_reported() -> None:
    schema = _NEEDS_AMOUNT
    row = OperatorCase(input="images", body=lambda op, x: (op(schema.name)(x),))
    with pytest.raises(
        AssertionError, match=r"_fuzz_needs_amount: .* required argument\(s\) \['amount'\]"
    ):
        _fuzz(schema, row, functools.partial(eager.call, schema), examples=10)
