"""The library of ``python -m paper.archive.wiring_knockdowns`` (its design, phases and summary; the
driver, paper/archive/wiring_knockdowns.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from paper._wiring_pulses import PulseDesign
from paper._wiring_pulses import run_name as pulse_run_name

ROOT = Path(__file__).resolve().parents[1]

Job = tuple[str, int, str]  # (motif, set, kind): "w0", "w0.9", "pulse" (X) or "pulseY"


@dataclasses.dataclass
class KnockdownDesign:
    """The study's fixed design (see the module docstring)."""

    pulse_start: int = 80
    pulse_length: int = 40
    pulse_role: str = "Y"
    #: The fourth read-back's design (its runs reused; None: trained here, ``--quick``).
    earlier: dict[str, Any] = dataclasses.field(default_factory=lambda: dataclasses.asdict(
        PulseDesign()))  # fmt: skip
    #: Where the fourth read-back's X knock-down runs are read (None: trained here).
    reuse_pulses_from: str | None = "paper/results/wiring_pulses/runs"
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m
    #: paper.archive.wiring_knockdowns``).
    command: str = "python paper/wiring_knockdowns.py"

    @property
    def base(self) -> PulseDesign:
        """The fourth read-back's design."""
        return PulseDesign(**self.earlier)

    @property
    def pipeline(self) -> str:
        """The fitted pipeline gates (the fourth read-back's)."""
        return self.base.pipeline

    def sets(self) -> dict[str, list[Job]]:
        """The four runs of each set, by its name ``<motif>_set<k>``."""
        return {n: [*js, (js[0][0], js[0][1], "pulseY")] for n, js in self.base.sets().items()}

    def jobs(self, phase: str) -> list[Job]:
        """The runs this study trains: the Y knock-downs (and the reused runs without
        their archives)."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        b = self.base
        return [j for js in self.sets().values() for j in js
                if j[2] == "pulseY" or (j[2] == "pulse" and self.reuse_pulses_from is None)
                or (j[2] in ("w0", "w0.9") and b.reuse_from is None)]  # fmt: skip

    def train_config(self, motif: str, k: int, kind: str) -> dict[str, Any]:
        """The llm_runs config of one run (the reused kinds as the earlier read-backs')."""
        if kind != "pulseY":
            return self.base.train_config(motif, k, kind)
        c = self.base.train_config(motif, k, "pulse")
        c["task"]["spurious"] = {"starts": [self.pulse_start], "length": self.pulse_length,
                                 "mode": "flip", "roles": [self.pulse_role]}  # fmt: skip
        c["seed"], c["name"] = 3000 + 10 * k + 4, run_name(motif, k, kind)
        return c

    def run_path(self, runs: Path, job: Job) -> Path:
        """Where a set's run is read: an earlier archive, or this study's runs."""
        if job[2] == "pulse" and self.reuse_pulses_from is not None:
            return ROOT / self.reuse_pulses_from / run_name(*job)
        if job[2] in ("w0", "w0.9"):
            return self.base.run_path(runs, job)
        return runs / run_name(*job)


def run_name(motif: str, k: int, kind: str) -> str:
    if kind == "pulseY":
        return f"{motif}_set{k}_pulseY_w0.9"
    return pulse_run_name(motif, k, kind)


def fit_phase(cfg: KnockdownDesign, runs: Path, out: Path) -> None:
    """Fit every set whose runs have all finished (a set with a ``selection.json`` is kept)."""
    from paper import _wiring_pulses as wiring_pulses

    wiring_pulses.fit_phase(cfg, runs, out)  # type: ignore[arg-type]  # same interface


def summary_phase(cfg: KnockdownDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` and ``table.md``; the earlier read-backs quoted beside them."""
    from paper._wiring_read import readback_summary
    from paper._wiring_weights import EARLIER

    res = ROOT / "paper" / "results"
    return readback_summary(cfg, runs, out, {**EARLIER,
                            "weight_family": res / "wiring_weights" / "summary.json",
                            "x_knockdown": res / "wiring_pulses" / "summary.json"})  # fmt: skip


QUICK = {"pulse_start": 4, "pulse_length": 2, "reuse_pulses_from": None,
         "earlier": {**dataclasses.asdict(PulseDesign()), "steps": 8, "eval_every": 2,
                     "n_probe": 8, "n_test": 8, "preset": "micro", "pulse_start": 2,
                     "pulse_length": 3, "wiring_types": ["C2"], "wiring_sets": [0],
                     "reuse_from": None}}  # fmt: skip
