"""fn.flip against np.flip on real photos: DALI's defaults (horizontal on), per-sample flags,
the axes found from the layout, volumes, and GPU = CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import augkit.eager
from augkit import fn
from augkit.errors import ArgumentError, OperatorError
from tests.operator_check import check_operator, gpu_matches_cpu, run_operator


def test_default_flips_left_right(photos: list[np.ndarray]) -> None:
    check_operator(
        "flip",
        [photos],
        lambda image, **_: image[:, ::-1],
        layout="HWC",
        expected_layout="HWC",
    )


def test_per_sample_horizontal_and_vertical(photos: list[np.ndarray]) -> None:
    n = len(photos)
    horizontal = [np.int32(i % 2) for i in range(n)]
    vertical = [np.int32((i // 2) % 2) for i in range(n)]

    def reference(image: np.ndarray, horizontal: Any, vertical: Any, **_: Any) -> np.ndarray:
        if horizontal:
            image = np.flip(image, axis=1)
        if vertical:
            image = np.flip(image, axis=0)
        return image

    check_operator(
        "flip",
        [photos],
        reference,
        layout="HWC",
        arg_inputs={"horizontal": horizontal, "vertical": vertical},
    )


def test_coin_flip_bools_are_accepted(photos: list[np.ndarray]) -> None:
    flags = [np.bool_(i % 2 == 0) for i in range(len(photos))]
    check_operator(
        "flip",
        [photos],
        lambda image, horizontal, **_: np.flip(image, axis=1) if horizontal else image,
        layout="HWC",
        arg_inputs={"horizontal": flags},
    )


def test_chw_flips_the_last_axis(photos: list[np.ndarray]) -> None:
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos]
    check_operator(
        "flip",
        [chw],
        lambda image, **_: np.flip(image, axis=(1, 2)),
        layout="CHW",
        args={"horizontal": 1, "vertical": 1},
        expected_layout="CHW",
    )


def test_unlabelled_inputs_are_hwc_and_hw(photos: list[np.ndarray]) -> None:
    check_operator(
        "flip",
        [photos],
        lambda image, **_: np.flip(image, axis=0),
        args={"horizontal": 0, "vertical": 1},
    )
    gray = [np.ascontiguousarray(p[..., 0]) for p in photos]
    check_operator("flip", [gray], lambda image, **_: np.flip(image, axis=1), expected_layout="")


def test_depthwise_flips_volumes_and_is_a_no_op_on_images(photos: list[np.ndarray]) -> None:
    volumes = [np.stack([p[:50, :60], p[50:100, :60], p[100:150, :60]]) for p in photos]
    check_operator(
        "flip",
        [volumes],
        lambda volume, **_: np.flip(volume, axis=0),
        layout="DHWC",
        args={"horizontal": 0, "depthwise": 1},
        expected_layout="DHWC",
    )
    check_operator(
        "flip",
        [photos],
        lambda image, **_: image,
        layout="HWC",
        args={"horizontal": 0, "depthwise": 1},
        iterations=1,
    )


def test_flag_must_be_an_integer() -> None:
    with pytest.raises(ArgumentError, match="horizontal"):
        fn.flip(None, horizontal=0.5)


def test_layout_without_w_is_refused(photos: list[np.ndarray]) -> None:
    with pytest.raises(OperatorError, match="needs an H and a W axis"):
        run_operator("flip", [photos[:1]], layout="XYZ")


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    n = len(photos)
    gpu_matches_cpu(
        "flip",
        photos,
        layout="HWC",
        arg_inputs={
            "horizontal": [np.int32(i % 2) for i in range(n)],
            "vertical": [np.int32(i % 3 == 0) for i in range(n)],
        },
    )


# --- the cv2.flip path against np.flip -------------------------------------------------------


@pytest.mark.parametrize(
    "shape, layout",
    [
        ((7, 9, 3), "HWC"),
        ((3, 7, 9), "CHW"),
        ((7, 9), "HW"),
        ((2, 7, 9, 3), "FHWC"),
        ((4, 7, 9, 3), "DHWC"),
        ((7, 9, 600), "HWC"),  # more channels than OpenCV takes: NumPy
        ((5, 2, 7, 9), "FCHW"),
    ],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.int64, bool])
def test_every_path_equals_np_flip(shape: tuple, layout: str, dtype: type) -> None:
    x = (np.random.default_rng(1).random(shape) * 100).astype(dtype)
    for h, v, d in [(1, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 0, 1)]:
        out = run_operator(
            "flip", [[x]], layout=layout, args={"horizontal": h, "vertical": v, "depthwise": d}
        )[0][0].at(0)
        axes = tuple(
            layout.index(a) for a, on in (("W", h), ("H", v), ("D", d)) if on and a in layout
        )
        np.testing.assert_array_equal(out, np.flip(x, axes) if axes else x)
        assert out.dtype == x.dtype


def test_dense_batch_flips_like_np_flip() -> None:
    """A dense batch (one array): the batch kernel, cv2 in one call or sample by sample."""
    from augkit.tensors import TensorList

    rng = np.random.default_rng(2)
    for shape, layout in [((5, 7, 9, 3), "HWC"), ((5, 3, 7, 9), "CHW"), ((5, 7, 9), "HW")]:
        for dtype in (np.uint8, np.float64, np.int64):
            x = (rng.random(shape) * 100).astype(dtype)
            for hs, vs in [([1] * 5, [0] * 5), ([1, 0, 1, 1, 0], [0, 1, 1, 0, 0])]:
                out = augkit.eager.flip(
                    TensorList.from_array(x, layout),
                    horizontal=[np.array(h, np.int32) for h in hs],
                    vertical=[np.array(v, np.int32) for v in vs],
                )
                for i in range(5):
                    axes = tuple(layout.index(a) for a, on in (("W", hs[i]), ("H", vs[i])) if on)
                    want = np.flip(x[i], axes) if axes else x[i]
                    np.testing.assert_array_equal(np.asarray(out._samples[i]), want)
