"""The wiring read back from real logs with a knock-down of the input agent (issue 29 §4).

The third read-back (``paper/archive/wiring_weights.py``) moved each set by the edges'
weight, but in every run the input agent X is competent (> 0.9) from step ~40 to the end: a
Hill term of X is then a constant, the sign of an edge out of X only scales a rate, and the
fit could not tell activation with a high threshold from repression with a low one (16 types
within 5 elpd). Here each set adds a run in which X is knocked down while its targets are
still learning: a spurious-reward pulse on X alone (``task.spurious.roles [X]``, mode
``flip``) drives A_X down and lets it recover, so an activated target slows during the dip
and a repressed one speeds up. The fit knows each run's pulse windows and the roles they hit
(``calibrate fit --pulses``: during a flip pulse a node's learning target was 0 instead of
1, the law of that time; ``paper/archive/wiring_floor.py`` refits these sets with today's),
its edge weights (``--edge-weights``) and the data path (``--pipeline X->Y,Y->Z``).

Design (``config.json``, stored before any of its runs; a design pilot — C2, set 0's seed
3002, the same pulse — was trained and looked at first to see that a pulse on X moves A_X; it
is not data):

- ``wiring_types`` x ``wiring_sets`` sets at the testbed's default configuration (as the third
  read-back: ``task``, tiny base, coupling edges, ``rl.lr`` ``lr``, ``steps`` steps,
  evaluations every ``eval_every``), AND gates. Each set holds three runs: the third
  read-back's reference ``w = 0`` and its ``w = 0.9`` run of the same type and set (reused
  from ``reuse_from``, unchanged), and a new ``w = 0.9`` run with a pulse on X at step
  ``pulse_start`` for ``pulse_length`` steps (seed ``3000 + 10 set + 3``, the same in every
  type; none shared with earlier runs).
- Each set fitted once: ``calibrate fit --motif auto --gate AND --method laplace
  --edge-weights --pulses --pipeline X->Y,Y->Z`` (16 types ranked, as before).
- Measures and goal as issue 29 §4 states them (``_wiring_read``); the three earlier
  read-backs' numbers are quoted beside them (``earlier``).

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.archive.wiring_pulses [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_pulses] [--out paper/results/wiring_pulses] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_pulses/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_pulses``, its design and phases
in paper/_wiring_pulses.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_pulses import QUICK, PulseDesign, run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with a knock-down of X per set (issue 29 §4).",
        design=PulseDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_pulses",
        default_out="paper/results/wiring_pulses",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_pulses:fit_phase",
            "summary": "paper._wiring_pulses:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
