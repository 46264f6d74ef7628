"""The training knobs of the competence model's mechanisms: policy lag (``rl.staleness``,
``rl.is_cap``), forgetting (``rl.weight_decay``) and the ``--feedback`` shortcut.

The config and edge-controller tests are torch-free; the others run the micro preset.
"""

from __future__ import annotations

import json

import pytest

from llm_runs.config import ConfigError, NetworkConfig, TrainConfig


def _torch():
    pytest.importorskip("peft")
    return pytest.importorskip("torch")


# -- config -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value", "msg"),
    [
        ("staleness", -1, "rl.staleness"),
        ("staleness", 1.5, "rl.staleness"),
        ("staleness", True, "rl.staleness"),
        ("is_cap", 0.5, "rl.is_cap"),
        ("is_cap", float("nan"), "rl.is_cap"),
        ("weight_decay", -0.1, "rl.weight_decay"),
        ("weight_decay", "x", "rl.weight_decay"),
    ],
)
def test_knob_validation_names_the_field(field, value, msg):
    with pytest.raises(ConfigError, match=msg):
        TrainConfig.from_dict({"rl": {field: value}})


def test_knobs_round_trip_json():
    cfg = TrainConfig.from_dict({"rl": {"staleness": 4, "is_cap": 3.0, "weight_decay": 0.05}})
    back = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    assert (back.rl.staleness, back.rl.is_cap, back.rl.weight_decay) == (4, 3.0, 0.05)
    d = TrainConfig().rl
    assert (d.staleness, d.is_cap, d.weight_decay) == (0, 2.0, 0.0)


# -- feedback: spec and controller (torch-free) -----------------------------------------
def _hill(x, sign, K, n):
    u = (x / K) ** n
    return u / (1 + u) if sign > 0 else 1 / (1 + u)


@pytest.mark.parametrize("sign", [-1, 1])
def test_feedback_edges_regulate_upstream_by_downstream_ema(sign):
    from llm_runs._edges import EdgeController
    from simulate.spec import resolve_spec

    spec = resolve_spec("C1", "AND", feedback=sign, feedback_K=0.3)
    fb = {e.key: e for e in spec.edges if e.source == "Z"}
    assert set(fb) == {"Z->X", "Z->Y"}
    assert all(e.sign == sign and e.K == 0.3 for e in fb.values())
    net = NetworkConfig(spec=spec.to_dict(), default_weight=0.8)
    net.validate("network")
    ctl = EdgeController(spec, net)
    for _ in range(5):  # only Z learns: X's regulation follows Z's EMA alone
        ctl.update({"X": 0.0, "Y": 0.0, "Z": 1.0})
    assert ctl.ema["Z"] == pytest.approx(1 - 0.9**5, rel=1e-12)  # the raw EMA
    assert ctl.estimate("Z") == pytest.approx(1.0, rel=1e-12)  # bias-corrected: Z's value
    g = _hill(1.0, sign, 0.3, fb["Z->X"].n)
    assert ctl.factors()["X"]["coupling"] == pytest.approx(1 - 0.8 + 0.8 * g, rel=1e-12)
    low = EdgeController(spec, net)  # Z not yet competent: the opposite extreme
    hi_x, lo_x = ctl.factors()["X"]["coupling"], low.factors()["X"]["coupling"]
    assert (hi_x < lo_x) if sign < 0 else (hi_x > lo_x)


def test_feedback_flag_puts_edges_in_the_manifest(tmp_path, micro_cfg):
    _torch()
    from llm_runs.__main__ import main
    from llm_runs.config import save_config
    from llm_runs.runlog import read_manifest
    from simulate.spec import resolve_spec

    micro_cfg.update(steps=1, eval_every=1, ckpt_every=0)
    micro_cfg["rl"]["warmup_steps"] = 1
    save_config(TrainConfig.from_dict(micro_cfg), tmp_path / "c.json")
    out = tmp_path / "run"
    argv = ["train", "--config", str(tmp_path / "c.json"), "--motif", "C1", "--out", str(out)]
    rc = main([*argv, "--feedback", "-1", "--feedback-K", "0.3", "--no-progress"])
    assert rc == 0
    man = read_manifest(out)
    own = TrainConfig.from_dict(micro_cfg).network.network_spec()  # C1 with the run's K, n
    want = resolve_spec(own, feedback=-1, feedback_K=0.3).to_dict()
    assert man["spec"] == want
    assert man["config"]["network"]["spec"] == want
    fb = [e for e in man["spec"]["edges"] if e["source"] == "Z"]
    assert {(e["target"], e["sign"], e["K"]) for e in fb} == {("X", -1, 0.3), ("Y", -1, 0.3)}


