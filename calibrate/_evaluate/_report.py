"""The folder of an evaluation: ``summary.json``, ``table.md``, ``pit.png`` and
``reliability.png`` (:func:`write_evaluation`), and its markdown table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from simulate.common import save_figure, write_json, write_text

__all__ = ["evaluation_table", "write_evaluation"]

#: The files :func:`write_evaluation` writes.
FILES = ("summary.json", "table.md", "pit.png", "reliability.png")


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else fmt.format(x)


def evaluation_table(result: Mapping[str, Any]) -> str:
    """Markdown: per split, one row per method (regime accuracy with its Wilson interval,
    Brier score of P(collapse), 90 % coverage with its interval, 50 % coverage, CRPS and log
    score of the final competence pooled over agents; ``–`` where a method does not forecast
    it)."""
    lines = [
        f"Forecasts of {result['n_runs'].get('all', 0)} held-out runs from "
        f"{result['n_pilot_runs']} pilot runs (knobs {', '.join(result['knobs'])}; "
        f"n_eval {result['n_eval']}). Final-competence scores pooled over agents; Brier score "
        "of P(collapse). Lower CRPS and Brier are better.",
    ]
    for split, methods in result["summary"].items():
        lines += [
            "",
            f"**{split}** ({result['n_runs'][split]} runs)",
            "",
            "| method | regime acc. [95 % CI] | Brier | cov. 90 % [95 % CI] | cov. 50 % | CRPS "
            "| log score |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, s in methods.items():
            lo, hi = s["regime_accuracy_ci95"]
            acc = f"{s['regime_accuracy']:.3f} [{_num(lo, '{:.2f}')}, {_num(hi, '{:.2f}')}]"
            cov = "–"
            if "coverage90" in s:
                c_lo, c_hi = s["coverage90_ci95"]
                cov = (f"{s['coverage90']['all']:.3f} "
                       f"[{_num(c_lo, '{:.2f}')}, {_num(c_hi, '{:.2f}')}]")  # fmt: skip
            rest = [_num(s[m]["all"]) if m in s else "–"
                    for m in ("coverage50", "crps", "log_score")]  # fmt: skip
            lines.append(f"| {name} | {acc} | {_num(s['brier'])} | {cov} | " + " | ".join(rest)
                         + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _pit_figure(path: Path, result: Mapping[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every = result["summary"]["all"]
    sampled = [m for m, s in every.items() if "pit_hist" in s]
    n = max(len(sampled), 1)
    fig, axes = plt.subplots(1, n, figsize=(2.8 * n, 2.8), squeeze=False)
    for ax, m in zip(axes[0], sampled, strict=False):
        h = np.asarray(every[m]["pit_hist"], float)
        ax.bar(np.arange(10) / 10 + 0.05, h / max(h.sum(), 1) * 10, width=0.09)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_title(m, fontsize=8)
        ax.set_xlabel("PIT of final competence")
    axes[0][0].set_ylabel("density (1 = calibrated)")
    if not sampled:
        axes[0][0].text(0.5, 0.5, "no method samples finals", ha="center", va="center")
    fig.tight_layout()
    save_figure(fig, path)


def _reliability_figure(path: Path, result: Mapping[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    ax.plot([0, 1], [0, 1], color="k", lw=0.8, ls="--", label="reliable")
    for m, s in result["summary"]["all"].items():
        rows = [r for r in s["reliability"] if r["n"]]
        x = [r["mean_forecast"] for r in rows]
        y = [r["observed_share"] for r in rows]
        ax.plot(x, y, marker="o", ms=3, lw=1, label=f"{m} (Brier {s['brier']:.3f})")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("forecast P(collapse) (bin mean)")
    ax.set_ylabel("observed share of collapses")
    ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)


def write_evaluation(
    out: str | Path, result: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> Path:
    """Write :func:`calibrate.evaluate_forecasts`' result into the existing folder ``out``:
    ``summary.json`` (the result without its :class:`Forecast` objects, ``config`` under
    ``config``), ``table.md`` (:func:`evaluation_table`), ``pit.png`` (PIT histograms of the
    sampling methods) and ``reliability.png`` (P(collapse) against the observed share).
    Each file is written atomically.

    Returns:
        The path of ``summary.json``.
    """
    out = Path(out)
    doc = {k: v for k, v in result.items() if k != "forecasts"}
    if config is not None:
        doc = {"config": dict(config), **doc}
    path = write_json(out / "summary.json", doc)
    write_text(out / "table.md", evaluation_table(result))
    _pit_figure(out / "pit.png", result)
    _reliability_figure(out / "reliability.png", result)
    return path
