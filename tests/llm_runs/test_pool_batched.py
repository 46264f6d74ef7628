"""Issue 33 §5: a pool's members in one mixed batch (``pool.batched``, the default) against
one batch per member (``pool.batched: false``, the old path): the same forward, gradients,
sampled tokens and random stream, and a whole run's log the same (micro model, CPU)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from llm_runs.config import ConfigError, TrainConfig

pytest.importorskip("torch")
pytest.importorskip("peft")
import torch

# -- config -----------------------------------------------------------------------------


def test_batched_is_a_validated_config_field_that_round_trips():
    cfg = TrainConfig.from_dict({"pool_size": 4, "pool": {"batched": False}})
    assert cfg.pool.batched is False and TrainConfig().pool.batched is True
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ConfigError, match=r"pool\.batched"):
        TrainConfig.from_dict({"pool": {"batched": "yes"}})


# -- the mixed block against each member's own batch ---------------------------------------
NAMES = ["A_0", "A_1", "A_2"]


@pytest.fixture
def pol(base_cache):
    from llm_runs import get_task
    from llm_runs._base_model import get_base
    from llm_runs._policy import MultiAdapter

    task = get_task("math")
    base = get_base(task, preset="micro", cache=base_cache, steps=30, batch=32)
    pol = MultiAdapter(base, [*NAMES, "other"], r=4, alpha=8, seed=0)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():  # B starts at zero: give every adapter its own update
        for ps in pol.params.values():
            for p in ps:
                p.add_(0.3 * torch.randn(p.shape, generator=g))
    return pol


PROMPTS = ["12+34=", "7+5=", "99+1=", "3+3=", "40+2=", "8+13=", "1+1="]
ASSIGN = np.array([2, 0, 1, 0, 2, 2, 0])


def _per_member(pol, comp):
    """Log-probs (rows in input order) and each member's gradient of its mean log-prob."""
    logp = torch.empty(comp.shape)
    grads = {}
    for k, name in enumerate(NAMES):
        idx = np.nonzero(ASSIGN == k)[0]
        pol.activate(name)
        lp, _, _ = pol.token_logprobs(pol.encode([PROMPTS[i] for i in idx]), comp[idx])
        pol.backward(name, -lp.mean())
        logp[idx] = lp.detach()
        grads[name] = [p.grad.clone() for p in pol.params[name]]
        for p in pol.params[name]:
            p.grad = None
    return logp, grads


@pytest.mark.parametrize("flag", [True, False], ids=["layer-flag", "peft-switch"])
def test_mixed_block_gives_each_row_its_members_logp_and_each_member_its_gradient(
    pol, monkeypatch, flag
):
    """Forward and gradient agree with one batch per member to float32 rounding (other
    padding widths and batch shapes, batched matmuls): 1e-5 in log-probs, 1e-5 relative in
    gradients. Gradients reach the members with rows only (a member without rows keeps
    ``.grad`` None, so AdamW skips it as the per-member path does), and peft's active
    adapter is back after; both with the layers' own flag and with peft's public switch (a
    peft without that flag)."""
    from llm_runs import _mixed
    from llm_runs._mixed import mixed_members

    if not flag:
        monkeypatch.setattr(_mixed, "_FLAG", "_no_such_flag")

    comp = torch.tensor(
        [[3, 4, 5], [6, 7, 8], [9, 3, 4], [5, 5, 5], [4, 6, 8], [7, 3, 3], [8, 8, 4]]
    )
    want, want_grads = _per_member(pol, comp)
    pol.activate("other")
    with mixed_members(pol, [*NAMES, "other"], ASSIGN, train=True):  # "other": no rows
        logp, _, _ = pol.token_logprobs(pol.encode(PROMPTS), comp)
        rows = [torch.as_tensor(np.nonzero(ASSIGN == k)[0]) for k in range(len(NAMES))]
        torch.stack([-logp[r].mean() for r in rows]).sum().backward()
    torch.testing.assert_close(logp.detach(), want, rtol=0, atol=1e-5)
    for name in NAMES:
        for p, g in zip(pol.params[name], want_grads[name], strict=True):
            torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-7)
    assert all(p.grad is None for p in pol.params["other"])
    assert all(p.requires_grad for p in pol.params["other"])  # "other" is active again
    assert not any(p.requires_grad for n in NAMES for p in pol.params[n])
    # outside the block the adapters are peft's again: "other" alone, as before
    with torch.no_grad():
        plain, _, _ = pol.token_logprobs(pol.encode(PROMPTS[:2]), comp[:2])
        with mixed_members(pol, ["other"], np.zeros(2, int), train=False):
            routed, _, _ = pol.token_logprobs(pol.encode(PROMPTS[:2]), comp[:2])
    torch.testing.assert_close(routed, plain, rtol=0, atol=1e-5)


