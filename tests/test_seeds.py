"""The seed rule (``augkit.random``): streams keyed by (pipeline seed, shard, operator,
iteration, sample). Shards of one data set never draw the same augmentations (issue 11: two
pipelines that differed only in ``shard_id`` drew the same parameters for sample k of batch i),
and the rule is the same in every mode.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from augkit import eager, fn, pipeline_def, types

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"


def _draws(shard_id: int, debug: bool = False, seed: int = 7, reader_first: bool = True):
    @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=seed, debug=debug)
    def sharded():
        if not reader_first:
            angle = fn.random.uniform(range=(-30, 30))
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), shard_id=shard_id, num_shards=2)
        if reader_first:
            angle = fn.random.uniform(range=(-30, 30))
        flip = fn.random.coin_flip(shape=[6])
        images = fn.resize(fn.decoders.image(jpegs), resize_x=16, resize_y=16)
        jittered = fn.python_function(images, function=_jitter)
        return angle, flip, jittered, labels

    pipe = sharded()
    try:
        return [pipe.run() for _ in range(3)]
    finally:
        pipe.close()


def _jitter(image: np.ndarray) -> np.ndarray:
    """Draws from NumPy's global generator: seeded per call from the operator's streams."""
    return (image.astype(np.int32) + np.random.randint(0, 9, image.shape)).astype(np.uint8)


def _arrays(run):
    return [[np.asarray(batch.at(i)) for i in range(len(batch))] for batch in run]


def test_two_shards_draw_different_augmentations_and_each_repeats():
    shard0, again, shard1 = _draws(0), _draws(0), _draws(1)
    for it in range(3):
        angles0, flips0, *_ = _arrays(shard0[it])
        angles1, flips1, *_ = _arrays(shard1[it])
        for k in range(4):
            assert angles0[k] != angles1[k], f"iteration {it}, sample {k}: same angle"
        assert not all((a == b).all() for a, b in zip(flips0, flips1, strict=True))
        for first, second in zip(_arrays(shard0[it]), _arrays(again[it]), strict=True):
            for a, b in zip(first, second, strict=True):
                np.testing.assert_array_equal(a, b)
    # The shards read different files, as DALI's do (the first batch: shards rotate by epoch).
    files0 = set(shard0[0][3].source_info())
    files1 = set(shard1[0][3].source_info())
    assert not files0 & files1


@pytest.mark.parametrize("reader_first", [True, False], ids=["reader first", "draw first"])
def test_debug_mode_keys_the_streams_by_the_same_shard(reader_first):
    """In debug mode the shard is known once the reader is made; an operator that drew before
    it is drawn again (the first iteration runs again) so that debug == normal on shard 1."""
    normal = _draws(1, reader_first=reader_first)
    debug = _draws(1, debug=True, reader_first=reader_first)
    for it in range(3):
        for got, want in zip(_arrays(debug[it]), _arrays(normal[it]), strict=True):
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)


def test_eager_calls_draw_what_the_pipeline_draws():
    @pipeline_def(batch_size=5, num_threads=1, device_id=None, seed=21)
    def values():
        return fn.random.uniform(range=(0, 1), shape=[2], dtype=types.FLOAT64)

    pipe = values()
    (expected,) = pipe.run()
    pipe.close()
    with eager.rng_state(21):
        got = eager.random.uniform(range=(0, 1), shape=[2], dtype=types.FLOAT64, batch_size=5)
    for i in range(5):
        np.testing.assert_array_equal(got[i], expected.at(i))


def test_run_keyed_draws_by_the_samples_ids_whatever_their_batch():
    """``Pipeline.run_keyed``: a sample's draws depend on its id and the iteration given, not on
    its place in the batch, the batch's size or the runs before (Ray's ``id_column``)."""
    import augkit

    data = [np.full((8, 8, 3), 10 * k, np.uint8) for k in range(6)]

    def make():
        @augkit.pipeline_def(
            batch_size=6, num_threads=2, device_id=None, seed=3, enable_conditionals=True
        )
        def pipe():
            x = augkit.fn.external_source(name="x", layout="HWC")
            noise = augkit.fn.random.uniform(range=(0, 1))
            if augkit.fn.random.coin_flip(dtype=augkit.types.BOOL):
                x = augkit.fn.flip(x, horizontal=1)
            return x, noise

        return pipe()

    a = make()
    a.feed_input("x", data)
    whole, noise = a.run_keyed(["row-a", 1, 2, 3, 2**40, 5])
    b = make()
    b.feed_input("x", data[:1])
    b.run_keyed([99])  # runs before do not matter
    order = [4, 0, 3]
    b.feed_input("x", [data[i] for i in order])
    ids = ["row-a", 1, 2, 3, 2**40, 5]
    part, part_noise = b.run_keyed([ids[i] for i in order])
    for k, i in enumerate(order):
        np.testing.assert_array_equal(part.at(k), whole.at(i))
        assert part_noise.at(k) == noise.at(i)
    b.feed_input("x", data[:2])
    (_, other) = b.run_keyed([0, 1], iteration=1)  # another iteration: other draws
    assert other.at(1) != noise.at(1)
    with pytest.raises(augkit.GraphError, match="2 sample ids for a batch of 3 samples"):
        b.feed_input("x", data[:3])
        b.run_keyed([0, 1])


def test_moving_data_to_the_gpu_changes_no_operator_seed(fake_gpu):
    """The copies to the GPU (``.gpu()``, or implied by ``device="gpu"`` on CPU data) take no
    creation ordinal, so a random operator draws the same on either device, and the operators
    after a copy keep their seeds (on tests/fake_cupy: CuPy's rules, no device needed)."""
    images = [
        np.random.default_rng(i).integers(0, 255, (40 + i, 50, 3), np.uint8) for i in range(3)
    ]

    def run(where: str, debug: bool = False) -> list[np.ndarray]:
        @pipeline_def(batch_size=3, num_threads=1, device_id=0, seed=11, debug=debug)
        def crops():
            data = fn.external_source(source=lambda: images, layout="HWC")
            if where == "explicit":
                data = data.gpu()
            device = "cpu" if where == "cpu" else "gpu"
            crop = fn.random_resized_crop(data, size=16, interp_type=types.INTERP_NN, device=device)
            return crop, fn.random.uniform(range=(-30.0, 30.0))

        crop, angle = crops().run()
        return [*(np.asarray(crop.as_cpu().at(i)) for i in range(3)), angle.as_array()]

    want = run("cpu")
    for where in ("implied", "explicit"):
        for debug in (False, True):
            for a, b in zip(want, run(where, debug), strict=True):
                np.testing.assert_array_equal(b, a, err_msg=f"{where}, debug={debug}")
