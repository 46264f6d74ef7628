"""The Pool-of-Agents study on the testbed: its design's runs and configs, ES's learning
rate read from the scan, and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paper.pool_testbed import QUICK, PoolDesign

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
    # revision 1: ES is on-policy, so its unstable runs train without the setting's staleness
    assert es["rl"]["staleness"] == 0 and es["rl"]["lr_scale"] == {"X": 0.3}
    assert cfg.revisions and "staleness 0" in cfg.revisions[0]
    from llm_runs.config import TrainConfig

    TrainConfig.from_dict(es)  # a config llm_runs accepts (it refuses a stale ES update)
    assert cfg.run_name("unstable", "es", 8, 0) == es["name"] == "unstable_es_K8_s0"


@pytest.mark.slow
def test_quick_pipeline_writes_its_results(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.pool_testbed", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    bad = subprocess.run([*cmd, "--phase", "pool"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    assert subprocess.call(cmd, env=env) == 0
    scan = json.loads((out / "scan.json").read_text())
    assert scan["ratio"] in QUICK["es_ratios"]
    summ = json.loads((out / "summary.json").read_text())
    names = set(summ["methods"]["stable"])
    assert {"REINFORCE (single)", "grad K=2", "pbt K=2", "es K=2"} <= names
    assert summ["command"] == "python -m paper.pool_testbed"
    n_runs = len(QUICK["seeds"]) * (1 + 3) + len(QUICK["es_ratios"]) * len(QUICK["scan_seeds"])
    assert len(list((out / "runs").glob("*/manifest.json"))) == n_runs
    assert set(summ["k1_vs_k8"]["stable"]) == {"grad", "pbt", "es"}  # K = 2 is the largest
    assert summ["compute"]["cells"]["stable"]["grad K=2"]["adapter_MB"] > 0
    assert (out / "tradeoff.png").is_file() and (out / "compare.md").is_file()


def test_variance_ratio_interval_covers_the_true_ratio_95_percent_of_the_time():
    from paper._pool_compare import variance_ratio

    rng = np.random.default_rng(0)
    n1, n8, true = 10, 10, 0.5
    hits, resolved = 0, 0
    reps = 3000
    for _ in range(reps):
        v1 = rng.normal(0, 1.0, n1).var(ddof=1)
        v8 = rng.normal(0, np.sqrt(true), n8).var(ddof=1)
        got = variance_ratio(v8, n8, v1, n1)
        hits += got["ci95"][0] <= true <= got["ci95"][1]
        resolved += got["resolved"]
        assert got["ratio"] == pytest.approx(v8 / v1)
    assert abs(hits / reps - 0.95) < 0.015  # binomial sd at 3000 reps: 0.004
    assert 0.1 < resolved / reps < 0.5  # a halved variance is sometimes resolved at 10 seeds
    with pytest.raises(ValueError):
        variance_ratio(1.0, 1, 1.0, 10)


def test_collapse_difference_is_fishers_exact_test_by_hand():
    from paper._pool_compare import collapse_difference

    got = collapse_difference(5, 10, 0, 10)
    # hypergeometric: P(5 of the 5 collapses in the K group) = C(10,5)/C(20,5); two-sided x2
    assert got["p_fisher"] == pytest.approx(2 * 252 / 15504, rel=1e-9)
    assert got["rate_K"] == 0.5 and got["rate_1"] == 0.0
    assert collapse_difference(3, 10, 3, 10)["p_fisher"] == pytest.approx(1.0)


def _cell(method, k, v, ci, collapsed, seeds=10, wilson=(0.0, 0.3)):
    return {"method": method, "K": k, "seeds": seeds, "collapsed": collapsed,
            "variance": {"competence": v, "competence_ci95": list(ci)},
            "collapse_rate_ci95": list(wilson), "wall_s_mean": 200.0 * k}  # fmt: skip


def test_k1_vs_k8_and_prediction_checks_on_made_up_cells():
    from paper._pool_compare import compute_cost, k1_vs_k8, prediction_checks

    methods = {"stable": {
        "REINFORCE (single)": _cell("grad", 1, 4e-3, (2e-3, 1e-2), 0),
        "grad K=8": _cell("grad", 8, 8e-4, (4e-4, 3e-3), 0),
        "es K=8": _cell("es", 8, 4e-3, (2e-3, 1e-2), 5, wilson=(0.2, 0.8)),
    }}  # fmt: skip
    cmp = k1_vs_k8(methods)["stable"]
    assert cmp["grad"]["variance"]["ratio"] == pytest.approx(0.2)  # F(0.975; 9, 9) = 4.03
    assert cmp["grad"]["variance"]["resolved"] and not cmp["es"]["variance"]["resolved"]
    assert cmp["es"]["collapse"]["rate_K"] == 0.5
    pred = {"settings": {"stable": {
        "predicted": {"1": {"competence_variance": 5e-3, "collapse_fraction": 0.0},
                      "8": {"competence_variance": 4e-3, "collapse_fraction": 0.5}}}}}  # fmt: skip
    checks = prediction_checks(methods, pred)
    cells = checks["cells"]["stable"]
    assert cells["grad K=1"]["variance_right"] and cells["grad K=1"]["collapse_right"]
    assert not cells["grad K=8"]["variance_right"] and not cells["grad K=8"]["collapse_right"]
    assert checks["variance_right"] == {"right": 1, "checked": 2}
    methods["stable"]["grad K=8"]["s_per_step_mean"] = 16.0
    cost = compute_cost(methods, type("Cfg", (), {"preset": "micro"})())
    per = cost["adapter_params_per_member"]
    assert cost["cells"]["stable"]["grad K=8"]["adapter_MB"] == pytest.approx(
        8 * 3 * per * 4 / 2**20
    )
    assert cost["cells"]["stable"]["grad K=8"]["s_per_step"] == pytest.approx(16.0)
    assert cost["cells"]["stable"]["es K=8"]["s_per_step"] is None


def test_step_seconds_count_only_the_steps_the_last_process_trained(tmp_path):
    from paper._study_runs import step_seconds

    assert step_seconds(tmp_path, 200) is None
    (tmp_path / "timing.json").write_text(json.dumps({"seconds": 300.0, "start_step": 50}))
    assert step_seconds(tmp_path, 200) == pytest.approx(2.0)  # resumed at 50: 150 steps
    (tmp_path / "timing.json").write_text(json.dumps({"seconds": 300.0, "start_step": 0}))
    assert step_seconds(tmp_path, 200) == pytest.approx(1.5)


def test_a_computed_bound_a_hair_past_its_value_still_counts_as_inside():
    from paper._pool_compare import inside

    assert inside(0.0, 1e-17, 0.28) and inside(1.0, 0.7, 1.0 - 1e-16)
    assert not inside(0.0, 0.01, 0.28) and not inside(0.5, 0.1, 0.4)


def test_adapter_params_match_the_lora_count_by_hand():
    from paper._pool_compare import adapter_params

    # GPT-2 layer with LoRA rank r on c_attn (d -> 3d), attn c_proj (d -> d), c_fc (d -> 4d)
    # and mlp c_proj (4d -> d): r (4d + 2d + 5d + 5d) = 16 r d per layer
    assert adapter_params("micro", 8) == 16 * 8 * 32 * 2
    assert adapter_params("tiny", 8) == 16 * 8 * 128 * 4


def test_design_power_against_monte_carlo_and_its_own_search():
    """The F test's power (what 10 seeds per cell can resolve) against a Monte Carlo of
    normal samples; the seeds needed for a predicted ratio are the smallest with power 0.8."""
    from scipy.stats import f

    from paper._pool_compare import design_power, ratio_power

    rng = np.random.default_rng(3)
    n, r, reps = 10, 0.25, 20000
    a = rng.normal(size=(reps, n)).var(axis=1, ddof=1) * r  # K = 8 cell, variance r
    b = rng.normal(size=(reps, n)).var(axis=1, ddof=1)  # K = 1 cell, variance 1
    lo, hi = f.ppf(0.025, n - 1, n - 1), f.ppf(0.975, n - 1, n - 1)
    mc = np.mean((a / b < lo) | (a / b > hi))
    assert ratio_power(r, n) == pytest.approx(mc, abs=0.015)
    assert ratio_power(1.0, n) == pytest.approx(0.05, abs=1e-12)  # the test's size
    pred = {"settings": {"s": {
        "predicted": {"1": {"competence_variance": 1e-2}, "8": {"competence_variance": 4e-3}},
        "predicted_pbt": {"8": {"competence_variance": 1e-2}}}}}  # fmt: skip
    doc = design_power(n, pred)
    assert ratio_power(doc["detectable_ratio"], n) == pytest.approx(0.8, abs=1e-6)
    g = doc["predicted"]["s"]["grad"]
    assert g["ratio"] == pytest.approx(0.4) and g["power"] == pytest.approx(ratio_power(0.4, n))
    m = g["seeds_needed"]
    assert ratio_power(0.4, m) >= 0.8 > ratio_power(0.4, m - 1)
    assert doc["predicted"]["s"]["pbt"]["seeds_needed"] is None  # a predicted ratio of 1
