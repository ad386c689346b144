"""Faults found by trying augkit as a new user would (issue 11): each test failed before its fix.

Crashes (a segmentation fault on ``import torch``), silently wrong data (``bool(node)``,
``node == x``, an excluded bound drawn, layouts copied where DALI leaves none, batches computed
that nobody asked for), and messages that did not say what was wrong.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from augkit import ArgumentError, GraphError, Pipeline, fn, pipeline_def, types

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMAGES = ROOT / "data" / "images"


def _run_script(tmp_path: pathlib.Path, body: str, *args: str, timeout: float = 180) -> str:
    """Run ``body`` in a fresh interpreter (torch not imported yet) on this checkout's augkit;
    return its output, failing with it when the process does not exit with 0."""
    script = tmp_path / "script.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"exit status {done.returncode} (-11: SIGSEGV):\n{output}"
    return output


def test_import_torch_while_the_pipeline_computes_ahead_does_not_crash(tmp_path):
    """The notebook's sequence: a pipeline with a Python operator computes batches ahead on its
    threads (which read the global generators' states, torch's among them) while the next cell
    runs ``import torch``. Before the fix the process died with SIGSEGV every time: augkit read
    torch's default generator while torch was half imported."""
    output = _run_script(
        tmp_path,
        """
        import threading
        import numpy as np
        import augkit
        from augkit import fn, pipeline_def
        assert "torch" not in sys.modules

        def brighten(image):
            return np.minimum(image.astype(np.int32) + 10, 255).astype(np.uint8)

        @pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=1, prefetch_queue_depth=3)
        def define():
            shape = [64, 64, 3]
            images = fn.random.uniform(range=[0, 255], shape=shape, dtype=augkit.types.UINT8)
            return fn.python_function(images, function=brighten)

        pipe = define()
        pipe.run()
        stop = False

        def keep_running():
            while not stop:
                pipe.run()

        runner = threading.Thread(target=keep_running)
        runner.start()
        import torch
        stop = True
        runner.join()
        pipe.run()
        pipe.close()
        print("survived", torch.__version__)
        """,
    )
    assert "survived" in output


def test_resize_imports_torch_when_the_pipeline_is_built_on_the_building_thread(tmp_path):
    """resize imported torch lazily, on a pool thread, inside the first run(): 1.3-1.6 s on
    the first batch, and a race with a Python function running on another thread."""
    output = _run_script(
        tmp_path,
        """
        import threading
        from augkit import fn, pipeline_def
        from augkit.operators.geometric import resize_torch
        seen = {}
        original = resize_torch._load

        def load():
            seen["thread"] = threading.current_thread().name
            return original()

        resize_torch._load = load

        @pipeline_def(batch_size=2, num_threads=2, device_id=None, seed=1)
        def define(root):
            jpegs, _ = fn.readers.file(file_root=root)
            return fn.resize(fn.decoders.image(jpegs), resize_x=30, resize_y=30)

        pipe = define(sys.argv[1])
        assert "torch" not in sys.modules
        pipe.build()
        assert "torch" in sys.modules, "build() did not import torch"
        assert seen["thread"] == threading.current_thread().name, seen
        pipe.run()
        pipe.close()
        print("imported at build on", seen["thread"])
        """,
        str(IMAGES),
    )
    assert "imported at build on MainThread" in output


# --- silent wrong results (from running DALI's own tests against augkit) --------------------


def _coin_pipe(**kwargs):
    pipe = Pipeline(batch_size=8, num_threads=1, device_id=None, seed=3, **kwargs)
    return pipe


def test_bool_of_a_node_refuses():
    pipe = _coin_pipe()
    with pipe:
        coin = fn.random.coin_flip()
        with pytest.raises(TypeError, match="has no truth value"):
            bool(coin)
        with pytest.raises(TypeError, match="has no truth value"):
            if coin:
                pass
        pipe.set_outputs(coin)


def test_a_comparison_is_a_per_sample_node_that_flips_the_right_samples():
    """``fn.flip(x, horizontal=coin == 1)`` never flipped: ``coin == 1`` was a Python False."""
    ramp = np.arange(12, dtype=np.uint8).reshape(1, 4, 3)
    pipe = _coin_pipe()
    with pipe:
        image = fn.external_source(source=lambda: [ramp] * 8, layout="HWC")
        coin = fn.random.coin_flip()
        pipe.set_outputs(coin, coin == 1, fn.flip(image, horizontal=coin == 1))
    coins, equal, flipped = pipe.run()
    assert equal.dtype == types.BOOL
    values = [int(coins.at(i)) for i in range(8)]
    assert 0 < sum(values) < 8, values  # both cases are exercised
    for i, value in enumerate(values):
        assert bool(equal.at(i)) == (value == 1)
        want = ramp[:, ::-1] if value == 1 else ramp
        np.testing.assert_array_equal(flipped.at(i), want)


@pytest.mark.parametrize("dtype", [types.FLOAT, types.FLOAT64, types.FLOAT16])
def test_uniform_never_returns_its_excluded_upper_bound(dtype):
    """Drawn in float64 and rounded to float32, half the values of [10, nextafter(10, 11))
    were 10.000001, the bound; DALI never returns it."""
    numpy = {types.FLOAT: np.float32, types.FLOAT64: np.float64, types.FLOAT16: np.float16}
    low = 10.0
    high = float(np.nextafter(numpy[dtype](10), numpy[dtype](11)))
    pipe = Pipeline(batch_size=16, num_threads=1, device_id=None, seed=5)
    with pipe:
        pipe.set_outputs(fn.random.uniform(range=[low, high], shape=[64], dtype=dtype))
    (values,) = pipe.run()
    drawn = values.as_array().astype(np.float64)
    assert (drawn >= low).all() and (drawn < high).all(), np.unique(drawn)


