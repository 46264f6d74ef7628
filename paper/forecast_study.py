"""The predict-first forecast experiment on the testbed (issue 31 §4): does the motif model,
fitted on a few pilot runs, forecast held-out real runs better than a practitioner's
baselines fitted on the same pilots, inside the pilots' range and beyond it?

Design (fixed before any run; stored in ``<out>/config.json``; the grid was placed by five
probe runs at seed 99, not a study seed, summarised in the design's ``probes``: on the
testbed the collapse boundary lies between lr 1.6e-2 and 6.4e-2 at lag 0 and below 1.6e-2 at
lag 8, so the grid spans 4e-3 to 6.25e-2 and the pilots never see lag 8 or the top lr):

- The testbed's default run (C1-AND, ``math``, tiny base, 200 steps, evaluation every 10),
  over three knobs: ``rl.lr`` x ``rl.staleness`` x ``third`` (``rl.lr_scale.X``: the input
  role's learning-rate multiplier, which every edge of the testbed passes on); every setting
  at ``seeds``.
- ``pilots`` (grid index triples, <= 25 % of the settings) are trained and fitted first
  (``calibrate fit`` with the knob schema's default links of the three knobs); the forecasts
  of every held-out setting — the model's one-new-run forecast and mean curve, the nearest
  pilot, a Gaussian process over the knobs, a Gaussian-process regime classifier — are
  stored in ``predictions.json`` (once, with their time) before any held-out run starts.
- Splits of the held-out settings, fixed by the design: ``interpolation`` (every knob inside
  the pilots' range) and ``extrapolation`` (at least one knob beyond it).
- ``summary``: every held-out run labelled by the one collapse rule for real runs, and the
  scores of :mod:`_forecast_report` per split and method (regime accuracy with Wilson
  intervals, 50/90 % coverage, CRPS, log score, PIT, collapse-boundary error), plus ScaleRL's
  sigmoid fitted to each held-out run's own first ``prefix`` steps (it sees part of the run).

Phases (each resumable): ``restore`` (copies the archived logs of finished runs from
``<out>/runs`` into ``--runs`` where missing), ``pilots``, ``fit``, ``predict``, ``heldout``
(refused until ``predictions.json`` exists), ``summary``; ``predict`` and ``summary`` archive
every finished run's log under ``<out>/runs``.

Usage: python -m paper.forecast_study [--phase restore|pilots|fit|predict|heldout|summary|all]
       [--runs runs/forecast] [--out paper/results/forecast] [--workers 2] [--quick]
"""

from __future__ import annotations

from pathlib import Path

from paper._forecast_design import QUICK, ForecastDesign, run_name
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The predict-first forecast experiment on the testbed (issue 31 §4).",
        design=ForecastDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "pilots", "fit", "predict", "heldout", "summary"],
        gated="heldout",
        default_runs="runs/forecast",
        default_out="paper/results/forecast",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._forecast_study:fit_phase",
            "predict": "paper._forecast_study:predict_phase",
            "summary": "paper._forecast_study:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
