"""The demo's report: ``OUT/report.md`` with its figures (torch-free).

Reads what the stages wrote (pilot and confirmation run folders, the selection, the
recommendation, the forecast of the recommended setting) and compares the forecast with
what the confirmation run did: per agent, the observed final competence against the 90 %
interval of what one new run will log (``calibrate predict``'s default ``new_run`` band:
run effects, seed spread where the pilots hold replicates, binomial evaluation noise), its
CRPS (lower is better), and the same for the nearest-pilot baseline; and the observed regime
against the predicted regime probabilities.

The nearest-pilot baseline (:func:`nearest_pilot`) forecasts that the new run logs what the
pilot nearest to its setting logged last: distance in the knobs' link scales (``log`` of
``rl.lr``, ``log(1 + k)`` of ``rl.staleness``), each knob divided by the pilots' range of it;
the forecast per agent is that pilot's last competence ``p`` with its own binomial noise,
``Binomial(n, p) / n`` at the pilot's ``n_eval`` (no seed spread: the pilots have one seed).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from llm_runs import competence_figure, observed_regime
from llm_runs.knobs import knob
from llm_runs.runlog import read_run
from simulate.common import read_json_object, save_figure, write_json, write_text

from .._objective import E2E, E2E_LABEL
from .._recommend._explain import explain_lines
from ._config import DemoConfig
from ._pick import design_sentence, distance_line, map_figure, tie_margin_lines

__all__ = ["compare_confirmation", "nearest_pilot", "objective_sentence", "write_report"]

#: Samples of the nearest-pilot baseline's binomial forecast (seeded: the report is stable).
BASELINE_SAMPLES = 4000


def _knob_scale(field: str, value: float) -> float:
    """``value`` on the knob's own scale (:data:`llm_runs.knobs.KNOBS`; ``log`` for others)."""
    from simulate.common import to_scale

    k = knob(field)
    return float(to_scale(k.scale if k and k.scale == "log1p" else "log", float(value)))


def _last_logs(log: Any) -> dict[str, tuple[float, int]]:
    """Per agent, the last logged ``(competence, n_eval)``."""
    out: dict[str, tuple[float, int]] = {}
    for r in sorted(log.agent_rows, key=lambda r: r["step"]):
        if r["competence"] is not None:
            out[str(r["agent"])] = (float(r["competence"]), int(r["n_eval"]))
    return out


def nearest_pilot(
    setting: dict[str, float], pilots: list[tuple[dict[str, float], str | Path]]
) -> dict[str, Any]:
    """The nearest-pilot baseline's forecast of one new run at ``setting``.

    Args:
        setting: The new run's knobs (``rl.lr``, ``rl.staleness``...).
        pilots: Each pilot's knobs and run folder.

    Returns:
        ``pilot`` (its folder name), ``distance``, and per agent in ``agents`` its last
        competence ``p``, ``n_eval`` and ``samples`` of ``Binomial(n_eval, p) / n_eval``.
    """
    import numpy as np

    fields = [f for f in setting if all(f in s for s, _ in pilots)]
    pts = np.array([[_knob_scale(f, s[f]) for f in fields] for s, _ in pilots])
    span = np.ptp(pts, axis=0) if len(pilots) > 1 else np.ones(len(fields))
    span = np.where(span > 0, span, np.inf)  # a knob the pilots never varied: no distance
    x = np.array([_knob_scale(f, setting[f]) for f in fields])
    dist = np.sqrt(np.sum(((pts - x) / span) ** 2, axis=1))
    i = int(np.argmin(dist))
    rng = np.random.default_rng(0)
    agents = {}
    for a, (p, n) in _last_logs(read_run(pilots[i][1])).items():
        agents[a] = {"p": p, "n_eval": n, "samples": rng.binomial(n, p, BASELINE_SAMPLES) / n}
    return {"pilot": Path(pilots[i][1]).name, "distance": float(dist[i]), "agents": agents}


def _final(log: Any) -> dict[str, float]:
    comp = log.competence()
    return {str(a): float(comp[a].dropna().iloc[-1]) for a in comp.columns}


def _e2e(log: Any) -> float | None:
    rows = log.e2e_rows
    return float(rows[-1]["accuracy"]) if rows else None


