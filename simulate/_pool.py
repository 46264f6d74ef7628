"""A pool of K members per role on the competence SDE (population-based training of agents).

Each role ``i`` of the network is trained as ``K`` members (adapters) ``A_{i,m}``, each its
own Euler–Maruyama path of the model's competence kinetics with Wright–Fisher noise (the
same drift ``Model.rhs`` and diffusion ``Model.diffusion`` as ``solve(..., method="sde")``)::

    dA_{i,m} = F_i(A_{i,m}, Ã^{(i,m)}) dt + sigma_eff,i sqrt(A_{i,m} (1 - A_{i,m})) dW_{i,m}

where ``Ã^{(i,m)}_j`` (``j != i``), the upstream competence member ``m`` of role ``i`` learns
from, is the competence of a member of role ``j`` drawn afresh at every step, uniformly or
by fitness (``softmax(A_j / temperature)``). With policy lag each member carries its own
Erlang delay chain. The role's reported competence is the member mean (what llm_runs logs as
the role's probe competence; a pipeline run with one uniformly drawn member per role has
expected accuracy equal to the product of these means). The end-to-end proxy is that
product over all roles, ``prod_i mean_m A_{i,m}`` (for a three-stage pipeline X, Y, Z:
``A_X A_Y A_Z``).

Noise modes: ``split=True`` splits one batch among the K members, so each member's gradient
noise has ``sigma_eff = sigma sqrt(K)`` and compute stays 1x; ``split=False`` gives every
member a full batch (``sigma_eff = sigma``) at K-fold compute (:func:`compute_cost`).
Selection among members: a PBT step every ``exploit_every`` time units (the weakest
``exploit_frac`` of each role's members copy the strongest, rank by rank), and/or a
Moran-like copy rate (each member is replaced at rate ``copy_rate`` by a copy of a member
of its role drawn as in sampling). Competences are clipped to [0, 1] where reported.

Member ``m``'s noise is ``diffrax.UnsafeBrownianPath(shape=(K, S), key=seed_key)``'s row
``m`` on diffrax's own step grid, so with ``K = 1`` a seed's path is the one
``solve(model, method="sde", dt=dt, key=seed_key)`` draws, ``seed_key =
jax.random.split(key, n_seeds)[s]``.
"""

from __future__ import annotations

import math
from typing import Any, Literal, cast

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, PRNGKeyArray

from ._kinetics import Model, Schedule
from ._solve import apply_dtype
from .spec import SpecError

__all__ = ["PoolPaths", "compute_cost", "pool_paths"]


class PoolPaths(eqx.Module):
    """Simulated pools, one per seed.

    Attributes:
        t: Save times, shape ``(T,)`` (time units of the kinetics, steps for competence).
        members: Member competences, shape ``(seeds, T, N, K)``.
        roles: Role competences (member means), shape ``(seeds, T, N)``.
        e2e: End-to-end proxy ``prod_i roles[..., i]``, shape ``(seeds, T)``.
        names: Role (node) names, length ``N``.
    """

    t: Array
    members: Array
    roles: Array
    e2e: Array
    names: tuple[str, ...] = eqx.field(static=True)


def compute_cost(K: int, split: bool) -> dict[str, float]:
    """Training cost of a pool of ``K`` members per role relative to one adapter per role.

    Args:
        K: Members per role, >= 1.
        split: True if one batch is split among the members, False if each gets a full one.

    Returns:
        ``forward_backward`` (forward/backward passes per training step: 1 split, K not),
        ``adapter_memory`` (adapter parameters and optimizer state: K), ``batch_per_member``
        (1/K split, 1 not) and ``noise_sd_factor`` (sqrt(K) split, 1 not).
    """
    K = _check_K(K)
    return {
        "forward_backward": 1.0 if split else float(K),
        "adapter_memory": float(K),
        "batch_per_member": 1.0 / K if split else 1.0,
        "noise_sd_factor": math.sqrt(K) if split else 1.0,
    }


def _check_K(K: Any) -> int:
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 1:
        raise SpecError(f"pool size K must be an integer >= 1, got {K!r}")
    return int(K)


def _step_times(t0: float, t1: float, dt: float) -> np.ndarray:
    """diffrax's constant-step grid (``ConstantStepSize``), shape ``(n + 1,)``."""
    n = math.ceil((t1 - t0) / float(np.nextafter(dt, np.inf)))
    k = np.arange(n + 1, dtype=np.float64)
    taus = t0 + (t1 - t0) * (k / n)
    if n > 1:
        taus[1] = t0 + dt
    taus[0], taus[-1] = t0, t1
    return taus


