"""Compiled helpers over a :class:`CurveModel` (one compile per model structure)."""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np

from ._model import CurveModel

__all__ = ["batched_curves", "batched_loglik", "batched_run_params", "neg_log_joint_and_grad",
           "unflatten"]


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
        parts[n] = flat[..., i:i + sz].reshape(*flat.shape[:-1], *sh)
        i += sz
    return parts


@eqx.filter_jit
def batched_loglik(cm: CurveModel, params: dict[str, jax.Array]) -> jax.Array:
    """Pointwise log-likelihood for a batch of draws, ``(S, n_obs)``."""
    return jax.lax.map(cm.pointwise_loglik, params, batch_size=256)


@eqx.filter_jit
def batched_run_params(cm: CurveModel, params: dict[str, jax.Array]) -> jax.Array:
    """Per-run natural parameters for a batch of draws, ``(S, R, D)``."""
    return jax.vmap(lambda p: cm.run_params(p["z"], p.get("c"), p.get("tau_z"), p.get("eps")))(
        params)


@eqx.filter_jit
def batched_curves(cm: CurveModel, theta: jax.Array, ts: jax.Array) -> jax.Array:
    """Mean curves for a batch of per-run parameters ``(S, R, D)`` at ``ts``: ``(S, R, T, N)``."""
    return jax.lax.map(lambda x: cm.curves(x, ts)[0], theta, batch_size=64)
