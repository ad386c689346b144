"""The Viewer without a browser: its buttons, node picker, sliders, error panel and
``update()``, asserted on the PNG it displays and on which operators ran (``pipe.profile()``)."""

from __future__ import annotations

import functools
import html
import io
import pathlib
import time
from typing import Annotated

import ipywidgets as widgets
import numpy as np
import pytest
from PIL import Image

from augkit import ArgumentError, GraphError, Pipeline, fn, grid, kinds, pipeline_def, types
from augkit.widgets import Viewer as _Viewer

TILE = 96
COLUMNS = 4
BATCH = 6


def brighten(image, amount=20):
    if amount > 250:
        raise ValueError(f"amount too large: {amount}")
    return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)


def darken(image, amount=20):
    return np.clip(image.astype(np.int16) - amount, 0, 255).astype(np.uint8)


def make_pipe(
    image_dir: pathlib.Path,
    function=brighten,
    *,
    rotate: bool = True,
    prefetch: bool = False,
    batch_size: int = BATCH,
) -> Pipeline:
    """reader -> decode -> resize 64x64 -> [rotate by a random angle] -> Python function."""
    settings = {} if prefetch else {"exec_async": False, "exec_pipelined": False}
    pipe = Pipeline(batch_size=batch_size, num_threads=2, device_id=None, seed=7, **settings)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(image_dir), name="reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
        images = fn.resize(images, resize_x=64, resize_y=64, name="resize")
        if rotate:
            angle = fn.random.uniform(range=(-40.0, 40.0), name="angle")
            images = fn.rotate(images, angle=angle, keep_size=True, fill_value=0, name="rotate")
        images = fn.python_function(images, function=function, name="edit")
        pipe.set_outputs(images, labels)
    return pipe


@pytest.fixture
def pipe(image_dir):
    pipe = make_pipe(image_dir)
    yield pipe
    pipe.close()


@pytest.fixture
def viewer(pipe):
    return Viewer(pipe, columns=COLUMNS, tile=TILE)


def Viewer(pipe: Pipeline, **kwargs) -> _Viewer:
    """The Viewer with PNG grids: these tests check pixels exactly, which JPEG (the default
    transport) would not keep; test_grid_travels_as_jpeg_by_default checks the default."""
    return _Viewer(pipe, **{"image_format": "png", **kwargs})


def calls(pipe: Pipeline) -> dict[str, int]:
    """How many times each operator has run so far."""
    return {row["operator"]: row["calls"] for row in pipe.profile().rows}


def picture(viewer: Viewer) -> Image.Image:
    image = Image.open(io.BytesIO(viewer.image.value))
    assert image.format == "PNG"
    return image.convert("RGB")


def wait_for_prefetched(pipe: Pipeline, timeout: float = 30.0) -> None:
    """Wait until the pipeline's background thread has computed every batch it may compute
    ahead (``prefetch_queue_depth``): what a change of function must not let through."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # DALI's rule: prefetch_queue_depth - 1 batches ahead of the last run() (augkit.prefetch)
        queue = list(pipe._runner._prefetcher._queue)
        ahead = pipe.prefetch_queue_depth - 1
        if len(queue) == ahead and all(i.result.done() for i in queue):
            return
        time.sleep(0.01)
    raise AssertionError("the prefetching thread computed nothing ahead")


def tile_content(viewer: Viewer, index: int) -> tuple[int, int]:
    """Width and height of what is drawn in tile ``index`` (its non-white part)."""
    band = grid.title_height(TILE)
    left = 4 + (index % COLUMNS) * (TILE + 4)
    top = 4 + (index // COLUMNS) * (band + TILE + 4) + band
    tile = np.asarray(picture(viewer).crop((left, top, left + TILE, top + TILE)))
    rows, cols = np.nonzero((tile != 255).any(axis=-1))
    return int(cols.max() - cols.min() + 1), int(rows.max() - rows.min() + 1)


# --- what is shown ------------------------------------------------------------------------------
def test_shows_the_first_image_output_with_every_node_to_pick(viewer, pipe):
    assert viewer.error.value == ""
    assert viewer.node_picker.value == "edit"
    options = dict(viewer.node_picker.options)
    assert options == {
        "reader[0]": "reader[0]",
        "reader[1] (output 1)": "reader[1]",
        "decode": "decode",
        "resize": "resize",
        "angle": "angle",
        "rotate": "rotate",
        "edit (output 0)": "edit",
    }
    rows = -(-BATCH // COLUMNS)
    width = COLUMNS * (TILE + 4) + 4
    height = rows * (grid.title_height(TILE) + TILE + 4) + 4
    assert picture(viewer).size == (width, height)
    assert viewer.batch is pipe.value("edit")
    assert "6 samples" in viewer.summary.value and "(64, 64, 3)" in viewer.summary.value


def test_titles_carry_label_and_source_file(viewer, pipe):
    labels = pipe.value("reader[1]")
    sources = pipe.value("edit").source_info()
    names = pipe.class_names()  # readers.file's class folders, by label
    assert viewer._titles(viewer.batch) == [
        f"{sources[i]} · {int(labels.at(i)[0])} {names[int(labels.at(i)[0])]}" for i in range(BATCH)
    ]
    assert sources[0] == "animals/chelsea_cat.jpg"
    assert viewer._titles(viewer.batch)[0] == "animals/chelsea_cat.jpg · 0 animals"


def test_max_samples_limits_the_tiles(pipe):
    viewer = Viewer(pipe, columns=2, max_samples=3, tile=TILE)
    band = grid.title_height(TILE)
    assert picture(viewer).size == (2 * (TILE + 4) + 4, 2 * (band + TILE + 4) + 4)
    assert "the first 3 shown" in viewer.summary.value
    assert len(viewer.batch) == BATCH


def test_output_argument_picks_the_first_node(pipe):
    assert Viewer(pipe, output="resize").node_picker.value == "resize"
    assert Viewer(pipe, output=0).node_picker.value == "edit"
    with pytest.raises(GraphError, match=r"no node named 'resise'.*Did you mean 'resize'"):
        Viewer(pipe, output="resise")


def test_a_bare_viewer_displays_as_its_widget(viewer):
    bundle = viewer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == viewer.root.model_id
    assert viewer.image in viewer.root.children


def test_where_widgets_are_not_rendered_the_text_says_what_is_shown(viewer):
    """GitHub, nbviewer and a notebook opened without a kernel show the text/plain fallback:
    the viewer's own summary, not a cut ``VBox(children=(HBox(...`` repr."""
    viewer.sliders["edit"]["amount"].value = 35
    text = viewer._repr_mimebundle_()["text/plain"]
    assert text == repr(viewer)
    assert text.splitlines() == [
        "Viewer: edit (output 0): 6 samples, UINT8, layout none, kind generic, shape (64, 64, 3)",
        "fn.python_function(..., function=functools.partial(brighten, amount=35))  # edit",
        "(a live widget: its buttons and sliders work in a running Jupyter kernel)",
    ]
    viewer.show("reader[1]")
    assert repr(viewer).splitlines()[0] == (
        "Viewer: reader[1] (output 1): 6 samples, INT32, layout none, kind labels, shape (1,)"
    )

    def broken(image, amount=20):
        raise RuntimeError("broken on purpose")

    viewer.update(brighten=broken)
    error = repr(viewer).splitlines()[-2]
    assert error.startswith("error: OperatorError: operator edit (function ")
    assert error.endswith(
        "broken), sample #0 (animals/chelsea_cat.jpg): RuntimeError: broken on purpose"
    )


# --- buttons -------------------------------------------------------------------------------------
def test_next_batch_shows_the_next_samples(viewer, pipe):
    before, files = viewer.image.value, viewer.batch.source_info()
    viewer.next_button.click()
    assert viewer.error.value == ""
    assert viewer.image.value != before
    assert viewer.batch.source_info() == [
        "objects/clock_motion_blur.jpg",
        "objects/coffee_cup.jpg",
        "objects/greek_coins.jpg",
        "people/astronaut_eileen_collins.jpg",
        "people/cameraman.jpg",
        "people/grace_hopper.jpg",
    ]
    assert viewer.batch.source_info() != files
    assert calls(pipe)["decode"] == 2


