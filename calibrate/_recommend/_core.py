"""``recommend``: choose a hyperparameter for the next run from a fitted posterior.

With a link ``log theta = a + c (T(h) - mean T(h_pilots))`` in the fit, each candidate value ``h``
maps every posterior draw to parameters; simulate's competence kinetics then predict the curves
over the horizon. The recommendation maximises the posterior mean final competence of the output
node (the end-to-end proxy) among values whose P(oscillation) is below ``max_p_osc``.
:func:`recommend_space` maximises the space's ``objective``: an agent's final competence, or
the end-to-end accuracy (``e2e``, the product of the agents'; :mod:`calibrate._objective`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import simulate
from simulate.common import from_scale

from .._config import ConfigError
from .._covariates import factors
from .._knobs import check_value, transform_values
from .._new_run import band_note
from .._objective import objective_index, objective_label
from .._posterior import Posterior, load_fit
from .._predict._core import predict
from .._space import SearchSpace
from ._eval import REGIME_RULES, eval_every, evaluate, head_stats
from ._eval import rank_candidates as rank_candidates
from ._explain import explain
from ._margin import margins, tied_with_best
from ._motif import _NET, MotifFits, is_selection_folder, plan
from ._pilots import base_pilot, next_run_config, pilot_values, space_config
from ._seeds import seed_spread_note

__all__ = [
    "rank_candidates",
    "recommend",
    "recommend_from_dir",
    "recommend_space",
    "recommend_space_from_dir",
]


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
        ``{"param", "value", "final_competence", "p_oscillation", "intervals", "table",
        "config"}``; table ``final_q*``: the mean curve's, ``new_run_q*``: one new run's.

    Raises:
        ConfigError: No link on ``param``, a grid value outside the link transform's domain
            (``log``: a finite number > 0), or a horizon that is not a finite number > 0.
    """
    cm = post.model
    links = cm.config.hierarchy.links
    if not links:
        raise ConfigError("recommend needs a fit with a hyperparameter link (hierarchy.links)")
    param = param or links[0].covariate
    rows = [i for i, r in enumerate(cm.link_rows) if param in factors(r.covariate)]
    if not rows:
        raise ConfigError(f"no link on {param!r}; links: {[lk.covariate for lk in links]}")
    transform = cm.config.hierarchy.transforms.get(param, "log")  # a product's field: log
    h = _hyper(post, param)
    if grid is None and transform == "log":
        values = np.geomspace(h.min() / 3, h.max() * 3, 15)
    elif grid is None:  # log1p / linear: the pilots' range and half of it each side
        lo, hi = transform_values(transform, [h.min(), h.max()])
        lo = max(lo - (hi - lo) / 2, 0.0) if transform == "log1p" else lo - (hi - lo) / 2
        x = np.linspace(lo, hi + (hi - lo) / 2, 15)
        values = from_scale(transform, x)
    else:
        values = np.asarray(sorted(float(g) for g in grid))
        if not values.size:
            raise ConfigError(f"the grid of {param!r} is empty")
        values = np.asarray(
            [check_value(transform, float(g), f"grid values of {param!r}") for g in values]
        )
    if steps is not None and not (math.isfinite(float(steps)) and float(steps) > 0):
        raise ConfigError(f"the horizon (steps) must be a finite number > 0, got {steps!r}")
    pred = predict(post, [{param: float(g)} for g in values], steps=steps,
                   max_draws=max_draws, key=key, bands=False)  # calibrate.predict's  # fmt: skip
    horizon = float(pred.t[-1])
    final = pred.final[:, :, -1].T  # (draws, values): output node = last node (Z of an FFL)
    oscillating = [int(simulate.Regime.DAMPED), int(simulate.Regime.SUSTAINED)]
    osc = np.asarray(np.isin(pred.codes, oscillating).any(axis=-1)).T  # (draws, values)
    failed = np.isnan(final).mean(axis=0)  # competence left [0, 1]: failed, never a forecast
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-failed value: NaN stats
        fm, q05, q95 = (np.nanmean(final, 0), *np.nanquantile(final, [0.05, 0.95], axis=0))
        nq05, nq95 = np.nanquantile(np.asarray(pred.new_final)[:, :, -1].T, [0.05, 0.95], 0)
    table = [
        {"value": float(g), "final_mean": float(fm[j]), "final_q05": float(q05[j]),
         "final_q95": float(q95[j]), "new_run_q05": float(nq05[j]),
         "new_run_q95": float(nq95[j]), "p_oscillation": float(osc[:, j].mean()),
         "p_failed": float(failed[j])}
        for j, g in enumerate(values)
    ]  # fmt: skip
    solved = [r for r in table if r["p_failed"] == 0]
    if not solved:
        raise ConfigError(f"every value of {param!r} failed (competence left [0, 1])")
    ok = [r for r in solved if r["p_oscillation"] <= max_p_osc] or solved
    best = max(ok, key=lambda r: r["final_mean"])
    intervals = {"final_q": band_note("mean"), "new_run_q": pred.band_note(),
                 "seed_spread": pred.seed_spread}  # fmt: skip
    config: dict[str, Any] = {}
    node = config
    parts = param.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = best["value"]
    train_config = next_run_config(post, param, best["value"])
    return {
        "param": param,
        "value": best["value"],
        "final_competence": best["final_mean"],
        "p_oscillation": best["p_oscillation"],
        "horizon_steps": horizon,
        "intervals": intervals,
        "table": table,
        "config": config,
        "base_run": None if train_config is None else train_config[0],
        "train_config": None if train_config is None else train_config[1],
    }


