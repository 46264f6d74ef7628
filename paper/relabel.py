"""Relabel every committed real run with the one collapse rule, and check it (issue 31 §0).

Every committed real run with curves (``paper/results``: regime map, pool, hypotheses, and the
testbed's finished run folders; recommend commits no curves) is labelled by
``simulate.classify_observed`` (a diverged run is a collapse) and, apart, by the reference rule
stated in advance in ``<out>/config.json`` (``_relabel_data.reference_collapse``). Writes into
``<out>``: ``summary.json`` (counts, agreement of the two on collapse per run and per agent with
95 % Wilson intervals, the disagreements, old vs new label per run, and ``changed``: the
committed numbers that move under the new labels), ``table.md`` and ``relabel.png``.

Usage::

    python -m paper.relabel [--results paper/results] [--out paper/results/relabel]

The reference rule must be stated first: ``<out>/config.json`` with a ``reference_rule`` has
to exist (exit 2 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import wilson
from paper._relabel_data import committed_runs, reference_collapse
from simulate.common import COLLAPSE_RULE, write_json, write_text

HERE = Path(__file__).resolve().parent

REVISIONS = [
    "The reference rule was not changed after it was stated. The classifier was revised once "
    "after a first relabel: that pass (collapse judged on the whole curve) called 35 "
    "hypotheses shift runs collapsed (X or Y rose to ~0.6-0.75, then fell to ~0.25-0.3 when "
    "the task shifted to harder problems at step 24), against 3 by the reference, for a run "
    "agreement of 0.892 and 34 agent disagreements. A drop caused by an input switch is not a "
    "collapse by simulate.classify's own convention (judge after the last switch), so "
    "classify_observed gained `since` (observed_regime reads the manifest's shift_step) and "
    "this pass judges shift runs from step 24 on."
]


def label_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per run: the new label (and each agent's), the classifier's and the reference's
    collapse verdicts, per run and per agent."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import simulate

    rows = []
    for r in runs:
        agents = list(r["curves"])
        ref = {a: reference_collapse(r["curves"][a], r["n_eval"]) for a in agents}
        if r["diverged"]:
            new = {"regime": "collapse", "node_regimes": dict.fromkeys(agents, "collapse")}
            verdicts: dict[str, Any] = {}
        else:
            states = np.array([r["curves"][a] for a in agents], dtype=np.float64).T
            new = simulate.classify_observed(
                r["steps"], states, r["n_eval"], names=tuple(agents), since=r.get("since")
            )
            verdicts = new["collapse"]
        rows.append({
            "key": r["key"], "experiment": r["experiment"].split("/")[0], "group": r["experiment"],
            "n_eval": r["n_eval"], "diverged": r["diverged"], "old": r["old"],
            "new": new["regime"], "node_regimes": new["node_regimes"],
            "classifier_collapsed": new["regime"] == "collapse",
            "reference_collapsed": r["diverged"] or any(ref.values()),
            "agents": {a: {"classifier": new["node_regimes"][a] == "collapse",
                           "reference": bool(ref[a]), "verdict": verdicts.get(a)}
                       for a in agents},
        })  # fmt: skip
    return rows


def summarise(rows: list[dict[str, Any]], runs: list[dict[str, Any]], root: Path) -> dict:
    """summary.json's content (``changed`` from :mod:`_relabel_changed`)."""
    from paper import _relabel_changed as ch

    n = len(rows)
    agree = sum(r["classifier_collapsed"] == r["reference_collapsed"] for r in rows)
    pairs = [(r, a, v) for r in rows for a, v in r["agents"].items()]
    a_agree = sum(v["classifier"] == v["reference"] for _, _, v in pairs)
    dis = [{"run": r["key"], "agent": a, "classifier": v["classifier"],
            "reference": v["reference"], "verdict": v["verdict"]}
           for r, a, v in pairs if v["classifier"] != v["reference"]]  # fmt: skip
    new = {r["key"]: r["new"] for r in rows}
    by_exp: dict[str, dict[str, Any]] = {}
    for r in rows:
        e = by_exp.setdefault(r["experiment"], {"runs": 0, "classifier": 0, "reference": 0,
                                                "old_collapse": 0, "changed": 0})  # fmt: skip
        e["runs"] += 1
        e["classifier"] += r["classifier_collapsed"]
        e["reference"] += r["reference_collapsed"]
        e["old_collapse"] += r["old"] == "collapse"
        e["changed"] += r["old"] is not None and r["old"] != r["new"]
    rm = {k.split(":", 1)[1]: v for k, v in new.items() if k.startswith("regime_map:")}
    return {
        "rule": COLLAPSE_RULE,
        "n_runs": n,
        "n_agent_curves": len(pairs),
        "by_experiment": by_exp,
        "collapsed": {
            "classifier": sum(r["classifier_collapsed"] for r in rows),
            "reference": sum(r["reference_collapsed"] for r in rows),
        },
        "agreement_runs": agree / n,
        "agreement_runs_ci95": wilson(agree, n),
        "agreement_agents": a_agree / len(pairs),
        "agreement_agents_ci95": wilson(a_agree, len(pairs)),
        "disagreements": dis,
        "transitions": dict(
            Counter(
                f"{r['old']} -> {r['new']}"
                for r in rows
                if r["old"] is not None and r["old"] != r["new"]
            )
        ),
        "labels": {r["key"]: {"old": r["old"], "new": r["new"]} for r in rows},
        "changed": {
            "regime_map": ch.regime_map(root, rm) if rm else None,
            "pool": ch.pool(runs, new),
            "hypotheses": ch.hypotheses(runs, new, root),
        },
        "revisions": REVISIONS,
        "command": "python -m paper.relabel",
    }


