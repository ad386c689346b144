"""fn.water, fn.sphere, fn.jitter: pixels against float64 formulas written here, DALI's traps
(no half-pixel offset, the fill value's C++ conversion), masks, jitter's distribution and
determinism, and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augkit import OperatorError, Pipeline, fn, types
from augkit.errors import ArgumentError, GraphError
from tests.operator_check import check_operator, run_operator
from tests.operators.test_warp_affine import sample64

FREQ = 2 * math.pi / 128


def water64(
    image,
    ampl_x=10.0,
    ampl_y=10.0,
    freq_x=FREQ,
    freq_y=FREQ,
    phase_x=0.0,
    phase_y=0.0,
    nearest=True,
    fill=0.0,
):
    h, w = image.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    sx = xs + ampl_x * np.sin(freq_x * ys + phase_x)
    sy = ys + ampl_y * np.cos(freq_y * xs + phase_y)
    return sample64(image, sx, sy, nearest=nearest, fill=fill)


def sphere64(image, nearest=True, fill=0.0):
    h, w = image.shape[:2]
    mid_x, mid_y = w / 2, h / 2
    d = math.floor(max(mid_x, mid_y))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64) + 0.5
    tx, ty = xs - mid_x, ys - mid_y
    rad = np.hypot(tx, ty) / d
    return sample64(image, mid_x + rad * tx, mid_y + rad * ty, nearest=nearest, fill=fill)


# --- water -----------------------------------------------------------------------------------


@pytest.mark.parametrize("nearest", [True, False])
def test_water_matches_float64_reference(photos, nearest):
    args = {"ampl_x": 6.5, "ampl_y": -4.0, "freq_x": 0.07, "freq_y": 0.031, "phase_x": 0.3}
    interp = types.INTERP_NN if nearest else types.INTERP_LINEAR
    (out,) = run_operator(
        "water", [photos[:3]], layout="HWC", args={**args, "interp_type": interp, "fill_value": 9}
    )[0]
    for i, image in enumerate(photos[:3]):
        expected = water64(image, **args, nearest=nearest, fill=9.0)
        diff = np.abs(out.at(i).astype(int) - expected)
        if nearest:
            # Where the wave crosses zero, a point sits a hair from a pixel edge, and float32
            # (DALI's) and float64 round the residue either way.
            assert (diff > 0).any(axis=-1).mean() < 1e-2
        else:
            assert diff.max() <= 1 and diff.mean() < 0.01


def test_water_defaults(photos):
    """The default wave: amplitude 10, frequency 2*pi/128 (not the 0.049087 DALI prints)."""
    check_operator(
        "water",
        [photos[:2]],
        None,
        layout="HWC",
        expected_layout="HWC",
    )
    (out,) = run_operator("water", [photos[:1]], layout="HWC")[0]
    expected = water64(photos[0])
    assert (out.at(0) != expected).any(axis=-1).mean() < 1e-2  # zeros of the wave, as above
    assert (out.at(0) != water64(photos[0], freq_x=0.049087, freq_y=0.049087)).any(
        axis=-1
    ).mean() > (out.at(0) != expected).any(axis=-1).mean()


def test_zero_amplitude_nearest_is_the_identity_and_linear_a_half_pixel_shift():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    flat = {"ampl_x": 0.0, "ampl_y": 0.0}
    (out,) = run_operator("water", [[image]], layout="HWC", args=flat)[0]
    np.testing.assert_array_equal(out.at(0), image)
    (out,) = run_operator(
        "water",
        [[image]],
        layout="HWC",
        args={**flat, "interp_type": types.INTERP_LINEAR, "fill_value": 40},
    )[0]
    padded = np.pad(image.astype(np.float64), ((1, 0), (1, 0), (0, 0)), constant_values=40)
    average = (padded[:-1, :-1] + padded[:-1, 1:] + padded[1:, :-1] + padded[1:, 1:]) / 4
    np.testing.assert_array_equal(out.at(0), np.floor(average + 0.5).astype(np.uint8))


def test_a_pure_shift_and_the_fill_value_conversion():
    """sin(pi/2) = 1: every row moves 3 pixels left; the fill is converted as C++ converts a
    float to uint8 (300 -> 44, -5 -> 251), as DALI does."""
    image = np.arange(5 * 9 * 1, dtype=np.uint8).reshape(5, 9, 1) + 100
    shift = {"ampl_x": 3.0, "ampl_y": 0.0, "freq_x": 0.0, "phase_x": math.pi / 2}
    for fill, stored in ((0.0, 0), (300.0, 44), (-5.0, 251), (77.9, 77), (1e10, 0)):
        (out,) = run_operator("water", [[image]], layout="HWC", args={**shift, "fill_value": fill})[
            0
        ]
        got = out.at(0)
        np.testing.assert_array_equal(got[:, :6], image[:, 3:])
        assert (got[:, 6:] == stored).all(), (fill, got[:, 6:, 0])
    as_float = image.astype(np.float32)
    (out,) = run_operator("water", [[as_float]], layout="HWC", args={**shift, "fill_value": 300.5})[
        0
    ]
    assert (out.at(0)[:, 6:] == 300.5).all()


def test_mask_per_sample(photos):
    images = photos[:3]
    (out,) = run_operator(
        "water",
        [images],
        layout="HWC",
        arg_inputs={"mask": [np.int32(1), np.int32(0), np.int32(2)]},
    )[0]
    np.testing.assert_array_equal(out.at(1), images[1])
    assert not np.array_equal(out.at(0), images[0])
    assert not np.array_equal(out.at(2), images[2])


# --- sphere ----------------------------------------------------------------------------------


@pytest.mark.parametrize("nearest", [True, False])
def test_sphere_matches_float64_reference(photos, nearest):
    interp = types.INTERP_NN if nearest else types.INTERP_LINEAR
    (out,) = run_operator(
        "sphere", [photos[:3]], layout="HWC", args={"interp_type": interp, "fill_value": 5}
    )[0]
    for i, image in enumerate(photos[:3]):
        expected = sphere64(image, nearest=nearest, fill=5.0)
        diff = np.abs(out.at(i).astype(int) - expected)
        if nearest:
            assert (diff > 0).any(axis=-1).mean() < 1e-3
        else:
            assert diff.max() <= 1 and diff.mean() < 0.01


def test_sphere_magnifies_the_centre_and_fills_the_corners():
    image = np.zeros((40, 60, 1), np.uint8)
    image[18:22, 28:32] = 200  # a 4x4 spot in the middle
    (out,) = run_operator("sphere", [[image]], layout="HWC", args={"fill_value": 7})[0]
    got = out.at(0)[..., 0]
    assert (got == 200).sum() > 16  # grown
    assert got[0, 0] == got[-1, -1] == got[0, -1] == 7  # corners read outside
    assert got.shape == (40, 60)
    (out,) = run_operator("sphere", [[np.full((1, 1, 3), 9, np.uint8)]], layout="HWC")[0]
    assert out.at(0).tolist() == [[[0, 0, 0]]]  # d = 0: no point inside, as DALI


def test_float_images(photos):
    image = photos[0].astype(np.float32) / 255
    check_operator(
        "sphere",
        [[image]],
        lambda image, **_: sphere64(image, nearest=False, fill=0.0),
        layout="HWC",
        args={"interp_type": types.INTERP_LINEAR},
        atol=2e-3,
        mean_atol=1e-5,
    )


# --- jitter ----------------------------------------------------------------------------------


def _coded(h: int, w: int) -> np.ndarray:
    """A float image whose pixel (y, x) holds y * w + x: an output tells where it read."""
    return np.arange(h * w, dtype=np.float32).reshape(h, w, 1)


def test_jitter_moves_within_n_degree():
    h, w = 40, 50
    image = _coded(h, w)
    (out,) = run_operator(
        "jitter", [[image]], layout="HWC", args={"nDegree": 3, "fill_value": -1.0}
    )[0]
    got = out.at(0)[..., 0]
    inside = got >= 0
    ys, xs = np.mgrid[0:h, 0:w]
    sy, sx = np.divmod(got[inside].astype(int), w)
    dy, dx = sy - ys[inside], sx - xs[inside]
    assert set(np.unique(dx)) <= {-1, 0, 1} and set(np.unique(dy)) <= {-1, 0, 1}
    # away from the borders each of the 3 moves is about equally likely, in x and y
    centre = inside & (xs > 0) & (xs < w - 1) & (ys > 0) & (ys < h - 1)
    sy, sx = np.divmod(got[centre].astype(int), w)
    for d in (sx - xs[centre], sy - ys[centre]):
        counts = np.bincount(d + 1, minlength=3) / d.size
        np.testing.assert_allclose(counts, 1 / 3, atol=0.04)
    # a move past the right or bottom edge reads the fill (DALI clamps points to [0, W])
    assert (~inside).sum() > 0 and (~inside[:-1, :-1]).sum() == 0


def test_jitter_n_degree_one_is_the_identity_and_mask(photos):
    (out,) = run_operator("jitter", [photos[:1]], layout="HWC", args={"nDegree": 1})[0]
    np.testing.assert_array_equal(out.at(0), photos[0])
    (out,) = run_operator(
        "jitter",
        [photos[:2]],
        layout="HWC",
        arg_inputs={"mask": [np.int32(0), np.int32(1)]},
    )[0]
    np.testing.assert_array_equal(out.at(0), photos[0])
    assert not np.array_equal(out.at(1), photos[1])


def test_jitter_is_deterministic_and_independent_per_sample():
    image = _coded(30, 30)
    check_operator("jitter", [[image, image]], None, layout="HWC", args={"nDegree": 4})
    (first,) = run_operator("jitter", [[image, image]], layout="HWC", seed=1)[0]
    (again,) = run_operator("jitter", [[image, image]], layout="HWC", seed=1)[0]
    (other,) = run_operator("jitter", [[image, image]], layout="HWC", seed=2)[0]
    np.testing.assert_array_equal(first.at(0), again.at(0))
    assert not np.array_equal(first.at(0), first.at(1))  # same image, own draws
    assert not np.array_equal(first.at(0), other.at(0))  # another seed
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None, seed=4)
    with pipe:
        pipe.set_outputs(fn.jitter(fn.external_source(source=lambda: [image], layout="HWC")))
    a, b = pipe.run()[0].at(0), pipe.run()[0].at(0)
    assert not np.array_equal(a, b)  # each iteration draws anew


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["water", "sphere", "jitter"])
def test_refused_inputs(name):
    with pytest.raises(OperatorError, match=f"{name} takes images of type uint8, float32"):
        run_operator(name, [[np.zeros((4, 4, 3), np.int16)]], layout="HWC")
    with pytest.raises(OperatorError, match=f"{name} needs images with layout HWC"):
        run_operator(name, [[np.zeros((4, 4), np.uint8)]])
    with pytest.raises(GraphError, match="layout HWC"):
        run_operator(name, [[np.zeros((3, 4, 4), np.uint8)]], layout="CHW")


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("water", {"interp_type": types.INTERP_CUBIC}, "only types.INTERP_NN and"),
        ("water", {"ampl_x": "big"}, "'ampl_x'"),
        ("sphere", {"fill_value": float("nan")}, "'fill_value'"),
        ("jitter", {"nDegree": 0}, "'nDegree'"),
        ("jitter", {"ndegree": 3}, "Did you mean 'nDegree'"),
    ],
)
def test_invalid_arguments(name, args, message):
    with pytest.raises(ArgumentError, match=message):
        getattr(fn, name)(**args)
