"""fn, ops and the PyTorch plugin are generated from the one registry: every operator appears
in each, under DALI's names, with its arguments documented."""

from __future__ import annotations

import inspect

import pytest

import augkit.plugin.pytorch as dalitorch
from augkit import fn, ops, types
from augkit.graph import Operator
from augkit.operators.registry import REGISTRY

PUBLIC = [s for s in REGISTRY.values() if s.public]


def _lookup(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("schema", PUBLIC, ids=lambda s: s.name)
def test_every_operator_is_in_fn_and_ops_with_its_arguments(schema):
    fn_root, ops_root = (dalitorch.fn, dalitorch) if schema.module else (fn, ops)
    function = _lookup(fn_root, schema.name)
    cls = _lookup(ops_root, schema.class_name)
    assert inspect.isclass(cls) and issubclass(cls, Operator)
    assert cls.schema is schema
    for arg in schema.arguments:
        assert f"    {arg}:" in function.__doc__ and f"    {arg}:" in cls.__doc__
    for alias in schema.aliases:
        assert getattr(ops_root, alias) is cls
    for alias in schema.fn_aliases:
        assert getattr(fn_root, alias) is function


def test_dali_names_the_tutorial_uses():
    assert ops.FileReader is ops.readers.File
    assert ops.ImageDecoder is ops.decoders.Image
    assert fn.file_reader is fn.readers.file and fn.image_decoder is fn.decoders.image
    for name in ("Resize", "CropMirrorNormalize", "PythonFunction", "DLTensorPythonFunction"):
        assert issubclass(getattr(ops, name), Operator)
    assert dalitorch.TorchPythonFunction.schema.name == "torch_python_function"
    for name in (
        "resize",
        "crop_mirror_normalize",
        "python_function",
        "dl_tensor_python_function",
        "crop",
        "flip",
        "rotate",
        "brightness_contrast",
        "cast",
    ):
        assert callable(getattr(fn, name))
    assert callable(fn.readers.file) and callable(fn.decoders.image)
    assert callable(fn.random.uniform) and callable(fn.random.coin_flip)


@pytest.mark.parametrize("schema", PUBLIC, ids=lambda s: s.name)
def test_one_resolver_finds_an_operator_by_every_name_it_goes_by(schema):
    from augkit.operators.registry import resolve

    fn_prefix, ops_prefix = (
        ("fn.", "ops.")
        if not schema.module
        else (
            f"{schema.module}.fn.",
            f"{schema.module}.",
        )
    )
    names = [schema.name, schema.class_name, f"{fn_prefix}{schema.name}"]
    names += [f"{ops_prefix}{schema.class_name}", *schema.aliases, *schema.fn_aliases]
    for name in names:
        assert resolve(name) is schema, name


def test_the_resolver_suggests_a_close_name():
    from augkit.operators.registry import resolve

    with pytest.raises(KeyError, match=r"Did you mean 'readers\.file'"):
        resolve("readers.fille")


def test_a_call_on_gpu_data_runs_on_the_gpu_unless_told_otherwise():
    # DALI's rule (nvidia.dali.ops._choose_device): without device=, an operator whose inputs
    # include GPU data runs on the GPU. Graph nodes only: nothing is built, so no GPU is needed.
    from augkit.errors import ArgumentError
    from augkit.pipeline import Pipeline

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0)
    with pipe:
        jpegs, labels = fn.readers.file(file_root="data/images")
        images = fn.decoders.image(jpegs, device="mixed")
        assert images.device == "gpu"
        assert fn.flip(images).device == "gpu"
        assert ops.Flip()(images).device == "gpu"
        assert fn.flip([images, images])[1].device == "gpu"  # multiple input sets
        assert fn.cast(labels, dtype=types.INT64).device == "cpu"
        assert fn.flip(images.cpu()).device == "cpu"
        with pytest.raises(ArgumentError, match=r"a CPU operator cannot read GPU data"):
            fn.flip(images, device="cpu")
        # an operator without a GPU kernel stays on the CPU and says why it cannot read it
        assert "gpu" not in REGISTRY["jpeg_compression_distortion"].devices
        with pytest.raises(ArgumentError, match=r"for the CPU only\. Move it with \.cpu\(\)"):
            fn.jpeg_compression_distortion(images)
