"""The walks over a pipeline's graph (``augkit.graph``: ``upstream``, ``downstream``,
``consumers``, ``graph_order``, ``call_of``), on real pipelines, and what the executor, the
runners and ``Pipeline`` make of them: pruning, ``value()`` of a batch a chain let go,
``rerun([op])``, ``choices(node)``.

One notion of what a node depends on runs through all of them: its inputs, its argument inputs
and the selector of its conditional scope (``OperatorNode.reads``). The last tests are the case
where the two notions that used to coexist differed: an `if`'s condition made inside a per-sample
chain and read by nothing else of the chain's (a branch whose node takes no input from outside
it), which the executor let go within the chain before the branch asked for it (a KeyError).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from augkit import fn, pipeline_def, types
from augkit.debug import DebugRunner
from augkit.graph import (
    OperatorNode,
    call_of,
    consumers,
    downstream,
    first_inputs,
    graph_order,
    roots,
    upstream,
)
from augkit.runners import GraphRunner, PrefetchRunner, Runner

IMAGES = "data/images"
BATCH = 8


def names(nodes: list[OperatorNode]) -> list[str]:
    return [n.name for n in nodes]


def by_name(pipe) -> dict[str, OperatorNode]:
    return {op.name: op for op in pipe.operators()}


# --- a graph with two outputs, a pruned node and a preserved one -----------------------------
@pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
def two_outputs():
    jpegs, labels = fn.readers.file(file_root=IMAGES, name="Reader")
    images = fn.decoders.image(jpegs, name="decode")
    small = fn.resize(images, resize_x=32, resize_y=24, name="resize")
    angle = fn.random.uniform(range=(-10, 10), name="angle")
    rotated = fn.rotate(small, angle=angle, name="rotate")
    fn.flip(small, horizontal=1, name="unused")
    fn.random.coin_flip(name="kept", preserve=True)
    return rotated, fn.cast(labels, dtype=types.INT32, name="labels")


@pytest.fixture(scope="module")
def plain():
    pipe = two_outputs()
    pipe.build()
    yield pipe
    pipe.close()


def test_the_graph_is_what_the_outputs_and_preserve_need_in_creation_order(plain):
    assert names(plain.operators()) == [
        "Reader",
        "decode",
        "resize",
        "angle",
        "rotate",
        "kept",
        "labels",
    ]


def test_upstream_lists_what_a_node_is_computed_from_in_graph_order(plain):
    ops = by_name(plain)
    assert names(upstream([ops["rotate"]])) == ["Reader", "decode", "resize", "angle", "rotate"]
    assert names(upstream([ops["labels"]])) == ["Reader", "labels"]
    assert names(upstream([ops["labels"], ops["angle"]])) == ["Reader", "angle", "labels"]
    assert names(upstream([ops["kept"]])) == ["kept"]


def test_upstream_stops_at_the_batches_known(plain):
    ops = by_name(plain)
    resized = ops["resize"].outputs[0]
    # rotate reads the resized images (known) and the angle (not): only the angle is needed.
    assert names(upstream([ops["rotate"]], known={resized})) == ["angle", "rotate"]
    jpegs = ops["Reader"].outputs[0]
    assert names(upstream([ops["rotate"]], known={jpegs: None})) == [
        "decode",
        "resize",
        "angle",
        "rotate",
    ]


def test_downstream_lists_what_is_computed_from_a_node(plain):
    ops = plain.operators()
    by = by_name(plain)
    assert names(downstream(ops, [by["resize"]])) == ["resize", "rotate"]
    assert names(downstream(ops, [by["angle"]])) == ["angle", "rotate"]
    assert names(downstream(ops, [by["Reader"]])) == [
        "Reader",
        "decode",
        "resize",
        "rotate",
        "labels",
    ]
    assert names(downstream(ops, [by["kept"], by["labels"]])) == ["kept", "labels"]


def test_consumers_name_the_readers_of_each_batch(plain):
    ops = plain.operators()
    by = by_name(plain)
    readers = consumers(ops)
    jpegs, labels = by["Reader"].outputs
    assert names(readers[jpegs]) == ["decode"]
    assert names(readers[labels]) == ["labels"]
    # The flip reading the resized images was pruned: it is not in the graph walked.
    assert names(readers[by["resize"].outputs[0]]) == ["rotate"]
    assert by["rotate"].outputs[0] not in readers  # an output nothing reads


def test_graph_order_puts_every_node_after_what_it_reads(plain):
    ops = plain.operators()
    shuffled = [ops[k] for k in np.random.default_rng(0).permutation(len(ops))]
    ordered = graph_order(shuffled)
    assert ordered == ops
    place = {n.id: k for k, n in enumerate(ordered)}
    for node in ordered:
        assert all(place[parent.id] < place[node.id] for parent in node.parents())


# --- conditionals: the selector of a node's scope is one of its parents ------------------------
@pipeline_def(
    batch_size=BATCH,
    num_threads=2,
    device_id=None,
    seed=2,
    enable_conditionals=True,
    exec_async=False,
    exec_pipelined=False,
)
def branches():
    jpegs, labels = fn.readers.file(file_root=IMAGES, name="Reader")
    images = fn.decoders.image(jpegs, name="decode")
    coin = fn.random.coin_flip(name="coin")
    if coin:
        small = fn.resize(images, resize_x=32, resize_y=24, name="resize_yes")
        out = fn.flip(small, horizontal=1, name="flipped")
        noise = fn.random.uniform(range=(0, 1), name="noise")
    else:
        small = fn.resize(images, resize_x=32, resize_y=24, name="resize_no")
        out = fn.flip(small, vertical=1, name="upside_down")
        noise = fn.random.uniform(range=(2, 3), name="other_noise")
    return out, noise, labels


@pytest.fixture(scope="module")
def conditional():
    pipe = branches()
    pipe.run()
    assert 0 < pipe.value("coin").as_array().sum() < BATCH  # both branches have samples
    yield pipe
    pipe.close()


def test_a_node_in_a_branch_is_computed_from_its_condition(conditional):
    ops = by_name(conditional)
    # The noise takes no input: the condition is its parent as its scope's selector only.
    assert names(upstream([ops["noise"]])) == ["coin", "noise"]
    assert ops["noise"].reads() == [ops["coin"].outputs[0]]
    walked = upstream([ops["flipped"]])
    assert names(walked)[:3] == ["Reader", "decode", "coin"]
    assert names(walked)[-2:] == ["resize_yes", "flipped"]
    assert [n.schema.name for n in walked[3:-2]] == ["_split"]  # the images into the branch
    assert "resize_no" not in names(walked)


def test_what_is_computed_from_a_condition_is_both_branches_and_the_merges(conditional):
    ops = conditional.operators()
    by = by_name(conditional)
    after = downstream(ops, [by["coin"]])
    assert not {"Reader", "decode"} & set(names(after))
    assert {"flipped", "noise", "upside_down", "other_noise"} <= set(names(after))
    assert sorted(n.schema.name for n in after if n.schema.name.startswith("_")) == [
        "_merge",
        "_merge",
        "_split",
        "_split",
    ]
    readers = names(consumers(ops)[by["coin"].outputs[0]])
    # The splits and merges read it as an input, every node of the branches as its selector.
    assert set(readers) == set(names(after)) - {"coin"}


def test_choices_of_a_node_are_those_it_is_computed_from(conditional):
    coins = conditional.value("coin").as_array().astype(bool)
    taken = conditional.choices("noise")
    assert [next(iter(record.values())) for record in taken] == coins.tolist()
    assert conditional.choices("Reader[1]") == [{}] * BATCH  # the labels take no branch


def test_a_batch_that_a_chain_in_a_branch_let_go_is_computed_again_alike(conditional):
    # resize -> flip is a chain in each branch; the resized images are let go within it, and
    # value() computes them again on the branch's samples.
    steps = [names(step) for step in _steps(conditional)]
    assert ["resize_yes", "flipped"] in steps
    debug = branches(debug=True)
    debug.run()
    for name in ("resize_yes", "resize_no", "noise"):
        again, expected = conditional.value(name), debug.value(name)
        assert len(again) == len(expected) > 0
        for k in range(len(expected)):
            np.testing.assert_array_equal(again.at(k), expected.at(k))
    debug.close()


def _steps(pipe) -> list[list[OperatorNode]]:
    """The executor's plan (single nodes and chains), read by the test only."""
    return pipe._runner.executor.steps


