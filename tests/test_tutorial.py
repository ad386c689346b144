"""DALI's "Python Operators" tutorial, imports swapped, runs on augkit without a GPU and gives
what the tutorial says; the same pipelines in the functional style give the same batches."""

from __future__ import annotations

import pathlib
import runpy

import matplotlib
import numpy as np
import pytest

from augkit import Pipeline, fn, pipeline_def, types
from augkit.plugin.pytorch import fn as torch_fn

ROOT = pathlib.Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "examples" / "python_operators_tutorial.py"


@pytest.fixture(scope="module")
def tutorial() -> dict:
    """The tutorial's namespace after running all of it (figures drawn with Agg)."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")  # count only the tutorial's own figures
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        namespace = runpy.run_path(str(TUTORIAL))
    assert len(plt.get_fignums()) == 4  # show_images drew all four grids
    plt.close("all")
    return namespace


def _inputs(tutorial: dict) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The two resized batches the tutorial's pipelines start from (same seed, same readers)."""

    class Loaded(tutorial["CommonPipeline"]):
        def define_graph(self):
            return tuple(self.load())

    first, second = Loaded(4, 2, 0, str(ROOT / "data" / "images")).run()
    return [first.at(i) for i in range(4)], [second.at(i) for i in range(4)]


def _circle(h: int, w: int) -> np.ndarray:
    y, x = np.ogrid[0:h, 0:w]
    return (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9


def test_edit_images_swaps_outside_the_circle(tutorial):
    ims1, ims2 = tutorial["ims1"], tutorial["ims2"]
    first, second = _inputs(tutorial)
    outside = _circle(300, 300)
    for i in range(4):
        a, b = ims1.at(i), ims2.at(i)
        assert a.shape == (300, 300, 3) and a.dtype == np.uint8
        np.testing.assert_array_equal(a[~outside], first[i][~outside])
        np.testing.assert_array_equal(a[outside], second[i][outside])
        np.testing.assert_array_equal(b[~outside], second[i][~outside])
        np.testing.assert_array_equal(b[outside], first[i][outside])
    # two shuffled readers with different seeds: the pairs are not the same photos
    assert any(not np.array_equal(first[i], second[i]) for i in range(4))
    assert ims1.layout() == "" and ims1.source_info(0).endswith(".jpg")


def test_torch_pipeline_outputs(tutorial):
    x, y = tutorial["x"], tutorial["y"]
    first, _ = _inputs(tutorial)
    for i in range(4):
        warped = x.at(i)
        # CropMirrorNormalize(std=255, mean=0) -> float CHW in [0, 1]; perspective -> HWC
        assert warped.shape == (300, 300, 3) and warped.dtype == np.float32
        assert warped.min() >= 0.0 and warped.max() <= 1.0
        # RandomPerspective moved pixels: the corners are filled with 0
        assert not np.allclose(warped, first[i] / 255.0, atol=0.05)
        # DLTensorPythonFunction got the whole batch and reversed it
        expected = np.sqrt(first[3 - i].astype(np.float32) / 255.0)
        np.testing.assert_allclose(y.at(i), expected, rtol=1e-6)


def test_norm_gives_chw_in_unit_range(tutorial):
    class Normalized(tutorial["CommonPipeline"]):
        def __init__(self, *args):
            super().__init__(*args)
            self.norm = tutorial["ops"].CropMirrorNormalize(std=255.0, mean=0.0)

        def define_graph(self):
            images, _ = self.load()
            return (self.norm(images),)

    (out,) = Normalized(4, 2, 0, str(ROOT / "data" / "images")).run()
    first, _ = _inputs(tutorial)
    assert out.layout() == "CHW" and out.dtype == types.FLOAT
    np.testing.assert_allclose(out.at(0), np.moveaxis(first[0], -1, 0) / 255.0, rtol=1e-6)


def test_functional_style_gives_the_same_batches(tutorial):
    image_dir = str(ROOT / "data" / "images")

    @pipeline_def(batch_size=4, num_threads=3, device_id=0, seed=99)
    def python_func_pipeline():
        jpegs1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        jpegs2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        images = [
            fn.decoders.image(j, device="cpu", output_type=types.RGB) for j in (jpegs1, jpegs2)
        ]
        images = [fn.resize(im, resize_x=300, resize_y=300) for im in images]
        return fn.python_function(*images, function=tutorial["edit_images"], num_outputs=2)

    res1, res2 = python_func_pipeline().run()
    for i in range(4):
        np.testing.assert_array_equal(res1.at(i), tutorial["ims1"].at(i))
        np.testing.assert_array_equal(res2.at(i), tutorial["ims2"].at(i))

    pipe = Pipeline(batch_size=4, num_threads=1, device_id=0, seed=99)
    with pipe:
        jpegs1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        jpegs2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        decoded = [fn.decoders.image(j, output_type=types.RGB) for j in (jpegs1, jpegs2)]
        # both resizes are created, as in the tutorial's load(), so operator seeds line up
        images, _ = (fn.resize(im, resize_x=300, resize_y=300) for im in decoded)
        warped = torch_fn.torch_python_function(
            fn.crop_mirror_normalize(images, std=255.0, mean=0.0),
            function=tutorial["perspective"],
        )
        reversed_sqrt = fn.dl_tensor_python_function(
            images, function=tutorial["dlpack_manipulation"]
        )
        pipe.set_outputs(warped, reversed_sqrt)
    x, y = pipe.run()
    for i in range(4):
        np.testing.assert_array_equal(x.at(i), tutorial["x"].at(i))
        np.testing.assert_array_equal(y.at(i), tutorial["y"].at(i))


def test_results_do_not_depend_on_num_threads(tutorial):
    image_dir = str(ROOT / "data" / "images")
    one = tutorial["TorchFuncPipeline"](4, 1, 0, image_dir).run()
    four = tutorial["TorchFuncPipeline"](4, 4, 0, image_dir).run()
    for a, b in zip(one, four, strict=True):
        for i in range(4):
            np.testing.assert_array_equal(a.at(i), b.at(i))
