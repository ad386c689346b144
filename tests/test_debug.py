"""Debug mode (issue 4): the definition runs eagerly on every run(), and gives the same answers
as the normal pipeline and as ``augkit.eager``, bit for bit.

The "same answers" tests are parametrized over the operator registry: each operator runs the
``body`` of its row in tests/operator_cases.py (a small definition using it, with per-sample
random arguments where the operator takes them); tests/test_operator_cases.py fails for an
operator without a row, so a new operator is covered as soon as it is registered and has one.
"""

from __future__ import annotations

import functools
import gc
import pathlib
import re
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from PIL import Image

import augkit
from augkit import eager, fn, pipeline_def, types
from augkit.errors import ArgumentError, GraphError, OperatorError
from augkit.operators.registry import REGISTRY
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from tests.operator_cases import BATCH, CASES, PUBLIC, OperatorCase
from tests.operator_cases import case as operator_case
from tests.operator_check import check_output_specs, fn_operator

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
THIS_FILE = str(pathlib.Path(__file__).resolve())
# BATCH is 4 (tests/operator_cases.py): of the 15 photos, iteration 3 crosses into the second
# epoch, and 4 is in it.
ITERATIONS = 5
SEED = 1234
SMALL = (24, 32)  # the photos are resized to this (H, W) before the operator under test

# --- debug == normal, for every operator's row of tests/operator_cases.py ---------------------

OPERATORS = [name for name in PUBLIC if "cpu" in REGISTRY[name].devices]


def _pipeline(case: OperatorCase, debug: bool) -> Pipeline:
    """The case's definition after two shuffled readers' photos, as a pipeline."""

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=SEED, debug=debug)
    def define() -> tuple[Any, ...]:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        if case.input == "jpegs":
            x = jpegs
        else:
            x = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=SMALL)
        return (*case.body(fn_operator, x), labels)

    return define()


def _assert_same_batches(a: tuple[TensorList, ...], b: tuple[TensorList, ...], what: str) -> None:
    assert len(a) == len(b), what
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        assert len(x) == len(y), f"{what}, output {k}: batch sizes {len(x)} and {len(y)}"
        assert x.layout() == y.layout(), f"{what}, output {k}: layouts differ"
        assert x.kind == y.kind, f"{what}, output {k}: kinds {x.kind} and {y.kind}"
        for i in range(len(x)):
            got, want = np.asarray(x.at(i)), np.asarray(y.at(i))
            assert got.dtype == want.dtype, f"{what}, output {k}, sample {i}: dtypes differ"
            np.testing.assert_array_equal(got, want, err_msg=f"{what}, output {k}, sample {i}")


@pytest.mark.parametrize("name", OPERATORS)
def test_debug_mode_equals_normal_mode(name: str) -> None:
    """Same seed, several iterations across an epoch boundary of shuffled readers: the debug
    pipeline's outputs are bit-identical to the normal one's."""
    case = operator_case(name)
    runs = {}
    for debug in (False, True):
        pipe = _pipeline(case, debug)
        try:
            runs[debug] = []
            for _ in range(ITERATIONS):
                runs[debug].append(pipe.run())
                if not debug:  # every output is what its schema declares
                    check_output_specs(pipe)
        finally:
            pipe.close()
    for it in range(ITERATIONS):
        _assert_same_batches(runs[True][it], runs[False][it], f"{name}, iteration {it}")
    labels = [int(v) for out in runs[False] for v in out[-1].as_array().reshape(-1)]
    assert sorted(labels[:15]) == sorted([0, 1, 2, 3, 4] * 3), "the first epoch is not whole"


# --- debug == normal on the GPU (the fake one in the CPU suite: AUGKIT_FAKE_GPU=1) ------------

# Every operator with a GPU kernel, its row's body given GPU data (DALI's rule runs it on the GPU),
# but rows that cannot take GPU data or use no input. A new GPU kernel whose row feeds the data to
# a CPU-only operator fails here with that operator's "for the CPU only" refusal: list it below.
GPU_CASES_LEFT_OUT = {
    "python_function": "its row's function adds a NumPy array to the data: a CPU function",
    "reshape": "its row reshapes fn.shapes of the data, a CPU-only operator",
    "cast_like": "its row draws fn.random.normal shaped like the data, a CPU-only operator",
    "bb_flip": "its row uses no input",
    "coord_flip": "its row uses no input",
    "coord_transform": "its row uses no input",
    "external_source": "its row uses no input",
}
GPU_OPERATORS = [
    pytest.param(name, marks=pytest.mark.cuda) if name == "torch_python_function" else name
    for name in OPERATORS
    if "gpu" in REGISTRY[name].devices and name not in GPU_CASES_LEFT_OUT
]


