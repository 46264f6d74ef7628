"""The predict-first forecast experiment's fixed design (driver: ``python -m
paper.forecast_study``, stated there): grid, pilots, held-out runs and folder names; the
later forecast tests start from it."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from paper._study import run_config

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
