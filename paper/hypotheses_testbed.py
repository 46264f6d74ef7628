"""The motif hypotheses on the testbed where every agent learns (issue 35 §1): the same
pre-stated measures and tests as ``paper/hypotheses_study.py`` (the old testbed's record,
``paper/results/hypotheses_old_testbed/``), re-run where the edges into Z act.

- **H1, C1 filters spurious reward.** Under spurious-reward pulses (reward flips), C1-AND's
  end-to-end accuracy dips less than the other seven FFL types' (measure ``dip``).
- **H2, I1 adapts faster.** After a distribution shift, I1-AND recovers end-to-end accuracy
  faster than C1-AND (measure ``recovery``); at a lagged setting chosen from the model's
  forecast map, I1 oscillates where C1 does not.

Design (fixed before any run; ``config.json``; the measures and tests are
``_hypotheses_metrics``' and ``_hypotheses_analysis``', unchanged):

- The testbed's default run (``paper/testbed_study.py``: three-step tasks ``math`` and
  ``rag``, tiny base, coupling edges, ``rl.lr`` 1e-3, 200 steps, evaluations every 10 on 64
  probes per role and 128 end-to-end problems), all 8 FFL types x AND.
- ``pulse``: reward flips of ``pulse_length`` steps at ``pulse_starts`` (after every role has
  learned: end-to-end accuracy plateaus from step ~80); ``shift``: the harder distribution
  from ``shift_step`` on.
- **Smallest effect worth reporting** (stated first): ``effect`` = 0.05 of end-to-end
  accuracy on either statistic.
- **Seeds from a power calculation** (phase ``power``, ``power.json``): the measures' spread
  is measured on the testbed's committed unperturbed runs (the 8 types x 5 seeds on ``math``
  and C1's 5 seeds on ``rag``, ``paper/results/testbed/runs``): each measure applied at the
  design's pulse and shift steps to curves without a perturbation (its noise from seeds and
  evaluation), pooled within (task, type). The seeds per group are the fewest that detect
  ``effect`` at ``power`` with the one-sided ``alpha`` of the tests (normal approximation of
  each statistic's variance), within [``min_seeds``, ``max_seeds``].
- **Pilots**: the testbed's committed C1-AND runs at the default config (5 seeds per task,
  the same runs), fitted per task (``calibrate fit``, C1, AND, Laplace).
- **The lagged setting** (phase ``choose``, ``choose.json``): on the ``math`` pilots' fit,
  every candidate ``rl.lr`` x ``rl.staleness`` of the design: the fitted rates scaled by
  ``lr / 1e-3`` (rates per step proportional to the step size), the lag a delay of mean
  ``staleness`` steps (4 Erlang stages), C1 and I1 classified per posterior draw; the
  setting with the largest P(I1 oscillates) - P(C1 oscillates) (ties: the smaller lr, then
  the smaller lag). The ``lag`` condition runs C1 and I1 there under the shift.
- **Predictions** (phase ``predict``, ``predictions.json``, refused once stored; the
  ``runs`` phase is refused without it): per task the model's measures for every type
  (posterior draws, the type's signs; the perturbations as in ``_hypotheses_predict``),
  and each statistic as it will be *measured* on the runs: the model's value plus the
  measured noise of ``power.json`` averaged over the planned seeds (a new-run interval).

Phases (each resumable; a finished run is never retrained): ``restore`` (finished runs from
the committed archive ``out/runs``), ``power``, ``choose``, ``predict``, ``runs``,
``summary`` (``summary.json``, ``table.md``, ``hypotheses.png``; runs archived).

Usage: python -m paper.hypotheses_testbed
       [--phase restore|power|choose|predict|runs|summary|all]
       [--runs runs/hypotheses_testbed] [--out paper/results/hypotheses]
       [--workers 2] [--code DIR] [--quick]
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from paper._hypotheses_design import MOTIFS, run_name, study_jobs, task_spec
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]

Job = tuple[str, str, str, int]  # (condition, task, motif, seed)


@dataclasses.dataclass
class StudyDesign:
    """The study's fixed design (see the module docstring)."""

    testbed: str = "three-step tasks (issue 29), coupling edges"
    tasks: list[str] = dataclasses.field(default_factory=lambda: ["math", "rag"])
    motifs: list[str] = dataclasses.field(default_factory=lambda: list(MOTIFS))
    steps: int = 200
    eval_every: int = 10
    n_probe: int = 64
    n_test: int = 128
    lr: float = 1e-3
    preset: str = "tiny"
    pulse_starts: list[int] = dataclasses.field(default_factory=lambda: [100, 150])
    pulse_length: int = 10
    shift_step: int = 100
    effect: float = 0.05
    alpha: float = 0.05
    power: float = 0.8
    min_seeds: int = 3
    max_seeds: int = 10
    spread_runs: str = "paper/results/testbed/runs"
    pilot_seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    lag_lrs: list[float] = dataclasses.field(default_factory=lambda: [1e-3, 2e-3, 4e-3])
    lag_staleness_choices: list[int] = dataclasses.field(default_factory=lambda: [4, 8, 16])
    lag_motifs: list[str] = dataclasses.field(default_factory=lambda: ["C1", "I1"])
    lag_task: str = "math"

    def bind(self, out: Path) -> None:
        """Where the study's results live (``power.json`` and ``choose.json`` decide the
        seeds and the lagged setting)."""
        self._out = Path(out)

    def _stored(self, name: str, phase: str) -> dict[str, Any]:
        path = self._out / name
        if not path.is_file():
            raise RuntimeError(f"{path} is missing: run --phase {phase} first")
        return json.loads(path.read_text())

    @property
    def seeds(self) -> list[int]:
        """Seeds of every test group, from ``power.json``."""
        return list(range(int(self._stored("power.json", "power")["seeds"])))

    @property
    def lag_lr(self) -> float:
        """``rl.lr`` of the lag condition, from ``choose.json``."""
        return float(self._stored("choose.json", "choose")["chosen"]["rl.lr"])

    @property
    def lag_staleness(self) -> int:
        """``rl.staleness`` of the lag condition, from ``choose.json``."""
        return int(self._stored("choose.json", "choose")["chosen"]["rl.staleness"])

    def pilot_runs(self, task: str) -> list[Path]:
        """The committed C1-AND runs of ``task`` at the default config (the pilots)."""
        lr = f"{self.lr:g}"
        return [ROOT / self.spread_runs / f"{task}_C1_lr{lr}_s{s}" for s in self.pilot_seeds]

    def jobs(self, phase: str) -> list[Job]:
        """``(condition, task, motif, seed)`` of the ``runs`` phase, seed by seed."""
        if phase != "runs":
            raise ValueError(f"not a training phase: {phase!r}")
        return study_jobs(self)  # the old study's runs and order

    def run_name(self, cond: str, task: str, motif: str, seed: int) -> str:
        return run_name(cond, task, motif, seed)

    def train_config(self, cond: str, task: str, motif: str, seed: int) -> dict[str, Any]:
        """The llm_runs config of one run."""
        lag = cond == "lag"
        return {
            "task": task_spec(self, cond, task),
            "model": {"preset": self.preset},
            "network": {"motif": motif, "gate": "AND"},
            "rl": {
                "lr": self.lag_lr if lag else self.lr,
                "staleness": self.lag_staleness if lag else 0,
            },
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": 50 if self.steps >= 100 else self.eval_every,
            "seed": seed,
            "threads": 1,
            "name": run_name(cond, task, motif, seed),
        }


QUICK = {
    "tasks": ["math"],
    "motifs": ["C1", "I1"],
    "steps": 8,
    "eval_every": 2,
    "n_probe": 8,
    "n_test": 8,
    "preset": "micro",
    "pulse_starts": [2],
    "pulse_length": 2,
    "shift_step": 4,
    "max_seeds": 2,
    "min_seeds": 2,
    "pilot_seeds": [0, 1],
    "lag_lrs": [1e-3, 4e-3],
    "lag_staleness_choices": [2],
}


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The motif hypotheses on the testbed where every agent learns (issue 35).",
        design=StudyDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "power", "choose", "predict", "runs", "summary"],
        gated="runs",
        default_runs="runs/hypotheses_testbed",
        default_out="paper/results/hypotheses",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "power": "paper._hypotheses_testbed:power_phase",
            "choose": "paper._hypotheses_testbed:choose_phase",
            "predict": "paper._hypotheses_testbed:predict_phase",
            "summary": "paper._hypotheses_testbed:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
