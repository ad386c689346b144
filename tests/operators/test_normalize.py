"""fn.normalize against NumPy float64 formulas on real photos: computed and given mean/stddev,
axes and axis_names, ddof, epsilon, scale and shift, batch statistics, per-sample tensor
arguments, integer outputs (rounding and saturation), the zero-variance rule, and bad
arguments and inputs."""

from __future__ import annotations

import numpy as np
import pytest

import augkit.eager
from augkit import types
from augkit.errors import ArgumentError, OperatorError
from augkit.operators.color.cast import convert_sat
from tests.operator_check import check_operator, run_operator


def reference(
    x: np.ndarray,
    axes: tuple[int, ...] | None = None,
    mean: object = None,
    stddev: object = None,
    ddof: int = 0,
    epsilon: float = 0.0,
    scale: float = 1.0,
    shift: float = 0.0,
) -> np.ndarray:
    """The documented formula in float64: ``scale * (x - mean) / sqrt(var + eps) + shift``."""
    x = np.asarray(x, np.float64)
    axes = tuple(range(x.ndim)) if axes is None else axes
    m = x.mean(axis=axes, keepdims=True) if mean is None else np.asarray(mean, np.float64)
    if stddev is None:
        n = np.prod([x.shape[a] for a in axes])
        var = ((x - m) ** 2).sum(axis=axes, keepdims=True) / (n - ddof)
        inv = scale / np.sqrt(var + epsilon)
    else:
        inv = scale / np.sqrt(np.asarray(stddev, np.float64) ** 2 + epsilon)
    return (x - m) * inv + shift


def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [p[::4, ::4] for p in photos[:4]]


def test_default_is_whole_sample_statistics(photos: list[np.ndarray]) -> None:
    check_operator(
        "normalize",
        [small(photos)],
        lambda x, **_: reference(x).astype(np.float32),
        layout="HWC",
        atol=2e-6,
        expected_layout="HWC",
    )


@pytest.mark.parametrize("spec", [{"axes": (0, 1)}, {"axis_names": "HW"}])
def test_per_channel_statistics_by_axes_or_names(photos: list[np.ndarray], spec: dict) -> None:
    out = check_operator(
        "normalize",
        [small(photos)],
        lambda x, **_: reference(x, axes=(0, 1)).astype(np.float32),
        layout="HWC",
        args=spec,
        atol=2e-6,
    )[0]
    for i in range(len(out)):
        channels = out.at(i).astype(np.float64).reshape(-1, 3)
        np.testing.assert_allclose(channels.mean(0), 0, atol=1e-5)
        np.testing.assert_allclose(channels.std(0), 1, atol=1e-5)


def test_ddof_epsilon_scale_shift(photos: list[np.ndarray]) -> None:
    args = {"axes": (0, 1), "ddof": 1, "epsilon": 3.0, "scale": 2.0, "shift": 5.0}
    check_operator(
        "normalize",
        [small(photos)],
        lambda x, **_: reference(x, axes=(0, 1), ddof=1, epsilon=3.0, scale=2.0, shift=5.0).astype(
            np.float32
        ),
        layout="HWC",
        args=args,
        atol=1e-5,
    )


def test_given_mean_and_stddev_to_uint8_round_and_saturate(photos: list[np.ndarray]) -> None:
    args = {"mean": 100.25, "stddev": 2.0, "shift": 128.0, "dtype": types.UINT8}
    check_operator(
        "normalize",
        [small(photos)],
        # float32 as DALI; (v - 100.25) / 2 is exact, so halves occur and go away from zero.
        lambda x, **_: convert_sat(
            (x.astype(np.float32) - np.float32(100.25)) * np.float32(0.5) + np.float32(128),
            np.uint8,
        ),
        layout="HWC",
        args=args,
    )
    out = augkit.eager.normalize(
        np.array([[99, 100, 101, 0, 255]], np.uint8), mean=100.25, stddev=2.0, dtype=types.INT16
    )
    # -0.625 -> -1, -0.125 -> 0, 0.375 -> 0, -50.125 -> -50, 77.375 -> 77
    np.testing.assert_array_equal(out, [[-1, 0, 0, -50, 77]])


def test_given_mean_computed_stddev_is_about_that_mean(photos: list[np.ndarray]) -> None:
    check_operator(
        "normalize",
        [small(photos)],
        lambda x, **_: reference(x, mean=5.0).astype(np.float32),
        layout="HWC",
        args={"mean": 5.0},
        atol=2e-6,
    )


