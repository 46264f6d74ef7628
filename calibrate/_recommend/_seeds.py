"""Seed-to-seed spread for ``recommend --space``: what one new run at a setting would show.

The story of one new run is :mod:`calibrate._new_run`'s (fresh per-run random effects,
seed spread from pilot replicates when the fit has no random effects, evaluation noise at
the agent's median ``n_eval``). :func:`new_run_draws` gives every posterior draw
``replicates`` new runs (predicted through the links by :func:`calibrate.predict`) and one
final evaluation each of the proxy agent, so that the spread between seeds given a draw
(``seed_sd``) can be told from the posterior uncertainty. Without random effects the runs
of a draw differ only by the replicate offset and the evaluation noise (then
``replicates`` is 1).
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
from .._posterior import Posterior
from .._predict._core import predict

__all__ = ["new_run_draws", "seed_spread_note"]


def _proxy_n_eval(post: Posterior, agent: int = -1) -> int:
    """Median evaluation size of the proxy agent (index; default the last) in the data."""
    return int(agent_n_eval(post.model)[agent])


def seed_spread_note(post: Posterior) -> str:
    """One sentence: what the seed spread of a prediction from ``post`` includes."""
    cm = post.model
    noise = (
        "beta-binomial evaluation noise (the draw's phi)"
        if cm.config.likelihood == "betabinomial"
        else "binomial evaluation noise"
    )
    noise += f" of one final evaluation of {_proxy_n_eval(post)} problems"
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
    agent: int = -1,
) -> dict[str, Any]:
    """Final proxy of new runs at each setting: per posterior draw, ``replicates`` runs.

    Args:
        post: The fit.
        settings: Linked training-config fields per setting (as for :func:`predict`).
        steps: Horizon in steps.
        max_draws: Posterior draws (a random subset when the fit has more).
        key: PRNG key of the draw subset, the run effects and the evaluation noise.
        replicates: New runs per draw when the fit has random effects (>= 2).
        agent: Index of the proxy agent (default the last).

    Returns:
        ``mu`` ``(S, G, M)``: each new run's mean final competence of the last agent;
        ``y`` ``(S, G, M)``: its observed final score ``k / n_eval``; ``var`` ``(S, G)``:
        the variance of ``y`` between seeds given the draw (run effects: the sample
        variance of ``mu`` over the replicates; plus the mean evaluation-noise variance);
        ``n_eval``; ``replicates``.
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
    fin = np.empty(pred.final.shape[:2])
    fin[:, pred.draw_index] = pred.final[:, :, agent]  # back into draw-major order
    mu = fin.reshape(len(settings), g, m)
    n = _proxy_n_eval(post, agent)
    sd = float(replicate_spread(cm, post.hyper).sd[agent])
    offset = sd * rng.standard_normal((1, g, m)) if sd > 0 else np.zeros((1, g, m))
    p = np.clip(np.where(np.isfinite(mu), mu + offset, 0.5), 0.0, 1.0)
    noise_var = p * (1 - p) / n
    phi = draw_phi(cm, flat["z_phi"][idx] if "z_phi" in flat else None)
    if phi is not None:
        phi = phi[None, :, None]
        noise_var = noise_var * (1 + (n - 1) / (phi + 1))
    y = evaluation_noise(mu, np.asarray(n), rng, phi=phi, offset=offset)
    between = mu.var(axis=2, ddof=1) if m > 1 else np.zeros(mu.shape[:2])
    var = between + sd**2 + noise_var.mean(axis=2)
    bad = ~np.isfinite(mu)
    y = np.where(bad, np.nan, y)
    var = np.where(bad.any(axis=2), np.nan, var)
    return {"mu": mu, "y": y, "var": var, "n_eval": n, "replicates": m}
