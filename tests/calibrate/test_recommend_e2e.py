"""``objective: e2e`` (issue 32 §4): recommend ranks by the end-to-end accuracy, forecast as
the product of the agents' final competences (:mod:`calibrate._objective`).

Oracles: ``calibrate.predict`` on the same fit, settings and key, the product taken here by
hand; a constructed prediction whose output node and product disagree on the best candidate;
Monte-Carlo moments of new runs. The fit is the session's ``lr_family_fit`` (conftest).
"""

from __future__ import annotations

import json
import types

import jax
import numpy as np
import pytest
import yaml

import calibrate as cal
from calibrate._demo._config import DemoConfig
from calibrate._demo._report import objective_sentence
from calibrate._new_run import SeedSpread
from calibrate._objective import E2E_LABEL, objective_index, objective_values
from calibrate._recommend import _eval, _seeds
from calibrate._recommend._core import recommend_space
from calibrate._recommend._eval import evaluate, rank_candidates
from calibrate._recommend._motif import Plan
from calibrate._recommend._seeds import new_run_draws
from calibrate._space import SearchSpace

LRS = [1e-4, 2e-4, 4e-4, 1e-3]
SPACE = {"fields": {"rl.lr": {"choices": LRS}}, "budget_steps": 300, "risk": 0.2,
         "objective": "e2e"}  # fmt: skip


def test_utility_is_the_mean_product_of_the_agents_finals(lr_family_fit):
    """(a) and (b): each candidate's utility is the draws' mean of prod_i A_i(T) from
    ``calibrate.predict`` (same draws); the pick is the oracle's best within the bound."""
    post, _ = lr_family_fit
    space = SearchSpace.from_dict(SPACE)
    key = jax.random.key(1)
    rec = recommend_space(post, space, max_draws=30, top=1, key=key)
    util = rec["_arrays"]["utility"]
    p = cal.predict(post, space.candidates(), steps=300, max_draws=30, key=key, bands=False,
                    band="mean")  # fmt: skip
    fin = np.asarray(p.final)  # (candidates, draws, agents X, Y, Z)
    oracle = [float(np.mean(f[:, 0] * f[:, 1] * f[:, 2])) for f in fin]
    np.testing.assert_allclose(util, oracle, rtol=0, atol=1e-9)
    risk = np.asarray(rec["_arrays"]["risk"])
    ok = [i for i in range(len(LRS)) if risk[i] <= SPACE["risk"]]
    assert ok and rec["best"] == space.candidates()[max(ok, key=lambda i: oracle[i])]
    assert rec["proxy_agent"] == E2E_LABEL and rec["objective"]["name"] == "e2e"
    assert rec["ranked_by"].startswith(f"mean final {E2E_LABEL} among")
    assert rec["explanation"]["chosen"]["agent"] == E2E_LABEL
    assert E2E_LABEL in rec["seed_spread"]
    top = rec["top"][0]["final"]
    assert top["q05"] <= top["mean"] <= top["q95"] and top["seed_sd"] > 0
    # the product is below every agent's own final: the output node's forecast is higher
    assert np.all(fin[..., -1].mean(axis=1) > util)


def _fake_prediction(final: np.ndarray) -> types.SimpleNamespace:
    s = final.shape[0]
    net = {g: np.zeros(s) for g in _eval.GROUPS} | {"converged": np.ones(s)}
    return types.SimpleNamespace(
        final=final, agents=("X", "Y", "Z"), draw_index=np.arange(final.shape[1]),
        groups=lambda: ({}, net),
    )  # fmt: skip


