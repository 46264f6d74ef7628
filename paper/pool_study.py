"""The Pool-of-Agents study (issue 20 §3): does a pool of perturbed agents per role reduce the
variance across seeds and protect against collapse, compared with single-agent GRPO and PPO
at matched rollouts?

Design (fixed before any run; stored in ``config.json``):

- Task ``math``, C1-AND wiring, the tiny base; 32 rollouts per step for every method
  (GRPO: 8 problems x group 4; PPO: 32 x 1 with 2 epochs), ``steps`` optimizer steps,
  evaluation every ``eval_every`` steps.
- Methods: ``grad`` pools of K = 1 (single-agent GRPO), 2, 4, 8 members per role (the 32
  rollouts are split among the members, so rollouts and forward/backward tokens match);
  ``es`` pools of K = 2, 4, 8 (evolution strategies, K antithetic perturbations; no
  backward pass); single-agent ``ppo``.
- Two settings: ``stable`` (rl.lr 1e-3) and ``unstable`` (rl.lr 8e-3, where the input
  agent of single-agent runs collapses, see paper/results/regime_map).
- ``seeds`` seeds per (setting, method, K).

Phases (each resumable; a finished run is never retrained):
``single`` trains K = 1 GRPO and PPO; ``predict`` calibrates the simulator's pool model on
the K = 1 GRPO runs and stores ``predictions.json`` (refused if it exists: predictions are
made once, before the pool runs); ``pool`` trains the pools; ``summary`` writes
``summary.json``, ``table.md`` and ``pool.png``.

Usage: python paper/pool_study.py [--phase single|predict|pool|summary|all]
       [--runs runs/pool] [--out paper/results/pool_old_testbed] [--workers 2] [--code DIR]
       [--quick]
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _study import study_main  # noqa: E402


@dataclasses.dataclass
class StudyConfig:
    """The study's fixed design (see the module docstring)."""

    settings: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"stable": 1e-3, "unstable": 8e-3}
    )
    grad_K: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 4, 8])
    es_K: list[int] = dataclasses.field(default_factory=lambda: [2, 4, 8])
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    steps: int = 60
    eval_every: int = 10
    n_probe: int = 48
    n_test: int = 96
    init_noise: float = 0.01
    es_sigma: float = 0.02
    preset: str = "tiny"

    def jobs(self, phase: str) -> list[tuple[str, str, int, int]]:
        """``(setting, method, K, seed)`` of a training phase (``single`` or ``pool``)."""
        if phase == "single":
            methods = [("grad", 1), ("ppo", 1)]
        else:
            methods = [("es", k) for k in self.es_K] + [("grad", k) for k in self.grad_K if k > 1]
        return [(s, m, k, seed) for seed in self.seeds for s in self.settings for m, k in methods]

    def train_config(self, setting: str, method: str, k: int, seed: int) -> dict[str, Any]:
        """The llm_runs config of one run."""
        lr = self.settings[setting]
        rl: dict[str, Any] = {"algo": "grpo", "batch": 8, "group": 4, "lr": lr}
        if method == "ppo":
            rl = {"algo": "ppo", "batch": 32, "group": 1, "lr": lr}
        return {
            "task": {"name": "math", "n_probe": self.n_probe, "n_test": self.n_test},
            "model": {"preset": self.preset},
            "network": {"motif": "C1", "gate": "AND"},
            "rl": rl,
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": self.eval_every,
            "seed": seed,
            "pool_size": k,
            "pool": {
                "update": "es" if method == "es" else "grad",
                "init_noise": self.init_noise if k > 1 else 0.0,
                "es_sigma": self.es_sigma,
            },
            "threads": 1,
            "name": run_name(setting, method, k, seed),
        }


QUICK = {"settings": {"stable": 1e-3}, "seeds": [0, 1], "steps": 8, "eval_every": 2,
         "n_probe": 8, "n_test": 8, "grad_K": [1, 2], "es_K": [2], "preset": "micro"}  # fmt: skip


def run_name(setting: str, method: str, k: int, seed: int) -> str:
    return f"{setting}_{method}_K{k}_s{seed}"


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The Pool-of-Agents study (issue 20 §3).",
        design=StudyConfig,
        quick=QUICK,
        run_name=run_name,
        phases=["single", "predict", "pool", "summary"],
        gated="pool",
        default_runs="runs/pool",
        default_out="paper/results/pool_old_testbed",
        steps={"predict": "_pool_analysis:make_predictions", "summary": "_pool_analysis:summarise"},
    )


if __name__ == "__main__":
    raise SystemExit(main())
