# ruff: noqa: SIM108 - `if`/`else` blocks on DataNodes are what is tested, not ternaries
"""DALI's conditionals (``enable_conditionals=True``, ``augkit.conditionals``): per-sample
``if``/``elif``/``else``, ``and``, ``or``, ``not`` and ``x if c else y`` in a definition.

What a user checks: a branch's outputs are the same operators applied to the selected samples
outside any ``if``; operators in a branch run only on its samples; a sample's random draws do
not depend on which branch the other samples took; debug mode gives the normal pipeline's
numbers; DALI's errors for what is not allowed, with the user's line in the traceback; and the
pipeline stays usable after an error.
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest
from PIL import Image

from augkit import GraphError, OperatorError, Pipeline, conditionals, eager, fn, pipeline_def, types

BATCH = 8


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Eight photos at 48 x 64 (uint8 HWC)."""
    out = []
    for photo in (photos * 2)[:BATCH]:
        out.append(np.asarray(Image.fromarray(photo).resize((64, 48), Image.BILINEAR)))
    return out


def source(images: list[np.ndarray]):
    return lambda: list(images)


def flags(values):
    return [np.array(bool(v)) for v in values]


PRED = [True, False, False, True, True, False, True, False]


def run_once(pipe: Pipeline):
    return [
        out.as_array() if out.is_dense_tensor() else [out.at(i) for i in range(len(out))]
        for out in pipe.run()
    ]


# --- branch outputs are the operators on the selected samples --------------------------------
def test_branches_equal_the_operators_on_their_samples(small):
    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=5, enable_conditionals=True)
    def pipe():
        images = fn.external_source(source=source(small), batch=True, layout="HWC")
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        angle = fn.random.uniform(range=(10, 30))
        if pred:
            result = fn.rotate(images, angle=angle, fill_value=0)
            result = fn.resize(result, resize_x=32, resize_y=32)
        else:
            result = fn.flip(images, horizontal=1)
            result = fn.resize(result, resize_x=32, resize_y=32)
        return result, angle

    out, angles = pipe().run()
    assert len(out) == BATCH
    for i, taken in enumerate(PRED):
        if taken:
            want = eager.rotate([small[i]], angle=[angles.at(i)], fill_value=0)
            want = eager.resize(want, resize_x=32, resize_y=32)
        else:
            want = eager.resize(eager.flip([small[i]], horizontal=1), resize_x=32, resize_y=32)
        np.testing.assert_array_equal(out.at(i), np.asarray(want[0]), err_msg=f"sample {i}")
    # Layout and source kept through the split and the merge.
    assert out.layout() == "HWC"


def test_variable_changed_in_one_branch_keeps_the_others(small):
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        images = fn.external_source(source=source(small), batch=True, layout="HWC")
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        if pred:
            images = fn.flip(images, vertical=1, horizontal=0)
        return images

    (out,) = pipe().run()
    for i, taken in enumerate(PRED):
        want = small[i][::-1] if taken else small[i]
        np.testing.assert_array_equal(out.at(i), want)


def test_nested_elif_and_two_outputs():
    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=3, enable_conditionals=True)
    def pipe():
        k = fn.external_source(
            source=lambda: [np.array(i % 4, np.int32) for i in range(BATCH)], batch=True
        )
        x = fn.cast(k, dtype=types.FLOAT)
        if k == 0:
            a = x + 10
            b = x * 0
        elif k == 1:
            a = x + 20
            if x > 0:  # nested: always true here
                b = x * 2
            else:
                b = x * 3
        else:
            a = x + 30
            b = -x
        return a, b

    a, b = pipe().run()
    k = np.arange(BATCH) % 4
    np.testing.assert_array_equal(a.as_array(), np.where(k == 0, 10, np.where(k == 1, 21, k + 30)))
    np.testing.assert_array_equal(b.as_array(), np.where(k == 0, 0, np.where(k == 1, 2, -k)))


