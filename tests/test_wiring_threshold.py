"""The wiring read back with edge thresholds inside Y's logged range
(paper/wiring_threshold.py): its runs (set 3, seeds no earlier wiring study used, K and n on
every edge), the share of sets with two signs and its exact interval, and its --quick
pipeline."""

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
from wiring_logged import LoggedDesign  # noqa: E402
from wiring_threshold import ThresholdDesign, two_signs_shares  # noqa: E402

from llm_runs.config import TrainConfig  # noqa: E402


def test_new_runs_at_unused_seeds_with_the_designed_threshold(tmp_path):
    cfg = ThresholdDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 16 and {j[1] for j in jobs} == {3}
    assert all(cfg.run_path(tmp_path, j).parent == tmp_path for j in jobs)
    used = set()
    for old in (LoggedDesign(), ConfirmDesign()):
        used |= {old.train_config(*j)["seed"] for js in old.sets().values() for j in js}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3030, 3032, 3033, 3035} and not new & used
    for j in jobs:
        spec = TrainConfig.from_dict(cfg.train_config(*j)).network.network_spec()
        assert {(e.K, e.n) for e in spec.edges} == {(0.6, 10.0)}
    # the same runs as the confirmation's otherwise
    mine, theirs = (
        cfg.train_config("I2", 3, "pulseYe"),
        ConfirmDesign().train_config("I2", 3, "pulseYe"),
    )
    assert {k: v for k, v in mine.items() if k != "network"} == {
        k: v for k, v in theirs.items() if k != "network"
    }
    assert mine["task"]["spurious"]["roles"] == ["Y"]
    assert list(cfg.sets()) == [f"{m}_set3_early" for m in ("C1", "I1", "C2", "I2")]
    assert all({"--dse-blocks", "--pulses"} <= set(cfg.args(n)) for n in cfg.sets())


def _fam(k: int, n: int) -> dict:
    return {"sets_with_two_signs": k, "n_sets": n}


def test_two_signs_share_with_its_exact_interval():
    s = {"by_family": {"early": {"logged": _fam(0, 4)}}, "pointwise": {"early": _fam(4, 4)}}
    got = two_signs_shares(s)
    b, p = got["early_blocks"], got["early_pointwise"]
    assert (b["two_signs"], b["sets"], b["share"]) == (0, 4, 0.0)
    # Clopper-Pearson at k = 0 and k = n: closed forms 1 - (a/2)^(1/n) and (a/2)^(1/n)
    assert b["ci95"][0] == 0.0 and b["ci95"][1] == pytest.approx(1 - 0.025**0.25, abs=1e-9)
    assert p["share"] == 1.0 and p["ci95"][0] == pytest.approx(0.025**0.25, abs=1e-9)
    assert p["ci95"][1] == 1.0
    assert two_signs_shares({"by_family": {"x": {"logged": _fam(0, 0)}}, "pointwise": {}}) == {}


@pytest.mark.slow
def test_quick_read_back_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, str(ROOT / "paper" / "wiring_threshold.py"), "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_early"]
    fit = out / "wiring" / "C2_set0_early"
    configs = json.loads((fit / "fits" / "C2-AND" / "run_configs.json").read_text())
    assert {(c["network"]["K"], c["network"]["n"]) for c in configs.values()} == {(0.6, 10.0)}
    read = s["wiring_identification"]["sets"]["C2_set0_early"]
    two = s["two_signs_share"]["early_blocks"]
    assert two["sets"] == 1 and two["two_signs"] == int(len(read["identified"]) >= 2)
    assert (out / "wiring_threshold.png").is_file()