def test_rerun_draws_new_angles_for_the_same_samples(viewer, pipe):
    before, files = viewer.image.value, viewer.batch.source_info()
    angles = pipe.value("angle").as_array()
    resized = pipe.value("resize").as_array()
    read = calls(pipe)["reader"]
    viewer.rerun_button.click()
    assert viewer.image.value != before
    assert viewer.batch.source_info() == files
    assert not np.array_equal(pipe.value("angle").as_array(), angles)
    assert np.array_equal(pipe.value("resize").as_array(), resized)
    assert calls(pipe)["reader"] == read  # nothing read again (decoded again: see rerun())


def test_rerun_without_randomness_shows_the_same_picture(image_dir):
    viewer = Viewer(make_pipe(image_dir, rotate=False), tile=TILE)
    before = viewer.image.value
    viewer.rerun_button.click()
    assert viewer.error.value == ""
    assert viewer.image.value == before


def test_reset_shows_the_first_batch_of_the_epoch_again(image_dir):
    viewer = Viewer(make_pipe(image_dir, rotate=False), tile=TILE)
    first = viewer.image.value
    viewer.next_button.click()
    assert viewer.image.value != first
    viewer.reset_button.click()
    assert viewer.image.value == first
    assert viewer.batch.source_info()[0] == "animals/chelsea_cat.jpg"


def test_timings_table_lists_every_operator_while_open(viewer, pipe):
    viewer.next_button.click()
    assert viewer.timings.value == ""  # closed: not filled (no update for a hidden table)
    viewer._timings_box.selected_index = 0  # opened: filled at once
    for name in ("reader", "decode", "resize", "angle", "rotate", "edit"):
        assert f"<td>{name}</td>" in viewer.timings.value
    assert "<td>decoders.image</td>" in viewer.timings.value
    before = viewer.timings.value
    viewer.next_button.click()  # ...and kept up to date while open
    assert viewer.timings.value != before


# --- node picker -------------------------------------------------------------------------------
def test_picking_an_intermediate_node_shows_its_batch(viewer, pipe):
    viewer.node_picker.value = "decode"
    assert viewer.error.value == ""
    assert viewer.batch is pipe.value("decode")
    assert viewer.batch.shape()[0] == (300, 451, 3)  # chelsea_cat.jpg as decoded
    assert "5 shapes: (300, 451, 3), (300, 300, 3), (300, 451, 3), …" in viewer.summary.value
    # Decoded at 451 x 300, the photo fills the tile's width, and 2/3 of its height.
    assert tile_content(viewer, 0) == (TILE, round(TILE * 300 / 451))

    viewer.show("resize")
    assert viewer.batch.shape() == [(64, 64, 3)] * BATCH
    assert tile_content(viewer, 0) == (TILE, TILE)
    assert viewer.node_picker.value == "resize"


def test_the_picked_node_stays_picked_across_batches(viewer, pipe):
    viewer.show("rotate")
    viewer.next_button.click()
    assert viewer.node_picker.value == "rotate"
    assert viewer.batch is pipe.value("rotate")


def test_a_node_without_images_is_shown_as_a_table(viewer, pipe):
    viewer.show("angle")
    assert viewer.image.layout.display == "none"
    angles = pipe.value("angle").as_array()
    assert f"{angles[0]:.4f}" in viewer.values.value
    viewer.show("edit")
    assert viewer.image.layout.display is None
    assert viewer.values.value == ""


def quality(image):
    """An int32 value of shape (1,) per sample, as the reader's labels are, but not a label:
    100 and more, where the labels of data/images are 0 to 4."""
    return np.array([100 + int(image.mean())], np.int32)


def quarters(image):
    return np.full((4, 4), 0.25, np.float32)


def bright_mask(image):
    return (image[..., 0] > 128).astype(np.uint8)


def flags_of(image):
    return np.ones((4, 4), np.bool_)


def kinds_pipe(image_dir: pathlib.Path, *, with_labels: bool = True) -> Pipeline:
    """images (64x64), a Python function's int32 (1,) quality, [the reader's labels], and
    Python functions' outputs of image-like shape declared as boxes, as a mask, and not at all,
    and a bool one."""
    pipe = Pipeline(
        batch_size=BATCH,
        num_threads=1,
        device_id=None,
        seed=7,
        exec_async=False,
        exec_pipelined=False,
    )
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(image_dir), name="reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
        images = fn.resize(images, resize_x=64, resize_y=64, name="resize")
        score = fn.python_function(images, function=quality, name="quality")
        boxes = fn.python_function(images, function=quarters, kind="boxes", name="boxes")
        mask = fn.python_function(images, function=bright_mask, kind="mask", name="mask")
        table = fn.python_function(images, function=quarters, name="table")
        flags = fn.python_function(images, function=flags_of, name="flags")
        outputs = [images, score, *([labels] if with_labels else []), boxes, mask, table, flags]
        pipe.set_outputs(*outputs)
    return pipe


def test_titles_come_from_the_labels_output_not_from_another_int32_value(image_dir):
    pipe = kinds_pipe(image_dir)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.node_picker.value == "resize"
    labels = pipe.value("reader[1]")
    scores = pipe.value("quality")
    sources = pipe.value("resize").source_info()
    # What the old guess took for labels ("the first int32 output of shape (1,)"): not them.
    assert scores.dtype == types.INT32 and scores.shape() == [(1,)] * BATCH
    assert all(scores.at(i)[0] >= 100 for i in range(BATCH))
    names = pipe.class_names()
    assert viewer._titles(viewer.batch) == [
        f"{sources[i]} · {int(labels.at(i)[0])} {names[int(labels.at(i)[0])]}" for i in range(BATCH)
    ]
    pipe.close()


def test_without_a_labels_output_no_tile_is_titled_with_a_label(image_dir):
    pipe = kinds_pipe(image_dir, with_labels=False)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer._titles(viewer.batch) == pipe.value("resize").source_info()
    pipe.close()


def test_what_is_drawn_follows_the_kind_not_the_shape(image_dir):
    pipe = kinds_pipe(image_dir)
    viewer = Viewer(pipe, tile=TILE)
    assert [pipe.value(n).kind.name for n in ("boxes", "mask", "table", "flags")] == [
        "boxes",
        "mask",
        "generic",
        "generic",
    ]
    viewer.show("boxes")  # 4 x 4 floats: a gray picture by shape, but declared boxes
    assert viewer.image.layout.display == "none"
    assert "kind boxes (ltrb, relative): coordinates, not pixels" in viewer.values.value
    assert "kind boxes (ltrb, relative), shape (4, 4)" in viewer.summary.value
    viewer.show("table")  # the same values, kind generic: drawn by their shape, as before
    assert viewer.image.layout.display is None and viewer.values.value == ""
    assert "kind generic" in viewer.summary.value
    viewer.show("flags")  # generic bool: flags, not drawn
    assert viewer.image.layout.display == "none"
    assert "kind=&#x27;mask&#x27; would draw them" in viewer.values.value
    viewer.show("mask")
    assert viewer.image.layout.display is None
    assert "kind mask" in viewer.summary.value
    # class 1 is white, class 0 black (uint8 0 and 1 as an image would be black on black)
    colours = {tuple(c) for c in np.asarray(picture(viewer)).reshape(-1, 3)}
    assert (255, 255, 255) in colours and (0, 0, 0) in colours
    viewer.show("decode")
    assert "6 samples, UINT8, layout HWC, kind image, 5 shapes" in viewer.summary.value


