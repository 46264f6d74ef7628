"""Peer samplers for ``bench_calibrate.py --peers``: the same posterior, the same starts,
the same draw count, sampled by calibrate's NUTS program and by the samplers a user would
pick instead (nutpie with its low-rank mass adaptation, blackjax NUTS with Stan's window
adaptation, numpyro's stock NUTS with a dense mass matrix).

The log density is calibrate's own (:func:`calibrate.neg_log_joint_and_grad`'s function):
in the model's latent coordinates ``z`` (what a user hands a sampler) or, with space
``w``, in calibrate's sampling coordinates (:class:`calibrate.SamplingCoords`: the log
joint at ``z(w)`` plus the Jacobian's log determinant), so that a peer's gain or loss can
be split into geometry (the coordinates) and the sampler (adaptation, overhead). Every
method starts its 4 chains at the same points: draws of the Laplace approximation at the
fit's MAP (calibrate's own recipe), mapped to the method's coordinates. Draws are mapped
back to ``z`` and summarised exactly like a fit (:meth:`calibrate.Posterior.summary`: the
minimum bulk ESS over every named parameter, R-hat). Gradient counts are the sampling
phase's leapfrog steps (calibrate's program does not record its warm-up's).

The peers are optional (``pip install -e '.[bench]'``); :func:`available` says which are
installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import calibrate as cal
from calibrate import FlatParams, SamplingCoords, draws_to_z, unflatten

PEERS = ("nutpie", "blackjax", "numpyro")
_MODULE = {"nutpie": "nutpie", "blackjax": "blackjax", "numpyro": "numpyro"}


def available() -> dict[str, bool]:
    """Which peers are importable (numpyro is a core dependency)."""
    return {p: importlib.util.find_spec(_MODULE[p]) is not None for p in PEERS}


@dataclasses.dataclass
class Problem:
    """One log density and its shared starts.

    Attributes:
        post: The fit whose model, MAP and configuration (chains, warm-up, samples,
            target acceptance, tree depth) every method shares.
        space: ``z`` (the model's latent vector) or ``w`` (calibrate's sampling coordinates).
        coords: The sampling coordinates (``w`` to ``z``; the identity's ``to_z`` for ``z``).
        starts: Chain starts in ``space``, ``(C, P)``.
    """

    post: cal.Posterior
    space: str
    coords: SamplingCoords
    starts: np.ndarray

    @property
    def cm(self) -> cal.CurveModel:
        return self.post.model

    @property
    def dim(self) -> int:
        return int(self.starts.shape[1])

    def logdensity(self, x: jax.Array) -> jax.Array:
        """The log density of one flat vector in ``space`` (up to the same constant)."""
        if self.space == "w":
            return -self.coords.potential(x)
        return self.cm.log_joint_fn()(unflatten(self.cm, x))

    def to_z(self, x: np.ndarray) -> np.ndarray:
        """Draws ``(..., P)`` in ``space`` mapped to the model's ``z``."""
        if self.space == "z":
            return np.asarray(x)
        return np.asarray(draws_to_z(self.coords, jnp.asarray(x)))


def laplace_starts(post: cal.Posterior, key: jax.Array) -> tuple[np.ndarray, np.ndarray]:
    """Over-dispersed starts: ``C`` draws of the Laplace approximation at the MAP in
    calibrate's sampling coordinates (the fit's recipe: the covariance carried to ``w`` by
    the Jacobian of ``w(z)``), and that covariance (calibrate's initial mass).

    Returns:
        ``(starts_w (C, P), covariance_w (P, P))``.
    """
    cm = post.model
    coords = SamplingCoords.build(cm, enabled=cm.config.reparam)
    _, cov_z = cal.laplace(cm, {k: jnp.asarray(v) for k, v in post.map_params.items()})
    z0 = jnp.asarray(FlatParams(cm).flatten(post.map_params))
    w0 = np.asarray(coords.from_z(z0))
    J = np.asarray(jax.jacfwd(coords.from_z)(z0))
    cov = J @ cov_z @ J.T
    cov = 0.5 * (cov + cov.T)
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(cov)))
    eps = np.asarray(jax.random.normal(key, (cm.config.chains, len(cov))))
    return w0[None] + eps @ L.T, cov


