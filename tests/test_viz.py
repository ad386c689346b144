"""augkit.viz: image grids as matplotlib figures and as Pillow pictures / PNG bytes."""

from __future__ import annotations

import base64
import dataclasses
import inspect
import io
import pathlib
import pickle
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib import gridspec
from PIL import Image

from augkit import TensorList, fn, grid, kinds, pipeline_def, viz
from augkit.errors import ArgumentError, GraphError

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAD = 4  # pixels around each tile


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def colour_image(height: int, width: int, rgb: tuple[int, int, int]) -> np.ndarray:
    return np.broadcast_to(np.array(rgb, np.uint8), (height, width, 3)).copy()


def photo_like(seed: int, height: int = 24, width: int = 36) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def png_pixels(png: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return np.asarray(image.convert("RGB"))


def figure_pixels(figure) -> np.ndarray:
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].copy()


def titles_of(figure) -> list[str]:
    return [axes.get_title() for axes in figure.axes]


def shown_arrays(figure) -> list[np.ndarray]:
    return [np.asarray(axes.images[0].get_array()) for axes in figure.axes]


def tile_at(pixels: np.ndarray, row: int, column: int, tile: int) -> np.ndarray:
    """The tile square of a grid drawn without titles."""
    top, left = PAD + row * (tile + PAD), PAD + column * (tile + PAD)
    return pixels[top : top + tile, left : left + tile]


# --- what is accepted -------------------------------------------------------------------------
def test_one_axes_per_image_titled_with_source_info():
    batch = TensorList(
        [photo_like(i) for i in range(3)], "HWC", ["people/grace_hopper.jpg", "a/1.jpg", "b/2.jpg"]
    )
    figure = viz.image_grid(batch)
    assert len(figure.axes) == 3
    assert titles_of(figure) == ["people/grace_hopper.jpg", "a/1.jpg", "b/2.jpg"]
    for shown, i in zip(shown_arrays(figure), range(3), strict=True):
        np.testing.assert_array_equal(shown, batch.at(i))


def test_titles_join_source_info_and_labels():
    batch = TensorList([photo_like(0), photo_like(1)], "HWC", ["people/grace_hopper.jpg", ""])
    labels = TensorList([np.array([3], np.int32), np.array([1], np.int32)])
    figure = viz.image_grid(batch, labels=labels)
    assert titles_of(figure) == ["people/grace_hopper.jpg · 3", "1"]
    named = viz.image_grid(batch, labels=["cat", "dog"])
    assert titles_of(named) == ["people/grace_hopper.jpg · cat", "dog"]
    explicit = viz.image_grid(batch, titles=["before", "after"], labels=labels)
    assert titles_of(explicit) == ["before", "after"]


def test_other_ranges_are_rescaled_and_the_title_says_so():
    ramp = np.linspace(-1.0, 2.0, 4 * 6 * 3, dtype=np.float32).reshape(4, 6, 3)
    batch = TensorList([ramp, ramp / 2], "HWC", ["a.jpg", ""])
    figure = viz.image_grid(batch)
    assert titles_of(figure) == ["a.jpg (rescaled from [-1, 2])", "rescaled from [-0.5, 1]"]
    shown = shown_arrays(figure)[0]
    assert shown.dtype == np.uint8 and shown.min() == 0 and shown.max() == 255
    expected = np.round((ramp.astype(np.float64) + 1) * 85).astype(np.uint8)
    np.testing.assert_array_equal(shown, expected)


def test_float_in_unit_range_is_drawn_like_uint8():
    images = [photo_like(i) for i in range(2)]
    floats = [(image / 255).astype(np.float32) for image in images]
    as_uint8 = viz.image_grid_png(images, tile=48)
    as_float = viz.image_grid_png(floats, tile=48)
    np.testing.assert_array_equal(png_pixels(as_float), png_pixels(as_uint8))
    figure = viz.image_grid(TensorList(floats, "HWC", ["x.jpg", "y.jpg"]))
    assert titles_of(figure) == ["x.jpg", "y.jpg"]  # no rescaled note
    np.testing.assert_array_equal(
        figure_pixels(figure),
        figure_pixels(viz.image_grid(TensorList(images, "HWC", ["x.jpg", "y.jpg"]))),
    )