def _gpu_pipeline(case: OperatorCase, debug: bool) -> Pipeline:
    """``_pipeline``'s definition with its input moved to the GPU first (device_id=0)."""

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=SEED, debug=debug)
    def define() -> tuple[Any, ...]:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        if case.input == "jpegs":
            x = jpegs
        else:
            x = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), size=SMALL)
        return (*case.body(fn_operator, x.gpu()), labels)

    return define()


def _debug_and_normal(make: Callable[[bool], Pipeline], iterations: int) -> dict[bool, list[Any]]:
    runs: dict[bool, list[Any]] = {}
    for debug in (False, True):
        pipe = make(debug)
        try:
            runs[debug] = [pipe.run() for _ in range(iterations)]
        finally:
            pipe.close()
    return runs


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_OPERATORS)
def test_debug_mode_equals_normal_mode_on_the_gpu(name: str) -> None:
    """``test_debug_mode_equals_normal_mode`` with the operator given GPU data: its GPU kernel
    runs in both modes, the same numbers come back, on the GPU."""
    case = operator_case(name)
    runs = _debug_and_normal(lambda debug: _gpu_pipeline(case, debug), ITERATIONS)
    assert any(out.device == "gpu" for out in runs[False][0]), f"{name}: nothing ran on the GPU"
    for it in range(ITERATIONS):
        for debug in (False, True):
            devices = [out.device for out in runs[debug][it]]
            assert devices == [out.device for out in runs[False][it]], (name, debug, devices)
        _assert_same_batches(runs[True][it], runs[False][it], f"{name} on the GPU, iteration {it}")


@pytest.mark.gpu
def test_a_gpu_pipeline_with_random_draws_is_the_same_in_debug_mode() -> None:
    """decoders.image -> .gpu() -> resize, flip, rotate, crop_mirror_normalize and
    random_resized_crop with per-sample random arguments, drawn on the host and applied on the
    GPU: debug mode gives the normal pipeline's numbers, iteration by iteration (the copy to the
    GPU takes no seed in either mode)."""

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=SEED)
    def define() -> tuple[Any, ...]:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        images = fn.decoders.image(jpegs, output_type=types.RGB).gpu()
        resized = fn.resize(images, resize_shorter=fn.random.uniform(range=(40, 64)))
        flipped = fn.flip(resized, horizontal=fn.random.coin_flip(), vertical=1)
        rotated = fn.rotate(flipped, angle=fn.random.uniform(range=(-30, 30)), fill_value=0)
        normalized = fn.crop_mirror_normalize(
            rotated,
            crop=(32, 32),
            crop_pos_x=fn.random.uniform(range=(0, 1)),
            crop_pos_y=fn.random.uniform(range=(0, 1)),
            mirror=fn.random.coin_flip(),
            mean=[128.0, 120.0, 110.0],
            std=[60.0, 62.0, 64.0],
            dtype=types.FLOAT,
            output_layout="CHW",
        )
        cropped = fn.random_resized_crop(images, size=(24, 24))
        return normalized, cropped, rotated, labels

    runs = _debug_and_normal(lambda debug: define(debug=debug), ITERATIONS)
    for it in range(ITERATIONS):
        for debug in (False, True):
            assert [o.device for o in runs[debug][it]] == ["gpu", "gpu", "gpu", "cpu"]
        _assert_same_batches(runs[True][it], runs[False][it], f"GPU pipeline, iteration {it}")
    assert runs[False][0][0].layout() == "CHW"


# --- eager == pipeline on a fixed input batch -------------------------------------------------


@functools.cache
def _fixed_images() -> list[np.ndarray]:
    paths = sorted(IMAGES.glob("*/*.jpg"))[1::4][:BATCH]
    h, w = SMALL
    return [np.asarray(Image.open(p).convert("RGB").resize((w, h), Image.BILINEAR)) for p in paths]


@functools.cache
def _fixed_jpegs() -> list[np.ndarray]:
    paths = sorted(IMAGES.glob("*/*.jpg"))[2::4][:BATCH]
    return [np.frombuffer(p.read_bytes(), np.uint8) for p in paths]


def _fixed(case: OperatorCase) -> list[np.ndarray]:
    return _fixed_jpegs() if case.input == "jpegs" else _fixed_images()