def test_feedback_K_without_feedback_is_an_error(tmp_path, capsys):
    from llm_runs.__main__ import main

    rc = main(["train", "--out", str(tmp_path / "r"), "--feedback-K", "0.3"])
    assert rc == 2
    assert capsys.readouterr().err.startswith("error: --feedback-K")


# -- policy lag ---------------------------------------------------------------------------
def _state(micro_cfg, **rl):
    _torch()
    from llm_runs._train import _setup

    micro_cfg["rl"].update(warmup_steps=0, batch=4, **rl)
    st, _ = _setup(TrainConfig.from_dict(micro_cfg), progress=False)
    return st


def _same(a, b):
    return all(bool((a[n][k] == b[n][k]).all()) for n in a for k in a[n]) and a.keys() == b.keys()


def test_staleness_samples_from_the_adapter_k_steps_old(micro_cfg, monkeypatch):
    _torch()
    from llm_runs._steps import rl_step

    k = 2
    # the micro base earns no reward yet: an entropy bonus makes the adapters move anyway
    st = _state(micro_cfg, staleness=k, lr=0.05, entropy_coef=0.5)
    pol = st.policy
    names = {id(p): n for n, p in pol.model.named_parameters()}
    seen: list[tuple[str, dict]] = []
    orig = type(pol).generate

    def spy(self, agent, enc, n_new, **kw):
        if not kw.get("greedy", True):
            seen.append((agent, {names[id(p)]: p.detach().clone() for p in self.params[agent]}))
        return orig(self, agent, enc, n_new, **kw)

    monkeypatch.setattr(type(pol), "generate", spy)
    history = []
    n_adapter = sum(p.numel() for ps in pol.params.values() for p in ps)
    for s in range(5):
        history.append(pol.adapter_state())
        seen.clear()
        rl_step(st, s, pulse=False, pulse_mode="flip", log_kl=False)
        behaviour = history[max(0, s - k)]
        assert {a for a, _ in seen} == set(st.roles)
        for agent, params in seen:
            assert _same({agent: params}, {agent: behaviour[agent]}), (s, agent)
        if s >= k:  # the lag is real: the adapter has moved since
            assert not _same(history[s], behaviour)
        held = list(st.ring.snaps)
        assert len(held) == min(s + 1, k)
        for snap, want in zip(held, history[max(0, s + 1 - k) : s + 1], strict=True):
            snap_named = {
                a: {names[id(p)]: t for p, t in zip(pol.params[a], ts, strict=True)}
                for a, ts in snap.items()
            }
            assert _same(snap_named, want)
    # memory: exactly k snapshots of adapter tensors, nothing of the base
    assert st.ring.n_params() == k * n_adapter
    lora = {(tuple(p.shape), p.dtype) for ps in pol.params.values() for p in ps}
    assert all(
        (tuple(t.shape), t.dtype) in lora for s in st.ring.snaps for ts in s.values() for t in ts
    )
    assert st.ring.n_bytes() == k * sum(
        p.numel() * p.element_size() for ps in pol.params.values() for p in ps
    )


def _moved_state(micro_cfg, k=2, steps=3, pool=1, batched=True):
    """A lagged state after a few steps: snapshots in the ring differ from the adapters."""
    from llm_runs._steps import rl_step

    micro_cfg["pool_size"] = pool
    micro_cfg["pool"] = {"batched": batched}
    st = _state(micro_cfg, staleness=k, lr=0.05, entropy_coef=0.5, temperature=0.7)
    for s in range(steps):
        rl_step(st, s, pulse=False, pulse_mode="flip", log_kl=False)
    return st


