"""The wiring read back from real logs with a knock-down of the input agent (issue 29 §4).

The third read-back (``paper/wiring_weights.py``) moved each set by the edges' weight, but in
every run the input agent X is competent (> 0.9) from step ~40 to the end: a Hill term of X is
then a constant, the sign of an edge out of X only scales a rate, and the fit could not tell
activation with a high threshold from repression with a low one (16 types within 5 elpd). Here
each set adds a run in which X is knocked down while its targets are still learning: a
spurious-reward pulse on X alone (``task.spurious.roles [X]``, mode ``flip``) drives A_X down
and lets it recover, so an activated target slows during the dip and a repressed one speeds up.
The fit knows each run's pulse windows and the roles they hit (``calibrate fit --pulses``:
during a flip pulse a node's learning target was 0 instead of 1, the law of that time;
``paper/wiring_floor.py`` refits these sets with today's), its edge weights
(``--edge-weights``) and the data path (``--pipeline X->Y,Y->Z``).

Design (``config.json``, stored before any of its runs; a design pilot — C2, set 0's seed
3002, the same pulse — was trained and looked at first to see that a pulse on X moves A_X; it
is not data):

- ``wiring_types`` x ``wiring_sets`` sets at the testbed's default configuration (as the third
  read-back: ``task``, tiny base, coupling edges, ``rl.lr`` ``lr``, ``steps`` steps,
  evaluations every ``eval_every``), AND gates. Each set holds three runs: the third
  read-back's reference ``w = 0`` and its ``w = 0.9`` run of the same type and set (reused
  from ``reuse_from``, unchanged), and a new ``w = 0.9`` run with a pulse on X at step
  ``pulse_start`` for ``pulse_length`` steps (seed ``3000 + 10 set + 3``, the same in every
  type; none shared with earlier runs).
- Each set fitted once: ``calibrate fit --motif auto --gate AND --method laplace
  --edge-weights --pulses --pipeline X->Y,Y->Z`` (16 types ranked, as before).
- Measures and goal as issue 29 §4 states them (``_wiring_read``); the three earlier
  read-backs' numbers are quoted beside them (``earlier``).

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``.

Usage: python -m paper.wiring_pulses [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_pulses] [--out paper/results/wiring_pulses] [--workers 2]
       [--code DIR] [--quick]
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from paper._study import study_main

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
    #: The stored design's field, frozen with it (run as ``python -m paper.wiring_pulses``).
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
    from paper.wiring_weights import EARLIER

    weights = ROOT / "paper" / "results" / "wiring_weights" / "summary.json"
    return readback_summary(cfg, runs, out, {**EARLIER, "weight_family": weights})


QUICK = {"steps": 8, "eval_every": 2, "n_probe": 8, "n_test": 8, "preset": "micro",
         "pulse_start": 2, "pulse_length": 3, "wiring_types": ["C2"], "wiring_sets": [0],
         "reuse_from": None}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with a knock-down of X per set (issue 29 §4).",
        design=PulseDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_pulses",
        default_out="paper/results/wiring_pulses",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper.wiring_pulses:fit_phase",
            "summary": "paper.wiring_pulses:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
