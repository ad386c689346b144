"""fn.equalize and fn.clahe against OpenCV's equalizeHist and CLAHE (and a NumPy histogram
equalization) on real photos: per channel, per frame, CHW and HW layouts, constant images,
CLAHE on the luminance or per channel, the clip limit, tile counts, and bad arguments and
inputs."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

import augkit.eager
from augkit.errors import ArgumentError, OperatorError
from augkit.tensors import TensorList
from tests.operator_check import check_operator


def equalize_numpy(plane: np.ndarray) -> np.ndarray:
    """Histogram equalization from the cumulative histogram (OpenCV's formula, in NumPy)."""
    hist = np.bincount(plane.ravel(), minlength=256)
    first = int(np.flatnonzero(hist)[0])
    total = plane.size
    if hist[first] == total:
        return plane.copy()
    cdf = np.cumsum(hist)
    scale = 255.0 / (total - hist[first])
    lut = np.clip(np.rint((cdf - hist[first]) * np.float32(scale)), 0, 255).astype(np.uint8)
    lut[first] = 0
    return lut[plane]


def per_channel(x: np.ndarray, f) -> np.ndarray:
    return np.stack([f(np.ascontiguousarray(x[..., c])) for c in range(x.shape[-1])], axis=-1)


def test_equalize_is_per_channel_equalize_hist(photos: list[np.ndarray]) -> None:
    check_operator(
        "equalize",
        [[p[::2, ::2] for p in photos[:3]]],
        lambda x, **_: per_channel(x, cv2.equalizeHist),
        layout="HWC",
        expected_layout="HWC",
    )


def test_equalize_matches_a_numpy_histogram_equalization(photos: list[np.ndarray]) -> None:
    photo = photos[1]
    out = augkit.eager.equalize(photo)
    want = per_channel(photo, equalize_numpy)
    diff = np.abs(out.astype(int) - want)
    assert diff.max() <= 1 and diff.mean() < 0.01
    # Equalized: each channel's levels spread over the whole range, roughly uniformly.
    for c in range(3):
        assert out[..., c].min() == 0 and out[..., c].max() == 255
        assert abs(float(out[..., c].mean()) - 127.5) < 8


def test_equalize_layouts_and_frames(photos: list[np.ndarray]) -> None:
    photo = photos[0][:60, :80]
    hwc = augkit.eager.equalize(photo)
    chw = augkit.eager.equalize(TensorList([photo.transpose(2, 0, 1).copy()], "CHW"))
    np.testing.assert_array_equal(np.asarray(chw._samples[0]).transpose(1, 2, 0), hwc)
    hw = augkit.eager.equalize(np.ascontiguousarray(photo[..., 0]))
    np.testing.assert_array_equal(hw, hwc[..., 0])
    frames = np.stack([photo, photos[1][:60, :80]])
    seq = augkit.eager.equalize(TensorList([frames], "FHWC"))
    seq = np.asarray(seq._samples[0])
    for k in range(2):
        np.testing.assert_array_equal(seq[k], augkit.eager.equalize(frames[k]))


def test_equalize_leaves_a_constant_image() -> None:
    image = np.full((5, 6, 3), 7, np.uint8)
    np.testing.assert_array_equal(augkit.eager.equalize(image), image)


@pytest.mark.parametrize(
    "args",
    [
        {"tiles_x": 8, "tiles_y": 8, "clip_limit": 2.0},
        {"tiles_x": 4, "tiles_y": 3, "clip_limit": 3.0, "luma_only": False},
        {"tiles_x": 5, "tiles_y": 2, "clip_limit": 0.0},
    ],
)
def test_clahe_is_opencvs(photos: list[np.ndarray], args: dict) -> None:
    def reference(x: np.ndarray, tiles_x, tiles_y, clip_limit, luma_only=True) -> np.ndarray:
        clahe = cv2.createCLAHE(clipLimit=clip_limit, tileGridSize=(tiles_x, tiles_y))
        if not luma_only:
            return per_channel(x, clahe.apply)
        lab = cv2.cvtColor(x, cv2.COLOR_RGB2LAB)
        lab[..., 0] = clahe.apply(np.ascontiguousarray(lab[..., 0]))
        return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)

    check_operator(
        "clahe",
        [[p[::2, ::2] for p in photos[:3]]],
        reference,
        layout="HWC",
        args=args,
    )


def test_clahe_gray_and_its_effect(photos: list[np.ndarray]) -> None:
    gray = cv2.cvtColor(photos[2], cv2.COLOR_RGB2GRAY)[..., None]
    out = augkit.eager.clahe(gray, tiles_x=6, tiles_y=4, clip_limit=2.5)
    want = cv2.createCLAHE(clipLimit=2.5, tileGridSize=(6, 4)).apply(gray[..., 0])
    np.testing.assert_array_equal(out[..., 0], want)
    # tiles_x counts tiles along the width: swapping them changes the result.
    swapped = augkit.eager.clahe(gray, tiles_x=4, tiles_y=6, clip_limit=2.5)
    assert not np.array_equal(out, swapped)
    # A higher clip limit raises the local contrast more.
    low = augkit.eager.clahe(gray, tiles_x=6, tiles_y=4, clip_limit=1.0).astype(np.float64)
    high = augkit.eager.clahe(gray, tiles_x=6, tiles_y=4, clip_limit=4.0).astype(np.float64)
    assert high.std() > low.std()
    # A limit beyond every bin never clips: the same as no clipping at all.
    np.testing.assert_array_equal(
        augkit.eager.clahe(gray, tiles_x=6, tiles_y=4, clip_limit=1e30),
        augkit.eager.clahe(gray, tiles_x=6, tiles_y=4, clip_limit=300.0),
    )


