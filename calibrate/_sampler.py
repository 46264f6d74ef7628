"""NUTS chains as one compiled program (numpyro's functional ``hmc`` kernel), with the
warm-up's mass-matrix estimates pooled across chains.

numpyro's windowed adaptation estimates each chain's mass matrix from that chain's draws
in the current window alone. Here, just before each window closes, the chains' running
(Welford) moments are combined (:func:`pool_moments`), so every chain adapts to the
covariance of all chains' draws: ``chains`` times as many, spread over the regions the
chains explore. On the calibrate benchmark (4 chains, 1000 + 1000, seeds 6-10) the
minimum bulk ESS went from 1073-1413 (mean 1200) with per-chain estimates to 1441-1787
(mean 1598), and divergences from 88 to 56 in all; over seeds 1-10 pooled: 906-1787.
The step size is shared too: at the end of the warm-up every chain takes the median of
the chains' dual-averaging step sizes (:data:`SHARED_STEP_SIZE`), so no chain samples with
a step that only suited the region it happened to adapt in. The least of them (seeds 1-10
of the benchmark: 9 divergences in all against 47 with per-chain step sizes, minimum bulk
ESS 1310-2100 against 1317-2004) was the rule until five rounds on a quiet machine
(2026-12-05, docs/benchmarks.md) gave the median 30.4 gradients per effective draw against
31.2 (medians; a difference inside the rounds' spread), 29 divergences in 5 rounds against
23, and 94 against 98 ESS/s, and the plan stated before them adopted whichever needed
fewer gradients per effective draw.
The program is built from shapes alone (:func:`compile_chains`); compiling it in a thread
during the MAP fit was measured and rejected (XLA's compile keeps ~1.5 cores busy and the
MAP slowed from 5 s to 11-15 s).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import hmc
from numpyro.infer.hmc_util import build_adaptation_schedule
from numpyro.infer.util import ParamInfo

from ._config import FitConfig

__all__ = [
    "ChainProgram",
    "compile_chains",
    "pool_moments",
    "run_chains",
    "shared_step_size",
    "window_ends",
]

_PROGRESS_TICKS = 50  # progress-bar updates per chain
_AXIS = "chain"

#: The step size every pooled chain samples with after the warm-up: ``"median"`` (the
#: median of the chains' dual-averaging step sizes) or ``"min"`` (the least of them); read
#: when the program is traced (kept switchable for ``benchmarks/bench_calibrate.py``).
SHARED_STEP_SIZE = "median"


@dataclasses.dataclass
class ChainProgram:
    """A compiled NUTS program for one model and configuration.

    Attributes:
        compiled: The XLA executable ``(keys, starts, their potential energies and
            gradients, inverse mass) -> (draws, diverging, num_steps, step size, inverse
            mass)``, each with a leading chain axis.
        chain_method: ``parallel``, ``vectorized`` or ``sequential``.
        chains: Number of chains ``C``.
        potential: The potential energy of one flat vector (for starts given without
            their energies).
    """

    compiled: Any
    chain_method: str
    chains: int
    potential: Callable[[jax.Array], jax.Array]


def window_ends(warmup: int) -> np.ndarray:
    """Iterations at which numpyro's windowed adaptation re-estimates the mass matrix
    (the ends of its middle windows) for ``warmup`` warm-up steps."""
    sched = build_adaptation_schedule(warmup)
    return np.asarray([w.end for w in sched[1:-1]], dtype=np.int64)


def pool_moments(
    mean: jax.Array, m2: jax.Array, n: jax.Array, axis_name: str
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Combine per-chain Welford moments ``(mean (P,), m2 (P,) or (P, P), n)`` over the
    mapped axis ``axis_name`` (Chan et al.'s parallel update), so each chain gets the
    moments of all chains' draws."""
    means = jax.lax.all_gather(mean, axis_name)  # (C, P)
    ns = jax.lax.all_gather(n, axis_name).astype(mean.dtype)  # (C,)
    total = jnp.sum(ns)
    mu = jnp.sum(ns[:, None] * means, axis=0) / jnp.maximum(total, 1.0)
    d = means - mu
    spread = (
        jnp.einsum("c,ci,cj->ij", ns, d, d) if m2.ndim == 2 else jnp.einsum("c,ci->i", ns, d * d)
    )
    m2_all = jax.lax.psum(m2, axis_name) + spread
    return mu, m2_all, jax.lax.psum(n, axis_name)


