"""Several adapters on one base: gradients reach every adapter (the peft trap), and
only its own; generation; the edges' Hill regulation."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
import torch

from llm_runs import get_task
from llm_runs._base_model import get_base
from llm_runs._edges import EdgeController
from llm_runs._policy import MultiAdapter
from llm_runs.config import EdgeConfig, NetworkConfig


@pytest.fixture
def policy(base_cache):
    task = get_task("math")
    base = get_base(task, preset="micro", cache=base_cache, steps=30, batch=32)
    return task, MultiAdapter(base, ["X", "Y", "Z"], r=4, alpha=8, seed=0)


def test_gradients_reach_every_adapter_and_only_it(policy):
    task, pol = policy
    probs = task.sample(np.random.default_rng(0), 4)
    before = {a: [p.detach().clone() for p in ps] for a, ps in pol.params.items()}
    opt = torch.optim.SGD([p for ps in pol.params.values() for p in ps], lr=0.5)
    # the trap: after set_adapter("Z") peft freezes X and Y; a naive optimizer built from
    # requires_grad params would miss them.
    pol.activate("Z")
    frozen = [a for a in ("X", "Y") if not any(p.requires_grad for p in pol.params[a])]
    assert frozen == ["X", "Y"]
    for role in ("X", "Y", "Z"):
        enc = pol.encode([task.prompt(role, p, task.gold_upstream(role, p)) for p in probs])
        comp = torch.tensor([pol.tok.encode(p.gold[role]) for p in probs])
        pol.activate(role)
        logp, _, _ = pol.token_logprobs(enc, comp)
        before_grads = {a: [p.grad for p in ps] for a, ps in pol.params.items() if a != role}
        pol.backward(role, -logp.mean())
        for a, grads in before_grads.items():  # other adapters untouched by this backward
            assert all(
                (g0 is None and p.grad is None) or torch.equal(g0, p.grad)
                for g0, p in zip(grads, pol.params[a], strict=True)
            )
    for a, ps in pol.params.items():
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in ps), a
    opt.step()
    for a, ps in pol.params.items():
        assert any(not torch.equal(p, q) for p, q in zip(ps, before[a], strict=True)), a


def test_untrained_adapters_equal_base_and_generate(policy):
    task, pol = policy
    probs = task.sample(np.random.default_rng(1), 3)
    enc = pol.encode([task.prompt("X", p, {}) for p in probs])
    comp = pol.generate("X", enc, 3)
    assert comp.shape == (3, 3)
    pol.activate("X")
    with torch.no_grad():
        lp, _, _ = pol.token_logprobs(enc, comp)
        with pol.base_only():
            ref, _, _ = pol.token_logprobs(enc, comp)
    torch.testing.assert_close(lp, ref)  # LoRA B starts at zero
    g1 = torch.Generator().manual_seed(3)
    g2 = torch.Generator().manual_seed(3)
    s1 = pol.generate("Y", enc, 3, greedy=False, generator=g1)
    s2 = pol.generate("Y", enc, 3, greedy=False, generator=g2)
    assert torch.equal(s1, s2)


@pytest.mark.parametrize(("motif", "rising"), [("C1", True), ("I1", False)])
def test_edge_regulation_follows_sign(motif, rising):
    net = NetworkConfig(motif=motif, K=0.5, n=4.0, default_weight=1.0)
    ctl = EdgeController(net.network_spec(), net)
    ctl.ema.update({"X": 1.0, "Y": 0.1})
    low = ctl.factors()["Z"]["coupling"]
    ctl.ema["Y"] = 1.0
    high = ctl.factors()["Z"]["coupling"]
    assert (high > low) == rising
    assert ctl.factors()["X"]["coupling"] == 1.0  # an input: no regulators


def test_edge_ema_is_bias_corrected_and_resumes():
    """After k updates of a constant v the controllers see v itself (the raw EMA is
    v(1 - d^k)); the count travels with the checkpoint, and a checkpoint without it (made
    before the correction) resumes uncorrected."""
    net = NetworkConfig(motif="C1", K=0.5, n=4.0, default_weight=1.0, ema_decay=0.9)
    ctl = EdgeController(net.network_spec(), net)
    for k in range(1, 4):
        ctl.update({"X": 0.6, "Y": 0.3, "Z": 0.2})
        assert ctl.ema["X"] == pytest.approx(0.6 * (1 - 0.9**k), rel=1e-12)
        assert ctl.estimate("X") == pytest.approx(0.6, rel=1e-12)
    g = 0.6**4 / (0.6**4 + 0.5**4)
    assert ctl.factors()["Y"]["coupling"] == pytest.approx(g, rel=1e-12)
    again = EdgeController(net.network_spec(), net)
    again.load_state(ctl.state())
    assert again.factors() == ctl.factors()
    old = EdgeController(net.network_spec(), net)
    old.load_state({a: v for a, v in ctl.state().items() if a != "_updates"})
    assert old.estimate("X") == pytest.approx(0.6 * (1 - 0.9**3), rel=1e-12)


def test_edge_mechanisms_per_edge():
    net = NetworkConfig(
        motif="C1",
        default_mechanism="coupling",
        edges={"X->Y": EdgeConfig("budget", 0.8), "Y->Z": EdgeConfig("credit", 0.5)},
    )
    ctl = EdgeController(net.network_spec(), net)
    ctl.ema.update({"X": 0.0, "Y": 1.0})
    f = ctl.factors()
    assert f["Y"]["budget"] == pytest.approx(0.2) and f["Y"]["coupling"] == 1.0
    assert f["Z"]["credit"] == pytest.approx(0.5 * 16 / 17)
    assert f["Z"]["coupling"] == pytest.approx(0.1)  # X->Z coupling, X incompetent


def test_pretraining_ignores_the_callers_thread_count(tmp_path):
    """One cache key, one set of weights: the base is pretrained on PRETRAIN_THREADS
    thread(s) whatever torch's setting (2 threads summed in another order and drifted:
    final loss 0.84 vs 0.78 over the tiny preset's 2000 steps); the setting is restored."""
    import torch
    from safetensors.torch import load_file

    from llm_runs import get_task
    from llm_runs._base_model import PRETRAIN_THREADS, pretrain_base

    before = torch.get_num_threads()
    weights = []
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            out = pretrain_base(get_task("math"), tmp_path / f"b{n}", preset="tiny", steps=3)
            assert torch.get_num_threads() == n  # restored
            meta = json.loads((out / "agentmotifs_base.json").read_text())
            assert meta["threads"] == PRETRAIN_THREADS
            weights.append(load_file(str(out / "model.safetensors")))
    finally:
        torch.set_num_threads(before)
    assert weights[0].keys() == weights[1].keys()
    for k in weights[0]:
        assert torch.equal(weights[0][k], weights[1][k]), k
