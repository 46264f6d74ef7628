"""Phases of the Pool-of-Agents study on the testbed (driver: paper/pool_testbed.py; the
design and every rule are stated there): ES's learning rate chosen from the scan, the
simulator's predictions (``_pool_analysis``), and the summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from paper._pool_analysis import make_predictions, summarise
from paper._pool_compare import (
    compute_cost,
    design_power,
    k1_vs_k8,
    prediction_checks,
    tradeoff_figure,
)
from paper._study import store_once
from paper._study_runs import archive_runs, run_curves
from simulate.common import write_json, write_text


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
    """The old study's summary on these runs plus ``k1_vs_k8``, ``prediction_checks`` and
    ``compute`` (``_pool_compare``), ``compare.md`` and ``tradeoff.png``; finished runs
    archived into ``out/runs``."""
    n = archive_runs(runs, out)
    print(f"  archived {n} finished runs into {out / 'runs'}")
    summary = summarise(cfg, runs, out)
    pred_path = out / "predictions.json"
    pred = json.loads(pred_path.read_text()) if pred_path.is_file() else {}
    summary["k1_vs_k8"] = k1_vs_k8(summary["methods"], k=max(cfg.grad_K))
    summary["prediction_checks"] = prediction_checks(summary["methods"], pred)
    summary["compute"] = compute_cost(summary["methods"], cfg)
    summary["power"] = design_power(len(cfg.seeds), pred, k=max(cfg.grad_K))
    write_json(out / "summary.json", summary)
    write_text(out / "compare.md", compare_table(summary, k=max(cfg.grad_K)))
    tradeoff_figure(summary["compute"], out / "tradeoff.png")
    return summary


def compare_table(s: dict[str, Any], k: int) -> str:
    """Markdown: K = 1 vs K = ``k`` per setting and method, then each prediction checked."""
    lines = [
        f"| setting | method | var K={k} / var K=1 [95 % CI] | resolved | "
        f"collapse K={k} vs K=1 | Fisher p |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for setting, ms in s["k1_vs_k8"].items():
        for method, c in ms.items():
            v, col = c["variance"], c["collapse"]
            ratio = "– (no spread at K=1)" if v is None else (
                f"{v['ratio']:.2f} [{v['ci95'][0]:.2f}, {v['ci95'][1]:.2f}]")  # fmt: skip
            lines.append(
                f"| {setting} | {method} | {ratio} | "
                f"{'–' if v is None else 'yes' if v['resolved'] else 'no'} | "
                f"{col['rate_K']:.2f} vs {col['rate_1']:.2f} | {col['p_fisher']:.3f} |"
            )
    lines += ["", "| setting | cell | predicted var (×1e3) | measured [95 % CI] | right | "
              "predicted collapse | measured [95 % CI] | right |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for setting, cells in s["prediction_checks"]["cells"].items():
        for name, c in cells.items():
            lo, hi = c["measured_ci95"]
            clo, chi = c["collapse_ci95"]
            lines.append(
                f"| {setting} | {name} | {1e3 * c['predicted_variance']:.2f} | "
                f"{1e3 * c['measured_variance']:.2f} [{1e3 * lo:.2f}, {1e3 * hi:.2f}] | "
                f"{'yes' if c['variance_right'] else 'no'} | {c['predicted_collapse']:.2f} | "
                f"{c['measured_collapse']:.2f} [{clo:.2f}, {chi:.2f}] | "
                f"{'yes' if c['collapse_right'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"
