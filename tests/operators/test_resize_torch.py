"""The torch back end of fn.resize (augkit/operators/geometric/resize_torch.py): when it is
used, its pixels against Pillow's BILINEAR on the real photos, zero-copy read-only input, and
the Pillow fallback when torch is absent."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augkit import types
from augkit.operators.geometric import resize_torch
from tests.operator_check import check_operator, run_operator


@pytest.fixture
def torch_calls(monkeypatch) -> list:
    """The torch back end forced on (skipped where it is not available); each call to its
    kernel is recorded in the returned list."""
    monkeypatch.setattr(resize_torch, "BACKEND", "torch")
    if resize_torch.torch_module() is None:
        pytest.skip("torch (with its AVX2 uint8 resize kernel) is not available here")
    calls: list = []
    kernel = resize_torch.resize

    def spy(image, out_hw):
        calls.append((image.shape, out_hw))
        return kernel(image, out_hw)

    monkeypatch.setattr(resize_torch, "resize", spy)
    return calls


def pillow_bilinear(image: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Pillow's BILINEAR, channel by channel (no premultiplied alpha)."""
    planes = [
        np.asarray(Image.fromarray(image[..., c]).resize(out_hw[::-1], Image.Resampling.BILINEAR))
        for c in range(image.shape[2])
    ]
    return np.stack(planes, axis=-1)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("out_hw", [(300, 300), (200, 300), (37, 611), (900, 1300)])
def test_kernel_is_pillow_bilinear_on_photos(torch_calls, photos, channels, out_hw):
    """Measured: a mean 0.02-0.13 levels per size over these photos, at most 2 levels."""
    diffs = []
    for photo in photos:
        image = np.ascontiguousarray(np.dstack([photo, photo[..., :1]])[..., :channels])
        out = resize_torch.resize(image, out_hw)
        assert out.shape == (*out_hw, channels) and out.dtype == np.uint8
        assert out.flags.c_contiguous
        diff = np.abs(out.astype(int) - pillow_bilinear(image, out_hw))
        assert diff.max() <= 2
        diffs.append(diff.mean())
    assert max(diffs) <= 0.25 and np.mean(diffs) <= 0.15


def test_read_only_input_is_shared_without_a_warning(torch_calls, photos):
    image = photos[0].copy()
    image.flags.writeable = False
    torch = resize_torch.torch_module()
    tensor = resize_torch._as_tensor(torch, image)  # pytest turns a warning into an error
    assert tensor.data_ptr() == image.ctypes.data
    out = resize_torch.resize(image, (100, 100))
    assert np.abs(out.astype(int) - pillow_bilinear(photos[0], (100, 100))).max() <= 2


@pytest.mark.parametrize(
    ("args", "dtype", "channels", "used"),
    [
        ({"resize_x": 300, "resize_y": 300}, np.uint8, 3, True),
        ({"size": (1000, 1000)}, np.uint8, 3, True),  # enlarging: Linear is BILINEAR too
        ({"resize_x": -200, "resize_y": 150}, np.uint8, 3, True),  # flipped output
        ({"resize_x": 333, "subpixel_scale": False}, np.uint8, 3, True),
        ({"size": (120, 160)}, np.uint8, 1, True),
        ({"size": (120, 160)}, np.uint8, 2, True),
        ({"size": (120, 160)}, np.uint8, 4, True),
        ({"size": (120, 160)}, np.uint8, 5, False),  # torch's AVX kernel: 4 channels at most
        ({"size": (120, 160), "dtype": types.FLOAT}, np.uint8, 3, False),
        ({"size": (120, 160)}, np.float32, 3, False),
        ({"size": (120, 160)}, np.int16, 3, False),
        ({"size": (120, 160), "interp_type": types.INTERP_NN}, np.uint8, 3, False),
        ({"size": (120, 160), "interp_type": types.INTERP_CUBIC}, np.uint8, 3, False),
        ({"size": (120, 160), "antialias": False}, np.uint8, 3, False),
        ({"size": (50, 100), "roi_start": (10, 20), "roi_end": (110, 220)}, np.uint8, 3, False),
    ],
)
def test_torch_only_where_it_computes_pillows_bilinear(
    torch_calls, photos, args, dtype, channels, used
):
    image = np.dstack([photos[0]] * 2)[..., :channels].astype(dtype)
    run_operator("resize", [[image]], layout="HWC", args=args)
    assert bool(torch_calls) == used, torch_calls


def test_subpixel_window_goes_to_pillow(torch_calls, photos):
    """DALI moves the window by a fraction of a pixel when the size is rounded; torch cannot."""
    exact = np.zeros((400, 600, 3), np.uint8)  # 300 / 600 * 400 = 200 exactly
    run_operator("resize", [[exact]], layout="HWC", args={"resize_x": 300})
    assert len(torch_calls) == 1
    rounded = np.zeros((401, 600, 3), np.uint8)  # 200.5 rounds to 201
    run_operator("resize", [[rounded]], layout="HWC", args={"resize_x": 300})
    assert len(torch_calls) == 1


def test_chw_input_is_resized_by_torch(torch_calls, photos):
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:2]]
    check_operator(
        "resize",
        [chw],
        lambda image, **_: pillow_bilinear(image.transpose(1, 2, 0), (90, 120)).transpose(2, 0, 1),
        layout="CHW",
        args={"size": (90, 120)},
        atol=2,
        mean_atol=0.25,
    )
    assert torch_calls


@pytest.mark.parametrize("how", ["torch missing", "BACKEND=pillow"])
def test_without_torch_pillow_resizes_exactly(monkeypatch, photos, how):
    """The core needs NumPy and Pillow only: with torch absent (or turned off), fn.resize is
    Pillow's BILINEAR exactly."""
    if how == "torch missing":
        monkeypatch.setattr(resize_torch, "_load", lambda: None)
        monkeypatch.setattr(resize_torch, "_loaded", False)
        # and what an earlier load left: else the rest of the session resizes with Pillow
        monkeypatch.setattr(resize_torch, "_torch", None)
        monkeypatch.setattr(resize_torch, "BACKEND", "auto")
    else:
        monkeypatch.setattr(resize_torch, "BACKEND", "pillow")
    assert resize_torch.backend() == "pillow"
    check_operator(
        "resize",
        [photos],
        lambda image, **_: pillow_bilinear(image, (300, 300)),
        layout="HWC",
        args={"resize_x": 300, "resize_y": 300},
    )