def test_labels_and_encoded_bytes_are_tables_that_say_their_kind(viewer, pipe):
    viewer.show("reader[1]")
    assert viewer.image.layout.display == "none"
    assert "kind labels: class numbers" in viewer.values.value
    assert f"<code>[{int(pipe.value('reader[1]').at(0)[0])}]</code>" in viewer.values.value
    viewer.show("reader[0]")
    size = pipe.value("reader[0]").shape()[0][0]
    assert "kind encoded: each sample is a file&#x27;s bytes" in viewer.values.value
    assert f"JPEG, {size} bytes: ff d8 ff e0" in viewer.values.value


def test_the_default_node_is_the_first_output_drawn_by_its_kind(image_dir):
    pipe = Pipeline(
        batch_size=2, num_threads=1, device_id=None, exec_async=False, exec_pipelined=False
    )
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(image_dir))
        images = fn.decoders.image(jpegs, name="decode")
        boxes = fn.python_function(
            images, function=lambda im: np.full((4, 4), 0.5, np.float32), kind=kinds.BOXES
        )
        pipe.set_outputs(labels, boxes, images)  # boxes of an image's shape come first
    assert Viewer(pipe, tile=TILE).node_picker.value == "decode"
    pipe.close()


def test_show_an_unknown_node_raises(viewer):
    with pytest.raises(GraphError, match="Did you mean 'rotate'"):
        viewer.show("rotat")


# --- sliders --------------------------------------------------------------------------------------
def test_a_slider_recomputes_only_the_function_and_what_follows(viewer, pipe):
    slider = viewer.sliders["edit"]["amount"]
    assert isinstance(slider, widgets.IntSlider)
    assert (slider.value, slider.min, slider.max) == (20, -20, 60)  # interact's range
    assert slider.continuous_update is False
    before, ran = viewer.image.value, calls(pipe)
    slider.value = 50
    assert viewer.error.value == ""
    assert viewer.image.value != before
    after = calls(pipe)
    assert after["edit"] == ran["edit"] + 1
    for name in ("reader", "decode", "resize", "angle", "rotate"):
        assert after[name] == ran[name], name
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated + 50, 0, 255))


def test_moving_a_slider_back_restores_the_picture(viewer):
    before = viewer.image.value
    viewer.sliders["edit"]["amount"].value = -10
    assert viewer.image.value != before
    viewer.sliders["edit"]["amount"].value = 20
    assert viewer.image.value == before


def test_a_slider_move_reaches_the_next_batches_of_a_prefetching_pipeline(image_dir):
    pipe = make_pipe(image_dir, prefetch=True)
    viewer = Viewer(pipe, tile=TILE)
    wait_for_prefetched(pipe)  # the next batches are computed, with amount=20
    viewer.sliders["edit"]["amount"].value = 60
    viewer.next_button.click()
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated + 60, 0, 255))
    pipe.close()


def test_code_view_shows_the_call_with_current_values(viewer):
    viewer.sliders["edit"]["amount"].value = 35
    line = "fn.python_function(..., function=functools.partial(brighten, amount=35))  # edit"
    assert viewer.code_text == line
    assert "functools.partial(brighten, amount=35)" in viewer.code.value


def test_error_in_the_function_is_shown_and_the_viewer_recovers(image_dir):
    pipe = make_pipe(image_dir)
    viewer = Viewer(pipe, tile=TILE, params={"brighten": {"amount": (0, 300, 10)}})
    slider = viewer.sliders["edit"]["amount"]
    assert (slider.min, slider.max, slider.step, slider.value) == (0, 300, 10, 20)
    before = viewer.image.value
    slider.value = 300
    text = viewer.error.value
    assert "OperatorError" in text
    assert "operator edit (function brighten), sample #0 (animals/chelsea_cat.jpg)" in text
    assert "ValueError: amount too large: 300" in text
    assert "raise ValueError(f&quot;amount too large: {amount}&quot;)" in text  # the user's line
    assert viewer.image.value == before  # the last good picture stays
    viewer.next_button.click()  # still failing: the panel says so again
    assert "amount too large: 300" in viewer.error.value

    slider.value = 100
    assert viewer.error.value == ""
    assert viewer.last_error is None
    assert viewer.image.value != before
    viewer.next_button.click()
    assert viewer.error.value == ""
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated + 100, 0, 255))


def test_an_error_in_the_first_run_leaves_a_working_viewer(image_dir):
    viewer = Viewer(make_pipe(image_dir, functools.partial(brighten, amount=255)), tile=TILE)
    assert "amount too large: 255" in viewer.error.value
    assert viewer.image.value == b""
    viewer.sliders["edit"]["amount"].value = 100
    assert viewer.error.value == ""
    assert picture(viewer).size[0] == COLUMNS * (TILE + 4) + 4


# --- update(): edit and rerun ----------------------------------------------------------------
def test_update_swaps_the_function_and_keeps_the_values(viewer, pipe):
    viewer.sliders["edit"]["amount"].value = 40
    before, ran = viewer.image.value, calls(pipe)
    viewer.update(brighten=darken)
    assert viewer.error.value == ""
    assert viewer.image.value != before
    assert viewer.sliders["edit"]["amount"].value == 40
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated - 40, 0, 255))
    assert calls(pipe)["decode"] == ran["decode"]
    assert "functools.partial(darken, amount=40)" in viewer.code_text

    viewer.sliders["edit"]["amount"].value = 10  # the new control drives the new function
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated - 10, 0, 255))
    viewer.next_button.click()
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated - 10, 0, 255))


def test_update_by_operator_name_with_a_new_signature(viewer, pipe):
    viewer.sliders["edit"]["amount"].value = 30

    def brighten(image, amount=20, gain: Annotated[float, (0.5, 2.0)] = 1.0):
        out = (image.astype(np.float32) + amount) * gain
        return np.clip(out, 0, 255).astype(np.uint8)

    viewer.update(edit=brighten)
    assert set(viewer.sliders["edit"]) == {"amount", "gain"}
    assert viewer.sliders["edit"]["amount"].value == 30
    gain = viewer.sliders["edit"]["gain"]
    assert isinstance(gain, widgets.FloatSlider) and (gain.min, gain.max) == (0.5, 2.0)
    gain.value = 0.5
    rotated = pipe.value("rotate").as_array().astype(np.float32)
    expected = np.clip((rotated + 30) * 0.5, 0, 255).astype(np.uint8)
    assert np.array_equal(viewer.batch.as_array(), expected)
    assert "functools.partial(brighten, amount=30, gain=0.5)" in viewer.code_text


def test_update_closes_the_controls_it_replaces(viewer):
    """Replaced sliders, their boxes and headers are closed: they would stay in the kernel and
    in the widget state a saved notebook keeps, one set per update()."""
    old_slider = viewer.sliders["edit"]["amount"]
    old_box = viewer._controls_box.children[0]  # the function's (then resize's, rotate's)
    viewer.update(brighten=darken)
    for widget in (old_slider, old_slider.layout, old_slider.style, old_box, old_box.children[0]):
        assert widget.comm is None, widget
    new_slider = viewer.sliders["edit"]["amount"]
    rows = viewer._controls_box.children[0].children  # a header, then a row per control
    shown = [w for row in rows for w in getattr(row, "children", (row,))]
    assert new_slider.comm is not None and new_slider in shown
    new_slider.value = 15  # the new control works
    assert viewer.error.value == ""


def test_update_of_an_unknown_function_raises(viewer):
    with pytest.raises(ArgumentError, match=r"no Python operator named 'brigthen'.*'brighten'"):
        viewer.update(brigthen=darken)


def test_update_with_a_failing_function_shows_the_error(viewer):
    def broken(image, amount=20):
        raise RuntimeError("broken on purpose")

    before = viewer.image.value
    viewer.update(brighten=broken)
    assert "broken), sample #0 (animals/chelsea_cat.jpg): RuntimeError: broken on purpose" in (
        viewer.error.value
    )
    assert viewer.image.value == before
    viewer.update(broken=darken)
    assert viewer.error.value == ""