def test_rerun_of_a_changed_node_recomputes_what_follows_it_alone():
    pipe = branches()
    out, noise, _ = pipe.run()
    coins = pipe.value("coin").as_array().astype(bool)
    small = np.stack([pipe.value("resize_yes").at(k) for k in range(int(coins.sum()))])
    pipe.set_arguments("flipped", horizontal=0)
    again, again_noise, _ = pipe.rerun(["flipped"])
    np.testing.assert_array_equal(again.as_array()[coins], small)  # no longer flipped
    np.testing.assert_array_equal(again.as_array()[~coins], out.as_array()[~coins])
    np.testing.assert_array_equal(again_noise.as_array(), noise.as_array())
    assert not np.array_equal(again.as_array()[coins], out.as_array()[coins])
    pipe.close()


# --- one call with input sets --------------------------------------------------------------------
@pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
def input_sets():
    jpegs, _ = fn.readers.file(file_root=IMAGES, name="Reader")
    images = fn.decoders.image(jpegs, name="decode")
    small = fn.resize(images, resize_x=32, resize_y=24, name="resize")
    turned, turned_small = fn.flip([images, small], horizontal=1, name="turn")
    return turned, turned_small


def test_call_of_finds_the_nodes_of_one_call():
    pipe = input_sets()
    pipe.build()
    ops = pipe.operators()
    by = by_name(pipe)
    assert names(call_of(by["turn#1"], ops)) == ["turn", "turn#1"]
    assert names(call_of(by["turn"], ops)) == ["turn", "turn#1"]
    assert names(call_of(by["resize"], ops)) == ["resize"]
    assert names(call_of(by["resize"], [])) == ["resize"]
    pipe.close()


