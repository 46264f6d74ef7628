"""The knobs of a tabular recommendation benchmark (:mod:`_recommend_table`): which config
fields make a grid setting, how each is read from a run's config, scaled for a surrogate and
offered to Optuna.

A knob is ``(path, kind)``: ``path`` a dotted config field (``rl.lr``, ``rl.staleness``,
``rl.lr_scale.X``, ``network.motif``) and ``kind`` one of

- ``log``: a positive float, scaled as ``log(v)``;
- ``log1p``: a non-negative integer (a lag), scaled as ``log1p(v)``;
- ``cat``: a choice without an order (a wiring), one-hot for a surrogate.

A setting is the tuple of its knobs' values in this order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate import AgentmotifsError

#: A knob: (dotted config path, kind).
Knob = tuple[str, str]

#: The regime-map grid's knobs (the first benchmark): learning rate x policy lag.
LR_STALENESS: tuple[Knob, ...] = (("rl.lr", "log"), ("rl.staleness", "log1p"))

KINDS = ("log", "log1p", "cat")

__all__ = ["KINDS", "LR_STALENESS", "Knob", "cast", "features", "grid_values", "read", "suggest"]


def cast(knobs: Sequence[Knob], setting: Sequence[Any]) -> tuple[Any, ...]:
    """A setting with each value in its knob's type (float, int, str).

    Raises:
        AgentmotifsError: A setting of another length, or an unknown kind.
    """
    if len(setting) != len(knobs):
        raise AgentmotifsError(f"a setting needs {len(knobs)} values, got {tuple(setting)}")
    out: list[Any] = []
    for (path, kind), v in zip(knobs, setting, strict=True):
        if kind not in KINDS:
            raise AgentmotifsError(f"knob {path}: kind must be one of {KINDS}, got {kind!r}")
        out.append(float(v) if kind == "log" else int(v) if kind == "log1p" else str(v))
    return tuple(out)


def _dotted(data: Any, key: str) -> Any:
    """``data["a"]["b"]`` for the key ``a.b``; None where a part is missing."""
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def read(knobs: Sequence[Knob], config: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The setting of a run from its config (a manifest's ``config``); None when a knob's
    field is missing."""
    vals = [_dotted(config, path) for path, _ in knobs]
    return None if any(v is None for v in vals) else cast(knobs, vals)


def grid_values(knobs: Sequence[Knob], settings: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Each knob's distinct values among ``settings``, sorted."""
    return [sorted({s[i] for s in settings}) for i in range(len(knobs))]


def _scaled(kind: str, v: Any) -> float:
    return math.log(v) if kind == "log" else math.log1p(v)


def features(knobs: Sequence[Knob], settings: Sequence[Sequence[Any]],
             grid: Sequence[Sequence[Any]]) -> np.ndarray:  # fmt: skip
    """Surrogate inputs, shape ``(len(settings), F)``: each ordered knob on its scale mapped
    to [0, 1] over ``grid``'s range, each ``cat`` knob one-hot over ``grid``'s values."""
    cols: list[np.ndarray] = []
    for i, (_, kind) in enumerate(knobs):
        if kind == "cat":
            cols += [np.array([float(s[i] == g) for s in settings]) for g in grid[i]]
            continue
        x = np.array([_scaled(kind, s[i]) for s in settings], dtype=float)
        lo, hi = _scaled(kind, min(grid[i])), _scaled(kind, max(grid[i]))
        cols.append((x - lo) / (hi - lo if hi > lo else 1.0))
    return np.stack(cols, axis=1)


def suggest(trial: Any, knobs: Sequence[Knob], grid: Sequence[Sequence[Any]],
            mode: str) -> tuple[Any, ...]:  # fmt: skip
    """An Optuna trial's setting: every knob a categorical choice of the grid's values
    (``mode="categorical"``), or ordered knobs as floats (``log``: log-uniform; ``log1p``:
    uniform in log1p space) snapped to the nearest grid value (``mode="ordered"``; ``cat``
    knobs stay categorical). Parameters are named by the path's last part (``lr``)."""
    out = []
    for (path, kind), vals in zip(knobs, grid, strict=True):
        name = path.rpartition(".")[2]
        if mode == "categorical" or kind == "cat":
            out.append(trial.suggest_categorical(name, list(vals)))
        elif kind == "log":
            x = trial.suggest_float(name, vals[0], vals[-1], log=True)
            out.append(min(vals, key=lambda v: abs(math.log(v) - math.log(x))))
        else:
            x = trial.suggest_float(f"log1p_{name}", math.log1p(vals[0]), math.log1p(vals[-1]))
            out.append(min(vals, key=lambda v: abs(math.log1p(v) - x)))
    return cast(knobs, out)
