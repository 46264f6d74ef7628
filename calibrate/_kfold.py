"""Exact K-fold cross-validation of a fitted candidate, for where PSIS-LOO is unreliable.

Folds are over *evaluation points* (one run's evaluation at one step, all agents
together), assigned by interleaving each run's steps (point ``j`` of run ``r`` goes to
fold ``(j + r) mod K``). So every fold spans the whole time range of every run and each
held-out point keeps observed neighbours, as in leave-one-out: the K-fold elpd estimates
nearly the quantity PSIS-LOO estimates (each observation predicted from the rest; with
a fifth held out it is slightly pessimistic), which is what lets it stand in for
PSIS-LOO in one ranking. Folds over runs would predict whole new runs instead (a
different quantity, and impossible with one run).

A fold is refitted on the same compiled likelihood with the held-out observations'
evaluation counts set to zero (a binomial or beta-binomial term with ``n = k = 0`` is
exactly 0), so no refit compiles anything new.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln, logsumexp

from ._density import batched_loglik
from ._model import CurveModel

__all__ = ["fold_ids", "kfold_pointwise", "masked_model"]

Draws = dict[str, np.ndarray]  # latent sites, each (S, ...)


def fold_ids(cm: CurveModel, k: int) -> np.ndarray:
    """Fold of each observation (``0..k-1``), by evaluation point (see the module doc).

    Raises:
        ValueError: ``k < 2`` or fewer evaluation points than folds.
    """
    run, t = np.asarray(cm.run_idx), np.asarray(cm.t_idx)
    points = np.unique(np.stack([run, t], axis=1), axis=0)  # sorted by run, then step
    if k < 2 or len(points) < k:
        raise ValueError(f"K-fold needs 2 <= K <= evaluation points ({len(points)}), got {k}")
    fold_of = {}
    for r in np.unique(points[:, 0]):
        steps = points[points[:, 0] == r, 1]
        for j, s in enumerate(steps):
            fold_of[(int(r), int(s))] = (j + int(r)) % k
    return np.array([fold_of[(int(a), int(b))] for a, b in zip(run, t, strict=True)])


def masked_model(cm: CurveModel, held: np.ndarray) -> CurveModel:
    """``cm`` with the observations ``held`` (boolean, per observation) left out: their
    ``n_eval`` and successes are 0, so they add exactly nothing to the likelihood."""
    held = np.asarray(held, bool)
    n = np.where(held, 0, np.asarray(cm.n_eval))
    k = np.where(held, 0, np.asarray(cm.k))
    nf, kf = n.astype(float), k.astype(float)
    log_choose = np.sum(gammaln(nf + 1.0) - gammaln(kf + 1.0) - gammaln(nf - kf + 1.0))
    return eqx.tree_at(
        lambda m: (m.n_eval, m.k, m.log_choose),
        cm,
        (
            n.astype(np.asarray(cm.n_eval).dtype),
            k.astype(np.asarray(cm.k).dtype),
            np.asarray(log_choose),
        ),
    )


def kfold_pointwise(
    cm: CurveModel,
    fit_draws: Callable[[CurveModel, jax.Array, int], Draws],
    *,
    k: int,
    key: jax.Array,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact K-fold pointwise elpd: for each observation ``i`` in fold ``f``,
    ``log mean_s p(y_i | theta_s)`` over draws ``theta_s`` of the fit without fold ``f``.

    Args:
        cm: The candidate's model on all the data.
        fit_draws: ``(model, key, fold) -> latent draws`` (flat, ``(S, ...)``; the same
            inference as the full fit).
        k: Number of folds.
        key: PRNG key; fold ``f`` uses ``fold_in(key, f)``.

    Returns:
        ``(pointwise elpd (n_obs,), fold of each observation (n_obs,))``.
    """
    folds = fold_ids(cm, k)
    out = np.full(folds.shape, np.nan)
    for f in range(k):
        held = folds == f
        draws = fit_draws(masked_model(cm, held), jax.random.fold_in(key, f), f)
        ll = np.asarray(batched_loglik(cm, {n: jnp.asarray(v) for n, v in draws.items()}))
        s = ll.shape[0]
        out[held] = logsumexp(ll[:, held], axis=0) - np.log(s)
    return out, folds
