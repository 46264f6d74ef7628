"""The regime of measured curves (a real run's competences): one classifier for every real run.

:func:`classify_observed` is :func:`simulate.classify`'s noise-aware rule (the one for noisy
``sde`` paths, with the binomial measurement noise of ``n_eval`` probes) for oscillation,
overshoot and settling, and :func:`simulate.common.fall_collapse` for collapse: a node whose
competence fell far below its start or peak and stayed there is ``collapse``, whatever the
oscillation test says; the simulator's low-level collapse (settling below 0.05) is not used,
since a measured curve near 0 from the start never learned rather than collapsed.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._analysis import classify
from ._collapse import Collapse, fall_collapse, fall_collapse_many
from ._errors import AgentmotifsError
from ._regimes import REGIME_NAMES, REGIME_SEVERITY, Regime
from ._solve import Solution

__all__ = ["classify_observed", "classify_observed_many"]


def classify_observed(
    t: Any,
    states: Any,
    n_eval: Any,
    *,
    names: tuple[str, ...] | None = None,
    since: float | None = None,
) -> dict[str, Any]:
    """Label measured competence curves (one real run) with the one rule for real runs.

    Args:
        t: Evaluation steps, shape ``(T,)``, increasing, ``T >= 4``.
        states: Competences, shape ``(T, N)`` (one column per agent), finite, in ``[0, 1]``.
        n_eval: Probes per evaluation: a number, or one per agent ``(N,)``.
        names: Agent names (default ``"0"``, ``"1"``, ...).
        since: Step of the run's last input switch (e.g. a distribution shift), if any:
            collapse is judged on the evaluations from that step on (at least the last 4),
            as :func:`simulate.classify` judges the part after the last switch, so a drop
            caused by a harder task is not a collapse.

    Returns:
        ``{"regime": str, "node_regimes": {name: str}, "collapse": {name: verdict dict}}``,
        regime names from :data:`simulate.REGIME_NAMES`; the run's regime is its most severe
        node's.

    Raises:
        AgentmotifsError: Fewer than 4 evaluations, mismatched shapes, non-finite values or
            a bad ``n_eval``.
    """
    tt = np.asarray(t, dtype=np.float64).reshape(-1)
    y = np.asarray(states, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != tt.size:
        raise AgentmotifsError(
            f"states must have shape (T, N) with T = {tt.size} evaluation steps, got {y.shape}"
        )
    ne, labels = _checked(tt, y, n_eval, names)
    # measurement noise of each agent: binomial on its n_eval probes, at the level of the
    # second half of the curve (where the classifier looks for oscillation)
    noise_sd = _noise_sd(y, ne)
    sol = Solution(
        t=jnp.asarray(tt),
        states=jnp.asarray(y),
        inputs=jnp.ones_like(jnp.asarray(tt)),
        y_final=jnp.asarray(y[-1]),
        code=jnp.zeros((), jnp.int32),
        names=labels,
        method="sde",
    )
    _, nodes = classify(sol, bounded=False, noise_sd=jnp.asarray(noise_sd))
    codes = [int(c) for c in np.asarray(nodes).tolist()]
    first = 0 if since is None else min(int(np.searchsorted(tt, float(since))), tt.size - 4)
    verdicts: dict[str, Collapse] = {
        a: fall_collapse(y[first:, j], float(ne[j])) for j, a in enumerate(labels)
    }
    codes = [
        int(Regime.COLLAPSE) if verdicts[a].collapsed else c
        for a, c in zip(labels, codes, strict=True)
    ]
    worst = max(codes, key=lambda c: REGIME_SEVERITY[c])
    return {
        "regime": REGIME_NAMES[Regime(worst)],
        "node_regimes": {a: REGIME_NAMES[Regime(c)] for a, c in zip(labels, codes, strict=True)},
        "collapse": {a: v.as_dict() for a, v in verdicts.items()},
    }


def _checked(
    tt: np.ndarray, y: np.ndarray, n_eval: Any, names: tuple[str, ...] | None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """The checks both classifiers share (``y``: agents on the last axis); returns the
    per-agent ``n_eval`` and the agents' names."""
    if tt.size < 4:
        raise AgentmotifsError(f"a regime needs at least 4 evaluation steps, got {tt.size}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(tt))):
        raise AgentmotifsError("steps and competence values must be finite to label a regime")
    n = y.shape[-1]
    ne = np.broadcast_to(np.asarray(n_eval, dtype=np.float64), (n,))
    if not np.all(ne > 0):
        raise AgentmotifsError(f"n_eval must be positive, got {n_eval!r}")
    labels = tuple(str(i) for i in range(n)) if names is None else tuple(names)
    if len(labels) != n:
        raise AgentmotifsError(f"{len(labels)} names for {n} agents")
    return ne, labels


def _noise_sd(y: np.ndarray, ne: np.ndarray) -> np.ndarray:
    """Binomial measurement sd of each agent at the level of the second half of its curve
    (where the classifier looks for oscillation); ``y`` is ``(..., T, N)``."""
    late = y[..., y.shape[-2] // 2 :, :].mean(axis=-2)
    p = np.clip(late, 0.5 / ne, 1 - 0.5 / ne)
    return np.sqrt(p * (1 - p) / ne)


@functools.cache
def _batched_classify(names: tuple[str, ...]) -> Any:
    """``classify``'s noisy rule over a batch of measured curves, compiled once per names."""

    def one(tt: Any, y: Any, sd: Any) -> Any:
        sol = Solution(t=tt, states=y, inputs=jnp.ones_like(tt), y_final=y[-1],
                       code=jnp.zeros((), jnp.int32), names=names, method="sde")  # fmt: skip
        return classify(sol, bounded=False, noise_sd=sd)[1]

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0)))


