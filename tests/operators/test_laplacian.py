"""fn.laplacian against OpenCV's cv2.Laplacian and scipy.ndimage.correlate with the windows
written out, on real photos: default windows, smoothing sizes, normalisation, scales, per-sample
window sizes, uint8 saturation, and bad arguments."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from scipy import ndimage

from augkit import types
from augkit.errors import AugkitError
from tests.operator_check import check_operator, run_operator


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for p in photos[:3]:
        step = max(1, max(p.shape[:2]) // 90)
        out.append(np.ascontiguousarray(p[::step, ::step]))
    return out


def smooth(n: int) -> np.ndarray:
    return np.array([comb(n - 1, k) for k in range(n)], np.float64)


def deriv(n: int) -> np.ndarray:
    return np.convolve(smooth(n - 2), [1, -2, 1])


def reference(image, window=3, smoothing=None, scale=(1.0, 1.0)) -> np.ndarray:
    x = image.astype(np.float64)
    total = 0
    for axis in (0, 1):
        other = 1 - axis
        s = window if smoothing is None else smoothing
        part = ndimage.correlate1d(x, deriv(window), axis=axis, mode="mirror")
        part = ndimage.correlate1d(part, smooth(s), axis=other, mode="mirror")
        total = total + scale[axis] * part
    return total


def lap(images, layout="HWC", **args):
    outs = run_operator("laplacian", [images], layout=layout, args=args)[0][0]
    return [np.asarray(s) for s in outs]


def test_default_equals_opencv_laplacian(small: list[np.ndarray]) -> None:
    import cv2

    check_operator(
        "laplacian",
        [small],
        lambda image, **_: cv2.Laplacian(
            image, cv2.CV_32F, ksize=3, borderType=cv2.BORDER_REFLECT_101
        ),
        layout="HWC",
        args={"dtype": types.FLOAT},
        expected_layout="HWC",
    )


def test_uint8_output_clips_negative_responses(small: list[np.ndarray]) -> None:
    for got, image in zip(lap(small), small, strict=True):
        want = np.clip(reference(image), 0, 255)
        np.testing.assert_array_equal(got, want.astype(np.uint8))
        assert (reference(image) < 0).any()


@pytest.mark.parametrize("window, smoothing", [(5, None), (7, 1), (3, 5)])
def test_windows_and_smoothing(small: list[np.ndarray], window, smoothing) -> None:
    args = {"window_size": window, "dtype": types.FLOAT}
    if smoothing is not None:
        args["smoothing_size"] = smoothing
    for got, image in zip(lap(small, **args), small, strict=True):
        np.testing.assert_allclose(got, reference(image, window, smoothing), rtol=1e-5, atol=1e-2)


def test_normalized_kernel_and_scale(small: list[np.ndarray]) -> None:
    image = small[0]
    # 2 axes, windows of 5 along both: s = 10, factor 2 ** -(10 - 2 - 2) = 1 / 64.
    (got,) = lap([image], window_size=5, normalized_kernel=True, dtype=types.FLOAT)
    np.testing.assert_allclose(got, reference(image, 5) / 64, rtol=1e-5, atol=1e-3)
    (got,) = lap([image], scale=(0.5, 2.0), dtype=types.FLOAT)
    np.testing.assert_allclose(got, reference(image, scale=(0.5, 2.0)), rtol=1e-5, atol=1e-3)


def test_per_sample_window_sizes(small: list[np.ndarray]) -> None:
    windows = [np.array([3], np.int32), np.array([5], np.int32), np.array([7, 3], np.int32)]

    def ref(image, window_size, **_):
        w = np.resize(window_size, 2)
        x = image.astype(np.float64)
        dy = ndimage.correlate1d(
            ndimage.correlate1d(x, deriv(w[0]), 0, mode="mirror"), smooth(w[0]), 1, mode="mirror"
        )
        dx = ndimage.correlate1d(
            ndimage.correlate1d(x, deriv(w[1]), 1, mode="mirror"), smooth(w[1]), 0, mode="mirror"
        )
        return (dy + dx).astype(np.float32)

    check_operator(
        "laplacian",
        [small],
        ref,
        layout="HWC",
        args={"dtype": types.FLOAT},
        arg_inputs={"window_size": windows},
        atol=1e-2,
    )


@pytest.mark.parametrize(
    "args, message",
    [
        ({"window_size": 4}, "odd integer between 3 and 23"),
        ({"window_size": 25}, "odd integer between 3 and 23"),
        ({"smoothing_size": 2}, "odd integer between 1 and 23"),
        ({"normalized_kernel": True, "scale": 2.0}, "cannot be given"),
        ({"scale": (1.0, 2.0, 3.0)}, "1 or 2 values"),
        ({"dtype": types.INT32}, "dtype"),
    ],
)
def test_bad_arguments(args, message) -> None:
    with pytest.raises(AugkitError, match=message):
        lap([np.zeros((8, 8, 3), np.uint8)], **args)


def test_float64_is_refused_as_in_dali() -> None:
    with pytest.raises(AugkitError, match="float64"):
        lap([np.zeros((8, 8, 3), np.float64)])
