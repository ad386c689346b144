"""fn.slice against NumPy slicing and np.pad on real photos: the window arguments (named and
positional, absolute and relative), DALI's rounding of ends, the axes, the out-of-bounds
policies, dtype, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augkit import fn, types
from augkit.errors import ArgumentError, AugkitError, OperatorError
from augkit.operators.geometric.slice import llround, named_window, positional_window
from tests.operator_check import check_operator, run_operator


def half_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def reference_window(image, start_xy, end_xy):
    """Rows [y0, y1), columns [x0, x1): ends rounded half away from zero."""
    (x0, y0), (x1, y1) = (half_away(v) for v in start_xy), (half_away(v) for v in end_xy)
    return image[y0:y1, x0:x1]


def run(x, layout="HWC", inputs=(), **args):
    layouts = [layout] + [""] * len(inputs)
    batches = [[x], *[[v] for v in inputs]]
    return run_operator("slice", batches, layout=layouts, args=args)[0][0].at(0)


def test_rel_start_rel_shape_on_photos(photos):
    def ref(image, rel_start, rel_shape, **_):
        h, w = image.shape[:2]
        start = (rel_start[0] * w, rel_start[1] * h)
        end = ((rel_start[0] + rel_shape[0]) * w, (rel_start[1] + rel_shape[1]) * h)
        return reference_window(image, start, end)

    check_operator(
        "slice",
        [photos],
        ref,
        layout="HWC",
        args={"rel_start": (0.125, 0.25), "rel_shape": (0.5, 0.25)},
        expected_layout="HWC",
    )


def test_per_sample_start_and_end(photos):
    starts = [np.array([10 + 7 * i, 3 * i], np.int32) for i in range(len(photos))]
    ends = [np.array([200 + i, 150 + 2 * i], np.int32) for i in range(len(photos))]
    check_operator(
        "slice",
        [photos],
        lambda image, start, end, **_: image[start[1] : end[1], start[0] : end[0]],
        layout="HWC",
        arg_inputs={"start": starts, "end": ends},
    )


def test_positional_inputs_normalized_and_absolute(photos):
    image = photos[0]
    h, w = image.shape[:2]
    out = run(image, inputs=(np.float32([0.2, 0.1]), np.float32([0.5, 0.3])))
    np.testing.assert_array_equal(
        out, reference_window(image, (0.2 * w, 0.1 * h), (0.7 * w, 0.4 * h))
    )
    out = run(
        image,
        inputs=(np.float32([3.5, 2.2]), np.float32([40.0, 30.6])),
        normalized_anchor=False,
        normalized_shape=False,
    )
    np.testing.assert_array_equal(out, image[2:33, 4:44])
    # integer inputs are absolute even with normalized_anchor=True (the default)
    out = run(image, inputs=(np.int64([3, 2]), np.int64([40, 30])))
    np.testing.assert_array_equal(out, image[2:32, 3:43])


def test_rounding_is_on_the_end_not_the_size():
    # start 1.4, shape 2.2 -> [round(1.4), round(3.6)) = [1, 4): 3 elements, not round(2.2) = 2
    x = np.arange(10, dtype=np.float32)
    out = run(
        x,
        layout="",
        inputs=(np.float32([1.4]), np.float32([2.2])),
        axes=[0],
        normalized_anchor=False,
        normalized_shape=False,
    )
    np.testing.assert_array_equal(out, [1, 2, 3])
    assert llround(2.5) == 3 and llround(-2.5) == -3 and llround(0.49999999999999994) == 0


def test_window_arithmetic_is_dalis_float32():
    # rel_start * extent in float32: 0.15f * 56 = 8.4000003 -> 8; 0.7 * 10 -> 7.0000005 -> 7
    assert named_window((56, 56), [1, 0], {"rel_start": (0.15, 0.15)})[0] == [8, 8]
    anchor, size = positional_window(
        (5, 7, 2), [1, 0], np.float32([0.25, 0.3]), np.float32([0.5, 0.4]), True, True
    )
    assert (anchor, size) == ([2, 2, 0], [2, 3, 2])  # H: 1.5 -> 2, end 3.5 -> 4


def test_axes_and_axis_names(photos):
    image = photos[1]
    out = run(image, start=(5, 7), shape=(20, 30), axis_names="HW")
    np.testing.assert_array_equal(out, image[5:25, 7:37])
    out = run(image, start=(5, 7), shape=(20, 30), axes=[0, 1])
    np.testing.assert_array_equal(out, image[5:25, 7:37])
    out = run(image, start=1, shape=2, axes=[-1])  # one value broadcasts; negative axis
    np.testing.assert_array_equal(out, image[..., 1:3])
    chw = np.ascontiguousarray(image.transpose(2, 0, 1))
    out = run(chw, layout="CHW", start=(7, 5), shape=(30, 20))  # default "WH" finds the axes
    np.testing.assert_array_equal(out, chw[:, 5:25, 7:37])
    out = run(image, layout="", start=(7, 5), shape=(30, 20))  # no layout: HWC
    np.testing.assert_array_equal(out, image[5:25, 7:37])


def test_missing_start_or_end_defaults_to_the_whole_axis(photos):
    image = photos[2]
    np.testing.assert_array_equal(run(image, start=(10, 20)), image[20:, 10:])
    np.testing.assert_array_equal(
        run(image, rel_end=(0.5, 0.5)),
        reference_window(
            image, (0, 0), (image.shape[1] * np.float32(0.5), image.shape[0] * np.float32(0.5))
        ),
    )


@pytest.mark.parametrize(
    ("policy", "mode"),
    [
        ("edge", "edge"),
        ("clamp", "edge"),
        ("reflect", "symmetric"),
        ("reflect_1001", "symmetric"),
        ("reflect_101", "reflect"),
        ("wrap", "wrap"),
    ],
)
def test_out_of_bounds_policies_are_np_pad(photos, policy, mode):
    image = photos[0][:50, :60]
    out = run(image, start=(-70, -9), shape=(200, 120), out_of_bounds_policy=policy)
    padded = np.pad(image, ((9, 120 - 9 - 50), (70, 200 - 70 - 60), (0, 0)), mode=mode)
    np.testing.assert_array_equal(out, padded)


def test_pad_with_fill_values_per_channel(photos):
    image = photos[0][:50, :60]
    out = run(
        image,
        start=(-3, -2),
        shape=(70, 55),
        out_of_bounds_policy="pad",
        fill_values=(10, 300, 37.9),
    )
    assert out.shape == (55, 70, 3)
    np.testing.assert_array_equal(out[2:52, 3:63], image)
    np.testing.assert_array_equal(out[0, 0], [10, 255, 37])  # truncated, then clamped
    np.testing.assert_array_equal(out[54, 69], [10, 255, 37])
    # entirely outside: all fill
    out = run(image, start=(100, 100), shape=(4, 3), out_of_bounds_policy="constant", fill_values=7)
    np.testing.assert_array_equal(out, np.full((3, 4, 3), 7, np.uint8))


def test_trim_to_shape(photos):
    image = photos[0]
    h, _w = image.shape[:2]
    out = run(image, start=(-5, h - 10), shape=(50, 40), out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(out, image[h - 10 :, :45])


def test_dtype_conversions():
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3) * 30.3 - 40.0
    out = run(x, start=(0, 0), shape=(4, 2), dtype=types.UINT8)
    np.testing.assert_array_equal(out, np.clip(np.trunc(x), 0, 255).astype(np.uint8))
    u8 = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    out = run(u8, start=(1, 0), shape=(2, 2), dtype=types.FLOAT16)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, u8[:, 1:3].astype(np.float16))


def test_volumes_and_generic_tensors():
    vol = np.arange(4 * 5 * 6 * 2, dtype=np.int16).reshape(4, 5, 6, 2)
    out = run(vol, layout="DHWC", start=(1, 2, 1), shape=(3, 2, 2), axis_names="WHD")
    np.testing.assert_array_equal(out, vol[1:3, 2:4, 1:4])
    vec = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(
        run(vec, layout="", rel_start=0.2, rel_end=0.75, axes=[0]), vec[2:8]
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"start": (-1, 0), "shape": (5, 5)}, "does not fit"),
        ({"start": (5, 5), "end": (2, 8)}, "can't be before"),
        ({"start": (1, 2, 3), "shape": (2, 2)}, "3 values, but the slice has 2 axes"),
        ({"start": (1, 1), "shape": (2, 2), "axis_names": "DW"}, "axis 'D'"),
        ({"start": (1, 1), "shape": (2, 2), "axes": (0, 5)}, "axis 5 is out of range"),
        ({"start": (0, 0), "shape": (2, 2), "dtype": types.INT16}, "not supported"),
        (
            {
                "start": (0, 0),
                "shape": (2, 2),
                "out_of_bounds_policy": "pad",
                "fill_values": (1, 2),
            },
            "fill_values has 2 values",
        ),
    ],
)
def test_bad_windows_name_the_operator(photos, args, match):
    with pytest.raises(OperatorError, match=match) as info:
        run(photos[0][:20, :20], **args)
    assert "slice" in str(info.value).lower()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"start": (1, 1), "rel_start": (0.1, 0.1)}, "mutually exclusive"),
        ({"shape": (1, 1), "end": (3, 3)}, "mutually exclusive"),
        ({"start": (1, 1), "axes": (0, 1), "axis_names": "HW"}, "mutually exclusive"),
        ({"start": (1.5, 1)}, "start"),
        ({"rel_start": (0.1, 0.1), "out_of_bounds_policy": "mirror"}, "out_of_bounds_policy"),
    ],
)
def test_bad_arguments_are_named(args, match):
    with pytest.raises(ArgumentError, match=match):
        fn.slice(np.zeros((4, 4, 3), np.uint8), **args)  # outside a pipeline: eager check


def test_positional_input_errors(photos):
    image = photos[0][:20, :20]
    with pytest.raises(OperatorError, match="same type"):
        run(image, inputs=(np.int32([1, 1]), np.float32([0.5, 0.5])))
    with pytest.raises(OperatorError, match="cannot be used with the positional"):
        run(image, inputs=(np.int32([1, 1]), np.int32([5, 5])), start=(1, 1))
    with pytest.raises(OperatorError, match="no slice window"):
        run(image)
    with pytest.raises(AugkitError):
        run(image, inputs=(np.int32([1, 1]), np.int32([-5, 5])))
