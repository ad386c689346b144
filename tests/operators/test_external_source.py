"""``fn.external_source`` as DALI 2.x defines it (issue 11, part 4): per-sample mode with
``SampleInfo``, batch mode with the iteration / ``BatchInfo``, iterables and ``cycle``, epochs
ended by ``StopIteration``, ``parallel=True`` in worker processes (the same outputs as in this
process), ``feed_input`` without a source, positional arguments, a list of one node, layouts,
dense batches and data kinds. Where a test says "DALI gives", the values were measured on DALI
2.4 (CPU) with the same code."""

from __future__ import annotations

import os
import pathlib
from typing import Any

import numpy as np
import pytest

from augkit import (
    ArgumentError,
    OperatorError,
    Pipeline,
    Tensor,
    TensorList,
    eager,
    fn,
    ops,
    pipeline_def,
    types,
)
from augkit.types import BatchInfo, SampleInfo

IMAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "images"


def _pipe(batch_size: int = 4, **pipeline: Any) -> Pipeline:
    return Pipeline(batch_size=batch_size, num_threads=1, device_id=None, seed=1, **pipeline)


def _source_pipe(batch_size: int = 4, pipeline: dict[str, Any] | None = None, **kwargs: Any):
    """A pipeline whose outputs are the external source's (one or a list of them)."""
    pipe = _pipe(batch_size, **(pipeline or {}))
    with pipe:
        out = fn.external_source(**kwargs)
        pipe.set_outputs(*(out if isinstance(out, list) else [out]))
    return pipe


def _epoch(pipe: Pipeline, most: int = 20) -> list[tuple[TensorList, ...]]:
    """run() until the source's StopIteration (DALI's loop), then reset()."""
    batches = []
    try:
        while len(batches) < most:
            batches.append(pipe.run())
    except StopIteration:
        pipe.reset()
        return batches
    raise AssertionError(f"no StopIteration in {most} batches")


def _values(batches: list[tuple[TensorList, ...]]) -> list[list[list[Any]]]:
    return [[b.as_array().tolist() for b in outputs] for outputs in batches]


ROWS = np.arange(10 * 3, dtype=np.int16).reshape(10, 3)


def image_and_label(info: SampleInfo) -> tuple[np.ndarray, np.ndarray]:
    """A per-sample source of two outputs: row ``idx_in_epoch`` and its number; 10 samples."""
    if info.idx_in_epoch >= len(ROWS):
        raise StopIteration
    return ROWS[info.idx_in_epoch], np.int32(info.idx_in_epoch)


def numbered(info: SampleInfo) -> np.ndarray:
    """Every field of the SampleInfo, as one sample; 7 samples per epoch."""
    if info.idx_in_epoch >= 7:
        raise StopIteration
    return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx])


# --- per-sample mode (batch=False) ------------------------------------------------------------


def test_per_sample_source_of_two_outputs_gives_batch_size_samples_of_the_right_rows():
    """The fault: batch=False was ignored, so ``f(i) -> (image, label)`` with num_outputs=2 was
    taken as two whole batches (the rows of one image as samples)."""
    pipe = _source_pipe(source=image_and_label, num_outputs=2, batch=False)
    images, labels = pipe.run()
    assert len(images) == len(labels) == 4
    np.testing.assert_array_equal(images.as_array(), ROWS[:4])
    assert labels.as_array().tolist() == [0, 1, 2, 3] and labels.dtype == types.INT32
    images, labels = pipe.run()
    np.testing.assert_array_equal(images.as_array(), ROWS[4:8])


def test_sample_info_numbers_samples_batches_and_epochs_as_dali_does():
    """7 samples, batch 4: the second batch is cut short by StopIteration and dropped; after
    reset() the next epoch starts from idx_in_epoch 0 with epoch_idx 1 (DALI makes exactly
    these calls)."""
    calls = []

    def source(info: SampleInfo) -> np.ndarray:
        calls.append((info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx))
        return numbered(info)

    pipe = _source_pipe(source=source, batch=False)
    first, second = _epoch(pipe), _epoch(pipe)
    assert _values(first) == [[[[0, 0, 0, 0], [1, 1, 0, 0], [2, 2, 0, 0], [3, 3, 0, 0]]]]
    assert _values(second) == [[[[0, 0, 0, 1], [1, 1, 0, 1], [2, 2, 0, 1], [3, 3, 0, 1]]]]
    per_epoch = [(0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 0, 1), (5, 1, 1), (6, 2, 1)]
    per_epoch.append((7, 3, 1))  # the call that raised StopIteration
    assert calls == [(*c, 0) for c in per_epoch] + [(*c, 1) for c in per_epoch]