def test_sampling_pass_logp_equals_a_separate_forward_under_the_snapshot(micro_cfg):
    torch = _torch()
    from llm_runs._staleness import use_snapshot

    st = _moved_state(micro_cfg)
    pol, snap = st.policy, st.ring.snaps[0]
    assert not _same(
        {"X": {str(i): t for i, t in enumerate(snap["X"])}},
        {"X": {str(i): p.detach() for i, p in enumerate(pol.params["X"])}},
    )
    before = pol.adapter_state()
    enc = pol.encode(["12+34=", "7+5=", "99+1=", "3+3="] * 4)
    for temp in (1.0, 0.7):
        g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        with use_snapshot(pol, "X", snap):
            ids, logp = pol.generate(
                "X", enc, 5, greedy=False, temperature=temp, generator=g1, with_logp=True
            )
            plain = pol.generate("X", enc, 5, greedy=False, temperature=temp, generator=g2)
            with torch.no_grad():
                want, _, _ = pol.token_logprobs(enc, ids, temperature=temp)
        assert torch.equal(ids, plain)  # scoring does not change what is sampled
        assert logp.dtype == torch.float32 and logp.shape == ids.shape
        assert torch.allclose(logp, want, rtol=0, atol=1e-5), float((logp - want).abs().max())
        with torch.no_grad():  # and it is the snapshot's, not the current adapter's
            now, _, _ = pol.token_logprobs(enc, ids, temperature=temp)
        assert float((now - want).abs().max()) > 1e-3
    assert _same(pol.adapter_state(), before)  # the swap restored the adapters bit for bit


@pytest.mark.parametrize(("pool", "batched"), [(1, True), (2, True), (2, False)])
def test_rl_step_behaviour_logp_match_the_snapshot_forward(micro_cfg, monkeypatch, pool, batched):
    """Every behaviour log-prob the loss gets, on sampled rows and re-encoded ones alike."""
    torch = _torch()
    from llm_runs import _member_update, _steps
    from llm_runs._staleness import use_snapshot

    st = _moved_state(micro_cfg, pool=pool, batched=batched)
    pol = st.policy
    orig = _member_update._behaviour_logp
    checked = []

    def check(st_, name, stale, enc, comp, sampled, idx):
        with torch.no_grad(), use_snapshot(pol, name, stale):
            want, _, _ = pol.token_logprobs(enc, comp, temperature=0.7)
        got = orig(st_, name, stale, enc, comp, sampled, idx)
        assert torch.allclose(got, want, rtol=0, atol=1e-5), float((got - want).abs().max())
        checked.append(name)
        # a row whose scored tokens are not the sampled ones (e.g. a special token dropped
        # by decoding) is scored by a forward, never given the sampled row's log-probs
        other = comp.clone()
        other[0] = (other[0] + 1 - 3) % (pol.tok.vocab_size - 3) + 3
        got2 = orig(st_, name, stale, enc, other, sampled, idx)
        with torch.no_grad(), use_snapshot(pol, name, stale):
            want2, _, _ = pol.token_logprobs(enc, other, temperature=0.7)
        assert torch.allclose(got2, want2, rtol=0, atol=1e-5)
        assert torch.equal(got2[1:], got[1:])
        return got

    monkeypatch.setattr(_member_update, "_behaviour_logp", check)
    for s in range(3, 6):
        _steps.rl_step(st, s, pulse=False, pulse_mode="flip", log_kl=False)
    names = [n for ns in st.members.values() for n in ns]
    assert len(names) == pool * len(st.roles)
    assert set(checked) == set(names) and len(checked) == 3 * len(names)


