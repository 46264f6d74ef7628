"""Scores, table and figure of :mod:`forecast_scores` (issue 31 §3): every method's forecasts
of the held-out runs scored by :func:`calibrate.score_forecast` (``calibrate evaluate``'s
scores), plus the collapse-boundary error of a study's grid."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import calibrate
import simulate
from calibrate import Forecast, group_of
from paper._regime_report import _boundary
from simulate.common import save_figure, write_json, write_text

__all__ = ["boundary_error", "score_all", "score_forecast", "write_outputs"]

#: Metrics of final competence (per agent and pooled over agents, ``all``).
FINAL_METRICS = ("coverage50", "coverage90", "crps", "log_score")

#: Scores of :func:`calibrate.score_forecast` the forecast studies' summaries predate.
_NEW_KEYS = ("brier", "reliability", "coverage50_ci95")


def score_forecast(
    f: Forecast, held: list[dict], n_eval: int, *, rng: np.random.Generator
) -> dict[str, Any]:
    """One method's scores (:func:`calibrate.score_forecast`) with the keys the forecast
    studies' summaries hold: regime accuracy (with its Wilson 95 % interval) and, when it
    samples finals, per agent and pooled (``all``) coverage, CRPS, log score and PIT (the
    Brier score, reliability table and 50 % coverage interval calibrate adds are left out, so
    the committed summaries regenerate unchanged)."""
    s = calibrate.score_forecast(f, held, n_eval, rng=rng)
    return {k: v for k, v in s.items() if k not in _NEW_KEYS}


def boundary_error(
    labels: list[str], held: list[dict], pilots: list[dict], design: dict[str, Any]
) -> dict[str, Any]:
    """Per row of the grid (a cell's indices after the lr index: the staleness, and any
    further knob), the log10 lr where the row first leaves ``converged`` (cells' modal group
    over seeds; pilot cells take their observed groups) for ``labels`` and for the
    observations; the mean |difference| in decades over the rows whose every cell is known
    (None when none is)."""
    lrs, ks = np.asarray(design["lrs"], float), design["staleness"]

    def modal(rows: list[tuple[dict, str]]) -> dict[tuple, str]:
        by: dict[tuple, list[str]] = {}
        for r, g in rows:
            by.setdefault(tuple(r["cell"]), []).append(g)
        return {c: Counter(v).most_common(1)[0][0] for c, v in by.items()}

    pil = [(r, r["group"]) for r in pilots]
    pred = modal(pil + list(zip(held, labels, strict=True)))
    seen = modal(pil + [(r, r["group"]) for r in held])
    rows, errs = {}, []
    for key in sorted({c[1:] for c in seen}):
        cells = [(i, *key) for i in range(len(lrs))]
        if not all(c in seen for c in cells):
            continue
        p = _boundary(lrs, [pred[c] for c in cells])
        o = _boundary(lrs, [seen[c] for c in cells])
        name = str(ks[key[0]]) + "".join(f"/{k}" for k in key[1:])
        rows[name] = {"predicted_log10_lr": p, "observed_log10_lr": o}
        errs.append(abs(p - o))
    return {"decades": float(np.mean(errs)) if errs else None, "rows": rows}


def score_all(
    forecasts: list[Forecast],
    held: list[dict],
    pilots: list[dict],
    design: dict[str, Any],
    n_eval: int,
    *,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Every method's scores and boundary error, and the summary layout of issue 31:
    ``{metric: {split: {method: value}}}`` (one split here, ``heldout``)."""
    methods = {f.method: score_forecast(f, held, n_eval, rng=rng) for f in forecasts}
    for f in forecasts:
        methods[f.method]["boundary_error"] = boundary_error(f.label(), held, pilots, design)
    summary: dict[str, Any] = {"regime_accuracy": {}, "boundary_error": {}}
    summary.update({m: {} for m in FINAL_METRICS})
    for name, s in methods.items():
        summary["regime_accuracy"][name] = [s["regime_accuracy"], *s["regime_accuracy_ci95"]]
        summary["boundary_error"][name] = s["boundary_error"]["decades"]
        for m in FINAL_METRICS:
            if m in s:
                summary[m][name] = s[m]
    return {
        "summary": {k: {"heldout": v} for k, v in summary.items()},
        "methods": methods,
        "n_heldout_runs": len(held),
        "n_pilot_runs": len(pilots),
        "observed_groups": dict(Counter(r["group"] for r in held)),
    }


