"""The second and third predict-first forecast tests (paper/forecast_round2.py,
paper/forecast_round3.py): new settings and seeds only, the pilots' range of the first study,
the spread's choice rule, the runs' rule labels' shares, the runs' configs, and (slow) the
quick pipelines from a quick first study."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paper import forecast_round2 as fr
from paper import forecast_round3 as f3
from paper import forecast_study as fs
from paper._forecast_baselines import GROUPS
from paper._forecast_round2 import choose_sd, rule_probs

ROOT = Path(__file__).resolve().parents[1]


def test_every_run_is_new_and_the_split_follows_the_first_studys_pilots():
    d, first = fr.Round2Design(), fs.ForecastDesign()
    runs = d.jobs("heldout")
    assert len(runs) == 24 * 2 and d.jobs("pilots") == []
    old = {fs.run_name(*j) for j in first.jobs("heldout") + first.jobs("pilots")}
    assert not {fs.run_name(*j) for j in runs} & old
    assert not set(d.seeds) & set(first.seeds)
    # the range: the first study's pilot settings, computed independently of PILOT_RANGE
    pil = [first.setting(tuple(p)) for p in first.pilots]
    for knob, (lo, hi) in d.pilot_range.items():
        assert (lo, hi) == (min(p[knob] for p in pil), max(p[knob] for p in pil))
    splits = {c: d.split(c) for c in d.cells()}
    assert sum(s == "interpolation" for s in splits.values()) == 4
    inside = {(i, j, 0) for i in (0, 1) for j in (0, 1)}  # lr 6e-3/1.6e-2, lag 1/3, X 0.2
    assert {c for c, s in splits.items() if s == "interpolation"} == inside


def test_the_third_tests_runs_are_new_to_both_earlier_tests_and_its_count_is_the_power_calcs():
    d, second, first = f3.Round3Design(), fr.Round2Design(), fs.ForecastDesign()
    names = {fs.run_name(*j) for j in d.jobs("heldout")}
    earlier = [*first.jobs("heldout"), *first.jobs("pilots"), *second.jobs("heldout")]
    assert not names & {fs.run_name(*j) for j in earlier}
    assert not set(d.seeds) & (set(first.seeds) | set(second.seeds))
    assert d.rule_labels and d.pilot_range == second.pilot_range
    # McNemar: discordance 0.25, difference 0.23, alpha 0.05 two-sided, power 0.8
    z_a, z_b, pd, delta = 1.959964, 0.841621, 0.25, 0.23
    n = math.ceil((z_a * math.sqrt(pd) + z_b * math.sqrt(pd - delta**2)) ** 2 / delta**2)
    assert len(names) >= n == 35


def test_rule_probs_are_each_settings_shares_of_the_groups():
    p = rule_probs([["collapse", "converged", "collapse", "collapse"], ["failed", "unsettled"]])
    assert p.shape == (2, len(GROUPS))
    assert p[0, GROUPS.index("collapse")] == 0.75 and p[0, GROUPS.index("converged")] == 0.25
    assert p[1, GROUPS.index("failed")] == 0.5 and p[1, GROUPS.index("unsettled")] == 0.5
    assert np.allclose(p.sum(1), 1.0)


def test_the_runs_are_the_first_studys_training_config_at_new_knobs():
    d, first = fr.Round2Design(), fs.ForecastDesign()
    a = d.train_config(6e-3, 3, 0.45, 2)
    b = first.train_config(4e-3, 4, 0.3, 0)
    for cfg in (a, b):
        for key in ("rl", "seed", "name"):
            cfg.pop(key)
    assert a == b


def test_the_spread_with_the_best_log_score_wins_and_near_ties_go_to_the_smaller():
    assert choose_sd({0.0: -3.3, 0.5: -3.1, 1.0: -3.2}) == 0.5
    assert choose_sd({0.0: -3.3, 0.5: -3.104, 1.0: -3.1}) == 0.5  # within 0.005
    assert choose_sd({0.0: -3.3, 0.5: -3.2, 1.0: -3.1}) == 1.0
    assert choose_sd({0.25: -3.0, 2.0: -3.0}) == 0.25


@pytest.mark.parametrize("change", [{"pilots": [[0, 0, 0]]}, {"sd_grid": [1.0, 0.5]},
                                    {"staleness": [3, 1]}])  # fmt: skip
def test_a_bad_design_is_refused(change):
    with pytest.raises(ValueError):
        fr.Round2Design(**change)


@pytest.mark.slow
def test_the_quick_pipeline_chooses_the_spread_and_stores_forecasts_before_its_runs(tmp_path):
    py = sys.executable
    first = [py, "-m", "paper.forecast_study", "--quick", "--workers", "2",
             "--out", str(tmp_path / "first"), "--runs", str(tmp_path / "runs1")]  # fmt: skip
    assert subprocess.run(first, capture_output=True, text=True).returncode == 0
    second = [py, "-m", "paper.forecast_round2", "--quick", "--workers", "2",
              "--out", str(tmp_path / "second"), "--runs", str(tmp_path / "runs2")]  # fmt: skip
    gated = subprocess.run([*second, "--phase", "heldout"], capture_output=True, text=True)
    assert gated.returncode == 2 and "predictions.json" in gated.stderr
    r = subprocess.run(second, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "second"
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["extrapolation_sd"] in (0.0, 1.0) and set(cal["scores"]) == {"0", "1"}
    preds = json.loads((out / "predictions.json").read_text())
    first_run = min(
        json.loads(m.read_text())["created"] for m in (tmp_path / "runs2").glob("*/manifest.json")
    )
    assert preds["created"] < first_run
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["n_runs"]) == {"interpolation", "extrapolation", "all"}
    methods = summary["crps"]["all"]
    assert "motif model, bent links (new run)" in methods and "nearest pilot" in methods
    assert (out / "posthoc.json").is_file()
    third = [py, "-m", "paper.forecast_round3", "--quick", "--workers", "2",
             "--out", str(tmp_path / "third"), "--runs", str(tmp_path / "runs3")]  # fmt: skip
    r = subprocess.run(third, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    s3 = json.loads((tmp_path / "third" / "summary.json").read_text())
    assert "motif model, bent links, runs' rule (new run)" in s3["regime_accuracy"]["all"]
    assert s3["command"] == "python -m paper.forecast_round3"
