"""The library of ``python -m paper.wiring_confirm`` (its design, phases and summary; the
driver, paper/wiring_confirm.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from paper._wiring_early import EarlyDesign
from paper._wiring_knockdowns import KnockdownDesign
from paper._wiring_logged import QUICK as LOGGED_QUICK
from paper._wiring_logged import LoggedDesign
from paper._wiring_pulses import PulseDesign

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
    from paper import _wiring_logged as wiring_logged
    from paper._wiring_floor import family_measures
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
