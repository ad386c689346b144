"""Batch kernels (issue 11): where a loop over samples is waste, an operator computes a dense
batch (one array) at once. They must give exactly what the per-sample kernels give, and a
random operator's draws for a sample must not depend on the other samples of the batch.
"""

from __future__ import annotations

import numpy as np
import pytest

from augkit import eager, fn, pipeline_def, types
from augkit.operators.registry import REGISTRY
from augkit.tensors import TensorList
from tests.operator_cases import case


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array


def _dense(array: np.ndarray, layout: str = "") -> TensorList:
    """A batch kept as one array (what batch kernels work on)."""
    return TensorList.from_array(_read_only(array), layout)


def _separate(array: np.ndarray, layout: str = "") -> TensorList:
    """The same samples as separate arrays (what per-sample kernels work on)."""
    return TensorList([_read_only(s) for s in array], layout)


def _same(dense_out: TensorList, separate_out: TensorList) -> None:
    assert dense_out._dense is not None, "the batch kernel did not run"
    assert separate_out._dense is None, "the per-sample kernel did not run"
    assert dense_out.dtype == separate_out.dtype and dense_out.layout() == separate_out.layout()
    for i in range(len(separate_out)):
        got, want = dense_out.at(i), separate_out.at(i)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"sample {i}")


RNG = np.random.default_rng(11)
IMAGES = RNG.integers(0, 256, (6, 5, 7, 3), dtype=np.uint8)
FLOATS = RNG.normal(0, 200, (6, 4, 3)).astype(np.float32)


@pytest.mark.parametrize("layout", ["HWC", "CHW", ""])
def test_flip_of_a_dense_batch_equals_flip_per_sample(layout: str) -> None:
    flags = {
        "horizontal": [np.array(v, np.int32) for v in (1, 0, 1, 1, 0, 0)],
        "vertical": [np.array(v, np.int32) for v in (0, 0, 1, 1, 1, 0)],
    }
    outs = [eager.flip(make(IMAGES, layout), **flags, seed=1) for make in (_dense, _separate)]
    _same(*outs)
    constant = [eager.flip(make(IMAGES, layout), vertical=1) for make in (_dense, _separate)]
    _same(*constant)


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT16, types.FLOAT16, types.BOOL])
def test_cast_of_a_dense_batch_equals_cast_per_sample(dtype: types.DALIDataType) -> None:
    _same(*[eager.cast(make(FLOATS), dtype=dtype) for make in (_dense, _separate)])


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "==", "<", ">="])
def test_arithmetic_of_dense_batches_equals_arithmetic_per_sample(op: str) -> None:
    scalars = RNG.uniform(-3, 3, (6, 1)).astype(np.float32)

    def define(a: TensorList, b: TensorList, s: TensorList) -> tuple[TensorList, ...]:
        @pipeline_def(batch_size=6, num_threads=2, device_id=None, seed=1, debug=True)
        def expressions():
            x, y, k = (fn.external_source(source=lambda v=v: v) for v in (a, b, s))
            apply = {
                "+": lambda p, q: p + q,
                "-": lambda p, q: p - q,
                "*": lambda p, q: p * q,
                "/": lambda p, q: p / q,
                "==": lambda p, q: p == q,
                "<": lambda p, q: p < q,
                ">=": lambda p, q: p >= q,
            }[op]
            return apply(x, y), apply(x, k), apply(k, x), apply(x, 2)

        pipe = expressions()
        try:
            return pipe.run()
        finally:
            pipe.close()

    other = FLOATS[::-1].copy()
    dense = define(_dense(FLOATS), _dense(other), _dense(scalars))
    separate = define(_separate(FLOATS), _separate(other), _separate(scalars))
    for got, want in zip(dense, separate, strict=True):
        _same(got, want)


def test_a_samples_draws_do_not_depend_on_the_batch_it_is_in() -> None:
    """Sample k's values are keyed by (operator seed, shard, iteration, k) alone: the first
    four samples of a batch of 8 are those of a batch of 4."""
    draws = {}
    for size in (4, 8):

        @pipeline_def(batch_size=size, num_threads=1, device_id=None, seed=42)
        def random_values():
            return (
                fn.random.uniform(range=(-5, 5), shape=[3]),
                fn.random.uniform(values=[1.0, 2.0, 7.0], shape=[2]),
                fn.random.coin_flip(probability=0.4, shape=[5]),
            )

        pipe = random_values()
        draws[size] = [pipe.run() for _ in range(2)]
        pipe.close()
    for it in range(2):
        for small, large in zip(draws[4][it], draws[8][it], strict=True):
            np.testing.assert_array_equal(small.as_array(), large.as_array()[:4])


def test_every_random_operator_draws_a_whole_batch_at_once() -> None:
    """Random operators have no per-sample kernel: they draw the batch in one call, a dense
    batch (what makes the per-sample overhead small; benchmarks/ measures it beside DALI)."""
    names = [name for name, schema in REGISTRY.items() if schema.role == "random"]
    assert names, "no random operators registered"
    for name in names:
        schema = REGISTRY[name]
        out = eager.call(schema, batch_size=5, seed=3, **case(name).required)
        assert isinstance(out, list) and len(out) == 5, name
