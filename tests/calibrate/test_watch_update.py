"""``watch``'s Laplace update against runs made by the model itself: it recovers a known run
effect, its P(collapse) rises when a run follows a collapsing draw the prior thought
unlikely, it serves every step with one compiled objective, and ``--update`` is checked."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

import calibrate as cal
from calibrate.__main__ import main
from calibrate._watch import forecast, prepare
from calibrate._watch._update import LaplaceWatch, run_map

from .test_watch import BASE, STEPS, _delta, _start_run

N_EVAL = 256


@pytest.fixture(scope="module")
def post(watch_pilots_post):
    """A Laplace fit of three synthetic pilots, rho and delta linked to rl.lr (shared)."""
    return watch_pilots_post


def _run(lr: float, effects: dict[str, float], seed: int) -> tuple[pd.DataFrame, dict]:
    """A new run at ``lr`` whose natural parameters are the population's (the model that made
    the pilots) times ``exp(effect)`` (an effect on the transformed scale of rho, delta), or
    with A0 moved on the logit scale; evaluations at ``N_EVAL`` probes."""
    d = _delta(lr)
    params = {f"delta[{n}]": d for n in "XYZ"}
    for name, e in effects.items():
        base = float(params.get(name) or BASE.get(name) or BASE[name.split("[")[0]])
        if name.startswith("A0"):
            lo = np.log(base / (1 - base)) + e
            params[name] = float(1 / (1 + np.exp(-lo)))
        else:
            params[name] = float(base * np.exp(e))
    data = cal.synthetic_curves(
        "C1", BASE, key=jax.random.key(seed), steps=STEPS, n_eval=N_EVAL, runs=1,
        run_params=[params], hyper={"rl.lr": [lr]},
    )  # fmt: skip
    return data.table[["step", "agent", "competence", "n_eval"]], params


def _u_of(post, u: np.ndarray, name: str) -> float:
    return float(u[list(post.model.layout.names).index(name)])


def test_laplace_recovers_a_known_run_effect(post):
    lr = 3e-3
    obs, truth = _run(lr, {"rho[X]": 0.6, "A0[X]": -0.8}, seed=5)
    lw = prepare(post, {"rl.lr": lr}, steps=200, draws=100, update="laplace",
                 key=jax.random.key(1))  # fmt: skip
    assert isinstance(lw, LaplaceWatch)
    # the run is the model's own: a misfit floor of 0.01 (the default 0.05 stands for the
    # misfit of real runs) leaves the binomial noise of 256 probes as most of the variance
    w, cov = run_map(lw, obs, misfit=0.01)
    u_map = lw.prior.mean + lw.prior.chol @ w
    sd_u = np.sqrt(np.diag(lw.prior.chol @ cov @ lw.prior.chol.T))  # the run's posterior sd
    for name, trans in (("rho[X]", np.log), ("A0[X]", lambda p: np.log(p / (1 - p)))):
        true_u = float(trans(truth[name]))
        prior_err = abs(_u_of(post, lw.prior.mean, name) - true_u)
        post_err = abs(_u_of(post, u_map, name) - true_u)
        assert prior_err > 0.4, name  # the effect is far from the prior's mean
        # recovered: within 3 posterior sd of the truth, and far closer than the prior
        assert post_err < 3 * _u_of(post, sd_u, name), (name, post_err)
        assert post_err < 0.3 * prior_err, (name, prior_err, post_err)
    # the posterior is narrower than the prior in every direction (w's prior is N(0, I))
    assert np.all(np.linalg.eigvalsh(cov) <= 1.0 + 1e-9)
    sd_prior = np.sqrt(np.diag(lw.prior.chol @ lw.prior.chol.T))
    for name in ("rho[X]", "A0[X]", "delta[X]"):  # the run pins its own input node down
        assert _u_of(post, sd_u, name) < 0.5 * _u_of(post, sd_prior, name), name
    # the forecast's final competence of X follows the run, not the population
    fc = forecast(lw, obs, misfit=0.01)
    x_true = obs[obs["agent"] == "X"]["competence"].to_numpy()[-3:].mean()
    f = fc.agents["X"]["final"]
    assert f["q05"] - 0.02 <= x_true <= f["q95"] + 0.02
    assert fc.update == "laplace" and fc.ess == pytest.approx(100) and fc.draws == 100


def test_no_evaluations_give_the_prior_forecast(post):
    lw = prepare(post, {"rl.lr": 3e-3}, steps=200, draws=100, update="laplace")
    empty = pd.DataFrame(columns=["step", "agent", "competence", "n_eval"])
    w, cov = run_map(lw, empty)
    assert np.all(w == 0) and np.allclose(cov, np.eye(cov.shape[0]))
    # the prior predictive matches the weights' (same population, same run-effect sd)
    wd = prepare(post, {"rl.lr": 3e-3}, steps=200, draws=100, replicates=4)
    a, b = forecast(lw, empty), forecast(wd, empty)
    for agent in ("X", "Y", "Z"):
        assert a.agents[agent]["final"]["mean"] == pytest.approx(
            b.agents[agent]["final"]["mean"], abs=0.06
        )


def test_p_collapse_rises_when_the_run_follows_an_unlikely_collapse(post):
    lr = 3e-3
    lw = prepare(post, {"rl.lr": lr}, steps=200, draws=100, update="laplace",
                 key=jax.random.key(2))  # fmt: skip
    empty = pd.DataFrame(columns=["step", "agent", "competence", "n_eval"])
    p0 = forecast(lw, empty).p_collapse
    assert p0 < 0.2  # the prior thinks a collapse at this setting unlikely
    # a run whose forgetting is that of lr 1e-2 (collapses every agent): an effect of
    # log(_delta(1e-2) / _delta(3e-3)) = 3 on delta, 10 prior sd of the 0.3 jitter
    e = float(np.log(_delta(1e-2) / _delta(lr)))
    obs, _ = _run(lr, {f"delta[{n}]": e for n in "XYZ"}, seed=7)
    steps = sorted(obs["step"].unique())
    # the draws' regimes alone (observed=False): the collapse already seen would set P to 1
    series = [forecast(lw, obs[obs["step"] <= s], observed=False).p_collapse for s in steps]
    assert series[-1] >= 0.9
    assert max(series[:6]) >= 0.5  # early enough to warn: within 50 of 200 steps
    # the weights of fixed draws cannot follow: none of their draws collapses here
    wd = prepare(post, {"rl.lr": lr}, steps=200, draws=100, replicates=4, key=jax.random.key(2))
    assert forecast(wd, obs, observed=False).p_collapse < series[-1]


def test_one_compiled_objective_serves_every_step(post):
    from calibrate._watch import _update as wu

    lw = prepare(post, {"rl.lr": 1e-3}, steps=200, draws=20, update="laplace")
    obs, _ = _run(1e-3, {}, seed=3)
    before = wu.TRACES[0]
    for s in (0, 50, 100, 150, 200):  # 3 to 63 evaluation rows: one padded length
        run_map(lw, obs[obs["step"] <= s])
    assert wu.TRACES[0] - before <= 1
    lw2 = prepare(post, {"rl.lr": 5e-3}, steps=200, draws=20, update="laplace")
    run_map(lw2, obs)  # another setting, same horizon: no new trace
    assert wu.TRACES[0] - before <= 1


@pytest.mark.parametrize(
    ("extra", "match"),
    [(["--update", "bogus"], "--update must be one of"), (["--update", "laplace"], "needs --fit")],
)
def test_bad_update_exits_2(tmp_path, capsys, extra, match):
    rc = main(["watch", str(tmp_path), *extra])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error:") and match in lines[0]


def test_cli_update_laplace_alerts_where_the_weights_stay_quiet(post, tmp_path, capsys):
    import json

    fit = tmp_path / "fit"
    post.save(fit, figure=False)
    lr = 3e-3
    e = float(np.log(_delta(1e-2) / _delta(lr)))
    obs, _ = _run(lr, {f"delta[{n}]": e for n in "XYZ"}, seed=7)
    folder = tmp_path / "run"
    with _start_run(folder, lr) as w:
        w.write(
            {"kind": "agent", "step": int(r["step"]), "agent": r["agent"],
             "competence": float(r["competence"]), "n_eval": int(r["n_eval"])}
            for r in obs[obs["step"] <= 60].sort_values(["step", "agent"]).to_dict("records")
        )  # fmt: skip
    base = ["watch", str(folder), "--fit", str(fit), "--once", "--json", "--draws", "60",
            "--model-only"]  # fmt: skip
    rc_w = main([*base, "--update", "weights"])
    out_w, err_w = capsys.readouterr()
    assert out_w.strip(), err_w
    rc_l = main([*base, "--update", "laplace"])
    out_l, err_l = capsys.readouterr()
    row_w, row_l = json.loads(out_w.strip()), json.loads(out_l.strip())
    assert row_w["update"] == "weights" and row_l["update"] == "laplace"
    assert rc_l == 3 and row_l["alert"] and "ALERT" in err_l
    assert "refitted to the run's evaluations" in row_l["band_note"]
    assert row_l["network"]["p_collapse"] > row_w["network"]["p_collapse"]
    assert rc_w == 0
