"""The hypotheses study on the testbed: its power calculation against Monte Carlo, its
pooled spread against a least-squares oracle, its design's runs, and its --quick pipeline."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paper import _hypotheses_testbed as ht
from paper.hypotheses_testbed import QUICK, StudyDesign

ROOT = Path(__file__).resolve().parents[1]


def _h1_stat(rng, sd, n, n_types, n_tasks, effect, reps):
    """H1's statistic: mean over tasks of (mean of the others' dips - C1's dip)."""
    others = rng.normal(effect, sd, size=(reps, n_tasks, n_types - 1, n)).mean(axis=(2, 3))
    c1 = rng.normal(0.0, sd, size=(reps, n_tasks, n)).mean(axis=2)
    return (others - c1).mean(axis=1)


def test_variance_factors_match_monte_carlo():
    rng = np.random.default_rng(0)
    sd, n = 0.03, 4
    for n_types, n_tasks in ((8, 2), (2, 1), (8, 1)):
        c = ht.variance_factors(n_types, n_tasks)
        h1 = _h1_stat(rng, sd, n, n_types, n_tasks, 0.0, 40000)
        assert h1.var() * n / sd**2 == pytest.approx(c["h1"], rel=0.03)
        i1 = rng.normal(0.0, sd, size=(40000, n_tasks, n)).mean(axis=2)
        c1 = rng.normal(0.0, sd, size=(40000, n_tasks, n)).mean(axis=2)
        h2 = (i1 - c1).mean(axis=1)
        assert h2.var() * n / sd**2 == pytest.approx(c["h2"], rel=0.03)


def test_seeds_needed_gives_the_stated_power():
    # choose the effect so that exactly n = 4 seeds are needed; then a one-sided z test at
    # alpha on the simulated statistic detects it in 80 % of repetitions
    sd, alpha, power, n = 0.03, 0.05, 0.8, 4
    c = ht.variance_factors(8, 2)["h1"]
    z = ht._z(1 - alpha) + ht._z(power)
    effect = sd * z * math.sqrt(c / n)
    assert ht.seeds_needed(sd, c, effect, alpha, power) == pytest.approx(n)
    stat = _h1_stat(np.random.default_rng(1), sd, n, 8, 2, effect, 40000)
    se = sd * math.sqrt(c / n)
    assert np.mean(stat / se > ht._z(1 - alpha)) == pytest.approx(power, abs=0.01)
    # twice the effect needs a quarter of the seeds
    assert ht.seeds_needed(sd, c, 2 * effect, alpha, power) == pytest.approx(n / 4)


def test_pooled_sd_matches_a_least_squares_oracle():
    rng = np.random.default_rng(2)
    groups = [list(rng.normal(m, 0.1, size=k)) for m, k in ((0.2, 5), (0.7, 3), (0.5, 4), (0.1, 1))]
    sd, df = ht.pooled_sd(groups)
    # the residual mean square of a one-way linear model (group dummies) on the groups of >= 2
    kept = [g for g in groups if len(g) > 1]
    y = np.concatenate(kept)
    X = np.zeros((y.size, len(kept)))
    row = 0
    for j, g in enumerate(kept):
        X[row : row + len(g), j] = 1.0
        row += len(g)
    resid = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    assert df == y.size - len(kept) == 9
    assert sd == pytest.approx(math.sqrt(resid @ resid / df), rel=1e-12)
    with pytest.raises(RuntimeError, match="two seeds"):
        ht.pooled_sd([[0.1], [0.2]])


def test_measured_adds_the_noise_of_the_planned_seeds():
    stat = np.full(20000, 0.05)
    m = ht.measured(stat, 0.03, 1.0, 4, 0.05, seed=0)
    assert m["se"] == pytest.approx(0.015)
    assert m["mean"] == pytest.approx(0.05, abs=0.001)
    # P(z > 1.645) for a mean of 0.05 / 0.015 = 3.33 sd: 1 - Phi(1.645 - 3.333) = 0.954
    assert m["p_holds"] == pytest.approx(0.954, abs=0.01)


