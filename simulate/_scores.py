"""Forecast scores shared by every package (plain numpy): the CRPS of a sampled forecast."""

from __future__ import annotations

import numpy as np

from ._errors import ConfigError

__all__ = ["crps_samples"]


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
    x = np.asarray(samples, float)
    y = np.asarray(observed, float)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ConfigError("crps_samples needs at least one sample")
    if not np.all(np.isfinite(y)):
        raise ConfigError(f"crps_samples: the outcome must be finite, got {observed!r}")
    xs = np.sort(np.where(np.isfinite(x), x, np.inf), axis=-1)
    m = np.sum(np.isfinite(xs), axis=-1)
    out = np.full(xs.shape[:-1], np.nan)
    y = np.broadcast_to(y, xs.shape[:-1])
    for idx in np.ndindex(xs.shape[:-1]):
        k = int(m[idx])
        if not k:
            continue
        v = xs[idx][:k]
        # E|X - X'| over the empirical pairs: 2 sum_i (2 i - k - 1) v_(i) / k^2 (sorted v)
        spread = 2.0 * np.sum((2 * np.arange(1, k + 1) - k - 1) * v) / k**2
        out[idx] = np.mean(np.abs(v - y[idx])) - 0.5 * spread
    return out
