"""Proper scores of the motif model's forecasts of held-out real runs against the forecasts a
practitioner would make from the same pilots (issue 31 §3).

For a finished predict-first study (default: the old testbed's regime map,
``paper/results/regime_map``: its design in ``config.json``, every run's curves in
``observed.json``, the pilots' fit data and config in ``fit/``), every held-out run is
forecast by

- the motif model, refitted on the pilots exactly as the study fitted it (the posterior is not
  committed; the fit's data and config are): *one new run* (fresh run effects, seed spread,
  binomial evaluation noise at the runs' probe count) and the *mean curve* (posterior
  uncertainty only: what the study stored before its held-out runs);
- the baselines (calibrate's, via :mod:`_forecast_baselines`): nearest pilot, a Gaussian
  process over the knobs (regime by 3-nn), a Gaussian-process regime classifier, and
  ScaleRL's sigmoid fitted to the run's own first ``--prefix`` steps (which sees part of the
  held-out run).

Scores, per method and agent, on the held-out runs: regime accuracy (group of the one collapse
rule for real runs, :func:`simulate.classify_observed`, with Wilson 95 % intervals), 50 % and
90 % coverage of the logged final competence, CRPS, log score on the evaluation grid, the
randomised PIT histogram, and the collapse-boundary error (per staleness, the lr where a row
first leaves ``converged``, |predicted - observed| in decades). The model's forecasts here are
made after the held-out runs were logged (retrospective; nothing is tuned on them): the
predict-first forecasts of a new testbed are issue 31 §4's experiment.

Results: ``<out>/`` config.json (written first), scores.json (every run's scores),
summary.json, table.md, forecast_scores.png.

Usage: python -m paper.forecast_scores [--source paper/results/regime_map]
       [--out paper/results/forecast_oldmap] [--draws 400] [--prefix 50] [--seed 0]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

import simulate
from paper import _forecast_baselines as fb
from paper._forecast_report import load_runs, model_forecasts, score_all, write_outputs
from paper._study import now, refit
from simulate.common import write_json

ROOT = Path(__file__).resolve().parents[1]

KNOBS = ("rl.lr", "rl.staleness")


def main(argv: list[str] | None = None) -> int:
    ap = simulate.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--source", default="paper/results/regime_map", help="a finished study")
    ap.add_argument("--out", default="paper/results/forecast_oldmap", help="results folder")
    ap.add_argument("--draws", type=int, default=400, help="samples per forecast")
    ap.add_argument("--prefix", type=int, default=50, help="steps the sigmoid baseline sees")
    ap.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    a = ap.parse_args(argv)
    source, out = Path(a.source), Path(a.out)
    if not (source / "observed.json").is_file() or not (source / "fit" / "data.parquet").is_file():
        ap.error(f"--source {source} is not a finished study (observed.json, fit/data.parquet)")
    if a.draws < 10 or a.prefix < 1:
        ap.error("--draws must be >= 10 and --prefix >= 1")
    config = {"source": str(source), "draws": a.draws, "prefix": a.prefix, "seed": a.seed,
              "knobs": list(KNOBS), "created": now(),
              "command": "python -m paper.forecast_scores" + "".join(
                  f" {x}" for x in (argv if argv is not None else sys.argv[1:]))}  # fmt: skip
    if out.exists() and not (out / "config.json").is_file() and any(out.iterdir()):
        ap.error(f"--out {out} holds files this command did not write; choose a new folder")
    if (out / "config.json").is_file():
        old = json.loads((out / "config.json").read_text())
        if {k: old.get(k) for k in ("source", "draws", "prefix", "seed")} != {
            k: config[k] for k in ("source", "draws", "prefix", "seed")
        }:
            ap.error(f"{out}/config.json holds another design; choose another --out")
        config = old
    else:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "config.json", config)
    t0 = time.time()
    n_eval = int(json.loads((source / "predictions.json").read_text())["n_eval"])
    design, pilots, held = load_runs(source, n_eval)
    print(f"{len(pilots)} pilot runs, {len(held)} held-out runs (n_eval {n_eval})", flush=True)
    fit = refit(source, out)
    print(f"  fit ready ({time.time() - t0:.0f} s)", flush=True)
    rng = np.random.default_rng(a.seed)
    targets = [r["setting"] for r in held]
    import calibrate

    post = calibrate.load_fit(fit)
    forecasts, spread = model_forecasts(post, held, float(design["steps"]), n_eval, a.draws)
    kw = {"n_eval": n_eval, "draws": a.draws, "rng": rng}
    forecasts += [
        fb.nearest_pilot(pilots, targets, KNOBS, **kw),
        fb.gp_finals(pilots, targets, KNOBS, seed=a.seed, **kw),
        fb.gp_groups(pilots, targets, KNOBS, seed=a.seed),
        fb.sigmoid_prefix(held, prefix=a.prefix, **kw),
    ]
    print(f"  forecasts made ({time.time() - t0:.0f} s)", flush=True)
    scores = score_all(forecasts, held, pilots, design, n_eval, rng=rng)
    scores["model_seed_spread"] = spread
    write_outputs(out, config, scores, forecasts, held)
    print(f"wrote {out} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
