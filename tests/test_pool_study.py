"""The Pool-of-Agents study's analysis (paper/_pool_analysis.py) on synthetic runs with
known answers: seed variance against numpy, intervals against scipy, the collapse rule,
steps to target, and the driver's refusal of a changed design."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from paper import _pool_analysis as pa
from paper import pool_study as ps

ROOT = Path(__file__).resolve().parents[1]


def _run(comp: np.ndarray, e2e: np.ndarray, status: str = "finished") -> dict:
    steps = np.arange(len(e2e)) * 10
    return {"steps": steps, "comp": comp, "e2e": e2e, "status": status, "n_probe": 48,
            "collapsed": False, "regime": "converged", "seconds": 1.0}  # fmt: skip


def test_seed_variance_equals_numpy_and_its_interval_covers_it():
    rng = np.random.default_rng(3)
    runs = [_run(rng.uniform(0.2, 0.9, (7, 3)), rng.uniform(0, 1, 7)) for _ in range(6)]
    got = pa.seed_variance(runs)
    comp = np.stack([r["comp"] for r in runs])[:, 1:]
    e2e = np.stack([r["e2e"] for r in runs])[:, 1:]
    assert got["competence"] == pytest.approx(comp.var(0, ddof=1).mean(), rel=1e-12)
    assert got["e2e"] == pytest.approx(e2e.var(0, ddof=1).mean(), rel=1e-12)
    lo, hi = got["competence_ci95"]
    v, df = got["competence"], 5
    assert lo == pytest.approx(df * v / stats.chi2.ppf(0.975, df), rel=1e-12)
    assert hi == pytest.approx(df * v / stats.chi2.ppf(0.025, df), rel=1e-12)
    one = pa.seed_variance(runs[:1])
    assert one["competence"] is None and one["competence_ci95"] is None


def test_a_run_that_ended_early_carries_its_last_state_forward():
    full = _run(np.full((4, 3), 0.5), np.array([0.3, 0.4, 0.5, 0.6]))
    short = _run(np.full((2, 3), 0.1), np.array([0.3, 0.0]), status="diverged")
    e2e = pa._stack([full, short], "e2e")
    np.testing.assert_array_equal(e2e[1], [0.3, 0.0, 0.0, 0.0])


@pytest.mark.parametrize(("k", "n"), [(0, 5), (2, 5), (5, 5), (3, 40)])
def test_collapse_rate_interval_equals_scipys_wilson(k, n):
    want = stats.binomtest(k, n).proportion_ci(method="wilson")
    np.testing.assert_allclose(pa.wilson(k, n, z=pa.Z95), [want.low, want.high], atol=1e-12)


def test_probe_noise_floor_is_the_binomial_variance_over_members():
    runs = [_run(np.full((3, 3), 0.5), np.full(3, 0.5)) for _ in range(2)]
    assert pa.probe_floor(runs, 1) == pytest.approx(0.25 / 48)
    assert pa.probe_floor(runs, 4) == pytest.approx(0.25 / 48 / 4)


def test_design_jobs_and_configs():
    cfg = ps.StudyConfig()
    single = cfg.jobs("single")
    assert len(single) == 2 * 2 * 5  # settings x (GRPO, PPO) x seeds
    pool = cfg.jobs("pool")
    assert len(pool) == 2 * 6 * 5
    assert {(m, k) for _, m, k, _ in pool} == {(m, k) for m in ("es", "grad") for k in (2, 4, 8)}
    from llm_runs.config import TrainConfig

    for job in single + pool:
        c = TrainConfig.from_dict(cfg.train_config(*job))
        assert c.rl.batch * c.rl.group == 32  # matched rollouts
        assert c.pool_size == job[2]


def test_driver_refuses_another_design(tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"steps": 1}))
    rc = ps.main(["--phase", "summary", "--out", str(out), "--runs", str(tmp_path / "runs")])
    assert rc == 2
    assert capsys.readouterr().err.startswith("error:")


def test_pool_runs_need_stored_predictions(tmp_path, capsys):
    rc = ps.main(["--phase", "pool", "--out", str(tmp_path / "res"), "--runs", str(tmp_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "predictions.json" in err
    assert not any(tmp_path.glob("*_K2_*"))  # nothing trained


@pytest.mark.parametrize("args", [["--workers", "0"], ["--code", "/nonexistent/tree"]])
def test_bad_options_exit_2_with_one_error_line(tmp_path, capsys, args):
    rc = ps.main(["--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r"), *args])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()
