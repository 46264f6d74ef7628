"""Figure of the hypotheses study: per task, mean end-to-end accuracy per motif under the
reward-flip pulses (windows shaded) and around the shift (line), and the per-motif dip and
recovery (mean, 95 % bootstrap interval over seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulate import save_figure


def hypotheses_figure(summary: dict[str, Any], cfg: Any, path: Path) -> Path:
    """Draw the study figure from ``summary`` (see ``_hypotheses_analysis.summarise``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = summary["per_motif"]
    tasks = [t for t in cfg.tasks if any(t in per.get(c, {}) for c in ("pulse", "shift"))]
    fig, axes = plt.subplots(
        max(len(tasks), 1), 4, figsize=(17, 3.4 * max(len(tasks), 1)), squeeze=False
    )
    for row, task in zip(axes, tasks, strict=False):
        for ax, cond in zip(row[:2], ("pulse", "shift"), strict=True):
            for m, r in per.get(cond, {}).get(task, {}).items():
                lw = 2.2 if m in ("C1", "I1") else 0.9
                ax.plot(
                    r["steps"],
                    r["e2e_mean_curve"],
                    lw=lw,
                    label=m,
                    ls="-" if m.startswith("C") else "--",
                )
            if cond == "pulse":
                for s0 in cfg.pulse_starts:
                    ax.axvspan(s0, s0 + cfg.pulse_length, color="red", alpha=0.12)
                ax.set_title(f"{task}: reward-flip pulses (shaded)")
            else:
                ax.axvline(cfg.shift_step, color="k", lw=0.8)
                ax.set_title(f"{task}: distribution shift at step {cfg.shift_step}")
            ax.set(xlabel="optimizer step", ylabel="end-to-end accuracy (mean over seeds)")
            ax.legend(fontsize=6, ncol=4)
        for ax, cond, measure, title in (
            (row[2], "pulse", "dip", "dip at the pulses (H1)"),
            (row[3], "shift", "recovery", "recovery after the shift (H2)"),
        ):
            rows = per.get(cond, {}).get(task, {})
            ms = [m for m in cfg.motifs if m in rows]
            for i, m in enumerate(ms):
                b = rows[m][measure]
                ci = b["ci95"] or [b["mean"], b["mean"]]
                color = "C3" if m in ("C1", "I1") else "C0"
                ax.errorbar(
                    [i],
                    [b["mean"]],
                    yerr=[[b["mean"] - ci[0]], [ci[1] - b["mean"]]],
                    fmt="o",
                    color=color,
                    capsize=3,
                )
                ax.plot([i] * len(b["values"]), b["values"], ".", color="0.6", ms=3)
            ax.set_xticks(range(len(ms)), ms)
            ax.axhline(0, color="0.8", lw=0.6)
            ax.set(title=f"{task}: {title}", ylabel=measure)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)
