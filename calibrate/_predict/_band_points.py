"""Bands at fewer steps (:func:`calibrate.predict`'s ``band_points``), interpolated between.

The per-step bands cost a quantile over the draws at every step (and, for the new-run
band, one evaluation-noise draw per draw, step and agent). With ``band_points=K`` they are
computed at ``K`` evenly spaced steps of the output grid (the first and the last always
among them), so the arrays keep their shape ``(S, 4, T, N)``; at the band steps the values
are those of the per-step band (the mean-curve band to rounding; the new-run band up to its
Monte Carlo noise). In between, each band is the mean curve (exact at every step) plus the
linear interpolation of its distance from it (:func:`interpolate_about`): a plain linear
interpolation missed the fastest settings' rise within the first interval by up to 0.47.
"""

from __future__ import annotations

import numpy as np

from .._config import ConfigError

__all__ = ["band_steps", "interpolate", "interpolate_about", "interpolation_matrix"]


def band_steps(n_steps: int, band_points: int | None) -> np.ndarray | None:
    """Indices of the steps a band is computed at, or None for every step.

    Args:
        n_steps: Steps of the output grid ``T``.
        band_points: Steps wanted (>= 2), or None for all of them.

    Returns:
        Increasing indices into ``range(n_steps)`` with 0 and ``n_steps - 1``, or None
        (also when ``band_points >= n_steps``).

    Raises:
        ConfigError: ``band_points`` is not None or an integer >= 2.
    """
    if band_points is None:
        return None
    if isinstance(band_points, bool) or not isinstance(band_points, int | np.integer):
        raise ConfigError(f"band_points must be an integer >= 2 or None, got {band_points!r}")
    if band_points < 2:
        raise ConfigError(f"band_points must be an integer >= 2 or None, got {band_points!r}")
    if band_points >= n_steps:
        return None
    return np.unique(np.round(np.linspace(0, n_steps - 1, int(band_points))).astype(int))


def interpolation_matrix(t: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """``(T, K)`` weights of linear interpolation in ``t`` from the band steps ``t[steps]``
    to every step (a row is a unit vector at a band step, so those values are exact)."""
    t = np.asarray(t, dtype=float)
    tk = t[steps]
    j = np.clip(np.searchsorted(tk, t, side="right") - 1, 0, tk.size - 2)
    w = (t - tk[j]) / (tk[j + 1] - tk[j])
    W = np.zeros((t.size, tk.size))
    W[np.arange(t.size), j] = 1.0 - w
    W[np.arange(t.size), j + 1] += w
    W[steps] = np.eye(tk.size)  # exact at the band steps
    return W


def interpolate(W: np.ndarray, a: np.ndarray, axis: int) -> np.ndarray:
    """``a`` with its band-step axis ``axis`` (length ``K``) mapped to every step by the
    ``(T, K)`` weights ``W`` (at most two per row, at neighbouring band steps), in ``a``'s
    dtype: two gathers and in-place sums (a matrix product and the strided sum of its moved
    axes took ~10x as long at 10^4 settings)."""
    a = np.asarray(a)
    axis = axis % a.ndim
    W = np.asarray(W, dtype=a.dtype)
    lo = np.argmax(W != 0, axis=1)  # each row's two weights: at lo and lo + 1
    hi = np.minimum(lo + 1, W.shape[1] - 1)
    rows = np.arange(W.shape[0])
    shape = [W.shape[0] if i == axis else 1 for i in range(a.ndim)]
    out = np.take(a, lo, axis=axis)
    out *= W[rows, lo].reshape(shape)
    more = np.take(a, hi, axis=axis)
    more *= np.where(hi > lo, W[rows, hi], 0).reshape(shape)
    out += more
    return out


def interpolate_about(
    W: np.ndarray, steps: np.ndarray, a: np.ndarray, carrier: np.ndarray, axis: int
) -> np.ndarray:
    """``a`` at the band steps to every step along ``carrier``: ``carrier`` plus the linear
    interpolation of ``a - carrier`` (the same values at the band steps, to rounding; in
    between a band follows the mean curve's shape, e.g. a rise within the first interval).

    Args:
        W: :func:`interpolation_matrix` ``(T, K)``.
        steps: The band steps ``(K,)``.
        a: Values at the band steps, ``K`` long on ``axis``.
        carrier: Every step's values, ``T`` long on ``axis``, broadcastable to the result.
        axis: The step axis of both.
    """
    a = np.asarray(a)
    out = interpolate(W, a - np.take(carrier, steps, axis=axis), axis)
    out += carrier
    return out.astype(np.result_type(a), copy=False)
