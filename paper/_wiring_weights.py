"""The library of ``python -m paper.archive.wiring_weights`` (its design, phases and summary; the
driver, paper/archive/wiring_weights.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

Job = tuple[str, int, int, float]  # (motif, set, index, weight)


@dataclasses.dataclass
class WeightDesign:
    """The study's fixed design (see the module docstring)."""

    task: str = "math"
    preset: str = "tiny"
    steps: int = 200
    eval_every: int = 10
    n_probe: int = 64
    n_test: int = 128
    lr: float = 1e-3
    wiring_types: list[str] = dataclasses.field(default_factory=lambda: ["C1", "I1", "C2", "I2"])
    wiring_sets: list[int] = dataclasses.field(default_factory=lambda: [0, 1])
    weights: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.45, 0.9])
    pipeline: str = "X->Y,Y->Z"
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m paper.archive.wiring_weights``).
    command: str = "python paper/wiring_weights.py"

    def jobs(self, phase: str) -> list[Job]:
        """``(motif, set, index, weight)`` of the training phase, set by set."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        return [(m, k, i, w) for m in self.wiring_types for k in self.wiring_sets
                for i, w in enumerate(self.weights)]  # fmt: skip

    def sets(self) -> dict[str, list[Job]]:
        """The jobs of each set, by its name ``<motif>_set<k>``."""
        out: dict[str, list[Job]] = {}
        for job in self.jobs("wiring"):
            out.setdefault(f"{job[0]}_set{job[1]}", []).append(job)
        return out

    def train_config(self, motif: str, k: int, i: int, w: float) -> dict[str, Any]:
        """The llm_runs config of one run."""
        return {
            "task": {"name": self.task, "n_probe": self.n_probe, "n_test": self.n_test},
            "model": {"preset": self.preset},
            "network": {"motif": motif, "gate": "AND", "default_weight": w},
            "rl": {"lr": self.lr},
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": 50 if self.steps >= 100 else self.eval_every,
            "seed": 3000 + 10 * k + i,
            "threads": 1,
            "name": run_name(motif, k, i, w),
        }


def run_name(motif: str, k: int, i: int, w: float) -> str:
    return f"{motif}_set{k}_w{w:g}"


def fit_phase(cfg: WeightDesign, runs: Path, out: Path) -> None:
    """Fit every set whose runs have all finished (a set with a ``selection.json`` is kept)."""
    from calibrate import fit_runs
    from paper._study_runs import run_curves

    for name, jobs in cfg.sets().items():
        fit, paths = out / "wiring" / name, [runs / run_name(*j) for j in jobs]
        if (fit / "selection.json").is_file():
            continue
        if not all((p / "manifest.json").is_file() and run_curves(p) is not None for p in paths):
            print(f"  {name}: runs not finished, skipped", flush=True)
            continue
        args = ["--motif", "auto", "--gate", "AND", "--method", "laplace", "--edge-weights",
                "--pipeline", cfg.pipeline]  # fmt: skip
        fit_runs(paths, fit, args=args, log=runs / "logs" / f"fit_{name}.log")
        print(f"  {name}: fitted", flush=True)


def summary_phase(cfg: WeightDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` and ``table.md`` from the sets fitted so far; finished runs archived
    into ``out/runs``; the first two read-backs quoted beside them."""
    from paper._wiring_read import readback_summary

    return readback_summary(cfg, runs, out, EARLIER)


#: The first two read-backs (name -> their committed summary).
EARLIER = {
    "lr_family": ROOT / "paper" / "results" / "testbed" / "summary.json",
    "lr_family_with_gate": ROOT / "paper" / "results" / "wiring_pipeline" / "summary.json",
}


QUICK = {"steps": 8, "eval_every": 2, "n_probe": 8, "n_test": 8, "preset": "micro",
         "wiring_types": ["C2"], "wiring_sets": [0], "weights": [0.0, 0.9]}  # fmt: skip
