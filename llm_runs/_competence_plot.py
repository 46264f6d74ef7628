"""Competence-curve figures of run folders (torch-free; matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .runlog import RunLogError, read_run

__all__ = ["competence_axes", "competence_figure"]


def competence_figure(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    title: str | None = None,
    strict: bool = False,
) -> Path:
    """One panel per run: probe competence A_i(t) per agent and end-to-end accuracy.

    Args:
        runs: Run folders.
        out: PNG path (parent folders created).
        title: Figure title.
        strict: A torn last line is an error (by default it is dropped with a warning).

    Returns:
        The PNG path.

    Raises:
        RunLogError: A run folder that is malformed or has no evaluation rows.
    """
    import matplotlib.pyplot as plt

    from simulate.common import save_figure

    fig = competence_axes(runs, title=title, strict=strict)
    try:
        return save_figure(fig, out, dpi=130)  # atomic: no half-written figure
    finally:
        plt.close(fig)


def competence_axes(
    runs: Sequence[str | Path], *, title: str | None = None, strict: bool = False
) -> Any:
    """The matplotlib figure of :func:`competence_figure` (one axes per run), unsaved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = [read_run(r, strict=strict) for r in runs]
    for log in logs:
        if not log.agent_rows:
            raise RunLogError(f"{log.path}: the run log has no evaluation rows to plot")
    fig, axes = plt.subplots(
        1, len(logs), figsize=(4.2 * len(logs), 3.4), sharey=True, squeeze=False
    )
    for ax, log in zip(axes[0], logs, strict=True):
        wide = log.competence()
        for agent in log.manifest["agents"]:
            ax.plot(wide.index, wide[agent], marker="o", ms=3, label=f"A_{agent} (probe)")
        e2e = log.frame("e2e")
        if not e2e.empty:
            ax.plot(e2e["step"], e2e["accuracy"], "k--", lw=1.2, label="end-to-end (test)")
        warm = log.manifest.get("warmup_steps") or 0
        if warm:
            ax.axvspan(0, warm, color="0.9", zorder=0, label="supervised warm-up")
        for a, b in log.manifest.get("schedules", {}).get("pulses", []):
            ax.axvspan(a, b, color="tab:red", alpha=0.12, zorder=0)
        shift = log.manifest.get("schedules", {}).get("shift_step")
        if shift is not None:
            ax.axvline(shift, color="tab:purple", lw=1)
        if log.diverged_step is not None:
            ax.axvline(log.diverged_step, color="k", ls=":", lw=1.5, label="diverged")
        cfg = log.manifest["config"]
        mech = cfg.get("network", {}).get("default_mechanism", "?")
        ax.set_title(
            f"{log.manifest['spec'].get('name', log.name)} · "
            f"{cfg.get('task', {}).get('name', '?')} · {mech} · seed {log.manifest['seed']}",
            fontsize=9,
        )
        ax.set_xlabel("optimizer step")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("competence / accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
