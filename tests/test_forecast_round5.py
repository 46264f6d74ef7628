"""The fifth forecast test (paper/forecast_round5.py): new runs only, its split, X's own learning
rate as the fit's covariate, the own-lr refit's data and links, and (slow) its quick pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from paper import forecast_round2 as fr
from paper import forecast_round3 as f3
from paper import forecast_round4 as f4
from paper import forecast_round5 as f5
from paper import forecast_study as fs
from paper._forecast_round2 import choose_sd
from paper._forecast_round5 import OWN, _fits, own_setting

ROOT = Path(__file__).resolve().parents[1]


def test_every_run_is_new_and_six_settings_lie_inside_the_pilots_range():
    d = f5.Round5Design()
    runs = d.jobs("heldout")
    assert len(runs) == 24 * 2 and d.jobs("pilots") == []
    earlier = [fs.ForecastDesign(), fr.Round2Design(), f3.Round3Design(), f4.Round4Design()]
    old = {fs.run_name(*j) for e in earlier for j in e.jobs("heldout") + e.jobs("pilots")}
    assert not {fs.run_name(*j) for j in runs} & old
    assert not set(d.seeds) & {s for e in earlier for s in e.seeds}
    inside = {c for c in d.cells() if d.split(c) == "interpolation"}
    assert inside == {(i, j, 0) for i in (1, 2) for j in (0, 1, 2)}  # lr 9e-3/2.2e-2, lag <= 4
    assert len(d.calibration_sets) == 4 and d.calibration_sets[-1].endswith("forecast_round4")
    assert d.primary.endswith("runs' rule (new run)")


def test_own_setting_gives_the_learning_rate_x_trains_at():
    s = own_setting({"rl.lr": 9e-3, "rl.staleness": 4, "rl.lr_scale.X": 0.5})
    assert s == {"rl.lr": 9e-3, "rl.staleness": 4, OWN: pytest.approx(4.5e-3, rel=1e-12)}
    with pytest.raises(KeyError):
        own_setting({"rl.lr": 9e-3, "rl.staleness": 4})  # no scale: no own learning rate


def test_the_own_lr_refit_gets_the_product_column_and_only_its_links(tmp_path, monkeypatch):
    import calibrate

    seen: list[list[str]] = []
    monkeypatch.setattr(calibrate, "run_command", lambda args, log: seen.append(args))
    src = tmp_path / "first" / "fit"  # a first study's fit inputs, made here
    src.mkdir(parents=True)
    lr, scale = [4e-3, 4e-3, 1e-2, 2.5e-2], [0.15, 0.3, 0.3, 0.15]
    pd.DataFrame({"run": list("abcd"), "rl.lr": lr, "rl.lr_scale.X": scale}).to_parquet(
        src / "data.parquet"
    )
    first = [{"param": "rho", "covariate": "rl.lr", "targets": [], "transform": "log"}]
    (src / "config.json").write_text(json.dumps({"hierarchy": {"links": first}}))
    (src / "network.json").write_text("{}")
    d = f5.Round5Design(source="@out/first")
    d.bind(tmp_path)
    _fits(d, tmp_path)
    own, r4 = seen
    config = json.loads(Path(own[own.index("--config") + 1]).read_text())
    assert config["hierarchy"]["links"] == d.own_links
    data = pd.read_parquet(own[4])
    assert data[OWN].tolist() == pytest.approx([a * b for a, b in zip(lr, scale, strict=True)])
    r4_links = json.loads(Path(r4[r4.index("--config") + 1]).read_text())["hierarchy"]["links"]
    assert r4_links == [*first, f4.DELTA_X] and r4[4] == str(src / "data.parquet")


@pytest.mark.slow
def test_the_quick_pipeline_stores_every_forecast_before_its_runs(tmp_path):
    py = sys.executable
    first = [py, "-m", "paper.forecast_study", "--quick", "--workers", "2",
             "--out", str(tmp_path / "first"), "--runs", str(tmp_path / "runs1")]  # fmt: skip
    assert subprocess.run(first, capture_output=True, text=True).returncode == 0
    fifth = [py, "-m", "paper.forecast_round5", "--quick", "--workers", "2",
             "--out", str(tmp_path / "fifth"), "--runs", str(tmp_path / "runs5")]  # fmt: skip
    r = subprocess.run(fifth, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "fifth"
    cal = json.loads((out / "calibration.json").read_text())
    assert set(cal["scores"]) == {"own_lr 0", "own_lr 1", "round4 0", "round4 1"}
    own = {float(k.split()[1]): v["log_score"] for k, v in cal["scores"].items() if "own" in k}
    assert cal["extrapolation_sd"] == choose_sd(own)
    preds = json.loads((out / "predictions.json").read_text())
    made = [
        json.loads(m.read_text())["created"] for m in (tmp_path / "runs5").glob("*/manifest.json")
    ]
    assert made and preds["created"] < min(made)
    s = json.loads((out / "summary.json").read_text())
    assert preds["primary"] in s["crps"]["all"]
    assert "GP classifier, X's own lr too" in s["regime_accuracy"]["all"]
    assert s["command"] == "python -m paper.forecast_round5"