def test_the_design_reads_its_seeds_and_lagged_setting_from_its_stored_files(tmp_path):
    cfg = StudyDesign()
    cfg.bind(tmp_path)
    with pytest.raises(RuntimeError, match="power"):
        cfg.jobs("runs")
    (tmp_path / "power.json").write_text(json.dumps({"seeds": 3}))
    (tmp_path / "choose.json").write_text(
        json.dumps({"chosen": {"rl.lr": 4e-3, "rl.staleness": 16}})
    )
    jobs = cfg.jobs("runs")
    assert len(jobs) == 3 * (2 * 2 * 8 + 2) == len(set(jobs))
    lag = cfg.train_config("lag", "math", "I1", 2)
    assert lag["rl"] == {"lr": 4e-3, "staleness": 16} and lag["task"]["shift"] == {"step": 100}
    pulse = cfg.train_config("pulse", "rag", "C3", 0)
    assert pulse["rl"] == {"lr": 1e-3, "staleness": 0}
    assert pulse["task"]["spurious"] == {"mode": "flip", "length": 10, "starts": [100, 150]}
    assert cfg.run_name("pulse", "rag", "C3", 0) == pulse["name"] == "pulse_rag_C3_s0"


@pytest.mark.slow
def test_quick_pipeline_writes_its_results(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.hypotheses_testbed", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    # the test runs are refused before the predictions are stored
    bad = subprocess.run([*cmd, "--phase", "runs"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    assert subprocess.call(cmd, env=env) == 0
    power = json.loads((out / "power.json").read_text())
    assert power["seeds"] == QUICK["min_seeds"]
    pred = json.loads((out / "predictions.json").read_text())
    assert set(pred["tasks"]) == {"math"} and "h1_measured" in pred["tasks"]["math"]
    summ = json.loads((out / "summary.json").read_text())
    assert set(summ["hypotheses"]) == {"c1_filters_spurious", "i1_adapts_faster"}
    assert summ["command"] == "python -m paper.hypotheses_testbed"
    checked = summ["predictions_checked"]["c1_filters_spurious"]["math"]
    assert checked["predicted_ci90"] == pred["tasks"]["math"]["h1_measured"]["ci90"]
    n_runs = QUICK["min_seeds"] * (2 * len(QUICK["motifs"]) + 2)
    assert len(list((out / "runs").glob("*/manifest.json"))) == n_runs


def test_each_stored_interval_is_checked_against_the_measured_effect():
    from paper._hypotheses_testbed import check_predictions

    def hyp(effect, p):
        return {"alpha": 0.05, "per_task": {"math": {"effect": effect, "p": p, "ci95": [0, 1]}}}

    summary = {"hypotheses": {"c1_filters_spurious": hyp(0.02, 0.2),
                              "i1_adapts_faster": hyp(0.09, 0.01)}}  # fmt: skip
    summary["hypotheses"]["i1_adapts_faster"]["oscillation"] = {
        "setting": {"task": "math"}, "runs": 3, "oscillating": {"I1": 2, "C1": 0},
        "ci95": {"I1": [0.2, 0.94], "C1": [0.0, 0.56]}}  # fmt: skip
    band = {"mean": 0.0, "ci90": [-0.01, 0.03], "p_holds": 0.2}
    pred = {"tasks": {"math": {"h1_measured": band, "h2_measured": {**band, "p_holds": 0.8},
                               "lag_oscillation_fraction": {"I1": 0.04, "C1": 0.0}}}}  # fmt: skip
    got = check_predictions(summary, pred)
    h1, h2 = got["c1_filters_spurious"]["math"], got["i1_adapts_faster"]["math"]
    assert h1["inside_ci90"] and not h1["holds_on_task"]
    assert not h2["inside_ci90"] and h2["holds_on_task"] and h2["predicted_p_holds"] == 0.8
    assert not got["oscillation"]["I1"]["inside_wilson95"]  # 0.04 below [0.2, 0.94]
    assert (
        got["oscillation"]["C1"]["inside_wilson95"]
        and got["oscillation"]["I1"]["measured"] == "2/3"
    )


def test_the_post_hoc_grouping_follows_each_type_s_x_to_y_sign():
    from paper._hypotheses_testbed import by_edge_sign

    # recovery 0.3 where X->Y activates (C1, C3, I1, I3 in the FFL presets), 0.1 where it
    # represses (C2, C4, I2, I4)
    act = {"C1", "C3", "I1", "I3"}
    types = ("C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4")
    rec = {m: {"recovery": {"values": [0.3 if m in act else 0.1] * 3}} for m in types}
    per = {"shift": {"math": rec}}
    got = by_edge_sign(per)["recovery"]["math"]
    assert got["activating"] == pytest.approx(0.3) and got["repressing"] == pytest.approx(0.1)
    assert got["difference"] == pytest.approx(0.2)
    only_act = {"shift": {"math": {m: rec[m] for m in ("C1", "I1")}}}
    assert by_edge_sign(only_act)["recovery"]["math"] is None
