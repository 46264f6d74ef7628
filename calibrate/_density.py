"""The log density of a fit and its batched evaluations (curves, log-likelihoods, run
parameters), compiled once per model structure."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from simulate import SolveOptions

from ._model import CurveModel
from ._readout import readout_curves
from ._solvers import fixed_substeps, solve_at

__all__ = [
    "batched_curves",
    "batched_loglik",
    "batched_run_params",
    "neg_log_joint_and_grad",
    "solver_error",
    "unflatten",
    "warm_solver_error",
]

#: The tight adaptive reference of :func:`solver_error` (Tsit5, rtol 1e-9, atol 1e-11).
_REFERENCE = SolveOptions(rtol=1e-9, atol=1e-11, max_steps=100_000)


@eqx.filter_jit
def neg_log_joint_and_grad(cm: CurveModel, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Negative log joint and its gradient at the flat latent vector ``x`` (sites in
    :meth:`CurveModel.sites` order); compiled once per model structure."""
    return jax.value_and_grad(lambda v: -cm.log_joint_fn()(unflatten(cm, v)))(x)


def unflatten(cm: CurveModel, flat: jax.Array) -> dict[str, jax.Array]:
    """Split a flat latent vector ``(..., P)`` into the model's sites."""
    parts, i = {}, 0
    for n, sh in cm.sites().items():
        sz = int(np.prod(sh))
        parts[n] = flat[..., i : i + sz].reshape(*flat.shape[:-1], *sh)
        i += sz
    return parts


@eqx.filter_jit
def batched_loglik(cm: CurveModel, params: dict[str, jax.Array]) -> jax.Array:
    """Pointwise log-likelihood for a batch of draws, ``(S, n_obs)``."""
    return jax.lax.map(cm.pointwise_loglik, params, batch_size=256)


@eqx.filter_jit
def batched_run_params(cm: CurveModel, params: dict[str, jax.Array]) -> jax.Array:
    """Per-run natural parameters for a batch of draws, ``(S, R, D)``."""
    return jax.vmap(cm.theta)(params)


def batched_curves(cm: CurveModel, theta: jax.Array, ts: np.ndarray) -> jax.Array:
    """Mean curves for a batch of per-run parameters ``(S, R, D)`` at ``ts``: ``(S, R, T, N)``.

    The RK4 step count is chosen from ``ts`` so that no step exceeds ``config.dt``.
    """
    ts = np.asarray(ts, dtype=float)
    return _batched_curves(cm, theta, tuple(ts.tolist()), fixed_substeps(ts, cm.config.dt))


@eqx.filter_jit
def _batched_curves(
    cm: CurveModel, theta: jax.Array, ts: tuple[float, ...], substeps: int
) -> jax.Array:
    # ts static (concrete): the quad solver builds its grid from it
    return jax.lax.map(lambda x: cm.curves(x, np.asarray(ts), substeps)[0], theta, batch_size=64)


def solver_error(cm: CurveModel, params: dict[str, jax.Array]) -> float:
    """Max abs difference of the configured solver's curves at ``params`` from a reference,
    over all runs, steps and agents.

    The reference of the fixed-grid solvers (``rk4``, ``quad``) is RK4 at 1/8 of their step
    (its error ~8^4 times smaller than RK4's at the step; compiled in a fraction of a
    second); otherwise, or where a rate times that step exceeds 0.5 (too fast for it), a
    tight adaptive solve (Tsit5, rtol 1e-9, atol 1e-11; seconds to compile). Runs with
    pulses or logged regulators are solved by the quad solver alone: its reference is the
    quad solve on cells of 1/8 the size. The ``map`` dynamics are exact (0).
    """
    if cm.config.dynamics == "map":
        return 0.0
    if cm.quad_only:  # pulses, logged regulators: the quad on its own grid at 1/8 the cell
        return float(_fine_quad_error(cm, params, tuple(np.asarray(cm.ts).tolist())))
    if cm.config.solver in ("rk4", "quad"):
        err, ok = _fine_rk4_error(cm, params, *_fine_steps(cm))
        if bool(ok):
            return float(err)
    return float(_adaptive_error(cm, params))


def warm_solver_error(cm: CurveModel, params: dict[str, jax.Array]) -> None:
    """Compile :func:`solver_error`'s reference of the fixed-grid solvers (run once at
    ``params``), e.g. in a thread while the MAP fit keeps the other core busy."""
    if cm.quad_only:
        jax.block_until_ready(_fine_quad_error(cm, params, tuple(np.asarray(cm.ts).tolist())))
    elif cm.config.solver in ("rk4", "quad") and cm.config.dynamics == "ode":
        jax.block_until_ready(_fine_rk4_error(cm, params, *_fine_steps(cm)))


def _fine_steps(cm: CurveModel) -> tuple[int, jax.Array]:
    """RK4 steps per interval of the reference (8 per solver step) and the longest step."""
    substeps = cm.substeps * 8
    gaps = np.diff(np.concatenate([[0.0], np.asarray(cm.ts, dtype=float)]))
    return substeps, jnp.asarray(gaps.max() / substeps)


@eqx.filter_jit
def _fine_rk4_error(
    cm: CurveModel, params: dict[str, jax.Array], substeps: int, h: jax.Array
) -> tuple[jax.Array, jax.Array]:
    theta = cm.theta(params)
    A, _ = cm.curves(theta)
    ref, ok = cm.curves(theta, substeps=substeps, solver="rk4")
    # trusted where every rate is slow on the reference step h (rate x step <= 0.5)
    col = {b: [i for i, x in enumerate(cm.layout.bases) if x == b] for b in ("rho", "delta")}
    fastest = jnp.max(theta[:, col["rho"]]) + jnp.max(theta[:, col["delta"]])  # >= any rate
    ok = jnp.all(ok) & jnp.all(jnp.isfinite(A)) & (fastest * h <= 0.5)
    return jnp.max(jnp.abs(A - ref)), ok


@eqx.filter_jit
def _fine_quad_error(
    cm: CurveModel, params: dict[str, jax.Array], ts: tuple[float, ...]
) -> jax.Array:
    theta = cm.theta(params)
    A, _ = cm.curves(theta)  # ts static (concrete): the fine grid is built from it
    ref, _ = cm.curves(theta, np.asarray(ts), solver="quad", dt=cm.config.dt / 8)
    return jnp.max(jnp.abs(A - ref))


@eqx.filter_jit
def _adaptive_error(cm: CurveModel, params: dict[str, jax.Array]) -> jax.Array:
    theta = cm.theta(params)
    A, _ = cm.curves(theta)
    ref, _ = jax.vmap(
        lambda th, w: solve_at(cm.with_params(th, w), jnp.asarray(cm.ts), options=_REFERENCE)
    )(theta, cm.weights_for(theta))
    ref = readout_curves(ref, theta, cm.layout)  # observed, as the curves are
    return jnp.max(jnp.abs(A - ref))
