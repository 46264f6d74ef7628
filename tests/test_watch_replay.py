"""The watch replay's rules on hand-made curves with a known answer, and its --quick run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper"))

import _watch_metrics as wm

STEPS = [0, 10, 20, 30, 40, 50, 60]


def test_collapse_step_needs_the_agent_to_stay_below():
    stays = {"X": [0.6, 0.4, 0.2, 0.08, 0.05, 0.03, 0.02], "Y": [0.7] * 7}
    assert wm.collapse_step(STEPS, stays) == 30
    dips = {"X": [0.6, 0.05, 0.5, 0.6, 0.7, 0.8, 0.8]}  # below 0.1 once, then recovers
    assert wm.collapse_step(STEPS, dips) is None
    back_down = {"X": [0.6, 0.05, 0.5, 0.09, 0.05, 0.03, 0.02]}
    assert wm.collapse_step(STEPS, back_down) == 30
    two = {"X": [0.6, 0.5, 0.5, 0.5, 0.05, 0.0, 0.0], "Y": [0.5, 0.5, 0.05, 0.0, 0.0, 0.0, 0.0]}
    assert wm.collapse_step(STEPS, two) == 20  # the earliest agent
    assert wm.collapse_step(STEPS, {"X": [0.5] * 7}, diverged=True) == 60
    assert wm.collapse_step(STEPS, {"X": [0.5] * 6 + [0.05]}) == 60


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


@pytest.mark.slow
def test_quick_replay_writes_its_results(tmp_path):
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = tmp_path / "watch"
    rc = subprocess.call(
        [sys.executable, str(root / "paper" / "watch_replay.py"), "--quick", "--out", str(out)],
        env=env,
    )
    assert rc == 0
    for f in ("config.json", "summary.json", "replay.json", "table.md", "watch.png"):
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    assert {"flagged_share", "lead_steps", "false_alert_share", "curve"} <= set(s)
    assert len(s["curve"]) == len(json.loads((out / "config.json").read_text())["thresholds"])
    rep = json.loads((out / "replay.json").read_text())
    assert all(len(r["p_collapse"]) == len(r["steps"]) for r in rep)
    assert not any(r["run"].startswith(("lr0.001_k0", "lr0.015_k8")) for r in rep)  # pilots
