"""The analysis of ``paper.watch_signals``: the baselines fitted on the threshold runs, the
replay of the held-out runs, the table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LEAD", "collapse_of", "fit_baselines", "logistic_alert", "replay", "table"]

#: Steps ahead of the onset that count as a warning.
LEAD = 20
#: Steps ahead of the onset that the logistic baseline is trained to recognise.
HORIZON = 50
#: The logistic baseline's features: (signal, indicator, direction).
FEATURES = (("grad_norm", "spike_z", "above"), ("update_norm", "spike_z", "above"),
            ("policy_kl", "spike_z", "above"), ("entropy", "spike_z", "below"),
            ("reward_mean", "rolling_lag1", "above"), ("reward_mean", "rolling_variance",
                                                        "above"))  # fmt: skip


def collapse_of(folder: Path) -> dict[str, Any]:
    """A run's collapse by both rules and the package rule's onset step (None: none)."""
    from llm_runs import competence_table, read_run
    from simulate import fall_collapse
    from simulate.common import peak_collapse

    log = read_run(folder)
    wide = log.competence()
    n_eval = float(np.median(competence_table([folder])["n_eval"]))
    onsets, pkg, peak = [], log.status == "diverged", log.status == "diverged"
    if pkg:
        onsets.append(int(log.diverged_step or wide.index.max()))
    for a in wide.columns:
        y = wide[a].dropna()
        if y.size < 4:
            continue
        v = fall_collapse(y.to_numpy(float), n_eval)
        if v.collapsed:
            pkg = True
            if v.onset is not None:
                onsets.append(int(y.index[v.onset]))
        peak = peak or bool(peak_collapse(y.to_numpy(float)))
    return {"collapse": bool(pkg), "collapse_peak": bool(peak),
            "onset": min(onsets) if onsets else None}  # fmt: skip


def _features(table: pd.DataFrame, rule: Any) -> pd.DataFrame:
    """Per (agent, step) the held indicators of :data:`FEATURES` (NaN -> 0)."""
    from calibrate import Trigger, indicator_series

    cols = {}
    for sig, ind, dirn in FEATURES:
        series = indicator_series(table, rule, Trigger(sig, ind, dirn))
        for agent, (steps, held) in series.items():
            v = held if dirn == "above" else -held
            cols.setdefault(agent, {"step": steps})[f"{sig}:{ind}"] = v
    frames = [pd.DataFrame(c).assign(agent=a) for a, c in cols.items()]
    return pd.concat(frames, ignore_index=True).fillna(0.0) if frames else pd.DataFrame()


def fit_baselines(folders: list[Path]) -> dict[str, Any]:
    """The baselines' thresholds on the threshold runs: a z-score rule on ``grad_norm`` and
    on ``policy_kl`` (:func:`calibrate._warning.fit_rule` with one trigger), and a logistic
    regression of "collapse within the next HORIZON steps" on :data:`FEATURES`, alerting
    above the highest probability any calm run reached."""
    from sklearn.linear_model import LogisticRegression

    from calibrate import SignalRule, Trigger, fit_rule
    from llm_runs.runlog import read_run

    tables = [read_run(f).signals() for f in folders]
    labels = [collapse_of(f) for f in folders]
    calm = [not lab["collapse"] for lab in labels]
    out: dict[str, Any] = {"runs": [str(f) for f in folders], "labels": labels}
    for name, sig in (("z_grad_norm", "grad_norm"), ("z_policy_kl", "policy_kl")):
        rule, rep = fit_rule(tables, [not c for c in calm],
                             SignalRule(triggers=(Trigger(sig, "spike_z"),)))  # fmt: skip
        out[name] = {"rule": rule.to_dict(), "report": rep}
    base = SignalRule()
    xs, ys, calm_rows = [], [], []
    for t, lab, c in zip(tables, labels, calm, strict=True):
        f = _features(t, base)
        if f.empty:
            continue
        onset = lab["onset"]
        steps = f["step"].to_numpy(int)
        y = np.zeros(len(f))
        if onset is not None:
            y = ((steps >= onset - HORIZON) & (steps < onset)).astype(float)
        xs.append(f[[f"{s}:{i}" for s, i, _ in FEATURES]].to_numpy(float))
        ys.append(y)
        calm_rows.append(np.full(len(f), c))
    if not xs or len(set(np.concatenate(ys))) < 2:
        out["logistic"] = {"fitted": False, "why": "no collapse window in the threshold runs"}
        return out
    x, y = np.concatenate(xs), np.concatenate(ys)
    model = LogisticRegression(max_iter=1000).fit(x, y)
    p = model.predict_proba(x)[:, 1]
    thr = float(p[np.concatenate(calm_rows)].max()) if np.concatenate(calm_rows).any() else 0.5
    out["logistic"] = {"fitted": True, "coef": model.coef_[0].tolist(),
                       "intercept": float(model.intercept_[0]), "threshold": thr}  # fmt: skip
    return out


def logistic_alert(table: pd.DataFrame, fit: dict[str, Any]) -> int | None:
    """The logistic baseline's first alert step on one run (None: none or not fitted)."""
    from calibrate import SignalRule

    if not fit.get("fitted"):
        return None
    f = _features(table, SignalRule())
    if f.empty:
        return None
    z = f[[f"{s}:{i}" for s, i, _ in FEATURES]].to_numpy(float) @ np.asarray(fit["coef"])
    p = 1.0 / (1.0 + np.exp(-(z + fit["intercept"])))
    hit = f["step"].to_numpy(int)[p > fit["threshold"]]
    return int(hit.min()) if hit.size else None


