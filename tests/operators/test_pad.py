"""fn.pad against np.pad on real photos: DALI's batch semantics (the batch's largest extent),
minimum shapes, alignment, axes, per-sample fill values, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from augkit import fn
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.geometric.pad import padded_shape
from tests.operator_check import check_operator, run_operator


def np_pad_to(sample: np.ndarray, shape, fill) -> np.ndarray:
    widths = [(0, t - e) for e, t in zip(sample.shape, shape, strict=True)]
    return np.pad(sample, widths, mode="constant", constant_values=fill)


def run(batch, layout="HWC", **args):
    out = run_operator("pad", [batch], layout=layout, args=args)[0][0]
    return [out.at(i) for i in range(len(batch))]


def test_pads_every_image_to_the_largest_of_the_batch(photos):
    largest = tuple(np.max([p.shape for p in photos], axis=0))
    check_operator(
        "pad",
        [photos],
        lambda image, **_: np_pad_to(image, largest, 0),
        layout="HWC",
        args={"axis_names": "HW"},
        expected_layout="HWC",
    )


def test_shape_is_a_minimum_and_align_rounds_up(photos):
    batch = [p[: 50 + 30 * i, : 40 + 20 * i] for i, p in enumerate(photos[:3])]

    def ref(image, **_):
        h, w, c = image.shape
        h = -(-max(h, 90) // 8) * 8  # at least 90, then a multiple of 8
        w = -(-max(w for _, w, _ in (b.shape for b in batch)) // 5) * 5  # batch max, align 5
        return np_pad_to(image, (h, w, c), 7)

    check_operator(
        "pad",
        [batch],
        ref,
        layout="HWC",
        args={"axes": (0, 1), "shape": (90, -1), "align": (8, 5), "fill_value": 7.9},
    )


def test_align_only_pads_each_sample_on_its_own():
    batch = [np.ones((5,), np.int32), np.ones((2,), np.int32), np.ones((3,), np.int32)]
    out = run(batch, layout="", axes=[0], shape=[1], align=[2], fill_value=-1)
    assert [o.tolist() for o in out] == [[1, 1, 1, 1, 1, -1], [1, 1], [1, 1, 1, -1]]
    out = run(batch, layout="", fill_value=-1)  # the docs' first example: all to 5
    assert [o.tolist() for o in out] == [
        [1, 1, 1, 1, 1],
        [1, 1, -1, -1, -1],
        [1, 1, 1, -1, -1],
    ]


def test_per_sample_fill_and_shape(photos):
    batch = [p[:30, :40] for p in photos[:3]]
    fills = [np.float32(v) for v in (1.0, 100.5, 300.0)]
    out = run_operator(
        "pad",
        [batch],
        layout="HWC",
        args={"axis_names": "W", "shape": [50]},
        arg_inputs={"fill_value": fills},
    )[0][0]
    for i, (image, expected_fill) in enumerate(zip(batch, (1, 100, 255), strict=True)):
        np.testing.assert_array_equal(out.at(i), np_pad_to(image, (30, 50, 3), expected_fill))


def test_channels_and_float_fill():
    batch = [np.zeros((4, 5, 3), np.float32), np.zeros((2, 6, 3), np.float32)]
    out = run(batch, axes=[-1], shape=4, fill_value=2.5)
    assert [o.shape for o in out] == [(4, 5, 4), (2, 6, 4)]
    assert (out[0][..., 3] == 2.5).all() and (out[0][..., :3] == 0).all()


def test_padded_shape_rules():
    assert padded_shape((5, 7, 3), (9, 7, 3), [0], [7], None) == (7, 7, 3)
    assert padded_shape((9, 4, 3), (9, 7, 3), [0], [7], None) == (9, 4, 3)  # never cuts
    assert padded_shape((9, 4, 3), (9, 7, 3), [0, 1], [0, -3], None) == (9, 7, 3)
    assert padded_shape((5, 7, 3), (9, 7, 3), [0, 1], [1], [2]) == (6, 8, 3)


@pytest.mark.parametrize(
    ("args", "layout", "match"),
    [
        ({"axes": [0], "align": [0]}, "HWC", "'align' must be positive"),
        ({"axes": [0], "align": [-2]}, "HWC", "'align' must be positive"),
        ({"axis_names": "HW"}, "", "axis 'H'"),
        ({"axes": [3]}, "HWC", "axis 3 is out of range"),
        ({"axes": [0, 1], "shape": [1, 2, 3]}, "HWC", "3 values"),
    ],
)
def test_bad_arguments_fail_naming_the_operator(args, layout, match):
    with pytest.raises(OperatorError, match=match) as info:
        run([np.zeros((3, 4, 3), np.uint8)], layout=layout, **args)
    assert "Pad" in str(info.value)


def test_axes_and_axis_names_exclude_each_other():
    with pytest.raises(ArgumentError, match="mutually exclusive"):
        fn.pad(np.zeros((3, 4, 3), np.uint8), axes=[0], axis_names="H")
    with pytest.raises(ArgumentError, match="fill_value"):
        fn.pad(np.zeros((3, 4, 3), np.uint8), fill_value="x")


def test_different_ranks_in_a_batch_fail():
    with pytest.raises(OperatorError):
        run([np.zeros((3, 4), np.uint8), np.zeros((3, 4, 1), np.uint8)], layout="")
