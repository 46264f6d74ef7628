"""The wiring read-back with a knock-down of X per set (paper/wiring_pulses.py): its design's
sets, runs and configs (the reused ones the third read-back's own), and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_pulses import PulseDesign, run_name
from paper._wiring_weights import WeightDesign
from paper._wiring_weights import run_name as weight_run_name

ROOT = Path(__file__).resolve().parents[1]


def test_the_design_s_sets_runs_and_configs(tmp_path):
    from llm_runs._edges import pulse_windows
    from llm_runs.config import TrainConfig

    cfg = PulseDesign()
    sets = cfg.sets()
    assert len(sets) == 8 and all(len(js) == 3 for js in sets.values())  # >= 4 types, >= 3
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 8 and all(j[2] == "pulse" for j in jobs)  # only the pulse runs
    # the reused runs are the third read-back's, config for config
    old = WeightDesign()
    for m, k, kind in (j for js in sets.values() for j in js if j[2] != "pulse"):
        i = {"w0": 0, "w0.9": 2}[kind]
        assert old.weights[i] == (0.0 if kind == "w0" else cfg.weight)
        assert cfg.train_config(m, k, kind) == old.train_config(m, k, i, old.weights[i])
        assert cfg.run_path(tmp_path, (m, k, kind)).name == weight_run_name(m, k, i, old.weights[i])
    c = cfg.train_config("C2", 1, "pulse")
    assert c["seed"] == 3013 and c["name"] == run_name("C2", 1, "pulse") == "C2_set1_pulseX_w0.9"
    assert cfg.run_path(tmp_path, ("C2", 1, "pulse")) == tmp_path / "C2_set1_pulseX_w0.9"
    tc = TrainConfig.from_dict(c)
    assert tc.network.default_weight == 0.9 and tc.task.spurious.roles == ["X"]
    assert pulse_windows(tc.task.spurious, tc.steps, seed=tc.seed) == [[30, 60]]
    seeds = {cfg.train_config(*j)["seed"] for j in jobs}
    assert seeds == {3003, 3013}  # paired across types, none of the earlier runs'
    quick = PulseDesign(reuse_from=None, wiring_types=["C2"], wiring_sets=[0])
    assert len(quick.jobs("wiring")) == 3
    with pytest.raises(ValueError, match="training phase"):
        cfg.jobs("fit")


@pytest.mark.slow
def test_quick_pipeline_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_pulses", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    w = s["wiring_identification"]
    assert list(w["sets"]) == ["C2_set0"] and s["missing_sets"] == []
    assert 1 <= w["sets"]["C2_set0"]["rank"] <= 16
    fit = json.loads((out / "wiring" / "C2_set0" / "fits" / "C2-AND" / "config.json").read_text())
    assert fit["pulses"] is True and fit["edge_weights"] is True
    man = json.loads((out / "runs" / "C2_set0_pulseX_w0.9" / "manifest.json").read_text())
    assert man["schedules"]["pulses"] == [[2, 5]]
    assert man["config"]["task"]["spurious"]["roles"] == ["X"]
    assert len(list((out / "runs").glob("*/manifest.json"))) == 3


def test_the_knockdown_design_adds_a_y_pulse_to_each_set(tmp_path):
    from llm_runs.config import TrainConfig
    from paper._wiring_knockdowns import KnockdownDesign
    from paper._wiring_knockdowns import run_name as kd_run_name

    cfg, earlier = KnockdownDesign(), PulseDesign()
    sets = cfg.sets()
    assert list(sets) == list(earlier.sets()) and all(len(js) == 4 for js in sets.values())
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 8 and all(j[2] == "pulseY" for j in jobs)
    for js in sets.values():  # the three earlier runs of a set, config for config and folder
        for j in js[:3]:
            assert cfg.train_config(*j) == earlier.train_config(*j)
            assert cfg.run_path(tmp_path, j).name == run_name(*j)
    c = cfg.train_config("I1", 1, "pulseY")
    assert c["seed"] == 3014 and c["name"] == kd_run_name("I1", 1, "pulseY")
    tc = TrainConfig.from_dict(c)
    assert tc.task.spurious.roles == ["Y"] and tc.task.spurious.starts == [80]
    assert tc.network.default_weight == 0.9 and tc.network.motif == "I1"
    assert cfg.run_path(tmp_path, ("I1", 1, "pulseY")) == tmp_path / "I1_set1_pulseY_w0.9"
    quick = KnockdownDesign(reuse_pulses_from=None,
                            earlier={**cfg.earlier, "reuse_from": None, "wiring_types": ["C2"],
                                     "wiring_sets": [0]})  # fmt: skip
    assert len(quick.jobs("wiring")) == 4


@pytest.mark.slow
def test_quick_knockdown_pipeline_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_knockdowns", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert list(s["wiring_identification"]["sets"]) == ["C2_set0"] and s["missing_sets"] == []
    assert set(s["earlier"]) >= {"weight_family", "x_knockdown"}
    man = json.loads((out / "runs" / "C2_set0_pulseY_w0.9" / "manifest.json").read_text())
    assert man["schedules"]["pulses"] == [[4, 6]]
    assert man["config"]["task"]["spurious"]["roles"] == ["Y"]
    assert len(list((out / "runs").glob("*/manifest.json"))) == 4


def test_the_refit_reads_both_knockdown_read_backs_runs(tmp_path):
    from paper._wiring_floor import FloorDesign
    from paper._wiring_knockdowns import KnockdownDesign

    cfg, kd = FloorDesign(), KnockdownDesign()
    sets = cfg.sets()
    assert len(sets) == 16 and cfg.jobs("wiring") == []  # a re-analysis: no run trained
    for name, js in kd.sets().items():
        assert sets[f"{name}_x"] == js[:3] and sets[f"{name}_xy"] == js
    arch = {"pulse": "wiring_pulses", "pulseY": "wiring_knockdowns", "w0": "wiring_weights",
            "w0.9": "wiring_weights"}  # fmt: skip
    for js in sets.values():  # every run from the archive that holds it, none from --runs
        for j in js:
            p = cfg.run_path(tmp_path, j)
            assert p.parent == ROOT / "paper" / "results" / arch[j[2]] / "runs", (j, p)
            assert p.name == kd.run_path(tmp_path, j).name
    assert cfg.pipeline == kd.pipeline == "X->Y,Y->Z"
    with pytest.raises(ValueError, match="training phase"):
        cfg.jobs("fit")


@pytest.mark.slow
def test_quick_refit_pipeline_fits_both_families(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_floor", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_x", "C2_set0_xy"]
    assert s["missing_sets"] == [] and set(s["by_family"]) == {"x", "xy"}
    for fam in ("x", "xy"):
        b = s["by_family"][fam]
        assert b["n_sets"] == 1 and 0 <= b["truth_first_or_indistinguishable_sets"] <= 1
        k = b["kappa_true_type"][f"C2_set0_{fam}"]
        assert set(k) == {"flip_lag", "flip[X]", "flip[Y]", "flip[Z]"}
        assert all(v > 0 for v in k.values())
    fit = out / "wiring" / "C2_set0_x" / "fits" / "C2-AND"
    assert json.loads((fit / "config.json").read_text())["pulses"] is True
    data = json.loads((fit / "run_configs.json").read_text())
    assert len(data) == 3  # the X family: the set's first three runs
