"""Seed-to-seed spread for ``recommend --space``: what one new run at a setting would show.

The story of one new run is :mod:`calibrate._new_run`'s (fresh per-run random effects,
seed spread from pilot replicates when the fit has no random effects, evaluation noise at
the agent's median ``n_eval``). :func:`new_run_draws` gives every posterior draw
``replicates`` new runs (predicted through the links by :func:`calibrate.predict`) and one
final evaluation each of the objective, so that the spread between seeds given a draw
(``seed_sd``) can be told from the posterior uncertainty. Without random effects the runs
of a draw differ only by the replicate offset and the evaluation noise (then
``replicates`` is 1).

The ``e2e`` objective (the end-to-end accuracy, :mod:`calibrate._objective`): a new run's
mean final is the product of its agents' new-run mean finals, each agent shifted by its own
replicate seed offset (independent normals, sd per agent) and clipped to [0, 1] before the
product; its one final evaluation is binomial (beta-binomial with the draw's ``phi``) at
the last agent's median ``n_eval``, as an agent objective's is at that agent's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from .._new_run import (
    agent_n_eval,
    draw_phi,
    evaluation_noise,
    fresh_effects,
    replicate_spread,
)
from .._objective import E2E_LABEL, objective_columns, objective_values
from .._posterior import Posterior
from .._predict._core import predict

__all__ = ["new_run_draws", "seed_spread_note"]


def _proxy_n_eval(post: Posterior, agent: int | None = -1) -> int:
    """Median evaluation size of the proxy agent (index; default the last; None, ``e2e``:
    the last agent's) in the data."""
    return int(agent_n_eval(post.model)[-1 if agent is None else agent])


def seed_spread_note(post: Posterior, agent: int | None = -1) -> str:
    """One sentence: what the seed spread of a prediction from ``post`` includes (``agent``:
    the objective's index, None for ``e2e``)."""
    cm = post.model
    noise = (
        "beta-binomial evaluation noise (the draw's phi)"
        if cm.config.likelihood == "betabinomial"
        else "binomial evaluation noise"
    )
    noise += f" of one final evaluation of {_proxy_n_eval(post, agent)} problems"
    if agent is None:
        noise += (f" of the {E2E_LABEL}, each agent's new-run final with its own seed "
                  "offset, multiplied")  # fmt: skip
    spread = replicate_spread(cm, post.hyper)
    return (
        f"seed spread: {spread.note}; and {noise}; seed_sd leaves out the posterior "
        "uncertainty, the new-run interval includes it"
    )


def new_run_draws(
    post: Posterior,
    settings: Sequence[Mapping[str, Any]],
    *,
    steps: float,
    max_draws: int,
    key: jax.Array | None = None,
    replicates: int = 8,
    agent: int | None = -1,
) -> dict[str, Any]:
    """Final objective of new runs at each setting: per posterior draw, ``replicates`` runs.

    Args:
        post: The fit.
        settings: Linked training-config fields per setting (as for :func:`predict`).
        steps: Horizon in steps.
        max_draws: Posterior draws (a random subset when the fit has more).
        key: PRNG key of the draw subset, the run effects and the evaluation noise.
        replicates: New runs per draw when the fit has random effects (>= 2).
        agent: Index of the proxy agent (default the last), or None for ``e2e`` (the
            product of every agent's, see the module docstring).

    Returns:
        ``mu`` ``(S, G, M)``: each new run's mean final objective (the agent's competence,
        or the product of the agents'), before the replicate offset; ``p`` ``(S, G, M)``:
        its expected observed score, after the offsets (each agent's clipped to [0, 1]);
        ``y`` ``(S, G, M)``: its observed final score ``k / n_eval``, ``k ~ Binomial(n_eval,
        p)`` (beta-binomial with ``phi``); ``var`` ``(S, G)``: the variance of ``y``
        between seeds given the draw (the sample variance of ``mu`` over the replicates;
        plus the offsets' variance, ``sd**2`` for one agent and ``prod(mu_i**2 + sd_i**2)
        - prod(mu_i**2)`` averaged over the replicates for the product; plus the mean
        evaluation-noise variance); ``n_eval``; ``replicates``.
    """
    cm = post.model
    seed = 0 if key is None else int(jax.random.randint(key, (), 0, 2**30))
    rng = np.random.default_rng(seed)
    flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in post.samples.items()}
    n_all = flat["z"].shape[0]
    idx = np.sort(rng.choice(n_all, min(max_draws, n_all), replace=False))
    g = idx.size
    m = max(2, int(replicates)) if cm.re_index.size else 1
    z = np.repeat(flat["z"][idx], m, axis=0)  # (G*M, D), draw-major
    if cm.re_index.size:
        eff = fresh_effects(cm, np.repeat(flat["tau_z"][idx], m, axis=0), rng)
        # u = loc + scale * z: a run effect tau * eps on u is (tau * eps) / scale on z
        z[:, cm.re_index] += eff[:, cm.re_index] / np.asarray(cm.layout.scale)[cm.re_index]
    samples = {"z": z[None]}
    if "c" in flat:
        samples["c"] = np.repeat(flat["c"][idx], m, axis=0)[None]
    runs = copy.copy(post)
    runs.samples = samples
    pred = predict(runs, settings, steps=steps, max_draws=g * m, key=key, bands=False, band="mean")
    fin = np.empty(pred.final.shape)
    fin[:, pred.draw_index] = pred.final  # back into draw-major order
    fin = fin.reshape(len(settings), g, m, -1)  # (S, G, M, N)
    mu = objective_values(fin, agent)
    n = _proxy_n_eval(post, agent)
    sd = np.asarray(replicate_spread(cm, post.hyper).sd, dtype=np.float64)  # (N,)
    cols = objective_columns(sd.size, agent)
    offset = np.zeros((1, g, m, sd.size))  # each multiplied agent's own seed offset
    if np.any(sd[cols] > 0):
        offset[..., cols] = sd[cols] * rng.standard_normal((1, g, m, len(cols)))
    p = objective_values(np.clip(np.where(np.isfinite(fin), fin, 0.5) + offset, 0.0, 1.0), agent)
    noise_var = p * (1 - p) / n
    phi = draw_phi(cm, flat["z_phi"][idx] if "z_phi" in flat else None)
    if phi is not None:
        phi = phi[None, :, None]
        noise_var = noise_var * (1 + (n - 1) / (phi + 1))
    y = evaluation_noise(p, np.asarray(n), rng, phi=phi)
    between = mu.var(axis=2, ddof=1) if m > 1 else np.zeros(mu.shape[:2])
    sq = fin**2  # the offsets' variance: Var prod(mu_i + e_i) = prod(mu_i^2 + sd_i^2) - prod mu_i^2
    spread = objective_values(sq + sd**2, agent) - objective_values(sq, agent)
    var = between + spread.mean(axis=2) + noise_var.mean(axis=2)
    bad = ~np.isfinite(mu)
    y = np.where(bad, np.nan, y)
    var = np.where(bad.any(axis=2), np.nan, var)
    p = np.where(bad, np.nan, p)
    return {"mu": mu, "p": p, "y": y, "var": var, "n_eval": n, "replicates": m}
