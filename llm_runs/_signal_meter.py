"""Measuring the training signals of one optimizer step (``signals.jsonl``; names and units in
:data:`llm_runs._signals.SIGNALS`).

The meter only reads what the step computes, plus two things of its own: a copy of the
adapters' parameters before the optimizer step (for the update norm) and one no-grad forward
of each agent's batch under the updated adapters (for the KL to the previous policy). Neither
draws random numbers or changes a parameter, so a run's trajectory is the same with the
signals on or off.

Definitions (per agent, over the rows it trained on; ``N`` rows, ``T`` completion tokens):

* ``grad_norm``: L2 norm of the gradient of the agent's adapters before clipping (with a pool,
  over all its members' adapters: ``sqrt(sum_k norm_k^2)``); with PPO's epochs, the first.
* ``update_norm``: L2 norm of the parameter change of the whole step (all epochs).
* ``policy_kl``: ``mean_{n,t} [exp(q) - q - 1]``, ``q = logp_new - logp_prev`` on the batch's
  tokens (the k3 estimator of KL(previous || updated); the tokens are the sampling policy's,
  which is the previous policy on-policy and ``rl.staleness`` steps older with a lag).
* ``ess``: ``(sum_n w_n)^2 / (N sum_n w_n^2)`` with the sequence weights
  ``w_n = exp(sum_t logp_cur - sum_t logp_behaviour)`` of the step's (last) update: 1 for
  on-policy one-update algorithms, below 1 with policy lag or PPO's later epochs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ._signal_log import signal_row

__all__ = ["SignalMeter", "Trace", "ess", "k3_kl", "zero_std_share"]


def ess(logw: torch.Tensor) -> float:
    """Normalised effective sample size of weights ``exp(logw)`` (N,): in (0, 1], NaN if a
    log-weight is not finite."""
    lw = logw.double()
    if lw.numel() == 0 or not bool(torch.isfinite(lw).all()):
        return math.nan
    w = torch.exp(lw - lw.max())  # the largest weight is 1: no overflow, equal weights exact
    return min(float(w.sum() ** 2 / (w.numel() * (w**2).sum())), 1.0)


def k3_kl(logp_new: torch.Tensor, logp_prev: torch.Tensor) -> float:
    """Mean per-token ``exp(q) - q - 1``, ``q = logp_new - logp_prev`` (any equal shapes)."""
    q = (logp_new - logp_prev).double()
    return max(float((torch.expm1(q) - q).mean()), 0.0)  # >= 0; rounding of tiny q aside


def zero_std_share(r: np.ndarray, group: int) -> float | None:
    """Share of prompt groups (``group`` consecutive rewards each) whose rewards all tie; None
    without groups (``group`` 1)."""
    if group <= 1 or r.size == 0:
        return None
    g = r.reshape(-1, group)
    return float(np.mean(g.max(1) == g.min(1)))


class Trace:
    """What a role's update exposes to the meter (filled by ``update_role``).

    Attributes:
        logp0: (N, T) log-probs of the batch's tokens at the first epoch (the previous
            policy), rows in batch order.
        logw: (N,) sequence log importance weights (current vs behaviour) of the last epoch.
    """

    def __init__(self, n: int, width: int, device: torch.device) -> None:
        self.logp0 = torch.zeros((n, width), dtype=torch.float32, device=device)
        self.logw = torch.zeros(n, dtype=torch.float64, device=device)

    def put(self, rows: torch.Tensor, logp: torch.Tensor, old: torch.Tensor, epoch: int) -> None:
        """One member's rows: ``logp`` its current log-probs, ``old`` the behaviour's."""
        lp = logp.detach()
        if epoch == 0:
            self.logp0[rows] = lp.float()
        self.logw[rows] = (lp - old).double().sum(1)


class SignalMeter:
    """The per-agent signals of the optimizer step in progress.

    Args:
        roles: The agents, in pipeline order.
    """

    def __init__(self, roles: list[str]) -> None:
        self.roles = list(roles)
        self.begin()

    def begin(self) -> None:
        """Start a step: forget the previous one's values and parameter copy."""
        self.values: dict[str, dict[str, float | None]] = {r: {} for r in self.roles}
        self.batches: dict[str, tuple[Any, ...]] = {}
        self._before: dict[str, list[torch.Tensor]] | None = None

    def put(self, role: str, **values: float | None) -> None:
        """Set signals of ``role`` (a later value of a name replaces an earlier one)."""
        self.values[role].update(values)

    def reward(self, role: str, r: np.ndarray, group: int) -> None:
        """Reward mean, variance (ddof 0) and tied-group share of a batch's rewards (N,)."""
        self.put(
            role,
            reward_mean=float(r.mean()),
            reward_var=float(r.var()),
            frac_reward_zero_std=zero_std_share(r, group),
        )

    def before_step(self, groups: list[tuple[str, list[torch.nn.Parameter]]]) -> None:
        """Copy the parameters before the step's first optimizer step (the update's origin)."""
        if self._before is None:
            self._before = {}
            for role, ps in groups:
                self._before.setdefault(role, []).extend(p.detach().clone() for p in ps)

    def after_step(
        self,
        groups: list[tuple[str, list[torch.nn.Parameter]]],
        grad_norms: list[torch.Tensor],
    ) -> None:
        """After an optimizer step: the gradient norms (first step of the training step only)
        and the parameter change since :meth:`before_step`."""
        first = "grad_norm" not in self.values[self.roles[0]]
        sq: dict[str, list[torch.Tensor]] = {}
        now: dict[str, list[torch.Tensor]] = {}
        for (role, ps), g in zip(groups, grad_norms, strict=True):
            sq.setdefault(role, []).append(g.detach().double() ** 2)
            now.setdefault(role, []).extend(p.detach() for p in ps)
        before = self._before or {}
        for role, cur in now.items():
            diff = torch._foreach_sub(cur, before[role])
            norms = torch.stack(torch._foreach_norm(diff)).double()
            self.put(role, update_norm=float(torch.linalg.vector_norm(norms)))
            if first:
                self.put(role, grad_norm=float(torch.stack(sq[role]).sum().sqrt()))

    def rows(self, step: int, phase: str) -> list[dict[str, Any]]:
        """The step's rows (``step``: optimizer steps done after it); non-finite values null."""
        return [signal_row(step, r, phase, self.values[r]) for r in self.roles]
