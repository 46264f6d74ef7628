"""Early-warning indicators computed on a live training signal (one agent's series).

Each function maps a series ``x`` of shape ``(T,)`` (one value per optimizer step, NaN where
not logged) to an indicator of the same shape whose value at ``t`` uses ``x[:t + 1]`` only:
what a watcher knows at step ``t``. NaN where the window holds fewer than ``min_points``
finite values.

- :func:`spike_z`: how far the value lies above the run's own recent history, in robust
  standard deviations (median and 1.4826 x MAD of the previous ``window`` values): an
  update-norm, KL or gradient-norm spike;
- :func:`rolling_variance` and :func:`rolling_lag1`: the variance and lag-1 autocorrelation
  over the last ``window`` values, the classic indicators of critical slowing down
  (:func:`simulate.early_warning` gives their values from the linearised model: as an
  eigenvalue of the update map approaches +1 the autocorrelation rises towards +1 and the
  variance grows; approaching -1 (a flip from too large a step) the autocorrelation falls
  towards -1);
- :func:`trend`: Kendall's tau of an indicator against time over the last ``window`` steps
  (a rising variance or autocorrelation, rather than its level).
"""

from __future__ import annotations

import numpy as np

__all__ = ["rolling_lag1", "rolling_variance", "spike_z", "trend"]


def _windows(x: np.ndarray, window: int) -> list[np.ndarray]:
    return [x[max(0, t + 1 - window) : t + 1] for t in range(x.size)]


def _check(x: np.ndarray, window: int, min_points: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if not (isinstance(window, int) and window >= 2):
        raise ValueError(f"window must be an integer >= 2, got {window!r}")
    if not (isinstance(min_points, int) and 2 <= min_points <= window):
        raise ValueError(f"min_points must be an integer in [2, window], got {min_points!r}")
    return x


def spike_z(x: np.ndarray, *, window: int = 30, min_points: int = 10) -> np.ndarray:
    """Robust z-score of each value against the ``window`` values before it, shape ``(T,)``.

    ``(x[t] - median) / (1.4826 MAD)`` of ``x[t - window : t]`` (finite values only); where
    over half the history ties (MAD 0) the scale is 1.2533 times the mean absolute deviation
    from the median, and a constant history gives NaN (no scale to measure a spike by).
    """
    x = _check(x, window, min_points)
    out = np.full(x.size, np.nan)
    for t in range(1, x.size):
        h = x[max(0, t - window) : t]
        h = h[np.isfinite(h)]
        if h.size < min_points or not np.isfinite(x[t]):
            continue
        med = float(np.median(h))
        scale = 1.4826 * float(np.median(np.abs(h - med)))
        tiny = 1e-9 * max(abs(med), 1e-12)
        if scale <= tiny:  # over half the history ties: the mean absolute deviation
            scale = 1.2533 * float(np.mean(np.abs(h - med)))
        if scale > tiny:  # a constant history has no scale: no z
            out[t] = (x[t] - med) / scale
    return out


def rolling_variance(x: np.ndarray, *, window: int = 30, min_points: int = 10) -> np.ndarray:
    """Sample variance (ddof 1) of the last ``window`` finite values, shape ``(T,)``."""
    x = _check(x, window, min_points)
    out = np.full(x.size, np.nan)
    for t, w in enumerate(_windows(x, window)):
        w = w[np.isfinite(w)]
        if w.size >= min_points:
            out[t] = float(np.var(w, ddof=1))
    return out


def rolling_lag1(x: np.ndarray, *, window: int = 30, min_points: int = 10) -> np.ndarray:
    """Lag-1 autocorrelation of the last ``window`` values (pairs of consecutive finite
    values, each centred on the window's mean), shape ``(T,)``; NaN for a constant window."""
    x = _check(x, window, min_points)
    out = np.full(x.size, np.nan)
    for t, w in enumerate(_windows(x, window)):
        ok = np.isfinite(w)
        if ok.sum() < min_points:
            continue
        d = w - np.mean(w[ok])
        pair = ok[1:] & ok[:-1]
        den = float(np.sum(d[ok] ** 2))
        if den > 0 and pair.any():
            out[t] = float(np.sum(d[1:][pair] * d[:-1][pair]) / den * ok.sum() / pair.sum())
    return out


def trend(x: np.ndarray, *, window: int = 30, min_points: int = 10) -> np.ndarray:
    """Kendall's tau of the last ``window`` finite values against their steps, ``(T,)``."""
    x = _check(x, window, min_points)
    out = np.full(x.size, np.nan)
    for t, w in enumerate(_windows(x, window)):
        idx = np.flatnonzero(np.isfinite(w))
        if idx.size < min_points:
            continue
        v = w[idx]
        s = np.sign(v[None, :] - v[:, None])[np.triu_indices(idx.size, 1)]
        n = idx.size * (idx.size - 1) / 2
        out[t] = float(np.sum(s) / n)
    return out
