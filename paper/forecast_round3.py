"""A third predict-first test of the testbed's forecasts (issue 31 §4): the regime of one new
run labelled by the rule the runs are labelled with.

The second test (``paper/forecast_round2.py``) met the 90 % coverage goal with bent links but
its regime accuracy fell below the baselines'; a reading after its runs found why: the model's
regime comes from :func:`simulate.classify` on its smooth curves, which calls a curve that
relaxes to a low level converged, while the runs are labelled by the one collapse rule for real
runs. Labelling the model's simulated new runs by that rule gave 0.86 and 0.88 on the first two
tests' held-out runs, after they were seen. This test makes that forecast before its runs.

Design (fixed before any run of this test; ``<out>/config.json``): the second test's (same 12
pilots and fit, ``S`` chosen by the same rule on the first study's held-out runs), at new
settings and seeds, and one more stored method, ``motif model, bent links, runs' rule (new
run)``: the bent links' new-run finals with regime probabilities from ``draws`` simulated new
runs per setting (seed spread, binomial noise at the probes' count) labelled by
:func:`simulate.classify_observed`.

Usage: python -m paper.forecast_round3 [--phase restore|calibrate|predict|heldout|summary|all]
       [--runs runs/forecast_round3] [--out paper/results/forecast_round3] [--workers 2]
"""

from __future__ import annotations

from pathlib import Path

from paper._forecast_design import run_name
from paper._forecast_rounds import QUICK3 as QUICK
from paper._forecast_rounds import STEPS, Round3Design
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="A third predict-first test of the testbed's forecasts (issue 31 §4).",
        design=Round3Design,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "calibrate", "predict", "heldout", "summary"],
        gated="heldout",
        default_runs="runs/forecast_round3",
        default_out="paper/results/forecast_round3",
        steps={k: v for k, v in STEPS.items() if k != "posthoc"},
    )


if __name__ == "__main__":
    raise SystemExit(main())
