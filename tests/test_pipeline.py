"""Pipeline: DALI's three ways of defining one, its arguments, pruning, multiple input sets,
seeds and determinism, errors at build and at run."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from augkit import (
    ArgumentError,
    DeviceError,
    GraphError,
    OperatorError,
    Pipeline,
    TensorList,
    fn,
    ops,
    pipeline_def,
    types,
)
from augkit.backend import gpu_unavailable_reason


def _batch(n: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (6 + i, 8, 3), dtype=np.uint8) for i in range(n)]


class Legacy(Pipeline):
    """The legacy style: operators made in __init__, used in define_graph."""

    def __init__(self, batch_size, num_threads, device_id, seed=5):
        super().__init__(
            batch_size, num_threads, device_id, seed=seed, exec_async=False, exec_pipelined=False
        )
        self.source = ops.ExternalSource(source=lambda: _batch(batch_size), layout="HWC")
        self.angle = ops.random.Uniform(range=(-30.0, 30.0))
        self.coin = ops.random.CoinFlip(probability=0.5)

    def define_graph(self):
        images = self.source()
        return images, self.angle(), self.coin()


def test_legacy_subclass_runs_and_build_is_optional():
    pipe = Legacy(4, 2, 0)
    images, angles, coins = pipe.run()
    assert isinstance(images, TensorList) and len(images) == 4
    assert images.layout() == "HWC"
    assert angles.dtype == types.FLOAT and angles.shape() == [()] * 4
    assert all(-30 <= float(a) < 30 for a in angles.as_array())
    assert coins.dtype == types.INT32 and set(coins.as_array()) <= {0, 1}


def test_with_block_and_set_outputs():
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        images = fn.external_source(source=lambda: _batch(3), layout="HWC")
        flipped = fn.python_function(images, function=lambda im: np.ascontiguousarray(im[::-1]))
        pipe.set_outputs(images, flipped)
    pipe.build()
    images, flipped = pipe.run()
    np.testing.assert_array_equal(flipped.at(2), images.at(2)[::-1])


def test_pipeline_def_passes_function_and_pipeline_arguments():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def scaled(factor):
        values = fn.random.uniform(range=(0.0, 1.0), shape=(3,))
        return fn.python_function(values, function=lambda v: v * factor)

    pipe = scaled(10.0, batch_size=5, seed=3)
    assert pipe.batch_size == 5 and pipe.seed == 3
    (out,) = pipe.run()
    assert len(out) == 5 and out.as_array().max() > 1.0


def test_bare_pipeline_def_decorator():
    @pipeline_def
    def coins():
        return fn.random.coin_flip()

    (out,) = coins(batch_size=3, num_threads=1, device_id=None).run()
    assert len(out) == 3


def test_dali_constructor_arguments_are_accepted():
    pipe = Pipeline(
        8,
        2,
        0,
        42,
        True,
        3,
        True,
        0,
        False,
        -1,
        0,
        enable_memory_stats=True,
        enable_checkpointing=False,
        py_num_workers=2,
        py_start_method="spawn",
        py_callback_pickler=None,
        output_dtype=None,
        output_ndim=None,
        exec_dynamic=False,
    )
    assert (pipe.batch_size, pipe.num_threads, pipe.device_id, pipe.seed) == (8, 2, 0, 42)
    assert pipe.prefetch_queue_depth == 3 and pipe.py_num_workers == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"num_threads": -3}, "num_threads must be a positive integer"),
        ({"device_id": "cuda"}, "device_id must be"),
        ({"seed": -7}, "seed must be a non-negative integer or -1"),
        ({"prefetch_queue_depth": 0}, "prefetch_queue_depth must be >= 1"),
    ],
)
def test_bad_pipeline_arguments(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        Pipeline(**kwargs)


def test_unset_batch_size_is_an_error_at_build():
    pipe = Pipeline(num_threads=1)
    with pipe:
        pipe.set_outputs(fn.random.coin_flip())
    with pytest.raises(ArgumentError, match="batch_size must be set"):
        pipe.build()


def test_no_outputs_and_wrong_outputs():
    with pytest.raises(GraphError, match="override define_graph"):
        Pipeline(batch_size=1).build()

    class Wrong(Pipeline):
        def define_graph(self):
            return np.zeros(3)

    with pytest.raises(GraphError, match="output 0 is a ndarray, not the output of an operator"):
        Wrong(batch_size=1).build()


def test_unknown_argument_suggests_the_nearest_name():
    with pytest.raises(
        ArgumentError, match=r"unknown argument 'probabilty'\. Did you mean 'probability'"
    ):
        fn.random.coin_flip(probabilty=0.3)


def test_out_of_range_argument_names_operator_and_range():
    with pytest.raises(
        ArgumentError,
        match=r"random.CoinFlip: argument 'probability': must be "
        r"between 0.0 and 1.0, got 2",
    ):
        ops.random.CoinFlip(probability=2)


def test_multiple_input_sets_run_once_per_element():
    class Twice(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None, seed=1)
            self.a = ops.ExternalSource(source=lambda: [np.full(2, 1.6), np.full(2, 1.6)])
            self.b = ops.ExternalSource(source=lambda: [np.full(2, -3.5), np.full(2, -3.5)])
            self.cast = ops.Cast(dtype=types.INT32)

        def define_graph(self):
            outs = self.cast([self.a(), self.b()])
            assert isinstance(outs, list) and len(outs) == 2
            return tuple(outs)

    a, b = Twice().run()
    assert a.dtype == types.INT32
    assert a.at(0).tolist() == [2, 2] and b.at(1).tolist() == [-4, -4]


def test_multiple_input_sets_with_several_outputs_group_by_output():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    reader = ops.ExternalSource(source=lambda: [np.zeros(1)])
    with pipe:
        split = ops.PythonFunction(function=lambda x: (x, x + 1), num_outputs=2)
        a = reader()
        with pytest.raises(ArgumentError, match="multiple input sets"):
            split([a, a])


def test_multiple_input_sets_of_different_lengths_are_refused():
    cast = ops.Cast(dtype=types.INT32)
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: [np.zeros(1)])
        b = fn.external_source(source=lambda: [np.zeros(1)])
        with pytest.raises(ArgumentError, match=r"same length, got lengths \[1, 2\]"):
            ops.PythonFunction(function=lambda x, y: x)([a], [a, b])
        assert len(cast([a, b])) == 2


def test_unused_branches_are_pruned_and_preserve_keeps_them():
    calls = {"unused": 0, "preserved": 0}

    def counter(key):
        def count(x):
            calls[key] += 1
            return x

        return count

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1, exec_async=False)
    with pipe:
        x = fn.random.uniform()
        fn.python_function(x, function=counter("unused"), preserve=False)
        fn.python_function(x, function=counter("preserved"), preserve=True)
        pipe.set_outputs(x)
    pipe.run()
    assert calls == {"unused": 0, "preserved": 2}


def _random_pipeline(seed: int, threads: int) -> Pipeline:
    @pipeline_def(batch_size=6, num_threads=threads, device_id=None, seed=seed)
    def definition():
        a = fn.random.uniform(range=(0.0, 1.0), shape=(4,))
        b = fn.random.coin_flip(probability=fn.random.uniform(range=(0.0, 1.0)))
        c = fn.python_function(a, function=lambda v: v + np.random.rand())
        return a, b, c

    return definition()


def _run_n(pipe: Pipeline, n: int) -> list[list[np.ndarray]]:
    return [[out.as_array() for out in pipe.run()] for _ in range(n)]


def test_same_seed_same_outputs_whatever_num_threads():
    one = _run_n(_random_pipeline(11, 1), 3)
    four = _run_n(_random_pipeline(11, 4), 3)
    for x, y in zip(one, four, strict=True):
        for a, b in zip(x, y, strict=True):
            np.testing.assert_array_equal(a, b)
    other = _run_n(_random_pipeline(12, 1), 1)
    assert not np.array_equal(one[0][0], other[0][0])
    # successive iterations differ
    assert not np.array_equal(one[0][0], one[1][0])


def test_random_seed_when_none_given():
    a = _run_n(_random_pipeline(-1, 1), 1)[0][0]
    b = _run_n(_random_pipeline(-1, 1), 1)[0][0]
    assert not np.array_equal(a, b)


def test_explicit_operator_seed_wins():
    def make(pipeline_seed):
        pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=pipeline_seed)
        with pipe:
            pipe.set_outputs(fn.random.uniform(seed=77), fn.random.uniform())
        return pipe

    a1, b1 = make(1).run()
    a2, b2 = make(2).run()
    np.testing.assert_array_equal(a1.as_array(), a2.as_array())
    assert not np.array_equal(b1.as_array(), b2.as_array())


def test_gpu_operator_without_gpu_fails_at_build_with_reason():
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: the no-GPU error cannot be shown here")
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros(3)] * 2)
        pipe.set_outputs(fn.python_function(x, function=lambda v: v, device="gpu"))
    with pytest.raises(DeviceError, match=r"PythonFunction_\d+ \(device='gpu'\) needs a GPU"):
        pipe.build()


def test_cpu_pipeline_with_device_id_zero_runs_without_gpu():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        pipe.set_outputs(fn.random.uniform())
    assert len(pipe.run()[0]) == 2


def test_schedule_run_and_outputs():
    pipe = _random_pipeline(3, 1)
    reference = _run_n(_random_pipeline(3, 1), 2)
    pipe.schedule_run()
    pipe.schedule_run()
    first = [o.as_array() for o in pipe.outputs()]
    second = [o.as_array() for o in pipe.outputs()]
    np.testing.assert_array_equal(first[0], reference[0][0])
    np.testing.assert_array_equal(second[0], reference[1][0])
    with pytest.raises(GraphError, match="without a schedule_run"):
        pipe.outputs()


def test_error_at_run_leaves_pipeline_usable():
    state = {"fail": True}

    def flaky(x):
        if state["fail"]:
            raise ValueError("bad sample")
        return x

    pipe = Pipeline(batch_size=2, num_threads=2, device_id=None, seed=1, exec_async=False)
    with pipe:
        pipe.set_outputs(fn.python_function(fn.random.uniform(), function=flaky))
    with pytest.raises(OperatorError, match="ValueError: bad sample"):
        pipe.run()
    state["fail"] = False
    assert len(pipe.run()[0]) == 2


def test_external_source_iterable_stops_and_cycles():
    data = [[np.zeros(1)], [np.ones(1)]]
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=data))
    pipe.run()
    pipe.run()
    with pytest.raises(StopIteration):
        pipe.run()
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=data, cycle=True))
    values = [float(pipe.run()[0].at(0)[0]) for _ in range(3)]
    assert values == [0.0, 1.0, 0.0]


def test_epoch_needs_a_reader():
    pipe = _random_pipeline(1, 1)
    with pytest.raises(GraphError, match="has no reader"):
        list(pipe)


def test_reader_meta_says_what_dalis_iterators_size_an_epoch_with():
    from augkit import fn, pipeline_def

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def sharded():
        _, labels = fn.readers.file(
            file_root=str(pathlib.Path(__file__).parents[1] / "data" / "images"),
            shard_id=1,
            num_shards=2,
            pad_last_batch=True,
            name="Reader",
        )
        return labels

    pipe = sharded()
    meta = pipe.reader_meta("Reader")
    assert meta == {
        "epoch_size": 15,
        "epoch_size_padded": 16,  # shards of 7 and 8, each padded to 8
        "number_of_shards": 2,
        "shard_id": 1,
        "pad_last_batch": True,
        "stick_to_shard": False,
        "shuffled": False,
        "skips_samples": False,
    }
    assert pipe.reader_meta() == {"Reader": meta}
    pipe.close()


def test_draws_are_what_the_random_operators_gave_each_sample():
    from augkit import fn, pipeline_def

    image = np.zeros((6, 8, 3), np.uint8)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=9)
    def augmented():
        images = fn.external_source(source=lambda: [image] * 4, batch=True, layout="HWC")
        angle = fn.random.uniform(range=(-30, 30))
        coin = fn.random.coin_flip()
        turned = fn.rotate(images, angle=angle, keep_size=True, name="turn")
        flipped = fn.flip(turned, horizontal=coin, name="mirror")
        other = fn.brightness(images, brightness=fn.random.uniform(range=(0.5, 1.5)), name="b")
        return flipped, other

    pipe = augmented()
    pipe.run()
    records = pipe.draws("mirror")
    assert len(records) == 4 and set(records[0]) == {"turn.angle", "mirror.horizontal"}
    angles = pipe.value(pipe.operators()[1].outputs[0].name)  # the uniform draw's batch
    assert [r["turn.angle"] for r in records] == [float(angles.at(i)) for i in range(4)]
    assert all(-30 <= r["turn.angle"] <= 30 and r["mirror.horizontal"] in (0, 1) for r in records)
    assert set(pipe.draws()[0]) == {"turn.angle", "mirror.horizontal", "b.brightness"}
    # The same draws again when the same operators rerun on the same batch.
    pipe.rerun(["turn"])
    assert pipe.draws("mirror") == records
    with pytest.raises(GraphError, match="no node named 'mirrorr'"):
        pipe.draws("mirrorr")
    pipe.close()


def test_dalis_experimental_pipeline_def_import_answers():
    """DALI's EfficientNet example imports pipeline_def from nvidia.dali.pipeline.experimental
    (issue 25): the same import works on augkit, normal and debug mode alike."""
    from augkit import fn
    from augkit.pipeline import pipeline_def as plain
    from augkit.pipeline.experimental import pipeline_def

    assert pipeline_def is plain

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=4)
    def draws():
        return fn.random.uniform(range=(0, 1))

    normal = draws().run()[0].as_array()
    debug = draws(debug=True).run()[0].as_array()
    assert (normal == debug).all()
