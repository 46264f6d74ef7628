"""The motif hypotheses study (issue 22 §1): do the feed-forward loop's wiring rules hold in
real joint training?

- **H1, C1 filters spurious reward.** Under spurious-reward pulses (``task.spurious``,
  flipped rewards), C1-AND keeps downstream competence steadier than the other seven FFL
  types: smaller dips of end-to-end accuracy during and after the pulses.
- **H2, I1 adapts faster.** After a distribution shift (``task.shift.step``), I1-AND
  recovers end-to-end accuracy faster than C1-AND; at a lagged setting (``rl.staleness``,
  a regime-map knob) I1 oscillates where C1 does not.

Design (fixed before any run; stored in ``config.json``):

- Tiny base, GRPO (8 problems x group 4), ``lr`` with no lag, ``steps`` optimizer steps,
  evaluation every ``eval_every`` steps on ``n_probe`` probes per role and ``n_test``
  end-to-end problems; tasks ``math`` and ``rag``.
- ``pulse`` condition: reward flips of ``pulse_length`` steps starting at ``pulse_starts``;
  ``shift`` condition: the harder distribution from ``shift_step`` on. All 8 FFL types x AND
  in both conditions and both tasks, ``seeds`` seeds each.
- ``lag`` condition (the oscillation check): C1 and I1 under the shift at
  ``rl.staleness = lag_staleness``, task ``math``.
- Pilots: C1-AND without perturbation, ``pilot_seeds`` per task; the simulator is
  calibrated on them (``calibrate fit``) and its predictions for every motif and condition
  are stored in ``predictions.json`` before any test run (the driver refuses ``--phase
  runs`` without them).

Phases (each resumable; a finished run is never retrained): ``pilots``, ``predict``
(refused if predictions exist), ``runs``, ``summary`` (``summary.json``, ``table.md``,
``hypotheses.png``).

Usage: python -m paper.hypotheses_study [--phase pilots|predict|runs|summary|all]
       [--runs runs/hypotheses] [--out paper/results/hypotheses_old_testbed] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from pathlib import Path

from paper._hypotheses_design import QUICK, StudyConfig, run_name
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The motif hypotheses study (issue 22 §1).",
        design=StudyConfig,
        quick=QUICK,
        run_name=run_name,
        phases=["pilots", "predict", "runs", "summary"],
        gated="runs",
        default_runs="runs/hypotheses",
        default_out="paper/results/hypotheses_old_testbed",
        steps={
            "predict": "paper._hypotheses_predict:make_predictions",
            "summary": "paper._hypotheses_analysis:summarise",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
