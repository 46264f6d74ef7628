"""Each run's spurious-reward pulses, read from its llm_runs config (``calibrate fit --pulses``).

llm_runs corrupts the learning rewards of the roles ``task.spurious.roles`` (every role when
empty) during the windows ``[start, stop)`` of optimizer steps that
``llm_runs.pulse_windows`` draws from the run's ``task.spurious`` settings and seed. In
mode ``flip`` a reward ``r`` becomes ``1 - r``: the agent unlearns, driven back toward its
start level at a share ``kappa`` (``flip[node]``, fitted) of its learning rate while the
pulse lasts, ``flip_lag`` steps (fitted) after its window (:class:`calibrate._quad.Quad`,
:func:`lagged_shares`). Under ``FitConfig(pulses=True)`` the likelihood
gives each run its own known pulses (data, not fitted) as, per node and cell of the
quadrature grid, the share of the cell inside a pulse (the update of step ``s`` acts over
``[s, s + 1]``, after the evaluation at ``s``).
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

__all__ = ["config_pulses", "lagged_shares", "run_pulse_windows", "window_array"]


def config_pulses(
    run: str, config: Mapping[str, Any] | None
) -> tuple[list[list[int]], tuple[str, ...]]:
    """One run's pulse windows ``[[start, stop), ...]`` (optimizer steps) and the roles
    they hit, from its llm_runs training config.

    Raises:
        DataError: No llm_runs config, a config llm_runs refuses, or pulses of mode
            ``random`` (not modelled; one line naming ``run``).
    """
    from llm_runs import pulse_windows
    from llm_runs.config import TrainConfig

    if not config or "task" not in config:
        raise DataError(
            f"run {run!r} has no llm_runs config; --pulses reads each run's spurious-reward "
            "pulses from its config (run folders)"
        )
    try:
        cfg = TrainConfig.from_dict(config)
        roles = tuple(cfg.network.network_spec().nodes)
    except AgentmotifsError as err:
        raise DataError(f"run {run!r}: {err}") from None
    sp = cfg.task.spurious
    windows = pulse_windows(sp, cfg.steps, seed=cfg.seed)
    if windows and sp.mode != "flip":
        raise DataError(
            f"run {run!r}: its pulses are of mode {sp.mode!r}; --pulses models 'flip' pulses only"
        )
    return windows, tuple(sp.roles) or roles


Windows = tuple[tuple[tuple[tuple[float, float], ...], ...], ...]


def run_pulse_windows(data: CurveData, names: Sequence[str]) -> Windows:
    """Per run and node, the windows ``(start, stop)`` (training steps) of the pulses that
    hit it, runs in :attr:`CurveData.runs` order (hashable: a static field of a fit).

    Args:
        data: Curves whose :attr:`~calibrate.CurveData.configs` hold each run's llm_runs
            training config.
        names: The fitted network's node names (the agents), ``N`` of them.

    Raises:
        DataError: As :func:`config_pulses`, or a pulse on a role that is not a node.
    """
    out = []
    for run in data.runs:
        windows, roles = config_pulses(run, data.configs.get(run))
        missing = [x for x in roles if x not in names]
        if missing:
            raise DataError(
                f"run {run!r}: its pulses hit {missing}, not nodes of the fitted network "
                f"{list(names)}"
            )
        w = tuple((float(a), float(b)) for a, b in windows)
        out.append(tuple(w if x in roles else () for x in names))
    return tuple(out)


def window_array(windows: Windows) -> np.ndarray:
    """:func:`run_pulse_windows` as one array ``(R, N, W, 2)`` of ``(start, stop)`` (training
    steps), ``W`` the most windows of a node, padded with empty windows ``(0, 0)``."""
    R, N = len(windows), len(windows[0]) if windows else 0
    W = max((len(ws) for per_node in windows for ws in per_node), default=0)
    out = np.zeros((R, N, max(W, 1), 2))
    for r, per_node in enumerate(windows):
        for i, ws in enumerate(per_node):
            for j, (a, b) in enumerate(ws):
                out[r, i, j] = a, b
    return out


def lagged_shares(win: ArrayLike, h: ArrayLike, lag: ArrayLike = 0.0) -> jax.Array:
    """Per node and grid cell, the share of the cell inside one of the pulses, each pulse
    acting ``lag`` training steps after its window (piecewise linear in ``lag``, so the lag
    can be fitted; the grid may be traced).

    Args:
        win: The windows ``(..., N, W, 2)`` (:func:`window_array`).
        h: The grid's cell widths in training steps from step 0, shape ``(M,)``
            (:attr:`calibrate._quad.QuadGrid.h`).
        lag: The delay (training steps, >= 0).

    Returns:
        Shape ``(..., N, M)`` in [0, 1] (0 where no pulse hits).
    """
    h = jnp.asarray(h, float)
    t1 = jnp.cumsum(h)
    t0 = t1 - h
    w = jnp.asarray(win)[..., None] + lag  # (..., N, W, 2, 1)
    inside = jnp.clip(jnp.minimum(t1, w[..., 1, :]) - jnp.maximum(t0, w[..., 0, :]), 0.0, None)
    return jnp.clip(inside.sum(-2) / jnp.maximum(h, 1e-300), 0.0, 1.0)
