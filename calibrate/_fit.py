"""Inference: L-BFGS MAP warm start, NUTS (parallel or vectorised chains), SVI, Laplace."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoMultivariateNormal
from numpyro.infer.initialization import init_to_value

import simulate
from simulate.spec import NetworkSpec

from ._build import build_model
from ._config import FitConfig
from ._curve_data import CurveData
from ._density import (
    batched_loglik,
    neg_log_joint_and_grad,
    solver_error,
    unflatten,
    warm_solver_error,
)
from ._map import mechanism_starts
from ._model import CurveModel
from ._posterior import Posterior
from ._reparam import SamplingCoords, start_energies
from ._sampler import compile_chains, run_chains

__all__ = ["chain_method", "fit", "fit_model", "laplace", "map_fit"]


class _Flat:
    """Flatten the latent sites of a model into one vector (in :meth:`sites` order)."""

    def __init__(self, cm: CurveModel):
        self.cm = cm
        self.names = tuple(cm.sites())
        self.size = int(sum(int(np.prod(sh)) for sh in cm.sites().values()))

    def unflatten(self, flat):
        return unflatten(self.cm, flat)

    def flatten(self, params) -> np.ndarray:
        return np.concatenate([np.ravel(np.asarray(params[n])) for n in self.names])


FlatParams = _Flat  # public name (benchmarks build their own samplers on it)


def _neg_value_and_grad(cm: CurveModel):
    flat = _Flat(cm)

    def fun(x):
        v, g = neg_log_joint_and_grad(cm, jnp.asarray(x, dtype=float))
        v, g = float(v), np.asarray(g, dtype=float)
        if not np.isfinite(v):
            return 1e12, np.zeros_like(g)
        return v, np.where(np.isfinite(g), g, 0.0)

    return flat, fun


def map_fit(
    cm: CurveModel,
    *,
    key: jax.Array,
    steps: int | None = None,
    starts: int | None = None,
    objective: tuple[_Flat, Callable] | None = None,
) -> tuple[dict[str, jax.Array], float]:
    """Maximum a posteriori latent values by L-BFGS (jitted value and gradient of the log
    joint, scipy's optimiser) from several starts; start 0 is the prior median (with the
    map dynamics also :func:`calibrate._map.mechanism_starts`).

    Returns:
        ``(params, log_joint)`` of the best start.
    """
    from scipy.optimize import minimize

    cfg = cm.config
    steps = cfg.map_steps if steps is None else steps
    starts = cfg.map_starts if starts is None else starts
    flat, fun = objective or _neg_value_and_grad(cm)
    slope_sd = cfg.priors.slope_sd
    x0s = np.array(0.7 * jax.random.normal(key, (starts, flat.size)))
    x0s[0] = 0.0
    bases = [r.base for r in cm.link_rows]  # the map's eta/lag slopes: starts across them
    x0s = np.concatenate([x0s, mechanism_starts(bases, cm.layout.size, flat.size, slope_sd)])
    best_x, best_v = x0s[0], fun(x0s[0])[0]
    if steps > 0:
        for x0 in x0s:
            res = minimize(fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": steps})
            if np.isfinite(res.fun) and res.fun < best_v:
                best_x, best_v = res.x, float(res.fun)
    p = flat.unflatten(jnp.asarray(best_x))
    return p, -float(best_v)


def laplace(
    cm: CurveModel,
    params: dict[str, jax.Array],
    *,
    objective: tuple[_Flat, Callable] | None = None,
) -> tuple[tuple[str, ...], np.ndarray]:
    """Covariance of the Laplace approximation at ``params`` (sites in :meth:`sites` order).

    The Hessian (central differences of the reverse-mode gradient: diffrax's checkpointed
    adjoint supports one reverse pass, not forward-over-reverse) has its eigenvalues
    clipped to [1, 1e8] (the prior is standard normal, so a posterior variance above 1
    means a non-converged MAP), giving a positive definite matrix.
    """
    flat, fun = objective or _neg_value_and_grad(cm)
    x0 = flat.flatten(params)
    h = 1e-4
    H = np.empty((x0.size, x0.size))
    for j in range(x0.size):
        e = np.zeros(x0.size)
        e[j] = h
        H[:, j] = (fun(x0 + e)[1] - fun(x0 - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    if not np.all(np.isfinite(H)):
        return flat.names, np.eye(x0.size)
    w, V = np.linalg.eigh(H)
    w = np.clip(w, 1.0, 1e8)
    return flat.names, (V / w) @ V.T


def chain_method(cfg: FitConfig) -> str:
    """The NUTS chain method of ``cfg``, with ``auto`` resolved on the present devices.

    Parallel chains (one device each) cost the sum of their trajectories spread over the
    cores; vectorised chains cost the longest trajectory times the batch (measured on the
    8-run benchmark, 2 cores: 6.4 vs 13.7 ms per leapfrog step).

    The adaptive ``tsit5`` likelihood differentiated in reverse mode runs vectorised: under
    ``jax.pmap`` (a ``shard_map`` over a manual mesh since JAX 0.5) diffrax's checkpointed
    adjoint fails (equinox 0.13 closure-converts the solver loop's body with example
    arguments that carry no mesh, while the backward pass calls it with loop states that
    carry the pmap's manual mesh: "Closure-converted function called with different
    dynamic arguments"). Forward-mode derivatives and the fixed-grid solvers are unaffected.
    """
    if cfg.chain_method != "auto":
        return cfg.chain_method
    pmap_safe = cfg.solver != "tsit5" or cfg.forward_mode
    if cfg.chains > 1 and jax.local_device_count() >= cfg.chains and pmap_safe:
        return "parallel"
    return "vectorized"


@eqx.filter_jit
def _linearised(coords: SamplingCoords, z: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``w(z)`` and its Jacobian ``dw/dz`` (one compiled program, not ~200 eager ops)."""
    return coords.from_z(z), jax.jacfwd(coords.from_z)(z)


def _warm_compile(cm: CurveModel) -> None:
    """Compile (running each once at the prior median) the solver check and, for NUTS,
    the linearised sampling coordinates, in a thread during the MAP fit (benchmark: ~1.7 s
    off the wall time). Compiling the NUTS chains there too was a net loss (XLA's compile
    of that program keeps ~1.5 cores busy: the MAP slowed from 5 s to 11-15 s)."""
    cfg = cm.config
    z = jnp.zeros(_Flat(cm).size)
    warm_solver_error(cm, unflatten(cm, z))
    if cfg.method == "nuts":
        _linearised(SamplingCoords.build(cm, enabled=cfg.reparam), z)


class _Progress:
    """Progress bar of the NUTS chains, fed by the compiled program's host callbacks;
    shown from :meth:`start` (after compilation) to :meth:`finish`."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None

    def __call__(self, n) -> None:
        if self.bar is not None:
            self.bar.update(int(np.sum(n)))  # batched chains: one count per chain

    def start(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, desc="NUTS", unit="it", leave=False)

    def finish(self, complete: bool) -> None:
        if self.bar is None:
            return
        if complete:  # callbacks may still be in flight when the draws are back
            self.bar.update(max(0, self.total - self.bar.n))
        self.bar.close()


def _nuts(
    cm: CurveModel, init: dict[str, jax.Array], key: jax.Array, progress: bool, objective=None
):
    cfg = cm.config
    objective = objective or _neg_value_and_grad(cm)
    k_jit, k_run = jax.random.split(key)
    chains = cfg.chains
    coords = SamplingCoords.build(cm, enabled=cfg.reparam)
    _, cov_z = laplace(cm, init, objective=objective)
    # the Laplace approximation carried to the sampling coordinates (w = w(z) linearised)
    w0, J = _linearised(coords, jnp.asarray(_Flat(cm).flatten(init)))
    w0, J = np.asarray(w0), np.asarray(J)
    cov = J @ cov_z @ J.T
    cov = 0.5 * (cov + cov.T)
    # over-dispersed starts: draws from the Laplace approximation around the MAP
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(cov)))
    eps = np.asarray(jax.random.normal(k_jit, (chains, len(cov))))
    starts = w0[None] + eps @ L.T
    if not cfg.laplace_mass:
        cov = np.eye(len(cov))
    bar = _Progress(chains * (cfg.warmup + cfg.samples)) if progress else None
    # the starts' energies (a small program: ~1.5 s to compile) beside the chains' compile
    with ThreadPoolExecutor(1) as pool:
        energy = pool.submit(start_energies, coords, starts, objective[1])
        prog = compile_chains(
            coords.potential,
            len(w0),
            cfg,
            chain_method(cfg),
            tick=bar,
            transform=lambda w: coords.to_z(w)[0],
        )
        energy = energy.result()
    done = False
    if bar is not None:
        bar.start()
    try:
        z, run = run_chains(
            prog,
            key=k_run,
            starts=starts,
            energy=energy,
            inverse_mass=cov if cfg.dense_mass else np.diag(cov),
        )
        samples = {k: np.asarray(v) for k, v in unflatten(cm, z).items()}
        done = True
    finally:
        if bar is not None:
            bar.finish(done)
    stats = {
        "diverging": run["diverging"],
        "num_steps": run["num_steps"],
        "step_size": run["step_size"],
        "chain_method": np.asarray(prog.chain_method),
    }
    return samples, stats


def _laplace_draws(cm: CurveModel, init, key, objective):
    """Laplace draws corrected by Pareto-smoothed importance resampling to the posterior."""
    from scipy.special import logsumexp

    from ._posterior import _az

    cfg = cm.config
    _, cov = laplace(cm, init, objective=objective)
    flat = objective[0]
    n = cfg.chains * cfg.samples
    m = 4 * n  # proposals
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(cov)))
    k1, k2 = jax.random.split(key)
    eps = np.asarray(jax.random.normal(k1, (m, len(cov))))
    draws = flat.flatten(init)[None] + 1.2 * eps @ L.T  # slightly wider proposal
    params = unflatten(cm, jnp.asarray(draws))
    ll = np.asarray(batched_loglik(cm, params)).sum(-1)
    log_prior = -0.5 * np.sum(draws**2, axis=-1)
    log_q = -0.5 * np.sum(eps**2, axis=-1) / 1.2**2
    lw = ll + log_prior - log_q
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    az = _az()
    slw, khat = az.psislw(lw - logsumexp(lw))
    w = np.exp(np.asarray(slw) - logsumexp(slw))
    idx = np.asarray(jax.random.choice(k2, m, (n,), p=jnp.asarray(w)))
    chosen = draws[idx].reshape(cfg.chains, cfg.samples, -1)
    samples = {k: np.asarray(v) for k, v in unflatten(cm, jnp.asarray(chosen)).items()}
    stats = {
        "diverging": np.zeros((cfg.chains, cfg.samples), bool),
        "num_steps": np.zeros((cfg.chains, cfg.samples), np.int64),
        "is_pareto_k": np.asarray(float(khat)),
        "is_ess": np.asarray(1.0 / np.sum(w**2)),
    }
    return samples, stats


def _svi(cm: CurveModel, init: dict[str, jax.Array], key: jax.Array, progress: bool):
    cfg = cm.config
    guide = AutoMultivariateNormal(
        cm.model, init_loc_fn=init_to_value(values=init), init_scale=0.05
    )
    svi = SVI(
        cm.model,
        guide,
        optax.adam(optax.cosine_decay_schedule(0.01, cfg.svi_steps, 0.1)),
        Trace_ELBO(),
    )
    k1, k2 = jax.random.split(key)
    res = svi.run(k1, cfg.svi_steps, progress_bar=progress)
    draws = guide.sample_posterior(k2, res.params, sample_shape=(cfg.chains, cfg.samples))
    samples = {k: np.asarray(v) for k, v in draws.items() if k in cm.sites()}
    n = cfg.chains * cfg.samples
    stats = {
        "diverging": np.zeros((cfg.chains, cfg.samples), bool),
        "num_steps": np.zeros((cfg.chains, cfg.samples), np.int64),
        "elbo_loss": np.asarray(res.losses)[-min(100, n) :],
    }
    return samples, stats


def fit_model(
    cm: CurveModel,
    *,
    key: jax.Array,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    data: CurveData | None = None,
) -> Posterior:
    """Run the configured inference on a prepared :class:`CurveModel` (``data``, the curves
    it was built from, is kept in the posterior for ``recommend``)."""
    cfg = cm.config
    say = log or (lambda s: None)
    k_map, k_inf = jax.random.split(key)
    t0 = time.perf_counter()
    say(f"MAP warm start (L-BFGS, {cfg.map_starts} starts x <= {cfg.map_steps} iterations)")
    objective = _neg_value_and_grad(cm)
    # the programs needed after the MAP compile on the other core meanwhile
    with ThreadPoolExecutor(1) as pool:
        warm = pool.submit(_warm_compile, cm)
        init, lj = map_fit(cm, key=k_map, objective=objective)
        warm.result()
    t_map = time.perf_counter() - t0
    ode_err = float(solver_error(cm, init))
    say(
        f"MAP log joint {lj:.2f} in {t_map:.1f} s; {cfg.method.upper()} "
        f"({cfg.chains} chains x {cfg.samples} samples)"
    )
    t1 = time.perf_counter()
    if cfg.method == "nuts":
        samples, stats = _nuts(cm, init, k_inf, progress, objective)
    elif cfg.method == "laplace":
        samples, stats = _laplace_draws(cm, init, k_inf, objective)
    elif cfg.method == "svi":
        samples, stats = _svi(cm, init, k_inf, progress)
    else:
        samples = {
            k: np.broadcast_to(np.asarray(v), (1, 1, *np.shape(v))).copy() for k, v in init.items()
        }
        stats = {"diverging": np.zeros((1, 1), bool), "num_steps": np.zeros((1, 1), np.int64)}
    t_inf = time.perf_counter() - t1
    timing = {"map_s": t_map, "inference_s": t_inf, "total_s": time.perf_counter() - t0}
    stats["solver_error"] = np.asarray(ode_err)
    return Posterior(
        cm,
        samples,
        stats,
        {k: np.asarray(v) for k, v in init.items()},
        timing=timing,
        map_log_joint=lj,
        data=data,
    )


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
        progress: Show a progress bar while sampling; log: one-line progress callback.

    Returns:
        The :class:`Posterior`.
    """
    cm = build_model(data, network, config, gate=gate, nodes=nodes)
    return fit_model(cm, key=key, progress=progress, log=log, data=data)