def problem(post: cal.Posterior, space: str, starts_w: np.ndarray) -> Problem:
    """The :class:`Problem` of ``post`` in ``space`` with the starts ``starts_w`` (given in
    calibrate's sampling coordinates; mapped to ``z`` for space ``z``)."""
    if space not in ("z", "w"):
        raise ValueError(f"space must be 'z' or 'w', got {space!r}")
    cm = post.model
    coords = SamplingCoords.build(cm, enabled=cm.config.reparam)
    starts = np.asarray(starts_w, float)
    if space == "z":
        starts = np.asarray(draws_to_z(coords, jnp.asarray(starts)))
    return Problem(post, space, coords, starts)


def summarize(
    label: str,
    pb: Problem,
    x: np.ndarray,
    diverging: np.ndarray,
    steps: np.ndarray,
    compile_s: float,
    sample_s: float,
) -> dict[str, Any]:
    """One table row from draws ``x`` ``(C, S, P)`` in ``pb.space``: minimum bulk ESS over
    the fit's named parameters (the fit's own summary), R-hat, divergences and leapfrog
    steps (gradients) of the sampling phase, and the times."""
    z = pb.to_z(np.asarray(x, float))
    draws = {k: np.asarray(v) for k, v in unflatten(pb.cm, jnp.asarray(z)).items()}
    stats = {"diverging": np.asarray(diverging, bool), "num_steps": np.asarray(steps)}
    s = cal.Posterior(pb.cm, draws, stats, pb.post.map_params).summary()
    worst = min(s, key=lambda k: s[k]["ess_bulk"])
    ess = float(s[worst]["ess_bulk"])
    grads = float(np.sum(steps))
    return {
        "method": label,
        "space": pb.space,
        "compile_s": compile_s,
        "sample_s": sample_s,
        "ess": ess,
        "worst": worst,
        "r_hat": max(float(v["r_hat"]) for v in s.values()),
        "divergences": int(np.sum(diverging)),
        "grads": grads,
        "ess_per_s": ess / sample_s,
        "ess_per_s_total": ess / (sample_s + (compile_s if np.isfinite(compile_s) else 0.0)),
        "grads_per_ess": grads / ess if ess > 0 else float("inf"),
    }


def run_calibrate(pb: Problem, cov_w: np.ndarray, seed: int) -> dict[str, Any]:
    """calibrate's chains program (pooled warm-up, shared step size, Laplace dense mass) in
    its sampling coordinates from the shared starts: the program :func:`calibrate.fit`
    runs, compiled and run here so that compile and sampling are timed apart."""
    from calibrate._fit import chain_method
    from calibrate._reparam import start_energies
    from calibrate._sampler import compile_chains, run_chains

    if pb.space != "w":
        raise ValueError("calibrate samples in its sampling coordinates (space 'w')")
    cfg = pb.cm.config
    t0 = time.perf_counter()
    prog = compile_chains(
        pb.coords.potential,
        pb.dim,
        cfg,
        chain_method(cfg),
        transform=lambda w: pb.coords.to_z(w)[0],
    )
    # the starts' energies as the fit gets them: the chain rule through the coordinates
    # from the log joint's compiled gradient (no second trace of the potential's gradient)
    energy = start_energies(pb.coords, pb.starts, _nlj(pb.cm))
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    mass = cov_w if cfg.dense_mass else np.diag(cov_w)
    z, st = run_chains(
        prog, key=jax.random.key(seed), starts=pb.starts, inverse_mass=mass, energy=energy
    )
    z = np.asarray(jax.block_until_ready(z))
    sample_s = time.perf_counter() - t1
    zpb = dataclasses.replace(pb, space="z")  # the program's transform returned z
    return summarize("calibrate", zpb, z, st["diverging"], st["num_steps"], compile_s, sample_s) | {
        "space": "w"
    }


