"""The predict-first forecast experiment on the testbed (issue 31 §4): does the motif model,
fitted on a few pilot runs, forecast held-out real runs better than a practitioner's
baselines fitted on the same pilots, inside the pilots' range and beyond it?

Design (fixed before any run; stored in ``<out>/config.json``; the grid was placed by five
probe runs at seed 99, not a study seed, summarised in the design's ``probes``: on the
testbed the collapse boundary lies between lr 1.6e-2 and 6.4e-2 at lag 0 and below 1.6e-2 at
lag 8, so the grid spans 4e-3 to 6.25e-2 and the pilots never see lag 8 or the top lr):

- The testbed's default run (C1-AND, ``math``, tiny base, 200 steps, evaluation every 10),
  over three knobs: ``rl.lr`` x ``rl.staleness`` x ``third`` (``rl.lr_scale.X``: the input
  role's learning-rate multiplier, which every edge of the testbed passes on); every setting
  at ``seeds``.
- ``pilots`` (grid index triples, <= 25 % of the settings) are trained and fitted first
  (``calibrate fit`` with the knob schema's default links of the three knobs); the forecasts
  of every held-out setting — the model's one-new-run forecast and mean curve, the nearest
  pilot, a Gaussian process over the knobs, a Gaussian-process regime classifier — are
  stored in ``predictions.json`` (once, with their time) before any held-out run starts.
- Splits of the held-out settings, fixed by the design: ``interpolation`` (every knob inside
  the pilots' range) and ``extrapolation`` (at least one knob beyond it).
- ``summary``: every held-out run labelled by the one collapse rule for real runs, and the
  scores of :mod:`_forecast_report` per split and method (regime accuracy with Wilson
  intervals, 50/90 % coverage, CRPS, log score, PIT, collapse-boundary error), plus ScaleRL's
  sigmoid fitted to each held-out run's own first ``prefix`` steps (it sees part of the run).

Phases (each resumable): ``restore`` (copies the archived logs of finished runs from
``<out>/runs`` into ``--runs`` where missing), ``pilots``, ``fit``, ``predict``, ``heldout``
(refused until ``predictions.json`` exists), ``summary``; ``predict`` and ``summary`` archive
every finished run's log under ``<out>/runs``.

Usage: python paper/forecast_study.py [--phase restore|pilots|fit|predict|heldout|summary|all]
       [--runs runs/forecast] [--out paper/results/forecast] [--workers 2] [--quick]
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "paper"))

from _study import run_config, study_main  # noqa: E402

#: (lr, staleness, third knob's value, seed)
Job = tuple[float, int, float, int]


@dataclasses.dataclass
class ForecastDesign:
    """The experiment's fixed design (see the module docstring)."""

    design: int = 1
    task: str = "math"
    motif: str = "C1"
    gate: str = "AND"
    preset: str = "tiny"
    steps: int = 200
    eval_every: int = 10
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1])
    lrs: list[float] = dataclasses.field(default_factory=lambda: [4e-3, 1e-2, 2.5e-2, 6.25e-2])
    staleness: list[int] = dataclasses.field(default_factory=lambda: [0, 4, 8])
    third: str = "rl.lr_scale.X"
    third_values: list[float] = dataclasses.field(default_factory=lambda: [0.15, 0.3])
    pilots: list[list[int]] = dataclasses.field(
        default_factory=lambda: [[0, 0, 0], [0, 1, 1], [2, 0, 1], [2, 1, 0], [1, 0, 0], [1, 1, 1]]
    )
    draws: int = 400
    prefix: int = 50
    fit_method: str = "laplace"
    probes: str = (
        "seed 99, C1-AND math tiny 200 steps, rl.lr_scale.X default 0.15: lr 4e-3 at lag 0 and 8 "
        "converged (X wobbling 0.94 -> 0.73 -> 0.86 at lag 8); lr 1.6e-2 converged at lag 0, "
        "X oscillating 0.91 -> 0.33 -> 0.89 then collapsing to 0.00 by step 200 at lag 8; "
        "lr 6.4e-2 at lag 0: X collapsed by step 80 (Y 0.91 -> 0.64, Z converged)"
    )

    def __post_init__(self) -> None:
        for name, vals in (("lrs", self.lrs), ("staleness", self.staleness),
                           ("third_values", self.third_values)):  # fmt: skip
            if list(vals) != sorted(vals) or len(set(vals)) != len(vals) or min(vals) < 0:
                raise ValueError(f"{name} must be ascending, distinct and >= 0")
        cells = set(self.cells())
        pil = [tuple(p) for p in self.pilots]
        if not set(pil) <= cells or len(set(pil)) != len(pil) or 4 * len(pil) > len(cells):
            raise ValueError("pilots must be distinct grid cells, at most 25 % of the grid")

    def cells(self) -> list[tuple[int, int, int]]:
        """Every grid cell (lr, staleness, third knob) as index triples."""
        dims = (len(self.lrs), len(self.staleness), len(self.third_values))
        return list(itertools.product(*(range(d) for d in dims)))

    def setting(self, cell: tuple[int, int, int]) -> dict[str, float]:
        """The training fields of a cell."""
        i, j, k = cell
        return {"rl.lr": float(self.lrs[i]), "rl.staleness": int(self.staleness[j]),
                self.third: float(self.third_values[k])}  # fmt: skip

    def split(self, cell: tuple[int, int, int]) -> str:
        """``pilot``, ``interpolation`` (inside the pilots' range on every knob) or
        ``extrapolation`` (beyond it on at least one)."""
        if list(cell) in [list(p) for p in self.pilots]:
            return "pilot"
        inside = all(min(p[d] for p in self.pilots) <= cell[d] <= max(p[d] for p in self.pilots)
                     for d in range(3))  # fmt: skip
        return "interpolation" if inside else "extrapolation"

    def cell_of(self, job: Job) -> tuple[int, int, int]:
        lr, k, x, _ = job
        return (self.lrs.index(lr), self.staleness.index(k), self.third_values.index(x))

    def jobs(self, phase: str) -> list[Job]:
        """The runs of a training phase (``pilots`` or ``heldout``)."""
        if phase not in ("pilots", "heldout"):
            raise ValueError(f"not a training phase: {phase!r}")
        want = (lambda c: c == "pilot") if phase == "pilots" else (lambda c: c != "pilot")
        return [(self.lrs[i], self.staleness[j], self.third_values[k], s)
                for s in self.seeds for (i, j, k) in self.cells()
                if want(self.split((i, j, k)))]  # fmt: skip

    def train_config(self, lr: float, k: int, x: float, seed: int) -> dict[str, Any]:
        """The llm_runs config of one run."""
        rl: dict[str, Any] = {"lr": lr, "staleness": k}
        section, _, role = self.third.partition(".lr_scale.")
        if section != "rl" or not role:
            raise ValueError(f"third must be rl.lr_scale.ROLE, got {self.third!r}")
        rl["lr_scale"] = {role: x}
        net = {"motif": self.motif, "gate": self.gate}
        return run_config(self, network=net, rl=rl, seed=seed, name=run_name(lr, k, x, seed))


def run_name(lr: float, k: int, x: float, seed: int) -> str:
    """A run's folder name."""
    return f"lr{lr:g}_k{k}_x{x:g}_s{seed}"


QUICK = {"seeds": [0], "lrs": [1e-3, 4e-3, 1.6e-2], "staleness": [0, 2],
         "third_values": [0.15, 0.3], "pilots": [[0, 0, 0], [1, 1, 1], [1, 0, 0]],
         "preset": "micro", "steps": 12, "eval_every": 3, "draws": 32, "prefix": 9}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The predict-first forecast experiment on the testbed (issue 31 §4).",
        design=ForecastDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "pilots", "fit", "predict", "heldout", "summary"],
        gated="heldout",
        default_runs="runs/forecast",
        default_out="paper/results/forecast",
        steps={
            "restore": "_testbed_analysis:restore_phase",
            "fit": "_forecast_study:fit_phase",
            "predict": "_forecast_study:predict_phase",
            "summary": "_forecast_study:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
