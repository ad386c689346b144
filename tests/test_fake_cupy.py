"""tests/fake_cupy keeps CuPy's rules, so that the GPU path that passes on it (``make test``'s
``AUGKIT_FAKE_GPU=1`` run of the ``gpu`` tests) does not break on CuPy for those reasons: each
rule the module docstring lists, and a GPU kernel that breaks one fails in a pipeline with the
operator's name."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest

from augkit import Pipeline, backend, fn
from augkit.errors import OperatorError
from tests import fake_cupy


@pytest.fixture
def cp(fake_gpu: Any) -> Any:
    return fake_gpu


def test_no_implicit_copy_to_the_host(cp: Any) -> None:
    a = cp.asarray(np.arange(12, dtype=np.uint8).reshape(3, 4))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
        np.asarray(a)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.array(a)
    with pytest.raises(cv2.error):
        cv2.GaussianBlur(a, (3, 3), 0)
    host = a.get()
    assert type(host) is np.ndarray and host.tolist() == np.arange(12).reshape(3, 4).tolist()
    assert cp.asnumpy(a).sum() == 66


def test_host_arrays_do_not_mix_with_device_arrays(cp: Any) -> None:
    a = cp.asarray(np.ones((2, 3), np.float32))
    for mixed in (
        lambda: a + np.ones(3, np.float32),
        lambda: np.ones(3, np.float32) * a,
        lambda: np.add(a, np.ones((2, 3))),
        lambda: cp.clip(np.ones(3), 0, 1),
        lambda: cp.where(a > 0, a, np.zeros((2, 3))),
        lambda: np.concatenate([a, np.ones((2, 3))]),
    ):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    with pytest.raises(ValueError, match=r"non-scalar numpy\.ndarray cannot be used for fill"):
        a[0] = np.zeros(3)
    # scalars of every kind are fine, and results stay on the device
    for ok in (a + 2, 2 * a, a * np.float32(0.5), a - np.array(1.0), np.maximum(a, 0), -a):
        assert backend.is_gpu_array(ok)
    a[0] = 5
    a[1, :2] = cp.asarray(np.array([7, 8], np.float32))
    assert a.get().tolist() == [[5, 5, 5], [7, 8, 1]]


def test_indices_may_be_host_arrays_and_results_are_device_arrays(cp: Any) -> None:
    a = cp.arange(10)
    picked = a[np.array([1, 3])]
    assert backend.is_gpu_array(picked) and picked.get().tolist() == [1, 3]
    one, total = a[4], a.sum()
    assert backend.is_gpu_array(one) and one.ndim == 0 and int(one) == 4
    assert backend.is_gpu_array(total) and float(total) == 45.0
    assert backend.is_gpu_array(np.sum(a)) and backend.is_gpu_array(a.max())


def test_names_cupy_lacks_are_missing(cp: Any) -> None:
    a = cp.zeros(4)
    with pytest.raises(AttributeError):
        cp.insert  # noqa: B018
    with pytest.raises(AttributeError):
        cp.errstate  # noqa: B018
    with pytest.raises(TypeError):
        np.insert(a, 1, 5)  # __array_function__ finds no CuPy function
    with pytest.raises(AttributeError):
        a.resize((2, 2))
    assert cp.float32 is np.float32 and cp.ndarray is fake_cupy.ndarray


def test_backend_finds_it_as_cupy_with_one_device(cp: Any) -> None:
    assert backend.gpu_unavailable_reason() is None
    a = backend.to_gpu(np.ones(3))
    assert backend.is_gpu_array(a) and backend.array_module(a) is cp
    assert type(backend.to_cpu(a)) is np.ndarray


def test_a_kernel_that_copies_to_the_host_implicitly_fails_in_a_pipeline(cp: Any) -> None:
    def host_math(image: Any) -> Any:
        return np.asarray(image) // 2  # works on NumPy, not on CuPy

    def device_math(image: Any) -> Any:
        return image // 2

    for function, fails in ((host_math, True), (device_math, False)):
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=0, seed=1)
        with pipe:
            images = fn.external_source(
                source=lambda: [np.full((4, 5, 3), 9, np.uint8)] * 2, layout="HWC"
            )
            pipe.set_outputs(fn.python_function(images.gpu(), function=function, device="gpu"))
        if fails:
            with pytest.raises(OperatorError, match="Implicit conversion to a NumPy array"):
                pipe.run()
        else:
            (out,) = pipe.run()
            assert out.device == "gpu" and out.as_cpu().at(1).max() == 4
