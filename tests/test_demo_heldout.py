"""The demo's held-out study (``python -m paper.demo_heldout``): its design and its whole
pipeline at micro sizes (``--quick``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_heldout_settings_cover_the_space_and_beyond_without_repeats() -> None:
    from paper.demo_heldout import Design, _split, heldout_settings

    s = heldout_settings(False)
    assert len(s) == 20 and len({tuple(x.items()) for x in s}) == 20
    cfg = Design().demo("adaptive")
    splits = [_split(x, cfg) for x in s]
    assert splits.count("interpolation") >= 10 and splits.count("extrapolation") >= 6
    lrs = [x["rl.lr"] for x in s]
    # up to 2x beyond the searched range of rl.lr, on both sides
    assert min(lrs) >= cfg.lr_range[0] / 2 and max(lrs) <= 2 * cfg.lr_range[1]
    assert min(lrs) < cfg.lr_range[0] and max(lrs) > cfg.lr_range[1]
    corners = Design().demo("corners")
    budget = len(corners.pilots) * len(corners.pilot_seeds) * corners.pilot_steps
    assert budget == cfg.pilot_plan().spent  # the two designs spend the same pilot steps


def test_seeds_from_the_pilots_spread_by_hand() -> None:
    from paper.demo_heldout import seeds_needed

    runs = [
        {"setting": {"a": 1}, "final": {"X": 0.5}},
        {"setting": {"a": 1}, "final": {"X": 0.7}},
        {"setting": {"a": 2}, "final": {"X": 0.2}},
        {"setting": {"a": 2}, "final": {"X": 0.2}},
    ]
    n, sd = seeds_needed(runs)
    assert sd == pytest.approx((0.02 / 2) ** 0.5)  # pooled: squares 0.02 over 2 dof
    assert n == max(2, -(-((1.96 * sd / 0.1) ** 2) // 1))


@pytest.mark.slow
def test_quick_pipeline_runs_every_phase(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "paper.demo_heldout", "--quick", "--runs", str(tmp_path / "runs"),
           "--out", str(out)]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)
    assert r.returncode == 0, r.stderr[-3000:]
    pred = json.loads((out / "predictions.json").read_text())
    assert set(pred["designs"]) == {"adaptive", "corners"} and "created" in pred
    summary = json.loads((out / "summary.json").read_text())
    for design in ("adaptive", "corners"):
        for rule in ("package_rule", "peak_rule"):
            res = summary["by_design"][design][rule]["all"]
            m = res["motif model (new run, runs' rule)"]
            assert 0 <= m["regime_accuracy"] <= 1 and 0 <= m["brier"] <= 1
            assert {"nearest pilot", "GP over knobs", "GP classifier"} <= set(res)
    assert (out / "table.md").is_file() and (out / "reliability.png").is_file()
