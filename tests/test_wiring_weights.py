"""The wiring read-back with a weight family per set (paper/wiring_weights.py): its design's
runs and configs, the per-set measures on made-up selections, and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_read import identification_summary, set_identification, table
from paper._wiring_weights import WeightDesign, run_name

ROOT = Path(__file__).resolve().parents[1]


def test_the_design_s_sets_runs_and_configs():
    from llm_runs.config import TrainConfig

    cfg = WeightDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 4 * 2 * 3 and len(cfg.sets()) == 8  # >= 4 types, sets of >= 3 runs
    assert all(len(js) == 3 and {j[3] for j in js} == {0.0, 0.45, 0.9}
               for js in cfg.sets().values())  # fmt: skip
    confs = [cfg.train_config(*j) for j in jobs]
    seeds = [c["seed"] for c in confs]
    # paired seeds: the same 6 in every type (as the testbed's sets), none of the testbed's
    assert len(set(seeds)) == 6 and min(seeds) >= 3000
    assert all(len({c["seed"] for c in confs if c["network"]["motif"] == m}) == 6
               for m in cfg.wiring_types)  # fmt: skip
    assert len({c["name"] for c in confs}) == len(confs)
    c = cfg.train_config("I1", 1, 2, 0.9)
    assert c["network"] == {"motif": "I1", "gate": "AND", "default_weight": 0.9}
    assert c["name"] == run_name("I1", 1, 2, 0.9) == "I1_set1_w0.9" and c["seed"] == 3012
    for conf in confs:  # configs llm_runs accepts, with the weight it will use
        assert (
            TrainConfig.from_dict(conf).network.default_weight == conf["network"]["default_weight"]
        )
    with pytest.raises(ValueError, match="training phase"):
        cfg.jobs("fit")


def _selection(ranking, identified, indist=()):
    return {"ranking": [{"label": x} for x in ranking], "best": ranking[0],
            "indistinguishable": list(indist), "identified": identified}  # fmt: skip


def test_set_measures_and_the_goal_s_summary():
    # C2-AND: X -| Y, X -| Z, Y -> Z
    right = set_identification(
        _selection(["C2-AND", "I2-AND"], {"X->Y": "-", "X->Z": "-", "Y->Z": None}), "C2"
    )
    assert right["rank"] == 1 and right["identified"] == {"X->Y": "-", "X->Z": "-"}
    assert all(right["identified_correct"].values())
    wrong = set_identification(
        _selection(["C1-AND", "I1-AND", "C2-AND"], {"X->Y": "+"}, ["I1-AND"]), "C2"
    )
    assert wrong["rank"] == 3 and not wrong["in_indistinguishable"]
    assert wrong["identified_correct"] == {"X->Y": False}
    s = identification_summary({"a": right, "b": wrong})
    assert s["truth_first_or_indistinguishable"] is False and s["no_wrong_sign"] is False
    assert s["share_two_signs"] == 0.5
    assert identification_summary({"a": right})["truth_first_or_indistinguishable"] is True
    assert identification_summary({})["share_two_signs"] is None
    md = table({"wiring_identification": s, "missing_sets": ["I1_set0"]})
    assert "| b | C2-AND | 3 | False | X->Y + | False |" in md and "I1_set0" in md


@pytest.mark.slow
def test_quick_pipeline_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_weights", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    w = s["wiring_identification"]
    assert list(w["sets"]) == ["C2_set0"] and s["missing_sets"] == []
    assert w["sets"]["C2_set0"]["true"] == "C2-AND" and 1 <= w["sets"]["C2_set0"]["rank"] <= 16
    fit = json.loads((out / "wiring" / "C2_set0" / "fits" / "C2-AND" / "config.json").read_text())
    assert fit["edge_weights"] is True and fit["pipeline"] == ["X->Y", "Y->Z"]
    assert len(list((out / "runs").glob("*/manifest.json"))) == 2
    bad = subprocess.run([*cmd, "--workers", "0"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