def shared_step_size(eps: jax.Array, axis: str = _AXIS) -> jax.Array:
    """The step size all chains take after the warm-up, from each chain's ``eps`` (a
    scalar under a map over ``axis``): :data:`SHARED_STEP_SIZE` of them."""
    if SHARED_STEP_SIZE == "median":
        return jnp.median(jax.lax.all_gather(eps, axis))
    if SHARED_STEP_SIZE == "min":
        return jax.lax.pmin(eps, axis)
    raise ValueError(f"SHARED_STEP_SIZE must be 'min' or 'median', got {SHARED_STEP_SIZE!r}")


def _one_chain(
    key, w0, pe0, g0, inv_mass, *, potential, cfg: FitConfig, pooled: bool, tick, transform
):
    """Warm-up and sampling of one chain (under a map over ``_AXIS`` when ``pooled``);
    returns the sampling phase's draws ``(S, P)``, divergences and leapfrog steps
    ``(S,)``, and the adapted step size and inverse mass matrix."""
    init_kernel, sample_kernel = hmc(potential_fn=potential, algo="NUTS")
    # the start's exact energy and gradient come in, computed outside: the potential's
    # gradient is traced once, in the trajectories, not a second time here (-3 s of an
    # 11 s compile on the benchmark; a zero gradient instead took the first trajectories
    # far off: min ESS 479-1769 against 1441-1787)
    state = init_kernel(
        ParamInfo(w0, pe0, g0),
        cfg.warmup,
        inverse_mass_matrix=inv_mass,
        dense_mass=cfg.dense_mass,
        target_accept_prob=cfg.target_accept,
        max_tree_depth=cfg.max_tree_depth,
        forward_mode_differentiation=cfg.forward_mode,
        rng_key=key,
    )
    total = cfg.warmup + cfg.samples
    every = max(1, total // _PROGRESS_TICKS)
    ends = jnp.asarray(window_ends(cfg.warmup))

    def pool(st):
        ad = st.adapt_state
        mean, m2, n = ad.mm_state
        mm = pool_moments(mean, m2, n, _AXIS)
        return st._replace(adapt_state=ad._replace(mm_state=mm))

    def share_step_size(st):
        ad = st.adapt_state
        return st._replace(adapt_state=ad._replace(step_size=shared_step_size(ad.step_size)))

    def body(st, i):
        if pooled and ends.size:
            st = jax.lax.cond(jnp.any(i == ends), pool, lambda s: s, st)
        st = sample_kernel(st)
        if pooled:  # the warm-up's last update sets the step size: all chains share one
            st = jax.lax.cond(i == cfg.warmup - 1, share_step_size, lambda s: s, st)
        if tick is not None:
            # a per-chain count (the position is batched), so vectorised chains each report
            n = st.z[0] * 0 + every
            jax.lax.cond((i + 1) % every == 0, lambda: jax.debug.callback(tick, n), lambda: None)
        return st, (st.z, st.diverging, st.num_steps)

    last, (w, div, steps) = jax.lax.scan(body, state, jnp.arange(total))
    ad = last.adapt_state
    w = w[cfg.warmup :]
    if transform is not None:
        w = jax.vmap(transform)(w)
    return w, div[cfg.warmup :], steps[cfg.warmup :], ad.step_size, ad.inverse_mass_matrix


def compile_chains(
    potential: Callable[[jax.Array], jax.Array],
    size: int,
    cfg: FitConfig,
    chain_method: str,
    tick=None,
    transform: Callable[[jax.Array], jax.Array] | None = None,
) -> ChainProgram:
    """Trace and compile the chains of ``cfg`` for ``potential`` from shapes alone.

    Args:
        potential: NUTS's potential energy of one flat vector ``(P,)`` (e.g.
            :meth:`calibrate._reparam.SamplingCoords.potential`).
        size: ``P``.
        cfg: Fit options (chains, warm-up, samples, mass, target acceptance, tree depth,
            ``pool_adaptation``).
        chain_method: ``parallel`` (one device per chain), ``vectorized`` (one batched
            program) or ``sequential`` (no pooling: chains run one after another).
        tick: Optional host callback ``tick(n)``, called about 50 times per chain with
            the number of iterations done since its last call (a progress bar).
        transform: Optional map applied to each draw inside the program (e.g. back to
            the model's coordinates; one program instead of a second compile).

    Returns:
        The compiled :class:`ChainProgram`.

    Raises:
        ValueError: An unknown ``chain_method``.
    """
    P = int(size)
    C = cfg.chains
    if chain_method == "parallel" and jax.local_device_count() < C:
        warnings.warn(
            f"parallel chains need {C} devices, found {jax.local_device_count()} "
            "(on CPU call numpyro.set_host_device_count before JAX starts); "
            "running the chains sequentially",
            stacklevel=2,
        )
        chain_method = "sequential"
    pooled = cfg.pool_adaptation and C > 1 and chain_method != "sequential"
    chain = functools.partial(
        _one_chain, potential=potential, cfg=cfg, pooled=pooled, tick=tick, transform=transform
    )
    f64 = jnp.result_type(float)
    key_t = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), C))
    starts_t = jax.ShapeDtypeStruct((C, P), f64)
    pe_t = jax.ShapeDtypeStruct((C,), f64)
    mass_t = jax.ShapeDtypeStruct((P, P) if cfg.dense_mass else (P,), f64)
    if chain_method == "parallel":
        fn = jax.pmap(chain, axis_name=_AXIS, in_axes=(0, 0, 0, 0, None))
    elif chain_method == "vectorized":
        fn = jax.jit(jax.vmap(chain, axis_name=_AXIS, in_axes=(0, 0, 0, 0, None)))
    elif chain_method == "sequential":
        fn = jax.jit(
            lambda k, w, e, g, m: jax.lax.map(
                lambda a: chain(a[0], a[1], a[2], a[3], m), (k, w, e, g)
            )
        )
    else:
        raise ValueError(f"unknown chain_method {chain_method!r}")
    compiled = fn.lower(key_t, starts_t, pe_t, starts_t, mass_t).compile()
    return ChainProgram(compiled, chain_method, C, potential)