def test_per_sample_tensor_mean_infers_the_reduced_axes(photos: list[np.ndarray]) -> None:
    images = small(photos)
    means = [np.array([[[10.0, 20.0, 30.0]]], np.float32) * (i + 1) for i in range(len(images))]
    check_operator(
        "normalize",
        [images],
        lambda x, mean, **_: reference(x, axes=(0, 1), mean=mean).astype(np.float32),
        layout="HWC",
        arg_inputs={"mean": means},
        atol=2e-6,
    )


def test_per_sample_scalar_stddev(photos: list[np.ndarray]) -> None:
    images = small(photos)
    stddevs = [np.float32(10.0 * (i + 1)) for i in range(len(images))]
    check_operator(
        "normalize",
        [images],
        lambda x, stddev, **_: reference(x, stddev=float(stddev)).astype(np.float32),
        layout="HWC",
        arg_inputs={"stddev": stddevs},
        atol=2e-5,
    )


def test_batch_statistics_span_all_samples(photos: list[np.ndarray]) -> None:
    images = small(photos)
    out = run_operator("normalize", [images], layout="HWC", args={"batch": True, "axes": (0, 1)})
    both = np.concatenate([im.reshape(-1, 3).astype(np.float64) for im in images])
    mean, std = both.mean(0), both.std(0)
    for i, im in enumerate(images):
        want = (im.astype(np.float64) - mean) / std
        np.testing.assert_allclose(out[0][0].at(i), want, atol=2e-6)
    # Per sample the statistics differ from the batch's: not each sample's own.
    assert abs(float(out[0][0].at(0).mean())) > 1e-3


def test_constant_image_maps_to_shift_without_inf_or_nan() -> None:
    image = np.full((4, 5, 3), 7, np.uint8)
    out = augkit.eager.normalize(image, shift=1.5)
    np.testing.assert_array_equal(out, np.full((4, 5, 3), 1.5, np.float32))
    # With epsilon the variance is 0 + epsilon: (7 - 7) / 1 = 0.
    np.testing.assert_array_equal(augkit.eager.normalize(image, epsilon=1.0), np.zeros_like(out))
    # N <= ddof without epsilon: shift too.
    tiny = np.array([3.0, 5.0], np.float32)
    np.testing.assert_array_equal(augkit.eager.normalize(tiny, ddof=2, shift=2.0), [2.0, 2.0])


def test_vectors_and_float_inputs() -> None:
    x = np.random.default_rng(3).normal(10, 3, 1000).astype(np.float32)
    out = augkit.eager.normalize(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, reference(x), atol=2e-6)


def test_bad_arguments_name_the_operator_and_argument() -> None:
    image = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ArgumentError, match=r"Normalize.*axes.*axis_names|axis_names.*axes"):
        augkit.eager.normalize(image, axes=(0,), axis_names="H")
    with pytest.raises(ArgumentError, match="Normalize: argument 'epsilon'"):
        augkit.eager.normalize(image, epsilon=-1.0)
    with pytest.raises(ArgumentError, match="Normalize: argument 'dtype'"):
        augkit.eager.normalize(image, dtype=types.BOOL)
    with pytest.raises(ArgumentError, match="Normalize: argument 'mean'"):
        augkit.eager.normalize(image, mean="zero")
    with pytest.raises(ArgumentError, match="batch=True"):
        augkit.eager.normalize(image, batch=True, mean=np.zeros((1, 1, 3), np.float32))


def test_bad_samples_are_operator_errors() -> None:
    image = np.full((4, 4, 3), 9, np.uint8)
    with pytest.raises(OperatorError, match="axis 3 is out of range"):
        augkit.eager.normalize(image, axes=(3,))
    with pytest.raises(OperatorError, match="stddev=0"):
        augkit.eager.normalize(image, mean=1.0, stddev=0.0)
    with pytest.raises(OperatorError, match="mean has extent 2 along axis 2"):
        augkit.eager.normalize(image, mean=[np.zeros((1, 1, 2), np.float32)])
    with pytest.raises(OperatorError, match="needs numbers"):
        augkit.eager.normalize(np.array([True, False]))
    with pytest.raises(OperatorError, match='axis name "D"'):
        augkit.eager.normalize(image, axis_names="D")
