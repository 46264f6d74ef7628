"""The held-out watch replay (paper/watch_testbed.py): its frozen design, its runs, its labels,
and its --quick run scoring both update methods on the same runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper import watch_testbed as wt

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_design_is_the_drivers():
    committed = json.loads((ROOT / "paper/results/watch_testbed/config.json").read_text())
    assert committed == wt.design(False)
    assert committed["threshold"] == 0.5 and committed["lead_goal"] == 20
    assert set(committed["methods"]) == {"weights", "laplace"}


def test_the_testbed_runs_are_held_out_and_fit_the_fits_knobs():
    pilots, runs = wt.testbed_runs(False)
    assert len(pilots) == 12 and all((p / "manifest.json").is_file() for p in pilots)
    names = {r["run"] for r in runs}
    assert not names & {p.name for p in pilots}  # no pilot is replayed
    by = {s: sum(r["experiment"] == s for r in runs) for s in ("forecast", "recommend")}
    assert by == {"forecast": 36, "recommend": 112}
    assert all(set(r["setting"]) == set(wt.KNOBS) for r in runs)
    assert {r["task"] for r in runs} == {"math"} and {r["horizon"] for r in runs} == {200}
    # inside the pilots' range on every knob (lr 4e-3..2.5e-2, staleness 0..4, x 0.15..0.3)
    inside = [r for r in runs if r["split"] == "inside"]
    assert all(4e-3 <= r["setting"]["rl.lr"] <= 2.5e-2 for r in inside)
    assert any(r["setting"]["rl.lr_scale.X"] == 0.6 for r in runs if r["split"] == "outside")


def test_a_short_diverged_run_is_collapsed_at_its_last_step():
    r = {"steps": [0, 10, 13], "curves": {"X": [0.3, 0.0, 0.0]}, "diverged": True, "n_eval": 64}
    assert wt.label(r) == 13.0
    assert wt.label({**r, "diverged": False}) is None
    long = {"steps": [0, 10, 20, 30, 40, 50, 60], "n_eval": 64, "diverged": False,
            "curves": {"X": [0.6, 0.4, 0.2, 0.08, 0.05, 0.03, 0.02]}}  # fmt: skip
    assert wt.label(long) == 20  # the rule's onset (as tests/test_watch_replay.py)


@pytest.mark.slow
def test_quick_testbed_replay_scores_both_methods(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "wt"
    rc = subprocess.call(
        [sys.executable, "-m", "paper.watch_testbed", "--quick", "--out", str(out)],
        env=env,
    )
    assert rc == 0
    for f in ("config.json", "summary.json", "replay.json", "table.md", "watch_testbed.png"):
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    assert set(s["methods"]) == {"weights", "laplace"}
    rep = json.loads((out / "replay.json").read_text())
    assert len(rep) == s["n_runs"] == 6
    for m, ms in s["methods"].items():
        assert {"flagged_share", "lead_steps", "false_alert_share", "curve", "breakdown"} <= set(ms)
        assert len(ms["lead_steps"]) == ms["n_collapsed"] == s["n_collapsed"]
        assert all(len(r[m]["p_collapse"]) == len(r["steps"]) for r in rep)
        assert all(-1e-9 <= p <= 1 + 1e-9 for r in rep for p in r[m]["p_collapse"])
    # the Laplace draws are weighted equally: their effective number is the draw count
    # (less any failed solve)
    n = json.loads((out / "config.json").read_text())["methods"]["laplace"]["draws"]
    assert 0.9 * n <= s["methods"]["laplace"]["ess"]["last"] <= n
    assert s["methods"]["weights"]["ess"]["last"] <= s["methods"]["weights"]["ess"]["first"]
