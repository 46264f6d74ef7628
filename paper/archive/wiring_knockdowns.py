"""The wiring read back from real logs with a knock-down of X and one of Y per set (issue 29 §4).

The fourth read-back (``paper/archive/wiring_pulses.py``: per set the reference ``w = 0``, the
``w = 0.9`` run and a ``w = 0.9`` run with X knocked down by a flip pulse on X alone) put the
truth first or indistinguishable in 6 of 8 sets with no wrong sign, but identified two signs
in no set: a knock-down of X moves the edges out of X, while Y -> Z, where C1 and I1 (and C2
and I2) differ, is moved by Y alone. Here each set adds a fourth run in which Y is knocked
down while Z is still learning (a flip pulse on Y alone at step ``pulse_start`` for
``pulse_length`` steps; seed ``3000 + 10 set + 4``); the other three runs are the earlier
read-backs' (reused unchanged). Fitted as the fourth read-back (``calibrate fit --motif auto
--gate AND --method laplace --edge-weights --pulses --pipeline X->Y,Y->Z``), measures and goal
as issue 29 §4 states them. Design stored (``config.json``) after the fourth read-back's
results were read and before any run of this one.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.archive.wiring_knockdowns [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_knockdowns] [--out paper/results/wiring_knockdowns] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_knockdowns/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_knockdowns``, its design and phases
in paper/_wiring_knockdowns.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_knockdowns import QUICK, KnockdownDesign, run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with knock-downs of X and of Y (issue 29 §4).",
        design=KnockdownDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_knockdowns",
        default_out="paper/results/wiring_knockdowns",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_knockdowns:fit_phase",
            "summary": "paper._wiring_knockdowns:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
