"""Figures: one trajectory, and a grid of the 16 FFL presets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._solve import Solution

__all__ = ["plot_preset_grid", "plot_trajectory"]

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _draw(ax, sol: Solution, legend: bool = True) -> None:
    t = np.asarray(sol.t)
    x = np.asarray(sol.inputs)
    on = x > 0
    if on.any():
        ax.fill_between(
            t,
            0,
            1,
            where=on,
            transform=ax.get_xaxis_transform(),
            color="0.92",
            step="post",
            label="input on",
        )
    states = np.asarray(sol.states)
    for k, name in enumerate(sol.names):
        style = "-" if sol.method != "map" else ".-"
        ax.plot(t, states[:, k], style, color=_COLORS[k % len(_COLORS)], lw=1.4, ms=2, label=name)
    if legend:
        ax.legend(loc="best", fontsize=7, frameon=False)


def plot_trajectory(
    sol: Solution, path: str | Path, *, title: str = "", ylabel: str = "level"
) -> Path:
    """Save a PNG of every node's trajectory with the input-on periods shaded."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    _draw(ax, sol)
    ax.set_xlabel("time (steps for competence kinetics)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_preset_grid(
    sols: Sequence[Solution], titles: Sequence[str], path: str | Path, *, ncols: int = 4
) -> Path:
    """Save a grid of trajectories, one panel per solution (e.g. the 16 presets)."""
    plt = _pyplot()
    nrows = -(-len(sols) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.2 * ncols, 2.3 * nrows), dpi=110, sharex=True, squeeze=False
    )
    for ax, sol, title in zip(axes.ravel(), sols, titles, strict=False):
        _draw(ax, sol, legend=False)
        ax.set_title(title, fontsize=9)
    for ax in axes.ravel()[len(sols) :]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    for ax in axes[-1]:
        ax.set_xlabel("time")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
