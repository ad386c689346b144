"""fn.noise.gaussian, fn.noise.salt_and_pepper and fn.noise.shot: distributions (moments,
Kolmogorov-Smirnov and binomial tests with scipy.stats), DALI's deterministic limits, rounding
and saturation, per-sample independence, determinism for a seed, and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

import augkit.eager
from augkit.errors import ArgumentError, OperatorError
from tests.operator_check import check_operator, run_operator

ALPHA = 1e-4  # statistical tests: a correct kernel fails one in 10**4 runs (seeds are fixed)


def _one(name: str, images: list[np.ndarray], seed: int = 7, layout: str = "HWC", **args: Any):
    return run_operator(name, [images], layout=layout, args=args, seed=seed)[0][0]


# --- gaussian ------------------------------------------------------------------------------


def test_gaussian_is_deterministic_and_thread_independent(photos: list[np.ndarray]) -> None:
    check_operator("noise.gaussian", [photos], None, layout="HWC", args={"stddev": 12.0})


def test_gaussian_float_noise_is_normal() -> None:
    image = np.zeros((200, 200, 3), np.float32)
    out = _one("noise.gaussian", [image], mean=0.5, stddev=2.0).at(0)
    assert out.dtype == np.float32
    noise = out.ravel().astype(np.float64)
    assert abs(noise.mean() - 0.5) < 0.02 and abs(noise.std() - 2.0) < 0.02
    assert stats.kstest(noise[:20000], stats.norm(0.5, 2.0).cdf).pvalue > ALPHA


def test_gaussian_uint8_rounds_and_saturates(photos: list[np.ndarray]) -> None:
    image = np.full((300, 300, 3), 128, np.uint8)
    out = _one("noise.gaussian", [image], stddev=10.0).at(0).astype(np.float64)
    assert abs(out.mean() - 128) < 0.1
    assert abs(out.var() - (100 + 1 / 12)) < 2  # rounding adds 1/12
    dark = _one("noise.gaussian", [np.zeros((100, 100, 1), np.uint8)], stddev=10.0).at(0)
    assert abs(np.mean(dark == 0) - 0.5) < 0.02  # every negative draw saturates to 0


@pytest.mark.parametrize(
    ("dtype", "mean", "before", "after"),
    [
        (np.uint8, 2.5, [0, 1, 254], [3, 4, 255]),  # halves away from zero; saturation
        (np.uint8, -2.5, [0, 2, 5], [0, 0, 3]),
        (np.int8, 300.0, [-128, 0], [127, 127]),
        (np.int32, 0.5, [0, -1], [1, -1]),  # float64 noise for 32-bit integers: -0.5 -> -1
        (np.float32, 0.25, [0.5, -1.0], [0.75, -0.75]),
        (np.uint16, -1000.5, [0, 2000], [0, 1000]),
    ],
)
def test_gaussian_stddev0_adds_the_mean(dtype: Any, mean: float, before, after) -> None:
    image = np.array(before, dtype).reshape(1, -1, 1)
    out = augkit.eager.noise.gaussian([image], mean=mean, stddev=0.0)[0]
    assert out.dtype == dtype and out.ravel().tolist() == after


def test_gaussian_per_sample_arguments_and_independence() -> None:
    images = [np.full((100, 100, 1), 100, np.uint8)] * 4
    means = [np.float32(m) for m in (-20, 0, 20, 0)]
    stddevs = [np.float32(s) for s in (1, 5, 1, 5)]
    out = run_operator(
        "noise.gaussian", [images], layout="HWC", arg_inputs={"mean": means, "stddev": stddevs}
    )[0][0]
    for i in range(4):
        got = out.at(i).astype(np.float64)
        assert abs(got.mean() - 100 - means[i]) < 0.3 and abs(got.std() - stddevs[i]) < 0.3
    # Samples 1 and 3 have the same input and arguments: their noise is independent.
    a, b = out.at(1).astype(np.float64).ravel(), out.at(3).astype(np.float64).ravel()
    assert not np.array_equal(a, b) and abs(np.corrcoef(a, b)[0, 1]) < 0.05


def test_seeds_change_the_draws(photos: list[np.ndarray]) -> None:
    one = _one("noise.gaussian", photos[:1], seed=1).at(0)
    again = _one("noise.gaussian", photos[:1], seed=1).at(0)
    other = _one("noise.gaussian", photos[:1], seed=2).at(0)
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one, other)


# --- salt and pepper -------------------------------------------------------------------------


def test_salt_and_pepper_is_deterministic_and_thread_independent(photos: list[np.ndarray]) -> None:
    check_operator("noise.salt_and_pepper", [photos], None, layout="HWC", args={"prob": 0.2})


@pytest.mark.parametrize(("prob", "svp"), [(0.05, 0.5), (0.3, 0.2), (0.7, 0.9)])
def test_salt_and_pepper_rates_per_pixel(prob: float, svp: float) -> None:
    image = np.full((200, 200, 3), 100, np.uint8)
    out = _one("noise.salt_and_pepper", [image], prob=prob, salt_vs_pepper=svp).at(0)
    # per_channel=False (the default): a pixel's channels are all replaced, by the same value.
    assert (out == out[..., :1]).all()
    pixels = out[..., 0].ravel()
    n = pixels.size
    salt, pepper = int(np.sum(pixels == 255)), int(np.sum(pixels == 0))
    assert stats.binomtest(salt + pepper, n, prob).pvalue > ALPHA
    assert stats.binomtest(salt, salt + pepper, svp).pvalue > ALPHA
    assert set(np.unique(pixels)) <= {0, 100, 255}


def test_salt_and_pepper_per_channel_draws_every_element() -> None:
    image = np.full((200, 200, 3), 100, np.uint8)
    out = _one("noise.salt_and_pepper", [image], prob=0.5, per_channel=True).at(0)
    replaced = out != 100
    assert stats.binomtest(int(replaced.sum()), replaced.size, 0.5).pvalue > ALPHA
    # Independent channels: all three replaced in about 1/8 of the pixels.
    assert stats.binomtest(int(replaced.all(-1).sum()), 40000, 0.125).pvalue > ALPHA


def test_salt_and_pepper_chw_shares_the_draw_along_c() -> None:
    image = np.full((3, 60, 70), 100, np.uint8)
    out = _one("noise.salt_and_pepper", [image], layout="CHW", prob=0.4).at(0)
    assert (out == out[:1]).all() and 0.3 < np.mean(out[0] != 100) < 0.5


@pytest.mark.parametrize(
    ("dtype", "kwargs", "value"),
    [
        (np.uint8, {"salt_vs_pepper": 1.0}, 255),
        (np.uint8, {"salt_vs_pepper": 0.0}, 0),
        (np.int16, {"salt_vs_pepper": 0.0}, -32768),
        (np.float32, {"salt_vs_pepper": 1.0}, 1.0),
        (np.float32, {"salt_vs_pepper": 0.0}, -1.0),
        (np.uint8, {"salt_vs_pepper": 1.0, "salt_val": 300}, 44),  # C++ static_cast wraps
        (np.uint8, {"salt_vs_pepper": 0.0, "pepper_val": -3.5}, 253),
        (np.float32, {"salt_vs_pepper": 1.0, "salt_val": 0.25}, 0.25),
    ],
)
def test_salt_and_pepper_values(dtype: Any, kwargs: dict[str, Any], value: float) -> None:
    image = np.arange(60, dtype=dtype).reshape(4, 5, 3)
    out = augkit.eager.noise.salt_and_pepper([image], prob=1.0, **kwargs)[0]
    assert out.dtype == dtype and (out == np.asarray(value, dtype)).all()
    unchanged = augkit.eager.noise.salt_and_pepper([image], prob=0.0, **kwargs)[0]
    np.testing.assert_array_equal(unchanged, image)


@pytest.mark.parametrize("kwargs", [{"prob": 1.5}, {"prob": -0.1}, {"salt_vs_pepper": 2.0}])
def test_salt_and_pepper_probabilities_are_checked(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError, match="SaltAndPepper") as info:
        augkit.eager.noise.salt_and_pepper([np.zeros((4, 4, 3), np.uint8)], **kwargs)
    assert next(iter(kwargs)) in str(info.value)


# --- shot --------------------------------------------------------------------------------------


def test_shot_is_deterministic_and_thread_independent(photos: list[np.ndarray]) -> None:
    check_operator("noise.shot", [photos], None, layout="HWC", args={"factor": 4.0})


@pytest.mark.parametrize("factor", [0.5, 4.0, 20.0])
def test_shot_is_poisson_scaled_by_the_factor(factor: float) -> None:
    level = 60.0
    image = np.full((200, 200, 1), level, np.float32)
    out = _one("noise.shot", [image], factor=factor).at(0).astype(np.float64).ravel()
    counts = out / factor
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-4)  # multiples of factor
    assert abs(out.mean() - level) < 4 * np.sqrt(level * factor / out.size) + 1e-6
    assert abs(out.var() / (level * factor) - 1) < 0.05
    # Chi-square of the counts against Poisson(level / factor), pooling the tails.
    lam = level / factor
    k = np.arange(int(lam + 5 * np.sqrt(lam)) + 2)
    observed = np.bincount(np.round(counts).astype(int), minlength=len(k) + 1)
    edges = [int(max(lam - 4 * np.sqrt(lam), 0)), int(lam + 4 * np.sqrt(lam))]
    inside = np.arange(edges[0], edges[1] + 1)
    expected = stats.poisson(lam).pmf(inside) * out.size
    obs = observed[inside].astype(float)
    rest_obs, rest_exp = out.size - obs.sum(), out.size - expected.sum()
    chi = stats.chisquare(np.append(obs, rest_obs), np.append(expected, rest_exp))
    assert chi.pvalue > ALPHA


def test_shot_uint8_saturates_and_rounds() -> None:
    image = np.full((100, 100, 3), 250, np.uint8)
    out = _one("noise.shot", [image], factor=30.0).at(0)
    assert out.dtype == np.uint8 and out.max() == 255
    assert set(np.unique(out)) <= {0, 30, 60, 90, 120, 150, 180, 210, 240, 255}


def test_shot_limits_as_dali_2_4() -> None:
    image = np.arange(1, 61, dtype=np.uint8).reshape(4, 5, 3)
    # DALI 2.4 gives zeros for factor 0 (its documentation says the identity).
    assert (augkit.eager.noise.shot([image], factor=0.0)[0] == 0).all()
    assert (augkit.eager.noise.shot([image], factor=-2.0)[0] == 0).all()
    assert (augkit.eager.noise.shot([np.zeros_like(image)], factor=3.0)[0] == 0).all()
    with pytest.raises(OperatorError, match="factor"):
        augkit.eager.noise.shot([image], factor=1e-30)


# --- all three -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gaussian", "salt_and_pepper", "shot"])
@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.bool_])
def test_dalis_types_only(name: str, dtype: Any) -> None:
    with pytest.raises(OperatorError, match=rf"noise\.{name} takes .*{np.dtype(dtype).name}"):
        getattr(augkit.eager.noise, name)([np.zeros((4, 4, 3), dtype)])


@pytest.mark.parametrize("name", ["gaussian", "salt_and_pepper", "shot"])
def test_shape_layout_and_type_are_kept(name: str, photos: list[np.ndarray]) -> None:
    chw = [np.ascontiguousarray(p.transpose(2, 0, 1)).astype(np.int16) for p in photos[:2]]
    out = run_operator(f"noise.{name}", [chw], layout="CHW")[0][0]
    assert out.layout() == "CHW"
    for i, want in enumerate(chw):
        assert out.at(i).shape == want.shape and out.at(i).dtype == np.int16


def test_uint8_shortcut_equals_convert_sat() -> None:
    from augkit.operators.color.cast import convert_sat
    from augkit.operators.noise import _to_uint8

    halves = np.arange(-3, 258, 0.5, dtype=np.float32)
    values = np.concatenate(
        [
            np.arange(-3, 300, 0.0007, dtype=np.float32),
            halves,
            np.nextafter(halves, np.float32(np.inf)),
            np.nextafter(halves, np.float32(-np.inf)),
            np.array([0.49999997, -0.49999997, 1e30, -1e30, 3e38, 255.49998], np.float32),
        ]
    )
    np.testing.assert_array_equal(_to_uint8(values), convert_sat(values, np.uint8))


def test_salt_and_pepper_without_layout_is_channel_last() -> None:
    # As DALI: a 1-D sample without a layout is one pixel of many channels (one draw).
    flat = augkit.eager.noise.salt_and_pepper([np.full(240, 100, np.uint8)], prob=0.5, seed=3)
    assert len(np.unique(flat[0])) == 1
    wide = np.full((10, 10, 240), 100, np.uint8)  # more channels than cv2.copyTo takes
    out = augkit.eager.noise.salt_and_pepper([wide], prob=0.5, seed=3)[0].reshape(100, 240)
    assert (out == out[:, :1]).all() and 0.3 < np.mean(out[:, 0] != 100) < 0.7
