"""The motif hypotheses study's fixed design (driver: ``python -m paper.hypotheses_study``,
stated there): its runs, their configs and folder names; the test runs and task sections
the testbed's hypotheses study (``python -m paper.hypotheses_testbed``) reuses."""

from __future__ import annotations

import dataclasses
from typing import Any

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