def test_e2e_and_the_output_node_can_rank_differently(monkeypatch):
    """(b) A constructed case: candidate 0 has the best Z but a poor X; the product prefers
    candidate 1. The ranking follows the objective."""
    final = np.array([[[0.4, 0.9, 0.95]] * 2, [[0.9, 0.9, 0.85]] * 2])  # (S=2, G=2, N=3)
    monkeypatch.setattr(_eval, "predict", lambda *a, **k: _fake_prediction(final))
    plan = Plan(components=[(("fit", 1.0),)] * 2, fits={"fit": None},  # type: ignore[dict-item]
                motif_source="constructed", selection=False)  # fmt: skip
    sets = [{"rl.lr": 1e-3}, {"rl.lr": 2e-3}]
    by_z, by_e2e = evaluate(plan, sets, -1), evaluate(plan, sets, None)
    np.testing.assert_allclose(by_z.mean, [0.95, 0.85], rtol=1e-15)
    np.testing.assert_allclose(by_e2e.mean, [0.4 * 0.9 * 0.95, 0.9 * 0.9 * 0.85], rtol=1e-15)
    risk = by_z.risk
    assert rank_candidates(by_z.mean, risk, 0.1) == [0, 1]
    assert rank_candidates(by_e2e.mean, risk, 0.1) == [1, 0]
    assert by_e2e.proxy_agent == E2E_LABEL and by_z.proxy_agent == "Z"


def test_objective_values_is_one_projection():
    a = np.array([[0.5, 0.8, 0.9], [np.nan, 1.0, 1.0]])
    np.testing.assert_array_equal(objective_values(a, -1), a[:, -1])
    np.testing.assert_array_equal(objective_values(a, 0), a[:, 0])
    np.testing.assert_allclose(objective_values(a, None)[0], 0.36, rtol=1e-15)
    assert np.isnan(objective_values(a, None)[1])
    names = ("X", "Y", "Z")
    assert [objective_index(names, o) for o in ("last", "Y", "e2e")] == [2, 1, None]


def test_new_run_draws_e2e_mean_and_evaluation_noise(lr_family_fit, monkeypatch):
    """(c) The fit has no random effects or replicates: a new run's mean e2e is the product
    of the agents' finals, and y adds binomial noise at the last agent's n_eval (mean close
    to the product's, variance given the draw mu (1 - mu) / n). With a replicate spread
    (patched in, sd 0.08 per agent) each agent's offset enters the product, and the
    seed-to-seed variance of y includes it."""
    post, _ = lr_family_fit
    key = jax.random.key(3)
    sets = [{"rl.lr": 1e-4}]
    nr = new_run_draws(post, sets, steps=300, max_draws=400, key=key, agent=None)
    mu, y, n = nr["mu"][0, :, 0], nr["y"][0, :, 0], nr["n_eval"]
    assert nr["replicates"] == 1 and n == 100 and mu.shape == (400,)
    p = cal.predict(post, sets, steps=300, max_draws=400, key=key, bands=False)
    np.testing.assert_allclose(np.sort(mu), np.sort(np.prod(p.final[0], axis=-1)), rtol=1e-12)
    noise = mu * (1 - mu) / n
    np.testing.assert_allclose(nr["var"][0], noise, rtol=1e-12)
    assert abs(y.mean() - mu.mean()) < 4 * np.sqrt(noise.mean() / mu.size)
    # the variance of y around its draw's mean is the binomial noise (Monte Carlo, 400 draws)
    assert np.mean((y - mu) ** 2) == pytest.approx(noise.mean(), rel=0.25)

    sd = np.full(3, 0.08)
    spread = SeedSpread("replicates", sd, 1, "patched")
    monkeypatch.setattr(_seeds, "replicate_spread", lambda cm, hyper: spread)
    nr = new_run_draws(post, sets, steps=300, max_draws=400, key=key, agent=None)
    mu, q, y = (nr[k][0, :, 0] for k in ("mu", "p", "y"))
    var = nr["var"][0]
    fin = np.asarray(p.final[0])  # the agents' finals of the same 400 draws (another order)
    want = np.prod(fin**2 + sd**2, axis=-1) - np.prod(fin**2, axis=-1)  # offsets' variance
    np.testing.assert_allclose(np.mean(var), np.mean(want + q * (1 - q) / n), rtol=1e-9)
    assert np.mean(want) > 2 * np.mean(q * (1 - q) / n)  # the offsets dominate here
    assert abs(q.mean() - mu.mean()) < 4 * np.sqrt(np.mean(want) / mu.size)  # zero-mean offsets
    assert abs(y.mean() - q.mean()) < 4 * np.sqrt(np.mean(q * (1 - q) / n) / mu.size)
    assert np.mean((y - mu) ** 2) == pytest.approx(np.mean(var), rel=0.25)
    one = new_run_draws(post, sets, steps=300, max_draws=400, key=key, agent=-1)
    q1 = one["p"][0, :, 0]
    np.testing.assert_allclose(one["var"][0], sd[-1] ** 2 + q1 * (1 - q1) / n, rtol=1e-9)


