"""Each run's edge weights, read from its llm_runs config (``calibrate fit --edge-weights``).

llm_runs realises the edges into agent ``i`` as the learning-rate factor ``1 - w_i + w_i
G_i`` with ``w_i`` the largest ``weight`` of those edges (``network.edges["X->Y"].weight``,
else ``network.default_weight``; see :mod:`simulate._edge_weight`). Under
``FitConfig(edge_weights=True)`` the likelihood gives each run its own known ``w`` (data, not
fitted), read here from the run's training config (a run folder's manifest, kept in
:attr:`calibrate.CurveData.configs`). The weights come from the run's own wiring, whatever
candidate network is fitted: they are what the run did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import simulate
from simulate.common import AgentmotifsError

from ._curve_data import CurveData, DataError

__all__ = ["config_edge_weights", "run_edge_weights", "run_node_weights"]


def config_edge_weights(
    run: str, config: Mapping[str, Any] | None
) -> tuple[tuple[str, ...], dict[str, float]]:
    """One run's network nodes and the weight of each of its edges, from its llm_runs
    training config (``network`` section; see :func:`run_edge_weights`).

    Raises:
        DataError: No ``network`` config, a config llm_runs refuses (e.g. a weight outside
            [0, 1]), or an edge whose mechanism is not ``coupling`` (one line naming ``run``).
    """
    from llm_runs.config import TrainConfig

    if not config or "network" not in config:
        raise DataError(
            f"run {run!r} has no network config; --edge-weights reads each run's edge "
            "weights from its llm_runs config (run folders)"
        )
    try:
        net = TrainConfig.from_dict({"network": config["network"]}).network
        spec = net.network_spec()
    except AgentmotifsError as err:
        raise DataError(f"run {run!r}: {err}") from None
    edges = {}
    for e in spec.edges:
        ec = net.edge(e.key)
        if ec.mechanism != "coupling":
            raise DataError(
                f"run {run!r}: edge {e.key} acts through {ec.mechanism!r}; --edge-weights "
                "models the learning-rate coupling only"
            )
        edges[e.key] = float(ec.weight)
    return tuple(spec.nodes), edges


def run_edge_weights(data: CurveData) -> dict[str, tuple[tuple[str, ...], dict[str, float]]]:
    """Per run, its network's nodes and the weight of each of its edges.

    Args:
        data: Curves whose :attr:`~calibrate.CurveData.configs` hold each run's llm_runs
            training config (``network`` section).

    Returns:
        ``{run: (nodes, {"X->Y": w})}``, ``w`` in [0, 1] (dimensionless).

    Raises:
        DataError: As :func:`config_edge_weights`, for the first run at fault.
    """
    return {run: config_edge_weights(run, data.configs.get(run)) for run in data.runs}


def run_node_weights(data: CurveData, names: Sequence[str]) -> np.ndarray:
    """Per run and node, llm_runs' weight ``w_i`` (the max rule), in :attr:`CurveData.runs`
    order.

    Args:
        data: As for :func:`run_edge_weights`.
        names: The fitted network's node names (the agents), ``N`` of them.

    Returns:
        Shape ``(R, N)``, float64, in [0, 1]; 0 for a node no edge of the run enters.

    Raises:
        DataError: As :func:`run_edge_weights`, or a run whose network's nodes are not
            the fitted network's.
    """
    rows = []
    for run, (nodes, edges) in run_edge_weights(data).items():
        if set(nodes) != set(names):
            raise DataError(
                f"run {run!r}: its network's nodes {list(nodes)} are not the fitted "
                f"network's {list(names)}; --edge-weights needs the run's own node names"
            )
        try:
            rows.append(simulate.node_weights(names, edges))
        except simulate.SpecError as err:
            raise DataError(f"run {run!r}: {err}") from None
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names))
