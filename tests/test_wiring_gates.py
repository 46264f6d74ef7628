"""The wiring read back with the pipeline gates on the logged training competence
(paper/wiring_gates.py, sets 4 and 5), with a greedy readout besides
(paper/wiring_readout.py, sets 6 and 7), and from replicated runs with the se from the
replicates (paper/wiring_replicates.py, sets 8 and 9 pooled): their runs (seeds no earlier
wiring study used, the threshold read-back's K and n), the analysis stored with them, and
their --quick pipelines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_confirm import ConfirmDesign
from paper._wiring_logged import LoggedDesign
from paper._wiring_replicates import ReplicatesDesign, ReplicationDesign
from paper._wiring_threshold import GatesDesign, ReadoutDesign, ThresholdDesign

ROOT = Path(__file__).resolve().parents[1]

EARLIER = (LoggedDesign(), ConfirmDesign(), ThresholdDesign())


def _used_seeds(designs) -> set[int]:
    return {d.train_config(*j)["seed"] for d in designs for js in d.sets().values() for j in js}


def test_new_runs_at_unused_seeds_read_back_with_logged_gates(tmp_path):
    cfg = GatesDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 32 and {j[1] for j in jobs} == {4, 5}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3040, 3042, 3043, 3045, 3050, 3052, 3053, 3055}
    assert not new & _used_seeds(EARLIER)
    assert all(cfg.train_config(*j)["network"]["K"] == 0.6 for j in jobs)
    assert all(cfg.run_path(tmp_path, j).parent == tmp_path for j in jobs)
    assert len(cfg.sets()) == 8
    for name in cfg.sets():
        args = cfg.args(name)
        i = args.index("--regulators")
        assert args[i + 1] == "logged-gates" and {"--dse-blocks", "--pulses"} <= set(args)
    # the threshold read-back's analysis otherwise
    assert [a for a in cfg.fit_args if a != "logged-gates"] == [
        a for a in ThresholdDesign().fit_args if a != "logged"
    ]


def test_new_runs_at_unused_seeds_read_back_with_the_greedy_readout():
    cfg = ReadoutDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 32 and {j[1] for j in jobs} == {6, 7}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3060, 3062, 3063, 3065, 3070, 3072, 3073, 3075}
    assert not new & _used_seeds((*EARLIER, GatesDesign()))
    assert all(cfg.train_config(*j)["network"]["K"] == 0.6 for j in jobs)
    assert len(cfg.sets()) == 8
    for name in cfg.sets():
        args = cfg.args(name)
        assert args[args.index("--readout") + 1] == "greedy"
        assert args[args.index("--regulators") + 1] == "logged-gates"
        assert {"--dse-blocks", "--pulses"} <= set(args)
    assert cfg.fit_args[:-2] == GatesDesign().fit_args  # the gates read-back's otherwise


def test_replicated_runs_pool_two_new_sets_and_read_back_with_the_replicates_se():
    cfg = ReplicatesDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 24 and {j[1] for j in jobs} == {8, 9}
    assert {j[2] for j in jobs} == {"w0", "w0.9", "pulse"}  # no early Y knock-down
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3080, 3082, 3083, 3090, 3092, 3093}
    assert not new & _used_seeds((*EARLIER, GatesDesign(), ReadoutDesign()))
    sets = cfg.sets()
    assert sorted(sets) == [f"{m}_sets8-9_early" for m in ("C1", "C2", "I1", "I2")]
    for name, js in sets.items():  # each condition at two seeds: every run has a replicate
        kinds = [j[2] for j in js]
        assert all(kinds.count(k) == 2 for k in kinds) and len(js) == 6
        assert {j[0] for j in js} == {name.split("_")[0]}
        args = cfg.args(name)
        assert "--dse-replicates" in args and {"--dse-blocks", "--pulses"} <= set(args)
    assert cfg.fit_args[:-1] == ReadoutDesign().fit_args  # the readout read-back's otherwise


def test_the_replication_repeats_the_design_on_new_seeds_of_c1_and_i1():
    cfg, first = ReplicationDesign(), ReplicatesDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 12 and {j[0] for j in jobs} == {"C1", "I1"} and {j[1] for j in jobs} == {
        10, 11}  # fmt: skip
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3100, 3102, 3103, 3110, 3112, 3113}
    assert not new & _used_seeds((*EARLIER, GatesDesign(), ReadoutDesign(), first))
    assert sorted(cfg.sets()) == ["C1_sets10-11_early", "I1_sets10-11_early"]
    assert cfg.fit_args == first.fit_args and cfg.kinds == first.kinds
    # run for run the first study's configs, but for seed and name
    a = cfg.train_config("C1", 10, "pulse")
    b = first.train_config("C1", 8, "pulse")
    assert {k: v for k, v in a.items() if k not in ("seed", "name")} == {
        k: v for k, v in b.items() if k not in ("seed", "name")}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "expect", "name"),
    [("wiring_gates.py", {"regulators": "logged-gates"}, "C2_set0_early"),
     ("wiring_readout.py", {"regulators": "logged-gates", "readout": "greedy"}, "C2_set0_early"),
     ("wiring_replicates.py", {"regulators": "logged-gates", "readout": "greedy"},
      "C2_sets0-1_early")],
)  # fmt: skip
def test_quick_read_back_trains_fits_and_summarises(tmp_path, script, expect, name):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", f"paper.{script.removesuffix('.py')}", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == [name]
    cfg = json.loads((out / "wiring" / name / "fits" / "C2-AND" / "config.json").read_text())
    assert {k: cfg[k] for k in expect} == expect and cfg["pipeline"]
    if script != "wiring_replicates.py":
        assert s["two_signs_share"]["early_blocks"]["sets"] == 1
        return
    sel = json.loads((out / "wiring" / name / "selection.json").read_text())
    assert "stratified by condition and agent" in sel["criterion"]
    assert all({"dse", "dse_blocks", "dse_points", "dse_df"} <= set(r) for r in sel["ranking"])
    assert {k: v["n_sets"] for k, v in s["se_reads"].items()} == {
        "replicates": 1,
        "replicates_t": 1,
        "blocks": 1,
        "pointwise": 1,
    }
