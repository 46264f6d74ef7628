"""The third held-out watch replay (paper/watch_round3.py): its frozen design, its runs (the
fourth forecast test's), and its --quick run scoring the three methods on the same runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper import forecast_round4 as f4
from paper import watch_round2 as w2
from paper import watch_round3 as w3

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_design_is_the_drivers_and_its_methods_differ_by_one_option_each():
    committed = json.loads((ROOT / "paper/results/watch_round3/config.json").read_text())
    assert committed == w3.design(False)
    m = committed["methods"]
    assert m["weights"] == w2.design(False)["methods"]["weights"]  # the earlier replays'
    assert m["weights_observed"] == {**m["weights"], "update": "weights", "observed": True}
    bent = {**m["weights_observed"], "extrapolation_sd": 0.75, "fit": w3.LINKS_FIT}
    assert m["delta_x_bent"] == bent
    assert json.dumps(f4.DELTA_X) in committed["links_fit"]


def test_the_runs_are_the_fourth_tests():
    runs = w2.round_runs(False, w3.SOURCES)
    assert len(runs) == 48 and {r["experiment"] for r in runs} == {"forecast_round4"}
    names = {f4.run_name(*j) for j in f4.Round4Design().jobs("heldout")}
    assert {r["run"] for r in runs} == names
    assert sum(r["split"] == "inside" for r in runs) == 8


@pytest.mark.slow
def test_quick_round3_replay_scores_three_methods(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "w3"
    script = ["-m", "paper.watch_round3"]
    assert subprocess.call([sys.executable, *script, "--quick", "--out", str(out)], env=env) == 0
    s = json.loads((out / "summary.json").read_text())
    rep = json.loads((out / "replay.json").read_text())
    assert set(s["methods"]) == {"weights", "weights_observed", "delta_x_bent"}
    assert len(rep) == s["n_runs"] == 3 and (out / "watch_round3.png").is_file()
    for r in rep:  # the observed collapse only ever raises P(collapse)
        pairs = zip(r["weights"]["p_collapse"], r["weights_observed"]["p_collapse"], strict=True)
        for a, b in pairs:
            assert b >= a - 1e-12
