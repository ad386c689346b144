"""The Python operator family: python_function, dl_tensor_python_function and
TorchPythonFunction, in per-sample and batch modes, with their errors."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest
import torch
import torch.utils.dlpack as torch_dlpack

import augkit.plugin.pytorch as dalitorch
from augkit import OperatorError, Pipeline, fn, ops
from augkit.errors import ArgumentError
from tests.operator_check import check_operator, run_operator


def edit_images(image1: np.ndarray, image2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tutorial's function: swap what lies outside the central circle."""
    h, w, _ = image1.shape
    y, x = np.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    result1 = np.copy(image1)
    result1[mask] = image2[mask]
    result2 = np.copy(image2)
    result2[mask] = image1[mask]
    return result1, result2


@pytest.fixture
def pairs(photos: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Two batches of 3 same-size crops of real photos."""
    first = [np.ascontiguousarray(p[:120, :160]) for p in photos[:3]]
    second = [np.ascontiguousarray(p[-120:, -160:]) for p in photos[3:6]]
    return first, second


def test_python_function_per_sample_two_outputs(pairs):
    first, second = pairs
    check_operator(
        "python_function",
        [first, second],
        lambda a, b, **_: edit_images(a, b),
        layout="HWC",
        args={"function": edit_images, "num_outputs": 2},
        expected_layout="",
    )


def test_python_function_batch_mode(pairs):
    first, _ = pairs

    def flip_batch(images):
        assert isinstance(images, list) and len(images) == 3
        return [np.ascontiguousarray(im[:, ::-1]) for im in images]

    check_operator(
        "python_function",
        [first],
        lambda im, **_: im[:, ::-1],
        layout="HWC",
        args={"function": flip_batch, "batch_processing": True, "output_layouts": "HWC"},
        expected_layout="HWC",
    )


def test_python_function_batch_mode_accepts_one_dense_array(pairs):
    first, _ = pairs
    check_operator(
        "python_function",
        [first],
        lambda im, **_: im // 2,
        args={"function": lambda ims: np.stack(ims) // 2, "batch_processing": True},
    )


def test_zero_inputs_called_once_per_sample():
    calls = []

    def make():
        calls.append(1)
        return np.full((2,), len(calls), np.int64)

    pipe = Pipeline(batch_size=3, num_threads=2, device_id=None, exec_async=False)
    with pipe:
        pipe.set_outputs(fn.python_function(function=make))
    (out,) = pipe.run()
    assert len(calls) == 3
    assert [int(out.at(i)[0]) for i in range(3)] == [1, 2, 3]


def test_global_random_generators_are_seeded_per_sample(pairs):
    """A function drawing from np.random / random / torch gives the same numbers for the same
    pipeline seed, whatever the thread count; samples differ from each other."""
    first, _ = pairs

    def noisy(image):
        return np.array([np.random.rand(), random.random(), torch.rand(()).item()])

    state = np.random.get_state()
    outs = check_operator("python_function", [first], None, args={"function": noisy})
    values = outs[0].as_array()
    assert len({tuple(v) for v in values}) == 3
    other = run_operator("python_function", [first], args={"function": noisy}, seed=999)
    assert not np.array_equal(other[0][0].as_array(), values)
    # The user's own global state is put back after each call.
    np.testing.assert_array_equal(np.random.get_state()[1], state[1])


def test_inputs_are_read_only(pairs):
    first, _ = pairs

    def writes(image):
        image[0, 0] = 0
        return image

    with pytest.raises(OperatorError, match="read-only") as info:
        run_operator("python_function", [first], args={"function": writes})
    assert isinstance(info.value.__cause__, ValueError)


def test_dl_tensor_python_function_tutorial(pairs):
    first, _ = pairs

    def dlpack_manipulation(dlpacks):
        tensors = [torch_dlpack.from_dlpack(dlpack) for dlpack in dlpacks]
        output = [(tensor.to(torch.float32) / 255.0).sqrt() for tensor in tensors]
        output.reverse()
        return [torch_dlpack.to_dlpack(tensor) for tensor in output]

    (out,) = run_operator(
        "dl_tensor_python_function", [first], args={"function": dlpack_manipulation}
    )[0]
    for i in range(3):
        expected = np.sqrt(first[2 - i].astype(np.float32) / 255.0)
        np.testing.assert_allclose(out.at(i), expected, rtol=1e-6)
    assert out.dtype.name == "FLOAT"


def test_dl_tensor_python_function_per_sample(pairs):
    first, _ = pairs
    check_operator(
        "dl_tensor_python_function",
        [first],
        lambda im, **_: im[::2],
        args={
            "function": lambda c: torch_dlpack.to_dlpack(torch_dlpack.from_dlpack(c)[::2]),
            "batch_processing": False,
        },
    )


def test_torch_python_function_on_cpu(pairs):
    first, _ = pairs

    def to_chw_float(t):
        assert isinstance(t, torch.Tensor)
        return t.permute(2, 0, 1).to(torch.float32) / 255

    outs = check_operator(
        "torch_python_function",
        [first],
        lambda im, **_: np.moveaxis(im, -1, 0).astype(np.float32) / np.float32(255),
        args={"function": to_chw_float, "output_layouts": "CHW"},
        expected_layout="CHW",
    )
    assert outs[0].dtype.name == "FLOAT"


def test_torch_python_function_shares_memory_with_input(pairs):
    first, _ = pairs
    seen = []

    def record(t):
        seen.append(t.data_ptr())
        return t

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        out = dalitorch.fn.torch_python_function(images, function=record)
        pipe.set_outputs(images, out)
    images_out, _ = pipe.run()
    assert seen == [np.asarray(t).ctypes.data for t in images_out]


@pytest.mark.parametrize(
    ("function", "num_outputs", "message"),
    [
        (lambda im: [im, im], 2, "returned a list of 2 item.*expected a tuple of 2 outputs"),
        (lambda im: (im,), 2, "returned 1 outputs, expected 2"),
        (lambda im: im.tolist(), 1, "returned a list.*expected a NumPy array"),
        (lambda im: None, 1, "returned None, expected a NumPy array"),
        (lambda im: np.array([im, None], dtype=object), 1, "Python objects"),
    ],
)
def test_wrong_returns_are_named(pairs, function, num_outputs, message):
    first, _ = pairs
    with pytest.raises(OperatorError, match=message) as info:
        run_operator(
            "python_function", [first], args={"function": function, "num_outputs": num_outputs}
        )
    assert "sample #0" in str(info.value)
    assert "PythonFunction" in str(info.value)


def test_num_outputs_zero_must_return_none(pairs):
    first, _ = pairs
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        assert fn.python_function(images, function=lambda im: im, num_outputs=0) is None
        pipe.set_outputs(images)
    with pytest.raises(OperatorError, match=r"num_outputs=0 \(the function must return None"):
        pipe.run()


def test_ragged_dtypes_in_one_output_are_refused(pairs):
    first, _ = pairs
    counter = iter(range(10))

    def changes_dtype(image):
        return image.astype(np.float32) if next(counter) == 1 else image

    with pytest.raises(OperatorError, match=r"sample 1 has dtype float32.*share dtype"):
        run_operator("python_function", [first], args={"function": changes_dtype})


def test_wrong_batch_length_in_batch_mode(pairs):
    first, _ = pairs
    with pytest.raises(OperatorError, match="batch of 2 samples, expected 3"):
        run_operator(
            "python_function",
            [first],
            args={"function": lambda ims: ims[:2], "batch_processing": True},
        )


def test_layout_that_does_not_fit_the_output(pairs):
    first, _ = pairs
    with pytest.raises(OperatorError, match="does not fit its layout 'HW'"):
        run_operator(
            "python_function", [first], args={"function": lambda im: im, "output_layouts": "HW"}
        )


def test_user_error_names_operator_sample_source_and_keeps_traceback(pairs):
    first, _ = pairs

    def broken(image):
        if image.shape[0] > 0:
            raise KeyError("no such channel")
        return image

    pipe = Pipeline(batch_size=3, num_threads=2, device_id=None, seed=1)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        pipe.set_outputs(fn.python_function(images, function=broken))
    with pytest.raises(OperatorError) as info:
        pipe.run()
    message = str(info.value)
    assert f"(function {broken.__qualname__})" in message, message
    assert "broken" in message and "sample #0" in message and "KeyError" in message
    cause = info.value.__cause__
    assert isinstance(cause, KeyError)
    frames = []
    tb = cause.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    assert frames[-1] == (__file__, "broken")


def test_pipeline_is_usable_after_a_user_error(pairs):
    first, _ = pairs
    fail = {"now": True}

    def sometimes(image):
        if fail["now"]:
            raise RuntimeError("boom")
        return image

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        pipe.set_outputs(fn.python_function(images, function=sometimes))
    with pytest.raises(OperatorError, match="boom"):
        pipe.run()
    fail["now"] = False
    (out,) = pipe.run()
    np.testing.assert_array_equal(out.at(1), first[1])


def test_python_functions_refuse_multiple_input_sets():
    op = ops.PythonFunction(function=lambda x: x)
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: [np.zeros(1)])
        with pytest.raises(ArgumentError, match="multiple input sets"):
            op([a, a])


def test_function_is_required_and_must_be_callable():
    with pytest.raises(ArgumentError, match="missing required argument 'function'"):
        ops.PythonFunction(num_outputs=2)
    with pytest.raises(ArgumentError, match="'function': expected a function"):
        ops.PythonFunction(function=3)


def test_unused_python_function_still_runs_like_dali(pairs):
    first, _ = pairs
    calls = []
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        fn.python_function(images, function=lambda im: calls.append(1), num_outputs=0)
        pipe.set_outputs(images)
    pipe.run()
    assert len(calls) == 3


@pytest.mark.gpu
def test_gpu_python_function_gets_cupy_arrays(pairs):
    import cupy

    first, _ = pairs
    seen = []

    def on_gpu(image):
        seen.append(type(image))
        return image[::-1] * 1

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        pipe.set_outputs(fn.python_function(images, function=on_gpu, device="gpu"))
    (out,) = pipe.run()
    assert seen == [cupy.ndarray] * 3 and out.device == "gpu"
    np.testing.assert_array_equal(out.as_cpu().at(2), first[2][::-1])


@pytest.mark.gpu
@pytest.mark.cuda
def test_gpu_dl_tensor_python_function_gets_cuda_capsules(pairs):
    import cupy

    first, _ = pairs
    devices = []

    def on_capsules(capsule):
        array = cupy.from_dlpack(_Capsule(capsule))
        devices.append(array.device.id)
        return (array[:, ::-1] + 1).__dlpack__()

    pipe = Pipeline(batch_size=3, num_threads=2, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        pipe.set_outputs(fn.dl_tensor_python_function(images, function=on_capsules, device="gpu"))
    (out,) = pipe.run()
    assert devices == [0, 0, 0] and out.device == "gpu"
    np.testing.assert_array_equal(out.as_cpu().at(1), first[1][:, ::-1] + 1)


class _Capsule:
    """A bare CUDA DLPack capsule as an object ``cupy.from_dlpack`` takes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)


