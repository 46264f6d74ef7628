"""Phases of the Pool-of-Agents study on the testbed (driver: paper/pool_testbed.py; the
design and every rule are stated there): ES's learning rate chosen from the scan, the
simulator's predictions (``_pool_analysis``), and the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from _pool_analysis import make_predictions, run_curves, summarise
from _study import store_once
from _testbed_analysis import archive_runs


def choose_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """``scan.json`` (once): each ES ratio's mean final end-to-end accuracy over the scan
    runs and the chosen ratio (the highest; ties: the smaller)."""

    def make() -> dict[str, Any]:
        finals: dict[float, list[float]] = {}
        for setting, method, k, seed in cfg.jobs("scan"):
            path = runs / cfg.run_name(setting, method, k, seed)
            c = run_curves(path) if (path / "manifest.json").is_file() else None
            if c is None:
                raise RuntimeError(f"scan run {path.name} has not finished: run --phase scan")
            finals.setdefault(float(method[2:]), []).append(float(c["e2e"][-1]))
        means = {r: float(np.mean(v)) for r, v in finals.items()}
        best = max(sorted(means), key=lambda r: means[r])  # max keeps the first of ties
        print(
            "  ES ratio -> mean final e2e: "
            + ", ".join(f"{r:g}: {m:.3f}" for r, m in means.items())
        )
        return {
            "finals": {f"{r:g}": v for r, v in finals.items()},
            "mean_final_e2e": {f"{r:g}": m for r, m in means.items()},
            "ratio": best,
            "rule": "highest mean final e2e; ties: the smaller ratio",
        }

    return store_once(out / "scan.json", make)


def predict_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """``predictions.json`` (once): the simulator's pool model on each setting's K = 1 runs."""
    return make_predictions(cfg, runs, out)


def summary_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """The old study's summary on these runs; finished runs archived into ``out/runs``."""
    n = archive_runs(runs, out)
    print(f"  archived {n} finished runs into {out / 'runs'}")
    return summarise(cfg, runs, out)
