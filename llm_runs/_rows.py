"""The log rows of one evaluation step, and the divergence check, of a training
:class:`~llm_runs._steps.State` (split from the run loop to keep each module small)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ._steps import State, metric_rows

__all__ = ["log_rows", "nonfinite"]


def log_rows(
    st: State,
    step: int,
    comp: dict[str, float],
    acc: float,
    n_probe: int,
    n_test: int,
    pulse: bool,
    shifted: bool,
    members: dict[str, list[float]],
) -> list[dict[str, Any]]:
    metrics = {
        role: {k: (v if math.isfinite(v) else None) for k, v in m.items()}
        for role, m in metric_rows(st).items()
    }  # a diverged step's NaN/inf metrics are logged as null
    reg = st.edges.regulation()
    rows: list[dict[str, Any]] = []
    for role in st.roles:
        m = metrics.get(role, {})
        row = {
            "kind": "agent",
            "step": step,
            "agent": role,
            "competence": comp[role],
            "n_eval": n_probe,
            **{
                k: m.get(k)
                for k in ("reward", "reward_std", "entropy", "kl", "lr", "budget_share", "loss")
            },
            "ema": ema if math.isfinite(ema := st.edges.estimate(role)) else None,
            "regulation": reg[role],
        }
        if st.pool.k > 1:
            if not st.pool.es:
                row["members"] = members[role]
                row["pool_spread"] = float(np.std(members[role]))
            fit = st.pool.fitness[role]
            row["pool_fitness"] = [float(f) if math.isfinite(f) else None for f in fit]
        rows.append(row)
    e2e_reward = float(np.mean(st.acc_e2e)) if st.acc_e2e else None
    st.acc_e2e = []
    rows.append(
        {
            "kind": "e2e",
            "step": step,
            "accuracy": acc,
            "n_eval": n_test,
            "reward": e2e_reward,
            "pulse": pulse,
            "shifted": shifted,
        }
    )
    return rows


def nonfinite(st: State) -> str | None:
    """Why the run has diverged (non-finite parameters or training metrics), or None."""
    for role, d in st.acc.items():
        for k, values in d.items():
            bad = [v for v in values if not math.isfinite(v)]
            if bad:
                return f"{k} of agent {role} became {bad[0]}"
    for name, params in st.policy.params.items():
        if not all(bool(torch.isfinite(p).all()) for p in params):
            return f"parameters of adapter {name} became non-finite"
    for role, params in st.pool.centre.items():
        if not all(bool(torch.isfinite(p).all()) for p in params):
            return f"parameters of the evolution-strategies centre of {role} became non-finite"
    return None
