"""Links bent beyond the pilots' range (``predict(..., extrapolation_sd=s)``): where the knot
lies, that nothing inside the range moves, and the slope change's law against the closed-form
equilibrium of the input agent."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import calibrate as cal
from calibrate._predict._knots import bend_links, knot_matrix

LRS = [1e-4, 3e-4, 1e-3]  # the shared fit's pilots (tests/calibrate/conftest.py)


def test_knot_matrix_is_the_signed_distance_beyond_the_range_on_the_link_scale(lr_family_fit):
    from calibrate._predict._core import _setting_matrix

    post, _ = lr_family_fit
    cm = post.model
    pilots = {"rl.lr": np.log(np.array(LRS))}
    settings = [{"rl.lr": 5e-4}, {"rl.lr": 4e-3}, {"rl.lr": 2e-5}, {}, {"rl.lr": 1e-3}]
    k = knot_matrix(cm, pilots, _setting_matrix(post, settings))
    assert k.shape == (5, len(cm.link_rows))
    # independent of the centre: log(h) against the pilots' log range; at an edge exactly 0
    want = [0.0, math.log(4e-3 / 1e-3), math.log(2e-5 / 1e-4), 0.0, 0.0]
    for i, w in enumerate(want):
        np.testing.assert_allclose(k[i], w, rtol=1e-12, atol=0)


def test_bend_links_leaves_straight_links_alone_and_refuses_bad_sd(lr_family_fit):
    post, _ = lr_family_fit
    cm = post.model
    slopes, x = np.ones((4, 3)), np.zeros((2, 3))
    inside = np.zeros((2, 3))
    assert bend_links(cm, slopes, x, inside, 0.7, seed=0)[0] is cm  # nothing beyond
    beyond = np.full((2, 3), 0.5)
    assert bend_links(cm, slopes, x, beyond, 0.0, seed=0)[1] is slopes  # sd 0
    bent, s2, x2 = bend_links(cm, slopes, x, beyond, 0.7, seed=0)
    assert s2.shape == (4, 6) and x2.shape == (2, 6)
    np.testing.assert_array_equal(bent.link_index, np.tile(cm.link_index, 2))
    np.testing.assert_array_equal(s2[:, :3], slopes)
    np.testing.assert_array_equal(x2[:, 3:], beyond)
    for bad in (-0.1, float("nan"), float("inf"), True, "1"):
        with pytest.raises(cal.ConfigError, match="extrapolation_sd"):
            bend_links(cm, slopes, x, beyond, bad, seed=0)  # type: ignore[arg-type]


def test_inside_the_range_nothing_moves(lr_family_fit):
    post, _ = lr_family_fit
    at = [{"rl.lr": 2e-4}, {"rl.lr": 9e-4}]
    a = cal.predict(post, at, max_draws=50, n_points=40, bands=False)
    b = cal.predict(post, at, max_draws=50, n_points=40, bands=False, extrapolation_sd=1.5)
    assert a.new_final is not None and b.new_final is not None
    np.testing.assert_array_equal(a.final, b.final)
    np.testing.assert_array_equal(a.new_final, b.new_final)
    assert b.extrapolation_sd == 1.5 and b.to_dict()["extrapolation_sd"] == 1.5
    assert any("bend" in line for line in b.table())


def test_the_slope_change_is_normal_with_the_given_sd_at_the_input_agents_equilibrium(
    lr_family_fit,
):
    """Oracle: the input agent X relaxes to X* = r / (r + delta) with r proportional to
    rho, so logit X* = log rho + const: a bend adds k * beyond to log rho[X] and
    logit X*_bent - logit X*_straight = k * beyond per draw, k ~ N(0, s^2)."""
    post, _ = lr_family_fit
    lr, s = 4e-3, 0.6
    beyond = math.log(lr / 1e-3)
    kw = {"max_draws": 400, "n_points": 16, "bands": False, "band": "mean", "steps": 20_000}
    a = cal.predict(post, [{"rl.lr": lr}], **kw)
    b = cal.predict(post, [{"rl.lr": lr}], extrapolation_sd=s, **kw)
    np.testing.assert_array_equal(a.draw_index, b.draw_index)
    x_a, x_b = a.final[0, :, 0], b.final[0, :, 0]
    assert np.all((x_a > 1e-6) & (x_a < 1 - 1e-6))
    k = (np.log(x_b / (1 - x_b)) - np.log(x_a / (1 - x_a))) / beyond
    assert abs(np.std(k, ddof=1) / s - 1) < 0.12  # 400 draws: relative sd ~0.035
    assert abs(np.mean(k)) < 4 * s / math.sqrt(k.size)
    assert stats.kstest(k / s, "norm").pvalue > 1e-3
    # and the equilibrium was reached: the straight forecast is X* of each draw's rates
    inside = cal.predict(post, [{"rl.lr": lr}], extrapolation_sd=0.0, **kw)
    np.testing.assert_array_equal(inside.final, a.final)


def test_cli_takes_the_sd_and_refuses_a_bad_one(lr_family_fit, capsys):
    import json

    from calibrate.__main__ import main

    _, folder = lr_family_fit
    args = ["predict", str(folder), "--set", "rl.lr=4e-3", "--draws", "20", "--json"]
    assert main([*args, "--extrapolation-sd", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["extrapolation_sd"] == 0.5
    assert main([*args, "--extrapolation-sd", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "extrapolation_sd" in err[0]
