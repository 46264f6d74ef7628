"""Terminal table and regime-map figure of ``recommend --space``."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._margin import time_margin_words

__all__ = ["influence", "plot_regime_map", "space_table"]

_BINS = 8


def space_table(rec: dict[str, Any]) -> list[str]:
    """Terminal lines: how the candidates were ranked, then the top rows."""
    lines = [
        f"{rec['n_candidates']} candidate(s) ({rec['sampling']}), {rec['draws']} posterior "
        f"draws, horizon {rec['horizon_steps']:g} steps; ranked by {rec['ranked_by']}",
        f"motif: {rec.get('motif_source', 'single fit')}",
        f"{'#':>3}  {'setting':<40}{'mean curve [90 %]':>24}{'seed sd':>8}{'new run [90 %]':>20}"
        f"{'to target':>11}{'conv':>6}{'osc':>6}{'coll':>6}{'unset':>6}{'fail':>6}",
    ]
    for row in rec["top"]:
        setting = ", ".join(f"{k}={_fmt(v)}" for k, v in row["setting"].items())
        fin = row["final"]
        final = f"{_fmt(fin['mean'], 3)} [{_fmt(fin['q05'], 3)}, {_fmt(fin['q95'], 3)}]"
        new = f"[{_fmt(fin.get('new_run_q05'), 3)}, {_fmt(fin.get('new_run_q95'), 3)}]"
        steps = "never" if row["steps_to_target"] is None else f"{row['steps_to_target']:.0f}"
        mark = "" if row["within_risk"] else "  (above the risk bound)"
        ps = "".join(f"{row[f'p_{g}']:>6.2f}" for g in ("converged", "oscillating", "collapse"))
        lines.append(
            f"{row['rank']:>3}  {setting:<40}{final:>24}{_fmt(fin.get('seed_sd'), 2):>8}"
            f"{new:>20}{steps:>11}{ps}{row['p_unsettled']:>6.2f}{row.get('p_failed', 0.0):>6.2f}"
            f"{mark}"
        )
    tie = rec.get("tie")
    if tie and tie["n_tied"] > 1:
        lines.append(f"tie: {tie['n_tied']} candidates within {tie['tolerance']:.3g} of the "
                     "best forecast objective (its noise); the largest stability margin "
                     "won")  # fmt: skip
    elif tie and tie["tolerance"] > 0:
        lines.append(f"no tie: the next candidate within risk is more than "
                     f"{tie['tolerance']:.3g} below the best")  # fmt: skip
    if rec.get("margin"):
        m = rec["margin"]
        lines.append(f"margin (P(oscillating or collapse) stays <= {m['risk_level']:g}): "
                     f"{m['words'] or 'no searched range to move'}")  # fmt: skip
    words = time_margin_words(rec.get("time_margin"))
    if words:
        lines.append(f"margin in time: {words}")
    if "seed_spread" in rec:
        lines.append(f"seed sd / new run: one new run (seed) at the setting: {rec['seed_spread']}")
    lines.append("mean curve: 90 % of the population-median run's expected final competence "
                 "(posterior uncertainty only)")  # fmt: skip
    return lines


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "nan"
    if isinstance(v, float):
        return "nan" if not math.isfinite(v) else f"{v:.{digits}g}"
    return str(v)


def _coords(values: Sequence[Any], spec: dict[str, Any]) -> tuple[np.ndarray, list[str] | None]:
    """Plot coordinates of a field's values (choice index for non-numeric choices) and
    tick labels (None for numbers)."""
    choices = spec.get("choices")
    if choices is not None and not all(
        isinstance(c, int | float) and not isinstance(c, bool) for c in choices
    ):
        return np.asarray([choices.index(v) for v in values], float), [str(c) for c in choices]
    return np.asarray(values, float), None


def _bins(x: np.ndarray, spec: dict[str, Any]) -> np.ndarray:
    """Group index of each value: the choice, or one of ``_BINS`` equal cells of the range
    (in log for a log scale)."""
    if spec.get("choices") is not None:
        return np.unique(x, return_inverse=True)[1]
    lo, hi = float(spec["low"]), float(spec["high"])
    if spec.get("scale", "log") == "log":
        x, lo, hi = np.log(x), math.log(lo), math.log(hi)
    return np.clip(((x - lo) / (hi - lo) * _BINS).astype(int), 0, _BINS - 1)


def influence(
    settings: Sequence[dict[str, Any]], utility: np.ndarray, fields: dict[str, Any]
) -> dict[str, float]:
    """Per searched field, the spread (max - min) of the mean utility over its values
    (choices, or equal cells of its range), the other fields averaged out; largest first."""
    ok = np.isfinite(utility)
    out: dict[str, float] = {}
    for name, spec in fields.items():
        if spec.get("choices") is not None and len(spec["choices"]) == 1:
            continue
        x, _ = _coords([s[name] for s in settings], spec)
        g = _bins(x, spec)
        means = [utility[ok & (g == k)].mean() for k in np.unique(g[ok])]
        out[name] = float(np.ptp(means)) if means else 0.0
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def plot_regime_map(rec: dict[str, Any], arrays: dict[str, Any], path: str | Path) -> Path:
    """The predicted P(oscillating or collapse) over the two most influential fields
    (averaged over the other fields within each cell), pilots (x) and the recommendation
    (star) marked. With one searched field: the mean objective against it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fields = rec["space"]["fields"]
    settings, risk = arrays["settings"], np.asarray(arrays["risk"], float)
    utility = np.asarray(arrays["utility"], float)
    names = list(influence(settings, utility, fields))[:2]
    best = rec["best"]
    fig, ax = plt.subplots(figsize=(6.0, 4.6))
    kw = {"cmap": "RdYlGn_r", "vmin": 0.0, "vmax": 1.0, "s": 60, "edgecolors": "none"}
    if len(names) == 2:
        (xa, xt), (ya, yt) = (_coords([s[n] for s in settings], fields[n]) for n in names)
        cells: dict[tuple[int, int], list[int]] = {}
        gx, gy = _bins(xa, fields[names[0]]), _bins(ya, fields[names[1]])
        for i, key in enumerate(zip(gx.tolist(), gy.tolist(), strict=True)):
            cells.setdefault(key, []).append(i)
        idx = list(cells.values())
        sc = ax.scatter(
            [xa[i].mean() for i in idx], [ya[i].mean() for i in idx],
            c=[risk[i].mean() for i in idx], marker="s", **kw,
        )  # fmt: skip
        for n, setter, ticks in ((names[0], "x", xt), (names[1], "y", yt)):
            _axis(ax, setter, n, fields[n], ticks)
        px, py = (arrays["pilots"].get(n, []) for n in names)
        pilots = [(a, b) for a, b in zip(px, py, strict=False) if a is not None and b is not None]
        bx, by = (_coords([best[n]], fields[n])[0][0] for n in names)
    else:
        n = names[0] if names else next(iter(fields))
        xa, xt = _coords([s[n] for s in settings], fields[n])
        sc = ax.scatter(xa, utility, c=risk, **kw)
        _axis(ax, "x", n, fields[n], xt)
        what = rec.get("objective", {}).get("label") or f"final competence of {rec['proxy_agent']}"
        ax.set_ylabel(f"mean {what}")
        pilots = []
        for k, v in enumerate(arrays["pilots"].get(n, [])):
            if isinstance(v, int | float) and not isinstance(v, bool):
                ax.axvline(v, color="k", ls=":", lw=1, label="pilots" if k == 0 else None)
        bx = _coords([best[n]], fields[n])[0][0]
        by = rec["top"][0]["final"]["mean"]
    for k, (a, b) in enumerate(pilots):
        try:
            pa, pb = float(a), float(b)
        except (TypeError, ValueError):
            continue
        ax.scatter([pa], [pb], marker="x", color="k", s=50, label="pilots" if k == 0 else None)
    ax.scatter([bx], [by], marker="*", color="tab:blue", s=260, edgecolors="k",
               label="recommendation")  # fmt: skip
    fig.colorbar(sc, ax=ax, label="P(oscillating or collapse)")
    ax.set_title(f"predicted regime risk at {rec['horizon_steps']:g} steps", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}{path.suffix}")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)  # atomic: no half-written figure
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return path


def _axis(ax: Any, which: str, name: str, spec: dict[str, Any], ticks: list[str] | None) -> None:
    getattr(ax, f"set_{which}label")(name)
    if ticks is not None:
        getattr(ax, f"set_{which}ticks")(range(len(ticks)), ticks)
    elif spec.get("choices") is None and spec.get("scale", "log") == "log":
        getattr(ax, f"set_{which}scale")("log")
