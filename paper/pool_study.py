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

Usage: python -m paper.pool_study [--phase single|predict|pool|summary|all]
       [--runs runs/pool] [--out paper/results/pool_old_testbed] [--workers 2] [--code DIR]
       [--quick]
"""

from __future__ import annotations

from pathlib import Path

from paper._pool_design import QUICK, StudyConfig, run_name
from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]


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
        steps={
            "predict": "paper._pool_analysis:make_predictions",
            "summary": "paper._pool_analysis:summarise",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