# --- how controls are inferred -------------------------------------------------------------------
def shade(
    image,
    radius: Annotated[float, (0, 1)] = 0.25,
    steps: Annotated[int, (0, 10, 2)] = 4,
    invert=False,
    mode="soft",
    strength=0.5,
    untyped=None,
):
    image = image.astype(np.float32) * (1 - radius) + steps
    image = 255 - image if invert else image
    return np.clip(image * (1.5 if mode == "hard" else 1.0) * strength * 2, 0, 255).astype(np.uint8)


def test_controls_are_inferred_like_interact(image_dir):
    pipe = make_pipe(image_dir, shade)
    viewer = Viewer(pipe, tile=TILE, params={"edit": {"mode": ["soft", "hard"]}})
    controls = viewer.sliders["edit"]
    assert list(controls) == ["radius", "steps", "invert", "mode", "strength"]  # not untyped
    hidden = Viewer(pipe, tile=TILE, params={"shade": {"strength": None}})
    assert list(hidden.sliders["edit"]) == ["radius", "steps", "invert", "mode"]
    radius, steps = controls["radius"], controls["steps"]
    assert isinstance(radius, widgets.FloatSlider)
    assert (radius.min, radius.max, radius.value) == (0.0, 1.0, 0.25)
    assert isinstance(steps, widgets.IntSlider)
    assert (steps.min, steps.max, steps.step, steps.value) == (0, 10, 2, 4)
    assert isinstance(controls["invert"], widgets.Checkbox)
    assert isinstance(controls["mode"], widgets.Dropdown)
    assert controls["mode"].options == ("soft", "hard")
    strength = controls["strength"]
    assert isinstance(strength, widgets.FloatSlider)
    assert (strength.min, strength.max) == (-0.5, 1.5)
    for control in controls.values():
        if hasattr(control, "continuous_update"):
            assert control.continuous_update is False

    before = viewer.image.value
    controls["invert"].value = True
    controls["mode"].value = "hard"
    controls["radius"].value = 0.3
    assert viewer.error.value == ""
    assert viewer.image.value != before
    rotated = pipe.value("rotate").as_array()
    expected = shade(rotated, radius=0.3, invert=True, mode="hard")
    assert np.array_equal(viewer.batch.as_array(), expected)
    assert viewer.code_text == (
        "fn.python_function(..., function=functools.partial(shade, radius=0.3, steps=4, "
        "invert=True, mode='hard', strength=0.5))  # edit"
    )


def test_a_control_without_a_default_applies_its_value_from_the_start(image_dir):
    def lift(image, amount: Annotated[int, (0, 100)]):
        return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)

    pipe = make_pipe(image_dir, lift)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.error.value == ""
    assert viewer.sliders["edit"]["amount"].value == 50
    rotated = pipe.value("rotate").as_array().astype(int)
    assert np.array_equal(viewer.batch.as_array(), np.clip(rotated + 50, 0, 255))


def test_a_partial_given_to_the_operator_starts_the_controls(image_dir):
    pipe = make_pipe(image_dir, functools.partial(brighten, amount=40))
    viewer = Viewer(pipe, tile=TILE, params={"brighten": {"amount": (0, 100)}})
    assert viewer.sliders["edit"]["amount"].value == 40
    assert "functools.partial(brighten, amount=40)" in viewer.code_text


def test_params_that_match_nothing_raise(pipe):
    with pytest.raises(ArgumentError, match=r"params has 'brighter'.*Did you mean 'brighten'"):
        Viewer(pipe, params={"brighter": {"amount": (0, 10)}})
    with pytest.raises(ArgumentError, match=r"brighten\(\) has no parameter 'amont'"):
        Viewer(pipe, params={"brighten": {"amont": (0, 10)}})
    with pytest.raises(ArgumentError, match="cannot make a control for 'amount'"):
        Viewer(pipe, params={"edit": {"amount": object()}})


def test_a_debug_pipeline_is_refused_with_a_reason(image_dir):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, debug=True)
    def debug_pipe():
        jpegs, labels = fn.readers.file(file_root=str(image_dir))
        return fn.decoders.image(jpegs), labels

    with pytest.raises(ArgumentError, match="Viewer needs a normal pipeline"):
        Viewer(debug_pipe())


# --- built-in operators' arguments ----------------------------------------------------------------
def test_a_built_in_operators_numbers_get_controls_that_rerun_only_downstream(viewer, pipe):
    """``fn.resize(..., resize_x=64, resize_y=64)`` and ``fn.rotate(..., fill_value=0)``: a
    control per number given; moving one recomputes that operator and what follows."""
    assert set(viewer.sliders["resize"]) == {"resize_x", "resize_y"}
    assert set(viewer.sliders["rotate"]) == {"fill_value"}  # angle is per sample: no control
    width = viewer.sliders["resize"]["resize_x"]
    assert isinstance(width, widgets.FloatSlider)
    assert (width.value, width.min, width.max) == (64.0, -64.0, 192.0)  # interact's -v..3v
    before, ran = viewer.image.value, calls(pipe)
    width.value = 32.0
    assert viewer.error.value == ""
    assert viewer.image.value != before
    assert viewer.batch.at(0).shape == (64, 32, 3)
    after = calls(pipe)
    for name in ("resize", "rotate", "edit"):
        assert after[name] == ran[name] + 1, name
    for name in ("reader", "angle"):  # the same draws: the angles did not change
        assert after[name] == ran[name], name
    # The decoded images, which the chain decode -> resize -> rotate let go, are decoded once
    # more for the first move, then kept for the next ones.
    assert after["decode"] == ran["decode"] + 1
    assert "fn.resize(..., resize_x=32.0, resize_y=64.0)  # resize" in viewer.code_text
    width.value = 64.0
    assert viewer.image.value == before
    assert calls(pipe)["decode"] == after["decode"]
    assert "fn.resize" not in viewer.code_text  # back to what the definition says


def test_params_add_remove_and_range_built_in_controls(image_dir):
    pipe = make_pipe(image_dir)
    viewer = Viewer(
        pipe,
        tile=TILE,
        params={"rotate": {"fill_value": None}, "resize": {"resize_x": (16, 96, 8)}},
    )
    assert "rotate" not in viewer.sliders
    width = viewer.sliders["resize"]["resize_x"]
    assert (width.min, width.max, width.step) == (16, 96, 8)
    pipe.close()
    with pytest.raises(ArgumentError, match=r"Rotate has no argument 'fil_value'"):
        Viewer(make_pipe(image_dir), params={"rotate": {"fil_value": (0, 1)}})
    with pytest.raises(ArgumentError, match=r"'angle' takes per-sample values"):
        Viewer(make_pipe(image_dir), params={"rotate": {"angle": (0, 90)}})


def test_a_colour_operators_argument_and_a_random_operators_probability(image_dir):
    """A control for an argument the definition did not give (``params``), and one cut to
    what the argument takes: coin_flip's probability lies in [0, 1]."""

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
    def pipe_def():
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        images = fn.resize(fn.decoders.image(jpegs), size=(48, 48))
        images = fn.brightness_contrast(images, brightness=1.2, name="bc")
        return fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5, name="coin"))

    pipe = pipe_def()
    viewer = Viewer(pipe, tile=TILE, params={"brightness_contrast": {"contrast": (0.0, 2.0)}})
    probability = viewer.sliders["coin"]["probability"]
    assert (probability.min, probability.max) == (0.0, 1.0)
    contrast = viewer.sliders["bc"]["contrast"]
    assert set(viewer.sliders["bc"]) == {"brightness", "contrast"} and contrast.value == 1.0
    contrast.value = 0.0  # uniform grey, times the brightness
    assert viewer.error.value == ""
    grey = np.clip(np.round(128 * 1.2), 0, 255)
    assert all((viewer.batch.at(i) == grey).all() for i in range(4))
    probability.value = 0.0  # no sample flipped: the pictures are the unflipped ones
    assert np.array_equal(viewer.batch.as_array(), pipe.value("bc").as_array())
    pipe.close()


