"""paper.launch_horizon (issue 67 §1): the analysis on curves with known answers, and the
study's quick form end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from paper._launch_horizon import at_horizon, spearman

ROOT = Path(__file__).resolve().parents[1]


def _run(values: np.ndarray, every: int = 10, diverged: int | None = None) -> dict:
    return {"steps": np.arange(values.shape[0]) * every, "values": values,
            "agents": [f"a{j}" for j in range(values.shape[1])], "n_eval": 64.0,
            "diverged": diverged}  # fmt: skip


def test_a_late_collapse_is_seen_at_the_launch_horizon_only() -> None:
    rise = np.minimum(0.9, 0.3 + 0.05 * np.arange(51))
    late = rise.copy()
    late[30:] = 0.02  # falls at step 300
    c = _run(np.stack([rise, late], axis=1))
    short, long = at_horizon(c, 100), at_horizon(c, 500)
    assert not short["collapse"] and not short["collapse_peak"]
    assert long["collapse"] and long["collapse_peak"] and long["onset"] == 300
    assert short["objective"] == pytest.approx(rise[10] * late[10])
    assert long["objective"] == pytest.approx(0.9 * 0.02)


def test_a_fall_from_the_start_counts_by_one_rule_only() -> None:
    fall = np.r_[0.6, np.full(50, 0.05)]  # from its start, never learned
    c = _run(np.stack([np.full(51, 0.8), fall], axis=1))
    v = at_horizon(c, 500)
    assert v["collapse"] and not v["collapse_peak"]


def test_a_diverged_run_has_collapsed_from_its_step_with_objective_zero() -> None:
    c = _run(np.full((21, 2), 0.7), diverged=200)
    assert not at_horizon(c, 100)["collapse"]
    v = at_horizon(c, 500)
    assert v["collapse"] and v["collapse_peak"] and v["objective"] == 0.0 and v["onset"] == 200


def test_spearman_matches_scipy_and_its_interval_covers_it() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=15)
    b = a + rng.normal(scale=0.7, size=15)
    s = spearman(a, b, n_boot=500)
    assert s["rho"] == pytest.approx(spearmanr(a, b).statistic)
    assert s["lo"] <= s["rho"] <= s["hi"] and s["n"] == 15


def test_quick_study_end_to_end(tmp_path: Path) -> None:
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.launch_horizon", "--quick", "--out", str(out),
           "--runs", str(runs), "--workers", "2"]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    b = s["short_horizon_bias"]
    assert b["n_runs"] == 4 and b["n_cells"] == 2 and not b["missing"]
    assert len(b["pick_trials"]) == 2  # a pick on each seed, scored on the other
    assert (out / "table.md").is_file() and (out / "bias.png").is_file()
    # a changed design in the same folder is refused with one error line
    d = json.loads((out / "design.json").read_text())
    (out / "design.json").write_text(json.dumps(d | {"launch_steps": 99}))
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")


def test_delayed_map_rate_changes_sign_at_the_boundary() -> None:
    import simulate
    from paper._launch_horizon import delayed_map_rate

    for lag in (0, 1, 4):
        g = simulate.delayed_map_boundary(lag)
        assert delayed_map_rate(g * 0.9, lag, 1.0) < 0 < delayed_map_rate(g * 1.1, lag, 1.0)
    # AR(1) without lag: |1 - g|
    assert delayed_map_rate(0.5, 0, 5.0) == pytest.approx(np.log(1.5))


def test_delayed_map_rate_is_the_simulators_largest_root() -> None:
    import simulate
    from paper._launch_horizon import delayed_map_rate

    for g, lag in ((0.3, 2), (0.9, 1), (0.05, 12)):
        roots = np.asarray(simulate.delayed_map_warning(gain=g, lag=lag).eigenvalues)
        assert delayed_map_rate(g, lag, 1.0) == pytest.approx(np.log(np.abs(roots).max()))