def test_chw_is_drawn_like_its_hwc_transpose():
    hwc = [photo_like(i, 30, 20) for i in range(3)]
    chw = TensorList([np.ascontiguousarray(image.transpose(2, 0, 1)) for image in hwc], "CHW")
    np.testing.assert_array_equal(
        png_pixels(viz.image_grid_png(chw, tile=40)),
        png_pixels(viz.image_grid_png(TensorList(hwc, "HWC"), tile=40)),
    )
    np.testing.assert_array_equal(
        figure_pixels(viz.image_grid(chw)), figure_pixels(viz.image_grid(TensorList(hwc, "HWC")))
    )


def test_chw_without_a_layout_is_recognised_from_its_shape():
    hwc = photo_like(0, 30, 20)
    nchw = np.stack([hwc.transpose(2, 0, 1)] * 2)  # as torchvision makes them
    np.testing.assert_array_equal(
        png_pixels(viz.image_grid_png(nchw, tile=32)),
        png_pixels(viz.image_grid_png([hwc, hwc], tile=32)),
    )


def test_grayscale_hw_and_hw1_are_drawn_as_gray_values_as_they_are():
    gray = np.random.default_rng(0).integers(0, 256, (16, 16), dtype=np.uint8)
    hw = viz.image_grid_png([gray], tile=16)
    hw1 = viz.image_grid_png(TensorList([gray[..., None]], "HWC"), tile=16)
    rgb = viz.image_grid_png([np.repeat(gray[..., None], 3, axis=-1)], tile=16)
    np.testing.assert_array_equal(png_pixels(hw), png_pixels(rgb))
    np.testing.assert_array_equal(png_pixels(hw1), png_pixels(rgb))
    np.testing.assert_array_equal(tile_at(png_pixels(hw), 0, 0, 16)[..., 0], gray)
    # matplotlib would stretch a gray image's own range to black..white: here 100 stays 100
    figure = viz.image_grid([np.full((8, 8), 100, np.uint8)], tile=64)
    pixels = figure_pixels(figure)
    height, width, _ = pixels.shape
    np.testing.assert_array_equal(pixels[height // 2, width // 2], [100, 100, 100])


def test_ragged_batch_each_image_fitted_in_its_tile_aspect_kept():
    wide = colour_image(20, 80, (255, 0, 0))
    tall = colour_image(60, 15, (0, 0, 255))
    small = colour_image(4, 4, (0, 255, 0))
    batch = TensorList([wide, tall, small], "HWC")
    pixels = png_pixels(viz.image_grid_png(batch, tile=64))
    assert pixels.shape == (PAD + 64 + PAD, 3 * (64 + PAD) + PAD, 3)
    red = (tile_at(pixels, 0, 0, 64) == [255, 0, 0]).all(axis=-1)
    assert red.sum() == 64 * 16 and red[:16].all()  # 80x20 -> 64x16, under the title band
    blue = (tile_at(pixels, 0, 1, 64) == [0, 0, 255]).all(axis=-1)
    assert blue.sum() == 64 * 16  # 15x60 -> 16x64
    green = (tile_at(pixels, 0, 2, 64) == [0, 255, 0]).all(axis=-1)
    assert green.all()  # 4x4 enlarged to the whole tile
    figure = viz.image_grid(batch)
    assert len(figure.axes) == 3
    assert [a.shape for a in shown_arrays(figure)] == [(20, 80, 3), (60, 15, 3), (4, 4, 3)]


def test_two_batches_side_by_side_row_per_sample():
    before = TensorList([photo_like(i) for i in range(3)], "HWC", ["a.jpg", "b.jpg", "c.jpg"])
    after = TensorList([photo_like(10 + i) for i in range(3)], "HWC", ["a.jpg", "b.jpg", "c.jpg"])
    figure = viz.image_grid(before, after)
    assert len(figure.axes) == 6
    expected = [before.at(0), after.at(0), before.at(1), after.at(1), before.at(2), after.at(2)]
    for shown, image in zip(shown_arrays(figure), expected, strict=True):
        np.testing.assert_array_equal(shown, image)
    boxes = [axes.get_position() for axes in figure.axes]
    assert boxes[1].x0 > boxes[0].x1 and boxes[1].y0 == pytest.approx(boxes[0].y0)  # same row
    assert boxes[2].x0 == pytest.approx(boxes[0].x0) and boxes[2].y1 < boxes[0].y0  # next row
    assert titles_of(figure)[:2] == ["a.jpg", "a.jpg"]
    pixels = png_pixels(viz.image_grid_png(before.as_array(), after.as_array(), tile=36))
    assert pixels.shape == (3 * (36 + PAD) + PAD, 2 * (36 + PAD) + PAD, 3)
    np.testing.assert_array_equal(tile_at(pixels, 1, 1, 36)[:24], after.at(1))


def test_batches_of_different_sizes_are_refused():
    with pytest.raises(ValueError, match=r"same number of samples, got \[2, 3\]"):
        viz.image_grid([photo_like(0)] * 2, [photo_like(0)] * 3)


def test_debug_node_and_labels_node_are_accepted(image_dir):
    nodes = []

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=1, debug=True)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(image_dir))
        images = fn.decoders.image(jpegs)
        small = fn.resize(images, resize_x=40, resize_y=30)
        nodes.append((images, small, labels))
        return small

    pipe().run()
    images, small, labels = nodes[0]
    assert labels.get().kind == kinds.LABELS
    figure = viz.image_grid(images, small, labels=labels)
    assert len(figure.axes) == 6
    assert titles_of(figure)[:2] == ["animals/chelsea_cat.jpg · 0"] * 2
    assert titles_of(viz.show_images(images, labels=labels))[:1] == ["animals/chelsea_cat.jpg · 0"]
    np.testing.assert_array_equal(shown_arrays(figure)[1], small.get().at(0))
    png = viz.image_grid_png(small, tile=40)
    assert png_pixels(png).shape[1] == 3 * (40 + PAD) + PAD


