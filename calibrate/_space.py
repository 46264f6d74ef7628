"""Search spaces for ``recommend --space``: which training settings to predict and rank.

A space file (YAML or JSON) names training-config fields by their dotted llm_runs names,
each a range or a list of choices, and the terms of the next run::

    fields:
      rl.lr: {low: 1.0e-4, high: 1.0e-2, scale: log}
      rl.kl_coef: {low: 0.0, high: 0.5}        # scale: the knob's own (log1p)
      rl.staleness: {choices: [0, 2, 4]}
    budget_steps: 600     # optimizer steps of the recommended run (its ``steps``)
    risk: 0.1             # largest acceptable P(oscillating or collapse)
    target: 0.8           # competence level for "steps to target"
    n_candidates: 1024    # settings predicted
    seed: 0               # of the scrambled Sobol sequence
    objective: last       # the utility: last (output node), an agent's name, or e2e

The candidates are the full grid when every field lists choices and the grid has at most
``n_candidates`` points, else ``n_candidates`` points of a scrambled Sobol sequence
(:class:`scipy.stats.qmc.Sobol`) mapped onto the ranges and choices.

A range is spaced on a scale of :data:`simulate.common.SCALES` (``log``, ``log1p`` or
``linear``; ``lin``, the spelling of earlier versions, reads as ``linear``). Without
``scale`` a knob of :data:`llm_runs.knobs.KNOBS` takes its own scale (``rl.lr``: log,
``rl.staleness``: log1p) and any other field ``log``; without ``integer`` a knob takes its
config field's type. A knob's bounds and choices are checked by the training config's own
rules (:meth:`llm_runs.knobs.Knob.check`): a value ``llm_runs train`` refuses is refused here.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llm_runs.knobs import knob
from simulate.common import (
    SCALE_DOMAINS,
    ConfigError,
    from_scale,
    in_scale_domain,
    scale_name,
    to_scale,
)

from ._knobs import check_value
from ._objective import check_objective

__all__ = ["SearchSpace", "SpaceField"]

_TOP_KEYS = ("fields", "budget_steps", "risk", "target", "n_candidates", "seed", "objective")
_MAX_CANDIDATES = 100_000


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclasses.dataclass(frozen=True)
class SpaceField:
    """One searched field: a range (``low``, ``high``, ``scale``) or ``choices``.

    Attributes:
        name: Dotted training-config field (``rl.lr``).
        low: Lower bound of a range (None for choices).
        high: Upper bound of a range, > ``low``.
        scale: ``log`` (uniform in log; needs ``low > 0``), ``log1p`` (uniform in
            ``log(1 + h)``; ``low >= 0``) or ``linear`` (``lin`` reads as ``linear``).
        integer: Round range values to integers (counts such as ``rl.batch``).
        choices: The allowed values (numbers, strings or booleans), or None for a range.
    """

    name: str
    low: float | None = None
    high: float | None = None
    scale: str = "log"
    integer: bool = False
    choices: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        where = f"space: fields.{self.name}"
        if not isinstance(self.name, str) or not all(self.name.split(".")):
            raise ConfigError(f"space: a field name must be a dotted name, got {self.name!r}")
        if self.name == "steps":
            raise ConfigError("space: fields.steps is set by budget_steps, not searched")
        if self.choices is not None:
            if self.low is not None or self.high is not None:
                raise ConfigError(f"{where}: give either choices or low/high, not both")
            ok = isinstance(self.choices, tuple) and len(self.choices) > 0
            if not ok or not all(_is_num(c) or isinstance(c, str | bool) for c in self.choices):
                raise ConfigError(
                    f"{where}.choices must be a non-empty list of numbers, strings or "
                    f"booleans, got {self.choices!r}"
                )
            from llm_runs.config import typed_value  # the training config's own field types

            k = knob(self.name)
            try:
                typed = tuple(typed_value(self.name, c) for c in self.choices)
            except ConfigError as err:
                raise ConfigError(f"{where}.choices: {err}") from None
            if k is not None:  # the scale's domain (as recommend words it), then the config's
                for c in typed:
                    check_value(k.scale, c, f"space: fields.{self.name} value")
                try:
                    typed = tuple(k.check(c, self.name) for c in typed)
                except ConfigError as err:
                    raise ConfigError(f"{where}.choices: {err}") from None
            object.__setattr__(self, "choices", typed)  # rl.staleness: 1e1 is the lag 10
            return
        for key, v in (("low", self.low), ("high", self.high)):
            if not _is_num(v):
                raise ConfigError(f"{where}.{key} must be a finite number, got {v!r}")
        assert self.low is not None and self.high is not None  # checked just above
        if not self.high > self.low:
            raise ConfigError(f"{where}: high must be > low, got {self.low!r}..{self.high!r}")
        object.__setattr__(self, "scale", scale_name(self.scale, what=f"{where}.scale"))
        if not bool(in_scale_domain(self.scale, self.low)):
            dom = SCALE_DOMAINS[self.scale].removeprefix("a finite number ")
            raise ConfigError(
                f"{where}.low must be {dom} on a {self.scale} scale, got {self.low!r}"
            )
        if not isinstance(self.integer, bool):
            raise ConfigError(f"{where}.integer must be true or false, got {self.integer!r}")
        if self.integer and math.ceil(self.low) > math.floor(self.high):
            raise ConfigError(f"{where}: no integer lies in {self.low!r}..{self.high!r}")
        k = knob(self.name)
        if k is not None:  # the bounds as the training config checks the field
            ends = (
                (math.ceil(self.low), math.floor(self.high))
                if self.integer
                else (self.low, self.high)
            )
            for key, v in zip(("low", "high"), ends, strict=True):
                try:
                    k.check(v if self.integer or k.integer else float(v), self.name)
                except ConfigError as err:
                    raise ConfigError(f"{where}.{key}: {err}") from None

    @property
    def fixed(self) -> bool:
        """One choice only: the field is set, not searched."""
        return self.choices is not None and len(self.choices) == 1

    def values(self, u: np.ndarray) -> list[Any]:
        """Map points ``u`` of [0, 1) onto the field's values."""
        if self.choices is not None:
            idx = np.minimum((u * len(self.choices)).astype(int), len(self.choices) - 1)
            return [self.choices[i] for i in idx]
        lo, hi = float(self.low), float(self.high)  # type: ignore[arg-type]
        a, b = to_scale(self.scale, [lo, hi])  # uniform on the field's scale
        x = from_scale(self.scale, a + u * (b - a))
        x = np.clip(x, lo, hi)  # exp/log round-off must not leave the bounds
        if self.integer:
            return [int(v) for v in np.clip(np.rint(x), math.ceil(lo), math.floor(hi))]
        return [float(v) for v in x]

    def to_dict(self) -> dict[str, Any]:
        """The field's entry of a space file."""
        if self.choices is not None:
            return {"choices": list(self.choices)}
        d: dict[str, Any] = {"low": self.low, "high": self.high, "scale": self.scale}
        return d | ({"integer": True} if self.integer else {})

    @classmethod
    def from_dict(cls, name: str, data: Any) -> SpaceField:
        """Build from a space file's entry (a mapping; unknown keys are errors)."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"space: fields.{name} must be a mapping ({{low, high, scale}} or "
                f"{{choices}}), got {data!r}"
            )
        unknown = sorted(set(data) - {"low", "high", "scale", "integer", "choices"})
        if unknown:
            raise ConfigError(f"space: fields.{name}: unknown key(s) {unknown}")
        choices = data.get("choices")
        if choices is not None:
            if not isinstance(choices, list | tuple):
                raise ConfigError(f"space: fields.{name}.choices must be a list, got {choices!r}")
            choices = tuple(choices)
        k = knob(name)  # the knob schema's scale and type, unless the file says otherwise
        return cls(
            name=name,
            low=data.get("low"),
            high=data.get("high"),
            scale=data.get("scale", k.scale if k else "log"),
            integer=data.get("integer", k.integer if k else False),
            choices=choices,
        )


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """A validated search space (see the module docstring for the file format).

    Attributes:
        fields: The searched (and fixed) fields, in file order.
        budget_steps: Optimizer steps of the recommended run: its ``steps`` and the
            prediction horizon.
        risk: Largest acceptable posterior P(oscillating or collapse), in [0, 1].
        target: Competence level of "steps to target", in (0, 1).
        n_candidates: Settings predicted (the grid when it is at most this large).
        seed: Seed of the scrambled Sobol sequence.
        objective: What the ranking maximises (the utility): ``last`` (the output node's
            final competence, default), an agent's name (that agent's), or ``e2e`` (the
            end-to-end accuracy, forecast as the product of the agents' final
            competences; see :mod:`calibrate._objective`).
    """

    fields: tuple[SpaceField, ...]
    budget_steps: int
    risk: float = 0.1
    target: float = 0.8
    n_candidates: int = 1024
    seed: int = 0
    objective: str = "last"

    def __post_init__(self) -> None:
        check_objective(self.objective, "space")
        if not isinstance(self.fields, tuple) or not self.fields:
            raise ConfigError("space: fields must name at least one training-config field")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ConfigError(f"space: fields repeat a name: {names}")
        if not (_is_int(self.budget_steps) and self.budget_steps > 0):
            msg = f"space: budget_steps must be a positive int, got {self.budget_steps!r}"
            raise ConfigError(msg)
        if not (_is_num(self.risk) and 0 <= self.risk <= 1):
            raise ConfigError(f"space: risk must be a number in [0, 1], got {self.risk!r}")
        if not (_is_num(self.target) and 0 < self.target < 1):
            raise ConfigError(f"space: target must be a number in (0, 1), got {self.target!r}")
        n = self.n_candidates
        if not (_is_int(n) and 1 <= n <= _MAX_CANDIDATES):
            raise ConfigError(
                f"space: n_candidates must be an int in 1..{_MAX_CANDIDATES}, got {n!r}"
            )
        if not _is_int(self.seed):
            raise ConfigError(f"space: seed must be an int, got {self.seed!r}")

    @property
    def searched(self) -> tuple[SpaceField, ...]:
        """The fields with more than one value."""
        return tuple(f for f in self.fields if not f.fixed)

    @property
    def sampling(self) -> str:
        """``grid`` (every field lists choices, at most ``n_candidates`` points) or
        ``sobol``."""
        if all(f.choices is not None for f in self.fields):
            size = math.prod(len(f.choices or ()) for f in self.fields)
            if size <= self.n_candidates:
                return "grid"
        return "sobol"

    def candidates(self) -> list[dict[str, Any]]:
        """The candidate settings (dicts of every field), grid or Sobol."""
        if self.sampling == "grid":
            names = [f.name for f in self.fields]
            grid = itertools.product(*(f.choices or () for f in self.fields))
            return [dict(zip(names, combo, strict=True)) for combo in grid]
        from scipy.stats import qmc

        searched = self.searched
        if searched:
            gen = np.random.default_rng(self.seed)
            try:
                sobol = qmc.Sobol(len(searched), scramble=True, rng=gen)
            except TypeError:  # scipy < 1.15 names it seed
                old: dict[str, Any] = {"seed": gen}
                sobol = qmc.Sobol(len(searched), scramble=True, **old)
            with warnings.catch_warnings():  # n need not be a power of 2
                warnings.filterwarnings("ignore", message=".*balance properties.*")
                u = sobol.random(self.n_candidates)
        else:
            u = np.zeros((1, 0))
        cols = {f.name: f.values(u[:, j]) for j, f in enumerate(searched)}
        out = []
        for i in range(u.shape[0]):
            out.append(
                {f.name: (f.choices[0] if f.fixed and f.choices else cols.get(f.name, [None])[i])
                 for f in self.fields}
            )  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` inverts it exactly."""
        return {
            "fields": {f.name: f.to_dict() for f in self.fields},
            "budget_steps": self.budget_steps,
            "risk": self.risk,
            "target": self.target,
            "n_candidates": self.n_candidates,
            "seed": self.seed,
            "objective": self.objective,
        }

    @classmethod
    def from_dict(cls, data: Any) -> SearchSpace:
        """Build and validate from a mapping (unknown keys are errors)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"space: must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_TOP_KEYS))
        if unknown:
            raise ConfigError(f"space: unknown key(s) {unknown}; known: {list(_TOP_KEYS)}")
        if "budget_steps" not in data:
            raise ConfigError("space: budget_steps is required (optimizer steps of the next run)")
        fields = data.get("fields")
        if not isinstance(fields, Mapping) or not fields:
            raise ConfigError("space: fields must be a non-empty mapping of dotted field names")
        kw = {k: data[k] for k in _TOP_KEYS[1:] if k in data}
        if isinstance(kw.get("risk"), int) and not isinstance(kw.get("risk"), bool):
            kw["risk"] = float(kw["risk"])
        for key in ("budget_steps", "n_candidates", "seed"):  # 1e3 is the integer 1000
            v = kw.get(key)
            if isinstance(v, float) and math.isfinite(v) and v.is_integer():
                kw[key] = int(v)
        return cls(fields=tuple(SpaceField.from_dict(str(k), v) for k, v in fields.items()), **kw)

    @classmethod
    def load(cls, path: str | Path) -> SearchSpace:
        """Read a space file (``.yaml``/``.yml`` or JSON).

        Raises:
            ConfigError: Missing or unreadable file, a parse error, or an invalid space.
        """
        from simulate.common import read_structured

        return cls.from_dict(read_structured(path, what="space file", error=ConfigError))
