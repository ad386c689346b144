"""``augkit.eager``: every operator called directly on data, with the pipeline's kernels and
seeds (issue 4)."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
import torch

from augkit import eager, fn, pipeline_def, types
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (10 + 2 * i, 14 + i, 3), dtype=np.uint8) for i in range(3)]


def test_one_array_in_one_array_out(images: list[np.ndarray]) -> None:
    out = eager.flip(images[0], horizontal=1)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, images[0][:, ::-1])
    resized = eager.resize(images[0], size=(6, 8))
    assert isinstance(resized, np.ndarray) and resized.shape == (6, 8, 3)


def test_a_list_in_a_list_out(images: list[np.ndarray]) -> None:
    out = eager.flip(images, horizontal=0, vertical=1)
    assert isinstance(out, list) and len(out) == 3
    for got, image in zip(out, images, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, image[::-1])


def test_a_tensorlist_in_a_tensorlist_out(images: list[np.ndarray]) -> None:
    batch = TensorList(images, "HWC")
    out = eager.crop_mirror_normalize(batch, crop=(8, 8), mean=[128.0], std=[64.0])
    assert isinstance(out, TensorList)
    assert out.layout() == "CHW" and out.dtype == types.FLOAT
    assert out.shape() == [(3, 8, 8)] * 3
    casted = eager.cast(batch, dtype=types.INT16)
    assert isinstance(casted, TensorList) and casted.layout() == "HWC"
    for i, image in enumerate(images):
        np.testing.assert_array_equal(casted.at(i), image.astype(np.int16))


def test_torch_tensors_are_accepted(images: list[np.ndarray]) -> None:
    one = eager.flip(torch.from_numpy(images[0].copy()), horizontal=1)
    np.testing.assert_array_equal(one, images[0][:, ::-1])
    many = eager.flip([torch.from_numpy(i.copy()) for i in images], horizontal=1)
    assert isinstance(many, list)
    for got, image in zip(many, images, strict=True):
        np.testing.assert_array_equal(got, image[:, ::-1])


def test_inputs_are_not_modified_and_outputs_do_not_alias_them(images: list[np.ndarray]) -> None:
    mine = [i.copy() for i in images]
    out = eager.flip(mine, horizontal=0)  # a flip that changes nothing
    for sample in mine:
        sample[...] = 0
    for got, image in zip(out, images, strict=True):
        np.testing.assert_array_equal(got, image)


def test_eager_equals_the_pipeline_on_the_same_batch(images: list[np.ndarray]) -> None:
    pipe = Pipeline(batch_size=3, num_threads=2, device_id=None, seed=5)
    with pipe:
        data = fn.external_source(source=lambda: images, layout="HWC")
        pipe.set_outputs(fn.rotate(data, angle=17.5, fill_value=0), fn.resize(data, size=(7, 9)))
    rotated, resized = pipe.run()
    for i, sample in enumerate(eager.rotate(images, angle=17.5, fill_value=0)):
        np.testing.assert_array_equal(sample, rotated.at(i))
    for i, sample in enumerate(eager.resize(images, size=(7, 9))):
        np.testing.assert_array_equal(sample, resized.at(i))


# --- readers ----------------------------------------------------------------------------------


def test_reader_is_an_iterable_over_exactly_one_epoch() -> None:
    reader = eager.readers.file(file_root=str(IMAGES), batch_size=4, random_shuffle=True, seed=3)
    batches = list(reader)
    assert [len(jpegs) for jpegs, _ in batches] == [4, 4, 4, 3]  # the last batch is partial
    names = [n for jpegs, _ in batches for n in jpegs.source_info()]
    assert len(names) == 15 and len(set(names)) == 15  # every file once
    labels = [int(v) for _, labels in batches for v in labels.as_array().reshape(-1)]
    assert sorted(labels) == sorted([0, 1, 2, 3, 4] * 3)
    for jpegs, labels in batches:
        assert isinstance(jpegs, TensorList) and isinstance(labels, TensorList)
    again = [n for jpegs, _ in reader for n in jpegs.source_info()]
    assert again == names  # the same seed: the same order; each loop is one whole epoch


def test_reader_in_file_order_and_batch_larger_than_the_epoch() -> None:
    ((jpegs, labels),) = list(eager.readers.file(file_root=str(IMAGES), batch_size=32))
    assert len(jpegs) == 15
    assert jpegs.source_info(0) == "animals/chelsea_cat.jpg"
    assert labels.as_array().reshape(-1).tolist() == sorted([0, 1, 2, 3, 4] * 3)


def test_reader_under_rng_state_shuffles_as_the_pipeline() -> None:
    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=21)
    def files() -> Any:
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        return jpegs, labels

    pipe = files()
    expected = [list(j.source_info()) for j, _ in pipe.epoch(last_batch_policy="partial")]
    pipe.close()
    with eager.rng_state(21):
        reader = eager.readers.file(file_root=str(IMAGES), random_shuffle=True, batch_size=4)
        got = [list(j.source_info()) for j, _ in reader]
    assert got == expected


def test_decode_what_the_reader_gives() -> None:
    jpegs, _ = next(iter(eager.readers.file(file_root=str(IMAGES), batch_size=2)))
    decoded = eager.decoders.image(jpegs, output_type=types.RGB)
    assert isinstance(decoded, TensorList) and decoded.layout() == "HWC"
    assert decoded.shape()[0][2] == 3
    gray = eager.decoders.image(jpegs.at(0), output_type=types.GRAY)
    assert isinstance(gray, np.ndarray) and gray.ndim == 3 and gray.shape[2] == 1


# --- randomness -------------------------------------------------------------------------------


def test_random_operators_with_a_seed_are_reproducible() -> None:
    a = eager.random.uniform(range=(0, 10), shape=[4], batch_size=3, seed=99)
    b = eager.random.uniform(range=(0, 10), shape=[4], batch_size=3, seed=99)
    c = eager.random.uniform(range=(0, 10), shape=[4], batch_size=3, seed=100)
    assert isinstance(a, list) and len(a) == 3 and a[0].shape == (4,)
    np.testing.assert_array_equal(np.stack(a), np.stack(b))
    assert not np.array_equal(np.stack(a), np.stack(c))
    assert not np.array_equal(a[0], a[1])  # per sample, not one value repeated
    flips = eager.random.coin_flip(batch_size=64, seed=7)
    assert flips == eager.random.coin_flip(batch_size=64, seed=7)
    assert {int(f) for f in flips} == {0, 1}


def test_without_seed_each_call_draws_fresh_values() -> None:
    a = eager.random.uniform(shape=[8], batch_size=2)
    b = eager.random.uniform(shape=[8], batch_size=2)
    assert not np.array_equal(np.stack(a), np.stack(b))


def test_zero_input_operators_take_batch_size() -> None:
    assert len(eager.random.uniform()) == 1  # default batch_size=1
    values = eager.random.uniform(values=[1.0, 2.0], batch_size=5, seed=1)
    assert len(values) == 5 and {float(v) for v in values} <= {1.0, 2.0}
    source = eager.external_source(source=lambda: [np.arange(3)] * 2, batch_size=2)
    assert isinstance(source, list) and len(source) == 2


@pytest.mark.parametrize("iteration", [0, 1, 3])
def test_rng_state_numbers_calls_as_the_pipeline(images: list[np.ndarray], iteration: int) -> None:
    """Under ``rng_state(seed, iteration=i)`` the k-th eager call gets the seed of the
    pipeline's k-th operator, and the values of its iteration i."""

    @pipeline_def(batch_size=3, num_threads=2, device_id=None, seed=77)
    def define() -> Any:
        data = fn.external_source(source=lambda: images, layout="HWC")
        angle = fn.random.uniform(range=(-30, 30))
        mirror = fn.random.coin_flip(probability=0.5)
        rotated = fn.rotate(data, angle=angle, fill_value=0)
        return angle, mirror, fn.flip(rotated, horizontal=mirror)

    pipe = define()
    for _ in range(iteration + 1):
        want = pipe.run()
    with eager.rng_state(77, iteration=iteration):
        eager.external_source(source=lambda: images)  # operator 0, as in the pipeline
        angle = eager.random.uniform(range=(-30, 30), batch_size=3)
        mirror = eager.random.coin_flip(probability=0.5, batch_size=3)
        rotated = eager.rotate(images, angle=angle, fill_value=0)
        flipped = eager.flip(rotated, horizontal=mirror)
    for got, batch in zip((angle, mirror, flipped), want, strict=True):
        for i, sample in enumerate(got):
            np.testing.assert_array_equal(sample, batch.at(i))


