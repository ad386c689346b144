"""Python operators in worker processes (py_num_workers / parallel="processes"): the same
results as in-process, bit for bit, for every flavour and mode; notebook-style functions; a
crashed worker gives a clear error and the next run() works; nothing left behind."""

from __future__ import annotations

import gc
import glob
import os
import signal

import numpy as np
import pytest
import torch
import torch.utils.dlpack as torch_dlpack

import augkit.plugin.pytorch as dalitorch
from augkit import OperatorError, Pipeline, fn, pipeline_def, types


def _pipeline(image_dir, function, workers, *, flavour="python", batch=False, threads=2, **kw):
    @pipeline_def(
        batch_size=4,
        num_threads=threads,
        device_id=None,
        seed=21,
        py_num_workers=workers,
        exec_async=False,
    )
    def definition():
        jpegs, labels = fn.readers.file(file_root=str(image_dir), random_shuffle=True)
        images = fn.resize(
            fn.decoders.image(jpegs, output_type=types.RGB), resize_x=64, resize_y=48
        )
        if flavour == "torch":
            out = dalitorch.fn.torch_python_function(
                images, function=function, batch_processing=batch, **kw
            )
        elif flavour == "dlpack":
            out = fn.dl_tensor_python_function(
                images, function=function, batch_processing=batch, **kw
            )
        else:
            out = fn.python_function(images, function=function, batch_processing=batch, **kw)
        return out, labels

    return definition()


def _outputs(pipe, iterations=3):
    return [[o.at(i) for o in pipe.run() for i in range(4)] for _ in range(iterations)]


def _assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        for s, t in zip(x, y, strict=True):
            np.testing.assert_array_equal(s, t)


def noisy_sum(image):
    """Holds the GIL in a pure-Python loop and draws from numpy's global generator."""
    total = 0
    for value in image[:8, :8, 0].ravel().tolist():
        total += value
    return np.array([total, np.random.randint(0, 1000), torch.randint(0, 1000, ()).item()])


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_give_the_in_process_results(image_dir, workers):
    reference = _outputs(_pipeline(image_dir, noisy_sum, 1))
    _assert_same(reference, _outputs(_pipeline(image_dir, noisy_sum, workers)))


def test_results_do_not_depend_on_threads_or_workers(image_dir):
    runs = [
        _outputs(_pipeline(image_dir, noisy_sum, w, threads=t, parallel=p))
        for w, t, p in ((1, 1, "serial"), (2, 2, "processes"), (1, 3, "processes"))
    ]
    _assert_same(runs[0], runs[1])
    _assert_same(runs[0], runs[2])


def test_lambdas_and_closures_over_arrays_run_in_workers(image_dir):
    offset = np.arange(3, dtype=np.uint8)
    closure = lambda im: im + offset  # noqa: E731  (what a notebook user writes)
    reference = _outputs(_pipeline(image_dir, closure, 1, parallel="serial"))
    _assert_same(reference, _outputs(_pipeline(image_dir, closure, 2)))
    assert _outputs(_pipeline(image_dir, closure, 2))[0][0].dtype == np.uint8


def test_main_module_function_runs_in_workers(image_dir):
    namespace = {"__name__": "__main__", "np": np}
    exec("def brighten(im):\n    return np.minimum(im.astype(np.int16) + 9, 255)", namespace)
    reference = _outputs(_pipeline(image_dir, namespace["brighten"], 1, parallel="serial"))
    _assert_same(reference, _outputs(_pipeline(image_dir, namespace["brighten"], 2)))


def test_batch_mode_and_other_flavours_in_workers(image_dir):
    def dlpack_reverse(capsules):
        tensors = [torch_dlpack.from_dlpack(c) for c in capsules]
        return [torch_dlpack.to_dlpack(t.flip(0)) for t in reversed(tensors)]

    def torch_noise(t):
        return t.to(torch.float32) + torch.rand(t.shape)

    cases = [
        dict(function=lambda ims: [im[::-1] for im in ims], batch=True),
        dict(function=dlpack_reverse, flavour="dlpack", batch=True),
        dict(function=torch_noise, flavour="torch"),
    ]
    for case in cases:
        reference = _outputs(_pipeline(image_dir, workers=1, parallel="serial", **case))
        _assert_same(reference, _outputs(_pipeline(image_dir, workers=2, **case)))


def test_user_error_in_a_worker_names_the_sample_and_keeps_the_traceback(image_dir):
    def refuse_wide(im):
        if im.shape[1] == 64:
            raise ValueError("too wide")
        return im

    pipe = _pipeline(image_dir, refuse_wide, 2)
    with pytest.raises(OperatorError, match=r"sample #0 \(.*\.jpg\): ValueError: too wide") as info:
        pipe.run()
    cause = info.value.__cause__
    assert isinstance(cause, ValueError)
    assert any("refuse_wide" in note for note in getattr(cause, "__notes__", []))


def _die_on_first(im):
    if im[0, 0, 0] != 255 and os.environ.get("AUGKIT_TEST_DIE") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    return im


def test_killed_worker_gives_an_error_and_the_next_run_works(image_dir, monkeypatch):
    monkeypatch.setenv("AUGKIT_TEST_DIE", "1")
    pipe = _pipeline(image_dir, _die_on_first, 2)
    with pytest.raises(OperatorError, match="worker process failed"):
        pipe.run()
    monkeypatch.setenv("AUGKIT_TEST_DIE", "0")
    pipe.close()  # workers are forked with the new environment
    assert len(pipe.run()[0]) == 4


def test_nothing_left_after_the_pipeline_is_gone(image_dir):
    pipe = _pipeline(image_dir, noisy_sum, 2)
    pipe.run()
    pids = pipe._engine.workers().worker_pids()
    assert pids and all(_alive(pid) for pid in pids)
    del pipe
    gc.collect()
    assert not any(_alive(pid) for pid in pids)
    assert not glob.glob(f"/dev/shm/augkit-{os.getpid()}-*")


def test_timeout_stops_a_stuck_function(image_dir):
    def stuck(im):
        while True:
            pass

    pipe = _pipeline(image_dir, stuck, 2, timeout=0.5)
    with pytest.raises(OperatorError, match="timed out"):
        pipe.run()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for good: it only waits to be reaped
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_pipeline_without_workers_starts_no_process(image_dir):
    pipe = _pipeline(image_dir, noisy_sum, 1)
    pipe.run()
    assert pipe._engine._workers is None


def test_default_pipeline_argument(image_dir):
    assert Pipeline(batch_size=1).py_num_workers == 1
