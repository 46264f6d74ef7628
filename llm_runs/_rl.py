"""Credit assignment, spurious-reward corruption, advantages and the policy losses.

Shapes: ``N`` rollouts (``B`` problems x ``G`` group members, problem-major), ``T``
completion tokens. Rewards are per rollout and agent, in [0, 1] before shaping.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["advantages", "assign_credit", "corrupt", "importance_weights", "policy_loss"]


def assign_credit(
    e2e: np.ndarray,
    local: dict[str, np.ndarray],
    agents: Sequence[str],
    *,
    mode: str,
    discount: float = 0.5,
) -> dict[str, np.ndarray]:
    """Per-agent learning rewards from the end-to-end and per-role rewards.

    Args:
        e2e: End-to-end reward per rollout, shape (N,).
        local: Per agent, its own verifiable correctness given its actual inputs, (N,).
        agents: Pipeline order; the last one produces the final answer.
        mode: ``shared`` (every agent gets ``e2e``), ``role`` (its ``local``),
            ``discounted`` (``discount ** hops_to_output * e2e``).
        discount: Per-hop factor of the ``discounted`` mode.

    Returns:
        ``{agent: reward (N,)}``.
    """
    L = len(agents)
    if mode == "shared":
        return {a: e2e.astype(float).copy() for a in agents}
    if mode == "role":
        return {a: local[a].astype(float).copy() for a in agents}
    if mode == "discounted":
        return {a: (discount ** (L - 1 - i)) * e2e.astype(float) for i, a in enumerate(agents)}
    raise ValueError(f"unknown credit mode {mode!r}")


def corrupt(r: np.ndarray, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Spurious reward: ``flip`` (1 - r) or ``random`` (Bernoulli(0.5)) of rewards in [0, 1]."""
    if mode == "flip":
        return 1.0 - r
    if mode == "random":
        return (rng.random(r.shape) < 0.5).astype(float)
    raise ValueError(f"unknown pulse mode {mode!r}")


def advantages(
    r: np.ndarray, *, algo: str, group: int, baseline: float
) -> tuple[np.ndarray, float]:
    """Advantages of one agent's rollouts and its updated-baseline input.

    Args:
        r: Rewards, shape (N,) with ``N = B * group`` (problem-major).
        algo: ``reinforce`` (``r - baseline``), ``grpo`` (``(r - mean_g) / (std_g + 1e-4)``
            within each problem's group of this agent), ``ppo`` (``r - baseline`` divided
            by the batch std).
        group: Group size G.
        baseline: The agent's running (EMA) reward baseline.

    Returns:
        ``(advantages (N,), batch mean reward)``.
    """
    mean = float(r.mean()) if r.size else 0.0
    if algo == "reinforce":
        return r - baseline, mean
    if algo == "grpo":
        g = r.reshape(-1, group)
        adv = (g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + 1e-4)
        return adv.reshape(-1), mean
    if algo == "ppo":
        adv = r - baseline
        return adv / (adv.std() + 1e-4) if adv.size > 1 else adv, mean
    raise ValueError(f"unknown algorithm {algo!r}")


def importance_weights(
    logp: torch.Tensor, behaviour_logp: torch.Tensor, cap: float
) -> torch.Tensor:
    """Truncated per-token importance weights ``min(π/μ, cap)`` (no grad).

    Args:
        logp: Log-probs under the current adapter π.
        behaviour_logp: Log-probs under the adapter μ that sampled the tokens.
        cap: Truncation level (>= 1).
    """
    return torch.exp(logp.detach() - behaviour_logp).clamp(max=cap)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    *,
    clip: float | None,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    is_cap: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-level policy-gradient loss, averaged over tokens then rollouts.

    ``ratio = exp(logp - old_logp)`` per token; the surrogate is ``ratio * adv`` (REINFORCE,
    GRPO: one update per batch, so ratio = 1 and the gradient is the score function) or
    PPO's ``min(ratio * adv, clip(ratio, 1 ± clip) * adv)``. Optional entropy bonus and KL
    penalty to the base (k3 estimator ``exp(q) - q - 1``, ``q = ref_logp - logp``).
    Off-policy (stale) samples without ``clip``: with ``is_cap`` the surrogate is
    ``min(ratio, is_cap) * adv`` with the weight held constant, so the gradient is the score
    function times the truncated importance weight.

    Args:
        logp: (N, T) log-probs under the current adapter (differentiable).
        old_logp: (N, T) log-probs of the sampling policy (no grad).
        adv: (N,) advantages.
        clip: PPO clip range, or None for the plain surrogate.
        entropy: (N, T) per-token entropy (for the bonus).
        entropy_coef: Entropy bonus weight.
        ref_logp: (N, T) base-model log-probs (for the KL).
        kl_coef: KL penalty weight.
        is_cap: Truncation of the importance weights when ``clip`` is None (None: the
            plain surrogate).

    Returns:
        ``(loss scalar, mean per-token KL or None)``.
    """
    ratio = torch.exp(logp - old_logp)
    a = adv[:, None]
    if clip is None and is_cap is not None:
        w = importance_weights(logp, old_logp, is_cap)
        surr = w * torch.exp(logp - logp.detach()) * a
    else:
        surr = ratio * a
    if clip is not None:
        surr = torch.minimum(surr, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
    loss = -surr.mean()
    if entropy is not None and entropy_coef > 0:
        loss = loss - entropy_coef * entropy.mean()
    kl = None
    if ref_logp is not None:
        q = ref_logp - logp
        kl_tok = torch.exp(q) - q - 1
        kl = kl_tok.mean()
        if kl_coef > 0:
            loss = loss + kl_coef * kl
    return loss, kl
