"""Where to put pilot runs so that they find the regime boundary (torch-free).

A pilot design (:class:`PilotPlan`) spends a budget of training steps in rounds:

* round 0: ``initial`` settings spread over the pilot box (a maximin Latin hypercube whose
  levels include both ends of each field, on each knob's own scale: ``log`` for ``rl.lr``,
  ``log1p`` for ``rl.staleness``), each trained at every seed of ``seeds`` (replicates in
  every round, so a new run's interval carries the seed spread measured between them);
* round r >= 1: a fit of every pilot so far forecasts the regime of ``candidates`` settings
  of the box (labelled the way real runs are, :func:`calibrate.observed_regime_probs`), and
  the ``round_size`` settings whose regime is least certain (the largest entropy of
  P(regime group)), at least ``min_distance`` apart and from every earlier pilot in the
  box's unit coordinates, are trained next;

until the next round would overspend ``budget``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError, to_scale

from .._predict._defaults import DEFAULT_EXTRAPOLATION_SD
from .._space import SearchSpace

__all__ = [
    "PilotPlan",
    "entropy",
    "initial_settings",
    "pick_uncertain",
    "setting_name",
    "unit_coords",
]


def _int(v: Any, name: str, low: int) -> int:
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ConfigError(f"pilots: {name} must be an integer >= {low}, got {v!r}")
    return v


@dataclasses.dataclass(frozen=True)
class PilotPlan:
    """A pilot design (validated; :meth:`to_dict`/:meth:`from_dict` round-trip JSON).

    Attributes:
        space: The pilot box: its fields' ranges or choices (``budget_steps``, ``risk`` and
            ``objective`` are not used here; ``seed`` seeds the designs).
        budget: Training steps the pilots may spend in all (every run of every round).
        pilot_steps: Optimizer steps of each pilot run.
        seeds: Training seeds: every pilot setting is trained once at each (>= 2 measure
            the seed spread).
        initial: Settings of round 0.
        round_size: Settings of each later round.
        eval_every: Steps between competence evaluations of a pilot.
        candidates: Settings of the box whose regime each round forecasts.
        min_distance: Smallest distance of a new setting from another pilot setting, in
            the box's unit coordinates (each knob's scale mapped onto [0, 1]).
        draws: Posterior draws per forecast.
        extrapolation_sd: Bend of the links beyond the pilots' range in the forecasts.
    """

    space: SearchSpace
    budget: int
    pilot_steps: int
    seeds: tuple[int, ...] = (0, 1)
    initial: int = 4
    round_size: int = 2
    eval_every: int = 10
    candidates: int = 256
    min_distance: float = 0.15
    draws: int = 100
    extrapolation_sd: float = DEFAULT_EXTRAPOLATION_SD

    def __post_init__(self) -> None:
        if not isinstance(self.space, SearchSpace):
            raise ConfigError("pilots: space must be a SearchSpace")
        for name, low in (("budget", 1), ("pilot_steps", 1), ("initial", 2), ("round_size", 1),
                          ("eval_every", 1), ("candidates", 8), ("draws", 8)):  # fmt: skip
            object.__setattr__(self, name, _int(getattr(self, name), name, low))
        seeds = self.seeds
        if not isinstance(seeds, list | tuple) or not seeds:
            raise ConfigError(f"pilots: seeds must be a non-empty list, got {seeds!r}")
        seeds = tuple(_int(s, "seeds", 0) for s in seeds)
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"pilots: seeds repeat a value: {list(seeds)}")
        object.__setattr__(self, "seeds", seeds)
        if self.pilot_steps < 4 * self.eval_every:
            raise ConfigError(
                f"pilots: pilot_steps must be >= 4 x eval_every ({4 * self.eval_every}) so "
                f"that a regime can be judged, got {self.pilot_steps}"
            )
        if not (isinstance(self.min_distance, int | float) and 0 <= self.min_distance < 1):
            raise ConfigError(f"pilots: min_distance must lie in [0, 1), got {self.min_distance!r}")
        sd = self.extrapolation_sd
        if isinstance(sd, bool) or not isinstance(sd, int | float) or not (0 <= sd < math.inf):
            raise ConfigError(f"pilots: extrapolation_sd must be a finite number >= 0, got {sd!r}")
        if not self.space.searched:
            raise ConfigError("pilots: the box must vary at least one field")
        if self.round_cost(0) > self.budget:
            raise ConfigError(
                f"pilots: the budget ({self.budget} steps) does not cover round 0 "
                f"({self.initial} settings x {len(self.seeds)} seeds x {self.pilot_steps} "
                f"steps = {self.round_cost(0)})"
            )

    def round_cost(self, r: int) -> int:
        """Training steps of round ``r``."""
        n = self.initial if r == 0 else self.round_size
        return n * len(self.seeds) * self.pilot_steps

    @property
    def rounds(self) -> int:
        """Rounds the budget pays for (round 0 included)."""
        spent, r = self.round_cost(0), 1
        while spent + self.round_cost(r) <= self.budget:
            spent += self.round_cost(r)
            r += 1
        return r

    @property
    def spent(self) -> int:
        """Training steps the rounds spend (<= ``budget``)."""
        return sum(self.round_cost(r) for r in range(self.rounds))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (:meth:`from_dict` inverts it)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return d | {"space": self.space.to_dict(), "seeds": list(self.seeds)}

    @classmethod
    def from_dict(cls, data: Any) -> PilotPlan:
        """Build from a dict (``space`` a space mapping; unknown keys are an error)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"pilots: a design must be a mapping, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ConfigError(f"pilots: unknown field(s) {extra}; known: {sorted(known)}")
        if "space" not in data:
            raise ConfigError("pilots: a design needs a space")
        space = data["space"]
        space = space if isinstance(space, SearchSpace) else SearchSpace.from_dict(space)
        return cls(**{**data, "space": space})