@eqx.filter_jit
def _run(model, schedule, sigma_eff, temperature, taus, keys, K, save_every, opts):
    sampling, exploit_steps, n_copy, copy_rate = opts
    N, k = model.size, model.delay_stages
    S = N * (1 + k)
    own = jnp.asarray(
        [[i] + [N + i * k + s for s in range(k)] for i in range(N)], dtype=int
    )  # (N, 1+k): the state entries node i owns
    model = eqx.tree_at(lambda m: m.sigma, model, sigma_eff)
    diag = jnp.eye(N, dtype=bool)[:, None, :]  # (N, 1, N)
    n_save = (taus.shape[0] - 1) // save_every

    def draw(u, A):
        """Member indices from uniforms ``u`` (last axis runs over roles) by inverse CDF."""
        if sampling == "uniform":
            return jnp.minimum(jnp.floor(u * K).astype(int), K - 1)
        cdf = jnp.cumsum(jax.nn.softmax(A.T / temperature, axis=-1), axis=-1)  # (N, K)
        return jnp.minimum(jnp.sum(u[..., None] > cdf, axis=-1), K - 1)

    def one(seed_key):
        bm = diffrax.UnsafeBrownianPath(shape=(K, S), key=seed_key)
        aux = jax.random.split(seed_key)[1]
        Y0 = jnp.broadcast_to(model.initial_state()[own], (K, N, 1 + k))

        def step(Y, n):
            ta, tb = taus[n], taus[n + 1]
            h = tb - ta
            x = model.input_value(schedule(ta))
            A = jnp.clip(Y[:, :, 0], 0.0, 1.0)  # (K, N)
            if K == 1:
                idx = jnp.zeros((N, K, N), dtype=int)
                u = jnp.zeros((N, K, N + 2))
            else:
                u = jax.random.uniform(jax.random.fold_in(aux, n), (N, K, N + 2))
                idx = jnp.where(diag, jnp.arange(K)[None, :, None], draw(u[..., :N], A))
            G = Y[idx, jnp.arange(N)[None, None, :], :]  # (N, K, N, 1+k)
            full = jnp.concatenate([G[..., 0], G[..., 1:].reshape(N, K, N * k)], axis=-1)
            f = jax.vmap(jax.vmap(lambda y: model.rhs(y, x, clip=True)))(full)  # (N, K, S)
            g = jax.vmap(jax.vmap(model.diffusion))(full)
            dW = cast(Array, bm.evaluate(ta, tb))  # (K, S)
            rows = jnp.arange(N)[:, None, None]
            f_own = f[rows, jnp.arange(K)[None, :, None], own[:, None, :]]  # (N, K, 1+k)
            g_own = g[rows, jnp.arange(K)[None, :, None], own[:, None, :]]
            dW_own = jnp.transpose(dW[:, own], (1, 0, 2))  # (N, K, 1+k)
            Y = Y + jnp.transpose(f_own * h + g_own * dW_own, (1, 0, 2))
            roles_ix = jnp.arange(N)[None, :]
            if copy_rate > 0 and K > 1:  # Moran-like: replaced by a copy of a drawn member
                hit = u[..., N] < -jnp.expm1(-copy_rate * h)  # (N, K)
                donor = draw(u[..., N + 1].T, A).T  # (N, K): a member of role i
                src = jnp.where(hit, donor, jnp.arange(K)[None, :])
                Y = Y[src.T, roles_ix, :]
            if exploit_steps > 0 and n_copy > 0:  # PBT: the weakest copy the strongest
                order = jnp.argsort(Y[:, :, 0], axis=0).T  # (N, K), ascending per role
                src = jax.vmap(lambda o: jnp.arange(K).at[o[:n_copy]].set(o[::-1][:n_copy]))(order)
                Y = jnp.where((n + 1) % exploit_steps == 0, Y[src.T, roles_ix, :], Y)
            return Y, None

        def block(Y, b):
            Y, _ = jax.lax.scan(step, Y, b * save_every + jnp.arange(save_every))
            return Y, Y[:, :, 0]

        _, saved = jax.lax.scan(block, Y0, jnp.arange(n_save))
        A = jnp.concatenate([Y0[None, :, :, 0], saved])  # (T, K, N)
        return jnp.transpose(jnp.clip(A, 0.0, 1.0), (0, 2, 1))  # (T, N, K)

    return jax.vmap(one)(keys)


def _positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise SpecError(f"{name} must be a finite number {rel}, got {value!r}")
    return v


