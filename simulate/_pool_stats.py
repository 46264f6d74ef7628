"""Across-seed statistics of pools, and calibration of their noise to measured variance.

:func:`pool_variance` summarises :func:`~simulate.pool_paths` over seeds (the variance of
each role's competence and of the end-to-end proxy per time, and the fraction of seeds that
collapse); :func:`fit_pool_sigma` finds the noise amplitude whose simulated variance matches
a measured one (the study calibrates on single-adapter runs and predicts K = 2, 4, 8).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ._kinetics import Model
from ._pool import _positive, pool_paths
from .spec import SpecError

__all__ = ["PoolStats", "fit_pool_sigma", "pool_variance"]


class PoolStats(eqx.Module):
    """Across-seed statistics of a pool (from :func:`pool_variance`).

    Attributes:
        t: Save times, shape ``(T,)``.
        role_mean: Mean over seeds of each role's competence, shape ``(T, N)``.
        role_var: Variance over seeds (``ddof=1``) of each role's competence, ``(T, N)``.
        e2e_mean: Mean over seeds of the end-to-end proxy, shape ``(T,)``.
        e2e_var: Variance over seeds of the end-to-end proxy, shape ``(T,)``.
        collapsed: Per role, the fraction of seeds whose competence ends below the
            threshold, shape ``(N,)``.
        e2e_collapsed: Fraction of seeds whose proxy ends below the threshold.
        names: Role names.
    """

    t: Array
    role_mean: Array
    role_var: Array
    e2e_mean: Array
    e2e_var: Array
    collapsed: Array
    e2e_collapsed: Array
    names: tuple[str, ...] = eqx.field(static=True)


def pool_variance(
    model: Model, K: int, *, collapse_threshold: float = 0.1, key: PRNGKeyArray, **kwargs: Any
) -> PoolStats:
    """Across-seed mean and variance per time of each role and of the end-to-end proxy.

    Args:
        model: A competence model.
        K: Members per role.
        collapse_threshold: A role (or the proxy) whose competence ends below this has
            collapsed.
        key: PRNG key (keyword-only).
        **kwargs: Passed to :func:`pool_paths` (``sigma``, ``t1``, ``dt``, ``n_seeds``,
            ``split``, ``sampling``, ...).

    Returns:
        A :class:`PoolStats`.
    """
    p = pool_paths(model, K, key=key, **kwargs)
    ddof = 1 if p.roles.shape[0] > 1 else 0
    return PoolStats(
        t=p.t,
        role_mean=p.roles.mean(axis=0),
        role_var=p.roles.var(axis=0, ddof=ddof),
        e2e_mean=p.e2e.mean(axis=0),
        e2e_var=p.e2e.var(axis=0, ddof=ddof),
        collapsed=jnp.mean(p.roles[:, -1, :] < collapse_threshold, axis=0),
        e2e_collapsed=jnp.mean(p.e2e[:, -1] < collapse_threshold),
        names=p.names,
    )


def fit_pool_sigma(
    model: Model,
    target_var: float,
    *,
    window: tuple[float, float],
    role: str | Sequence[str] | None = None,
    K: int = 1,
    bounds: tuple[float, float] = (1e-3, 3.0),
    rtol: float = 0.005,
    key: PRNGKeyArray,
    **kwargs: Any,
) -> float:
    """Calibrate one noise amplitude ``sigma`` (all roles) to a measured across-seed variance.

    The objective is the across-seed variance of the role competence (``role``: one name,
    the mean over several names, or over all roles when None; ``"e2e"``: the proxy),
    averaged over the save times in ``window``. Every evaluation reuses ``key`` (common
    random numbers) and one compiled program; ``sigma`` is found by bisection on
    ``log sigma`` (the variance grows with sigma).

    Args:
        model: A competence model.
        target_var: Measured variance (e.g. of K=1 runs), > 0.
        window: ``(t_a, t_b)``, the time window to average over (inclusive).
        role: Role name(s), ``"e2e"``, or None (all roles).
        K: Pool size of the simulation (1 to calibrate on single-adapter runs).
        bounds: Search interval of sigma, ``0 < lo < hi``.
        rtol: Stop when ``hi / lo < 1 + rtol``.
        key: PRNG key (keyword-only), reused for every evaluation.
        **kwargs: Passed to :func:`pool_paths` (not ``sigma``).

    Returns:
        The fitted sigma (geometric midpoint of the final bracket).

    Raises:
        SpecError: Bad arguments, or a target the bracket cannot reach.
    """
    target = _positive("target_var", target_var)
    lo, hi = (_positive("bounds", b) for b in bounds)
    if not lo < hi:
        raise SpecError(f"bounds must satisfy 0 < lo < hi, got {bounds}")
    if "sigma" in kwargs:
        raise SpecError("fit_pool_sigma fits sigma; do not pass it")
    names = model.network.names
    wanted = [role] if isinstance(role, str) else list(role or names)
    for r in wanted:
        if r != "e2e" and r not in names:
            raise SpecError(f"unknown role {r!r}; roles are {list(names)} or 'e2e'")

    def objective(sigma: float) -> float:
        st = pool_variance(model, K, sigma=sigma, key=key, **kwargs)
        t = np.asarray(st.t)
        sel = (t >= window[0]) & (t <= window[1])
        if not sel.any():
            raise SpecError(f"window {window} holds no save time in [{t[0]:g}, {t[-1]:g}]")
        cols = [
            np.asarray(st.e2e_var) if r == "e2e" else np.asarray(st.role_var)[:, names.index(r)]
            for r in wanted
        ]
        return float(np.mean(np.stack(cols)[:, sel]))

    v_lo, v_hi = objective(lo), objective(hi)
    if not v_lo <= target <= v_hi:
        raise SpecError(
            f"target variance {target:.4g} is outside [{v_lo:.4g}, {v_hi:.4g}], the variance "
            f"for sigma in [{lo:g}, {hi:g}]; widen bounds"
        )
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        if objective(mid) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)
