"""paper.watch_signals (issue 69 §4): the scores by hand, and the quick form end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paper._watch_signals import _score

ROOT = Path(__file__).resolve().parents[1]


def _row(collapse: bool, onset: int | None, alert: int | None, at_launch: bool) -> dict:
    return {"collapse": collapse, "collapse_peak": collapse, "onset": onset,
            "flagged_at_launch": at_launch, "alerts": {"m": alert}}  # fmt: skip


def test_scores_by_hand() -> None:
    rows = [
        _row(True, 100, 70, False),  # flagged 30 steps ahead, missed at launch
        _row(True, 100, 90, False),  # only 10 ahead: not flagged
        _row(True, 200, 0, True),  # flagged at launch, 200 ahead
        _row(True, 10, 0, True),  # onset within 20 steps of the start: not warnable
        _row(False, None, 50, False),  # a false alert
        _row(False, None, None, False),
        _row(False, None, None, False),
        _row(False, None, None, False),
    ]
    s = _score(rows, "m", "collapse")
    assert s["n_collapses"] == 4 and s["n_warnable"] == 3 and s["n_too_early_to_warn"] == 1
    assert s["flagged_share"] == 2 / 3
    assert s["n_missed_at_launch"] == 2 and s["flagged_share_missed_at_launch"] == 1 / 2
    assert s["lead_steps"] == (30 + 200) / 2
    assert s["false_alert_share"] == 1 / 4


def test_quick_replay_end_to_end(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "out"
    cmd = [sys.executable, "-m", "paper.watch_signals", "--quick", "--runs", str(runs),
           "--out", str(out), "--heldout", str(runs / "threshold"), "--forecasts",
           str(tmp_path / "none.json")]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["n_runs"] == 2 and not s["left_out"]
    assert set(s["methods"]) >= {"signal rule", "setting-only forecast", "z-score grad_norm",
                                 "logistic regression", "watch (forecast + signals)"}  # fmt: skip
    rule = json.loads((out / "rule.json").read_text())
    assert rule["report"]["false_alert_share_train"] <= 0.05
    assert (out / "table.md").is_file()