def compare_confirmation(
    prediction: dict[str, Any], run: str | Path, baseline: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The forecast of one setting against the run made at it.

    Args:
        prediction: One entry of ``prediction.json``'s ``predictions`` (``calibrate
            predict``; its ``final_new_run`` when there, else its ``final``).
        run: The run folder.
        baseline: :func:`nearest_pilot`'s forecast of the same run, scored alongside.

    Returns:
        Per agent the predicted final mean and 90 % interval (``band``: which forecast),
        the observed final competence, whether it lies inside, and the CRPS of the
        forecast's samples (``baseline_*`` the same for the baseline); the network's
        predicted regime-group probabilities, the observed regime, its group, and the
        probability the forecast gave that group.
    """
    import numpy as np

    from simulate.common import REGIME_GROUPS, REGIME_NAMES, Regime, crps_samples

    log = read_run(run)
    obs = _final(log)
    agents = {}
    for a, p in prediction["agents"].items():
        f = p.get("final_new_run", p["final"])
        o = obs.get(a)
        samples = np.asarray([np.nan if v is None else v for v in f.get("samples", [])], float)
        row = {
            "band": "new_run" if "final_new_run" in p else p["final"].get("band", "mean"),
            "predicted_mean": f["mean"],
            "q05": f["q05"],
            "q95": f["q95"],
            "observed": o,
            "inside90": None if o is None else bool(f["q05"] <= o <= f["q95"]),
            "crps": _crps(crps_samples, samples, o),
        }
        if "final_mean_curve" in p:
            row["mean_curve_q05"], row["mean_curve_q95"] = (
                p["final_mean_curve"]["q05"], p["final_mean_curve"]["q95"])  # fmt: skip
        b = (baseline or {}).get("agents", {}).get(a)
        if b is not None:
            lo, hi = (float(v) for v in np.quantile(b["samples"], [0.05, 0.95]))
            row |= {"baseline_p": b["p"], "baseline_q05": lo, "baseline_q95": hi,
                    "baseline_inside90": None if o is None else bool(lo <= o <= hi),
                    "baseline_crps": _crps(crps_samples, b["samples"], o)}  # fmt: skip
        agents[a] = row
    regime = observed_regime(log)
    code = next(int(c) for c in Regime if REGIME_NAMES[Regime(c)] == regime["regime"])
    group = next(g for g, codes in REGIME_GROUPS.items() if code in codes)
    net = prediction["network"]
    return {
        "agents": agents,
        "baseline_pilot": None if baseline is None else baseline["pilot"],
        "observed_regime": regime["regime"],
        "observed_group": group,
        "predicted_groups": {g: net[f"p_{g}"] for g in REGIME_GROUPS},
        "p_observed_group": net[f"p_{group}"],
        "observed_e2e": _e2e(log),
    }


def _crps(fn: Any, samples: Any, observed: float | None) -> float | None:
    """CRPS of ``samples`` at ``observed`` (None without an outcome or a finite sample)."""
    if observed is None or not len(samples):
        return None
    v = float(fn(samples, observed))
    return v if math.isfinite(v) else None


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
        what = "one new run" if c.get("band", "mean") == "new_run" else "mean curve"
        ax.fill_between(steps, c["q05"], c["q95"], alpha=0.2, color="C0", label=f"90 % {what}")
        ax.fill_between(steps, c["q25"], c["q75"], alpha=0.35, color="C0", label=f"50 % {what}")
        ax.plot(steps, c["mean"], color="C0", label="forecast (mean)")
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


def _yes_no(v: bool) -> str:
    return "yes" if v else "no"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _yes(inside: bool | None) -> str:
    return "—" if inside is None else ("yes" if inside else "**no**")


def _band_sentence(pred_all: dict[str, Any], pilot: str | None) -> str:
    """What the model's interval is, and what the baseline is (one paragraph)."""
    band = pred_all.get("band", "mean")
    what = (
        "the 90 % interval of what one new run will log"
        if band == "new_run"
        else "the 90 % interval of the mean curve (no seed spread, no evaluation noise)"
    )
    text = f"Model: {what}"
    if "n_eval" in pred_all:
        n = ", ".join(f"{a} {v}" for a, v in pred_all["n_eval"].items())
        text += f"; evaluation noise: binomial at n_eval {n}"
    if "seed_spread" in pred_all:
        text += f"; seed spread: {pred_all['seed_spread']['note']}"
    return (text + f". Nearest pilot (`{pilot}`): its last competence with its own binomial "
            "noise at its n_eval. CRPS: continuous ranked probability score of the final "
            "competence (lower is better).")  # fmt: skip


