"""The analysis of ``paper.launch_horizon``: rankings at two horizons, collapse onsets, the
stored forecasts scored, the table and the figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "analyse",
    "curves",
    "delayed_map_rate",
    "figure",
    "forecast_scores",
    "onset_vs_rate",
    "spearman",
    "table",
]


def curves(folder: Path) -> dict[str, Any]:
    """One run's competence curves: ``steps`` (T,), ``values`` (T, agents), ``agents``,
    ``n_eval`` and the step it diverged at (None when it did not)."""
    from llm_runs import competence_table, read_run

    log = read_run(folder)
    wide = log.competence()
    agents = [a for a in log.manifest["agents"] if a in wide.columns]
    n_eval = float(np.median(competence_table([folder])["n_eval"]))
    div = log.diverged_step if log.status == "diverged" else None
    return {"steps": wide.index.to_numpy(int), "values": wide[agents].to_numpy(float),
            "agents": agents, "n_eval": n_eval, "diverged": div}  # fmt: skip


def at_horizon(c: dict[str, Any], h: int) -> dict[str, Any]:
    """A run as a run of ``h`` steps would be: objective (the product of the agents'
    competences at its last evaluation), collapse by both rules, onset step of the package
    rule's collapse (None when none)."""
    from simulate import fall_collapse
    from simulate.common import peak_collapse

    keep = c["steps"] <= h
    steps, vals = c["steps"][keep], c["values"][keep]
    diverged = c["diverged"] is not None and c["diverged"] <= h
    last = vals[-1]
    objective = 0.0 if diverged or not np.all(np.isfinite(last)) else float(np.prod(last))
    pkg, peak, onsets = diverged, diverged, []
    if diverged:
        onsets.append(int(c["diverged"]))
    for j in range(vals.shape[1]):
        y = vals[:, j]
        y = y[np.isfinite(y)]
        if y.size < 4:
            continue
        v = fall_collapse(y, c["n_eval"])
        if v.collapsed:
            pkg = True
            if v.onset is not None:
                onsets.append(int(steps[np.isfinite(vals[:, j])][v.onset]))
        peak = peak or bool(peak_collapse(y))
    return {"objective": objective, "collapse": bool(pkg), "collapse_peak": bool(peak),
            "onset": min(onsets) if onsets else None}  # fmt: skip


