"""The replay's pre-stated rules: when a real run collapsed, when ``watch`` alerted, lead times
and false alerts over thresholds (pure functions of curves and P(collapse) series)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import COLLAPSE_RULE, fall_collapse

RULE = (
    "a run collapsed iff the one collapse rule for real runs holds (simulate.common."
    "COLLAPSE_RULE: " + COLLAPSE_RULE + "); its collapse step is the earliest onset over its "
    "collapsed agents (the first evaluation after the reference's that is below half the "
    "reference and from which the mean of the rest of the curve stays below it). A run "
    "recorded as diverged counts as collapsed at its last recorded step unless the rule fires "
    "earlier. The alert step of a threshold is the first evaluation at which watch's "
    "P(collapse), from the evaluations up to and including that one, is >= the threshold; "
    "lead = collapse step - alert step (negative: the alert came after the collapse). A "
    "collapse is flagged when lead >= lead_goal; a run that did not collapse has a false "
    "alert when any alert fired."
)


def collapse_step(
    steps: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    *,
    n_eval: float,
    diverged: bool = False,
) -> float | None:
    """The collapse step of a run by :data:`RULE` (None: it did not collapse).

    Args:
        steps: Evaluation steps ``(T,)``.
        curves: Per agent, its competence at each step ``(T,)``.
        n_eval: Probes per evaluation.
        diverged: The run was recorded as diverged.
    """
    s = np.asarray(steps, float)
    onsets = []
    for c in curves.values():
        verdict = fall_collapse(np.asarray(c, float), n_eval)
        if verdict.onset is not None:
            onsets.append(float(s[verdict.onset]))
    if onsets:
        return min(onsets)
    return float(s[-1]) if diverged and s.size else None


def alert_step(steps: Sequence[float], p: Sequence[float], threshold: float) -> float | None:
    """First step whose P(collapse) is >= ``threshold`` (None: no alert)."""
    hit = np.flatnonzero(np.asarray(p, float) >= threshold)
    return float(np.asarray(steps, float)[hit[0]]) if hit.size else None


def score(
    runs: Sequence[Mapping[str, Any]], threshold: float, *, lead_goal: float = 20.0
) -> dict[str, Any]:
    """Lead times and false alerts of one threshold over replayed runs.

    Args:
        runs: Each with ``steps``, ``p_collapse`` (one per step) and ``collapse_step``
            (None when the run did not collapse).
        threshold: The alert threshold.
        lead_goal: Steps ahead a flagged collapse needs.

    Returns:
        ``n_collapsed``, ``n_other``, ``flagged_share`` (lead >= lead_goal among collapses),
        ``alerted_before_share`` (lead >= 0), ``lead_steps`` (per collapsed run, None when
        no alert fired), ``median_lead`` (over collapses with an alert), ``false_alerts``
        and ``false_alert_share``.
    """
    leads: list[float | None] = []
    false = 0
    for r in runs:
        a = alert_step(r["steps"], r["p_collapse"], threshold)
        if r["collapse_step"] is None:
            false += a is not None
        else:
            leads.append(None if a is None else float(r["collapse_step"]) - a)
    n_c = len(leads)
    n_o = len(runs) - n_c
    got = [x for x in leads if x is not None]
    return {
        "threshold": float(threshold),
        "n_collapsed": n_c,
        "n_other": n_o,
        "flagged_share": (sum(x >= lead_goal for x in got) / n_c) if n_c else None,
        "alerted_before_share": (sum(x >= 0 for x in got) / n_c) if n_c else None,
        "lead_steps": leads,
        "median_lead": float(np.median(got)) if got else None,
        "false_alerts": int(false),
        "false_alert_share": (false / n_o) if n_o else None,
    }


def curve(
    runs: Sequence[Mapping[str, Any]], thresholds: Sequence[float], *, lead_goal: float = 20.0
) -> list[dict[str, Any]]:
    """:func:`score` at every threshold (the lead-time / false-alert trade-off)."""
    return [score(runs, t, lead_goal=lead_goal) for t in thresholds]


def breakdown(
    runs: Sequence[Mapping[str, Any]], threshold: float, *, lead_goal: float, task: str
) -> dict[str, Any]:
    """Why collapses went unflagged at one threshold (a reading after the replay, not part of
    the frozen design): each collapsed run falls in the first of these classes that holds.

    - ``other_task``: the run's task is not the pilots' ``task`` (the fit knows nothing of it);
    - ``after_shift``: its collapse starts at or after a scheduled change of its task's
      distribution (``shift_step``), an event no forecast made before it can see;
    - ``too_early``: it collapses less than ``lead_goal`` steps after its first evaluation,
      so no alert can come ``lead_goal`` steps ahead;
    - ``forecastable``: the rest.

    Args:
        runs: Replayed runs, each with ``steps``, ``p_collapse``, ``collapse_step``,
            ``task`` and ``shift_step``.
        threshold: The alert threshold.
        lead_goal: Steps ahead a flagged collapse needs.
        task: The pilots' task.

    Returns:
        Per class: ``n`` collapses, ``flagged`` (lead >= lead_goal) and ``flagged_share``;
        and ``false_alerts_at_first`` (runs that did not collapse whose first alert came at
        their first evaluation, i.e. from the forecast before any evaluation moved it) and
        ``alerts_after_first`` (runs, collapsed or not, whose first alert came later: the
        alerts the run's evaluations raised).
    """
    classes = ("other_task", "after_shift", "too_early", "forecastable")
    out: dict[str, Any] = {c: {"n": 0, "flagged": 0} for c in classes}
    first_false = later = 0
    for r in runs:
        a = alert_step(r["steps"], r["p_collapse"], threshold)
        later += a is not None and a > float(r["steps"][0])
        c_step = r["collapse_step"]
        if c_step is None:
            first_false += a is not None and a == float(r["steps"][0])
            continue
        shift = r.get("shift_step")
        if r.get("task", task) != task:
            cls = "other_task"
        elif shift is not None and c_step >= shift:
            cls = "after_shift"
        elif c_step - float(r["steps"][0]) < lead_goal:
            cls = "too_early"
        else:
            cls = "forecastable"
        out[cls]["n"] += 1
        out[cls]["flagged"] += a is not None and c_step - a >= lead_goal
    for c in classes:
        n = out[c]["n"]
        out[c]["flagged_share"] = out[c]["flagged"] / n if n else None
    out["false_alerts_at_first"] = int(first_false)
    out["alerts_after_first"] = int(later)
    return out


THRESHOLDS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
