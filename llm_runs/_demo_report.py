"""The demo's report: ``OUT/report.md`` with its figures (torch-free).

Reads what the stages wrote (pilot and confirmation run folders, the selection, the
recommendation, the forecast of the recommended setting) and compares the forecast with
what the confirmation run did: per agent, the observed final competence against the 90 %
interval, and the observed regime against the predicted regime probabilities.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from simulate._io import read_json_object, save_figure, write_json, write_text

from ._competence_plot import competence_figure
from ._demo_config import DemoConfig
from ._regime import observed_regime
from .runlog import read_run

__all__ = ["compare_confirmation", "write_report"]


def _final(log: Any) -> dict[str, float]:
    comp = log.competence()
    return {str(a): float(comp[a].dropna().iloc[-1]) for a in comp.columns}


def _e2e(log: Any) -> float | None:
    rows = log.e2e_rows
    return float(rows[-1]["accuracy"]) if rows else None


def compare_confirmation(prediction: dict[str, Any], run: str | Path) -> dict[str, Any]:
    """The forecast of one setting against the run made at it.

    Args:
        prediction: One entry of ``prediction.json``'s ``predictions`` (``calibrate
            predict``).
        run: The run folder.

    Returns:
        Per agent the predicted final mean and 90 % interval, the observed final competence
        and whether it lies inside; the network's predicted regime-group probabilities,
        the observed regime, its group, and the probability the forecast gave that group.
    """
    from calibrate._predict import REGIME_GROUPS
    from simulate import REGIME_NAMES, Regime

    log = read_run(run)
    obs = _final(log)
    agents = {}
    for a, p in prediction["agents"].items():
        f = p["final"]
        o = obs.get(a)
        agents[a] = {
            "predicted_mean": f["mean"],
            "q05": f["q05"],
            "q95": f["q95"],
            "observed": o,
            "inside90": None if o is None else bool(f["q05"] <= o <= f["q95"]),
        }
    regime = observed_regime(log)
    code = next(int(c) for c in Regime if REGIME_NAMES[Regime(c)] == regime["regime"])
    group = next(g for g, codes in REGIME_GROUPS.items() if code in codes)
    net = prediction["network"]
    return {
        "agents": agents,
        "observed_regime": regime["regime"],
        "observed_group": group,
        "predicted_groups": {g: net[f"p_{g}"] for g in REGIME_GROUPS},
        "p_observed_group": net[f"p_{group}"],
        "observed_e2e": _e2e(log),
    }


def _confirm_figure(pred: dict[str, Any], steps: list[float], run: Path, path: Path) -> None:
    """Predicted mean and 50/90 % bands per agent, with the confirmation run's points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comp = read_run(run).competence()
    agents = list(pred["agents"])
    fig, axes = plt.subplots(1, len(agents), figsize=(4 * len(agents), 3.2), sharey=True)
    for ax, a in zip(axes, agents, strict=True):
        c = pred["agents"][a]["curve"]
        ax.fill_between(steps, c["q05"], c["q95"], alpha=0.2, color="C0", label="90 %")
        ax.fill_between(steps, c["q25"], c["q75"], alpha=0.35, color="C0", label="50 %")
        ax.plot(steps, c["mean"], color="C0", label="forecast")
        if a in comp:
            ax.plot(comp.index, comp[a], "o", ms=3, color="k", label="confirmation run")
        ax.set_title(a)
        ax.set_xlabel("optimizer step")
        ax.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("competence")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Forecast (made before the run) vs the confirmation run")
    fig.tight_layout()
    save_figure(fig, path)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def write_report(out: Path, cfg: DemoConfig, fit_dir: Path) -> Path:
    """Write ``out/report.md`` (and its figures) from the stages' outputs; returns its path."""
    from ._demo import pilot_name

    rec = read_json_object(out / "rec" / "recommendation.json", what="recommendation")
    pred_all = read_json_object(out / "prediction" / "prediction.json", what="prediction")
    pred = pred_all["predictions"][0]
    confirm = out / "confirm"
    cmp = compare_confirmation(pred, confirm)
    write_json(out / "confirmation.json", cmp)
    pilots = [out / "pilots" / pilot_name(s) for s in cfg.pilots]
    competence_figure([*pilots, confirm], out / "runs.png", title="pilots and confirmation")
    _confirm_figure(pred, pred_all["steps"], confirm, out / "confirmation.png")
    for src, dst in ((out / "rec" / "regime_map.png", "regime_map.png"),
                     (fit_dir / "predictive.png", "fit.png")):  # fmt: skip
        if src.is_file():
            shutil.copyfile(src, out / dst)
    lines = [
        "# agentmotifs demo: pilots → fit → selection → recommendation → confirmation",
        "",
        f"Base `{cfg.preset}`, task `{cfg.task}`, pilots wired as {cfg.motifs[0]}-{cfg.gate}; "
        f"knobs `rl.lr` and `rl.staleness`. Timings: `timing.json`.",
        "",
        "## Pilots",
        "",
        "| run | final competences | end-to-end | observed regime |",
        "|---|---|---|---|",
    ]
    for p in pilots:
        log = read_run(p)
        fin = ", ".join(f"{a} {v:.2f}" for a, v in _final(log).items())
        reg = observed_regime(log)["regime"]
        lines.append(f"| {p.name} | {fin} | {_pct(_e2e(log))} | {reg} |")
    lines += ["", "![runs](runs.png)", ""]
    sel = out / "fit" / "selection.json"
    if sel.is_file():
        s = read_json_object(sel, what="selection")
        lines += ["## Motif selection", "", "| network | elpd | se | d_elpd | weight |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for r in s["ranking"]:
            star = " *" if r["indistinguishable"] else ""
            lines.append(f"| {r['label']}{star} | {r['elpd']:.1f} | {r['se']:.1f} | "
                         f"{r['d_elpd']:.1f} | {r['weight']:.2f} |")  # fmt: skip
        ident = ", ".join(f"{k} {v if v is not None else '?'}" for k, v in s["identified"].items())
        lines += ["", f"Best: **{s['best']}** (* = indistinguishable from the best). "
                  f"Identified by the data: {ident}. The recommendation uses `{fit_dir.name}`.",
                  ""]  # fmt: skip
    if (out / "fit.png").is_file():
        lines += ["Fitted curves with their bands:", "", "![fit](fit.png)", ""]
    best = ", ".join(f"`{k}={v:g}`" for k, v in rec["best"].items())
    lines += [
        "## Recommendation",
        "",
        f"{rec['n_candidates']} candidates, {rec['draws']} posterior draws each, horizon "
        f"{rec['horizon_steps']:g} steps; ranked by {rec['ranked_by']}. Model: "
        f"{rec.get('motif_source', fit_dir.name)}.",
        "",
        "| rank | setting | final (mean [q05, q95]) | P(converged) | P(oscillating) "
        "| P(collapse) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rec["top"]:
        st = ", ".join(f"{k}={v:g}" for k, v in r["setting"].items())
        f = r["final"]
        lines.append(f"| {r['rank']} | {st} | {f['mean']:.3f} [{f['q05']:.3f}, {f['q95']:.3f}] "
                     f"| {r['p_converged']:.2f} | {r['p_oscillating']:.2f} "
                     f"| {r['p_collapse']:.2f} |")  # fmt: skip
    lines += ["", f"Recommended: {best} → `rec/best.yaml` (`python -m llm_runs train --config "
              "rec/best.yaml --out ...` runs it as is).", "", "![regime map](regime_map.png)",
              "", "## Confirmation run: forecast vs observed", "",
              "| agent | forecast final [90 %] | observed | inside |",
              "|---|---|---|---|"]  # fmt: skip
    for a, v in cmp["agents"].items():
        inside = "—" if v["inside90"] is None else ("yes" if v["inside90"] else "**no**")
        lines.append(f"| {a} | {v['predicted_mean']:.3f} [{v['q05']:.3f}, {v['q95']:.3f}] | "
                     f"{_pct(v['observed'])} | {inside} |")  # fmt: skip
    pg = ", ".join(f"{g} {p:.2f}" for g, p in cmp["predicted_groups"].items())
    lines += [
        "",
        f"Observed regime: **{cmp['observed_regime']}** ({cmp['observed_group']}); the forecast "
        f"gave that group P = {cmp['p_observed_group']:.2f} (all groups: {pg}). End-to-end "
        f"accuracy of the confirmation run: {_pct(cmp['observed_e2e'])}.",
        "",
        "![confirmation](confirmation.png)",
        "",
    ]
    return write_text(out / "report.md", "\n".join(lines))
