"""The recommendation benchmark's design on the testbed (paper/recommend_study.py): the grid,
the pilots, the runs' configs, and the check that the best cell is inside the grid and not a
pilot (against hand-computed cases and scipy's Welch test); (slow) the quick pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_runs.config import TrainConfig
from paper import _recommend_study as rs
from paper import recommend_study as study

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_grid_its_pilots_and_the_interior():
    d = study.RecommendDesign()
    cells = d.cells()
    assert len(cells) == 6 * 4 * 2 and len(d.pilots) == 8
    assert 4 * len(d.pilots) <= len(cells)
    # interior: lr index 1..4 and the knob's two middle values, whatever the wiring
    inside = [c for c in cells if d.interior(c)]
    assert sorted(inside) == sorted((i, j, m) for i in range(1, 5) for j in (1, 2)
                                    for m in range(2))  # fmt: skip
    # revision 1 added the knob value 0.6: the pilots at 0.3 are now interior cells
    assert sorted(c for c in inside if d.is_pilot(c)) == sorted(
        (i, 2, m) for i in (1, 4) for m in range(2)
    )
    assert len(d.revisions) == 2 and "revision 2" in d.revisions[1]
    jobs = d.jobs("cells")
    # revision 2: the power calculation's 22 cells get seeds 3-6
    assert len(jobs) == len(cells) * len(d.seeds) + 22 * 4
    assert len({study.run_name(*j) for j in jobs}) == len(jobs)
    # pilots come first within the first seed; the design's seeds come before the added ones
    assert all(d.is_pilot(d.cell_of(j)) for j in jobs[: len(d.pilots)])
    assert [j[3] for j in jobs] == sorted(j[3] for j in jobs)
    assert d.all_seeds() == list(range(7))
    planned = {tuple(e[:3]) for e in d.seeds_by_cell}
    for c in cells:
        n = sum(d.cell_of(j) == c for j in jobs)
        assert n == (7 if c in planned else 3)


@pytest.mark.parametrize(
    "bad",
    [
        {"lrs": [4e-3, 2e-3]},
        {"knob_values": [0.1, 0.1]},
        {"motifs": []},
        {"knob": "rl.lr"},
        {"pilots": [[0, 0, 0]] * 2},
        {"pilots": [[i, j, 0] for i in range(6) for j in (0, 1)] + [[0, 2, 0]]},
        {"seeds_by_cell": [[0, 0, 0, 3]]},  # not above the design's 3 seeds
        {"seeds_by_cell": [[9, 0, 0, 5]]},  # not a cell
        {"seeds_by_cell": [[0, 0, 0, 5], [0, 0, 0, 6]]},
        {"seeds": [1, 2, 3]},
    ],
)
def test_a_bad_design_is_refused(bad):
    with pytest.raises(ValueError):
        study.RecommendDesign(**bad)


def test_every_run_config_is_a_valid_training_config_with_its_knobs():
    d = study.RecommendDesign()
    lr, x, motif, seed = d.jobs("cells")[-1]
    cfg = TrainConfig.from_dict(d.train_config(lr, x, motif, seed))
    assert cfg.rl.lr == lr and cfg.seed == seed and cfg.network.motif == motif
    assert cfg.rl.lr_scale == {"X": x}


def _finals(d, value, seeds=3, spread=0.01):
    rng = np.random.default_rng(0)
    return {c: list(value(c) + spread * rng.standard_normal(seeds)) for c in d.cells()}


def test_the_check_finds_an_interior_best_and_its_lead_against_scipy():
    from scipy import stats

    d = study.RecommendDesign()
    best = (2, 1, 1)  # lr 8e-3, knob 0.15, C2
    finals = _finals(d, lambda c: 0.9 if c == best else 0.5 + 0.02 * c[0])
    res = rs.best_cell_check(d, finals)
    assert res["best"]["rl.lr"] == 8e-3 and res["best"]["network.motif"] == "C2"
    assert res["best_cell_interior"] and not res["best_is_pilot"] and res["passed"]
    lead = res["lead_over_best_edge_cell"]
    edge = max((c for c in d.cells() if not d.interior(c)), key=lambda c: np.mean(finals[c]))
    assert lead["difference"] == pytest.approx(np.mean(finals[best]) - np.mean(finals[edge]))
    ref = stats.ttest_ind(finals[best], finals[edge], equal_var=False).confidence_interval(0.95)
    assert lead["ci95"] == pytest.approx([ref.low, ref.high], rel=1e-9)
    assert res["best_per_wiring"]["C2"] == pytest.approx(np.mean(finals[best]))


def test_the_check_fails_on_a_best_pilot_corner_and_on_missing_cells():
    d = study.RecommendDesign()
    corner = tuple(d.pilots[0])
    res = rs.best_cell_check(d, _finals(d, lambda c: 0.9 if c == corner else 0.5))
    assert res["best_is_pilot"] and not res["best_cell_interior"] and not res["passed"]
    assert res["lead_over_best_edge_cell"] is None  # the best is itself on the edge
    finals = _finals(d, lambda c: 0.5)
    finals[d.cells()[3]] = [0.5]
    with pytest.raises(ValueError, match="fewer than 2"):
        rs.best_cell_check(d, finals)


def test_the_seed_plan_is_the_closed_form_on_the_pooled_spread_of_the_top_cells():
    d = study.RecommendDesign(seeds_by_cell=[])
    rng = np.random.default_rng(3)
    top = {(1, 1, 0), (2, 1, 0), (2, 2, 1)}
    finals = {c: list((0.8 if c in top else 0.4) + rng.normal(0, 0.03 if c in top else 0.05, 3))
              for c in d.cells()}  # fmt: skip
    res = rs.seed_plan(d, finals, margin=0.15, half_width=0.02)
    # an independent pooled sd: squared deviations from each cell's mean over their df
    dev = np.concatenate([np.asarray(finals[c]) - np.mean(finals[c]) for c in top])
    sd = float(np.sqrt(np.sum(dev**2) / (3 * 2)))
    assert res["planned_cells"] == 3 and res["df"] == 6
    assert res["pooled_sd"] == pytest.approx(sd, rel=1e-12)
    n = int(np.ceil((1.96 * sd / 0.02) ** 2))
    assert n > 3 and res["n_seeds"] == n
    assert sorted(tuple(e) for e in res["cells"]) == sorted((*c, n) for c in top)
    assert res["extra_runs"] == 3 * (n - 3)
    # a wide half-width needs no more seeds than the design has
    assert rs.seed_plan(d, finals, margin=0.15, half_width=1.0)["cells"] == []
    with pytest.raises(ValueError):
        rs.seed_plan(d, finals, half_width=0.0)


def test_the_power_phase_refuses_a_design_that_is_not_its_plan(tmp_path, monkeypatch):
    d = study.RecommendDesign(seeds_by_cell=[])
    rng = np.random.default_rng(4)
    finals = {c: list(0.7 + rng.normal(0, 0.05, 3)) for c in d.cells()}
    monkeypatch.setattr(rs, "cell_finals", lambda cfg, runs, base_only=False: (finals, 0))
    with pytest.raises(RuntimeError, match="not the power calculation's plan"):
        rs.power_phase(d, tmp_path / "runs", tmp_path)
    plan = json.loads((tmp_path / "power.json").read_text())
    assert plan["cells"] and "created" in plan
    d2 = study.RecommendDesign(seeds_by_cell=plan["cells"])
    rs.power_phase(d2, tmp_path / "runs", tmp_path)  # the stored plan, kept
    assert len(d2.jobs("cells")) == 48 * 3 + plan["extra_runs"]


@pytest.mark.slow
def test_the_quick_pipeline_trains_every_cell_and_stores_the_check_once(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    cmd = [sys.executable, "-m", "paper.recommend_study", "--quick",
           "--runs", str(runs), "--out", str(out)]  # fmt: skip
    for phase in ("restore", "cells", "check", "power"):  # "all" would go on to the methods' fits
        p = subprocess.run([*cmd, "--phase", phase], capture_output=True, text=True, timeout=1800)
        assert p.returncode == 0, p.stderr[-2000:]
    check = json.loads((out / "check.json").read_text())
    d = study.RecommendDesign(**study.QUICK)
    assert len(check["cells"]) == len(d.cells()) and "created" in check
    assert all(c["n"] == len(d.seeds) for c in check["cells"])
    assert json.loads((out / "power.json").read_text())["cells"] == []  # a wide half-width
    again = subprocess.run([*cmd, "--phase", "check"], capture_output=True, text=True)
    assert again.returncode == 0 and "kept as it is" in again.stdout
    assert json.loads((out / "check.json").read_text()) == check


def test_the_methods_phase_needs_the_check_first(tmp_path):
    cmd = [sys.executable, "-m", "paper.recommend_study", "--quick", "--phase",
           "methods", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()]  # one line
    assert p.stderr.startswith("error:") and "check.json" in p.stderr