def replay(folders: list[Path], out: Path, forecasts: dict[str, Any] | None) -> dict[str, Any]:
    """Every held-out run's alerts per method, scored under both collapse rules."""
    from calibrate import SignalRule, first_alert
    from llm_runs.runlog import read_run

    rule = SignalRule.from_dict(json.loads((out / "rule.json").read_text())["rule"])
    base = json.loads((out / "baselines.json").read_text())
    zg = SignalRule.from_dict(base["z_grad_norm"]["rule"])
    zk = SignalRule.from_dict(base["z_policy_kl"]["rule"])
    launch = {}
    if forecasts:
        for i, c in enumerate(forecasts["cells"]):
            p = forecasts["groups_at"][str(forecasts["design"]["launch_steps"])]["collapse"][i]
            launch[(float(c["rl.lr"]), int(c["rl.staleness"]))] = float(p)
    rows, left_out = [], []
    for f in folders:
        log = read_run(f)
        table = log.signals()
        if table.empty or int(table["step"].min()) != 1:
            left_out.append(f.name)
            continue
        rl = log.manifest["config"]["rl"]
        p_launch = launch.get((float(rl["lr"]), int(rl["staleness"])))
        at_launch = p_launch is not None and p_launch >= 0.5
        sig = first_alert(table, rule)
        alerts = {
            "setting-only forecast": 0 if at_launch else None,
            "signal rule": sig.step if sig else None,
            "z-score grad_norm": getattr(first_alert(table, zg), "step", None),
            "z-score policy_kl": getattr(first_alert(table, zk), "step", None),
            "logistic regression": logistic_alert(table, base["logistic"]),
        }
        both = [s for s in (alerts["setting-only forecast"], alerts["signal rule"])
                if s is not None]  # fmt: skip
        alerts["watch (forecast + signals)"] = min(both) if both else None
        rows.append({"run": f.name, **collapse_of(f), "p_collapse_launch": p_launch,
                     "flagged_at_launch": at_launch, "alerts": alerts,
                     "signal_alert": None if sig is None else dataclasses.asdict(sig)})  # fmt: skip
    return {"n_runs": len(rows), "left_out": left_out, "lead": LEAD, "runs": rows,
            "methods": {m: {r: _score(rows, m, r) for r in ("collapse", "collapse_peak")}
                        for m in (rows[0]["alerts"] if rows else {})}}  # fmt: skip


def _score(rows: list[dict], method: str, rule: str) -> dict[str, Any]:
    """One method's scores under one collapse rule (onset: the package rule's)."""
    coll = [r for r in rows if r[rule] and r["onset"] is not None]
    warnable = [r for r in coll if r["onset"] >= LEAD]
    calm = [r for r in rows if not r[rule]]

    def flagged(r: dict) -> bool:
        a = r["alerts"][method]
        return a is not None and a <= r["onset"] - LEAD

    missed = [r for r in warnable if not r["flagged_at_launch"]]
    leads = [r["onset"] - r["alerts"][method] for r in warnable if flagged(r)]
    share = lambda xs: sum(map(flagged, xs)) / len(xs) if xs else None  # noqa: E731
    return {
        "n_collapses": len(coll), "n_warnable": len(warnable),
        "n_too_early_to_warn": len(coll) - len(warnable),
        "flagged_share": share(warnable), "n_missed_at_launch": len(missed),
        "flagged_share_missed_at_launch": share(missed),
        "lead_steps": float(np.median(leads)) if leads else None,
        "n_calm": len(calm),
        "false_alert_share": (sum(r["alerts"][method] is not None for r in calm) / len(calm)
                              if calm else None),
    }  # fmt: skip


def table(summary: dict[str, Any]) -> str:
    """Per method and collapse rule, the scores as a markdown table."""
    lines = [f"Held-out runs {summary['n_runs']} (left out: {len(summary['left_out'])}); a "
             f"warning counts when it comes >= {summary['lead']} steps before the onset.", "",
             "| method | rule | flagged (warnable) | flagged (missed at launch) | lead steps "
             "| false alerts |", "|---|---|---|---|---|---|"]  # fmt: skip

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    for m, by in summary["methods"].items():
        for rule, s in by.items():
            lines.append(f"| {m} | {rule} | {f(s['flagged_share'])} of {s['n_warnable']} | "
                         f"{f(s['flagged_share_missed_at_launch'])} of {s['n_missed_at_launch']}"
                         f" | {f(s['lead_steps'])} | {f(s['false_alert_share'])} of "
                         f"{s['n_calm']} |")  # fmt: skip
    return "\n".join(lines) + "\n"
