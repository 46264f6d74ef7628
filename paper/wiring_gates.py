"""The wiring read back with the pipeline gates on the logged training competence (issue 29 §4).

On the threshold read-back's runs (``paper/wiring_threshold.py``, set 3) the fits ranked
the truth 9th (C1) and 4th (I1), behind types with X -| Y. Read after those runs, the truth
lost on Y's curves, most of it in the run where no designed edge acts (``w = 0``,
``misfit_by_block`` in that study's summary): the pipeline gate X -> Y, which carries the
data path (Y trains on X's outputs), read X's fitted *probe* competence, which is near its
ceiling by step 30, while Y only starts to learn at steps 40-80. While training, Y reads X's
*sampled* outputs, whose quality is X's logged training competence (``ema``), which rises
until step ~80. ``calibrate fit --regulators logged-gates`` (docs/model.md, "Logged
regulators") lets the pipeline gates read that logged series too. Refitted so (post hoc, the
same runs; ``paper/results/wiring_threshold/posthoc_logged_gates``), the truth was 1st in C1,
I1 and C2 and 2nd in I2. This study tests that on new runs, with the analysis stored before
they trained.

Design (``config.json``, stored before the first run trained): the threshold read-back's
design (every edge ``K`` 0.6, ``n`` 10; per set the early family's four runs ``w = 0``,
``w = 0.9``, X knocked down at steps 30-60, Y knocked down at steps 40-80), at two new sets
per type (sets 4 and 5, seeds 3040-3045 and 3050-3055; 32 runs), each set fitted with
``calibrate fit --motif auto --gate AND --method laplace --edge-weights --pipeline
X->Y,Y->Z --regulators logged-gates --pulses --dse-blocks``. Primary: the se of each elpd
difference by run and agent; secondary: the pointwise se of the same fits. Measures and goal
as issue 29 §4 states them; the share of sets with two or more signs with its 95 %
Clopper-Pearson interval. Two sets per type (8 in all), as many as train and fit within one
session; no power calculation (no spread of a rank to base one on).

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_gates [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_gates] [--out paper/results/wiring_gates] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._wiring_threshold import GATES_QUICK as QUICK
from paper._wiring_threshold import GatesDesign, read_back_main


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=GatesDesign,
        quick=QUICK,
        name="wiring_gates",
        description="The wiring read back with pipeline gates on the logged competence.",
    )


if __name__ == "__main__":
    raise SystemExit(main())