def test_bad_arguments_and_inputs() -> None:
    rgb = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ArgumentError, match=r"Clahe.*tiles_y"):
        augkit.eager.clahe(rgb, tiles_x=2, clip_limit=2.0)
    with pytest.raises(ArgumentError, match="Clahe: argument 'tiles_x'"):
        augkit.eager.clahe(rgb, tiles_x=0, tiles_y=2, clip_limit=2.0)
    with pytest.raises(ArgumentError, match="Clahe: argument 'bins'"):
        augkit.eager.clahe(rgb, tiles_x=2, tiles_y=2, clip_limit=2.0, bins=100)
    with pytest.raises(OperatorError, match="1 or 3 channels"):
        augkit.eager.clahe(np.zeros((8, 8, 4), np.uint8), tiles_x=2, tiles_y=2, clip_limit=2.0)
    with pytest.raises(OperatorError, match="takes uint8"):
        augkit.eager.clahe(rgb.astype(np.float32), tiles_x=2, tiles_y=2, clip_limit=2.0)
    with pytest.raises(OperatorError, match="takes uint8"):
        augkit.eager.equalize(rgb.astype(np.uint16))
    with pytest.raises(OperatorError, match="equalize needs images with layout"):
        augkit.eager.equalize(np.zeros((2, 3, 4, 5, 6), np.uint8))


def _pipeline(op: str, batch, threads: int, layout: str, **args) -> list[np.ndarray]:
    """``op`` in a pipeline whose source gives ``batch``: an array (a dense batch: the batch
    kernel) or a list (the per-sample kernel)."""
    from augkit import fn
    from augkit.pipeline import Pipeline

    pipe = Pipeline(batch_size=len(batch), num_threads=threads, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: batch, batch=True, layout=layout)
        pipe.set_outputs(getattr(fn, op)(x, **args))
    pipe.build()
    (out,) = pipe.run()
    return [np.asarray(out[i]) for i in range(len(batch))]


@pytest.mark.parametrize(
    ("op", "layout", "channels", "args"),
    [
        ("equalize", "HWC", 3, {}),
        ("equalize", "HWC", 1, {}),
        ("equalize", "CHW", 3, {}),
        ("clahe", "HWC", 3, {"tiles_x": 8, "tiles_y": 8, "clip_limit": 2.0}),
        ("clahe", "HWC", 3, {"tiles_x": 3, "tiles_y": 5, "clip_limit": 4.0, "luma_only": False}),
        ("clahe", "HWC", 1, {"tiles_x": 4, "tiles_y": 4, "clip_limit": 0.0}),
    ],
)
def test_batch_kernel_equals_per_sample_kernel(
    photos: list[np.ndarray],
    op: str,
    layout: str,
    channels: int,
    args: dict,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dense batch (the batch kernel, two threads, each with its scratch planes) gives what
    the per-sample kernel gives, and both are OpenCV's."""
    from augkit.operators.color.equalize import Clahe, Equalize

    impl = Equalize if op == "equalize" else Clahe
    taken: list[bool] = []
    batch_kernel = impl.cpu_batch

    def spy(self, ctx, inputs, arg_inputs):
        out = batch_kernel(self, ctx, inputs, arg_inputs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(impl, "cpu_batch", spy)
    side = min(min(p.shape[:2]) for p in photos)
    batch = np.stack([p[:side, :side, :channels] for p in photos] * 2)
    if layout == "CHW":
        batch = np.ascontiguousarray(batch.transpose(0, 3, 1, 2))
    single = _pipeline(op, list(batch), 1, layout, **args)
    assert not any(taken)
    taken.clear()
    dense = _pipeline(op, batch, 2, layout, **args)
    assert taken and all(taken)
    for a, b in zip(dense, single, strict=True):
        np.testing.assert_array_equal(a, b)
    image = batch[0] if layout == "HWC" else batch[0].transpose(1, 2, 0)
    if op == "equalize":
        expected = np.stack([cv2.equalizeHist(np.ascontiguousarray(p)) for p in image.T], -1)
        expected = expected.transpose(1, 0, 2)
    elif channels == 1:
        clahe = cv2.createCLAHE(clipLimit=args["clip_limit"], tileGridSize=(4, 4))
        expected = clahe.apply(np.ascontiguousarray(image[:, :, 0]))[:, :, None]
    else:
        return
    first = dense[0] if layout == "HWC" else dense[0].transpose(1, 2, 0)
    np.testing.assert_array_equal(first, expected)
