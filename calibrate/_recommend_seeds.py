"""Seed-to-seed spread for ``recommend --space``: what one new run at a setting would show.

Beyond the posterior uncertainty of its parameters, the fitted model has two sources of
variation between runs of one setting (see :class:`calibrate.CurveModel`):

- per-run random effects (``hierarchy.random_effects``): a run's transformed parameters of
  each listed base move by ``tau * eps``, ``eps ~ N(0, 1)`` per node or edge, ``tau`` per
  posterior draw; a new seed is a new run, so it gets a fresh ``eps``;
- evaluation noise: a competence is observed as ``k / n`` of ``n`` evaluated problems,
  ``k`` binomial around the run's mean curve (beta-binomial with the draw's concentration
  ``phi`` for ``likelihood: betabinomial``).

:func:`new_run_draws` gives every posterior draw ``replicates`` new runs (fresh run effects,
predicted through the links by :func:`calibrate.predict`) and one final evaluation each of
the proxy (last) agent at its median ``n_eval`` in the data. Without random effects in the
fit the runs of a draw differ only by that evaluation noise (then ``replicates`` is 1).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from ._posterior import Posterior
from ._predict import predict

__all__ = ["new_run_draws", "seed_spread_note"]


def _proxy_n_eval(post: Posterior, agent: int = -1) -> int:
    """Median evaluation size of the proxy agent (index; default the last) in the data."""
    cm = post.model
    sel = cm.node_idx == agent % cm.network.size
    return int(np.median(cm.n_eval[sel] if sel.any() else cm.n_eval))


def seed_spread_note(post: Posterior) -> str:
    """One sentence: what the seed spread of a prediction from ``post`` includes."""
    cm = post.model
    noise = (
        "beta-binomial evaluation noise (the draw's phi)"
        if cm.config.likelihood == "betabinomial"
        else "binomial evaluation noise"
    )
    noise += f" of one final evaluation of {_proxy_n_eval(post)} problems"
    if cm.re_bases:
        bases = ", ".join(cm.re_bases)
        return (
            f"a fresh per-run random effect on {bases} (sd tau, per posterior draw) and "
            f"{noise}; seed_sd leaves out the posterior uncertainty, the new-run interval "
            "includes it"
        )
    return (
        f"the fit has no per-run random effects (hierarchy.random_effects), so seeds differ "
        f"only by the {noise}; seed_sd leaves out the posterior uncertainty, the new-run "
        "interval includes it"
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
        pr = cm.config.priors
        tau = np.exp(np.log(pr.re_median) + pr.re_sd * flat["tau_z"][idx])  # (G, bases)
        tau = np.repeat(tau[:, cm.re_group], m, axis=0)  # (G*M, n_re)
        eps = rng.standard_normal(tau.shape)
        # u = loc + scale * z: a run effect tau * eps on u is (tau * eps) / scale on z
        z[:, cm.re_index] += tau * eps / np.asarray(cm.layout.scale)[cm.re_index]
    samples = {"z": z[None]}
    if "c" in flat:
        samples["c"] = np.repeat(flat["c"][idx], m, axis=0)[None]
    runs = copy.copy(post)
    runs.samples = samples
    pred = predict(runs, settings, steps=steps, max_draws=g * m, key=key, bands=False)
    fin = np.empty(pred.final.shape[:2])
    fin[:, pred.draw_index] = pred.final[:, :, agent]  # back into draw-major order
    mu = fin.reshape(len(settings), g, m)
    n = _proxy_n_eval(post, agent)
    p = np.clip(np.where(np.isfinite(mu), mu, 0.5), 0.0, 1.0)
    noise_var = p * (1 - p) / n
    if cm.config.likelihood == "betabinomial":
        phi = np.exp(np.log(cm.config.priors.phi_median) + cm.config.priors.phi_sd * flat["z_phi"])
        phi = phi[idx][None, :, None]
        noise_var = noise_var * (1 + (n - 1) / (phi + 1))
        a, b = np.maximum(p * phi, 1e-12), np.maximum((1 - p) * phi, 1e-12)
        p = rng.beta(a, b)
    y = rng.binomial(n, p) / n
    between = mu.var(axis=2, ddof=1) if m > 1 else np.zeros(mu.shape[:2])
    var = between + noise_var.mean(axis=2)
    bad = ~np.isfinite(mu)
    y = np.where(bad, np.nan, y)
    var = np.where(bad.any(axis=2), np.nan, var)
    return {"mu": mu, "y": y, "var": var, "n_eval": n, "replicates": m}
