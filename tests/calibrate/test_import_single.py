"""Issue 70 §3: a single GRPO run's log through fit, predict, recommend and watch with the
one-node network, with the finite-step map and a stale policy lag; and the paper's
``imported`` study in its quick form."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate.__main__ import main

from . import log_shapes as ls

ROOT = Path(__file__).resolve().parents[2]
KEY = "X=rewards/correctness_reward/mean:0:2"


@pytest.mark.slow
def test_single_with_finite_steps_and_lag_through_fit_predict_recommend(tmp_path, capsys):
    a = ls.trl_grpo(tmp_path / "lr1e-6")
    b = ls.trl_grpo(tmp_path / "lr3e-6", args={**ls.TRL_ARGS, "learning_rate": 3e-6}, speed=1.5)
    fit = tmp_path / "fit"
    argv = [
        "fit",
        str(a),
        str(b),
        "--agent",
        KEY,
        "--covariate",
        "rl.lr=learning_rate",
        "--motif",
        "single",
        "--dynamics",
        "map",
        "--lag",
        "stale",
        "--method",
        "laplace",
        "--out",
        str(fit),
        "--no-progress",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "run status: 2 truncated" in out and "range [0, 2]" in out
    inputs = json.loads((fit / "inputs.json").read_text())
    assert {s["meaning"] for s in inputs["sources"]} == {"range [0, 2]"}
    assert inputs["status_counts"] == {"truncated": 2}
    names = set(json.loads((fit / "summary.json").read_text()))
    assert {"rho[X]", "lag"} <= names and not any("->" in n for n in names)  # no edge
    assert main(["predict", str(fit), "--set", "rl.lr=2e-6", "--steps", "100", "--json"]) == 0
    pred = json.loads(capsys.readouterr().out)
    (p,) = pred["predictions"]
    assert list(p["agents"]) == ["X"] and 0 <= p["agents"]["X"]["final"]["mean"] <= 1
    assert [r["meaning"] for r in pred["inputs"]] == ["range [0, 2]"]  # shown with the forecast
    assert main(["predict", str(fit), "--set", "rl.lr=2e-6", "--steps", "100"]) == 0
    assert "competence of X <- rewards/correctness_reward/mean: range [0, 2]" in (
        capsys.readouterr().out)  # fmt: skip
    assert main(["recommend", str(fit), "--grid", "1e-6,2e-6,3e-6", "--steps", "100"]) == 0
    rec = json.loads((fit / "recommendation.json").read_text())
    assert [r["meaning"] for r in rec["inputs"]] == ["range [0, 2]"]


@pytest.mark.slow
def test_watch_a_single_imported_run_counts_its_status(tmp_path, capsys):
    log = ls.verl_jsonl(tmp_path / "verl", diverge_at=6)
    argv = [
        "watch",
        str(log),
        "--once",
        "--motif",
        "single",
        "--agent",
        "X=critic/score/mean:rate",
        "--steps",
        "20",
        "--json",
    ]
    assert main(argv) in (0, 3)
    out, err = capsys.readouterr()
    assert "run status: diverged (non-finite actor/pg_loss at step 6)" in err
    row = json.loads(out.strip().splitlines()[-1])
    assert row["run_status"] == "diverged" and row["step"] == 8


@pytest.mark.slow
def test_paper_imported_quick(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    r = subprocess.run(
        [sys.executable, "-m", "paper.imported", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "summary.json").read_text())
    grpo, three = s["cases"]["grpo"], s["cases"]["three_agent"]
    assert [x["meaning"] for x in grpo["sources"]] == ["range [0, 2]"] * 3
    assert {x["n_eval_from"] for x in grpo["sources"]} == {
        "num_generations 4 × per_device_train_batch_size 2 × gradient_accumulation_steps 1 "
        "× logging_steps 5"
    }
    assert set(three["forecast_vs_heldout"]) == {"solver", "verifier", "judge"}
    for case in (grpo, three):
        for f in case["forecast_vs_heldout"].values():
            assert 0 <= f["q05"] <= f["mean"] <= f["q95"] <= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "summary.json", "table.md"]


def test_fit_inputs_reads_the_best_fit_of_a_selection(tmp_path):
    from calibrate._cli_inputs import fit_inputs, input_lines

    src = {"run": "r", "agent": "X", "key": "rewards/acc", "meaning": "range [0, 2]",
           "n_eval_from": "training arguments", "point": "window mean"}  # fmt: skip
    (tmp_path / "fits" / "C1-AND").mkdir(parents=True)
    (tmp_path / "fits" / "A-OR").mkdir(parents=True)
    (tmp_path / "selection.json").write_text(json.dumps({"best": "C1-AND"}))
    (tmp_path / "fits" / "A-OR" / "inputs.json").write_text(json.dumps({"sources": []}))
    (tmp_path / "fits" / "C1-AND" / "inputs.json").write_text(
        json.dumps({"sources": [src, src | {"run": "s"}]}))  # fmt: skip
    got = fit_inputs(tmp_path)
    assert [r["meaning"] for r in got] == ["range [0, 2]"]  # one line per agent and key
    assert input_lines(got) == ["competence of X <- rewards/acc: range [0, 2]"]
    assert fit_inputs(tmp_path / "fits" / "A-OR") == [] and fit_inputs(tmp_path / "none") == []
