"""The phase-diagram figure: one regime map per panel, shared legend, boundary lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ._analysis import REGIME_NAMES, Regime
from ._trajectory_plot import _pyplot

if TYPE_CHECKING:
    from ._boundary import Boundary
    from ._sweep import Axis


class PhaseLike(Protocol):
    """What the plot reads of a :class:`~simulate.PhaseResult` (a protocol, so that this
    module does not import the one that calls it)."""

    panels: list[tuple[str, str]]
    axes: list[Axis]
    arrays: dict[str, np.ndarray]
    boundaries: list[list[Boundary]]
    info: dict[str, Any]

    @property
    def labels(self) -> list[str]: ...


__all__ = ["REGIME_COLORS", "plot_phase_grid"]

#: One colour per :class:`~simulate.Regime`, in order.
REGIME_COLORS = ("#4c9be8", "#9fd18b", "#f6c85f", "#e8604c", "#6b4c9a", "#bdbdbd", "#8dd3c7")


def _edges(values: np.ndarray, scale: str) -> np.ndarray:
    """Cell edges around grid values (geometric midpoints on log axes)."""
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return v[0] * np.array([0.9, 1.1]) if scale == "log" else v[0] + np.array([-0.5, 0.5])
    if scale == "log":
        lv = np.log(v)
        mid = 0.5 * (lv[1:] + lv[:-1])
        return np.exp(np.concatenate([[2 * lv[0] - mid[0]], mid, [2 * lv[-1] - mid[-1]]]))
    mid = 0.5 * (v[1:] + v[:-1])
    return np.concatenate([[2 * v[0] - mid[0]], mid, [2 * v[-1] - mid[-1]]])


def plot_phase_grid(result: PhaseLike, path: str | Path, *, ncols: int | None = None) -> Path:
    """Save the grid of regime maps of ``result`` as a PNG.

    2-D sweeps: each panel is a regime map (colours shared by all panels) with the
    stability boundary — the zero contour of max Re λ (``ode``/``sde``) or of the map's
    spectral radius − 1 — drawn as a black line. 1-D sweeps: each panel stacks the regime
    probabilities along ``x``, with bisected boundaries as dashed vertical lines.
    """
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    plt = _pyplot()
    P = len(result.panels)
    ncols = ncols or min(P, 4)
    nrows = -(-P // ncols)
    width = max(3.1 * ncols, 6.4)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width, 2.7 * nrows + 0.9),
        dpi=110,
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    cmap = ListedColormap(REGIME_COLORS)
    norm = BoundaryNorm(np.arange(len(Regime) + 1) - 0.5, len(Regime))
    xa = result.axes[0]
    two_d = len(result.axes) > 1
    a = result.arrays
    method = result.info.get("method", "ode")
    ind_key, level = ("spectral_radius", 1.0) if method == "map" else ("max_real", 0.0)
    for p, ax in enumerate(axes.ravel()[:P]):
        if two_d:
            ya = result.axes[1]
            ax.pcolormesh(
                _edges(xa.values, xa.scale),
                _edges(ya.values, ya.scale),
                a["regime"][p],
                cmap=cmap,
                norm=norm,
                shading="flat",
            )
            ind = a.get(ind_key)
            if ind is not None and np.isfinite(ind[p]).sum() > 3:
                z = ind[p] - level
                if np.nanmin(z) < 0 < np.nanmax(z):
                    ax.contour(xa.values, ya.values, z, levels=[0.0], colors="k", linewidths=1.2)
            ax.set_yscale("log" if ya.scale == "log" else "linear")
        else:
            prob = a["prob"][p, 0]
            ax.stackplot(xa.values, prob.T, colors=REGIME_COLORS, step="mid")
            ax.set_ylim(0, 1)
            for b in result.boundaries[p]:
                ax.axvline(b.value, color="k", ls="--", lw=1.1)
                ax.text(
                    b.value,
                    1.02,
                    b.kind,
                    fontsize=6,
                    ha="center",
                    va="bottom",
                    transform=ax.get_xaxis_transform(),
                )
        ax.set_xscale("log" if xa.scale == "log" else "linear")
        ax.set_title(result.labels[p], fontsize=9, pad=10 if not two_d else 4)
    for ax in axes.ravel()[P:]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel(xa.label, fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(result.axes[1].label if two_d else "regime probability", fontsize=8)
    handles: list[Any] = [Patch(color=REGIME_COLORS[r], label=REGIME_NAMES[r]) for r in Regime]
    handles.append(
        plt.Line2D([], [], color="k", lw=1.2, ls="-" if two_d else "--", label="stability boundary")
    )
    fig.legend(
        handles=handles, loc="lower center", ncol=4 if width >= 9 else 3, frameon=False, fontsize=8
    )
    fig.tight_layout(rect=(0, 0.85 / (2.7 * nrows + 0.9), 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
