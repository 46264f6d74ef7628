"""The training signals of a run log (``signals.jsonl``, schema 3): the estimators against
closed forms, row validation and the reader, and what a micro run writes."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from llm_runs import runlog
from llm_runs._signal_log import SignalWriter, read_signals, signal_row, validate_signal_row
from llm_runs._signals import SIGNALS, SIGNALS_FILE
from llm_runs.config import ConfigError, TrainConfig


def _torch():
    pytest.importorskip("peft")
    return pytest.importorskip("torch")


# -- estimators -------------------------------------------------------------------------
def test_ess_against_its_formula_and_limits():
    torch = _torch()
    from llm_runs._signal_meter import ess

    assert ess(torch.zeros(16)) == pytest.approx(1.0, abs=1e-12)  # equal weights
    assert ess(torch.tensor([0.0, -800.0, -800.0, -800.0])) == pytest.approx(0.25, rel=1e-9)
    w = np.random.default_rng(0).lognormal(0.0, 1.5, 200)
    want = w.sum() ** 2 / (w.size * (w**2).sum())
    assert ess(torch.tensor(np.log(w))) == pytest.approx(want, rel=1e-9)
    assert ess(torch.tensor(np.log(w) + 700.0)) == pytest.approx(want, rel=1e-9)  # no overflow
    assert math.isnan(ess(torch.tensor([0.0, float("nan")])))


def test_k3_estimator_averages_to_the_categorical_kl():
    """On tokens drawn from p, mean(exp(q) - q - 1) with q = log q(x) - log p(x) estimates
    KL(p || q) = sum p log(p / q)."""
    torch = _torch()
    from llm_runs._signal_meter import k3_kl

    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(12))
    q = 0.7 * p + 0.3 * rng.dirichlet(np.ones(12))
    x = rng.choice(12, size=(400, 500), p=p)
    got = k3_kl(torch.tensor(np.log(q[x])), torch.tensor(np.log(p[x])))
    kl = float(np.sum(p * np.log(p / q)))
    assert got == pytest.approx(kl, rel=0.03)
    same = torch.tensor(np.log(p[x]))
    assert k3_kl(same, same) == 0.0


def test_zero_std_share_counts_tied_groups():
    from llm_runs._signal_meter import zero_std_share

    r = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.5])
    assert zero_std_share(r, 2) == 0.75
    assert zero_std_share(r, 4) == 0.0
    assert zero_std_share(r, 1) is None


def test_clip_and_step_measures_the_gradient_before_clipping_and_the_update(micro_cfg):
    torch = _torch()
    from llm_runs._steps import _clip_and_step
    from llm_runs._train import _setup

    d = copy.deepcopy(micro_cfg)
    d["rl"].update(grad_clip=1e-3)
    st, _ = _setup(TrainConfig.from_dict(d), progress=False)
    assert st.meter is not None
    st.meter.begin()
    gen = torch.Generator().manual_seed(0)
    groups = st.pool.trainable()
    want = {}
    for role, ps in groups:
        grads = [torch.randn(p.shape, generator=gen) for p in ps]
        for p, g in zip(ps, grads, strict=True):
            p.grad = g
        want[role] = math.sqrt(sum(float(g.square().sum()) for g in grads))
    before = {r: [p.detach().clone() for p in ps] for r, ps in groups}
    _clip_and_step(st)
    for role, ps in groups:
        pairs = zip(ps, before[role], strict=True)
        moved = math.sqrt(sum(float(((p.detach() - b) ** 2).sum()) for p, b in pairs))
        v = st.meter.values[role]
        assert v["grad_norm"] == pytest.approx(want[role], rel=1e-5)  # not the clipped 1e-3
        assert v["update_norm"] == pytest.approx(moved, rel=1e-5) and moved > 0


# -- rows, writer and reader ------------------------------------------------------------
def test_rows_hold_every_signal_and_non_finite_values_become_null():
    row = signal_row(3, "X", "rl", {"grad_norm": float("nan"), "ess": 0.5, "kl": float("inf")})
    assert list(row) == ["step", "agent", "phase", *SIGNALS]
    assert row["grad_norm"] is None and row["kl"] is None and row["ess"] == 0.5
    assert validate_signal_row(row) is row
    with pytest.raises(ValueError, match="unknown signal"):
        signal_row(1, "X", "rl", {"gradnorm": 1.0})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"step": 0}, "'step' must be an int >= 1"),
        ({"step": 1.0}, "'step' must be an int >= 1"),
        ({"agent": ""}, "'agent'"),
        ({"phase": "ppo"}, "'phase'"),
        ({"ess": 1.5}, "'ess' must be in"),
        ({"grad_norm": -1.0}, "'grad_norm' must be >= 0"),
        ({"entropy": "1.0"}, "'entropy' must be a finite number or null"),
        ({"policy_kl": True}, "'policy_kl' must be a finite number or null"),
    ],
)
def test_bad_rows_are_refused_naming_the_field(change, message):
    row = {**signal_row(1, "X", "rl", {"ess": 1.0}), **change}
    with pytest.raises(runlog.RunLogError, match=message):
        validate_signal_row(row, "signals.jsonl:1")


def _write(folder, steps, agents=("X", "Y")):
    w = SignalWriter(folder)
    for s in steps:
        w.write([signal_row(s, a, "rl", {"grad_norm": s + i}) for i, a in enumerate(agents)])
    w.close()
    return folder / SIGNALS_FILE


def test_reader_wide_and_long_tables(tmp_path):
    _write(tmp_path, [1, 2, 3])
    wide = read_signals(tmp_path, agents=["X", "Y"])
    assert list(wide.columns) == ["step", "agent", "phase", *SIGNALS]
    assert wide["step"].tolist() == [1, 2, 3, 1, 2, 3] and wide["agent"].tolist()[:3] == ["X"] * 3
    assert wide["grad_norm"].tolist() == [1.0, 2.0, 3.0, 2.0, 3.0, 4.0]
    assert wide["ess"].isna().all()
    long = read_signals(tmp_path, wide=False)
    assert set(long["signal"]) == {"grad_norm"} and len(long) == 6
    empty = read_signals(tmp_path / "nothing")
    assert empty.empty and list(empty.columns) == list(wide.columns)


def test_reader_drops_a_torn_tail_and_refuses_what_is_malformed(tmp_path):
    file = _write(tmp_path, [1, 2])
    text = file.read_text()
    file.write_text(text + json.dumps(signal_row(3, "X", "rl", {}))[:20])
    with pytest.warns(runlog.RunLogWarning, match="torn last line"):
        assert read_signals(tmp_path, agents=["X", "Y"])["step"].max() == 2
    with pytest.raises(runlog.RunLogError, match="strict"):
        read_signals(tmp_path, strict=True)
    file.write_text(text + json.dumps(signal_row(3, "X", "rl", {})) + "\n")  # Y missing
    with pytest.warns(runlog.RunLogWarning, match="incomplete last step 3"):
        assert len(read_signals(tmp_path, agents=["X", "Y"])) == 4
    lines = text.splitlines(keepends=True)
    for bad, message in [
        ([lines[0], lines[0], *lines[1:]], "duplicated row for step 1"),
        ([lines[2], lines[0]], "step 1 after step 2"),
        (["{", *lines], r"signals.jsonl:1: not valid JSON"),
        ([lines[0], *lines[2:]], "step 1 has no row for \\['Y'\\]"),
    ]:
        file.write_text("".join(bad))
        with pytest.raises(runlog.RunLogError, match=message):
            read_signals(tmp_path, agents=["X", "Y"])
    file.write_text(text)
    with pytest.raises(runlog.RunLogError, match="not in manifest agents"):
        read_signals(tmp_path, agents=["X"])


def test_writer_never_replaces_a_log_and_a_resume_drops_rows_past_the_checkpoint(tmp_path):
    file = _write(tmp_path, [1, 2, 3, 4])
    with pytest.raises(runlog.RunLogError, match="already exists"):
        SignalWriter(tmp_path)
    file.write_text(file.read_text() + '{"step": 5, "ag')  # a killed writer's torn line
    SignalWriter(tmp_path, resume_from_step=2).close()
    assert read_signals(tmp_path, strict=True)["step"].max() == 2
    assert file.read_text().endswith("\n")


def test_the_switch_is_a_boolean():
    assert TrainConfig.from_dict({"signals": False}).signals is False
    with pytest.raises(ConfigError, match="signals: must be true or false"):
        TrainConfig.from_dict({"signals": 1})


# -- a micro run ------------------------------------------------------------------------
def test_a_run_logs_every_step_and_agent_and_signals_do_not_change_it(tmp_path, micro_cfg):
    """Signals only observe: the competence log is the same with them off. With
    ``rl.staleness`` 2 every RL step samples from adapters the warm-up has moved since, so
    the importance weights differ from 1."""
    _torch()
    from llm_runs import get_task
    from llm_runs._train import train

    d = copy.deepcopy(micro_cfg)
    d["rl"].update(staleness=2, lr=0.05)
    on = train(TrainConfig.from_dict(d), tmp_path / "on", progress=False)
    off = train(TrainConfig.from_dict({**d, "signals": False}), tmp_path / "off", progress=False)
    log = runlog.read_run(on)
    assert log.manifest["schema_version"] == runlog.SCHEMA_VERSION == 3
    sig = log.signals()
    assert sig["step"].tolist() == [1, 2, 3, 4, 5, 6] * 3
    assert sig["phase"].tolist()[:6] == ["sft", "sft", "rl", "rl", "rl", "rl"]
    rl = sig[sig["phase"] == "rl"]
    for name in ("grad_norm", "update_norm", "policy_kl", "entropy", "ess", "reward_mean"):
        assert rl[name].notna().all(), name
    assert (rl["update_norm"] > 0).all() and (rl["entropy"] > 0).all()
    assert (rl["response_length"] >= 1).all()
    assert (rl["response_length"] <= max(get_task("math").out_len.values())).all()
    assert ((rl["ess"] > 0) & (rl["ess"] < 1.0)).all()
    assert set(rl.loc[rl["kl"].notna(), "step"]) == {3, 6}  # KL to the base: before an eval
    sft = sig[sig["phase"] == "sft"]
    assert sft[["grad_norm", "update_norm", "entropy"]].notna().all().all()
    assert sft[["policy_kl", "ess", "reward_mean", "response_length"]].isna().all().all()
    assert (off / runlog.COMPETENCE_FILE).read_bytes() == (on / runlog.COMPETENCE_FILE).read_bytes()
    assert not (off / SIGNALS_FILE).exists() and runlog.read_run(off).signals().empty


def test_a_run_that_does_not_move_has_no_update_and_no_policy_kl(tmp_path, micro_cfg):
    _torch()
    from llm_runs._train import train

    d = copy.deepcopy(micro_cfg)
    d["rl"].update(lr=1e-30, weight_decay=0.0, warmup_steps=0)
    d.update(steps=3, eval_every=3)
    sig = runlog.read_run(train(TrainConfig.from_dict(d), tmp_path / "r", progress=False)).signals()
    assert (sig["update_norm"] < 1e-20).all()
    # float32 log-probs of one batch scored in two batch shapes differ by rounding, ~1e-7
    assert (sig["policy_kl"] < 1e-10).all()
    assert (sig["ess"] == 1.0).all()
