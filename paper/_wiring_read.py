"""The wiring read back from one set's ``calibrate fit --motif auto`` (its
``selection.json``), and the measures over sets that issue 29 §4 states: the true type's rank,
whether it is indistinguishable from the best, whether every identified sign is right, and
the share of sets with at least two signs identified. Shared by ``paper/testbed_study.py``
and ``paper/wiring_weights.py``."""

from __future__ import annotations

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