def test_rng_state_is_nested_and_restored() -> None:
    with eager.rng_state(5):
        first = eager.random.uniform(batch_size=2)
        with eager.rng_state(5):
            inner = eager.random.uniform(batch_size=2)
        second = eager.random.uniform(batch_size=2)
    np.testing.assert_array_equal(np.stack(first), np.stack(inner))
    assert not np.array_equal(np.stack(first), np.stack(second))  # the next call's seed


def test_per_sample_arguments_from_a_tensorlist(images: list[np.ndarray]) -> None:
    angles = TensorList([np.float32(a) for a in (0.0, 90.0, 180.0)])
    out = eager.rotate(images, angle=angles)
    np.testing.assert_array_equal(out[0], images[0])
    np.testing.assert_array_equal(out[1], np.rot90(images[1]))
    np.testing.assert_array_equal(out[2], images[2][::-1, ::-1])


def test_per_sample_arguments_must_have_one_value_per_sample(images: list[np.ndarray]) -> None:
    from augkit.errors import OperatorError

    angles = eager.random.uniform(range=(0, 90), batch_size=2, seed=1)
    with pytest.raises(OperatorError, match="argument 'angle' has 2 values, but the batch has 3"):
        eager.rotate(images, angle=angles)


# --- Python operators -------------------------------------------------------------------------


