"""Which committed numbers change under the new labels (the relabel study's ``changed``
section): recomputed here from the committed inputs, the other studies' summaries untouched.

* regime map: the model's and the nearest-pilot baseline's regime accuracy over the 24
  held-out runs, and the observed collapse boundary per staleness with both boundary errors;
* pool: collapse counts per setting and method, the committed rule (final e2e < half of step
  0's) against the new one;
* hypotheses: oscillating runs of C1 and I1 at the lagged setting, and label counts.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np


def _group(name: str) -> str:
    from paper._regime_report import group_of

    return group_of(name)


class _Grid:
    """The regime map's stored design, as much of it as its report's helpers read."""

    def __init__(self, design: dict[str, Any]) -> None:
        self.lrs = tuple(float(v) for v in design["lrs"])
        self.staleness = tuple(int(v) for v in design["staleness"])
        self.seeds = tuple(int(v) for v in design["seeds"])
        self.pilots = tuple(tuple(int(i) for i in p) for p in design["pilots"])

    def cells(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(len(self.lrs)) for j in range(len(self.staleness))]


def run_name(cfg: _Grid, cell: tuple[int, int], seed: int) -> str:
    """The regime map's run names (as ``paper/regime_map.py`` writes them)."""
    return f"lr{cfg.lrs[cell[0]]:g}_k{cfg.staleness[cell[1]]}_s{seed}"


def regime_map(root: Path, new: dict[str, str]) -> dict[str, Any]:
    """The regime map's summary numbers under ``new`` labels (run name -> regime name)."""
    from paper import _regime_report as report

    cfg = _Grid(json.loads((root / "regime_map" / "config.json").read_text())["design"])
    obs = json.loads((root / "regime_map" / "observed.json").read_text())
    preds = json.loads((root / "regime_map" / "predictions.json").read_text())
    old_sum = json.loads((root / "regime_map" / "summary.json").read_text())
    relab = {k: dict(v, regime=new[k], group=_group(new[k])) for k, v in obs.items()}
    out: dict[str, Any] = {}
    for tag, o in (("old", obs), ("new", relab)):
        base = report._baseline(cfg, o, run_name, int(preds["n_eval"]))
        hits = bhits = n = 0
        for c in preds["cells"]:
            cell = tuple(c["cell"])
            for s in cfg.seeds:
                g = o[run_name(cfg, cell, s)]["group"]
                hits += g == c["label"]
                bhits += g == base[cell]["label"]
                n += 1
        lrs = np.asarray(cfg.lrs, float)
        cell_obs = {cell: report.modal([o[run_name(cfg, cell, s)]["group"] for s in cfg.seeds])
                    for cell in cfg.cells()}  # fmt: skip
        b_err, bb_err, bounds = [], [], {}
        for j, k in enumerate(cfg.staleness):
            ob = report._boundary(lrs, [cell_obs[(i, j)] for i in range(len(lrs))])
            pb = old_sum["boundaries"][str(k)]["predicted_log10_lr"]
            bb = report._boundary(lrs, [base[(i, j)]["label"] for i in range(len(lrs))])
            b_err.append(abs(pb - ob))
            bb_err.append(abs(bb - ob))
            bounds[str(k)] = {"observed_log10_lr": ob, "baseline_log10_lr": bb}
        out[tag] = {
            "regime_accuracy": hits / n,
            "regime_accuracy_ci95": report.wilson(hits, n),
            "baseline_regime_accuracy": bhits / n,
            "baseline_regime_accuracy_ci95": report.wilson(bhits, n),
            "boundary_error_decades": float(np.mean(b_err)),
            "baseline_boundary_error_decades": float(np.mean(bb_err)),
            "boundaries": bounds,
            "regime_labels_observed": dict(Counter(r["regime"] for r in o.values())),
            "n_heldout_runs": n,
        }
    out["committed_regime_accuracy"] = old_sum["regime_accuracy"]
    out["committed_baseline_regime_accuracy"] = old_sum["baseline_regime_accuracy"]
    out["old_reproduces_committed"] = bool(
        abs(out["old"]["regime_accuracy"] - old_sum["regime_accuracy"]) < 1e-12
        and abs(out["old"]["baseline_regime_accuracy"] - old_sum["baseline_regime_accuracy"])
        < 1e-12
    )
    return out


def pool(runs: list[dict[str, Any]], new: dict[str, str]) -> dict[str, Any]:
    """Collapsed runs per pool setting and method: committed rule vs the new label."""
    from paper._pool_analysis import method_label

    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        if not r["experiment"].startswith("pool/"):
            continue
        setting, method, k = r["experiment"].split("/")[1:]
        name = method_label(method, int(k.lstrip("K")))
        row = out.setdefault(setting, {}).setdefault(name, {"seeds": 0, "old": 0, "new": 0})
        row["seeds"] += 1
        row["old"] += bool(r["old_rule_collapsed"])
        row["new"] += new[r["key"]] == "collapse"
    changed = [
        f"{s} / {m}: {v['old']}/{v['seeds']} -> {v['new']}/{v['seeds']}"
        for s, ms in out.items()
        for m, v in ms.items()
        if v["old"] != v["new"]
    ]
    return {"collapsed": out, "changed_rates": changed}


def hypotheses(runs: list[dict[str, Any]], new: dict[str, str], root: Path) -> dict[str, Any]:
    """Oscillating C1 / I1 runs at the lagged setting, and label counts, old vs new."""
    summ = json.loads((root / "hypotheses_old_testbed" / "summary.json").read_text())
    osc = summ["hypotheses"]["i1_adapts_faster"].get("oscillation", {})
    task = osc.get("setting", {}).get("task", "math")
    hyp = [r for r in runs if r["experiment"].startswith("hypotheses/")]
    res: dict[str, Any] = {"lag_oscillating": {}}
    for motif in ("C1", "I1"):
        lag = [r for r in hyp if r["experiment"] == f"hypotheses/lag/{task}/{motif}"]
        res["lag_oscillating"][motif] = {
            "runs": len(lag),
            "old": sum(_group(r["old"]) == "oscillating" for r in lag),
            "new": sum(_group(new[r["key"]]) == "oscillating" for r in lag),
        }
    res["committed_lag_oscillating"] = osc.get("oscillating")
    res["labels_old"] = dict(Counter(r["old"] for r in hyp))
    res["labels_new"] = dict(Counter(new[r["key"]] for r in hyp))
    return res
