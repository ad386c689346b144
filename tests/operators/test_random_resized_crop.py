"""fn.random_resized_crop: each output is the resize of the window its sample drew (and, inside,
Pillow's resize of that window cut out), DALI's window generator's distribution (areas, aspect
ratios, positions, the fall-back), determinism for a seed, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augkit import fn, types
from augkit.errors import ArgumentError
from augkit.operators.geometric.crop_window import random_crop_window
from augkit.operators.geometric.random_resized_crop import resize_window, resized_crop_window
from augkit.random import sample_streams, stream_key
from tests.operator_check import check_operator, run_operator

SEED = 4321


def windows_drawn(batch, args, iteration=0, layout="HWC"):
    streams = sample_streams(stream_key(SEED), iteration, len(batch))
    return [
        resized_crop_window(image.shape, layout, streams.generator(i), args)
        for i, image in enumerate(batch)
    ]


def test_output_is_the_resize_of_the_window_it_drew(photos):
    args = {"size": (64, 80), "seed": SEED}
    out = run_operator("random_resized_crop", [photos], layout="HWC", args=args)[0][0]
    for i, (image, window) in enumerate(zip(photos, windows_drawn(photos, args), strict=True)):
        got = out.at(i)
        assert got.shape == (64, 80, 3)
        np.testing.assert_array_equal(got, resize_window(image, window, "HWC", args))
        # against an independent reference: Pillow's BILINEAR resize of the window cut out
        # (torch's port of it, where installed, is within 2 levels, a mean well under 0.25)
        y, x, h, w = window
        cut = Image.fromarray(image[y : y + h, x : x + w])
        ref = np.asarray(cut.resize((80, 64), Image.Resampling.BILINEAR))
        diff = np.abs(got.astype(int) - ref)
        assert diff.max() <= 2 and diff.mean() < 0.25


def test_nearest_output_is_a_gather_of_the_window(photos):
    args = {"size": (50, 70), "interp_type": types.INTERP_NN, "seed": SEED}
    out = run_operator("random_resized_crop", [photos], layout="HWC", args=args)[0][0]
    for i, (image, (y, x, h, w)) in enumerate(
        zip(photos, windows_drawn(photos, args), strict=True)
    ):
        rows = y + np.floor((np.arange(50) + 0.5) * h / 50).astype(int)
        cols = x + np.floor((np.arange(70) + 0.5) * w / 70).astype(int)
        same = out.at(i) == image[rows][:, cols]
        assert same.mean() > 0.95  # ties may fall either way in float32


def test_chw_and_float_output(photos):
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)) for p in photos[:2]]
    args = {"size": 32, "dtype": types.FLOAT, "seed": SEED}
    out = run_operator("random_resized_crop", [chw], layout="CHW", args=args)[0][0]
    assert out.layout() == "CHW"
    hwc = run_operator(
        "random_resized_crop",
        [[c.transpose(1, 2, 0).copy() for c in chw]],
        layout="HWC",
        args=args,
    )[0][0]
    for i in range(2):
        assert out.at(i).shape == (3, 32, 32) and out.at(i).dtype == np.float32
        np.testing.assert_allclose(out.at(i), hwc.at(i).transpose(2, 0, 1), atol=1e-3)


def test_operator_contract(photos):
    check_operator("random_resized_crop", [photos], None, layout="HWC", args={"size": (40, 40)})


def test_windows_follow_dalis_distribution():
    rng = np.random.default_rng(7)
    h_img, w_img = 300, 300
    wins = np.array([random_crop_window(h_img, w_img, rng) for _ in range(4000)])
    y, x, h, w = wins.T
    area = h * w / (h_img * w_img)
    ratio = w / h
    assert (y >= 0).all() and (x >= 0).all() and (y + h <= h_img).all() and (x + w <= w_img).all()
    assert area.min() >= 0.075 and area.max() <= 1.0
    assert ratio.min() >= 0.75 - 1e-6 and ratio.max() <= 4 / 3 + 1e-3
    # log-uniform aspect ratios: symmetric around 1 in log space
    assert abs(np.mean(np.log(ratio))) < 0.02
    # area ~ U(0.08, 1) among accepted windows (large areas are refused more often: the mean
    # is below 0.54 but well above the lower end)
    assert 0.35 < area.mean() < 0.54
    # anchors uniform over the free room: the relative position has mean 1/2 and spread
    free = (w_img - w) > 0
    rel = x[free] / (w_img - w[free])
    assert abs(rel.mean() - 0.5) < 0.03 and 0.25 < rel.std() < 0.32


def test_fixed_area_and_ratio():
    rng = np.random.default_rng(1)
    for _ in range(50):
        _y, _x, h, w = random_crop_window(200, 200, rng, aspect_ratio=(1.0, 1.0), area=(0.25, 0.25))
        assert (h, w) == (100, 100)


def test_fall_back_window():
    rng = np.random.default_rng(2)
    # every attempt fails (area > 1): whole image when its ratio is in range
    assert random_crop_window(100, 120, rng, area=(1.5, 2.0)) == (0, 0, 100, 120)
    # too wide for the ratio range: (H, int(H * max_ratio)) at a random x
    y, x, h, w = random_crop_window(100, 400, rng, area=(1.5, 2.0))
    assert (y, h, w) == (0, 100, 133) and 0 <= x <= 400 - 133
    # no attempts at all: the fall-back, shrunk to the largest area fraction
    y, x, h, w = random_crop_window(100, 100, rng, area=(0.25, 0.25), num_attempts=0)
    assert (h, w) == (50, 50)
    # the early "too tall" case
    assert random_crop_window(1000, 10, rng, area=(0.5, 1.0))[2:] == (13, 10)


def test_same_seed_same_windows_and_samples_differ(photos):
    batch = [photos[0]] * 4
    args = {"size": (30, 30), "seed": SEED}
    one = run_operator("random_resized_crop", [batch], layout="HWC", args=args, iterations=2)
    two = run_operator("random_resized_crop", [batch], layout="HWC", args=args, iterations=2)
    for it in range(2):
        for i in range(4):
            np.testing.assert_array_equal(one[it][0].at(i), two[it][0].at(i))
    first = [one[0][0].at(i) for i in range(4)]
    assert any(not np.array_equal(first[0], other) for other in first[1:])
    assert not np.array_equal(one[0][0].at(0), one[1][0].at(0))  # iterations differ
    assert len(set(windows_drawn(batch, args))) > 1


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"size": (10, 10), "random_area": (0.8, 0.2)}, "empty range"),
        ({"size": (10, 10), "random_aspect_ratio": (0.0, 1.0)}, "aspect ratios must be > 0"),
        ({"size": (10, 0)}, "size"),
        ({"size": (1, 2, 3)}, "size"),
        ({"size": 10, "num_attempts": 1.5}, "num_attempts"),
    ],
)
def test_bad_arguments(args, match):
    with pytest.raises(ArgumentError, match=match):
        fn.random_resized_crop(np.zeros((8, 8, 3), np.uint8), **args)


def test_size_is_required():
    with pytest.raises(ArgumentError, match="size"):
        fn.random_resized_crop(np.zeros((8, 8, 3), np.uint8))
