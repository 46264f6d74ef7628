"""No silent wrong answers (issue 36 §2): out-of-range draws are failed solves, settings far
from the pilots are flagged, a failed candidate is never ranked first, sizes are checked."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate._predict._checks import (
    MAX_SOLVE_STEPS,
    check_size,
    extrapolation,
    failed_draws,
)
from calibrate._recommend._core import rank_candidates
from simulate import ConfigError


def test_a_competence_outside_0_1_or_not_finite_is_a_failed_draw():
    final = np.array([[[0.2, 0.9, 0.5], [-22.0, 0.5, 0.5], [np.nan, 0.1, 0.1],
                       [0.3, 1.0 + 1e-9, 0.0], [-4.7e9, 0.5, 0.5]]])  # fmt: skip
    codes = np.zeros(final.shape, dtype=int)
    f, c, bad = failed_draws(final, codes)
    assert bad.tolist() == [[False, True, True, False, True]]
    assert (c[0, bad[0]] == 5).all() and (c[0, ~bad[0]] == 0).all()
    assert np.isnan(f[0, bad[0]]).all() and np.array_equal(f[0, ~bad[0]], final[0, ~bad[0]])


def test_a_draw_the_solver_failed_on_one_agent_is_failed_whatever_its_final_says():
    final = np.full((1, 2, 3), 0.5)  # the solver's stand-in values look like a forecast
    codes = np.zeros((1, 2, 3), dtype=int)
    codes[0, 1, 2] = 5  # simulate.Regime.FAILED on Z only
    f, c, bad = failed_draws(final, codes)
    assert bad.tolist() == [[False, True]]
    assert (c[0, 1] == 5).all() and np.isnan(f[0, 1]).all() and (f[0, 0] == 0.5).all()


def test_curves_are_checked_at_every_step_when_kept():
    final = np.full((1, 2, 3), 0.5)
    curves = np.full((1, 2, 4, 3), 0.5)
    curves[0, 1, 2, 0] = 1.7  # leaves [0, 1] midway, comes back at the end
    _, _, bad = failed_draws(final, np.zeros((1, 2, 3), int), curves)
    assert bad.tolist() == [[False, True]]


def test_extrapolation_in_spreads_outside_the_pilots_range():
    pilots = {"rl.lr": np.log([1e-3, 1e-3, 1.5e-2, 1.5e-2]), "rl.batch": np.log([32.0] * 4)}
    sd = np.log([1e-3, 1.5e-2]).std()
    given = [{"rl.lr": np.log(5e-3)}, {"rl.lr": np.log(1.0)},
             {"rl.batch": np.log(32.0)}, {"rl.batch": np.log(64.0)}]  # fmt: skip
    far = extrapolation(pilots, given)
    assert far[0] == {"rl.lr": 0.0}  # inside the range
    assert far[1]["rl.lr"] == pytest.approx(np.log(1 / 1.5e-2) / sd)  # ~3.1 spreads
    assert far[2] == {"rl.batch": 0.0} and far[3] == {"rl.batch": np.inf}  # constant in fit


def test_a_failed_candidate_is_ranked_after_every_other():
    mean = np.array([0.4, np.nan, 0.2, np.nan])
    risk = np.array([0.9, 0.0, 0.95, 1.0])  # the failed one has the lowest risk
    order = rank_candidates(mean, risk, bound=0.1)
    assert order[:2] == [0, 2] and set(order[2:]) == {1, 3}


def test_a_horizon_too_long_to_solve_is_refused_before_the_work():
    t = np.linspace(0, 1e8, 200)
    with pytest.raises(ConfigError, match="shorter --steps"):
        check_size(t, int(np.ceil(1e8 / 199)), 200)
    check_size(np.linspace(0, 600, 200), 4, 200)  # the usual size passes
    assert MAX_SOLVE_STEPS >= 10**5
