"""``x[...]`` on DataNodes against DALI 2.4 (``tests/subscript_reference.py`` wrote the
reference; the cases are that module's): every indexing form, per-sample DataNode indices and
the layouts, compared exactly, in a normal pipeline and in debug mode; the errors DALI gives for
what it refuses; and ``subscript`` on what ``augkit.eager`` returns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import eager, fn, pipeline_def, types
from augkit.errors import ArgumentError, OperatorError
from augkit.subscripts import newaxis, subscript
from tests import subscript_reference as ref

REFERENCE = np.load(ref.OUT)


def run_case(case: ref.Case, debug: bool) -> Any:
    @pipeline_def(batch_size=ref.BATCH, num_threads=1, device_id=None, debug=debug)
    def pipe() -> Any:
        return case(fn, types, newaxis, ref.inputs(fn, types))

    p = pipe()
    p.build()
    (out,) = p.run()
    return out


def assert_as_dali(name: str, out: Any) -> None:
    assert out.layout() == str(REFERENCE[f"layout/{name}"]), name
    for k in range(ref.BATCH):
        want = REFERENCE[f"out/{name}/{k}"]
        got = np.asarray(out.at(k))
        assert got.dtype == want.dtype and got.shape == want.shape, (name, k, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{name}, sample {k}")


@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
@pytest.mark.parametrize("name", sorted(ref.INDEXING))
def test_indexing_matches_dali(name: str, debug: bool) -> None:
    assert_as_dali(name, run_case(ref.INDEXING[name], debug))


# What augkit raises for each form DALI refuses: (class, words of the message).
ERRORS = {
    "out_of_range": (OperatorError, r"sample #0.*Index 5 is out of range for axis 0 of length 5"),
    "out_of_range_negative": (OperatorError, r"sample #0.*Index -7 is out of range for axis 0"),
    "node_out_of_range": (OperatorError, r"sample #0.*Index 5 is out of range.*length 5"),
    "too_many": (OperatorError, r"Too many indices \(4\) for a 3-D tensor"),
    "too_many_full": (OperatorError, r"Too many indices \(4\) for a 3-D tensor"),
    "zero_step": (OperatorError, r"sample #0.*Step cannot be zero.*axis 0"),
    "float_node": (OperatorError, r"sample #0.*Array index must be of integral type. Got: float"),
    "float": (ArgumentError, r"the index of axis 0 must be an integer.*got float 1.5"),
    "string": (ArgumentError, r"the index of axis 0 must be an integer.*got str 'a'"),
    "list": (ArgumentError, r"the index of axis 0 must be an integer.*got list \[1, 2\]"),
    "ellipsis": (ArgumentError, r"Ellipsis"),
    "names_for_some": (ArgumentError, r"New axis name must be specified for all axes or none"),
}


def test_every_refused_form_is_refused_by_dali_too() -> None:
    assert set(ERRORS) == set(ref.INDEXING_ERRORS)
    for name in ERRORS:
        assert f"error/{name}" in REFERENCE.files, name


@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_forms_are_clear_errors(name: str, debug: bool) -> None:
    kind, words = ERRORS[name]
    with pytest.raises(kind, match=words) as info:
        run_case(ref.INDEXING_ERRORS[name], debug)
    if kind is OperatorError:
        assert "TensorSubscript" in info.value.operator


def test_graph_time_errors_happen_while_defining() -> None:
    """A float index fails at the subscript itself, before the pipeline is built."""

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe() -> Any:
        x = fn.external_source(source=lambda: [np.zeros((2, 2), np.uint8)])
        with pytest.raises(ArgumentError, match=r"float 0\.5"):
            x[0.5]
        return x

    pipe().build()


def test_eager_subscript_matches_the_pipeline() -> None:
    images = list(ref.IMAGES)
    got = subscript(images, (slice(1, 3), slice(None), 0))
    pipe = run_case(ref.INDEXING["several_axes"], debug=False)
    for k in range(ref.BATCH):
        np.testing.assert_array_equal(got[k], pipe.at(k))
    index = eager.cast([np.array(v, np.int32) for v in ref.INDEX], dtype=types.INT32)
    got = subscript(images, (slice(None), index))
    pipe = run_case(ref.INDEXING["node_index_axis1"], debug=False)
    for k in range(ref.BATCH):
        np.testing.assert_array_equal(got[k], pipe.at(k))
    one = subscript(images[0], (newaxis, -1))
    assert one.shape == (1, 6, 3)


def test_newaxis_names_are_one_letter() -> None:
    with pytest.raises(ArgumentError, match="one letter"):
        newaxis("NN")
    assert repr(newaxis("N")) == "newaxis('N')"
