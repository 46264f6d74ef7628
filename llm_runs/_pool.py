"""Pool-of-Agents: member start noise, rollout sampling, fitness, evolution strategies and
the PBT-style exploit/explore step (see :class:`llm_runs.config.PoolConfig`).

A role with ``pool_size`` K has K LoRA adapters ``role_0 .. role_{K-1}`` on the one shared
base. Shapes: ``N`` rollouts per step; an assignment is an int array (N,) of member indices.
With K = 1 and ``init_noise`` 0 nothing here draws a random number, so single-agent runs are
unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ._policy import MultiAdapter
from .config import TrainConfig

__all__ = ["Pool", "rank_weights"]


def rank_weights(fitness: np.ndarray) -> np.ndarray:
    """Centred ranks of ``fitness`` (K,) in [-0.5, 0.5], ties averaged (sum 0).

    Args:
        fitness: Member fitness, shape (K,), K >= 2.

    Returns:
        Shape (K,): ``rank / (K - 1) - 0.5`` with rank 0 for the least fit.
    """
    k = fitness.size
    order = np.argsort(fitness, kind="stable")
    ranks = np.empty(k, float)
    ranks[order] = np.arange(k, dtype=float)
    for v in np.unique(fitness):  # average tied ranks, so equal rewards give equal weight
        tie = fitness == v
        ranks[tie] = ranks[tie].mean()
    return ranks / (k - 1) - 0.5


def _lora(pol: MultiAdapter, name: str, which: str) -> list[torch.nn.Parameter]:
    return [p for n, p in pol.model.named_parameters() if f".{name}." in n and which in n]


class Pool:
    """Per-role pool state of one run (checkpointed through :meth:`state`).

    Args:
        cfg: The run config (``pool_size``, ``pool``, ``rl.grad_clip``).
        policy: The adapters (members already created).
        members: Role → its adapter names.
    """

    def __init__(
        self, cfg: TrainConfig, policy: MultiAdapter, members: dict[str, list[str]]
    ) -> None:
        self.cfg = cfg.pool
        self.k = cfg.pool_size
        self.members = members
        self.policy = policy
        self.es = self.k > 1 and self.cfg.update == "es"
        self.gen = torch.Generator().manual_seed(cfg.seed + 7)
        self.fitness = {r: np.full(self.k, np.nan) for r in members}
        self.assignment: dict[str, np.ndarray] = {}
        self.exploits = 0
        if self.cfg.init_noise > 0:
            for names in members.values():
                for name in names:
                    self._perturb(name, self.cfg.init_noise)
        self.centre: dict[str, list[torch.nn.Parameter]] = {}
        self.eps: dict[str, list[list[torch.Tensor]]] = {}
        if self.es:
            self.centre = {
                r: [torch.nn.Parameter(p.detach().clone()) for p in policy.params[names[0]]]
                for r, names in members.items()
            }

    # -- which parameters the optimizer owns ------------------------------------------------
    def trainable(self) -> list[tuple[str, list[torch.nn.Parameter]]]:
        """``(role, parameters)`` per optimizer group: every member's adapter, or with ES
        each role's centre."""
        if self.es:
            return [(r, ps) for r, ps in self.centre.items()]
        return [(r, self.policy.params[n]) for r, names in self.members.items() for n in names]

    def _perturb(self, name: str, sd: float) -> None:
        with torch.no_grad():
            for p in _lora(self.policy, name, "lora_B"):
                noise = torch.randn(p.shape, generator=self.gen, dtype=p.dtype)
                p.add_(sd * noise.to(p.device))

    # -- rollout sampling and fitness -------------------------------------------------------
    def draw(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """Member of each role for each of ``n`` rollouts (stored as this step's assignment).

        ``uniform``: rollout i uses member ``i mod K`` in every role (no random numbers);
        ``fitness``: independent draws per role and rollout from softmax(EMA reward / T),
        members not yet rewarded counting as the best one seen (uniform at the start).
        """
        out = {}
        for role in self.members:
            if self.k == 1 or self.cfg.sampling == "uniform":
                out[role] = np.arange(n) % self.k
                continue
            f = self.fitness[role]
            f = np.where(np.isnan(f), np.nanmax(f) if np.isfinite(f).any() else 0.0, f)
            w = np.exp((f - f.max()) / self.cfg.temperature)
            out[role] = rng.choice(self.k, size=n, p=w / w.sum())
        self.assignment = out
        return out

    def observe(self, role: str, reward: np.ndarray) -> None:
        """Update the members' EMA reward from this step's per-rollout rewards (N,)."""
        if self.k == 1:
            return
        a = self.assignment[role][: reward.size]
        d = self.cfg.ema_decay
        for k in range(self.k):
            got = reward[a == k]
            if got.size == 0:
                continue
            m = float(got.mean())
            old = self.fitness[role][k]
            self.fitness[role][k] = m if np.isnan(old) else d * old + (1 - d) * m

    # -- evolution strategies ---------------------------------------------------------------
    def es_begin(self) -> None:
        """Draw each role's antithetic noise and set member ``2j``/``2j+1`` to
        ``centre +- es_sigma * eps_j``."""
        sigma = self.cfg.es_sigma
        with torch.no_grad():
            for role, names in self.members.items():
                centre = self.centre[role]
                self.eps[role] = []
                for j in range(self.k // 2):
                    eps = [torch.randn(c.shape, generator=self.gen, dtype=c.dtype) for c in centre]
                    self.eps[role].append(eps)
                    for sign, name in ((1.0, names[2 * j]), (-1.0, names[2 * j + 1])):
                        for p, c, e in zip(self.policy.params[name], centre, eps, strict=True):
                            p.copy_(c + sign * sigma * e.to(c.device))

    def es_gradient(self, role: str, reward: np.ndarray) -> None:
        """Set the centre's ``.grad`` to minus the ES estimate of the reward gradient.

        ``g = 1 / (K sigma) * sum_k u_k s_k eps_k`` with ``u`` the centred ranks of the
        members' mean rewards over the rollouts the role trains on (``reward`` (n,), the
        first n of this step's assignment) and ``s_k = +1`` for ``2j``, ``-1`` for
        ``2j + 1``; a member without rollouts gets the mean fitness.
        """
        a = self.assignment[role][: reward.size]
        fit = np.array([reward[a == k].mean() if (a == k).any() else np.nan for k in range(self.k)])
        fit = np.where(np.isnan(fit), np.nanmean(fit), fit)
        u = rank_weights(fit)
        scale = 1.0 / (self.k * self.cfg.es_sigma)
        for i, c in enumerate(self.centre[role]):
            g = torch.zeros_like(c)
            for j, eps in enumerate(self.eps[role]):
                g += float(u[2 * j] - u[2 * j + 1]) * eps[i].to(c.device)
            c.grad = -scale * g

    def centre_to_members(self) -> None:
        """Copy each role's centre into all its members (evaluation measures the centre)."""
        with torch.no_grad():
            for role, names in self.members.items():
                for name in names:
                    for p, c in zip(self.policy.params[name], self.centre[role], strict=True):
                        p.copy_(c)

    # -- PBT-style exploit / explore --------------------------------------------------------
    def maybe_exploit(self, step: int, opt: torch.optim.Optimizer, rng: np.random.Generator) -> int:
        """After step ``step`` (0-based), every ``exploit_every`` steps: in each role the
        weakest ``exploit_frac`` of the members (EMA reward) copy a random member of the
        strongest ``exploit_frac`` (parameters and AdamW state) and perturb their LoRA B by
        ``explore_noise``. Returns the number of members replaced."""
        every = self.cfg.exploit_every
        if self.k < 2 or self.es or every == 0 or (step + 1) % every != 0:
            return 0
        n = max(1, int(self.k * self.cfg.exploit_frac))
        done = 0
        for role, names in self.members.items():
            f = self.fitness[role]
            if np.isnan(f).any():
                continue  # not every member has been rewarded yet
            order = np.argsort(f, kind="stable")
            losers, winners = order[:n], order[-n:]
            for lo in losers:
                src = names[int(winners[int(rng.integers(n))])]
                dst = names[int(lo)]
                with torch.no_grad():
                    for p, q in zip(self.policy.params[dst], self.policy.params[src], strict=True):
                        p.copy_(q)
                        if q in opt.state:
                            opt.state[p] = copy.deepcopy(opt.state[q])
                        else:
                            opt.state.pop(p, None)
                self._perturb(dst, self.cfg.explore_noise)
                self.fitness[role][lo] = f[winners].mean()
                done += 1
        self.exploits += done
        return done

    # -- checkpoint -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything to resume exactly (fitness, generator, ES centres)."""
        return {
            "fitness": {r: v.copy() for r, v in self.fitness.items()},
            "gen": self.gen.get_state(),
            "centre": {r: [c.detach().clone() for c in cs] for r, cs in self.centre.items()},
            "exploits": self.exploits,
        }

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Inverse of :meth:`state` (None: a checkpoint written before pools had state)."""
        if state is None:
            return
        self.fitness = {r: np.asarray(v, float).copy() for r, v in state["fitness"].items()}
        self.gen.set_state(state["gen"])
        self.exploits = int(state["exploits"])
        with torch.no_grad():
            for r, cs in state["centre"].items():
                for c, t in zip(self.centre[r], cs, strict=True):
                    c.copy_(t.to(c.device))