def test_first_inputs_is_the_lineage_and_roots_the_sources(plain):
    by = by_name(plain)
    rotated = by["rotate"].outputs[0]
    # The lineage follows first inputs only: the angle (an argument input) is not on it.
    assert names(first_inputs(rotated)) == ["rotate", "resize", "decode", "Reader"]
    assert names(roots(rotated)) == ["Reader"]  # not "angle": an argument, not data
    assert names(first_inputs(by["angle"].outputs[0])) == ["angle"]


def test_roots_leave_out_the_companions_of_a_call():
    pipe = input_sets()
    pipe.build()
    by = by_name(pipe)
    # turn#1 gets turn's first input (the decoded images) as a companion: not its data.
    assert [c.name for c in by["turn#1"].inputs] == ["resize", "decode"]
    assert names(first_inputs(by["turn#1"].outputs[0])) == ["turn#1", "resize", "decode", "Reader"]
    assert names(roots(by["turn#1"].outputs[0])) == ["Reader"]
    pipe.close()


# --- the condition made in a chain, read by a branch without inputs ------------------------------
@pipeline_def(
    batch_size=BATCH,
    num_threads=2,
    device_id=None,
    seed=4,
    enable_conditionals=True,
    exec_async=False,
    exec_pipelined=False,
)
def condition_in_a_chain():
    jpegs, _ = fn.readers.file(file_root=IMAGES, name="Reader")
    images = fn.decoders.image(jpegs, name="decode")
    # decode -> mean -> `>` -> cast run as one chain; the cast is the only reader of `bright`
    # among the graph's inputs, so the chain would let it go.
    bright = fn.reductions.mean(images, name="mean") > 100
    flag = fn.cast(bright, dtype=types.INT32, name="flag")
    if bright:
        fn.random.uniform(range=(0, 1), name="noise", preserve=True)
    return flag


def test_a_condition_made_in_a_chain_is_kept_for_its_branch():
    pipe = condition_in_a_chain()
    (flag,) = pipe.run()
    flags = flag.as_array().astype(bool)
    assert 0 < flags.sum() < BATCH  # both branches have samples
    noise = pipe.value("noise")
    assert len(noise) == flags.sum()
    assert [next(iter(r.values())) for r in pipe.choices("noise")] == flags.tolist()
    debug = condition_in_a_chain(debug=True)
    (expected,) = debug.run()
    np.testing.assert_array_equal(flag.as_array(), expected.as_array())
    np.testing.assert_array_equal(noise.as_array(), debug.value("noise").as_array())
    # The condition is a kept batch; the mean, read by the chain only, is computed again.
    condition = next(n for n in pipe.operators() if n.schema.name == "_arithmetic")
    np.testing.assert_array_equal(
        pipe.value(condition.name).as_array(), expected.as_array().astype(bool)
    )
    np.testing.assert_array_equal(pipe.value("mean").as_array(), debug.value("mean").as_array())
    pipe.close()
    debug.close()


# --- the runners are Runners ---------------------------------------------------------------------
@pytest.mark.parametrize("runner", [GraphRunner, PrefetchRunner, DebugRunner])
def test_each_runner_has_what_the_protocol_asks_with_its_parameters(runner):
    members = [
        name for name in vars(Runner) if not name.startswith("_") and name != "readers_known"
    ]
    assert "run" in members and "pick" in members
    for name in members:
        theirs = inspect.signature(getattr(runner, name)).parameters
        ours = inspect.signature(getattr(Runner, name)).parameters
        assert list(theirs) == list(ours), name
    assert hasattr(runner, "readers_known")
