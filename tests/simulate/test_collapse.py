"""The one collapse rule for measured curves (``simulate.fall_collapse``) and the classifier of
real runs built on it (``simulate.classify_observed``), on synthetic curves whose answer is
known in closed form: a clean fall that stays is a collapse, a dip that recovers is not,
binomial noise on a plateau is not (Monte Carlo at n_eval 32), and a curve that never rose is
not."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simulate
from simulate.common import AgentmotifsError, fall_collapse

T21 = np.arange(21) * 10.0  # a 200-step run evaluated every 10 steps


def test_a_clean_fall_that_stays_is_a_collapse_with_the_stated_numbers():
    y = np.r_[0.8, 0.6, 0.4, 0.2, np.full(17, 0.1)]
    v = fall_collapse(y, 64)
    assert v.collapsed
    assert v.n_tail == math.ceil(0.2 * 21) == 5
    assert v.reference == 0.8 and v.tail == pytest.approx(0.1) and v.last == 0.1
    sd = math.sqrt(0.8 * 0.2 / 64 + 0.1 * 0.9 / (64 * 5))
    assert v.drop_sd == pytest.approx(sd)


def test_the_lr_8e3_shape_is_a_collapse():
    """0.64 -> 0.05 by step 40, ends at 0.02 (issue 31 §0)."""
    y = np.interp(T21, [0, 40, 200], [0.64, 0.05, 0.02])
    assert fall_collapse(y, 64).collapsed
    assert fall_collapse(y, 32).collapsed


def test_a_rise_then_a_fall_is_measured_from_the_smoothed_peak():
    y = np.r_[0.3, 0.6, 0.9, 0.9, 0.9, 0.9, 0.6, 0.3, np.full(13, 0.2)]
    v = fall_collapse(y, 64)
    assert v.reference == pytest.approx(0.9) and v.collapsed
    # measured from the start only, 0.2 would not be far below 0.3
    assert not (v.tail < 0.5 * y[0])


def test_a_dip_that_recovers_is_not_a_collapse():
    y = np.r_[0.7, 0.3, 0.05, 0.02, 0.05, 0.3, 0.5, np.full(14, 0.7)]
    assert not fall_collapse(y, 64).collapsed


def test_a_last_evaluation_back_up_is_not_a_collapse():
    y = np.r_[0.8, np.full(19, 0.05), 0.7]
    assert not fall_collapse(y, 64).collapsed


def test_a_fall_by_less_than_half_is_not_a_collapse():
    y = np.r_[0.9, 0.8, 0.7, np.full(18, 0.5)]
    assert not fall_collapse(y, 64).collapsed


def test_a_small_fall_at_low_level_is_within_probe_noise():
    """0.12 -> 0.03 is a fall by three quarters, but at n_eval 32 the start's sd alone is
    0.057: R - L = 0.09 < 3 sd, not a collapse; at n_eval 1024 it is."""
    y = np.r_[0.12, np.full(20, 0.03)]
    assert not fall_collapse(y, 32).collapsed
    assert fall_collapse(y, 1024).collapsed


@pytest.mark.parametrize("p", [0.05, 0.1, 0.2, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("T", [7, 13, 21])
def test_binomial_noise_on_a_plateau_is_not_a_collapse(p, T):
    """A flat true competence measured on 32 probes: under 1 % of 400 curves collapse."""
    rng = np.random.default_rng(int(1000 * p) + T)
    hits = sum(fall_collapse(rng.binomial(32, p, T) / 32, 32).collapsed for _ in range(400))
    assert hits <= 4, hits


def test_noise_around_a_true_collapse_is_still_a_collapse():
    rng = np.random.default_rng(0)
    true = np.interp(T21, [0, 40, 200], [0.64, 0.05, 0.02])
    hits = sum(fall_collapse(rng.binomial(32, true) / 32, 32).collapsed for _ in range(200))
    assert hits >= 198, hits


@pytest.mark.parametrize(
    ("values", "n_eval", "match"),
    [([0.5, 0.4, 0.3], 32, "at least 4"), ([0.5, np.nan, 0.3, 0.2], 32, "finite"),
     ([0.5, 0.4, 0.3, 0.2], 0, "n_eval"), ([0.5, 0.4, 0.3, 0.2], "32", "n_eval")],
)  # fmt: skip
def test_bad_input_is_an_error(values, n_eval, match):
    with pytest.raises(AgentmotifsError, match=match):
        fall_collapse(values, n_eval)


def test_classify_observed_labels_each_agent_and_the_run():
    x = np.interp(T21, [0, 40, 200], [0.64, 0.05, 0.02])
    y = np.interp(T21, [0, 100, 200], [0.6, 0.95, 0.97])
    flat = np.full(21, 0.5)
    out = simulate.classify_observed(T21, np.stack([x, y, flat], 1), 64, names=("X", "Y", "Z"))
    assert out["regime"] == "collapse"
    assert out["node_regimes"] == {"X": "collapse", "Y": "converged", "Z": "converged"}
    assert out["collapse"]["X"]["collapsed"] and not out["collapse"]["Z"]["collapsed"]


def test_classify_observed_never_calls_a_curve_low_from_the_start_a_collapse():
    low = np.full(21, 0.01)
    out = simulate.classify_observed(T21, low[:, None], 64)
    assert out["node_regimes"]["0"] != "collapse"


def test_classify_observed_rejects_bad_shapes():
    with pytest.raises(AgentmotifsError, match="shape"):
        simulate.classify_observed(T21, np.zeros((20, 2)), 64)
    with pytest.raises(AgentmotifsError, match="names"):
        simulate.classify_observed(T21, np.zeros((21, 2)), 64, names=("X",))


def test_onset_is_where_the_fall_begins_and_stays():
    from simulate.common import fall_collapse

    # rise to a peak, then fall: the onset is the first evaluation past the peak's window
    # that is below half the peak, with the rest of the curve below on average
    y = [0.3, 0.5, 0.8, 0.85, 0.8, 0.6, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02]
    v = fall_collapse(y, 64)
    assert v.collapsed and v.onset == 6
    assert v.as_dict()["onset"] == 6
    # a fall from the start: onset at the first low evaluation
    assert fall_collapse([0.64, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02], 64).onset == 1
    # no collapse, no onset
    assert fall_collapse([0.5] * 10, 64).onset is None
    assert fall_collapse([0.05] * 10, 64).onset is None
