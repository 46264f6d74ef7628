"""The predict-first forecast experiment's design (paper/forecast_study.py): the grid, the
pilots (<= 25 %), the splits fixed by the design, the runs' configs, the 3-knob boundary
error, and (slow) the whole quick pipeline through the study loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_runs.config import TrainConfig
from paper import forecast_study as fs
from paper._forecast_report import boundary_error

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_design_has_24_settings_a_quarter_of_them_pilots_and_both_splits():
    d = fs.ForecastDesign()
    cells = d.cells()
    assert len(cells) == 24 and len(d.pilots) == 6
    splits = [d.split(c) for c in cells]
    assert splits.count("pilot") == 6
    assert splits.count("interpolation") >= 4 and splits.count("extrapolation") >= 8
    for c, s in zip(cells, splits, strict=True):
        # extrapolation: some knob index beyond the pilots' range (an independent check)
        beyond = any(c[k] > max(p[k] for p in d.pilots) or c[k] < min(p[k] for p in d.pilots)
                     for k in range(3))  # fmt: skip
        assert (s == "extrapolation") is beyond or s == "pilot"
    held = d.jobs("heldout")
    assert len(held) == 18 * len(d.seeds) and len(d.jobs("pilots")) == 6 * len(d.seeds)
    assert not {fs.run_name(*j) for j in held} & {fs.run_name(*j) for j in d.jobs("pilots")}


@pytest.mark.parametrize(
    "change",
    [{"pilots": [[0, 0, 0]] * 2}, {"pilots": [[9, 0, 0]]}, {"lrs": [2e-3, 1e-3, 4e-3, 8e-3]},
     {"pilots": [[i, j, 0] for i in range(4) for j in range(2)]}],
)  # fmt: skip
def test_a_bad_design_is_refused(change):
    with pytest.raises(ValueError):
        fs.ForecastDesign(**change)


def test_each_run_is_a_valid_training_config_with_its_three_knobs():
    d = fs.ForecastDesign()
    lr, k, x, seed = d.jobs("heldout")[-1]
    cfg = TrainConfig.from_dict(d.train_config(lr, k, x, seed))
    assert cfg.rl.lr == lr and cfg.rl.staleness == k and cfg.rl.lr_scale == {"X": x}
    assert cfg.seed == seed and cfg.steps == d.steps and cfg.network.motif == "C1"


def test_boundary_error_reads_rows_of_a_three_knob_grid():
    design = {"lrs": [1e-3, 1e-2, 1e-1], "staleness": [0, 4]}

    def run(cell, group):
        return {"cell": list(cell), "group": group}

    truth = {0: 2, 1: 1}  # per staleness index: the first lr index that leaves converged
    pilots, held, labels = [], [], []
    for j in (0, 1):
        for x in (0, 1):
            for i in range(3):
                g = "converged" if i < truth[j] else "collapse"
                (pilots if i == 0 else held).append(run((i, j, x), g))
                if i:
                    labels.append("converged" if x == 0 or i < 2 else "collapse")
    out = boundary_error(labels, held, pilots, design)
    assert set(out["rows"]) == {"0/0", "0/1", "4/0", "4/1"}
    # observed: row j=0 leaves at the midpoint of 1e-2 and 1e-1, j=1 between 1e-3 and 1e-2
    assert out["rows"]["0/0"]["observed_log10_lr"] == pytest.approx(-1.5)
    assert out["rows"]["4/1"]["observed_log10_lr"] == pytest.approx(-2.5)
    # predicted: x = 0 never leaves (edge: half a step beyond 1e-1), x = 1 leaves at 1e-1
    assert out["rows"]["0/0"]["predicted_log10_lr"] == pytest.approx(-0.5)
    assert out["rows"]["4/1"]["predicted_log10_lr"] == pytest.approx(-1.5)
    errs = [abs(r["predicted_log10_lr"] - r["observed_log10_lr"]) for r in out["rows"].values()]
    assert out["decades"] == pytest.approx(np.mean(errs))


@pytest.mark.slow
def test_the_quick_pipeline_stores_forecasts_before_the_heldout_runs_and_scores_each_split(
    tmp_path,
):
    cmd = [sys.executable, "-m", "paper.forecast_study", "--quick", "--workers", "2",
           "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]  # fmt: skip
    gated = subprocess.run([*cmd, "--phase", "heldout"], cwd=ROOT, capture_output=True, text=True)
    assert gated.returncode == 2 and "predictions.json is missing" in gated.stderr
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "out"
    preds = json.loads((out / "predictions.json").read_text())
    first_heldout = min(
        json.loads((tmp_path / "runs" / fs.run_name(*j) / "manifest.json").read_text())["created"]
        for j in fs.ForecastDesign(**fs.QUICK).jobs("heldout")
    )
    assert preds["created"] <= first_heldout  # forecasts first
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["crps"]) == {"interpolation", "extrapolation", "all"}
    assert "motif model (new run)" in summary["crps"]["all"]