def _hyper(post: Posterior, param: str) -> np.ndarray:
    hv = post.hyper
    if hv is not None and param in hv:
        return np.asarray(hv[param], float)
    raise ConfigError(f"the fit does not carry hyperparameter {param!r}")


def recommend_from_dir(fit_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`recommend` on a saved fit folder."""
    return recommend(load_fit(fit_dir), **kwargs)


_GROUPS = ("converged", "oscillating", "collapse", "unsettled", "failed")


def recommend_space(
    post: Posterior | MotifFits,
    space: SearchSpace,
    *,
    max_draws: int = 200,
    top: int = 5,
    key: jax.Array | None = None,
    motif_weights: str = "best",
    tie: float | None = None,
    extrapolation_sd: float = 0.0,
    regime_rule: str = "model",
) -> dict[str, Any]:
    """Predict every candidate of a search space and rank them for the next run.

    All candidates go through one batched :func:`calibrate.predict` call per fit at the
    horizon ``space.budget_steps``. Per candidate: the objective (``space.objective``: the
    last agent's final competence by default, another agent's, or with ``e2e`` the
    end-to-end accuracy, forecast as the product of the agents' final competences, see
    :mod:`calibrate._objective`; posterior mean and 90 % interval of the mean run) and the
    network's regime probabilities. The risk is P(oscillating or collapse), a failed solve counted
    as a collapse. The ranking puts the candidates with risk <= ``space.risk`` first, by
    mean objective (highest first), then the others by risk (lowest first). The top ``top``
    get the steps for the objective to reach ``space.target`` (median over draws) and the
    spread across
    seeds (``final.seed_sd`` and the 90 % interval of one new run's observed final score,
    ``new_run_q05``/``new_run_q95``; what it includes is stated under ``seed_spread``).

    With a motif selection (:class:`~calibrate._recommend._motif.MotifFits`), each
    candidate's fit follows :func:`~calibrate._recommend._motif.plan`: its motif's own fit
    when the space has ``network.motif``, else the best fit or (``motif_weights=
    "stacking"``) the stacking-weighted mixture; ``motif_source`` says which.

    Linked fields the space leaves out are held at the base pilot's values (the pilot
    nearest the pilots' centre), so that the predictions and ``train_config`` agree.

    Args:
        post: A fit with links on every searched field, or the fits of a selection.
        space: The search space.
        max_draws: Posterior draws per candidate (per fit).
        top: Candidates reported (>= 1).
        key: PRNG key of the draw subset and the new runs (keyword-only).
        motif_weights: ``best`` or ``stacking`` (a selection without ``network.motif``
            in the space).
        tie: Smallest difference of forecast objectives that is not a tie (objective
            units; the command line's default is
            :data:`calibrate._recommend._margin.TIE`); a larger one where the forecasts'
            Monte Carlo noise is larger (:mod:`calibrate._recommend._margin`). Among the
            candidates tied with the best, the one with the largest stability margin is
            recommended. None (the default here): no ties, the ranking's first is
            recommended; its margin is reported either way.
        extrapolation_sd: Bend of the links beyond the pilots' range (``predict``'s; 0,
            straight, as :func:`calibrate.predict`; the command line's default is
            :data:`calibrate._predict._defaults.DEFAULT_EXTRAPOLATION_SD`).
        regime_rule: Where the risk comes from: ``model`` (each draw's smooth curve
            labelled by :func:`simulate.classify`) or ``observed`` (one simulated new run per
            draw labelled by the rule for real runs, :func:`calibrate.observed_regime_probs`;
            the command line's default). The ranking, the ties and the margins use it;
            with ``observed`` the result also holds the pick's margin in time
            (``time_margin``, :func:`calibrate._predict._rule.safe_until`: until which step
            a new run stays converged with P >= 1 - risk, scanned to twice the horizon).

    Returns:
        A JSON-ready dict (``space``, ``motif_source``, ``ranked_by``, ``top``, ``best``,
        ``base_run``, ``train_config``...) and, under ``"_arrays"``, per-candidate values
        for the figure (``settings``, ``utility``, ``risk``, ``pilots``) to drop before
        writing.

    Raises:
        ConfigError: A searched field without a link (or a value outside its link
            transform's domain), a fixed field the training config does not have,
            ``top`` < 1, or a motif the fits cannot predict (see ``plan``).
    """
    from .._predict._core import link_covariates

    if not (isinstance(top, int) and top >= 1):
        raise ConfigError(f"--top must be an integer >= 1, got {top!r}")
    cands = space.candidates()
    pl = plan(post, space, cands, motif_weights)
    first = pl.primary
    names = list(first.model.network.names)
    agent = objective_index(names, space.objective)  # None: e2e (before any solve)
    refs = link_covariates(first)
    transforms = first.model.config.hierarchy.transforms
    parts = {f for c in refs for f in factors(c)}  # rl.lr_scale.X of rl.lr*rl.lr_scale.X
    unlinked = [
        f.name
        for f in space.fields
        if f.name not in refs and f.name not in parts and not f.fixed and f.name not in _NET
    ]
    if unlinked:
        raise ConfigError(
            f"space field(s) {unlinked} have no link in the fit (linked: {sorted(refs) or 'none'});"
            " refit with hierarchy.links on them, or fix them with a single choice"
        )
    for f in space.fields:
        if f.name in refs:
            vals = f.choices if f.choices is not None else (f.low, f.high)
            for v in vals:
                check_value(transforms[f.name], v, f"space: fields.{f.name} value")
    spaced = {f.name for f in space.fields}
    spaced |= {c for c in refs if set(factors(c)) & spaced}  # a product its fields give
    base, held = base_pilot(first, refs, spaced)
    settings = [{k: v for k, v in c.items() if k in refs or k in parts} | held for c in cands]
    steps = space.budget_steps
    kw = {"steps": steps, "max_draws": max_draws, "key": key,
          "extrapolation_sd": extrapolation_sd}  # fmt: skip
    if regime_rule not in REGIME_RULES:
        raise ConfigError(f"regime_rule must be one of {list(REGIME_RULES)}, got {regime_rule!r}")
    ev = evaluate(pl, settings, agent, regime_rule=regime_rule, **kw)
    mean, risk, net = ev.mean, ev.risk, ev.net
    order = rank_candidates(mean, risk, space.risk)
    ok = (risk <= space.risk) & np.isfinite(mean)
    n_ok = int(np.sum(ok))
    tied, tol = tied_with_best(ev, order, ok, tie) if tie is not None else ([order[0]], 0.0)

    def risk_of(scan: list[dict[str, Any]]) -> np.ndarray:
        held_scan = [{k: v for k, v in c.items() if k in refs or k in parts} | held for c in scan]
        pl_scan = plan(post, space, scan, motif_weights)
        return evaluate(pl_scan, held_scan, agent, regime_rule=regime_rule, **kw).risk

    marg = margins(risk_of, space, [cands[i] for i in tied], space.risk)
    if len(tied) > 1:  # the largest margin wins the tie (None: no crossing, the largest)

        def _key(k: int) -> tuple[float, float]:
            sc = marg[k]["score"]
            return (math.inf if sc is None else sc, float(mean[tied[k]]))

        win = max(range(len(tied)), key=_key)
        order = [tied[win], *[i for i in order if i != tied[win]]]
        marg = [marg[win], *[m for k, m in enumerate(marg) if k != win]]
        tied = [tied[win], *[i for i in tied if i != tied[win]]]
    head = order[:top]
    stats = head_stats(ev, head, steps=steps, target=space.target)
    rows = []
    for r, (i, st) in enumerate(zip(head, stats, strict=True)):
        rows.append(
            {
                "rank": r + 1,
                "setting": cands[i],
                "within_risk": bool(risk[i] <= space.risk and np.isfinite(mean[i])),
                "final": {"mean": mean[i], "q05": st["q05"], "q95": st["q95"],
                          "seed_sd": st["seed_sd"], "new_run_q05": st["new_run_q05"],
                          "new_run_q95": st["new_run_q95"]},
                "steps_to_target": st["steps_to_target"],
                "p_reach_target": st["p_reach_target"],
                **{f"p_{g}": net[g][i] for g in _GROUPS},
                "risk": risk[i],
            }
        )  # fmt: skip
        if pl.selection:
            rows[-1]["fits"] = dict(pl.components[i])
    ranked_by = (
        f"mean {objective_label(names, agent)} among the {n_ok} candidate(s) with "
        f"P(oscillating or collapse) <= {space.risk:g}"
        if n_ok
        else f"no candidate has P(oscillating or collapse) <= {space.risk:g}: ranked by the "
        "lowest P(oscillating or collapse)"
    )
    if not np.isfinite(mean[order[0]]):
        raise ConfigError("every candidate's forecast failed (competence left [0, 1]): "
                          "the space lies too far outside the pilots' range")  # fmt: skip
    best = cands[order[0]]
    time_margin = None
    if regime_rule == "observed":  # the margin in time (issue 67 §3), by the same rule
        from .._predict._rule import safe_until

        time_margin = safe_until(first, settings[order[0]], horizon=steps,
                                 every=eval_every(first), risk=space.risk,
                                 max_draws=min(max_draws, 100),
                                 extrapolation_sd=extrapolation_sd, key=key)  # fmt: skip
    train = space_config(first, base, best | pl.network_fields(order[0]), steps)
    pilots = {f.name: pilot_values(first, f.name) for f in space.fields}
    runs = list(first.model.runs)
    return simulate.jsonable(
        {
            "space": space.to_dict(),
            "sampling": space.sampling,
            "n_candidates": len(cands),
            "n_within_risk": n_ok,
            "draws": min(ev.draws.values()),
            "horizon_steps": float(steps),
            "proxy_agent": ev.proxy_agent,
            "objective": {"name": space.objective, "label": objective_label(names, agent)},
            "motif_source": pl.motif_source,
            "ranked_by": ranked_by,
            "regime_rule": regime_rule,
            "seed_spread": seed_spread_note(first, agent),
            "tie": {
                "tolerance": tol,
                "n_tied": len(tied),
                "rule": "no ties: the ranking's first is recommended"
                if tie is None
                else f"candidates within max({tie:g}, 2 Monte Carlo se of the difference) of the "
                "best forecast objective, within the risk level, are a tie; the one with the "
                "largest stability margin is recommended",
                "candidates": [
                    {"setting": cands[i], "mean": float(mean[i]), "margin": marg[k]["score"]}
                    for k, i in enumerate(tied)
                ],
            },
            "margin": marg[0] | {"risk_level": space.risk},
            "time_margin": time_margin,
            "extrapolation_sd": extrapolation_sd,
            "held": held,
            "top": rows,
            "best": best,
            "base_run": base,
            "train_config": train,
            "explanation": explain(
                cands,
                mean,
                risk,
                order,
                tolerance=space.risk,
                agent=ev.proxy_agent,
                chosen_row=rows[0],
                runs=runs,
                pilots=pilots,
                transforms=transforms,
            ),
        }
    ) | {"_arrays": {"settings": cands, "utility": mean, "risk": risk, "pilots": pilots}}


def recommend_space_from_dir(
    fit_dir: str | Path, space: str | Path | SearchSpace, **kwargs: Any
) -> dict[str, Any]:
    """:func:`recommend_space` on a saved fit folder, or a selection folder (``fit --motif
    auto``: ``selection.json`` and ``fits/LABEL``), and a space file."""
    sp = space if isinstance(space, SearchSpace) else SearchSpace.load(space)
    fits = MotifFits.load(fit_dir) if is_selection_folder(fit_dir) else load_fit(fit_dir)
    return recommend_space(fits, sp, **kwargs)
