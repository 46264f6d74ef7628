"""Joint training end to end on a micro model: logs, algorithms, schedules, resume."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from llm_runs import runlog as rl
from llm_runs._competence_plot import competence_axes, competence_figure
from llm_runs._train import CKPT_FILE, train
from llm_runs.config import TrainConfig, save_config
from llm_runs.runlog import COMPETENCE_FILE, SIGNALS_FILE, read_manifest, read_run


def _strip(rows):
    return [{k: v for k, v in r.items()} for r in rows]


@pytest.mark.parametrize(
    ("task", "algo", "extra"),
    [
        ("math", "reinforce", {"network": {"motif": "I1"}}),
        ("math", "grpo", {"rl": {"group": 2, "credit": "role"}}),
        ("rag", "ppo", {"rl": {"credit": "discounted", "kl_coef": 0.01}, "pool_size": 2}),
    ],
)
def test_micro_run_writes_valid_log(tmp_path, micro_cfg, task, algo, extra):
    d = micro_cfg
    d["task"]["name"] = task
    d["rl"]["algo"] = algo
    for k, v in extra.items():
        if isinstance(v, dict):
            d.setdefault(k, {}).update(v)
        else:
            d[k] = v
    out = train(TrainConfig.from_dict(d), tmp_path / "run", progress=False)
    log = read_run(out)
    assert [r["step"] for r in log.e2e_rows] == [0, 3, 6]
    assert log.manifest["agents"] == ["X", "Y", "Z"]
    assert log.manifest["config"]["rl"]["algo"] == algo
    assert log.manifest["spec"]["edges"][0]["source"] == "X"
    last = [r for r in log.agent_rows if r["step"] == 6]
    assert all(r["reward"] is not None and r["lr"] > 0 and r["kl"] is not None for r in last)
    assert all(0 < r["budget_share"] <= 1 for r in last)
    if d.get("pool_size", 1) == 2:
        assert all(len(r["members"]) == 2 for r in last)
        assert log.manifest["members"]["X"] == ["X_0", "X_1"]


def test_schedules_recorded_and_applied(tmp_path, micro_cfg):
    d = micro_cfg
    d["task"]["spurious"] = {"starts": [3], "length": 2, "mode": "random"}
    d["task"]["shift"] = {"step": 3}
    out = train(TrainConfig.from_dict(d), tmp_path / "run", progress=False)
    log = read_run(out)
    assert log.manifest["schedules"] == {
        "pulses": [[3, 5]],
        "pulse_mode": "random",
        "shift_step": 3,
    }
    flags = [(r["step"], r["pulse"], r["shifted"]) for r in log.e2e_rows]
    assert flags == [(0, False, False), (3, True, True), (6, False, True)]


def _agent_rows(log):
    drop = {"seconds", "wall"}
    return [{k: v for k, v in r.items() if k not in drop} for r in log.agent_rows]


def test_a_pulse_hits_only_the_roles_named(tmp_path, micro_cfg):
    """``task.spurious.roles``: every role named is the default (empty) to the bit; a pulse
    on X alone is neither that nor no pulse; before the pulse all runs are the same."""
    d = micro_cfg
    d["network"] = {"motif": "C1", "default_weight": 0.0}
    d["steps"], d["eval_every"] = 6, 3
    logs = {}
    for name, roles in (("none", None), ("all", []), ("XYZ", ["X", "Y", "Z"]), ("X", ["X"])):
        dd = json.loads(json.dumps(d))
        if roles is not None:
            dd["task"]["spurious"] = {"starts": [3], "length": 3, "mode": "flip", "roles": roles}
        logs[name] = _agent_rows(read_run(train(TrainConfig.from_dict(dd), tmp_path / name,
                                                progress=False)))  # fmt: skip
    assert logs["all"] == logs["XYZ"]
    before = [[r for r in logs[n] if r["step"] <= 3] for n in logs]
    assert all(b == before[0] for b in before)
    assert logs["X"] != logs["all"] and logs["X"] != logs["none"]


def test_a_pulse_on_an_unknown_role_is_a_one_line_error(tmp_path, micro_cfg):
    d = micro_cfg
    d["task"]["spurious"] = {"starts": [1], "roles": ["W"]}
    cfg_file = save_config(TrainConfig.from_dict(d), tmp_path / "cfg.json")
    res = _cli("train", "--config", cfg_file, "--out", tmp_path / "r")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: task.spurious.roles: ['W'] are not agents")
    assert res.stderr.count("\n") == 1 and not (tmp_path / "r").exists()


def test_lr_scale_multiplies_role_learning_rate(tmp_path, micro_cfg):
    d = micro_cfg
    d["network"] = {"motif": "C1", "default_weight": 0.0}  # coupling factor 1 everywhere
    d["rl"]["lr_scale"] = {"X": 0.1, "Y": 1.0, "Z": 5.0}
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    lr = {r["agent"]: r["lr"] for r in log.agent_rows if r["step"] == 6}
    assert lr["X"] == pytest.approx(0.1 * lr["Y"])
    assert lr["Z"] == pytest.approx(5.0 * lr["Y"])


def test_task_default_lr_scale_and_its_override(tmp_path, micro_cfg):
    """The math task's roles learn at their LR_SCALE of rl.lr (X 0.15, Y 0.06, Z 0.1) unless
    rl.lr_scale names them."""
    d = micro_cfg
    d["network"] = {"motif": "C1", "default_weight": 0.0}
    d["steps"], d["eval_every"] = 3, 3
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "a", progress=False))
    lr = {r["agent"]: r["lr"] for r in log.agent_rows if r["step"] == 3}
    assert lr["X"] == pytest.approx(2.5 * lr["Y"]) and lr["Z"] == pytest.approx(lr["Y"] / 0.6)
    d["rl"]["lr_scale"] = {"X": 0.06}
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "b", progress=False))
    lr = {r["agent"]: r["lr"] for r in log.agent_rows if r["step"] == 3}
    assert lr["X"] == pytest.approx(lr["Y"])


def test_budget_and_credit_mechanisms_run(tmp_path, micro_cfg):
    d = micro_cfg
    d["network"] = {
        "motif": "C1",
        "default_mechanism": "budget",
        "default_weight": 0.9,
        "edges": {"Y->Z": {"mechanism": "credit", "weight": 0.5}},
    }
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    shares = {r["agent"]: r["budget_share"] for r in log.agent_rows if r["step"] == 6}
    assert shares["X"] == 1.0 and shares["Y"] < 1.0  # Y's budget starts repressed by A_X≈0


def _cli(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "llm_runs", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def _logged_steps(log_file):
    steps = []
    for line in log_file.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            steps.append(json.loads(line)["step"])
    return steps


def test_sigkill_resume_reproduces_log_exactly(tmp_path, micro_cfg):
    """Kill a run mid-way; a second writer meanwhile fails at once; ``--resume`` (the README
    form, no config) continues it as its manifest defines it: 30 steps, not the CLI's 600."""
    d = micro_cfg
    d.update(steps=30, eval_every=3, ckpt_every=4)
    cfg = TrainConfig.from_dict(d)
    ref = train(cfg, tmp_path / "ref", progress=False)
    cfg_file = save_config(cfg, tmp_path / "cfg.json")
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, "-m", "llm_runs", "train", "--config", str(cfg_file), "--out", str(out)]
    proc = subprocess.Popen(
        [*cmd, "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    log_file = out / COMPETENCE_FILE
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / CKPT_FILE).exists() and log_file.exists():
            steps = _logged_steps(log_file)
            if steps and max(steps) >= 9:
                break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    second = _cli("train", "--config", cfg_file, "--out", out, "--no-progress", env=env)
    assert second.returncode == 2, second.stderr[-2000:]
    assert f"in use by pid {proc.pid} " in second.stderr
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_steps = set(_logged_steps(log_file))
    assert max(killed_steps) < 30
    killed_signal_steps = _logged_steps(out / SIGNALS_FILE)
    assert read_manifest(out)["status"] == "running"
    res = _cli("train", "--out", out, "--resume", "--no-progress", env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"taking over the stale lock of pid {proc.pid}" in res.stderr
    assert "end-to-end accuracy" in res.stdout and "step 0 -> 30" in res.stdout
    log = read_run(out, strict=True)
    assert [r["step"] for r in log.e2e_rows] == list(range(0, 31, 3))
    assert log.manifest["config"]["steps"] == 30 and log.status == "finished"
    a, b = read_run(ref).rows, log.rows
    assert [(r["step"], r.get("agent")) for r in a] == [(r["step"], r.get("agent")) for r in b]
    assert a == b
    # the training signals too: rows past the checkpoint were dropped and regenerated
    assert max(killed_signal_steps) >= 9  # past the last checkpoint (after step 8)
    assert (out / SIGNALS_FILE).read_bytes() == (ref / SIGNALS_FILE).read_bytes()
    assert log.signals()["step"].max() == 30
    # resuming a finished run changes nothing
    before = log_file.read_bytes()
    again = _cli("train", "--out", out, "--resume", "--no-progress", env=env)
    assert again.returncode == 0 and "has finished; nothing to resume" in again.stderr
    assert log_file.read_bytes() == before


def test_resume_never_splices_another_runs_checkpoint(tmp_path, micro_cfg):
    d = micro_cfg
    d.update(steps=8, eval_every=2, ckpt_every=2)
    run = train(TrainConfig.from_dict(d), tmp_path / "a", progress=False)
    other = train(TrainConfig.from_dict(d), tmp_path / "b", progress=False)
    rl.update_manifest(run, status="running")  # as if killed after its last checkpoint
    os.replace(other / CKPT_FILE, run / CKPT_FILE)
    before = (run / COMPETENCE_FILE).read_bytes()
    with pytest.raises(rl.RunLogError, match="belongs to another run"):
        train(None, run, resume=True, progress=False)
    assert (run / COMPETENCE_FILE).read_bytes() == before


def test_diverged_run_ends_as_data(tmp_path, micro_cfg):
    """The issue's ``--set rl.lr=0.03`` run aborted on a NaN entropy; a huge learning rate
    during the supervised warm-up makes the micro model diverge the same way in seconds."""
    d = micro_cfg
    d.update(steps=12, eval_every=3)
    d["rl"].update(warmup_steps=12, lr=1e30)
    cfg_file = save_config(TrainConfig.from_dict(d), tmp_path / "cfg.json")
    out = tmp_path / "div"
    res = _cli("train", "--config", cfg_file, "--out", out, "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "note: the run diverged at step" in res.stdout
    log = read_run(out, strict=True)
    assert log.status == "diverged" and 0 < (log.diverged_step or 0) < 12
    reason = log.manifest["diverged_reason"]
    assert re.fullmatch(r"(\w+ of agent [XYZ] became (nan|inf))|(parameters of .*)", reason)
    steps = [r["step"] for r in log.e2e_rows]
    assert steps[-1] == log.diverged_step and steps[:-1] == list(range(0, steps[-1], 3))
    last = [r for r in log.agent_rows if r["step"] == log.diverged_step]
    assert len(last) == 3 and any(r["loss"] is None for r in last)  # NaN logged as null
    sig = log.signals(strict=True)  # the diverged step's signals end the file, as data
    assert sig["step"].max() == log.diverged_step
    assert sig.loc[sig["step"] == log.diverged_step, "update_norm"].isna().any()
    png = competence_figure([out], tmp_path / "div.png")
    assert png.is_file()


def test_one_agent_diverging_is_recorded_others_keep_their_metrics(
    tmp_path, micro_cfg, monkeypatch
):
    import llm_runs._member_update as steps_mod

    real = steps_mod.policy_loss
    calls = {"n": 0}

    def nan_for_x_at_second_rl_step(*args, **kw):
        loss, kl = real(*args, **kw)
        calls["n"] += 1
        if calls["n"] == 4:  # the 2nd RL step's first agent (X)
            loss = loss * float("nan")
        return loss, kl

    monkeypatch.setattr(steps_mod, "policy_loss", nan_for_x_at_second_rl_step)
    d = micro_cfg  # warm-up steps 0-1, RL from step 2: X's loss is NaN at step 3
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    assert log.status == "diverged" and log.diverged_step == 4
    assert log.manifest["diverged_reason"].startswith("loss of agent X became nan")
    assert [r["step"] for r in log.e2e_rows] == [0, 3, 4]
    last = {r["agent"]: r for r in log.agent_rows if r["step"] == 4}
    assert last["X"]["loss"] is None
    assert last["Y"]["loss"] is not None and last["Z"]["entropy"] is not None
    sig = log.signals(strict=True).set_index(["step", "agent"])  # X's NaN gradient as null
    assert math.isnan(sig.at[(4, "X"), "grad_norm"]) and sig.at[(4, "Y"), "grad_norm"] >= 0
    assert sig.index.get_level_values("step").max() == 4


def test_cuda_without_cuda_is_a_one_line_error(tmp_path, micro_cfg):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    cfg_file = save_config(TrainConfig.from_dict(micro_cfg), tmp_path / "cfg.json")
    res = _cli("train", "--config", cfg_file, "--device", "cuda", "--out", tmp_path / "r")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: device: 'cuda'") and res.stderr.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_motif_spec_file_trains_that_network(tmp_path, micro_cfg):
    from simulate.spec import ffl_spec, save_spec

    spec = ffl_spec("I1", "OR", K=0.3, n=2.0)
    path = save_spec(spec, tmp_path / "my_net.yaml")
    cfg_file = save_config(TrainConfig.from_dict(micro_cfg), tmp_path / "cfg.json")
    out = tmp_path / "r"
    res = _cli("train", "--config", cfg_file, "--motif", path, "--out", out, "--no-progress")
    assert res.returncode == 0, res.stderr[-2000:]
    m = read_manifest(out)
    assert m["spec"] == spec.to_dict()
    assert m["config"]["network"]["spec"] == spec.to_dict()  # resumable without the file
    assert m["config"]["network"]["spec_path"] == str(path)


def test_cli_rejects_bad_config(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "llm_runs", "train", "--out", str(tmp_path / "x"), "--algo", "sac"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "rl.algo" in res.stderr


def test_figure(tmp_path, micro_cfg):
    import matplotlib.image

    out = train(TrainConfig.from_dict(micro_cfg), tmp_path / "run", progress=False)
    log = read_run(out)
    fig = competence_axes([out, out], title="t")
    assert len(fig.axes) == 2
    for ax in fig.axes:
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert set(lines) == {"A_X (probe)", "A_Y (probe)", "A_Z (probe)", "end-to-end (test)"}
        for agent in "XYZ":
            x, y = lines[f"A_{agent} (probe)"].get_data()
            rows = [r for r in log.agent_rows if r["agent"] == agent]
            assert list(x) == [r["step"] for r in rows]
            assert list(y) == [r["competence"] for r in rows]
        x, y = lines["end-to-end (test)"].get_data()
        assert list(y) == [r["accuracy"] for r in log.e2e_rows]
        assert ax.get_xlabel() == "optimizer step" and "C1-AND" in ax.get_title()
    png = competence_figure([out, out], tmp_path / "fig.png")
    img = matplotlib.image.imread(png)
    assert img.shape[:2] == (round(3.4 * 130), round(2 * 4.2 * 130))
    assert img[..., :3].std() > 0.05  # not a blank canvas
