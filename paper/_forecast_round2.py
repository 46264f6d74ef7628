"""Phases of the second forecast test (driver and design: paper/forecast_round2.py): the
bent links' spread chosen on the first study's held-out runs, the forecasts of the new
settings stored before any of their runs, and the scores per split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import load_fit
from paper import _forecast_baselines as fb
from paper._forecast_report import model_forecasts, score_forecast, write_outputs
from paper._forecast_study import (
    _decode,
    _encode,
    _per_run,
    dataclasses_replace,
    observe,
    split_scores,
)
from paper._regime_report import modal, wilson
from paper._study import refit, store_once
from paper._study_runs import archive_runs
from simulate.common import write_json

__all__ = [
    "calibrate_phase", "choose_sd", "posthoc_phase", "predict_phase", "prediction_doc",
    "rule_groups", "rule_probs", "summary_phase",
]  # fmt: skip

#: Method names of the stored forecasts.
STRAIGHT, BENT = "motif model", "motif model, bent links"
RULE = "motif model, bent links, runs' rule (new run)"
#: Log scores closer than this count as tied (the smaller spread is kept).
TIE = 0.005


def _source(cfg: Any) -> tuple[Path, dict[str, Any], list[dict], list[dict], int]:
    """The first study: its folder, stored predictions, pilot and held-out records, n_eval."""
    src = cfg.source_dir()
    preds = json.loads((src / "predictions.json").read_text())
    obs = json.loads((src / "observed.json").read_text())
    pilots = [r for r in obs.values() if r["split"] == "pilot"]
    held = [r for r in obs.values() if r["split"] != "pilot"]
    return src, preds, pilots, held, int(preds["n_eval"])


def choose_sd(scores: dict[float, float], tie: float = TIE) -> float:
    """The spread with the best (highest) mean log score; within ``tie`` of the best, the
    smallest such spread."""
    best = max(scores.values())
    return min(sd for sd, v in scores.items() if v >= best - tie)


def calibrate_phase(cfg: Any, runs: Path, out: Path) -> None:
    """The pilots' fit (refitted from the first study's committed data and config) and the
    bent links' spread chosen on the first study's held-out runs (``calibration.json``,
    stored once)."""
    src, preds, _, held, n_eval = _source(cfg)
    fit = refit(src, out)

    def make() -> dict[str, Any]:
        post = load_fit(fit)
        targets = preds["targets"]
        grid: dict[str, dict[str, float]] = {}
        for sd in cfg.sd_grid:
            fs, _ = model_forecasts(post, [{"setting": t["setting"]} for t in targets],
                                    float(cfg.steps), n_eval, cfg.draws, bands=("new_run",),
                                    extrapolation_sd=float(sd))  # fmt: skip
            f = _per_run(fs[0], targets, held)  # each held-out run its setting's forecast
            s = score_forecast(f, held, n_eval, rng=np.random.default_rng(0))
            row = {m: s[m]["all"] for m in ("log_score", "crps", "coverage50", "coverage90")}
            grid[f"{float(sd):g}"] = row
            print(f"  sd {sd:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
        chosen = choose_sd({float(k): v["log_score"] for k, v in grid.items()})
        return {"rule": f"best mean log score over the first study's {len(held)} held-out "
                        f"runs and agents; ties within {TIE} go to the smaller spread",
                "scores": grid, "extrapolation_sd": chosen}  # fmt: skip

    doc = store_once(out / "calibration.json", make)
    print(f"  extrapolation_sd {doc['extrapolation_sd']:g} (stored {doc['created']})", flush=True)


def _targets(cfg: Any) -> list[dict[str, Any]]:
    return [{"cell": list(c), "split": cfg.split(c), "setting": cfg.setting(c)}
            for c in cfg.cells()]  # fmt: skip


def predict_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Every new setting's forecasts, stored once in ``predictions.json``."""
    _, _, pilots, _, n_eval = _source(cfg)
    cal = out / "calibration.json"
    if not cal.is_file():
        raise RuntimeError(f"{cal} is missing: run --phase calibrate first")
    sd = float(json.loads(cal.read_text())["extrapolation_sd"])

    doc = store_once(
        out / "predictions.json",
        lambda: prediction_doc(cfg, load_fit(out / "fit"), sd, pilots, n_eval),
    )
    print(f"  predictions stored {doc['created']} ({len(doc['targets'])} settings)", flush=True)