def test_constants_in_branches_are_promoted_per_sample():
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=3, enable_conditionals=True)
    def pipe():
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        if pred:
            v = 1
        else:
            v = 2
        same = 7  # not changed by the if: stays a Python int
        if pred:
            same = 7
        return v, fn.cast(pred, dtype=types.INT32) * same

    v, w = pipe().run()
    np.testing.assert_array_equal(v.as_array(), np.where(PRED, 1, 2).astype(np.int32))
    np.testing.assert_array_equal(w.as_array(), np.where(PRED, 7, 0))


# --- only the branch's samples are computed --------------------------------------------------
def test_a_branch_computes_only_its_samples():
    seen: list[int] = []

    def count(batch):
        seen.append(len(batch))
        return batch

    @pipeline_def(
        batch_size=32,
        num_threads=1,
        device_id=None,
        seed=2,
        enable_conditionals=True,
        exec_async=False,
        exec_pipelined=False,
    )
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        taken = fn.external_source(
            source=lambda: flags([i in (3, 17, 30) for i in range(32)]), batch=True
        )
        if taken:
            x = fn.python_function(x, function=count, batch_processing=True)
        return x

    p = pipe()
    p.run()
    assert seen == [3]


def test_an_empty_branch_runs_nothing():
    called: list[int] = []

    def record(x):
        called.append(1)
        return x

    @pipeline_def(
        batch_size=4,
        num_threads=1,
        device_id=None,
        seed=2,
        enable_conditionals=True,
        exec_async=False,
        exec_pipelined=False,
    )
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        if fn.external_source(source=lambda: flags([False] * 4), batch=True):
            x = fn.python_function(x, function=record) + 1
        return x

    (out,) = pipe().run()
    assert called == [] and len(out) == 4 and float(out.as_array().max()) < 1


def test_and_or_short_circuit_per_sample():
    seen: list[int] = []

    def count(batch):
        seen.append(len(batch))
        return batch

    a_values = [True, True, False, False, True, False, True, False]
    b_values = [True, False, True, False, False, True, True, False]

    @pipeline_def(
        batch_size=BATCH,
        num_threads=1,
        device_id=None,
        seed=2,
        enable_conditionals=True,
        exec_async=False,
        exec_pipelined=False,
    )
    def pipe():
        a = fn.external_source(source=lambda: flags(a_values), batch=True)
        b = fn.external_source(source=lambda: flags(b_values), batch=True)
        both = a and fn.python_function(b, function=count, batch_processing=True)
        either = a or b
        neither = not a and not b
        return both, either, neither

    both, either, neither = pipe().run()
    a, b = np.array(a_values), np.array(b_values)
    np.testing.assert_array_equal(both.as_array(), a & b)
    np.testing.assert_array_equal(either.as_array(), a | b)
    np.testing.assert_array_equal(neither.as_array(), ~a & ~b)
    assert both.dtype == types.BOOL
    assert seen == [int(a.sum())]  # the right side ran only where `a` was true


def test_conditional_expression_and_python_values_keep_python_semantics():
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=2, enable_conditionals=True)
    def pipe(mode="flip"):
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        x = fn.cast(pred, dtype=types.FLOAT)
        scale = 3.0 if mode == "flip" else 5.0  # a Python test: Python's if
        if mode == "flip" and scale > 2:
            x = x * scale
        y = x + 1 if pred else x - 1  # per sample
        return y

    (y,) = pipe().run()
    np.testing.assert_array_equal(y.as_array(), np.where(PRED, 4.0, -1.0).astype(np.float32))


# --- seeds -----------------------------------------------------------------------------------
def test_draws_do_not_depend_on_the_branch_other_samples_took():
    def pipeline(pattern):
        @pipeline_def(
            batch_size=BATCH, num_threads=2, device_id=None, seed=11, enable_conditionals=True
        )
        def pipe():
            pred = fn.external_source(source=lambda: flags(pattern), batch=True)
            if pred:
                v = fn.random.uniform(range=(0, 1))
            else:
                v = fn.random.uniform(range=(5, 6))
            return v

        return pipe().run()[0].as_array()

    first = pipeline(PRED)
    flipped = [not p if i != 0 else p for i, p in enumerate(PRED)]  # only sample 0 keeps
    second = pipeline(flipped)
    assert first[0] == second[0]
    # Every sample that took the same branch in both draws the same value.
    same = [i for i in range(BATCH) if PRED[i] == flipped[i]]
    np.testing.assert_array_equal(first[same], second[same])


