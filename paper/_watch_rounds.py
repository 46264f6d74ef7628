"""The later held-out watch replays' shared design and resumable replay (drivers:
``python -m paper.watch_round2`` and ``paper.watch_round3``, each stating its design):
the second round's frozen design, which the third extends, the replayed runs of committed
forecast tests and a replay that resumes after the last setting written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paper import _watch_testbed as wt
from paper._watch_records import record, split_by_range
from simulate import write_text

ROOT = Path(__file__).resolve().parent / "results"


SOURCES = ("forecast_round2", "forecast_round3")


BENT_SD = 0.75  # paper/results/forecast_round2/calibration.json, chosen before both tests ran


def round2_design(quick: bool) -> dict[str, Any]:
    """The frozen design (what config.json holds)."""
    base = wt.design(quick)
    m = base["methods"]
    methods = {
        "weights": m["weights"],
        "weights_bent": {**m["weights"], "update": "weights", "extrapolation_sd": BENT_SD},
        "laplace": m["laplace"],
    }
    return {
        "question": "on runs no replay has seen, mostly beyond the pilots' range: does watch "
        "flag collapses >= 20 steps ahead with <= 5 % false alerts, and do links that may "
        "bend beyond the pilots' range (extrapolation_sd 0.75) flag more than straight ones?",
        "expected": "bent links raise P(collapse) where the straight link's forecast lies "
        "near the collapse boundary beyond the range: more collapses flagged there, and more "
        "false alerts; inside the range the weights method is unchanged (bit-identical)",
        "fit": base["fit"] | {"note": "the held-out replay's fit (paper/watch_testbed.py)"},
        "runs": {
            "forecast_round2": "paper/results/forecast_round2/runs (48)",
            "forecast_round3": "paper/results/forecast_round3/runs (36)",
            "quick": "every 18th run (5)" if quick else None,
            "range": base["runs"]["range"],
            "seen_before": "these runs' final competences and regimes were read for the "
            "forecast's second and third tests; no watch forecast or P(collapse) of them "
            "had been computed, and every option below was fixed by earlier studies",
        },
        "methods": methods,
        "horizon": base["horizon"],
        "n_eval": base["n_eval"],
        "rule": base["rule"],
        "lead_goal": base["lead_goal"],
        "threshold": base["threshold"],
        "thresholds": base["thresholds"],
        "reported": base["reported"].replace("(forecast, recommend)", "(round 2, round 3)"),
        "development": "before this design was stored, the --quick form (4 of the options "
        "smaller: 40 draws, 2 replicates, a 200-sample fit; every 18th run: lr0.006_k12_x0.2_s2, "
        "lr0.016_k12_x0.45_s2, lr0.04_k1_x0.2_s2, lr0.008_k0_x0.1_s4, lr0.02_k2_x0.25_s4) ran "
        "once to check the code; no option above was changed after it",
        "quick": quick,
    }


def round_runs(quick: bool, sources: tuple[str, ...] = SOURCES) -> list[dict[str, Any]]:
    """The replayed runs' records (labels by the one rule, before any forecast)."""
    runs = []
    for src in sources:
        folders = sorted(p for p in (ROOT / src / "runs").iterdir() if p.is_dir())
        runs += [record(f, src) for f in (folders[::18] if quick else folders)]
    split_by_range(runs)
    for r in runs:
        r["collapse_step"] = wt.label(r)
    return runs


def resumable_replay(
    runs: list[dict[str, Any]], fit_dir: Path, cfg: dict[str, Any], partial: Path
) -> list[dict[str, Any]]:
    """:func:`_watch_testbed.replay`, one setting at a time, each setting's records appended to
    ``partial`` (a killed replay resumes after the last setting written)."""
    done: dict[str, dict[str, Any]] = {}
    if partial.is_file():
        for line in partial.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill: replayed again
                continue
            done[rec["run"]] = rec
        # only whole records stay, so that the next one starts on a line of its own
        write_text(partial, "".join(json.dumps(r, default=float) + "\n" for r in done.values()))
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(tuple(sorted(r["setting"].items())), []).append(r)
    for i, group in enumerate(groups.values()):
        todo = [r for r in group if r["run"] not in done]
        if not todo:
            continue
        with partial.open("a") as fh:
            for rec in wt.replay(todo, fit_dir, cfg):
                fh.write(json.dumps(rec, default=float) + "\n")
                done[rec["run"]] = rec
        print(f"setting {i + 1}/{len(groups)} replayed", flush=True)
    return [done[r["run"]] for r in runs]


def replay_resumably(
    runs: list[dict[str, Any]], fit_dir: Path, cfg: dict[str, Any], out: Path
) -> list[dict[str, Any]]:
    """:func:`resumable_replay` through ``out/replay.partial.jsonl`` (the driver removes it
    once ``replay.json`` is written)."""
    return resumable_replay(runs, fit_dir, cfg, out / wt.PARTIAL)
