"""The watch replay's rules on hand-made curves with a known answer, and its --quick run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper import _watch_metrics as wm

STEPS = [0, 10, 20, 30, 40, 50, 60]


def test_collapse_step_is_the_one_rules_onset():
    # X falls from 0.6 and stays low: collapsed (simulate's rule), onset where it first drops
    # below 0.3 with the rest of the curve staying below on average
    stays = {"X": [0.6, 0.4, 0.2, 0.08, 0.05, 0.03, 0.02], "Y": [0.7] * 7}
    assert wm.collapse_step(STEPS, stays, n_eval=64) == 20
    dips = {"X": [0.6, 0.05, 0.5, 0.6, 0.7, 0.8, 0.8]}  # falls once, then recovers
    assert wm.collapse_step(STEPS, dips, n_eval=64) is None
    # one evaluation back up at 20 does not move the onset: the rest's mean stays below 0.3
    back_down = {"X": [0.6, 0.05, 0.5, 0.09, 0.05, 0.03, 0.02]}
    assert wm.collapse_step(STEPS, back_down, n_eval=64) == 10
    late = {"X": [0.6, 0.05, 0.9, 0.9, 0.9, 0.03, 0.02, 0.02, 0.01]}
    assert wm.collapse_step([*STEPS, 70, 80], late, n_eval=64) == 50
    two = {"X": [0.6, 0.5, 0.5, 0.5, 0.05, 0.0, 0.0], "Y": [0.5, 0.5, 0.05, 0.0, 0.0, 0.0, 0.0]}
    assert wm.collapse_step(STEPS, two, n_eval=64) == 20  # the earliest agent
    assert wm.collapse_step(STEPS, {"X": [0.5] * 7}, n_eval=64, diverged=True) == 60
    # never learned: low from the start is not a collapse (the old "below 0.1" rule said 0)
    assert wm.collapse_step(STEPS, {"X": [0.05] * 7}, n_eval=64) is None
    # a fall inside the probe noise of 8 probes is not a collapse; at 64 probes it is
    small = {"X": [0.25, 0.25, 0.25, 0.25, 0.1, 0.1, 0.1]}
    assert wm.collapse_step(STEPS, small, n_eval=8) is None
    assert wm.collapse_step(STEPS, small, n_eval=512) == 40


def test_lead_and_false_alerts_over_thresholds():
    runs = [
        {"steps": STEPS, "collapse_step": 50, "p_collapse": [0.1, 0.3, 0.6, 0.9, 0.9, 1, 1]},
        {"steps": STEPS, "collapse_step": 30, "p_collapse": [0.0, 0.0, 0.0, 0.2, 0.7, 1, 1]},
        {"steps": STEPS, "collapse_step": 20, "p_collapse": [0.0] * 7},
        {"steps": STEPS, "collapse_step": None, "p_collapse": [0.1, 0.2, 0.4, 0.2, 0, 0, 0]},
        {"steps": STEPS, "collapse_step": None, "p_collapse": [0.0] * 7},
        {"steps": STEPS, "collapse_step": None, "p_collapse": [0.0, 0.6, 0.1, 0, 0, 0, 0]},
        {"steps": STEPS, "collapse_step": None, "p_collapse": [0.0] * 7},
    ]
    s = wm.score(runs, 0.5, lead_goal=20)
    assert s["lead_steps"] == [30.0, -10.0, None]
    assert s["flagged_share"] == pytest.approx(1 / 3)
    assert s["alerted_before_share"] == pytest.approx(1 / 3)
    assert s["median_lead"] == pytest.approx(10.0)
    assert s["false_alerts"] == 1 and s["false_alert_share"] == pytest.approx(0.25)
    low = wm.score(runs, 0.15, lead_goal=20)
    assert low["lead_steps"] == [40.0, 0.0, None]
    assert low["false_alerts"] == 2
    curve = wm.curve(runs, [0.15, 0.5, 0.95])
    assert [c["false_alerts"] for c in curve] == [2, 1, 0]
    assert curve[-1]["lead_steps"] == [0.0, -20.0, None]


def test_breakdown_sorts_each_collapse_into_its_first_class():
    def run(c_step, p, task="math", shift=None):
        return {"steps": STEPS, "collapse_step": c_step, "p_collapse": p, "task": task,
                "shift_step": shift}  # fmt: skip

    early = [0.9, 1, 1, 1, 1, 1, 1]  # alert at the first evaluation (step 0)
    late = [0, 0, 0, 0.9, 1, 1, 1]  # alert at step 30
    runs = [
        run(50, early),  # forecastable, lead 50: flagged
        run(40, late),  # forecastable, lead 10: not flagged
        run(10, early),  # too early: lead 10 < 20 even with an alert at step 0
        run(30, early, shift=20),  # collapses after its scheduled shift
        run(10, early, shift=20),  # before the shift and too early
        run(50, early, task="rag"),  # another task than the pilots', whatever else holds
        run(None, early),  # a false alert at the first evaluation
        run(None, late),  # a later false alert
        run(None, [0.0] * 7),
    ]
    b = wm.breakdown(runs, 0.5, lead_goal=20, task="math")
    assert {c: (b[c]["n"], b[c]["flagged"]) for c in
            ("forecastable", "too_early", "after_shift", "other_task")} == {
        "forecastable": (2, 1), "too_early": (2, 0), "after_shift": (1, 1), "other_task": (1, 1)
    }  # fmt: skip
    assert b["forecastable"]["flagged_share"] == pytest.approx(0.5)
    assert b["false_alerts_at_first"] == 1
    assert b["alerts_after_first"] == 2  # the collapse at 40 and the late false alert
    # a higher threshold than any P: nothing flagged, no false alert
    none = wm.breakdown(runs, 1.5, lead_goal=20, task="math")
    assert none["forecastable"]["flagged"] == 0 and none["false_alerts_at_first"] == 0
    assert none["alerts_after_first"] == 0


@pytest.mark.slow
def test_quick_replay_writes_its_results(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = tmp_path / "watch"
    rc = subprocess.call(
        [sys.executable, "-m", "paper.watch_replay", "--quick", "--out", str(out)],
        env=env,
    )
    assert rc == 0
    for f in ("config.json", "summary.json", "replay.json", "table.md", "watch.png"):
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    assert {"flagged_share", "lead_steps", "false_alert_share", "curve", "breakdown"} <= set(s)
    assert sum(s["breakdown"][c]["n"] for c in ("forecastable", "too_early", "after_shift",
               "other_task")) == s["n_collapsed"]  # fmt: skip
    assert 1 <= s["ess"]["last"] <= s["ess"]["first"] <= s["ess"]["draws"]
    assert len(s["curve"]) == len(json.loads((out / "config.json").read_text())["thresholds"])
    rep = json.loads((out / "replay.json").read_text())
    assert all(len(r["p_collapse"]) == len(r["steps"]) for r in rep)
    assert not any(r["run"].startswith(("lr0.001_k0", "lr0.015_k8")) for r in rep)  # pilots


def test_the_data_knows_each_runs_task_and_scheduled_shift(tmp_path):
    from paper import _watch_data as wdata

    root = tmp_path / "hypotheses_old_testbed"
    root.mkdir()
    cfg = {"lr": 2e-3, "lag_staleness": 4, "steps": 8, "shift_step": 4}
    (root / "config.json").write_text(json.dumps(cfg))
    run = {"run": "r", "steps": [0, 4, 8], "competence": [[0.5, 0.5, 0.5]] * 3}
    groups = ("shift/rag/C1", "lag/math/I1", "pulse/math/C1")
    (root / "runs.json").write_text(json.dumps({g: [run] for g in groups}))
    by = {r["experiment"]: r for r in wdata.hypotheses_runs(tmp_path)}
    assert by["hypotheses/shift/rag/C1"]["task"] == "rag"
    assert by["hypotheses/shift/rag/C1"]["shift_step"] == 4
    assert by["hypotheses/lag/math/I1"]["shift_step"] == 4
    assert by["hypotheses/lag/math/I1"]["setting"] == {"rl.lr": 2e-3, "rl.staleness": 4.0}
    assert by["hypotheses/pulse/math/C1"]["task"] == "math"
    assert by["hypotheses/pulse/math/C1"]["shift_step"] is None
