"""The regime-map experiment script (paper/regime_map.py): its pure rules against hand
computations, and the whole pipeline at --quick sizes (pilots, fit, stored forecasts,
held-out runs, comparison) including resume and the refusal of a changed design."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from paper import _regime_report as rr
from paper import regime_map as rm

ROOT = Path(__file__).resolve().parents[1]


def test_modal_label_breaks_ties_toward_the_more_severe():
    assert rr.modal(["converged", "collapse"]) == "collapse"
    assert rr.modal(["converged", "converged", "collapse"]) == "converged"
    assert rr.modal(["unsettled", "oscillating"]) == "oscillating"


def test_group_of_maps_every_simulate_label():
    import simulate

    got = {name: rr.group_of(name) for name in simulate.REGIME_NAMES.values()}
    assert got["overshoot/pulse"] == "converged"
    assert got["damped oscillation"] == got["sustained oscillation"] == "oscillating"
    assert set(got.values()) == set(rr.GROUPS)


def test_wilson_interval_matches_the_closed_form_from_scipy():
    k, n = 17, 24
    z = stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    np.testing.assert_allclose(rr.wilson(k, n, z=z), [centre - half, centre + half], rtol=1e-12)


def test_boundary_is_the_midpoint_where_a_row_leaves_converged():
    lrs = np.array([1e-3, 2e-3, 4e-3, 8e-3])
    x = np.log10(lrs)
    c, k = "converged", "collapse"
    assert rr._boundary(lrs, [c, c, k, k]) == pytest.approx((x[1] + x[2]) / 2)
    step = x[1] - x[0]
    assert rr._boundary(lrs, [k, k, k, k]) == pytest.approx(x[0] - step / 2)
    assert rr._boundary(lrs, [c, c, c, c]) == pytest.approx(x[-1] + step / 2)


def test_config_validates_and_round_trips_json():
    cfg = rm.MapConfig()
    again = rm.MapConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    assert len(cfg.pilots) * 4 <= len(cfg.cells())  # at most 25 % pilots
    with pytest.raises(ValueError, match="pilots"):
        rm.MapConfig(pilots=((0, 0), (9, 9)))
    with pytest.raises(ValueError, match="ascending"):
        rm.MapConfig(lrs=(2e-3, 1e-3))


@pytest.mark.slow
def test_quick_pipeline_end_to_end_resumes_and_refuses_another_design(tmp_path):
    out, runs = tmp_path / "res", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.regime_map", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    for key in ("regime_accuracy", "coverage90", "baseline_regime_accuracy", "regimes_observed"):
        assert key in summary
    assert summary["predictions_before_heldout_runs"] is True
    assert 0.0 <= summary["regime_accuracy"] <= 1.0
    assert summary["n_heldout_runs"] == 2
    assert (out / "regime_map.png").stat().st_size > 10_000
    preds = json.loads((out / "predictions.json").read_text())
    assert {tuple(c["cell"]) for c in preds["cells"]} == {(0, 1), (1, 0)}
    # observed labels come from llm_runs.observed_regime on the run folders
    import llm_runs

    observed = json.loads((out / "observed.json").read_text())
    for name, r in observed.items():
        assert r["regime"] == llm_runs.observed_regime(runs / name)["regime"]
    # a rerun keeps the stored forecasts and the finished runs
    logs = {n: (runs / n / "competence.jsonl").read_bytes() for n in observed}
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((out / "predictions.json").read_text())["created"] == preds["created"]
    assert {n: (runs / n / "competence.jsonl").read_bytes() for n in observed} == logs
    # the stored design cannot be silently replaced
    cfg = json.loads((out / "config.json").read_text())
    cfg["design"]["steps"] = 99
    (out / "config.json").write_text(json.dumps(cfg))
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args", [["--workers", "0"], ["--code", "/nonexistent/tree"]], ids=["workers", "code"]
)
def test_bad_options_exit_2_with_one_error_line(tmp_path, args):
    cmd = [sys.executable, "-m", "paper.regime_map", "--quick",
           "--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r"), *args]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