def test_a_branch_draws_what_the_same_operator_draws_outside_any_if():
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=4, enable_conditionals=True)
    def inside():
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        v = fn.random.uniform(range=(0, 1), seed=77) if pred else fn.random.normal(seed=78)
        return v

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=4)
    def outside():
        return fn.random.uniform(range=(0, 1), seed=77)

    (a,) = inside().run()
    (b,) = outside().run()
    taken = np.flatnonzero(PRED)
    np.testing.assert_array_equal(a.as_array()[taken], b.as_array()[taken])


def test_an_if_changes_no_seed_of_the_operators_after_it():
    """Splits and merges take no operator seed: the operators after an `if` draw what they
    draw without it (the if's own operators count, as every operator does)."""

    def make(with_if: bool):
        @pipeline_def(
            batch_size=BATCH, num_threads=1, device_id=None, seed=9, enable_conditionals=True
        )
        def pipe():
            pred = fn.external_source(source=lambda: flags(PRED), batch=True)
            x = fn.cast(pred, dtype=types.FLOAT)
            if with_if:
                if pred:
                    x = x * 2
            else:
                x = x * 2  # the same one operator, on every sample
            return x, fn.random.uniform(range=(0, 1))

        return pipe().run()

    (_, u1), (_, u2) = make(True), make(False)
    np.testing.assert_array_equal(u1.as_array(), u2.as_array())


# --- debug mode, threads, prefetching ----------------------------------------------------------
def _mixed(small):
    def define():
        images = fn.external_source(source=source(small), batch=True, layout="HWC")
        p = fn.random.coin_flip(probability=0.5, dtype=types.BOOL)
        q = fn.random.uniform(range=(0, 1)) < 0.3
        if p and not q:
            images = fn.rotate(images, angle=fn.random.uniform(range=(-20, 20)), keep_size=True)
        elif q:
            images = fn.brightness_contrast(images, brightness=fn.random.uniform(range=(0.5, 1.5)))
            if fn.random.coin_flip(dtype=types.BOOL):
                images = fn.flip(images, horizontal=1)
        return images, p, q

    return define


@pytest.mark.parametrize("threads", [1, 3])
def test_debug_mode_and_threads_give_the_normal_numbers(small, threads):
    define = _mixed(small)
    kwargs = dict(batch_size=BATCH, device_id=None, seed=21, enable_conditionals=True)
    normal = pipeline_def(define, num_threads=2, **kwargs)()
    other = pipeline_def(define, num_threads=threads, debug=threads == 1, **kwargs)()
    for _ in range(3):
        for a, b in zip(normal.run(), other.run(), strict=True):
            for i in range(BATCH):
                np.testing.assert_array_equal(a.at(i), b.at(i))


def test_choices_say_which_branch_each_sample_took(small):
    pipe = pipeline_def(
        _mixed(small),
        batch_size=BATCH,
        num_threads=1,
        device_id=None,
        seed=21,
        enable_conditionals=True,
    )()
    _, p, q = pipe.run()
    records = pipe.choices()
    p, q = p.as_array(), q.as_array()
    for i, record in enumerate(records):
        assert record["if p and not q"] == bool(p[i] and not q[i])
        if record["if p and not q"]:
            assert "if q" not in record  # the elif is in the else branch: not reached
        else:
            assert record["if q"] == bool(q[i])
    # draws() has them too, with the random values that reached the sample.
    draws = pipe.draws(pipe.output_names()[0])
    assert all(set(record) <= set(d) for record, d in zip(records, draws, strict=True))
    rotated = [i for i, r in enumerate(records) if r["if p and not q"]]
    assert all(any(k.endswith(".angle") for k in draws[i]) for i in rotated)