def _eager_op(name: str) -> Callable[..., Any]:
    """``augkit.eager``'s form of operator ``name``; operators that may have no inputs get the
    batch size as ``batch_size=`` (eager ignores it once inputs are given)."""
    target: Any = eager
    for part in name.split("."):
        target = getattr(target, part)
    if REGISTRY[name].min_inputs == 0:
        return functools.partial(target, batch_size=BATCH)
    return target


EAGER_OPERATORS = [n for n in OPERATORS if n in CASES and CASES[n].eager]


@pytest.mark.parametrize("name", EAGER_OPERATORS)
def test_eager_equals_pipeline(name: str) -> None:
    """The same calls through ``augkit.eager`` under ``rng_state(seed, iteration=i)`` give the
    pipeline's iteration ``i``, for the same input batch (fed through an external source, which
    is operator 0 in both)."""
    case = operator_case(name)
    fixed = _fixed(case)
    pipe = Pipeline(batch_size=BATCH, num_threads=2, device_id=None, seed=SEED)
    with pipe:
        x = fn.external_source(source=lambda: fixed)
        pipe.set_outputs(*case.body(fn_operator, x))
    try:
        expected = [pipe.run() for _ in range(2)]
    finally:
        pipe.close()
    for it in range(2):
        with eager.rng_state(SEED, iteration=it):
            x = _eager_op("external_source")(source=lambda: fixed)
            got = case.body(_eager_op, x)
        assert len(got) == len(expected[it])
        for k, (samples, batch) in enumerate(zip(got, expected[it], strict=True)):
            assert isinstance(samples, list), f"{name}: eager on a list gave {type(samples)}"
            assert len(samples) == len(batch)
            for i, sample in enumerate(samples):
                want = batch.at(i)
                assert sample.dtype == want.dtype, f"{name}, iteration {it}, output {k}"
                np.testing.assert_array_equal(
                    sample, want, err_msg=f"{name}: eager, iteration {it}, output {k}, sample {i}"
                )


# --- what a node shows and holds in debug mode ------------------------------------------------


def _photos_pipeline(debug: bool = True, **kwargs: Any) -> Any:
    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=7, debug=debug, **kwargs)
    def photos() -> Any:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES))
        return fn.decoders.image(jpegs, output_type=types.RGB), labels

    return photos()


def test_print_node_shows_operator_dtype_layout_batch_and_shapes(capsys) -> None:
    shown = {}

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=7, debug=True)
    def define() -> Any:
        jpegs, _ = fn.readers.file(file_root=str(IMAGES))
        images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
        print(images)
        shown["node"] = images
        return images

    (batch,) = define().run()
    printed = capsys.readouterr().out
    assert "decode" in printed
    assert "decoders.Image" in printed
    assert "UINT8" in printed
    assert "'HWC'" in printed
    assert "batch_size=3" in printed
    for shape in batch.shape():
        assert str(shape) in printed
    assert shown["node"].get() is batch


def test_print_node_of_a_large_batch_elides_shapes() -> None:
    @pipeline_def(batch_size=12, num_threads=1, device_id=None, seed=7, debug=True)
    def define() -> Any:
        values = fn.random.uniform(shape=[2])
        text = repr(values)
        assert "batch_size=12" in text and "..." in text and text.count("(2,)") == 4
        return values

    define().run()


def test_get_returns_the_batch_in_debug_mode() -> None:
    seen: list[Any] = []

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=7, debug=True)
    def define() -> Any:
        _, labels = fn.readers.file(file_root=str(IMAGES))
        batch = labels.get()
        seen.append(batch)
        assert isinstance(batch, TensorList) and len(batch) == 3
        return labels

    pipe = define()
    (labels,) = pipe.run()
    assert seen[0] is labels
    np.testing.assert_array_equal(labels.as_array().reshape(-1), [0, 0, 0])


def test_get_in_a_normal_pipeline_raises_a_helpful_error() -> None:
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        values = fn.random.uniform(range=(0, 1), name="values")
        with pytest.raises(GraphError, match=r"values holds no batch.*debug=True"):
            values.get()
        pipe.set_outputs(values)
    pipe.run()
    with pytest.raises(GraphError, match="debug"):
        values.get()  # running the pipeline does not fill the traced node either
    assert "holds" not in repr(values) and "values" in repr(values)


