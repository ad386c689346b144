"""fn.crop_mirror_normalize against slicing + np.flip + the normalization formula on real photos:
the tutorial's case, ImageNet mean/std, per-sample mirror/mean/std, output layouts, integer
outputs, channel padding, out-of-bounds fill, and GPU = CPU."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from augkit import fn, ops, types
from augkit.errors import ArgumentError, GraphError, OperatorError
from augkit.pipeline import Pipeline
from tests.operator_check import check_operator, gpu_matches_cpu, run_operator

IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
IMAGENET_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


def anchor(extent: int, size: int, pos: float) -> int:
    exact = float(np.float32(pos)) * (extent - size)
    return int(math.copysign(math.floor(abs(exact) + 0.5), exact))


def reference(
    image: np.ndarray,
    *,
    crop: tuple[int, int] | None = None,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
    mirror: Any = 0,
    mean: Any = 0.0,
    std: Any = 1.0,
    scale: float = 1.0,
    shift: float = 0.0,
    output_layout: str = "CHW",
    **_: Any,
) -> np.ndarray:
    """HWC image -> window -> mirror -> scale * (x - mean) / std + shift (float64) -> layout."""
    if crop is not None:
        (h, w), (height, width) = crop, image.shape[:2]
        y, x = anchor(height, h, crop_pos_y), anchor(width, w, crop_pos_x)
        image = image[y : y + h, x : x + w]
    if mirror:
        image = image[:, ::-1]
    out = scale * (image - np.asarray(mean, np.float64)) / np.asarray(std, np.float64) + shift
    return out.transpose(2, 0, 1) if output_layout == "CHW" else out


def as_float32(**kwargs: Any) -> Any:
    return lambda image, **args: reference(image, **{**kwargs, **args}).astype(np.float32)


def test_tutorial_case_gives_float_chw_in_zero_one(photos: list[np.ndarray]) -> None:
    squares = [np.ascontiguousarray(p[:300, :300]) for p in photos]
    outputs = check_operator(
        "crop_mirror_normalize",
        [squares],
        as_float32(),
        layout="HWC",
        args={"std": 255.0, "mean": 0.0},
        atol=1e-6,
        expected_layout="CHW",
    )
    batch = outputs[0]
    assert batch.dtype == types.FLOAT
    for i in range(len(batch)):
        sample = batch.at(i)
        assert sample.shape == (3, 300, 300)
        assert sample.min() >= 0.0 and sample.max() <= 1.0
        assert sample.max() == pytest.approx(squares[i].max() / 255.0)


def test_tutorial_ops_class_in_a_pipeline(photos: list[np.ndarray]) -> None:
    norm = ops.CropMirrorNormalize(std=255.0, mean=0.0)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        images = fn.external_source(source=lambda: photos[:2], layout="HWC")
        pipe.set_outputs(norm(images))
    (out,) = pipe.run()
    assert out.layout() == "CHW" and out.dtype == types.FLOAT
    np.testing.assert_allclose(out.at(1), photos[1].transpose(2, 0, 1) / 255.0, atol=1e-6)


@pytest.mark.parametrize("output_layout", ["CHW", "HWC"])
def test_imagenet_crop_with_per_sample_mirror(photos: list[np.ndarray], output_layout: str) -> None:
    mirror = [np.int32(i % 2) for i in range(len(photos))]
    check_operator(
        "crop_mirror_normalize",
        [photos],
        as_float32(),
        layout="HWC",
        args={
            "crop": (224, 224),
            "crop_pos_x": 0.3,
            "crop_pos_y": 0.7,
            "mean": IMAGENET_MEAN,
            "std": IMAGENET_STD,
            "output_layout": output_layout,
        },
        arg_inputs={"mirror": mirror},
        atol=2e-5,
        expected_layout=output_layout,
    )


def test_per_sample_mean_std_and_position(photos: list[np.ndarray]) -> None:
    n = len(photos)
    means = [np.array([100 + i, 110 - i, 120], np.float32) for i in range(n)]
    stds = [np.array([50 + i, 60, 70 - i], np.float32) for i in range(n)]
    xs = [np.float32(i / max(n - 1, 1)) for i in range(n)]
    check_operator(
        "crop_mirror_normalize",
        [photos],
        as_float32(crop=(128, 96)),
        layout="HWC",
        args={"crop": (128, 96), "scale": 2.0, "shift": -0.5},
        arg_inputs={"mean": means, "std": stds, "crop_pos_x": xs},
        atol=2e-5,
    )


def test_int8_output_rounds_halves_away_from_zero_and_saturates(
    photos: list[np.ndarray],
) -> None:
    # (x - 128) / 2 lands on a half for every odd pixel; 1.5 * that leaves int8 range.
    def int8_reference(image: np.ndarray, **args: Any) -> np.ndarray:
        values = reference(image, **args)
        rounded = np.sign(values) * np.floor(np.abs(values) + 0.5)
        return np.clip(rounded, -128, 127).astype(np.int8)

    check_operator(
        "crop_mirror_normalize",
        [photos],
        int8_reference,
        layout="HWC",
        args={"mean": 128.0, "std": 2.0, "dtype": types.INT8, "output_layout": "HWC"},
    )
    check_operator(
        "crop_mirror_normalize",
        [photos],
        int8_reference,
        layout="HWC",
        args={"mean": 128.0, "std": 2.0, "scale": 1.5, "dtype": types.INT8},
        iterations=1,
    )


def test_no_normalization_only_converts(photos: list[np.ndarray]) -> None:
    check_operator(
        "crop_mirror_normalize",
        [photos],
        lambda image, **_: image[:, ::-1].transpose(2, 0, 1),
        layout="HWC",
        args={"mirror": 1, "dtype": types.UINT8},
    )


def test_pad_output_adds_a_zero_channel(photos: list[np.ndarray]) -> None:
    def padded(image: np.ndarray, **args: Any) -> np.ndarray:
        out = reference(image, **args, output_layout="HWC").astype(np.float32)
        out = np.concatenate([out, np.zeros((*out.shape[:2], 1), np.float32)], axis=2)
        return out.transpose(2, 0, 1)

    check_operator(
        "crop_mirror_normalize",
        [photos],
        padded,
        layout="HWC",
        args={"crop": (64, 64), "mean": IMAGENET_MEAN, "std": IMAGENET_STD, "pad_output": True},
        atol=2e-5,
    )


def test_out_of_bounds_pad_fills_raw_values_and_mirrors_them(photos: list[np.ndarray]) -> None:
    small = [np.ascontiguousarray(p[:40, :50]) for p in photos]

    def reference_pad(image: np.ndarray, **_: Any) -> np.ndarray:
        canvas = np.empty((44, 60, 3), np.float32)
        canvas[...] = np.float32([7.0, 8.0, 9.0])
        canvas[2:42, 5:55] = (image - 100.0) / 50.0
        return canvas[:, ::-1].transpose(2, 0, 1)

    check_operator(
        "crop_mirror_normalize",
        [small],
        reference_pad,
        layout="HWC",
        args={
            "crop": (44, 60),
            "mean": 100.0,
            "std": 50.0,
            "mirror": 1,
            "out_of_bounds_policy": "pad",
            "fill_values": (7.0, 8.0, 9.0),
        },
        atol=1e-6,
    )


def test_chw_input_and_unlabelled_input(photos: list[np.ndarray]) -> None:
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos]
    check_operator(
        "crop_mirror_normalize",
        [chw],
        lambda image, **args: as_float32(crop=(50, 70), output_layout="HWC")(
            image.transpose(1, 2, 0), **args
        ),
        layout="CHW",
        args={"crop": (50, 70), "output_layout": "HWC"},
        expected_layout="HWC",
        iterations=1,
    )
    check_operator(
        "crop_mirror_normalize",
        [photos],
        as_float32(crop=(20, 30)),
        args={"crop": (20, 30)},
        expected_layout="CHW",
        iterations=1,
    )


def test_out_of_bounds_error_names_the_sample(photos: list[np.ndarray]) -> None:
    by_height = sorted(photos, key=lambda p: p.shape[0])
    with pytest.raises(OperatorError, match=r"sample #1.*does not fit in the sample of shape"):
        run_operator(
            "crop_mirror_normalize",
            [[by_height[-1], by_height[0]]],
            layout="HWC",
            args={"crop": (by_height[0].shape[0] + 1, 8)},
        )


@pytest.mark.parametrize(
    ("layout", "args", "match"),
    [
        ("HWC", {"output_layout": "CWH2"}, "not a permutation"),
        ("HWC", {"output_layout": "HCD"}, "not a permutation"),
        ("HWC", {"mean": (1.0, 2.0)}, "has 3 channels"),
        ("", {}, "explicit channel dimension"),
    ],
)
def test_layout_and_channel_errors(
    photos: list[np.ndarray], layout: str, args: dict[str, Any], match: str
) -> None:
    sample = photos[0] if len(layout) == 3 else np.ascontiguousarray(photos[0][..., 0])
    with pytest.raises(OperatorError, match=match):
        run_operator("crop_mirror_normalize", [[sample]], layout=layout, args=args)


def test_a_declared_layout_without_channels_is_refused_at_build(photos: list[np.ndarray]) -> None:
    sample = np.ascontiguousarray(photos[0][..., 0])
    with pytest.raises(GraphError, match=r"2-D samples with layout 'HW'.*a channel axis"):
        run_operator("crop_mirror_normalize", [[sample]], layout="HW")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"mean": (1.0, 2.0), "std": (1.0, 2.0, 3.0)}, "same length"),
        ({"std": 0.0}, "nonzero"),
        ({"scale": 0.0}, "nonzero"),
    ],
)
def test_argument_errors(args: dict[str, Any], match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        run_operator("crop_mirror_normalize", [[np.zeros((4, 4, 3), np.uint8)]], args=args)


@pytest.mark.gpu
def test_gpu_matches_cpu(photos: list[np.ndarray]) -> None:
    gpu_matches_cpu(
        "crop_mirror_normalize",
        photos,
        layout="HWC",
        args={"crop": (224, 224), "mean": IMAGENET_MEAN, "std": IMAGENET_STD, "pad_output": True},
        arg_inputs={"mirror": [np.int32(i % 2) for i in range(len(photos))]},
    )
    gpu_matches_cpu(
        "crop_mirror_normalize",
        photos,
        layout="HWC",
        args={"mean": 128.0, "std": 2.0, "dtype": types.INT8, "output_layout": "HWC"},
    )


# --- the uint8 HWC fast path (lookup tables, cv2) against the general path ---------------------


def _general_path(image: np.ndarray, **args: Any) -> np.ndarray:
    """The same operator on the same values as int16: the general (element-wise) path."""
    return run_operator(
        "crop_mirror_normalize", [[image.astype(np.int16)]], layout="HWC", args=args
    )[0][0].at(0)


@pytest.mark.parametrize(
    "args",
    [
        {"mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)},
        {"crop": (100, 120), "crop_pos_x": 0.2, "mirror": 1, "mean": 100.0, "std": 50.0},
        {"output_layout": "HWC", "mean": [120.0, 110.0, 100.0], "std": [60.0, 55.0, 50.0]},
        {"mean": 127.5, "std": 2.0, "dtype": types.UINT8, "shift": 3.0, "scale": 0.5},
        {"mean": 100.0, "std": 1.0, "dtype": types.INT8, "mirror": 1},
        {"dtype": types.FLOAT16, "mean": 10.0},  # no cv2.LUT for float16: general path
        {"mean": 0.0, "std": 1.0, "dtype": types.INT32, "output_layout": "HWC"},
    ],
)
def test_uint8_fast_path_equals_the_general_path(photos: list[np.ndarray], args: dict) -> None:
    image = photos[0]
    fast = run_operator("crop_mirror_normalize", [[image]], layout="HWC", args=args)[0][0].at(0)
    np.testing.assert_array_equal(fast, _general_path(image, **args))
    assert fast.dtype == _general_path(image, **args).dtype


def test_gray_uint8_fast_path(photos: list[np.ndarray]) -> None:
    gray = np.ascontiguousarray(photos[1][..., :1])
    args = {"mean": 100.0, "std": 30.0, "crop": (64, 64), "mirror": 1}
    fast = run_operator("crop_mirror_normalize", [[gray]], layout="HWC", args=args)[0][0].at(0)
    np.testing.assert_array_equal(fast, _general_path(gray, **args))


@pytest.mark.parametrize(
    "args",
    [
        {"crop": (40, 56), "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)},
        {"crop": (40, 56), "output_layout": "HWC", "mean": 100.0, "std": 20.0},
        {"mean": 120.0, "std": 2.0, "dtype": types.UINT8, "shift": 7.0},
        {"crop": (80, 56), "out_of_bounds_policy": "pad", "mean": 10.0},  # leaves the image
        {"crop": (40, 56), "pad_output": True},  # not in the fast path
    ],
)
def test_dense_batch_kernel_equals_the_per_sample_kernel(args: dict) -> None:
    """A dense uint8 batch takes the batch kernel (dense output) where it applies; either way
    the numbers are the per-sample kernel's, per-sample mirror and crop positions included."""
    images = np.random.default_rng(4).integers(0, 256, (5, 60, 70, 3), dtype=np.uint8)
    mirrors = [np.array(m, np.int32) for m in (1, 0, 1, 1, 0)]
    positions = [np.array(p, np.float32) for p in (0.0, 0.3, 0.5, 1.0, 0.7)]

    def run(batch: Any) -> Any:
        pipe = Pipeline(batch_size=5, num_threads=2, device_id=None, seed=3)
        with pipe:
            x = fn.external_source(source=lambda: batch, batch=True, layout="HWC")
            mirror = fn.external_source(source=lambda: mirrors, batch=True)
            pos = fn.external_source(source=lambda: positions, batch=True)
            pipe.set_outputs(fn.crop_mirror_normalize(x, mirror=mirror, crop_pos_x=pos, **args))
        return pipe.run()[0]

    dense, separate = run(images), run(list(images))
    fast = "out_of_bounds_policy" not in args and "pad_output" not in args
    assert (dense._dense is not None) == fast
    assert separate._dense is None
    assert dense.layout() == separate.layout()
    for i in range(len(images)):
        np.testing.assert_array_equal(dense.at(i), separate.at(i), err_msg=f"sample {i}")
        assert dense.at(i).dtype == separate.at(i).dtype
