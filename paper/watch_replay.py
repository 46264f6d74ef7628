"""Does ``calibrate watch`` warn before real runs collapse? A replay of committed real runs.

Design (fixed in ``config.json`` before anything is computed): the committed curves of the
regime map, pool and hypotheses studies (:mod:`_watch_data`; their run folders are not
committed). The pilots' fit is ``calibrate fit`` (C1-AND, Laplace, rho and delta linked to
``rl.lr`` and ``rl.staleness``, the regime map's links) on the regime map's 8 corner runs,
which are never evaluated; every other run (24 regime-map runs, 80 pool runs, 170
hypotheses runs) is replayed evaluation by evaluation through watch's own functions
(:func:`calibrate._watch.prepare` at the run's setting, then
:func:`calibrate._watch.forecast` on the evaluations up to each step), giving a P(collapse)
series per run. The rules (:data:`_watch_metrics.RULE`) then score every threshold.

    python -m paper.watch_replay            # all runs -> paper/results/watch/
    python -m paper.watch_replay --quick --out /tmp/watch   # 6 regime-map runs, few draws

Writes ``config.json`` (first), ``fit/``, ``replay.json`` (every run's series),
``summary.json`` (``flagged_share``, ``lead_steps``, ``false_alert_share`` at the design's
threshold, and the curve over thresholds), ``table.md`` and ``watch.png``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from calibrate import StageError, fit_runs
from llm_runs.knobs import hierarchy_links
from paper import _watch_data as wdata
from paper import _watch_metrics as wm
from paper._watch_metrics import THRESHOLDS
from paper._watch_records import fix_config
from simulate import ArgumentParser

ROOT = Path(__file__).resolve().parent / "results"
LINKS = hierarchy_links(("rl.lr", "rl.staleness"))  # the knob schema's default links
PILOT_TASK = "math"  # the pilots' (the regime map's corner runs') task


def design(quick: bool) -> dict[str, Any]:
    """The frozen design (what config.json holds)."""
    return {
        "sources": ["regime_map/observed.json", "pool/runs.json", "hypotheses/runs.json"],
        "not_used": "recommend/ (picks and final scores, no curves)",
        "pilots": "regime_map corner cells (lr 1e-3, 1.5e-2 x staleness 0, 8), 2 seeds: 8 runs",
        "evaluated": "every other committed run" if not quick else "6 regime-map runs",
        "fit": {
            "motif": "C1",
            "gate": "AND",
            "method": "laplace",
            "links": LINKS["links"],
            "samples": 200 if quick else 1000,
        },
        "watch": {
            "draws": 40 if quick else 200,
            "replicates": 2 if quick else 4,
            "spread": 0.3,
            "misfit": 0.05,
            "seed": 0,
            "horizon": "the study's planned steps",
        },
        "rule": wm.RULE,
        "revisions": [
            "2026-12-03, before any replay was computed (only this file existed): the collapse "
            "rule became the one rule for real runs (simulate.common.COLLAPSE_RULE, onset as "
            "the collapse step) instead of 'some agent below 0.1 to the end' (issue 31 §0)"
        ],
        "lead_goal": 20,
        "threshold": 0.5,
        "thresholds": THRESHOLDS,
        "goal": ">= 90 % of collapses flagged >= 20 steps ahead with <= 5 % false alerts",
        "quick": quick,
    }


def fit_pilots(runs: list[dict[str, Any]], out: Path, cfg: dict[str, Any]) -> Path:
    """``calibrate fit`` on the pilots' curves (kept when its draws are there)."""
    import pandas as pd

    fit_dir = out / "fit"
    if (fit_dir / "latent.npz").is_file():
        return fit_dir
    table, links = out / "pilots.csv", out / "links.json"
    pd.DataFrame(wdata.pilots_table(runs)).to_csv(table, index=False)
    links.write_text(json.dumps(LINKS, indent=2) + "\n")
    f = cfg["fit"]
    args = ["--motif", f["motif"], "--gate", f["gate"], "--hierarchy", str(links),
            "--method", f["method"], "--samples", str(f["samples"])]  # fmt: skip
    try:
        fit_runs([table], fit_dir, args=args, log=out / "fit.log")
    except StageError as err:
        raise SystemExit(f"error: calibrate fit of the pilots failed: {err}") from None
    return fit_dir


