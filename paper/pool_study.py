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
       [--runs runs/pool] [--out paper/results/pool] [--workers 2] [--code DIR] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _subproc import call_logged  # noqa: E402

from simulate._io import write_json  # noqa: E402


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


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _train(cfg: StudyConfig, job: tuple[str, str, int, int], runs: Path, code: str | None) -> str:
    """Train (or resume, or skip) one run; returns its folder name."""
    name = run_name(*job)
    out = (runs / name).resolve()
    man = out / "manifest.json"
    if man.is_file() and json.loads(man.read_text()).get("status") in ("finished", "diverged"):
        return name
    conf = (runs / "configs" / f"{name}.json").resolve()
    write_json(conf, cfg.train_config(*job))
    args = [sys.executable, "-m", "llm_runs", "train", "--out", str(out), "--no-progress"]
    args += ["--resume"] if man.is_file() else ["--config", str(conf)]
    call_logged(args, runs / "logs" / f"{name}.log", cwd=code, what=f"training {name}")
    return name


def train_phase(cfg: StudyConfig, phase: str, runs: Path, workers: int, code: str | None) -> None:
    """Train every run of ``phase``, ``workers`` at a time, printing progress."""
    jobs = cfg.jobs(phase)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        futs = [ex.submit(_train, cfg, j, runs, code) for j in jobs]
        for i, f in enumerate(futs, 1):
            print(f"  [{i}/{len(jobs)}] {f.result()}  ({time.time() - t0:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The Pool-of-Agents study (issue 20 §3).")
    ap.add_argument("--phase", default="all",
                    choices=["single", "predict", "pool", "summary", "all"])  # fmt: skip
    ap.add_argument("--runs", default="runs/pool")
    ap.add_argument("--out", default="paper/results/pool")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--code", default=None, help="train with the llm_runs of this source tree")
    ap.add_argument("--quick", action="store_true", help="toy sizes (micro base), for tests")
    a = ap.parse_args(argv)
    if a.workers < 1:
        print(f"error: --workers must be >= 1, got {a.workers}", file=sys.stderr)
        return 2
    if a.code is not None and not (Path(a.code) / "llm_runs").is_dir():
        print(f"error: --code {a.code} is not a source tree with llm_runs/", file=sys.stderr)
        return 2
    cfg = StudyConfig(**QUICK) if a.quick else StudyConfig()
    runs, out = Path(a.runs), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stored = out / "config.json"
    if stored.is_file():
        if json.loads(stored.read_text()) != dataclasses.asdict(cfg):
            print(f"error: {stored} holds another study design", file=sys.stderr)
            return 2
    else:
        write_json(stored, dataclasses.asdict(cfg))
    phases = ["single", "predict", "pool", "summary"] if a.phase == "all" else [a.phase]
    if phases == ["pool"] and not (out / "predictions.json").is_file():
        msg = "the simulator's predictions are stored before the pool runs (run --phase predict)"
        print(f"error: {out / 'predictions.json'} is missing: {msg}", file=sys.stderr)
        return 2
    for ph in phases:
        print(f"== {ph} ({_now()})", flush=True)
        if ph in ("single", "pool"):
            train_phase(cfg, ph, runs, a.workers, a.code)
        elif ph == "predict":
            from _pool_analysis import make_predictions

            make_predictions(cfg, runs, out)
        else:
            from _pool_analysis import summarise

            summarise(cfg, runs, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
