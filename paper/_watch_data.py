"""The committed real runs' curves the watch replay reads (``paper/results/*``), as one list.

Only curves are committed, not the run folders: ``regime_map/observed.json`` (32 runs,
C1-AND, math, 4 ``rl.lr`` x 4 ``rl.staleness`` x 2 seeds, 200 steps, evaluations every 10),
``pool/runs.json`` (80 runs, lr 1e-3 / 8e-3, single agents and pools, 60 steps, every 10)
and ``hypotheses_old_testbed/runs.json`` (170 runs, 8 FFL types, pulses / shift / lag, lr 2e-3, 48
steps, every 4). ``recommend/`` holds picks and final scores, no curves: not used.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

AGENTS = ("X", "Y", "Z")


def _n_eval(values: list[float], cap: int = 512) -> int:
    """The smallest evaluation size ``n`` making every value ``k / n`` (else ``cap``)."""
    n = 1
    for v in values:
        d = Fraction(v).limit_denominator(cap).denominator
        n = n * d // _gcd(n, d)
        if n > cap:
            return cap
    return n


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _run(
    name: str, experiment: str, steps, curves, setting, diverged, design, task="math", shift=None
) -> dict[str, Any]:
    """One run's record; ``task`` its task, ``shift_step`` the step of a scheduled change of
    its task's distribution (None: none)."""
    vals = [v for c in curves.values() for v in c]
    return {
        "run": name,
        "experiment": experiment,
        "steps": [int(s) for s in steps],
        "curves": {a: [float(v) for v in c] for a, c in curves.items()},
        "setting": setting,
        "diverged": bool(diverged),
        "horizon": int(design),
        "n_eval": _n_eval(vals),
        "task": task,
        "shift_step": None if shift is None else int(shift),
    }


def regime_map_runs(root: Path) -> list[dict[str, Any]]:
    """The regime map's 32 runs; ``pilot`` marks the 4 corner cells (8 runs)."""
    cfg = json.loads((root / "regime_map" / "config.json").read_text())["design"]
    obs = json.loads((root / "regime_map" / "observed.json").read_text())
    corners = {tuple(c) for c in cfg["pilots"]}
    out = []
    for name, r in obs.items():
        i, j = r["cell"]
        setting = {"rl.lr": float(cfg["lrs"][i]), "rl.staleness": float(cfg["staleness"][j])}
        run = _run(name, "regime_map", r["steps"], r["curves"], setting, r["diverged"],
                   cfg["steps"], cfg.get("task", "math"))  # fmt: skip
        run["pilot"] = (i, j) in corners
        out.append(run)
    return out


def _lists(name: str, rows, setting_of, horizon, task_of) -> list[dict[str, Any]]:
    """Runs of a study's ``runs.json``; ``task_of(group)`` gives (task, shift step)."""
    out = []
    for group, runs in rows.items():
        for r in runs:
            roles = r.get("roles") or list(AGENTS)
            comp = r["competence"]
            curves = {a: [c[k] for c in comp] for k, a in enumerate(roles)}
            diverged = r.get("status") == "diverged"
            run = _run(r["run"], f"{name}/{group}", r["steps"], curves, setting_of(group),
                       diverged, horizon, *task_of(group))  # fmt: skip
            run["pilot"] = False
            out.append(run)
    return out


def pool_runs(root: Path) -> list[dict[str, Any]]:
    """The pool study's 80 runs (staleness 0; ``rl.lr`` of the stable / unstable setting)."""
    cfg = json.loads((root / "pool_old_testbed" / "config.json").read_text())
    rows = json.loads((root / "pool_old_testbed" / "runs.json").read_text())

    def setting(group: str) -> dict[str, float]:
        return {"rl.lr": float(cfg["settings"][group.split("/")[0]]), "rl.staleness": 0.0}

    return _lists("pool", rows, setting, cfg["steps"], lambda g: ("math", None))  # pool_study


def hypotheses_runs(root: Path) -> list[dict[str, Any]]:
    """The hypotheses study's 170 runs (lr 2e-3; staleness 4 for the lag experiment)."""
    cfg = json.loads((root / "hypotheses_old_testbed" / "config.json").read_text())
    rows = json.loads((root / "hypotheses_old_testbed" / "runs.json").read_text())

    def setting(group: str) -> dict[str, float]:
        lag = float(cfg["lag_staleness"]) if group.startswith("lag/") else 0.0
        return {"rl.lr": float(cfg["lr"]), "rl.staleness": lag}

    def task(group: str) -> tuple[str, int | None]:  # group: condition/task/motif
        cond, name = group.split("/")[:2]
        return name, (int(cfg["shift_step"]) if cond in ("shift", "lag") else None)

    return _lists("hypotheses", rows, setting, cfg["steps"], task)


def all_runs(root: Path) -> list[dict[str, Any]]:
    """Every committed real run's curves."""
    return regime_map_runs(root) + pool_runs(root) + hypotheses_runs(root)


def pilots_table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long rows (run, step, agent, competence, n_eval, covariates) of the pilot runs."""
    rows = []
    for r in runs:
        if not r["pilot"]:
            continue
        for a, c in r["curves"].items():
            for s, v in zip(r["steps"], c, strict=True):
                rows.append({"run": r["run"], "step": s, "agent": a, "competence": v,
                             "n_eval": r["n_eval"], **r["setting"]})  # fmt: skip
    return rows