# --- the definition's code -------------------------------------------------------------------
def test_closures_globals_and_define_graph():
    offset = 40  # read from the enclosing test function: a closure cell

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: flags([1, 0, 1, 0]), batch=True)
        if x:
            y = fn.cast(x, dtype=types.INT32) + offset
        else:
            y = fn.cast(x, dtype=types.INT32) - offset
        return y

    (y,) = pipe().run()
    assert y.as_array().tolist() == [41, -40, 41, -40]

    class Subclassed(Pipeline):
        def define_graph(self):
            x = fn.random.uniform(range=(0, 1))
            if x < 0.5:
                x = x + 10
            return x

    p = Subclassed(batch_size=16, num_threads=1, device_id=None, seed=3, enable_conditionals=True)
    (x,) = p.run()
    values = x.as_array()
    original = np.where(values >= 10, values - 10, values)
    assert ((original < 0.5) == (values >= 10)).all() and (values >= 10).any()


def test_returns_in_every_branch():
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        x = fn.cast(pred, dtype=types.INT32)
        if pred:
            return x + 1
        else:
            return x - 1

    (y,) = pipe().run()
    assert y.as_array().tolist() == [2 if p else -1 for p in PRED]

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def early():
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        x = fn.cast(pred, dtype=types.INT32)
        if pred:
            return x + 5
        x = x * 3
        return x - 7

    (y,) = early().run()
    assert y.as_array().tolist() == [6 if p else -7 for p in PRED]


# --- errors ----------------------------------------------------------------------------------
def _pipe_with_condition(make):
    @pipeline_def(
        batch_size=4,
        num_threads=1,
        device_id=None,
        seed=1,
        enable_conditionals=True,
        exec_async=False,
        exec_pipelined=False,
    )
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        if make(x):
            x = x + 1
        return x

    return pipe()


def test_a_condition_is_a_number_per_sample_and_anything_else_is_refused():
    # DALI takes any number (not 0 is true): coin_flip's default int32 works.
    p = _pipe_with_condition(lambda x: fn.random.coin_flip(probability=0.5))
    (x,) = p.run()
    taken = [record["if make(x)"] for record in p.choices()]
    assert [bool(v >= 1) for v in x.as_array()] == taken
    with pytest.raises(
        OperatorError,
        match=r"restricted to scalar \(0-d tensors\) inputs, that "
        r"are placed on CPU. Got a 1-d input as a condition",
    ):
        _pipe_with_condition(lambda x: fn.random.uniform(range=(0, 1), shape=(2,)) < 1).run()
    broken = {"on": True}

    def sometimes(batch):
        return np.stack([batch, batch], axis=1) if broken["on"] else batch

    good = _pipe_with_condition(
        lambda x: fn.python_function(x < 0.5, function=sometimes, batch_processing=True)
    )
    with pytest.raises(OperatorError, match="Got a 1-d input"):
        good.run()
    broken["on"] = False
    (x,) = good.run()  # usable afterwards: the next batch is computed
    assert len(x) == 4


def test_and_or_take_booleans_only():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        a = fn.random.coin_flip()  # int32
        b = fn.random.coin_flip(dtype=types.BOOL)
        return b and a

    with pytest.raises(
        OperatorError,
        match=r"Logical expression `and` is restricted to scalar \(0-d tensors\) inputs of "
        r"`bool` type, that are placed on CPU. Got an input of type `int32` as the right "
        r"argument in logical expression \(at line \d+ of pipe\)",
    ):
        p = pipe()
        for _ in range(4):  # until some sample evaluates the right side
            p.run()


def test_a_variable_set_in_one_branch_only_is_an_error_when_used():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def used():
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            y = x + 1
        return y

    with pytest.raises(RuntimeError, match=r"Variable 'y' must also be initialized in the `else`"):
        used()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def unused():
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            tmp = x + 1
            x = tmp * 2
        else:
            x = x * 2
        return x

    (x,) = unused().run()
    assert len(x) == 4


