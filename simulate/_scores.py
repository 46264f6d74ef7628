"""Forecast scores shared by every package (plain numpy), each of a forecast given as samples:
the CRPS, interval coverage, the log score on the evaluation grid and the randomised PIT."""

from __future__ import annotations

import numpy as np

from ._errors import ConfigError

__all__ = ["crps_samples", "grid_log_score", "interval_hit", "randomized_pit"]


def crps_samples(samples: np.ndarray, observed: float | np.ndarray) -> np.ndarray:
    """The continuous ranked probability score of a forecast given as samples,
    ``E|X - y| - E|X - X'| / 2`` over the empirical distribution of ``samples`` (lower is
    better; the forecast's own units). NaN samples (failed solves) are left out.

    Args:
        samples: Forecast samples, the sample axis last ``(..., M)``.
        observed: The outcome, broadcastable to ``samples.shape[:-1]``.

    Returns:
        The CRPS, shape ``samples.shape[:-1]`` (NaN where no sample is finite).

    Raises:
        ConfigError: ``samples`` is empty or ``observed`` is not finite.
    """
    xs, m = _finite_sorted(samples)
    y = _outcome(observed, xs.shape[:-1])
    out = np.full(xs.shape[:-1], np.nan)
    for idx in np.ndindex(xs.shape[:-1]):
        k = int(m[idx])
        if not k:
            continue
        v = xs[idx][:k]
        # E|X - X'| over the empirical pairs: 2 sum_i (2 i - k - 1) v_(i) / k^2 (sorted v)
        spread = 2.0 * np.sum((2 * np.arange(1, k + 1) - k - 1) * v) / k**2
        out[idx] = np.mean(np.abs(v - y[idx])) - 0.5 * spread
    return out


def _finite_sorted(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Samples sorted along the last axis with NaN/inf last, and the finite count per row."""
    x = np.asarray(samples, float)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ConfigError("a sampled forecast needs at least one sample")
    xs = np.sort(np.where(np.isfinite(x), x, np.inf), axis=-1)
    return xs, np.sum(np.isfinite(xs), axis=-1)


def _outcome(observed: float | np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    y = np.asarray(observed, float)
    if not np.all(np.isfinite(y)):
        raise ConfigError(f"the outcome must be finite, got {observed!r}")
    return np.broadcast_to(y, shape)


def interval_hit(samples: np.ndarray, observed: float | np.ndarray, level: float) -> np.ndarray:
    """Whether the outcome lies in the central ``level`` interval of a sampled forecast.

    The interval is ``[q_lo, q_hi]`` with ``q_lo``, ``q_hi`` the empirical ``(1 - level) / 2``
    and ``(1 + level) / 2`` quantiles (numpy's default, linear interpolation) of the finite
    samples; the ends are included, so a forecast on a grid (``k / n_eval``) that puts its
    quantile on the observed grid point counts as a hit.

    Args:
        samples: Forecast samples ``(..., M)``; NaN samples (failed solves) are left out.
        observed: Outcome, broadcastable to ``samples.shape[:-1]``.
        level: Nominal coverage in (0, 1).

    Returns:
        Float array ``samples.shape[:-1]``: 1.0 hit, 0.0 miss, NaN where no sample is finite.

    Raises:
        ConfigError: ``level`` outside (0, 1), empty samples or a non-finite outcome.
    """
    if not 0.0 < float(level) < 1.0:
        raise ConfigError(f"interval level must be in (0, 1), got {level!r}")
    xs, m = _finite_sorted(samples)
    y = _outcome(observed, xs.shape[:-1])
    out = np.full(xs.shape[:-1], np.nan)
    for idx in np.ndindex(xs.shape[:-1]):
        if m[idx]:
            lo, hi = np.quantile(xs[idx][: m[idx]], [(1 - level) / 2, (1 + level) / 2])
            out[idx] = float(lo - 1e-12 <= y[idx] <= hi + 1e-12)
    return out


def grid_log_score(
    samples: np.ndarray, observed: float | np.ndarray, n_eval: int, *, pseudo: float = 0.5
) -> np.ndarray:
    """Log predictive probability of an outcome logged as ``k / n_eval`` under a sampled
    forecast (natural log; higher is better).

    An evaluation on ``n_eval`` probes can only log ``k / n_eval``: samples are rounded to that
    grid and the predictive mass of grid point ``k`` is ``(c_k + pseudo) / (M + pseudo (n_eval
    + 1))`` (``c_k`` samples on it, ``M`` finite samples), so a point no sample reached scores
    finitely. Forecasts of every method are scored on the same grid and sample count.

    Args:
        samples: Forecast samples ``(..., M)`` in [0, 1] (clipped); NaN samples left out.
        observed: Outcome ``k / n_eval``, broadcastable to ``samples.shape[:-1]``.
        n_eval: Probes per evaluation (>= 1).
        pseudo: Pseudo-count per grid point (> 0).

    Returns:
        Shape ``samples.shape[:-1]`` (NaN where no sample is finite).

    Raises:
        ConfigError: ``n_eval`` < 1, ``pseudo`` <= 0, empty samples or a non-finite outcome.
    """
    if int(n_eval) != n_eval or n_eval < 1:
        raise ConfigError(f"n_eval must be an integer >= 1, got {n_eval!r}")
    if not pseudo > 0:
        raise ConfigError(f"pseudo must be > 0, got {pseudo!r}")
    xs, m = _finite_sorted(samples)
    y = _outcome(observed, xs.shape[:-1])
    n = int(n_eval)
    out = np.full(xs.shape[:-1], np.nan)
    for idx in np.ndindex(xs.shape[:-1]):
        k = int(m[idx])
        if k:
            grid = np.rint(np.clip(xs[idx][:k], 0.0, 1.0) * n).astype(int)
            hit = np.sum(grid == int(np.rint(np.clip(y[idx], 0.0, 1.0) * n)))
            out[idx] = np.log((hit + pseudo) / (k + pseudo * (n + 1)))
    return out


def randomized_pit(
    samples: np.ndarray, observed: float | np.ndarray, *, rng: np.random.Generator
) -> np.ndarray:
    """Randomised probability integral transform ``F(y-) + U (F(y) - F(y-))`` of an outcome
    under the empirical distribution of a sampled forecast (``U`` uniform on [0, 1]).

    For a calibrated forecast the values are uniform on [0, 1], also when outcome and samples
    are discrete (grid ``k / n_eval``), which is why the jump at ``y`` is randomised.

    Args:
        samples: Forecast samples ``(..., M)``; NaN samples left out.
        observed: Outcome, broadcastable to ``samples.shape[:-1]``.
        rng: Generator of the uniform draws (keyword-only).

    Returns:
        Shape ``samples.shape[:-1]`` (NaN where no sample is finite).
    """
    xs, m = _finite_sorted(samples)
    y = _outcome(observed, xs.shape[:-1])
    out = np.full(xs.shape[:-1], np.nan)
    for idx in np.ndindex(xs.shape[:-1]):
        k = int(m[idx])
        if k:
            v = xs[idx][:k]
            below = np.searchsorted(v, y[idx], side="left") / k
            upto = np.searchsorted(v, y[idx], side="right") / k
            out[idx] = below + rng.uniform() * (upto - below)
    return out
