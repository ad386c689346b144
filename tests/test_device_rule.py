"""One device rule for build, debug mode and eager (issue 25 §3).

``backend.check_device`` is the rule: a public operator on device "gpu" or "mixed" needs a usable
GPU (CuPy and a CUDA device) and a ``device_id`` that is not ``None``. A normal pipeline applies
it to every node when it is built (``core.check_device``), debug mode to every call as it is made,
with its pipeline's ``device_id`` (``graph.Operator.__call__``), and eager calls with the
``device_id`` eager implies, 0 (``eager.EAGER_DEVICE_ID``): GPU operators run where a GPU is
usable.

DALI's device rule (an operator called on GPU data runs on the GPU unless ``device=`` says
otherwise; a CPU-only operator given GPU data says so and points at ``.cpu()``) is applied in
``graph.Operator.__call__`` / ``_node`` when the operator is called, in both modes: these tests
hold the two modes to the same exception and the same words.

The ``fake_gpu`` fixture makes ``tests/fake_cupy`` CuPy (one CUDA device) for one test, so the
"a GPU is usable" side runs here; the "no GPU" side patches ``backend.gpu_unavailable_reason``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from augkit import backend, eager, fn, pipeline_def
from augkit.errors import ArgumentError, AugkitError, DeviceError
from augkit.tensors import TensorList

IMAGE = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
NO_GPU = "CuPy is not installed (pip install 'augkit[gpu]')"


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as one without a GPU, whatever it has."""
    monkeypatch.setattr(backend, "gpu_unavailable_reason", lambda: NO_GPU)


def _refusal(define: Callable[[], Any], device_id: int | None, debug: bool) -> AugkitError:
    """The error that making and running ``define`` as a pipeline with ``device_id`` raises: a
    normal pipeline at its definition (a refused call) or at build, a debug one at its first
    run."""
    with pytest.raises(AugkitError) as info:
        pipe = pipeline_def(
            define, batch_size=2, num_threads=1, device_id=device_id, seed=1, debug=debug
        )()
        try:
            pipe.run()
        finally:
            pipe.close()
    return info.value


def _numbered(message: str) -> str:
    """``message`` with the numbers of nodes named by augkit (``_ToGPU_12``) left out: node
    numbers count every node made in the process, so two pipelines never share them."""
    return re.sub(r"\b(_?[A-Za-z]+)_\d+\b", r"\1_#", message)


def _images() -> Any:
    return fn.external_source(source=lambda: [IMAGE, IMAGE[::-1]], layout="HWC")


def _same_refusal(define: Callable[[], Any], device_id: int | None, numbered: bool = False) -> str:
    """The normal and the debug pipeline refuse ``define`` with one exception type and one
    message (``numbered``: but for the numbers of augkit's nodes the message names); returns
    the message."""
    normal = _refusal(define, device_id, debug=False)
    debug = _refusal(define, device_id, debug=True)
    assert type(normal) is type(debug), (normal, debug)
    if numbered:
        assert _numbered(str(normal)) == _numbered(str(debug))
    else:
        assert str(normal) == str(debug)
    return str(normal)


# --- device="gpu" with device_id=None --------------------------------------------------------


def test_gpu_operator_with_device_id_none_is_refused_alike_in_both_modes(fake_gpu: Any) -> None:
    """A GPU is usable (the fake one), but the pipeline said device_id=None: both modes refuse
    fn.flip(x, device="gpu") with one DeviceError (debug mode used to run it)."""
    message = _same_refusal(lambda: fn.flip(_images(), device="gpu", name="flip"), None)
    assert message == (
        "flip (device='gpu') needs a GPU, but the pipeline was created with device_id=None. "
        "Create the pipeline with a device_id (device_id=0: the first CUDA device), or use "
        "device='cpu' for it."
    )


def test_without_a_name_the_messages_differ_only_by_the_nodes_number(fake_gpu: Any) -> None:
    """A normal pipeline names the node it built (Flip_12); debug mode checks a call before its
    node exists and names the operator (Flip)."""
    define = lambda: fn.flip(_images(), device="gpu")  # noqa: E731
    normal = _refusal(define, None, debug=False)
    debug = _refusal(define, None, debug=True)
    assert type(normal) is type(debug) is DeviceError
    assert re.sub(r"^Flip_\d+ ", "Flip ", str(normal)) == str(debug)
    assert str(debug).startswith("Flip (device='gpu') needs a GPU, but the pipeline was created")


