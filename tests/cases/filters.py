"""Rows of the filters: gaussian_blur, laplacian, filter, and the experimental median_blur,
dilate and erode."""

from __future__ import annotations

from tests.cases._row import OperatorCase, _uniform

CASES: dict[str, OperatorCase] = {
    "gaussian_blur": OperatorCase(
        input="images",
        body=lambda op, x: (op("gaussian_blur")(x, sigma=_uniform(op, 0.3, 2.5)),),
        required={"sigma": 1.0},
    ),
    "laplacian": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("laplacian")(x, window_size=5, scale=_uniform(op, 0.01, 0.1)),
            op("laplacian")(x, smoothing_size=1),
        ),
    ),
    "filter": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("filter")(x, op("random.uniform")(range=(0.0, 0.25), shape=[3, 3])),
            op("filter")(
                x,
                op("random.uniform")(range=(-0.1, 0.3), shape=[2, 5]),
                border="constant",
                mode="valid",
            ),
        ),
    ),
    "experimental.median_blur": OperatorCase(
        input="images",
        body=lambda op, x: (op("experimental.median_blur")(x, window_size=(5, 3)),),
    ),
    "experimental.dilate": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("experimental.dilate")(x, mask_size=(3, 5), iterations=2, border_mode="reflect"),
        ),
    ),
    "experimental.erode": OperatorCase(
        input="images",
        body=lambda op, x: (op("experimental.erode")(x, mask_size=4, anchor=(0, 3)),),
    ),
}