def test_what_cannot_be_in_a_branch():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def reader_inside(root):
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            _jpegs, _labels = fn.readers.file(file_root=root)
        return x

    with pytest.raises(
        GraphError,
        match=r"readers.File is called inside the True branch of "
        r"if x < 0.5 at line \d+ of reader_inside",
    ):
        reader_inside("data/images")

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def return_in_one_branch():
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            return x

    with pytest.raises(RuntimeError, match=r"The `else` branch must also have a return"):
        return_in_one_branch()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def break_in_branch():
        x = fn.random.uniform(range=(0, 1))
        for _ in range(2):
            if x < 0.5:
                break
        return x

    with pytest.raises(
        GraphError,
        match=r"at line \d+ of break_in_branch tests a DataNode, but "
        r"it has a `break`",
    ):
        break_in_branch()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def loop():
        x = fn.random.uniform(range=(0, 1))
        while x < 0.5:
            x = x + 1
        return x

    with pytest.raises(TypeError, match=r"`while node:` never does"):
        loop()

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    def not_enabled():
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            x = x + 1
        return x

    with pytest.raises(TypeError, match=r"enable_conditionals=True"):
        not_enabled()


def test_branch_types_must_agree():
    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        pred = fn.external_source(source=lambda: flags(PRED), batch=True)
        x = fn.cast(pred, dtype=types.UINT8)
        if pred:
            x = fn.cast(x, dtype=types.FLOAT)
        return x

    with pytest.raises(
        OperatorError,
        match=r"Found distinct types: float and uint8. \(The "
        r"variable 'x' of the `if` at line \d+ of pipe",
    ):
        pipe().run()


def test_errors_point_at_the_users_line():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        if x < 0.5:
            x = fn.rotate(x, angle=10, no_such_argument=3)
        return x

    with pytest.raises(Exception) as caught:
        pipe()
    frames = traceback.extract_tb(caught.value.__traceback__)
    mine = [f for f in frames if f.filename == __file__]
    assert any("no_such_argument" in (f.line or "") for f in mine), frames


def test_output_made_inside_a_branch_is_refused():
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        kept = []
        if x < 0.5:
            kept.append(x + 1)  # escapes the branch through a list
        else:
            x = x * 2
        return kept[0]

    with pytest.raises(GraphError, match=r"output 0 .* was computed in the True branch"):
        pipe()


# --- select ----------------------------------------------------------------------------------
def test_select_applies_one_function_per_sample_and_names_it():
    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=5, enable_conditionals=True)
    def pipe():
        x = fn.random.uniform(range=(1, 2))
        which = fn.random.uniform(values=[0, 1, 2], dtype=types.INT32)
        out = conditionals.select(
            [lambda v, k: v + k, lambda v, k: v * k, lambda v, k: -v],
            which,
            (x,),
            {"k": 10},
            label="op",
            names=["add", "mul", "neg"],
        )
        return out, x, which

    p = pipe()
    out, x, which = p.run()
    x, which = x.as_array(), which.as_array()
    want = np.select([which == 0, which == 1, which == 2], [x + 10, x * 10, -x])
    np.testing.assert_allclose(out.as_array(), want, rtol=1e-6)
    names = ["add", "mul", "neg"]
    assert [r["op"] for r in p.choices()] == [names[k] for k in which]
    with pytest.raises(Exception, match=r"index must be a DataNode or an int in \[0, 1\]"):
        conditionals.select([abs, abs], 5)


def test_viewer_titles_say_which_branch(small):
    from augkit.widgets import Viewer

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=5, enable_conditionals=True)
    def pipe():
        images = fn.external_source(source=source(small[:4]), batch=True, layout="HWC")
        do_flip = fn.external_source(source=lambda: flags([1, 0, 1, 0]), batch=True)
        if do_flip:
            images = fn.flip(images, horizontal=1)
        return images

    viewer = Viewer(pipe(), image_format="png")
    titles = [tile.title for tile in viewer._tiles]
    assert [t.endswith("do_flip=True") for t in titles] == [True, False, True, False]
    assert titles[1].endswith("do_flip=False")


