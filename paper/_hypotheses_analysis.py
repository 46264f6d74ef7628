"""Summary of the hypotheses study (driver: paper/hypotheses_study.py): the pre-stated
measures and tests of ``_hypotheses_metrics`` on the real runs, beside the simulator's stored
predictions; writes ``summary.json``, ``runs.json``, ``table.md`` and ``hypotheses.png``.

Secondary measures (reported, not tested): per motif, the within-run variance of ``A_Z`` and
of end-to-end accuracy from the first pulse on (mean over seeds), the steps to regain 90 %
of the pre-shift accuracy, and at the lagged setting the runs that simulate's classifier
(``llm_runs.observed_regime``) labels a damped or sustained oscillation, compared between I1
and C1 by Fisher's exact test (one-sided).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from paper._hypotheses_metrics import (
    ALPHA,
    bootstrap_ci,
    dip,
    mean_ci,
    permutation_test,
    pulse_recovery,
    recovery,
    steps_to_recover,
)
from paper._hypotheses_predict import OSCILLATING
from paper._regime_report import wilson
from paper._study_runs import run_curves
from simulate.common import write_json, write_text

#: hypothesis -> (condition, measure, focus, compared): the statistic is the mean over tasks of
#: (mean of ``compared``'s values - mean of ``focus``'s); both are > 0 when the hypothesis holds
#: (H1: the others dip more than C1; H2: I1 recovers more than C1). None: the other 7 types.
KEYS: dict[str, tuple[str, str, str, list[str] | None]] = {
    "c1_filters_spurious": ("pulse", "dip", "C1", None),
    "i1_adapts_faster": ("shift", "recovery", "C1", ["I1"]),
}


def collect(cfg: Any, runs: Path) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """Finished test runs by ``(condition, task, motif)``, seeds in order."""
    from paper._hypotheses_design import run_name as study_run_name

    run_name = getattr(cfg, "run_name", study_run_name)  # a design may name its own runs
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for cond, task, motif, seed in cfg.jobs("runs"):
        path = runs / run_name(cond, task, motif, seed)
        if (path / "manifest.json").is_file():
            c = run_curves(path)
            if c is not None:
                c["seed"] = seed
                c["created"] = json.loads((path / "manifest.json").read_text())["created"]
                out.setdefault((cond, task, motif), []).append(c)
    return out


def measures(cfg: Any, cond: str, c: dict[str, Any]) -> dict[str, Any]:
    """The per-run measures of one finished run."""
    steps, e2e, a_z = c["steps"], c["e2e"], c["comp"][:, -1]
    if cond == "pulse":
        late = steps >= min(cfg.pulse_starts)
        return {
            "dip": dip(steps, e2e, cfg.pulse_starts, cfg.pulse_length, cfg.eval_every),
            "dip_A_Z": dip(steps, a_z, cfg.pulse_starts, cfg.pulse_length, cfg.eval_every),
            "var_e2e": float(np.var(e2e[late], ddof=1)),
            "var_A_Z": float(np.var(a_z[late], ddof=1)),
            "pulse_recovery_steps": pulse_recovery(steps, e2e, cfg.pulse_starts, cfg.pulse_length),
        }
    out = {
        "recovery": recovery(steps, e2e, cfg.shift_step),
        "steps_to_recover": steps_to_recover(steps, e2e, cfg.shift_step, cfg.eval_every),
    }
    if cond == "lag":
        out["oscillating"] = c["regime"] in OSCILLATING
    return out


def _band(x: list[float]) -> dict[str, Any]:
    a = np.asarray(x, float)
    ci = mean_ci(a) if a.size > 1 else None
    return {"mean": float(a.mean()), "ci95": ci, "values": a.tolist()}


def summarise(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """Write the study's summary files from the finished runs and the stored predictions."""
    from scipy.stats import fisher_exact

    groups = collect(cfg, runs)
    pred_path = out / "predictions.json"
    pred = json.loads(pred_path.read_text()) if pred_path.is_file() else None
    per: dict[str, Any] = {}
    for (cond, task, motif), runs_ in groups.items():
        ms = [measures(cfg, cond, c) for c in runs_]
        row: dict[str, Any] = {
            "seeds": [c["seed"] for c in runs_],
            "regimes": [c["regime"] for c in runs_],
            "steps": runs_[0]["steps"].tolist(),
            "e2e_mean_curve": np.mean([c["e2e"] for c in runs_], 0).tolist(),
            "A_Z_mean_curve": np.mean([c["comp"][:, -1] for c in runs_], 0).tolist(),
            # per agent: the largest rise of its probe competence above its step-0 level
            "rise": dict(
                zip(
                    runs_[0]["roles"],
                    np.mean([c["comp"].max(0) - c["comp"][0] for c in runs_], axis=0).tolist(),
                    strict=True,
                )
            ),
        }
        for k in ms[0]:
            vals = [m[k] for m in ms]
            if k in ("steps_to_recover", "oscillating", "pulse_recovery_steps"):
                row[k] = vals
            else:
                row[k] = _band(vals)
        if "pulse_recovery_steps" in row:
            flat = [x for r in row["pulse_recovery_steps"] for x in r]
            got = [x for x in flat if x is not None]
            row["pulse_recovered_fraction"] = len(got) / len(flat)
            row["pulse_recovery_mean_steps"] = float(np.mean(got)) if got else None
        per.setdefault(cond, {}).setdefault(task, {})[motif] = row
    hyps: dict[str, Any] = {}
    for key, (cond, measure, focus, compared) in KEYS.items():
        others = compared or [m for m in cfg.motifs if m != focus]
        data = {
            t: {m: np.asarray(r[measure]["values"]) for m, r in by.items()}
            for t, by in per.get(cond, {}).items()
        }
        complete = set(data) == set(cfg.tasks) and all(
            all(m in by and len(by[m]) == len(cfg.seeds) for m in [focus, *others])
            for by in data.values()
        )
        h: dict[str, Any] = {
            "complete": complete,
            "alpha": ALPHA,
            "measure": measure,
            "focus": focus,
            "compared": others,
        }
        if pred is not None:
            h["predicted"] = pred["predicted"][key]
            tag = "h1_statistic" if key == "c1_filters_spurious" else "h2_statistic"
            h["predicted_statistic"] = {t: v[tag] for t, v in pred["tasks"].items()}
        if complete:
            stat, p = permutation_test(data, focus, others)
            per_task = {t: permutation_test({t: by}, focus, others) for t, by in data.items()}
            h.update(
                {
                    "effect": stat,
                    "ci95": bootstrap_ci(data, focus, others),
                    "p": p,
                    "holds": bool(stat > 0 and p < ALPHA),
                    "per_task": {
                        t: {"effect": e, "p": q, "ci95": bootstrap_ci({t: data[t]}, focus, others)}
                        for t, (e, q) in per_task.items()
                    },
                    "test": _test_text(key, p, focus, others),
                }
            )
        hyps[key] = h
    lag = per.get("lag", {}).get(cfg.lag_task, {})
    osc = {m: int(sum(r["oscillating"])) for m, r in lag.items()}
    if {"C1", "I1"} <= set(osc) and all(len(lag[m]["oscillating"]) == len(cfg.seeds) for m in osc):
        n = len(cfg.seeds)
        table = [[osc["I1"], n - osc["I1"]], [osc["C1"], n - osc["C1"]]]
        p_osc = float(fisher_exact(table, alternative="greater").pvalue)  # pyright: ignore
        hyps["i1_adapts_faster"]["oscillation"] = {
            "setting": {
                "rl.lr": getattr(cfg, "lag_lr", cfg.lr),
                "rl.staleness": cfg.lag_staleness,
                "task": cfg.lag_task,
            },
            "oscillating": osc,
            "runs": n,
            "ci95": {m: wilson(k, n) for m, k in osc.items()},
            "p_fisher": p_osc,
            "holds": bool(osc["I1"] > osc["C1"] and p_osc < ALPHA),
            "regimes": {m: r["regimes"] for m, r in lag.items()},
            "recovery": {m: r["recovery"] for m, r in lag.items()},
            "predicted": None
            if pred is None
            else pred["predicted"]["i1_oscillates_where_c1_does_not"],
        }
    summary = {
        "hypotheses": hyps,
        "rank_agreement": None if pred is None else rank_agreement(per, pred),
        "per_motif": per,
        "predictions_created": None if pred is None else pred["created"],
        "first_run_created": min(
            (c.get("created", "") for rs in groups.values() for c in rs), default=None
        ),
        "design": {"steps": cfg.steps, "tasks": cfg.tasks, "seeds": len(cfg.seeds)},
        "command": "python -m paper.hypotheses_study",
    }
    write_json(out / "summary.json", summary)
    write_json(
        out / "runs.json",
        {
            f"{cond}/{task}/{motif}": [
                {
                    "run": Path(c["path"]).name,
                    "steps": c["steps"].tolist(),
                    "e2e": c["e2e"].tolist(),
                    "competence": c["comp"].tolist(),
                    "roles": c["roles"],
                    "regime": c["regime"],
                    "seconds": c["seconds"],
                }
                for c in rs
            ]
            for (cond, task, motif), rs in groups.items()
        },
    )
    write_text(out / "table.md", _table(summary, pred))
    from paper._hypotheses_figure import hypotheses_figure

    hypotheses_figure(summary, cfg, out / "hypotheses.png")
    return summary


