"""Link-only ODE against the mechanistic map on the old regime map's real runs (issue 31 §2).

The pilots of ``paper/results/regime_map`` (8 runs: lr 1e-3 and 1.5e-2 x staleness 0 and 8 x
2 seeds, C1-AND) are fitted three times, every fit by the same method (``--method``, NUTS by
default: the Laplace draws of the map were degenerate, importance-resampling Pareto k > 25):

* ``ode`` — the stored regime-map fit's model: the competence ODE with log-linear links of
  rho and delta on ``rl.lr`` and ``rl.staleness`` (refitted here, same model);
* ``map`` — ``FitConfig(dynamics="map", lag="stale")``: finite learning steps with ``eta``
  linked to ``rl.lr`` and a stale-gradient policy lag linked to ``rl.staleness``, no other
  links (regimes from the dynamics alone);
* ``map+links`` — the map with both: the ODE's rate links and the mechanisms' links (does
  a mechanism add anything to the links?).

They are compared by PSIS-LOO on the pilots' observations and on the 24 held-out runs with
the scores of every forecast experiment (``paper/_forecast_report.score_all``: regime
accuracy with its Wilson interval, 50 % and 90 % coverage, CRPS, log score, PIT and the
collapse-boundary error) of one new run's forecast (``calibrate.predict``'s ``new_run``
band); observed labels by the one collapse rule of real runs
(:func:`simulate.classify_observed`, as ``paper/forecast_scores.py`` relabels them).

Results: ``<out>/`` config.json (the design, stored first; another design is refused unless
``--overwrite``), summary.json, table.md, mechanistic.png.

Usage: ``python -m paper.mechanistic_check [--out paper/results/mechanistic] [--draws 200]
[--method nuts|laplace] [--overwrite]``
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from paper._forecast_report import load_runs, model_forecasts, score_all

ROOT = Path(__file__).resolve().parents[1]
REGIME = ROOT / "paper" / "results" / "regime_map"
COMMAND = "python -m paper.mechanistic_check"
MODELS = ("ode", "map", "map+links")
#: NUTS sizes (chains x (warm-up + draws)): the three fits in minutes on 2 cores.
NUTS = {"chains": 2, "warmup": 300, "samples": 300}


def _configs(draws: int, method: str) -> dict[str, Any]:
    import calibrate as cal

    ode = cal.FitConfig.load(REGIME / "fit" / "config.json")
    mech = cal.FitConfig(
        dynamics="map",
        lag="stale",
        hierarchy=cal.Hierarchy(
            links=(
                cal.Link("eta", "rl.lr"),
                cal.Link("lag", "rl.staleness", transform="log1p"),
            )
        ),
    )
    both = dataclasses.replace(
        mech,
        hierarchy=cal.Hierarchy(links=ode.hierarchy.links + mech.hierarchy.links),
    )
    sizes = {"samples": draws} if method == "laplace" else dict(NUTS)
    return {
        m: dataclasses.replace(c, method=method, **sizes)
        for m, c in (("ode", ode), ("map", mech), ("map+links", both))
    }


def _loo(post) -> Any:
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.loo(post.to_inference_data(), pointwise=True)


def _by_staleness(held: list[dict], scores: dict[str, Any]) -> dict[str, Any]:
    """Regime accuracy and CRPS (pooled over agents) per staleness row of the grid."""
    rows: dict[str, dict[str, list[float]]] = {}
    crps = np.asarray(scores["per_run"]["crps"], float)  # (H, N)
    for r, lab, c in zip(held, scores["labels"], crps, strict=True):
        row = rows.setdefault(str(r["setting"]["rl.staleness"]), {"hit": [], "crps": []})
        row["hit"].append(float(lab == r["group"]))
        row["crps"].append(float(np.nanmean(c)))
    return {
        "regime_accuracy": {k: float(np.mean(v["hit"])) for k, v in rows.items()},
        "crps": {k: float(np.mean(v["crps"])) for k, v in rows.items()},
    }


def _diagnostics(post, method: str) -> dict[str, Any]:
    z = post.samples["z"]
    out: dict[str, Any] = {
        "distinct_draws": int(np.unique(z.reshape(-1, z.shape[-1]), axis=0).shape[0])
    }
    if method == "laplace":
        out["is_pareto_k"] = float(post.stats.get("is_pareto_k", np.nan))
    else:
        d = post.diagnostics()
        out |= {
            "r_hat_max": float(d["r_hat_max"]),
            "divergences": int(np.sum(np.asarray(post.stats["diverging"]))),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    import simulate

    p = simulate.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--out", default=str(ROOT / "paper" / "results" / "mechanistic"))
    p.add_argument("--draws", type=int, default=200, help="posterior draws per forecast")
    p.add_argument("--method", choices=("nuts", "laplace"), default="nuts")
    p.add_argument("--overwrite", action="store_true", help="replace another design's results")
    a = p.parse_args(argv)
    if a.draws < 10:
        p.error("--draws must be >= 10")
    import jax

    jax.config.update("jax_enable_x64", True)

    out = Path(a.out)
    n_eval = int(json.loads((REGIME / "predictions.json").read_text())["n_eval"])
    design, pilots, held = load_runs(REGIME, n_eval)
    cfgs = _configs(a.draws, a.method)
    stored = {
        "pilots_fit": str((REGIME / "fit").relative_to(ROOT)),
        "design": design,
        "method": a.method,
        "draws": a.draws,
        "models": {k: v.to_dict() for k, v in cfgs.items()},
        "observed_labels": "simulate.classify_observed (the collapse rule of real runs)",
        "command": COMMAND  # the arguments that make the results (not --overwrite)
        + "".join(
            f" {x}" for x in (argv if argv is not None else sys.argv[1:]) if x != "--overwrite"
        ),
    }
    compare = {k: v for k, v in stored.items() if k != "command"}
    try:
        return _run(a, out, stored, compare, cfgs, design, pilots, held, n_eval)
    except simulate.AgentmotifsError as err:  # another design in --out, a folder in use...
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(a, out, stored, compare, cfgs, design, pilots, held, n_eval) -> int:
    import jax
    import pandas as pd

    import calibrate as cal
    import simulate
    from simulate.spec import NetworkSpec

    with cal.Study(out, {"compare": compare, "command": stored["command"]},
                   design_file="config.json", compare_key="compare", overwrite=a.overwrite,
                   kind="mechanistic check"):  # fmt: skip
        data = cal.CurveData.from_table(pd.read_parquet(REGIME / "fit" / "data.parquet"))
        spec = NetworkSpec.from_dict(json.loads((REGIME / "fit" / "network.json").read_text()))
        posts, loos, times, forecasts = {}, {}, {}, []
        for m in MODELS:
            t0 = time.perf_counter()
            posts[m] = cal.fit(data, spec, cfgs[m], key=jax.random.key(0), log=print)
            times[f"fit_{m}_s"] = time.perf_counter() - t0
            loos[m] = _loo(posts[m])
            t0 = time.perf_counter()
            fc, _ = model_forecasts(posts[m], held, float(design["steps"]), n_eval, a.draws,
                                    name=m, bands=("new_run",))  # fmt: skip
            forecasts += fc
            times[f"predict_{m}_s"] = time.perf_counter() - t0
            print(f"{m}: elpd_loo {float(loos[m].elpd_loo):.1f} ({times[f'fit_{m}_s']:.0f} s)")
        scores = score_all(forecasts, held, pilots, design, n_eval,
                           rng=np.random.default_rng(0))  # fmt: skip
        from calibrate import compare_pointwise

        names = {m: f.method for m, f in zip(MODELS, forecasts, strict=True)}
        summary = {
            "method": a.method,
            "loo": {
                m: {
                    "elpd_loo": float(loos[m].elpd_loo),
                    "se": float(loos[m].se),
                    "p_loo": float(loos[m].p_loo),
                    "pareto_k_max": float(np.max(loos[m].pareto_k)),
                    "n_pareto_k_high": int(np.sum(np.asarray(loos[m].pareto_k) > 0.7)),
                }
                for m in MODELS
            },
            "loo_ranking": compare_pointwise(
                {m: np.asarray(loos[m].loo_i).ravel() for m in MODELS}
            ),
            "map_log_joint": {m: float(posts[m].map_log_joint) for m in MODELS},
            "diagnostics": {m: _diagnostics(posts[m], a.method) for m in MODELS},
            **scores["summary"],
            "heldout": {
                m: {k: v for k, v in scores["methods"][names[m]].items() if k != "per_run"}
                | {"by_staleness": _by_staleness(held, scores["methods"][names[m]])}
                for m in MODELS
            },
            "fitted": {
                m: {
                    k: v
                    for k, v in posts[m].summary().items()
                    if k.startswith(("c[", "eta", "lag"))
                }
                for m in MODELS
            },
            "n_heldout_runs": len(held),
            "n_pilot_runs": len(pilots),
            "wall_s": {k: round(v, 1) for k, v in times.items()},
            "command": stored["command"],
        }
        simulate.write_json(out / "summary.json", summary)
        _table(out / "table.md", summary)
        _figure(out / "mechanistic.png", held, forecasts)
    print((out / "table.md").read_text())
    return 0


def _table(path: Path, s: dict) -> None:
    from simulate.common import write_text

    lines = [f"`{s['command']}` — pilots of paper/results/regime_map ({s['n_pilot_runs']} runs, "
             f"fitted by {s['method']}), {s['n_heldout_runs']} held-out runs, one new run's "
             "forecast", "",
             "| model | MAP log joint | elpd_loo (se) | distinct draws | regime accuracy (95 % CI) "
             "| 50 % / 90 % coverage | CRPS | log score | boundary error (decades) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for m in MODELS:
        lo, h = s["loo"][m], s["heldout"][m]
        ci = h["regime_accuracy_ci95"]
        be = h["boundary_error"]["decades"]
        lines.append(
            f"| {m} | {s['map_log_joint'][m]:.1f} | {lo['elpd_loo']:.1f} ({lo['se']:.1f}) "
            f"| {s['diagnostics'][m]['distinct_draws']} | {h['regime_accuracy']:.2f} "
            f"({ci[0]:.2f}–{ci[1]:.2f}) | {h['coverage50']['all']:.2f} / "
            f"{h['coverage90']['all']:.2f} | {h['crps']['all']:.3f} | "
            f"{h['log_score']['all']:.2f} | {'–' if be is None else f'{be:.2f}'} |"
        )
    for what, name, fmt in (("regime_accuracy", "Regime accuracy", ".2f"), ("crps", "CRPS", ".3f")):
        per = {m: s["heldout"][m]["by_staleness"][what] for m in MODELS}
        lines += ["", f"{name} by staleness row: " + "; ".join(
            f"{m} " + ", ".join(f"{k}: {v:{fmt}}" for k, v in sorted(
                per[m].items(), key=lambda kv: float(kv[0]))) for m in MODELS) + "."]  # fmt: skip
    diag = s["diagnostics"]
    lines += ["", "Sampler diagnostics: " + "; ".join(
        f"{m} " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in diag[m].items()) for m in MODELS) + "."]  # fmt: skip
    r = s["loo_ranking"]
    lines += [""] + [
        f"LOO: {r[0]['label']} ahead of {x['label']} by {x['d_elpd']:.1f} (se {x['dse']:.1f})."
        for x in r[1:]
    ]
    write_text(path, "\n".join(lines) + "\n")


def _figure(path: Path, held: list[dict], forecasts: list) -> None:
    import matplotlib.pyplot as plt

    from simulate.common import save_figure

    ks = sorted({r["setting"]["rl.staleness"] for r in held})
    fig, axes = plt.subplots(1, len(ks), figsize=(3.2 * len(ks), 3.0), sharey=True)
    axes = np.atleast_1d(axes)
    styles = {"ode": ("#4c72b0", 0.93), "map": ("#c8453b", 1.0), "map+links": ("#e8a33d", 1.07)}
    for ax, k in zip(axes, ks, strict=True):
        for m, f in zip(MODELS, forecasts, strict=True):
            col, dx = styles[m]
            j = f.agents.index("X")
            for r, x in zip(held, f.samples, strict=True):
                if r["setting"]["rl.staleness"] != k:
                    continue
                q = np.nanquantile(x[j], [0.05, 0.5, 0.95])
                err = [[q[1] - q[0]], [q[2] - q[1]]]
                ax.errorbar(r["setting"]["rl.lr"] * dx, q[1], yerr=err, fmt="o", color=col,
                            ms=3, label=m)  # fmt: skip
        for r in held:
            if r["setting"]["rl.staleness"] == k:
                ax.plot(r["setting"]["rl.lr"], r["final"]["X"], "kx", ms=5)
        ax.set_xscale("log")
        ax.set_title(f"staleness {k}")
        ax.set_xlabel("rl.lr")
    axes[0].set_ylabel("final X (90 % new-run interval)")
    handles, labels = axes[0].get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    axes[-1].legend(uniq.values(), uniq.keys(), loc="upper right", fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
