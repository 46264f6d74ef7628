"""Figure of the pilots: where each round put its runs and what each run did (torch-free)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulate.common import save_figure

__all__ = ["GROUP_COLORS", "ROUND_MARKERS", "pilot_axes", "plot_pilots"]

#: Colour of each observed regime group.
GROUP_COLORS = {"converged": "C2", "oscillating": "C1", "collapse": "C3", "unsettled": "C7",
                "failed": "k"}  # fmt: skip
#: Marker of each round (round k: ``ROUND_MARKERS[k % len]``).
ROUND_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def pilot_axes(ax: Any, runs: Sequence[Mapping[str, Any]], x: str, y: str | None) -> None:
    """Draw labelled pilot runs on ``ax`` (replicates side by side), by round and group."""
    seen: set[tuple[Any, ...]] = set()
    for run in runs:
        s = run["setting"]
        reps = [r for r in runs if r["setting"] == s]
        k = reps.index(run)
        dy = (k - (len(reps) - 1) / 2) * 0.18
        yv = float(s[y]) + dy if y is not None else 0.0 + dy
        g = str(run.get("group", "unknown"))
        r = int(run["round"])
        lab = (r, g)
        ax.scatter([float(s[x])], [yv], marker=ROUND_MARKERS[r % len(ROUND_MARKERS)],
                   color=GROUP_COLORS.get(g, "C0"), edgecolor="k", s=46, zorder=5,
                   label=None if lab in seen else f"round {r}: {g}")  # fmt: skip
        seen.add(lab)


def plot_pilots(
    runs: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    path: str | Path,
    *,
    log_x: bool = True,
) -> Path:
    """Scatter of the pilots over the first two fields (the x axis on a log scale for
    ``log_x``), marker by round, colour by observed regime group; PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = fields[0]
    y = fields[1] if len(fields) > 1 else None
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    pilot_axes(ax, runs, x, y)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y or "")
    ax.set_title("pilots by round and observed regime")
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, path)
