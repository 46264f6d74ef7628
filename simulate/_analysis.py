"""Regime labels, response metrics and linear stability.

Everything here is pure ``jax.numpy`` on one :class:`~simulate.Solution`, so sweeps
``jax.vmap`` it over batches. Regimes are ordered by severity; a network's label is the
most severe of its nodes' labels.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array

from ._features import node_features, noise_features, window
from ._kinetics import Model
from ._regimes import REGIME_NAMES as REGIME_NAMES
from ._regimes import REGIME_SEVERITY as REGIME_SEVERITY
from ._regimes import Regime as Regime
from ._solve import Solution

__all__ = [
    "REGIME_NAMES",
    "REGIME_SEVERITY",
    "Regime",
    "Stability",
    "classify",
    "equilibrate",
    "linear_stability",
    "metrics",
    "solution_stability",
    "steady_state",
]


def above_noise(sd: Array, n: Array, noise_sd: Array, z: float = 1.645) -> Array:
    """Whether fluctuations of sd ``sd`` over ``n`` samples exceed measurement noise of sd
    ``noise_sd``: ``n sd^2 / noise_sd^2`` above the chi-square(n - 1) quantile at ``z``
    (Wilson-Hilferty approximation; 1.645 = the one-sided 5 % level)."""
    k = jnp.maximum(n - 1.0, 1.0)
    q = k * (1.0 - 2.0 / (9.0 * k) + z * jnp.sqrt(2.0 / (9.0 * k))) ** 3
    return n * sd**2 > q * jnp.maximum(noise_sd, 1e-12) ** 2


@eqx.filter_jit
def classify(
    sol: Solution,
    *,
    bounded: bool = True,
    rel_tol: float = 0.02,
    abs_tol: float = 1e-6,
    collapse_level: float = 0.05,
    sustain_ratio: float = 0.5,
    growth_ratio: float = 2.0,
    diverge_level: float = 1e6,
    acf_threshold: float = 0.35,
    acf_sustained: float = 0.5,
    noise_band: float = 4.0,
    noise_sd: Array | None = None,
) -> tuple[Array, Array]:
    """Regime of a trajectory, judged on the part after the last input switch.

    Per node, with band ``h = max(rel_tol * max|A|, abs_tol)``, "late" the last quarter of
    the window and "earlier" its second quarter, and turning points counted by a zig-zag of
    height ``h``:

    * ``failed`` if the solver failed (or, off the map, a value is not finite);
    * ``collapse`` if the values diverge (``|A|`` above ``diverge_level`` × its start scale,
      or non-finite in the discrete map), or — bounded kinetics, input on — the node settles
      below ``collapse_level``;
    * ``sustained oscillation`` if the node still turns (>= 2 turning points in the second
      half of the window) with a
      late amplitude above ``h`` and at least ``sustain_ratio`` × the earlier one, and not
      still growing (late > ``growth_ratio`` × earlier);
    * ``damped oscillation`` if >= 2 turning points lie beyond the band on alternating
      sides of the end level, each closer to it than the one before, and the node has
      settled (late amplitude <= ``h``) or still turns late with a decaying amplitude. A
      single turning point, or a slow transit through the band, is never an oscillation
      (a pure FFL, with its real spectrum, cannot oscillate);
    * ``unsettled`` if it has not settled by the end otherwise (a drift, or growth);
    * ``overshoot/pulse`` if it leaves the interval between its start and end levels by
      more than ``h``; else ``converged``.

    The network's label is its most severe node's (:data:`REGIME_SEVERITY`: ``failed`` >
    ``collapse`` > ``sustained`` > ``unsettled`` > ``damped`` > ``overshoot`` >
    ``converged``).

    Args:
        sol: One (unbatched) solution; ``jax.vmap`` this function for batches.
        bounded: Whether the low-level ``collapse`` applies (True for competence kinetics).
        rel_tol: Band half-width relative to the node's largest level.
        abs_tol: Absolute floor of the band.
        collapse_level: Final competence below which a node has collapsed.
        sustain_ratio: Late/earlier amplitude ratio above which oscillation is sustained.
        growth_ratio: Late/earlier amplitude ratio above which the node is still growing.
        diverge_level: Level (times ``max(1, |start level|)``) above which values diverge.
        acf_threshold: Noisy (``sde``) solutions only: an oscillation needs an ACF trough
            below ``-acf_threshold`` then a peak above it (noise alone crosses a band at
            random, so band crossings are not evidence there).
        acf_sustained: Noisy solutions: ACF peak above which an oscillation is sustained
            (phase-coherent over a period), else damped (noise-excited quasi-cycles).
        noise_band: Noisy solutions: an overshoot must exceed the band by this many
            fluctuation sds, and the settling band is at least that wide, so noise
            excursions are neither overshoots nor keep a collapse unsettled.
        noise_sd: Noisy solutions: known measurement-noise sd of each node, shape ``(N,)``
            (e.g. ``sqrt(A(1-A)/n_eval)`` for a competence measured on ``n_eval`` probes).
            An oscillation must then also fluctuate more than measurement noise alone, by a
            one-sided chi-square test at the 5 % level on the late window's variance.

    Returns:
        (network regime, per-node regimes, shape ``(N,)``), as ints of :class:`Regime`.
    """
    w = window(sol)
    feats = jax.vmap(lambda y: node_features(sol.t, y, w, rel_tol, abs_tol), in_axes=1)(sol.states)
    h, a_late, a_mid = feats["h"], feats["a_late"], feats["a_mid"]
    overshoot = feats["excursion"] > h
    settled = a_late <= h
    growing = (a_mid > h) & (a_late > growth_ratio * a_mid)
    late_turns = feats["n_turn_late"] >= 2
    y_end = feats["y_end"]
    if sol.method == "sde":
        nz = jax.vmap(lambda y: noise_features(y, w, acf_threshold), in_axes=1)(sol.states)
        noise = noise_band * nz["sd"]
        osc = nz["osc"] & (nz["sd"] > h)
        if noise_sd is not None:
            osc = osc & above_noise(nz["sd"], nz["n"], jnp.asarray(noise_sd))
        sustained = osc & (nz["peak"] >= acf_sustained)
        damped = osc & ~sustained
        y_end, y0 = nz["level"], feats["y_start"]
        excursion = jnp.maximum(
            feats["y_max"] - jnp.maximum(y0, y_end), jnp.minimum(y0, y_end) - feats["y_min"]
        )
        overshoot = excursion > h + noise
        settled = ~osc | (a_late <= jnp.maximum(h, noise))
        unsettled = jnp.zeros_like(osc)
    else:
        sustained = late_turns & ~settled & (a_late >= sustain_ratio * a_mid) & ~growing
        damped = (feats["alt_chain"] >= 2) & ~sustained & (settled | (late_turns & ~growing))
        unsettled = ~settled & ~sustained & ~damped
    label = jnp.where(
        sustained,
        int(Regime.SUSTAINED),
        jnp.where(
            damped,
            int(Regime.DAMPED),
            jnp.where(
                unsettled,
                int(Regime.UNSETTLED),
                jnp.where(overshoot, int(Regime.OVERSHOOT), int(Regime.CONVERGED)),
            ),
        ),
    )
    if bounded:
        collapsed = (sol.inputs[-1] > 0) & (y_end < collapse_level) & settled
        label = jnp.where(collapsed, int(Regime.COLLAPSE), label)
    finite = jnp.all(jnp.isfinite(sol.states), axis=0)
    y0 = feats["y_start"]
    scale = jnp.maximum(1.0, jnp.abs(jnp.where(jnp.isfinite(y0), y0, 0.0)))
    values = jnp.where(jnp.isfinite(sol.states), jnp.abs(sol.states), 0.0)
    huge = jnp.any(values > diverge_level * scale, axis=0)
    if sol.method == "map":  # the map's values blow up past the float range: divergence
        diverged = huge | ~finite
        failed = (sol.code == 1) & ~diverged
    else:
        diverged = huge & finite
        failed = (sol.code != 0) | ~finite
    label = jnp.where(diverged, int(Regime.COLLAPSE), label)
    label = jnp.where(failed, int(Regime.FAILED), label)
    rank = jnp.asarray(REGIME_SEVERITY)[label]
    return label[jnp.argmax(rank)], label


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
    w = window(sol)
    feats = jax.vmap(lambda y: node_features(sol.t, y, w, rel_tol, abs_tol), in_axes=1)(sol.states)
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
        jacobian: ``J = d(drift)/dy`` at the steady state over the dynamic state (levels
            of dynamic nodes, then delay stages), shape ``(S_dyn, S_dyn)``, 1/time.
    """

    steady: Array
    eigenvalues: Array
    max_real: Array
    spectral_radius: Array
    leading_imag: Array
    found: Array
    jacobian: Array


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
    return Stability(y_ss, ev, ev.real[lead], rho, jnp.abs(ev.imag[lead]), ok, J)


def equilibrate(model: Model, level: float = 0.0, *, t1: float = 200.0) -> Model:
    """Copy of ``model`` whose ``A0`` is its steady state at schedule level ``level``.

    Textbook step responses start from the pre-stimulus steady state (e.g. for C3, Z is
    high while the input is off). Integrates to ``t1`` and polishes with Newton.

    Raises:
        SpecError: If no steady state is reached (e.g. the model oscillates at ``level``).
    """
    from ._kinetics import Schedule
    from ._options import SolveOptions
    from ._solve import solve
    from .spec import SpecError

    sched = Schedule(jnp.asarray([0.0]), jnp.asarray([float(level)]))
    sol = solve(model, sched, t1=t1, options=SolveOptions(n_points=2))
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
