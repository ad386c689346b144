"""fn.erase against an independent NumPy reference on real photos: DALI's documented examples,
many regions laid out flat, per-sample regions and fills, axis selection, normalized and
centred anchors, the C++ fill conversion, and the errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import augkit.eager
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.erase import cpp_cast
from tests.operator_check import check_operator, run_operator


def _f32(value: float) -> float:
    return float(np.float32(value))


def reference_erase(
    image: np.ndarray,
    *,
    anchor: Any = (),
    shape: Any = (),
    axes: tuple[int, ...] | None = None,
    fill: Any = 0,
    norm_anchor: bool = False,
    norm_shape: bool = False,
    centered: bool = False,
    **_: Any,
) -> np.ndarray:
    """Element-by-element definition: coordinates in float32 one operation at a time (Python
    floats rounded to float32 after each), truncated toward zero, clipped."""
    anchor = [float(v) for v in np.ravel(anchor)]
    shape = [float(v) for v in np.ravel(shape)]
    axes = list(axes) if axes is not None else [0, 1]
    anchor = anchor or [0.0] * len(shape)
    out = image.copy()
    for r in range(len(shape) // len(axes)):
        index = [slice(None)] * image.ndim
        for j, axis in enumerate(axes):
            extent = image.shape[axis]
            a, s = _f32(anchor[r * len(axes) + j]), _f32(shape[r * len(axes) + j])
            a = _f32(a * extent) if norm_anchor else a
            s = _f32(s * extent) if norm_shape else s
            a = _f32(a - _f32(s / 2)) if centered else a
            start, end = math.trunc(a), math.trunc(_f32(a + s))
            index[axis] = slice(max(start, 0), max(min(end, extent), 0))
        out[tuple(index)] = fill
    return out


def test_dali_example_1_one_region(photos: list[np.ndarray]) -> None:
    check_operator(
        "erase",
        [photos],
        lambda image, **_: reference_erase(image, anchor=(10, 20), shape=(190, 200)),
        layout="HWC",
        args={"anchor": (10, 20), "shape": (190, 200), "axis_names": "HW", "fill_value": 0},
        expected_layout="HWC",
    )


def test_dali_example_2_two_vertical_bands_with_a_colour(photos: list[np.ndarray]) -> None:
    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        out = image.copy()
        out[:, 10:30] = (118, 185, 0)
        out[:, 250:280] = (118, 185, 0)
        return out

    check_operator(
        "erase",
        [photos],
        reference,
        layout="HWC",
        args={
            "anchor": (10, 250),
            "shape": (20, 30),
            "axis_names": "W",
            "fill_value": (118, 185, 0),
        },
    )


def test_dali_example_3_normalized(photos: list[np.ndarray]) -> None:
    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        return reference_erase(
            image, anchor=(0.15, 0.15), shape=(0.3, 0.3), fill=100, norm_anchor=True,
            norm_shape=True,
        )  # fmt: skip

    check_operator(
        "erase",
        [photos],
        reference,
        layout="HWC",
        args={"anchor": (0.15, 0.15), "shape": (0.3, 0.3), "fill_value": 100, "normalized": True},
    )


def test_dali_example_4_normalized_anchor_absolute_shape() -> None:
    image = np.full((300, 300, 3), 7, np.uint8)
    out = augkit.eager.erase([image], anchor=(0.15, 0.15), shape=(20, 30), normalized_anchor=True)
    expected = image.copy()
    expected[45:65, 45:75] = 0
    np.testing.assert_array_equal(out[0], expected)


def test_fractional_negative_and_overflowing_regions(photos: list[np.ndarray]) -> None:
    anchor = (1.5, 2.7, -3.5, -2.2, 40.2, 50.9, 0.0, 0.0)
    shape = (20.4, 30.9, 10.0, 9.9, 1000.0, 1000.0, -5.0, 20.0)
    check_operator(
        "erase",
        [photos],
        lambda image, **_: reference_erase(image, anchor=anchor, shape=shape, fill=33),
        layout="HWC",
        args={"anchor": anchor, "shape": shape, "fill_value": 33},
    )


def test_per_sample_regions_and_fills(photos: list[np.ndarray]) -> None:
    n = len(photos)
    rng = np.random.default_rng(5)
    # A different number of regions per sample (flat lists), and a scalar fill per sample.
    anchors = [rng.uniform(-10, 60, 2 * (i % 3 + 1)).astype(np.float32) for i in range(n)]
    shapes = [rng.uniform(0, 40, 2 * (i % 3 + 1)).astype(np.float32) for i in range(n)]
    fills = [np.float32(10 * i + 0.7) for i in range(n)]

    def reference(image: np.ndarray, anchor: Any, shape: Any, fill_value: Any) -> np.ndarray:
        return reference_erase(image, anchor=anchor, shape=shape, fill=int(fill_value))

    check_operator(
        "erase",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"anchor": anchors, "shape": shapes, "fill_value": fills},
    )


def test_centered_normalized_regions(photos: list[np.ndarray]) -> None:
    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        return reference_erase(
            image, anchor=(0.5, 0.4), shape=(0.33, 0.41), norm_anchor=True, norm_shape=True,
            centered=True,
        )  # fmt: skip

    check_operator(
        "erase",
        [photos],
        reference,
        layout="HWC",
        args={"anchor": (0.5, 0.4), "shape": (0.33, 0.41), "normalized": True,
              "centered_anchor": True},
    )  # fmt: skip


def test_axis_names_win_over_axes_and_axes_order(photos: list[np.ndarray]) -> None:
    image = photos[0]
    named = augkit.eager.erase([image], anchor=(5,), shape=(7,), axes=(0,), axis_names="W")
    expected = image.copy()
    expected[:, 5:12] = 0
    np.testing.assert_array_equal(named[0], expected)
    # axes=(1, 0): the first coordinate is W, the second H.
    swapped = augkit.eager.erase([image], anchor=(5, 9), shape=(7, 3), axes=(1, 0))
    expected = image.copy()
    expected[9:12, 5:12] = 0
    np.testing.assert_array_equal(swapped[0], expected)


def test_default_axes_are_all_but_channels() -> None:
    volume = np.arange(2 * 6 * 8 * 3, dtype=np.uint8).reshape(2, 6, 8, 3)
    (out,) = run_operator(
        "erase", [[volume]], layout="DHWC", args={"anchor": (1, 1, 2), "shape": (1, 2, 3)}
    )[0]
    expected = volume.copy()
    expected[1:2, 1:3, 2:5] = 0
    np.testing.assert_array_equal(out[0], expected)


def test_chw_per_channel_fill_and_erasing_along_c(photos: list[np.ndarray]) -> None:
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos]

    def reference(image: np.ndarray, **_: Any) -> np.ndarray:
        out = image.copy()
        out[:, 2:22, 3:28] = np.array([7, 8, 9], np.uint8)[:, None, None]
        return out

    check_operator(
        "erase",
        [chw],
        reference,
        layout="CHW",
        args={"anchor": (2, 3), "shape": (20, 25), "fill_value": (7, 8, 9)},
        expected_layout="CHW",
    )
    # Erasing along C keeps each channel's own fill value.
    (out,) = run_operator(
        "erase",
        [photos[:1]],
        layout="HWC",
        args={"anchor": (1,), "shape": (2,), "axis_names": "C", "fill_value": (5, 6, 7)},
    )[0]
    expected = photos[0].copy()
    expected[..., 1:3] = (6, 7)
    np.testing.assert_array_equal(out[0], expected)


def test_fill_value_conversion_truncates_and_wraps_as_cpp() -> None:
    # Measured on DALI 2.4: static_cast from float, not ConvertSat.
    assert cpp_cast([300.0, -3.5, 2.7, 3e9, -3e9], np.uint8).tolist() == [44, 253, 2, 0, 0]
    assert cpp_cast([1000.0, -7.9], np.int8).tolist() == [-24, -7]
    assert cpp_cast([70000.7], np.uint16).tolist() == [4464]
    assert cpp_cast([3e9], np.int32).tolist() == [-(2**31)]
    assert cpp_cast([-1.0], np.uint32).tolist() == [2**32 - 1]
    assert cpp_cast([2.5], np.float32).tolist() == [2.5]
    assert np.isinf(cpp_cast([1e6], np.float16)[0])
    out = augkit.eager.erase([np.zeros((4, 4, 3), np.uint8)], shape=(2, 2), fill_value=300)
    assert out[0][0, 0].tolist() == [44, 44, 44] and out[0][3, 3].tolist() == [0, 0, 0]


def test_float_image_keeps_exact_fill(photos: list[np.ndarray]) -> None:
    images = [p.astype(np.float32) / 255 for p in photos]
    check_operator(
        "erase",
        [images],
        lambda image, **_: reference_erase(image, anchor=(4, 4), shape=(10, 12), fill=-0.25),
        layout="HWC",
        args={"anchor": (4, 4), "shape": (10, 12), "fill_value": -0.25},
    )


def test_nothing_to_erase_gives_the_input(photos: list[np.ndarray]) -> None:
    out = augkit.eager.erase(photos[:2])
    for got, want in zip(out, photos[:2], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"anchor": (1, 1), "shape": (2, 2), "normalized": True, "normalized_shape": True},
         "normalized"),
        ({"anchor": (1, 1, 1), "shape": (2, 2)}, "same length"),
        ({"anchor": (1, 1)}, "without shape"),
        ({"shape": (2, 2), "axes": "HW"}, "axes"),
        ({"shape": (2, 2), "fill_value": ()}, "fill_value"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ArgumentError, match="Erase") as info:
        augkit.eager.erase([np.zeros((4, 4, 3), np.uint8)], **kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("image", "kwargs", "words"),
    [
        (np.zeros((4, 4, 3), np.uint8), {"anchor": (1, 1, 1), "shape": (2, 2, 2)}, "per region"),
        (np.zeros((4, 4, 3), np.uint8), {"shape": (2, 2), "fill_value": (1, 2)}, "channels"),
        (np.zeros((4, 4, 3), np.uint8), {"shape": (2,), "axis_names": "X"}, "'X'"),
        (np.zeros((4, 4, 3), np.uint8), {"shape": (2,), "axes": (5,)}, "axis 5"),
        (np.zeros((4, 4), np.uint8), {"shape": (2, 2), "fill_value": (1, 2, 3)}, "'C'"),
        (np.zeros((4, 4, 3), bool), {"shape": (2, 2)}, "bool"),
    ],
)
def test_bad_samples_name_the_operator(
    image: np.ndarray, kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(OperatorError, match="Erase") as info:
        augkit.eager.erase([image], **kwargs)
    assert words in str(info.value)


def _same_size(photos: list[np.ndarray], dtype: Any = np.uint8) -> list[np.ndarray]:
    """The photos cut to one shape (a batch the batch kernel takes)."""
    h = min(p.shape[0] for p in photos)
    w = min(p.shape[1] for p in photos)
    return [np.ascontiguousarray(p[:h, :w]).astype(dtype) for p in photos]


@pytest.mark.parametrize(
    ("kwargs", "per_sample"),
    [
        ({"shape": (60.0, 60.0), "axis_names": "HW"}, ("anchor",)),
        ({"normalized": True, "centered_anchor": True}, ("anchor", "shape")),
        ({"fill_value": (10, 300, -3.5), "anchor": (5, 5, 40, 7), "shape": (30, 20, 9, 90)}, ()),
        ({"axes": (1,), "normalized_shape": True}, ("anchor", "shape", "fill_value")),
        ({"axis_names": "WC", "shape": (50.0, 2.0)}, ("anchor",)),
        ({"layout": "CHW"}, ("anchor", "shape", "fill_value")),
    ],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_batch_kernel_matches_the_per_sample_kernel(
    photos: list[np.ndarray], kwargs: dict[str, Any], per_sample: tuple[str, ...], dtype: Any
) -> None:
    """Samples of one shape run through ``Erase.cpu_batch`` (one output array for the batch);
    each sample alone (a batch of one) runs through the per-sample kernel: both must agree
    bit for bit, and with the reference."""
    kwargs = dict(kwargs)
    layout = kwargs.pop("layout", "HWC")
    images = _same_size(photos, dtype)
    if layout == "CHW":
        images = [np.ascontiguousarray(x.transpose(2, 0, 1)) for x in images]
    n = len(images)
    rng = np.random.default_rng(11)
    normalized = kwargs.get("normalized") or kwargs.get("normalized_shape")
    k = len(kwargs["shape"]) if "shape" in kwargs else 4  # values per sample: 2 regions (HW)
    values = {
        "anchor": [rng.uniform(-20, 150, k).astype(np.float32) for _ in range(n)],
        "shape": [
            (rng.uniform(0, 0.6, k) if normalized else rng.uniform(-5, 90, k)).astype(np.float32)
            for _ in range(n)
        ],
        "fill_value": [rng.uniform(-300, 300, 1).astype(np.float32) for _ in range(n)],
    }
    if layout == "CHW":  # one value per channel
        values["fill_value"] = [rng.uniform(-5, 260, 3).astype(np.float32) for _ in range(n)]
    arg_inputs = {key: values[key] for key in per_sample}
    batch = augkit.eager.erase(augkit.tensors.TensorList(images, layout), **kwargs, **arg_inputs)
    assert batch._dense is not None  # the batch kernel ran (one output array)
    for i, image in enumerate(images):
        alone = augkit.eager.erase(
            augkit.tensors.TensorList([image], layout),
            **kwargs,
            **{key: [value[i]] for key, value in arg_inputs.items()},
        )
        assert alone._dense is None  # the per-sample kernel ran
        np.testing.assert_array_equal(batch.as_cpu().at(i), alone.as_cpu().at(0))
        assert batch.at(i).dtype == image.dtype
    if not per_sample and layout == "HWC" and "axis_names" not in kwargs:
        for i, image in enumerate(images):
            want = reference_erase(
                image,
                anchor=kwargs["anchor"],
                shape=kwargs["shape"],
                fill=cpp_cast(kwargs["fill_value"], dtype).reshape(1, 1, -1),
            )
            np.testing.assert_array_equal(batch.at(i), want)


def test_batch_kernel_declines_what_it_cannot_take(photos: list[np.ndarray]) -> None:
    """Samples of several shapes, or per-sample regions of several lengths, go through the
    per-sample kernel (an output per sample), with the same values."""
    images = _same_size(photos)
    mixed = [images[0], images[1][:-3]]
    out = augkit.eager.erase(mixed, anchor=(3, 4), shape=(20, 30))
    assert len(out) == 2
    ragged = [np.float32([1, 2]), np.float32([1, 2, 30, 40])]
    out = augkit.eager.erase(
        augkit.tensors.TensorList(images[:2], "HWC"), anchor=ragged, shape=[v + 9 for v in ragged]
    )
    assert out._dense is None
    np.testing.assert_array_equal(
        out.at(1), reference_erase(images[1], anchor=ragged[1], shape=ragged[1] + 9)
    )
    with pytest.raises(OperatorError, match=r"Erase.*finite"):
        augkit.eager.erase(images[:2], anchor=[np.float32([np.nan, 1])] * 2, shape=(3.0, 3.0))
