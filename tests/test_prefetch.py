"""Pipelined execution (exec_async/exec_pipelined, the defaults): batches computed ahead in the
background are exactly the synchronous pipeline's, across epochs, resets, last-batch policies,
errors and close()."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from augkit import OperatorError, fn, pipeline_def, types


def _definition(image_dir):
    def edit(image):
        return np.ascontiguousarray(image[::2, ::2]) + np.uint8(np.random.randint(0, 3))

    @pipeline_def
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(image_dir), random_shuffle=True)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=64, resize_y=48)
        angle = fn.random.uniform(range=(-20.0, 20.0))
        images = fn.rotate(images, angle=angle, keep_size=True)
        return fn.python_function(images, function=edit), labels, angle

    return pipe


def _make(image_dir, asynchronous, depth=2, threads=2):
    return _definition(image_dir)(
        batch_size=4,
        num_threads=threads,
        device_id=None,
        seed=17,
        exec_async=asynchronous,
        exec_pipelined=asynchronous,
        prefetch_queue_depth=depth,
    )


def _arrays(outputs):
    return [np.concatenate([o.at(i).ravel() for i in range(len(o))]) for o in outputs]


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_prefetched_runs_equal_synchronous_runs(image_dir, depth):
    sync, pipelined = _make(image_dir, False), _make(image_dir, True, depth)
    for _ in range(9):  # 15 files, batch 4: crosses two epoch boundaries
        _same(_arrays(sync.run()), _arrays(pipelined.run()))
    pipelined.close()


@pytest.mark.parametrize("policy", ["fill", "partial", "drop"])
def test_epochs_and_resets_match(image_dir, policy):
    sync, pipelined = _make(image_dir, False), _make(image_dir, True, 3)
    sync.run()
    pipelined.run()
    for _ in range(2):
        a = [_arrays(o) for o in sync.epoch(policy)]
        b = [_arrays(o) for o in pipelined.epoch(policy)]
        assert len(a) == len(b) > 0
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    sync.reset()
    pipelined.reset()
    _same(_arrays(sync.run()), _arrays(pipelined.run()))
    pipelined.close()


def test_an_error_in_a_prefetched_batch_surfaces_in_its_turn(image_dir):
    """Batches holding a label-2 sample fail; both modes fail on the same run() calls and
    agree on every other batch."""

    def refuse_label_two(label):
        if int(label[0]) == 2:
            raise ValueError("label 2")
        return label

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=5)
    def checked():
        jpegs, labels = fn.readers.file(file_root=str(image_dir), random_shuffle=True)
        return jpegs, fn.python_function(labels, function=refuse_label_two)

    sync, pipelined = checked(exec_async=False), checked(prefetch_queue_depth=3)
    outcomes = []
    for _ in range(8):
        results = []
        for pipe in (sync, pipelined):
            try:
                results.append(_arrays(pipe.run()))
            except OperatorError as exc:
                assert "label 2" in str(exc)
                results.append(None)
        assert (results[0] is None) == (results[1] is None)
        if results[0] is not None:
            _same(*results)
        outcomes.append(results[0] is None)
    assert any(outcomes) and not all(outcomes)
    pipelined.close()


def test_user_error_then_next_batch(image_dir):
    state = {"fail": False}

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=3)
    def flaky():
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        return fn.python_function(jpegs, function=lambda b: b[:10] if not state["fail"] else 1 / 0)

    pipe, reference = flaky(), flaky(exec_async=False, exec_pipelined=False)
    pipe.run()
    reference.run()
    state["fail"] = True
    pipe.close()  # drop what was computed ahead with the working function
    with pytest.raises(OperatorError, match="ZeroDivisionError"):
        pipe.run()
    with pytest.raises(OperatorError, match="ZeroDivisionError"):
        reference.run()
    state["fail"] = False
    pipe.close()  # batches computed ahead while the function failed are dropped too
    _same(_arrays(reference.run()), _arrays(pipe.run()))
    pipe.close()


def test_close_stops_background_threads_and_run_resumes(image_dir):
    def augkit_threads():
        return {t for t in threading.enumerate() if t.name.startswith("augkit")}

    before = augkit_threads()
    sync, pipelined = _make(image_dir, False), _make(image_dir, True, 3)
    _same(_arrays(sync.run()), _arrays(pipelined.run()))
    assert any(t.name == "augkit-prefetch" for t in augkit_threads() - before)
    pipelined.close()
    sync.close()
    assert not augkit_threads() - before
    _same(_arrays(sync.run()), _arrays(pipelined.run()))
    pipelined.close()
    sync.close()


def test_tutorial_style_sync_flags_still_work(image_dir):
    pipe = _make(image_dir, False)
    assert not pipe.exec_async and len(pipe.run()[0]) == 4
    assert getattr(pipe._runner, "_prefetcher", None) is None
