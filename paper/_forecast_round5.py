"""Phases of the fifth forecast test (driver and design: paper/forecast_round5.py): X's rates
linked to the learning rate X trains at, the bend chosen on the four earlier tests' held-out
runs, then every new setting's forecasts stored before any of its runs (summary: the second
test's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate import load_fit
from paper import _forecast_baselines as fb
from paper._forecast_report import model_forecasts, score_forecast
from paper._forecast_round2 import TIE, _source, _targets, choose_sd, rule_groups, rule_probs
from paper._forecast_round4 import _seen
from paper._forecast_study import _encode, _per_run, dataclasses_replace
from paper._regime_report import modal
from paper._study import refit, store_once

__all__ = ["OWN", "calibrate_phase", "own_setting", "predict_phase"]

#: The derived covariate: the learning rate role X trains at (``rl.lr × rl.lr_scale.X``).
OWN = "lr_X"
#: Method names of the stored forecasts (``PRIMARY`` is the one the design's goals judge).
OWN_NAME = "motif model, X's own lr"
PRIMARY = f"{OWN_NAME}, bent links, runs' rule (new run)"
ROUND4 = "motif model, round 4's links"


def own_setting(setting: dict[str, Any], scale: str = "rl.lr_scale.X") -> dict[str, Any]:
    """A setting in the own-lr fit's fields: ``rl.lr``, ``rl.staleness`` and :data:`OWN`."""
    return {"rl.lr": float(setting["rl.lr"]), "rl.staleness": setting["rl.staleness"],
            OWN: float(setting["rl.lr"]) * float(setting[scale])}  # fmt: skip


def _fits(cfg: Any, out: Path) -> dict[str, Path]:
    """The own-lr fit (the pilots' committed data with :data:`OWN` added, the design's
    ``own_links`` in place of the first study's) and round 4's (its links refitted)."""
    src = cfg.source_dir()
    data = out / "data_own_lr.parquet"
    if not data.is_file():
        d = pd.read_parquet(src / "fit" / "data.parquet")
        d[OWN] = d["rl.lr"] * d[cfg.third]
        d.to_parquet(data)
    return {
        "own_lr": refit(
            src, out, folder="fit", links=tuple(cfg.own_links), replace_links=True, data=data
        ),
        "round4": refit(src, out, folder="fit_round4", links=tuple(cfg.extra_links)),
    }


def calibrate_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Both fits, and the own-lr fit's bend chosen on the calibration sets' held-out runs by
    the pooled mean log score of final competence (``calibration.json``, stored once, with
    the regime accuracy of both labellings and round 4's links beside it, for the record)."""

    def make() -> dict[str, Any]:
        fits = {k: load_fit(v) for k, v in _fits(cfg, out).items()}
        sets = _seen(cfg)
        n = sum(len(h) for _, h, _ in sets)
        grid: dict[str, dict[str, Any]] = {}
        for links, post in fits.items():
            to = own_setting if links == "own_lr" else dict
            for sd in cfg.sd_grid:
                row = {"log_score": 0.0, "crps": 0.0, "coverage90": 0.0, "regime_accuracy": 0.0,
                       "regime_accuracy_rule": 0.0}  # fmt: skip
                for targets, held, n_eval in sets:
                    settings = [to(t["setting"]) for t in targets]
                    kw = {"bands": ("new_run",), "extrapolation_sd": float(sd)}
                    fs, _ = model_forecasts(post, [{"setting": s} for s in settings],
                                            float(cfg.steps), n_eval, cfg.draws, **kw)  # fmt: skip
                    s = score_forecast(_per_run(fs[0], targets, held), held, n_eval,
                                       rng=np.random.default_rng(0))  # fmt: skip
                    for m in ("log_score", "crps", "coverage90"):  # pooled over runs
                        row[m] += s[m]["all"] * len(held) / n
                    row["regime_accuracy"] += s["regime_accuracy"] * len(held) / n
                    groups = rule_groups(post, settings, steps=cfg.steps, every=cfg.eval_every,
                                         n_eval=n_eval, draws=cfg.draws, sd=float(sd))  # fmt: skip
                    lab = {tuple(t["cell"]): modal(g) for t, g in zip(targets, groups, strict=True)}
                    row["regime_accuracy_rule"] += sum(
                        lab[tuple(r["cell"])] == r["group"] for r in held) / n  # fmt: skip
                grid[f"{links} {float(sd):g}"] = row
                print(f"  {links} sd {sd:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in
                      row.items()), flush=True)  # fmt: skip
        own = {float(k.split()[1]): v["log_score"] for k, v in grid.items() if k.startswith("own")}
        return {
            "rule": f"the own-lr fit's spread: best pooled mean log score over the {n} held-out "
            f"runs of {', '.join(cfg.calibration_sets)} (all agents); ties within {TIE} go to "
            "the smaller spread. Round 4's links are scored beside it, for the record",
            "scores": grid,
            "extrapolation_sd": choose_sd(own),
        }

    doc = store_once(out / "calibration.json", make)
    print(f"  extrapolation_sd {doc['extrapolation_sd']:g} (stored {doc['created']})", flush=True)


