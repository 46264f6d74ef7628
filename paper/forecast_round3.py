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

import dataclasses
from pathlib import Path
from typing import ClassVar

from paper._study import study_main
from paper.forecast_round2 import QUICK as QUICK2
from paper.forecast_round2 import STEPS, Round2Design, run_name

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Round3Design(Round2Design):
    """The third test's design: the second's, at new settings and seeds, with the runs'
    rule labels."""

    seeds: list[int] = dataclasses.field(default_factory=lambda: [4, 5])
    lrs: list[float] = dataclasses.field(default_factory=lambda: [8e-3, 2e-2, 3e-2])
    staleness: list[int] = dataclasses.field(default_factory=lambda: [0, 2, 8])
    third_values: list[float] = dataclasses.field(default_factory=lambda: [0.1, 0.25])
    rule_labels: bool = True
    COMMAND: ClassVar[str] = "python -m paper.forecast_round3"
    power: str = (
        "runs from the paired comparison this test is for, the runs' rule labels against "
        "classify's on the same runs (McNemar): with discordant pairs at ~25 % of runs (the "
        "second test: 10 of 48) and a difference of 0.23 in accuracy, 80 % power at alpha 0.05 "
        "needs n = (1.96 sqrt(0.25) + 0.84 sqrt(0.25 - 0.23^2))^2 / 0.23^2 = 34.6, so 35 "
        "runs; 18 settings x 2 seeds = 36"
    )


QUICK = {**QUICK2, "seeds": [6], "lrs": [3e-3, 6e-3], "third_values": [0.25]}


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
