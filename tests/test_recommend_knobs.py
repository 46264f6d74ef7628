"""The testbed recommendation benchmark's table of three knobs (learning rate, a learning-rate
multiplier, the wiring as a choice; paper/_recommend_knobs.py) and the pilot-based baselines
added for it (keep the best pilot, sequential GP with expected improvement), on a synthetic
grid whose best cell is known and lies inside the grid, away from every pilot."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from paper import _recommend_baselines as rb
from paper import _recommend_knobs as rk
from simulate import AgentmotifsError

ROOT = Path(__file__).resolve().parents[1]

KNOBS = (("rl.lr", "log"), ("rl.lr_scale.X", "log"), ("network.motif", "cat"))
LRS = (2e-3, 4e-3, 8e-3, 1.6e-2)
XS = (0.075, 0.15, 0.3, 0.6)
MOTIFS = ("C1", "C2")
BEST = (8e-3, 0.15, "C2")
PILOTS = [(lr, x, m) for m in MOTIFS for lr in (LRS[0], LRS[-1]) for x in (XS[0], XS[-1])]
STEPS = np.arange(0, 201, 10)


def _value(lr: float, x: float, motif: str) -> float:
    """A bump in (log lr, log x), highest (0.85) at BEST; C1 is 0.1 lower everywhere."""
    d = (math.log(lr / BEST[0]) / 0.8) ** 2 + (math.log(x / BEST[1]) / 0.8) ** 2
    return 0.2 + 0.65 * math.exp(-d) - (0.1 if motif != BEST[2] else 0.0)


def _table(seeds=(0, 1)) -> rb.RunTable:
    curves = {}
    for seed, s in itertools.product(seeds, itertools.product(LRS, XS, MOTIFS)):
        v = rb.sigmoid(STEPS, _value(*s), 2.0, 60.0, 0.3)
        v[0] = 0.3
        curves[(s, seed)] = rb.Curve(STEPS, v, "converged")
    return rb.RunTable(curves, KNOBS)


TABLE = _table()


def test_cast_and_read_from_a_config():
    cfg = {"rl": {"lr": "0.004", "lr_scale": {"X": 0.15}}, "network": {"motif": "C1"}}
    assert rk.read(KNOBS, cfg) == (0.004, 0.15, "C1")
    assert rk.read(KNOBS, {"rl": {"lr": 1e-3}}) is None
    assert rk.cast(rk.LR_STALENESS, ("1e-3", 2.0)) == (1e-3, 2)
    with pytest.raises(AgentmotifsError, match="needs 3 values"):
        rk.cast(KNOBS, (1e-3, 0.1))


def test_features_scale_ordered_knobs_and_one_hot_the_choice():
    grid = rk.grid_values(KNOBS, TABLE.settings)
    f = rk.features(KNOBS, [(LRS[0], XS[-1], "C2"), (LRS[-1], XS[0], "C1")], grid)
    np.testing.assert_allclose(f, [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]], atol=1e-12)
    mid = rk.features(KNOBS, [(4e-3, 0.15, "C1")], grid)[0]
    assert mid[0] == pytest.approx(math.log(2) / math.log(8), abs=1e-12)


def test_table_true_values_corners_and_dicts():
    assert TABLE.knobs == KNOBS
    assert max(TABLE.settings, key=TABLE.true_value) == BEST
    assert set(TABLE.corners()) == set(PILOTS)
    assert TABLE.as_dict(BEST) == {"rl.lr": 8e-3, "rl.lr_scale.X": 0.15, "network.motif": "C2"}
    assert TABLE.regret(BEST) == 0.0


def test_best_pilot_picks_the_best_pilot_and_pays_for_every_pilot():
    p = rb.best_pilot(TABLE, budget_steps=2000, seed=0, rng_seed=0, pilots=PILOTS)
    assert p.setting == max(PILOTS, key=lambda s: _value(*s))
    assert p.steps == 200 * len(PILOTS) and p.setting != BEST
    with pytest.raises(rb.BudgetError):
        rb.best_pilot(TABLE, budget_steps=1000, seed=0, rng_seed=0, pilots=PILOTS)


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_gp_ei_searches_beyond_the_pilots_within_budget_and_improves():
    p = rb.gp_ei(TABLE, budget_steps=2000, seed=0, rng_seed=0, pilots=PILOTS)
    notes = [t.note for t in p.trace]
    assert notes == ["pilot"] * 8 + ["ei"] * 2 and p.steps == 2000
    ei = [t.setting for t in p.trace if t.note == "ei"]
    assert len(set(ei)) == 2 and not set(ei) & set(PILOTS)
    best_pilot = rb.best_pilot(TABLE, budget_steps=2000, seed=0, rng_seed=0, pilots=PILOTS)
    assert TABLE.regret(p.setting) <= TABLE.regret(best_pilot.setting)
    one = rb.gp_surrogate(TABLE, budget_steps=2000, seed=0, rng_seed=0, pilots=PILOTS)
    assert one.steps in (1600, 1800)  # a confirmation unless the argmax is a pilot


@pytest.mark.skipif(importlib.util.find_spec("optuna") is None, reason="needs optuna")
def test_optuna_and_random_search_on_a_choice_knob():
    for mode in ("categorical", "ordered"):
        p = rb.optuna_tpe(TABLE, budget_steps=2000, seed=1, rng_seed=3, knobs=mode)
        done = [t for t in p.trace if t.note == "complete"]
        assert p.steps <= 2000 and done
        # the pick is the best completed trial, and the run is reproducible per rng_seed
        assert p.setting == max(done, key=lambda t: t.value).setting
        again = rb.optuna_tpe(TABLE, budget_steps=2000, seed=1, rng_seed=3, knobs=mode)
        assert again.trace == p.trace
        # both wirings are offered (the choice knob is sampled, not fixed)
        assert {t.setting[2] for t in p.trace} == set(MOTIFS)
    r = rb.random_search(TABLE, budget_steps=2000, seed=1, rng_seed=3)
    assert r.steps == 2000 and len({t.setting for t in r.trace}) == 10
    assert r.setting == max(r.trace, key=lambda t: t.value).setting


def test_the_motif_model_picks_the_wiring_within_risk_then_highest_forecast():
    from paper import _recommend_methods as rm

    recs = {
        "C1": {"within_risk": True, "final": {"mean": 0.70}},
        "C2": {"within_risk": False, "final": {"mean": 0.90}},
        "I1": {"within_risk": True, "final": {"mean": 0.75}},
    }
    assert rm._choose(recs) == "I1"
    recs["C2"]["within_risk"] = True
    assert rm._choose(recs) == "C2"


@pytest.mark.skipif(importlib.util.find_spec("optuna") is None, reason="needs optuna")
def test_plain_tpe_runs_every_trial_in_full_and_hyperband_prunes():
    plain = rb.optuna_tpe(TABLE, budget_steps=2000, seed=0, rng_seed=1, hyperband=False)
    notes = [t.note for t in plain.trace]
    assert "pruned" not in notes and notes.count("complete") == 10 and plain.steps == 2000
    hb = rb.optuna_tpe(TABLE, budget_steps=2000, seed=0, rng_seed=1)
    assert "pruned" in [t.note for t in hb.trace] and len(hb.trace) > len(plain.trace)


def test_the_motif_model_pays_pilots_and_new_runs_and_refits_after_a_new_run(monkeypatch, tmp_path):
    import types

    from paper import _recommend_methods as rm

    cfg = types.SimpleNamespace(
        lrs=list(LRS), knob="rl.lr_scale.X", knob_values=list(XS), motifs=list(MOTIFS),
        pilots=[[i, j, m] for m in (0, 1) for i in (0, 3) for j in (0, 3)],
        budget_steps=2000, gate="AND", steps=200,
    )  # fmt: skip
    assert rm.pilot_settings(cfg) == [p for p in PILOTS]
    fits: list[tuple[str, int]] = []
    # round 1: C2 forecast higher at (8e-3, 0.3); after the refit C2 moves to the best cell
    answers = {"rec_C1": ((4e-3, 0.15), 0.70), "rec_C2": ((8e-3, 0.3), 0.75),
               "rec2_": ((8e-3, 0.15), 0.80)}  # fmt: skip

    def fake_rec(c, fit, rec, rng, folders, motif):
        fits.append((fit.name, len(folders)))
        key = next(k for k in answers if rec.name.startswith(k))
        s, mean = answers[key]
        return {"setting": s, "final": {"mean": mean}, "risk": 0.0, "within_risk": True}

    monkeypatch.setattr(rm, "_recommend", fake_rec)
    name = lambda lr, x, m, s: f"{m}_lr{lr:g}_x{x:g}_s{s}"  # noqa: E731
    one = rm.motif_model(cfg, TABLE, tmp_path, tmp_path, name, 0, 0, rounds=1)
    assert one.setting == (8e-3, 0.3, "C2") and one.steps == 9 * 200
    assert fits == [("fit_C1", 4), ("fit_C2", 4)]  # each wiring's 4 pilots
    fits.clear()
    two = rm.motif_model(cfg, TABLE, tmp_path, tmp_path, name, 0, 0, rounds=2)
    assert two.setting == BEST and two.steps == 10 * 200
    # the refit: 4 pilots of C2 + the confirmation run
    assert fits == [("fit_C1", 4), ("fit_C2", 4), ("fit2_C2_lr0.008_x0.3_s0", 5)]
    assert two.info["round1"]["wiring"] == "C2" and two.info["round2"]["wiring"] == "C2"
