"""Issue 70: logs in the shapes people have (TRL current and older, verl, a per-agent prefix
log, MLflow, TensorBoard), what a reward means, evaluation sizes from the run's arguments,
point kinds, run status, training signals, and one-policy mappings. Every expected value
is the fixture's known function of the step (tests/calibrate/log_shapes.py)."""

import dataclasses
import json
import warnings

import numpy as np
import pytest

import calibrate as cal
from calibrate.__main__ import main

from . import log_shapes as ls

CORRECT = "rewards/correctness_reward/mean"


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _read(path, mapping):
    return cal.load_inputs([path], mapping=mapping)


def _sources(d):
    assert d.sources is not None
    return d.sources


# ---------------------------------------------------------------- §1 what a reward means


def test_a_reward_on_a_known_range_is_read_as_its_share_of_the_range(tmp_path):
    folder = ls.trl_grpo(tmp_path / "grpo")
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))
    steps = list(range(5, 61, 5))
    assert d.table["step"].tolist() == steps
    want = [ls.correctness(s) / 2 for s in steps]
    assert d.table["competence"].to_numpy() == pytest.approx(want, abs=1e-12)
    (src,) = d.sources.to_dict("records")
    assert (src["key"], src["meaning"], src["lo"], src["hi"]) == (CORRECT, "range [0, 2]", 0, 2)
    # the bare key is refused by behaviour, naming the step, and says how to declare it
    with pytest.raises(
        cal.DataError, match=r"not a success rate in \[0, 1\]: 1.02719 at step 20; say"
    ):
        _read(folder, cal.KeyMapping({"X": CORRECT}))
    with pytest.raises(cal.DataError, match=r"not a success rate .* at step 20"):
        _read(folder, cal.KeyMapping({"X": f"{CORRECT}:rate"}))  # declared a rate: still no
    with pytest.raises(cal.DataError, match=r"leaves its range \[0, 1.5\]: 1.52068 at step 45"):
        _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:1.5"}))
    with pytest.raises(cal.ConfigError, match="finite LO < HI"):
        cal.KeyMapping({"X": f"{CORRECT}:2:0"})


def test_a_reward_that_stays_below_one_is_refused_by_its_logged_spread(tmp_path):
    """Early in a run a 0-2 reward stays in [0, 1] (read as a rate it looked plausible); its
    logged std 0.9 is wider than any rate's (0.5), so it is refused; its range reads it."""
    folder = ls.trl_grpo(tmp_path / "early", last=15, checkpoints=(15,))
    assert max(ls.correctness(s) for s in (5, 10, 15)) < 1
    with pytest.raises(cal.DataError, match=r"logged spread 0.9 at step 5, wider than any rate"):
        _read(folder, cal.KeyMapping({"X": CORRECT}))
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))  # spread 0.9 <= 1: a 0-2 reward
    assert d.table["competence"].iloc[0] == pytest.approx(ls.correctness(5) / 2)


@pytest.mark.parametrize(
    "key", ["loss", "kl", "entropy", "completions/mean_length", "frac_reward_zero_std",
            "grad_norm", "learning_rate", "rewards/correctness_reward/std"],
)  # fmt: skip
def test_keys_named_as_no_success_rate_are_refused_unless_forced(tmp_path, key):
    folder = ls.trl_grpo(tmp_path / "grpo")
    with pytest.raises(cal.DataError, match=rf"key '{key}' \(agent X\) is named as no success"):
        _read(folder, cal.KeyMapping({"X": key}, n_eval=8))
    if key in ("frac_reward_zero_std", "entropy"):  # in [0, 1]: forced, read as logged
        d = _read(folder, cal.KeyMapping({"X": key}, n_eval=8, force=True))
        assert d.table["competence"].tolist() == [ls.trl_entry(5)[key]] * 12


def test_a_threshold_on_per_sample_rewards_counts_the_samples(tmp_path):
    log = ls.verl_jsonl(tmp_path / "verl")
    d = _read(log, cal.KeyMapping({"X": "val-aux/openai/gsm8k/score/samples:>=1"}))
    # step s logs s ones and 10 - s zeros: share s / 10 of 10 samples
    assert d.table["competence"].tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert d.table["n_eval"].tolist() == [10] * 5
    assert _sources(d)["meaning"].tolist() == ["share of samples >= 1"]
    d = _read(log, cal.KeyMapping({"X": "val-aux/openai/gsm8k/score/samples:>0.5"}))
    assert d.table["competence"].tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    with pytest.raises(cal.DataError, match="logs no per-sample rewards"):
        _read(log, cal.KeyMapping({"X": "critic/score/mean:>=1"}))


