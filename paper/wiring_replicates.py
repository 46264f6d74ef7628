"""The wiring read back from replicated runs, the se of each difference from the replicates
(issue 29 §4).

In every read-back so far a set held four runs, each in its own condition (``w = 0``,
``w = 0.9``, X knocked down, Y knocked down), and the se of an elpd difference came from its
sums per run and agent, the 12 blocks taken as exchangeable draws. Read after
``paper/wiring_readout.py``'s runs (PSIS-LOO of its saved fits,
``paper/results/wiring_replicates/exploration/``): the evidence that separates
the truth from a type of another sign sits on one agent's curve in one condition, most often
Z's in the ``w = 0`` run (median 6.4 nats against the types that differ only in Y -> Z, 1.3 to
1.8 in the other runs). Twelve blocks of which one or two carry the difference give a se as
large as the difference, whether or not a replicate would repeat it: a set has no replicate
of any condition, so the blocked se cannot tell a condition that separates two types from
noise. Here each condition is run at two seeds, and the se of a difference is that of its
sums per run and agent *stratified by condition and agent*: ``sqrt(sum_s B_s var_s)`` over
the strata ``s`` (runs whose configuration is the same but for its seed, and one agent), with
``B_s`` = 2 blocks each (``calibrate fit --dse-replicates``; docs/model.md). It measures how
much the evidence varies between seeds of the same condition, which is what a new set would
redraw, and does not count the designed differences between conditions and agents as
noise.

Design (``config.json``, stored before the first run trained; committed before
``--dse-replicates`` existed, which is built to the formula above before any fit reads these
runs):

- Runs: the readout read-back's (every edge ``K`` 0.6, ``n`` 10; 200 steps), per type (C1,
  I1, C2, I2) one set of six: ``w = 0``, ``w = 0.9`` and ``w = 0.9`` with X knocked down at
  steps 30-60, each at two seeds (the early family's runs at sets 8 and 9, seeds 3080, 3082,
  3083 and 3090, 3092, 3093; the early Y knock-downs left out: they carried the least
  evidence). 24 runs; the four types share seeds, run for run.
- Analysis: ``calibrate fit --motif auto --gate AND --method laplace --edge-weights
  --pipeline X->Y,Y->Z --regulators logged-gates --pulses --dse-blocks --readout greedy
  --dse-replicates`` on each set's six runs. Primary: the indistinguishable set by the se
  stratified by condition and agent (``dse``); secondary: the unstratified se per run and
  agent (``dse_blocks``) and the pointwise se (``dse_points``) of the same fits, and (added
  with the unbiased stratum variances, ddof 1, before any fit read these runs) the primary se
  with a Student-t band at its Satterthwaite degrees of freedom (``dse_df``) in place of 2,
  the same one-sided level (97.7 %): with two seeds a stratum the se is itself uncertain.
- Measures and goal as issue 29 §4 states them; the share of sets with two or more signs with
  its 95 % Clopper-Pearson interval. One set per type (4 sets, "most" is 3 or 4): 24 runs and
  four 6-run fits are what trains and fits in about an hour on two cores. No power
  calculation: the exploratory read of the readout read-back's 4-run sets (stratified by
  agent only; ``exploration/explore.json``) read two signs in 3 of 8 sets, and there is no
  spread of a per-set outcome under this design to base one on.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_replicates [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_replicates] [--out paper/results/wiring_replicates] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._wiring_replicates import QUICK, ReplicatesDesign
from paper._wiring_threshold import read_back_main


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=ReplicatesDesign,
        quick=QUICK,
        name="wiring_replicates",
        description="The wiring read back from replicated runs (se from the replicates).",
        summary="paper._wiring_replicates:summary_phase",
    )


if __name__ == "__main__":
    raise SystemExit(main())
