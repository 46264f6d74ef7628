"""Regime labels, response metrics and linear stability.

Everything here is pure ``jax.numpy`` on one :class:`~simulate.Solution`, so sweeps
``jax.vmap`` it over batches. Regimes are ordered by severity; a network's label is the
most severe of its nodes' labels.
"""

from __future__ import annotations

import enum

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array

from ._kinetics import Model
from ._solve import Solution

__all__ = [
    "REGIME_NAMES",
    "Regime",
    "Stability",
    "classify",
    "equilibrate",
    "linear_stability",
    "metrics",
    "solution_stability",
    "steady_state",
]


class Regime(enum.IntEnum):
    """Regime labels, in increasing severity."""

    CONVERGED = 0
    OVERSHOOT = 1  # overshoot or pulse: leaves the start/end interval once, then settles
    DAMPED = 2  # damped oscillation
    SUSTAINED = 3  # sustained (or growing) oscillation
    COLLAPSE = 4  # a competence ends near 0 while the input is on (bounded kinetics)
    FAILED = 5  # solver error or non-finite values


REGIME_NAMES = {
    Regime.CONVERGED: "converged",
    Regime.OVERSHOOT: "overshoot/pulse",
    Regime.DAMPED: "damped oscillation",
    Regime.SUSTAINED: "sustained oscillation",
    Regime.COLLAPSE: "collapse",
    Regime.FAILED: "failed",
}


def _window(sol: Solution) -> Array:
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


