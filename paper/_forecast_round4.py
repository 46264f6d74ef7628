"""Phases of the fourth forecast test (driver and design: paper/forecast_round4.py): the links
and their bend chosen on the first three tests' held-out runs, then every new setting's
forecasts stored before any of its runs (summary: the second test's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import load_fit
from paper._forecast_report import model_forecasts, score_forecast
from paper._forecast_round2 import TIE, _source, prediction_doc
from paper._forecast_study import _per_run
from paper._study import refit, store_once

__all__ = ["calibrate_phase", "choose", "predict_phase"]

#: The fit folder of each link set (``first``: the first study's links).
FOLDERS = {"first": "fit_first", "delta_x": "fit"}


def _fits(cfg: Any, out: Path) -> dict[str, Path]:
    """Both pilots' fits, refitted from the first study's committed data."""
    src = cfg.source_dir()
    return {
        "first": refit(src, out, folder=FOLDERS["first"]),
        "delta_x": refit(src, out, folder=FOLDERS["delta_x"], links=tuple(cfg.extra_links)),
    }


def _seen(cfg: Any) -> list[tuple[list[dict], list[dict], int]]:
    """Each calibration set's stored targets, held-out runs and ``n_eval``."""
    sets = []
    for name in cfg.calibration_sets:
        folder = cfg.resolve(name)
        preds = json.loads((folder / "predictions.json").read_text())
        obs = json.loads((folder / "observed.json").read_text())
        held = [r for r in obs.values() if r["split"] != "pilot"]
        sets.append((preds["targets"], held, int(preds["n_eval"])))
    return sets


def choose(grid: dict[str, dict[str, Any]], tie: float = TIE) -> str:
    """The grid key (``"<links> <sd>"``) with the best pooled log score; within ``tie`` of
    the best, the first links before the added one, then the smaller spread."""
    best = max(v["log_score"] for v in grid.values())
    near = [k for k, v in grid.items() if v["log_score"] >= best - tie]
    order = list(FOLDERS)
    return min(near, key=lambda k: (order.index(k.split()[0]), float(k.split()[1])))


def calibrate_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Both fits, and the links and spread chosen on the calibration sets' held-out runs by
    the pooled mean log score of final competence (``calibration.json``, stored once; the
    fits are made only when it is)."""

    def make() -> dict[str, Any]:
        fits = _fits(cfg, out)
        sets = _seen(cfg)
        n = sum(len(h) for _, h, _ in sets)
        grid: dict[str, dict[str, Any]] = {}
        for links, fit in fits.items():
            post = load_fit(fit)
            for sd in cfg.sd_grid:
                per: dict[str, float] = {"log_score": 0.0, "crps": 0.0, "coverage90": 0.0}
                acc = 0.0
                for targets, held, n_eval in sets:
                    at = [{"setting": t["setting"]} for t in targets]
                    kw = {"bands": ("new_run",), "extrapolation_sd": float(sd)}
                    fs, _ = model_forecasts(post, at, float(cfg.steps), n_eval, cfg.draws, **kw)
                    s = score_forecast(_per_run(fs[0], targets, held), held, n_eval,
                                       rng=np.random.default_rng(0))  # fmt: skip
                    for m in per:  # pooled over runs: each set weighted by its runs
                        per[m] += s[m]["all"] * len(held) / n
                    acc += s["regime_accuracy"] * len(held) / n
                grid[f"{links} {float(sd):g}"] = {**per, "regime_accuracy": acc}
                print(f"  {links} sd {sd:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in
                      grid[f"{links} {float(sd):g}"].items()), flush=True)  # fmt: skip
        key = choose(grid)
        return {
            "rule": f"best pooled mean log score over the {n} held-out runs of "
            f"{', '.join(cfg.calibration_sets)} (all agents); ties within {TIE} go to the "
            "first study's links, then to the smaller spread",
            "scores": grid,
            "links": key.split()[0],
            "extrapolation_sd": float(key.split()[1]),
        }

    doc = store_once(out / "calibration.json", make)
    print(f"  links {doc['links']}, extrapolation_sd {doc['extrapolation_sd']:g} "
          f"(stored {doc['created']})", flush=True)  # fmt: skip


def predict_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Every new setting's forecasts from the chosen links (as the second test's, in
    ``predictions.json``, stored once), plus the other links' bent new-run forecast."""
    _, _, pilots, _, n_eval = _source(cfg)
    cal = out / "calibration.json"
    if not cal.is_file():
        raise RuntimeError(f"{cal} is missing: run --phase calibrate first")
    choice = json.loads(cal.read_text())
    sd = float(choice["extrapolation_sd"])

    def make() -> dict[str, Any]:
        fits = _fits(cfg, out)
        other = next(k for k in FOLDERS if k != choice["links"])
        at = [{"setting": cfg.setting(c)} for c in cfg.cells()]
        alt, _ = model_forecasts(load_fit(fits[other]), at, float(cfg.steps), n_eval,
                                 cfg.draws, name=f"motif model, {other} links, bent links",
                                 bands=("new_run",), extrapolation_sd=sd)  # fmt: skip
        doc = prediction_doc(cfg, load_fit(fits[choice["links"]]), sd, pilots, n_eval,
                             extra=tuple(alt))  # fmt: skip
        return {**doc, "links": choice["links"]}

    doc = store_once(out / "predictions.json", make)
    print(f"  predictions stored {doc['created']} ({len(doc['targets'])} settings)", flush=True)
