"""A fourth predict-first test of the testbed's forecasts (issue 31 §4): X's forgetting
linked to its own learning-rate scale.

The three earlier tests left X's finals the model's worst (CRPS 0.20 of its 0.095 in the
third): X either converges or collapses to 0, at a threshold in ``rl.lr`` x
``rl.lr_scale.X`` x staleness, while the first study's links let ``rl.lr_scale.X`` move only
X's learning rate ``rho``, not its forgetting ``delta``. In the runs, X's curve depends on
``rl.lr`` and ``rl.lr_scale.X`` through their product (the recommendation study's runs at
equal products log identical X curves), so ``delta[X]`` should move with both.

Design (fixed before any run of this test; ``<out>/config.json``): the second test's (the same
12 pilots, refitted from the first study's committed data; the same baselines, summary and
the runs' rule labels of the third), with:

- two link sets: the first study's, and the same plus ``delta[X] <- log rl.lr_scale.X``
  (``extra_links``), each refitted on the pilots;
- ``calibrate``: the link set and the bend ``extrapolation_sd`` chosen together on the first
  three tests' 120 held-out runs (``calibration_sets``, all already seen) by the best pooled
  mean log score of final competence (ties within 0.005: the first links, then the smaller
  spread), stored once in ``calibration.json`` before any forecast of this test;
- ``predict``: as the second test's from the chosen links, plus the other links' bent
  new-run forecast (so the links are compared on runs neither has seen);
- new settings and seeds (6, 7) none of the earlier tests used; counts from ``power``.

Usage: python -m paper.forecast_round4 [--phase restore|calibrate|predict|heldout|summary|all]
       [--runs runs/forecast_round4] [--out paper/results/forecast_round4] [--workers 2]
"""

from __future__ import annotations

from pathlib import Path

from paper._forecast_design import run_name
from paper._forecast_rounds import DELTA_X as DELTA_X
from paper._forecast_rounds import QUICK4 as QUICK
from paper._forecast_rounds import STEPS4, Round4Design
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="A fourth predict-first test of the testbed's forecasts (issue 31 §4).",
        design=Round4Design,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "calibrate", "predict", "heldout", "summary"],
        gated="heldout",
        default_runs="runs/forecast_round4",
        default_out="paper/results/forecast_round4",
        steps=STEPS4,
    )


if __name__ == "__main__":
    raise SystemExit(main())
