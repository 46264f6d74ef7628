"""Recommendations that explain themselves (issue 32 §4): the chosen setting's forecast, the
nearest pilot and how far the pick extrapolates, the runner-up and why it lost, and whether
the risk tolerance bound — checked against hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibrate._recommend._eval import rank_candidates
from calibrate._recommend._explain import explain, explain_lines

CANDS = [{"rl.lr": 3e-2, "rl.staleness": 0}, {"rl.lr": 1e-3, "rl.staleness": 0},
         {"rl.lr": 4e-3, "rl.staleness": 2}, {"rl.lr": 1e-3, "rl.staleness": 8}]  # fmt: skip
MEAN = np.array([0.9, 0.8, 0.85, 0.7])
RISK = np.array([0.5, 0.0, 0.05, 0.0])
PILOTS = {"rl.lr": [1e-3, 1e-2, 1e-3, 1e-2], "rl.staleness": [0, 0, 4, 4]}
RUNS = ["p00", "p10", "p04", "p14"]
TRANSFORMS = {"rl.lr": "log", "rl.staleness": "log1p"}
ROW = {"final": {"new_run_q05": 0.75, "new_run_q95": 0.92}}


def _explain(tolerance: float = 0.1, cands=CANDS) -> dict:
    order = rank_candidates(MEAN, RISK, tolerance)
    return explain(cands, MEAN, RISK, order, tolerance=tolerance, agent="Z", chosen_row=ROW,
                   runs=RUNS, pilots=PILOTS, transforms=TRANSFORMS)  # fmt: skip


def test_the_choice_its_runner_up_and_the_binding_risk_bound():
    ex = _explain()
    assert ex["chosen"]["setting"] == CANDS[2] and ex["chosen"]["forecast_mean"] == 0.85
    assert ex["chosen"]["new_run_90"] == [0.75, 0.92]
    assert ex["runner_up"]["setting"] == CANDS[1]
    assert ex["runner_up"]["why"] == "forecast final of Z lower by 0.05"
    rb = ex["risk_bound"]
    assert rb["binding"] is True and rb["n_within"] == 3
    assert rb["best_excluded"]["setting"] == CANDS[0]  # 0.90 forecast, risk 0.5 > 0.1


def test_an_unbinding_tolerance_and_a_runner_up_lost_to_risk():
    ex = _explain(tolerance=0.6)  # everything within: the best forecast wins, nothing bound
    assert ex["chosen"]["setting"] == CANDS[0]
    assert ex["risk_bound"]["binding"] is False and ex["risk_bound"]["best_excluded"] is None
    # a runner-up above the tolerance loses to risk, whatever its forecast
    order = [2, 0, 1, 3]
    ex = explain(CANDS, MEAN, RISK, order, tolerance=0.1, agent="Z", chosen_row=ROW,
                 runs=RUNS, pilots=PILOTS, transforms=TRANSFORMS)  # fmt: skip
    assert ex["runner_up"]["why"] == "P(oscillating or collapse) 0.50 above the tolerance 0.1"


def test_nearest_pilot_and_extrapolation_in_units_of_the_pilots_range():
    ex = _explain()
    near = ex["nearest_pilot"]
    # pick (4e-3, 2): log lr at (log 4e-3 - log 1e-3) / log 10 = 0.602 of the range;
    # log1p staleness at log 3 / log 5 = 0.683: inside on both knobs
    z = np.array([math.log(4) / math.log(10), math.log(3) / math.log(5)])
    corners = {"p00": (0, 0), "p10": (1, 0), "p04": (0, 1), "p14": (1, 1)}
    dist = {r: float(np.hypot(*(z - np.array(c)))) for r, c in corners.items()}
    want = min(dist, key=dist.get)
    assert near["run"] == want and near["distance"] == pytest.approx(dist[want], rel=1e-12)
    assert near["extrapolates"] is False and near["beyond"] == {}
    far = _explain(tolerance=0.6)["nearest_pilot"]  # the pick lr 3e-2: beyond 1e-2
    assert far["extrapolates"] is True
    assert far["beyond"] == {"rl.lr": pytest.approx(math.log(3) / math.log(10))}
    lines = explain_lines(_explain(tolerance=0.6))
    assert "[0.750, 0.920] (90 %), mean 0.850" in explain_lines(_explain())[0]
    assert "beyond the pilots' range on rl.lr by 0.48 range(s)" in lines[1]
    assert "did not bind" in lines[-1]