def replay(runs: list[dict[str, Any]], fit_dir: Path, cfg: dict[str, Any]) -> list[dict]:
    """Every evaluated run's P(collapse) and forecasts after each of its evaluations."""
    import jax
    import pandas as pd

    jax.config.update("jax_enable_x64", True)
    from calibrate import load_fit
    from calibrate.watch import forecast, prepare

    post = load_fit(fit_dir)
    w = cfg["watch"]
    cache: dict[tuple, Any] = {}
    out = []
    for i, r in enumerate(runs):
        key = (tuple(sorted(r["setting"].items())), r["horizon"])
        if key not in cache:
            cache[key] = prepare(
                post,
                r["setting"],
                steps=r["horizon"],
                draws=w["draws"],
                replicates=w["replicates"],
                spread=w["spread"],
                key=jax.random.key(w["seed"]),
            )
        wd = cache[key]
        rows = [
            {"step": s, "agent": a, "competence": c[k], "n_eval": r["n_eval"]}
            for a, c in r["curves"].items()
            for k, s in enumerate(r["steps"])
        ]
        obs = pd.DataFrame(rows)
        series = [forecast(wd, obs[obs["step"] <= s], misfit=w["misfit"]) for s in r["steps"]]
        out.append(
            {
                "run": r["run"],
                "experiment": r["experiment"],
                "setting": r["setting"],
                "task": r["task"],
                "shift_step": r["shift_step"],
                "steps": r["steps"],
                "collapse_step": wm.collapse_step(
                    r["steps"], r["curves"], n_eval=r["n_eval"], diverged=r["diverged"]
                ),
                "p_collapse": [f.p_collapse for f in series],
                "p_oscillating": [f.network["p_oscillating"] for f in series],
                "ess": [f.ess for f in series],
                "final_forecast": {a: series[-1].agents[a]["final"] for a in r["curves"]},
                "final_observed": {a: c[-1] for a, c in r["curves"].items()},
            }
        )
        if (i + 1) % 25 == 0:
            print(f"replayed {i + 1}/{len(runs)} runs", flush=True)
    return out


