"""The library of ``python -m paper.archive.wiring_pulses`` (its design, phases and summary; the
driver, paper/archive/wiring_pulses.py, states the design): kept apart so that other studies of
its family import this helper, never the study."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

Job = tuple[str, int, str]  # (motif, set, kind): kind "w0", "w0.9" or "pulse"
KINDS = ("w0", "w0.9", "pulse")


@dataclasses.dataclass
class PulseDesign:
    """The study's fixed design (see the module docstring)."""

    task: str = "math"
    preset: str = "tiny"
    steps: int = 200
    eval_every: int = 10
    n_probe: int = 64
    n_test: int = 128
    lr: float = 1e-3
    weight: float = 0.9
    pulse_start: int = 30
    pulse_length: int = 30
    pulse_role: str = "X"
    wiring_types: list[str] = dataclasses.field(default_factory=lambda: ["C1", "I1", "C2", "I2"])
    wiring_sets: list[int] = dataclasses.field(default_factory=lambda: [0, 1])
    #: Where the w = 0 and w = 0.9 runs of each set are read (the third read-back's archive);
    #: None: they are trained here too (``--quick``).
    reuse_from: str | None = "paper/results/wiring_weights/runs"
    pipeline: str = "X->Y,Y->Z"
    goal: str = (
        "issue 29 §4: the truth always first or indistinguishable from the first, no "
        "identified sign ever wrong, >= 2 of the 3 edge signs identified in most sets"
    )
    #: The stored design's field, frozen with it (now ``python -m paper.archive.wiring_pulses``).
    command: str = "python paper/wiring_pulses.py"

    def sets(self) -> dict[str, list[Job]]:
        """The three runs of each set, by its name ``<motif>_set<k>``."""
        return {f"{m}_set{k}": [(m, k, kind) for kind in KINDS]
                for m in self.wiring_types for k in self.wiring_sets}  # fmt: skip

    def jobs(self, phase: str) -> list[Job]:
        """The runs this study trains: the pulse runs (and the reused ones without
        ``reuse_from``)."""
        if phase != "wiring":
            raise ValueError(f"not a training phase: {phase!r}")
        return [j for js in self.sets().values() for j in js
                if j[2] == "pulse" or self.reuse_from is None]  # fmt: skip

    def train_config(self, motif: str, k: int, kind: str) -> dict[str, Any]:
        """The llm_runs config of one run (the reused kinds as the third read-back's)."""
        w = 0.0 if kind == "w0" else self.weight
        task: dict[str, Any] = {"name": self.task, "n_probe": self.n_probe, "n_test": self.n_test}
        if kind == "pulse":
            task["spurious"] = {"starts": [self.pulse_start], "length": self.pulse_length,
                                "mode": "flip", "roles": [self.pulse_role]}  # fmt: skip
        return {
            "task": task,
            "model": {"preset": self.preset},
            "network": {"motif": motif, "gate": "AND", "default_weight": w},
            "rl": {"lr": self.lr},
            "steps": self.steps,
            "eval_every": self.eval_every,
            "ckpt_every": 50 if self.steps >= 100 else self.eval_every,
            "seed": 3000 + 10 * k + {"w0": 0, "w0.9": 2, "pulse": 3}[kind],
            "threads": 1,
            "name": run_name(motif, k, kind),
        }

    def run_path(self, runs: Path, job: Job) -> Path:
        """Where a set's run is read: the reused archive, or this study's runs."""
        if job[2] != "pulse" and self.reuse_from is not None:
            return ROOT / self.reuse_from / run_name(*job)
        return runs / run_name(*job)


def run_name(motif: str, k: int, kind: str) -> str:
    return f"{motif}_set{k}_{'pulseX_w0.9' if kind == 'pulse' else kind}"


def fit_phase(cfg: PulseDesign, runs: Path, out: Path, names: list[str] | None = None) -> None:
    """Fit every set (of ``names``, default all) whose runs have all finished (a set with a
    ``selection.json`` is kept)."""
    from calibrate import fit_runs
    from paper._study_runs import run_curves

    for name, jobs in cfg.sets().items():
        if names is not None and name not in names:
            continue
        fit, paths = out / "wiring" / name, [cfg.run_path(runs, j) for j in jobs]
        if (fit / "selection.json").is_file():
            continue
        if not all((p / "manifest.json").is_file() and run_curves(p) is not None for p in paths):
            print(f"  {name}: runs not finished, skipped", flush=True)
            continue
        args = ["--motif", "auto", "--gate", "AND", "--method", "laplace", "--edge-weights",
                "--pulses", "--pipeline", cfg.pipeline]  # fmt: skip
        fit_runs(paths, fit, args=args, log=runs / "logs" / f"fit_{name}.log")
        print(f"  {name}: fitted", flush=True)


def summary_phase(cfg: PulseDesign, runs: Path, out: Path) -> dict[str, Any]:
    """``summary.json`` and ``table.md`` from the sets fitted so far; this study's finished
    runs archived into ``out/runs``; the earlier read-backs quoted beside them."""
    from paper._wiring_read import readback_summary
    from paper._wiring_weights import EARLIER

    weights = ROOT / "paper" / "results" / "wiring_weights" / "summary.json"
    return readback_summary(cfg, runs, out, {**EARLIER, "weight_family": weights})


QUICK = {"steps": 8, "eval_every": 2, "n_probe": 8, "n_test": 8, "preset": "micro",
         "pulse_start": 2, "pulse_length": 3, "wiring_types": ["C2"], "wiring_sets": [0],
         "reuse_from": None}  # fmt: skip
