"""The relabel study's inputs and its reference rule (issue 31 §0).

* :func:`reference_collapse`: the rule stated in advance in
  ``paper/results/relabel/config.json``, written here apart from simulate's classifier and
  simpler than it (start only, no smoothing, no check of the last evaluation);
* :func:`committed_runs`: every committed real run with curves -- regime map, pool, hypotheses
  (read by ``_watch_data``) and the testbed's finished run folders (read by ``llm_runs``),
  each with the label it was committed with (``None`` where none was stored).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from paper._watch_data import hypotheses_runs, pool_runs, regime_map_runs

REFERENCE_FALL = 0.5
REFERENCE_FLOOR = 0.1
REFERENCE_Z = 3.0
REFERENCE_TAIL = 0.2
OLD_POOL_FRACTION = 0.5  # the pool study's committed rule: final e2e < half of step 0's


def reference_collapse(values: list[float] | np.ndarray, n_eval: float) -> bool:
    """The reference rule (config.json ``reference_rule``): with ``m = max(2, ceil(0.2 T))``
    tail evaluations of mean ``L`` and the first evaluation ``y0`` (binomial sd ``sd0`` at
    ``y0`` clipped to ``[1/n_eval, 1 - 1/n_eval]``), collapsed iff
    ``L < 0.5 max(y0, 0.1)`` and ``L < y0 - 3 sd0``."""
    y = [float(v) for v in values]
    m = max(2, math.ceil(REFERENCE_TAIL * len(y)))
    tail = sum(y[-m:]) / m
    p = min(max(y[0], 1.0 / n_eval), 1.0 - 1.0 / n_eval)
    sd0 = math.sqrt(p * (1.0 - p) / n_eval)
    return tail < REFERENCE_FALL * max(y[0], REFERENCE_FLOOR) and tail < y[0] - REFERENCE_Z * sd0


def _old_labels(root: Path) -> dict[str, dict[str, Any]]:
    """Per ``experiment:run``: the committed label and, for pool runs, the committed
    collapse rule's verdict."""
    out: dict[str, dict[str, Any]] = {}
    obs = json.loads((root / "regime_map" / "observed.json").read_text())
    for name, r in obs.items():
        out[f"regime_map:{name}"] = {"label": r["regime"], "nodes": r["node_regimes"]}
    for exp, folder in (("pool", "pool_old_testbed"), ("hypotheses", "hypotheses_old_testbed")):
        rows = json.loads((root / folder / "runs.json").read_text())
        for group, runs in rows.items():
            for r in runs:
                entry: dict[str, Any] = {"label": r.get("regime"), "group": group}
                if exp == "pool":
                    e2e = r["e2e"]
                    entry["old_rule_collapsed"] = r.get("status") == "diverged" or bool(
                        e2e[-1] < OLD_POOL_FRACTION * e2e[0]
                    )
                out[f"{exp}/{group}:{r['run']}"] = entry
    return out


def testbed_runs(root: Path) -> list[dict[str, Any]]:
    """The testbed's run folders whose status is finished or diverged (read-only)."""
    from llm_runs import RunLogError, read_run
    from llm_runs.runlog import is_terminal

    out = []
    folder = root / "testbed" / "runs"
    for path in sorted(folder.glob("*/manifest.json")) if folder.is_dir() else []:
        try:
            log = read_run(path.parent)
        except RunLogError:
            continue
        if not is_terminal(log.status):
            continue
        wide = log.competence()
        agents = [a for a in log.manifest["agents"] if a in wide.columns]
        n_eval = log.frame("agent").groupby("agent")["n_eval"].median()
        out.append({
            "run": path.parent.name,
            "experiment": "testbed",
            "steps": [int(s) for s in wide.index],
            "curves": {a: [float(v) for v in wide[a]] for a in agents},
            "diverged": log.status == "diverged",
            "n_eval": int(min(n_eval[a] for a in agents)),
            "setting": {k: log.manifest["config"]["rl"][k.split(".")[1]]
                        for k in ("rl.lr", "rl.staleness")},
        })  # fmt: skip
    return out


def committed_runs(root: Path) -> list[dict[str, Any]]:
    """Every committed real run with curves, each with ``key`` (``experiment:run``), ``old``
    (its committed label, None when none was stored) and ``old_rule_collapsed`` (pool)."""
    runs = regime_map_runs(root) + pool_runs(root) + hypotheses_runs(root) + testbed_runs(root)
    old = _old_labels(root)
    shift = json.loads((root / "hypotheses_old_testbed" / "config.json").read_text())["shift_step"]
    for r in runs:
        exp = r["experiment"]
        if exp.startswith("hypotheses/shift/"):
            r["since"] = int(shift)  # the task shifts: judged after it, as the run's manifest says
        r["key"] = f"{exp}:{r['run']}"
        o = old.get(r["key"], {})
        r["old"] = o.get("label")
        r["old_nodes"] = o.get("nodes")
        if "old_rule_collapsed" in o:
            r["old_rule_collapsed"] = o["old_rule_collapsed"]
    return runs
