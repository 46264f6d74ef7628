"""Pool-of-Agents options: member start noise, fitness sampling, evolution strategies, the
PBT-style exploit step, their log fields and exact resume (micro model)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from llm_runs.config import ConfigError, TrainConfig


def _torch():
    pytest.importorskip("peft")
    return pytest.importorskip("torch")


# -- config -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"pool_size": 3, "pool": {"update": "es"}}, "pool_size"),
        ({"pool_size": 2, "pool": {"update": "es"}, "rl": {"staleness": 1}}, "rl.staleness"),
        ({"pool_size": 2, "pool": {"update": "es", "sampling": "fitness"}}, "pool.sampling"),
        ({"pool_size": 2, "pool": {"update": "es", "exploit_every": 5}}, "pool.exploit_every"),
        ({"pool": {"update": "sgd"}}, "pool.update"),
        ({"pool": {"init_noise": -0.1}}, "pool.init_noise"),
        ({"pool": {"temperature": 0}}, "pool.temperature"),
        ({"pool": {"exploit_frac": 0.9}}, "pool.exploit_frac"),
        ({"pool": {"ema_decay": 1.0}}, "pool.ema_decay"),
    ],
)
def test_bad_pool_configs_name_the_field(data, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        TrainConfig.from_dict(data)


def test_pool_config_round_trips_and_old_configs_load():
    cfg = TrainConfig.from_dict({"pool_size": 4, "pool": {"update": "es", "es_sigma": 0.05}})
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    old = cfg.to_dict()
    del old["pool"]  # a config written before the pool section existed
    assert TrainConfig.from_dict(old).pool == TrainConfig().pool


def test_cli_bad_pool_setting_is_one_error_line(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "llm_runs", "train", "--out", str(tmp_path / "r"),
         "--set", "pool_size=3", "--set", "pool.update=es"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "pool_size" in lines[0]


# -- the pieces against oracles ---------------------------------------------------------
def test_rank_weights_equal_scipy_rankdata():
    from llm_runs._pool import rank_weights

    rng = np.random.default_rng(0)
    for k in (2, 4, 8):
        f = rng.integers(0, 4, size=k).astype(float)  # ties on purpose
        want = (stats.rankdata(f) - 1) / (k - 1) - 0.5
        np.testing.assert_allclose(rank_weights(f), want, atol=1e-12)
        assert abs(rank_weights(f).sum()) < 1e-12


def _state(micro_cfg, k, **pool):
    _torch()
    from llm_runs._train import _setup

    d = copy.deepcopy(micro_cfg)
    d["rl"].update(warmup_steps=0, batch=8)
    d.update(pool_size=k, pool=pool)
    st, _ = _setup(TrainConfig.from_dict(d), progress=False)
    return st


def test_init_noise_perturbs_only_lora_b_with_that_sd(micro_cfg):
    torch = _torch()
    sd = 0.05
    st = _state(micro_cfg, 2, init_noise=sd)
    named = dict(st.policy.model.named_parameters())
    b = [p for n, p in named.items() if ".X_0." in n and "lora_B" in n]
    vals = torch.cat([p.detach().flatten() for p in b]).numpy()
    # B starts at zero, so the B entries are the noise: a normal(0, sd) sample
    assert abs(vals.std() - sd) < 4 * sd / np.sqrt(2 * vals.size)
    assert stats.kstest(vals / sd, "norm").pvalue > 1e-3
    plain = _state(micro_cfg, 2)
    named0 = dict(plain.policy.model.named_parameters())
    for n, p in named.items():  # the A matrices are untouched
        if "lora_A" in n:
            assert torch.equal(p, named0[n])


def test_fitness_sampling_draws_members_with_softmax_probabilities(micro_cfg):
    st = _state(micro_cfg, 4, sampling="fitness", temperature=0.2)
    fit = np.array([0.1, 0.3, 0.2, 0.6])
    for r in st.roles:
        st.pool.fitness[r] = fit.copy()
    n = 40000
    draws = st.pool.draw(np.random.default_rng(1), n)
    p = np.exp(fit / 0.2) / np.exp(fit / 0.2).sum()
    for r in st.roles:
        counts = np.bincount(draws[r], minlength=4)
        assert stats.chisquare(counts, n * p).pvalue > 1e-3
    uniform = _state(micro_cfg, 4).pool.draw(np.random.default_rng(1), 10)
    assert list(uniform["X"]) == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]


def test_fitness_is_the_ema_of_each_members_mean_reward(micro_cfg):
    st = _state(micro_cfg, 2, ema_decay=0.5)
    st.pool.draw(np.random.default_rng(0), 4)  # uniform: members 0, 1, 0, 1
    st.pool.observe("X", np.array([1.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(st.pool.fitness["X"], [0.5, 0.0])
    st.pool.observe("X", np.array([1.0, 1.0, 1.0, 1.0]))
    np.testing.assert_allclose(st.pool.fitness["X"], [0.75, 0.5])


def test_es_gradient_equals_the_antithetic_rank_formula(micro_cfg):
    torch = _torch()
    k, sigma = 4, 0.03
    st = _state(micro_cfg, k, update="es", es_sigma=sigma)
    pool = st.pool
    pool.es_begin()
    names = st.members["Y"]
    for j in range(k // 2):  # members are centre +- sigma eps_j
        for p, c, e in zip(st.policy.params[names[2 * j]], pool.centre["Y"], pool.eps["Y"][j],
                           strict=True):  # fmt: skip
            torch.testing.assert_close(p.detach(), c.detach() + sigma * e, rtol=0, atol=1e-6)
    pool.draw(np.random.default_rng(0), 8)  # uniform: rollout i uses member i mod 4
    reward = np.array([0.0, 1.0, 0.5, 0.25, 0.0, 1.0, 0.5, 0.75])
    pool.es_gradient("Y", reward)
    fit = np.array([reward[i::k].mean() for i in range(k)])
    u = (stats.rankdata(fit) - 1) / (k - 1) - 0.5
    for i, c in enumerate(pool.centre["Y"]):
        want = sum(u[m] * (1 if m % 2 == 0 else -1) * pool.eps["Y"][m // 2][i] for m in range(k))
        torch.testing.assert_close(c.grad, -want / (k * sigma), rtol=1e-6, atol=1e-9)


def test_es_estimate_points_up_the_gradient_of_a_quadratic(micro_cfg):
    """Averaged over draws, the ES estimate aligns with the true gradient of
    f(theta) = -|theta - t|^2: cosine > 0.1 over 8192 parameters, where a random direction
    has cosine sd 1/sqrt(8192) = 0.011 (so 9 sd), and the sign is that of ascent."""
    torch = _torch()
    st = _state(micro_cfg, 8, update="es", es_sigma=0.05)
    pool = st.pool
    params = pool.centre["X"]
    target = [torch.full_like(p, 0.3) for p in params]

    def f(ps):
        return -sum(float(((p.detach() - t) ** 2).sum()) for p, t in zip(ps, target, strict=True))

    pairs = zip(params, target, strict=True)
    true = torch.cat([(2 * (t - p.detach())).flatten() for p, t in pairs])
    total = torch.zeros_like(true)
    for _ in range(100):
        pool.es_begin()
        pool.draw(np.random.default_rng(0), 8)
        pool.es_gradient("X", np.array([f(st.policy.params[n]) for n in st.members["X"]]))
        total -= torch.cat([c.grad.flatten() for c in params])  # .grad is minus the ascent
    cos = float(total @ true / (total.norm() * true.norm()))
    assert cos > 0.1


def test_exploit_copies_winners_and_their_optimizer_state(micro_cfg):
    torch = _torch()
    st = _state(micro_cfg, 4, exploit_every=2, exploit_frac=0.25, explore_noise=0.0)
    for r in st.roles:
        st.pool.fitness[r] = np.array([0.9, 0.1, 0.5, 0.4])
    for ps in st.policy.params.values():  # give every member distinct weights and Adam state
        for p in ps:
            p.grad = torch.randn_like(p)
    st.opt.step()
    assert st.pool.maybe_exploit(0, st.opt, st.rng) == 0  # not an exploit step
    assert st.pool.maybe_exploit(1, st.opt, st.rng) == 3  # one member per role
    for p, q in zip(st.policy.params["X_1"], st.policy.params["X_0"], strict=True):
        assert torch.equal(p, q)
        assert torch.equal(st.opt.state[p]["exp_avg"], st.opt.state[q]["exp_avg"])
        assert st.opt.state[p]["exp_avg"] is not st.opt.state[q]["exp_avg"]
    assert not torch.equal(st.policy.params["X_2"][0], st.policy.params["X_0"][0])


# -- whole runs -------------------------------------------------------------------------
def _log(cfg, out):
    from llm_runs._train import train
    from llm_runs.runlog import COMPETENCE_FILE

    return (train(TrainConfig.from_dict(cfg), out, progress=False) / COMPETENCE_FILE).read_bytes()


@pytest.mark.parametrize(
    "pool",
    [
        {"sampling": "fitness", "init_noise": 0.02, "exploit_every": 2, "explore_noise": 0.01},
        {"update": "es", "es_sigma": 0.05},
    ],
    ids=["grad-fitness-pbt", "es"],
)
def test_pool_run_logs_members_and_resumes_exactly(tmp_path, micro_cfg, pool):
    _torch()
    from llm_runs import runlog
    from llm_runs._train import CKPT_FILE, train
    from llm_runs.runlog import read_run

    micro_cfg.update(steps=7, eval_every=2, ckpt_every=3, pool_size=2, pool=pool)
    micro_cfg["rl"].update(warmup_steps=0, lr=0.05)
    run = tmp_path / "run"
    full = _log(micro_cfg, run)
    log = read_run(run)
    assert log.manifest["schema_version"] == runlog.SCHEMA_VERSION == 3
    last = [r for r in log.agent_rows if r["step"] == 7]
    assert all(len(r["pool_fitness"]) == 2 for r in last)
    assert all(f is not None for r in last for f in r["pool_fitness"])
    if pool.get("update") == "es":
        assert all("members" not in r for r in last)
    else:
        for r in last:
            assert r["competence"] == pytest.approx(np.mean(r["members"]), abs=1e-12)
            assert r["pool_spread"] == pytest.approx(np.std(r["members"]), abs=1e-12)
    assert (run / CKPT_FILE).exists()  # taken after step 6
    signals = (run / runlog.SIGNALS_FILE).read_bytes()
    assert log.signals()["step"].tolist() == [1, 2, 3, 4, 5, 6, 7] * 3
    runlog.update_manifest(run, status="running")  # as if killed after its last checkpoint
    train(None, run, resume=True, progress=False)
    assert (run / runlog.COMPETENCE_FILE).read_bytes() == full
    assert (run / runlog.SIGNALS_FILE).read_bytes() == signals  # steps 7.. regenerated


def test_es_trains_the_centre_and_evaluates_it(tmp_path, micro_cfg):
    torch = _torch()
    from llm_runs._steps import _clip_and_step, evaluate, rl_step
    from llm_runs._train import _setup

    d = copy.deepcopy(micro_cfg)
    d["rl"].update(warmup_steps=0, batch=8, lr=0.05)
    d.update(pool_size=2, pool={"update": "es"})
    st, _ = _setup(TrainConfig.from_dict(d), progress=False)
    rl_step(st, 0, pulse=False, pulse_mode="flip", log_kl=False)
    assert all(p.grad is None for ps in st.policy.params.values() for p in ps)  # no backward
    before = [c.detach().clone() for c in st.pool.centre["X"]]
    st.pool.es_begin()
    st.pool.draw(np.random.default_rng(0), 4)
    st.pool.es_gradient("X", np.array([1.0, 0.0, 1.0, 0.0]))  # member 0 better than 1
    _clip_and_step(st)  # the optimizer owns the centres
    assert all(not torch.equal(c, b) for c, b in zip(st.pool.centre["X"], before, strict=True))
    task = st.task
    probes = {r: task.probes(r, 4, seed=0) for r in st.roles}
    evaluate(st, 1, probes, task.sample(np.random.default_rng(0), 4, split="test"))
    for name in st.members["X"]:  # evaluation measures the centre
        for p, c in zip(st.policy.params[name], st.pool.centre["X"], strict=True):
            assert torch.equal(p, c)


def test_old_schema_1_and_2_logs_still_read(tmp_path, micro_cfg):
    _torch()
    from llm_runs import runlog

    run = tmp_path / "run"
    _log(micro_cfg, run)
    (run / runlog.SIGNALS_FILE).unlink()  # logs before schema 3 have no training signals
    m = json.loads((run / runlog.MANIFEST_FILE).read_text())
    for version in (1, 2):
        m["schema_version"] = version
        (run / runlog.MANIFEST_FILE).write_text(json.dumps(m))
        log = runlog.read_run(run)
        assert log.manifest["schema_version"] == version and log.signals().empty
    m["schema_version"] = 4
    (run / runlog.MANIFEST_FILE).write_text(json.dumps(m))
    with pytest.raises(runlog.RunLogError, match="schema_version"):
        runlog.read_run(run)