def prediction_doc(
    cfg: Any, post: Any, sd: float, pilots: list[dict], n_eval: int, extra: tuple = ()
) -> dict[str, Any]:
    """Every new setting's forecasts (``predictions.json``'s content): the model's straight
    and bent-link forecasts from ``post``, the runs' rule labels where the design asks, the
    ``extra`` forecasts, and the baselines on ``pilots``."""
    targets = _targets(cfg)
    settings = [t["setting"] for t in targets]
    at = [{"setting": s} for s in settings]
    horizon = float(cfg.steps)
    straight, spread = model_forecasts(post, at, horizon, n_eval, cfg.draws,
                                       name=STRAIGHT, bands=("new_run",))  # fmt: skip
    bent, _ = model_forecasts(post, at, horizon, n_eval, cfg.draws, name=BENT,
                              extrapolation_sd=sd)  # fmt: skip
    kw = {"n_eval": n_eval, "draws": cfg.draws, "rng": np.random.default_rng(0)}
    knobs = ("rl.lr", "rl.staleness", cfg.third)
    base = [
        fb.nearest_pilot(pilots, settings, knobs, **kw),
        dataclasses_replace(fb.gp_finals(pilots, settings, knobs, seed=0, **kw), "GP over knobs"),
        dataclasses_replace(fb.gp_groups(pilots, settings, knobs, seed=0), "GP classifier"),
    ]
    rule = []
    if getattr(cfg, "rule_labels", False):  # the regimes as the runs' own rule labels them
        groups = rule_groups(post, settings, steps=cfg.steps, every=cfg.eval_every,
                             n_eval=n_eval, draws=cfg.draws, sd=sd)  # fmt: skip
        b = bent[0]
        rule = [fb.Forecast(RULE, b.agents, b.samples, rule_probs(groups))]
    forecasts = [*straight, *bent, *rule, *extra, *base]
    return {"n_eval": n_eval, "targets": targets, "extrapolation_sd": sd,
            "model_seed_spread": spread, "forecasts": [_encode(f) for f in forecasts]}  # fmt: skip


