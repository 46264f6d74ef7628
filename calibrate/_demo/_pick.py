"""What the demo report says about the pilots and the pick, and its regime map (torch-free):
the pilot design in one paragraph, the tie and the pick's stability margin, how far the pick
lies from the pilots, and the map of forecast risk with the pilots by round and where the
confirmation run landed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulate.common import read_json_object, save_figure

from ._config import DemoConfig

__all__ = ["design_sentence", "distance_line", "map_figure", "tie_margin_lines"]


def design_sentence(cfg: DemoConfig, runs: list[dict[str, Any]]) -> str:
    """What the pilot design was and what it spent."""
    n_rounds = 1 + max(int(r["round"]) for r in runs)
    steps = len(runs) * cfg.pilot_steps
    seeds = ", ".join(str(s) for s in cfg.pilot_seeds)
    if cfg.design == "corners":
        return (f"Design `corners`: every corner of `rl.lr` {cfg.pilot_lrs} x "
                f"`rl.staleness` {cfg.pilot_staleness} at seeds {seeds}: {len(runs)} runs, "
                f"{steps} steps.")  # fmt: skip
    return (f"Design `adaptive` over the box `rl.lr` {cfg.pilot_lr_box[0]:g}–"
            f"{cfg.pilot_lr_box[1]:g} x `rl.staleness` {cfg.pilot_staleness_box[0]}–"
            f"{cfg.pilot_staleness_box[1]}: round 0 spreads {cfg.initial_pilots} settings over "
            f"the box (maximin Latin hypercube), each later round adds the {cfg.round_size} "
            "settings whose regime the fit of the pilots so far was least sure of (entropy of "
            f"P(regime group)); every setting at seeds {seeds}. {n_rounds} rounds, "
            f"{len(runs)} runs, {steps} of {cfg.pilot_budget} budgeted steps. Each round's "
            "design is stored before its runs in `pilots/round_<k>.json`.")  # fmt: skip


def map_figure(out: Path, rec: dict[str, Any], runs: list[dict[str, Any]],
                confirm_group: str | None) -> Path | None:  # fmt: skip
    """The regime map: forecast P(oscillating or collapse) over ``rl.lr`` x ``rl.staleness``
    (the recommendation's candidates), its contour at the risk level, the pilots by round
    and observed group, the pick (star) and where the confirmation run landed (its group's
    colour inside the star)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .._pilots._plot import GROUP_COLORS, pilot_axes

    src = out / "rec" / "candidates.json"
    if not src.is_file():
        return None
    cand = read_json_object(src, what="candidates")
    x = np.asarray([c["rl.lr"] for c in cand["settings"]], float)
    y = np.asarray([c["rl.staleness"] for c in cand["settings"]], float)
    risk = np.asarray([np.nan if r is None else r for r in cand["risk"]], float)
    ok = np.isfinite(risk)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sc = ax.scatter(x[ok], y[ok], c=risk[ok], cmap="Reds", vmin=0, vmax=1, s=14, alpha=0.7)
    fig.colorbar(sc, ax=ax, label="forecast P(oscillating or collapse)")
    level = float(cand["risk_level"])
    if ok.sum() >= 4 and np.nanmin(risk) < level < np.nanmax(risk):
        from matplotlib.tri import Triangulation

        try:  # triangles of log lr (the axis), drawn at the raw values
            tri = Triangulation(np.log10(x[ok]), y[ok])
            ax.tricontour(Triangulation(x[ok], y[ok], tri.triangles), risk[ok],
                          levels=[level], colors="k", linewidths=1.2, linestyles="--")  # fmt: skip
        except (ValueError, RuntimeError):  # a degenerate triangulation: no contour
            pass
    pilot_axes(ax, runs, "rl.lr", "rl.staleness")
    best = rec["best"]
    ax.scatter([best["rl.lr"]], [best["rl.staleness"]], marker="*", s=320,
               color=GROUP_COLORS.get(confirm_group or "", "white"), edgecolor="k",
               zorder=6, label=f"pick (confirmation: {confirm_group or 'not run'})")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("rl.lr")
    ax.set_ylabel("rl.staleness")
    ax.set_title(f"regime map (dashed: risk {level:g}); pilots by round", fontsize=10)
    ax.legend(fontsize=6, loc="upper right", framealpha=0.85)
    fig.tight_layout()
    return save_figure(fig, out / "regime_map.png")


def tie_margin_lines(rec: dict[str, Any]) -> list[str]:
    """The report's lines on ties and the pick's stability margin."""
    lines = []
    tie = rec.get("tie")
    if tie:
        if tie["n_tied"] > 1:
            alts = "; ".join(", ".join(f"{k}={v:g}" for k, v in c["setting"].items())
                             + f" ({c['mean']:.3f})" for c in tie["candidates"][1:])  # fmt: skip
            lines.append(f"- **Tie**: {tie['n_tied']} candidates lie within {tie['tolerance']:.3g}"
                         f" of the best forecast objective (its noise): {alts}. The largest "
                         "stability margin won.")  # fmt: skip
        elif tie["tolerance"] > 0:
            lines.append(f"- No tie: every other candidate within risk is more than "
                         f"{tie['tolerance']:.3g} below the pick.")  # fmt: skip
    m = rec.get("margin")
    if m:
        lines.append(f"- **Margin** (forecast P(oscillating or collapse) stays <= "
                     f"{m['risk_level']:g}): {m['words'] or 'nothing to move'}.")  # fmt: skip
    from .._recommend._margin import time_margin_words

    words = time_margin_words(rec.get("time_margin"))
    if words:
        lines.append(f"- **Margin in time** (one new run, labelled as real runs are): {words}.")
    return lines


def distance_line(pred: dict[str, Any]) -> str:
    """How far the pick lies from the pilots, and its collapse floor."""
    d = pred.get("distance")
    if not d:
        return ""
    words = "; ".join(f"`{f}` {v['words']}" for f, v in d["fields"].items())
    text = (f"- Distance from the pilots: {words}; nearest pilot run "
            f"{d['nearest_pilot_spreads']:.2f} pilot spreads away.")  # fmt: skip
    if pred.get("collapse_floor", 0) > 0:
        text += (f" Beyond the pilots' range no pilot rules a collapse out: P(collapse) >= "
                 f"{pred['collapse_floor']:.2f}.")  # fmt: skip
    return text
