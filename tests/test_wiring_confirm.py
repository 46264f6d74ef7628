"""The wiring read back from new runs (paper/wiring_confirm.py): its runs (set 2, seeds no
earlier wiring study used), the analysis stored with them, the read-back by the pointwise se
beside the blocked one, and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_confirm import QUICK, ConfirmDesign, pointwise_read
from paper._wiring_logged import LoggedDesign

ROOT = Path(__file__).resolve().parents[1]


def test_new_runs_with_unused_seeds_and_the_stored_analysis(tmp_path):
    cfg = ConfirmDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 16 and {j[1] for j in jobs} == {2}
    assert all(cfg.run_path(tmp_path, j).parent == tmp_path for j in jobs)  # trained here
    old = LoggedDesign()
    used = {old.train_config(*j)["seed"] for js in old.sets().values() for j in js}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3020, 3022, 3023, 3025} and not new & used
    early = cfg.train_config("I1", 2, "pulseYe")
    assert early["task"]["spurious"]["roles"] == ["Y"] and early["network"]["motif"] == "I1"
    sets = cfg.sets()
    assert list(sets) == [f"{m}_set2_{f}" for f in ("early", "x") for m in ("C1", "I1", "C2", "I2")]
    for name, js in sets.items():
        args = cfg.args(name)
        assert {"--dse-blocks", "--pulses"} <= set(args) and "logged" in args
        assert len(js) == (4 if name.endswith("_early") else 3)
    assert cfg.primary == "early" and not cfg.quote_earlier


def _row(label: str, d: float, dse_points: float) -> dict:
    return {"label": label, "d_elpd": d, "dse": 10.0, "dse_points": dse_points}


def test_the_pointwise_read_back_of_a_blocked_selection():
    # blocked: all three indistinguishable; pointwise (2 x dse_points): C1 and I1 only
    sel = {"best": "C1-AND", "indistinguishable": ["C1-AND", "I1-AND", "C2-AND"],
           "identified": {"X->Y": None, "X->Z": None, "Y->Z": None},
           "ranking": [_row("C1-AND", 0.0, 0.0), _row("I1-AND", 3.0, 2.0),
                       _row("C2-AND", 9.0, 4.0)]}  # fmt: skip
    got = pointwise_read(sel, "C1")
    assert got["rank"] == 1 and got["in_indistinguishable"]
    # C1 and I1 share X->Y + and X->Z +, differ in Y->Z
    assert got["identified"] == {"X->Y": "+", "X->Z": "+"}
    assert all(got["identified_correct"].values())
    wrong = pointwise_read(sel, "C2")  # C2: X->Y -, X->Z -: both identified signs wrong
    assert wrong["rank"] == 3 and not wrong["in_indistinguishable"]
    assert not any(wrong["identified_correct"].values())


@pytest.mark.slow
def test_quick_confirmation_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.wiring_confirm", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_early", "C2_set0_x"]
    assert s["primary"] == "early" and set(s["pointwise"]) == {"early", "x"}
    assert s["by_family"]["early"]["earlier"] is None
    sel = json.loads((out / "wiring" / "C2_set0_early" / "selection.json").read_text())
    assert "per run and agent" in sel["criterion"]
    read = pointwise_read(sel, "C2")  # the summary's pointwise counts are this read-back's
    pw = s["pointwise"]["early"]
    assert pw["truth_first_or_indistinguishable_sets"] == int(
        read["rank"] == 1 or read["in_indistinguishable"]
    )
    assert pw["sets_with_two_signs"] == int(len(read["identified"]) >= 2)
    assert QUICK["fit_args"][-1] == "--dse-blocks" and (out / "wiring_confirm.png").is_file()