def test_gpu_data_with_device_id_none_is_refused_alike_in_both_modes(fake_gpu: Any) -> None:
    """GPU data with device_id=None: the user's .gpu() that made it is refused first, alike in
    both modes (it used to pass in both, and the GPU data failed later)."""
    message = _same_refusal(lambda: fn.flip(_named_images().gpu(), name="flip"), None)
    assert message == (
        "images.gpu() (device='gpu') needs a GPU, but the pipeline was created with "
        "device_id=None. Create the pipeline with a device_id (device_id=0: the first CUDA "
        "device), or leave out the .gpu()."
    )


def _named_images() -> Any:
    return fn.external_source(source=lambda: [IMAGE, IMAGE[::-1]], layout="HWC", name="images")


def test_a_gpu_copy_as_an_output_is_refused_without_a_gpu(no_gpu: None) -> None:
    """An output copied to the GPU, no operator on the GPU: refused when the pipeline is made
    (normal: at build; debug: at the call), not at run time inside the copy."""
    for device_id in (None, 0):
        message = _same_refusal(lambda: _named_images().gpu(), device_id)
        assert message == (
            f"images.gpu() (device='gpu') needs a GPU, but {NO_GPU}. Leave out the .gpu(), or "
            f"run where a CUDA device and CuPy exist."
        )


def test_a_gpu_copy_runs_with_a_device_id(fake_gpu: Any) -> None:
    for out in _outputs_in_both_modes(lambda: _named_images().gpu()).values():
        assert out.device == "gpu"
        np.testing.assert_array_equal(out.at(1), IMAGE[::-1])


def test_mixed_decoder_with_device_id_none_is_refused_alike(fake_gpu: Any) -> None:
    def define() -> Any:
        jpegs = fn.external_source(source=lambda: [np.zeros(8, np.uint8)] * 2)
        return fn.decoders.image(jpegs, device="mixed", name="decoder")

    message = _same_refusal(define, None)
    assert message.startswith("decoder (device='mixed') needs a GPU, but the pipeline was")


def _outputs_in_both_modes(define: Callable[[], Any]) -> dict[bool, Any]:
    """The one output of ``define`` as a pipeline with device_id=0, by debug mode (False,
    True)."""
    outs = {}
    for debug in (False, True):
        pipe = pipeline_def(define, batch_size=2, num_threads=1, device_id=0, seed=1, debug=debug)()
        try:
            (outs[debug],) = pipe.run()
        finally:
            pipe.close()
    return outs


def test_with_a_device_id_both_modes_run_the_gpu_operator(fake_gpu: Any) -> None:
    outs = _outputs_in_both_modes(lambda: fn.flip(_images(), device="gpu"))
    for out in outs.values():
        assert out.device == "gpu"
        np.testing.assert_array_equal(out.at(0), IMAGE[:, ::-1])
        np.testing.assert_array_equal(out.at(1), IMAGE[::-1, ::-1])


# --- no GPU on the machine --------------------------------------------------------------------


@pytest.mark.parametrize("device_id", [None, 0])
def test_without_a_gpu_both_modes_and_eager_refuse_alike(no_gpu: None, device_id: Any) -> None:
    message = _same_refusal(lambda: fn.flip(_images(), device="gpu", name="flip"), device_id)
    assert message == (
        f"flip (device='gpu') needs a GPU, but {NO_GPU}. Use device='cpu' for it, or run "
        f"where a CUDA device and CuPy exist."
    )
    # Eager: the device_id eager implies is 0, so its refusal is the device_id=0 pipeline's.
    with pytest.raises(DeviceError) as info:
        eager.flip(IMAGE, device="gpu", name="flip")
    assert str(info.value) == message


# --- eager: device_id 0, where a GPU is usable ------------------------------------------------


def test_eager_implies_device_id_zero(fake_gpu: Any) -> None:
    """Eager calls have no pipeline: they run as one with device_id=0 would, so device="gpu"
    runs where a GPU is usable (the fake one here), on its first device."""
    assert eager.EAGER_DEVICE_ID == 0
    out = eager.flip([IMAGE], device="gpu")
    np.testing.assert_array_equal(out[0], IMAGE[:, ::-1])


