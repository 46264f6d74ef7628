"""The wiring read back when the edges' threshold sits inside their sources' range (issue 29 §4).

Every read-back so far ran the testbed's edges at ``K`` 0.5, ``n`` 4. The edges act on a
Hill term of their source's logged training competence (``ema``; docs/model.md, "Logged
regulators"), and Y's stays near that threshold: in the confirmation's 16 runs
(``paper/results/wiring_confirm/runs``) its 5th to 95th percentile is 0.49 to 0.74, and the
early Y knock-down leaves it at 0.5 (flipped rewards take Y's training accuracy back to
chance, not below it). So across everything Y does, ``h+`` and ``h-`` of Y move only between
0.5 and about 0.8 and 0.2, the Y -> Z edge barely changes Z's learning rate over a run, and
no fit has ever read its sign. Here every edge's threshold and Hill coefficient are chosen
so that a Hill term of Y goes from 0.1 to 0.9 across that range: ``K`` = sqrt(0.49 x 0.74)
= 0.60 and ``n`` = ln 81 / ln(0.74 / 0.49) = 10.7, taken as 10 (``network.K``,
``network.n``; one pair on every edge, as ``--regulators logged`` needs). Chosen from
committed runs, before any run of this design.

Design (``config.json``, stored before the first run trained; everything else as the
confirmation, ``paper/wiring_confirm.py``):

- Runs: per type (C1, I1, C2, I2) the early family's four runs at a set not used before
  (set 3, seeds 3030-3035): ``w = 0``, ``w = 0.9``, ``w = 0.9`` with X knocked down at steps
  30-60, ``w = 0.9`` with Y knocked down at steps 40-80 (16 runs).
- Analysis: ``calibrate fit --motif auto --gate AND --method laplace --edge-weights
  --pipeline X->Y,Y->Z --regulators logged --pulses --dse-blocks`` on each set's four runs.
  Primary: the indistinguishable set by the se of each elpd difference from its sums per
  run and agent; secondary: the pointwise se of the same fits (``pointwise``).
- Measures and goal as issue 29 §4 states them. One set per type, as the confirmation: the
  runs must train and be fitted within one session, and the read-backs give no spread of a
  rank to base a power calculation on; the share of sets with two or more signs is given
  with its Clopper-Pearson interval.

Phases (each resumable): ``restore`` (the archived runs copied back into ``--runs``),
``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_threshold [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_threshold] [--out paper/results/wiring_threshold] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._wiring_threshold import QUICK, ThresholdDesign, read_back_main


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=ThresholdDesign,
        quick=QUICK,
        name="wiring_threshold",
        description="The wiring read back with edge thresholds inside Y's range (issue 29 §4).",
    )


if __name__ == "__main__":
    raise SystemExit(main())
