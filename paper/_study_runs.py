"""The runs of a study, shared by every study family of ``paper/``: the committed record of
finished runs (copied into ``<out>/runs`` and restored from there, so that a new checkout
trains only what is left) and one finished run's curves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from llm_runs.runlog import is_terminal

__all__ = ["ARCHIVED", "archive_runs", "restore_phase", "run_curves", "step_seconds"]

#: What the archive keeps of a finished run (its log; no checkpoints).
ARCHIVED = ("manifest.json", "competence.jsonl", "timing.json")


def archive_runs(runs: Path, out: Path) -> int:
    """Copy the logs of every finished or diverged run of ``runs`` into ``out/runs`` (the
    committed record, from which a later session restores them); returns how many."""
    n = 0
    for man in sorted(runs.glob("*/manifest.json")):
        if not is_terminal(json.loads(man.read_text()).get("status")):
            continue
        dst = out / "runs" / man.parent.name
        dst.mkdir(parents=True, exist_ok=True)
        for f in ARCHIVED:
            if (man.parent / f).is_file():
                shutil.copy2(man.parent / f, dst / f)
        n += 1
    return n


def restore_phase(cfg: Any, runs: Path, out: Path) -> None:
    """Copy archived finished runs (``out/runs``) into ``runs`` where a run is missing, so
    that a new checkout or session trains only what is left."""
    n = 0
    for src in sorted((out / "runs").glob("*/manifest.json")):
        dst = runs / src.parent.name
        if not (dst / "manifest.json").exists():
            dst.mkdir(parents=True, exist_ok=True)
            for f in ARCHIVED:
                if (src.parent / f).is_file():
                    shutil.copy2(src.parent / f, dst / f)
            n += 1
    print(f"  restored {n} finished runs from {out / 'runs'}")


def run_curves(path: Path) -> dict[str, Any] | None:
    """Per-run arrays: ``steps`` (T,), ``comp`` (T, roles), ``e2e`` (T,), status, seconds;
    None for a run still training."""
    from llm_runs import observed_regime
    from llm_runs.runlog import read_run

    log = read_run(path)
    if not is_terminal(log.status):
        return None
    roles = log.manifest["agents"]
    steps = sorted({r["step"] for r in log.e2e_rows})
    comp = np.array(
        [[next(r["competence"] for r in log.agent_rows if r["step"] == s and r["agent"] == a)
          for a in roles] for s in steps]
    )  # fmt: skip
    e2e = np.array([next(r["accuracy"] for r in log.e2e_rows if r["step"] == s) for s in steps])
    timing = path / "timing.json"
    label = observed_regime(log)["regime"]
    return {
        "path": str(path),
        "steps": np.array(steps),
        "comp": comp,
        "e2e": e2e,
        "roles": roles,
        "status": log.status,
        "collapsed": label == "collapse",
        "regime": label,
        "seconds": json.loads(timing.read_text())["seconds"] if timing.is_file() else None,
        "step_seconds": step_seconds(path, int(log.manifest["config"]["steps"])),
        "n_probe": log.manifest["config"]["task"]["n_probe"],
    }


def step_seconds(run: Path, steps: int) -> float | None:
    """Wall seconds per step of a finished run: its ``timing.json`` seconds over the steps
    its last process trained (a resumed run's timing covers only those); None without one."""
    path = Path(run) / "timing.json"
    if not path.is_file():
        return None
    t = json.loads(path.read_text())
    done = steps - int(t.get("start_step") or 0)
    return float(t["seconds"]) / done if done > 0 else None