def unit_coords(space: SearchSpace, settings: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Settings in the box's unit coordinates ``(S, F)`` over its searched fields: a range
    on its scale mapped onto [0, 1] (beyond the box: outside [0, 1]); choices by their rank
    (numbers by value) over [0, 1]."""
    cols = []
    for f in space.searched:
        vals = [s[f.name] for s in settings]
        if f.choices is not None:
            order = sorted(f.choices, key=lambda c: (not isinstance(c, int | float), c))
            n = max(len(order) - 1, 1)
            if all(isinstance(c, int | float) for c in order):
                x = np.interp([float(v) for v in vals], [float(c) for c in order],
                              np.arange(len(order)) / n, left=np.nan, right=np.nan)  # fmt: skip
                lo, hi = float(order[0]), float(order[-1])
                span = (hi - lo) or 1.0
                x = np.where(np.isnan(x), (np.asarray(vals, float) - lo) / span, x)
            else:
                x = np.asarray([order.index(v) / n for v in vals], float)
        else:
            lo = float(to_scale(f.scale, float(f.low)))  # type: ignore[arg-type]
            hi = float(to_scale(f.scale, float(f.high)))  # type: ignore[arg-type]
            x = (np.asarray(to_scale(f.scale, np.asarray(vals, float)), float) - lo) / (hi - lo)
        cols.append(np.asarray(x, float))
    return np.stack(cols, axis=1) if cols else np.zeros((len(settings), 0))


def _from_unit(space: SearchSpace, u: np.ndarray) -> list[dict[str, Any]]:
    cols = {f.name: f.values(np.clip(u[:, j], 0.0, np.nextafter(1.0, 0.0)))
            for j, f in enumerate(space.searched)}  # fmt: skip
    fixed = {f.name: f.choices[0] for f in space.fields if f.fixed and f.choices}
    return [fixed | {k: v[i] for k, v in cols.items()} for i in range(u.shape[0])]


def initial_settings(space: SearchSpace, n: int, *, tries: int = 200) -> list[dict[str, Any]]:
    """Round 0: ``n`` settings of a maximin Latin hypercube over the box whose levels
    include both ends of every field (``k / (n - 1)``, so the pilots span the whole box and
    a setting inside it is never an extrapolation; the best of ``tries`` random hypercubes
    by their smallest pairwise distance; seeded by the space's ``seed``), snapped to each
    field's values (integers, choices)."""
    rng = np.random.default_rng(space.seed)
    d = len(space.searched)
    best, best_d = None, -1.0
    for _ in range(tries):
        u = np.stack([rng.permutation(n) for _ in range(d)], axis=1) / (n - 1)
        pts = unit_coords(space, _from_unit(space, u))
        diff = pts[:, None, :] - pts[None, :, :]
        dist = np.sqrt((diff**2).sum(-1))[np.triu_indices(n, 1)]
        dmin = float(dist.min()) if dist.size else 0.0
        if dmin > best_d:
            best, best_d = u, dmin
    assert best is not None
    return _from_unit(space, best)


def entropy(probs: Mapping[str, np.ndarray]) -> np.ndarray:
    """Shannon entropy (nats) of P(regime group) per setting ``(S,)``."""
    p = np.stack([np.asarray(v, float) for v in probs.values()], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=1)


def setting_name(setting: Mapping[str, Any]) -> str:
    """A folder name for a setting: its fields' last parts and values (``lr0.004_k3``)."""
    short = {"rl.lr": "lr", "rl.staleness": "k"}
    parts = []
    for k, v in setting.items():
        tag = short.get(k, k.split(".")[-1])
        parts.append(f"{tag}{v:.3g}" if isinstance(v, float) else f"{tag}{v}")
    return "_".join(parts).replace("/", "-")


def pick_uncertain(
    space: SearchSpace,
    candidates: Sequence[Mapping[str, Any]],
    scores: np.ndarray,
    existing: Sequence[Mapping[str, Any]],
    n: int,
    min_distance: float,
) -> list[int]:
    """Greedy picks: the highest-``scores`` candidates, each at least ``min_distance``
    (unit coordinates) from every earlier pick and every ``existing`` setting; fewer than
    ``n`` when too few candidates are far enough (the distance is then halved, down to 0)."""
    x = unit_coords(space, candidates)
    taken = unit_coords(space, existing) if existing else np.zeros((0, x.shape[1]))
    order = np.argsort(-np.asarray(scores, float), kind="stable")
    picks: list[int] = []
    dmin = float(min_distance)
    while len(picks) < n:
        for i in order:
            if len(picks) >= n or int(i) in picks:
                continue
            if taken.size and np.min(np.sqrt(((taken - x[i]) ** 2).sum(1))) < dmin:
                continue
            picks.append(int(i))
            taken = np.vstack([taken, x[i]])
        if dmin == 0:
            break
        dmin = dmin / 2 if dmin > 1e-3 else 0.0
    return picks
