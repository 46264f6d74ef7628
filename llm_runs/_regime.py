"""The regime of a real run, by the simulator's own classifier (torch-free).

A run's competence curves are measured on finite probe sets, so they carry sampling noise; they
are labelled with :func:`simulate.classify`'s noise-aware rule (the one it applies to gradient-
noise SDE paths: an oscillation needs an autocorrelation trough then peak, not band crossings),
and, since the measurement noise is known (binomial on each agent's ``n_eval`` probes), a
fluctuation variance above it (``classify``'s ``noise_sd``; without it pure binomial noise on a
flat curve of 21 evaluations was labelled an oscillation in about 9 % of agents).
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
        ``{"regime": str, "node_regimes": {agent: str}, "steps": int, "diverged": bool}``,
        regime names from :data:`simulate.REGIME_NAMES` (``"collapse"`` for a diverged run).

    Raises:
        RunLogError: The log is malformed or has fewer than 4 evaluation steps to judge.
    """
    import jax.numpy as jnp
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
    # measurement noise of each agent's competence: binomial on its n_eval probes, at the
    # level of the second half of the curve (where the classifier looks for oscillation)
    n_eval = log.frame("agent").groupby("agent")["n_eval"].median().reindex(agents)
    late = states[len(states) // 2 :].mean(axis=0)
    p = np.clip(late, 0.5 / n_eval.to_numpy(float), 1 - 0.5 / n_eval.to_numpy(float))
    noise_sd = np.sqrt(p * (1 - p) / n_eval.to_numpy(float))
    sol = simulate.Solution(
        t=jnp.asarray(t),
        states=jnp.asarray(states),
        inputs=jnp.ones_like(jnp.asarray(t)),
        y_final=jnp.asarray(states[-1]),
        code=jnp.zeros((), jnp.int32),
        names=tuple(agents),
        method="sde",  # noisy measurements: the noise-aware rule
    )
    regime, nodes = simulate.classify(sol, noise_sd=jnp.asarray(noise_sd))
    names = simulate.REGIME_NAMES
    return {
        "regime": names[simulate.Regime(int(regime))],
        "node_regimes": {
            a: names[simulate.Regime(int(r))]
            for a, r in zip(agents, np.asarray(nodes).tolist(), strict=True)
        },
        "steps": int(t[-1]),
        "diverged": False,
    }
