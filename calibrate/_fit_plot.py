"""Figures: posterior predictive bands over the data, model-selection weights."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ._config import ConfigError

if TYPE_CHECKING:
    from ._model import CurveModel
    from ._predict._prediction import Prediction

__all__ = ["FittedCurves", "plot_prediction", "plot_predictive", "plot_selection"]


class FittedCurves(Protocol):
    """What :func:`plot_predictive` draws: a :class:`~calibrate.Posterior` (its model and
    :meth:`~calibrate.Posterior.predictive` bands). Typed by what it needs, so this module
    does not import the posterior's (which imports it to draw ``predictive.png``)."""

    model: CurveModel

    def predictive(self) -> dict[str, np.ndarray]: ...


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_predictive(post: FittedCurves, path: str | Path, *, max_runs: int = 8) -> Path:
    """One panel per (run, agent): data, 90% band of the mean curve and of new evaluations."""
    plt = _plt()
    cm = post.model
    pred = post.predictive()
    runs = list(cm.runs)[:max_runs]
    observed = sorted(set(cm.node_idx.tolist()))
    nr, nc = len(runs), len(observed)
    fig, axes = plt.subplots(
        nr, nc, figsize=(3.0 * nc, 2.2 * nr), squeeze=False, sharex=True, sharey=True
    )
    t = pred["t"]
    for r, run in enumerate(runs):
        for c, node in enumerate(observed):
            ax = axes[r][c]
            ax.fill_between(
                t,
                pred["pred_q"][0, r, :, node],
                pred["pred_q"][1, r, :, node],
                color="C0",
                alpha=0.15,
                lw=0,
                label="90% new evaluations",
            )
            ax.fill_between(
                t,
                pred["mean_q"][0, r, :, node],
                pred["mean_q"][2, r, :, node],
                color="C0",
                alpha=0.4,
                lw=0,
                label="90% mean curve",
            )
            ax.plot(t, pred["mean_q"][1, r, :, node], color="C0", lw=1)
            sel = (cm.run_idx == r) & (cm.node_idx == node)
            ax.plot(cm.ts[cm.t_idx[sel]], cm.k[sel] / cm.n_eval[sel], ".", color="k", ms=3)
            ax.set_ylim(-0.02, 1.02)
            if r == 0:
                ax.set_title(cm.network.names[node])
            if c == 0:
                ax.set_ylabel(f"{run}\ncompetence")
            if r == nr - 1:
                ax.set_xlabel("step")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"posterior predictive — {cm.name}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_selection(ranking: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Bar chart of elpd_loo (± se) and stacking weight per candidate network."""
    plt = _plt()
    labels = [f"{r['motif']}-{r['gate']}" if r.get("gate") else str(r["motif"]) for r in ranking]
    elpd = np.array([r["elpd_loo"] for r in ranking])
    se = np.array([r["se"] for r in ranking])
    w = np.array([r["weight"] for r in ranking])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 0.4 * len(labels) + 1.5))
    y = np.arange(len(labels))[::-1]
    a1.errorbar(elpd, y, xerr=se, fmt="o", color="C0")
    a1.set_yticks(y, labels)
    a1.set_xlabel("elpd_loo (higher is better)")
    a2.barh(y, w, color="C1")
    a2.set_yticks(y, labels)
    a2.set_xlim(0, 1)
    a2.set_xlabel("stacking weight")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_prediction(pred: Prediction, path: str | Path) -> Path:
    """One panel per agent: each setting's forecast with its 50 % and 90 % bands, of one
    new run's logged competence or of the mean curve (``pred.band``; the legend says)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, _, mean, bands = pred.headline()
    if mean is None or bands is None:
        raise ConfigError("the prediction has no bands to plot: predict with bands=True")
    what = "one new run" if pred.band == "new_run" else "mean curve"
    n = len(pred.agents)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 2.6), squeeze=False, sharey=True)
    colors = plt.get_cmap("tab10")
    for j, agent in enumerate(pred.agents):
        ax = axes[0][j]
        for s, setting in enumerate(pred.settings):
            c = colors(s % 10)
            label = ", ".join(f"{k}={v:g}" for k, v in setting.items()) or "reference"
            b = bands[s, :, :, j]
            first = s == 0
            ax.fill_between(pred.t, b[0], b[3], color=c, alpha=0.15, lw=0,
                            label=f"90 % {what}" if first else None)  # fmt: skip
            ax.fill_between(pred.t, b[1], b[2], color=c, alpha=0.3, lw=0,
                            label=f"50 % {what}" if first else None)  # fmt: skip
            ax.plot(pred.t, mean[s, :, j], color=c, lw=1.5, label=f"{label} (mean)")
        ax.set_title(agent)
        ax.set_xlabel("step")
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("predicted competence")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