def test_eager_follows_dalis_rule_on_gpu_data(fake_gpu: Any) -> None:
    """A batch on the GPU given to eager makes an operator with a GPU kernel run there, as GPU
    data does in a pipeline; the result stays on the GPU."""
    batch = TensorList([IMAGE, IMAGE[::-1]]).as_gpu()
    out = eager.flip(batch)
    assert out.device == "gpu"
    np.testing.assert_array_equal(out.at(0), IMAGE[:, ::-1])


# --- DALI's device rule and the CPU-only refusal: one path in both modes ----------------------


def _cpu_only_on_gpu_data() -> Any:
    return fn.jpeg_compression_distortion(_images().gpu(), name="jpeg")


def _cpu_device_on_gpu_data() -> Any:
    return fn.flip(_images().gpu(), device="cpu", name="flip")


def _gpu_argument_input() -> Any:
    angle = fn.random.uniform(range=(-10, 10)).gpu()
    return fn.rotate(_images(), angle=angle, name="rotate")


@pytest.mark.parametrize(
    ("define", "words"),
    [
        (
            _cpu_only_on_gpu_data,
            "JpegCompressionDistortion(device='cpu'): input 0 (",
        ),
        (_cpu_device_on_gpu_data, "Flip(device='cpu'): input 0 ("),
        (_gpu_argument_input, "Rotate: argument 'angle' takes per-sample values from the CPU"),
    ],
    ids=["cpu-only operator", "device='cpu' given", "argument input on the GPU"],
)
def test_gpu_data_refusals_are_alike_in_both_modes(fake_gpu: Any, define: Any, words: str) -> None:
    """These refusals come from the operator call itself, in a normal definition and in debug
    mode alike (graph.Operator.__call__ and _node)."""
    message = _same_refusal(define, 0, numbered=True)
    assert message.startswith(words)
    assert ".cpu()" in message


def test_cpu_only_refusal_says_why(fake_gpu: Any) -> None:
    message = _same_refusal(_cpu_only_on_gpu_data, 0, numbered=True)
    assert "augkit has JpegCompressionDistortion for the CPU only" in message
    message = _same_refusal(_cpu_device_on_gpu_data, 0, numbered=True)
    assert "a CPU operator cannot read GPU data" in message


def test_gpu_data_runs_on_the_gpu_in_both_modes(fake_gpu: Any) -> None:
    """No device= on GPU data: the operator runs on the GPU, in both modes."""
    for debug, out in _outputs_in_both_modes(lambda: fn.flip(_images().gpu())).items():
        assert out.device == "gpu", debug


def test_cpu_only_refusal_in_eager(fake_gpu: Any) -> None:
    batch = TensorList([IMAGE]).as_gpu()
    with pytest.raises(ArgumentError, match=r"for the CPU only.*\.cpu\(\)"):
        eager.jpeg_compression_distortion(batch)


@pytest.mark.parametrize(
    "make",
    [
        lambda cupy: cupy.asarray(np.stack([IMAGE, IMAGE[::-1]])),
        lambda cupy: [cupy.asarray(IMAGE), cupy.asarray(IMAGE[::-1])],
        lambda cupy: TensorList([IMAGE, IMAGE[::-1]]).as_gpu(),
        lambda cupy: _images().gpu().get(),
    ],
    ids=["CuPy array", "list of CuPy arrays", "TensorList on the GPU", "a node's get()"],
)
def test_gpu_batches_given_in_debug_mode_follow_dalis_rule(fake_gpu: Any, make: Any) -> None:
    """A batch on the GPU handed to an operator in debug mode is GPU data, as a GPU node's
    output is: flip (no device=) runs on the GPU; a CPU-only operator refuses it, naming
    .cpu(). (It used to be held in a "cpu" node, and flip refused it.)"""

    def define() -> Any:
        return fn.flip(make(fake_gpu))

    pipe = pipeline_def(define, batch_size=2, num_threads=1, device_id=0, seed=1, debug=True)()
    try:
        (out,) = pipe.run()
    finally:
        pipe.close()
    assert out.device == "gpu"
    np.testing.assert_array_equal(out.at(1), IMAGE[::-1, ::-1])

    refused = pipeline_def(
        lambda: fn.jpeg_compression_distortion(make(fake_gpu)),
        batch_size=2,
        num_threads=1,
        device_id=0,
        seed=1,
        debug=True,
    )()
    try:
        with pytest.raises(ArgumentError, match=r"for the CPU only.*\.cpu\(\)"):
            refused.run()
    finally:
        refused.close()
