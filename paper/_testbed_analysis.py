"""Measures, the power calculation, the wiring fits and the summary of the testbed study
(driver: paper/testbed_study.py; the design and every measure are stated there)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import fit_runs
from paper._study_runs import archive_runs, run_curves
from simulate.common import write_json, write_text

#: Per-agent series of the curve distance (types): A_Y, A_Z and end-to-end accuracy.
CURVE_ROLES = ("Y", "Z")


def t_interval(values: Any) -> list[float | None]:
    """95 % Student-t interval of the mean of ``values`` ([None, None] for fewer than 2)."""
    from scipy import stats

    v = np.asarray(values, float)
    if v.size < 2:
        return [None, None]
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return [float(v.mean() - half), float(v.mean() + half)]


def auc(steps: np.ndarray, y: np.ndarray) -> float:
    """Area under ``y(t)`` (trapezoid) divided by the run length: the mean competence."""
    return float(np.trapezoid(y, steps) / (steps[-1] - steps[0]))


def steps_to(steps: np.ndarray, y: np.ndarray, level: float) -> float:
    """First step with ``y >= level``; the last step when it never gets there (censored)."""
    hit = np.nonzero(y >= level)[0]
    return float(steps[hit[0]] if hit.size else steps[-1])


def rise(c: dict[str, Any], i: int) -> float:
    """Role ``i``'s rise: the mean of its last three evaluations minus its step-0 value."""
    return float(c["comp"][-3:, i].mean() - c["comp"][0, i])


def _curves(cfg: Any, runs: Path, phase: str) -> dict[tuple, dict[str, Any]]:
    """Finished runs of a phase by job (runs still training or missing are left out)."""
    from paper._testbed_design import run_name

    out = {}
    for job in cfg.jobs(phase):
        path = runs / run_name(*job)
        if (path / "manifest.json").is_file():
            c = run_curves(path)
            if c is not None:
                out[job] = c
    return out


def rise_summary(cfg: Any, runs: Path) -> dict[str, Any]:
    """Per task and role: the rise and the highest competence before ``early_step``."""
    curves = _curves(cfg, runs, "rise")
    out: dict[str, Any] = {}
    for task in cfg.tasks:
        cs = [c for j, c in curves.items() if j[0] == task]
        if not cs:
            continue
        roles = cs[0]["roles"]
        per: dict[str, Any] = {}
        for i, r in enumerate(roles):
            rises = [rise(c, i) for c in cs]
            early = [float(c["comp"][c["steps"] < cfg.early_step, i].max()) for c in cs]
            per[r] = {
                "start": float(np.mean([c["comp"][0, i] for c in cs])),
                "end": float(np.mean([c["comp"][-3:, i].mean() for c in cs])),
                "rise": float(np.mean(rises)),
                "rise_ci95": t_interval(rises),
                "rise_per_seed": rises,
                "early_max": float(max(early)),
                "meets_rise": bool(np.mean(rises) >= cfg.min_rise),
                "meets_early": bool(max(early) <= 1.0 - cfg.ceiling_gap),
            }
        out[task] = {"seeds": len(cs), "roles": per}
    return out