def test_the_issues_examples_gaussian_blur_sigma_and_hsv_hue():
    """``fn.gaussian_blur(x, sigma=2.0)`` (kept as a per-axis list of one) and ``fn.hsv(x,
    hue=30.0)`` get sliders; a move recomputes the blur (and, once, what its chain let go)."""
    rng = np.random.default_rng(4)
    photos = [rng.integers(0, 256, (40, 50, 3), dtype=np.uint8) for _ in range(4)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
    def pipe_def():
        x = fn.external_source(source=lambda: photos, layout="HWC")
        return fn.gaussian_blur(fn.hsv(x, hue=30.0, name="hsv"), sigma=2.0, name="blur")

    pipe = pipe_def()
    viewer = Viewer(pipe, tile=TILE)
    sigma, hue = viewer.sliders["blur"]["sigma"], viewer.sliders["hsv"]["hue"]
    assert (sigma.value, sigma.min, hue.value) == (2.0, 0.0, 30.0)  # sigma >= 0
    ran = calls(pipe)
    sigma.value = 0.5
    assert viewer.error.value == ""
    after = calls(pipe)
    # hsv -> blur is a chain, which let go of hsv's batch: computed once more, then kept
    assert (after["blur"], after["hsv"]) == (ran["blur"] + 1, ran["hsv"] + 1)
    want = augkit_eager_blur(pipe.value("hsv"), 0.5)
    assert all(np.array_equal(viewer.batch.at(i), want[i]) for i in range(4))
    assert viewer.code_text == "fn.gaussian_blur(..., sigma=0.5)  # blur"
    sigma.value = 1.0
    assert calls(pipe)["hsv"] == after["hsv"] and calls(pipe)["blur"] == after["blur"] + 1
    pipe.close()


def augkit_eager_blur(batch, sigma):
    from augkit import eager

    out = eager.gaussian_blur(batch, sigma=sigma)  # a TensorList: its layout HWC goes along
    return [out.at(i) for i in range(len(out))]


# --- overlays -----------------------------------------------------------------------------------
RED = (214, 39, 40)  # class 5's colour (augkit.overlays.PALETTE)
SQUARE = np.array([[0.2, 0.25, 0.7, 0.8]], np.float32)  # one relative ltrb box


def boxes_pipe(photos, *, separate: bool = False) -> Pipeline:
    """Real photos (64 x 64) with one box of class 5 each, then: flip([images, boxes]) with a
    random coin, brightness of the flipped images, and a rotation of the images alone.
    ``separate``: the boxes come from a source of their own (the graph cannot link them)."""
    small = [np.asarray(Image.fromarray(p).resize((64, 64))) for p in photos[:4]]
    pipe = Pipeline(
        batch_size=4,
        num_threads=1,
        device_id=None,
        seed=5,
        exec_async=False,
        exec_pipelined=False,
    )
    with pipe:
        if separate:
            images = fn.external_source(source=lambda: small, layout="HWC", name="images")
            boxes = fn.external_source(source=lambda: [SQUARE] * 4, kind="boxes", name="boxes")
            labels = fn.external_source(
                source=lambda: [np.array([5], np.int32)] * 4, kind="labels", name="labels"
            )
            pipe.set_outputs(fn.brightness(images, brightness=1.5, name="bright"), boxes, labels)
            return pipe
        images, boxes, labels = fn.external_source(
            source=lambda: (small, [SQUARE] * 4, [np.array([5], np.int32)] * 4),
            num_outputs=3,
            layout=["HWC", "", ""],
            kind=["image", "boxes", "labels"],
            name="source",
        )
        coin = fn.random.coin_flip(probability=0.5, name="coin")
        flipped, flipped_boxes = fn.flip([images, boxes], horizontal=coin)
        bright = fn.brightness(flipped, brightness=1.5, name="bright")
        turned = fn.rotate(images, angle=30.0, name="turned")
        pipe.set_outputs(bright, flipped_boxes, labels, turned)
    return pipe


def red_pixels(viewer: Viewer) -> int:
    return int((np.asarray(picture(viewer)) == RED).all(axis=-1).sum())


def test_the_targets_at_the_same_point_of_the_graph_are_drawn_over_an_image(photos):
    pipe = boxes_pipe(photos)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.error.value == ""
    flip_nodes = [n for n in pipe.nodes() if n.startswith("Flip")]
    assert len(flip_nodes) == 2  # one call, two input sets
    flipped_boxes = next(n for n in flip_nodes if pipe.value(n).kind.name == "boxes")
    # The output shown: brightness of the flipped images -> the flipped boxes (the same call
    # as the flipped images), with the source's labels.
    assert viewer.node_picker.value == "bright"
    assert viewer.overlays == {"boxes": flipped_boxes, "labels": "source[2]"}
    assert red_pixels(viewer) > 20
    viewer.show("source[0]")  # the images as read: the boxes as read
    assert viewer.overlays == {"boxes": "source[1]", "labels": "source[2]"}
    viewer.show("turned")  # rotated without their boxes: the boxes are not theirs
    assert viewer.overlays == {}
    assert red_pixels(viewer) == 0
    assert viewer._toggles_box.layout.display == "none"
    viewer.show("coin")  # not an image: no overlays
    assert viewer.overlays == {}
    pipe.close()


def test_the_flipped_boxes_are_drawn_where_the_flipped_images_put_them(photos):
    pipe = boxes_pipe(photos)
    viewer = Viewer(pipe, tile=TILE, columns=4)
    coins = [int(pipe.value("coin").at(i)) for i in range(4)]
    assert 0 < sum(coins) < 4  # seed 5: some flipped, some not
    pixels = np.asarray(picture(viewer))
    band = grid.title_height(TILE)
    for i, flipped in enumerate(coins):
        left = 4 + i * (TILE + 4)
        tile = pixels[4 + band : 4 + band + TILE, left : left + TILE]
        columns = np.nonzero((tile == RED).all(axis=-1).any(axis=0))[0]
        low, high = (1 - 0.7, 1 - 0.2) if flipped else (0.2, 0.7)
        assert abs(columns.min() - low * TILE) <= 1 and abs(columns.max() + 1 - high * TILE) <= 1
    pipe.close()


def test_toggles_redraw_without_running_the_pipeline(photos):
    pipe = boxes_pipe(photos)
    viewer = Viewer(pipe, tile=TILE)
    toggle = viewer.overlay_toggles["boxes"]
    assert list(viewer._toggles_box.children) == [toggle]  # only the kinds present
    assert viewer._toggles_box.layout.display is None
    with_boxes, ran = viewer.image.value, calls(pipe)
    toggle.value = False
    assert viewer.error.value == "" and red_pixels(viewer) == 0
    assert calls(pipe) == ran  # nothing ran again
    toggle.value = True
    assert viewer.image.value == with_boxes
    assert calls(pipe) == ran
    pipe.close()


def test_targets_from_other_sources_are_the_outputs_of_the_pipeline(photos):
    pipe = boxes_pipe(photos, separate=True)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.node_picker.value == "bright"
    assert viewer.overlays == {"boxes": "boxes", "labels": "labels"}
    assert red_pixels(viewer) > 20
    viewer.show("images")  # an intermediate node: no fallback to the outputs
    assert viewer.overlays == {}
    pipe.close()


def test_a_python_functions_boxes_and_mask_of_an_image_are_its_overlays(image_dir):
    pipe = kinds_pipe(image_dir)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.node_picker.value == "resize"
    # the reader's labels too: one per image, they title the tiles and are not drawn on boxes
    assert viewer.overlays == {"boxes": "boxes", "mask": "mask", "labels": "reader[1]"}
    assert set(viewer._toggles_box.children) == {
        viewer.overlay_toggles["boxes"],
        viewer.overlay_toggles["masks"],
    }
    masked = viewer.image.value
    viewer.overlay_toggles["masks"].value = False
    assert viewer.image.value != masked
    viewer.show("decode")  # the images before the resize: the mask (scaled) and relative boxes
    assert viewer.overlays == {"boxes": "boxes", "mask": "mask", "labels": "reader[1]"}
    pipe.close()


def test_readers_coco_boxes_go_with_the_decoded_images_and_bb_flip_with_flip(image_dir):
    pipe = Pipeline(
        batch_size=4,
        num_threads=1,
        device_id=None,
        seed=2,
        exec_async=False,
        exec_pipelined=False,
    )
    with pipe:
        jpegs, boxes, labels, _polygons, _vertices = fn.readers.coco(
            file_root=str(image_dir),
            annotations_file=str(image_dir.parent / "annotations" / "instances.json"),
            ltrb=True,
            ratio=True,
            polygon_masks=True,
            name="reader",
        )
        images = fn.decoders.image(jpegs, name="decode")
        coin = fn.random.coin_flip(probability=0.5, name="coin")
        flipped = fn.flip(images, horizontal=coin, name="flip")
        flipped_boxes = fn.bb_flip(boxes, horizontal=coin, ltrb=True, name="bb_flip")
        pipe.set_outputs(flipped, flipped_boxes, labels)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.error.value == ""
    assert viewer.overlays == {"boxes": "bb_flip", "labels": "reader[2]"}
    viewer.show("decode")
    assert viewer.overlays == {
        "boxes": "reader[1]",
        "labels": "reader[2]",
        "polygons": "reader[3]",
        "vertices": "reader[4]",
    }
    assert {t.description for t in viewer._toggles_box.children} == {"boxes", "polygons"}
    pipe.close()


def test_targets_that_cannot_be_drawn_leave_the_images_and_say_why(image_dir):
    pipe = Pipeline(
        batch_size=2, num_threads=1, device_id=None, exec_async=False, exec_pipelined=False
    )
    with pipe:
        jpegs, _ = fn.readers.file(file_root=str(image_dir))
        images = fn.decoders.image(jpegs, name="decode")
        wrong = fn.python_function(
            images, function=lambda im: np.zeros((2, 3), np.float32), kind="boxes", name="wrong"
        )
        pipe.set_outputs(images, wrong)
    viewer = Viewer(pipe, tile=TILE)
    assert viewer.overlays["boxes"] == "wrong"
    assert "boxes=, sample 0: boxes: expected N x 4 coordinates, got shape (2, 3)" in (
        viewer.error.value
    )
    assert viewer.image.layout.display is None and picture(viewer).size[0] > TILE
    viewer.overlay_toggles["boxes"].value = False  # without them: no error
    assert viewer.error.value == ""
    pipe.close()


def test_overlays_of_one_call_with_input_sets_follow_the_image_through_later_nodes():
    from augkit import kinds
    from augkit.widgets.viewer import overlay_nodes

    image = np.zeros((20, 30, 3), np.uint8)
    boxes = np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
        b = fn.python_function(
            fn.external_source(source=lambda: [boxes] * 2, batch=True),
            function=lambda x: x,
            kind=kinds.BOXES,
        )
        rotated, moved = fn.rotate([images, b], angle=fn.random.uniform(range=(-20, 20)))
        flipped = fn.flip(images, name="alone")  # not moved with the boxes
        bright = fn.brightness_contrast(rotated, brightness=1.2, name="bright")
        pipe.set_outputs(bright, flipped, moved)
    pipe.run()
    assert overlay_nodes(pipe, "bright") == {"boxes": moved.name}
    assert overlay_nodes(pipe, rotated.name) == {"boxes": moved.name}
    assert "boxes" not in overlay_nodes(pipe, "alone")
    pipe.close()


def test_sweep_shows_the_same_samples_at_each_value_one_row_per_value():
    gray = np.full((8, 10, 3), 100, np.uint8)

    def brighten(image, amount=30):
        return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=2)
    with pipe:
        images = fn.external_source(source=lambda: [gray] * 3, batch=True, layout="HWC")
        noisy = fn.python_function(images, function=brighten, name="brighten")
        pipe.set_outputs(fn.gaussian_blur(noisy, sigma=1.0, name="blur"))
    viewer = Viewer(pipe, columns=2, params={"brighten": {"amount": (0, 100, 5)}})
    before = viewer.batch.at(0).copy()
    swept = viewer.sweep("brighten", "amount", [0, 50, 100])
    assert len(swept) == 6  # 3 values x 2 samples (columns)
    assert [int(swept.at(i)[4, 5, 0]) for i in range(0, 6, 2)] == [100, 150, 200]
    assert swept.source_info(2).startswith("amount=50")
    assert "sweep of brighten.amount" in viewer.summary.value
    # The control's value is back, and so is the batch it gives.
    np.testing.assert_array_equal(pipe.value("blur").at(0), before)
    # A built-in operator's argument sweeps the same way.
    blurred = viewer.sweep("blur", "sigma", [0.5, 2.0], samples=1)
    assert len(blurred) == 2
    with pytest.raises(ArgumentError, match="no control 'amout'"):
        viewer.sweep("brighten", "amout", [1])
    pipe.close()


