"""Predicted vs observed regime map of real joint training (issue: real training crosses the
regimes the simulator predicts).

Design (fixed in ``config.json`` before any run): a grid of two training knobs, ``rl.lr`` x
``rl.staleness``, each setting trained with several seeds (C1-AND network, math task). A
quarter of the settings (the grid's corners) are pilots: they are run first and fitted
jointly by ``calibrate fit`` through hyperparameter links (rho and delta on both knobs).
``calibrate.predict`` then forecasts every other setting, and the forecasts are stored in
``predictions.json`` **before** those settings are run. Finally the held-out settings are
run, labelled with ``llm_runs.observed_regime`` (simulate's classifier), and compared with
the forecasts and with a nearest-neighbour baseline fitted on the same pilots.

Every phase resumes: finished runs are kept, interrupted ones continue from their
checkpoint, the fit and the predictions are made once.

    python -m paper.regime_map                 # full size (16 settings x 2 seeds)
    python -m paper.regime_map --quick --out /tmp/rm --runs /tmp/rm/runs   # a smoke test

Results: ``paper/results/regime_map/`` (config.json, predictions.json, observed.json,
summary.json, table.md, regime_map.png); run folders under ``runs/regime_map/``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import simulate
from calibrate import StageError, Study, fit_runs
from paper import _regime_report as report
from paper._regime_design import LINKS, QUICK, MapConfig, run_cells, run_name
from paper._study import store_once


def fit_pilots(cfg: MapConfig, runs: Path, out: Path) -> Path:
    fit_dir = out / "fit"
    if (fit_dir / "posterior.nc").is_file():
        return fit_dir
    if fit_dir.exists():
        raise RuntimeError(f"{fit_dir} holds an incomplete fit; remove it to fit again")
    links = out / "links.json"
    simulate.write_json(links, LINKS)
    inputs = [runs / run_name(cfg, c, s) for c in cfg.pilots for s in cfg.seeds]
    args = ["--motif", cfg.motif, "--gate", cfg.gate, "--hierarchy", str(links),
            "--method", "laplace"]  # fmt: skip
    fit_runs(inputs, fit_dir, args=args, log=out / "fit.log")
    return fit_dir


def make_predictions(cfg: MapConfig, fit_dir: Path, runs: Path, out: Path) -> dict[str, Any]:
    """Forecast every held-out cell (and the boundary scan); stored once, before those runs."""
    return store_once(out / "predictions.json", lambda: _predict_cells(cfg, fit_dir, runs))


def _predict_cells(cfg: MapConfig, fit_dir: Path, runs: Path) -> dict[str, Any]:
    import calibrate

    post = calibrate.load_fit(fit_dir)
    held = [c for c in cfg.cells() if c not in cfg.pilots]
    n_eval = report.probe_size(runs / run_name(cfg, cfg.pilots[0], cfg.seeds[0]))
    pred = calibrate.predict(post, [cfg.setting(c) for c in held], steps=float(cfg.steps),
                             max_draws=cfg.draws, keep_curves=False)  # fmt: skip
    cells = report.prediction_cells(pred, held, n_eval)
    scan = report.boundary_scan(post, cfg, calibrate.predict)
    return {"fit": str(fit_dir), "n_eval": n_eval, "cells": cells, "boundary_scan": scan,
            "t": pred.t.tolist(), "agents": list(pred.agents)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = simulate.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--out", default="paper/results/regime_map", help="results folder")
    ap.add_argument("--runs", default="runs/regime_map", help="run folders")
    ap.add_argument("--workers", type=int, default=2, help="training processes at once")
    ap.add_argument(
        "--code", help="train with the llm_runs of this source tree (a pinned checkout)"
    )
    ap.add_argument("--stop-after", choices=["pilots", "predict"], help="stop after a phase")
    a = ap.parse_args(argv)
    if a.workers < 1:
        print(f"error: --workers must be >= 1, got {a.workers}", file=sys.stderr)
        return 2
    if a.code is not None and not Path(a.code, "llm_runs").is_dir():
        print(f"error: --code {a.code} is not a source tree with llm_runs/", file=sys.stderr)
        return 2
    try:
        claim_out(Path(a.out), Path(a.runs))  # before any training: nothing of a user's lost
        return _run(a)
    except StageError as err:  # a training run or the fit failed: its log says why
        print(f"error: {err}", file=sys.stderr)
        return 1
    except simulate.AgentmotifsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # a training run or the fit failed: its log says why
        print(f"error: {err}", file=sys.stderr)
        return 1


COMMAND = "paper/regime_map.py"


def claim_out(out: Path, runs: Path) -> None:
    """The toolkit's one overwrite rule for ``--out``: a new or empty folder, or this
    script's own (its marker, or a ``config.json`` holding a design: results written before
    markers); ``--runs`` must be a folder (or new)."""
    simulate.check_writable(runs, what="--runs")
    if simulate.folder_kind(out) == COMMAND:
        return
    try:
        stored = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = None
    if isinstance(stored, dict) and isinstance(stored.get("design"), dict):
        return
    simulate.claim_files(out, ["config.json"], command=COMMAND, overwrite=None)


def _run(a: argparse.Namespace) -> int:
    cfg = QUICK if a.quick else MapConfig()
    out, runs = Path(a.out), Path(a.runs)
    runs.mkdir(parents=True, exist_ok=True)
    stored = {"design": cfg.to_dict(), "links": LINKS, "runs": str(runs)}
    made = not (out / "config.json").is_file()
    with Study(out, stored, design_file="config.json", compare_key="design", overwrite_flag=None):
        if made:
            simulate.mark_output(out, COMMAND, ["config.json"], made=True)
        return _phases(a, cfg, out, runs)


def _phases(a: argparse.Namespace, cfg: MapConfig, out: Path, runs: Path) -> int:
    times_path = out / "timings.json"
    times = json.loads(times_path.read_text()) if times_path.is_file() else {}

    def phase(name: str, fn, *args):
        t0 = time.time()
        res = fn(*args)
        times[name] = times.get(name, 0.0) + time.time() - t0
        simulate.write_json(times_path, times)
        return res

    print(f"pilots: {len(cfg.pilots)} settings x {len(cfg.seeds)} seeds", flush=True)
    phase("pilots_s", run_cells, cfg, list(cfg.pilots), runs, a.workers, a.code)
    if a.stop_after == "pilots":
        return 0
    if (out / "predictions.json").is_file():  # stored once; the fit is not needed again
        preds = json.loads((out / "predictions.json").read_text())
    else:
        fit_dir = phase("fit_s", fit_pilots, cfg, runs, out)
        preds = phase("predict_s", make_predictions, cfg, fit_dir, runs, out)
    print(f"predictions stored {preds['created']} in {out / 'predictions.json'}", flush=True)
    if a.stop_after == "predict":
        return 0
    held = [c for c in cfg.cells() if c not in cfg.pilots]
    print(f"held-out: {len(held)} settings x {len(cfg.seeds)} seeds", flush=True)
    phase("heldout_s", run_cells, cfg, held, runs, a.workers, a.code)
    summary = report.analyse(cfg, runs, out, preds, times, run_name)
    print(json.dumps({k: summary[k] for k in report.HEADLINE}, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    raise SystemExit(main())
