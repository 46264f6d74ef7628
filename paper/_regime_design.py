"""The regime-map experiment's fixed design (driver: ``python -m paper.regime_map``, stated
there): its grid, pilots and run arguments, and the training of a set of its cells (the
recommendation comparison, ``python -m paper.recommend_bench``, re-runs its grid)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from calibrate import train_runs
from llm_runs.knobs import hierarchy_links


@dataclasses.dataclass(frozen=True)
class MapConfig:
    """The experiment's design; stored as ``config.json`` before anything runs.

    Attributes:
        lrs: Learning rates (``rl.lr``), ascending.
        staleness: Policy lags (``rl.staleness``, optimizer steps), ascending.
        seeds: Training seeds of every setting.
        pilots: Grid cells ``(lr index, staleness index)`` run and fitted first.
        steps: Training steps per run.
        eval_every: Evaluation interval (steps).
        motif, gate, task, preset: Network and base of every run.
        extra: Further ``--set KEY=VALUE`` overrides of every run.
        draws: Posterior draws used by the forecasts.
        boundary_points: Learning rates per staleness row of the forecast boundary scan.
    """

    lrs: tuple[float, ...] = (1e-3, 2.5e-3, 6e-3, 1.5e-2)
    staleness: tuple[int, ...] = (0, 2, 4, 8)
    seeds: tuple[int, ...] = (0, 1)
    pilots: tuple[tuple[int, int], ...] = ((0, 0), (0, 3), (3, 0), (3, 3))
    steps: int = 200
    eval_every: int = 10
    motif: str = "C1"
    gate: str = "AND"
    task: str = "math"
    preset: str = "tiny"
    extra: tuple[str, ...] = ()
    draws: int = 200
    boundary_points: int = 48

    def __post_init__(self) -> None:
        if list(self.lrs) != sorted(self.lrs) or min(self.lrs) <= 0:
            raise ValueError("lrs must be positive and ascending")
        if list(self.staleness) != sorted(self.staleness) or min(self.staleness) < 0:
            raise ValueError("staleness must be >= 0 and ascending")
        cells = {(i, j) for i in range(len(self.lrs)) for j in range(len(self.staleness))}
        pil = [tuple(p) for p in self.pilots]
        if not set(pil) <= cells or len(set(pil)) != len(pil) or len(pil) >= len(cells):
            raise ValueError("pilots must be distinct grid cells, fewer than the grid")
        object.__setattr__(self, "pilots", tuple(pil))

    def cells(self) -> list[tuple[int, int]]:
        """Every grid cell, row-major over (lr, staleness)."""
        return [(i, j) for i in range(len(self.lrs)) for j in range(len(self.staleness))]

    def setting(self, cell: tuple[int, int]) -> dict[str, float]:
        """The training fields of a cell."""
        return {"rl.lr": float(self.lrs[cell[0]]), "rl.staleness": int(self.staleness[cell[1]])}

    def to_dict(self) -> dict[str, Any]:
        return {
            k: list(map(list, v)) if k == "pilots" else v
            for k, v in dataclasses.asdict(self).items()
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MapConfig:
        d = {
            k: tuple(map(tuple, v)) if k == "pilots" else tuple(v) if isinstance(v, list) else v
            for k, v in d.items()
        }
        return cls(**d)


QUICK = MapConfig(
    lrs=(1e-3, 8e-3),
    staleness=(0, 2),
    seeds=(0,),
    pilots=((0, 0), (1, 1)),
    steps=20,
    eval_every=5,
    preset="micro",
    draws=32,
    boundary_points=8,
)


LINKS = hierarchy_links(("rl.lr", "rl.staleness"))  # the knob schema's default links


def run_name(cfg: MapConfig, cell: tuple[int, int], seed: int) -> str:
    s = cfg.setting(cell)
    return f"lr{s['rl.lr']:g}_k{s['rl.staleness']}_s{seed}"


def _new_run(cfg: MapConfig, cell: tuple[int, int], seed: int) -> list[str]:
    """The ``llm_runs train`` arguments of one grid run."""
    s = cfg.setting(cell)
    args = [
        "--no-progress",
        "--motif", cfg.motif, "--gate", cfg.gate, "--task", cfg.task, "--preset", cfg.preset,
        "--steps", str(cfg.steps), "--seed", str(seed), "--eval-every", str(cfg.eval_every),
        "--threads", "1", "--set", f"rl.lr={s['rl.lr']!r}",
        "--set", f"rl.staleness={s['rl.staleness']}",
    ]  # fmt: skip
    for kv in cfg.extra:
        args += ["--set", kv]
    return args


def run_cells(
    cfg: MapConfig, cells: list[tuple[int, int]], runs: Path, workers: int, code: str | None
) -> None:
    """Train (or resume, or keep) every seed of ``cells`` (``code``: source tree to train
    with), on the study loop, one line per run as it ends."""
    jobs = [
        ((runs / run_name(cfg, c, s)).resolve(), _new_run(cfg, c, s))
        for c in cells
        for s in cfg.seeds
    ]
    train_runs(jobs, workers=workers, logs=runs / "logs", desc="train", code=code,
               echo=lambda line: print(line, flush=True))  # fmt: skip
