"""The testbed study's table and figure (from ``summary.json``'s content and the rise runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from simulate.common import save_figure


def _ci(ci: list[float | None]) -> str:
    return "n/a" if ci[0] is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def table(summary: dict[str, Any]) -> str:
    """Markdown: per-role rise, edge effects (act - rep of the target's area), wiring."""
    lines = ["# Testbed study", "", "## Every role learns (rise = last three evaluations - step 0)",
             "", "| task | role | start | end | rise [95 % CI] | max before step 50 |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for task, t in summary["role_rise"].items():
        for r, v in t["roles"].items():
            lines.append(
                f"| {task} | {r} | {v['start']:.3f} | {v['end']:.3f} | {v['rise']:+.3f} "
                f"{_ci(v['rise_ci95'])} | {v['early_max']:.3f} |"
            )
    ee = summary.get("edge_effects")
    if ee:
        lines += ["", "## Every edge acts (target's mean competence, act - rep / act - cut / "
                  "rep - cut, paired by seed)", "",
                  "| edge | mechanism | seeds | act - rep [95 % CI] | act - cut | rep - cut |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for key, row in ee["effects"].items():
            e, m = key.split("/")
            ar, ac, rc = row["act-rep"], row["act-cut"], row["rep-cut"]
            if ar["auc"] is None:
                lines.append(f"| {e} | {m} | 0 | not run yet | | |")
                continue
            fmt = [f"{d['auc']:+.3f} {_ci(d['auc_ci95'])}" if d["auc"] is not None else "n/a"
                   for d in (ar, ac, rc)]  # fmt: skip
            lines.append(f"| {e} | {m} | {ar['seeds']} | {fmt[0]} | {fmt[1]} | {fmt[2]} |")
    ms = summary.get("motif_separation")
    if ms and ms["tested_pairs"]:
        lines += ["", f"## The types differ: {ms['distinguishable_pairs']} of "
                  f"{ms['tested_pairs']} pairs distinguishable (permutation test, "
                  f"{ms.get('correction', 'holm')}; omnibus p = "
                  f"{ms.get('omnibus_p') or float('nan'):.4f})",
                  "",
                  "| type | seeds | final A_Z | steps to level (Z) | transient (Z) | final e2e |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for m, v in ms["per_type"].items():
            lines.append(f"| {m} | {v['seeds']} | {v['final_Z']:.3f} | "
                         f"{v['steps_to_level_Z']:.0f} | {v['transient_Z']:.3f} | "
                         f"{v['final_e2e']:.3f} |")  # fmt: skip
    wi = summary.get("wiring_identification") or {}
    if wi.get("sets"):
        lines += ["", "## The wiring read back (`calibrate fit --motif auto`)", "",
                  "| set | best | rank of truth | indistinguishable | identified (correct?) |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for name, v in wi["sets"].items():
            ident = ", ".join(f"{k} {s} ({'ok' if v['identified_correct'][k] else 'WRONG'})"
                              for k, s in v["identified"].items()) or "nothing"  # fmt: skip
            lines.append(f"| {name} | {v['best']} | {v['rank']} | "
                         f"{'yes' if v['in_indistinguishable'] else 'no'} | {ident} |")  # fmt: skip
    missing = {k: v for k, v in summary["missing_runs"].items() if v}
    if missing:
        lines += ["", "Runs not finished yet (per phase; -1: seeds not fixed): "
                  + ", ".join(f"{k} {v}" for k, v in missing.items())]  # fmt: skip
    return "\n".join(lines) + "\n"


def figure(cfg: Any, rise_curves: dict[tuple, dict[str, Any]], summary: dict[str, Any],
           path: Path) -> None:  # fmt: skip
    """Per-role mean curves (band: min-max over seeds) of the rise runs, one panel per task,
    and the act - rep edge effects with their intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in cfg.tasks if any(j[0] == t for j in rise_curves)]
    fig, axes = plt.subplots(1, len(tasks) + 1, figsize=(4.2 * (len(tasks) + 1), 3.4))
    axes = np.atleast_1d(axes)
    for ax, task in zip(axes, tasks, strict=False):
        cs = [c for j, c in rise_curves.items() if j[0] == task]
        steps = cs[0]["steps"]
        for i, r in enumerate(cs[0]["roles"]):
            y = np.array([c["comp"][:, i] for c in cs if len(c["steps"]) == len(steps)])
            ax.plot(steps, y.mean(0), label=f"A_{r}")
            ax.fill_between(steps, y.min(0), y.max(0), alpha=0.2)
        e = np.array([c["e2e"] for c in cs if len(c["steps"]) == len(steps)])
        ax.plot(steps, e.mean(0), "k--", label="end-to-end")
        ax.set(title=f"{task}: C1-AND, {len(cs)} seeds", xlabel="step", ylabel="competence",
               ylim=(0, 1))  # fmt: skip
        ax.legend(fontsize=7)
    ax = axes[-1]
    ee = (summary.get("edge_effects") or {}).get("effects", {})
    rows = [(k, v["act-rep"]) for k, v in ee.items() if v["act-rep"]["auc"] is not None]
    if rows:
        ys = np.arange(len(rows))
        mid = [d["auc"] for _, d in rows]
        lo = [d["auc"] - (d["auc_ci95"][0] if d["auc_ci95"][0] is not None else d["auc"])
              for _, d in rows]  # fmt: skip
        hi = [(d["auc_ci95"][1] if d["auc_ci95"][1] is not None else d["auc"]) - d["auc"]
              for _, d in rows]  # fmt: skip
        ax.errorbar(mid, ys, xerr=[lo, hi], fmt="o")
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(ys, [k for k, _ in rows], fontsize=7)
        ax.set(title="edge effect: act - rep", xlabel="target's mean competence")
    else:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "edge runs not finished yet", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