def _node_features(t, y, w, rel_tol, abs_tol):
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
    excursion = jnp.maximum(
        yw_max - jnp.maximum(y_start, y_end), jnp.minimum(y_start, y_end) - yw_min
    )
    period = jnp.where(n_up >= 2, (t[last_i] - t[first_i]) / jnp.maximum(n_up - 1, 1), jnp.nan)
    decay = jnp.where(a_mid > h, a_late / jnp.maximum(a_mid, 1e-300), jnp.nan)
    return dict(
        h=h,
        n_cross=n_cross,
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


def _noise_features(y, w, acf_threshold):
    """Oscillation evidence for a noisy trajectory, from its autocorrelation function.

    On the second half of the window (mean removed), the biased ACF of red noise decays
    and may dip below zero, but it does not come back up; an oscillation's ACF has a trough
    and then a peak near one period. Returns ``osc`` (a trough below ``-acf_threshold``
    followed by a peak above ``acf_threshold`` at a lag under half the samples), ``peak``
    (the largest such ACF value), ``sd`` (fluctuation sd) and ``level`` (mean level).
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
    return {"osc": peak > acf_threshold, "peak": peak, "sd": jnp.sqrt(var / n), "level": level}


@eqx.filter_jit
def classify(
    sol: Solution,
    *,
    bounded: bool = True,
    rel_tol: float = 0.02,
    abs_tol: float = 1e-6,
    collapse_level: float = 0.05,
    sustain_ratio: float = 0.5,
    acf_threshold: float = 0.35,
    acf_sustained: float = 0.5,
    noise_band: float = 4.0,
) -> tuple[Array, Array]:
    """Regime of a trajectory, judged on the part after the last input switch.

    Rules per node, with band ``h = max(rel_tol * max|A|, abs_tol)`` around the late level:
    ``failed`` if the solve failed; ``collapse`` if bounded, the input is on and the node
    settles below ``collapse_level``; an oscillation if the node crosses the band at
    least twice — ``sustained`` when the late amplitude exceeds ``h`` and
    ``sustain_ratio`` × the earlier amplitude, else ``damped``; ``overshoot/pulse`` if it
    leaves the interval between its start and end levels by more than ``h``; else
    ``converged``.

    Args:
        sol: One (unbatched) solution; ``jax.vmap`` this function for batches.
        bounded: Whether ``collapse`` applies (True for competence kinetics).
        rel_tol: Band half-width relative to the node's largest level.
        abs_tol: Absolute floor of the band.
        collapse_level: Final competence below which a node has collapsed.
        sustain_ratio: Late/earlier amplitude ratio above which oscillation is sustained.
        acf_threshold: Noisy (``sde``) solutions only: an oscillation needs an ACF trough
            below ``-acf_threshold`` then a peak above it (noise alone crosses a band at
            random, so band crossings are not evidence there).
        acf_sustained: Noisy solutions: ACF peak above which an oscillation is sustained
            (phase-coherent over a period), else damped (noise-excited quasi-cycles).
        noise_band: Noisy solutions: an overshoot must exceed the band by this many
            fluctuation sds, and the settling band is at least that wide, so noise
            excursions are neither overshoots nor keep a collapse unsettled.

    Returns:
        (network regime, per-node regimes, shape ``(N,)``), as ints of :class:`Regime`.
    """
    w = _window(sol)
    feats = jax.vmap(lambda y: _node_features(sol.t, y, w, rel_tol, abs_tol), in_axes=1)(sol.states)
    h = feats["h"]
    osc = feats["n_cross"] >= 2
    sustained = (feats["a_late"] > h) & (feats["a_late"] >= sustain_ratio * feats["a_mid"])
    overshoot = feats["excursion"] > h
    settled = feats["a_late"] <= h
    y_end = feats["y_end"]
    if sol.method == "sde":
        nz = jax.vmap(lambda y: _noise_features(y, w, acf_threshold), in_axes=1)(sol.states)
        noise = noise_band * nz["sd"]
        osc = nz["osc"] & (nz["sd"] > h)
        sustained = nz["peak"] >= acf_sustained
        y_end, y0 = nz["level"], feats["y_start"]
        excursion = jnp.maximum(
            feats["y_max"] - jnp.maximum(y0, y_end), jnp.minimum(y0, y_end) - feats["y_min"]
        )
        overshoot = excursion > h + noise
        settled = ~osc | (feats["a_late"] <= jnp.maximum(h, noise))
    label = jnp.where(
        osc,
        jnp.where(sustained, int(Regime.SUSTAINED), int(Regime.DAMPED)),
        jnp.where(overshoot, int(Regime.OVERSHOOT), int(Regime.CONVERGED)),
    )
    if bounded:
        collapsed = (sol.inputs[-1] > 0) & (y_end < collapse_level) & settled
        label = jnp.where(collapsed, int(Regime.COLLAPSE), label)
    finite = jnp.all(jnp.isfinite(sol.states), axis=0)
    label = jnp.where((sol.code != 0) | ~finite, int(Regime.FAILED), label)
    return jnp.max(label), label


def _half_time(t, y, x, turn_on: bool):
    """Time from the first ON (or OFF) switch until ``y`` is halfway to its next level."""
    T = t.shape[0]
    idx = jnp.arange(T)
    prev = jnp.concatenate([jnp.zeros(1), x[:-1]])
    sw = (x > 0) & (prev <= 0) if turn_on else (x <= 0) & (prev > 0)
    has = jnp.any(sw)
    i0 = jnp.argmax(sw)
    changed = (x != prev) & (idx > i0)
    i1 = jnp.where(jnp.any(changed), jnp.argmax(changed) - 1, T - 1)
    ya, yb = y[i0], y[i1]
    span = yb - ya
    f = jnp.where(jnp.abs(span) > 0, (y - ya) / jnp.where(span == 0, 1.0, span), 0.0)
    reach = (f >= 0.5) & (idx >= i0) & (idx <= i1)
    j = jnp.argmax(reach)
    jp = jnp.maximum(j - 1, 0)
    frac = jnp.where(j > i0, (0.5 - f[jp]) / jnp.where(f[j] == f[jp], 1.0, f[j] - f[jp]), 0.0)
    t_half = t[jp] + frac * (t[j] - t[jp]) - t[i0]
    t_half = jnp.where(j > i0, t_half, 0.0)
    ok = has & jnp.any(reach) & (jnp.abs(span) > 1e-12 * jnp.maximum(jnp.abs(yb), 1.0))
    return jnp.where(ok, t_half, jnp.nan)


@eqx.filter_jit
def metrics(sol: Solution, *, rel_tol: float = 0.02, abs_tol: float = 1e-6) -> dict[str, Array]:
    """Response metrics per node, each of shape ``(N,)`` (NaN where undefined).

    Keys: ``t50_on``/``t50_off`` (time from the first ON/OFF switch to half of the change
    until the next switch), ``steady`` (final level), ``overshoot`` (peak/steady after the last
    switch, where the peak counts only a rise above the start level; 1 for monotone
    responses; NaN if steady ~ 0), ``pulse_amplitude`` (max above both start and end levels),
    ``n_peaks``, ``period`` (mean time between peaks), ``decay`` (late/earlier amplitude).
    """
    w = _window(sol)
    feats = jax.vmap(lambda y: _node_features(sol.t, y, w, rel_tol, abs_tol), in_axes=1)(sol.states)
    on = jax.vmap(lambda y: _half_time(sol.t, y, sol.inputs, True), in_axes=1)(sol.states)
    off = jax.vmap(lambda y: _half_time(sol.t, y, sol.inputs, False), in_axes=1)(sol.states)
    steady = feats["y_end"]
    tiny = jnp.abs(steady) <= 1e-9
    pulse = jnp.maximum(feats["y_max"] - jnp.maximum(feats["y_start"], steady), 0.0)
    return {
        "t50_on": on,
        "t50_off": off,
        "steady": steady,
        "overshoot": jnp.where(tiny, jnp.nan, (steady + pulse) / jnp.where(tiny, 1.0, steady)),
        "pulse_amplitude": pulse,
        "n_peaks": feats["n_peaks"],
        "period": feats["period"],
        "decay": feats["decay"],
    }


def _dynamic_index(model: Model) -> np.ndarray:
    """Indices of the true state variables (algebraic inputs excluded)."""
    mask = np.concatenate([model.dynamic, np.ones(model.size * model.delay_stages, bool)])
    return np.nonzero(mask)[0]


@eqx.filter_jit
def steady_state(model: Model, y_guess: Array, x: Array | float) -> tuple[Array, Array]:
    """Root of the drift at input value ``x``, by Newton from ``y_guess``.

    Returns:
        (steady state, shape ``(S,)``, success flag).
    """
    dyn = _dynamic_index(model)
    x = jnp.asarray(x, dtype=float)

    def f(z, _):
        y = y_guess.at[dyn].set(z)
        return model.rhs(y, x)[dyn]

    sol = optx.root_find(
        f, optx.Newton(rtol=1e-10, atol=1e-12), y_guess[dyn], max_steps=100, throw=False
    )
    y = y_guess.at[dyn].set(sol.value)
    ok = (sol.result == optx.RESULTS.successful) & jnp.all(jnp.isfinite(y))
    return y, ok


class Stability(eqx.Module):
    """Linearisation at a steady state.

    Attributes:
        steady: Steady state incl. delay stages, shape ``(S,)``.
        eigenvalues: Jacobian eigenvalues (complex), shape ``(S_dyn,)``.
        max_real: Largest real part (continuous time; < 0 is stable), 1/time.
        spectral_radius: Of ``I + eta J`` (discrete map; < 1 is stable).
        leading_imag: |Im| of the eigenvalue with the largest real part.
        found: Whether the steady state was found.
    """

    steady: Array
    eigenvalues: Array
    max_real: Array
    spectral_radius: Array
    leading_imag: Array
    found: Array


@eqx.filter_jit
def linear_stability(model: Model, y_guess: Array, x: Array | float):
    """Steady state near ``y_guess`` and the Jacobian spectrum there (``jax.jacfwd``)."""
    y_ss, ok = steady_state(model, y_guess, x)
    dyn = _dynamic_index(model)
    x = jnp.asarray(x, dtype=float)

    def f(z):
        return model.rhs(y_ss.at[dyn].set(z), x)[dyn]

    J = jax.jacfwd(f)(y_ss[dyn])
    ev = jnp.linalg.eigvals(J)
    lead = jnp.argmax(ev.real)
    rho = jnp.max(jnp.abs(1.0 + model.eta * ev))
    return Stability(y_ss, ev, ev.real[lead], rho, jnp.abs(ev.imag[lead]), ok)


def equilibrate(model: Model, level: float = 0.0, *, t1: float = 200.0) -> Model:
    """Copy of ``model`` whose ``A0`` is its steady state at schedule level ``level``.

    Textbook step responses start from the pre-stimulus steady state (e.g. for C3, Z is
    high while the input is off). Integrates to ``t1`` and polishes with Newton.

    Raises:
        SpecError: If no steady state is reached (e.g. the model oscillates at ``level``).
    """
    from ._kinetics import Schedule
    from ._solve import solve
    from .spec import SpecError

    sched = Schedule(jnp.asarray([0.0]), jnp.asarray([float(level)]))
    sol = solve(model, sched, t1=t1, n_points=2)
    y, ok = steady_state(model, sol.y_final, model.input_value(jnp.asarray(level)))
    if not (bool(ok) and sol.message() == "ok"):
        raise SpecError(f"no steady state at input level {level}: {sol.message()}")
    A0 = model.levels(y, model.input_value(jnp.asarray(level)))
    return eqx.tree_at(lambda m: m.kinetics.A0, model, A0)


def solution_stability(model: Model, sol: Solution) -> Stability:
    """:func:`linear_stability` at the equilibrium nearest a solved trajectory.

    The Newton guess is the mean state over the last half of the run (delay stages equal
    to their node at equilibrium): on a limit cycle the mean lies near the unstable
    equilibrium, where the trajectory's end may not.
    """
    half = sol.states.shape[0] // 2
    mean = jnp.mean(sol.states[half:], axis=0)
    guess = jnp.concatenate([mean] * (1 + model.delay_stages))
    st = linear_stability(model, guess, sol.inputs[-1])
    alt = linear_stability(model, sol.y_final, sol.inputs[-1])
    return jax.tree.map(lambda a, b: jnp.where(st.found, a, b), st, alt)
