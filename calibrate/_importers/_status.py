"""What happened to an imported run, read from its log: diverged, collapsed, truncated or
finished (issue 70 §4), and its training signals as llm_runs names them.

A run's status is data, as llm_runs' manifest ``status`` is: a non-finite training metric
(NaN, an infinity, or a ``null`` that verl writes for one) makes it ``diverged`` at the first
step with one; a competence that ends constant for its last :data:`COLLAPSE_TAIL` or more
values after it had moved makes it ``collapsed`` from the first step of that tail; a log
that ends before the configured number of steps makes it ``truncated``; else ``finished``.
Every message names steps, never rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COLLAPSE_TAIL",
    "SIGNAL_KEYS",
    "RunStatus",
    "observed_regimes",
    "run_status",
    "signal_table",
    "status_counts",
]

#: Fewest equal values at the end of a curve that mark a collapse to a constant.
COLLAPSE_TAIL = 3
#: Share of a curve's values that the constant tail must hold as well.
_COLLAPSE_SHARE = 0.2

#: A framework's key -> the training signal (``llm_runs.runlog.SIGNALS``) it is, and a
#: function of the logged value (``reward_std`` is a standard deviation, the signal a
#: variance).
SIGNAL_KEYS: Mapping[str, tuple[str, str]] = {
    # TRL (GRPOTrainer's log_history)
    "grad_norm": ("grad_norm", "value"),
    "kl": ("kl", "value"),
    "entropy": ("entropy", "value"),
    "completions/mean_length": ("response_length", "value"),
    "completion_length": ("response_length", "value"),
    "reward": ("reward_mean", "value"),
    "reward_std": ("reward_var", "square"),
    "frac_reward_zero_std": ("frac_reward_zero_std", "value"),
    # verl (file logger)
    "actor/grad_norm": ("grad_norm", "value"),
    "actor/ppo_kl": ("policy_kl", "value"),
    "actor/entropy": ("entropy", "value"),
    "response_length/mean": ("response_length", "value"),
    "critic/rewards/mean": ("reward_mean", "value"),
}


@dataclasses.dataclass(frozen=True)
class RunStatus:
    """How an imported run ended, as its log shows it.

    Attributes:
        status: ``"finished"``, ``"truncated"``, ``"collapsed"`` or ``"diverged"``.
        step: The step it happened at (the last logged step for ``truncated``), or None.
        reason: What happened, in words (naming keys, agents and steps).
    """

    status: str
    step: int | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return dataclasses.asdict(self)


def _collapse(steps: np.ndarray, values: np.ndarray) -> int | None:
    """The first step of a constant tail of a curve that moved before it, or None."""
    n = len(values)
    if n < 2 * COLLAPSE_TAIL:
        return None
    same = np.abs(values - values[-1]) <= 1e-12
    tail = int(np.argmin(same[::-1])) if not same.all() else n
    if tail == n or tail < max(COLLAPSE_TAIL, int(np.ceil(_COLLAPSE_SHARE * n))):
        return None
    return int(steps[n - tail])


def run_status(
    scalars: pd.DataFrame,
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    max_steps: int | None,
) -> RunStatus:
    """The status of one run.

    Args:
        scalars: The run's logged scalars ``step, key, value`` (NaN: a non-finite value).
        curves: Agent → (steps, competences) as read (finite values only).
        max_steps: The configured number of training steps (None: unknown).

    Returns:
        The first of diverged, collapsed, truncated that applies, else finished.
    """
    vals = scalars["value"].to_numpy(dtype=float)
    bad = ~np.isfinite(vals)
    if bad.any():
        sub = scalars.loc[bad]
        step = int(sub["step"].min())
        keys = sorted(sub.loc[sub["step"] == step, "key"].astype(str).unique())
        return RunStatus("diverged", step, f"non-finite {', '.join(keys[:3])} at step {step}")
    collapses = []
    for agent, (steps, comp) in sorted(curves.items()):
        at = _collapse(np.asarray(steps), np.asarray(comp, dtype=float))
        if at is not None:
            collapses.append((at, agent, float(comp[-1])))
    if collapses:
        at, agent, level = min(collapses)
        return RunStatus(
            "collapsed", at, f"agent {agent}'s competence is constant at {level:.4g} from step {at}"
        )
    last = int(scalars["step"].max()) if len(scalars) else 0
    if max_steps is not None and last < max_steps:
        return RunStatus("truncated", last, f"the log ends at step {last} of {max_steps}")
    return RunStatus("finished", last, "")


def status_counts(status: Mapping[str, RunStatus | Mapping[str, Any]]) -> dict[str, int]:
    """Runs per status (``{"finished": 3, "diverged": 1}``), sorted by name."""
    out: dict[str, int] = {}
    for s in status.values():
        name = s.status if isinstance(s, RunStatus) else str(s.get("status"))
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def signal_table(scalars: pd.DataFrame, run: str, agent: str) -> pd.DataFrame | None:
    """A run's training signals, wide: columns ``run, step, agent`` and one per signal
    present (names of ``llm_runs.runlog.SIGNALS``; the format llm_runs' ``signals.jsonl``
    rows fill, one row per step and agent). ``agent`` is the mapped agent of a one-agent
    log, ``"*"`` (the whole policy) otherwise. None when the log has no such key."""
    rows = scalars.loc[scalars["key"].isin(list(SIGNAL_KEYS))]
    if rows.empty:
        return None
    parts = []
    for key, grp in rows.groupby("key", sort=True):
        name, how = SIGNAL_KEYS[str(key)]
        v = grp["value"].to_numpy(dtype=float)
        parts.append(
            pd.DataFrame(
                {
                    "step": grp["step"].to_numpy(),
                    "name": name,
                    "value": v * v if how == "square" else v,
                }
            )
        )
    long = pd.concat(parts, ignore_index=True).drop_duplicates(["step", "name"], keep="first")
    wide = long.pivot(index="step", columns="name", values="value").sort_index()
    wide.columns.name = None
    wide = wide.reset_index()
    wide.insert(0, "run", run)
    wide.insert(2, "agent", agent)
    return wide


#: Regime severity, the run's regime being its most severe agent's.
_SEVERITY = ("failed", "converged", "unsettled", "overshoot/pulse", "damped oscillation",
             "sustained oscillation", "collapse")  # fmt: skip


def observed_regimes(table: pd.DataFrame, status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each run's regime label by the one rule for real runs
    (:func:`simulate.classify_observed`, per agent), its run status counted: a ``diverged``
    or ``collapsed`` run is a collapse whatever its last evaluations show.

    Args:
        table: Long competence table (``run, step, agent, competence, n_eval``).
        status: Per run, its status record (:attr:`calibrate.CurveData.status`).

    Returns:
        Per run ``{"regime", "group", "status"}``; ``regime`` None for a run with fewer
        than 4 evaluations of every agent and no collapse status.
    """
    from simulate import classify_observed
    from simulate.common import regime_group

    out = {}
    for run, grp in table.groupby("run", sort=True):
        rec = status.get(str(run), {})
        st = rec.status if isinstance(rec, RunStatus) else rec.get("status", "finished")
        worst = None
        for agent, g in grp.groupby("agent", sort=True):
            if len(g) < 4:
                continue
            lab = classify_observed(
                g["step"].to_numpy(float), g["competence"].to_numpy(float),
                g["n_eval"].to_numpy(float).mean(), names=(str(agent),),
            )["regime"]  # fmt: skip
            if worst is None or _SEVERITY.index(lab) > _SEVERITY.index(worst):
                worst = lab
        if st in ("diverged", "collapsed"):
            worst = "collapse"
        out[str(run)] = {
            "regime": worst,
            "group": None if worst is None else regime_group(worst),
            "status": st,
        }
    return out