@pytest.mark.gpu
def test_gpu_python_function_batch_mode_and_numpy_results_land_on_the_gpu(pairs):
    import cupy

    first, _ = pairs

    def whole_batch(images):
        assert all(isinstance(x, cupy.ndarray) for x in images)
        return [cupy.asnumpy(x)[::2] for x in images]  # NumPy back: moved to the GPU

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        out = fn.python_function(images, function=whole_batch, batch_processing=True, device="gpu")
        pipe.set_outputs(out, fn.flip(out, horizontal=1))  # flip inferred on the GPU
    halves, flipped = pipe.run()
    assert halves.device == "gpu" and flipped.device == "gpu"
    np.testing.assert_array_equal(halves.as_cpu().at(2), first[2][::2])
    np.testing.assert_array_equal(flipped.as_cpu().at(2), first[2][::2, ::-1])


@pytest.mark.gpu
@pytest.mark.cuda
def test_gpu_torch_python_function_gets_cuda_tensors(pairs):
    first, _ = pairs

    def on_cuda(t):
        assert t.is_cuda
        return t.flip(0)

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=0)
    with pipe:
        images = fn.external_source(source=lambda: first, layout="HWC")
        pipe.set_outputs(dalitorch.fn.torch_python_function(images, function=on_cuda, device="gpu"))
    (out,) = pipe.run()
    np.testing.assert_array_equal(out.as_cpu().at(0), first[0][::-1])