# ---------------------------------------------------------------- §2 sizes and points


def test_trl_evaluation_size_and_window_from_the_training_arguments(tmp_path):
    folder = ls.trl_grpo(tmp_path / "grpo")
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))
    assert set(d.table["n_eval"]) == {ls.TRL_N_EVAL}  # 4 x 2 x 1 x 5
    (src,) = d.sources.to_dict("records")
    assert src["window"] == 5 and src["point"] == "mean of the 5 step(s) ending at step"
    assert "num_generations 4" in src["n_eval_from"] and "logging_steps 5" in src["n_eval_from"]
    # the likelihood compares a window mean at the window's middle: step - 2
    assert d.model_steps().tolist() == [s - 2 for s in range(5, 61, 5)]
    model = cal.build_model(d, "single")
    assert model.ts.tolist() == [float(s - 2) for s in range(5, 61, 5)]
    # the priors' scale comes from the logged steps: a saved fit's table (no windows) gives
    # the same layout when it is loaded
    plain = cal.build_model(cal.CurveData.from_table(d.table), "single")
    assert plain.ts.tolist() == [float(s) for s in range(5, 61, 5)]
    np.testing.assert_array_equal(np.asarray(plain.layout.loc), np.asarray(model.layout.loc))
    # --n-eval overrides, and is said
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}, n_eval=64))
    assert set(d.table["n_eval"]) == {64} and _sources(d)["n_eval_from"].tolist() == ["--n-eval"]
    # arguments that do not determine it: the message says which are missing
    args = {k: v for k, v in ls.TRL_ARGS.items() if k != "num_generations"}
    other = ls.trl_grpo(tmp_path / "other", args=args)
    with pytest.raises(cal.DataError, match=r"lack \['num_generations'\]\); give --n-eval"):
        _read(other, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))


def test_verl_sizes_points_and_config_covariates(tmp_path):
    log = ls.verl_jsonl(tmp_path / "verl", diverge_at=None)
    m = cal.KeyMapping({"X": ls.VAL_KEY, "Y": "critic/score/mean"})
    d = _read(log, m)
    t = d.table
    assert t.loc[t.agent == "X", "step"].tolist() == [0, 2, 4, 6, 8]
    assert t.loc[t.agent == "X", "competence"].tolist() == pytest.approx(
        [ls.accuracy(10 * s) for s in (0, 2, 4, 6, 8)]
    )
    assert t.loc[t.agent == "X", "n_eval"].eq(200).all()  # data.val_max_samples
    assert t.loc[t.agent == "Y", "n_eval"].eq(ls.VERL_TRAIN_N).all()  # 16 prompts x 5
    src = d.sources.set_index("agent")
    assert src.loc["X", "point"] == "evaluation at step" and src.loc["Y", "window"] == 1
    assert d.hyper.loc["ppo", "actor_rollout_ref.actor.optim.lr"] == pytest.approx(1e-6)
    assert d.hyper.loc["ppo", "actor/lr"] == pytest.approx(1e-6)  # a logged hyperparameter
    assert d.status["ppo"]["status"] == "finished"


def test_a_logged_learning_rate_is_a_covariate_at_its_peak(tmp_path):
    folder = ls.trl_grpo(tmp_path / "old", old=True, checkpoints=(40,), last=40)
    m = cal.KeyMapping({"X": "rewards/correctness_reward:0:2"}, n_eval=8,
                       covariates={"rl.lr": "learning_rate"})  # fmt: skip
    d = _read(folder, m)  # no training arguments: the log's learning_rate, warm-up ignored
    assert d.hyper.loc["old", "learning_rate"] == d.hyper.loc["old", "rl.lr"] == 1e-6


# ---------------------------------------------------------------- §3 one policy, many agents


def test_reward_functions_of_one_policy_are_no_agents(tmp_path):
    folder = ls.trl_grpo(tmp_path / "grpo")
    m = cal.KeyMapping({"X": f"{CORRECT}:0:2", "Y": "rewards/format_reward/mean"})
    with pytest.raises(cal.DataError, match=r"the rewards of one policy.*--motif single"):
        _read(folder, m)
    assert _read(folder, dataclasses.replace(m, force=True)).agents == ["X", "Y"]


