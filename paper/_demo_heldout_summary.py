"""The demo held-out study's summary pieces: collapses among the runs forecast safe, the
headline against the issue's goals, the table and the reliability figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The primary method, named before the runs.
PRIMARY = "motif model (new run, runs' rule)"

__all__ = ["PRIMARY", "count_groups", "figure", "headline", "safe_collapse", "table"]


def safe_collapse(f: Any, idx: list[int], recs: list) -> dict[str, Any]:
    """Among runs whose setting was forecast P(collapse) < 0.05: how many collapsed."""
    p = f.p_collapse()[idx]
    safe = [i for i, pi in zip(idx, p, strict=True) if pi < 0.05]
    k = sum(recs[i]["group"] == "collapse" for i in safe)
    return {"n_safe": len(safe), "collapsed": k,
            "share": None if not safe else k / len(safe)}  # fmt: skip


def count_groups(recs: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in recs:
        out[r["group"]] = out.get(r["group"], 0) + 1
    return out


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The issue's goals read off the adaptive design, package rule, all held-out runs."""
    head: dict[str, Any] = {}
    for name, by_rule in summary["by_design"].items():
        for rule, by_split in by_rule.items():
            for split, res in by_split.items():
                m = res[PRIMARY]
                base = {k: v for k, v in res.items() if isinstance(v, dict)
                        and "regime_accuracy" in v and not k.startswith("motif model")}  # fmt: skip
                best_acc = max(v["regime_accuracy"] for v in base.values())
                crps = [v["crps"]["all"] for v in base.values() if "crps" in v]
                head[f"{name}/{rule}/{split}"] = {
                    "regime_accuracy": m["regime_accuracy"],
                    "best_baseline_accuracy": best_acc,
                    "coverage90": m["coverage90"]["all"],
                    "crps": m["crps"]["all"],
                    "crps_ratio_to_best_baseline": m["crps"]["all"] / min(crps) if crps else None,
                    "brier": m["brier"],
                    "best_baseline_brier": min(v["brier"] for v in base.values()),
                    "safe_collapse": res["safe_collapse"],
                }  # fmt: skip
    return {"headline": head}


def table(rows: list[tuple]) -> str:
    lines = ["| design | collapse rule | split | method | regime acc. | cov. 90 | CRPS | Brier |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, rule, split, m, s in rows:
        cov = s.get("coverage90", {}).get("all") if isinstance(s.get("coverage90"), dict) else None
        crps = s.get("crps", {}).get("all") if isinstance(s.get("crps"), dict) else None
        fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(f"| {name} | {rule} | {split} | {m} | {fmt(s.get('regime_accuracy'))} | "
                     f"{fmt(cov)} | {fmt(crps)} | {fmt(s.get('brier'))} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def figure(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from simulate.common import save_figure

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
    for ax, name in zip(axes, ("adaptive", "corners"), strict=True):
        res = summary["by_design"].get(name, {}).get("package_rule", {}).get("all", {})
        for m, s in res.items():
            if not isinstance(s, dict) or "reliability" not in s:
                continue
            rel = [b for b in s["reliability"] if b.get("n")]
            ax.plot([b["mean_forecast"] for b in rel], [b["observed_share"] for b in rel], "o-",
                    label=m, ms=4)  # fmt: skip
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.set_title(f"{name} pilots: P(collapse) reliability")
        ax.set_xlabel("forecast P(collapse)")
    axes[0].set_ylabel("observed share collapsed")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
