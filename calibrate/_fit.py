"""Inference: optax MAP warm start, NUTS with vectorised chains, SVI."""

from __future__ import annotations

import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoMultivariateNormal
from numpyro.infer.initialization import init_to_value

import simulate
from simulate.spec import NetworkSpec

from ._config import FitConfig
from ._data import CurveData
from ._model import CurveModel, build_model
from ._posterior import Posterior

__all__ = ["fit", "fit_model", "map_fit"]


def _value_and_grad(f, p, forward: bool):
    if not forward:
        return jax.value_and_grad(f)(p)
    return f(p), jax.jacfwd(f)(p)


def map_fit(
    cm: CurveModel, *, key: jax.Array, steps: int | None = None, starts: int | None = None,
    lr: float = 0.08,
) -> tuple[dict[str, jax.Array], float]:
    """Maximum a posteriori latent values by Adam from several starts (vmapped).

    Returns:
        ``(params, log_joint)`` of the best start; start 0 is the prior median.
    """
    cfg = cm.config
    steps = cfg.map_steps if steps is None else steps
    starts = cfg.map_starts if starts is None else starts
    sites = cm.sites()
    f = cm.log_joint_fn()
    keys = jax.random.split(key, len(sites))
    inits = {}
    for (name, shape), k in zip(sites.items(), keys, strict=True):
        x = 0.7 * jax.random.normal(k, (starts, *shape))
        inits[name] = x.at[0].set(0.0)
    if steps == 0:
        p0 = {k: v[0] for k, v in inits.items()}
        return p0, float(f(p0))
    sched = optax.cosine_decay_schedule(lr, steps, alpha=0.05)
    opt = optax.adam(sched)

    def loss(p):
        return -f(p)

    def run(p0):
        def step(carry, _):
            p, s = carry
            val, g = _value_and_grad(loss, p, cfg.forward_mode)
            g = jax.tree.map(lambda x: jnp.where(jnp.isfinite(x), x, 0.0), g)
            upd, s = opt.update(g, s, p)
            return (optax.apply_updates(p, upd), s), val

        (p, _), _ = jax.lax.scan(step, (p0, opt.init(p0)), None, length=steps)
        return p, loss(p)

    ps, losses = jax.jit(jax.vmap(run))(inits)
    losses = np.where(np.isfinite(np.asarray(losses)), np.asarray(losses), np.inf)
    best = int(np.argmin(losses))
    return {k: v[best] for k, v in ps.items()}, float(-losses[best])


def _nuts(cm: CurveModel, init: dict[str, jax.Array], key: jax.Array, progress: bool):
    cfg = cm.config
    k_jit, k_run = jax.random.split(key)
    chains = cfg.chains
    init_params = {
        name: v[None] + 0.05 * jax.random.normal(jax.random.fold_in(k_jit, i), (chains, *v.shape))
        for i, (name, v) in enumerate(init.items())
    }
    kernel = NUTS(
        cm.model, dense_mass=cfg.dense_mass, target_accept_prob=cfg.target_accept,
        max_tree_depth=cfg.max_tree_depth, init_strategy=init_to_value(values=init),
        forward_mode_differentiation=cfg.forward_mode,
    )
    mcmc = MCMC(kernel, num_warmup=cfg.warmup, num_samples=cfg.samples, num_chains=chains,
                chain_method="vectorized", progress_bar=progress)
    mcmc.run(k_run, init_params=init_params if chains > 1 else init,
             extra_fields=("diverging", "num_steps"))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()
               if k in cm.sites()}
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {"diverging": np.asarray(extra["diverging"]),
             "num_steps": np.asarray(extra["num_steps"])}
    if chains == 1:
        samples = {k: v.reshape(1, *v.shape[-(v.ndim - 1):]) if v.shape[0] != 1 else v
                   for k, v in samples.items()}
    return samples, stats


def _svi(cm: CurveModel, init: dict[str, jax.Array], key: jax.Array, progress: bool):
    cfg = cm.config
    guide = AutoMultivariateNormal(cm.model, init_loc_fn=init_to_value(values=init),
                                   init_scale=0.05)
    svi = SVI(cm.model, guide, optax.adam(optax.cosine_decay_schedule(0.01, cfg.svi_steps, 0.1)),
              Trace_ELBO())
    k1, k2 = jax.random.split(key)
    res = svi.run(k1, cfg.svi_steps, progress_bar=progress)
    draws = guide.sample_posterior(k2, res.params, sample_shape=(cfg.chains, cfg.samples))
    samples = {k: np.asarray(v) for k, v in draws.items() if k in cm.sites()}
    n = cfg.chains * cfg.samples
    stats = {"diverging": np.zeros((cfg.chains, cfg.samples), bool),
             "num_steps": np.zeros((cfg.chains, cfg.samples), np.int64),
             "elbo_loss": np.asarray(res.losses)[-min(100, n):]}
    return samples, stats


def fit_model(
    cm: CurveModel, *, key: jax.Array, progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> Posterior:
    """Run the configured inference on a prepared :class:`CurveModel`."""
    cfg = cm.config
    say = log or (lambda s: None)
    k_map, k_inf = jax.random.split(key)
    t0 = time.perf_counter()
    say(f"MAP warm start ({cfg.map_starts} starts x {cfg.map_steps} Adam steps)")
    init, lj = map_fit(cm, key=k_map)
    t_map = time.perf_counter() - t0
    say(f"MAP log joint {lj:.2f} in {t_map:.1f} s; {cfg.method.upper()} "
        f"({cfg.chains} chains x {cfg.samples} samples)")
    t1 = time.perf_counter()
    if cfg.method == "nuts":
        samples, stats = _nuts(cm, init, k_inf, progress)
    elif cfg.method == "svi":
        samples, stats = _svi(cm, init, k_inf, progress)
    else:
        samples = {k: np.broadcast_to(np.asarray(v), (1, 1, *np.shape(v))).copy()
                   for k, v in init.items()}
        stats = {"diverging": np.zeros((1, 1), bool), "num_steps": np.zeros((1, 1), np.int64)}
    t_inf = time.perf_counter() - t1
    timing = {"map_s": t_map, "inference_s": t_inf, "total_s": time.perf_counter() - t0}
    return Posterior(cm, samples, stats, {k: np.asarray(v) for k, v in init.items()},
                     timing=timing, map_log_joint=lj)


def fit(
    data: CurveData,
    network: simulate.Network | NetworkSpec | str = "C1",
    config: FitConfig | None = None,
    *,
    key: jax.Array,
    gate: str = "AND",
    nodes: tuple[str, ...] | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> Posterior:
    """Fit the competence kinetics of ``network`` to ``data``.

    Args:
        data: Validated curves (see :func:`load_inputs`).
        network: Preset (``C1``, ``I1-OR``), spec, spec path or Network.
        config: Fit options (default :class:`FitConfig`).
        key: PRNG key (keyword-only).
        gate: Gate for a bare motif name.
        nodes: Agent names for the preset's X, Y, Z.
        progress: Show a progress bar while sampling.
        log: Optional callback for one-line progress messages.

    Returns:
        The :class:`Posterior`.
    """
    cm = build_model(data, network, config, gate=gate, nodes=nodes)
    return fit_model(cm, key=key, progress=progress, log=log)
