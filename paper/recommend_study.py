"""The recommendation benchmark on the testbed (issue 32 §1): a tabular benchmark of real runs
whose best cell is inside the grid and not a pilot, with the wiring as a choice.

Design (fixed before any run; stored in ``<out>/config.json``; placed from the runs already
made on the testbed: the forecast experiment's pilots, C1-AND at seeds 0-1, reached a final
end-to-end accuracy of 0.71-0.80 at ``rl.lr`` 4e-3 and 1e-2 without lag, and X collapsed at
2.5e-2 with ``rl.lr_scale.X`` 0.3 (lag 0) or 0.15 (lag 4); the testbed's wiring runs showed
C2 behind C1 at low learning rates (final end-to-end 0.20-0.25 against 0.67-0.69 at 5e-4)
and level with it at 2e-3):

- The testbed's default run (``math``, tiny base, 200 steps, evaluation every 10, AND
  gates) over ``rl.lr`` (``lrs``) x ``knob`` (``rl.lr_scale.X``, the input role's
  learning-rate multiplier; ``knob_values``) x the wiring (``motifs``), every cell at
  ``seeds``. The learning rates reach past the collapse boundary at every ``knob`` value,
  so that the best cell should lie inside the grid.
- A cell's true value: its mean final end-to-end accuracy over its seeds (``seeds``, and
  more for the cells of ``seeds_by_cell``).
- ``pilots`` (grid index triples ``(lr, knob, motif)``, <= 25 % of the cells): what the motif
  model and the pilot-based baselines start from in every repetition.
- ``check`` (after every cell is trained, before any method runs): the best cell, whether it
  is inside the grid (every ordered knob strictly inside its range) and not a pilot, and its
  lead over the best cell on the grid's edge with a 95 % Welch interval, written once to
  ``check.json``. A failed check is a result: the design is revised (recorded in
  ``revisions``) before any method runs.

Phases (each resumable): ``restore`` (copies the archived logs of finished runs from
``<out>/runs`` into ``--runs`` where missing, so a new checkout trains only what is left),
``cells`` (trains every cell at its seeds), ``check`` (also archives every finished run's
log under ``<out>/runs``), ``power`` (the seeds per cell from the spread measured at
``seeds``, written once to ``power.json``: see :func:`_recommend_study.seed_plan`; the design's
``seeds_by_cell`` must be its plan), ``methods`` (every method at every repetition, once the
check has passed: ``picks.json``, ``summary.json``, ``table.md``, ``recommend.png``; see
:mod:`_recommend_methods`; the motif model's fits and recommendations are kept under
``<out>/motif_model``).

Usage: python -m paper.recommend_study [--phase restore|cells|check|power|methods|all]
       [--runs runs/recommend] [--out paper/results/recommend] [--workers 2] [--quick]
"""

from __future__ import annotations

from pathlib import Path

from paper._recommend_design import QUICK, RecommendDesign, run_name
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The recommendation benchmark on the testbed (issue 32 §1).",
        design=RecommendDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "cells", "check", "power", "methods"],
        gated=None,
        default_runs="runs/recommend",
        default_out="paper/results/recommend",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "check": "paper._recommend_study:check_phase",
            "power": "paper._recommend_study:power_phase",
            "methods": "paper._recommend_study:methods_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
