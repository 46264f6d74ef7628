"""Finite learning steps in the fitted model: simulate's discrete map, one step per training step.

Under ``FitConfig(dynamics="map")`` the competences of a run follow, per training step ``t``
(input on from step 0)::

    y_{t+1} = B(y_t, y_t + eta F(y_{t - lag}))

``F`` is simulate's drift (:meth:`simulate.Model.rhs`), so with no lag and no bound hit this
is exactly ``simulate.solve(model, method="map")`` (``A <- A + eta F(A)``), its step ``t``
saved at training step ``t``. ``eta`` is dimensionless here (the rates are per training
step): a step past ``eta (rho + delta) ~ 2`` overshoots, flips and can collapse.

Policy lag (``FitConfig.lag``):

* ``stale`` — the update applied at step ``t`` is computed from the state of step
  ``t - lag`` (rollouts of a policy ``lag`` steps old); a fractional lag interpolates
  linearly between the two whole steps around it, and the history before step 0 is the
  initial state. For the linear update ``x_{t+1} = x_t - eta lam x_{t - tau}`` this is the
  delayed map whose stability boundary is ``eta lam < 2 sin(pi / (2 (2 tau + 1)))``.
* ``erlang`` — simulate's Erlang chain (:attr:`simulate.Model.delay_stages`) on the
  regulation, its mean lag ``tau = eta * lag`` in simulate's time (``lag`` training steps).

The bound ``B`` keeps competences in [0, 1]: a step that would leave [0, 1] is clipped to
it, and a competence at 0 stays at 0 (absorbing: an agent that never succeeds gets no
reward signal to learn from, as in policy-gradient RL with a binary reward). Collapse is
thus a step that overshoots to 0, after which the competence stays there. Delay stages are
not bounded (they are averages of bounded levels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import simulate
from simulate.common import ConfigError

from ._solvers import finite_levels

__all__ = ["MECHANISM_SLOPES", "competence_bound", "delayed_map", "mechanism_starts", "solve_map"]

#: Slopes (natural units) of the ``eta`` and ``lag`` links that the MAP fit also starts from.
#: A collapsed curve is flat in the parameters (0 absorbs), so the likelihood of a run past
#: the critical step has no gradient toward the slope that collapses it: L-BFGS from the
#: prior median (slope 0) stalls in a mode that misses the collapse.
MECHANISM_SLOPES = (0.5, 1.0, 2.0, 3.0)

Bound = Callable[[jax.Array, jax.Array], jax.Array]


def competence_bound(n_nodes: int) -> Bound:
    """The bound ``B(y, y_next)`` of the first ``n_nodes`` entries of the state: clipped to
    [0, 1], and 0 where the current level is 0 (absorbing)."""

    def bound(y: jax.Array, y_next: jax.Array) -> jax.Array:
        A, A_next = y[:n_nodes], y_next[:n_nodes]
        A_next = jnp.where(A > 0.0, jnp.clip(A_next, 0.0, 1.0), 0.0)
        return y_next.at[:n_nodes].set(A_next)

    return bound


def delayed_map(
    f: Callable[[jax.Array], jax.Array],
    y0: jax.Array,
    steps: int,
    eta: jax.Array | float,
    *,
    lag: jax.Array | float | None = None,
    max_lag: int = 0,
    bound: Bound | None = None,
) -> jax.Array:
    """Iterate ``y_{t+1} = B(y_t, y_t + eta f(y_{t - lag}))`` for ``steps`` steps.

    Args:
        f: Drift, state ``(S,)`` to ``(S,)``.
        y0: Initial state ``(S,)``; also the history before step 0.
        steps: Number of steps (static).
        eta: Step size (dimensionless per step).
        lag: Delay in steps (``>= 0``, fractional allowed: linear interpolation between
            whole steps; cut to ``max_lag``); None: no delay.
        max_lag: Length of the history kept (static; with ``lag``, ``>= 1``).
        bound: ``B(y, y_next)``; None: no bound.

    Returns:
        The states at steps ``0..steps``, shape ``(steps + 1, S)``.
    """
    y0 = jnp.asarray(y0, dtype=float)
    keep = bound or (lambda y, y_next: y_next)
    if lag is None:

        def step(y, _):
            y_next = keep(y, y + eta * f(y))
            return y_next, y_next

        _, ys = jax.lax.scan(step, y0, None, length=steps)
        return jnp.concatenate([y0[None], ys])
    if max_lag < 1:
        raise ConfigError(f"max_lag must be >= 1 with a lag, got {max_lag}")
    d = jnp.clip(jnp.asarray(lag, dtype=float), 0.0, float(max_lag))
    i = jnp.minimum(jnp.floor(d), max_lag - 1)
    frac = d - i
    i = i.astype(jnp.int32)

    def delayed(hist, _):  # hist[j] = y_{t - j}, j = 0..max_lag
        stale = (1.0 - frac) * hist[i] + frac * hist[i + 1]
        y = hist[0]
        y_next = keep(y, y + eta * f(stale))
        return jnp.concatenate([y_next[None], hist[:-1]]), y_next

    hist0 = jnp.broadcast_to(y0, (max_lag + 1, *y0.shape))
    _, ys = jax.lax.scan(delayed, hist0, None, length=steps)
    return jnp.concatenate([y0[None], ys])


def solve_map(
    model: simulate.Model,
    ts: np.ndarray,
    *,
    lag: jax.Array | None = None,
    max_lag: int = 0,
) -> tuple[jax.Array, jax.Array]:
    """Competences of ``model`` under the bounded map at training steps ``ts``.

    One map step per training step with step size ``model.eta``; a step ``ts`` between
    whole steps is interpolated linearly.

    Args:
        model: The simulate model (rates per training step; ``eta``, and ``tau`` with
            Erlang stages, written in).
        ts: Increasing steps ``>= 0``, concrete (the number of map steps is
            ``ceil(max ts)``), shape ``(T,)``.
        lag: ``stale`` lag in training steps (None: none).
        max_lag: History kept for ``lag``.

    Returns:
        ``(A, ok)``: levels of shape ``(T, N)`` and a finiteness flag.
    """
    t = np.asarray(ts, dtype=float)
    if t.ndim != 1 or t.size == 0 or np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ConfigError("ts must be a non-empty 1-d array of finite steps >= 0")
    steps = max(1, int(np.ceil(t.max() - 1e-9)))
    x = model.input_value(jnp.asarray(1.0))
    ys = delayed_map(
        lambda y: model.rhs(y, x),
        model.initial_state(),
        steps,
        model.eta,
        lag=lag,
        max_lag=max_lag,
        bound=competence_bound(model.size),
    )
    lo = np.minimum(np.floor(t + 1e-9), steps).astype(np.int64)
    hi = np.minimum(lo + 1, steps)
    w = jnp.asarray(np.clip(t - lo, 0.0, 1.0))[:, None]
    A = (1.0 - w) * ys[lo, : model.size] + w * ys[hi, : model.size]
    return finite_levels(A)


def mechanism_starts(
    link_bases: Sequence[str], offset: int, size: int, slope_sd: float
) -> np.ndarray:
    """Extra MAP starts: the prior median (all latents 0) with every ``eta``/``lag`` link
    slope at one of :data:`MECHANISM_SLOPES`.

    Args:
        link_bases: Base of each link slope, in order (``CurveModel.link_rows``' ``base``).
        offset: Position of the first slope in the flat latent vector (the layout's size:
            the slopes ``c`` follow ``z``, :meth:`calibrate.CurveModel.sites`).
        size: Length of the flat latent vector.
        slope_sd: Prior sd of the slopes (a slope ``c`` is ``slope_sd`` times its latent).

    Returns:
        Starts ``(k, size)``; ``(0, size)`` without ``eta``/``lag`` links.
    """
    rows = [offset + i for i, b in enumerate(link_bases) if b in ("eta", "lag")]
    slopes = MECHANISM_SLOPES if rows else ()
    out = np.zeros((len(slopes), size))
    for k, c in enumerate(slopes):
        out[k, rows] = c / slope_sd
    return out