def power_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Write ``power.json``: the seed count from the rise runs' spread of each role's area
    under the curve on ``edge_task`` (the largest sd among roles); refused if it exists."""
    from scipy import stats

    path = out / "power.json"
    if path.is_file():
        print(f"  {path} exists: the seed count is fixed")
        return
    cs = [c for j, c in _curves(cfg, runs, "rise").items() if j[0] == cfg.edge_task]
    if len(cs) < 2:
        raise RuntimeError("the power calculation needs >= 2 finished rise runs")
    sds = {
        r: float(np.std([auc(c["steps"], c["comp"][:, i]) for c in cs], ddof=1))
        for i, r in enumerate(cs[0]["roles"])
    }
    sd = max(sds.values())
    z = stats.norm.ppf(0.975) + stats.norm.ppf(cfg.power)
    # a difference of two groups (or a paired difference of independent seeds): var 2 sd^2
    n_raw = 2 * (z * sd / cfg.effect) ** 2
    n = int(min(cfg.max_seeds, max(cfg.min_seeds, math.ceil(n_raw))))
    write_json(path, {"auc_sd": sds, "sd": sd, "effect": cfg.effect, "power": cfg.power,
                      "n_required": n_raw, "seeds": n, "from_runs": len(cs)})  # fmt: skip
    print(f"  auc sd {sd:.4f} -> {n_raw:.1f} seeds needed; using {n}")


def edge_effects(cfg: Any, runs: Path) -> dict[str, Any]:
    """Per edge and mechanism: act - rep, act - cut, rep - cut of the target's area and
    steps to ``level``, paired by seed."""
    from paper._testbed_design import canonical

    curves = _curves(cfg, runs, "edges")
    t, lr = cfg.edge_task, cfg.lr
    out: dict[str, Any] = {}
    for e in cfg.edges:
        tgt = e.split("->")[1]
        for m in cfg.mechanisms:
            per: dict[str, dict[int, tuple[float, float]]] = {"act": {}, "rep": {}, "cut": {}}
            for s in cfg.phase_seeds():
                for name, sign in (("act", 1), ("rep", -1), ("cut", 0)):
                    c = curves.get(canonical((t, "C1", e, sign, m if sign else "coupling", lr, s)))
                    if c is not None:
                        i = c["roles"].index(tgt)
                        y = c["comp"][:, i]
                        per[name][s] = (auc(c["steps"], y), steps_to(c["steps"], y, cfg.level))
            row: dict[str, Any] = {"target": tgt}
            for a, b in (("act", "rep"), ("act", "cut"), ("rep", "cut")):
                seeds = sorted(set(per[a]) & set(per[b]))
                for k, what in enumerate(("auc", "steps_to_level")):
                    d = [per[a][s][k] - per[b][s][k] for s in seeds]
                    row[f"{a}-{b}"] = row.get(f"{a}-{b}", {"seeds": len(seeds)})
                    row[f"{a}-{b}"][what] = float(np.mean(d)) if d else None
                    row[f"{a}-{b}"][f"{what}_ci95"] = t_interval(d)
            ci = row["act-rep"]["auc_ci95"]
            row["acts_with_sign"] = bool(ci[0] is not None and ci[0] > 0)
            out[f"{e}/{m}"] = row
    strongest = {}
    for e in cfg.edges:
        rows = {m: out[f"{e}/{m}"]["act-rep"]["auc"] for m in cfg.mechanisms}
        known = {m: v for m, v in rows.items() if v is not None}
        strongest[e] = max(known, key=lambda m: known[m]) if known else None
    return {"effects": out, "strongest": strongest,
            "every_edge_acts": all(any(out[f"{e}/{m}"]["acts_with_sign"]
                                       for m in cfg.mechanisms) for e in cfg.edges)}  # fmt: skip


def _curve_vector(c: dict[str, Any]) -> np.ndarray:
    cols = [c["comp"][:, c["roles"].index(r)] for r in CURVE_ROLES]
    return np.concatenate([*cols, c["e2e"]])


def omnibus_statistic(groups: list[np.ndarray]) -> float:
    """Sum over groups of n_g x the squared distance of the group's mean from the grand mean
    (the between-group sum of squares of the curve vectors)."""
    grand = np.concatenate(groups).mean(0)
    return float(sum(len(g) * np.sum((g.mean(0) - grand) ** 2) for g in groups))


def omnibus_test(groups: list[np.ndarray], permutations: int, rng: np.random.Generator) -> float:
    """Permutation p-value of :func:`omnibus_statistic` (labels permuted among all rows)."""
    both, sizes = np.concatenate(groups), [len(g) for g in groups]
    cuts = np.cumsum(sizes)[:-1]
    stat = omnibus_statistic(groups)
    null = [omnibus_statistic(np.split(both[rng.permutation(len(both))], cuts))
            for _ in range(permutations)]  # fmt: skip
    return float((1 + np.sum(np.array(null) >= stat - 1e-12)) / (1 + permutations))


def bh_adjust(p: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, at most 1)."""
    p_arr = np.asarray(p, dtype=float)
    order = np.argsort(p_arr)
    m = len(p_arr)
    adj = np.minimum.accumulate((p_arr[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out.tolist()


def motif_separation(cfg: Any, runs: Path) -> dict[str, Any]:
    """An omnibus permutation test over the types, pairwise permutation tests of the types'
    mean-curve distance (Benjamini-Hochberg over pairs; Holm also reported) and per type its
    final level, steps to ``level`` and largest transient of A_Z."""
    curves = _curves(cfg, runs, "types")
    by = {m: [_curve_vector(c) for j, c in curves.items() if j[1] == m] for m in cfg.motifs}
    by = {m: np.array(v) for m, v in by.items() if len(v) >= 2}
    rng = np.random.default_rng(0)
    pairs = []
    for a, b in itertools.combinations(sorted(by), 2):
        xa, xb = by[a], by[b]
        both = np.concatenate([xa, xb])
        stat = float(np.linalg.norm(xa.mean(0) - xb.mean(0)))
        null = []
        for _ in range(cfg.permutations):
            p = rng.permutation(len(both))
            null.append(np.linalg.norm(both[p[: len(xa)]].mean(0) - both[p[len(xa) :]].mean(0)))
        pval = (1 + np.sum(np.array(null) >= stat)) / (1 + cfg.permutations)
        pairs.append({"a": a, "b": b, "distance": stat, "p": float(pval)})
    order = sorted(range(len(pairs)), key=lambda k: pairs[k]["p"])
    running = 0.0
    for rank, k in enumerate(order):  # Holm's step-down adjustment
        running = max(running, min(1.0, (len(pairs) - rank) * pairs[k]["p"]))
        pairs[k]["p_holm"] = running
    for pair, q in zip(pairs, bh_adjust([p["p"] for p in pairs]), strict=True):
        pair["p_bh"] = q
        adjusted = q if cfg.type_test == "omnibus+BH" else pair["p_holm"]
        pair["distinguishable"] = adjusted < 0.05
    per_type = {}
    for m in sorted(by):
        cs = [c for j, c in curves.items() if j[1] == m]
        z = [c["comp"][:, c["roles"].index("Z")] for c in cs]
        per_type[m] = {
            "seeds": len(cs),
            "final_Z": float(np.mean([y[-3:].mean() for y in z])),
            "steps_to_level_Z": float(np.mean([steps_to(c["steps"], y, cfg.level)
                                               for c, y in zip(cs, z, strict=True)])),
            "transient_Z": float(np.mean([y.max() - y[-3:].mean() for y in z])),
            "final_e2e": float(np.mean([c["e2e"][-3:].mean() for c in cs])),
        }  # fmt: skip
    n_dist = sum(p["distinguishable"] for p in pairs)
    groups = [by[m] for m in sorted(by)]
    sizes = [len(g) for g in groups]
    smallest = 2 / math.comb(2 * min(sizes), min(sizes)) if sizes else None
    return {"pairs": pairs, "per_type": per_type, "distinguishable_pairs": n_dist,
            "tested_pairs": len(pairs),
            "omnibus_p": omnibus_test(groups, cfg.permutations, rng) if len(groups) > 1 else None,
            "correction": cfg.type_test,
            "smallest_pair_p": smallest}  # fmt: skip


def _wiring_sets(cfg: Any) -> dict[str, list[tuple]]:
    sets: dict[str, list[tuple]] = {}
    for job in cfg.jobs("wiring"):
        k = (job[6] - 1000) // 10
        sets.setdefault(f"{job[1]}_set{k}", []).append(job)
    return sets


def fit_wiring(
    cfg: Any, runs: Path, out: Path, *, extra: tuple[str, ...] = (), logs: Path | None = None
) -> None:
    """``calibrate fit --motif auto`` of every wiring set whose runs have all finished, into
    ``out/wiring/<set>`` (``extra``: more ``calibrate fit`` options, e.g. ``--pipeline``;
    ``logs``: the fits' log folder, default ``runs/logs``)."""
    from paper._testbed_design import run_name

    links = write_json(out / "wiring_links.json", {"links": [
        {"param": p, "covariate": "rl.lr"} for p in ("rho", "delta")]})  # fmt: skip
    for name, jobs in _wiring_sets(cfg).items():
        fit = out / "wiring" / name
        paths = [runs / run_name(*j) for j in jobs]
        if (fit / "selection.json").is_file():
            continue
        if not all(run_curves(p) is not None for p in paths if (p / "manifest.json").is_file()):
            print(f"  {name}: runs still training, skipped")
            continue
        if not all((p / "manifest.json").is_file() for p in paths):
            print(f"  {name}: runs missing, skipped")
            continue
        args = ["--motif", "auto", "--gate", "AND", "--hierarchy", str(links),
                "--method", "laplace", *extra]  # fmt: skip
        fit_runs(paths, fit, args=args, log=(logs or runs / "logs") / f"fit_{name}.log")
        print(f"  {name}: fitted")


def wiring_identification(cfg: Any, out: Path) -> dict[str, Any]:
    """Per wiring set: the true type's rank, whether it is indistinguishable from the best,
    the identified signs and whether each is correct (``_wiring_read``)."""
    from paper._wiring_read import identification_summary, set_identification

    sets = {}
    for name in _wiring_sets(cfg):
        sel = out / "wiring" / name / "selection.json"
        if sel.is_file():
            sets[name] = set_identification(json.loads(sel.read_text()), name.split("_")[0])
    return identification_summary(sets)


def missing_runs(cfg: Any, runs: Path) -> dict[str, int]:
    """Per training phase, how many of its runs have not finished."""
    out = {}
    for ph in ("rise", "edges", "types", "wiring"):
        try:
            jobs = cfg.jobs(ph)
        except RuntimeError:
            out[ph] = -1  # seeds not fixed yet (no power.json)
            continue
        out[ph] = len(jobs) - len(_curves(cfg, runs, ph))
    return out


def summarise(cfg: Any, runs: Path, out: Path) -> None:
    """Write ``summary.json``, ``table.md`` and ``testbed.png`` from the finished runs."""
    from paper._testbed_onset import y_onsets
    from paper._testbed_report import figure, table

    power = out / "power.json"
    summary: dict[str, Any] = {
        "role_rise": rise_summary(cfg, runs),
        "power": json.loads(power.read_text()) if power.is_file() else None,
        "edge_effects": edge_effects(cfg, runs) if power.is_file() else None,
        "motif_separation": motif_separation(cfg, runs) if power.is_file() else None,
        "wiring_identification": wiring_identification(cfg, out),
        "y_onset": y_onsets(_curves(cfg, runs, "wiring")),
        "missing_runs": missing_runs(cfg, runs),
        "command": "python -m paper.testbed_study",
    }
    summary["archived_runs"] = archive_runs(runs, out)
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", table(summary))
    figure(cfg, _curves(cfg, runs, "rise"), summary, out / "testbed.png")
    print(f"  wrote {out / 'summary.json'}, table.md, testbed.png")
