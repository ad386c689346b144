"""fn.gaussian_blur against scipy.ndimage.correlate1d with independently written Gaussian windows,
on real photos: DALI's window-from-sigma and sigma-from-window rules, per-axis and per-sample
arguments, layouts (an unlabelled 3-D input is a volume, as in DALI), and bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from augkit import types
from augkit.errors import AugkitError
from tests.operator_check import check_operator, run_operator


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    """Three real photos, decimated to under 100 pixels a side (real content, fast refs)."""
    return [
        np.ascontiguousarray(
            p[:: max(1, max(p.shape[:2]) // 90), :: max(1, max(p.shape[:2]) // 90)]
        )
        for p in photos[:3]
    ]


def gaussian(sigma: float, window: int = 0) -> np.ndarray:
    if window == 0:
        window = 2 * math.ceil(3 * sigma) + 1
    if sigma == 0:
        sigma = ((window - 1) // 2 - 1) * 0.3 + 0.8
    x = np.arange(window) - window // 2
    w = np.exp(-(x**2) / (2 * sigma**2))
    return w / w.sum()


def reference(image: np.ndarray, sigmas, windows=(0, 0), axes=(0, 1)) -> np.ndarray:
    out = image.astype(np.float64)
    for axis, sigma, window in zip(axes, sigmas, windows, strict=True):
        out = ndimage.correlate1d(out, gaussian(sigma, window), axis=axis, mode="mirror")
    return out


def blur(images, layout="HWC", **args):
    return [
        np.asarray(s)
        for s in run_operator("gaussian_blur", [images], layout=layout, args=args)[0][0]
    ]


def test_float_output_matches_scipy(small: list[np.ndarray]) -> None:
    check_operator(
        "gaussian_blur",
        [small],
        lambda image, **_: reference(image, (1.5, 1.5)).astype(np.float32),
        layout="HWC",
        args={"sigma": 1.5, "dtype": types.FLOAT},
        atol=1e-3,
        expected_layout="HWC",
    )


def test_uint8_output_is_rounded_within_a_level(small: list[np.ndarray]) -> None:
    for got, image in zip(blur(small, sigma=(0.8, 2.2)), small, strict=True):
        want = np.floor(reference(image, (0.8, 2.2)) + 0.5)
        assert got.dtype == np.uint8
        diff = np.abs(got - want)
        assert diff.max() <= 1 and diff.mean() < 1e-3


def test_window_from_sigma_and_sigma_from_window() -> None:
    impulse = np.zeros((31, 31, 1), np.float32)
    impulse[15, 15] = 1
    (out,) = blur([impulse], sigma=1.2)
    # 2 * ceil(3.6) + 1 = 9 taps: nonzero exactly on rows 11..19.
    rows = np.flatnonzero(out[:, 15, 0])
    assert rows.tolist() == list(range(11, 20))
    np.testing.assert_allclose(out[:, :, 0], reference(impulse, (1.2, 1.2))[:, :, 0], atol=1e-6)
    (out,) = blur([impulse], window_size=7)
    want = np.outer(gaussian(0, 7), gaussian(0, 7))  # sigma = (3 - 1) * 0.3 + 0.8 = 1.4
    np.testing.assert_allclose(out[12:19, 12:19, 0], want, atol=1e-6)
    assert out.sum() == pytest.approx(1.0, abs=1e-5)


def test_per_axis_and_per_sample(small: list[np.ndarray]) -> None:
    sigmas = [
        np.array([0.5, 3.0], np.float32),
        np.array([2.0], np.float32),
        np.array([1.0, 0.0], np.float32),
    ]
    windows = [np.array([0], np.int32), np.array([0], np.int32), np.array([0, 3], np.int32)]
    check_operator(
        "gaussian_blur",
        [small],
        lambda image, sigma, window_size, **_: reference(
            image, tuple(np.resize(sigma, 2)), tuple(np.resize(window_size, 2))
        ).astype(np.float32),
        layout="HWC",
        args={"dtype": types.FLOAT},
        arg_inputs={"sigma": sigmas, "window_size": windows},
        atol=1e-3,
    )


def test_layouts_decide_the_data_axes(small: list[np.ndarray]) -> None:
    image = small[0].astype(np.float32)
    (hwc,) = blur([image], sigma=1.0)
    (chw,) = blur([np.ascontiguousarray(image.transpose(2, 0, 1))], layout="CHW", sigma=1.0)
    np.testing.assert_allclose(chw.transpose(1, 2, 0), hwc, atol=1e-4)
    # No layout: DALI takes the 3 axes as a volume and blurs across the channels too.
    (volume,) = blur([image], layout="", sigma=1.0)
    want = reference(image, (1.0, 1.0, 1.0), (0, 0, 0), axes=(0, 1, 2))
    np.testing.assert_allclose(volume, want, atol=1e-3)
    assert np.abs(volume - hwc).max() > 1
    (frames,) = blur([np.stack([image, image[::-1]])], layout="FHWC", sigma=1.0)
    np.testing.assert_allclose(
        frames[1], blur([np.ascontiguousarray(image[::-1])], sigma=1.0)[0], atol=1e-4
    )


def test_window_of_one_copies_and_tiny_images_reflect() -> None:
    image = np.arange(12, dtype=np.float32).reshape(3, 4, 1)
    np.testing.assert_array_equal(blur([image], window_size=1)[0], image)
    (out,) = blur([image[:1]], sigma=3.0)  # 19 taps over a 1x4 image
    want = ndimage.correlate1d(
        image[:1, :, 0].astype(np.float64), gaussian(3.0), axis=1, mode="mirror"
    )
    np.testing.assert_allclose(out[:, :, 0], want, atol=1e-5)


@pytest.mark.parametrize(
    "args, message",
    [
        ({}, "must not both be 0"),
        ({"window_size": 4}, "must be odd"),
        ({"sigma": (1.0, 2.0, 3.0)}, "1 or 2 values"),
        ({"sigma": 1.0, "dtype": types.INT16}, "dtype"),
        ({"sigma": -1.0}, "sigma"),
    ],
)
def test_bad_arguments_name_the_operator(args, message) -> None:
    with pytest.raises(AugkitError, match=message) as info:
        blur([np.zeros((8, 8, 3), np.uint8)], **args)
    assert "gaussian_blur" in str(info.value).lower() or "GaussianBlur" in str(info.value)


def test_bool_input_is_refused() -> None:
    with pytest.raises(AugkitError, match="bool"):
        blur([np.zeros((8, 8, 3), bool)], sigma=1.0)
