"""The fourth forecast test (paper/forecast_round4.py): new runs only, its split, the choice
rule of links and spread, the added link's refit config, and (slow) its quick pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paper import forecast_round2 as fr
from paper import forecast_round3 as f3
from paper import forecast_round4 as f4
from paper import forecast_study as fs
from paper._forecast_round4 import choose
from paper._study import refit

ROOT = Path(__file__).resolve().parents[1]


def test_every_run_is_new_and_four_settings_lie_inside_the_pilots_range():
    d = f4.Round4Design()
    runs = d.jobs("heldout")
    assert len(runs) == 24 * 2 and d.jobs("pilots") == []
    earlier = [fs.ForecastDesign(), fr.Round2Design(), f3.Round3Design()]
    old = {fs.run_name(*j) for e in earlier for j in e.jobs("heldout") + e.jobs("pilots")}
    assert not {fs.run_name(*j) for j in runs} & old
    assert not set(d.seeds) & {s for e in earlier for s in e.seeds}
    inside = {c for c in d.cells() if d.split(c) == "interpolation"}
    assert inside == {(i, j, 0) for i in (0, 1) for j in (0, 1)}  # lr 5e-3/1.2e-2, lag 0/3, 0.18
    earlier_outs = ["paper/results/forecast", "paper/results/forecast_round2",
                    "paper/results/forecast_round3"]  # fmt: skip
    assert d.calibration_sets == earlier_outs  # the three earlier tests' results folders
    assert d.resolve("@out/../first") == Path("../first")  # relative to the bound --out


def test_choose_takes_the_best_log_score_and_breaks_near_ties_toward_the_simpler():
    grid = {"first 0": -3.10, "first 0.5": -3.02, "delta_x 0": -3.05, "delta_x 0.75": -3.00}
    assert choose({k: {"log_score": v} for k, v in grid.items()}) == "delta_x 0.75"
    grid["first 0.5"] = -3.004  # within 0.005 of the best: the first links win
    assert choose({k: {"log_score": v} for k, v in grid.items()}) == "first 0.5"
    grid |= {"first 0.5": -3.2, "delta_x 0.5": -3.001}  # then the smaller spread
    assert choose({k: {"log_score": v} for k, v in grid.items()}) == "delta_x 0.5"


def test_the_added_link_reaches_the_refit_config(tmp_path, monkeypatch):
    import calibrate

    seen: list[list[str]] = []
    monkeypatch.setattr(calibrate, "run_command", lambda args, log: seen.append(args))
    source = ROOT / "paper" / "results" / "forecast"
    refit(source, tmp_path, folder="fit", links=(f4.DELTA_X,))
    config = Path(seen[0][seen[0].index("--config") + 1])
    links = json.loads(config.read_text())["hierarchy"]["links"]
    first = json.loads((source / "fit" / "config.json").read_text())["hierarchy"]["links"]
    assert links == [*first, f4.DELTA_X] and seen[0][seen[0].index("--out") + 1].endswith("fit")
    refit(source, tmp_path, folder="fit_first")
    assert seen[1][seen[1].index("--config") + 1] == str(source / "fit" / "config.json")


@pytest.mark.slow
def test_the_quick_pipeline_chooses_links_and_stores_forecasts_before_its_runs(tmp_path):
    py = sys.executable
    first = [py, "-m", "paper.forecast_study", "--quick", "--workers", "2",
             "--out", str(tmp_path / "first"), "--runs", str(tmp_path / "runs1")]  # fmt: skip
    assert subprocess.run(first, capture_output=True, text=True).returncode == 0
    fourth = [py, "-m", "paper.forecast_round4", "--quick", "--workers", "2",
              "--out", str(tmp_path / "fourth"), "--runs", str(tmp_path / "runs4")]  # fmt: skip
    r = subprocess.run(fourth, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "fourth"
    cal = json.loads((out / "calibration.json").read_text())
    assert set(cal["scores"]) == {"first 0", "first 1", "delta_x 0", "delta_x 1"}
    assert f"{cal['links']} {cal['extrapolation_sd']:g}" == choose(cal["scores"])
    preds = json.loads((out / "predictions.json").read_text())
    made = [
        json.loads(m.read_text())["created"] for m in (tmp_path / "runs4").glob("*/manifest.json")
    ]
    assert made and preds["created"] < min(made) and preds["links"] == cal["links"]
    other = "first" if cal["links"] == "delta_x" else "delta_x"
    s = json.loads((out / "summary.json").read_text())
    assert f"motif model, {other} links, bent links (new run)" in s["crps"]["all"]
    assert s["command"] == "python -m paper.forecast_round4"