@pytest.mark.parametrize("bad", ["", "X->Y", "a b", 3, None])
def test_bad_objectives_are_config_errors(bad):
    """(d) In a space file and a demo config; an agent the fit lacks names the choices."""
    with pytest.raises(cal.ConfigError, match="objective must be an agent name, 'last' or 'e2e'"):
        SearchSpace.from_dict(SPACE | {"objective": bad})
    with pytest.raises(cal.ConfigError, match="demo: objective"):
        DemoConfig.from_dict(DemoConfig().to_dict() | {"objective": bad})
    with pytest.raises(cal.ConfigError, match=r"objective 'W' is not an agent .*'e2e'"):
        objective_index(("X", "Y", "Z"), "W")


def test_space_and_demo_config_round_trip_e2e():
    """(e) and the demo's default: it ranks by e2e and its report says so."""
    sp = SearchSpace.from_dict(SPACE)
    again = SearchSpace.from_dict(json.loads(json.dumps(sp.to_dict())))
    assert again == sp and again.objective == "e2e"
    assert SearchSpace.from_dict(yaml.safe_load(yaml.safe_dump(sp.to_dict()))) == sp
    cfg = DemoConfig()
    assert cfg.objective == "e2e" and cfg.space()["objective"] == "e2e"
    assert SearchSpace.from_dict(cfg.space()).objective == "e2e"
    assert DemoConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert DemoConfig(objective="last").objective == "last"
    text = objective_sentence({"objective": {"label": f"final {E2E_LABEL}"}}, "e2e")
    assert text.startswith(f"Objective `e2e`: the forecast {E2E_LABEL}") and "r = 0.97" in text
    z = {"proxy_agent": "Z", "objective": {"label": "final competence of 'Z'"}}
    assert objective_sentence(z, "last") == (
        "Ranked by the forecast final competence of 'Z' at the horizon (`objective: last`)."
    )


def test_cli_objective_flag(lr_family_fit, tmp_path, capsys):
    """``--objective`` replaces the space file's; a bad value exits 2 with one error line,
    before any prediction; the flag needs --space."""
    _, folder = lr_family_fit
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(SPACE | {"objective": "last"}))
    from calibrate.__main__ import main

    out = tmp_path / "rec"
    argv = ["recommend", str(folder), "--space", str(path), "--out", str(out), "--draws", "30"]
    for bad, words in (("W", "objective 'W' is not an agent"), ("X->Y", "--objective: ")):
        assert main([*argv, "--objective", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and words in err[0]
    assert main(["recommend", str(folder), "--objective", "e2e"]) == 2
    assert "go with --space" in capsys.readouterr().err
    assert main([*argv, "--objective", "e2e", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["space"]["objective"] == "e2e" and rec["proxy_agent"] == E2E_LABEL
    assert json.loads((out / "recommendation.json").read_text())["ranked_by"] == rec["ranked_by"]


def test_seed_spread_note_names_the_e2e_evaluation(lr_family_fit):
    post, _ = lr_family_fit
    note = _seeds.seed_spread_note(post, None)
    assert "of one final evaluation of 100 problems of the end-to-end accuracy" in note
    assert E2E_LABEL not in _seeds.seed_spread_note(post)
