"""fn.experimental.median_blur / dilate / erode (GPU only in DALI, CPU in augkit) against
scipy.ndimage (median_filter, maximum_filter, minimum_filter) and a brute-force NumPy reference
on real photos: CV-CUDA's (width, height) order, anchors, border modes, iterations, layouts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from augkit.errors import AugkitError
from tests.operator_check import check_operator, run_operator

PAD = {
    "constant": None,
    "replicate": "edge",
    "reflect": "symmetric",
    "reflect_101": "reflect",
    "wrap": "wrap",
}


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for p in photos[:3]:
        step = max(1, max(p.shape[:2]) // 80)
        out.append(np.ascontiguousarray(p[::step, ::step]))
    return out


def run(name, images, layout="HWC", **args):
    outs = run_operator(f"experimental.{name}", [images], layout=layout, args=args)[0][0]
    return [np.asarray(s) for s in outs]


def brute(image, mask, anchor, border, reduce, neutral):
    """out[y, x] = reduce of image[y - ay + i, x - ax + j] over the (width, height) mask."""
    (mw, mh), (ax, ay) = mask, anchor
    widths = ((ay, mh - ay - 1), (ax, mw - ax - 1), (0, 0))
    if border == "constant":
        padded = np.pad(image, widths, mode="constant", constant_values=neutral)
    else:
        padded = np.pad(image, widths, mode=PAD[border])
    h, w = image.shape[:2]
    taps = [padded[i : i + h, j : j + w] for i in range(mh) for j in range(mw)]
    return reduce(np.stack(taps), axis=0)


@pytest.mark.parametrize("window", [(3, 3), (5, 5), (7, 3), (1, 5), (9, 9)])
def test_median_matches_scipy(small: list[np.ndarray], window) -> None:
    width, height = window
    check_operator(
        "experimental.median_blur",
        [small],
        lambda image, **_: ndimage.median_filter(image, size=(height, width, 1), mode="nearest"),
        layout="HWC",
        args={"window_size": window},
        expected_layout="HWC",
    )


def test_median_float_and_gray(small: list[np.ndarray]) -> None:
    gray = [s[..., :1].astype(np.float32) / 255 for s in small]
    for got, image in zip(run("median_blur", gray, window_size=7), gray, strict=True):
        np.testing.assert_array_equal(got, ndimage.median_filter(image, (7, 7, 1), mode="nearest"))
    plain = [s[..., 0].copy() for s in small]  # HW, no layout
    for got, image in zip(run("median_blur", plain, layout="", window_size=3), plain, strict=True):
        np.testing.assert_array_equal(got, ndimage.median_filter(image, 3, mode="nearest"))


@pytest.mark.parametrize("operation", ["dilate", "erode"])
@pytest.mark.parametrize(
    "mask, anchor, border",
    [
        ((3, 3), (-1, -1), "constant"),
        ((5, 3), (0, 2), "replicate"),
        ((4, 2), (-1, -1), "reflect"),
        ((3, 5), (2, 4), "wrap"),
        ((3, 3), (1, 0), "reflect_101"),
    ],
)
def test_dilate_erode_match_brute_force(small, operation, mask, anchor, border) -> None:
    resolved = tuple(m // 2 if a < 0 else a for a, m in zip(anchor, mask, strict=True))
    reduce, neutral = (np.max, 0) if operation == "dilate" else (np.min, 255)
    check_operator(
        f"experimental.{operation}",
        [small],
        lambda image, **_: brute(image, mask, resolved, border, reduce, neutral),
        layout="HWC",
        args={"mask_size": mask, "anchor": anchor, "border_mode": border},
    )


def test_centred_masks_equal_scipy(small: list[np.ndarray]) -> None:
    image = small[0]
    (d,) = run("dilate", [image], mask_size=(5, 3), border_mode="replicate")
    np.testing.assert_array_equal(d, ndimage.grey_dilation(image, size=(3, 5, 1), mode="nearest"))
    (e,) = run("erode", [image], mask_size=(5, 3))
    np.testing.assert_array_equal(
        e, ndimage.grey_erosion(image, size=(3, 5, 1), mode="constant", cval=255)
    )


def test_iterations_repeat_the_operation(small: list[np.ndarray]) -> None:
    image = small[1]
    (once,) = run("dilate", [image], border_mode="reflect")
    (twice,) = run("dilate", run("dilate", [image], border_mode="reflect"), border_mode="reflect")
    (two,) = run("dilate", [image], iterations=2, border_mode="reflect")
    np.testing.assert_array_equal(two, twice)
    assert (two >= once).all() and (two != once).any()
    # Inside the image, twice with 3x3 is once with 5x5 (the documented equivalence).
    (big,) = run("dilate", [image], mask_size=5)
    np.testing.assert_array_equal(two[2:-2, 2:-2], big[2:-2, 2:-2])


def test_planes_and_float_neutral_border(small: list[np.ndarray]) -> None:
    image = small[2]
    (hwc,) = run("erode", [image], mask_size=(3, 5))
    (chw,) = run(
        "erode", [np.ascontiguousarray(image.transpose(2, 0, 1))], layout="CHW", mask_size=(3, 5)
    )
    np.testing.assert_array_equal(chw.transpose(1, 2, 0), hwc)
    negative = -np.ones((6, 6, 1), np.float32)
    np.testing.assert_array_equal(run("dilate", [negative])[0], negative)
    five = np.random.default_rng(0).integers(0, 255, (9, 9, 5), dtype=np.uint8)
    (got,) = run("dilate", [five])
    np.testing.assert_array_equal(
        got, ndimage.grey_dilation(five, size=(3, 3, 1), mode="constant", cval=0)
    )


@pytest.mark.parametrize(
    "name, args, message",
    [
        ("median_blur", {"window_size": 4}, "odd and positive"),
        ("median_blur", {"window_size": (3, 3, 3)}, "1 or 2 values"),
        ("dilate", {"anchor": (3, 0)}, "must lie within the mask"),
        ("erode", {"iterations": 0}, "iterations"),
        ("erode", {"border_mode": "mirror"}, "border_mode"),
        ("dilate", {"mask_size": 0}, "positive"),
    ],
)
def test_bad_arguments(name, args, message) -> None:
    with pytest.raises(AugkitError, match=message):
        run(name, [np.zeros((8, 8, 3), np.uint8)], **args)


def test_bad_layouts_and_types() -> None:
    with pytest.raises(AugkitError, match="layout"):
        run("dilate", [np.zeros((2, 8, 8, 3), np.uint8)], layout="DHWC")
    with pytest.raises(AugkitError, match="int32"):
        run("median_blur", [np.zeros((8, 8, 3), np.int32)])
