"""Forecast scores of sampled forecasts against oracles: scipy's binomial pmf for the grid log
score, exact interval probabilities for coverage, a Kolmogorov-Smirnov test for the PIT."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simulate.common import ConfigError, grid_log_score, interval_hit, randomized_pit


def test_interval_hit_frequency_matches_the_nominal_level():
    rng = np.random.default_rng(0)
    samples = rng.normal(size=(4000, 400))
    y = rng.normal(size=4000)
    for level in (0.5, 0.9):
        rate = np.nanmean(interval_hit(samples, y, level))
        # binomial sd of the rate at 4000 outcomes ~0.008; quantile noise of 400 samples adds less
        assert rate == pytest.approx(level, abs=0.03)
    # a forecast centred 3 sd away almost never covers
    assert np.nanmean(interval_hit(samples + 3.0, y, 0.9)) < 0.2


def test_interval_hit_ends_included_and_nan_rows():
    s = np.array([[0.25, 0.5, 0.5, 0.75], [np.nan, np.nan, np.nan, np.nan]])
    out = interval_hit(s, [0.5, 0.5], 0.5)
    assert out[0] == 1.0 and np.isnan(out[1])
    assert interval_hit(np.full(5, 0.5), 0.5, 0.9) == 1.0  # degenerate forecast, exact outcome
    assert interval_hit(np.full(5, 0.5), 0.52, 0.9) == 0.0
    with pytest.raises(ConfigError, match="level"):
        interval_hit(s, 0.5, 1.0)


def test_grid_log_score_converges_to_the_binomial_pmf():
    n, p = 32, 0.7
    rng = np.random.default_rng(1)
    samples = rng.binomial(n, p, size=200_000) / n
    for k in (16, 22, 27):
        got = grid_log_score(samples, k / n, n)
        assert got == pytest.approx(stats.binom.logpmf(k, n, p), abs=0.03)
    # a grid point no sample reached still scores finitely: log(pseudo / (M + pseudo (n + 1)))
    exact = np.log(0.5 / (10 + 0.5 * 33))
    assert grid_log_score(np.full(10, 0.5), 0.0, 32) == pytest.approx(exact, abs=1e-12)
    with pytest.raises(ConfigError, match="n_eval"):
        grid_log_score(samples[:5], 0.5, 0)


def test_randomized_pit_is_uniform_for_a_calibrated_discrete_forecast():
    rng = np.random.default_rng(2)
    n = 16
    p = rng.uniform(0.2, 0.8, size=1500)
    samples = rng.binomial(n, p[:, None], size=(1500, 500)) / n
    y = rng.binomial(n, p) / n
    pit = randomized_pit(samples, y, rng=rng)
    assert stats.kstest(pit, "uniform").pvalue > 0.01
    # a forecast biased upwards gives PIT values piled near 0
    biased = randomized_pit(np.clip(samples + 0.25, 0, 1), y, rng=rng)
    assert stats.kstest(biased, "uniform").pvalue < 1e-6
    assert np.mean(biased) < 0.3
