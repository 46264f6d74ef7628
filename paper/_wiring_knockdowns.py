"""The wiring read back from real logs with a knock-down of X and one of Y per set (issue 29 §4).

The fourth read-back (``paper/wiring_pulses.py``: per set the reference ``w = 0``, the
``w = 0.9`` run and a ``w = 0.9`` run with X knocked down by a flip pulse on X alone) put the
truth first or indistinguishable in 6 of 8 sets with no wrong sign, but identified two signs
in no set: a knock-down of X moves the edges out of X, while Y -> Z, where C1 and I1 (and C2
and I2) differ, is moved by Y alone. Here each set adds a fourth run in which Y is knocked
down while Z is still learning (a flip pulse on Y alone at step ``pulse_start`` for
``pulse_length`` steps; seed ``3000 + 10 set + 4``); the other three runs are the earlier
read-backs' (reused unchanged). Fitted as the fourth read-back (``calibrate fit --motif auto
--gate AND --method laplace --edge-weights --pulses --pipeline X->Y,Y->Z``), measures and goal
as issue 29 §4 states them. Design stored (``config.json``) after the fourth read-back's
results were read and before any run of this one.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_knockdowns [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_knockdowns] [--out paper/results/wiring_knockdowns] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from paper._study import study_main
from paper.wiring_pulses import PulseDesign
from paper.wiring_pulses import run_name as pulse_run_name

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
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_knockdowns``).
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
    from paper import wiring_pulses

    wiring_pulses.fit_phase(cfg, runs, out)  # type: ignore[arg-type]  # same interface


def summary_phase(cfg: KnockdownDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` and ``table.md``; the earlier read-backs quoted beside them."""
    from paper._wiring_read import readback_summary
    from paper.wiring_weights import EARLIER

    res = ROOT / "paper" / "results"
    return readback_summary(cfg, runs, out, {**EARLIER,
                            "weight_family": res / "wiring_weights" / "summary.json",
                            "x_knockdown": res / "wiring_pulses" / "summary.json"})  # fmt: skip


QUICK = {"pulse_start": 4, "pulse_length": 2, "reuse_pulses_from": None,
         "earlier": {**dataclasses.asdict(PulseDesign()), "steps": 8, "eval_every": 2,
                     "n_probe": 8, "n_test": 8, "preset": "micro", "pulse_start": 2,
                     "pulse_length": 3, "wiring_types": ["C2"], "wiring_sets": [0],
                     "reuse_from": None}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with knock-downs of X and of Y (issue 29 §4).",
        design=KnockdownDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_knockdowns",
        default_out="paper/results/wiring_knockdowns",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper.wiring_knockdowns:fit_phase",
            "summary": "paper.wiring_knockdowns:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
