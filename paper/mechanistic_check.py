"""Link-only ODE against the mechanistic map on the old regime map's real runs (issue 31 §2).

The pilots of ``paper/results/regime_map`` (8 runs: lr 1e-3 and 1.5e-2 x staleness 0 and 8 x
2 seeds, C1-AND) are fitted twice by Laplace:

* ``ode`` — the stored regime-map fit's model: the competence ODE with log-linear links of
  rho and delta on ``rl.lr`` and ``rl.staleness`` (refitted here, same config);
* ``map`` — ``FitConfig(dynamics="map", lag="stale")``: finite learning steps with ``eta``
  linked to ``rl.lr`` and a stale-gradient policy lag linked to ``rl.staleness``, no other
  links (regimes from the dynamics alone);
* ``map+links`` — the map with both: the ODE's rate links and the mechanisms' links (does
  a mechanism add anything to the links?).

Both are compared by PSIS-LOO on the pilots' observations and on the 24 held-out runs:
regime accuracy (label = the forecast's most probable group; observed = the relabelled
group of ``paper/results/relabel``), 90 % coverage and CRPS of each agent's final logged
competence under one new run's forecast (``calibrate.predict``'s ``new_run`` band).

Usage: ``python paper/mechanistic_check.py [--out paper/results/mechanistic] [--draws 200]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _regime_report import GROUPS, SEVERITY, group_of, wilson

ROOT = Path(__file__).resolve().parents[1]
REGIME = ROOT / "paper" / "results" / "regime_map"
RELABEL = ROOT / "paper" / "results" / "relabel" / "summary.json"
COMMAND = "python paper/mechanistic_check.py"
MODELS = ("ode", "map", "map+links")


def _configs(draws: int) -> dict[str, Any]:
    import calibrate as cal

    ode = cal.FitConfig.load(REGIME / "fit" / "config.json")
    ode = dataclasses.replace(ode, samples=draws)
    mech = cal.FitConfig(
        method="laplace",
        samples=draws,
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
    return {"ode": ode, "map": mech, "map+links": both}


def _observed() -> dict[str, dict[str, Any]]:
    obs = json.loads((REGIME / "observed.json").read_text())
    new = json.loads(RELABEL.read_text())["labels"]
    for name, r in obs.items():
        label = new.get(f"regime_map:{name}", {}).get("new")
        r["group_relabelled"] = group_of(label) if label else r["group"]
    return obs


def _loo(post) -> Any:
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.loo(post.to_inference_data(), pointwise=True)


def _forecast(post, held: list[dict], steps: float, draws: int) -> dict[str, Any]:
    """Per held-out cell: the most probable group and, per agent, the new-run final draws."""
    import calibrate as cal

    settings = [{"rl.lr": c["lr"], "rl.staleness": c["staleness"]} for c in held]
    pred = cal.predict(post, settings, steps=steps, max_draws=draws, n_points=21)
    _, gn = pred.groups()
    out = []
    for s in range(len(settings)):
        probs = {g: float(gn[g][s]) for g in GROUPS}
        label = max(GROUPS, key=lambda g: (probs[g], -SEVERITY[g]))
        finals = pred.new_final if pred.new_final is not None else pred.final
        out.append({"label": label, "probs": probs,
                    "finals": {a: finals[s, :, j] for j, a in enumerate(pred.agents)}})  # fmt: skip
    return {"cells": out}


def _score(fc: dict, held: list[dict], obs: dict) -> dict[str, Any]:
    import calibrate as cal

    hits = n = cov = n_cov = 0
    crps, rows, row_crps = [], {}, {}
    for c, f in zip(held, fc["cells"], strict=True):
        for name in c["runs"]:
            r = obs[name]
            hit = r["group_relabelled"] == f["label"]
            hits += hit
            n += 1
            row = rows.setdefault(str(c["staleness"]), [0, 0])
            row[0] += hit
            row[1] += 1
            for a, v in r["final"].items():
                x = np.asarray(f["finals"][a], float)
                x = x[np.isfinite(x)]
                lo, hi = np.quantile(x, [0.05, 0.95])
                cov += bool(lo <= v <= hi)
                n_cov += 1
                crps.append(float(cal.crps_samples(x, v)))
                row_crps.setdefault(str(c["staleness"]), []).append(crps[-1])
    return {
        "regime_accuracy": hits / n,
        "regime_accuracy_ci95": wilson(hits, n),
        "coverage90": cov / n_cov,
        "coverage90_ci95": wilson(cov, n_cov),
        "crps": float(np.mean(crps)),
        "regime_accuracy_by_staleness": {k: h / m for k, (h, m) in rows.items()},
        "crps_by_staleness": {k: float(np.mean(v)) for k, v in row_crps.items()},
        "n_runs": n,
        "n_finals": n_cov,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--out", default=str(ROOT / "paper" / "results" / "mechanistic"))
    p.add_argument("--draws", type=int, default=200)
    a = p.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import pandas as pd

    import calibrate as cal
    import simulate
    from simulate.spec import NetworkSpec

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    design = json.loads((REGIME / "config.json").read_text())["design"]
    cfgs = _configs(a.draws)
    simulate.write_json(
        out / "config.json",
        {
            "pilots_fit": str((REGIME / "fit").relative_to(ROOT)),
            "design": design,
            "models": {k: v.to_dict() for k, v in cfgs.items()},
            "observed_labels": "paper/results/relabel (the collapse rule of real runs)",
            "command": COMMAND,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
    data = cal.CurveData.from_table(pd.read_parquet(REGIME / "fit" / "data.parquet"))
    spec = NetworkSpec.from_dict(json.loads((REGIME / "fit" / "network.json").read_text()))
    obs = _observed()
    pilots = {tuple(c) for c in design["pilots"]}
    held = []
    for i, lr in enumerate(design["lrs"]):
        for j, k in enumerate(design["staleness"]):
            if (i, j) in pilots:
                continue
            runs = [f"lr{lr:g}_k{k}_s{s}" for s in design["seeds"]]
            held.append({"cell": [i, j], "lr": lr, "staleness": k, "runs": runs})
    posts, loos, scores, times, fcs = {}, {}, {}, {}, {}
    for m in MODELS:
        t0 = time.perf_counter()
        posts[m] = cal.fit(data, spec, cfgs[m], key=jax.random.key(0), log=print)
        times[f"fit_{m}_s"] = time.perf_counter() - t0
        loos[m] = _loo(posts[m])
        t0 = time.perf_counter()
        fcs[m] = _forecast(posts[m], held, float(design["steps"]), a.draws)
        times[f"predict_{m}_s"] = time.perf_counter() - t0
        scores[m] = _score(fcs[m], held, obs)
        print(m, json.dumps(scores[m]), f"elpd_loo {float(loos[m].elpd_loo):.1f}", flush=True)
    from calibrate._compare import compare_pointwise

    ranking = compare_pointwise({m: np.asarray(loos[m].loo_i).ravel() for m in MODELS})
    summary = {
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
        "loo_ranking": ranking,
        "map_log_joint": {m: float(posts[m].map_log_joint) for m in MODELS},
        "laplace_pareto_k": {m: float(posts[m].stats.get("is_pareto_k", np.nan)) for m in MODELS},
        "distinct_draws": {
            m: int(
                np.unique(
                    posts[m].samples["z"].reshape(-1, posts[m].samples["z"].shape[-1]), axis=0
                ).shape[0]
            )
            for m in MODELS
        },
        "heldout": scores,
        "fitted": {
            m: {k: v for k, v in posts[m].summary().items() if k.startswith(("c[", "eta", "lag"))}
            for m in MODELS
        },
        "cells": {
            m: [
                {
                    "cell": c["cell"],
                    "label": f["label"],
                    "observed": [obs[r]["group_relabelled"] for r in c["runs"]],
                }
                for c, f in zip(held, fcs[m]["cells"], strict=True)
            ]
            for m in MODELS
        },
        "wall_s": {k: round(v, 1) for k, v in times.items()},
        "command": COMMAND,
    }
    simulate.write_json(out / "summary.json", summary)
    _table(out / "table.md", summary)
    _figure(out / "mechanistic.png", held, fcs, obs)
    print((out / "table.md").read_text())
    return 0


def _table(path: Path, s: dict) -> None:
    lines = [f"`{COMMAND}` — pilots of paper/results/regime_map (8 runs), 24 held-out runs", "",
             "| model | MAP log joint | elpd_loo (se) | distinct draws | regime accuracy (95 % CI) "
             "| 90 % coverage | CRPS |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for m in MODELS:
        lo, h = s["loo"][m], s["heldout"][m]
        ci = h["regime_accuracy_ci95"]
        lines.append(
            f"| {m} | {s['map_log_joint'][m]:.1f} | {lo['elpd_loo']:.1f} ({lo['se']:.1f}) "
            f"| {s['distinct_draws'][m]} | {h['regime_accuracy']:.2f} "
            f"({ci[0]:.2f}–{ci[1]:.2f}) | {h['coverage90']:.2f} | {h['crps']:.3f} |"
        )
    r = s["loo_ranking"]
    acc = {m: s["heldout"][m]["regime_accuracy_by_staleness"] for m in MODELS}
    lines += [
        "",
        "Regime accuracy by staleness row: "
        + "; ".join(f"{m} " + ", ".join(f"{k}: {v:.2f}" for k, v in acc[m].items()) for m in MODELS)
        + ".",
    ]
    crps = {m: s["heldout"][m]["crps_by_staleness"] for m in MODELS}
    lines += [
        "",
        "CRPS by staleness row: "
        + "; ".join(
            f"{m} " + ", ".join(f"{k}: {v:.3f}" for k, v in crps[m].items()) for m in MODELS
        )
        + ".",
    ]
    k = s["laplace_pareto_k"]
    lines += [
        "",
        "Laplace importance-resampling Pareto k: "
        + ", ".join(f"{m} {k[m]:.2f}" for m in MODELS)
        + " (above 0.7 the draws, and a PSIS-LOO from them, are unreliable).",
    ]
    lines += [""] + [
        f"LOO: {r[0]['label']} ahead of {x['label']} by {x['d_elpd']:.1f} (se {x['dse']:.1f})."
        for x in r[1:]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _figure(path: Path, held: list[dict], fcs: dict, obs: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted({c["staleness"] for c in held})
    fig, axes = plt.subplots(1, len(ks), figsize=(3.2 * len(ks), 3.0), sharey=True)
    for ax, k in zip(np.atleast_1d(axes), ks, strict=True):
        styles = (("ode", "#4c72b0", 0.93), ("map", "#c8453b", 1.0), ("map+links", "#e8a33d", 1.07))
        for m, col, dx in styles:
            for c, f in zip(held, fcs[m]["cells"], strict=True):
                if c["staleness"] != k:
                    continue
                x = np.asarray(f["finals"]["X"], float)
                q = np.nanquantile(x, [0.05, 0.5, 0.95])
                err = [[q[1] - q[0]], [q[2] - q[1]]]
                ax.errorbar(c["lr"] * dx, q[1], yerr=err, fmt="o", color=col, ms=3, label=m)
        for c in held:
            if c["staleness"] == k:
                for r in c["runs"]:
                    ax.plot(c["lr"], obs[r]["final"]["X"], "kx", ms=5)
        ax.set_xscale("log")
        ax.set_title(f"staleness {k}")
        ax.set_xlabel("rl.lr")
    np.atleast_1d(axes)[0].set_ylabel("final X (90 % new-run interval)")
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    np.atleast_1d(axes)[-1].legend(uniq.values(), uniq.keys(), loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
