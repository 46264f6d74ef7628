"""The library of ``python -m paper.archive.wiring_floor`` (its design, phases and summary; the
driver, paper/archive/wiring_floor.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from paper._wiring_knockdowns import QUICK as KNOCKDOWN_QUICK
from paper._wiring_knockdowns import Job, KnockdownDesign
from paper._wiring_knockdowns import run_name as knockdown_run_name

ROOT = Path(__file__).resolve().parents[1]

FAMILIES = {"x": 3, "xy": 4}  # set family -> its runs (the first 3 or all 4 of a set)


@dataclasses.dataclass
class FloorDesign:
    """The re-analysis' fixed design (see the module docstring)."""

    #: The X-and-Y read-back's design (its runs and, through it, the X read-back's).
    knockdowns: dict[str, Any] = dataclasses.field(default_factory=lambda: dataclasses.asdict(
        KnockdownDesign()))  # fmt: skip
    #: Where its Y knock-down runs are read (None: trained here, ``--quick``).
    reuse_knockdowns_from: str | None = "paper/results/wiring_knockdowns/runs"
    families: list[str] = dataclasses.field(default_factory=lambda: list(FAMILIES))
    flip_law: str = (
        "a pulsed agent is driven toward its start level A0 at kappa times its learning rate; "
        "kappa per agent, prior log-normal (median 0.3, log-sd 1.0); each pulse acts flip_lag "
        "steps after its window, flip_lag fitted (one per network), prior log-normal (median "
        "5, log-sd 1.0)"
    )
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m paper.archive.wiring_floor``).
    command: str = "python paper/wiring_floor.py"

    @property
    def base(self) -> KnockdownDesign:
        """The X-and-Y read-back's design."""
        return KnockdownDesign(**self.knockdowns)

    @property
    def pipeline(self) -> str:
        """The fitted pipeline gates (the read-backs')."""
        return self.base.pipeline

    def sets(self) -> dict[str, list[Job]]:
        """The runs of each set, by its name ``<type>_set<k>_<family>``."""
        return {f"{n}_{fam}": js[: FAMILIES[fam]]
                for n, js in self.base.sets().items() for fam in self.families}  # fmt: skip

    def jobs(self, phase: str) -> list[Job]:
        """The runs trained here: none, unless the archives are not used (``--quick``)."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        return self.base.jobs(phase) if self.reuse_knockdowns_from is None else []

    def train_config(self, motif: str, k: int, kind: str) -> dict[str, Any]:
        """The llm_runs config of one run (the read-backs')."""
        return self.base.train_config(motif, k, kind)

    def run_path(self, runs: Path, job: Job) -> Path:
        """Where a set's run is read: the read-backs' archives, or this study's runs."""
        if job[2] == "pulseY" and self.reuse_knockdowns_from is not None:
            return ROOT / self.reuse_knockdowns_from / knockdown_run_name(*job)
        return self.base.run_path(runs, job)


def fit_phase(cfg: FloorDesign, runs: Path, out: Path) -> None:
    """Fit every set whose runs have all finished, two at a time on two cores (a set with a
    ``selection.json`` is kept)."""
    from paper import _wiring_pulses as wiring_pulses

    failed = threading.Event()

    def one(name: str) -> None:
        if failed.is_set():  # a fit failed: start no other
            return
        try:
            wiring_pulses.fit_phase(cfg, runs, out, [name])  # type: ignore[arg-type]
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        list(ex.map(one, cfg.sets()))


def family_measures(sets: dict[str, dict[str, Any]], out: Path | None) -> dict[str, Any]:
    """The goal's measures over one family's sets, as counts, with (given the fits' folder
    ``out``) the flip rates ``kappa`` (posterior means) of each set's true type."""
    from paper._wiring_read import identification_summary

    kappa = {}
    for name, s in sets.items() if out is not None else ():
        f = Path(out or ".") / "wiring" / name / "fits" / s["true"] / "summary.json"
        if f.is_file():
            post = json.loads(f.read_text())
            kappa[name] = {k: post[k]["mean"] for k in post if k.startswith("flip")}
    head = identification_summary(sets)
    head.pop("sets")
    return {
        **head,
        "n_sets": len(sets),
        "truth_first_or_indistinguishable_sets": sum(
            v["rank"] == 1 or v["in_indistinguishable"] for v in sets.values()),
        "sets_with_a_wrong_sign": sum(
            not all(v["identified_correct"].values()) for v in sets.values()),
        "sets_with_two_signs": sum(len(v["identified"]) >= 2 for v in sets.values()),
        **({"kappa_true_type": kappa} if out is not None else {}),
    }  # fmt: skip


def summary_phase(cfg: FloorDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` (``wiring_identification``, and ``by_family`` its measures per
    family; the earlier fits quoted) and ``table.md``."""
    from paper._wiring_read import readback_summary

    def by_family(summary: dict[str, Any]) -> dict[str, Any]:
        sets = summary["wiring_identification"].get("sets", {})
        return {"by_family": {
            fam: family_measures({n: s for n, s in sets.items() if n.endswith(f"_{fam}")}, out)
            for fam in cfg.families}}  # fmt: skip

    res = ROOT / "paper" / "results"
    return readback_summary(cfg, runs, out, {
        "x_knockdown": res / "wiring_pulses" / "summary.json",
        "xy_knockdown": res / "wiring_knockdowns" / "summary.json"}, by_family)  # fmt: skip


QUICK = {"knockdowns": {**dataclasses.asdict(KnockdownDesign()), **KNOCKDOWN_QUICK},
         "reuse_knockdowns_from": None}  # fmt: skip
