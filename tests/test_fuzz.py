"""Fuzzing every operator of the registry (issue 6): drawn arguments (valid and invalid: numbers
of every size and sign, NaN, strings, None, lists, objects) and drawn input batches (0 to 4
dimensions, uint8/int16/float32/float64/bool, empty dimensions, non-contiguous samples, any
layout), run through ``augkit.eager``. The outcome must be a valid output or an
``AugkitError``; any other exception is a bug, and so is a NumPy warning turned into an
error by an operator (pytest runs with warnings as errors).

Fast by default (``AUGKIT_FUZZ_EXAMPLES``, default 25 examples per operator, derandomized so that
CI is reproducible). A longer run:

    AUGKIT_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz.py -q

What is held fixed: a Python operator's ``function`` (a valid one; its own failures are the
user's), ``parallel="processes"`` is not drawn (a worker pool per call is slow; its errors are
tested in tests/operators/test_python_function_workers.py), an external source's ``source``
(it gives the drawn batch), the reader's ``file_root`` (data/images) unless another way of
listing files is drawn.
"""

from __future__ import annotations

import functools
import io
import math
import os
import pathlib
import traceback
import warnings
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
from augkit.operators.registry import REGISTRY, Arg, OperatorSchema
from augkit.tensors import TensorList

EXAMPLES = int(os.environ.get("AUGKIT_FUZZ_EXAMPLES", "25"))
IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
PUBLIC = sorted(name for name in REGISTRY if not name.startswith("_"))
PYTHON_OPERATORS = ("python_function", "dl_tensor_python_function", "torch_python_function")

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


@st.composite
def _sample(draw: st.DrawFn, dtype: Any, ndim: int) -> np.ndarray:
    shape = tuple(draw(st.integers(0, 6)) for _ in range(ndim))
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
def _batch(draw: st.DrawFn) -> Any:
    """A list of 1 to 3 samples (one dtype, one rank, shapes of their own), or a TensorList of
    them with a drawn layout; half of the batches are images (3-D, HWC or CHW)."""
    dtype = draw(st.sampled_from(DTYPES))
    image = draw(st.booleans())
    ndim = 3 if image else draw(st.integers(0, 4))
    samples = draw(st.lists(_sample(dtype, ndim), min_size=1, max_size=3))
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
    """A batch of real image files, whole or cut short."""
    picked = draw(st.lists(st.sampled_from(_files()), min_size=1, max_size=2))
    return [b[: draw(st.integers(0, len(b)))] if draw(st.booleans()) else b for b in picked]


# --- fixed functions for the Python operators ----------------------------------------------


def _identity(*xs: Any) -> Any:
    return xs[0] if len(xs) == 1 else xs


def _dlpack_identity(*capsules: Any) -> Any:
    from torch.utils import dlpack

    out = [
        dlpack.to_dlpack(dlpack.from_dlpack(c).clone()) if not isinstance(c, list) else c
        for c in capsules
    ]
    return out[0] if len(out) == 1 else tuple(out)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "python_function": _identity,
    "dl_tensor_python_function": _dlpack_identity,
    "torch_python_function": _identity,
}


# --- the test --------------------------------------------------------------------------------


def _operator(name: str) -> Callable[..., Any]:
    target: Any = eager
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _fixed_args(schema: OperatorSchema, drawn: dict[str, Any], batch: list[Any]) -> dict[str, Any]:
    """What the fuzzer does not draw: required arguments and the Python operators' functions."""
    fixed: dict[str, Any] = {"seed": 1234}
    if schema.name in FUNCTIONS:
        fixed["function"] = FUNCTIONS[schema.name]
    if schema.name == "cast":
        fixed["dtype"] = types.FLOAT
    if schema.name == "rotate":
        fixed["angle"] = 30.0
    if schema.name == "resize" and not {"size", "resize_shorter", "resize_longer"} & set(drawn):
        fixed.update(resize_x=7.0, resize_y=5.0)
    if schema.name == "external_source":
        fixed["source"] = lambda: batch
    if schema.name == "readers.file" and not {"files", "file_list"} & set(drawn):
        fixed["file_root"] = str(IMAGES)
    return {**fixed, **drawn}


def _held_fixed(schema: OperatorSchema, arg: Arg) -> bool:
    if schema.name in FUNCTIONS and arg.name == "function":
        return True
    return schema.name == "external_source" and arg.name == "source"


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


def _run(schema: OperatorSchema, data: st.DataObject) -> str:
    """One drawn call; returns "output" or the AugkitError it raised, in words."""
    name = schema.name
    n = data.draw(st.integers(1, 3), label="batch size")
    if name == "decoders.image":
        inputs = [data.draw(st.one_of(_encoded(), _batch()), label="input")]
    elif schema.max_inputs == 0 or name == "external_source":
        inputs = []
    else:
        count = schema.min_inputs
        if name in FUNCTIONS:
            count = data.draw(st.sampled_from([1, 1, 1, 0, 2]), label="inputs")
        inputs = [data.draw(_batch(), label=f"input {k}") for k in range(count)]
    source_batch = data.draw(_batch(), label="source batch") if name == "external_source" else []
    batch_size = len(inputs[0]) if inputs else n
    fuzzable = [a for a in schema.arguments.values() if not _held_fixed(schema, a)]
    picked = data.draw(
        st.lists(st.sampled_from(fuzzable), max_size=3, unique_by=lambda a: a.name),
        label="arguments",
    )
    drawn = {a.name: _value(data, a, batch_size) for a in picked}
    if drawn.get("parallel") == "processes":
        drawn["parallel"] = "threads"
    kwargs = _fixed_args(schema, drawn, source_batch)
    call = _operator(name)
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
    schema = REGISTRY[name]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _run(schema, data)

    fuzz()