def _test_text(key: str, p: float, focus: str, others: list[str]) -> str:
    what = (
        "dip of end-to-end accuracy at the pulses"
        if key == "c1_filters_spurious"
        else ("recovery of end-to-end accuracy after the shift")
    )
    rest = others[0] if len(others) == 1 else f"the {len(others)} other types"
    return (
        f"one-sided permutation test of the {what}, {rest} minus {focus}, labels "
        f"permuted within task, p = {p:.3g} (alpha {ALPHA})"
    )


def _fmt_band(b: dict[str, Any] | None, d: int = 3) -> str:
    if b is None:
        return "–"
    ci = b.get("ci95")
    return f"{b['mean']:.{d}f}" + ("" if ci is None else f" [{ci[0]:.{d}f}, {ci[1]:.{d}f}]")


def _table(s: dict[str, Any], pred: dict[str, Any] | None) -> str:
    """Per task and motif: measured dip and recovery (mean [95 % CI] over seeds) beside the
    simulator's prediction on its proxy; then the two tests."""
    lines = [
        "| task | motif | dip (pulse) | predicted dip | var e2e after pulse (×1e3) | "
        "recovery (shift) | predicted recovery | regimes (shift) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    per = s["per_motif"]
    tasks = sorted({t for c in per.values() for t in c})
    for task in tasks:
        motifs = sorted({m for c in ("pulse", "shift") for m in per.get(c, {}).get(task, {})})
        for m in motifs:
            pu = per.get("pulse", {}).get(task, {}).get(m, {})
            sh = per.get("shift", {}).get(task, {}).get(m, {})
            pt = None if pred is None else pred["tasks"].get(task)
            pd = "–" if pt is None else _fmt_band({"mean": pt["dip"][m]["mean"]})
            pr = "–" if pt is None else _fmt_band({"mean": pt["recovery"][m]["mean"]})
            ve = pu.get("var_e2e")
            vtxt = "–" if ve is None else f"{1e3 * ve['mean']:.2f}"
            regimes = ", ".join(sh.get("regimes", [])) or "–"
            lines.append(
                f"| {task} | {m} | {_fmt_band(pu.get('dip'))} | {pd} | {vtxt} | "
                f"{_fmt_band(sh.get('recovery'))} | {pr} | {regimes} |"
            )
    lines.append("")
    for key, h in s["hypotheses"].items():
        if h.get("complete"):
            ci = h["ci95"]
            lines.append(
                f"- **{key}**: effect {h['effect']:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]; "
                f"{h['test']}; {'holds' if h['holds'] else 'does not hold'}; "
                f"simulator: {'predicted' if h.get('predicted') else 'not predicted'}."
            )
        else:
            lines.append(f"- **{key}**: runs incomplete")
        osc = h.get("oscillation")
        if osc:
            lines.append(
                f"  - oscillation at rl.staleness {osc['setting']['rl.staleness']}: "
                f"I1 {osc['oscillating']['I1']}/{osc['runs']}, C1 "
                f"{osc['oscillating']['C1']}/{osc['runs']} (Fisher one-sided p = "
                f"{osc['p_fisher']:.3g}); simulator: "
                f"{'predicted' if osc.get('predicted') else 'not predicted'}."
            )
    return "\n".join(lines) + "\n"


def rank_agreement(per: dict[str, Any], pred: dict[str, Any]) -> dict[str, Any]:
    """Per task, Spearman's rank correlation over motifs between the simulator's predicted
    and the measured mean dip (pulse) and recovery (shift), with its two-sided p-value."""
    from scipy.stats import spearmanr

    out: dict[str, Any] = {}
    for cond, measure in (("pulse", "dip"), ("shift", "recovery")):
        for task, rows in per.get(cond, {}).items():
            ms = [m for m in rows if m in pred["tasks"].get(task, {}).get(measure, {})]
            if len(ms) < 3:
                continue
            x = [pred["tasks"][task][measure][m]["mean"] for m in ms]
            y = [rows[m][measure]["mean"] for m in ms]
            res = spearmanr(x, y)
            rho, p = float(res.statistic), float(res.pvalue)  # pyright: ignore
            out.setdefault(task, {})[measure] = {
                "spearman": None if np.isnan(rho) else rho,
                "p": None if np.isnan(p) else p,
                "motifs": len(ms),
            }
    return out
