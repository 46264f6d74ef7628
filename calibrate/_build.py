"""Building a :class:`~calibrate.CurveModel`: the data, network and options turned into the
likelihood's arrays."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import gammaln

import simulate
from simulate.spec import NetworkSpec

from ._config import ConfigError, FitConfig
from ._curve_data import CurveData, DataError
from ._edge_weights import run_node_weights
from ._link_rows import build_links
from ._model import CurveModel
from ._network import make_layout, resolve_network
from ._pulses import run_pulse_windows, window_array
from ._quad import QuadGrid, feedforward_order
from ._regulators import grid_regulators, run_regulators
from ._solvers import fixed_substeps

__all__ = ["build_model"]


def build_model(
    data: CurveData,
    network: simulate.Network | NetworkSpec | str,
    config: FitConfig | None = None,
    *,
    gate: str = "AND",
    nodes: tuple[str, ...] | None = None,
) -> CurveModel:
    """Prepare the likelihood arrays for ``data`` on ``network``.

    Raises:
        DataError: An agent in the data is not a node of the network, a node has no data
            (it would be fitted from its priors alone), < 2 distinct steps, (with
            ``config.edge_weights``) a run without readable weights, or a linked column
            has a value outside its link transform's domain.
        ConfigError: A link or random effect names an unknown parameter or column.
    """
    config = config or FitConfig()
    net, name = resolve_network(network, gate, nodes)
    unknown = [a for a in data.agents if a not in net.names]
    unseen = [a for a in net.names if a not in data.agents]
    if unknown or unseen:
        what = f"agent(s) {unknown} are not nodes" if unknown else f"no data for node(s) {unseen}"
        raise DataError(
            f"{what} of network {name!r} (nodes {list(net.names)}, agents in the data "
            f"{list(data.agents)}); rename the agents or map the network's nodes to agent "
            "names with nodes=(...) / --agents"
        )
    t = data.table
    t_obs = data.model_steps().astype(float)  # a window mean: at its window's middle
    ts = np.unique(t_obs)
    if ts.size < 2:
        raise DataError("need observations at >= 2 distinct steps")
    # the priors' scale from the logged steps (a refit from a saved fit's table, which holds
    # them, gets the same layout), the observations at their windows' middles
    layout = make_layout(net, config, horizon=float(t["step"].max()))
    # NUTS evaluates ~1e5 gradients: compile the likelihood for this sign structure; the
    # other methods share one program across all networks of the same wiring
    stages = config.lag_stages if config.lag == "erlang" else 0
    base = simulate.with_log_hill(
        simulate.make_model(net, "competence", delay_stages=stages),
        fixed_structure=config.method == "nuts",
    )
    if config.pipeline:  # the gates' Kp, m are free parameters (the layout's)
        base = simulate.with_pipeline(base, config.pipeline)
    weights = run_node_weights(data, net.names) if config.edge_weights else None
    regulators = run_regulators(data, net.names) if config.logged_regulators else None
    if regulators is not None:  # the runs' own K and n, known: written in, not fitted
        sign = np.asarray(net.sign)
        for e in (e for e in net.edge_keys if sign[net.edge_index(e)] != 0):
            base = simulate.set_param(base, f"K[{e}]", regulators[2][0])
            base = simulate.set_param(base, f"n[{e}]", regulators[2][1])
    for i, node in enumerate(net.names):
        if not net.has_parents[i]:
            base = simulate.set_param(base, f"b[{node}]", 0.0)
    # measured: quad's gradient is the fastest, rk4 is smooth (the map needs no solver)
    ode = config.dynamics == "ode"
    if config.solver == "auto" and ode:
        solver = "rk4" if feedforward_order(base) is None else "quad"
        config = dataclasses.replace(config, solver=solver)
    if config.solver == "quad" and ode and feedforward_order(base) is None:
        raise ConfigError(
            f"solver 'quad' needs a feed-forward network (no cycle, no reward "
            f"feedback loop); {name!r} has a cycle: use solver 'rk4' or 'tsit5'"
        )
    runs = tuple(data.runs)
    run_pos = {r: i for i, r in enumerate(runs)}
    h = config.hierarchy  # random effects (parameter index, sd index) and links
    bases = list(enumerate(layout.bases))
    re_pairs = [(j, g) for g, p in enumerate(h.random_effects) for j, b in bases if b == p]
    re_index, re_group = [j for j, _ in re_pairs], [g for _, g in re_pairs]
    link_index, link_x, link_rows = build_links(h, layout, data)
    n, k = t["n_eval"].to_numpy(float), np.asarray(data.successes, dtype=float)
    quad = QuadGrid.build(ts, config.dt) if config.solver == "quad" and ode else None
    if config.pulses and quad is None:
        raise ConfigError("pulses need the quad solver on a feed-forward network")
    if regulators is not None and quad is None:
        raise ConfigError("logged regulators need the quad solver on a feed-forward network")
    windows = run_pulse_windows(data, net.names) if config.pulses else ()
    reg_grid = None  # the logged regulators on the data's grid, once (the likelihood's solves)
    if regulators is not None and quad is not None:
        levels, slopes = grid_regulators(regulators[0], regulators[1], quad.nodes)
        reg_grid = (np.asarray(levels), np.asarray(slopes))
    return CurveModel(
        network=net,
        name=name,
        base=base,
        layout=layout,
        config=config,
        runs=runs,
        ts=ts,
        run_idx=t["run"].map(run_pos).to_numpy(np.int64),
        t_idx=np.searchsorted(ts, t_obs),
        node_idx=np.array([net.names.index(a) for a in t["agent"]], dtype=np.int64),
        n_eval=t["n_eval"].to_numpy(np.int64),
        k=data.successes,
        log_choose=np.asarray(np.sum(gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0))),
        re_index=np.array(re_index, dtype=np.int64),
        re_group=np.array(re_group, dtype=np.int64),
        re_bases=tuple(h.random_effects),
        link_index=np.array(link_index, dtype=np.int64),
        link_x=np.array(link_x).reshape(len(link_index), len(runs)),
        link_rows=tuple(link_rows),
        substeps=fixed_substeps(ts, config.dt),
        quad=quad,
        map_ts=tuple(ts.tolist()) if config.dynamics == "map" else (),
        run_weights=weights,
        pulse_windows=windows,
        run_windows=window_array(windows) if windows else None,
        reg_steps=None if regulators is None else regulators[0],
        reg_values=None if regulators is None else regulators[1],
        reg_grid=reg_grid,
    )