def ess_summary(rep: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    """How many of the draws carry the weight: the median effective sample size over runs
    after their 1st, 2nd, 4th and last evaluation, out of ``draws * replicates``."""
    import numpy as np

    w = cfg["watch"]
    at = {"first": 0, "second": 1, "fourth": 3, "last": -1}
    return {
        "draws": w["draws"] * w["replicates"],
        **{
            k: float(np.median([r["ess"][i] for r in rep if len(r["ess"]) > max(i, -i - 1)]))
            for k, i in at.items()
        },
    }


def summarize(rep: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
    """summary.json: the design threshold's numbers, per experiment, and the curve."""
    goal = cfg["lead_goal"]
    head = wm.score(rep, cfg["threshold"], lead_goal=goal)
    groups = sorted({r["experiment"].split("/")[0] for r in rep})
    return {
        "threshold": cfg["threshold"],
        "lead_goal": goal,
        "n_runs": len(rep),
        "n_collapsed": head["n_collapsed"],
        "flagged_share": head["flagged_share"],
        "alerted_before_share": head["alerted_before_share"],
        "lead_steps": {
            r["run"]: lead
            for r, lead in zip(
                [x for x in rep if x["collapse_step"] is not None], head["lead_steps"], strict=True
            )
        },
        "median_lead": head["median_lead"],
        "false_alert_share": head["false_alert_share"],
        "false_alerts": head["false_alerts"],
        "goal_met": bool(
            head["flagged_share"] is not None
            and head["flagged_share"] >= 0.9
            and head["false_alert_share"] is not None
            and head["false_alert_share"] <= 0.05
        ),
        "by_experiment": {
            g: {
                k: v
                for k, v in wm.score(
                    [r for r in rep if r["experiment"].startswith(g)],
                    cfg["threshold"],
                    lead_goal=goal,
                ).items()
                if k != "lead_steps"
            }
            for g in groups
        },
        "curve": [
            {k: v for k, v in s.items() if k != "lead_steps"}
            for s in wm.curve(rep, cfg["thresholds"], lead_goal=goal)
        ],
        "rule": cfg["rule"],
        "breakdown": wm.breakdown(rep, cfg["threshold"], lead_goal=goal, task=PILOT_TASK),
        "ess": ess_summary(rep, cfg),
        "command": "python -m paper.watch_replay" + (" --quick" if cfg["quick"] else ""),
    }


def _fmt(x: Any) -> str:
    return "–" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def table(summ: dict[str, Any]) -> str:
    """table.md: the trade-off over thresholds and the design threshold per experiment."""
    lines = [
        "| threshold | flagged ≥ 20 steps ahead | alerted before collapse | median lead "
        "| false alerts |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in summ["curve"]:
        lines.append(
            f"| {s['threshold']:g} | {_fmt(s['flagged_share'])} | "
            f"{_fmt(s['alerted_before_share'])} | {_fmt(s['median_lead'])} | "
            f"{_fmt(s['false_alert_share'])} ({s['false_alerts']}/{s['n_other']}) |"
        )
    lines += [
        "",
        f"At threshold {summ['threshold']:g}:",
        "",
        "| experiment | collapsed | flagged ≥ 20 ahead | false alerts |",
        "| --- | --- | --- | --- |",
    ]
    for g, s in summ["by_experiment"].items():
        lines.append(
            f"| {g} | {s['n_collapsed']}/{s['n_collapsed'] + s['n_other']} | "
            f"{_fmt(s['flagged_share'])} | {_fmt(s['false_alert_share'])} "
            f"({s['false_alerts']}/{s['n_other']}) |"
        )
    b, e = summ["breakdown"], summ["ess"]
    lines += [
        "",
        f"Collapses by class at threshold {summ['threshold']:g} (read after the replay):",
        "",
        "| class | collapses | flagged ≥ 20 ahead |",
        "| --- | --- | --- |",
    ]
    for c in ("forecastable", "too_early", "after_shift", "other_task"):
        lines.append(f"| {c} | {b[c]['n']} | {_fmt(b[c]['flagged_share'])} |")
    lines += [
        "",
        f"False alerts fired at a run's first evaluation: {b['false_alerts_at_first']} of "
        f"{summ['false_alerts']}; runs whose first alert came after their first evaluation: "
        f"{b['alerts_after_first']}. Median effective draws (of {e['draws']}): "
        f"{e['first']:.0f} after the first evaluation, {e['second']:.0f} after the second, "
        f"{e['fourth']:.0f} after the fourth, {e['last']:.0f} after the last.",
    ]
    return "\n".join(lines) + "\n"


def figure(rep: list[dict[str, Any]], summ: dict[str, Any], path: Path) -> None:
    """watch.png: flagged share against false-alert share over thresholds; the series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    c = summ["curve"]
    fa = [s["false_alert_share"] or 0.0 for s in c]
    a1.plot(fa, [s["flagged_share"] or 0.0 for s in c], "o-", label="flagged ≥ 20 steps ahead")
    a1.plot(fa, [s["alerted_before_share"] or 0.0 for s in c], "s--", label="alerted ≤ collapse")
    for s, x in zip(c, fa, strict=True):
        a1.annotate(f"{s['threshold']:g}", (x, s["flagged_share"] or 0.0), fontsize=7)
    a1.axvline(0.05, color="grey", lw=0.8)
    a1.axhline(0.9, color="grey", lw=0.8)
    a1.set(
        xlabel="false-alert share (runs that did not collapse)",
        ylabel="share of collapses",
        title="lead time vs false alerts over thresholds",
    )
    a1.legend(fontsize=8)
    for r in rep:
        col = "tab:red" if r["collapse_step"] is not None else "tab:blue"
        a2.plot(r["steps"], r["p_collapse"], color=col, alpha=0.25, lw=0.8)
    a2.axhline(summ["threshold"], color="k", lw=0.8, ls=":")
    a2.set(
        xlabel="step", ylabel="watch's P(collapse)", title="per run (red: collapsed by the rule)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the replay; writes the results folder."""
    p = ArgumentParser(description=__doc__.splitlines()[0])  # one error: line
    p.add_argument("--out", default=str(ROOT / "watch"))
    p.add_argument("--quick", action="store_true", help="6 regime-map runs, few draws")
    args = p.parse_args(argv)
    out = Path(args.out)
    cfg = design(args.quick)
    fix_config(out, cfg)
    runs = wdata.all_runs(ROOT)
    fit_dir = fit_pilots(runs, out, cfg)
    ev = [r for r in runs if not r["pilot"]]
    if args.quick:
        ev = [r for r in ev if r["experiment"] == "regime_map"][::4]
    rep = replay(ev, fit_dir, cfg)
    (out / "replay.json").write_text(json.dumps(rep, indent=1) + "\n")
    summ = summarize(rep, cfg)
    (out / "summary.json").write_text(json.dumps(summ, indent=2) + "\n")
    (out / "table.md").write_text(table(summ))
    figure(rep, summ, out / "watch.png")
    print(table(summ), end="")
    print(f"results written to {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