def test_a_sweep_button_beside_each_slider_sweeps_its_range():
    gray = np.full((8, 10, 3), 100, np.uint8)

    def brighten(image, amount=30):
        return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=2)
    with pipe:
        images = fn.external_source(source=lambda: [gray] * 2, batch=True, layout="HWC")
        pipe.set_outputs(fn.python_function(images, function=brighten, name="brighten"))
    viewer = Viewer(pipe, columns=2, params={"brighten": {"amount": (0, 100, 5)}})
    button = viewer.sweep_buttons[("brighten", "amount")]
    assert "0, 25, 50, 75, 100" in button.tooltip
    button.click()
    assert viewer.last_error is None
    assert "sweep of brighten.amount over 5 values" in viewer.summary.value
    # The slider still works afterwards, and its row still holds it.
    viewer.sliders["brighten"]["amount"].value = 40
    assert int(viewer.batch.at(0)[0, 0, 0]) == 140
    pipe.close()


def test_compare_two_nodes_and_an_a_b_of_a_new_function():
    gray = np.full((8, 10, 3), 100, np.uint8)

    def brighten(image, amount=30):
        return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)

    def darker(image, amount=30):
        return np.clip(image.astype(np.int16) - amount, 0, 255).astype(np.uint8)

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=2)
    with pipe:
        images = fn.external_source(source=lambda: [gray] * 3, batch=True, layout="HWC")
        raw = fn.copy(images, name="raw")
        pipe.set_outputs(fn.python_function(raw, function=brighten, name="brighten"))
    viewer = Viewer(pipe, columns=2)
    shown = viewer.batch.at(0).copy()
    a, b, diff = viewer.compare("raw", "brighten", difference=True)
    assert len(a) == len(b) == len(diff) == 2
    assert int(diff.at(0)[0, 0, 0]) == 30  # |100 - 130|
    assert "compare: raw | brighten | |A - B|" in viewer.summary.value
    before, after = viewer.compare("brighten", operator="brighten", function=darker)
    assert int(before.at(1)[0, 0, 0]) == 130 and int(after.at(1)[0, 0, 0]) == 70
    np.testing.assert_array_equal(pipe.value("brighten").at(0), shown)  # its function is back
    with pytest.raises(ArgumentError, match="not both"):
        viewer.compare("raw", "brighten", operator="brighten", function=darker)
    with pytest.raises(GraphError, match="no node named 'rwa'"):
        viewer.compare("rwa", "brighten")
    pipe.close()