def test_after_stop_iteration_run_raises_again_without_asking_the_source():
    calls = []

    def source(info: SampleInfo) -> np.ndarray:
        calls.append(info.idx_in_epoch)
        if info.idx_in_epoch >= 2:
            raise StopIteration
        return np.zeros(1)

    pipe = _source_pipe(batch_size=2, source=source, batch=False)
    pipe.run()
    for _ in range(3):
        with pytest.raises(StopIteration):
            pipe.run()
    assert calls == [0, 1, 2]
    pipe.reset()
    assert len(pipe.run()[0]) == 2 and calls[-2:] == [0, 1]


def test_per_sample_callable_without_arguments_is_called_batch_size_times_in_order():
    counter = iter(range(100))
    pipe = _source_pipe(batch_size=3, source=lambda: np.int64(next(counter)), batch=False)
    assert pipe.run()[0].as_array().tolist() == [0, 1, 2]
    assert pipe.run()[0].as_array().tolist() == [3, 4, 5]


def test_an_iterable_in_per_sample_mode_gives_one_sample_per_next():
    """DALI: with batch=False each next() is one sample (here 5 samples: one batch of 2, one of
    2, and the last one cut short)."""
    data = [np.full((2,), k, np.uint8) for k in range(5)]
    pipe = _source_pipe(batch_size=2, source=data, batch=False)
    assert [v[0] for v in _values(_epoch(pipe))] == [[[0, 0], [1, 1]], [[2, 2], [3, 3]]]


# --- batch mode ------------------------------------------------------------------------------


def test_batch_callable_gets_the_iteration_within_the_epoch_or_a_batch_info():
    seen = []

    def by_iteration(iteration: int) -> list[np.ndarray]:
        if iteration == 2:
            raise StopIteration
        return [np.full((1,), iteration, np.int32)] * 2

    def by_info(info: BatchInfo) -> list[np.ndarray]:
        seen.append(info)
        if info.iteration == 2:
            raise StopIteration
        return [np.full((1,), info.iteration, np.int32)] * 2

    pipe = _source_pipe(batch_size=2, source=by_iteration)
    assert _values(_epoch(pipe)) == _values(_epoch(pipe)) == [[[[0], [0]]], [[[1], [1]]]]
    pipe = _source_pipe(batch_size=2, source=by_info, batch_info=True)
    _epoch(pipe)
    _epoch(pipe)
    assert seen == [BatchInfo(i, e) for e in (0, 1) for i in (0, 1, 2)]


def test_a_parameter_with_a_default_is_not_given_the_iteration():
    """augkit's rule (DALI would call ``lambda b=b: b`` with the iteration number)."""
    batch = [np.ones(2)] * 2
    pipe = _source_pipe(batch_size=2, source=lambda b=batch: b)
    assert pipe.run()[0].as_array().tolist() == [[1, 1], [1, 1]]


def test_a_batch_larger_than_batch_size_is_an_error_and_a_smaller_one_a_smaller_batch():
    sizes = iter([5, 3, 0, 4])
    pipe = _source_pipe(source=lambda: [np.zeros(2)] * next(sizes))
    with pytest.raises(OperatorError, match=r"returned a batch of 5 samples, more than the "):
        pipe.run()
    assert len(pipe.run()[0]) == 3  # DALI's variable batch size
    with pytest.raises(OperatorError, match="the batch is empty"):
        pipe.run()
    assert len(pipe.run()[0]) == 4  # still usable


def test_a_batch_given_as_one_array_stays_one_read_only_copy():
    array = np.arange(4 * 2 * 3, dtype=np.uint8).reshape(4, 2, 3)
    pipe = _source_pipe(source=lambda: array, layout="HW")
    (batch,) = pipe.run()
    assert batch._dense is not None and batch.shape() == [(2, 3)] * 4
    assert not batch._dense.flags.writeable and not np.shares_memory(batch._dense, array)
    array[0] = 99  # the caller's own array: the batch does not change
    assert int(batch.at(0).max()) == 5
    assert batch.layout() == "HW" and batch.kind.name == "image"


def test_a_list_of_samples_is_copied_and_read_only():
    sample = np.zeros((2, 2), np.float32)
    pipe = _source_pipe(batch_size=1, source=lambda: [sample])
    (batch,) = pipe.run()
    sample += 1
    assert float(batch.at(0).sum()) == 0.0
    with pytest.raises(ValueError, match="read-only"):
        batch._samples[0][0, 0] = 5