def test_exponential_race_is_torch_multinomials_own_draw():
    """The premise of :func:`member_noise`: ``torch.multinomial(p, 1)`` is ``argmax(p / q)``
    with ``q`` Exp(1) noise drawn like ``p`` from the generator, bit for bit (a torch
    upgrade that changes this fails here first)."""
    for shape in [(4, 17), (32, 40), (1, 5)]:
        p = torch.softmax(torch.randn(shape, generator=torch.Generator().manual_seed(1)), -1)
        g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        a = torch.multinomial(p, 1, generator=g1).squeeze(1)
        b = (p / torch.empty_like(p).exponential_(1, generator=g2)).argmax(-1)
        assert torch.equal(a, b) and torch.equal(g1.get_state(), g2.get_state())


def test_mixed_sampling_draws_the_per_member_tokens_and_stream(pol, monkeypatch):
    from llm_runs import _mixed

    enc_of = {k: pol.encode([PROMPTS[i] for i in np.nonzero(ASSIGN == k)[0]]) for k in range(3)}
    g1, g2 = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    want = torch.empty((len(PROMPTS), 6), dtype=torch.long)
    want_lp = torch.empty((len(PROMPTS), 6))
    for k, name in enumerate(NAMES):  # the per-member path: member by member
        ids, lp = pol.generate(name, enc_of[k], 6, greedy=False, generator=g1, with_logp=True)
        want[np.nonzero(ASSIGN == k)[0]], want_lp[np.nonzero(ASSIGN == k)[0]] = ids, lp
    enc = pol.encode(PROMPTS)
    ids, lp = _mixed.generate_mixed(
        pol, NAMES, enc, ASSIGN, 6, greedy=False, temperature=1.0, generator=g2
    )
    assert torch.equal(ids, want)
    torch.testing.assert_close(lp, want_lp, rtol=0, atol=1e-5)
    assert torch.equal(g1.get_state(), g2.get_state())
    # over the noise budget: step-by-step sampling, valid tokens, another stream
    monkeypatch.setattr(_mixed, "NOISE_BUDGET", 0)
    ids2, lp2 = _mixed.generate_mixed(
        pol, NAMES, enc, ASSIGN, 6, greedy=False, temperature=1.0, generator=g2
    )
    assert ids2.shape == ids.shape and bool((lp2 <= 0).all())


# -- whole runs -------------------------------------------------------------------------
def _parity_gold(self, role, problem, upstream):
    """A verifiable reward that depends on every sampled character (the micro base earns
    no real reward): an output whose character codes sum to an even number is right.
    Without the role's output (pretraining demos) the task's own gold."""
    from llm_runs._math import MathTask

    out = upstream.get(role)
    if out is None:
        return MathTask.__dict__["_orig_local_gold"](self, role, problem, upstream)
    return out if sum(map(ord, out)) % 2 == 0 else None


EXACT = ("competence", "members", "reward", "reward_std", "pool_fitness", "ema", "lr", "n_eval")
TOL = 1e-6


@pytest.mark.parametrize(
    ("k", "pool", "rl"),
    [
        (4, {"init_noise": 0.02}, {"kl_coef": 0.1}),
        (3, {"sampling": "fitness", "init_noise": 0.02, "exploit_every": 2}, {"staleness": 1}),
        (2, {"init_noise": 0.02}, {"algo": "ppo", "ppo_epochs": 2, "entropy_coef": 0.1}),
    ],
    ids=["grad-uniform-kl", "fitness-pbt-stale", "ppo"],
)
def test_batched_pool_logs_equal_the_per_member_logs(tmp_path, micro_cfg, monkeypatch, k, pool, rl):
    """Same seed, pool trained with ``batched`` true and false: the logs agree.

    Sampling draws the same random numbers in the same order (``member_noise``), so the
    rollouts, rewards, fitness, exploit choices and greedy evaluations (competences) are
    identical and compared exactly. Losses, entropies and KLs are float32 means computed
    from other batch shapes and padding widths, and the gradients that move the adapters
    differ by float rounding too: they agree within 1e-6 (absolute; losses here are
    O(1) or less, so about ten float32 ulps).
    """
    from llm_runs._math import MathTask
    from llm_runs._train import train
    from llm_runs.runlog import read_run

    monkeypatch.setattr(MathTask, "_orig_local_gold", MathTask.local_gold, raising=False)
    monkeypatch.setattr(MathTask, "local_gold", _parity_gold)
    micro_cfg.update(steps=6, eval_every=2, ckpt_every=100, pool_size=k)
    micro_cfg["rl"].update(warmup_steps=2, lr=0.05, group=2, **rl)
    logs = {}
    for batched in (False, True):
        d = copy.deepcopy(micro_cfg)
        d["pool"] = dict(pool, batched=batched)
        logs[batched] = read_run(
            train(TrainConfig.from_dict(d), tmp_path / str(batched), progress=False)
        )
    old, new = logs[False], logs[True]
    assert [r["accuracy"] for r in old.e2e_rows] == [r["accuracy"] for r in new.e2e_rows]
    assert len(old.agent_rows) == len(new.agent_rows) == 3 * 4
    assert any(r.get("reward") for r in new.agent_rows)  # the parity reward pays
    for a, b in zip(old.agent_rows, new.agent_rows, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if key in ("loss", "entropy", "kl") and a[key] is not None:
                assert b[key] == pytest.approx(a[key], rel=0, abs=TOL), (key, a, b)
            elif key in EXACT:
                assert a[key] == b[key], (key, a, b)
