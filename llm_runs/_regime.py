"""The regime of a real run, by the simulator's one classifier of real runs (torch-free).

A run's competence curves are measured on finite probe sets, so they carry sampling noise; they
are labelled with :func:`simulate.classify_observed`: :func:`simulate.classify`'s noise-aware
rule (the one it applies to gradient-noise SDE paths: an oscillation needs an autocorrelation
trough then peak, not band crossings, and a fluctuation variance above the known binomial noise
of each agent's ``n_eval`` probes; without that, pure binomial noise on a flat curve of 21
evaluations was labelled an oscillation in about 9 % of agents), and for collapse
:func:`simulate.fall_collapse`: a competence that fell to under half its start or smoothed peak
and stayed there, by more than 3 binomial sd (:data:`simulate.COLLAPSE_RULE`).
A run that diverged (``status: "diverged"`` in its manifest) is a collapse: its parameters or
metrics became non-finite, which no competence curve can recover from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .runlog import RunLog, RunLogError, read_run

__all__ = ["observed_regime"]


def observed_regime(run: str | Path | RunLog, *, strict: bool = False) -> dict[str, Any]:
    """Label a finished (or stopped) run's competence curves with simulate's classifier.

    Args:
        run: A run folder, or a :class:`~llm_runs.RunLog` already read.
        strict: Passed to :func:`~llm_runs.read_run` (a torn last line is an error).

    Returns:
        ``{"regime": str, "node_regimes": {agent: str}, "collapse": {agent: verdict},
        "steps": int, "diverged": bool}``, regime names from :data:`simulate.REGIME_NAMES`
        (``"collapse"`` for a diverged run, whose ``collapse`` verdicts are empty); each
        verdict is :meth:`simulate.Collapse.as_dict` (reference, tail mean, drop sd).

    Raises:
        RunLogError: The log is malformed or has fewer than 4 evaluation steps to judge.
    """
    import numpy as np

    import simulate

    log = run if isinstance(run, RunLog) else read_run(run, strict=strict)
    wide = log.competence()
    agents = [a for a in log.manifest["agents"] if a in wide.columns]
    collapse = simulate.REGIME_NAMES[simulate.Regime.COLLAPSE]
    if log.status == "diverged":
        return {
            "regime": collapse,
            "node_regimes": dict.fromkeys(agents, collapse),
            "collapse": {},
            "steps": int(log.diverged_step or wide.index.max()),
            "diverged": True,
        }
    if len(wide) < 4:
        raise RunLogError(
            f"{log.path}: {len(wide)} evaluation steps; a regime needs at least 4 (log more "
            "often with eval_every)"
        )
    t = np.asarray(wide.index, float)
    states = np.asarray(wide[agents].to_numpy(float))
    if not np.all(np.isfinite(states)):
        raise RunLogError(f"{log.path}: competence values must be finite to label a regime")
    n_eval = log.frame("agent").groupby("agent")["n_eval"].median().reindex(agents)
    shift = (log.manifest.get("schedules") or {}).get("shift_step")  # judged after the shift
    try:
        labels = simulate.classify_observed(
            t, states, n_eval.to_numpy(float), names=tuple(agents), since=shift
        )
    except simulate.AgentmotifsError as e:
        raise RunLogError(f"{log.path}: {e}") from e
    return {
        "regime": labels["regime"],
        "node_regimes": labels["node_regimes"],
        "collapse": labels["collapse"],
        "steps": int(t[-1]),
        "diverged": False,
    }