def pool_paths(
    model: Model,
    K: int,
    *,
    sigma: float | ArrayLike | None = None,
    t1: float = 100.0,
    dt: float = 0.01,
    n_seeds: int = 64,
    split: bool = False,
    sampling: Literal["uniform", "fitness"] = "uniform",
    temperature: float = 0.1,
    exploit_every: float | None = None,
    exploit_frac: float = 0.25,
    copy_rate: float = 0.0,
    schedule: Schedule | str | None = None,
    n_points: int = 101,
    t0: float = 0.0,
    key: PRNGKeyArray,
) -> PoolPaths:
    """Simulate ``n_seeds`` independent pools of ``K`` members per role (float64).

    Args:
        model: A competence model (see :func:`~simulate.make_model`); its rates, network,
            lag and initial competences are used as they are.
        K: Members per role, >= 1.
        sigma: Gradient-noise amplitude of one full batch: a number or one per role, shape
            ``(N,)``, >= 0; default ``model.sigma``.
        t1: End time (steps of the competence kinetics), > ``t0``.
        dt: Euler–Maruyama step.
        n_seeds: Independent pools (vmapped).
        split: True: one batch split among members (noise ``sigma sqrt(K)``, compute 1x);
            False: a full batch each (noise ``sigma``, compute Kx).
        sampling: How a member's upstream partner is drawn each step: ``"uniform"`` or
            ``"fitness"`` (``softmax(A / temperature)`` over the role's members).
        temperature: Softmax temperature of fitness-weighted draws, > 0.
        exploit_every: Time between PBT steps (None: no PBT); rounded to whole steps.
        exploit_frac: Fraction of each role's members (the weakest) that copy the
            strongest at a PBT step, in [0, 0.5]; ``floor(exploit_frac K)`` members.
        copy_rate: Moran-like replacement rate per member (1/time), >= 0.
        schedule: Input schedule (default on from ``t0``).
        n_points: Save points, >= 2; the step count must be a multiple of ``n_points - 1``.
        t0: Start time.
        key: PRNG key (keyword-only); seed ``s`` uses ``jax.random.split(key, n_seeds)[s]``.

    Returns:
        A :class:`PoolPaths`.

    Raises:
        SpecError: An argument out of range or a model without bounded competences.
    """
    K = _check_K(K)
    if not model.kinetics.bounded:
        raise SpecError("a pool needs bounded competences: kinetics='competence'")
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise SpecError(f"t1 must be finite and > t0, got t0={t0}, t1={t1}")
    dt = _positive("dt", dt)
    if isinstance(n_seeds, bool) or int(n_seeds) != n_seeds or n_seeds < 1:
        raise SpecError(f"n_seeds must be an integer >= 1, got {n_seeds!r}")
    if sampling not in ("uniform", "fitness"):
        raise SpecError(f"sampling must be 'uniform' or 'fitness', got {sampling!r}")
    temperature = _positive("temperature", temperature)
    copy_rate = _positive("copy_rate", copy_rate, allow_zero=True)
    if not (0.0 <= float(exploit_frac) <= 0.5):
        raise SpecError(f"exploit_frac must be in [0, 0.5], got {exploit_frac!r}")
    sig = np.broadcast_to(
        np.asarray(model.sigma if sigma is None else sigma, dtype=float), (model.size,)
    )
    if not np.all(np.isfinite(sig)) or np.any(sig < 0):
        raise SpecError(f"sigma must be finite and >= 0, got {np.asarray(sigma).tolist()}")
    taus = _step_times(float(t0), float(t1), dt)
    n = len(taus) - 1
    if isinstance(n_points, bool) or int(n_points) < 2 or n % (int(n_points) - 1):
        raise SpecError(
            f"n_points - 1 must divide the {n} steps of (t1 - t0) / dt, got n_points={n_points}"
        )
    exploit_steps = 0
    if exploit_every is not None:
        exploit_steps = round(_positive("exploit_every", exploit_every) / ((t1 - t0) / n))
        if exploit_steps < 1:
            raise SpecError(f"exploit_every must be >= dt ({dt:g}), got {exploit_every!r}")
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    elif schedule is None:
        schedule = Schedule.step(t0)
    model, schedule = apply_dtype("float64", model, schedule)
    sigma_eff = jnp.asarray(sig * (math.sqrt(K) if split else 1.0), jnp.float64)
    opts = (sampling, exploit_steps, math.floor(float(exploit_frac) * K), copy_rate)
    members = _run(
        model,
        schedule,
        sigma_eff,
        jnp.asarray(temperature, jnp.float64),
        jnp.asarray(taus),
        jax.random.split(key, int(n_seeds)),
        K,
        n // (int(n_points) - 1),
        opts,
    )
    roles = members.mean(axis=-1)
    t = jnp.asarray(taus[:: n // (int(n_points) - 1)])
    return PoolPaths(t, members, roles, jnp.prod(roles, axis=-1), model.network.names)
