"""``recommend``: choose a hyperparameter for the next run from a fitted posterior.

With a log-linear link ``log theta = a + c log(h / h_ref)`` in the fit, each candidate
value ``h`` maps every posterior draw to parameters; simulate's competence kinetics then
predict the curves over the horizon. The recommendation maximises the posterior mean
final competence of the output node (the pipeline's end-to-end proxy) among values whose
posterior probability of oscillation is below ``max_p_osc``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ._compiled import batched_curves
from ._config import ConfigError, FitConfig
from ._data import CurveData
from ._model import build_model
from ._posterior import Posterior

__all__ = ["load_fit", "recommend", "recommend_from_dir"]


def _oscillates(A: np.ndarray, tol: float = 0.01) -> np.ndarray:
    """Per curve (..., T): True if the second half has >= 2 turning points above ``tol``."""
    half = A[..., A.shape[-1] // 2 :]
    d = np.diff(half, axis=-1)
    d = np.where(np.abs(d) < 1e-6, 0.0, d)
    turns = np.sum(np.abs(np.diff(np.sign(d), axis=-1)) > 1, axis=-1)
    amp = half.max(-1) - half.min(-1)
    return (turns >= 2) & (amp > tol)


def recommend(
    post: Posterior,
    *,
    param: str | None = None,
    grid: Sequence[float] | None = None,
    steps: float | None = None,
    max_draws: int = 100,
    max_p_osc: float = 0.1,
    key: jax.Array | None = None,
) -> dict[str, Any]:
    """Sweep a linked hyperparameter and pick the value for the next run.

    Args:
        post: A fit whose hierarchy has a link on ``param``.
        param: Hyperparameter (link covariate); default: the first link's.
        grid: Candidate values (default: 15 log-spaced values over 1/3x..3x the data range).
        steps: Horizon in steps (default: the data's last step).
        max_draws: Posterior draws used per value.
        max_p_osc: Largest acceptable posterior probability of oscillation.
        key: PRNG key for the draw subset (keyword-only).

    Returns:
        ``{"param", "value", "final_competence", "p_oscillation", "table", "config"}``;
        ``config`` is an llm_runs-style nested dict (``{"rl": {"lr": value}}``).
    """
    cm = post.model
    links = cm.config.hierarchy.links
    if not links:
        raise ConfigError("recommend needs a fit with a hyperparameter link (hierarchy.links)")
    param = param or links[0].covariate
    rows = [i for i, n in enumerate(cm.link_names) if n.endswith(f"~{param}]")]
    if not rows:
        raise ConfigError(f"no link on {param!r}; links: {[lk.covariate for lk in links]}")
    data_h = np.exp(np.asarray(post.model.link_x[rows[0]]))  # h / geometric mean
    h_ref = float(np.exp(np.mean(np.log(_hyper(post, param)))))
    if grid is None:
        values = h_ref * np.geomspace(data_h.min() / 3, data_h.max() * 3, 15)
    else:
        values = np.asarray(sorted(float(g) for g in grid))
    if np.any(values <= 0):
        raise ConfigError("grid values must be > 0")
    lay = cm.layout
    flat = post._flat()
    n = flat["z"].shape[0]
    rng = np.random.default_rng(0 if key is None else int(jax.random.randint(key, (), 0, 2**30)))
    idx = rng.choice(n, min(max_draws, n), replace=False)
    u = lay.loc + lay.scale * flat["z"][idx]  # (S, D), reference hyperparameters
    sd = cm.config.priors.slope_sd
    theta = []
    for g in values:
        ug = u.copy()
        for r in rows:
            ug[:, cm.link_index[r]] += sd * flat["c"][idx, r] * np.log(g / h_ref)
        theta.append(np.asarray(lay.to_natural(jnp.asarray(ug))))
    theta = np.stack(theta, axis=1)  # (S, G, D)
    horizon = float(steps or cm.ts[-1])
    t = np.linspace(0.0, horizon, 200)
    A = np.asarray(batched_curves(cm, jnp.asarray(theta), t))  # (S, G, T, N)
    out = A[..., -1]  # output node = last node (Z of an FFL)
    final = out[..., -1]
    osc = _oscillates(np.moveaxis(A, -1, -2)).any(-1)  # any node oscillates
    table = []
    for j, g in enumerate(values):
        table.append(
            {
                "value": float(g),
                "final_mean": float(final[:, j].mean()),
                "final_q05": float(np.quantile(final[:, j], 0.05)),
                "final_q95": float(np.quantile(final[:, j], 0.95)),
                "p_oscillation": float(osc[:, j].mean()),
            }
        )
    ok = [r for r in table if r["p_oscillation"] <= max_p_osc] or table
    best = max(ok, key=lambda r: r["final_mean"])
    config: dict[str, Any] = {}
    node = config
    parts = param.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = best["value"]
    return {
        "param": param,
        "value": best["value"],
        "final_competence": best["final_mean"],
        "p_oscillation": best["p_oscillation"],
        "horizon_steps": horizon,
        "table": table,
        "config": config,
    }


def _hyper(post: Posterior, param: str) -> np.ndarray:
    hv = post.hyper
    if hv is not None and param in hv:
        return np.asarray(hv[param], float)
    raise ConfigError(f"the fit does not carry hyperparameter {param!r}")


def load_fit(fit_dir: str | Path) -> Posterior:
    """Rebuild a :class:`Posterior` from a folder written by :meth:`Posterior.save`."""
    d = Path(fit_dir)
    for f in ("config.json", "network.json", "data.parquet", "latent.npz"):
        if not (d / f).is_file():
            raise ConfigError(f"{d}: not a fit folder (missing {f})")
    import simulate

    cfg = FitConfig.load(d / "config.json")
    spec = simulate.spec.NetworkSpec.from_dict(json.loads((d / "network.json").read_text()))
    table = pd.read_parquet(d / "data.parquet")
    data = CurveData.from_table(table, source=str(d / "data.parquet"))
    cm = build_model(data, spec, cfg)
    lat = dict(np.load(d / "latent.npz"))
    post = Posterior(cm, lat, {}, {})
    post.hyper = {
        c: data.hyper.loc[list(cm.runs), c].to_numpy(float)
        for c in data.hyper.columns
        if c != "seed"
    }
    return post


def recommend_from_dir(fit_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`recommend` on a saved fit folder."""
    return recommend(load_fit(fit_dir), **kwargs)
