"""Joint training end to end on a micro model: logs, algorithms, schedules, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from llm_runs._train import CKPT_FILE, train
from llm_runs.config import TrainConfig, save_config
from llm_runs.runlog import COMPETENCE_FILE, read_run


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


def test_lr_scale_multiplies_role_learning_rate(tmp_path, micro_cfg):
    d = micro_cfg
    d["network"] = {"motif": "C1", "default_weight": 0.0}  # coupling factor 1 everywhere
    d["rl"]["lr_scale"] = {"X": 0.1, "Z": 5.0}
    log = read_run(train(TrainConfig.from_dict(d), tmp_path / "run", progress=False))
    lr = {r["agent"]: r["lr"] for r in log.agent_rows if r["step"] == 6}
    assert lr["X"] == pytest.approx(0.1 * lr["Y"])
    assert lr["Z"] == pytest.approx(5.0 * lr["Y"])


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


def test_sigkill_resume_reproduces_log_exactly(tmp_path, micro_cfg):
    d = micro_cfg
    d.update(steps=30, eval_every=3, ckpt_every=4)
    cfg = TrainConfig.from_dict(d)
    ref = train(cfg, tmp_path / "ref", progress=False)
    cfg_file = save_config(cfg, tmp_path / "cfg.json")
    out = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "llm_runs",
        "train",
        "--config",
        str(cfg_file),
        "--out",
        str(out),
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log_file = out / COMPETENCE_FILE
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / CKPT_FILE).exists() and log_file.exists():
            steps = [json.loads(x)["step"] for x in log_file.read_text().splitlines() if x]
            if steps and max(steps) >= 9:
                break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_steps = {json.loads(x)["step"] for x in log_file.read_text().splitlines() if x}
    assert max(killed_steps) < 30
    res = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "end-to-end accuracy" in res.stdout
    a, b = read_run(ref).rows, read_run(out).rows
    assert [(r["step"], r.get("agent")) for r in a] == [(r["step"], r.get("agent")) for r in b]
    assert a == b


def test_cli_rejects_bad_config(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "llm_runs", "train", "--out", str(tmp_path / "x"), "--algo", "sac"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "rl.algo" in res.stderr


def test_figure(tmp_path, micro_cfg):
    from llm_runs._figure import competence_figure

    out = train(TrainConfig.from_dict(micro_cfg), tmp_path / "run", progress=False)
    png = competence_figure([out, out], tmp_path / "fig.png")
    assert Path(png).stat().st_size > 1000