def test_num_outputs_one_is_a_list_of_one_node_and_takes_a_tuple_of_one_batch():
    pipe = _pipe(batch_size=2)
    with pipe:
        out = fn.external_source(source=lambda: ([np.zeros(3), np.ones(3)],), num_outputs=1)
        assert isinstance(out, list) and len(out) == 1
        pipe.set_outputs(*out)
    (batch,) = pipe.run()
    assert batch.as_array().tolist() == [[0, 0, 0], [1, 1, 1]]


def test_source_and_num_outputs_may_be_given_positionally():
    def pair(iteration: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [np.full(2, iteration)], [np.full(1, -iteration)]

    pipe = _pipe(batch_size=1)
    with pipe:
        images, labels = fn.external_source(pair, 2)
        single = ops.ExternalSource(lambda: [np.zeros(1)])()
        assert not isinstance(single, list)
        pipe.set_outputs(images, labels, single)
    pipe.run()
    images, labels, single = pipe.run()
    assert images.at(0).tolist() == [1, 1] and labels.at(0).tolist() == [-1]
    with pytest.raises(ArgumentError, match="takes source, num_outputs; got 3 positional"):
        fn.external_source(pair, 2, 3)


def test_several_outputs_must_have_the_same_number_of_samples():
    pipe = _source_pipe(
        source=lambda: ([np.zeros(1)] * 2, [np.zeros(1)] * 3), num_outputs=2, name="Src"
    )
    with pytest.raises(OperatorError, match=r"Src.*batches of different sizes .*\[2, 3\]"):
        pipe.run()


# --- iterables, generator functions, cycle ---------------------------------------------------


def _generator():
    for k in range(3):
        yield [np.full((1,), k, np.int8)]


def _batches_of_four():
    for k in range(3):
        yield [np.full((1,), k, np.int8)] * 4


def test_cycle_raise_gives_epochs_of_a_generator_function():
    pipe = _source_pipe(batch_size=1, source=_generator, cycle="raise")
    assert _values(_epoch(pipe)) == _values(_epoch(pipe)) == [[[[0]]], [[[1]]], [[[2]]]]


def test_cycle_quiet_restarts_and_no_cycle_ends_the_data():
    pipe = _source_pipe(batch_size=1, source=_generator, cycle=True)
    assert [int(pipe.run()[0].at(0)[0]) for _ in range(5)] == [0, 1, 2, 0, 1]
    pipe = _source_pipe(batch_size=1, source=_generator)
    assert len(_epoch(pipe)) == 3
    assert _epoch(pipe) == []  # a generator cannot start again without cycle (DALI's rule)


def test_reset_in_the_middle_of_an_epoch_starts_cycling_data_again():
    """augkit's reset() ends the epoch (DALI's does nothing before a StopIteration)."""
    pipe = _source_pipe(batch_size=1, source=_generator, cycle="raise")
    pipe.run()
    pipe.run()
    pipe.reset()
    assert [v[0][0][0] for v in _values(_epoch(pipe))] == [0, 1, 2]
    pipe.reset()  # at the start of an epoch: nothing changes
    assert int(pipe.run()[0].at(0)[0]) == 0


def test_cycling_through_no_data_at_all_ends_at_once():
    pipe = _source_pipe(batch_size=1, source=[], cycle=True)
    with pytest.raises(StopIteration):
        pipe.run()


def test_cycle_needs_data_that_can_start_again():
    with pytest.raises(ArgumentError, match="cannot cycle through a generator or another"):
        fn.external_source(source=_generator(), cycle="raise")
    with pytest.raises(ArgumentError, match="needs an iterable or a generator function"):
        fn.external_source(source=lambda: [np.zeros(1)], cycle=True)
    with pytest.raises(ArgumentError, match="'cycle': must be True, False, 'no', 'quiet'"):
        fn.external_source(source=[], cycle="sometimes")


class ExternalInputIterator:
    """An iterator in the manner of DALI's "ExternalSource operator" tutorial, over
    data/images: batches of
    (encoded files, labels); the last batch of an epoch is shorter, and the end of the files
    is a StopIteration (it starts again itself on the next ``next()``)."""

    def __init__(self, batch_size: int) -> None:
        self.files = sorted(IMAGES.glob("*/*.jpg"))
        self.classes = sorted({p.parent.name for p in self.files})
        self.batch_size = batch_size

    def __iter__(self) -> ExternalInputIterator:
        self.i = 0
        return self

    def __next__(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        if self.i >= len(self.files):
            self.__iter__()
            raise StopIteration
        chosen = self.files[self.i : self.i + self.batch_size]
        self.i += len(chosen)
        jpegs = [np.fromfile(p, dtype=np.uint8) for p in chosen]
        labels = [np.array([self.classes.index(p.parent.name)], np.uint8) for p in chosen]
        return jpegs, labels


def test_the_dali_tutorial_iterator_gives_whole_epochs_with_a_shorter_last_batch():
    source = ExternalInputIterator(batch_size=4)
    pipe = _pipe(batch_size=4)
    with pipe:
        jpegs, labels = fn.external_source(source=source, num_outputs=2, dtype=types.UINT8)
        pipe.set_outputs(fn.decoders.image(jpegs, output_type=types.RGB), labels)
    for _ in range(2):
        batches = _epoch(pipe)
        assert [len(images) for images, _ in batches] == [4, 4, 4, 3]
        labels = [int(v) for _, batch in batches for v in batch.as_array().ravel()]
        assert labels == [source.classes.index(p.parent.name) for p in source.files]
        assert batches[0][0].layout() == "HWC" and batches[0][0].at(0).ndim == 3


def test_for_loop_over_a_pipeline_with_only_an_external_source_walks_its_epoch():
    """DALI's epoch loop over a source (no reader): it ends at the source's StopIteration,
    then the next loop is the next epoch."""
    source = ExternalInputIterator(batch_size=4)
    pipe = _pipe(batch_size=4)
    with pipe:
        _, labels = fn.external_source(source=source, num_outputs=2, dtype=types.UINT8)
        pipe.set_outputs(labels)
    for _ in range(2):
        sizes = [len(labels) for (labels,) in pipe]
        assert sizes == [4, 4, 4, 3]


def test_for_loop_with_a_reader_stops_at_the_sources_stop_iteration():
    """``for out in pipe`` walks the reader's epoch, or less when an external source ends its
    own epoch first; the next loop starts both anew."""
    pipe = _pipe(batch_size=4)
    with pipe:
        _, labels = fn.readers.file(file_root=str(IMAGES))
        pipe.set_outputs(labels, fn.external_source(source=_batches_of_four, cycle="raise"))
    for _ in range(2):
        seen = [int(extra.at(0)[0]) for _, extra in pipe]
        assert seen == [0, 1, 2]


def _pipe_with_reader(**kwargs: Any) -> Pipeline:
    pipe = _pipe(batch_size=4)
    with pipe:
        _, labels = fn.readers.file(file_root=str(IMAGES))
        pipe.set_outputs(labels, fn.external_source(**kwargs))
    return pipe


def test_reset_starts_the_next_epoch_of_a_source_that_goes_with_a_reader():
    """The reader's epoch (4 batches of 15 files) ends first; the source's iteration counts
    from 0 again in the next epoch, in step with the reader."""
    pipe = _pipe_with_reader(source=lambda i: [np.full((1,), i, np.int32)] * 4)
    for _ in range(2):
        assert [int(extra.at(0)[0]) for _, extra in pipe] == [0, 1, 2, 3]


# --- parallel=True ---------------------------------------------------------------------------


def _parallel_and_in_process(**kwargs: Any) -> tuple[list[Any], list[Any]]:
    """Two epochs of the same source, in this process and in 2 worker processes."""
    runs = []
    for parallel in (False, True):
        extra = {"parallel": True, **kwargs} if parallel else dict(kwargs)
        if not parallel:
            extra.pop("prefetch_queue_depth", None)
        pipe = _source_pipe(pipeline={"py_num_workers": 2}, **extra)
        try:
            runs.append([_values(_epoch(pipe)) for _ in range(2)])
        finally:
            pipe.close()
    return runs[0], runs[1]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_parallel_per_sample_source_gives_the_in_process_outputs(depth):
    here, there = _parallel_and_in_process(
        source=image_and_label, num_outputs=2, batch=False, prefetch_queue_depth=depth
    )
    assert there == here
    assert len(here[0]) == 2 and here[0][1][1] == [4, 5, 6, 7]  # two whole batches of 10


@pytest.mark.parametrize("depth", [1, 3])
def test_parallel_batch_source_gives_the_in_process_outputs(depth):
    def batches(info: BatchInfo) -> list[np.ndarray]:
        if info.iteration >= 3:
            raise StopIteration
        return [np.full((2,), info.iteration * 10 + info.epoch_idx, np.int32)] * 4

    here, there = _parallel_and_in_process(
        source=batches, batch_info=True, prefetch_queue_depth=depth
    )
    assert there == here and [b[0][0] for b in here[1]] == [[1, 1], [11, 11], [21, 21]]


def test_parallel_source_runs_in_the_worker_processes():
    pipe = _source_pipe(
        pipeline={"py_num_workers": 2},
        source=lambda info: np.int64(os.getpid()),
        batch=False,
        parallel=True,
    )
    try:
        pids = set(pipe.run()[0].as_array().tolist())
    finally:
        pipe.close()
    assert len(pids) == 2 and os.getpid() not in pids


def test_parallel_iterable_in_batch_mode_gives_the_in_process_outputs():
    here, there = _parallel_and_in_process(source=_generator, cycle="raise")
    assert there == here == [[[[[0]]], [[[1]]], [[[2]]]]] * 2


def _parallel(source: Any, **kwargs: Any) -> Any:
    return fn.external_source(source=source, parallel=True, **kwargs)


def test_parallel_sources_follow_dalis_restrictions():
    with pytest.raises(ArgumentError, match="must take exactly one argument: a SampleInfo"):
        _parallel(lambda: np.zeros(1), batch=False)
    with pytest.raises(ArgumentError, match="with an iterable must run in batch mode"):
        _parallel([np.zeros(1)], batch=False)
    with pytest.raises(ArgumentError, match="with a generator function must run in batch mode"):
        _parallel(_generator, batch=False)
    with pytest.raises(ArgumentError, match="no_copy cannot be False with parallel=True"):
        _parallel(numbered, batch=False, no_copy=False)
    with pytest.raises(ArgumentError, match="prefetch_queue_depth is valid only for parallel"):
        fn.external_source(source=numbered, batch=False, prefetch_queue_depth=2)


def test_parallel_needs_a_source_when_the_pipeline_is_built():
    pipe = _pipe()
    with pipe:
        pipe.set_outputs(ops.ExternalSource(parallel=True)())
    with pytest.raises(ArgumentError, match="parallel=True runs the source in worker"):
        pipe.build()


def failing(info: SampleInfo) -> np.ndarray:
    if info.idx_in_epoch == 5:
        raise ValueError("no such sample")
    return np.zeros(2)


def test_an_error_in_a_worker_names_the_sample_and_the_pipeline_goes_on():
    pipe = _source_pipe(pipeline={"py_num_workers": 2}, source=failing, batch=False, parallel=True)
    try:
        pipe.run()
        with pytest.raises(OperatorError) as info:
            pipe.run()
        message = str(info.value)
        assert message.startswith("operator ExternalSource_")
        assert "(source failing), sample #1: the source raised ValueError: no such" in message
        assert "SampleInfo(idx_in_epoch=5, idx_in_batch=1, iteration=1, epoch_idx=0)" in message
        assert isinstance(info.value.__cause__, ValueError)
        assert len(pipe.run()[0]) == 4  # the next batch
    finally:
        pipe.close()


def test_a_worker_that_dies_is_an_operator_error_and_the_next_run_works(tmp_path):
    marker = tmp_path / "died"

    def dies_once(info: SampleInfo) -> np.ndarray:
        if info.idx_in_epoch == 6 and not marker.exists():
            marker.write_text("x")
            os._exit(3)
        return np.full(1, info.idx_in_epoch)

    pipe = _source_pipe(
        pipeline={"py_num_workers": 2}, source=dies_once, batch=False, parallel=True
    )
    try:
        assert pipe.run()[0].as_array().ravel().tolist() == [0, 1, 2, 3]
        with pytest.raises(OperatorError, match=r"sample #2: worker process failed: .*exit"):
            pipe.run()
        assert pipe.run()[0].as_array().ravel().tolist() == [8, 9, 10, 11]
    finally:
        pipe.close()


class ExternalInputCallable:
    """A callable in the manner of DALI's "Parallel External Source" tutorial's, over
    data/images: the encoded
    file and label of sample ``idx_in_epoch``; only whole batches (StopIteration after them)."""

    def __init__(self, batch_size: int) -> None:
        self.files = sorted(IMAGES.glob("*/*.jpg"))
        self.classes = sorted({p.parent.name for p in self.files})
        self.full_iterations = len(self.files) // batch_size

    def __call__(self, sample_info: SampleInfo) -> tuple[np.ndarray, np.ndarray]:
        if sample_info.iteration >= self.full_iterations:
            raise StopIteration
        path = self.files[sample_info.idx_in_epoch]
        return np.fromfile(path, dtype=np.uint8), np.int32([self.classes.index(path.parent.name)])


def test_the_dali_parallel_tutorial_pipeline_gives_the_in_process_images():
    runs = {}
    for parallel in (False, True):

        @pipeline_def(batch_size=4, num_threads=2, device_id=None, py_num_workers=3)
        def define():
            jpegs, labels = fn.external_source(
                source=ExternalInputCallable(4),
                num_outputs=2,
                batch=False,
                parallel=parallel,  # noqa: B023 (the pipeline is built and run in this loop)
                dtype=[types.UINT8, types.INT32],
            )
            return fn.resize(fn.decoders.image(jpegs), resize_x=32, resize_y=24), labels

        pipe = define()
        try:
            runs[parallel] = _epoch(pipe)
        finally:
            pipe.close()
    assert len(runs[True]) == len(runs[False]) == 3  # 15 files: three whole batches of 4
    for (images, labels), (want_images, want_labels) in zip(runs[True], runs[False], strict=True):
        np.testing.assert_array_equal(images.as_array(), want_images.as_array())
        assert labels.as_array().tolist() == want_labels.as_array().tolist()


# --- no source: feed_input -------------------------------------------------------------------


def _fed_pipe(batch_size: int = 2, **kwargs: Any) -> Pipeline:
    pipe = _pipe(batch_size)
    with pipe:
        pipe.set_outputs(fn.external_source(name="frames", **kwargs))
    return pipe


def test_feed_input_before_each_run_the_iter_setup_loop():
    pipe = _fed_pipe()
    got = []
    for k in range(3):
        pipe.feed_input("frames", [np.full((2,), k, np.uint8)] * 2)
        got.append(pipe.run()[0].as_array()[:, 0].tolist())
    assert got == [[0, 0], [1, 1], [2, 2]]


class FeedPipeline(Pipeline):
    """DALI's iter_setup pattern: the node is fed by the pipeline's own ``iter_setup``."""

    def __init__(self, batches: list[np.ndarray]) -> None:
        super().__init__(batch_size=2, num_threads=1, device_id=None, seed=1)
        self.source = ops.ExternalSource(layout="HW")
        self.batches = iter(batches)

    def define_graph(self) -> Any:
        self.frames = self.source()
        return fn.flip(self.frames, horizontal=1)

    def iter_setup(self) -> None:
        self.feed_input(self.frames, next(self.batches))


def test_the_iter_setup_pattern_feeds_the_node_it_names():
    batches = [np.arange(2 * 2 * 3).reshape(2, 2, 3) * k for k in (1, 2)]
    pipe = FeedPipeline(batches)
    for batch in batches:
        (flipped,) = pipe.run()  # run() calls iter_setup() first, as DALI's does
        np.testing.assert_array_equal(flipped.as_array(), batch[:, :, ::-1])
        assert flipped.layout() == "HW" and flipped.kind.name == "image"


def test_batches_fed_ahead_are_taken_in_order():
    pipe = _fed_pipe()
    data = [np.arange(4).reshape(2, 2) + 10 * k for k in range(3)]
    for batch in data:
        pipe.feed_input("frames", batch)
    for batch in data:
        np.testing.assert_array_equal(pipe.run()[0].as_array(), batch)


def test_run_without_a_fed_batch_says_to_call_feed_input():
    pipe = _fed_pipe()
    with pytest.raises(OperatorError) as info:
        pipe.run()
    message = str(info.value)
    assert message.startswith("operator frames: nothing was fed for this run()")
    assert "pipe.feed_input('frames', batch)" in message
    pipe.feed_input("frames", [np.zeros(1)] * 2)
    assert len(pipe.run()[0]) == 2


def test_repeat_last_gives_the_last_fed_batch_again():
    pipe = _fed_pipe(repeat_last=True)
    pipe.feed_input("frames", [np.ones(1)] * 2)
    assert [pipe.run()[0].as_array().sum() for _ in range(2)] == [2, 2]
    pipe.feed_input("frames", [np.zeros(1)] * 2)
    assert pipe.run()[0].as_array().sum() == 0


def test_feed_input_to_a_source_with_a_source_is_refused():
    pipe = _source_pipe(source=lambda: [np.zeros(1)] * 4, name="src")
    with pytest.raises(ArgumentError, match=r"src \(source .*<lambda>\): feed_input\(\) cannot"):
        pipe.feed_input("src", [np.zeros(1)] * 4)
    with pytest.raises(ArgumentError, match="repeat_last=True is for an external source fed"):
        fn.external_source(source=lambda: [np.zeros(1)], repeat_last=True)
    with pytest.raises(ArgumentError, match="num_outputs is valid only with a source"):
        _source_pipe(num_outputs=2).build()


def test_feed_input_layouts_and_batch_size():
    pipe = _fed_pipe()
    pipe.feed_input("frames", [np.zeros((2, 2))] * 2, layout="HW")
    batch = pipe.run()[0]
    assert batch.layout() == "HW"
    pipe.feed_input("frames", TensorList([np.zeros((2, 2, 1))] * 2, "HWC"))
    assert pipe.run()[0].layout() == "HWC"  # a TensorList keeps its own layout
    pipe = _fed_pipe(layout="HWC")
    with pytest.raises(ArgumentError, match=r"feed_input\(layout='CHW'\) differs .*'HWC'"):
        pipe.feed_input("frames", [np.zeros((1, 2, 2))] * 2, layout="CHW")
    with pytest.raises(OperatorError, match="sample 0 has shape \\(2, 2\\), which does not fit"):
        pipe.feed_input("frames", [np.zeros((2, 2))] * 2)
    pipe.feed_input("frames", [np.zeros((2, 2, 3))] * 3)
    with pytest.raises(OperatorError, match="has 3 samples, more than the pipeline's batch_size"):
        pipe.run()
    with pytest.raises(ArgumentError, match=r"unknown argument\(s\) stream"):
        pipe.feed_input("frames", [np.zeros((2, 2, 3))], stream=0)


def test_feed_input_copies_at_once():
    pipe = _fed_pipe(batch_size=1)
    sample = np.zeros(3)
    pipe.feed_input("frames", [sample])
    sample += 7
    assert pipe.run()[0].as_array().tolist() == [[0, 0, 0]]


# --- layouts, checks, kinds ------------------------------------------------------------------


def test_the_operators_layout_wins_over_the_layout_a_tensor_list_carries():
    """The fault: a TensorList from the source kept its own layout (and Tensors lost theirs)."""
    chw = TensorList([np.zeros((3, 2, 2), np.uint8)] * 2, "CHW")
    tensors = [Tensor(np.zeros((3, 2, 2), np.uint8), "CHW")] * 2
    for data in (chw, tensors):
        given = _source_pipe(batch_size=2, source=lambda d=data: d, layout="XYZ")
        assert given.run()[0].layout() == "XYZ"
        assert _source_pipe(batch_size=2, source=lambda d=data: d).run()[0].layout() == "CHW"


def test_per_output_layouts_dtypes_and_ndims():
    def source() -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [np.zeros((2, 2, 3), np.uint8)], [np.zeros(4, np.float32)]

    pipe = _source_pipe(
        batch_size=1,
        source=source,
        num_outputs=2,
        layout=["HWC"],
        dtype=[types.UINT8, types.FLOAT],
        ndim=[3, 1],
    )
    images, values = pipe.run()
    assert (images.layout(), values.layout()) == ("HWC", "")
    assert (images.kind.name, values.kind.name) == ("image", "generic")
    dtypes = [types.UINT8, types.INT32]
    pipe = _source_pipe(batch_size=1, source=source, num_outputs=2, dtype=dtypes)
    with pytest.raises(OperatorError, match=r"output 1: sample 0 has dtype float32, expected int"):
        pipe.run()
    pipe = _source_pipe(batch_size=1, source=source, num_outputs=2, ndim=[None, 2])
    with pytest.raises(OperatorError, match="output 1: sample 0 has 1 dimensions"):
        pipe.run()
    with pytest.raises(ArgumentError, match="layout 'HW' of output 0 has 2 axes, but ndim is 3"):
        fn.external_source(source=source, num_outputs=2, layout=["HW"], ndim=3)
    with pytest.raises(ArgumentError, match="layout has 3 entries, but num_outputs is 2"):
        fn.external_source(source=source, num_outputs=2, layout=["HWC", "", ""])


def test_samples_of_a_batch_share_dtype_and_rank():
    pipe = _source_pipe(batch_size=2, source=lambda: [np.zeros(2), np.zeros((2, 2))])
    with pytest.raises(OperatorError, match="sample 1 has dtype float64 and rank 2, but sample 0"):
        pipe.run()


def test_a_return_that_is_no_array_says_what_came_back():
    pipe = _source_pipe(batch_size=1, source=lambda: {"image": 1})
    with pytest.raises(OperatorError, match="returned a dict, expected an array of numbers"):
        pipe.run()
    pipe = _source_pipe(batch_size=2, source=lambda i: [np.zeros(2), np.zeros(3)], batch=False)
    with pytest.raises(OperatorError, match=r"sample #0: returned a list of 2 item\(s\), which is"):
        pipe.run()
    pipe = _source_pipe(batch_size=1, source=lambda: 7)
    with pytest.raises(OperatorError, match="a single number, where a batch was expected"):
        pipe.run()


def test_kind_from_the_layout_or_the_kind_argument():
    def source() -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [np.zeros((2, 2, 3), np.uint8)], [np.zeros((2, 2), np.uint8)]

    pipe = _source_pipe(batch_size=1, source=source, num_outputs=2, kind=["image", "mask"])
    assert [b.kind.name for b in pipe.run()] == ["image", "mask"]
    pipe = _source_pipe(batch_size=1, source=source, num_outputs=2, kind="labels")
    assert [b.kind.name for b in pipe.run()] == ["labels", "labels"]
    with pytest.raises(ArgumentError, match="kind has 2 entries, but num_outputs is 3"):
        fn.external_source(source=source, num_outputs=3, kind=["image", "mask"])
    with pytest.raises(ArgumentError, match="'kind'"):
        fn.external_source(source=source, kind="pixels")


def test_callables_that_cannot_be_called_as_a_source_are_refused():
    with pytest.raises(ArgumentError, match="this one has 2: a, b"):
        fn.external_source(source=lambda a, b: [np.zeros(1)])
    with pytest.raises(ArgumentError, match=r"it cannot take \*args"):
        fn.external_source(source=lambda *args: [np.zeros(1)])
    with pytest.raises(ArgumentError, match="'source': expected a function, an iterable"):
        fn.external_source(source=5)


def test_an_error_in_the_source_names_the_sample_and_the_pipeline_goes_on():
    pipe = _source_pipe(source=failing, batch=False)
    pipe.run()
    with pytest.raises(OperatorError) as info:
        pipe.run()
    assert "(source failing), sample #1: the source raised ValueError: no such sample" in str(
        info.value
    )
    assert "SampleInfo(idx_in_epoch=5, idx_in_batch=1, iteration=1, epoch_idx=0)" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert pipe.run()[0].shape() == [(2,)] * 4  # the next batch: iteration 2


@pytest.mark.gpu
def test_a_gpu_external_source_gives_copies_on_the_device():
    array = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0, seed=1)
    with pipe:
        dense = fn.external_source(source=lambda: array, device="gpu", layout="HW")
        listed = fn.external_source(source=lambda: list(array), device="gpu")
        pipe.set_outputs(dense, listed)
    dense, listed = pipe.run()
    assert dense.device == listed.device == "gpu" and dense.layout() == "HW"
    array += 1  # the source's own array: the batches do not change
    np.testing.assert_array_equal(dense.as_cpu().as_array(), array - 1)
    np.testing.assert_array_equal(listed.as_cpu().as_array(), array - 1)


# --- debug mode and eager ----------------------------------------------------------------------


def test_debug_mode_gives_the_normal_epochs():
    results = {}
    for debug in (False, True):

        @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=2, debug=debug)
        def define():
            return fn.external_source(source=numbered, batch=False)

        pipe = define()
        results[debug] = [_values(_epoch(pipe)) for _ in range(2)]
    assert results[True] == results[False]
    assert results[False][1] == [[[[0, 0, 0, 1], [1, 1, 0, 1], [2, 2, 0, 1], [3, 3, 0, 1]]]]


def test_eager_per_sample_source():
    batch = eager.external_source(source=numbered, batch=False, batch_size=3)
    assert [s.tolist() for s in batch] == [[0, 0, 0, 0], [1, 1, 0, 0], [2, 2, 0, 0]]


def test_no_copy_takes_the_arrays_as_read_only_views():
    """DALI's ``no_copy=True``: the batch's samples are the source's arrays (no copy), read-only
    to the pipeline, and the source's own arrays stay writable; by default they are copies."""
    images = [np.full((4, 5, 3), k, np.uint8) for k in range(2)]
    dense = np.stack(images)
    for source in (lambda: images, lambda: dense):
        for no_copy in (True, None):

            @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
            def pipe(source=source, no_copy=no_copy):
                return fn.external_source(source=source, no_copy=no_copy, layout="HWC")

            (out,) = pipe().run()
            given = images if source() is images else list(dense)
            shared = [np.shares_memory(out._samples[i], given[i]) for i in range(2)]
            assert shared == [bool(no_copy)] * 2
            assert not out._samples[0].flags.writeable
    assert images[0].flags.writeable and dense.flags.writeable