def spearman(a: Any, b: Any, *, n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """Spearman's rank correlation of ``a`` and ``b`` (shape (n,)) with a 95 % bootstrap
    interval over the pairs."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, float), np.asarray(b, float)
    rho = float(spearmanr(a, b).statistic)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(n_boot):
        i = rng.integers(0, a.size, a.size)
        if np.ptp(a[i]) > 0 and np.ptp(b[i]) > 0:
            boot.append(spearmanr(a[i], b[i]).statistic)
    lo, hi = np.nanpercentile(boot, [2.5, 97.5]) if boot else (np.nan, np.nan)
    return {"rho": rho, "lo": float(lo), "hi": float(hi), "n": int(a.size)}


def analyse(d: Any, folder: Path, run_name: Callable[[dict[str, Any], int], str]) -> dict[str, Any]:
    """The short-horizon bias of the runs under ``folder`` (cells missing a run are left
    out and counted)."""
    cells, rows, missing = d.cells(), [], []
    for cell in cells:
        for seed in d.seeds:
            f = folder / run_name(cell, seed)
            try:
                c = curves(f)
            except Exception:
                missing.append(run_name(cell, seed))
                continue
            if c["steps"].max() < d.launch_steps and c["diverged"] is None:
                missing.append(run_name(cell, seed))
                continue
            p, q = at_horizon(c, d.pilot_steps), at_horizon(c, d.launch_steps)
            rows.append({"cell": cell, "seed": seed, "pilot": p, "launch": q})
    by_cell = []
    for cell in cells:
        rs = [r for r in rows if r["cell"] == cell]
        if not rs:
            continue
        by_cell.append({
            "cell": cell, "seeds": [r["seed"] for r in rs],
            "pilot_objective": float(np.mean([r["pilot"]["objective"] for r in rs])),
            "launch_objective": float(np.mean([r["launch"]["objective"] for r in rs])),
            "collapse_pilot": sum(r["pilot"]["collapse"] for r in rs),
            "collapse_launch": sum(r["launch"]["collapse"] for r in rs),
            "collapse_peak_pilot": sum(r["pilot"]["collapse_peak"] for r in rs),
            "collapse_peak_launch": sum(r["launch"]["collapse_peak"] for r in rs),
            "onsets": [r["launch"]["onset"] for r in rs if r["launch"]["onset"] is not None],
        })  # fmt: skip
    bias: dict[str, Any] = {
        "n_runs": len(rows), "n_cells": len(by_cell), "missing": missing,
        "pilot_steps": d.pilot_steps, "launch_steps": d.launch_steps,
    }  # fmt: skip
    if len(by_cell) >= 3:
        bias["rank_correlation"] = spearman([c["pilot_objective"] for c in by_cell],
                                            [c["launch_objective"] for c in by_cell])  # fmt: skip
    bias |= _best_at_pilot(d, rows, by_cell)
    bias |= _late_collapses(rows, d.pilot_steps)
    bias["delayed_map"] = onset_vs_rate(rows)
    return {"short_horizon_bias": bias, "cells": by_cell, "runs": rows}


def _best_at_pilot(d: Any, rows: list[dict], by_cell: list[dict]) -> dict[str, Any]:
    """The pick at the pilot horizon on one seed, scored at the launch horizon on another."""
    if not by_cell:
        return {}
    key = [tuple(sorted(c["cell"].items())) for c in by_cell]
    best_launch = max(c["launch_objective"] for c in by_cell)
    picks = []
    for a in d.seeds:
        pil = {tuple(sorted(r["cell"].items())): r for r in rows if r["seed"] == a}
        if not pil:
            continue
        pick = max(pil, key=lambda k: pil[k]["pilot"]["objective"])
        for b in d.seeds:
            if b == a:
                continue
            other = [r for r in rows if r["seed"] == b and tuple(sorted(r["cell"].items())) == pick]
            if not other:
                continue
            o = other[0]["launch"]
            regret = best_launch - o["objective"]
            picks.append({"pick": dict(pick), "pilot_seed": a, "launch_seed": b,
                          "launch_objective": o["objective"], "regret": regret,
                          "collapse": o["collapse"], "collapse_peak": o["collapse_peak"],
                          "beaten": bool(regret >= d.beaten_by)})  # fmt: skip
    best_pilot = max(range(len(by_cell)), key=lambda i: by_cell[i]["pilot_objective"])
    best_at_launch = max(range(len(by_cell)), key=lambda i: by_cell[i]["launch_objective"])
    n = len(picks)
    return {
        "best_at_pilot_mean": dict(key[best_pilot]),
        "best_at_launch_mean": dict(key[best_at_launch]),
        "same_best": best_pilot == best_at_launch,
        "pick_trials": picks,
        "pick_collapse_share": sum(p["collapse"] for p in picks) / n if n else None,
        "pick_collapse_peak_share": sum(p["collapse_peak"] for p in picks) / n if n else None,
        "pick_beaten_share": sum(p["beaten"] for p in picks) / n if n else None,
        "pick_collapse_or_beaten_share": (
            sum(p["beaten"] or p["collapse"] for p in picks) / n if n else None),
    }  # fmt: skip


def _late_collapses(rows: list[dict], pilot_steps: int) -> dict[str, Any]:
    """Collapses by the launch horizon, and how many a pilot of ``pilot_steps`` saw."""
    out: dict[str, Any] = {}
    for rule in ("collapse", "collapse_peak"):
        at_launch = [r for r in rows if r["launch"][rule]]
        late = [r for r in at_launch if not r["pilot"][rule]]
        out[rule] = {"at_launch": len(at_launch), "seen_by_pilot": len(at_launch) - len(late),
                     "after_pilot": len(late)}  # fmt: skip
    onsets = [r["launch"]["onset"] for r in rows if r["launch"]["onset"] is not None]
    out["onset_steps"] = sorted(onsets)
    out["onset_after_pilot"] = sum(o > pilot_steps for o in onsets)
    return {"late_collapse": out}


def forecast_scores(doc: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """The stored launch-horizon forecasts scored on the runs: the objective's 90 % interval
    coverage and the Brier score of P(collapse) at both horizons (package rule)."""
    samples = np.asarray(doc["final_samples"], float)  # (cells, agents, draws)
    obj = np.prod(samples, axis=1)  # (cells, draws)
    cov, brier = [], {h: [] for h in doc["groups_at"]}
    for i, cell in enumerate(doc["cells"]):
        lo, hi = np.quantile(obj[i], [0.05, 0.95])
        for r in summary["runs"]:
            if r["cell"] != cell:
                continue
            cov.append(bool(lo <= r["launch"]["objective"] <= hi))
            for h, g in doc["groups_at"].items():
                which = "launch" if int(h) == doc["design"]["launch_steps"] else "pilot"
                brier[h].append((g["collapse"][i] - float(r[which]["collapse"])) ** 2)
    return {
        "coverage90_objective": float(np.mean(cov)) if cov else None, "n_runs": len(cov),
        "brier_collapse": {h: float(np.mean(v)) if v else None for h, v in brier.items()},
    }  # fmt: skip


def delayed_map_rate(lr: float, lag: int, curvature: float) -> float:
    """Growth rate per step of the delayed map ``x_{t+1} = x_t - g x_{t-lag}`` at gain
    ``g = lr * curvature``: ``log max |z|`` over the roots of ``z^(lag+1) - z^lag + g`` (the
    eigenvalues :func:`simulate.delayed_map_warning` reports; numpy's roots here, since the
    fit scans thousands of gains), > 0 beyond :func:`simulate.delayed_map_boundary`."""
    coef = np.zeros(int(lag) + 2)
    coef[0], coef[1], coef[-1] = 1.0, -1.0, float(lr) * float(curvature)
    if lag == 0:
        coef = np.array([1.0, -1.0 + float(lr) * float(curvature)])
    return float(np.log(np.max(np.abs(np.roots(coef)))))


def onset_vs_rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The delayed map of policy lag and finite steps as the simulator's linearised
    account of the collapses: one curvature ``lambda`` (gain ``g = rl.lr * lambda``, lag
    ``rl.staleness`` steps) fitted so that "growth rate > 0" agrees best with the runs'
    collapses by the launch horizon (package rule; a grid over ``lambda``, ties to the
    smallest), then each collapsed run's onset step against the growth rate at its cell
    (Spearman; a faster instability should collapse sooner: rho < 0)."""
    if not rows:
        return {}
    grid = np.geomspace(1.0, 1e4, 81)
    y = np.array([r["launch"]["collapse"] for r in rows], bool)
    cells = [(r["cell"]["rl.lr"], r["cell"]["rl.staleness"]) for r in rows]
    uniq = sorted(set(cells))

    def agree(lam: float) -> float:
        rate = {c: delayed_map_rate(c[0], c[1], lam) for c in uniq}
        return float(np.mean([(rate[c] > 0) == yy for c, yy in zip(cells, y, strict=True)]))

    scores = [agree(lam) for lam in grid]
    lam = float(grid[int(np.argmax(scores))])
    rate = {c: delayed_map_rate(c[0], c[1], lam) for c in uniq}
    out: dict[str, Any] = {"curvature": lam, "agreement": float(max(scores)),
                           "boundary_lr": {str(k): 2 * np.sin(np.pi / (2 * (2 * k + 1))) / lam
                                           for k in sorted({c[1] for c in uniq})}}  # fmt: skip
    pairs = [(rate[c], r["launch"]["onset"]) for c, r in zip(cells, rows, strict=True)
             if r["launch"]["onset"] is not None and rate[c] > 0]  # fmt: skip
    out["n_collapsed_beyond"] = len(pairs)
    if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1:
        out["onset_vs_rate"] = spearman([p[0] for p in pairs], [p[1] for p in pairs])
    out["pairs"] = [{"rate": a, "onset": b} for a, b in pairs]
    return out


def table(summary: dict[str, Any]) -> str:
    """The cells as a markdown table."""
    b = summary["short_horizon_bias"]
    lines = [f"Objective (product of competences) at the pilot horizon ({b['pilot_steps']} "
             f"steps) and the launch horizon ({b['launch_steps']}), mean over seeds; collapses "
             "by the package rule / the peak rule.", "",
             "| rl.lr | rl.staleness | seeds | objective@pilot | objective@launch | collapse@pilot "
             "| collapse@launch | onsets |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for c in summary["cells"]:
        cl = c["cell"]
        lines.append(
            f"| {cl['rl.lr']:g} | {cl['rl.staleness']} | {len(c['seeds'])} | "
            f"{c['pilot_objective']:.3f} | {c['launch_objective']:.3f} | "
            f"{c['collapse_pilot']} / {c['collapse_peak_pilot']} | "
            f"{c['collapse_launch']} / {c['collapse_peak_launch']} | "
            f"{', '.join(str(o) for o in c['onsets']) or '-'} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def figure(summary: dict[str, Any], path: Path) -> None:
    """Objective at the pilot horizon against the launch horizon, per run, marked by the
    package rule's collapse at the launch horizon; and the collapse onsets by ``rl.lr``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = summary["runs"]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.8))
    for r in runs:
        col = "tab:red" if r["launch"]["collapse"] else "tab:blue"
        ax[0].scatter(r["pilot"]["objective"], r["launch"]["objective"], c=col, s=18)
    ax[0].plot([0, 1], [0, 1], "k:", lw=0.8)
    b = summary["short_horizon_bias"]
    ax[0].set(xlabel=f"objective at {b['pilot_steps']} steps",
              ylabel=f"objective at {b['launch_steps']} steps",
              title="red: collapsed by the launch horizon")  # fmt: skip
    for r in runs:
        if r["launch"]["onset"] is not None:
            ax[1].scatter(r["cell"]["rl.lr"], r["launch"]["onset"], c="tab:red", s=18)
    ax[1].axhline(b["pilot_steps"], color="k", ls=":", lw=0.8)
    ax[1].set(xscale="log", xlabel="rl.lr", ylabel="collapse onset (step)",
              title="dotted: the pilot horizon")  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
