"""Pool-of-Agents on the testbed where every agent learns (issue 35 §2): does a pool of K
members per role reduce the variance across seeds and protect against collapse, with
gradient pools, evolution strategies at their own learning rate, and PBT-style exploit?

The old testbed's study (``paper/pool_study.py``, ``paper/results/pool_old_testbed/``) is the
record; this one uses the same measures (``_pool_analysis``: variance across seeds with chi-square
intervals, collapse by the one rule for real runs, final end-to-end accuracy, wall time).

Design (fixed before any run; ``config.json``):

- The testbed's ``math`` task, C1-AND, tiny base, coupling edges, ``steps`` steps,
  evaluations every ``eval_every`` on ``n_probe`` probes and ``n_test`` problems; the same
  rollouts per step for every method (the batch is split among a pool's members).
- Two settings: ``stable``, the testbed's default (``rl.lr`` 1e-3); ``unstable``,
  ``rl.lr`` 1e-2 with ``rl.staleness`` 4 and ``rl.lr_scale.X`` 0.3, where one of the forecast
  study's two single-agent runs collapsed (``paper/results/forecast``; chosen from those
  committed runs before any pool run).
- Methods: ``grad`` pools of K = 1 (the single agent), 2, 4, 8; ``pbt``: grad pools with an
  exploit/explore step every ``exploit_every`` steps; ``es`` pools of K = 2, 4, 8 at their
  own learning rate: ``rl.lr`` times the ratio chosen by the ``scan`` phase.
- ``scan``: ES K = 2 in the stable setting at each ratio of ``es_ratios`` x ``scan_seeds``;
  the ratio with the highest mean final end-to-end accuracy (ties: the smaller) is written
  to ``scan.json`` once, before any pool run.
- ``seeds`` (>= 10) seeds per cell.
- Revision 1 (``revisions``): ES runs on-policy, staleness 0, in the unstable setting too.
- ``predict``: the simulator's pool model (``simulate.pool_variance``) calibrated on each
  setting's K = 1 runs predicts every grad and pbt cell's variance and collapse fraction
  (``predictions.json``, once, before the pool runs); ES has no simulator counterpart and
  is not predicted.

- Reported (rules in ``_pool_compare``, stated before the pool runs): K = 1 against K = 8
  per setting and method (the variance ratio's 95 % F interval, resolved when it excludes
  1; collapse rates by Fisher's exact test), every prediction checked against its cell
  (right when inside the measured 95 % interval), and the stability-compute trade-off
  (variance and collapse against adapter memory and wall time per step, ``tradeoff.png``).

Phases (each resumable): ``restore``, ``scan``, ``choose``, ``single``, ``predict``, ``pool``,
``summary`` (``summary.json``, ``table.md``, ``compare.md``, ``pool.png``, ``tradeoff.png``).

Usage: python -m paper.pool_testbed
       [--phase restore|scan|choose|single|predict|pool|summary|all]
       [--runs runs/pool_testbed] [--out paper/results/pool] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar

from paper._study import study_main

ROOT = Path(__file__).resolve().parents[1]

Job = tuple[str, str, int, int]  # (setting, method, K, seed)

#: The design's one revision, made before any run it changes had trained a step.
REVISION_1 = (
    "2026-12-04 23:10 UTC, before any unstable ES run had trained a step: every ES run of "
    "the unstable setting had stopped at its start, because llm_runs refuses a staleness "
    "with evolution strategies (they are on-policy: each member is scored on fresh "
    "rollouts of its own weights). ES runs train with staleness 0 in every setting; the "
    "unstable setting keeps its learning rate and X's learning-rate scale for ES. No other "
    "cell changes; ES is not predicted by the simulator, so no prediction is affected."
)


@dataclasses.dataclass
class PoolDesign:
    """The study's fixed design (see the module docstring)."""

    task: str = "math"
    settings: dict[str, dict[str, float]] = dataclasses.field(
        default_factory=lambda: {
            "stable": {"lr": 1e-3, "staleness": 0},
            "unstable": {"lr": 1e-2, "staleness": 4, "lr_scale.X": 0.3},
        }
    )
    grad_K: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 4, 8])
    pool_K: list[int] = dataclasses.field(default_factory=lambda: [2, 4, 8])
    seeds: list[int] = dataclasses.field(default_factory=lambda: list(range(10)))
    steps: int = 200
    eval_every: int = 10
    n_probe: int = 64
    n_test: int = 128
    preset: str = "tiny"
    init_noise: float = 0.01
    es_sigma: float = 0.02
    es_ratios: list[float] = dataclasses.field(default_factory=lambda: [1.0, 4.0, 16.0, 64.0])
    scan_seeds: list[int] = dataclasses.field(default_factory=lambda: [100, 101])
    exploit_every: int = 20
    exploit_frac: float = 0.25
    #: ES runs on-policy (``rl.staleness`` 0) in every setting (revision 1).
    es_on_policy: bool = True
    revisions: list[str] = dataclasses.field(default_factory=lambda: [REVISION_1])

    def bind(self, out: Path) -> None:
        """Where the results live (``scan.json`` decides ES's learning rate)."""
        self._out = Path(out)

    @property
    def es_ratio(self) -> float:
        """ES's learning rate over the setting's, from ``scan.json``."""
        path = self._out / "scan.json"
        if not path.is_file():
            raise RuntimeError(f"{path} is missing: run --phase choose after the scan runs")
        return float(json.loads(path.read_text())["ratio"])

    def jobs(self, phase: str) -> list[Job]:
        """``(setting, method, K, seed)`` of a training phase, seed by seed."""
        if phase == "scan":
            return [("stable", f"es{r:g}", 2, s) for s in self.scan_seeds for r in self.es_ratios]
        if phase == "single":
            return [(st, "grad", 1, s) for s in self.seeds for st in self.settings]
        if phase == "pool":
            methods = [(m, k) for k in self.pool_K for m in ("grad", "pbt", "es")]
            return [(st, m, k, s) for s in self.seeds for st in self.settings for m, k in methods]
        raise ValueError(f"not a training phase: {phase!r}")

    command: str = dataclasses.field(default="python -m paper.pool_testbed", init=False, repr=False)
    #: The single agent's name in the summary: the testbed trains REINFORCE (not a field of
    #: the stored design).
    single_label: ClassVar[str] = "REINFORCE (single)"

    def training_phases(self) -> tuple[str, ...]:
        """The phases whose runs the summary reads."""
        return ("single", "pool")

    def run_name(self, setting: str, method: str, k: int, seed: int) -> str:
        return run_name(setting, method, k, seed)

    def train_config(self, setting: str, method: str, k: int, seed: int) -> dict[str, Any]:
        """The llm_runs config of one run."""
        knobs = dict(self.settings[setting])
        lr = float(knobs.pop("lr"))
        if method.startswith("es"):
            lr *= float(method[2:]) if method != "es" else self.es_ratio
        staleness = int(knobs.pop("staleness", 0))
        if method.startswith("es") and self.es_on_policy:
            staleness = 0  # llm_runs refuses a stale ES update (revision 1)
        rl: dict[str, Any] = {"lr": lr, "staleness": staleness}
        for key, v in knobs.items():  # lr_scale.ROLE
            rl.setdefault("lr_scale", {})[key.split(".", 1)[1]] = v
        pool: dict[str, Any] = {
            "update": "es" if method.startswith("es") else "grad",
            "init_noise": self.init_noise if k > 1 else 0.0,
            "es_sigma": self.es_sigma,
        }
        if method == "pbt":
            pool.update(exploit_every=self.exploit_every, exploit_frac=self.exploit_frac)
        return {
            "task": {"name": self.task, "n_probe": self.n_probe, "n_test": self.n_test},
            "model": {"preset": self.preset},
            "network": {"motif": "C1", "gate": "AND"},
            "rl": rl,
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": 50 if self.steps >= 100 else self.eval_every,
            "seed": seed,
            "pool_size": k,
            "pool": pool,
            "threads": 1,
            "name": run_name(setting, method, k, seed),
        }


QUICK = {
    "settings": {"stable": {"lr": 1e-3, "staleness": 0}},
    "grad_K": [1, 2],
    "pool_K": [2],
    "seeds": [0, 1],
    "steps": 8,
    "eval_every": 2,
    "n_probe": 8,
    "n_test": 8,
    "preset": "micro",
    "es_ratios": [1.0, 4.0],
    "scan_seeds": [100],
    "exploit_every": 4,
}


def run_name(setting: str, method: str, k: int, seed: int) -> str:
    return f"{setting}_{method}_K{k}_s{seed}"


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="Pool-of-Agents on the testbed where every agent learns (issue 35 §2).",
        design=PoolDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "scan", "choose", "single", "predict", "pool", "summary"],
        gated="pool",
        default_runs="runs/pool_testbed",
        default_out="paper/results/pool",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "choose": "paper._pool_testbed:choose_phase",
            "predict": "paper._pool_testbed:predict_phase",
            "summary": "paper._pool_testbed:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
