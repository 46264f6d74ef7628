"""When Y starts to learn in the testbed's wiring runs, against X's competence then
(issue 29 §4: does Y wait for X in every wiring?)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: Y has started once its probe competence is this far above its step-0 value.
RISE = 0.05
#: X counts as competent from this probe competence on.
X_READY = 0.9


def onset(c: dict[str, Any]) -> dict[str, Any]:
    """One run's Y onset (first step with A_Y >= A_Y(0) + :data:`RISE`; None if never), X's
    competence at the evaluation before it, and the first step with A_X >= :data:`X_READY`.

    Args:
        c: A run's curves (``paper/_study_runs.run_curves``: ``steps`` (T,), ``comp``
            (T, roles), ``roles``).
    """
    steps, comp = np.asarray(c["steps"]), np.asarray(c["comp"], dtype=float)
    x, y = comp[:, c["roles"].index("X")], comp[:, c["roles"].index("Y")]
    up = np.flatnonzero(y >= y[0] + RISE)
    ready = np.flatnonzero(x >= X_READY)
    first = int(up[0]) if up.size else None
    return {
        "y_onset_step": None if first is None else int(steps[first]),
        "x_before_onset": None if not first else float(x[first - 1]),
        "x_ready_step": int(steps[ready[0]]) if ready.size else None,
    }


def y_onsets(curves: dict[tuple, dict[str, Any]]) -> dict[str, Any]:
    """:func:`onset` of every wiring run (keyed by run folder name), and per motif the range
    of X's competence before Y's onset and of the onset's delay after X became ready."""
    runs = {Path(c["path"]).name: {"motif": job[1], **onset(c)} for job, c in curves.items()}
    by_motif: dict[str, Any] = {}
    for motif in sorted({r["motif"] for r in runs.values()}):
        rs = [r for r in runs.values() if r["motif"] == motif]
        rose = [r for r in rs if r["y_onset_step"] is not None and r["x_ready_step"] is not None]
        xs = [r["x_before_onset"] for r in rose if r["x_before_onset"] is not None]
        delays = [r["y_onset_step"] - r["x_ready_step"] for r in rose]
        by_motif[motif] = {
            "runs": len(rs), "y_rose": len(rose),
            "x_before_onset": [min(xs), max(xs)] if xs else None,
            "delay_after_x_ready": [min(delays), max(delays)] if delays else None,
        }  # fmt: skip
    return {"rise": RISE, "x_ready": X_READY, "by_motif": by_motif, "runs": runs}