def _table(config: dict[str, Any], summary: dict[str, Any], split: str = "heldout") -> str:
    s = {k: summary[k][split] for k in ("regime_accuracy", "boundary_error", *FINAL_METRICS)}
    n = summary.get("n_runs", {}).get(split, summary["n_heldout_runs"])
    lines = [
        f"Forecasts of {n} held-out runs ({split}) from {summary['n_pilot_runs']} "
        f"pilot runs (`{config['command']}`). Final competence scores pooled over agents.",
        "",
        "| method | regime acc. [95 % CI] | cov. 50 % | cov. 90 % | CRPS | log score | "
        "boundary err. (decades) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (acc, lo, hi) in s["regime_accuracy"].items():
        cells = [f"{s[m][name]['all']:.3f}" if name in s[m] else "–" for m in FINAL_METRICS]
        b = s["boundary_error"][name]
        lines.append(f"| {name} | {acc:.3f} [{lo:.2f}, {hi:.2f}] | " + " | ".join(cells)
                     + (f" | {b:.2f} |" if b is not None else " | – |"))  # fmt: skip
    agents = [a for a in next(iter(s["crps"].values())) if a != "all"]
    head = "| method | " + " | ".join(agents) + " |"
    lines += ["", "CRPS per agent (lower is better):", "", head, "|---" * (len(agents) + 1) + "|"]
    for name, v in s["crps"].items():
        lines.append(f"| {name} | " + " | ".join(f"{v[a]:.3f}" for a in agents) + " |")
    return "\n".join(lines) + "\n"


def _figure(
    path: Path, summary: dict[str, Any], forecasts: list[Forecast], split: str = "heldout"
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sampled = [f for f in forecasts if f.samples.size]
    fig, axes = plt.subplots(1, len(sampled) + 1, figsize=(3.0 * (len(sampled) + 1), 3.0))
    for ax, f in zip(axes[:-1], sampled, strict=True):
        h = np.asarray(summary["methods"][f.method]["pit_hist"], float)
        ax.bar(np.arange(10) / 10 + 0.05, h / max(h.sum(), 1) * 10, width=0.09)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_title(f.method, fontsize=8)
        ax.set_xlabel("PIT")
    axes[0].set_ylabel("density (1 = calibrated)")
    crps = summary["crps"][split]
    agents = [a for a in next(iter(crps.values())) if a != "all"]
    w = 0.8 / max(len(crps), 1)
    for i, (name, v) in enumerate(crps.items()):
        axes[-1].bar(np.arange(len(agents)) + i * w, [v[a] for a in agents], width=w, label=name)
    axes[-1].set_xticks(np.arange(len(agents)) + 0.4 - w / 2, agents)
    axes[-1].set_ylabel("CRPS of final competence")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)


def write_outputs(
    out: Path, config: dict[str, Any], scores: dict[str, Any], forecasts: list[Forecast],
    held: list[dict], splits: tuple[str, ...] = ("heldout",),
) -> None:  # fmt: skip
    """``scores.json`` (every method's per-run scores), ``summary.json`` (the metrics as
    ``{metric: {"heldout": {method: value}}}`` and each method's pooled scores), ``table.md``
    and ``forecast_scores.png``."""
    scores = dict(scores, runs=[r["name"] for r in held], command=config["command"])
    write_json(out / "scores.json", scores)
    summary = {k: v for k, v in scores.items() if k not in ("methods", "summary", "runs")}
    summary.update(scores["summary"])
    summary["methods"] = {
        n: {k: v for k, v in s.items() if k not in ("per_run", "labels")}
        for n, s in scores["methods"].items()
    }
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", "\n".join(_table(config, summary, sp) for sp in splits))
    _figure(out / "forecast_scores.png", summary, forecasts, splits[-1])


def load_runs(source: Path, n_eval: int) -> tuple[dict[str, Any], list[dict], list[dict]]:
    """The study's design and its pilot and held-out runs, each relabelled with the one rule."""
    cfg = json.loads((source / "config.json").read_text())["design"]
    obs = json.loads((source / "observed.json").read_text())
    pilots = {tuple(c) for c in cfg["pilots"]}
    pil, held = [], []
    for name, r in obs.items():
        i, j = r["cell"]
        agents = list(r["curves"])
        curves = np.array([r["curves"][a] for a in agents], dtype=float).T
        regime = simulate.classify_observed(r["steps"], curves, n_eval, names=tuple(agents))
        setting = {"rl.lr": cfg["lrs"][i], "rl.staleness": cfg["staleness"][j]}
        run = dict(r, name=name, group=group_of(regime["regime"]), setting=setting)
        (pil if (i, j) in pilots else held).append(run)
    return cfg, pil, held


def model_forecasts(
    post: Any,
    held: list[dict],
    horizon: float,
    n_eval: int,
    draws: int,
    *,
    name: str = "motif model",
    bands: tuple[str, ...] = ("new_run", "mean"),
    extrapolation_sd: float = 0.0,
):
    """A fit's forecasts of every held-out run (:func:`calibrate.model_forecasts`): one new
    run's (``new_run``) and the mean curve's (``mean``, plus evaluation noise), each a
    :class:`calibrate.Forecast` named ``<name> (new run)`` or ``<name> (mean curve)``; and the
    fit's seed-spread note. ``extrapolation_sd``: links bent beyond the pilots' range."""
    import calibrate

    return calibrate.model_forecasts(
        post, [r["setting"] for r in held], horizon=horizon, n_eval=n_eval, draws=draws,
        name=name, bands=bands, extrapolation_sd=extrapolation_sd,
    )  # fmt: skip
