"""The random family (augkit/operators/random/): ``random.normal``, ``random.beta`` and
``random.choice``'s distributions (moments, Kolmogorov-Smirnov against scipy.stats), ranges,
output types and shapes as DALI gives them, determinism for a seed, per-sample independence,
and bad arguments; ``random.uniform`` and ``random.coin_flip``'s per-sample arguments and
uniform's documented formula.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from augkit import eager, fn, types
from augkit.errors import AugkitError
from augkit.pipeline import Pipeline


def _run(body: Any, batch_size: int = 8, seed: int = 5, iterations: int = 1) -> list[list[Any]]:
    """The outputs of ``body()`` (a node or tuple of nodes) over ``iterations`` runs: per
    output, the samples of every run."""
    pipe = Pipeline(batch_size=batch_size, num_threads=2, device_id=None, seed=seed)
    with pipe:
        outs = body()
        outs = outs if isinstance(outs, tuple) else (outs,)
        pipe.set_outputs(*outs)
    try:
        runs = [pipe.run() for _ in range(iterations)]
    finally:
        pipe.close()
    return [
        [b.at(i) for r in runs for b in [r[k]] for i in range(len(b))] for k in range(len(outs))
    ]


def _pooled(body: Any, batch_size: int = 16, iterations: int = 4) -> np.ndarray:
    return np.concatenate([np.ravel(s) for s in _run(body, batch_size, iterations=iterations)[0]])


# --- normal ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[200], [1000]], ids=["streams", "generator"])
def test_normal_is_normal_with_the_given_moments(shape: list[int]) -> None:
    values = _pooled(lambda: fn.random.normal(mean=3.0, stddev=2.0, shape=shape))
    assert values.dtype == np.float32
    assert abs(values.mean() - 3.0) < 0.05
    assert abs(values.std() - 2.0) < 0.05
    assert stats.kstest(values, stats.norm(3.0, 2.0).cdf).pvalue > 1e-3


def test_normal_scalars_pass_a_ks_test() -> None:
    values = _pooled(lambda: fn.random.normal(), batch_size=64, iterations=30)
    assert values.shape == (64 * 30,)
    assert stats.kstest(values, "norm").pvalue > 1e-3


def test_normal_per_sample_mean_and_stddev() -> None:
    means = [0.0, 100.0, -50.0, 7.0]
    out = _run(
        lambda: fn.random.normal(
            mean=fn.external_source(source=lambda: [np.float32(m) for m in means], batch=True),
            stddev=fn.external_source(
                source=lambda: [np.float32(s) for s in (1.0, 0.0, 5.0, -2.0)], batch=True
            ),
            shape=[2000],
        ),
        batch_size=4,
    )[0]
    assert np.allclose([s.mean() for s in out], means, atol=0.5)
    assert np.array_equal(out[1], np.full(2000, 100.0, np.float32))  # stddev 0: the mean
    assert abs(out[3].std() - 2.0) < 0.1  # a negative stddev mirrors the draw, as in DALI


def test_normal_integer_dtype_rounds_and_saturates() -> None:
    (out,) = _run(lambda: fn.random.normal(mean=100, stddev=200, shape=[500], dtype=types.UINT8))
    values = np.concatenate(out)
    assert values.dtype == np.uint8
    assert (values == 0).any() and (values == 255).any()
    (wide,) = _run(lambda: fn.random.normal(mean=0.5, stddev=0.0, dtype=types.INT32))
    assert all(v == 1 and v.dtype == np.int32 for v in wide)  # 0.5 rounds away from zero


def test_shape_like_input_and_per_sample_shape() -> None:
    def body() -> Any:
        like = fn.external_source(
            source=lambda: [np.zeros((2, k + 1), np.uint8) for k in range(3)], batch=True
        )
        shapes = fn.external_source(
            source=lambda: [np.array([k + 1], np.int32) for k in range(3)], batch=True
        )
        return fn.random.normal(like), fn.random.beta(shape=shapes), fn.random.normal()

    like, per_sample, scalars = _run(body, batch_size=3)
    assert [s.shape for s in like] == [(2, 1), (2, 2), (2, 3)]
    assert [s.shape for s in per_sample] == [(1,), (2,), (3,)]
    assert [s.shape for s in scalars] == [(), (), ()]


def test_shape_and_shape_like_together_are_refused() -> None:
    with pytest.raises(AugkitError, match="shape_like"):
        eager.random.normal([np.zeros(3)], shape=[2])


# --- beta -----------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha, beta", [(2.0, 5.0), (0.3, 0.3), (1.0, 1.0)])
def test_beta_matches_scipy(alpha: float, beta: float) -> None:
    values = _pooled(lambda: fn.random.beta(alpha=alpha, beta=beta, shape=[100]))
    assert values.dtype == np.float32
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert abs(values.mean() - alpha / (alpha + beta)) < 0.02
    assert stats.kstest(values, stats.beta(alpha, beta).cdf).pvalue > 1e-3


def test_beta_float64_and_per_sample_alpha() -> None:
    alphas = [0.5, 2.0, 8.0]
    (out,) = _run(
        lambda: fn.random.beta(
            alpha=fn.external_source(source=lambda: [np.float32(a) for a in alphas], batch=True),
            shape=[3000],
            dtype=types.FLOAT64,
        ),
        batch_size=3,
    )
    assert all(s.dtype == np.float64 for s in out)
    expected = [a / (a + 1.0) for a in alphas]
    assert np.allclose([s.mean() for s in out], expected, atol=0.02)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"beta": -1.0}, "beta"),
        ({"alpha": float("nan")}, "alpha"),
        ({"dtype": types.UINT8}, "dtype"),
    ],
)
def test_beta_bad_arguments_name_the_argument(kwargs: dict, match: str) -> None:
    with pytest.raises(AugkitError, match=rf"random.Beta.*{match}"):
        fn.random.beta(**kwargs)


def test_beta_per_sample_alpha_must_be_positive() -> None:
    with pytest.raises(AugkitError, match="alpha"):
        eager.random.beta(
            alpha=[np.array(1.0, np.float32), np.array(0.0, np.float32)], batch_size=2
        )


# --- choice ---------------------------------------------------------------------------------


def test_choice_of_an_integer_is_uniform_over_range_and_int32() -> None:
    values = _pooled(lambda: fn.random.choice(5, shape=[250]))
    assert values.dtype == np.int32
    counts = np.bincount(values, minlength=5)
    assert counts.sum() == 16 * 4 * 250 and len(counts) == 5
    assert stats.chisquare(counts).pvalue > 1e-3


def test_choice_with_probabilities() -> None:
    p = [0.1, 0.6, 0.3]
    values = _pooled(lambda: fn.random.choice([1.5, 2.5, 4.0], p=p, shape=[500]))
    assert values.dtype == np.float32
    counts = np.array([(values == v).sum() for v in (1.5, 2.5, 4.0)])
    assert counts.sum() == values.size
    assert stats.chisquare(counts, np.array(p) * values.size).pvalue > 1e-3


def test_choice_zero_probability_is_never_picked() -> None:
    values = _pooled(lambda: fn.random.choice(4, p=[0.5, 0.0, 0.5, 0.0], shape=[200]))
    assert set(np.unique(values)) == {0, 2}


def test_choice_from_a_node_keeps_its_type_and_picks_rows() -> None:
    rows = np.array([[1, 2], [3, 4], [5, 6]], np.int16)

    def body() -> Any:
        a = fn.external_source(source=lambda: [rows] * 4, batch=True)
        n = fn.external_source(source=lambda: [np.array(k + 2, np.uint8) for k in range(4)])
        return fn.random.choice(a, shape=[10]), fn.random.choice(n, shape=[50])

    picked, ranged = _run(body, batch_size=4)
    for s in picked:
        assert s.dtype == np.int16 and s.shape == (10, 2)
        assert all(any((r == row).all() for row in rows) for r in s)
    for k, s in enumerate(ranged):
        assert s.dtype == np.uint8 and s.min() >= 0 and s.max() <= k + 1


@pytest.mark.parametrize(
    "a, kwargs, match",
    [
        (0, {}, ">= 1"),
        (2.5, {}, "integer"),
        ([], {}, "empty"),
        (3, {"p": [0.5, 0.5]}, "2 probabilities for 3"),
        (3, {"p": [0.5, 0.2, 0.2]}, "sum to 1"),
        (2, {"p": [1.5, -0.5]}, ">= 0"),
    ],
)
def test_choice_bad_arguments(a: Any, kwargs: dict, match: str) -> None:
    with pytest.raises(AugkitError, match=rf"random.Choice.*{match}"):
        fn.random.choice(a, **kwargs)


def test_choice_refuses_a_float_scalar_node() -> None:
    with pytest.raises(AugkitError, match="0-D input must be an integer"):
        eager.random.choice(a=[np.array(2.0, np.float32)], batch_size=1)


# --- every draw: determinism and independence -------------------------------------------------

DRAWS = {
    "normal": lambda: fn.random.normal(shape=[4]),
    "normal_large": lambda: fn.random.normal(shape=[400]),
    "beta": lambda: fn.random.beta(alpha=2.0, shape=[4]),
    "choice": lambda: fn.random.choice(1000, shape=[4]),
}


@pytest.mark.parametrize("name", DRAWS)
def test_same_seed_same_values_other_seed_other_values(name: str) -> None:
    first = _run(DRAWS[name], seed=11, iterations=2)[0]
    again = _run(DRAWS[name], seed=11, iterations=2)[0]
    other = _run(DRAWS[name], seed=12, iterations=2)[0]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    # Samples of one batch and of two iterations differ.
    assert len({s.tobytes() for s in first}) == len(first)


@pytest.mark.parametrize("name", DRAWS)
def test_a_sample_draws_the_same_whatever_the_batch_size(name: str) -> None:
    small = _run(DRAWS[name], batch_size=2)[0]
    large = _run(DRAWS[name], batch_size=6)[0]
    for a, b in zip(small, large[:2], strict=True):
        np.testing.assert_array_equal(a, b)


def test_samples_are_uncorrelated() -> None:
    (out,) = _run(lambda: fn.random.normal(shape=[2000]), batch_size=4)
    corr = np.corrcoef(np.stack(out))
    assert np.abs(corr[~np.eye(4, dtype=bool)]).max() < 0.1


def test_existing_uniform_and_coin_flip_are_unchanged() -> None:
    (u,) = _run(lambda: fn.random.uniform(range=(2, 3), shape=[100]), batch_size=2)
    (c,) = _run(lambda: fn.random.coin_flip(shape=[100]), batch_size=2)
    assert all(s.dtype == np.float32 and s.min() >= 2 and s.max() < 3 for s in u)
    assert all(s.dtype == np.int32 and set(np.unique(s)) <= {0, 1} for s in c)


# --- uniform / coin_flip: per-sample range, values and shape (DALI's argument inputs) ---------


def _column(values: list[Any], dtype: Any = np.float32) -> Any:
    return fn.external_source(source=lambda: [np.asarray(v, dtype) for v in values], batch=True)


def test_uniform_per_sample_range_values_and_shape() -> None:
    ranges = [(0, 1), (10, 11), (-5, -4), (100, 200)]

    def body() -> Any:
        return (
            fn.random.uniform(range=_column(ranges), shape=[500]),
            fn.random.uniform(values=_column([[1, 2], [3, 4, 5], [6], [7, 8]]), shape=[50]),
            fn.random.uniform(shape=_column([[1], [2], [3], [2, 2]], np.int32)),
        )

    ranged, valued, shaped = _run(body, batch_size=4)
    for s, (low, high) in zip(ranged, ranges, strict=True):
        assert (
            s.min() >= low
            and s.max() < high
            and abs(s.mean() - (low + high) / 2) < 0.1 * (high - low)
        )
    for s, allowed in zip(valued, [{1, 2}, {3, 4, 5}, {6}, {7, 8}], strict=True):
        assert set(np.unique(s).tolist()) <= allowed
    assert [s.shape for s in shaped] == [(1,), (2,), (3,), (2, 2)]


def test_coin_flip_per_sample_shape() -> None:
    (out,) = _run(
        lambda: fn.random.coin_flip(shape=_column([[3], [1], [4], [2]], np.int32)), batch_size=4
    )
    assert [s.shape for s in out] == [(3,), (1,), (4,), (2,)]
    assert all(s.dtype == np.int32 and set(np.unique(s)) <= {0, 1} for s in out)


def test_uniform_values_match_the_documented_formula() -> None:
    """range=[low, high): low + u * (high - low), u from 24 random bits of the sample's
    stream (the values random.uniform has always given)."""
    from augkit.random import sample_streams, stream_key

    (out,) = _run(lambda: fn.random.uniform(range=(-2, 3), shape=[4], seed=11), batch_size=5)
    u = sample_streams(stream_key(11, 0), 0, 5).uniform(4, np.float32).astype(np.float64)
    np.testing.assert_array_equal(np.stack(out), (-2 + u * 5).astype(np.float32))


def test_a_per_sample_range_must_fit_the_dtype() -> None:
    with pytest.raises(AugkitError, match="does not fit dtype"):
        eager.random.uniform(range=[np.array([-5.0, 3.0])], dtype=types.UINT8, batch_size=1)


@pytest.mark.parametrize("alpha, beta", [(0.1, 0.5), (4.0, 0.7), (30.0, 30.0)])
def test_beta_scalars_pass_a_ks_test(alpha: float, beta: float) -> None:
    values = _pooled(lambda: fn.random.beta(alpha=alpha, beta=beta), batch_size=64, iterations=30)
    assert stats.kstest(values, stats.beta(alpha, beta).cdf).pvalue > 1e-3


def test_beta_with_tiny_parameters_stays_in_range() -> None:
    values = _pooled(lambda: fn.random.beta(alpha=0.01, beta=0.02, shape=[50]))
    assert np.isfinite(values).all() and values.min() >= 0 and values.max() <= 1
    # Mass piles up at both ends, as the distribution does: P(X < 0.5) = 2/3 for these.
    assert abs((values < 0.5).mean() - stats.beta(0.01, 0.02).cdf(0.5)) < 0.03


def test_beta_falls_back_to_a_generator_where_no_candidate_is_accepted(monkeypatch) -> None:
    import functools

    from augkit.operators.random import beta

    draws = beta._log_gamma_draws
    monkeypatch.setattr(beta, "_log_gamma_draws", functools.partial(draws, rounds=1))
    values = _pooled(lambda: fn.random.beta(alpha=1.0, beta=1.0, shape=[40]))  # ~10% fall back
    assert stats.kstest(values, "uniform").pvalue > 1e-3
    again = _pooled(lambda: fn.random.beta(alpha=1.0, beta=1.0, shape=[40]))
    np.testing.assert_array_equal(values, again)
