"""Python constants as operator inputs (DALI's ``types.Constant``): ``fn.full_like(x, 7)``,
``fn.reductions.std_dev(x, [100.0, 110.0, 120.0])``, in normal and debug mode and in
``augkit.eager``, with DALI's types (int -> int32, float -> float32; NumPy keeps its dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import ArgumentError, eager, fn, pipeline_def
from augkit.operators.constant import as_constant, is_constant

IMAGES = [np.full((2, 3), k, np.float32) for k in range(3)]
MODES = [pytest.param(False, id="normal"), pytest.param(True, id="debug")]


@pytest.mark.parametrize("debug", MODES)
def test_constants_are_the_same_for_every_sample(debug: bool) -> None:
    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1, debug=debug)
    def pipe() -> Any:
        x = fn.external_source(source=lambda: IMAGES)
        return (
            fn.full_like(x, 7),
            fn.full_like(x, [1.5, 2.5, 3.5]),
            fn.cast_like(x, np.uint8(0)),
            fn.reductions.std_dev(x, 1.0),
        )

    sevens, rows, cast, spread = pipe().run()
    for i in range(3):
        np.testing.assert_array_equal(sevens.at(i), np.full((2, 3), 7, np.float32))
        np.testing.assert_array_equal(rows.at(i), np.tile([1.5, 2.5, 3.5], (2, 1)))
        assert cast.at(i).dtype == np.uint8
        np.testing.assert_allclose(spread.at(i), abs(i - 1.0), rtol=1e-6)


def test_eager_takes_constants_beside_batches() -> None:
    out = eager.full_like(IMAGES[:2], 3)
    assert [o.tolist() for o in out] == [np.full((2, 3), 3.0).tolist()] * 2


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (7, np.int32),
        (2.5, np.float32),
        (True, np.bool_),
        ([1, 2], np.int32),
        ([1, 2.5], np.float32),
        (np.uint8(3), np.uint8),
        (np.arange(3, dtype=np.int16), np.int16),
    ],
)
def test_constant_types_are_dalis(value: Any, dtype: Any) -> None:
    assert is_constant(value)
    assert as_constant(value).dtype == np.dtype(dtype)


def test_a_list_of_arrays_is_a_batch_not_a_constant() -> None:
    assert not is_constant([np.zeros(2), np.ones(2)])
    assert not is_constant("text") and not is_constant([])


def test_an_int_beyond_int32_is_refused_by_name() -> None:
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe() -> Any:
        return fn.full_like(fn.external_source(source=lambda: IMAGES[:2]), 2**40)

    with pytest.raises(ArgumentError, match="does not fit int32"):
        pipe()


def test_a_list_constant_in_debug_mode_survives_the_second_iteration() -> None:
    """Debug mode reuses an operator made in the first iteration when its arguments are the
    same: a constant's NumPy value must compare as an array (it raised 'truth value of an array
    is ambiguous' in the second run())."""

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, debug=True)
    def pipe() -> Any:
        return fn.full_like(fn.external_source(source=lambda: IMAGES[:2]), [1.0, 2.0, 3.0])

    p = pipe()
    for _ in range(2):
        (out,) = p.run()
        np.testing.assert_array_equal(out.at(1), np.tile([1.0, 2.0, 3.0], (2, 1)))