def _nlj(cm: cal.CurveModel) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``z -> (minus log joint, its gradient)`` on the host (the fit's MAP objective)."""

    def f(z: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = cal.neg_log_joint_and_grad(cm, jnp.asarray(z, float))
        return float(v), np.asarray(g, float)

    return f


def run_nutpie(pb: Problem, seed: int, low_rank: bool = True) -> dict[str, Any]:
    """nutpie (Rust NUTS; low-rank modified mass adaptation) on the jitted JAX log density
    and gradient, called from nutpie's threads (``from_pyfunc``)."""
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    cfg = pb.cm.config
    t0 = time.perf_counter()
    vg = jax.jit(jax.value_and_grad(pb.logdensity))
    jax.block_until_ready(vg(jnp.asarray(pb.starts[0])))
    compile_s = time.perf_counter() - t0

    def make_logp():
        def logp(x):
            v, g = vg(x)
            return float(v), np.asarray(g, dtype=np.float64)

        return logp

    def make_expand(_s1, _s2, _chain):
        return lambda x: {"x": np.asarray(x, dtype=np.float64)}

    nxt = itertools.cycle(range(len(pb.starts)))

    def init_point(_seed):  # one shared start per chain (the chains ask in turn)
        return np.asarray(pb.starts[next(nxt)], dtype=np.float64)

    model = from_pyfunc(
        pb.dim,
        make_logp,
        make_expand,
        [np.dtype("float64")],
        [(pb.dim,)],
        ["x"],
        make_initial_point_fn=init_point,
    )
    t1 = time.perf_counter()
    tr = nutpie.sample(
        model,
        draws=cfg.samples,
        tune=cfg.warmup,
        chains=cfg.chains,
        seed=seed,
        progress_bar=False,
        low_rank_modified_mass_matrix=low_rank,
        target_accept=cfg.target_accept,
        maxdepth=cfg.max_tree_depth,
    )
    sample_s = time.perf_counter() - t1
    x = np.asarray(tr.posterior["x"])
    ss = tr.sample_stats
    label = "nutpie" + ("" if low_rank else "-diag")
    return summarize(
        label, pb, x, np.asarray(ss["diverging"]), np.asarray(ss["n_steps"]), compile_s, sample_s
    )


def _chains_program(fn: Callable, pb: Problem):
    """``fn(key, x0)`` mapped over the chains: one device per chain where there are enough
    (the benchmark sets 4 CPU devices), else vectorised; compiled ahead."""
    C = len(pb.starts)
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), C))
    x_t = jax.ShapeDtypeStruct(pb.starts.shape, jnp.result_type(float))
    mapped = jax.pmap(fn) if jax.local_device_count() >= C else jax.jit(jax.vmap(fn))
    return mapped.lower(keys, x_t).compile()


def run_blackjax(pb: Problem, seed: int) -> dict[str, Any]:
    """blackjax NUTS after Stan's window adaptation (dense mass), per chain, all in one
    compiled program (warm-up and sampling)."""
    import blackjax

    cfg = pb.cm.config
    target = cfg.target_accept

    def chain(key, x0):
        k1, k2 = jax.random.split(key)
        warm = blackjax.window_adaptation(
            blackjax.nuts,
            pb.logdensity,
            is_mass_matrix_diagonal=False,
            target_acceptance_rate=target,
            max_num_doublings=cfg.max_tree_depth,
        )
        (state, params), _ = warm.run(k1, x0, num_steps=cfg.warmup)
        kernel = blackjax.nuts(pb.logdensity, **params)  # params carry the tree depth

        def step(st, k):
            st, info = kernel.step(k, st)
            return st, (st.position, info.is_divergent, info.num_integration_steps)

        _, out = jax.lax.scan(step, state, jax.random.split(k2, cfg.samples))
        return out

    t0 = time.perf_counter()
    prog = _chains_program(chain, pb)
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    keys = jax.random.split(jax.random.key(seed), len(pb.starts))
    x, div, steps = jax.block_until_ready(prog(keys, jnp.asarray(pb.starts)))
    sample_s = time.perf_counter() - t1
    return summarize("blackjax", pb, np.asarray(x), div, steps, compile_s, sample_s)


