"""The recommendation comparison's driver and summary (paper/recommend_bench.py,
paper/_recommend_summary.py): the cluster bootstrap against normal theory, regret and
unstable counts against hand-computed values on a synthetic grid, the design check, and
bad input as one error line. (The motif model's path runs real fits: the full comparison
is the experiment itself.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paper import _recommend_baselines as rb
from paper import _recommend_summary as summ
from paper import recommend_bench as bench

ROOT = Path(__file__).resolve().parents[1]

STEPS = np.arange(0, 201, 10)


def _table() -> rb.RunTable:
    """2 x 2 grid, 2 seeds; finals chosen by hand; (0.01, 4) collapses at seed 1 only."""
    finals = {
        ((1e-3, 0), 0): 0.9, ((1e-3, 0), 1): 0.8,
        ((1e-3, 4), 0): 0.7, ((1e-3, 4), 1): 0.6,
        ((1e-2, 0), 0): 0.5, ((1e-2, 0), 1): 0.3,
        ((1e-2, 4), 0): 0.4, ((1e-2, 4), 1): 0.0,
    }  # fmt: skip
    curves = {}
    for key, f in finals.items():
        v = np.linspace(0.3, f, STEPS.size)
        regime = "collapse" if key == ((1e-2, 4), 1) else "converged"
        curves[key] = rb.Curve(STEPS, v, regime)
    return rb.RunTable(curves)


def test_cluster_bootstrap_matches_normal_theory_and_constants() -> None:
    assert summ.cluster_bootstrap({0: [0.2] * 5, 1: [0.2] * 3}) == pytest.approx((0.2, 0.2))
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 1.0, 400)
    lo, hi = summ.cluster_bootstrap({0: list(x)}, n_boot=4000)
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)  # one cluster: the ordinary bootstrap
    assert lo == pytest.approx(x.mean() - half, abs=0.25 * half)
    assert hi == pytest.approx(x.mean() + half, abs=0.25 * half)
    # clusters with different means: the interval reflects the spread between them
    lo2, hi2 = summ.cluster_bootstrap({0: [0.0] * 50, 1: [1.0] * 50, 2: [0.5] * 50})
    assert lo2 < 0.3 and hi2 > 0.7


def test_summary_regret_and_unstable_counts_by_hand() -> None:
    table = _table()
    assert table.true_value((1e-3, 0)) == pytest.approx(0.85)
    picks = []
    for seed, setting in ((0, (1e-3, 0)), (1, (1e-2, 4)), (0, (1e-3, 4))):
        p = rb.Pick("m", setting, 400, 1000, seed, ())
        picks.append(bench.pick_record(table, p, None))
    p = rb.Pick("other", (1e-3, 0), 1000, 1000, 1, ())
    picks.append(bench.pick_record(table, p, 0))
    s = summ.summarise(picks, table, ["m", "other"])
    # regrets: 0, 0.85 - 0.2, 0.85 - 0.65
    assert s["regret"]["m"]["mean"] == pytest.approx((0 + 0.65 + 0.2) / 3)
    assert s["regret"]["m"]["per_seed"] == {"0": pytest.approx(0.1), "1": pytest.approx(0.65)}
    assert s["regret"]["m"]["zero_regret_share"] == pytest.approx(1 / 3)
    assert s["unstable_picks"]["m"] == {"count": 1, "n": 3, "share": pytest.approx(1 / 3)}
    assert s["unstable_picks"]["other"]["count"] == 0
    assert s["lowest_mean_regret"] == "other" and not s["motif_model_lowest"]
    assert s["best_setting"] == {"rl.lr": 1e-3, "rl.staleness": 0}
    md = summ.table_md(s)
    assert "| m | 0.283" in md and "1/3" in md


def _bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "paper.recommend_bench", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # paper/ from the checkout, run in cwd
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--seeds", "0,x"], "--seeds"),
        (["--rng-seeds", "0"], "--rng-seeds"),
        (["--runs", "nowhere"], "--runs"),
    ],
)
def test_bad_options_are_one_error_line(tmp_path: Path, args: list[str], needle: str) -> None:
    r = _bench(*args, "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]


def test_an_incomplete_grid_or_another_design_is_refused(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    r = _bench("--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error:") and "no finished" in r.stderr
    stored = json.loads((tmp_path / "o" / "config.json").read_text())
    assert stored["design"]["budget_steps"] == 1000  # the design is stored first
    r = _bench("--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "o"),
               "--rng-seeds", "3", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2 and "another design" in r.stderr


def test_every_method_of_the_design_exists() -> None:
    """The design names each baseline by its registry name (a misspelt name once made the
    stochastic baselines run once instead of rng_seeds times)."""
    cfg = bench.BenchConfig()
    assert set(bench.STOCHASTIC) <= set(rb.BASELINES)
    assert set(cfg.methods) == set(bench.OBJECTIVES) | set(rb.BASELINES)
