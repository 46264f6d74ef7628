"""The configuration of the main job, ``python -m calibrate demo`` (torch-free).

Pilot runs over two training knobs (``rl.lr`` and ``rl.staleness``) → a fit of the
competence model with every candidate motif, linked to the knobs → motif selection →
a recommendation over a search space → one confirmation run at the recommended setting →
a report comparing the forecast with what the run did.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from llm_runs.knobs import hierarchy_links
from simulate.common import ConfigError
from simulate.spec import MOTIFS

from .._objective import check_objective

__all__ = ["QUICK", "DemoConfig", "pilot_name"]


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """What the demo trains, fits and searches (validated; round-trips JSON).

    Attributes:
        preset: Base model preset (``tiny``: 0.8M parameters, pretrained once and cached).
        task: Task family of every agent.
        motifs: Candidate motifs of the selection (the pilots are wired as the first).
        gate: Gate of the last agent (``AND``/``OR``).
        seed: Seed of the pilots (the confirmation run keeps the recommended config's).
        pilot_lrs: The two learning rates of the pilots (the grid's corners).
        pilot_staleness: The two policy lags (optimizer steps) of the pilots.
        pilot_steps: Optimizer steps of each pilot.
        eval_every: Steps between competence evaluations (every run).
        lr_range: Searched learning-rate range (log scale).
        staleness_choices: Searched policy lags.
        budget_steps: Steps of the recommended (confirmation) run: the forecast horizon.
        risk: Largest acceptable P(oscillating or collapse) of a recommendation.
        target: Level of the objective for "steps to target".
        objective: What ranks the candidates (recommend's ``objective``): ``e2e``
            (default: the end-to-end accuracy, the user's usual target, forecast as the
            product of the agents' final competences; on the testbed's logs that product
            tracks the logged end-to-end accuracy with r = 0.97, see
            :mod:`calibrate._objective`), ``last`` (the output node Z's final competence)
            or an agent's name (the first testbed ranked by the solver ``X``, since its
            critic never learned).
        n_candidates: Candidates predicted by ``recommend`` (Sobol points and choices).
        draws: Posterior draws per prediction.
        workers: Pilot runs trained at once (one CPU thread each).
    """

    preset: str = "tiny"
    task: str = "math"
    motifs: tuple[str, ...] = ("C1", "I1")
    gate: str = "AND"
    seed: int = 0
    pilot_lrs: tuple[float, float] = (1e-3, 1.5e-2)
    pilot_staleness: tuple[int, int] = (0, 8)
    pilot_steps: int = 150
    eval_every: int = 10
    lr_range: tuple[float, float] = (1e-3, 1.5e-2)
    staleness_choices: tuple[int, ...] = (0, 2, 4, 8)
    budget_steps: int = 200
    risk: float = 0.1
    target: float = 0.8
    objective: str = "e2e"
    n_candidates: int = 256
    draws: int = 200
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("motifs", "pilot_lrs", "pilot_staleness", "lr_range", "staleness_choices"):
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)):
                raise ConfigError(f"demo: {name} must be a list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        # an integer field takes an integral number as written (1e1 is 10), as TrainConfig does
        for name in ("seed", "pilot_steps", "eval_every", "budget_steps", "n_candidates",
                     "draws", "workers"):  # fmt: skip
            object.__setattr__(self, name, _integral(getattr(self, name)))
        for name in ("pilot_staleness", "staleness_choices"):
            object.__setattr__(self, name, tuple(_integral(k) for k in getattr(self, name)))
        bad = [m for m in self.motifs if m not in MOTIFS]
        if not self.motifs or bad:
            raise ConfigError(f"demo: motifs must be among {sorted(MOTIFS)}, got {bad or '[]'}")
        if self.gate not in ("AND", "OR"):
            raise ConfigError(f"demo: gate must be AND or OR, got {self.gate!r}")
        for name in ("pilot_lrs", "lr_range"):
            lo_hi = getattr(self, name)
            if len(lo_hi) != 2 or not all(_pos(v) for v in lo_hi) or lo_hi[0] >= lo_hi[1]:
                raise ConfigError(f"demo: {name} must be two increasing numbers > 0, got {lo_hi}")
        for name in ("pilot_staleness", "staleness_choices"):
            ks = getattr(self, name)
            if not ks or not all(_is_int(k) and k >= 0 for k in ks):
                raise ConfigError(f"demo: {name} must be integers >= 0, got {ks}")
        if len(self.pilot_staleness) != 2 or len(set(self.pilot_staleness)) != 2:
            raise ConfigError(
                f"demo: pilot_staleness must be two values, got {self.pilot_staleness}"
            )
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"demo: seed must be an integer >= 0, got {self.seed!r}")
        for name in ("eval_every", "n_candidates", "draws", "workers"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"demo: {name} must be an integer >= 1")
        for name in ("pilot_steps", "budget_steps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 4 * self.eval_every:
                raise ConfigError(
                    f"demo: {name} must be an integer >= 4 x eval_every "
                    f"({4 * self.eval_every}) so that a regime can be judged, got {v!r}"
                )
        check_objective(self.objective, "demo")
        if not (_pos(self.risk) and self.risk <= 1) or not (0 < self.target < 1):
            raise ConfigError("demo: risk must lie in (0, 1] and target in (0, 1)")

    @property
    def pilots(self) -> list[dict[str, Any]]:
        """The pilot settings: every corner of (``pilot_lrs`` x ``pilot_staleness``)."""
        return [
            {"rl.lr": lr, "rl.staleness": k} for lr in self.pilot_lrs for k in self.pilot_staleness
        ]

    def space(self) -> dict[str, Any]:
        """The search space handed to ``python -m calibrate recommend --space``."""
        return {
            "fields": {
                "rl.lr": {"low": self.lr_range[0], "high": self.lr_range[1]},  # the knob's scale
                "rl.staleness": {"choices": list(self.staleness_choices)},
            },
            "budget_steps": self.budget_steps,
            "risk": self.risk,
            "target": self.target,
            "objective": self.objective,
            "n_candidates": self.n_candidates,
            "seed": self.seed,
        }

    def links(self) -> dict[str, Any]:
        """The fit's hierarchy: growth (``rho``) and forgetting (``delta``) linked to both
        knobs (log learning rate, log(1 + staleness))."""
        return hierarchy_links(("rl.lr", "rl.staleness"))  # the knob schema's defaults

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (lists for tuples)."""
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
        }

    @classmethod
    def from_dict(cls, data: Any) -> DemoConfig:
        """Build from a dict (unknown keys are an error)."""
        if not isinstance(data, dict):
            raise ConfigError(f"demo config must be a mapping, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ConfigError(f"demo config: unknown field(s) {extra}; known: {sorted(known)}")
        return cls(**data)


def _integral(v: Any) -> Any:
    """An integral float (``1e1``, ``10.0``) as the int it is; anything else unchanged."""
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pos(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


#: The small sizes of ``--quick`` (a smoke test of every stage, in about two minutes).
QUICK = DemoConfig(
    preset="micro",
    pilot_steps=20,
    eval_every=5,
    budget_steps=20,
    n_candidates=32,
    draws=40,
)


def pilot_name(setting: dict[str, Any]) -> str:
    """Folder name of a pilot run (``OUT/pilots/<name>``)."""
    return f"lr{setting['rl.lr']:g}_k{setting['rl.staleness']}"
