"""fn.jpeg_compression_distortion against JPEG round trips on real photos: OpenCV's (DALI's CPU
path: equal bit for bit) and Pillow's (an independent encoder: close, and 4:2:0 like DALI's),
quality clamping and its effect, per-sample quality, sequences, grayscale, and errors."""

from __future__ import annotations

import io
from typing import Any

import cv2
import numpy as np
import pytest
from PIL import Image

import augkit.eager
from augkit.errors import OperatorError
from tests.operator_check import check_operator, run_operator


def cv2_round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    _, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def pillow_round_trip(image: np.ndarray, quality: int, subsampling: int = 2) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, "JPEG", quality=quality, subsampling=subsampling)
    return np.asarray(Image.open(buffer).convert(Image.fromarray(image).mode))


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255**2 / max(mse, 1e-12)))


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(p[:120, :150]) for p in photos[:4]]


@pytest.mark.parametrize("quality", [1, 10, 50, 90, 100])
def test_equals_opencvs_round_trip(small: list[np.ndarray], quality: int) -> None:
    check_operator(
        "jpeg_compression_distortion",
        [small],
        lambda image, **_: cv2_round_trip(image, quality),
        layout="HWC",
        args={"quality": quality},
        expected_layout="HWC",
    )


@pytest.mark.parametrize("quality", [20, 50, 90])
def test_close_to_pillows_420_round_trip(small: list[np.ndarray], quality: int) -> None:
    out = run_operator("jpeg_compression_distortion", [small], layout="HWC",
                       args={"quality": quality})[0][0]  # fmt: skip
    for i, image in enumerate(small):
        diff = np.abs(out.at(i).astype(int) - pillow_round_trip(image, quality).astype(int))
        assert diff.mean() < 1.0, diff.mean()


def test_chroma_is_subsampled_420() -> None:
    # One-pixel red/blue stripes: 4:2:0 averages their chroma, 4:4:4 keeps it.
    image = np.zeros((64, 64, 3), np.uint8)
    image[:, 0::2] = (255, 0, 0)
    image[:, 1::2] = (0, 0, 255)
    out = augkit.eager.jpeg_compression_distortion([image], quality=100)[0].astype(int)
    sub = np.abs(out - pillow_round_trip(image, 100, subsampling=2).astype(int)).mean()
    full = np.abs(out - pillow_round_trip(image, 100, subsampling=0).astype(int)).mean()
    assert sub < 3 < full, (sub, full)


def test_lower_quality_is_more_distorted(small: list[np.ndarray]) -> None:
    psnr = [
        np.mean([_psnr(o, i) for o, i in zip(
            augkit.eager.jpeg_compression_distortion(small, quality=q), small, strict=True)])
        for q in (5, 30, 60, 95)
    ]  # fmt: skip
    assert psnr == sorted(psnr) and psnr[0] + 8 < psnr[-1], psnr


def test_quality_is_clamped_and_per_sample(small: list[np.ndarray]) -> None:
    qualities = [np.int32(q) for q in (0, 500, 40, -7)]
    check_operator(
        "jpeg_compression_distortion",
        [small],
        lambda image, quality: cv2_round_trip(image, int(min(max(quality, 1), 100))),
        layout="HWC",
        arg_inputs={"quality": qualities},
    )


def test_default_quality_is_50(small: list[np.ndarray]) -> None:
    out = augkit.eager.jpeg_compression_distortion(small[:1])[0]
    np.testing.assert_array_equal(out, cv2_round_trip(small[0], 50))


def test_sequences_are_distorted_frame_by_frame(small: list[np.ndarray]) -> None:
    frames = np.stack([small[0], small[0][::-1].copy(), small[0][:, ::-1].copy()])
    out = run_operator("jpeg_compression_distortion", [[frames]], layout="FHWC",
                       args={"quality": 25})[0][0]  # fmt: skip
    assert out.layout() == "FHWC"
    for f in range(3):
        np.testing.assert_array_equal(out.at(0)[f], cv2_round_trip(frames[f], 25))


def test_grayscale_beyond_dali(small: list[np.ndarray]) -> None:
    gray = [np.ascontiguousarray(s[..., 1]) for s in small]
    out = run_operator("jpeg_compression_distortion", [gray], layout="HW", args={"quality": 30})
    for i, image in enumerate(gray):
        _, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 30])
        np.testing.assert_array_equal(out[0][0].at(i), cv2.imdecode(encoded, 0))
        diff = np.abs(out[0][0].at(i).astype(int) - pillow_round_trip(image, 30).astype(int))
        assert diff.mean() < 1.0


@pytest.mark.parametrize(
    ("sample", "layout", "words"),
    [
        (np.zeros((8, 8, 3), np.float32), "HWC", "uint8"),
        (np.zeros((8, 8, 4), np.uint8), "HWC", "4 channels"),
        (np.zeros((3, 8, 8), np.uint8), "CHW", "layout HWC"),
        (np.zeros((0, 8, 3), np.uint8), "HWC", "non-empty"),
    ],
)
def test_bad_inputs_are_refused(sample: np.ndarray, layout: str, words: str) -> None:
    with pytest.raises(OperatorError, match="JpegCompressionDistortion") as info:
        run_operator("jpeg_compression_distortion", [[sample]], layout=layout)
    assert words in str(info.value)


def test_input_not_modified_and_types_kept(small: list[np.ndarray]) -> None:
    before = [s.copy() for s in small]
    out: Any = augkit.eager.jpeg_compression_distortion(small, quality=10)
    for o, s, b in zip(out, small, before, strict=True):
        np.testing.assert_array_equal(s, b)
        assert o.dtype == np.uint8 and o.shape == s.shape