# --- GPU data -------------------------------------------------------------------------------
def _coin_flip_pipe(small, device, else_dtype=types.UINT8):
    """An ``if`` on a per-sample coin flip over ``.gpu()`` images (``device="gpu"``) or host
    images: flipped left-right in one branch, upside down (and cast) in the other."""

    @pipeline_def(
        batch_size=BATCH,
        num_threads=2,
        device_id=0 if device == "gpu" else None,
        seed=9,
        enable_conditionals=True,
    )
    def pipe():
        images = fn.external_source(source=source(small), batch=True, layout="HWC")
        if device == "gpu":
            images = images.gpu()
        heads = fn.random.coin_flip(probability=0.5)
        if heads:
            images = fn.flip(images, horizontal=1)
        else:
            images = fn.cast(fn.flip(images, vertical=1, horizontal=0), dtype=else_dtype)
        return images, heads

    return pipe()


def test_an_if_merges_gpu_batches_on_the_fake_gpu(small, fake_gpu):
    """The split and the merge move GPU samples (the merge read them with ``np.asarray`` to
    check that the branches agree, which CuPy refuses): the GPU pipeline gives the CPU one's
    batch, on the GPU; and branches that disagree are refused there as on the CPU."""
    (cpu, cpu_heads), (gpu, gpu_heads) = (_coin_flip_pipe(small, d).run() for d in ("cpu", "gpu"))
    heads = [bool(h) for h in gpu_heads.as_array()]
    assert heads == [bool(h) for h in cpu_heads.as_array()]
    assert set(heads) == {True, False}, heads  # both branches have samples: a real merge
    assert gpu.device == "gpu" and gpu.layout() == "HWC"
    host = gpu.as_cpu()
    for i, h in enumerate(heads):
        want = small[i][:, ::-1] if h else small[i][::-1]
        np.testing.assert_array_equal(host.at(i), want, err_msg=f"sample {i}")
        np.testing.assert_array_equal(host.at(i), cpu.at(i), err_msg=f"sample {i}")
    with pytest.raises(OperatorError, match=r"Found distinct types: uint8 and float\. \(The"):
        _coin_flip_pipe(small, "gpu", else_dtype=types.FLOAT).run()


def test_a_gpu_operand_of_not_is_refused_in_dalis_words(fake_gpu):
    """DALI: logical operands "are placed on CPU. Got a GPU input ..." (the check read GPU
    samples with ``np.ndim``, which CuPy refuses: a TypeError instead)."""

    @pipeline_def(batch_size=4, num_threads=1, device_id=0, seed=1, enable_conditionals=True)
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        if not fn.random.coin_flip(dtype=types.BOOL).gpu():
            x = x + 1
        return x

    with pytest.raises(
        OperatorError,
        match=r"Logical expression `not` is restricted to scalar \(0-d tensors\) inputs, that "
        r"are placed on CPU. Got a GPU input in logical expression \(at line \d+ of pipe\)",
    ):
        pipe().run()


def test_a_gpu_predicate_of_the_manual_split_is_refused_at_definition(fake_gpu):
    """fn._conditional.split/merge with a GPU predicate failed at run time with CuPy's
    TypeError; DALI refuses it when the pipeline is defined, as `if` on a GPU condition is."""

    @pipeline_def(batch_size=4, num_threads=1, device_id=0, seed=1)
    def pipe():
        x = fn.random.uniform(range=(0, 1))
        flip = fn.random.coin_flip(dtype=types.BOOL).gpu()
        true, false = fn._conditional.split(x, predicate=flip)
        return fn._conditional.merge(true, false, predicate=flip)

    with pytest.raises(GraphError, match=r"predicate \(.*\) is on the GPU; .*use \.cpu\(\)"):
        pipe()