def test_node_of_a_normal_pipeline_says_it_holds_no_batch():
    nodes = []

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=str(ROOT / "data" / "images"))
        nodes.append(fn.decoders.image(jpegs))
        return nodes[0]

    pipe().build()
    with pytest.raises(GraphError, match="holds no batch"):
        viz.image_grid(nodes[0])


def test_numpy_batch_list_of_arrays_and_torch_batch_are_accepted():
    images = [photo_like(i) for i in range(4)]
    from_list = png_pixels(viz.image_grid_png(images, tile=36))
    np.testing.assert_array_equal(
        png_pixels(viz.image_grid_png(np.stack(images), tile=36)), from_list
    )
    np.testing.assert_array_equal(
        png_pixels(viz.image_grid_png(tuple(TensorList(images, "HWC")), tile=36)), from_list
    )
    torch = pytest.importorskip("torch")
    nchw = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255
    np.testing.assert_array_equal(png_pixels(viz.image_grid_png(nchw, tile=36)), from_list)
    assert len(viz.image_grid(nchw).axes) == 4


def test_one_image_given_as_an_array_is_refused_with_a_hint():
    with pytest.raises(ValueError, match=r"looks like one HWC image.*\[image\]"):
        viz.image_grid(photo_like(0))


def test_a_sample_that_is_not_an_image_is_named():
    with pytest.raises(ValueError, match=r"sample 1 of batch 1 is not an image: shape \(5,\)"):
        viz.image_grid([photo_like(0)] * 2, [photo_like(0), np.zeros(5)])


# --- what is drawn: by the batch's kind ---------------------------------------------------------
def test_labels_after_their_images_title_them_and_labels_alone_are_refused():
    images = TensorList([photo_like(0), photo_like(1)], "HWC", ["a.jpg", "b.jpg"], kind=kinds.IMAGE)
    labels = TensorList([np.array([3], np.int32), np.array([1], np.int32)], kind=kinds.LABELS)
    assert titles_of(viz.show_images(images, labels=labels)) == ["a.jpg · 3", "b.jpg · 1"]
    # By their kind, labels after the images are those images' labels (pipe.run()'s order).
    assert titles_of(viz.show_images(images, labels)) == ["a.jpg · 3", "b.jpg · 1"]
    named = viz.show_images(images, labels, class_names={3: "people"})
    assert titles_of(named) == ["a.jpg · 3 people", "b.jpg · 1"]
    with pytest.raises(ArgumentError, match=r"^the batch is of kind labels.*pass them as labels="):
        viz.image_grid_png(labels)
    with pytest.raises(ArgumentError, match=r"^batch 0 is of kind labels.*after the images"):
        viz.image_grid_png(labels, images)


