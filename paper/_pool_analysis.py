"""Analysis of the Pool-of-Agents study (driver: paper/pool_study.py): the simulator's
prediction, stored before the pool runs, and the summary of what the runs show.

Quantities (per setting and method, over seeds):
- variance across seeds (``ddof=1``) of each role's probe competence A_i(t) and of the
  end-to-end test accuracy at every evaluation step; ``variance_by_K`` reports the mean over
  roles and evaluation steps after step 0, with a 95 % chi-square interval (n - 1 df);
- final end-to-end accuracy; steps to the target accuracy (first evaluation at or above it);
- collapse: the run's label by ``llm_runs.observed_regime`` is ``collapse`` -- it diverged,
  or some role's competence fell to under half its start or smoothed peak and stayed there
  by more than 3 binomial sd (``simulate.COLLAPSE_RULE``, the one rule for real runs; the
  committed summary used an earlier rule of this study's own, final end-to-end accuracy
  below half of step 0's, and ``paper/results/relabel`` reports both);
- wall time per run (its ``timing.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from paper._recommend_summary import cluster_bootstrap
from paper._regime_report import wilson
from paper._study import fit_pilots, simulator_params, store_once
from paper._study_runs import run_curves
from simulate.common import write_json, write_text

Z95 = NormalDist().inv_cdf(0.975)

TARGET = 0.5  # end-to-end accuracy target of "steps to target" (all runs start near 0.36)


def group_runs(cfg: Any, runs: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """Every finished run of the design, by ``(setting, method, K)`` (seeds in order)."""
    from paper._pool_design import run_name as study_run_name

    run_name = getattr(cfg, "run_name", study_run_name)  # a design may name its own runs
    phases = cfg.training_phases() if hasattr(cfg, "training_phases") else ("single", "pool")
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for phase in phases:
        for setting, method, k, seed in cfg.jobs(phase):
            path = runs / run_name(setting, method, k, seed)
            if (path / "manifest.json").is_file():
                c = run_curves(path)
                if c is not None:
                    out.setdefault((setting, method, k), []).append(c)
    return out


def _stack(group: list[dict[str, Any]], key: str) -> np.ndarray:
    """(seeds, T, ...) of ``key``, truncated to the shortest run (a diverged run ends early;
    its last value is carried forward, the state it stopped in)."""
    T = max(len(g["steps"]) for g in group)
    rows = []
    for g in group:
        v = g[key]
        pad = [v[-1]] * (T - len(v))
        rows.append(np.concatenate([v, np.array(pad).reshape(-1, *v.shape[1:])]) if pad else v)
    return np.stack(rows)


def variance_interval(v: float, n: int) -> list[float]:
    """95 % interval of a variance ``v`` estimated from ``n`` seeds: the normal-theory
    ``[(n-1) v / chi2_0.975, (n-1) v / chi2_0.025]`` with ``n - 1`` degrees of freedom
    (conservative for a mean over steps and roles, which has more)."""
    from scipy.stats import chi2

    df = n - 1
    return [float(df * v / chi2.ppf(0.975, df)), float(df * v / chi2.ppf(0.025, df))]


def seed_variance(group: list[dict[str, Any]]) -> dict[str, Any]:
    """Variance across seeds (``ddof=1``) of the role competences (mean over roles and
    evaluation steps after 0) and of the end-to-end accuracy, with 95 % intervals
    (:func:`variance_interval`); None with fewer than 2 seeds."""
    comp, e2e = _stack(group, "comp")[:, 1:], _stack(group, "e2e")[:, 1:]
    n = comp.shape[0]
    if n < 2:
        return {"competence": None, "competence_ci95": None, "e2e": None, "e2e_ci95": None,
                "per_step_competence": None, "per_step_e2e": None, "seeds": n}  # fmt: skip
    v_comp = float(comp.var(axis=0, ddof=1).mean())
    v_e2e = float(e2e.var(axis=0, ddof=1).mean())
    return {
        "competence": v_comp,
        "competence_ci95": variance_interval(v_comp, n),
        "e2e": v_e2e,
        "e2e_ci95": variance_interval(v_e2e, n),
        "per_step_competence": comp.var(axis=0, ddof=1).mean(axis=1).tolist(),
        "per_step_e2e": e2e.var(axis=0, ddof=1).tolist(),
        "seeds": n,
    }


def probe_floor(group: list[dict[str, Any]], k: int) -> float:
    """Binomial probe-noise variance A(1-A)/(n K) of a role's measured competence (K members
    each scored on the same n probes, taken as independent), mean over roles and steps."""
    comp = _stack(group, "comp")[:, 1:]
    return float((comp * (1 - comp)).mean() / (group[0]["n_probe"] * k))


# -- the prediction (stored before the pool runs) ----------------------------------------
def make_predictions(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """Calibrate the simulator's pool model on the K = 1 GRPO runs of each setting and
    predict the across-seed competence variance for every grad pool size; written once."""
    return store_once(out / "predictions.json", lambda: _predict_pools(cfg, runs, out))


def _predict_pools(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    import jax

    jax.config.update("jax_enable_x64", True)
    import calibrate
    import simulate
    from simulate import fit_pool_sigma, pool_variance

    groups = group_runs(cfg, runs)
    doc: dict[str, Any] = {"settings": {}}
    for setting in cfg.settings:
        single = groups.get((setting, "grad", 1), [])
        if len(single) < 2:
            raise RuntimeError(f"{setting}: K = 1 runs missing; run --phase single first")
        fit_dir = out / f"fit_{setting}"
        fit_pilots([g["path"] for g in single], fit_dir, what=f"the {setting} K = 1 runs")
        post = calibrate.load_fit(fit_dir)
        known = {k: float(np.median(v)) for k, v in simulator_params(post.params()).items()}
        model = simulate.make_model("C1", "competence", known)
        floor1 = probe_floor(single, 1)
        # sigma absorbs every source of seed-to-seed spread, probe noise included (the
        # probe set is fixed, so its binomial floor A(1-A)/n is only reported, not removed)
        measured = seed_variance(single)["competence"]
        window = (float(cfg.eval_every), float(cfg.steps))
        common = {"t1": float(cfg.steps), "dt": 0.5, "n_seeds": 512, "split": True,
                  "n_points": int(cfg.steps // cfg.eval_every) + 1}  # fmt: skip
        key = jax.random.key(0)
        try:
            sigma = fit_pool_sigma(
                model, measured, window=window, key=key, bounds=(1e-4, 3.0), **common
            )
        except simulate.SpecError as err:  # e.g. no seed-to-seed spread to calibrate on
            print(f"  {setting}: no prediction ({err})")
            doc["settings"][setting] = {
                "fit": str(fit_dir), "sigma": None, "error": str(err),
                "measured_K1_variance": measured, "predicted": {},
            }  # fmt: skip
            continue
        by_k = {}
        for k in cfg.grad_K:
            st = pool_variance(model, k, sigma=sigma, key=key, **common)
            t = np.asarray(st.t)
            sel = (t >= window[0]) & (t <= window[1])
            by_k[str(k)] = {
                "competence_variance": float(np.asarray(st.role_var)[sel].mean()),
                "e2e_proxy_variance": float(np.asarray(st.e2e_var)[sel].mean()),
                "collapse_fraction": float(np.max(np.asarray(st.collapsed))),
            }
        pbt = {}
        for k in cfg.pool_K if getattr(cfg, "exploit_every", 0) else []:  # PBT-style pools
            st = pool_variance(model, k, sigma=sigma, key=key, exploit_every=float(
                cfg.exploit_every), exploit_frac=cfg.exploit_frac, **common)  # fmt: skip
            sel = (np.asarray(st.t) >= window[0]) & (np.asarray(st.t) <= window[1])
            pbt[str(k)] = {
                "competence_variance": float(np.asarray(st.role_var)[sel].mean()),
                "collapse_fraction": float(np.max(np.asarray(st.collapsed))),
            }
        doc["settings"][setting] = {
            "fit": str(fit_dir),
            "params": known,
            **({"predicted_pbt": pbt} if pbt else {}),
            "sigma": sigma,
            "measured_K1_variance": measured,
            "K1_probe_noise_floor": floor1,
            "predicted": by_k,
        }
        print(
            f"  {setting}: sigma {sigma:.4g}; predicted variance by K "
            + ", ".join(f"{k}: {v['competence_variance']:.4g}" for k, v in by_k.items())
        )
    return doc


# -- the summary -------------------------------------------------------------------------
def method_label(method: str, k: int, single: str = "GRPO (single)") -> str:
    """A cell's name in the summary; ``single`` names the single agent (K = 1 grad)."""
    if method == "pbt":
        return f"pbt K={k}"
    return {"grad": f"grad K={k}" if k > 1 else single, "ppo": "PPO (single)"}.get(
        method, f"es K={k}"
    )


