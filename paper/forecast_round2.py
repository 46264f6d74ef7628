"""A second predict-first test of the testbed's forecasts (issue 31 §4): links that may bend
beyond the pilots' range, their spread chosen on the first forecast study's held-out runs,
tested on new settings and seeds that no forecast or choice has seen.

The first study (``paper/results/forecast``) found the model's 90 % intervals too narrow
beyond the pilots' range (0.67 at a nominal 0.90): at lr 6.25e-2 Y fell to ~0.5 where
every pilot kept it at ~0.85, so the log-linear link, flat inside the range, stayed flat
beyond it. ``calibrate.predict(..., extrapolation_sd=s)`` lets each link bend at the edges
of the pilots' range by a slope change ``~ N(0, s^2)`` (the pilots cannot inform it).

Design (fixed before any run of this study; stored in ``<out>/config.json``):

- The same pilots and fit as the first study: its 12 pilot runs, refitted from the committed
  fit data and config (``source``), so every method sees exactly what it saw there.
- ``calibrate``: ``s`` is chosen on the first study's 36 held-out runs (its calibration
  set, already seen): the value of ``sd_grid`` with the best mean log score of final
  competence over runs and agents (a proper score; ties within 0.005 go to the smaller ``s``),
  stored once in ``calibration.json`` before any forecast of this study.
- ``predict``: forecasts of every new setting, stored once in ``predictions.json`` before
  any of its runs: the motif model as the first study made it (straight links), the motif
  model with bent links (one new run and mean curve), the nearest pilot, a Gaussian process
  over the knobs and a Gaussian-process regime classifier (all on the same 12 pilots).
- New settings: ``rl.lr`` x ``rl.staleness`` x ``rl.lr_scale.X`` values none of the first
  study's runs used, at seeds it did not use (the count from ``power``); split by the
  pilots' range (``pilot_range``): ``interpolation`` (every knob inside) and
  ``extrapolation``.
- ``summary``: as the first study's (the one collapse rule for real runs, regime accuracy,
  50/90 % coverage, CRPS, log score, PIT, boundary error, ScaleRL's sigmoid on each run's
  own first ``prefix`` steps), per split.

Phases (each resumable): ``restore``, ``calibrate``, ``predict``, ``heldout`` (refused
until ``predictions.json`` exists), ``summary``; then ``posthoc``, a reading after the runs
(not part of the design): the model's regime forecast labelled by the rule the runs are
labelled with (``posthoc.json``).

Usage: python -m paper.forecast_round2
       [--phase restore|calibrate|predict|heldout|summary|posthoc|all]
       [--runs runs/forecast_round2] [--out paper/results/forecast_round2] [--workers 2]
"""

from __future__ import annotations

from pathlib import Path

from paper._forecast_design import run_name
from paper._forecast_rounds import PILOT_RANGE as PILOT_RANGE
from paper._forecast_rounds import QUICK2 as QUICK
from paper._forecast_rounds import STEPS, Round2Design
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="A second predict-first test of the testbed's forecasts (issue 31 §4).",
        design=Round2Design,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "calibrate", "predict", "heldout", "summary", "posthoc"],
        gated="heldout",
        default_runs="runs/forecast_round2",
        default_out="paper/results/forecast_round2",
        steps=STEPS,
    )


if __name__ == "__main__":
    raise SystemExit(main())