def table(s: dict[str, Any]) -> str:
    """table.md: counts, agreement, disagreements, changed numbers."""
    lines = [
        "# Relabel of the committed real runs (issue 31 §0)", "",
        f"Rule: {s['rule']}.", "",
        f"{s['n_runs']} runs, {s['n_agent_curves']} agent curves. Collapse agreement with the "
        f"reference rule stated in advance: runs {s['agreement_runs']:.3f} (95 % CI "
        f"{s['agreement_runs_ci95'][0]:.3f}–{s['agreement_runs_ci95'][1]:.3f}), agents "
        f"{s['agreement_agents']:.3f} ({s['agreement_agents_ci95'][0]:.3f}–"
        f"{s['agreement_agents_ci95'][1]:.3f}).", "",
        "| experiment | runs | collapsed (new) | collapsed (reference) | collapse (old label) "
        "| label changed |", "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for e, v in s["by_experiment"].items():
        lines.append(f"| {e} | {v['runs']} | {v['classifier']} | {v['reference']} | "
                     f"{v['old_collapse']} | {v['changed']} |")  # fmt: skip
    lines += ["", "Label transitions (old -> new): "
              + (", ".join(f"{k}: {v}" for k, v in s["transitions"].items()) or "none"), "",
              f"Disagreements with the reference ({len(s['disagreements'])}):", ""]  # fmt: skip
    for d in s["disagreements"]:
        v = d["verdict"] or {}
        lines.append(f"- {d['run']} {d['agent']}: classifier {d['classifier']}, reference "
                     f"{d['reference']} (R {v.get('reference', float('nan')):.3f}, tail "
                     f"{v.get('tail', float('nan')):.3f})")  # fmt: skip
    c = s["changed"]
    if c["regime_map"]:
        o, nw = c["regime_map"]["old"], c["regime_map"]["new"]
        lines += ["", "Regime map (24 held-out runs): regime accuracy "
                  f"{o['regime_accuracy']:.3f} -> {nw['regime_accuracy']:.3f}; baseline "
                  f"{o['baseline_regime_accuracy']:.3f} -> {nw['baseline_regime_accuracy']:.3f}; "
                  f"boundary error {o['boundary_error_decades']:.3f} -> "
                  f"{nw['boundary_error_decades']:.3f} decades (baseline "
                  f"{o['baseline_boundary_error_decades']:.3f} -> "
                  f"{nw['baseline_boundary_error_decades']:.3f})."]  # fmt: skip
    lines += [
        "",
        "Pool collapse counts that change: "
        + ("; ".join(c["pool"]["changed_rates"]) or "none")
        + ".",
    ]
    lag = c["hypotheses"]["lag_oscillating"]
    lines += ["", "Hypotheses, oscillating runs at the lagged setting: "
              + ", ".join(f"{m} {v['old']}/{v['runs']} -> {v['new']}/{v['runs']}"
                          for m, v in lag.items()) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def figure(path: Path, rows: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    """Up to 6 curves: disagreements first, then runs whose label changed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simulate.common import save_figure

    by_key = {r["key"]: r for r in runs}
    picks = [(r, a) for r in rows for a, v in r["agents"].items()
             if v["classifier"] != v["reference"]]  # fmt: skip
    picks += [(r, a) for r in rows if r["old"] is not None and r["old"] != r["new"]
              for a in r["agents"] if (r, a) not in picks][: max(0, 6 - len(picks))]  # fmt: skip
    picks = picks[:6] or [(rows[0], next(iter(rows[0]["agents"])))]
    fig, axes = plt.subplots(2, 3, figsize=(11, 6), squeeze=False)
    for ax, (r, a) in zip(axes.flat, picks, strict=False):
        run = by_key[r["key"]]
        ax.plot(run["steps"], run["curves"][a], "o-", ms=3)
        v = r["agents"][a]["verdict"]
        if v:
            ax.axhline(v["reference"], color="grey", ls=":", label="R")
            ax.axhline(0.5 * v["reference"], color="tab:red", ls="--", label="0.5 R")
        ax.set(ylim=(-0.02, 1.02), xlabel="step", ylabel=f"A_{a}")
        title = (
            f"{r['key'].split(':')[1][:28]} {a}\nrun old {r['old']} / agent new "
            f"{r['node_regimes'][a]}; reference {r['agents'][a]['reference']}"
        )
        ax.set_title(title, fontsize=7)
    for ax in list(axes.flat)[len(picks) :]:
        ax.axis("off")
    fig.tight_layout()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--results", type=Path, default=HERE / "results")
    ap.add_argument("--out", type=Path, default=None, help="default: <results>/relabel")
    a = ap.parse_args(argv)
    out = a.out or a.results / "relabel"
    cfg = out / "config.json"
    try:
        rule = json.loads(cfg.read_text()).get("reference_rule")
    except (OSError, ValueError) as e:
        print(f"error: {cfg}: the reference rule must be stated first ({e})", file=sys.stderr)
        return 2
    if not rule:
        print(f"error: {cfg} states no reference_rule", file=sys.stderr)
        return 2
    if not (a.results / "regime_map" / "observed.json").is_file():
        print(f"error: {a.results}: no committed results (regime_map/observed.json)",
              file=sys.stderr)  # fmt: skip
        return 2
    runs = committed_runs(a.results)
    rows = label_runs(runs)
    s = summarise(rows, runs, a.results)
    write_json(out / "summary.json", s)
    write_text(out / "table.md", table(s))
    figure(out / "relabel.png", rows, runs)
    print(f"{s['n_runs']} runs: collapse agreement {s['agreement_runs']:.3f} (runs), "
          f"{s['agreement_agents']:.3f} (agents); {len(s['disagreements'])} disagreements; "
          f"wrote {out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
