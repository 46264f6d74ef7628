"""The wiring read back with a greedy readout (paper/wiring_readout.py): its runs (sets 6 and
7, seeds no earlier wiring study used, the threshold read-back's K and n), the analysis
stored with them, and its --quick pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper"))

from wiring_confirm import ConfirmDesign  # noqa: E402
from wiring_gates import GatesDesign  # noqa: E402
from wiring_logged import LoggedDesign  # noqa: E402
from wiring_readout import ReadoutDesign  # noqa: E402
from wiring_threshold import ThresholdDesign  # noqa: E402


def test_new_runs_at_unused_seeds_read_back_with_the_greedy_readout(tmp_path):
    cfg = ReadoutDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 32 and {j[1] for j in jobs} == {6, 7}
    used = set()
    for old in (LoggedDesign(), ConfirmDesign(), ThresholdDesign(), GatesDesign()):
        used |= {old.train_config(*j)["seed"] for js in old.sets().values() for j in js}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3060, 3062, 3063, 3065, 3070, 3072, 3073, 3075} and not new & used
    assert all(cfg.train_config(*j)["network"]["K"] == 0.6 for j in jobs)
    assert len(cfg.sets()) == 8
    for name in cfg.sets():
        args = cfg.args(name)
        assert args[args.index("--readout") + 1] == "greedy"
        assert args[args.index("--regulators") + 1] == "logged-gates"
        assert {"--dse-blocks", "--pulses"} <= set(args)
    # the gates read-back's analysis otherwise
    assert cfg.fit_args[:-2] == GatesDesign().fit_args


@pytest.mark.slow
def test_quick_readout_read_back_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, str(ROOT / "paper" / "wiring_readout.py"), "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_early"]
    cfg = json.loads((out / "wiring" / "C2_set0_early" / "fits" / "C2-AND" / "config.json")
                     .read_text())  # fmt: skip
    assert cfg["readout"] == "greedy" and cfg["regulators"] == "logged-gates"
    assert s["two_signs_share"]["early_blocks"]["sets"] == 1