@pytest.mark.parametrize(
    "convert",
    [
        pytest.param(lambda batch: np.stack(batch), id="array"),
        pytest.param(lambda batch: list(batch), id="list"),
        pytest.param(lambda batch: TensorList(list(batch), "HWC"), id="tensorlist"),
        pytest.param(
            lambda batch: __import__("torch").from_numpy(np.stack(batch)), id="torch-tensor"
        ),
        pytest.param(
            lambda batch: [__import__("torch").from_numpy(s.copy()) for s in batch],
            id="torch-list",
        ),
    ],
)
def test_arrays_and_tensors_as_operator_inputs(convert: Callable[[Any], Any]) -> None:
    """NumPy arrays (first axis: batch), lists of arrays, TensorLists and torch tensors are
    accepted as inputs in debug mode, and give what the same batch through the graph gives."""
    rng = np.random.default_rng(0)
    batch = [rng.integers(0, 256, (6, 8, 3), dtype=np.uint8) for _ in range(3)]
    given = convert(batch)

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=3, debug=True)
    def define() -> Any:
        flipped = fn.flip(given, horizontal=fn.random.coin_flip())
        return flipped, fn.cast(given, dtype=types.FLOAT)

    flipped, cast = define().run()
    assert len(flipped) == 3
    kept = [flipped.at(i) for i in range(3)]
    for i in range(3):
        np.testing.assert_array_equal(cast.at(i), batch[i].astype(np.float32))
        assert kept[i].shape == batch[i].shape
        assert np.array_equal(kept[i], batch[i]) or np.array_equal(kept[i], batch[i][:, ::-1])
    for sample in batch:
        sample[...] = 0  # the pipeline has its own copy of what it was given
    for i in range(3):
        np.testing.assert_array_equal(flipped.at(i), kept[i])


@pytest.mark.parametrize("as_batch", [list, TensorList], ids=["list of arrays", "TensorList"])
def test_per_sample_arguments_as_batches_in_debug_mode(as_batch: Any) -> None:
    """A per-sample argument may be a batch of values in debug mode, as in eager calls."""
    rng = np.random.default_rng(1)
    batch = [rng.integers(0, 256, (6, 8, 3), dtype=np.uint8) for _ in range(2)]
    values = [np.array(0.5, np.float32), np.array(1.5, np.float32)]
    given = values if as_batch is list else TensorList(values)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3, debug=True)
    def define() -> Any:
        return fn.brightness_contrast(batch, brightness=given)

    (out,) = define().run()
    for i in range(2):
        np.testing.assert_array_equal(
            out.at(i), eager.brightness_contrast(batch[i], brightness=float(values[i]))
        )


def test_an_array_input_is_not_an_operator_for_the_seeds() -> None:
    """Constants do not count as operators: the numbering is that of the traced graph, whose
    external source is where the debug pipeline has a constant."""
    rng = np.random.default_rng(1)
    batch = [rng.integers(0, 256, (6, 8, 3), dtype=np.uint8) for _ in range(4)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=11, debug=True)
    def with_constant() -> Any:
        angle = fn.random.uniform(range=(-40, 40))
        return fn.rotate(batch, angle=angle), angle

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=11)
    def with_source() -> Any:
        angle = fn.random.uniform(range=(-40, 40))
        return fn.rotate(fn.external_source(source=lambda: batch), angle=angle), angle

    a, b = with_constant(), with_source()
    for it in range(2):
        _assert_same_batches(a.run(), b.run(), f"iteration {it}")


def test_python_between_operators_runs_every_iteration() -> None:
    counts = {"definition": 0, "between": 0}
    means: list[float] = []

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=5, debug=True)
    def define() -> Any:
        counts["definition"] += 1
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        counts["between"] += 1
        small = fn.resize(images, size=SMALL)
        means.append(float(small.get().as_array().mean()))  # NumPy on the batch
        if means[-1] > 1000:  # plain Python control flow on the data
            small = fn.flip(small)
        return small, labels

    pipe = define()
    for _ in range(4):
        (small, _) = pipe.run()
    assert counts == {"definition": 4, "between": 4}
    assert len(means) == 4
    assert means[-1] == pytest.approx(float(small.as_array().mean()))


def test_epochs_in_debug_mode_match_normal_mode() -> None:
    epochs = {}
    for debug in (False, True):
        pipe = _photos_pipeline(debug=debug)
        seen = []
        for _ in range(2):
            seen.append([b[1].as_array().reshape(-1).tolist() for b in pipe])
        epochs[debug] = seen
        pipe.close()
    assert epochs[True] == epochs[False]
    for epoch in epochs[True]:
        assert len(epoch) == 5  # 15 files, batches of 3
        assert sorted(v for batch in epoch for v in batch) == sorted([0, 1, 2, 3, 4] * 3)


