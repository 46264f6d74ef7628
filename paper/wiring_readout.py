"""The wiring read back with a greedy readout of each agent's latent skill (issue 29 §4).

In the read-backs so far (``paper/wiring_gates.py`` and before) the fits identified at most
one of the three edge signs in any set, confusing X -> Y with X -| Y. Y's probe competence
is flat at its start for 20-40 steps after its learning rate switches on and then jumps by
~0.4 within ~20 steps, while its logged training competence (``ema``) rises smoothly from
the switch on. First-order kinetics on the probe competence cannot follow that shape, and
the types with X -| Y fit it about as badly as the truth. A greedy probe counts the items
whose per-sample success probability has crossed one half, a sigmoid of the sampled skill:
``calibrate fit --readout greedy`` (docs/model.md, "Greedy readout") fits the kinetics to a
latent skill and reads each agent's probe competence out of it through a logistic of fitted
midpoint and width. This study tests it on new runs, with the analysis stored before they
trained. The readout's form was settled after the design (a first form, normalised on
[0, 1], could not delay a rise on one archived set) and committed before any fit read
these runs.

Design (``config.json``, stored before the first run trained): the gates read-back's design
(every edge ``K`` 0.6, ``n`` 10; per set the early family's four runs ``w = 0``,
``w = 0.9``, X knocked down at steps 30-60, Y knocked down at steps 40-80), at two new sets
per type (sets 6 and 7, seeds 3060-3065 and 3070-3075; 32 runs), each set fitted with
``calibrate fit --motif auto --gate AND --method laplace --edge-weights --pipeline
X->Y,Y->Z --regulators logged-gates --pulses --dse-blocks --readout greedy``. Primary: the
se of each elpd difference by run and agent; secondary: the pointwise se of the same fits.
Measures and goal as issue 29 §4 states them; the share of sets with two or more signs with
its 95 % Clopper-Pearson interval. Two sets per type (8 in all), as many as train and fit
within about one session; no power calculation (no spread of a rank to base one on).

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_readout [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_readout] [--out paper/results/wiring_readout] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

from paper._wiring_threshold import READOUT_QUICK as QUICK
from paper._wiring_threshold import ReadoutDesign, read_back_main


def main(argv: list[str] | None = None) -> int:
    return read_back_main(
        argv,
        design=ReadoutDesign,
        quick=QUICK,
        name="wiring_readout",
        description="The wiring read back with a greedy readout of a latent skill.",
    )


if __name__ == "__main__":
    raise SystemExit(main())