def classify_observed_many(
    t: Any, states: Any, n_eval: Any, *, names: tuple[str, ...] | None = None
) -> np.ndarray:
    """:func:`classify_observed` on many runs measured at the same steps, in one compiled
    call: the run's regime code (:class:`simulate.Regime`) per run.

    Args:
        t: Evaluation steps, shape ``(T,)``, increasing, ``T >= 4``.
        states: Competences, shape ``(B, T, N)``, finite, in ``[0, 1]``.
        n_eval: Probes per evaluation: a number, or one per agent ``(N,)``.
        names: Agent names (default ``"0"``, ``"1"``, ...).

    Returns:
        Regime codes ``(B,)`` (int), equal to ``Regime[classify_observed(...)["regime"]]``
        run by run.

    Raises:
        AgentmotifsError: Fewer than 4 evaluations, mismatched shapes, non-finite values or
            a bad ``n_eval``.
    """
    tt = np.asarray(t, dtype=np.float64).reshape(-1)
    y = np.asarray(states, dtype=np.float64)
    if y.ndim != 3 or y.shape[1] != tt.size:
        raise AgentmotifsError(
            f"states must have shape (B, T, N) with T = {tt.size} evaluation steps, got {y.shape}"
        )
    ne, labels = _checked(tt, y, n_eval, names)
    b, n = y.shape[0], y.shape[2]
    if b == 0:
        return np.zeros(0, dtype=np.int64)
    nodes = np.asarray(_batched_classify(labels)(jnp.asarray(tt), jnp.asarray(y),
                                                 jnp.asarray(_noise_sd(y, ne))))  # fmt: skip
    coll = np.stack([fall_collapse_many(y[:, :, j], ne[j]) for j in range(n)], axis=1)
    codes = np.where(coll, int(Regime.COLLAPSE), nodes)
    sev = np.vectorize(lambda c: REGIME_SEVERITY[int(c)])(codes)
    return codes[np.arange(b), np.argmax(sev, axis=1)].astype(np.int64)
