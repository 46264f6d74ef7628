"""A fifth predict-first test of the testbed's forecasts (issue 31 §4): X's rates linked to the
learning rate X trains at, and the model's regimes labelled as the runs are.

Over the four earlier tests (168 held-out runs) the regime of a run was whether X collapsed,
and that fell at a threshold in the learning rate X trains at, ``rl.lr × rl.lr_scale.X``, that
moves with the policy lag (llm_runs multiplies X's learning rate by its scale, so runs at
equal products log the same X curve). The knob schema's links give ``rl.lr`` and
``rl.lr_scale.X`` separate slopes, and the pilots (``rl.lr_scale.X`` 0.15 and 0.3 only) hardly
inform the second: at a scale of 0.6 the model put X's threshold far too high.

Design (fixed before any run of this test; ``<out>/config.json``): the fourth test's (the same
12 pilots, refitted from the first study's committed data; the same summary), with:

- the own-lr fit: the pilots' data with the column ``lr_X = rl.lr × rl.lr_scale.X`` added and
  the links ``own_links`` (X's ``rho`` and ``delta`` on ``log lr_X``, Y's and Z's on
  ``log rl.lr``, every node's on ``log1p rl.staleness``);
- ``calibrate``: its bend ``extrapolation_sd`` chosen on the four earlier tests' 168 held-out
  runs (``calibration_sets``, all seen) by the best pooled mean log score of final competence
  (ties within 0.005: the smaller spread), stored once in ``calibration.json``;
- ``predict``: the own-lr model's forecasts, straight, bent (new run and mean curve) and
  bent with its regimes labelled by the runs' own rule — the *primary* method, named before
  the runs, that the goals judge; round 4's model (bent, runs' rule) beside it; the issue's
  baselines as in the earlier tests (nearest pilot, GP over the knobs, GP regime classifier,
  and at the summary ScaleRL's sigmoid on each run's first 50 steps), plus a GP regime
  classifier given X's own learning rate as a fourth feature (a practitioner who knew the
  product matters); all stored in ``predictions.json`` before the first run;
- new settings and seeds (8, 9) none of the earlier tests used; counts from ``power``.

Usage: python -m paper.forecast_round5 [--phase restore|calibrate|predict|heldout|summary|all]
       [--runs runs/forecast_round5] [--out paper/results/forecast_round5] [--workers 2]
"""

from __future__ import annotations

from pathlib import Path

from paper._forecast_design import run_name
from paper._forecast_rounds import QUICK5 as QUICK
from paper._forecast_rounds import STEPS5, Round5Design
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="A fifth predict-first test of the testbed's forecasts (issue 31 §4).",
        design=Round5Design,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "calibrate", "predict", "heldout", "summary"],
        gated="heldout",
        default_runs="runs/forecast_round5",
        default_out="paper/results/forecast_round5",
        steps=STEPS5,
    )


if __name__ == "__main__":
    raise SystemExit(main())