def _split_and_sum(image: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return image[..., 0], image[..., 1:], np.asarray(image.sum(), np.int64)


def test_python_function_with_several_outputs(images: list[np.ndarray]) -> None:
    red, rest, total = eager.python_function(images, function=_split_and_sum, num_outputs=3)
    for i, image in enumerate(images):
        np.testing.assert_array_equal(red[i], image[..., 0])
        np.testing.assert_array_equal(rest[i], image[..., 1:])
        assert int(total[i]) == int(image.sum())
    one = eager.python_function(images[0], function=_split_and_sum, num_outputs=3)
    assert isinstance(one, tuple) and len(one) == 3 and isinstance(one[0], np.ndarray)


def test_python_function_with_two_inputs(images: list[np.ndarray]) -> None:
    def blend(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(a, b), np.minimum(a, b)

    same = [i.copy() for i in images]
    high, low = eager.python_function(images, same, function=blend, num_outputs=2)
    for h, lo, image in zip(high, low, images, strict=True):
        np.testing.assert_array_equal(h, image)
        np.testing.assert_array_equal(lo, image)


def test_python_function_drawing_from_numpy_global_generator_is_seeded(
    images: list[np.ndarray],
) -> None:
    def noisy(image: np.ndarray) -> np.ndarray:
        return np.random.randint(0, 100, size=4)

    a = eager.python_function(images, function=noisy, seed=3)
    b = eager.python_function(images, function=noisy, seed=3)
    np.testing.assert_array_equal(np.stack(a), np.stack(b))


def test_torch_python_function(images: list[np.ndarray]) -> None:
    out = eager.torch_python_function(images, function=lambda t: t.flip(0))
    for got, image in zip(out, images, strict=True):
        np.testing.assert_array_equal(got, image[::-1])


def test_eager_errors_name_the_operator_and_sample() -> None:
    from augkit.errors import OperatorError

    with pytest.raises(OperatorError, match=r"sample #1.*HWC"):
        eager.rotate([np.zeros((4, 4, 3), np.uint8), np.zeros(5, np.uint8)], angle=3)