def run_numpyro(pb: Problem, seed: int) -> dict[str, Any]:
    """numpyro's stock NUTS (dense mass, its windowed adaptation per chain, identity start
    mass) on the potential; compilation is inside its run (not separable: NaN)."""
    from numpyro.infer import MCMC, NUTS

    cfg = pb.cm.config
    kernel = NUTS(
        potential_fn=lambda x: -pb.logdensity(x),
        dense_mass=True,
        target_accept_prob=cfg.target_accept,
        max_tree_depth=cfg.max_tree_depth,
    )
    C = len(pb.starts)
    method = "parallel" if jax.local_device_count() >= C else "vectorized"
    mcmc = MCMC(
        kernel,
        num_warmup=cfg.warmup,
        num_samples=cfg.samples,
        num_chains=C,
        chain_method=method,
        progress_bar=False,
    )
    t1 = time.perf_counter()
    mcmc.run(
        jax.random.key(seed),
        init_params=jnp.asarray(pb.starts),
        extra_fields=("diverging", "num_steps"),
    )
    x = np.asarray(jax.block_until_ready(mcmc.get_samples(group_by_chain=True)))
    sample_s = time.perf_counter() - t1
    ex = mcmc.get_extra_fields(group_by_chain=True)
    return summarize("numpyro", pb, x, ex["diverging"], ex["num_steps"], float("nan"), sample_s)


def table(rows: list[dict[str, Any]], load: str = "") -> str:
    """The comparison table: per method its times, minimum bulk ESS, ESS/s, R-hat,
    divergences, gradients per effective draw, and calibrate's ratios to it (ESS/s on the
    sampling time and on compile + sampling; ESS per gradient)."""
    ref = next((r for r in rows if r["method"] == "calibrate"), None)
    head = (
        f"{'method':<14}{'space':>5}{'compile s':>10}{'sample s':>9}{'min ESS':>9}"
        f"{'ESS/s':>8}{'ESS/s+c':>8}{'R-hat':>7}{'div':>5}{'grad/ESS':>9}"
        f"{'cal/peer ESS/s':>15}{'(+c)':>6}{'ESS/grad':>9}"
    )
    out = [head]
    for r in rows:
        c = "incl." if not np.isfinite(r["compile_s"]) else f"{r['compile_s']:.1f}"
        line = (
            f"{r['method']:<14}{r['space']:>5}{c:>10}{r['sample_s']:>9.1f}{r['ess']:>9.0f}"
            f"{r['ess_per_s']:>8.1f}{r['ess_per_s_total']:>8.1f}{r['r_hat']:>7.3f}"
            f"{r['divergences']:>5d}{r['grads_per_ess']:>9.1f}"
        )
        if ref is not None and r is not ref:
            line += (
                f"{ratio(ref['ess_per_s'], r['ess_per_s']):>14.2f}x"
                f"{ratio(ref['ess_per_s_total'], r['ess_per_s_total']):>5.2f}x"
                f"{ratio(r['grads_per_ess'], ref['grads_per_ess']):>8.2f}x"
            )
        out.append(line)
    if load:
        out.append(f"load average during the run: {load}")
    return "\n".join(out)


def ratio(a: float, b: float) -> float:
    """``a / b`` (inf where ``b`` is 0, NaN where either is NaN)."""
    if not (np.isfinite(a) and np.isfinite(b)) and not (np.isinf(a) and np.isfinite(b)):
        return float("nan")
    return a / b if b != 0 else float("inf")
