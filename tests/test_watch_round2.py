"""The second held-out watch replay (paper/watch_round2.py): its frozen design, its runs, a
replay that resumes after a kill, and its --quick run scoring three methods on the same runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper import _watch_testbed
from paper import watch_round2 as w2
from paper import watch_testbed as wt

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_design_is_the_drivers():
    committed = json.loads((ROOT / "paper/results/watch_round2/config.json").read_text())
    assert committed == w2.design(False)
    assert set(committed["methods"]) == {"weights", "weights_bent", "laplace"}
    bent, straight = committed["methods"]["weights_bent"], committed["methods"]["weights"]
    assert bent == {**straight, "update": "weights", "extrapolation_sd": 0.75}
    assert committed["methods"]["laplace"] == wt.design(False)["methods"]["laplace"]


def test_the_runs_are_the_later_tests_and_none_is_a_pilot():
    runs = w2.round_runs(False)
    by = {s: sum(r["experiment"] == s for r in runs) for s in w2.SOURCES}
    assert by == {"forecast_round2": 48, "forecast_round3": 36}
    assert not {r["run"] for r in runs} & {p.name for p in wt.pilot_folders()}
    assert all(set(r["setting"]) == set(wt.KNOBS) for r in runs)
    assert {r["horizon"] for r in runs} == {200} and {r["task"] for r in runs} == {"math"}
    outside = [r for r in runs if r["split"] == "outside"]
    assert any(r["setting"]["rl.staleness"] == 12 for r in outside)
    assert all(r["setting"]["rl.staleness"] <= 4 for r in runs if r["split"] == "inside")
    labelled = [r for r in runs if r["collapse_step"] is not None]
    assert all(r["collapse_step"] == wt.label(r) for r in labelled) and labelled


def test_the_replay_resumes_after_the_last_setting_written(tmp_path, monkeypatch):
    calls: list[list[str]] = []

    def fake(runs, fit_dir, cfg):
        calls.append([r["run"] for r in runs])
        return [{"run": r["run"], "p": len(calls)} for r in runs]

    monkeypatch.setattr(_watch_testbed, "replay", fake)  # what the rounds replay with
    runs = [{"run": f"r{i}", "setting": {"rl.lr": float(i // 2)}} for i in range(6)]
    partial = tmp_path / "replay.partial.jsonl"
    partial.write_text(json.dumps({"run": "r0", "p": 0}) + "\n" + '{"run": "r1", "p"')  # killed
    rep = w2.resumable_replay(runs, tmp_path, {}, partial)
    assert calls == [["r1"], ["r2", "r3"], ["r4", "r5"]]  # r0 kept, r1's cut line replayed
    assert [r["run"] for r in rep] == [f"r{i}" for i in range(6)] and rep[0]["p"] == 0
    calls.clear()
    assert w2.resumable_replay(runs, tmp_path, {}, partial) == rep and calls == []


def test_another_design_in_the_results_folder_exits_2_and_is_kept(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"question": "another"}\n')
    with pytest.raises(SystemExit) as err:
        w2.main(["--quick", "--design-only", "--out", str(tmp_path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert err.value.code == 2 and len(lines) == 1 and lines[0].startswith("error:")
    assert json.loads((tmp_path / "config.json").read_text()) == {"question": "another"}
    assert w2.main(["--quick", "--design-only", "--out", str(tmp_path / "new")]) == 0


@pytest.mark.slow
def test_quick_round2_replay_scores_three_methods(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "w2"
    script = ["-m", "paper.watch_round2"]
    assert subprocess.call([sys.executable, *script, "--quick", "--out", str(out)], env=env) == 0
    for f in ("config.json", "summary.json", "replay.json", "table.md", "watch_round2.png"):
        assert (out / f).is_file(), f
    assert not (out / "replay.partial.jsonl").exists()
    s = json.loads((out / "summary.json").read_text())
    rep = json.loads((out / "replay.json").read_text())
    assert set(s["methods"]) == {"weights", "weights_bent", "laplace"}
    assert len(rep) == s["n_runs"] == 5
    for r in rep:  # inside the pilots' range the bent links change nothing
        if r["split"] == "inside":
            assert r["weights_bent"]["p_collapse"] == r["weights"]["p_collapse"]
    for m, ms in s["methods"].items():
        assert {"flagged_share", "lead_steps", "false_alert_share", "curve", "breakdown"} <= set(ms)
        assert len(ms["lead_steps"]) == ms["n_collapsed"] == s["n_collapsed"]
        assert all(-1e-9 <= p <= 1 + 1e-9 for r in rep for p in r[m]["p_collapse"])
