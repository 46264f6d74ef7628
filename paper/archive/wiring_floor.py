"""The two knock-down read-backs refitted with a flip law fitted per agent (issue 29 §4).

The knock-down read-backs (``paper/archive/wiring_pulses.py``: X knocked down; ``paper/
wiring_knockdowns.py``: X, then Y) were fitted with a flip law that sent a pulsed agent toward
0 at its full learning rate. The runs say otherwise: where Y had learned, a 40-step pulse moved
it from 0.83-0.86 to 0.78; where it had not, it stayed at 0.47, the base's level; X fell from
0.94 to 0.73 in one set and from 0.80 to 0.41 in the other. A model that expects Y to fall to 0
explained a Y that hardly moved by a wiring that held Y back (wrong signs in 5 of 8 sets).
``calibrate fit --pulses`` now drives a pulsed agent back toward its start level ``A0`` at a
share ``kappa`` of its learning rate, one ``kappa`` per agent, fitted (prior log-normal,
median 0.3, log-sd 1.0): a reward ``1 - r`` moves a policy only where its samples differ; and
a pulse acts ``flip_lag`` training steps after its window (one for the network, fitted; prior
log-normal, median 5, log-sd 1.0): in both X knock-downs X held its level through the first
20 steps of the pulse and was lowest 10 steps after it ended.

A first refit with ``kappa`` alone (no lag; design in ``paper/results/wiring_floor_kappa/``)
was stopped after 2 of its 16 sets: ``kappa`` of X was fitted at 0.04, so the fit switched
the X knock-down off rather than place it at the wrong steps; its two sets are kept there.

This is a re-analysis of committed runs, no new run is trained. Design (``config.json``,
stored after both read-backs' results were read and before any fit of this one):

- The same sets as the two read-backs, from their archives, unchanged: per set ``<type>
  _set<k>_x`` the three runs of the X knock-down read-back, and ``<type>_set<k>_xy`` the four
  runs of the X-and-Y read-back (4 types x 2 sets each, 16 sets).
- Each set fitted once with the read-backs' command (``calibrate fit --motif auto --gate AND
  --method laplace --edge-weights --pulses --pipeline X->Y,Y->Z``), now with the fitted flip
  law; measures and goal as issue 29 §4 states them, per family, with the earlier fits'
  numbers quoted beside them.

Phases (each resumable): ``restore``, ``wiring`` (training: only with ``--quick``), ``fit``,
``summary``.

Usage: python -m paper.archive.wiring_floor [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_floor] [--out paper/results/wiring_floor] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_floor/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_floor``, its design and phases
in paper/_wiring_floor.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_floor import QUICK, FloorDesign
from paper._wiring_knockdowns import run_name as knockdown_run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The knock-down read-backs refitted with a fitted flip law (issue 29 §4).",
        design=FloorDesign,
        quick=QUICK,
        run_name=knockdown_run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_floor",
        default_out="paper/results/wiring_floor",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_floor:fit_phase",
            "summary": "paper._wiring_floor:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
