"""The wiring read back from one set's ``calibrate fit --motif auto`` (its
``selection.json``), and the measures over sets that issue 29 §4 states: the true type's rank,
whether it is indistinguishable from the best, whether every identified sign is right, and
the share of sets with at least two signs identified. Shared by ``paper/testbed_study.py``
and ``paper/archive/wiring_weights.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def set_identification(selection: dict[str, Any], motif: str, gate: str = "AND") -> dict:
    """One set's read-back against its true type ``motif``-``gate``.

    Args:
        selection: The fit's ``selection.json`` (``ranking``, ``best``, ``indistinguishable``,
            ``identified``).
        motif: The runs' true FFL type ("C1", ...).
        gate: Their gate.
    """
    from simulate.spec import ffl_spec

    truth = {f"{e.source}->{e.target}": "+" if e.sign > 0 else "-"
             for e in ffl_spec(motif, gate).edges}  # fmt: skip
    label = f"{motif}-{gate}"
    labels = [r["label"] for r in selection["ranking"]]
    ident = {k: v for k, v in selection["identified"].items() if k in truth and v is not None}
    return {
        "true": label,
        "rank": labels.index(label) + 1,
        "best": selection["best"],
        "in_indistinguishable": label in selection["indistinguishable"],
        "identified": ident,
        "identified_correct": {k: v == truth[k] for k, v in ident.items()},
    }


def identification_summary(sets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The goal's measures over the sets read back so far (None each when there is none)."""
    vals = list(sets.values())
    if not vals:
        return {"sets": sets, "truth_first_or_indistinguishable": None, "no_wrong_sign": None,
                "share_two_signs": None}  # fmt: skip
    return {
        "sets": sets,
        "truth_first_or_indistinguishable": all(
            v["rank"] == 1 or v["in_indistinguishable"] for v in vals
        ),
        "no_wrong_sign": all(all(v["identified_correct"].values()) for v in vals),
        "share_two_signs": float(np.mean([len(v["identified"]) >= 2 for v in vals])),
    }


def readback_summary(
    cfg: Any,
    runs: Path,
    out: Path,
    quoted: dict[str, Path | None],
    extend: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A read-back's ``summary.json`` and ``table.md`` from the sets fitted so far (each
    ``out/wiring/<set>/selection.json``), its finished runs archived into ``out/runs``.

    Args:
        cfg: The design (its ``sets()``, ``goal``, ``command``).
        runs: The study's run folders.
        out: Its results folder.
        quoted: Earlier read-backs' measures to quote beside these (``earlier``), by name:
            the path of their ``summary.json`` (None or a missing file: quoted as None).
        extend: Keys to add to the summary, from the summary (None: none).
    """
    from paper._study_runs import archive_runs
    from simulate.common import write_json, write_text

    print(f"  archived {archive_runs(runs, out)} finished runs into {out / 'runs'}")
    sets = {}
    for name in cfg.sets():
        sel = out / "wiring" / name / "selection.json"
        if sel.is_file():
            sets[name] = set_identification(json.loads(sel.read_text()), name.split("_")[0])
    before: dict[str, Any] = {}
    for key, f in quoted.items():
        w = json.loads(f.read_text()).get("wiring_identification") if f and f.is_file() else None
        before[key] = None if w is None else {k: v for k, v in w.items() if k != "sets"}
    summary = {
        "wiring_identification": identification_summary(sets),
        "missing_sets": [n for n in cfg.sets() if n not in sets],
        "earlier": before,
        "goal": cfg.goal,
        "command": cfg.command,
    }
    if extend is not None:
        summary.update(extend(summary))
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", table(summary))
    return summary


def table(s: dict[str, Any]) -> str:
    """Markdown: one row per set, then the goal's three measures."""
    w = s["wiring_identification"]
    lines = ["| set | true | rank | indistinguishable | identified | all right |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, v in w["sets"].items():
        ident = ", ".join(f"{e} {sg}" for e, sg in v["identified"].items()) or "none"
        lines.append(f"| {name} | {v['true']} | {v['rank']} | {v['in_indistinguishable']} | "
                     f"{ident} | {all(v['identified_correct'].values())} |")  # fmt: skip
    lines += ["", f"truth first or indistinguishable in every set: "
              f"{w['truth_first_or_indistinguishable']}; no wrong sign: {w['no_wrong_sign']}; "
              f"share of sets with >= 2 signs: {w['share_two_signs']}"]  # fmt: skip
    if s["missing_sets"]:
        lines.append(f"not fitted yet: {', '.join(s['missing_sets'])}")
    return "\n".join(lines) + "\n"
