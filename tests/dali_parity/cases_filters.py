"""Parity cases of the filters: ``fn.gaussian_blur``, ``fn.laplacian`` and ``fn.filter``.

(``fn.experimental.median_blur``, ``dilate`` and ``erode`` run on DALI's GPU only: their
references are scipy.ndimage, in ``tests/operators/test_morphology.py``.)
"""

from __future__ import annotations

import numpy as np

from tests.dali_parity.base import ParityCase, per_sample

_ROUNDING = "float32 sums in OpenCV's order, not DALI's loop: a level where a value is near .5"


def _kernels(fn, shapes_and_seeds):
    """Per-sample float32 filters, drawn from fixed seeds (the same in both libraries)."""
    filters = []
    for shape, seed in shapes_and_seeds:
        values = np.random.default_rng(seed).uniform(-0.5, 1.0, shape)
        filters.append((values / values.sum()).astype(np.float32))
    return per_sample(fn, filters)


_BOX3 = [((3, 3), 1), ((3, 3), 2), ((3, 3), 3), ((3, 3), 4)]
_MIXED = [((3, 5), 5), ((5, 3), 6), ((1, 7), 7), ((4, 4), 8)]


CASES = [
    # --- gaussian_blur
    ParityCase(
        "gaussian_sigma1",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.0),
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_sigma_per_axis",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=(0.7, 2.3)),
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_only",
        lambda fn, types, x: fn.gaussian_blur(x, window_size=5),
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_and_sigma",
        lambda fn, types, x: fn.gaussian_blur(x, window_size=(3, 7), sigma=(1.5, 0.5)),
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_float_output",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.2, dtype=types.FLOAT),
        max_diff=1e-4,
        mean_diff=1e-5,
        note="float32 sums in another order",
    ),
    ParityCase(
        "gaussian_float_input",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=2.0),
        input="float",
        max_diff=5e-7,
        mean_diff=5e-8,
        note="float32 sums in another order",
    ),
    ParityCase(
        "gaussian_chw",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.5),
        input="chw",
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_per_sample_sigma",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=per_sample(fn, [0.5, 1.0, 2.0, 3.5])),
        input="gray",
        max_diff=1,
        mean_diff=2e-4,
        note=_ROUNDING,
    ),
    ParityCase(
        "gaussian_window_beyond_image",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=3.0),
        input="matrices",
        max_diff=5e-7,
        mean_diff=2e-7,
        note="no layout: 2 data axes; 19 taps on 2..5 pixels reflect many times",
    ),
    ParityCase(
        "gaussian_vectors",
        lambda fn, types, x: fn.gaussian_blur(x, sigma=1.0),
        input="vectors",
        max_diff=5e-7,
        mean_diff=1e-7,
        note="1 data axis",
    ),
    # --- laplacian
    ParityCase(
        "laplacian_default",
        lambda fn, types, x: fn.laplacian(x),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_float_output",
        lambda fn, types, x: fn.laplacian(x, window_size=5, dtype=types.FLOAT),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_no_smoothing",
        lambda fn, types, x: fn.laplacian(x, smoothing_size=1, dtype=types.FLOAT),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_smoothing_per_axis",
        lambda fn, types, x: fn.laplacian(
            x, window_size=(3, 7), smoothing_size=(5, 1), dtype=types.FLOAT
        ),
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_normalized",
        lambda fn, types, x: fn.laplacian(x, window_size=5, normalized_kernel=True),
        note="power-of-two scales: exact",
    ),
    ParityCase(
        "laplacian_scale_float",
        lambda fn, types, x: fn.laplacian(x, scale=(0.5, 2.0)),
        input="float",
        max_diff=2e-6,
        mean_diff=2e-7,
        note="float32 sums in another order",
    ),
    ParityCase(
        "laplacian_per_sample_window",
        lambda fn, types, x: fn.laplacian(
            x, window_size=per_sample(fn, [3, 5, 7, 9], np.int32), dtype=types.FLOAT
        ),
        input="gray",
        note="integer windows: exact sums",
    ),
    ParityCase(
        "laplacian_chw",
        lambda fn, types, x: fn.laplacian(x, window_size=3, scale=0.25),
        input="chw",
        note="integer windows, power-of-two scale: exact",
    ),
    # --- filter
    ParityCase(
        "filter_per_sample_3x3",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _BOX3)),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_shapes_float_output",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), dtype=types.FLOAT),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_anchor",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED[:1] * 4), anchor=(0, 3)),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_reflect_1001",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="reflect_1001"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_wrap",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="wrap"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_clamp",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="clamp"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_constant_zero",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), border="constant"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_constant_fill",
        lambda fn, types, x: fn.filter(
            x,
            _kernels(fn, _MIXED),
            per_sample(fn, [0, 100, 200, 255], np.uint8),
            border="constant",
        ),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_valid",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED), mode="valid"),
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_float_input",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _BOX3), border="wrap"),
        input="float",
        max_diff=5e-7,
        mean_diff=1e-9,
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_chw",
        lambda fn, types, x: fn.filter(x, _kernels(fn, _MIXED)),
        input="chw",
        note="cv2.filter2D, as DALI's CPU filter",
    ),
    ParityCase(
        "filter_gray_large",
        lambda fn, types, x: fn.filter(x, _kernels(fn, [((15, 11), 9)] * 4)),
        input="gray",
        note="cv2.filter2D (DFT-based for large filters), as DALI's CPU filter",
    ),
]
