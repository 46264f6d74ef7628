"""Phases of the recommendation benchmark on the testbed (driver and design:
paper/recommend_study.py): the check that the best cell is inside the grid and not a pilot,
made on the trained cells before any method runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from paper._study import store_once
from paper._study_runs import archive_runs, run_curves

__all__ = [
    "best_cell_check",
    "cell_finals",
    "check_phase",
    "power_phase",
    "seed_plan",
    "welch_interval",
]


def cell_finals(
    cfg: Any, runs: Path, *, base_only: bool = False
) -> tuple[dict[tuple[int, int, int], list[float]], int]:
    """Every finished run's final end-to-end accuracy, by cell; and how many runs of the
    design (only those at the design's ``seeds`` if ``base_only``) have not finished."""
    from paper._recommend_design import run_name

    finals: dict[tuple[int, int, int], list[float]] = {}
    missing = 0
    for job in cfg.jobs("cells"):
        if base_only and job[3] not in cfg.seeds:
            continue
        path = runs / run_name(*job)
        c = run_curves(path) if (path / "manifest.json").is_file() else None
        if c is None:
            missing += 1
            continue
        finals.setdefault(cfg.cell_of(job), []).append(float(c["e2e"][-1]))
    return finals, missing


def welch_interval(a: Any, b: Any) -> list[float]:
    """95 % Welch interval of ``mean(a) - mean(b)`` (each at least 2 values)."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    d = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    if se == 0.0:
        return [d, d]
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.975, df)) * se
    return [d - half, d + half]


def best_cell_check(cfg: Any, finals: dict[tuple[int, int, int], list[float]]) -> dict[str, Any]:
    """The best cell by mean final end-to-end accuracy, whether it is inside the grid and not
    a pilot, and its lead over the best cell on the grid's edge (95 % Welch interval).

    Args:
        cfg: The design (``cells``, ``interior``, ``is_pilot``, ``lrs``, ``knob``,
            ``knob_values``, ``motifs``).
        finals: Final end-to-end accuracies per cell (index triples), every cell present
            with at least 2 seeds.

    Raises:
        ValueError: A cell of the design is missing or has fewer than 2 seeds.
    """
    thin = [c for c in cfg.cells() if len(finals.get(c, [])) < 2]
    if thin:
        raise ValueError(f"{len(thin)} cells have fewer than 2 finished seeds, e.g. {thin[0]}")
    mean = {c: float(np.mean(finals[c])) for c in cfg.cells()}
    best = max(cfg.cells(), key=lambda c: mean[c])
    edge = [c for c in cfg.cells() if not cfg.interior(c)]
    best_edge = max(edge, key=lambda c: mean[c]) if edge else None

    def name(c: tuple[int, int, int]) -> dict[str, Any]:
        i, j, m = c
        return {"rl.lr": cfg.lrs[i], cfg.knob: cfg.knob_values[j], "network.motif": cfg.motifs[m]}

    lead = None
    if best_edge is not None and best_edge != best:
        lead = {"over": name(best_edge), "difference": mean[best] - mean[best_edge],
                "ci95": welch_interval(finals[best], finals[best_edge])}  # fmt: skip
    table = [{**name(c), "mean": mean[c], "sd": float(np.std(finals[c], ddof=1)),
              "n": len(finals[c]), "pilot": cfg.is_pilot(c), "interior": cfg.interior(c)}
             for c in cfg.cells()]  # fmt: skip
    by_motif = {m: max(mean[c] for c in cfg.cells() if c[2] == k) for k, m in enumerate(cfg.motifs)}
    return {
        "best": {**name(best), "mean": mean[best]},
        "best_cell_interior": cfg.interior(best),
        "best_is_pilot": cfg.is_pilot(best),
        "passed": cfg.interior(best) and not cfg.is_pilot(best),
        "lead_over_best_edge_cell": lead,
        "best_per_wiring": by_motif,
        "cells": table,
    }


def check_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Archive every finished run's log under ``out/runs``, then write ``check.json`` once
    (kept if it exists): :func:`best_cell_check` on every cell's trained runs."""
    archive_runs(runs, out)
    finals, missing = cell_finals(cfg, runs)
    if missing:
        raise RuntimeError(f"{missing} runs of the grid have not finished: run --phase cells")
    try:
        res = store_once(out / "check.json", lambda: best_cell_check(cfg, finals))
    except ValueError as err:
        raise RuntimeError(str(err)) from err
    b = res["best"]
    print(f"  best cell {b} (mean final e2e {b['mean']:.3f}): inside the grid "
          f"{res['best_cell_interior']}, a pilot {res['best_is_pilot']}")  # fmt: skip


def methods_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Every method on the trained cells (:func:`_recommend_methods.methods_phase`)."""
    from paper._recommend_design import run_name
    from paper._recommend_methods import methods_phase as run_methods

    run_methods(cfg, runs, out, run_name)


def seed_plan(
    cfg: Any,
    finals: dict[tuple[int, int, int], list[float]],
    *,
    margin: float = 0.1,
    half_width: float = 0.025,
    z: float = 1.96,
) -> dict[str, Any]:
    """Seeds per cell from the measured spread (a power calculation for cell means).

    The cells whose mean lies within ``margin`` of the best cell's are the ones whose true
    value decides regrets at the benchmark's resolution; their within-cell sd, pooled
    (``sum((n_c - 1) sd_c^2) / sum(n_c - 1)``), gives the seeds ``n = ceil((z sd /
    half_width)^2)`` that put a 95 % half-width of ``half_width`` on each of their means.
    Cells further down keep the design's seeds (a regret above ``margin`` is not changed in
    rank by their noise).

    Args:
        cfg: The design (``cells``, ``seeds``).
        finals: Final end-to-end accuracies per cell (index triples) at the design's seeds,
            every cell with at least 2.
        margin: Distance below the best cell's mean (accuracy) of the cells planned for.
        half_width: Wanted 95 % half-width of a planned cell's mean (accuracy).
        z: Normal quantile of the half-width.

    Returns:
        ``pooled_sd``, ``df``, ``n_seeds`` (per planned cell), ``cells`` (``[i, j, m, n]``
        for every planned cell with ``n`` above the design's seeds), ``extra_runs`` and the
        arguments.

    Raises:
        ValueError: A cell has fewer than 2 values, or a bad argument.
    """
    if not (margin >= 0 and half_width > 0 and z > 0):
        raise ValueError("margin must be >= 0, half_width and z > 0")
    thin = [c for c in cfg.cells() if len(finals.get(c, [])) < 2]
    if thin:
        raise ValueError(f"{len(thin)} cells have fewer than 2 finished seeds, e.g. {thin[0]}")
    mean = {c: float(np.mean(finals[c])) for c in cfg.cells()}
    top = max(mean.values())
    near = [c for c in cfg.cells() if mean[c] >= top - margin]
    df = sum(len(finals[c]) - 1 for c in near)
    var = sum((len(finals[c]) - 1) * float(np.var(finals[c], ddof=1)) for c in near) / df
    sd = math.sqrt(var)
    n = max(len(cfg.seeds), math.ceil((z * sd / half_width) ** 2))
    cells = [[*c, n] for c in near if n > len(cfg.seeds)]
    return {"margin": margin, "half_width": half_width, "z": z, "best_mean": top,
            "planned_cells": len(near), "pooled_sd": sd, "df": df, "n_seeds": n,
            "cells": cells, "extra_runs": len(cells) * (n - len(cfg.seeds))}  # fmt: skip


def power_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Write ``power.json`` once (kept if it exists): :func:`seed_plan` on the cells at the
    design's ``seeds``; the design's ``seeds_by_cell`` must be that plan."""
    finals, missing = cell_finals(cfg, runs, base_only=True)
    if missing:
        raise RuntimeError(f"{missing} runs of the grid have not finished: run --phase cells")
    try:
        res = store_once(
            out / "power.json",
            lambda: seed_plan(
                cfg, finals, margin=cfg.power_margin, half_width=cfg.power_half_width
            ),
        )
    except ValueError as err:
        raise RuntimeError(str(err)) from err
    print(f"  pooled sd {res['pooled_sd']:.4f} ({res['df']} df) over {res['planned_cells']} "
          f"cells: {res['n_seeds']} seeds each, {res['extra_runs']} more runs")  # fmt: skip
    if sorted(map(list, cfg.seeds_by_cell)) != sorted(res["cells"]):
        raise RuntimeError(
            "the design's seeds_by_cell is not the power calculation's plan in "
            f"{out / 'power.json'}: revise the design"
        )
