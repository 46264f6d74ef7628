"""Ties and stability margins of a recommendation (``recommend --space``).

Two candidates whose forecast objectives differ by less than the forecast's own noise are
a tie: the noise of a difference is twice the Monte Carlo standard error of the two
posterior means (each ``sd / sqrt(draws)`` over its draws), and never less than ``tie``
(the user's tolerance, default 0.005 in objective units). Among the candidates tied with
the best (and within the risk level), the one with the largest stability margin wins.

The margin of a candidate is how far each searched numeric knob can move, the others held,
before the forecast P(oscillating or collapse) crosses the risk level: along each knob,
up and down, the risk is forecast at steps of the knob's own scale (a factor for a ``log``
knob: 1.25, 1.5, 2, 3, 4; a count for an integer knob: 1, 2, 3, 4, 6, 8; the other values
of a knob searched over numeric choices; else fractions 1/8 .. 1 of the searched range)
and the margin is the last step before the first one past the risk level (``None``
beyond: no crossing within the scan). The candidate's score for the
tie-break is its smallest margin over knobs and directions in the space's unit coordinates
(each knob's scale over its searched range mapped onto [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from llm_runs.knobs import knob
from simulate.common import to_scale

from .._space import SearchSpace

__all__ = ["TIE", "margins", "tied_with_best", "time_margin_words"]

#: Default smallest tie tolerance (objective units).
TIE = 0.005
#: Most tied candidates whose margins are scanned (the highest means first).
MAX_TIED = 8

_LOG_STEPS = (1.25, 1.5, 2.0, 3.0, 4.0)
_INT_STEPS = (1, 2, 3, 4, 6, 8)
_LIN_STEPS = (0.125, 0.25, 0.5, 1.0)


def tied_with_best(
    ev: Any, order: Sequence[int], ok: np.ndarray, tie: float = TIE
) -> tuple[list[int], float]:
    """The candidates within risk tied with the best-ranked one (itself first) and the
    tolerance at the best (the largest over the tied pairs' noise is per pair).

    Args:
        ev: The candidates' :class:`~calibrate._recommend._eval.Evaluation`.
        order: The ranking (best first).
        ok: Per candidate, within the risk level with a finite mean.
        tie: Smallest tolerance.
    """
    best = int(order[0])
    if not ok[best]:
        return [best], float(tie)
    sd = np.zeros(len(ev.mean))
    n = np.ones(len(ev.mean))
    for i in order[: 4 * MAX_TIED]:
        vals, _ = ev._pooled(int(i), ev.finals)
        v = np.concatenate(vals)
        v = v[np.isfinite(v)]
        sd[i], n[i] = (float(np.std(v)), max(v.size, 1)) if v.size else (0.0, 1)
    se_best = sd[best] / math.sqrt(n[best])
    tied, tol_best = [best], float(tie)
    for i in order[1 : 4 * MAX_TIED]:
        i = int(i)
        if not ok[i]:
            continue
        tol = max(float(tie), 2.0 * math.hypot(se_best, sd[i] / math.sqrt(n[i])))
        if ev.mean[best] - ev.mean[i] <= tol:
            tied.append(i)
            tol_best = max(tol_best, tol)
        if len(tied) >= MAX_TIED:
            break
    return tied, tol_best


def _field(space: SearchSpace, name: str) -> Any:
    return next(f for f in space.fields if f.name == name)


def _numeric_choices(f: Any) -> bool:
    return f.choices is not None and all(
        isinstance(c, int | float) and not isinstance(c, bool) for c in f.choices
    )


def _steps(space: SearchSpace, name: str, x: float, direction: str) -> tuple[str, tuple]:
    """How the scan moves ``name`` from ``x``: ``mul`` by factors or ``add`` steps."""
    f = _field(space, name)
    if f.choices is not None:  # the other choices on that side, nearest first
        side = sorted(float(c) - x for c in f.choices if float(c) > x) if direction == "up" \
            else sorted(x - float(c) for c in f.choices if float(c) < x)  # fmt: skip
        return "add", tuple(side)
    if f.integer:
        return "add", tuple(float(s) for s in _INT_STEPS)
    if f.scale == "log":
        return "mul", _LOG_STEPS
    span = float(f.high) - float(f.low)  # type: ignore[arg-type]
    return "add", tuple(s * span for s in _LIN_STEPS)


def _unit(space: SearchSpace, name: str, a: float, b: float) -> float:
    """Distance between knob values ``a`` and ``b`` in the space's unit coordinates."""
    f = _field(space, name)
    if f.choices is not None:
        k = knob(name)
        scale = k.scale if k is not None else "linear"
        lo, hi = (float(to_scale(scale, float(v))) for v in (min(f.choices), max(f.choices)))
    else:
        scale = f.scale
        lo = float(to_scale(f.scale, float(f.low)))  # type: ignore[arg-type]
        hi = float(to_scale(f.scale, float(f.high)))  # type: ignore[arg-type]
    return abs(float(to_scale(scale, b)) - float(to_scale(scale, a))) / ((hi - lo) or 1.0)


def margins(
    risk_of: Any, space: SearchSpace, cands: Sequence[dict[str, Any]], level: float
) -> list[dict[str, Any]]:
    """Each candidate's stability margin (see the module docstring).

    Args:
        risk_of: ``settings -> (S,)`` forecast P(oscillating or collapse).
        space: The search space (its ranges' numeric fields are scanned).
        cands: The candidates.
        level: The risk level.

    Returns:
        Per candidate ``{"knobs": {field: {"up": step|None, "down": step|None, "kind",
        "crossed_up", "crossed_down"}}, "score": smallest margin in unit coordinates,
        "words": a sentence}``.
    """
    fields = [f.name for f in space.searched if f.choices is None or _numeric_choices(f)]
    scan: list[dict[str, Any]] = []
    where: list[tuple[int, str, str, float]] = []
    for c, cand in enumerate(cands):
        for name in fields:
            x = float(cand[name])
            for direction in ("up", "down"):
                kind, steps = _steps(space, name, x, direction)
                for s in steps:
                    if kind == "mul":
                        y = x * s if direction == "up" else x / s
                    else:
                        y = x + s if direction == "up" else x - s
                    if y < 0 or (kind == "mul" and y <= 0):
                        continue
                    f = _field(space, name)
                    whole = f.integer or (f.choices is not None and isinstance(cand[name], int))
                    y = float(round(y)) if whole else y
                    scan.append(dict(cand) | {name: int(y) if whole else y})
                    where.append((c, name, direction, s))
    risk = np.asarray(risk_of(scan), float) if scan else np.zeros(0)
    out = []
    for c, cand in enumerate(cands):
        knobs: dict[str, Any] = {}
        score = math.inf
        for name in fields:
            kind = _steps(space, name, float(cand[name]), "up")[0]
            entry: dict[str, Any] = {"kind": "factor" if kind == "mul" else "step"}
            for direction in ("up", "down"):
                rows = [(s, risk[k]) for k, w in enumerate(where)
                        if w[0] == c and w[1] == name and w[2] == direction
                        for s in [w[3]]]  # fmt: skip
                last, crossed = None, None
                for s, r in rows:
                    if r > level:
                        crossed = s
                        break
                    last = s
                entry[direction] = last
                entry[f"crossed_{direction}"] = crossed
                entry[f"scanned_{direction}"] = bool(rows)
                if crossed is not None:
                    x = float(cand[name])
                    sign = 1.0 if direction == "up" else -1.0
                    if kind == "mul":
                        edge = x * (last or 1.0) ** sign
                    else:
                        edge = x + sign * (last or 0.0)
                    score = min(score, _unit(space, name, x, edge))
            knobs[name] = entry
        out.append({"knobs": knobs, "score": None if math.isinf(score) else score,
                    "words": _words(knobs)})  # fmt: skip
    return out


def _words(knobs: dict[str, Any]) -> str:
    parts = []
    for name, e in knobs.items():
        for direction, verb in (("up", "rise"), ("down", "fall")):
            step, crossed = e[direction], e[f"crossed_{direction}"]
            unit = "x" if e["kind"] == "factor" else ""
            if not e[f"scanned_{direction}"]:
                continue  # at the knob's bound (a lag of 0 cannot fall)
            if crossed is None:
                parts.append(f"`{name}` may {verb} {_fmt(step, e['kind'])}{unit} or more "
                             "(no crossing within the scan)")  # fmt: skip
            elif step is None:
                parts.append(f"`{name}` may not {verb}: the risk crosses the level at "
                             f"{_fmt(crossed, e['kind'])}{unit}")  # fmt: skip
            else:
                parts.append(f"`{name}` may {verb} {_fmt(step, e['kind'])}{unit} (the risk "
                             f"crosses the level at {_fmt(crossed, e['kind'])}{unit})")  # fmt: skip
    return "; ".join(parts)


def _fmt(v: float | None, kind: str) -> str:
    if v is None:
        return "1" if kind == "factor" else "0"
    return f"{v:g}"


def time_margin_words(tm: dict[str, Any] | None) -> str | None:
    """The margin in time in words, e.g. "converged with P >= 0.9 until step 300 (the
    horizon 150; scanned to 300)"; None without one."""
    if not tm:
        return None
    level = 1.0 - float(tm["risk_level"])
    where = f"the horizon {tm['horizon']}; scanned to {tm['scanned_to']}"
    if tm["safe_until"] is None:
        return f"P(converged) < {level:g} already at step {tm['steps'][0]} ({where})"
    if tm["safe_until"] >= tm["scanned_to"]:
        return f"converged with P >= {level:g} through step {tm['scanned_to']} ({where})"
    return f"converged with P >= {level:g} until step {tm['safe_until']} ({where})"
