"""Phases of the hypotheses study on the testbed (driver: paper/hypotheses_testbed.py; the
design and every rule are stated there): the power calculation from the testbed's measured
spread, the lagged setting chosen from the model's forecast map, the predictions with the
statistics as they will be measured, and the summary."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from paper._hypotheses_metrics import dip, recovery
from paper._hypotheses_predict import DELAY_STAGES, OSCILLATING, _draws, predict_task
from paper._study import fit_pilots, store_once
from paper._study_runs import archive_runs, run_curves
from simulate.common import write_json

ROOT = Path(__file__).resolve().parents[1]

#: The simulator's rates per step (scaled with the learning rate in the forecast map).
RATES = ("rho[", "delta[")


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def null_measures(cfg: Any) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """The design's measures on the testbed's unperturbed runs: per (task, type), the
    ``(dip, recovery)`` of each seed's end-to-end curve at the design's pulse and shift
    steps (the wiring sets' runs, seeds >= 1000, are left out)."""
    pat = re.compile(rf"({'|'.join(cfg.tasks)})_([CI][1-4])_lr{cfg.lr:g}_s(\d+)")
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for path in sorted((ROOT / cfg.spread_runs).iterdir()):
        m = pat.fullmatch(path.name)
        if m is None or int(m.group(3)) >= 1000 or m.group(2) not in cfg.motifs:
            continue
        c = run_curves(path)
        if c is None:
            continue
        steps, e2e = c["steps"], c["e2e"]
        every = int(steps[1] - steps[0])
        d = dip(steps, e2e, cfg.pulse_starts, cfg.pulse_length, every)
        out.setdefault((m.group(1), m.group(2)), []).append(
            (d, recovery(steps, e2e, cfg.shift_step))
        )
    return out


def pooled_sd(groups: list[list[float]]) -> tuple[float, int]:
    """Pooled within-group sd and its degrees of freedom (groups of >= 2 values)."""
    ss = sum(float(np.sum((np.asarray(g) - np.mean(g)) ** 2)) for g in groups if len(g) > 1)
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    if df == 0:
        raise RuntimeError("no group with two seeds to measure the spread from")
    return math.sqrt(ss / df), df


def variance_factors(n_types: int, n_tasks: int) -> dict[str, float]:
    """``c`` of Var(statistic) = c * sd**2 / n for n seeds per group: H1 is the mean over
    tasks of (mean of the ``n_types - 1`` others' dips - C1's), H2 of (I1's recovery - C1's)."""
    return {"h1": (1.0 / (n_types - 1) + 1.0) / n_tasks, "h2": 2.0 / n_tasks}


def seeds_needed(sd: float, c: float, effect: float, alpha: float, power: float) -> float:
    """Seeds per group for a one-sided test at ``alpha`` to detect ``effect`` with ``power``
    when Var(statistic) = c sd^2 / n (normal approximation)."""
    return (_z(1 - alpha) + _z(power)) ** 2 * c * sd**2 / effect**2


def power_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """``power.json`` (once): the measured spread and the seeds per group."""

    def make() -> dict[str, Any]:
        groups = null_measures(cfg)
        sd_d, df = pooled_sd([[d for d, _ in g] for g in groups.values()])
        sd_r, _ = pooled_sd([[r for _, r in g] for g in groups.values()])
        c = variance_factors(len(cfg.motifs), len(cfg.tasks))
        need = {
            "h1": seeds_needed(sd_d, c["h1"], cfg.effect, cfg.alpha, cfg.power),
            "h2": seeds_needed(sd_r, c["h2"], cfg.effect, cfg.alpha, cfg.power),
        }
        seeds = int(min(cfg.max_seeds, max(cfg.min_seeds, math.ceil(max(need.values())))))
        print(f"  spread: dip sd {sd_d:.4f}, recovery sd {sd_r:.4f} ({df} df); seeds {seeds}")
        return {
            "sd": {"dip": sd_d, "recovery": sd_r},
            "df": df,
            "groups": {f"{t}/{m}": len(g) for (t, m), g in sorted(groups.items())},
            "variance_factor": c,
            "n_required": need,
            "seeds": seeds,
            "rule": "n = ceil((z_{1-alpha} + z_power)^2 c sd^2 / effect^2) within "
            "[min_seeds, max_seeds]",
        }

    return store_once(out / "power.json", make)


def _fit(cfg: Any, task: str, out: Path) -> Path:
    pilots = cfg.pilot_runs(task)
    missing = [str(p) for p in pilots if not (p / "manifest.json").is_file()]
    if missing:
        raise RuntimeError(f"pilot runs missing: {missing}")
    fit_dir = out / f"fit_{task}"
    fit_pilots([str(p) for p in pilots], fit_dir, what=f"the {task} pilots")
    return fit_dir


def oscillation_map(cfg: Any, draws: list[dict[str, float]]) -> list[dict[str, Any]]:
    """P(oscillating) of each lag motif at every candidate ``(rl.lr, rl.staleness)``."""
    import jax

    import simulate

    n_points = 4 * (cfg.steps // cfg.eval_every + 1)
    rows = []
    for lr in cfg.lag_lrs:
        scale = float(lr) / float(cfg.lr)
        scaled = [{k: v * scale if k.startswith(RATES) else v for k, v in d.items()} for d in draws]
        for lag in cfg.lag_staleness_choices:
            row: dict[str, Any] = {"rl.lr": float(lr), "rl.staleness": int(lag)}
            for motif in cfg.lag_motifs:
                models = [
                    simulate.make_model(motif, "competence", d, delay_stages=DELAY_STAGES,
                                        tau=float(lag))
                    for d in scaled
                ]  # fmt: skip
                sol = simulate.solve(simulate.stack_models(models), None, t1=float(cfg.steps),
                                     options=simulate.SolveOptions(n_points=n_points),
                                     batch="vmap")  # fmt: skip
                codes, _ = jax.vmap(simulate.classify)(sol)
                names = [simulate.REGIME_NAMES[simulate.Regime(int(c))] for c in np.asarray(codes)]
                row[motif] = float(np.mean([n in OSCILLATING for n in names]))
            rows.append(row)
    return rows


def choose_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """``choose.json`` (once): the forecast map and the lagged setting."""
    import jax

    jax.config.update("jax_enable_x64", True)

    def make() -> dict[str, Any]:
        rows = oscillation_map(cfg, _draws(_fit(cfg, cfg.lag_task, out)))
        a, b = cfg.lag_motifs[1], cfg.lag_motifs[0]  # I1, C1
        best = max(rows, key=lambda r: (r[a] - r[b], -r["rl.lr"], -r["rl.staleness"]))
        for r in rows:
            print(
                f"  lr {r['rl.lr']:g} lag {r['rl.staleness']}: P(osc) {b} {r[b]:.2f} {a} {r[a]:.2f}"
            )
        return {
            "map": rows,
            "chosen": {"rl.lr": best["rl.lr"], "rl.staleness": best["rl.staleness"]},
            "predicted_oscillation": {m: best[m] for m in cfg.lag_motifs},
            "model_predicts_difference": bool(best[a] > best[b]),
            "rule": f"max P({a} oscillates) - P({b} oscillates); ties: smaller lr, then lag",
        }

    return store_once(out / "choose.json", make)


def measured(stat: np.ndarray, sd: float, c: float, n: int, alpha: float, seed: int):
    """The statistic as the runs will measure it: the model's draws plus the measured noise
    of ``n`` seeds per group (sd ``sd * sqrt(c / n)``); and P(the test says it holds)."""
    se = sd * math.sqrt(c / n)
    x = np.asarray(stat) + np.random.default_rng(seed).normal(0.0, se, size=np.shape(stat))
    return {
        "mean": float(x.mean()),
        "ci90": np.percentile(x, [5, 95]).tolist(),
        "se": se,
        "p_holds": float(np.mean(x / se > _z(1 - alpha))),
    }


def predict_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """``predictions.json`` (once), after ``power.json`` and ``choose.json``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    pw = power_phase(cfg, runs, out)
    ch = choose_phase(cfg, runs, out)

    def make() -> dict[str, Any]:
        n = len(cfg.seeds)
        c = variance_factors(len(cfg.motifs), 1)  # per task
        doc: dict[str, Any] = {"tasks": {}, "seeds": n}
        for i, task in enumerate(cfg.tasks):
            draws = _draws(_fit(cfg, task, out))
            res = predict_task(cfg, draws, raw=True)
            h1 = np.asarray(res.pop("_h1"))
            h2 = np.asarray(res.pop("_h2"))
            res["h1_measured"] = measured(h1, pw["sd"]["dip"], c["h1"], n, cfg.alpha, 2 * i)
            res["h2_measured"] = measured(
                h2, pw["sd"]["recovery"], c["h2"], n, cfg.alpha, 2 * i + 1
            )
            if task == cfg.lag_task:  # the map's values at the chosen setting
                res["lag_oscillation_fraction"] = ch["predicted_oscillation"]
            res["fit"] = str(out / f"fit_{task}")
            doc["tasks"][task] = res
        tasks = doc["tasks"].values()
        osc = ch["predicted_oscillation"]
        doc["predicted"] = {
            "c1_filters_spurious": all(t["h1_prob_positive"] >= 0.95 for t in tasks),
            "i1_adapts_faster": all(t["h2_prob_positive"] >= 0.95 for t in tasks),
            "i1_oscillates_where_c1_does_not": bool(osc.get("I1", 0.0) > osc.get("C1", 0.0)),
        }
        return doc

    return store_once(out / "predictions.json", make)


def summary_phase(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """The old study's summary (``_hypotheses_analysis.summarise``) on these runs; the
    finished runs' logs archived into ``out/runs``."""
    from paper._hypotheses_analysis import summarise

    n = archive_runs(runs, out)
    print(f"  archived {n} finished runs into {out / 'runs'}")
    summary = summarise(cfg, runs, out)
    pred_path = out / "predictions.json"
    if pred_path.is_file():
        summary["predictions_checked"] = check_predictions(
            summary, json.loads(pred_path.read_text())
        )
    summary["post_hoc_by_xy_sign"] = by_edge_sign(summary["per_motif"])
    summary["command"] = "python -m paper.hypotheses_testbed"
    write_json(out / "summary.json", summary)
    return summary


def check_predictions(summary: dict[str, Any], pred: dict[str, Any]) -> dict[str, Any]:
    """Each stored new-run interval against what the runs measured: per hypothesis and task,
    the 90 % interval of the statistic as the runs would measure it, the measured effect,
    whether it fell inside, and the predicted P(holds) beside the test's verdict on that
    task (p < alpha with a positive effect)."""
    doc: dict[str, Any] = {}
    for key, tag in (("c1_filters_spurious", "h1"), ("i1_adapts_faster", "h2")):
        h = summary["hypotheses"][key]
        for task, t in h.get("per_task", {}).items():
            band = pred["tasks"][task][f"{tag}_measured"]
            lo, hi = band["ci90"]
            doc.setdefault(key, {})[task] = {
                "predicted_mean": band["mean"], "predicted_ci90": [lo, hi],
                "measured": t["effect"], "measured_ci95": t["ci95"],
                "inside_ci90": bool(lo <= t["effect"] <= hi),
                "predicted_p_holds": band["p_holds"],
                "holds_on_task": bool(t["effect"] > 0 and t["p"] < h["alpha"]),
            }  # fmt: skip
    osc = summary["hypotheses"]["i1_adapts_faster"].get("oscillation")
    if osc is not None:
        lag = pred["tasks"][osc["setting"]["task"]].get("lag_oscillation_fraction", {})
        doc["oscillation"] = {
            m: {"predicted_fraction": lag.get(m), "measured": f"{k}/{osc['runs']}",
                "inside_wilson95": bool(osc["ci95"][m][0] <= lag.get(m, -1) <= osc["ci95"][m][1])}
            for m, k in osc["oscillating"].items()
        }  # fmt: skip
    return doc


def by_edge_sign(per: dict[str, Any], edge: str = "X->Y") -> dict[str, Any]:
    """A reading after the tests, not part of the design: per condition's measure (dip at
    the pulses, recovery after the shift) and task, the mean over the types whose ``edge``
    activates and over those where it represses (each type's mean over seeds), and their
    difference."""
    import simulate

    motifs = {m for c in per.values() for t in c.values() for m in t}
    src, dst = edge.split("->")
    sign = {
        m: next(e.sign for e in simulate.ffl_spec(m).edges if (e.source, e.target) == (src, dst))
        for m in motifs
    }
    doc: dict[str, Any] = {"edge": edge, "post_hoc": True}
    for cond, measure in (("pulse", "dip"), ("shift", "recovery")):
        for task, by in per.get(cond, {}).items():
            means = {m: float(np.mean(r[measure]["values"])) for m, r in by.items()}
            act = [v for m, v in means.items() if sign[m] > 0]
            rep = [v for m, v in means.items() if sign[m] < 0]
            if not act or not rep:  # every type tested shares the sign: nothing to compare
                doc.setdefault(measure, {})[task] = None
                continue
            doc.setdefault(measure, {})[task] = {
                "activating": float(np.mean(act)), "repressing": float(np.mean(rep)),
                "difference": float(np.mean(act) - np.mean(rep)),
                "activating_range": [min(act), max(act)], "repressing_range": [min(rep), max(rep)],
            }  # fmt: skip
    return doc
