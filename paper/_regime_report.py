"""Analysis of the regime-map experiment (``paper/regime_map.py``): forecasts per cell,
observed labels, the nearest-neighbour baseline, the metrics, table and figure."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import simulate
from calibrate import group_of as group_of  # simulate's regime name -> its group
from calibrate import wilson as wilson  # 95 % Wilson interval of a proportion

#: Regime groups compared (calibrate.Prediction.groups's, in this order).
GROUPS = ("converged", "oscillating", "collapse", "unsettled", "failed")
#: Tie-break between seeds' labels: the more severe group wins.
SEVERITY = {"converged": 0, "unsettled": 1, "oscillating": 2, "collapse": 3, "failed": 4}
HEADLINE = (
    "regime_accuracy",
    "coverage90",
    "baseline_regime_accuracy",
    "baseline_coverage90",
    "boundary_error_decades",
    "baseline_boundary_error_decades",
    "regimes_observed",
)


def modal(labels: list[str]) -> str:
    """Most frequent label; ties go to the more severe one."""
    c = Counter(labels)
    return max(c, key=lambda g: (c[g], SEVERITY[g]))


def probe_size(run: Path) -> int:
    """Evaluation size (probes per agent) of a run folder."""
    import llm_runs

    log = llm_runs.read_run(run)
    return int(log.frame("agent")["n_eval"].iloc[-1])


def _label(gn: dict[str, np.ndarray], s: int) -> tuple[str, dict[str, float]]:
    probs = {g: float(gn[g][s]) for g in GROUPS}
    return max(GROUPS, key=lambda g: (probs[g], -SEVERITY[g])), probs


def prediction_cells(pred: Any, cells: list[tuple[int, int]], n_eval: int) -> list[dict]:
    """Per forecast cell: predicted label and group probabilities (network), per agent the
    latent final competence and the 90 % predictive interval of an *observed* final value
    (Binomial(n_eval, A) / n_eval over the posterior draws), and the 90 % curve band."""
    rng = np.random.default_rng(0)
    _, gn = pred.groups()
    out = []
    for s, cell in enumerate(cells):
        label, probs = _label(gn, s)
        agents = {}
        for j, a in enumerate(pred.agents):
            f = np.clip(pred.final[s, :, j], 0.0, 1.0)
            obs = rng.binomial(n_eval, np.repeat(f, 50)) / n_eval
            agents[a] = {
                "final_mean": float(f.mean()),
                "pred_q05": float(np.quantile(obs, 0.05)),
                "pred_q95": float(np.quantile(obs, 0.95)),
                "band_q05": pred.bands[s, 0, :, j].tolist(),
                "band_q95": pred.bands[s, 3, :, j].tolist(),
                "mean": pred.mean[s, :, j].tolist(),
            }
        out.append({"cell": list(cell), "setting": pred.settings[s], "label": label,
                    "probs": probs, "agents": agents})  # fmt: skip
    return out


def boundary_scan(post: Any, cfg: Any, predict: Callable) -> dict[str, Any]:
    """Forecast labels on a fine learning-rate scan of every staleness row."""
    lrs = np.asarray(cfg.lrs, float)
    half = 0.5 * (np.log10(lrs[-1]) - np.log10(lrs[0])) / max(len(lrs) - 1, 1)
    fine = np.logspace(np.log10(lrs[0]) - half, np.log10(lrs[-1]) + half, cfg.boundary_points)
    settings = [{"rl.lr": float(x), "rl.staleness": int(k)} for k in cfg.staleness for x in fine]
    pred = predict(post, settings, steps=float(cfg.steps), max_draws=cfg.draws)
    _, gn = pred.groups()
    labels = [_label(gn, s)[0] for s in range(len(settings))]
    n = len(fine)
    return {
        "lrs": fine.tolist(),
        "rows": {
            str(k): {
                "labels": labels[r * n : (r + 1) * n],
                "p_converged": [float(gn["converged"][r * n + i]) for i in range(n)],
            }
            for r, k in enumerate(cfg.staleness)
        },
    }


def _boundary(lrs: np.ndarray, labels: list[str]) -> float:
    """log10 learning rate where a row first leaves ``converged`` (midpoint between grid
    points; the row's outer edge, half a step out, when it never does / always has)."""
    x = np.log10(lrs)
    step = (x[-1] - x[0]) / max(len(x) - 1, 1)
    for i, lab in enumerate(labels):
        if lab != "converged":
            return float(x[0] - step / 2 if i == 0 else (x[i - 1] + x[i]) / 2)
    return float(x[-1] + step / 2)


def _observe(cfg: Any, runs: Path, run_name: Callable) -> dict[str, dict]:
    import llm_runs

    obs = {}
    for cell in cfg.cells():
        for seed in cfg.seeds:
            name = run_name(cfg, cell, seed)
            log = llm_runs.read_run(runs / name)
            r = llm_runs.observed_regime(log)
            wide = log.competence()
            obs[name] = {
                "cell": list(cell),
                "seed": seed,
                "regime": r["regime"],
                "group": group_of(r["regime"]),
                "node_regimes": r["node_regimes"],
                "diverged": r["diverged"],
                "final": {a: float(wide[a].dropna().iloc[-1]) for a in wide.columns},
                "steps": [int(s) for s in wide.index],
                "curves": {a: [float(v) for v in wide[a]] for a in wide.columns},
            }
    return obs


def _baseline(cfg: Any, obs: dict, run_name: Callable, n_eval: int) -> dict[tuple, dict]:
    """Nearest pilot (grid-index distance, first pilot on ties): its modal label, and per
    agent its seeds' mean final +- 1.645 x the pooled within-setting sd."""
    per = {c: [obs[run_name(cfg, c, s)] for s in cfg.seeds] for c in cfg.pilots}
    agents = list(next(iter(per.values()))[0]["final"])
    if len(cfg.seeds) > 1:
        var = [np.var([r["final"][a] for r in rs], ddof=1) for rs in per.values() for a in agents]
        sd = float(np.sqrt(np.mean(var)))
    else:
        sd = None
    out = {}
    for cell in cfg.cells():
        near = min(cfg.pilots, key=lambda p: (p[0] - cell[0]) ** 2 + (p[1] - cell[1]) ** 2)
        rs = per[near]
        iv = {}
        for a in agents:
            m = float(np.mean([r["final"][a] for r in rs]))
            s = sd if sd is not None else math.sqrt(max(m * (1 - m), 1e-4) / n_eval)
            iv[a] = (m - 1.645 * s, m + 1.645 * s)
        out[cell] = {"near": near, "label": modal([r["group"] for r in rs]), "interval": iv}
    return out


def analyse(cfg: Any, runs: Path, out: Path, preds: dict, times: dict, run_name: Callable):
    """Compare forecasts and baseline with the observed runs; write observed.json,
    summary.json, table.md and regime_map.png; returns the summary."""
    obs = _observe(cfg, runs, run_name)
    simulate.write_json(out / "observed.json", obs)
    created = preds["created"]
    import llm_runs

    pre = all(
        llm_runs.read_run(runs / run_name(cfg, tuple(c["cell"]), s)).manifest["created"] > created
        for c in preds["cells"]
        for s in cfg.seeds
    )
    base = _baseline(cfg, obs, run_name, int(preds["n_eval"]))
    hits = bhits = cov = bcov = n_cov = 0
    rows = []
    for c in preds["cells"]:
        cell = tuple(c["cell"])
        rs = [obs[run_name(cfg, cell, s)] for s in cfg.seeds]
        for r in rs:
            hits += r["group"] == c["label"]
            bhits += r["group"] == base[cell]["label"]
            for a, v in r["final"].items():
                pa = c["agents"][a]
                cov += pa["pred_q05"] <= v <= pa["pred_q95"]
                lo, hi = base[cell]["interval"][a]
                bcov += lo <= v <= hi
                n_cov += 1
        rows.append((cell, c, rs))
    n = len(preds["cells"]) * len(cfg.seeds)
    lrs = np.asarray(cfg.lrs, float)
    cell_obs = {cell: modal([obs[run_name(cfg, cell, s)]["group"] for s in cfg.seeds])
                for cell in cfg.cells()}  # fmt: skip
    scan = preds["boundary_scan"]
    b_err, bb_err, bounds = [], [], {}
    for j, k in enumerate(cfg.staleness):
        o = _boundary(lrs, [cell_obs[(i, j)] for i in range(len(lrs))])
        p = _boundary(np.asarray(scan["lrs"]), scan["rows"][str(k)]["labels"])
        b = _boundary(lrs, [base[(i, j)]["label"] for i in range(len(lrs))])
        b_err.append(abs(p - o))
        bb_err.append(abs(b - o))
        bounds[str(k)] = {"observed_log10_lr": o, "predicted_log10_lr": p, "baseline_log10_lr": b}
    summary = {
        "regime_accuracy": hits / n,
        "regime_accuracy_ci95": wilson(hits, n),
        "coverage90": cov / n_cov,
        "coverage90_ci95": wilson(cov, n_cov),
        "baseline": "nearest pilot setting: its modal label; final +- 1.645 pooled sd",
        "baseline_regime_accuracy": bhits / n,
        "baseline_regime_accuracy_ci95": wilson(bhits, n),
        "baseline_coverage90": bcov / n_cov,
        "boundary_error_decades": float(np.mean(b_err)),
        "baseline_boundary_error_decades": float(np.mean(bb_err)),
        "boundaries": bounds,
        "regimes_observed": sorted({r["group"] for r in obs.values()}),
        "regime_labels_observed": dict(Counter(r["regime"] for r in obs.values())),
        "n_heldout_runs": n,
        "n_pilot_runs": len(cfg.pilots) * len(cfg.seeds),
        "predictions_created": created,
        "predictions_before_heldout_runs": pre,
        "wall_s": {k: round(v, 1) for k, v in times.items()}
        | {"total": round(sum(times.values()), 1)},
        "command": "python -m paper.regime_map",
    }
    simulate.write_json(out / "summary.json", summary)
    _table(out / "table.md", cfg, rows, base, obs, summary, run_name)
    from paper._regime_figure import figure

    figure(out / "regime_map.png", cfg, preds, obs, base, cell_obs, run_name)
    return summary


def _table(path: Path, cfg, rows, base, obs, summary, run_name) -> None:
    lines = [
        "| rl.lr | staleness | predicted (P) | observed (seeds) | baseline | finals in 90 % PI |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for cell, c, rs in rows:
        s = c["setting"]
        inside = sum(c["agents"][a]["pred_q05"] <= v <= c["agents"][a]["pred_q95"]
                     for r in rs for a, v in r["final"].items())  # fmt: skip
        total = sum(len(r["final"]) for r in rs)
        lines.append(
            f"| {s['rl.lr']:g} | {s['rl.staleness']} | {c['label']} ({c['probs'][c['label']]:.2f}) "
            f"| {', '.join(r['group'] for r in rs)} | {base[cell]['label']} | {inside}/{total} |"
        )
    for p in cfg.pilots:
        s = cfg.setting(p)
        labs = ", ".join(obs[run_name(cfg, p, seed)]["group"] for seed in cfg.seeds)
        lines.append(f"| {s['rl.lr']:g} | {s['rl.staleness']} | (pilot) | {labs} | | |")
    f = summary
    lines += [
        "",
        f"Regime accuracy {f['regime_accuracy']:.2f} (95 % CI {f['regime_accuracy_ci95'][0]:.2f}–"
        f"{f['regime_accuracy_ci95'][1]:.2f}) vs baseline {f['baseline_regime_accuracy']:.2f}; "
        f"90 % coverage {f['coverage90']:.2f} vs baseline {f['baseline_coverage90']:.2f}; "
        f"boundary error {f['boundary_error_decades']:.2f} decades vs baseline "
        f"{f['baseline_boundary_error_decades']:.2f} ({f['n_heldout_runs']} held-out runs).",
    ]
    simulate.write_text(path, "\n".join(lines) + "\n")