NOT_PIXELS = {
    "boxes": r"boxes are coordinates, not pixels; draw the images they belong to",
    "keypoints": r"keypoints are coordinates",
    "polygons": r"polygons are coordinates",
    "vertices": r"vertices are coordinates",
    "encoded": r"a file's bytes, not pixels; decode them first \(fn.decoders.image\)",
}


@pytest.mark.parametrize("name", list(NOT_PIXELS))
def test_kinds_that_are_not_pixels_are_never_drawn_whatever_their_shape(name):
    """4 x 4 values of a kind that is not pixels: as generic values, a gray 4 x 4 picture."""
    values = [np.full((4, 4), 100, np.uint8)] * 2
    assert png_pixels(viz.image_grid_png(TensorList(values), tile=4)).shape == (12, 20, 3)
    batch = TensorList(values, kind=kinds.parse(name))
    for draw in (viz.image_grid, viz.image_grid_png, viz.show_images, viz.render_grid):
        with pytest.raises(ArgumentError, match=rf"kind {name}\b.*{NOT_PIXELS[name]}"):
            draw(batch)
    assert batch._repr_png_() is None and not grid.looks_like_images(batch)
    assert TensorList(values)._repr_png_() is not None  # generic: by its shape, as before


def test_a_mask_is_coloured_by_class():
    classes = np.array([[0, 1], [2, 13]], np.uint8)  # 13: the colours repeat from class 12
    mask = TensorList([np.kron(classes, np.ones((8, 8), np.uint8))], kind=kinds.MASK)
    blue = (31, 119, 180)  # class 2, and 13
    expected = {(0, 0): (0, 0, 0), (0, 1): (255, 255, 255), (1, 0): blue, (1, 1): blue}
    pixels = tile_at(png_pixels(viz.image_grid_png(mask, tile=16)), 0, 0, 16)
    for (row, column), colour in expected.items():
        assert tuple(pixels[row * 8 + 4, column * 8 + 4]) == colour
    np.testing.assert_array_equal(
        png_pixels(mask._repr_png_()), np.asarray(viz.render_grid(mask, tile=256))
    )
    shown = shown_arrays(viz.image_grid(mask))[0]
    assert tuple(shown[12, 12]) == blue and tuple(shown[4, 12]) == (255, 255, 255)
    # As a uint8 image, classes 0, 1, 2 are all but black; a bool mask is classes 0 and 1.
    gray = tile_at(png_pixels(viz.image_grid_png(TensorList(mask.as_array()), tile=16)), 0, 0, 16)
    assert gray.max() == 13
    flags = TensorList([classes.astype(bool)], kind=kinds.MASK)
    drawn = tile_at(png_pixels(viz.image_grid_png(flags, tile=2)), 0, 0, 2)
    assert drawn[0].tolist() == [[0, 0, 0], [255, 255, 255]]


def test_a_soft_mask_is_drawn_as_an_image():
    soft = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
    as_mask = viz.image_grid_png(TensorList([soft], kind=kinds.MASK), tile=4)
    np.testing.assert_array_equal(
        png_pixels(as_mask), png_pixels(viz.image_grid_png([soft], tile=4))
    )


def test_bool_batches_are_drawn_when_their_kind_says_pixels():
    flags = [np.eye(4, dtype=bool)]
    assert TensorList(flags)._repr_png_() is None  # generic bool: flags, not pixels
    assert TensorList(flags, kind=kinds.IMAGE)._repr_png_() is not None


def test_columns_titles_and_max_samples():
    images = [photo_like(i) for i in range(20)]
    figure = viz.image_grid(images)
    assert len(figure.axes) == 16  # max_samples
    assert len(viz.image_grid(images, max_samples=None).axes) == 20
    pixels = png_pixels(viz.image_grid_png(images[:6], columns=3, tile=30))
    assert pixels.shape == (2 * (30 + PAD) + PAD, 3 * (30 + PAD) + PAD, 3)
    with pytest.raises(ValueError, match="titles has 1 entries for 2 images"):
        viz.image_grid(images[:2], titles=["one"])


