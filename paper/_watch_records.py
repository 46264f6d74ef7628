"""Records of committed run folders for the held-out watch replays (paper/watch_testbed.py,
paper/watch_round2.py): each run's curves, evaluations and setting, and its range split."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FORECAST = Path(__file__).resolve().parent / "results" / "forecast"
KNOBS = ("rl.lr", "rl.staleness", "rl.lr_scale.X")


def record(folder: Path, source: str) -> dict[str, Any]:
    """One run's record (the first replay's fields) from its committed log; its ``split`` is
    set by :func:`split_by_range`."""
    import numpy as np

    import llm_runs

    log = llm_runs.read_run(folder)
    f = log.frame()
    wide = log.competence()
    cfg = log.manifest["config"]
    rl = cfg["rl"]
    setting = {"rl.lr": float(rl["lr"]), "rl.staleness": float(rl.get("staleness") or 0),
               "rl.lr_scale.X": float((rl.get("lr_scale") or {}).get("X", 1.0))}  # fmt: skip
    return {
        "run": folder.name,
        "experiment": source,
        "split": "",
        "steps": [int(s) for s in wide.index],
        "curves": {a: [float(v) for v in wide[a]] for a in wide.columns},
        "rows": f[["step", "agent", "competence", "n_eval"]].dropna().to_dict("records"),
        "setting": setting,
        "diverged": log.status == "diverged",
        "horizon": int(cfg["steps"]),
        "n_eval": int(np.median(f["n_eval"].dropna())),
        "task": cfg["task"]["name"],
        "shift_step": cfg["task"].get("shift", {}).get("step"),
    }


def split_by_range(runs: list[dict[str, Any]]) -> None:
    """Set each run's ``split``: ``inside`` when each knob lies in the forecast pilots' range,
    else ``outside``."""
    obs = json.loads((FORECAST / "observed.json").read_text())
    pil = [r["setting"] for r in obs.values() if r["split"] == "pilot"]
    rng = {k: (min(s[k] for s in pil), max(s[k] for s in pil)) for k in KNOBS}
    for r in runs:
        inside = all(lo <= r["setting"][k] <= hi for k, (lo, hi) in rng.items())
        r["split"] = "inside" if inside else "outside"


def fix_config(out: Path, cfg: dict[str, Any]) -> None:
    """Write config.json once; a later run must find the same design."""
    path = out / "config.json"
    if path.is_file():
        if json.loads(path.read_text()) != cfg:  # bad input: one error line, exit 2
            print(f"error: {path} holds another design; use a new --out", file=sys.stderr)
            raise SystemExit(2)
        return
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg, indent=2) + "\n")
