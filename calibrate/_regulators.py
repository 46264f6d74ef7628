"""Each run's logged regulators, read from its run folder (``calibrate fit --regulators logged``).

llm_runs' edges do not act on the probe competence a fit sees: each agent's coupling factor
``1 - w + w G`` is a gated Hill regulation ``G`` of its upstream agents' *training*
competence, an exponential moving average of the rewards they earn on the training
batches (bias-corrected; logged as ``ema`` at every evaluation). On the testbed that
average lags and sits below the probe competence (X's probe 0.95 at step 40 against an
average of 0.63), so a Hill term of the fitted probe competence is not the regulation the
run applied. Under ``FitConfig(regulators="logged")`` the likelihood reads each edge's Hill
term from the logged average of its source (linear between evaluations, the first logged
value before it), with the threshold ``K`` and Hill coefficient ``n`` of the run's own config
(data, not fitted): what is fitted is which edges exist and their signs, and each node's
kinetics. Pipeline gates (``FitConfig.pipeline``) still read the fitted competence,
unless ``regulators="logged-gates"``, under which they read the logged series too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from simulate.common import AgentmotifsError

from ._curve_data import CurveData, DataError

__all__ = ["NO_NEW_RUN", "config_hill", "grid_regulators", "run_regulators"]

#: Why a fit with logged regulators forecasts nothing (``predict``, ``recommend``, ``watch``).
NO_NEW_RUN = (
    "such a fit describes the runs it was fitted on and cannot forecast a new run, whose "
    "regulators are not logged; refit without --regulators to forecast"
)


def config_hill(run: str, config: Mapping[str, Any] | None) -> tuple[float, float]:
    """The threshold ``K`` and Hill coefficient ``n`` of one run's edges, from its llm_runs
    config (one pair for all its edges).

    Raises:
        DataError: No llm_runs config, a config llm_runs refuses, or edges with different
            ``K`` or ``n`` (one line naming ``run``).
    """
    from llm_runs.config import TrainConfig

    if not config or "network" not in config:
        raise DataError(
            f"run {run!r} has no llm_runs config; --regulators logged reads each run's edge "
            "thresholds from its config (run folders)"
        )
    try:
        spec = TrainConfig.from_dict(config).network.network_spec()
    except AgentmotifsError as err:
        raise DataError(f"run {run!r}: {err}") from None
    pairs = {(float(e.K), float(e.n)) for e in spec.edges}
    if len(pairs) > 1:
        raise DataError(
            f"run {run!r}: its edges have different thresholds or Hill coefficients "
            f"{sorted(pairs)}; --regulators logged needs one K and one n"
        )
    if not pairs:
        raise DataError(f"run {run!r}: its network has no edges to read regulators for")
    return next(iter(pairs))


def run_regulators(
    data: CurveData, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """Every run's logged training competence per node, on the union of the logged steps.

    Args:
        data: Curves read from llm_runs run folders (:attr:`CurveData.regulators` and
            :attr:`CurveData.configs`).
        names: The fitted network's node names (the agents), ``N`` of them.

    Returns:
        ``(steps, values, (K, n))``: steps ``(S,)`` (training steps, > 0), values ``(R, N,
        S)`` in [0, 1] (runs in :attr:`CurveData.runs` order; each run's series linear
        between its own evaluations, constant beyond its first and last), and the runs'
        common ``K`` and ``n``.

    Raises:
        DataError: A run without logged regulators for every node, a value outside
            [0, 1], runs whose ``K`` or ``n`` differ, or as :func:`config_hill`.
    """
    hills = {run: config_hill(run, data.configs.get(run)) for run in data.runs}
    if len(set(hills.values())) > 1:
        raise DataError(
            f"runs have different edge thresholds or Hill coefficients {hills}; "
            "--regulators logged needs one K and one n for all runs"
        )
    series: list[list[tuple[np.ndarray, np.ndarray]]] = []
    for run in data.runs:
        frame = data.regulators.get(run)
        if frame is None:
            raise DataError(
                f"run {run!r} has no logged training competence (llm_runs' ema); "
                "--regulators logged needs run folders"
            )
        per_node = []
        for node in names:
            rows = frame[(frame["agent"] == node) & (frame["step"] > 0)]
            t = np.asarray(rows["step"], dtype=float)
            v = np.asarray(rows["ema"], dtype=float)
            ok = np.isfinite(v)
            if not ok.any():
                raise DataError(
                    f"run {run!r}: agent {node!r} has no logged training competence (ema)"
                )
            t, v = t[ok], v[ok]
            if np.any((v < 0) | (v > 1)):
                raise DataError(f"run {run!r}: agent {node!r}'s ema lies outside [0, 1]")
            order = np.argsort(t)
            per_node.append((t[order], v[order]))
        series.append(per_node)
    steps = np.unique(np.concatenate([t for per in series for t, _ in per]))
    values = np.array([[np.interp(steps, t, v) for t, v in per] for per in series])
    return steps, values, next(iter(hills.values()))


def grid_regulators(steps: ArrayLike, values: ArrayLike, nodes: ArrayLike) -> tuple[Any, Any]:
    """The logged regulators and their time derivatives at a quadrature grid's nodes.

    Args:
        steps: Logged steps ``(S,)`` (:func:`run_regulators`).
        values: Values ``(..., S)``.
        nodes: Grid nodes in training steps ``(M + 1,)`` (arrays may be traced).

    Returns:
        ``(levels, slopes)``, each ``(..., M + 1)``: the piecewise-linear interpolant (held
        constant outside the logged steps) and its derivative per training step (the mean of
        the two sides at a logged step).
    """
    nodes, steps = jnp.asarray(nodes, float), jnp.asarray(steps, float)
    flat = jnp.reshape(jnp.asarray(values, float), (-1, jnp.shape(values)[-1]))
    eps = 1e-3

    def interp(t: jax.Array) -> jax.Array:
        return jax.vmap(lambda v: jnp.interp(t, steps, v))(flat)

    levels = interp(nodes)
    slopes = (interp(nodes + eps) - interp(nodes - eps)) / (2 * eps)
    shape = (*jnp.shape(values)[:-1], nodes.shape[0])
    return levels.reshape(shape), slopes.reshape(shape)
