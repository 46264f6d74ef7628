"""The motif hypotheses study (issue 22 §1): do the feed-forward loop's wiring rules hold in
real joint training?

- **H1, C1 filters spurious reward.** Under spurious-reward pulses (``task.spurious``,
  flipped rewards), C1-AND keeps downstream competence steadier than the other seven FFL
  types: smaller dips of end-to-end accuracy during and after the pulses.
- **H2, I1 adapts faster.** After a distribution shift (``task.shift.step``), I1-AND
  recovers end-to-end accuracy faster than C1-AND; at a lagged setting (``rl.staleness``,
  a regime-map knob) I1 oscillates where C1 does not.

Design (fixed before any run; stored in ``config.json``):

- Tiny base, GRPO (8 problems x group 4), ``lr`` with no lag, ``steps`` optimizer steps,
  evaluation every ``eval_every`` steps on ``n_probe`` probes per role and ``n_test``
  end-to-end problems; tasks ``math`` and ``rag``.
- ``pulse`` condition: reward flips of ``pulse_length`` steps starting at ``pulse_starts``;
  ``shift`` condition: the harder distribution from ``shift_step`` on. All 8 FFL types x AND
  in both conditions and both tasks, ``seeds`` seeds each.
- ``lag`` condition (the oscillation check): C1 and I1 under the shift at
  ``rl.staleness = lag_staleness``, task ``math``.
- Pilots: C1-AND without perturbation, ``pilot_seeds`` per task; the simulator is
  calibrated on them (``calibrate fit``) and its predictions for every motif and condition
  are stored in ``predictions.json`` before any test run (the driver refuses ``--phase
  runs`` without them).

Phases (each resumable; a finished run is never retrained): ``pilots``, ``predict``
(refused if predictions exist), ``runs``, ``summary`` (``summary.json``, ``table.md``,
``hypotheses.png``).

Usage: python paper/hypotheses_study.py [--phase pilots|predict|runs|summary|all]
       [--runs runs/hypotheses] [--out paper/results/hypotheses_old_testbed] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _study import study_main  # noqa: E402

MOTIFS = ["C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4"]

Job = tuple[str, str, str, int]  # (condition, task, motif, seed)


@dataclasses.dataclass
class StudyConfig:
    """The study's fixed design (see the module docstring)."""

    tasks: list[str] = dataclasses.field(default_factory=lambda: ["math", "rag"])
    motifs: list[str] = dataclasses.field(default_factory=lambda: list(MOTIFS))
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    pilot_seeds: list[int] = dataclasses.field(default_factory=lambda: [100, 101, 102])
    steps: int = 48
    eval_every: int = 4
    n_probe: int = 48
    n_test: int = 96
    lr: float = 2e-3
    pulse_starts: list[int] = dataclasses.field(default_factory=lambda: [12, 30])
    pulse_length: int = 4
    shift_step: int = 24
    lag_staleness: int = 4
    lag_motifs: list[str] = dataclasses.field(default_factory=lambda: ["C1", "I1"])
    lag_task: str = "math"
    preset: str = "tiny"

    def jobs(self, phase: str) -> list[Job]:
        """``(condition, task, motif, seed)`` of a training phase (``pilots`` or ``runs``)."""
        if phase == "pilots":
            return [("plain", t, "C1", s) for s in self.pilot_seeds for t in self.tasks]
        return study_jobs(self)

    def train_config(self, cond: str, task: str, motif: str, seed: int) -> dict[str, Any]:
        """The llm_runs config of one run."""
        return {
            "task": task_spec(self, cond, task),
            "model": {"preset": self.preset},
            "network": {"motif": motif, "gate": "AND"},
            "rl": {
                "algo": "grpo",
                "batch": 8,
                "group": 4,
                "lr": self.lr,
                "staleness": self.lag_staleness if cond == "lag" else 0,
            },
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": self.eval_every,
            "seed": seed,
            "threads": 1,
            "name": run_name(cond, task, motif, seed),
        }


def study_jobs(cfg: Any) -> list[Job]:
    """The test runs ``(condition, task, motif, seed)``, seed by seed: every type in both
    tasks under the pulses and the shift, then the lag motifs under the shift."""
    out: list[Job] = []
    for seed in cfg.seeds:
        for cond in ("pulse", "shift"):
            out += [(cond, t, m, seed) for t in cfg.tasks for m in cfg.motifs]
        out += [("lag", cfg.lag_task, m, seed) for m in cfg.lag_motifs]
    return out


def task_spec(cfg: Any, cond: str, task: str) -> dict[str, Any]:
    """The ``task`` section of a run of condition ``cond``: reward flips of ``pulse_length``
    steps at ``pulse_starts`` (``pulse``), the harder distribution from ``shift_step`` on
    (``shift``, ``lag``)."""
    spec: dict[str, Any] = {"name": task, "n_probe": cfg.n_probe, "n_test": cfg.n_test}
    if cond == "pulse":
        spec["spurious"] = {
            "mode": "flip",
            "length": cfg.pulse_length,
            "starts": list(cfg.pulse_starts),
        }
    if cond in ("shift", "lag"):
        spec["shift"] = {"step": cfg.shift_step}
    return spec


QUICK = {
    "tasks": ["math"],
    "motifs": ["C1", "I1"],
    "seeds": [0, 1],
    "pilot_seeds": [100, 101],
    "steps": 8,
    "eval_every": 2,
    "n_probe": 8,
    "n_test": 8,
    "pulse_starts": [2],
    "pulse_length": 2,
    "shift_step": 4,
    "lag_staleness": 2,
    "preset": "micro",
}


def run_name(cond: str, task: str, motif: str, seed: int) -> str:
    return f"{cond}_{task}_{motif}_s{seed}"


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The motif hypotheses study (issue 22 §1).",
        design=StudyConfig,
        quick=QUICK,
        run_name=run_name,
        phases=["pilots", "predict", "runs", "summary"],
        gated="runs",
        default_runs="runs/hypotheses",
        default_out="paper/results/hypotheses_old_testbed",
        steps={
            "predict": "_hypotheses_predict:make_predictions",
            "summary": "_hypotheses_analysis:summarise",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