def test_a_short_output_layouts_leaves_the_other_outputs_without_a_layout():
    image = np.zeros((4, 5, 3), np.uint8)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: [image, image], layout="HWC")
        pipe.set_outputs(
            *fn.python_function(
                x, function=lambda a: (a, a, a), num_outputs=3, output_layouts=["HWC"]
            )
        )
    first, second, third = pipe.run()
    assert (first.layout(), second.layout(), third.layout()) == ("HWC", "", "")
    assert (first.kind.name, second.kind.name, third.kind.name) == ("image", "generic", "generic")


@pytest.mark.parametrize(("depth", "calls"), [(1, 24), (2, 32), (3, 40)])
def test_prefetch_queue_depth_computes_what_dali_computes(depth, calls):
    """DALI's rule: the first run() starts depth batches, each later run() one more; with
    depth 1 nothing is computed that was not asked for. Before the fix depth 1 computed one
    batch ahead (32 calls of a side-effect function in three run()s of batch 8; DALI: 24)."""
    seen = []

    def count(x):
        seen.append(1)
        # Long enough that every iteration takes over prefetch.SHORT_ITERATION (2 ms): shorter
        # ones are computed by run() itself, not ahead, and the count would depend on timing
        # (it was 32, not 40, once in a full run).
        time.sleep(0.001)
        return x

    @pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=1, prefetch_queue_depth=depth)
    def define():
        jpegs, _ = fn.readers.file(file_root=str(IMAGES))
        return fn.python_function(jpegs, function=count)

    pipe = define()
    try:
        for _ in range(3):
            pipe.run()
        deadline = time.monotonic() + 30
        while len(seen) < calls and time.monotonic() < deadline:  # what is computed ahead
            time.sleep(0.01)
        time.sleep(0.3)  # and nothing more comes
        assert len(seen) == calls
    finally:
        pipe.close()


# --- messages -----------------------------------------------------------------------------


def test_a_file_root_of_images_without_class_folders_says_what_it_found(tmp_path):
    for name in ("a.jpg", "b.jpg", "c.png"):
        (tmp_path / name).write_bytes((IMAGES / "animals" / "chelsea_cat.jpg").read_bytes())
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(*fn.readers.file(file_root=str(tmp_path)))
    with pytest.raises(ArgumentError) as info:
        pipe.build()
    message = str(info.value)
    assert "it holds 3 file(s) matching" in message and "'a.jpg'" in message
    assert "immediate subfolders" in message and "ignores files lying in file_root" in message
    assert "files=[...]" in message


def test_a_wrong_kind_names_the_operator_the_input_and_both_kinds():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        _, labels = fn.readers.file(file_root=str(IMAGES), name="reader")
        pipe.set_outputs(fn.brightness_contrast(labels, brightness=1.5, name="bright"))
    with pytest.raises(GraphError) as info:
        pipe.build()
    message = str(info.value)
    assert message.startswith("bright (fn.brightness_contrast): input 0 (reader[1])")
    assert "(kind labels)" in message and "(kind image)" in message
    assert "use the reader's first output" in message


def test_geometric_operators_that_cannot_move_masks_refuse_them():
    mask = np.zeros((4, 4), np.uint8)
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        masks = fn.python_function(
            fn.external_source(source=lambda: [mask]), function=lambda m: m, kind="mask"
        )
        pipe.set_outputs(fn.water(masks), fn.flip(masks))
    with pytest.raises(GraphError, match=r"\(kind mask\).*does not move mask.*fn.rotate"):
        pipe.build()


def test_python_function_outputs_are_generic_unless_the_user_says():
    image = np.zeros((4, 5, 3), np.uint8)
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [image])
        pipe.set_outputs(
            fn.python_function(x, function=lambda a: a),
            fn.python_function(x, function=lambda a: a, output_layouts="HWC"),
            *fn.python_function(
                x, function=lambda a: (a, a[:1, :1, 0]), num_outputs=2, kind=["image", "mask"]
            ),
        )
    kinds = [batch.kind.name for batch in pipe.run()]
    assert kinds == ["generic", "image", "image", "mask"]
    with pytest.raises(ArgumentError, match="kind has 2 entries, but num_outputs is 3"):
        fn.python_function(x, function=lambda a: a, num_outputs=3, kind=["image", "mask"])


def test_to_torch_shares_a_dense_batch_and_copies_separate_samples():
    """``to_torch`` said it shared memory where possible, and always copied."""
    from augkit.plugin.pytorch import to_torch

    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, seed=1)
    with pipe:
        values = fn.random.uniform(shape=[3])
        images = fn.external_source(source=lambda: [image] * 4, layout="HWC")
        pipe.set_outputs(values, values * 2, images)
    values, doubled, images = pipe.run()
    for batch in (values, doubled):  # one array, made by a batch kernel: shared
        tensor = to_torch(batch)
        assert tensor.data_ptr() == batch._dense.ctypes.data
        np.testing.assert_array_equal(tensor.numpy(), batch.as_array())
    sample = to_torch(images[1])  # one sample: shared
    assert sample.data_ptr() == images._samples[1].ctypes.data
    stacked = to_torch(images)  # separate samples: a new, writable stack
    assert stacked.shape == (4, 2, 3, 3)
    assert all(stacked.data_ptr() != s.ctypes.data for s in images._samples)
    stacked[0] += 1  # the caller's own copy
    np.testing.assert_array_equal(images.at(0), image)