def summarise(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """Write ``summary.json``, ``runs.json`` (every run's curves), ``table.md`` and
    ``pool.png`` from the finished runs."""
    groups = group_runs(cfg, runs)
    pred_path = out / "predictions.json"
    pred = json.loads(pred_path.read_text()) if pred_path.is_file() else None
    methods: dict[str, Any] = {}
    variance_by_K: dict[str, Any] = {}
    predicted: dict[str, Any] = {}
    predicted_pbt: dict[str, Any] = {}
    collapse: dict[str, Any] = {}

    def order(item: Any) -> tuple[str, int, int]:
        (setting, method, k), _ = item
        rank = 0 if (method, k) == ("grad", 1) else {"ppo": 1, "grad": 2, "pbt": 3, "es": 4}[method]
        return setting, rank, k

    for (setting, method, k), group in sorted(groups.items(), key=order):
        var = seed_variance(group)
        finals = np.array([g["e2e"][-1] for g in group])
        hit = [next((int(s) for s, a in zip(g["steps"], g["e2e"], strict=True) if a >= TARGET),
                    None) for g in group]  # fmt: skip
        n_col = sum(g["collapsed"] for g in group)
        secs = [g["seconds"] for g in group if g["seconds"] is not None]
        name = method_label(method, k, getattr(cfg, "single_label", "GRPO (single)"))
        methods.setdefault(setting, {})[name] = {
            "method": method, "K": k, "seeds": len(group), "variance": var,
            "final_e2e": float(finals.mean()),
            "final_e2e_ci95": list(cluster_bootstrap(dict(enumerate(finals[:, None])))),
            "steps_to_target": hit, "reached_target": sum(h is not None for h in hit),
            "collapsed": n_col, "collapse_rate_ci95": wilson(n_col, len(group), z=Z95),
            "regimes": [g["regime"] for g in group],
            "wall_s_mean": float(np.mean(secs)) if secs else None,
            "s_per_step_mean": _mean_or_none([g["step_seconds"] for g in group]),
            "e2e_mean_curve": _stack(group, "e2e").mean(0).tolist(),
            "e2e_sd_curve": _stack(group, "e2e").std(0, ddof=1).tolist(),
            "steps": group[0]["steps"].tolist(),
        }  # fmt: skip
        collapse.setdefault(setting, {})[name] = n_col / len(group)
        if method in ("grad", "es", "pbt"):
            variance_by_K.setdefault(setting, {}).setdefault(method, {})[str(k)] = {
                "competence": var["competence"], "competence_ci95": var["competence_ci95"],
                "e2e": var["e2e"], "e2e_ci95": var["e2e_ci95"],
            }  # fmt: skip
    if pred is not None:
        for setting, s in pred["settings"].items():
            predicted[setting] = {k: v["competence_variance"] for k, v in s["predicted"].items()}
            if s.get("predicted_pbt"):
                predicted_pbt[setting] = {
                    k: v["competence_variance"] for k, v in s["predicted_pbt"].items()
                }
    summary = {
        "target_e2e": TARGET,
        "variance_by_K": variance_by_K,
        "predicted_variance_by_K": predicted,
        **({"predicted_pbt_variance_by_K": predicted_pbt} if predicted_pbt else {}),
        "collapse_rate_by_method": collapse,
        "methods": methods,
        "predictions_created": None if pred is None else pred["created"],
        "command": getattr(cfg, "command", "python -m paper.pool_study"),
    }
    write_json(out / "summary.json", summary)
    write_json(out / "runs.json", {
        f"{setting}/{method}/K{k}": [
            {"run": Path(g["path"]).name, "steps": g["steps"].tolist(), "e2e": g["e2e"].tolist(),
             "competence": g["comp"].tolist(), "roles": g["roles"], "status": g["status"],
             "regime": g["regime"], "seconds": g["seconds"]}
            for g in group
        ]
        for (setting, method, k), group in groups.items()
    })  # fmt: skip
    write_text(out / "table.md", _table(summary))
    from paper._pool_figure import pool_figure

    pool_figure(summary, out / "pool.png")
    return summary


def _mean_or_none(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return float(np.mean(got)) if got else None


def _fmt(x: float | None, d: int = 3) -> str:
    return "–" if x is None else f"{x:.{d}f}"


def _table(s: dict[str, Any]) -> str:
    lines = ["| setting | method | seeds | var A (×1e3) [95 % CI] | predicted var A (×1e3) | "
             "var e2e (×1e3) | final e2e [95 % CI] | reached 0.5 | collapsed | wall s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for setting, ms in s["methods"].items():
        pred = s["predicted_variance_by_K"].get(setting, {})
        for name, m in ms.items():
            v = m["variance"]
            p = pred.get(str(m["K"])) if m["method"] == "grad" else None
            ci = v["competence_ci95"]
            fc = m["final_e2e_ci95"]
            var_a = (
                "–"
                if ci is None
                else (f"{1e3 * v['competence']:.2f} [{1e3 * ci[0]:.2f}, {1e3 * ci[1]:.2f}]")
            )
            var_e = "–" if v["e2e"] is None else f"{1e3 * v['e2e']:.2f}"
            lines.append(
                f"| {setting} | {name} | {m['seeds']} | {var_a} | "
                f"{'–' if p is None else f'{1e3 * p:.2f}'} | {var_e} | "
                f"{m['final_e2e']:.3f} [{fc[0]:.3f}, {fc[1]:.3f}] | "
                f"{m['reached_target']}/{m['seeds']} | {m['collapsed']}/{m['seeds']} | "
                f"{_fmt(m['wall_s_mean'], 0)} |"
            )
    return "\n".join(lines) + "\n"