def summary_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Scores of every method per split: ``summary.json``, ``scores.json``, ``table.md``,
    ``forecast_scores.png``, ``observed.json``."""
    path = out / "predictions.json"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: run --phase predict before the summary")
    preds = json.loads(path.read_text())
    n_eval = int(preds["n_eval"])
    held = observe(cfg, runs, "heldout", n_eval)
    if len(held) < len(cfg.jobs("heldout")):
        raise RuntimeError(f"{len(cfg.jobs('heldout')) - len(held)} held-out runs missing")
    archive_runs(runs, out)
    write_json(out / "observed.json", {r["name"]: r for r in held})
    rng = np.random.default_rng(0)
    stored = [_per_run(_decode(d), preds["targets"], held) for d in preds["forecasts"]]
    sig = fb.sigmoid_prefix(held, prefix=cfg.prefix, n_eval=n_eval, draws=cfg.draws, rng=rng)
    design = {"lrs": cfg.lrs, "staleness": cfg.staleness}
    # the boundary from this test's runs alone (the pilots lie on another grid)
    scores, splits = split_scores([*stored, sig], held, [], design, n_eval, rng=rng)
    scores["n_pilot_runs"] = len(_source(cfg)[2])
    scores["extrapolation_sd"] = preds["extrapolation_sd"]
    scores["predictions_created"] = preds["created"]
    config = dict(json.loads((out / "config.json").read_text()))
    config["command"] = cfg.COMMAND
    write_outputs(out, config, scores, [*stored, sig], held, splits=splits)


def rule_groups(
    post: Any, settings: list[dict[str, Any]], *, steps: int, every: int, n_eval: int,
    draws: int, sd: float, seed: int = 0,
) -> list[list[str]]:  # fmt: skip
    """Per setting and draw, the regime group of a simulated new run labelled by the one rule
    for real runs (:func:`simulate.classify_observed`), not by :func:`simulate.classify` on
    the model's smooth curves: each draw's curve at the evaluation steps (links bent by
    ``sd``), offset by the fit's seed spread per agent (one offset per run), clipped to
    [0, 1], logged as ``k / n_eval`` with ``k`` binomial (a fit without random effects)."""
    import calibrate
    import simulate
    from paper._regime_report import group_of

    gaps = steps // every  # evaluations after the first
    m = -(-7 // gaps)  # points per gap, so that predict gets its >= 8 points
    pred = calibrate.predict(post, settings, steps=float(steps), n_points=gaps * m + 1,
                             max_draws=draws, keep_curves=True, bands=False,
                             extrapolation_sd=sd)  # fmt: skip
    assert pred.curves is not None  # keep_curves: the draws' curves
    t = pred.t[::m]  # the evaluation steps
    spread = (pred.seed_spread or {}).get("sd", {})
    sdv = np.array([float(spread.get(a, 0.0)) for a in pred.agents])
    rng = np.random.default_rng(seed)
    out = []
    for cs in pred.curves[:, :, ::m]:  # (G, T, N) per setting, at the evaluation steps
        groups = []
        for cur in cs:
            if not np.all(np.isfinite(cur)):
                groups.append("failed")
                continue
            p = np.clip(cur + sdv * rng.standard_normal(sdv.size), 0.0, 1.0)
            y = rng.binomial(n_eval, p) / n_eval
            reg = simulate.classify_observed(t, y, n_eval, names=pred.agents)
            groups.append(group_of(reg["regime"]))
        out.append(groups)
    return out


def rule_probs(groups: list[list[str]]) -> np.ndarray:
    """Per setting, the share of its draws in each group of :data:`fb.GROUPS` ``(S, K)``."""
    return np.array([[g.count(k) / len(g) for k in fb.GROUPS] for g in groups])


def posthoc_phase(cfg: Any, runs: Path, out: Path) -> None:
    """A reading after both tests (not part of the design): the model's regime forecast
    labelled as the runs are (:func:`rule_groups`, the modal group), straight and bent, scored on
    the first study's and this test's held-out runs (``posthoc.json``)."""
    _, _, _, held1, n_eval = _source(cfg)
    held2 = list(json.loads((out / "observed.json").read_text()).values())
    sd = float(json.loads((out / "calibration.json").read_text())["extrapolation_sd"])
    post = load_fit(out / "fit")
    doc: dict[str, Any] = {
        "note": "post hoc: computed after both tests' runs were seen",
        "command": "python -m paper.forecast_round2 --phase posthoc",
    }
    for name, held in (("first_study", held1), ("round2", held2)):
        settings: list[dict[str, Any]] = []
        for r in held:
            if r["setting"] not in settings:
                settings.append(r["setting"])
        for tag, s in (("straight", 0.0), ("bent", sd)):
            groups = rule_groups(post, settings, steps=cfg.steps, every=cfg.eval_every,
                                 n_eval=n_eval, draws=cfg.draws, sd=s)  # fmt: skip
            lab = [modal(g) for g in groups]
            hits = sum(lab[settings.index(r["setting"])] == r["group"] for r in held)
            doc.setdefault(name, {})[tag] = {"hits": hits, "n": len(held),
                                             "accuracy": hits / len(held),
                                             "ci95": wilson(hits, len(held))}  # fmt: skip
            print(f"  {name} {tag}: {hits}/{len(held)}", flush=True)
    write_json(out / "posthoc.json", doc)