def run_chains(
    program: ChainProgram,
    *,
    key: jax.Array,
    starts: np.ndarray,
    inverse_mass: np.ndarray,
    energy: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[jax.Array, dict[str, np.ndarray]]:
    """Run a compiled program.

    Args:
        program: From :func:`compile_chains`.
        key: PRNG key (keyword-only), split into one key per chain.
        starts: Chain starts in sampling coordinates, ``(C, P)``.
        inverse_mass: Initial inverse mass matrix, ``(P, P)`` dense or ``(P,)`` diagonal.
        energy: The potential energies ``(C,)`` and gradients ``(C, P)`` at ``starts``
            if known (else computed here, one more compile).

    Returns:
        ``(draws, stats)``: draws ``(C, S, P)`` (transformed, if the program has a
        transform); ``stats`` holds ``diverging`` and ``num_steps`` (leapfrog steps)
        ``(C, S)``, and the adapted ``step_size`` ``(C,)`` and ``inverse_mass``
        ``(C, P, P)`` or ``(C, P)``.
    """
    keys = jax.random.split(key, program.chains)
    w0 = jnp.asarray(starts, float)
    if energy is None:
        pe, grad = jax.jit(jax.vmap(jax.value_and_grad(program.potential)))(w0)
    else:
        pe, grad = energy
    w, div, steps, eps, inv = program.compiled(
        keys, w0, jnp.asarray(pe, float), jnp.asarray(grad, float), jnp.asarray(inverse_mass, float)
    )
    stats = {
        "diverging": np.asarray(div),
        "num_steps": np.asarray(steps),
        "step_size": np.asarray(eps),
        "inverse_mass": np.asarray(inv),
    }
    return w, stats
