"""Trajectory features the regime labels and metrics are judged on (pure ``jax.numpy``).

For one node's samples ``y`` after the last input switch: band crossings about the late level,
turning points (a hysteresis zig-zag of height ``h``), late and earlier amplitudes, and for noisy
trajectories the autocorrelation evidence of an oscillation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jaxtyping import Array

if TYPE_CHECKING:  # the solve (diffrax) loads only when a solution is made
    from ._solve import Solution

__all__ = ["node_features", "noise_features", "window", "zigzag_update"]


def window(sol: Solution) -> Array:
    """Mask of the samples after the last input switch (the whole run if none)."""
    x = sol.inputs
    changed = jnp.concatenate([jnp.zeros(1, bool), x[1:] != x[:-1]])
    idx = jnp.arange(x.shape[0])
    last = jnp.max(jnp.where(changed, idx, 0))
    return idx >= last


def _crossings(y, m, h, w):
    """Hysteresis crossing count of the band ``m ± h`` over the masked samples.

    Returns (number of band traversals, number of entries into the upper state,
    time of first upward entry, time of last upward entry) — given ``t`` separately.
    """

    def step(carry, inp):
        state, n_cross, n_up, first_i, last_i = carry
        yi, wi, i = inp
        new = jnp.where(yi > m + h, 1, jnp.where(yi < m - h, -1, state))
        new = jnp.where(wi, new, state)
        moved = (new != state) & (state != 0) & wi
        up = moved & (new == 1)
        first_i = jnp.where(up & (n_up == 0), i, first_i)
        last_i = jnp.where(up, i, last_i)
        return (new, n_cross + moved, n_up + up, first_i, last_i), None

    idx = jnp.arange(y.shape[0])
    init = (jnp.asarray(0), jnp.asarray(0), jnp.asarray(0), jnp.asarray(-1), jnp.asarray(-1))
    (_, n_cross, n_up, first_i, last_i), _ = jax.lax.scan(step, init, (y, w, idx))
    return n_cross, n_up, first_i, last_i


def zigzag_update(direction, ext, prev_dev, chain, yi, wi, m, h):
    """One sample of the zig-zag of height ``h`` (elementwise: any batch shape).

    ``direction`` is 0 before the first move, else +1/-1; ``ext`` the running extreme;
    ``prev_dev`` and ``chain`` the last turning point's deviation from ``m`` and the run of
    turning points beyond ``m ± h`` that alternate sides with decreasing distance; ``wi``
    whether the sample is in the window. Returns the updated ``(direction, ext, prev_dev,
    chain)`` and whether the sample is a turning point.
    """
    up, down = yi > ext + h, yi < ext - h
    start = (direction == 0) & wi
    new_dir = jnp.where(start & up, 1, jnp.where(start & down, -1, direction))
    turn = wi & (((direction == 1) & down) | ((direction == -1) & up))
    dev = ext - m
    beyond = jnp.abs(dev) > h
    alternate = beyond & (prev_dev * dev < 0) & (jnp.abs(dev) < jnp.abs(prev_dev))
    new_chain = jnp.where(alternate, chain + 1, jnp.where(beyond, 1, 0))
    chain = jnp.where(turn, new_chain, chain)
    prev_dev = jnp.where(turn, dev, prev_dev)
    new_dir = jnp.where(turn, -direction, new_dir)
    grow = wi & (((new_dir == 1) & (yi > ext)) | ((new_dir == -1) & (yi < ext)))
    ext = jnp.where(turn | grow | (start & (up | down)), yi, ext)
    return new_dir, ext, prev_dev, chain, turn


def _turning_points(y, m, h, w, late):
    """Turning points of ``y`` over the masked samples, by a zig-zag of height ``h``.

    A turning point is an extreme that ``y`` then leaves by more than ``h``. Returns
    (number of turning points, number detected in the ``late`` samples, longest run of
    turning points beyond the band ``m ± h`` that alternate sides with decreasing distance
    from ``m`` — the signature of a damped oscillation).
    """

    def step(carry, inp):
        direction, ext, n_turn, n_late, prev_dev, chain, best = carry
        yi, wi, li = inp
        ext = jnp.where(jnp.isnan(ext) & wi, yi, ext)
        new_dir, ext, prev_dev, chain, turn = zigzag_update(
            direction, ext, prev_dev, chain, yi, wi, m, h
        )
        carry = (
            new_dir,
            ext,
            n_turn + turn,
            n_late + (turn & li),
            prev_dev,
            chain,
            jnp.maximum(best, chain),
        )
        return carry, None

    z = jnp.zeros((), jnp.int32)
    init = (z, jnp.asarray(jnp.nan, y.dtype), z, z, jnp.zeros((), y.dtype), z, z)
    (_, _, n_turn, n_late, _, _, best), _ = jax.lax.scan(step, init, (y, w, late))
    return n_turn, n_late, best


def node_features(t, y, w, rel_tol, abs_tol):
    T = y.shape[0]
    idx = jnp.arange(T)
    start_i = jnp.argmax(w)
    n_w = T - start_i
    y_start, y_end = y[start_i], y[-1]
    yw_max = jnp.max(jnp.where(w, y, -jnp.inf))
    yw_min = jnp.min(jnp.where(w, y, jnp.inf))
    scale = jnp.maximum(jnp.max(jnp.where(w, jnp.abs(y), 0.0)), abs_tol)
    h = jnp.maximum(rel_tol * scale, abs_tol)
    late = idx >= T - jnp.maximum(n_w // 4, 1)
    mid = (idx >= start_i + n_w // 4) & (idx < start_i + n_w // 2)
    late_max = jnp.max(jnp.where(late, y, -jnp.inf))
    late_min = jnp.min(jnp.where(late, y, jnp.inf))
    m = 0.5 * (late_max + late_min)
    a_late = 0.5 * (late_max - late_min)
    a_mid = jnp.max(jnp.where(mid, jnp.abs(y - m), 0.0))
    n_cross, n_up, first_i, last_i = _crossings(y, m, h, w)
    second_half = idx >= start_i + n_w // 2
    n_turn, n_turn_late, alt_chain = _turning_points(y, m, h, w, second_half & w)
    excursion = jnp.maximum(
        yw_max - jnp.maximum(y_start, y_end), jnp.minimum(y_start, y_end) - yw_min
    )
    period = jnp.where(n_up >= 2, (t[last_i] - t[first_i]) / jnp.maximum(n_up - 1, 1), jnp.nan)
    decay = jnp.where(a_mid > h, a_late / jnp.maximum(a_mid, 1e-300), jnp.nan)
    return dict(
        h=h,
        n_cross=n_cross,
        n_turn=n_turn,
        n_turn_late=n_turn_late,
        alt_chain=alt_chain,
        y_absmax=jnp.max(jnp.where(w, jnp.abs(y), 0.0)),
        n_peaks=n_up,
        period=period,
        decay=decay,
        a_late=a_late,
        a_mid=a_mid,
        excursion=excursion,
        y_end=y_end,
        y_start=y_start,
        y_max=yw_max,
        y_min=yw_min,
    )


def noise_features(y, w, acf_threshold):
    """Oscillation evidence for a noisy trajectory, from its autocorrelation function.

    On the second half of the window (mean removed), the biased ACF of red noise decays
    and may dip below zero, but it does not come back up; an oscillation's ACF has a trough
    and then a peak near one period. Returns ``osc`` (a trough below ``-acf_threshold``
    followed by a peak above ``acf_threshold`` at a lag under half the samples), ``peak``
    (the largest such ACF value), ``sd`` (fluctuation sd), ``level`` (mean level) and
    ``n`` (samples in that half).
    """
    T = y.shape[0]
    idx = jnp.arange(T)
    start = jnp.argmax(w)
    s2 = idx >= start + (T - start) // 2
    n = jnp.maximum(jnp.sum(s2), 1)
    level = jnp.sum(jnp.where(s2, y, 0.0)) / n
    z = jnp.where(s2, y - level, 0.0)
    f = jnp.fft.rfft(z, 2 * T)
    acf = jnp.fft.irfft(f * jnp.conj(f), 2 * T)[:T]
    var = acf[0]
    acf = acf / jnp.where(var > 0, var, 1.0)
    trough_seen = jax.lax.cummin(acf) < -acf_threshold
    usable = trough_seen & (idx < n // 2) & (idx > 0)
    peak = jnp.max(jnp.where(usable, acf, -jnp.inf))
    sd = jnp.sqrt(var / n)
    return {"osc": peak > acf_threshold, "peak": peak, "sd": sd, "level": level, "n": n}
