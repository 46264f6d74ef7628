"""calibrate's forecast scores and evaluation (issue 71 §1) against answers known by hand:
the CRPS of a normal forecast against its closed form, Brier scores and reliability tables
counted by hand, Wilson intervals from the textbook, splits by the pilots' range, and an
oracle model that must score perfectly."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibrate as cal

pytest.importorskip("sklearn")
STEPS = list(range(0, 101, 10))


def _run(lr, k, x, group="converged", name=None):
    return {
        "name": name or f"lr{lr}_k{k}",
        "setting": {"rl.lr": lr, "rl.staleness": k},
        "group": group,
        "final": {"X": x, "Y": 0.8},
        "steps": STEPS,
        "curves": {
            "X": np.linspace(0.3, x, len(STEPS)).tolist(),
            "Y": np.linspace(0.3, 0.8, len(STEPS)).tolist(),
        },
        "n_eval": 64,
    }


PILOTS = [
    _run(1e-3, 0, 0.9, name="a0"),
    _run(1e-3, 0, 0.86, name="a1"),
    _run(1e-2, 4, 0.1, "collapse", name="b0"),
    _run(1e-2, 4, 0.12, "collapse", name="b1"),
    _run(3e-3, 2, 0.7, name="c0"),
]
HELD = [_run(2e-3, 1, 0.88, name="h_in"), _run(3e-2, 4, 0.05, "collapse", name="h_out")]


def _normal_crps(mu, sigma, y):
    z = (y - mu) / sigma
    pdf = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + math.erf(z / math.sqrt(2)))
    return sigma * (z * (2 * cdf - 1) + 2 * pdf - 1 / math.sqrt(math.pi))


def test_crps_of_a_normal_forecast_matches_the_closed_form():
    from scipy.stats import norm

    mu, sigma, m = 0.5, 0.1, 20000
    samples = norm.ppf((np.arange(m) + 0.5) / m, loc=mu, scale=sigma)  # exact quantiles
    for y in (0.5, 0.62, 0.31):
        f = cal.Forecast("normal", ("X",), samples[None, None, :], cal.onehot_groups(["converged"]))
        held = [{"group": "converged", "final": {"X": y}}]
        s = cal.score_forecast(f, held, 1000, rng=np.random.default_rng(0))
        assert s["crps"]["X"] == pytest.approx(_normal_crps(mu, sigma, y), rel=2e-3)
        inside90 = abs(y - mu) < 1.6449 * sigma
        assert s["coverage90"]["all"] == float(inside90)
        assert s["coverage50"]["all"] == float(abs(y - mu) < 0.6745 * sigma)


def test_brier_and_reliability_by_hand():
    p, happened = [0.9, 0.2, 0.5, 0.1, 0.95], [1, 0, 1, 0, 0]
    hand = (0.1**2 + 0.2**2 + 0.5**2 + 0.1**2 + 0.95**2) / 5
    assert cal.brier_score(p, happened) == pytest.approx(hand)
    rows = cal.reliability_table(p, happened, bins=5)
    assert [r["n"] for r in rows] == [1, 1, 1, 0, 2]  # 0.1 | 0.2 | 0.5 | - | 0.9, 0.95
    assert rows[4]["mean_forecast"] == pytest.approx(0.925)
    assert rows[4]["observed_share"] == 0.5 and rows[2]["observed_share"] == 1.0
    assert rows[3]["observed_share"] is None and all(
        math.isnan(v) for v in rows[3]["observed_ci95"]
    )
    assert cal.reliability_table([1.0], [1])[-1]["n"] == 1  # the last bin is closed
    with pytest.raises(ValueError):
        cal.brier_score([0.5], [1, 0])


def test_wilson_interval_matches_the_textbook():
    lo, hi = cal.wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert cal.wilson(0, 10)[0] == 0.0 and cal.wilson(10, 10)[1] == 1.0
    assert all(math.isnan(v) for v in cal.wilson(0, 0))


def test_split_by_the_pilots_range():
    knobs = ("rl.lr", "rl.staleness")
    assert cal.split_of({"rl.lr": 2e-3, "rl.staleness": 1}, PILOTS, knobs) == "interpolation"
    assert cal.split_of({"rl.lr": 1e-2, "rl.staleness": 4}, PILOTS, knobs) == "interpolation"
    assert cal.split_of({"rl.lr": 3e-2, "rl.staleness": 4}, PILOTS, knobs) == "extrapolation"
    assert cal.split_of({"rl.lr": 2e-3, "rl.staleness": 8}, PILOTS, knobs) == "extrapolation"


def _oracle(held, m=200):
    samples = np.array([[[r["final"][a]] * m for a in ("X", "Y")] for r in held])
    return cal.Forecast(
        "oracle", ("X", "Y"), samples, cal.onehot_groups([r["group"] for r in held])
    )


def test_an_oracle_model_scores_perfectly_beside_every_baseline():
    res = cal.evaluate_forecasts(PILOTS, HELD, _oracle(HELD), draws=200, prefix=50)
    assert res["knobs"] == ["rl.lr", "rl.staleness"] and res["n_eval"] == 64
    assert res["n_runs"] == {"interpolation": 1, "extrapolation": 1, "all": 2}
    assert res["splits"] == {"h_in": "interpolation", "h_out": "extrapolation"}
    assert res["methods"] == ["oracle", "nearest pilot", "GP over knobs", "GP classifier",
                              "3-nn", "sigmoid on first 50 steps"]  # fmt: skip
    o = res["summary"]["all"]["oracle"]
    assert o["regime_accuracy"] == 1.0 and o["brier"] == 0.0
    assert o["crps"]["all"] == pytest.approx(0.0, abs=1e-12) and o["coverage90"]["all"] == 1.0
    assert o["coverage90_ci95"] == cal.wilson(4, 4)  # 2 runs x 2 agents, all inside
    assert "crps" not in res["summary"]["all"]["3-nn"]  # a classifier: groups only
    for split in ("interpolation", "extrapolation", "all"):
        for s in res["summary"][split].values():
            assert 0.0 <= s["brier"] <= 1.0
            assert sum(r["n"] for r in s["reliability"]) == res["n_runs"][split]
    assert res["per_run"]["oracle"]["labels"] == ["converged", "collapse"]


def test_model_rows_must_match_the_heldout_runs():
    with pytest.raises(cal.ConfigError, match="rows for 2 runs"):
        cal.evaluate_forecasts(PILOTS, HELD, _oracle(HELD[:1]), baselines=())
    stored = cal.nearest_pilot(PILOTS, [r["setting"] for r in HELD], ("rl.lr",), n_eval=64,
                               draws=50, rng=np.random.default_rng(0))  # fmt: skip
    with pytest.raises(cal.ConfigError, match="two forecasts are named 'nearest pilot'"):
        cal.evaluate_forecasts(PILOTS, HELD, stored, baselines=("nearest pilot",))
    res = cal.evaluate_forecasts(PILOTS, HELD, stored, baselines=("3-nn",))
    assert res["methods"] == ["nearest pilot", "3-nn"]
    with pytest.raises(cal.ConfigError, match="unknown baseline"):
        cal.evaluate_forecasts(PILOTS, HELD, baselines=("tpe",))


def test_leave_one_setting_out_forecasts_every_run_from_the_others():
    runs = [*PILOTS, *HELD]
    seen = []

    def model(pilots, held):
        seen.append(({p["name"] for p in pilots}, {h["name"] for h in held}))
        return _oracle(held)

    res = cal.evaluate_loo(runs, model, draws=100, prefix=None, baselines=("nearest pilot",))
    assert len(res["folds"]) == 5 and res["n_runs"]["all"] == len(runs)
    assert all(not (p & h) and len(p | h) == len(runs) for p, h in seen)
    assert res["methods"] == ["oracle", "nearest pilot"]
    assert res["summary"]["all"]["oracle"]["regime_accuracy"] == 1.0
    # the corners of the range are extrapolations once held out
    assert res["splits"]["h_out"] == "extrapolation" and res["splits"]["h_in"] == "interpolation"


def test_forecast_rows_and_concat():
    f = _oracle(HELD)
    assert f.rows([1, 1]).label() == ["collapse", "collapse"]
    assert cal.Forecast.concat([f.rows([0]), f.rows([1])]).samples.shape == f.samples.shape
    assert f.p_collapse().tolist() == [0.0, 1.0]
    with pytest.raises(ValueError):
        cal.Forecast.concat([f, f.named("other")])


def test_a_forecast_round_trips_through_json():
    import json

    for f in (_oracle(HELD), cal.knn_groups(PILOTS, [r["setting"] for r in HELD], ("rl.lr",))):
        back = cal.Forecast.from_dict(json.loads(json.dumps(f.to_dict())))
        assert back.method == f.method and back.agents == f.agents
        np.testing.assert_allclose(back.samples, f.samples, atol=1e-4)
        np.testing.assert_allclose(back.probs, f.probs, atol=1e-6)  # rounded to 6 places
    with pytest.raises(ValueError, match="probs"):
        cal.Forecast.from_dict({"method": "x", "agents": [], "samples": [], "probs": [[1.0]]})
