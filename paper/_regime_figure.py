"""Figure of the regime-map experiment: predicted | observed | baseline maps over the two
knobs, and the curves of a few held-out settings with their predicted 90 % bands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch, Rectangle

AGENT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c")


def _map(ax, cfg, labels: dict[tuple, str], text: dict[tuple, str], title: str) -> None:
    for (i, j), lab in labels.items():
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, fc=COLORS[lab], lw=0, alpha=0.85))
        ax.text(i, j, text.get((i, j), ""), ha="center", va="center", fontsize=7)
    for i, j in cfg.pilots:
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, fill=False, lw=2.2, ec="black"))
    ax.set_xlim(-0.5, len(cfg.lrs) - 0.5)
    ax.set_ylim(-0.5, len(cfg.staleness) - 0.5)
    ax.set_xticks(range(len(cfg.lrs)), [f"{x:g}" for x in cfg.lrs])
    ax.set_yticks(range(len(cfg.staleness)), [str(k) for k in cfg.staleness])
    ax.set_xlabel("rl.lr")
    ax.set_ylabel("rl.staleness (steps)")
    ax.set_title(title, fontsize=9)


def figure(path: Path, cfg: Any, preds: dict, obs: dict, base: dict, cell_obs: dict,
           run_name: Callable) -> None:  # fmt: skip
    """Write the figure to ``path`` (PNG)."""
    fig = plt.figure(figsize=(13, 7.5))
    gs = fig.add_gridspec(2, 4, height_ratios=[1.1, 1])
    pilots = {tuple(p): cell_obs[tuple(p)] for p in cfg.pilots}
    pred_lab = {tuple(c["cell"]): c["label"] for c in preds["cells"]} | pilots
    pred_txt = {tuple(c["cell"]): f"P={c['probs'][c['label']]:.2f}" for c in preds["cells"]}
    obs_txt = {
        cell: "\n".join(obs[run_name(cfg, cell, s)]["group"][:4] for s in cfg.seeds)
        for cell in cfg.cells()
    }
    base_lab = {cell: b["label"] for cell, b in base.items()}
    _map(fig.add_subplot(gs[0, 0]), cfg, pred_lab, pred_txt, "predicted (calibrated model)")
    _map(fig.add_subplot(gs[0, 1]), cfg, cell_obs, obs_txt, "observed (real runs, seeds)")
    _map(fig.add_subplot(gs[0, 2]), cfg, base_lab, {}, "baseline (nearest pilot)")
    leg = fig.add_subplot(gs[0, 3])
    leg.axis("off")
    leg.legend(
        handles=[Patch(color=c, label=g) for g, c in COLORS.items()]
        + [Patch(fill=False, ec="black", lw=2, label="pilot (fitted)")],
        loc="center",
    )
    t = preds["t"]
    cells = preds["cells"][:: max(1, len(preds["cells"]) // 4)][:4]
    for k, c in enumerate(cells):
        ax = fig.add_subplot(gs[1, k])
        cell = tuple(c["cell"])
        for a, col in zip(preds["agents"], AGENT_COLORS, strict=False):
            pa = c["agents"][a]
            ax.fill_between(t, pa["band_q05"], pa["band_q95"], color=col, alpha=0.2, lw=0)
            ax.plot(t, pa["mean"], color=col, lw=1.2, label=f"A_{a}")
            for s in cfg.seeds:
                r = obs[run_name(cfg, cell, s)]
                ax.plot(r["steps"], r["curves"][a], "o", ms=2.5, color=col, alpha=0.8)
        s = c["setting"]
        ax.set_title(f"lr {s['rl.lr']:g}, staleness {s['rl.staleness']}: pred {c['label']}",
                     fontsize=8)  # fmt: skip
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("step")
        if k == 0:
            ax.set_ylabel("competence (dots: runs; band: 90 % forecast)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


COLORS = {
    "converged": "#4c9f70",
    "oscillating": "#e8a33d",
    "collapse": "#c8453b",
    "unsettled": "#9a9a9a",
    "failed": "#333333",
}
