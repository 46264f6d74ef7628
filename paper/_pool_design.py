"""The Pool-of-Agents study's fixed design (driver: ``python -m paper.pool_study``, stated
there): its runs, their configs and folder names."""

from __future__ import annotations

import dataclasses
from typing import Any


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
