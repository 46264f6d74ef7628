"""The state a training step reads and changes (checkpointed by ``_train``); its own module so
that the step (``_steps``) and a role's update (``_member_update``) both read it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ._edges import EdgeController
from ._policy import MultiAdapter
from ._pool import Pool
from ._signal_meter import SignalMeter
from ._staleness import AdapterRing
from ._tasks import Task
from .config import TrainConfig

__all__ = ["State"]


@dataclass
class State:
    """Everything a step reads or changes (checkpointed by ``_train``).

    Attributes:
        members: Role → its adapter names (``[role]`` or the pool ``role_0..role_{K-1}``).
        acc: Per agent, lists of per-step metrics since the last evaluation.
        acc_e2e: Training end-to-end rewards (uncorrupted) since the last evaluation.
        ring: Past adapter snapshots (``rl.staleness``; empty and unused when 0).
        meter: The training signals of the step in progress (None: not logged).
    """

    cfg: TrainConfig
    task: Task
    policy: MultiAdapter
    edges: EdgeController
    opt: torch.optim.Optimizer
    rng: np.random.Generator
    gen: torch.Generator
    members: dict[str, list[str]]
    pool: Pool
    baseline: dict[str, float] = field(default_factory=dict)
    acc: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    acc_e2e: list[float] = field(default_factory=list)
    ring: AdapterRing = field(default_factory=lambda: AdapterRing(0))
    meter: SignalMeter | None = None

    @property
    def roles(self) -> list[str]:
        return list(self.task.roles)

    def record(self, role: str, **metrics: float | None) -> None:
        d = self.acc.setdefault(role, {})
        for k, v in metrics.items():
            if v is not None:
                d.setdefault(k, []).append(float(v))