def objective_sentence(rec: dict[str, Any], objective: str) -> str:
    """One sentence: what the recommendation ranked the candidates by (``objective``: the
    space's, ``e2e``, ``last`` or an agent's name; ``rec``: the recommendation)."""
    label = (rec.get("objective") or {}).get("label")
    if objective == E2E:
        return (f"Objective `e2e`: the forecast {E2E_LABEL} at the horizon, the model's "
                "forecast of the end-to-end accuracy (on the testbed's logs the product tracks "
                "the logged end-to-end accuracy with r = 0.97; docs/cli.md).")  # fmt: skip
    label = label or f"final competence of {rec.get('proxy_agent', objective)!r}"
    return f"Ranked by the forecast {label} at the horizon (`objective: {objective}`)."


def write_report(out: Path, cfg: DemoConfig, fit_dir: Path) -> Path:
    """Write ``out/report.md`` (and its figures) from the stages' outputs; returns its path."""
    rec = read_json_object(out / "rec" / "recommendation.json", what="recommendation")
    pred_all = read_json_object(out / "prediction" / "prediction.json", what="prediction")
    pred = pred_all["predictions"][0]
    confirm = out / "confirm"
    runs = read_json_object(out / "pilots" / "pilots.json", what="pilots")["runs"]
    pilots = [Path(r["folder"]) for r in runs]
    base = nearest_pilot(dict(pred["setting"]), [(r["setting"], r["folder"]) for r in runs])
    cmp = compare_confirmation(pred, confirm, base)
    write_json(out / "confirmation.json", cmp)
    competence_figure([*pilots, confirm], out / "runs.png", title="pilots and confirmation")
    _confirm_figure(pred, pred_all["steps"], confirm, out / "confirmation.png")
    if map_figure(out, rec, runs, cmp["observed_group"]) is None:
        src = out / "rec" / "regime_map.png"
        if src.is_file():
            shutil.copyfile(src, out / "regime_map.png")
    if (fit_dir / "predictive.png").is_file():
        shutil.copyfile(fit_dir / "predictive.png", out / "fit.png")
    lines = [
        "# agentmotifs demo: pilots → fit → selection → recommendation → confirmation",
        "",
        f"Base `{cfg.preset}`, task `{cfg.task}`, pilots wired as {cfg.motifs[0]}-{cfg.gate}; "
        f"knobs `rl.lr` and `rl.staleness`. Timings: `timing.json`.",
        "",
        "## Pilots",
        "",
        design_sentence(cfg, runs),
        "",
        "| round | run | final competences | end-to-end | observed regime | collapse "
        "(package's rule / peak rule) |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        log = read_run(r["folder"])
        fin = ", ".join(f"{a} {v:.2f}" for a, v in _final(log).items())
        both = f"{_yes_no(r['collapse'])} / {_yes_no(r['collapse_peak'])}"
        lines.append(f"| {r['round']} | {Path(r['folder']).name} | {fin} | {_pct(_e2e(log))} "
                     f"| {r['regime']} | {both} |")  # fmt: skip
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
        objective_sentence(rec, str(rec.get("space", {}).get("objective", cfg.objective))),
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
    why = explain_lines(rec["explanation"]) if "explanation" in rec else []
    lines += ["", f"Recommended: {best} → `rec/best.yaml` (`python -m llm_runs train --config "
              "rec/best.yaml --out ...` runs it as is).", "", *tie_margin_lines(rec),
              distance_line(pred), "",
              *(f"- {w.strip().removeprefix('why: ')}" for w in why), "",
              "![regime map](regime_map.png)",
              "", "## Confirmation run: forecast vs observed", "",
              _band_sentence(pred_all, cmp["baseline_pilot"]), "",
              "| agent | model: one new run [90 %] | inside | CRPS | nearest pilot [90 %] "
              "| inside | CRPS | observed |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for a, v in cmp["agents"].items():
        base_iv = (f"{v['baseline_p']:.3f} [{v['baseline_q05']:.3f}, {v['baseline_q95']:.3f}]"
                   if "baseline_p" in v else "—")  # fmt: skip
        lines.append(f"| {a} | {v['predicted_mean']:.3f} [{v['q05']:.3f}, {v['q95']:.3f}] | "
                     f"{_yes(v['inside90'])} | {_pct(v['crps'])} | {base_iv} | "
                     f"{_yes(v.get('baseline_inside90'))} | {_pct(v.get('baseline_crps'))} | "
                     f"{_pct(v['observed'])} |")  # fmt: skip
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
