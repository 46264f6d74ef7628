"""The glue of the peer benchmarks (benchmarks/_peers_calibrate.py, benchmarks/_peer_trl.py):
the peers' log density is calibrate's, the shared starts are the same points in each
coordinate system, and the table's ESS and ratios are arviz's / hand computations. Runs of
the peers themselves are skipped where the ``bench`` extra is not installed; no timings are
asserted (speed lives in the benchmarks)."""

from __future__ import annotations

import sys
from pathlib import Path

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal
from calibrate import FlatParams, SamplingCoords, draws_to_z, neg_log_joint_and_grad

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _peers_calibrate as pc
from _bench_posterior import TRUTH


@pytest.fixture(scope="module")
def post() -> cal.Posterior:
    """A small C1 model (2 runs x 20 points) with the prior median as its 'MAP'."""
    d = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(0), steps=np.linspace(0, 295, 20).round(), runs=2
    )
    cfg = cal.FitConfig(chains=2, samples=40, warmup=40, solver="quad", dt=5.0)
    cm = cal.build_model(d, "C1", cfg)
    names = cm.sites()
    z0 = {n: np.zeros(sh) for n, sh in names.items()}
    stats = {"diverging": np.zeros((1, 1), bool), "num_steps": np.zeros((1, 1), np.int64)}
    samples = {n: np.zeros((1, 1, *sh)) for n, sh in names.items()}
    return cal.Posterior(cm, samples, stats, z0)


def _points(post: cal.Posterior, n: int = 3) -> np.ndarray:
    P = FlatParams(post.model).size
    return 0.3 * np.random.default_rng(1).standard_normal((n, P))


def test_peer_density_is_calibrates_in_z(post):
    pb = pc.problem(post, "z", np.zeros((2, FlatParams(post.model).size)))
    vg = jax.jit(jax.value_and_grad(pb.logdensity))
    for x in _points(post):
        v, g = vg(jnp.asarray(x))
        nv, ng = neg_log_joint_and_grad(post.model, jnp.asarray(x))
        assert abs(float(v) + float(nv)) <= 1e-10 * max(1.0, abs(float(nv)))
        np.testing.assert_allclose(np.asarray(g), -np.asarray(ng), rtol=1e-10, atol=1e-10)


def test_peer_density_in_w_is_the_change_of_variables(post):
    """log p_w(w) = log p_z(z(w)) + log |det dz/dw|, the log det checked by autodiff."""
    pz = pc.problem(post, "z", np.zeros((2, FlatParams(post.model).size)))
    pw = pc.problem(post, "w", np.zeros((2, FlatParams(post.model).size)))
    assert not pw.coords.identity
    to_z = jax.jit(lambda v: pw.coords.to_z(v)[0])
    jac = jax.jit(jax.jacfwd(lambda v: pw.coords.to_z(v)[0]))
    lz, lw = jax.jit(pz.logdensity), jax.jit(pw.logdensity)
    for w in _points(post):
        w = jnp.asarray(w)
        logdet = np.linalg.slogdet(np.asarray(jac(w)))[1]
        want = float(lz(to_z(w))) + logdet
        got = float(lw(w))
        assert abs(got - want) <= 1e-9 * max(1.0, abs(want))


def test_shared_starts_are_the_same_points_in_both_spaces(post):
    starts_w, cov = pc.laplace_starts(post, jax.random.key(3))
    P = FlatParams(post.model).size
    assert starts_w.shape == (2, P) and cov.shape == (P, P)
    assert np.all(np.isfinite(starts_w)) and not np.allclose(starts_w[0], starts_w[1])
    np.testing.assert_allclose(cov, cov.T)
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    pz = pc.problem(post, "z", starts_w)
    pw = pc.problem(post, "w", starts_w)
    np.testing.assert_array_equal(pw.starts, starts_w)
    np.testing.assert_allclose(pz.starts, np.asarray(draws_to_z(pw.coords, starts_w)))
    # and back: w(z(starts)) = starts
    coords = SamplingCoords.build(post.model)
    back = np.stack([np.asarray(coords.from_z(jnp.asarray(z))) for z in pz.starts])
    np.testing.assert_allclose(back, starts_w, atol=1e-8)
    with pytest.raises(ValueError, match="space"):
        pc.problem(post, "q", starts_w)


