"""The wiring read back from new runs, analysed as fixed before they were trained (issue 29 §4).

Every read-back so far was fitted on runs already looked at. This one trains a new set of
runs per type (set 2: seeds not used before) and reads each back with an analysis stored
before any of them trained, so its result is a test of that analysis and not a description
of it. The runs are those of the early Y knock-down read-back (``paper/archive/wiring_early.py``) at
set 2: per type (C1, I1, C2, I2) ``w = 0``, ``w = 0.9``, ``w = 0.9`` with X knocked down at
steps 30-60 and ``w = 0.9`` with Y knocked down at steps 40-80 (the testbed's default
``math`` config otherwise; 16 runs).

The analysis (``config.json``, stored before the first run trained):

- ``calibrate fit --motif auto --gate AND --method laplace --edge-weights --pipeline
  X->Y,Y->Z --regulators logged --pulses --dse-blocks``: the edges read the logged training
  competence (docs/model.md, "Logged regulators"), and the indistinguishable set is taken with
  the se of each elpd difference from its sums per run and agent (``--dse-blocks``): one run's
  evaluations are not independent evidence, and on the committed runs the pointwise se called
  the truth distinguishable from a better-fitting wrong type (C2 sets of the weight family,
  ``paper/results/wiring_logged``).
- Primary: the ``early`` family (all four runs of a set). Secondary: the ``x`` family (its first
  three runs), and the pointwise se on the same fits (``dse_points`` in ``selection.json``).
- Measures and goal as issue 29 §4 states them. Four sets per family (one per type): fewer than
  the read-backs' eight, because the runs must train in one session; no power calculation was
  made (the read-backs give no spread of a rank to base one on).

Phases (each resumable): ``restore`` (the archived runs copied back into ``--runs``),
``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_confirm [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_confirm] [--out paper/results/wiring_confirm] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_confirm import QUICK, ConfirmDesign
from paper._wiring_logged import run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back from new runs (issue 29 §4).",
        design=ConfirmDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_confirm",
        default_out="paper/results/wiring_confirm",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_logged:fit_phase",
            "summary": "paper._wiring_confirm:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
