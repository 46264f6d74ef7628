"""The wiring read back with Y knocked down while Y still learns (issue 29 §4).

The X-and-Y read-back (``paper/archive/wiring_knockdowns.py``) knocked Y down at steps 80-120, when
Y had already learned in the C1 and I1 sets (0.83-0.86 at step 80) or had not learned at
all in the C2 and I2 sets (0.47, the base's level). Refitted with the fitted flip law
(``paper/archive/wiring_floor.py``), a 40-step pulse moved a learned Y only to 0.78, so Z, the
target of the Y -> Z edge where C1 and I1 differ, had little to answer. In the default C1
and I1 runs Y rises between steps 50 and 80 and Z between 60 and 100. Here each set's
fourth run knocks Y down at steps ``pulse_start`` to ``pulse_start + pulse_length`` (40-80):
before and during Y's rise, when its samples differ and a flipped reward moves it.

Hypothesis, stated before any run: in the C1 sets the early Y knock-down delays Z's rise
(Y -> Z activating), in the I1 sets it speeds Z's rise or leaves it (Y -| Z repressing), so
``Y->Z`` is identified with its true sign in C1 and I1 sets more often than with the late
knock-down; in the C2 and I2 sets, where Y does not learn by step 200 on this testbed, the
early knock-down adds nothing, and their result is expected to equal the late one's. (That
premise was misread, and is kept as it was stored: in the C2 and I2 sets Y stayed at the
base's level in the late knock-down's runs, pulsed from step 80, but in their unpulsed
``w = 0.9`` runs it learns after step 100, to 0.81-0.83 by step 200.)

Design (``config.json``, stored before any run of this study):

- Per set ``<type>_set<k>`` (C1, I1, C2, I2 x sets 0, 1): the three runs of the X
  knock-down read-back (``w = 0``, ``w = 0.9`` and X knocked down at steps 30-60), reused
  from their archives unchanged, and one new run: the ``w = 0.9`` run with Y alone knocked
  down by a flip pulse (seed ``3000 + 10 k + 5``; otherwise the late Y knock-down's config).
- Each set fitted once with the refit's command (``calibrate fit --motif auto --gate AND
  --method laplace --edge-weights --pulses --pipeline X->Y,Y->Z``, the fitted flip law),
  two fits at a time; measures and goal as issue 29 §4 states them, with the refit's
  ``xy`` family (the same sets with the late knock-down) quoted beside them.
- 8 sets, as the earlier read-backs (not chosen by a power calculation).

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.archive.wiring_early [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_early] [--out paper/results/wiring_early] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_early/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_early``, its design and phases
in paper/_wiring_early.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_early import QUICK, EarlyDesign, run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with Y knocked down while it learns (issue 29 §4).",
        design=EarlyDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_early",
        default_out="paper/results/wiring_early",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_floor:fit_phase",
            "summary": "paper._wiring_early:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
