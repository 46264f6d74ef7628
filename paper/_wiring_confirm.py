"""The wiring read back from new runs, analysed as fixed before they were trained (issue 29 §4).

Every read-back so far was fitted on runs already looked at. This one trains a new set of
runs per type (set 2: seeds not used before) and reads each back with an analysis stored
before any of them trained, so its result is a test of that analysis and not a description
of it. The runs are those of the early Y knock-down read-back (``paper/wiring_early.py``) at
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

import dataclasses
import json
from pathlib import Path
from typing import Any

from paper._study import study_main
from paper.wiring_early import EarlyDesign
from paper.wiring_knockdowns import KnockdownDesign
from paper.wiring_logged import QUICK as LOGGED_QUICK
from paper.wiring_logged import LoggedDesign, run_name
from paper.wiring_pulses import PulseDesign

ROOT = Path(__file__).resolve().parents[1]

FIT_ARGS = ["--motif", "auto", "--gate", "AND", "--method", "laplace", "--edge-weights",
            "--pipeline", "X->Y,Y->Z", "--regulators", "logged", "--dse-blocks"]  # fmt: skip


def _early_at(sets: list[int]) -> dict[str, Any]:
    """The early knock-down's design at new sets, every run trained here (no archive)."""
    pulses = {**dataclasses.asdict(PulseDesign()), "wiring_sets": sets, "reuse_from": None}
    knock = {**dataclasses.asdict(KnockdownDesign()), "earlier": pulses,
             "reuse_pulses_from": None}  # fmt: skip
    return {**dataclasses.asdict(EarlyDesign()), "knockdowns": knock}


@dataclasses.dataclass
class ConfirmDesign(LoggedDesign):
    """The confirmation's fixed design (see the module docstring)."""

    early: dict[str, Any] = dataclasses.field(default_factory=lambda: _early_at([2]))
    weights_runs_from: str | None = None
    early_runs_from: str | None = None
    families: list[str] = dataclasses.field(default_factory=lambda: ["early", "x"])
    fit_args: list[str] = dataclasses.field(default_factory=lambda: list(FIT_ARGS))
    primary: str = "early"
    hypothesis: str = (
        "on new runs, with logged regulators and the se of each difference by run and agent, "
        "the early family keeps the truth first or indistinguishable in every set and reads no "
        "wrong sign; whether it reads >= 2 signs in most sets is open"
    )
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_confirm``).
    command: str = "python paper/wiring_confirm.py"
    quote_earlier = False  # new sets: no earlier fit of them
    figure = "wiring_confirm.png"


def pointwise_read(selection: dict[str, Any], motif: str, se: str = "dse_points") -> dict[str, Any]:
    """One set's read-back (:func:`_wiring_read.set_identification`) with the
    indistinguishable set taken by another se of the same selection (``se``: the pointwise
    ``dse_points`` of a selection made with ``--dse-blocks``, or the unstratified
    ``dse_blocks`` of one made with ``--dse-replicates``; band 2), and the signs that set
    identifies."""
    from calibrate import ELPD_BAND, identified_structure, resolve_network
    from paper._wiring_read import set_identification

    rows = selection["ranking"]
    keep = [r["label"] for r in rows if r["d_elpd"] <= ELPD_BAND * r[se]]
    ident = identified_structure([resolve_network(lb)[0] for lb in keep])
    return set_identification({**selection, "indistinguishable": keep, "identified": ident}, motif)


def summary_phase(cfg: ConfirmDesign, runs: Path, out: Path) -> dict[str, Any]:
    """The read-back's summary (:func:`wiring_logged.summary_phase`) with ``pointwise``: per
    family, the goal's counts with the indistinguishable set taken by the pointwise se of
    the same fits (``dse_points``)."""
    from paper import wiring_logged
    from paper.wiring_floor import family_measures
    from simulate.common import write_json

    summary = wiring_logged.summary_phase(cfg, runs, out)
    per_fam: dict[str, Any] = {}
    for fam in cfg.families:
        sets = {}
        for name in (n for n in cfg.sets() if n.endswith(f"_{fam}")):
            f = out / "wiring" / name / "selection.json"
            if not f.is_file():
                continue
            sets[name] = pointwise_read(json.loads(f.read_text()), name.split("_")[0])
        per_fam[fam] = family_measures(sets, None)
    summary["pointwise"] = per_fam
    summary["primary"] = cfg.primary
    write_json(out / "summary.json", summary)
    return summary


QUICK = {**LOGGED_QUICK, "families": ["early", "x"], "fit_args": [*LOGGED_QUICK["fit_args"],
         "--dse-blocks"]}  # fmt: skip


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
            "fit": "paper.wiring_logged:fit_phase",
            "summary": "paper.wiring_confirm:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
