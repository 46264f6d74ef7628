"""Pilot designs that find the regime boundary (``calibrate pilots``), the collapse floor and
distance from the pilots in ``predict``, ties and stability margins in ``recommend --space``,
and the second collapse rule: each against a hand computation or an independent reference."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

import calibrate
from calibrate._pilots import PilotPlan, entropy, initial_settings, pick_uncertain, unit_coords
from calibrate._predict._checks import EDGE_RADIUS, FLOOR_FADE, collapse_floor, pilot_distance
from calibrate._recommend._margin import margins
from simulate.common import ConfigError, fall_collapse, peak_collapse

BOX = {
    "fields": {
        "rl.lr": {"low": 1e-3, "high": 4e-2},
        "rl.staleness": {"low": 0, "high": 12, "integer": True},
    },
    "budget_steps": 100,
    "n_candidates": 64,
}


def _space(**kw):
    return calibrate.SearchSpace.from_dict(BOX | kw)


def test_plan_rounds_spend_the_budget_and_round_trip_json() -> None:
    plan = PilotPlan(space=_space(), budget=1300, pilot_steps=100, seeds=(0, 1), initial=4,
                     round_size=2)  # fmt: skip
    # round 0: 4 x 2 x 100 = 800; each later round 2 x 2 x 100 = 400: 800 + 400 <= 1300 < 1600
    assert (plan.rounds, plan.spent) == (2, 1200)
    assert PilotPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    with pytest.raises(ConfigError, match="does not cover round 0"):
        PilotPlan(space=_space(), budget=799, pilot_steps=100)
    with pytest.raises(ConfigError, match="seeds repeat"):
        PilotPlan(space=_space(), budget=2000, pilot_steps=100, seeds=(1, 1))
    with pytest.raises(ConfigError, match="pilot_steps"):
        PilotPlan(space=_space(), budget=2000, pilot_steps=30, eval_every=10)


def test_initial_design_spans_the_box_on_each_knob_scale() -> None:
    space = _space()
    s = initial_settings(space, 4)
    lrs = sorted(x["rl.lr"] for x in s)
    ks = sorted(x["rl.staleness"] for x in s)
    # a Latin hypercube with levels k / 3: both ends of each field, one value per level
    assert lrs[0] == pytest.approx(1e-3) and lrs[-1] == pytest.approx(4e-2)
    assert np.allclose(np.diff(np.log(lrs)), np.log(40) / 3)
    assert ks[0] == 0 and ks[-1] == 12 and all(isinstance(k, int) for k in ks)
    u = unit_coords(space, s)
    assert np.allclose(np.sort(u[:, 0]), [0, 1 / 3, 2 / 3, 1])


def test_unit_coordinates_against_the_scales_by_hand() -> None:
    settings = [{"rl.lr": 2e-3, "rl.staleness": 5}, {"rl.lr": 8e-2, "rl.staleness": 0}]
    u = unit_coords(_space(), settings)
    assert u[0, 0] == pytest.approx(math.log(2) / math.log(40))
    assert u[0, 1] == pytest.approx(math.log1p(5) / math.log1p(12))
    assert u[1, 0] == pytest.approx(1 + math.log(2) / math.log(40))  # beyond the box: > 1


def test_entropy_matches_scipy() -> None:
    probs = {"a": np.array([0.5, 1.0, 0.2]), "b": np.array([0.5, 0.0, 0.3]),
             "c": np.array([0.0, 0.0, 0.5])}  # fmt: skip
    ref = [scipy_entropy([probs[g][i] for g in probs]) for i in range(3)]
    assert np.allclose(entropy(probs), ref)


def test_picks_are_the_most_uncertain_far_enough_from_every_pilot() -> None:
    space = _space()
    cands = [{"rl.lr": v, "rl.staleness": 0} for v in (1e-3, 1.05e-3, 5e-3, 2e-2, 4e-2)]
    scores = np.array([0.9, 0.8, 0.1, 0.5, 0.2])
    # 1.05e-3 is as uncertain as it gets after 1e-3 but too near it; 4e-2 is a pilot already
    picks = pick_uncertain(space, cands, scores, [{"rl.lr": 4e-2, "rl.staleness": 0}], 2, 0.15)
    assert picks == [0, 3]


def test_peak_rule_ignores_a_fall_from_the_start_that_the_package_rule_counts() -> None:
    never_learned = [0.6, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02]
    assert fall_collapse(never_learned, 64).collapsed
    assert not peak_collapse(never_learned)
    rose_then_fell = [0.2, 0.5, 0.7, 0.72, 0.3, 0.1, 0.1, 0.1]
    assert peak_collapse(rose_then_fell) and fall_collapse(rose_then_fell, 64).collapsed
    # half the peak but less than 0.2 under it is not a collapse by the peak rule
    assert not peak_collapse([0.1, 0.3, 0.3, 0.3, 0.14, 0.14, 0.14])
    assert not peak_collapse([0.5] * 8)


def test_collapse_floor_is_zero_inside_and_the_faded_rule_of_succession_beyond() -> None:
    pilots = {"a": np.array([0.0, 0.0, 1.0, 1.0, 2.0]), "b": np.array([0.0, 1.0, 0.0, 1.0, 0.5])}
    sd_a = np.std(pilots["a"])
    inside = {"a": 1.5, "b": 0.5}
    d = 0.5  # pilot spreads beyond a's highest pilot
    beyond = {"a": 2.0 + d * sd_a, "b": 0.5}
    floor = collapse_floor(pilots, [inside, beyond])
    assert floor[0] == 0.0
    # the edge point is (2, 0.5): the pilot there is at distance 0 (within EDGE_RADIUS spreads)
    v = np.stack([pilots["a"], pilots["b"]], 1)
    sd = v.std(0)
    n = int(np.sum(np.sqrt((((v - [2.0, 0.5]) / sd) ** 2).sum(1)) <= EDGE_RADIUS))
    assert n == 1
    assert floor[1] == pytest.approx((1 - math.exp(-d / FLOOR_FADE)) / (n + 2))


def test_distance_from_the_pilots_in_knob_units_and_spreads() -> None:
    raw = {"rl.lr": np.array([1e-3, 1e-2]), "rl.staleness": np.array([0, 8])}
    tr = {"rl.lr": "log", "rl.staleness": "log1p"}
    d = pilot_distance(raw, tr, [{"rl.lr": 2e-2, "rl.staleness": 4},
                                 {"rl.lr": 5e-4, "rl.staleness": 12}])  # fmt: skip
    lr = d[0]["fields"]["rl.lr"]
    assert lr["beyond"] == pytest.approx(2.0) and "2x above the highest pilot" in lr["words"]
    sd = np.std(np.log(raw["rl.lr"]))
    assert lr["spreads"] == pytest.approx(math.log(2) / sd)
    assert d[0]["fields"]["rl.staleness"]["beyond"] == 0.0
    assert d[1]["fields"]["rl.lr"]["beyond"] == pytest.approx(2.0)
    assert "below the lowest" in d[1]["fields"]["rl.lr"]["words"]
    assert d[1]["fields"]["rl.staleness"]["beyond"] == pytest.approx(4.0)


def test_margin_of_a_step_risk_by_hand() -> None:
    space = calibrate.SearchSpace.from_dict({
        "fields": {"rl.lr": {"low": 1e-3, "high": 3e-2},
                   "rl.staleness": {"choices": [0, 2, 4]}}, "budget_steps": 50,
    })  # fmt: skip

    def risk_of(settings):  # collapse beyond lr 1e-2, whatever the lag
        return np.array([1.0 if s["rl.lr"] > 1e-2 else 0.0 for s in settings])

    m = margins(risk_of, space, [{"rl.lr": 4e-3, "rl.staleness": 2}], 0.1)[0]
    lr = m["knobs"]["rl.lr"]
    # 4e-3 x 2 = 8e-3 <= 1e-2 < 4e-3 x 3: may rise 2x, crosses at 3x; never crosses going down
    assert (lr["up"], lr["crossed_up"]) == (2.0, 3.0)
    assert lr["crossed_down"] is None and lr["down"] == 4.0
    assert m["score"] == pytest.approx(math.log(2) / math.log(30))
    assert "may rise 2x" in m["words"] and "crosses the level at 3x" in m["words"]
    k = m["knobs"]["rl.staleness"]  # numeric choices: the other values, nearest first
    assert (k["up"], k["crossed_up"], k["down"], k["crossed_down"]) == (2.0, None, 2.0, None)


def test_observed_regime_probs_sum_to_one(knob_fit) -> None:
    import jax

    folder, _ = knob_fit
    post = calibrate.load_fit(folder)
    probs = calibrate.observed_regime_probs(
        post, [{"rl.lr": 3e-4, "rl.staleness": 2}, {"rl.lr": 3e-2, "rl.staleness": 0}],
        steps=40, every=5, max_draws=16, key=jax.random.key(0),
    )  # fmt: skip
    total = sum(probs.values())
    assert np.allclose(total, 1.0)
    with pytest.raises(ConfigError, match="< 4 evaluations"):
        calibrate.observed_regime_probs(post, [{"rl.lr": 3e-4}], steps=10, every=5)


def test_recommend_space_reports_ties_margin_and_distance(knob_fit) -> None:
    import jax

    folder, _ = knob_fit
    space = calibrate.SearchSpace.from_dict({
        "fields": {"rl.lr": {"low": 1e-4, "high": 3e-3},
                   "rl.staleness": {"choices": [0, 2]}, "rl.kl_coef": {"choices": [0.0]}},
        "budget_steps": 40, "n_candidates": 16, "risk": 0.5,
    })  # fmt: skip
    rec = calibrate.recommend_space(calibrate.load_fit(folder), space, max_draws=40,
                                    key=jax.random.key(0), tie=0.5)  # fmt: skip
    tie = rec["tie"]
    best = tie["candidates"][0]
    assert best["setting"] == rec["best"]
    # with a tolerance of 0.5 every candidate within risk is tied with the best mean
    means = [c["mean"] for c in tie["candidates"]]
    assert max(means) - min(means) <= tie["tolerance"] + 1e-12
    scores = [math.inf if c["margin"] is None else c["margin"] for c in tie["candidates"]]
    assert scores[0] == max(scores)  # the largest margin won the tie
    assert "rl.lr" in rec["margin"]["knobs"] and rec["margin"]["words"]


def test_pilots_cli_refuses_bad_input_with_one_line(tmp_path: Path) -> None:
    space = tmp_path / "box.json"
    space.write_text(json.dumps(BOX))
    base = [sys.executable, "-m", "calibrate", "pilots", "--space", str(space), "--out",
            str(tmp_path / "p")]  # fmt: skip
    for extra, needle in (
        (["--budget", "100"], "does not cover round 0"),
        (["--budget", "1e4", "--seeds", "0,x"], "--seeds"),
        (["--budget", "abc"], "--budget"),
        (["--budget", "1e4", "--pilot-steps", "20"], "pilot_steps"),
    ):
        r = subprocess.run([*base, *extra], capture_output=True, text=True, check=False)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
        assert needle in lines[0]
        assert not (tmp_path / "p").exists()


def test_groups_lift_collapse_to_the_floor_among_the_solved_draws() -> None:
    from calibrate._predict._prediction import Prediction
    from simulate.common import REGIME_GROUPS

    code = {g: int(c[0]) for g, c in REGIME_GROUPS.items()}
    # setting 0: 3 converged, 1 collapse draws; setting 1: 2 converged, 2 failed (one agent)
    codes = np.array([[[code["converged"]]] * 3 + [[code["collapse"]]],
                      [[code["converged"]]] * 2 + [[code["failed"]]] * 2])  # (S, G, N)  # fmt: skip
    pred = Prediction(
        settings=({}, {}), reference={}, agents=("X",), t=np.arange(3.0), mean=None, bands=None,
        final=np.zeros((2, 4, 1)), codes=codes, draw_index=np.arange(4),
        collapse_floor=(0.5, 0.4),
    )  # fmt: skip
    _, net = pred.groups()
    assert net["collapse"][0] == pytest.approx(0.5) and net["converged"][0] == pytest.approx(0.5)
    # the failed half stays failed; the floor 0.4 of the solved half is 0.2
    assert net["failed"][1] == pytest.approx(0.5) and net["collapse"][1] == pytest.approx(0.2)
    assert net["converged"][1] == pytest.approx(0.3)
    total = sum(net.values())
    assert np.allclose(total, 1.0)
    plain = Prediction(**{**pred.__dict__, "collapse_floor": ()})
    assert plain.groups()[1]["collapse"][0] == pytest.approx(0.25)


def test_recommend_space_observed_rule_is_observed_regime_probs(knob_fit) -> None:
    """With ``regime_rule="observed"`` every candidate's risk is P(oscillating or collapse
    or failed) of :func:`calibrate.observed_regime_probs` on the same draws (the oracle),
    and the JSON names the rule."""
    import jax

    folder, _ = knob_fit
    post = calibrate.load_fit(folder)
    space = calibrate.SearchSpace.from_dict({
        "fields": {"rl.lr": {"low": 1e-4, "high": 3e-2},
                   "rl.staleness": {"choices": [0]}, "rl.kl_coef": {"choices": [0.0]}},
        "budget_steps": 40, "n_candidates": 8, "risk": 0.5,
    })  # fmt: skip
    rec = calibrate.recommend_space(post, space, max_draws=24, key=jax.random.key(3),
                                    regime_rule="observed")  # fmt: skip
    assert rec["regime_rule"] == "observed"
    arr = rec["_arrays"]
    settings = [dict(s) for s in arr["settings"]]
    probs = calibrate.observed_regime_probs(
        post, settings, steps=40, every=10, max_draws=24, key=jax.random.key(3)
    )
    want = probs["oscillating"] + probs["collapse"] + probs["failed"]
    np.testing.assert_allclose(arr["risk"], want, atol=1e-12)
    assert np.ptp(want) > 0  # the candidates differ, so the comparison can fail
    with pytest.raises(ConfigError, match="regime_rule"):
        calibrate.recommend_space(post, space, max_draws=8, regime_rule="smooth")


def test_safe_until_labels_each_prefix_as_a_run_of_that_length(knob_fit) -> None:
    """The margin in time: the risk at each scanned step is the share of the simulated runs,
    cut there, that the single-run rule (:func:`simulate.classify_observed`, the oracle)
    labels oscillating or collapse (or failed), lifted to the collapse floor beyond the
    pilots' range; safe_until is the last step before it exceeds the level."""
    import jax

    import simulate
    from calibrate._predict._checks import lift_collapse
    from calibrate._predict._rule import observed_runs, safe_until
    from simulate.common import REGIME_GROUPS, regime_group

    folder, _ = knob_fit
    post = calibrate.load_fit(folder)
    setting = {"rl.lr": 2e-2, "rl.staleness": 2, "rl.kl_coef": 0.0}  # beyond: a floor
    tm = safe_until(post, setting, horizon=40, every=10, risk=0.2, max_draws=16,
                    key=jax.random.key(5))  # fmt: skip
    assert tm["scanned_to"] == 80 and 40 in tm["steps"]
    t, y, ok, pred = observed_runs(post, [setting], steps=80, every=10, max_draws=16,
                                   key=jax.random.key(5))  # fmt: skip
    for step, r in zip(tm["steps"], tm["risk"], strict=True):
        cut = t <= step
        share = dict.fromkeys(REGIME_GROUPS, 0.0)
        for g in range(y.shape[1]):
            lab = "failed" if not ok[0, g] else regime_group(simulate.classify_observed(
                t[cut], y[0, g][cut], 64.0, names=pred.agents)["regime"])  # fmt: skip
            share[lab] += 1.0 / y.shape[1]
        lifted = lift_collapse({k: np.array([v]) for k, v in share.items()}, pred.collapse_floor)
        want = float(lifted["oscillating"][0] + lifted["collapse"][0] + lifted["failed"][0])
        assert r == pytest.approx(want)
    assert max(tm["risk"]) > 0  # something to compare
    over = [s for s, r in zip(tm["steps"], tm["risk"], strict=True) if r > 0.2]
    if over:
        assert tm["safe_until"] is None or tm["safe_until"] < over[0]
    else:
        assert tm["safe_until"] == tm["scanned_to"]


def test_recommend_horizon_refuses_bad_values_with_one_line(knob_fit, tmp_path: Path) -> None:
    folder, _ = knob_fit
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"fields": {"rl.lr": {"low": 1e-4, "high": 1e-3}},
                                 "budget_steps": 40}))  # fmt: skip
    base = [sys.executable, "-m", "calibrate", "recommend", str(folder), "--out",
            str(tmp_path / "rec")]  # fmt: skip
    for extra, needle in (
        (["--space", str(space), "--horizon", "0"], "budget_steps"),
        (["--space", str(space), "--horizon", "abc"], "--horizon"),
        (["--param", "rl.lr", "--horizon", "100"], "--horizon go with --space"),
        (["--space", str(space), "--regime-rule", "smooth"], "--regime-rule"),
    ):
        r = subprocess.run([*base, *extra], capture_output=True, text=True, check=False)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
        assert needle in lines[0]
        assert not (tmp_path / "rec").exists()
