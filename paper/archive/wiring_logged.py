"""The wiring read back with edges that read the logged training competence (issue 29 §4).

Every read-back so far fitted the edges' Hill terms on the *probe* competence of the source
agent, with the threshold ``K`` and Hill coefficient ``n`` free. llm_runs' edges act on
something else: each agent's coupling factor ``1 - w + w G`` is a Hill term of its upstream
agents' *training* competence, a bias-corrected moving average of their training rewards
(``ema`` in every run log), with the config's ``K`` (0.5) and ``n`` (4). The two differ:
in the weight family's runs X's probe competence is 0.95 at step 40 while its average is
0.63, rising to 0.83 by step 80 and 0.89 by step 200. So where the probe competence of X is
flat from step 40 on, and a Hill term of it only scales a rate (activation with a high
threshold and repression with a low one fit alike), the regulation the runs applied kept
changing through the run. ``calibrate fit --regulators logged`` (new) reads each edge's Hill
term from the logged average of its source, with the runs' own ``K`` and ``n`` (known, not
fitted): what is fitted is which edges exist and their signs, and each agent's kinetics.

This is a re-analysis of committed runs; no run is trained (except with ``--quick``). Design
(``config.json``, stored after every earlier read-back's results were read and before any
fit of this one; the new option was checked only on synthetic data and in tests):

- Three families of sets, from their archives, unchanged (4 types C1, I1, C2, I2 x 2 sets):
  ``<type>_set<k>_weights`` the weight family's three runs (``w`` 0, 0.45, 0.9;
  ``paper/archive/wiring_weights.py``); ``<type>_set<k>_x`` the X knock-down's three runs (``w`` 0,
  0.9, and 0.9 with X knocked down at steps 30-60; ``paper/archive/wiring_pulses.py``);
  ``<type>_set<k>_early`` those three and the early Y knock-down (steps 40-80;
  ``paper/archive/wiring_early.py``).
- Each set fitted once with the earlier read-backs' command plus ``--regulators logged``:
  ``calibrate fit --motif auto --gate AND --method laplace --edge-weights --pipeline
  X->Y,Y->Z --regulators logged`` (and ``--pulses`` in the knock-down families, the fitted
  flip law), two fits at a time, families in the order above.
- Measures and goal as issue 29 §4 states them, per family, with the same sets' counts
  under the earlier fits quoted beside them (weights: ``paper/results/wiring_weights``;
  x: the refit with the fitted flip law, ``paper/results/wiring_floor``; early:
  ``paper/results/wiring_early``).

Phases (each resumable): ``wiring`` (training: only with ``--quick``), ``fit``, ``summary``.

Usage: python -m paper.archive.wiring_logged [--phase wiring|fit|summary|all]
       [--runs runs/wiring_logged] [--out paper/results/wiring_logged] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_logged/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_logged``, its design and phases
in paper/_wiring_logged.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_logged import QUICK, LoggedDesign, run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with logged regulators (issue 29 §4).",
        design=LoggedDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_logged",
        default_out="paper/results/wiring_logged",
        steps={
            "fit": "paper._wiring_logged:fit_phase",
            "summary": "paper._wiring_logged:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
