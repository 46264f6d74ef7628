"""``recommend``: choose a hyperparameter for the next run from a fitted posterior.

With a link ``log theta = a + c (T(h) - mean T(h_pilots))`` in the fit, each candidate
value ``h`` maps every posterior draw to parameters; simulate's competence kinetics then
predict the curves over the horizon. The recommendation maximises the posterior mean
final competence of the output node (the pipeline's end-to-end proxy) among values whose
posterior probability of oscillation is below ``max_p_osc``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import simulate

from ._config import ConfigError
from ._knobs import check_value, transform_values
from ._posterior import Posterior, load_fit
from ._predict import predict

__all__ = ["recommend", "recommend_from_dir"]


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
        grid: Candidate values (default: 15 values, log-spaced over 1/3x..3x the data range
            for a ``log`` link, else evenly spaced in ``T(h)`` over the range widened by half).
        steps: Horizon in steps, > 0 (default: the data's last step).
        max_draws: Posterior draws used per value.
        max_p_osc: Largest acceptable posterior probability of oscillation.
        key: PRNG key for the draw subset (keyword-only).

    Returns:
        ``{"param", "value", "final_competence", "p_oscillation", "table", "config"}``;
        ``config`` is an llm_runs-style nested dict (``{"rl": {"lr": value}}``).

    Raises:
        ConfigError: No link on ``param``, a grid value outside the link transform's domain
            (``log``: a finite number > 0), or a horizon that is not a finite number > 0.
    """
    cm = post.model
    links = cm.config.hierarchy.links
    if not links:
        raise ConfigError("recommend needs a fit with a hyperparameter link (hierarchy.links)")
    param = param or links[0].covariate
    rows = [i for i, n in enumerate(cm.link_names) if n.endswith(f"~{param}]")]
    if not rows:
        raise ConfigError(f"no link on {param!r}; links: {[lk.covariate for lk in links]}")
    transform = cm.config.hierarchy.transforms[param]
    h = _hyper(post, param)
    if grid is None and transform == "log":
        values = np.geomspace(h.min() / 3, h.max() * 3, 15)
    elif grid is None:  # log1p / linear: the pilots' range and half of it each side
        lo, hi = transform_values(transform, [h.min(), h.max()])
        lo = max(lo - (hi - lo) / 2, 0.0) if transform == "log1p" else lo - (hi - lo) / 2
        x = np.linspace(lo, hi + (hi - lo) / 2, 15)
        values = np.expm1(x) if transform == "log1p" else x
    else:
        values = np.asarray(sorted(float(g) for g in grid))
        if not values.size:
            raise ConfigError(f"the grid of {param!r} is empty")
        values = np.asarray(
            [check_value(transform, float(g), f"grid values of {param!r}") for g in values]
        )
    if steps is not None and not (math.isfinite(float(steps)) and float(steps) > 0):
        raise ConfigError(f"the horizon (steps) must be a finite number > 0, got {steps!r}")
    # one idea, one place: the batched predictor of calibrate.predict
    pred = predict(
        post, [{param: float(g)} for g in values], steps=steps, max_draws=max_draws, key=key
    )
    horizon = float(pred.t[-1])
    final = pred.final[:, :, -1].T  # (draws, values): output node = last node (Z of an FFL)
    oscillating = [int(simulate.Regime.DAMPED), int(simulate.Regime.SUSTAINED)]
    osc = np.asarray(np.isin(pred.codes, oscillating).any(axis=-1)).T  # (draws, values)
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
    train_config = _next_run_config(post, param, best["value"])
    return {
        "param": param,
        "value": best["value"],
        "final_competence": best["final_mean"],
        "p_oscillation": best["p_oscillation"],
        "horizon_steps": horizon,
        "table": table,
        "config": config,
        "base_run": None if train_config is None else train_config[0],
        "train_config": None if train_config is None else train_config[1],
    }


def _next_run_config(post: Posterior, param: str, value: float) -> tuple[str, dict] | None:
    """The next run's complete llm_runs config: the pilot run whose ``param`` is nearest to
    ``value`` (in log), with ``param`` set to ``value``, validated by ``llm_runs.config``.

    Returns:
        ``(pilot run, config dict)``, or None when the fit's data carry no run configs
        (tables and TensorBoard inputs).

    Raises:
        ConfigError: The pilot's config with the new value is not a valid training config.
    """
    if not post.run_configs:
        return None
    from llm_runs.config import TrainConfig, set_dotted

    def distance(run: str) -> float:
        h = _dotted(post.run_configs[run], param)
        return abs(math.log(h / value)) if isinstance(h, int | float) and h > 0 else math.inf

    base = min(sorted(post.run_configs), key=distance)
    data = json.loads(json.dumps(post.run_configs[base]))
    set_dotted(data, param, value)
    data["name"] = None
    try:
        cfg = TrainConfig.from_dict(data)
    except ConfigError as err:
        msg = f"the recommended {param}={value:g} is not a valid training config: {err}"
        raise ConfigError(msg) from None
    return base, cfg.to_dict()


def _dotted(data: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _hyper(post: Posterior, param: str) -> np.ndarray:
    hv = post.hyper
    if hv is not None and param in hv:
        return np.asarray(hv[param], float)
    raise ConfigError(f"the fit does not carry hyperparameter {param!r}")


def recommend_from_dir(fit_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`recommend` on a saved fit folder."""
    return recommend(load_fit(fit_dir), **kwargs)
