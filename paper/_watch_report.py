"""The held-out watch replays' report (paper/watch_testbed.py's driver): ``table.md`` and the
figure from a replay's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _fmt(x: Any) -> str:
    return "–" if x is None else (f"{x:.2f}" if isinstance(x, float) else str(x))


def table(summ: dict[str, Any]) -> str:
    """table.md: both methods at the design threshold, by group, and over thresholds."""
    ms = summ["methods"]
    lines = [
        f"{summ['n_runs']} held-out runs, {summ['n_collapsed']} collapsed by the rule; "
        f"threshold {summ['threshold']:g}, lead goal {summ['lead_goal']} steps.",
        "",
        "| method | group | collapsed | flagged ≥ 20 ahead | alerted ≤ collapse | median lead "
        "| false alerts |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m, s in ms.items():
        groups = [("all", s | {"n_other": summ["n_runs"] - s["n_collapsed"]})]
        groups += [(g, v) for g, v in {**s["by_source"], **s["by_range"]}.items() if v]
        for g, v in groups:
            lines.append(
                f"| {m} | {g} | {v['n_collapsed']}/{v['n_collapsed'] + v['n_other']} | "
                f"{_fmt(v['flagged_share'])} | {_fmt(v['alerted_before_share'])} | "
                f"{_fmt(v['median_lead'])} | {_fmt(v['false_alert_share'])} "
                f"({v['false_alerts']}/{v['n_other']}) |"
            )
    lines += ["", "Over thresholds (flagged ≥ 20 ahead / false alerts):", "",
              "| threshold | " + " | ".join(ms) + " |", "| --- |" + " --- |" * len(ms)]  # fmt: skip
    for i, t in enumerate(next(iter(ms.values()))["curve"]):
        pts = [s["curve"][i] for s in ms.values()]
        cells = [f"{_fmt(c['flagged_share'])} / {_fmt(c['false_alert_share'])}" for c in pts]
        lines.append(f"| {t['threshold']:g} | " + " | ".join(cells) + " |")
    lines += ["", "Collapses by class at the design threshold (read after the replay):", "",
              "| class | " + " | ".join(ms) + " |", "| --- |" + " --- |" * len(ms)]  # fmt: skip
    for c in ("forecastable", "too_early", "after_shift", "other_task"):
        cells = [f"{s['breakdown'][c]['flagged']}/{s['breakdown'][c]['n']}" for s in ms.values()]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += [""]
    for m, s in ms.items():
        b, e = s["breakdown"], s["ess"]
        lines.append(
            f"{m}: false alerts at a run's first evaluation {b['false_alerts_at_first']} of "
            f"{s['false_alerts']}; runs whose first alert came later {b['alerts_after_first']}; "
            f"at the last evaluation P >= {summ['threshold']:g} for "
            f"{s['end_state']['collapsed_called']}/{s['end_state']['n_collapsed']} collapses and "
            f"{s['end_state']['other_called']}/{s['end_state']['n_other']} other runs; "
            f"median effective draws {e['first']:.0f} / {e['second']:.0f} / {e['fourth']:.0f} / "
            f"{e['last']:.0f} after the 1st / 2nd / 4th / last evaluation."
        )
    return "\n".join(lines) + "\n"


def figure(rep: list[dict[str, Any]], summ: dict[str, Any], path: Path) -> None:
    """Flagged against false-alert share over thresholds per method; the series per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(summ["methods"])
    fig, axes = plt.subplots(1, 1 + len(methods), figsize=(5 * (1 + len(methods)), 4.2))
    for m, mk in zip(methods, ("o-", "s-", "^-", "d-"), strict=False):
        c = summ["methods"][m]["curve"]
        fa = [s["false_alert_share"] or 0.0 for s in c]
        axes[0].plot(fa, [s["flagged_share"] or 0.0 for s in c], mk, label=m)
    axes[0].set(xlabel="false-alert share", ylabel="collapses flagged ≥ 20 steps ahead",
                title="over thresholds, each method")  # fmt: skip
    axes[0].legend(fontsize=8)
    for ax, m in zip(axes[1:], methods, strict=True):
        for r in rep:
            col = "tab:red" if r["collapse_step"] is not None else "tab:blue"
            ax.plot(r["steps"], r[m]["p_collapse"], color=col, alpha=0.25, lw=0.8)
        ax.axhline(summ["threshold"], color="k", lw=0.8, ls=":")
        ax.set(xlabel="step", ylabel="P(collapse)", title=f"{m} (red: collapsed by the rule)")
    fig.tight_layout(), fig.savefig(path, dpi=120), plt.close(fig)