def test_a_per_agent_prefix_log_maps_to_a_three_node_motif(tmp_path):
    csv = ls.prefix_csv(tmp_path / "marti.csv")
    m = cal.KeyMapping(patterns=(r"(?P<agent>\w+)/accuracy:rate",), n_eval=64)
    d = _read(csv, m)
    assert d.agents == ["judge", "solver", "verifier"]
    for a in ls.PREFIX_AGENTS:
        got = d.table.loc[d.table.agent == a, "competence"].to_numpy()
        assert got == pytest.approx([ls.prefix_level(a, s) for s in range(0, 101, 10)])
    model = cal.build_model(d, "C1", nodes=("solver", "verifier", "judge"))
    assert list(model.network.names) == ["solver", "verifier", "judge"]


# ---------------------------------------------------------------- §4 status


def test_divergence_is_recorded_at_its_step_and_nan_rows_are_named_by_step(tmp_path):
    log = ls.verl_jsonl(tmp_path / "verl", diverge_at=6)
    d = _read(log, cal.KeyMapping({"X": ls.VAL_KEY}))
    assert d.status["ppo"] == {
        "status": "diverged",
        "step": 6,
        "reason": "non-finite actor/pg_loss at step 6",
    }
    assert cal.status_counts(d.status) == {"diverged": 1}
    regimes = cal.observed_regimes(d.table, d.status)
    assert regimes["ppo"]["regime"] == "collapse" and regimes["ppo"]["status"] == "diverged"
    # a competence key that is null at a step: the warning names the step, not a row
    text = log.read_text().replace(
        '"critic/score/mean": 0.', '"critic/score/mean": null, "x": 0.', 1
    )
    log.write_text(text)
    with pytest.warns(cal.DataWarning, match=r"is not finite at step\(s\) 0; dropped"):
        d = _read(log, cal.KeyMapping({"X": "critic/score/mean"}))
    assert d.table["step"].tolist() == list(range(1, 9))
    with pytest.raises(cal.DataError, match=r"not finite at step\(s\) 0; fix them"):
        cal.load_inputs([log], mapping=cal.KeyMapping({"X": "critic/score/mean"}), strict=True)


def test_truncation_and_collapse_to_a_constant_are_recorded(tmp_path):
    folder = ls.trl_grpo(tmp_path / "grpo")  # max_steps 100, the log ends at 60
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))
    assert d.status["grpo"] == {"status": "truncated", "step": 60,
                                "reason": "the log ends at step 60 of 100"}  # fmt: skip
    # a reward that falls to a constant 0 from step 40 on
    for f in folder.rglob("trainer_state.json"):
        state = json.loads(f.read_text())
        for e in state["log_history"]:
            if e["step"] >= 40:
                e[CORRECT] = 0.0
        f.write_text(json.dumps(state))
    d = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"}))
    assert d.status["grpo"]["status"] == "collapsed" and d.status["grpo"]["step"] == 40
    assert "constant at 0 from step 40" in d.status["grpo"]["reason"]
    assert cal.observed_regimes(d.table, d.status)["grpo"]["group"] == "collapse"


# ---------------------------------------------------------------- signals


def test_training_signals_are_read_under_llm_runs_names(tmp_path):
    from llm_runs.runlog import SIGNALS

    folder = ls.trl_grpo(tmp_path / "grpo")
    s = _read(folder, cal.KeyMapping({"X": f"{CORRECT}:0:2"})).signals
    names = [c for c in s.columns if c not in ("run", "step", "agent")]
    assert set(names) <= set(SIGNALS) and list(s.columns[:3]) == ["run", "step", "agent"]
    assert set(names) == {"grad_norm", "kl", "entropy", "response_length", "reward_mean",
                          "reward_var", "frac_reward_zero_std"}  # fmt: skip
    row = s.loc[s.step == 10].iloc[0]
    e = ls.trl_entry(10)
    assert row["agent"] == "X" and row["grad_norm"] == e["grad_norm"]
    assert row["reward_var"] == pytest.approx(e["reward_std"] ** 2)  # a std, squared
    assert row["response_length"] == e["completions/mean_length"]
    v = _read(ls.verl_jsonl(tmp_path / "verl"), cal.KeyMapping({"X": ls.VAL_KEY})).signals
    assert v.loc[v.step == 3, "policy_kl"].item() == 0.01
    assert v.loc[v.step == 3, "reward_mean"].item() == pytest.approx(ls.accuracy(30))


