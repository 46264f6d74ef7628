"""Credit assignment, corruption, advantages and the clipped surrogate (no model)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
import torch

from llm_runs._rl import advantages, assign_credit, corrupt, policy_loss


def test_credit_modes():
    e2e = np.array([1.0, 0.0])
    local = {"X": np.array([1.0, 1.0]), "Y": np.array([0.0, 1.0]), "Z": np.array([1.0, 0.0])}
    agents = ["X", "Y", "Z"]
    shared = assign_credit(e2e, local, agents, mode="shared")
    assert all((v == e2e).all() for v in shared.values())
    role = assign_credit(e2e, local, agents, mode="role")
    assert (role["Y"] == local["Y"]).all()
    disc = assign_credit(e2e, local, agents, mode="discounted", discount=0.5)
    assert disc["X"][0] == 0.25 and disc["Y"][0] == 0.5 and disc["Z"][0] == 1.0
    with pytest.raises(ValueError):
        assign_credit(e2e, local, agents, mode="nope")


def test_corrupt():
    r = np.array([1.0, 0.0, 1.0])
    assert (corrupt(r, "flip", np.random.default_rng(0)) == [0.0, 1.0, 0.0]).all()
    rnd = corrupt(np.ones(1000), "random", np.random.default_rng(0))
    assert 0.4 < rnd.mean() < 0.6


def test_advantages():
    r = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    adv, mean = advantages(r, algo="reinforce", group=1, baseline=0.5)
    assert np.allclose(adv, r - 0.5) and mean == pytest.approx(0.5)
    g, _ = advantages(r, algo="grpo", group=3, baseline=0.0)
    assert np.allclose(g.reshape(2, 3).mean(1), 0.0, atol=1e-6)
    assert g[0] > 0 > g[1] and g[3] < 0 < g[4]
    p, _ = advantages(r, algo="ppo", group=1, baseline=0.5)
    assert p.std() == pytest.approx(1.0, rel=1e-3)


def test_ppo_clip_stops_gradient_outside_the_trust_region():
    old = torch.zeros(1, 2)
    logp = torch.full((1, 2), 0.5, requires_grad=True)  # ratio e^0.5 > 1 + clip
    loss, _ = policy_loss(logp, old, torch.tensor([1.0]), clip=0.2)
    loss.backward()
    assert logp.grad is not None and torch.all(logp.grad == 0)
    logp2 = torch.zeros(1, 2, requires_grad=True)
    loss2, kl = policy_loss(
        logp2, old, torch.tensor([1.0]), clip=None, ref_logp=torch.zeros(1, 2), kl_coef=0.1
    )
    loss2.backward()
    assert logp2.grad is not None and torch.all(logp2.grad < 0)  # raise prob of adv > 0
    assert kl is not None and float(kl.detach()) == pytest.approx(0.0)
