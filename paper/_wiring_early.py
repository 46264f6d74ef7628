"""The library of ``python -m paper.archive.wiring_early`` (its design, phases and summary; the
driver, paper/archive/wiring_early.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from paper._wiring_knockdowns import QUICK as KNOCKDOWN_QUICK
from paper._wiring_knockdowns import Job, KnockdownDesign
from paper._wiring_knockdowns import run_name as knockdown_run_name

ROOT = Path(__file__).resolve().parents[1]

KIND = "pulseYe"  # the early Y knock-down


@dataclasses.dataclass
class EarlyDesign:
    """The study's fixed design (see the module docstring)."""

    pulse_start: int = 40
    pulse_length: int = 40
    pulse_role: str = "Y"
    seed_offset: int = 5
    #: The X-and-Y read-back's design: its first three runs per set are reused through it.
    knockdowns: dict[str, Any] = dataclasses.field(default_factory=lambda: dataclasses.asdict(
        KnockdownDesign()))  # fmt: skip
    hypothesis: str = (
        "C1 sets: the early Y knock-down delays Z's rise (Y->Z +); I1 sets: it speeds Z's "
        "rise or leaves it (Y-|Z); Y->Z identified with its true sign in C1 and I1 sets more "
        "often than with the late knock-down; C2 and I2 sets (Y does not learn): no change"
    )
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m paper.archive.wiring_early``).
    command: str = "python paper/wiring_early.py"

    @property
    def base(self) -> KnockdownDesign:
        """The X-and-Y read-back's design."""
        return KnockdownDesign(**self.knockdowns)

    @property
    def pipeline(self) -> str:
        """The fitted pipeline gates (the read-backs')."""
        return self.base.pipeline

    def sets(self) -> dict[str, list[Job]]:
        """The four runs of each set, by its name ``<type>_set<k>``."""
        return {n: [*js[:3], (js[0][0], js[0][1], KIND)] for n, js in self.base.sets().items()}

    def jobs(self, phase: str) -> list[Job]:
        """The runs this study trains: the early Y knock-downs (and, without the archives,
        ``--quick``, the reused runs)."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        reused = [j for j in self.base.jobs(phase) if j[2] != "pulseY"]
        return [*reused, *(js[3] for js in self.sets().values())]

    def train_config(self, motif: str, k: int, kind: str) -> dict[str, Any]:
        """The llm_runs config of one run (the reused kinds as the earlier read-backs')."""
        if kind != KIND:
            return self.base.train_config(motif, k, kind)
        c = self.base.train_config(motif, k, "pulseY")
        c["task"]["spurious"] = {"starts": [self.pulse_start], "length": self.pulse_length,
                                 "mode": "flip", "roles": [self.pulse_role]}  # fmt: skip
        c["seed"], c["name"] = 3000 + 10 * k + self.seed_offset, run_name(motif, k, kind)
        return c

    def run_path(self, runs: Path, job: Job) -> Path:
        """Where a set's run is read: an earlier archive, or this study's runs."""
        return runs / run_name(*job) if job[2] == KIND else self.base.run_path(runs, job)


def run_name(motif: str, k: int, kind: str) -> str:
    if kind == KIND:
        return f"{motif}_set{k}_pulseYearly_w0.9"
    return knockdown_run_name(motif, k, kind)


def responses(cfg: EarlyDesign, runs: Path) -> dict[str, dict[str, Any]]:
    """What each knock-down did, model-free, per set (finished runs only): for the ``w =
    0.9`` run, the late Y knock-down (steps 80-120, the X-and-Y read-back's) and the early
    one, Y's and Z's mean competence over the run and the first step at which Z reached
    0.7 (the last step if never); and the early and late runs' differences from ``w =
    0.9`` (a different seed each: seed spread included)."""
    from paper._study_runs import run_curves
    from paper._testbed_analysis import auc, steps_to
    from paper._wiring_floor import FloorDesign

    late = None if cfg.base.reuse_pulses_from is None else FloorDesign()  # --quick: no late run
    out = {}
    for name, js in cfg.sets().items():
        m, k = js[0][0], js[0][1]
        paths = {"w0.9": cfg.run_path(runs, (m, k, "w0.9")), "early": cfg.run_path(runs, js[3])}
        if late is not None:
            paths["late"] = late.run_path(runs, (m, k, "pulseY"))
        curves = {
            n: c
            for n, p in paths.items()
            if (p / "manifest.json").is_file() and (c := run_curves(p)) is not None
        }
        if len(curves) < len(paths):
            continue
        row: dict[str, Any] = {}
        for n, c in curves.items():
            t, comp = c["steps"], c["comp"]
            row[n] = {"auc_Y": auc(t, comp[:, 1]), "auc_Z": auc(t, comp[:, 2]),
                      "steps_to_Z_0.7": steps_to(t, comp[:, 2], 0.7)}  # fmt: skip
        for n in sorted(set(row) - {"w0.9"}):
            row[f"{n}_minus_w0.9"] = {key: row[n][key] - row["w0.9"][key] for key in row[n]}
        out[name] = row
    return out


def summary_phase(cfg: EarlyDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` (``wiring_identification``; ``measures``, the goal's counts; and
    ``late_y_knockdown``, the same counts of the refit's ``xy`` family, the same sets with Y
    knocked down at steps 80-120) and ``table.md``."""
    from paper._wiring_floor import family_measures
    from paper._wiring_read import readback_summary

    late = ROOT / "paper" / "results" / "wiring_floor" / "summary.json"

    def measures(summary: dict[str, Any]) -> dict[str, Any]:
        sets = summary["wiring_identification"].get("sets", {})
        quoted = json.loads(late.read_text()).get("by_family", {}) if late.is_file() else {}
        return {"measures": family_measures(sets, out), "late_y_knockdown": quoted.get("xy"),
                "responses": responses(cfg, runs)}  # fmt: skip

    return readback_summary(cfg, runs, out, {}, measures)


QUICK = {"knockdowns": {**dataclasses.asdict(KnockdownDesign()), **KNOCKDOWN_QUICK},
         "pulse_start": 2, "pulse_length": 3}  # fmt: skip
