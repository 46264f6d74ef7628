"""The wiring read-back with Y knocked down while it learns (paper/wiring_early.py): its
sets (the X knock-down read-back's three runs from their archives, one new run), the new
run's config (the late Y knock-down's, at another window and seed), and its --quick
pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_early import QUICK, EarlyDesign, run_name
from paper._wiring_knockdowns import KnockdownDesign

ROOT = Path(__file__).resolve().parents[1]


def test_each_set_is_the_x_read_back_s_runs_and_one_early_y_knockdown(tmp_path):
    from llm_runs._edges import pulse_windows
    from llm_runs.config import TrainConfig

    cfg, kd = EarlyDesign(), KnockdownDesign()
    sets = cfg.sets()
    assert list(sets) == list(kd.sets()) and len(sets) == 8
    arch = {"pulse": "wiring_pulses", "w0": "wiring_weights", "w0.9": "wiring_weights"}
    for name, js in sets.items():
        assert js[:3] == kd.sets()[name][:3] and js[3][2] == "pulseYe"
        for j in js[:3]:  # reused: from the archive that holds it, config unchanged
            p = cfg.run_path(tmp_path, j)
            assert p.parent == ROOT / "paper" / "results" / arch[j[2]] / "runs", (j, p)
            assert cfg.train_config(*j) == kd.train_config(*j)
        assert cfg.run_path(tmp_path, js[3]) == tmp_path / run_name(*js[3])
    assert cfg.jobs("wiring") == [js[3] for js in sets.values()]  # only the new runs
    new, late = cfg.train_config("I1", 1, "pulseYe"), kd.train_config("I1", 1, "pulseY")
    assert new["seed"] == 3015 and new["name"] == "I1_set1_pulseYearly_w0.9"
    assert new["seed"] not in {kd.train_config(*j)["seed"] for j in kd.sets()["I1_set1"]}
    diff = {k for k in new if new[k] != late[k]}
    assert diff == {"seed", "name", "task"}  # nothing else differs from the late knock-down
    assert {k for k in new["task"] if new["task"][k] != late["task"][k]} == {"spurious"}
    tc = TrainConfig.from_dict(new)
    assert tc.task.spurious.roles == ["Y"] and tc.task.spurious.starts == [40]
    assert pulse_windows(tc.task.spurious, tc.steps, seed=tc.seed) == [[40, 80]]
    with pytest.raises(ValueError, match="training phase"):
        cfg.jobs("fit")
    quick = EarlyDesign(**QUICK)  # without the archives every run of a set is trained
    assert [j[2] for j in quick.jobs("wiring")] == ["w0", "w0.9", "pulse", "pulseYe"]


@pytest.mark.slow
def test_quick_early_knockdown_pipeline_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_early", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert list(s["wiring_identification"]["sets"]) == ["C2_set0"] and s["missing_sets"] == []
    m = s["measures"]
    assert m["n_sets"] == 1 and 0 <= m["truth_first_or_indistinguishable_sets"] <= 1
    assert set(m["kappa_true_type"]["C2_set0"]) == {"flip_lag", "flip[X]", "flip[Y]", "flip[Z]"}
    man = json.loads((out / "runs" / "C2_set0_pulseYearly_w0.9" / "manifest.json").read_text())
    assert man["schedules"]["pulses"] == [[2, 5]]
    assert man["config"]["task"]["spurious"]["roles"] == ["Y"]
    assert len(list((out / "runs").glob("*/manifest.json"))) == 4
    r = s["responses"]["C2_set0"]  # --quick: no late knock-down run, its own early one
    assert set(r) == {"w0.9", "early", "early_minus_w0.9"}
    for key, d in r["early_minus_w0.9"].items():
        assert d == pytest.approx(r["early"][key] - r["w0.9"][key], abs=1e-12)
    assert 0 <= r["early"]["auc_Z"] <= 1 and r["early"]["steps_to_Z_0.7"] <= 8