def test_summary_row_against_arviz_and_hand_counts(post):
    """min bulk ESS over the named parameters = arviz's, gradients per ESS by hand."""
    P = FlatParams(post.model).size
    rng = np.random.default_rng(0)
    C, S = 4, 200
    x = np.zeros((C, S, P))
    for t in range(1, S):  # AR(1) chains: ESS well below C x S
        x[:, t] = 0.7 * x[:, t - 1] + 0.3 * rng.standard_normal((C, P))
    steps = rng.integers(1, 20, (C, S))
    div = np.zeros((C, S), bool)
    div[0, :3] = True
    pb = pc.problem(post, "z", np.zeros((C, P)))
    row = pc.summarize("m", pb, x, div, steps, 2.0, 4.0)
    post2 = cal.Posterior(
        post.model,
        {k: np.asarray(v) for k, v in cal.unflatten(post.model, jnp.asarray(x)).items()},
        {"diverging": div, "num_steps": steps},
        post.map_params,
    )
    names = list(post2.summary())
    ess = {}
    for n in names:
        a = np.asarray(post2.summary()[n]["ess_bulk"])
        ess[n] = float(a)
    worst = min(ess, key=ess.__getitem__)
    assert row["worst"] == worst and row["ess"] == pytest.approx(ess[worst], rel=1e-12)
    # one global site read straight from the draws: arviz's bulk ESS of that column
    rho_x = post.model.layout.names.index("rho[X]")
    direct = float(az.ess(x[:, :, rho_x], method="bulk"))
    assert ess["rho[X]"] == pytest.approx(direct, rel=1e-6)
    assert row["divergences"] == 3
    assert row["grads"] == steps.sum()
    assert row["grads_per_ess"] == pytest.approx(steps.sum() / row["ess"])
    assert row["ess_per_s"] == pytest.approx(row["ess"] / 4.0)
    assert row["ess_per_s_total"] == pytest.approx(row["ess"] / 6.0)
    assert 1.0 < row["ess"] < C * S


def test_table_ratios_by_hand():
    base = {"space": "w", "r_hat": 1.0, "divergences": 0, "worst": "a"}
    rows = [
        base | {"method": "calibrate", "compile_s": 10.0, "sample_s": 10.0, "ess": 1000.0},
        base | {"method": "nutpie", "compile_s": float("nan"), "sample_s": 40.0, "ess": 800.0},
    ]
    rows[0] |= {"ess_per_s": 100.0, "ess_per_s_total": 50.0, "grads_per_ess": 20.0}
    rows[1] |= {"ess_per_s": 20.0, "ess_per_s_total": 20.0, "grads_per_ess": 10.0}
    t = pc.table(rows, load="1.0 2.0 3.0").splitlines()
    assert t[1].split()[0] == "calibrate" and "x" not in t[1]
    tail = t[2].split()
    # calibrate's ESS/s over the peer's: 100/20 and 50/20; ESS per gradient: 10/20
    assert tail[-3:] == ["5.00x", "2.50x", "0.50x"]
    assert "incl." in t[2]
    assert t[-1].endswith("1.0 2.0 3.0")
    assert pc.ratio(1.0, 0.0) == float("inf")
    assert np.isnan(pc.ratio(float("nan"), 1.0))


def test_available_names_the_three_peers():
    have = pc.available()
    assert set(have) == {"nutpie", "blackjax", "numpyro"}
    assert have["numpyro"]  # a core dependency


@pytest.mark.slow  # compiles a NUTS program per sampler (make test-slow)
@pytest.mark.parametrize("peer", ["calibrate", "numpyro", "nutpie", "blackjax"])
def test_peer_runs_on_the_shared_starts(post, peer):
    """A short run of calibrate's program and of each installed peer: finite draws of the
    right shape, counted gradients (nutpie and blackjax skipped without the bench extra)."""
    pytest.importorskip(peer)
    starts_w, cov = pc.laplace_starts(post, jax.random.key(3))
    pb = pc.problem(post, "w", starts_w)
    run = {
        "calibrate": lambda pb, seed: pc.run_calibrate(pb, cov, seed),
        "numpyro": pc.run_numpyro,
        "nutpie": pc.run_nutpie,
        "blackjax": pc.run_blackjax,
    }[peer]
    row = run(pb, 0)
    assert row["method"] == peer and row["space"] == "w"
    assert np.isfinite(row["ess"]) and row["ess"] > 0
    assert row["grads"] >= 2 * 40  # at least one leapfrog step per draw


