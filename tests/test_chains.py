"""Chains of per-sample operators (issue 11): the executor runs consecutive per-sample nodes
(decode, resize, crop...) sample by sample, one task per sample, instead of one pass over the
batch per node. It must change nothing a user can see: the same numbers, read-only outputs,
kinds, layouts and sources as node by node (debug mode runs node by node), and the same error
when something fails.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from augkit import OperatorError, fn, pipeline_def, types

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"


def _chain_pipeline(debug: bool, **extra):
    @pipeline_def(batch_size=5, num_threads=3, device_id=None, seed=8, debug=debug)
    def chained():
        jpegs, labels = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        small = fn.resize(images, size=(40, 50))
        cropped = fn.crop(small, crop=(32, 32), crop_pos_x=fn.random.uniform(range=(0, 1)))
        flipped = fn.flip(cropped, horizontal=fn.random.coin_flip())
        normalized = fn.crop_mirror_normalize(flipped, mean=[100.0] * 3, std=[50.0] * 3)
        return small, flipped, normalized, labels

    return chained(**extra)


def test_a_chain_is_what_the_nodes_give_one_by_one():
    normal, debug = _chain_pipeline(False), _chain_pipeline(True)
    normal.build()
    steps = [[n.schema.name for n in step] for step in normal._runner.executor.steps]
    assert ["decoders.image", "resize", "crop", "flip", "crop_mirror_normalize"] in steps
    try:
        for _ in range(4):
            for got, want in zip(normal.run(), debug.run(), strict=True):
                assert got.layout() == want.layout() and got.kind == want.kind
                assert got.source_info() == want.source_info()
                for i in range(len(want)):
                    sample = np.asarray(got[i])
                    assert not sample.flags.writeable
                    np.testing.assert_array_equal(sample, want.at(i))
        rows = {row["op"] for row in normal.profile().rows}
        assert {"decoders.image", "resize", "crop", "flip", "crop_mirror_normalize"} <= rows
    finally:
        normal.close()
        debug.close()


def _failing_pipeline(debug: bool):
    """Sample 3 fails in the first node of the chain (a crop window too large for it), sample 1
    in the second (a rotate whose angle is not a number only for it): node by node, the first
    node's error comes first."""

    def sizes() -> list[np.ndarray]:
        return [
            np.zeros((20, 20, 3), np.uint8) if k != 3 else np.zeros((8, 8, 3), np.uint8)
            for k in range(5)
        ]

    def angles() -> list[np.ndarray]:
        return [np.array(np.nan if k == 1 else 10.0, np.float32) for k in range(5)]

    @pipeline_def(batch_size=5, num_threads=2, device_id=None, seed=1, debug=debug)
    def failing():
        images = fn.external_source(source=sizes, layout="HWC")
        angle = fn.external_source(source=angles)
        cropped = fn.crop(images, crop=(10, 10), name="crop")
        return fn.rotate(cropped, angle=angle, name="rotate")

    return failing()


@pytest.mark.parametrize("debug", [False, True], ids=["chain", "node by node"])
def test_a_chain_raises_the_first_failing_node_at_its_lowest_sample(debug: bool):
    pipe = _failing_pipeline(debug)
    try:
        with pytest.raises(OperatorError) as info:
            pipe.run()
    finally:
        pipe.close()
    assert info.value.operator == "crop" and info.value.sample_index == 3, str(info.value)


def test_what_only_the_chain_reads_is_let_go_and_computed_again_when_asked():
    """A decoded image that only its resize reads is let go within the chain (keeping 32
    full-size images alive costs every kernel cache misses); ``pipe.value()`` computes it again
    for the last batch, with the same numbers, and ``rerun`` of a node that reads it works."""

    def define(debug: bool):
        @pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=3, debug=debug)
        def small():
            jpegs, _ = fn.readers.file(file_root=str(IMAGES), random_shuffle=True)
            images = fn.decoders.image(jpegs, output_type=types.RGB, name="decode")
            return fn.resize(images, size=(20, 30), name="resize")

        return small()

    normal, debug = define(False), define(True)
    try:
        for _ in range(2):
            (resized,) = normal.run()
            debug.run()
        kept = {d.name for d in normal._runner.last}
        assert "decode" not in kept and "resize" in kept
        decoded = normal.value("decode")
        for i in range(4):
            np.testing.assert_array_equal(decoded.at(i), debug.value("decode").at(i))
        assert decoded.source_info() == resized.source_info()
        (again,) = normal.rerun(["resize"])
        for i in range(4):
            np.testing.assert_array_equal(again.at(i), resized.at(i))
    finally:
        normal.close()
        debug.close()