def test_nan_is_drawn_black_without_warnings():
    image = np.full((4, 4, 3), 0.5, np.float32)
    image[0, 0] = np.nan
    shown = shown_arrays(viz.image_grid([image]))[0]
    assert shown[0, 0].tolist() == [0, 0, 0] and shown[1, 1].tolist() == [128, 128, 128]


# --- the PNG path -----------------------------------------------------------------------------
def test_png_grid_size_follows_the_layout_and_tiles_hold_the_colours():
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (200, 100, 50), (10, 20, 30)]
    batch = [colour_image(50, 50, c) for c in colours]
    pixels = png_pixels(viz.image_grid_png(batch, tile=50))
    assert pixels.shape == (2 * (50 + PAD) + PAD, 4 * (50 + PAD) + PAD, 3)
    for index, colour in enumerate(colours):
        square = tile_at(pixels, index // 4, index % 4, 50)
        assert (square == colour).all()
    assert (tile_at(pixels, 1, 1, 50) == 255).all()  # no sixth image: background


def test_png_titles_add_a_band_above_each_row():
    batch = TensorList([colour_image(50, 50, (0, 0, 255))] * 2, "HWC", ["a.jpg", "b.jpg"])
    picture = viz.render_grid(batch, tile=50)
    band = grid.title_height(50)
    assert picture.size == (2 * (50 + PAD) + PAD, band + 50 + 2 * PAD)
    pixels = np.asarray(picture)
    assert (pixels[PAD + band : PAD + band + 50, PAD : PAD + 50] == [0, 0, 255]).all()
    title = pixels[PAD : PAD + band, PAD : PAD + 50]
    assert (title < 100).all(axis=-1).any()  # dark text drawn in the band


def test_tensorlist_repr_png_still_uses_the_grid_with_source_info():
    batch = TensorList([colour_image(20, 30, (0, 128, 0))] * 2, "HWC", ["a.jpg", "b.jpg"])
    np.testing.assert_array_equal(
        png_pixels(batch._repr_png_()), np.asarray(viz.render_grid(batch, tile=256))
    )


# --- matplotlib: pyplot, notebooks, the tutorial ----------------------------------------------
def test_tutorial_show_images_loop_still_works():
    batch = TensorList([photo_like(i) for i in range(4)], "HWC")
    plt.figure(figsize=(32, 8))
    spec = gridspec.GridSpec(1, 4)
    for j in range(4):
        plt.subplot(spec[j])
        plt.axis("off")
        plt.imshow(batch.at(j))
    np.testing.assert_array_equal(plt.gca().images[0].get_array(), batch.at(3))
    plt.imshow(batch[0])  # a Tensor is array-like too
    np.testing.assert_array_equal(plt.gca().images[-1].get_array(), batch.at(0))


def test_image_grid_is_not_left_open_in_pyplot_and_pickles():
    figure = viz.image_grid([photo_like(0)])
    assert plt.get_fignums() == []
    copy = pickle.loads(pickle.dumps(figure))
    assert type(copy).__name__ == "GridFigure" and len(copy.axes) == 1


def test_show_images_with_a_file_backend_leaves_the_figure_to_pyplot():
    figure = viz.show_images([photo_like(0), photo_like(1)])
    assert plt.get_fignums() == [figure.number]  # for plt.savefig, as the tutorial's figures
    assert len(figure.axes) == 2


def test_show_images_with_no_backend_chosen_shows_nothing_and_leaves_nothing(monkeypatch):
    monkeypatch.setattr(viz, "_chosen_backend", lambda: None)
    figure = viz.show_images([photo_like(0)])
    assert plt.get_fignums() == [] and len(figure.axes) == 1


def test_viz_imports_without_matplotlib_and_renders_png():
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import numpy as np\n"
        "from augkit import viz\n"
        "png = viz.image_grid_png([np.zeros((4, 4, 3), np.uint8)], tile=8)\n"
        "assert png.startswith(b'\\x89PNG')\n"
        "try:\n"
        "    viz.image_grid([np.zeros((4, 4, 3), np.uint8)])\n"
        "except ImportError:\n"
        "    print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.slow
def test_in_a_notebook_each_grid_is_shown_once():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "import numpy as np\nfrom augkit import TensorList, viz\n"
        "b = TensorList([np.full((20, 30, 3), 9, np.uint8)] * 3, 'HWC', ['x.jpg'] * 3)",
        "viz.show_images(b)",
        "for _ in range(2):\n    viz.show_images(b)",
        "figure = viz.show_images(b, b)\nfigure",
        "figure",
        "viz.image_grid(b)",
        "import matplotlib.pyplot as plt\nplt.get_fignums()",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()

    def images(cell):
        found = []
        for output in cell.outputs:
            data = output.get("data", {})
            if "image/png" in data:
                png = base64.b64decode(data["image/png"])
                found.append((Image.open(io.BytesIO(png)).size, data["text/plain"]))
        return found

    one_batch = ((784, 284), "<GridFigure size 784x284 with 3 Axes>")
    assert images(notebook.cells[1]) == [one_batch]  # the cell's value is not shown again
    assert images(notebook.cells[2]) == [one_batch] * 2
    assert [size for size, _ in images(notebook.cells[3])] == [(524, 844)]
    assert [size for size, _ in images(notebook.cells[4])] == [(524, 844)]  # a later cell shows it
    assert images(notebook.cells[5]) == [one_batch]
    assert notebook.cells[6].outputs[0]["data"]["text/plain"] == "[]"  # nothing left open


@pytest.mark.gpu
def test_gpu_batches_are_drawn_like_their_host_copies():
    import cupy

    rng = np.random.default_rng(3)
    host = [rng.integers(0, 255, (24, 32, 3), dtype=np.uint8) for _ in range(3)]
    on_gpu = TensorList([cupy.asarray(x) for x in host], "HWC", ["a", "b", "c"])
    assert on_gpu.device == "gpu"
    want = viz.image_grid_png(TensorList(host, "HWC", ["a", "b", "c"]), columns=3)
    assert viz.image_grid_png(on_gpu, columns=3) == want
    assert viz.image_grid_png([cupy.asarray(x) for x in host], columns=3) == viz.image_grid_png(
        host, columns=3
    )


def test_every_grid_function_takes_the_keywords_of_grid_options():
    fields = [f.name for f in dataclasses.fields(viz.GridOptions)]
    for function in (viz.render_grid, viz.image_grid_png, viz.image_grid, viz.show_images):
        signature = inspect.signature(function)
        expected = fields if function in (viz.image_grid, viz.show_images) else fields[:-1]
        assert list(signature.parameters) == ["batches", *expected], function.__name__
        assert signature.parameters["tile"].default == 256
        assert signature.parameters["max_samples"].default == 16
        with pytest.raises(
            TypeError, match=rf"{function.__name__}\(\) got an unexpected .*'tiles'"
        ):
            function(np.zeros((1, 8, 8), np.uint8), tiles=32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'figsize'"):
        viz.render_grid(np.zeros((1, 8, 8), np.uint8), figsize=(2, 2))


def test_render_with_grid_options_draws_what_the_keywords_draw():
    batch = TensorList([photo_like(k) for k in range(3)], "HWC", ["a", "b", "c"])
    boxes = [np.array([[0.1, 0.2, 0.6, 0.7]], np.float32)] * 3
    keywords = {"columns": 2, "titles": ["x", "y", "z"], "boxes": boxes, "tile": 48}
    drawn = viz.render([batch], viz.GridOptions(**keywords))
    assert drawn.size == (2 * (48 + PAD) + PAD, 2 * (grid.title_height(48) + 48 + PAD) + PAD)
    np.testing.assert_array_equal(np.asarray(drawn), np.asarray(viz.render_grid(batch, **keywords)))
    # The boxes are drawn: the same grid without them differs.
    bare = viz.render_grid(batch, columns=2, titles=["x", "y", "z"], tile=48)
    assert not np.array_equal(np.asarray(drawn), np.asarray(bare))