def _model(post: Any, cfg: Any, settings: list[dict], n_eval: int, sd: float, name: str, *,
           full: bool) -> tuple[list[fb.Forecast], Any]:  # fmt: skip
    """A fit's bent new-run forecasts and their regimes labelled by the runs' rule; with
    ``full``, first its straight new run and its bent mean curve as well."""
    at = [{"setting": s} for s in settings]
    horizon = float(cfg.steps)
    straight = [] if not full else model_forecasts(
        post, at, horizon, n_eval, cfg.draws, name=name, bands=("new_run",))[0]  # fmt: skip
    bands = ("new_run", "mean") if full else ("new_run",)
    bent, spread = model_forecasts(post, at, horizon, n_eval, cfg.draws,
                                   name=f"{name}, bent links", bands=bands,
                                   extrapolation_sd=sd)  # fmt: skip
    groups = rule_groups(post, settings, steps=cfg.steps, every=cfg.eval_every,
                         n_eval=n_eval, draws=cfg.draws, sd=sd)  # fmt: skip
    b = bent[0]
    rule = fb.Forecast(f"{name}, bent links, runs' rule (new run)", b.agents, b.samples,
                       rule_probs(groups))  # fmt: skip
    return [*straight, *bent, rule], spread  # the fit's seed spread (the same straight or bent)


def predict_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Every new setting's forecasts, stored once in ``predictions.json``: the own-lr model
    (straight, bent, mean curve, and the runs' rule labels: :data:`PRIMARY`), round 4's model
    (bent, runs' rule), and the baselines on the same pilots (their knobs as the earlier
    tests gave them, plus a GP classifier given X's own learning rate as well)."""
    _, _, pilots, _, n_eval = _source(cfg)
    cal = out / "calibration.json"
    if not cal.is_file():
        raise RuntimeError(f"{cal} is missing: run --phase calibrate first")
    sd = float(json.loads(cal.read_text())["extrapolation_sd"])

    def make() -> dict[str, Any]:
        fits = _fits(cfg, out)
        targets = _targets(cfg)
        settings = [t["setting"] for t in targets]
        own, spread = _model(load_fit(fits["own_lr"]), cfg, [own_setting(s) for s in settings],
                             n_eval, sd, OWN_NAME, full=True)  # fmt: skip
        r4, _ = _model(load_fit(fits["round4"]), cfg, settings, n_eval, sd, ROUND4, full=False)
        kw = {"n_eval": n_eval, "draws": cfg.draws, "rng": np.random.default_rng(0)}
        knobs = ("rl.lr", "rl.staleness", cfg.third)
        log_own = "log " + OWN  # on its log scale already (the features are linear in it)

        def with_own(s: dict[str, Any]) -> dict[str, Any]:
            return {**s, log_own: float(np.log(s["rl.lr"] * s[cfg.third]))}

        own_pilots = [{**p, "setting": with_own(p["setting"])} for p in pilots]
        gp_own = fb.gp_groups(
            own_pilots, [with_own(s) for s in settings], (*knobs, log_own), seed=0
        )
        base = [
            fb.nearest_pilot(pilots, settings, knobs, **kw),
            dataclasses_replace(
                fb.gp_finals(pilots, settings, knobs, seed=0, **kw), "GP over knobs"
            ),
            dataclasses_replace(fb.gp_groups(pilots, settings, knobs, seed=0), "GP classifier"),
            dataclasses_replace(gp_own, "GP classifier, X's own lr too"),
        ]
        forecasts = [*own, *r4, *base]
        return {"n_eval": n_eval, "targets": targets, "extrapolation_sd": sd,
                "model_seed_spread": spread, "primary": PRIMARY,
                "forecasts": [_encode(f) for f in forecasts]}  # fmt: skip

    doc = store_once(out / "predictions.json", make)
    print(f"  predictions stored {doc['created']} ({len(doc['targets'])} settings)", flush=True)
