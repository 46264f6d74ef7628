"""The wiring read-back with logged regulators (paper/wiring_logged.py): its sets (three
families of committed runs, read from their archives, unchanged), each set's fit options, and
its --quick pipeline (toy runs trained, fitted and summarised)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paper._wiring_early import EarlyDesign
from paper._wiring_logged import QUICK, LoggedDesign, run_name
from paper._wiring_weights import WeightDesign

ROOT = Path(__file__).resolve().parents[1]


def test_each_family_reads_its_study_s_runs_unchanged(tmp_path):
    cfg, early, weights = LoggedDesign(), EarlyDesign(), WeightDesign()
    sets = cfg.sets()
    assert len(sets) == 24 and cfg.jobs("wiring") == []  # nothing trained: a re-analysis
    for name, jobs in sets.items():
        base, fam = name.rsplit("_", 1)
        want = {"weights": weights.sets(), "x": early.sets(), "early": early.sets()}[fam][base]
        assert jobs == (want[:3] if fam == "x" else want)
        for j in jobs:
            p = cfg.run_path(tmp_path, j)
            assert tmp_path not in p.parents and p.name == run_name(*j)  # an archive
            assert p.parent.parent.parent == ROOT / "paper" / "results"
            assert cfg.train_config(*j) == (weights if len(j) == 4 else early).train_config(*j)
        args = cfg.args(name)
        assert args[args.index("--regulators") + 1] == "logged"
        assert ("--pulses" in args) == (fam != "weights")
    early_sets = [js for n, js in sets.items() if n.endswith("_early")]
    assert all(js[3][2] == "pulseYe" for js in early_sets)
    with pytest.raises(ValueError, match="training phase"):
        cfg.jobs("fit")
    quick = LoggedDesign(**QUICK)  # without the archives the toy runs are trained
    assert [j[2] for j in quick.jobs("wiring")] == ["w0", "w0.9", "pulse", "pulseYe"]
    assert all(quick.run_path(tmp_path, j).parent == tmp_path for j in quick.jobs("wiring"))


@pytest.mark.slow
def test_quick_logged_read_back_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.archive.wiring_logged", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_early", "C2_set0_x"]
    assert s["missing_sets"] == []
    for fam in ("x", "early"):
        m = s["by_family"][fam]["logged"]
        assert m["n_sets"] == 1 and set(m["ranks"]) == {"C2_set0"}
        sel = json.loads((out / "wiring" / f"C2_set0_{fam}" / "selection.json").read_text())
        labels = [r["label"] for r in sel["ranking"]]
        assert sorted(labels) == ["C1-AND", "C2-AND"]  # the design's two candidates
        assert m["ranks"]["C2_set0"] == labels.index("C2-AND") + 1
    fit_cfg = json.loads(
        (out / "wiring" / "C2_set0_early" / "fits" / "C2-AND" / "config.json").read_text()
    )
    assert fit_cfg["regulators"] == "logged" and fit_cfg["pulses"] is True
    assert (out / "wiring_logged.png").is_file() and (out / "table.md").is_file()