# --- transport ----------------------------------------------------------------------------------
def test_grid_travels_as_jpeg_by_default(pipe):
    viewer = _Viewer(pipe, columns=COLUMNS, tile=TILE)
    assert viewer.image.format == "jpeg"
    jpeg_bytes = viewer.image.value
    decoded = Image.open(io.BytesIO(jpeg_bytes))
    assert decoded.format == "JPEG"
    # The same batch drawn again, lossless: quality 90 stays close to it, pixel by pixel.
    viewer.image_format = "png"
    viewer.show(viewer.node_picker.value)
    lossless = Image.open(io.BytesIO(viewer.image.value))
    assert lossless.format == "PNG" and decoded.size == lossless.size
    exact = np.asarray(lossless.convert("RGB"), np.int16)
    error = np.abs(np.asarray(decoded.convert("RGB"), np.int16) - exact)
    assert error.mean() < 2.0 and np.percentile(error, 99) < 20
    assert viewer.image.format == "png"
    assert len(viewer.image.value) > 1.5 * len(jpeg_bytes)  # what JPEG is for (5x on photos)


def test_bad_transport_arguments_are_refused(pipe):
    with pytest.raises(ArgumentError, match="image_format must be 'jpeg' or 'png', got 'gif'"):
        _Viewer(pipe, image_format="gif")
    with pytest.raises(ArgumentError, match=r"jpeg_quality must be an int in 1\.\.100, got 0"):
        _Viewer(pipe, jpeg_quality=0)


def test_viewer_exposes_its_widget_for_layouts(viewer):
    box = widgets.HBox([viewer.widget, widgets.HTML("notes")])
    assert box.children[0] is viewer.root
    assert isinstance(viewer.widget, widgets.Widget)


# --- pin and pick -------------------------------------------------------------------------------
def shown_files(viewer: _Viewer) -> list[str]:
    return [viewer.batch.source_info(i) for i in range(len(viewer.batch))]


def test_pick_by_file_pins_the_samples_and_next_batch_moves_on(pipe):
    viewer = Viewer(pipe, columns=COLUMNS, tile=TILE)
    first = shown_files(viewer)
    viewer.pick(["grace_hopper.jpg", "animals/chelsea_cat.jpg"])
    assert viewer.error.value == ""
    assert shown_files(viewer) == ["people/grace_hopper.jpg", "animals/chelsea_cat.jpg"]
    assert viewer.pinned == shown_files(viewer) and viewer.pin_button.value
    assert "pinned: 2 samples" in viewer.summary.value
    viewer.rerun_button.click()  # new draws, the same samples
    viewer.reset_button.click()  # the next epoch, the same samples
    assert shown_files(viewer) == ["people/grace_hopper.jpg", "animals/chelsea_cat.jpg"]
    viewer.sliders["edit"]["amount"].value = 60
    assert shown_files(viewer) == ["people/grace_hopper.jpg", "animals/chelsea_cat.jpg"]
    # Next batch is the ask: it unpins and goes on from the reader's position. Reset started
    # a new epoch, so that is the epoch's first batch, the one shown first.
    viewer.next_button.click()
    assert viewer.pinned is None and not viewer.pin_button.value
    assert shown_files(viewer) == first


def test_pin_button_keeps_the_current_samples_through_reset(viewer):
    files = shown_files(viewer)
    viewer.next_button.click()
    files = shown_files(viewer)
    viewer.pin_button.value = True
    assert viewer.pinned == files
    viewer.reset_button.click()
    assert shown_files(viewer) == files and viewer.error.value == ""
    viewer.pin_button.value = False
    viewer.reset_button.click()
    assert shown_files(viewer) != files  # unpinned: the new epoch's first batch


def test_pick_box_takes_file_names_and_labels_and_shows_what_is_wrong(viewer, pipe):
    names = pipe.class_names()
    people = next(label for label, name in names.items() if name == "people")
    viewer.pick_box.value = "people"
    assert viewer.error.value == ""
    assert all(f.startswith("people/") for f in shown_files(viewer))
    viewer.pick_box.value = f"{people}, 0"
    assert {f.split("/")[0] for f in shown_files(viewer)} == {"people", names[0]}
    picture_before = viewer.image.value
    viewer.pick_box.value = "cameraman.jpg, no_such_file.jpg"
    assert "no sample named &#x27;no_such_file.jpg&#x27;" in viewer.error.value
    assert viewer.image.value == picture_before  # the grid stays
    viewer.pick_box.value = "cameraman.jpg"
    assert viewer.error.value == "" and shown_files(viewer) == ["people/cameraman.jpg"]


# --- tiles: click, zoom, draws ------------------------------------------------------------------
def click(viewer: _Viewer, index: int, columns: int = COLUMNS) -> None:
    """A click in the middle of tile ``index``, as ipyevents reports it."""
    band = grid.title_height(TILE)
    x = 4 + (index % columns) * (TILE + 4) + TILE // 2
    y = 4 + (index // columns) * (band + TILE + 4) + band + TILE // 2
    viewer._on_grid_event({"event": "click", "dataX": x, "dataY": y})


def test_tile_at_maps_picture_pixels_to_tiles():
    # 6 tiles, 4 per row, tiles of 100 with a 20-pixel title band, 4 pixels of padding.
    assert grid.tile_at(4, 4, 6, 4, 100, 20) == 0
    assert grid.tile_at(103, 123, 6, 4, 100, 20) == 0
    assert grid.tile_at(105, 50, 6, 4, 100, 20) is None  # padding between columns
    assert grid.tile_at(108, 50, 6, 4, 100, 20) == 1
    assert grid.tile_at(10, 4 + 124, 6, 4, 100, 20) == 4  # second row, in its title band
    assert grid.tile_at(4 + 2 * 104 + 1, 4 + 124 + 1, 6, 4, 100, 20) is None  # no tile 6
    assert grid.tile_at(2, 2, 6, 4, 100, 20) is None


def test_clicking_a_tile_shows_it_in_the_zoom_with_its_random_draws(image_dir):
    pipe = make_pipe(image_dir, rotate=True)
    try:
        viewer = Viewer(pipe, columns=COLUMNS, tile=TILE)
        assert viewer.zoom.root.layout.display == "none"
        click(viewer, 4)
        assert viewer.error.value == "" and viewer.selected == 4
        assert viewer.zoom.root.layout.display != "none"
        np.testing.assert_array_equal(viewer.zoom.sample, viewer.batch.at(4))
        record = pipe.draws("edit")[4]
        assert viewer.draws(4) == record and list(record) == ["rotate.angle"]
        assert f"{record['rotate.angle']:.4g}"[:4] in viewer.zoom.draws.value
        assert viewer.batch.source_info(4) in html.unescape(viewer.zoom.title.value)
        # The zoom follows its tile: a slider move redraws it with the new pixels.
        viewer.sliders["edit"]["amount"].value = 70
        np.testing.assert_array_equal(viewer.zoom.sample, viewer.batch.at(4))
        viewer._on_grid_event({"event": "click", "dataX": 1, "dataY": 1})  # padding: nothing
        assert viewer.selected == 4
        with pytest.raises(ArgumentError, match="no tile 99"):
            viewer.select(99)
    finally:
        pipe.close()


def test_a_tiles_draws_replay_its_pixels(image_dir):
    """The draws of one odd sample reproduce it: the operator called on its input with them
    gives the same pixels as the pipeline did."""
    from augkit import eager

    pipe = make_pipe(image_dir, rotate=True)
    try:
        Viewer(pipe, columns=COLUMNS, tile=TILE)
        draws = pipe.draws("rotate")
        for i in (0, 3):
            replay = eager.rotate(
                np.asarray(pipe.value("resize").at(i)),
                angle=draws[i]["rotate.angle"],
                keep_size=True,
                fill_value=0,
            )
            np.testing.assert_array_equal(replay, pipe.value("rotate").at(i))
    finally:
        pipe.close()


def test_the_compare_picker_keeps_two_nodes_side_by_side_while_sliders_move(viewer):
    viewer.compare_picker.value = "resize"
    assert viewer.error.value == ""
    assert "compared with resize" in viewer.summary.value
    assert len(viewer._tiles) == 2 * len(viewer.batch)
    wide = picture(viewer)
    assert wide.width == 2 * (TILE + 4) + 4
    before = viewer.image.value
    viewer.difference_toggle.value = True
    assert picture(viewer).width == 3 * (TILE + 4) + 4
    viewer.sliders["edit"]["amount"].value = 80
    assert viewer.image.value != before and "compared with resize" in viewer.summary.value
    # The difference column is |edit - resize|: the brightening, where nothing clipped.
    click(viewer, 2, columns=3)
    difference = viewer.zoom.sample
    edit, resize = viewer.batch.at(0).astype(int), viewer.pipe.value("resize").at(0).astype(int)
    np.testing.assert_array_equal(difference, np.abs(edit - resize))
    viewer.compare_picker.value = None
    assert picture(viewer).width == COLUMNS * (TILE + 4) + 4


# --- live edits ---------------------------------------------------------------------------------
@pytest.fixture
def shell():
    """An IPython shell of its own (not the global instance: get_ipython() stays None for the
    other tests), with the viewers' post_run_cell hook."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from augkit.widgets import live

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell(config=config)
    live.attach(shell)
    yield shell
    shell.events.unregister("post_run_cell", live._shells.pop(shell))


LIVE_CELL = """
import numpy as np
from augkit import Pipeline, fn, types
from augkit.widgets import Viewer

def brighten(image, amount=10):
    return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)

pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1,
                exec_async=False, exec_pipelined=False)
with pipe:
    jpegs, labels = fn.readers.file(file_root={root!r})
    images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=32, resize_y=32)
    pipe.set_outputs(fn.python_function(images, function=brighten, name="edit"), labels)
viewer = Viewer(pipe, image_format="png", tile=32)
"""


def test_redefining_the_function_in_a_cell_updates_the_open_viewer(shell, image_dir):
    assert shell.run_cell(LIVE_CELL.format(root=str(image_dir))).success
    viewer, pipe = shell.user_ns["viewer"], shell.user_ns["pipe"]
    try:
        files = shown_files(viewer)
        first = viewer.batch.at(0).copy()
        shell.run_cell("x = 1")  # a cell that redefines nothing changes nothing
        np.testing.assert_array_equal(viewer.batch.at(0), first)
        shell.run_cell(
            "def brighten(image, amount=10):\n"
            "    return np.clip(image.astype(np.int16) - amount, 0, 255).astype(np.uint8)\n"
        )
        assert viewer.error.value == ""
        assert shown_files(viewer) == files  # the same batch, through the new code
        assert (viewer.batch.at(0).astype(int) <= first.astype(int)).all()
        assert not np.array_equal(viewer.batch.at(0), first)
        grid_before = viewer.image.value
        # An error in the new code: in the error panel, and the old grid stays.
        shell.run_cell("def brighten(image, amount=10):\n    raise ValueError('not yet')\n")
        assert "not yet" in viewer.error.value and "ValueError" in viewer.error.value
        assert viewer.image.value == grid_before
        # A cell that fails is not picked up; a name bound to something else neither.
        shell.run_cell("def brighten(image, amount=10):\n    return image\nraise KeyError('x')")
        assert "not yet" in viewer.error.value
        shell.run_cell("brighten = lambda image, amount=10: image")
        assert "not yet" in viewer.error.value
        viewer.live = False
        shell.run_cell("def brighten(image, amount=10):\n    return image\n")
        assert "not yet" in viewer.error.value
        viewer.live = True
        shell.run_cell("def brighten(image, amount=10):\n    return image\n")
        assert viewer.error.value == ""
    finally:
        pipe.close()


def test_snapshot_is_the_picture_on_screen_in_its_format(pipe):
    viewer = _Viewer(pipe, columns=COLUMNS, tile=TILE)
    snap = viewer.snapshot()
    assert snap.format == "jpeg" and snap.data == bytes(viewer.image.value)
    assert "image/jpeg" in snap._repr_mimebundle_()[0]
    viewer.image_format = "png"
    viewer.show(viewer.node_picker.value)
    assert viewer.snapshot().format == "png"


COCO_ANNOTATIONS = pathlib.Path(__file__).resolve().parents[1] / "data" / "annotations"


def rotated_coco(image_dir) -> Pipeline:
    """COCO photos and their boxes rotated together by a constant angle (a control)."""
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=5)
    with pipe:
        jpegs, boxes, labels = fn.readers.coco(
            file_root=str(image_dir),
            annotations_file=str(COCO_ANNOTATIONS / "instances.json"),
            ltrb=True,
            ratio=True,
            skip_empty=True,
        )
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=[96, 96])
        images, boxes = fn.rotate(
            [images, boxes], angle=10.0, keep_size=True, fill_value=0, name="rotate"
        )
        pipe.set_outputs(images, boxes, labels)
    return pipe


def test_a_call_with_input_sets_gets_one_set_of_controls(image_dir):
    pipe = rotated_coco(image_dir)
    try:
        viewer = Viewer(pipe, tile=96)
        assert "rotate" in viewer.sliders and "rotate#1" not in viewer.sliders
        viewer.sliders["rotate"]["angle"].value = 30.0
        assert viewer.error.value == ""
        assert pipe._runner.executor.nodes[-1].args["angle"] == 30.0  # the boxes' node too
    finally:
        pipe.close()


def test_a_sweep_draws_the_overlays_of_each_row(image_dir):
    """Boxes that move with the swept argument move with it, row by row."""
    pipe = rotated_coco(image_dir)
    try:
        viewer = Viewer(pipe, tile=96)
        assert viewer.overlays["boxes"] == "rotate#1"
        viewer.sweep("rotate", "angle", [0.0, 30.0], samples=2)
        with_boxes = np.asarray(picture(viewer))
        viewer.overlay_toggles["boxes"].value = False
        viewer.sweep("rotate", "angle", [0.0, 30.0], samples=2)
        without = np.asarray(picture(viewer))
        changed = (with_boxes != without).any(axis=-1)
        band, height = grid.title_height(96), 96 + 4
        rows = [changed[4 + r * (band + height) : 4 + (r + 1) * (band + height)] for r in (0, 1)]
        assert rows[0].sum() > 100 and rows[1].sum() > 100  # boxes drawn in both rows
        # ...and not the same boxes: the second row's are rotated by 30 degrees.
        assert (rows[0] != rows[1]).sum() > 100
    finally:
        pipe.close()


def test_the_version_an_edit_replaced_can_be_compared_with_the_new_one(pipe):
    viewer = Viewer(pipe, columns=COLUMNS, tile=TILE)
    viewer.sliders["edit"]["amount"].value = 40
    brightened = [viewer.batch.at(i).copy() for i in range(2)]
    assert not any("previous" in label for label, _ in viewer.compare_picker.options)
    viewer.update(edit=darken)  # as a live edit does
    options = dict(viewer.compare_picker.options)
    viewer.compare_picker.value = options["edit: previous version"]
    assert viewer.error.value == ""
    assert "compared with edit's previous version" in html.unescape(viewer.summary.value)
    assert picture(viewer).width == 2 * (TILE + 4) + 4
    click(viewer, 1, columns=2)  # B: the batch under the replaced version, its values kept
    np.testing.assert_array_equal(viewer.zoom.sample, brightened[0])
    click(viewer, 0, columns=2)  # A: now
    np.testing.assert_array_equal(viewer.zoom.sample, viewer.batch.at(0))
    assert (viewer.batch.at(0) <= brightened[0]).all()
    # The operator runs the new version afterwards, and a slider keeps the comparison.
    viewer.sliders["edit"]["amount"].value = 10
    assert "previous version" in viewer.summary.value and viewer.error.value == ""
    assert viewer.code_text.count("darken") == 1
    viewer.compare_picker.value = ""
    assert picture(viewer).width == COLUMNS * (TILE + 4) + 4
