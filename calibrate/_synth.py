"""Synthetic competence logs from known parameters (for tests, recovery studies, benchmarks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import simulate
from simulate import SolveOptions
from simulate.spec import NetworkSpec

from ._curve_data import CurveData, DataError
from ._edge_weights import config_edge_weights
from ._network import resolve_network
from ._solvers import solve_at

__all__ = ["synthetic_curves"]

_TIGHT = SolveOptions(rtol=1e-9, atol=1e-11)


@eqx.filter_jit
def _solve(model, ts):
    return solve_at(model, ts, options=_TIGHT)


def synthetic_curves(
    network: simulate.Network | NetworkSpec | str,
    params: Mapping[str, float],
    *,
    key: jax.Array,
    steps: Sequence[int] | np.ndarray = tuple(range(0, 300, 5)),
    n_eval: int = 100,
    runs: int = 1,
    run_params: Sequence[Mapping[str, float]] | None = None,
    hyper: Mapping[str, Sequence[float]] | None = None,
    phi: float | None = None,
    gate: str = "AND",
    pipeline: str | Sequence[str] = (),
    network_configs: Sequence[Mapping[str, Any]] | None = None,
) -> CurveData:
    """Simulate binomial (or beta-binomial) competence logs.

    Args:
        network: Preset name, spec or Network.
        params: Parameter values by name (``rho[X]``, ``K[X->Y]``, ...; unbracketed = all).
        key: PRNG key for the sampling noise (keyword-only).
        steps: Evaluation steps (integers, increasing).
        n_eval: Evaluation size per point.
        runs: Number of runs (labelled ``r0``, ``r1``...).
        run_params: Optional per-run parameter overrides (length ``runs``).
        hyper: Optional per-run hyperparameter columns, e.g. ``{"lr": [1e-4, 3e-4]}``.
        phi: Beta-binomial concentration (None = binomial noise).
        gate: Gate for a bare motif name.
        pipeline: Pipeline gates (``"X->Y,Y->Z"``, :func:`simulate.with_pipeline`); their
            ``Kp[X->Y]``, ``m[X->Y]`` are set in ``params`` like any other parameter.
        network_configs: Optional per-run llm_runs ``network`` configs (length ``runs``):
            each run is simulated with the edge weights they give (llm_runs' coupling
            ``1 - w + w G``, :func:`simulate.with_edge_weights`) and keeps ``{"network":
            ...}`` as its config, as a run folder does (``FitConfig.edge_weights``).

    Returns:
        Validated :class:`CurveData` with runs ``r0..``, seeds ``0..``.
    """
    net, _ = resolve_network(network, gate)
    steps_arr = np.asarray(steps, dtype=float)
    if steps_arr.ndim != 1 or steps_arr.size < 2 or np.any(np.diff(steps_arr) <= 0):
        raise DataError("steps must be >= 2 increasing integers")
    if run_params is not None and len(run_params) != runs:
        raise DataError(f"run_params must have {runs} entries")
    if network_configs is not None and len(network_configs) != runs:
        raise DataError(f"network_configs must have {runs} entries")
    configs = {f"r{r}": {"network": dict(c)} for r, c in enumerate(network_configs or ())}
    rows = []
    keys = jax.random.split(key, runs)
    for r in range(runs):
        model = simulate.make_model(net, "competence")
        if pipeline:
            model = simulate.with_pipeline(model, pipeline)
        model = simulate.set_params(model, dict(params))
        if run_params is not None:
            model = simulate.set_params(model, dict(run_params[r]))
        if network_configs is not None:
            _, edges = config_edge_weights(f"r{r}", configs[f"r{r}"])
            model = simulate.with_edge_weights(model, simulate.node_weights(net.names, edges))
        A, ok = _solve(model, jnp.asarray(steps_arr))
        if not bool(ok):
            raise DataError(f"simulation failed for run {r}")
        p = np.clip(np.asarray(A), 1e-12, 1 - 1e-12)
        k1, k2 = jax.random.split(keys[r])
        if phi is not None:
            p = np.asarray(jax.random.beta(k1, p * phi, (1 - p) * phi))
        k = np.asarray(jax.random.binomial(k2, n_eval, p)).astype(int)
        for ti, s in enumerate(steps_arr):
            for ni, node in enumerate(net.names):
                row = {
                    "run": f"r{r}",
                    "step": int(s),
                    "agent": node,
                    "competence": k[ti, ni] / n_eval,
                    "n_eval": n_eval,
                    "seed": r,
                }
                for col, vals in (hyper or {}).items():
                    row[col] = float(vals[r])
                rows.append(row)
    data = CurveData.from_table(pd.DataFrame(rows), source="synthetic")
    return dataclasses.replace(data, configs=configs) if configs else data