def test_partial_last_batch_in_debug_mode() -> None:
    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=2, debug=True)
    def define() -> Any:
        _, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        return labels

    pipe = define()
    sizes = [len(labels) for (labels,) in pipe.epoch(last_batch_policy="partial")]
    assert sizes == [4, 4, 4, 3]
    assert list(pipe.epoch_size().values()) == [15]


def test_iterable_external_source_goes_on_across_runs_in_debug_mode() -> None:
    """Operators with state (an external source's iterator, readers) are made on the first
    run and kept: the definition runs again, the iterator goes on."""
    data = [[np.full((2,), k * 10 + i, np.int16) for i in range(2)] for k in range(3)]
    results = {}
    for debug in (False, True):

        @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=4, debug=debug)
        def define() -> Any:
            return fn.external_source(source=data, cycle="quiet")

        pipe = define()
        results[debug] = [pipe.run()[0].as_array()[:, 0].tolist() for _ in range(5)]
    assert results[True] == results[False] == [[0, 1], [10, 11], [20, 21], [0, 1], [10, 11]]


# --- errors point at the user's line ----------------------------------------------------------


def _user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == THIS_FILE]


def _ends_at(exc: BaseException, marker: str) -> None:
    """The traceback contains the user's line and ends there (not inside augkit)."""
    frames = traceback.extract_tb(exc.__traceback__)
    line = _line_of(marker)
    assert line in [f.lineno for f in frames if f.filename == THIS_FILE], frames
    assert (frames[-1].filename, frames[-1].lineno) == (THIS_FILE, line), frames


def _line_of(needle: str) -> int:
    lines = pathlib.Path(THIS_FILE).read_text().splitlines()
    hits = [k + 1 for k, line in enumerate(lines) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


class _Switch:
    fail = True


def _sometimes_broken(image: np.ndarray) -> np.ndarray:
    if _Switch.fail and image.shape[0] > 0:
        raise ZeroDivisionError("the user's function failed")  # USER-FUNCTION-LINE
    return image


def _same(data: np.ndarray) -> np.ndarray:
    return data


@pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=9, debug=True)
def _failing(kind: str) -> Any:
    jpegs, _ = fn.readers.file(file_root=str(IMAGES))
    if kind == "kind":
        return fn.resize(jpegs, resize_x=10, resize_y=10)  # KIND-LINE
    if kind == "rank":
        # A Python function's output is generic (its kind is not known): the kernel finds out.
        data = fn.python_function(jpegs, function=_same)
        return fn.resize(data, resize_x=10, resize_y=10)  # RANK-LINE
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    if kind == "argument":
        return fn.rotate(images, angle=30, interp_type="nearest")  # ARGUMENT-LINE
    if kind == "function":
        return fn.python_function(images, function=_sometimes_broken)  # FUNCTION-LINE
    return images


def test_bad_argument_points_at_the_users_line() -> None:
    pipe = _failing("argument")
    with pytest.raises(ArgumentError, match=r"Rotate.*interp_type") as info:
        pipe.run()
    _ends_at(info.value, "# ARGUMENT" + "-LINE")


def test_wrong_input_rank_names_operator_and_sample_at_the_users_line() -> None:
    pipe = _failing("rank")
    with pytest.raises(OperatorError) as info:
        pipe.run()
    error = info.value
    assert error.operator.startswith("Resize") and error.operator in str(error)
    assert error.sample_index == 0 and "sample #0" in str(error)
    assert error.source_info == "animals/chelsea_cat.jpg"
    _ends_at(error, "# RANK" + "-LINE")
    # augkit's own frames stay in the chained cause, for whoever debugs augkit itself.
    assert isinstance(error.__cause__, ValueError)


def test_exception_in_a_user_function_points_at_both_lines_and_the_pipeline_goes_on() -> None:
    pipe = _failing("function")
    _Switch.fail = True
    try:
        with pytest.raises(OperatorError, match="sample #0") as info:
            pipe.run()
        error = info.value
        assert "PythonFunction" in error.operator and "_sometimes_broken" in str(error)
        _ends_at(error, "# FUNCTION" + "-LINE")
        cause = error.__cause__
        assert isinstance(cause, ZeroDivisionError)
        _ends_at(cause, "# USER-FUNCTION" + "-LINE")
        _Switch.fail = False
        (images,) = pipe.run()  # the pipeline keeps working: the next batch
        assert len(images) == 3
        assert images.source_info() == [
            "medical/cell_phase_microscopy.jpg",
            "medical/immunohistochemistry.jpg",
            "medical/retina_fundus.jpg",
        ]
    finally:
        _Switch.fail = True


