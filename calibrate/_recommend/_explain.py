"""Why a recommendation is what it is (issue 32 §4): the chosen setting's forecast, the nearest
pilot and how far the pick extrapolates from the pilots, the runner-up and why it lost, and
whether the risk tolerance bound the choice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._knobs import transform_values

__all__ = ["explain", "explain_lines"]


def _scaled(
    values: Mapping[str, Sequence[float]], transforms: Mapping[str, Any], fields: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pilots' fields on their link scales ``(P, F)``, with the per-field minimum and
    range over the pilots (a field constant over the pilots has range 1)."""
    cols = [transform_values(transforms[f], np.asarray(values[f], dtype=float)) for f in fields]
    x = np.stack(cols, axis=1)
    lo, hi = x.min(axis=0), x.max(axis=0)
    return x, lo, np.where(hi > lo, hi - lo, 1.0)


def _nearest_pilot(
    best: Mapping[str, Any],
    runs: Sequence[str],
    pilots: Mapping[str, Sequence[Any]],
    transforms: Mapping[str, Any],
) -> dict[str, Any] | None:
    fields = [f for f in transforms if f in best and len(pilots.get(f) or []) == len(runs)]
    if not runs or not fields:
        return None
    x, lo, span = _scaled(pilots, transforms, fields)
    b = np.array([float(transform_values(transforms[f], np.asarray([best[f]], float))[0])
                  for f in fields])  # fmt: skip
    z, zb = (x - lo) / span, (b - lo) / span
    d = np.sqrt(np.sum((z - zb) ** 2, axis=1))
    i = int(np.argmin(d))
    beyond = {f: float(zb[k] - 1.0 if zb[k] > 1 else zb[k]) for k, f in enumerate(fields)
              if not 0.0 <= zb[k] <= 1.0}  # fmt: skip
    return {
        "run": runs[i],
        "setting": {f: pilots[f][i] for f in fields},
        "distance": float(d[i]),
        "extrapolates": bool(beyond),
        "beyond": beyond,
        "units": "each linked field on its link scale, in units of the pilots' range",
    }


def explain(
    cands: Sequence[Mapping[str, Any]],
    mean: np.ndarray,
    risk: np.ndarray,
    order: Sequence[int],
    *,
    tolerance: float,
    agent: str,
    chosen_row: Mapping[str, Any],
    runs: Sequence[str],
    pilots: Mapping[str, Sequence[Any]],
    transforms: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``explanation`` block of a recommendation.

    Args:
        cands: The candidate settings ``(C,)``.
        mean: Forecast mean final objective per candidate ``(C,)`` (an agent's competence,
            or the end-to-end accuracy: the product of the agents').
        risk: P(oscillating or collapse) per candidate ``(C,)``.
        order: The ranking (best first).
        tolerance: The space's risk tolerance.
        agent: The objective agent's name, or for ``e2e``
            :data:`calibrate._objective.E2E_LABEL`.
        chosen_row: The chosen setting's row of ``top`` (its ``final`` forecast).
        runs: The pilot runs' names ``(P,)``.
        pilots: Per field, the pilot runs' values ``(P,)``.
        transforms: Per linked field, its link transform.
    """
    best = int(order[0])
    fin = chosen_row["final"]
    out: dict[str, Any] = {
        "chosen": {
            "setting": dict(cands[best]),
            "agent": agent,
            "forecast_mean": float(mean[best]),
            "new_run_90": [fin.get("new_run_q05"), fin.get("new_run_q95")],
            "p_oscillating_or_collapse": float(risk[best]),
        },
        "nearest_pilot": _nearest_pilot(cands[best], runs, pilots, transforms),
    }
    runner = next((int(i) for i in order[1:] if dict(cands[int(i)]) != dict(cands[best])), None)
    if runner is not None:
        if risk[runner] > tolerance >= risk[best]:
            why = (f"P(oscillating or collapse) {risk[runner]:.2f} above the tolerance "
                   f"{tolerance:g}")  # fmt: skip
        elif mean[runner] > mean[best]:
            why = (f"forecast final of {agent} higher by {mean[runner] - mean[best]:.3g}, a tie "
                   "with the pick, whose stability margin is the larger")  # fmt: skip
        else:
            why = f"forecast final of {agent} lower by {mean[best] - mean[runner]:.3g}"
        out["runner_up"] = {"setting": dict(cands[runner]),
                            "forecast_mean": float(mean[runner]),
                            "p_oscillating_or_collapse": float(risk[runner]),
                            "why": why}  # fmt: skip
    finite = np.isfinite(mean)
    top_any = int(np.argmax(np.where(finite, mean, -np.inf)))
    binding = bool(risk[top_any] > tolerance and top_any != best)
    out["risk_bound"] = {
        "tolerance": tolerance,
        "n_within": int(np.sum((risk <= tolerance) & finite)),
        "binding": binding,
        "best_excluded": {"setting": dict(cands[top_any]), "forecast_mean": float(mean[top_any]),
                          "p_oscillating_or_collapse": float(risk[top_any])}
        if binding else None,
    }  # fmt: skip
    return out


def explain_lines(ex: Mapping[str, Any]) -> list[str]:
    """The explanation as terminal lines."""

    def fmt(setting: Mapping[str, Any]) -> str:
        return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in setting.items())  # fmt: skip

    c = ex["chosen"]
    lo, hi = c["new_run_90"]
    lines = [f"why: {fmt(c['setting'])}: one new run's final {c['agent']} "
             f"[{lo:.3f}, {hi:.3f}] (90 %), mean {c['forecast_mean']:.3f}, "
             f"P(oscillating or collapse) {c['p_oscillating_or_collapse']:.2f}"]  # fmt: skip
    near = ex.get("nearest_pilot")
    if near:
        where = ("beyond the pilots' range on " + ", ".join(
            f"{f} by {abs(v):.2f} range(s)" for f, v in near["beyond"].items())
            if near["extrapolates"] else "inside the pilots' range")  # fmt: skip
        lines.append(f"  nearest pilot {near['run']} ({fmt(near['setting'])}), distance "
                     f"{near['distance']:.2f}; {where}")  # fmt: skip
    if "runner_up" in ex:
        r = ex["runner_up"]
        lines.append(f"  runner-up {fmt(r['setting'])}: {r['why']}")
    rb = ex["risk_bound"]
    if rb["binding"]:
        b = rb["best_excluded"]
        lines.append(f"  the risk tolerance {rb['tolerance']:g} bound: {fmt(b['setting'])} "
                     f"forecasts {b['forecast_mean']:.3f} but P(oscillating or collapse) "
                     f"{b['p_oscillating_or_collapse']:.2f}")  # fmt: skip
    else:
        lines.append(f"  the risk tolerance {rb['tolerance']:g} did not bind "
                     f"({rb['n_within']} candidate(s) within it)")  # fmt: skip
    return lines