# ---------------------------------------------------------------- §5 shapes and files


def test_trainer_state_as_a_file_and_two_runs_checkpoints_do_not_collide(tmp_path):
    a = ls.trl_grpo(tmp_path / "runA", checkpoints=(20,), last=20)
    b = ls.trl_grpo(tmp_path / "runB", checkpoints=(20,), last=20)
    m = cal.KeyMapping({"X": f"{CORRECT}:0:2"})
    d = cal.load_inputs([a / "checkpoint-20", b / "checkpoint-20"], mapping=m)
    assert d.runs == ["runA", "runB"]
    f = _read(a / "checkpoint-20" / "trainer_state.json", m)
    assert f.runs == ["runA"] and set(f.table["n_eval"]) == {ls.TRL_N_EVAL}  # the run's args
    assert f.table["competence"].tolist() == d.subset(["runA"]).table["competence"].tolist()


def test_older_trl_names_mlflow_and_tensorboard(tmp_path):
    old = ls.trl_grpo(tmp_path / "old", old=True, checkpoints=(40,), last=40)
    d = _read(old, cal.KeyMapping({"X": "rewards/correctness_reward:0:2"}, n_eval=8))
    assert d.table["competence"].tolist() == pytest.approx(
        [ls.correctness(s) / 2 for s in range(5, 41, 5)]
    )
    assert "response_length" in d.signals.columns  # completion_length, older TRL's name
    ml = _read(
        ls.mlflow_run(tmp_path / "mlruns" / "1"), cal.KeyMapping({"X": "eval/accuracy"}, n_eval=200)
    )
    tb = _read(
        ls.tensorboard_run(tmp_path / "tb"), cal.KeyMapping({"X": "eval/accuracy"}, n_eval=200)
    )
    want = [ls.accuracy(s) for s in range(0, 101, 10)]
    assert ml.table["competence"].to_numpy() == pytest.approx(want, abs=1e-12)
    assert tb.table["competence"].to_numpy() == pytest.approx(want, abs=1e-6)  # float32 tags
    assert _sources(ml)["meaning"].tolist() == ["rate [0, 1] (assumed)"]


def test_cli_dry_run_shows_meaning_size_point_and_status(tmp_path, capsys):
    folder = ls.trl_grpo(tmp_path / "grpo")
    assert main(["fit", str(folder), "--agent", f"X={CORRECT}:0:2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"grpo X <- {CORRECT}: range [0, 2]; n_eval from num_generations 4" in out
    assert "each value: mean of the 5 step(s) ending at step" in out
    assert "grpo: truncated (the log ends at step 60 of 100)" in out
    assert "run status: 1 truncated" in out and "training signals: " in out
    assert main(["fit", str(folder), "--agent", "X=loss", "--dry-run"]) == 2
    assert "named as no success rate" in _one_line_error(capsys)
    assert main(["fit", str(folder), "--agent", "X=loss", "--force-key", "--dry-run"]) == 0
    capsys.readouterr()
    assert main(["fit", str(folder), "--agent", f"X={CORRECT}:1:1", "--dry-run"]) == 2
    assert "finite LO < HI" in _one_line_error(capsys)


def test_the_single_preset_is_one_node_without_edges(tmp_path):
    from simulate.spec import resolve_spec, single_spec

    spec_file = tmp_path / "one.json"  # a network spec of one agent works the same
    spec_file.write_text('{"nodes": ["policy"], "edges": []}')
    net, _ = cal.resolve_network(str(spec_file))
    assert list(net.names) == ["policy"]

    spec = resolve_spec("single")
    assert spec.nodes == ("X",) and spec.edges == () and spec == single_spec()
    assert resolve_spec("single-AND").nodes == ("X",)
    net, name = cal.resolve_network("single", nodes=("policy",))
    assert list(net.names) == ["policy"] and name == "single"
    np.testing.assert_array_equal(np.asarray(net.sign), np.zeros((1, 1)))


def test_warnings_do_not_hide_val_keys_in_the_keys_hint(tmp_path):
    log = ls.verl_jsonl(tmp_path / "verl")
    with pytest.raises(cal.DataError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _read(log, cal.KeyMapping({"X": "nope"}))
    assert str(err.value).index(ls.VAL_KEY) < str(err.value).index("actor/entropy")
