"""The Pool-of-Agents study on the testbed: its design's runs and configs, ES's learning
rate read from the scan, and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper"))

from pool_testbed import QUICK, PoolDesign

ROOT = Path(__file__).resolve().parents[1]


def test_the_design_s_runs_and_configs(tmp_path):
    cfg = PoolDesign()
    cfg.bind(tmp_path)
    assert len(cfg.seeds) >= 10  # the minimum
    assert len(cfg.jobs("scan")) == 4 * 2
    assert len(cfg.jobs("single")) == 2 * 10
    pool = cfg.jobs("pool")
    assert len(pool) == len(set(pool)) == 10 * 2 * 3 * 3
    assert {m for _, m, _, _ in pool} == {"grad", "pbt", "es"}
    unstable = cfg.train_config("unstable", "grad", 1, 3)
    assert unstable["rl"] == {"lr": 1e-2, "staleness": 4, "lr_scale": {"X": 0.3}}
    assert unstable["pool_size"] == 1 and unstable["pool"]["init_noise"] == 0.0
    pbt = cfg.train_config("stable", "pbt", 4, 0)
    assert pbt["pool"]["exploit_every"] == 20 and pbt["pool"]["update"] == "grad"
    assert cfg.train_config("stable", "grad", 4, 0)["pool"].get("exploit_every") is None
    scan = cfg.train_config("stable", "es16", 2, 100)
    assert scan["rl"]["lr"] == pytest.approx(1.6e-2) and scan["pool"]["update"] == "es"
    with pytest.raises(RuntimeError, match="scan"):  # ES's own lr needs the scan's choice
        cfg.train_config("stable", "es", 2, 0)
    (tmp_path / "scan.json").write_text(json.dumps({"ratio": 4.0}))
    es = cfg.train_config("unstable", "es", 8, 0)
    assert es["rl"]["lr"] == pytest.approx(4e-2) and es["pool_size"] == 8
    assert cfg.run_name("unstable", "es", 8, 0) == es["name"] == "unstable_es_K8_s0"


@pytest.mark.slow
def test_quick_pipeline_writes_its_results(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, str(ROOT / "paper" / "pool_testbed.py"), "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    bad = subprocess.run([*cmd, "--phase", "pool"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    assert subprocess.call(cmd, env=env) == 0
    scan = json.loads((out / "scan.json").read_text())
    assert scan["ratio"] in QUICK["es_ratios"]
    summ = json.loads((out / "summary.json").read_text())
    names = set(summ["methods"]["stable"])
    assert {"GRPO (single)", "grad K=2", "pbt K=2", "es K=2"} <= names
    assert summ["command"] == "python paper/pool_testbed.py"
    n_runs = len(QUICK["seeds"]) * (1 + 3) + len(QUICK["es_ratios"]) * len(QUICK["scan_seeds"])
    assert len(list((out / "runs").glob("*/manifest.json"))) == n_runs
