"""The configuration of the main job, ``python -m calibrate demo`` (torch-free).

Pilot runs over two training knobs (``rl.lr`` and ``rl.staleness``), placed in rounds where
the regime is least certain (``design: adaptive``, the default; :mod:`calibrate._pilots`) or
at the corners of a grid (``design: corners``, the earlier demo's) → a fit of the competence
model with every candidate motif, linked to the knobs → motif selection → a recommendation
over a search space → one confirmation run at the recommended setting → a report comparing
the forecast with what the run did.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from llm_runs.knobs import hierarchy_links
from simulate.common import ConfigError
from simulate.spec import MOTIFS, ffl_spec

from .._objective import check_objective
from .._pilots import PilotPlan
from .._space import SearchSpace

__all__ = ["DEMO_QUICK", "QUICK", "DemoConfig", "pilot_name"]


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """What the demo trains, fits and searches (validated; round-trips JSON).

    Attributes:
        preset: Base model preset (``tiny``: 0.8M parameters, pretrained once and cached).
        task: Task family of every agent.
        motifs: Candidate motifs of the selection (the pilots are wired as the first).
        gate: Gate of the last agent (``AND``/``OR``).
        seed: Seed of the pilot design and of the candidates (the pilots train at
            ``pilot_seeds``; the confirmation run keeps the recommended config's seed).
        design: ``adaptive`` (rounds placed where the fit is least sure of the regime,
            within ``pilot_budget`` steps) or ``corners`` (every corner of ``pilot_lrs`` x
            ``pilot_staleness`` at every seed).
        pilot_lr_box: The adaptive design's learning-rate range (log scale): wider than
            ``lr_range``, so that the pilots can find a boundary beyond the searched range.
        pilot_staleness_box: The adaptive design's range of policy lags (log1p scale).
        pilot_seeds: Training seeds of every pilot setting (replicates measure the seed
            spread that a new run's interval carries).
        initial_pilots: Settings of the adaptive design's first round.
        round_size: Settings of each later round.
        pilot_budget: Training steps of all pilots together (adaptive design).
        pilot_lrs: The two learning rates of the corners design.
        pilot_staleness: The two policy lags (optimizer steps) of the corners design.
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
    design: str = "adaptive"
    pilot_lr_box: tuple[float, float] = (1e-3, 4e-2)
    pilot_staleness_box: tuple[int, int] = (0, 12)
    pilot_seeds: tuple[int, ...] = (0, 1)
    initial_pilots: int = 4
    round_size: int = 2
    pilot_budget: int = 1200
    pilot_lrs: tuple[float, float] = (1e-3, 1.5e-2)
    pilot_staleness: tuple[int, int] = (0, 8)
    pilot_steps: int = 100
    eval_every: int = 10
    lr_range: tuple[float, float] = (1e-3, 1.5e-2)
    staleness_choices: tuple[int, ...] = (0, 2, 4, 8)
    budget_steps: int = 150
    risk: float = 0.1
    target: float = 0.8
    objective: str = "e2e"
    n_candidates: int = 256
    draws: int = 200
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("motifs", "pilot_lrs", "pilot_staleness", "lr_range", "staleness_choices",
                     "pilot_lr_box", "pilot_staleness_box", "pilot_seeds"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)):
                raise ConfigError(f"demo: {name} must be a list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        # an integer field takes an integral number as written (1e1 is 10), as TrainConfig does
        for name in ("seed", "pilot_steps", "eval_every", "budget_steps", "n_candidates",
                     "draws", "workers", "initial_pilots", "round_size",
                     "pilot_budget"):  # fmt: skip
            object.__setattr__(self, name, _integral(getattr(self, name)))
        for name in ("pilot_staleness", "staleness_choices", "pilot_staleness_box",
                     "pilot_seeds"):  # fmt: skip
            object.__setattr__(self, name, tuple(_integral(k) for k in getattr(self, name)))
        if self.design not in ("adaptive", "corners"):
            raise ConfigError(f"demo: design must be adaptive or corners, got {self.design!r}")
        bad = [m for m in self.motifs if m not in MOTIFS]
        if not self.motifs or bad:
            raise ConfigError(f"demo: motifs must be among {sorted(MOTIFS)}, got {bad or '[]'}")
        if self.gate not in ("AND", "OR"):
            raise ConfigError(f"demo: gate must be AND or OR, got {self.gate!r}")
        for name in ("pilot_lrs", "lr_range", "pilot_lr_box"):
            lo_hi = getattr(self, name)
            if len(lo_hi) != 2 or not all(_pos(v) for v in lo_hi) or lo_hi[0] >= lo_hi[1]:
                raise ConfigError(f"demo: {name} must be two increasing numbers > 0, got {lo_hi}")
        for name in ("pilot_staleness", "staleness_choices", "pilot_staleness_box", "pilot_seeds"):
            ks = getattr(self, name)
            if not ks or not all(_is_int(k) and k >= 0 for k in ks):
                raise ConfigError(f"demo: {name} must be integers >= 0, got {ks}")
        if len(self.pilot_staleness) != 2 or len(set(self.pilot_staleness)) != 2:
            raise ConfigError(
                f"demo: pilot_staleness must be two values, got {self.pilot_staleness}"
            )
        box = self.pilot_staleness_box
        if len(box) != 2 or box[0] >= box[1]:
            raise ConfigError(f"demo: pilot_staleness_box must be two increasing lags, got {box}")
        if len(set(self.pilot_seeds)) != len(self.pilot_seeds):
            raise ConfigError(f"demo: pilot_seeds repeat a value: {list(self.pilot_seeds)}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"demo: seed must be an integer >= 0, got {self.seed!r}")
        for name in ("eval_every", "n_candidates", "draws", "workers", "initial_pilots",
                     "round_size", "pilot_budget"):  # fmt: skip
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
        nodes = ffl_spec(self.motifs[0], self.gate).nodes  # every FFL preset's: X, Y, Z
        if self.objective not in ("e2e", "last", *nodes):  # before any stage, not after the base
            raise ConfigError(f"demo: objective must be 'e2e', 'last' or an agent of the motifs "
                              f"({', '.join(nodes)}), got {self.objective!r}")  # fmt: skip
        if self.design == "adaptive":
            self.pilot_plan()  # the pilot design's own checks (a budget that covers round 0)
        if not (_pos(self.risk) and self.risk <= 1) or not (0 < self.target < 1):
            raise ConfigError("demo: risk must lie in (0, 1] and target in (0, 1)")

    @property
    def pilots(self) -> list[dict[str, Any]]:
        """The corners design's settings: every corner of (``pilot_lrs`` x
        ``pilot_staleness``)."""
        return [
            {"rl.lr": lr, "rl.staleness": k} for lr in self.pilot_lrs for k in self.pilot_staleness
        ]

    def pilot_plan(self) -> PilotPlan:
        """The adaptive design (:class:`calibrate.PilotPlan`) over the pilot box."""
        box = SearchSpace.from_dict({
            "fields": {
                "rl.lr": {"low": self.pilot_lr_box[0], "high": self.pilot_lr_box[1]},
                "rl.staleness": {"low": self.pilot_staleness_box[0],
                                 "high": self.pilot_staleness_box[1], "integer": True},
            },
            "budget_steps": self.budget_steps, "seed": self.seed,
            "n_candidates": 4 * self.n_candidates,
        })  # fmt: skip
        return PilotPlan(space=box, budget=self.pilot_budget, pilot_steps=self.pilot_steps,
                         seeds=self.pilot_seeds, initial=self.initial_pilots,
                         round_size=self.round_size, eval_every=self.eval_every,
                         candidates=self.n_candidates, draws=min(self.draws, 100))  # fmt: skip

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
    pilot_budget=240,
    eval_every=5,
    budget_steps=20,
    n_candidates=32,
    draws=40,
)


#: :data:`QUICK` under its public name (``calibrate.DEMO_QUICK``).
DEMO_QUICK = QUICK


def pilot_name(setting: dict[str, Any]) -> str:
    """Folder name of a pilot run (``OUT/pilots/<name>``)."""
    return f"lr{setting['rl.lr']:g}_k{setting['rl.staleness']}"