def test_importance_weights_one_on_policy_and_capped():
    torch = _torch()
    from llm_runs._rl import importance_weights, policy_loss

    g = torch.Generator().manual_seed(0)
    logp = -torch.rand(6, 3, generator=g, dtype=torch.float64)
    assert torch.equal(importance_weights(logp, logp.clone(), 2.0), torch.ones_like(logp))
    behaviour = logp + torch.linspace(-2, 2, 18, dtype=torch.float64).reshape(6, 3)
    w = importance_weights(logp, behaviour, 2.0)
    want = torch.minimum(torch.exp(logp - behaviour), torch.tensor(2.0, dtype=torch.float64))
    assert torch.allclose(w, want, rtol=1e-12) and float(w.max()) == 2.0
    # the truncated-IS surrogate's gradient is w * adv * d logp / N T (score-function oracle)
    x = logp.clone().requires_grad_(True)
    adv = torch.linspace(-1, 1, 6, dtype=torch.float64)
    loss, _ = policy_loss(x, behaviour, adv, clip=None, is_cap=2.0)
    loss.backward()
    assert x.grad is not None
    assert torch.allclose(x.grad, -(w * adv[:, None]) / x.numel(), rtol=1e-12)
    # on-policy with the cap: the same loss and gradient as the plain surrogate
    y1, y2 = logp.clone().requires_grad_(True), logp.clone().requires_grad_(True)
    l1, _ = policy_loss(y1, logp.detach(), adv, clip=None)
    l2, _ = policy_loss(y2, logp.detach(), adv, clip=None, is_cap=2.0)
    l1.backward()
    l2.backward()
    assert torch.equal(l1, l2) and torch.equal(y1.grad, y2.grad)  # type: ignore[arg-type]


def _log(cfg, out):
    from llm_runs._train import train
    from llm_runs.runlog import COMPETENCE_FILE

    return (train(TrainConfig.from_dict(cfg), out, progress=False) / COMPETENCE_FILE).read_bytes()


def test_staleness_zero_leaves_the_log_unchanged(tmp_path, micro_cfg):
    _torch()
    import copy

    # an entropy bonus at a large step moves the adapters enough to change what the lagged
    # run samples, even where the micro base earns no reward yet (a zero advantage)
    micro_cfg["rl"].update(entropy_coef=0.5, lr=0.05)
    plain = copy.deepcopy(micro_cfg)
    zero = copy.deepcopy(micro_cfg)
    zero["rl"].update(staleness=0, weight_decay=0.0, is_cap=5.0)
    lagged = copy.deepcopy(micro_cfg)
    lagged["rl"]["staleness"] = 2
    a = _log(plain, tmp_path / "plain")
    assert a == _log(zero, tmp_path / "zero")
    assert a != _log(lagged, tmp_path / "lagged")  # the knob does act


def test_staleness_resume_is_exact(tmp_path, micro_cfg):
    _torch()
    from llm_runs import runlog
    from llm_runs._train import CKPT_FILE, train

    micro_cfg.update(steps=8, eval_every=2, ckpt_every=3)
    micro_cfg["rl"].update(staleness=2, warmup_steps=1, lr=0.05, entropy_coef=0.5)
    run = tmp_path / "run"
    full = _log(micro_cfg, run)
    assert (run / CKPT_FILE).exists()  # taken after step 6 (next step 6), ring inside
    runlog.update_manifest(run, status="running")  # as if killed after its last checkpoint
    train(None, run, resume=True, progress=False)
    assert (run / runlog.COMPETENCE_FILE).read_bytes() == full


# -- forgetting ---------------------------------------------------------------------------
@pytest.mark.parametrize("wd", [0.0, 0.5])
def test_weight_decay_shrinks_adapters_by_closed_form(micro_cfg, wd):
    torch = _torch()
    from llm_runs._steps import _clip_and_step

    st = _state(micro_cfg, weight_decay=wd)
    lr = 0.02
    params = [p for ps in st.policy.params.values() for p in ps]
    start = [p.detach().clone() for p in params]
    steps = 5
    for _ in range(steps):
        for group in st.opt.param_groups:
            group["lr"] = lr
        for p in params:  # no learning signal: only the decay acts
            p.grad = torch.zeros_like(p)
        _clip_and_step(st)
    factor = (1 - lr * wd) ** steps
    for p, p0 in zip(params, start, strict=True):
        if wd == 0:
            assert torch.equal(p.detach(), p0)
        else:
            assert torch.allclose(p.detach(), p0 * factor, rtol=1e-5, atol=0)
    norm = torch.sqrt(sum((p.detach().double() ** 2).sum() for p in params))
    norm0 = torch.sqrt(sum((p.double() ** 2).sum() for p in start))
    assert float(norm / norm0) == pytest.approx(factor, rel=1e-5)
