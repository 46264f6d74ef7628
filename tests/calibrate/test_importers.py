"""Importers of external logs (TRL, verl, TensorBoard, MLflow, W&B): round trips of known
values, sparse metrics aligned by step, covariates from configs, and one-line errors."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibrate as cal
from calibrate.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def _curve(data, agent, run=None):
    t = data.table
    t = t[(t.agent == agent) & ((t.run == run) if run else True)]
    return t["step"].tolist(), t["competence"].round(12).tolist()


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


# ---------------------------------------------------------------- the key mapping


def test_mapping_options_and_their_errors():
    m = cal.KeyMapping.from_options(
        ["X=critic/solver/score/mean"], [r"val/(?P<agent>\w+)/acc"], ["64", "X=32"], ["rl.lr=lr"]
    )
    assert m.agents == {"X": "critic/solver/score/mean"} and m.n_eval == {"*": 64, "X": 32}
    assert m.size("X", "f") == 32 and m.size("Y", "f") == 64 and m.covariates == {"rl.lr": "lr"}
    keys = ["critic/solver/score/mean", "val/solver/acc", "val/critic/acc", "loss"]
    assert m.resolve(keys, "f") == {
        "X": "critic/solver/score/mean",
        "solver": "val/solver/acc",
        "critic": "val/critic/acc",
    }
    with pytest.raises(cal.ConfigError, match=r"named group \(\?P<agent>"):
        cal.KeyMapping(patterns=(r"val/\w+/acc",))
    with pytest.raises(cal.ConfigError, match="not a regular expression"):
        cal.KeyMapping(patterns=(r"val/(?P<agent>\w+",))
    with pytest.raises(cal.ConfigError, match="--n-eval must be N or AGENT=N"):
        cal.KeyMapping.from_options(n_eval=["many"])
    with pytest.raises(cal.ConfigError, match="--agent must look like"):
        cal.KeyMapping.from_options(agent=["X"])
    with pytest.raises(cal.DataError, match=r"f: key 'nope' \(agent X\) not found; keys: \['a'"):
        cal.KeyMapping({"X": "nope"}).resolve(["a"], "f")
    with pytest.raises(cal.DataError, match="agent 'a' matches two keys"):
        cal.KeyMapping(patterns=(r"(?P<agent>a)/x", r"(?P<agent>a)/y")).resolve(["a/x", "a/y"], "f")
    with pytest.raises(cal.DataError, match="f: the log does not record the evaluation size"):
        cal.KeyMapping({"X": "a"}).size("X", "f")


# ---------------------------------------------------------------- TRL


def _state(history, global_step):
    return {"global_step": global_step, "log_history": history, "max_steps": 30, "epoch": 1.0}


def _trl_fixture(folder: Path) -> Path:
    """checkpoint-10 and checkpoint-20 (cumulative histories; 20 re-logs step 10 with
    another value, as a resumed run does) and the arguments as JSON."""
    train = [
        {"loss": 1.0 / s, "learning_rate": 1e-4, "rewards/acc/mean": s / 40, "step": s}
        for s in range(2, 21, 2)
    ]
    evals = [{"eval_rewards/acc/mean": 0.1 * s / 10, "eval_loss": 2.0, "step": s} for s in (10, 20)]
    hist = sorted(train + evals, key=lambda e: e["step"])
    for n in (10, 20):
        (folder / f"checkpoint-{n}").mkdir(parents=True)
        h = [dict(e) for e in hist if e["step"] <= n]
        if n == 20:
            k = next(i for i, e in enumerate(h) if e["step"] == 10 and "eval_loss" in e)
            h[k]["eval_rewards/acc/mean"] = 0.15
        (folder / f"checkpoint-{n}" / "trainer_state.json").write_text(json.dumps(_state(h, n)))
    args = {
        "learning_rate": 1e-4,
        "seed": 11,
        "per_device_train_batch_size": 8,
        "lr_scheduler_type": "linear",
    }
    (folder / "training_args.json").write_text(json.dumps(args))
    return folder


def test_trl_fixture_roundtrip_and_sparse_eval(tmp_path):
    folder = _trl_fixture(tmp_path / "grpo-lr1e-4")
    m = cal.KeyMapping(
        {"X": "rewards/acc/mean", "Y": "eval_rewards/acc/mean"},
        n_eval=50,
        covariates={"rl.lr": "learning_rate"},
    )
    # two keys of one policy are no two agents (issue 70 §3): refused unless forced
    with pytest.raises(cal.DataError, match=r"the rewards of one policy.*--motif single"):
        cal.read_trl(folder, m)
    m = dataclasses.replace(m, force=True)
    d = cal.read_trl(folder, m)
    assert d.runs == ["grpo-lr1e-4"] and d.agents == ["X", "Y"]
    assert _curve(d, "X") == (list(range(2, 21, 2)), [s / 40 for s in range(2, 21, 2)])
    assert _curve(d, "Y") == ([10, 20], [0.15, 0.2])  # sparse, by step; the latest file wins
    assert d.table["n_eval"].eq(50).all()
    h = d.hyper.loc["grpo-lr1e-4"]
    assert h["learning_rate"] == h["rl.lr"] == pytest.approx(1e-4)
    assert h["seed"] == 11 and h["per_device_train_batch_size"] == 8
    assert "lr_scheduler_type" not in d.hyper.columns
    # through load_inputs, and a folder of TRL folders
    _trl_fixture(tmp_path / "grpo-lr3e-4")
    both = cal.load_inputs([tmp_path], mapping=m)
    assert both.runs == ["grpo-lr1e-4", "grpo-lr3e-4"]


def _run_trainer(out: Path) -> None:
    """A real 2-step transformers ``Trainer`` run (the class TRL's trainers are), micro GPT-2
    built from a config, nothing downloaded, in a subprocess so torch stays out of here."""
    script = f"""
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
torch.manual_seed(0)
class D(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i):
        ids = torch.tensor([i % 5, 1, 2, 3])
        return {{"input_ids": ids, "labels": ids}}
def metrics(p):
    return {{"accuracy": 0.25}}
m = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=8, n_positions=8))
args = TrainingArguments({str(out)!r}, max_steps=2, per_device_train_batch_size=4, logging_steps=1,
    save_steps=1, eval_strategy="steps", eval_steps=2, learning_rate=3e-4, seed=7,
    report_to=["tensorboard"], use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
Trainer(model=m, args=args, train_dataset=D(), eval_dataset=D(), compute_metrics=metrics).train()
"""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.timeout(300)
def test_trl_real_trainer_folder(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    out = tmp_path / "sft"
    _run_trainer(out)
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    lr = {e["step"]: e["learning_rate"] for e in state["log_history"] if "learning_rate" in e}
    acc = {e["step"]: e["eval_accuracy"] for e in state["log_history"] if "eval_accuracy" in e}
    assert sorted(lr) == [1, 2] and sorted(acc) == [2]
    m = cal.KeyMapping({"X": "learning_rate", "Y": "eval_accuracy"}, n_eval=8, force=True)
    d = cal.load_inputs([out], mapping=m)
    assert _curve(d, "X") == ([1, 2], [round(lr[1], 12), round(lr[2], 12)])
    assert _curve(d, "Y") == ([2], [0.25])
    assert d.hyper.loc["sft", "learning_rate"] == pytest.approx(3e-4)  # TensorBoard's args text
    assert d.hyper.loc["sft", "seed"] == 7
    # a folder of TRL folders reads each from its trainer_state.json, not its runs/ events
    assert cal.load_inputs([tmp_path], mapping=m).runs == ["sft"]
    # its TensorBoard logs: runs/<date>_<host>/ is a run, with TRL's train/* and eval/* tags
    m_tb = cal.KeyMapping({"X": "train/learning_rate", "Y": "eval/accuracy"}, n_eval=8, force=True)
    tb = cal.load_inputs([out / "runs"], mapping=m_tb)
    (date,) = tb.runs
    assert _curve(tb, "Y", date) == ([2], [0.25]) and tb.hyper.loc[date, "seed"] == 7
    # without runs/: the arguments from training_args.bin, read without torch
    for f in (out / "runs").rglob("*"):
        if f.is_file():
            f.unlink()
    d = cal.read_trl(out, m)
    assert d.hyper.loc["sft", "seed"] == 7 and d.hyper.loc["sft", "max_steps"] == 2
    check = (
        "import sys, calibrate; "
        f"a = calibrate.read_training_args({str(out / 'checkpoint-2' / 'training_args.bin')!r}); "
        "assert a['learning_rate'] == 3e-4 and a['lr_scheduler_type'] == 'linear', a; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]


# ---------------------------------------------------------------- verl


def _verl_fixture(folder: Path, lr: str = "1.0e-06", seed: int = 3) -> Path:
    """A verl file-logger log (train metrics every step, validation at 0, 4, 8) and the
    Hydra config, as verl writes them."""
    folder.mkdir(parents=True)
    lines = []
    for s in range(0, 9):
        data = {} if s == 0 else {
            "critic/solver/score/mean": 0.1 * s / 2, "critic/critic/score/mean": 0.05 * s,
            "actor/entropy": 1.5, "response_length/mean": 230.0, "timing_s/gen": 3.0,
        }  # fmt: skip
        if s % 4 == 0:
            data["val-core/gsm8k/reward/mean@1"] = 0.2 + s / 100
        lines.append(json.dumps({"step": s, "data": data}))
    (folder / "gsm8k-ppo.jsonl").write_text("\n".join(lines) + "\n")
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text(
        "actor_rollout_ref:\n  actor:\n    optim:\n      lr: " + lr + "\n"
        "    data_loader_seed: 42\n  rollout:\n    'n': 5\n"
        "    prompt_length: ${oc.select:data.max_prompt_length,512}\n"
        f"data:\n  seed: {seed}\n  train_batch_size: 1024\ntrainer:\n  project_name: p\n"
    )
    return folder / "gsm8k-ppo.jsonl"


def test_verl_jsonl_roundtrip_regex_and_hydra_config(tmp_path):
    log = _verl_fixture(tmp_path / "run")
    m = cal.KeyMapping(
        {"e2e": "val-core/gsm8k/reward/mean@1"},
        patterns=(r"critic/(?P<agent>\w+)/score/mean",),
        n_eval=64,
        covariates={"rl.lr": "actor_rollout_ref.actor.optim.lr"},
    )
    d = cal.read_verl(log, m)
    assert d.runs == ["gsm8k-ppo"] and d.agents == ["critic", "e2e", "solver"]
    assert _curve(d, "solver") == (list(range(1, 9)), [round(0.05 * s, 12) for s in range(1, 9)])
    assert _curve(d, "e2e") == ([0, 4, 8], [0.2, 0.24, 0.28])  # sparse validation, by step
    h = d.hyper.loc["gsm8k-ppo"]
    assert h["rl.lr"] == h["actor_rollout_ref.actor.optim.lr"] == pytest.approx(1e-6)
    assert (
        h["seed"] == 3
        and h["actor_rollout_ref.rollout.n"] == 5
        and h["data.train_batch_size"] == 1024
    )
    # a user-written 1e-6 (YAML 1.1 reads it as a string) is still a number; the folder form
    log2 = _verl_fixture(tmp_path / "run2", lr="1e-6", seed=4)
    log2.rename(log2.with_name("gsm8k-ppo-2.jsonl"))
    d2 = cal.load_inputs([tmp_path / "run2"], mapping=m)
    assert d2.hyper.loc["gsm8k-ppo-2", "rl.lr"] == pytest.approx(1e-6)
    assert d2.hyper.loc["gsm8k-ppo-2", "seed"] == 4
    both = cal.load_inputs([log, tmp_path / "run2"], mapping=m)
    assert both.runs == ["gsm8k-ppo", "gsm8k-ppo-2"]


def test_verl_torn_last_line(tmp_path):
    log = _verl_fixture(tmp_path / "run")
    with log.open("a") as fh:
        fh.write('{"step": 9, "data": {"critic/sol')
    m = cal.KeyMapping({"X": "critic/solver/score/mean"}, n_eval=64)
    with pytest.warns(cal.DataWarning, match="torn last line"):
        assert cal.read_verl(log, m).table["step"].max() == 8
    with pytest.raises(cal.DataError, match=r"gsm8k-ppo.jsonl:10: not JSON"):
        cal.read_verl(log, m, strict=True)


# ---------------------------------------------------------------- TensorBoard


def test_tensorboard_as_trl_verl_openrlhf_write_it(tmp_path):
    tb = pytest.importorskip("torch.utils.tensorboard")
    # OpenRLHF / TRL: train/* every step, eval/* sparse; TRL's args text
    w = tb.SummaryWriter(str(tmp_path / "orl" / "runs" / "May01"))
    w.add_text("args", json.dumps({"learning_rate": 5e-7, "seed": 2}))
    for s in range(1, 7):
        w.add_scalar("train/reward", s / 10, s)
        if s % 3 == 0:
            w.add_scalar("eval/solver_acc", s / 20, s)
    w.close()
    # verl: its keys as tags
    w = tb.SummaryWriter(str(tmp_path / "verl"))
    for s in range(1, 4):
        w.add_scalar("critic/solver/score/mean", 0.25 * s, s)
        w.add_scalar("critic/judge/score/mean", 0.5, s)
    w.close()
    m = cal.KeyMapping({"X": "train/reward"}, patterns=(r"eval/(?P<agent>\w+)_acc",), n_eval=32)
    d = cal.read_events(tmp_path / "orl", m)
    assert d.runs == ["orl"] and d.agents == ["X", "solver"]
    assert _curve(d, "X") == (list(range(1, 7)), [pytest.approx(s / 10) for s in range(1, 7)])
    assert _curve(d, "solver") == ([3, 6], [pytest.approx(0.15), pytest.approx(0.3)])
    assert d.hyper.loc["orl", "seed"] == 2 and d.hyper.loc["orl", "learning_rate"] == pytest.approx(
        5e-7
    )
    m2 = cal.KeyMapping(patterns=(r"critic/(?P<agent>\w+)/score/mean",), n_eval=16)
    d2 = cal.load_inputs([tmp_path / "verl"], mapping=m2)
    assert d2.agents == ["judge", "solver"] and _curve(d2, "solver") == (
        [1, 2, 3],
        [0.25, 0.5, 0.75],
    )


def test_tensorboard_own_writer_and_resumed_folders(tmp_path):
    from tensorboard.summary import Writer  # writes scalars as tensors (summary v2)

    for i, part in enumerate(((0, 10), (10, 20))):  # a resumed run: step 10 logged twice
        w = Writer(str(tmp_path / "run" / f"part{i}"))
        for s in part:
            w.add_scalar("eval/accuracy", 0.3 + s / 100 + i / 100, step=s)
        w.flush()
        w.close()
    d = cal.read_events(tmp_path / "run", cal.KeyMapping({"X": "eval/accuracy"}, n_eval=100))
    assert _curve(d, "X") == (
        [0, 10, 20],
        [pytest.approx(0.3), pytest.approx(0.41), pytest.approx(0.51)],
    )


# ---------------------------------------------------------------- MLflow and W&B


def _mlflow_run(exp: Path, run_id: str, name: str, lr: str) -> Path:
    run = exp / run_id
    (run / "metrics" / "critic" / "solver").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "meta.yaml").write_text(f"run_id: {run_id}\nrun_name: {name}\nstatus: 3\n")
    (run / "tags" / "mlflow.runName").write_text(name)
    (run / "params" / "learning_rate").write_text(lr)
    (run / "params" / "seed").write_text("5")
    (run / "params" / "optim").write_text("adamw")
    (run / "params" / "step").write_text("7")  # a config key named like a table column
    acc = "".join(f"17000000{s:02d} {s / 10} {s}\n" for s in range(0, 6))
    (run / "metrics" / "critic" / "solver" / "acc").write_text(acc)
    (run / "metrics" / "val_acc").write_text("1700000000 0.5 0\n1700000010 0.7 5\n")
    (run / "metrics" / "loss").write_text("1700000000 2.5 0\n")
    return run


def test_mlflow_run_and_experiment_folders(tmp_path):
    exp = tmp_path / "mlruns" / "1"
    run = _mlflow_run(exp, "a1b2", "lr-low", "1e-4")
    _mlflow_run(exp, "c3d4", "lr-high", "3e-4")
    m = cal.KeyMapping(
        {"X": "critic/solver/acc", "Y": "val_acc"}, n_eval=20, covariates={"rl.lr": "learning_rate"}
    )
    d = cal.read_mlflow(run, m)
    assert d.runs == ["lr-low"] and _curve(d, "X") == (list(range(6)), [s / 10 for s in range(6)])
    assert _curve(d, "Y") == ([0, 5], [0.5, 0.7]) and "step" not in d.hyper.columns
    assert (
        d.hyper.loc["lr-low", "rl.lr"] == pytest.approx(1e-4) and d.hyper.loc["lr-low", "seed"] == 5
    )
    both = cal.load_inputs([exp], mapping=m)
    assert both.runs == ["lr-high", "lr-low"]
    np.testing.assert_allclose(both.hyper_values("rl.lr"), [3e-4, 1e-4])


def test_wandb_history_and_panel_csv(tmp_path):
    steps = np.arange(0, 50, 5)
    hist = pd.DataFrame(
        {"_step": np.arange(len(steps)), "train/global_step": steps, "_runtime": 1.0,
         "train/rewards/solver": steps / 100, "eval/accuracy": np.nan}
    )  # fmt: skip
    hist.loc[[3, 9], "eval/accuracy"] = [0.4, 0.6]
    hist.to_csv(tmp_path / "run-7.csv", index=False)
    m = cal.KeyMapping({"X": "train/rewards/solver", "Y": "eval/accuracy"}, n_eval=40)
    d = cal.read_wandb_csv(tmp_path / "run-7.csv", m, config={"learning_rate": 2e-4, "seed": 1})
    assert _curve(d, "X") == (steps.tolist(), [round(s / 100, 12) for s in steps])
    assert _curve(d, "Y") == ([15, 45], [0.4, 0.6])  # the trainer's step, not W&B's _step
    assert d.hyper.loc["run-7", "seed"] == 1
    panel = pd.DataFrame(
        {"Step": [0, 10, 20], "a - eval/accuracy": [0.1, 0.2, 0.3],
         "a - eval/accuracy__MIN": 0.0, "b - eval/accuracy": [0.2, np.nan, 0.5]}
    )  # fmt: skip
    panel.to_csv(tmp_path / "panel.csv", index=False)
    d = cal.load_inputs(
        [tmp_path / "panel.csv"], mapping=cal.KeyMapping({"X": "eval/accuracy"}, n_eval=10)
    )
    assert d.runs == ["a", "b"] and _curve(d, "X", "b") == ([0, 20], [0.2, 0.5])


# ---------------------------------------------------------------- the CLI


def test_cli_dry_run_reads_each_framework(tmp_path, capsys):
    log = _verl_fixture(tmp_path / "verl")
    args = ["fit", str(log), "--dry-run", "--agent-regex", r"critic/(?P<agent>\w+)/score/mean",
            "--n-eval", "64", "--covariate", "rl.lr=actor_rollout_ref.actor.optim.lr"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 run(s), agents ['critic', 'solver'], 16 evaluations" in out
    assert "gsm8k-ppo solver: 8 evaluations at steps 1..8" in out and "rl.lr" in out
    trl = _trl_fixture(tmp_path / "trl")
    assert (
        main(
            ["fit", str(trl), "--dry-run", "--agent", "X=eval_rewards/acc/mean", "--n-eval", "X=50"]
        )
        == 0
    )
    assert "trl X: 2 evaluations at steps 10..20" in capsys.readouterr().out


def test_cli_malformed_files_exit_2_with_one_line_naming_the_file(tmp_path, capsys):
    def bad(path, *extra):
        extra = extra or ("--agent", "X=acc", "--n-eval", "10")
        assert main(["fit", str(path), "--dry-run", *extra]) == 2
        return _one_line_error(capsys)

    trl = _trl_fixture(tmp_path / "trl")
    (trl / "checkpoint-20" / "trainer_state.json").write_text('{"log_history": [')
    assert "checkpoint-20/trainer_state.json: not JSON" in bad(trl)
    (trl / "checkpoint-20" / "trainer_state.json").write_text('{"log_history": [{"loss": 1}]}')
    assert "checkpoint-20/trainer_state.json: log_history[0] has no integer step" in bad(trl)
    log = _verl_fixture(tmp_path / "verl")
    text = log.read_text().splitlines()
    text[3] = '{"step": 3, "data": [1, 2]}'
    log.write_text("\n".join(text) + "\n")
    assert 'gsm8k-ppo.jsonl:4: not a verl log line {"step": N, "data": {...}}' in bad(log)
    text[3] = '{"step": -3, "data": {}}'
    log.write_text("\n".join(text) + "\n")
    assert "gsm8k-ppo.jsonl:4: step must be an integer >= 0, got -3" in bad(log)
    (log.parent / ".hydra" / "config.yaml").write_text("a: [1,\n")
    text[3] = '{"step": 3, "data": {}}'
    log.write_text("\n".join(text) + "\n")
    assert ".hydra/config.yaml: not YAML" in bad(
        log, "--agent", "X=critic/solver/score/mean", "--n-eval", "9"
    )
    run = _mlflow_run(tmp_path / "mlruns" / "0", "r1", "r1", "1e-4")
    (run / "metrics" / "val_acc").write_text("1700000000 0.5 zero\n")
    assert "metrics/val_acc:1: expected 'timestamp value step'" in bad(run)
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"\x00garbage" * 10)
    assert "tb: no scalar values in 1 event file(s)" in bad(tmp_path / "tb")
    (tmp_path / "wandb.csv").write_text("_step,eval/acc\n0,0.1\nten,0.2\n")
    assert "wandb.csv: step 'ten' is not an integer >= 0" in bad(tmp_path / "wandb.csv")
    # a covariate the config lacks; a mapped key that is not a success rate; a missing
    # evaluation size; no mapping at all
    log = _verl_fixture(tmp_path / "verl2")
    says = bad(
        log, "--agent", "X=critic/solver/score/mean", "--n-eval", "9", "--covariate", "rl.lr=lr"
    )
    assert "gsm8k-ppo.jsonl: --covariate rl.lr: the config has no number 'lr'" in says
    assert "did you mean ['actor_rollout_ref.actor.optim.lr']" in says
    trl = _trl_fixture(tmp_path / "trl2")
    assert "key 'eval_loss' (agent X) is named as no success rate" in bad(
        trl, "--agent", "X=eval_loss", "--n-eval", "5"
    )
    assert (
        "does not record the evaluation size of agent 'X' (the training arguments lack "
        "['num_generations', 'gradient_accumulation_steps']); give --n-eval"
    ) in bad(trl, "--agent", "X=loss", "--force-key")
    assert "which keys are competences? give --agent AGENT=KEY" in bad(trl, "--n-eval", "5")


def test_cli_subprocess_error_line(tmp_path):
    log = _verl_fixture(tmp_path / "verl")
    log.write_text('{"step": 0, "data": {}}\n{"step": 1 "data"}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64", "XLA_FLAGS")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run(
        [sys.executable, "-m", "calibrate", "fit", str(log), "--agent", "X=a", "--n-eval", "5",
         "--out", str(tmp_path / "o")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {log}:2: not JSON"), lines
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # ~1 min on 2 cores, the MAP fit's compilation; the reading is tested above
@pytest.mark.timeout(600)
def test_cli_fits_a_verl_log(tmp_path, capsys):
    """An imported log is fitted like any table: three roles of a verl JSONL, MAP, C1."""
    steps = np.arange(0, 300, 25)
    comp = {"solver": 0.2 + 0.6 * (1 - np.exp(-steps / 80)),
            "critic": 0.1 + 0.7 * (1 - np.exp(-steps / 120)),
            "judge": 0.1 + 0.5 * (1 - np.exp(-steps / 200))}  # fmt: skip
    lines = [
        {
            "step": int(s),
            "data": {f"critic/{a}/score/mean": round(float(c[i]), 3) for a, c in comp.items()},
        }
        for i, s in enumerate(steps)
    ]
    log = tmp_path / "roles.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    quick = tmp_path / "quick.json"
    quick.write_text(json.dumps({"map_starts": 1, "map_steps": 20, "max_tree_depth": 3}))
    args = ["fit", str(log), "--agent-regex", r"critic/(?P<agent>\w+)/score/mean", "--n-eval", "60",
            "--agents", "solver,critic,judge", "--method", "map", "--config", str(quick),
            "--no-progress", "--out", str(tmp_path / "fit")]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    assert (
        "1 run(s), agents ['critic', 'judge', 'solver'], 36 evaluations" in capsys.readouterr().out
    )
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    assert any(k.startswith("rho[solver]") for k in summary), list(summary)


def test_event_files_without_the_tensorboard_package(tmp_path, monkeypatch):
    """tensorboard is an optional dependency: its absence is a one-line data error."""
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "tensorboard.backend.event_processing.event_accumulator", None)
    with pytest.raises(cal.DataError, match="needs the tensorboard package"):
        cal.read_events(tmp_path / "tb", cal.KeyMapping({"X": "a"}, n_eval=1))
    trl = _trl_fixture(tmp_path / "trl")
    (trl / "training_args.json").unlink()
    (trl / "runs" / "d").mkdir(parents=True)
    (trl / "runs" / "d" / "events.out.tfevents.1.host").write_bytes(b"")
    m = cal.KeyMapping({"X": "eval_rewards/acc/mean"}, n_eval=5)
    assert cal.read_trl(trl, m).runs == ["trl"]  # the arguments are optional