def test_a_wrong_kind_is_refused_at_the_users_line_as_at_build() -> None:
    with pytest.raises(GraphError) as info:
        _failing("kind").run()
    message = str(info.value)
    assert "input 0" in message and "kind encoded" in message and "kind image" in message
    assert "decode them first with fn.decoders.image" in message
    _ends_at(info.value, "# KIND" + "-LINE")
    normal = _failing("kind", debug=False)
    with pytest.raises(GraphError) as built:
        normal.build()
    # The same words (but the node numbers: each pipeline makes its own nodes).
    assert re.sub(r"_\d+", "_N", str(built.value)) == re.sub(r"_\d+", "_N", message)


def test_errors_do_not_break_the_pipeline() -> None:
    pipe = _failing("rank")
    for _ in range(2):
        with pytest.raises(OperatorError):
            pipe.run()
    good = _failing("decode")
    good.run()
    (images,) = good.run()
    assert len(images) == 3 and images.layout() == "HWC"


def test_profile_and_readers_keep_one_name_per_operator_across_runs() -> None:
    pipe = _photos_pipeline(exec_async=False)
    for _ in range(3):
        pipe.run()
    rows = {r["operator"]: r for r in pipe.profile().rows}
    assert {r["op"] for r in rows.values()} == {"readers.file", "decoders.image"}
    assert all(r["calls"] == 3 for r in rows.values())
    assert list(pipe.epoch_size()) == [n for n, r in rows.items() if r["op"] == "readers.file"]


def test_debug_mode_needs_a_definition() -> None:
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, debug=True)
    with pipe:
        pipe.set_outputs(fn.random.uniform())
    with pytest.raises(GraphError, match="debug mode"):
        pipe.run()


def test_debug_mode_with_define_graph_subclass() -> None:
    class Photos(Pipeline):
        def __init__(self, debug: bool) -> None:
            super().__init__(batch_size=3, num_threads=2, device_id=None, seed=8, debug=debug)
            self.read = augkit.ops.readers.File(file_root=str(IMAGES), random_shuffle=True)
            self.decode = augkit.ops.decoders.Image(output_type=types.RGB)
            self.rotate = augkit.ops.Rotate()
            self.angle = augkit.ops.random.Uniform(range=(-20, 20))

        def define_graph(self) -> Any:
            jpegs, labels = self.read()
            small = fn.resize(self.decode(jpegs), size=SMALL)
            return self.rotate(small, angle=self.angle()), labels

    normal, debug = Photos(False), Photos(True)
    for it in range(ITERATIONS):
        _assert_same_batches(debug.run(), normal.run(), f"iteration {it}")
    normal.close()


def test_batches_of_finished_iterations_go_without_the_garbage_collector() -> None:
    """Nodes and their operators refer to each other; the batches of an iteration must still
    be freed as soon as nothing holds them, not at the next cyclic garbage collection (which
    frees hundreds of MB at once and made debug mode 20% slower on the benchmark)."""
    refs: list[weakref.ref[TensorList]] = []

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, debug=True)
    def define() -> Any:
        values = fn.random.uniform(shape=[1000])
        refs.append(weakref.ref(values.get()))
        return values * 2

    pipe = define()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            pipe.run()
        assert refs[0]() is None and refs[1]() is None
        assert refs[2]() is not None  # the last run's batches stay for inspection
        # augkit.eager too: the result is the caller's alone.
        result = weakref.ref(eager.cast(TensorList([np.zeros(8)] * 2), dtype=types.FLOAT))
        assert result() is None
    finally:
        gc.enable()


def test_an_input_of_another_size_than_the_per_sample_arguments_is_a_clear_error() -> None:
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, debug=True)
    def define() -> Any:
        three = np.zeros((3, 6, 8, 3), np.uint8)
        return fn.rotate(three, angle=fn.random.uniform(range=(0, 90)))  # SIZE-LINE

    with pytest.raises(OperatorError, match="'angle' has 4 values, but the batch has 3") as info:
        define().run()
    _ends_at(info.value, "# SIZE" + "-LINE")