def _thread_recorder(draw_from=None):
    """A function that records which thread ran each call (it sleeps, releasing the GIL, so
    that parallel calls overlap), optionally drawing from np.random on some iterations."""
    seen: list[int] = []

    def record(x):
        seen.append(threading.get_ident())
        time.sleep(0.005)
        if draw_from is not None and draw_from(x):
            return x + np.random.rand()
        return x * 2

    return record, seen


def _uniform_pipe(function, threads, **kwargs):
    pipe = Pipeline(batch_size=6, num_threads=threads, device_id=None, seed=4, exec_async=False)
    with pipe:
        x = fn.random.uniform(range=(0.0, 1.0), shape=(2,))
        pipe.set_outputs(fn.python_function(x, function=function, **kwargs))
    return pipe


def test_functions_without_global_randomness_run_on_the_pipeline_threads():
    record, seen = _thread_recorder()
    pipe = _uniform_pipe(record, threads=3)
    pipe.run()  # the first batch runs one call at a time, to see whether it draws
    assert len(set(seen)) == 1
    seen.clear()
    pipe.run()
    assert len(set(seen)) > 1


def test_a_function_that_draws_later_is_recomputed_seeded_and_stays_serial():
    draw_late = _thread_recorder(draw_from=lambda x: x[0] > 0.5)
    reference = _thread_recorder(draw_from=lambda x: x[0] > 0.5)
    pipe = _uniform_pipe(draw_late[0], threads=3)
    serial = _uniform_pipe(reference[0], threads=3, parallel="serial")
    for _ in range(4):
        (a,), (b,) = pipe.run(), serial.run()
        np.testing.assert_array_equal(a.as_array(), b.as_array())


@pytest.mark.parametrize("parallel", ["serial", "threads"])
def test_explicit_parallel_modes(parallel):
    record, seen = _thread_recorder()
    pipe = _uniform_pipe(record, threads=3, parallel=parallel)
    pipe.run()
    pipe.run()
    assert (len(set(seen)) > 1) == (parallel == "threads")


def test_parallel_processes_is_cpu_only():
    with pytest.raises(ArgumentError, match="parallel='processes' runs only CPU operators"):
        pipe = Pipeline(batch_size=1, num_threads=1, device_id=0)
        with pipe:
            x = fn.random.uniform()
            pipe.set_outputs(
                fn.python_function(x, function=lambda v: v, device="gpu", parallel="processes")
            )
        pipe.build()