# -- TRL glue (benchmarks/_peer_trl.py) ------------------------------------------------------


def test_trl_tokenizer_has_the_projects_ids():
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    import _peer_trl as pt

    from llm_runs import CharTokenizer

    tok = CharTokenizer()
    hf = pt.hf_tokenizer(tok)
    for text in ["X012|03+04=", "Z01+02|003|003+004=", " 0a+-|>"]:
        ids = hf(pt.BOS + text, add_special_tokens=False)["input_ids"]
        assert ids == [tok.bos_id, *tok.encode(text)]
        assert hf.decode(ids, skip_special_tokens=True) == tok.decode(ids) == text
    assert (hf.pad_token_id, hf.bos_token_id, hf.eos_token_id) == (
        tok.pad_id,
        tok.bos_id,
        tok.eos_id,
    )
    assert hf.padding_side == "left"


def test_trl_rows_and_reward_are_the_tasks():
    import _peer_trl as pt

    from llm_runs import get_task
    from llm_runs._tasks import split_of

    task = get_task("math")
    for role in task.roles:
        rows = pt.role_prompts(task, role, 20, seed=0)
        reward = pt.role_reward(task, role)
        assert len(rows) == 20 and all(r["prompt"].startswith(pt.BOS) for r in rows)
        golds = [r["gold"] for r in rows]
        # a completion is scored on its first out_len characters against the gold
        got = reward(
            [r["prompt"] for r in rows],
            [g + "xyz" for g in golds[:10]] + ["999" if g != "999" else "998" for g in golds[10:]],
            golds,
        )
        assert got == [1.0] * 10 + [0.0] * 10
    # the rows are training problems with their gold upstream: Y's gold is X's gold + c
    p = task.sample(np.random.default_rng([0, 31, 1]), 1, split="train")[0]
    row = pt.role_prompts(task, "Y", 1, seed=0)[0]
    assert split_of(p.key) == "train"
    assert row == {
        "prompt": pt.BOS + task.prompt("Y", p, task.gold_upstream("Y", p)),
        "gold": p.gold["Y"],
    }


@pytest.mark.slow  # a TRL trainer's first step (make test-slow)
def test_trl_trainer_steps_on_a_micro_base(tmp_path):
    """One GRPO step of a role's TRL trainer on an untrained micro GPT-2 (no download):
    only the LoRA weights train, and the probe scorer runs."""
    pytest.importorskip("trl")
    import _peer_trl as pt
    import torch

    from llm_runs import CharTokenizer, build_model, get_task

    torch.manual_seed(0)
    tok = CharTokenizer()
    task = get_task("math")
    model = build_model("micro", tok.vocab_size)
    hf = pt.hf_tokenizer(tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer, timer = pt.make_trainer(
        model,
        hf,
        task,
        "X",
        steps=1,
        prompts_per_step=2,
        group=2,
        lr=1e-2,
        r=4,
        alpha=8,
        seed=0,
        out_dir=str(tmp_path),
    )
    trainer.train()
    assert len(timer.times) == 1
    # the caller's model is untouched (the trainer wraps a copy)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    names = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert names and all("lora" in n for n in names)
    acc = pt.probe_competence(trainer.model, hf, task, task.probes("X", 4, seed=0))
    assert 0.0 <= acc <= 1.0
    assert pt.trainable_bytes(trainer.model, trainer.optimizer) > 0


def test_missing_peers_are_reported_not_fatal(monkeypatch, capsys):
    """Without the bench extra: the peers read as unavailable, and ``bench_llm --peer trl``
    prints one line naming the extra and returns normally."""
    import importlib.util

    real = importlib.util.find_spec
    hidden = {"nutpie", "blackjax", "trl"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a)
    )
    assert pc.available() == {"nutpie": False, "blackjax": False, "numpyro": True}
    import bench_llm

    monkeypatch.setattr(sys, "argv", ["bench_llm.py", "--peer", "trl"])
    bench_llm.main()
    out = capsys.readouterr().out
    assert "TRL is not installed" in out and ".[bench]" in out
