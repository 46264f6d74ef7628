"""The map dynamics of the fitted model (``FitConfig(dynamics="map")``, issue 31 §2): its
curves against simulate's discrete map, the policy lag against simulate's delayed model and
a step-by-step oracle, the bound (collapse to 0 stays), the delayed map's stability boundary
against ``eta lam < 2 sin(pi / (2 (2 tau + 1)))``, the config and the CLI."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal
import simulate
from calibrate.__main__ import main
from calibrate._map import delayed_map

from .test_fit import TRUTH

STEPS = np.arange(0, 121, 10)
LRS = [1e-3, 3e-3, 1e-2]


def _data(steps=STEPS, staleness=(0, 2, 5)):
    hyper = {"rl.lr": LRS, "rl.staleness": list(staleness)}
    return cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(1), steps=steps, runs=3, hyper=hyper
    )


def _model(lag="none", links=(cal.Link("eta", "rl.lr"),), **kw):
    cfg = cal.FitConfig(
        method="laplace", dynamics="map", lag=lag, hierarchy=cal.Hierarchy(links=links), **kw
    )
    return cal.build_model(_data(), "C1", cfg)


def _theta(cm, slopes, shift=0.0):
    """Per-run natural parameters at the prior medians (plus ``shift`` on every z)."""
    z = jnp.full(cm.layout.size, shift)
    return cm.run_params(z, jnp.asarray(slopes) / cm.config.priors.slope_sd)


def test_map_curves_equal_simulates_map():
    cm = _model()
    assert cm.layout.names[-1] == "eta" and cm.link_names == ("c[eta~rl.lr]",)
    for slope, shift in ((1.0, 0.0), (0.5, 0.3), (1.5, -0.4)):
        theta = _theta(cm, [slope], shift)
        A, ok = cm.curves(theta)
        assert bool(jnp.all(ok))
        eta = np.asarray(theta[:, -1])
        # the eta link: eta_r = eta_c (lr_r / geometric-mean lr)^c
        ref_eta = eta[0] * (np.asarray(LRS) / LRS[0]) ** slope
        np.testing.assert_allclose(eta, ref_eta, rtol=1e-12)
        for r in range(3):
            sol = simulate.solve(cm.with_params(theta[r]), method="map", steps=int(STEPS[-1]))
            ref = np.asarray(sol.states)[STEPS]
            assert np.all((ref > 0) & (ref < 1))  # no bound hit: the same map
            np.testing.assert_allclose(np.asarray(A[r]), ref, atol=1e-10, rtol=0)


def test_map_between_whole_steps_is_interpolated():
    cm = _model()
    theta = _theta(cm, [1.0])
    A, _ = cm.curves(theta, ts=np.array([10.0, 10.25, 11.0]))
    np.testing.assert_allclose(A[:, 1], 0.75 * A[:, 0] + 0.25 * A[:, 2], atol=1e-14)


def _stale_oracle(model, steps, lag):
    """The stale-lag map step by step: each increment is one step of simulate's map taken
    from the (interpolated) state ``lag`` steps back, added to the current state."""
    hist = [np.asarray(model.initial_state())]
    lo, frac = math.floor(lag), lag - math.floor(lag)
    for t in range(steps):
        past = [hist[max(t - j, 0)] for j in (lo, lo + 1)]  # constant history before 0
        stale = (1 - frac) * past[0] + frac * past[1]
        a0 = {f"A0[{n}]": float(a) for n, a in zip("XYZ", stale, strict=True)}
        m0 = simulate.set_params(model, a0)
        one = np.asarray(simulate.solve(m0, method="map", steps=1).states)
        hist.append(np.clip(hist[t] + (one[1] - one[0]), 0, 1))
    return np.array(hist)


@pytest.mark.parametrize("staleness", [(0, 2, 5), (0, 1, 3)])
def test_stale_lag_matches_simulates_map_from_the_stale_state(staleness):
    cfg = cal.FitConfig(
        method="laplace",
        dynamics="map",
        lag="stale",
        hierarchy=cal.Hierarchy(links=(cal.Link("lag", "rl.staleness", transform="log1p"),)),
    )
    cm = cal.build_model(_data(staleness=staleness), "C1", cfg)
    assert cm.layout.names[-2:] == ("eta", "lag")
    theta = _theta(cm, [1.0], 0.2)
    A, ok = cm.curves(theta)
    assert bool(jnp.all(ok))
    lags = np.asarray(theta[:, -1])
    np.testing.assert_allclose(lags / lags[0], (1 + np.asarray(staleness)) / (1 + staleness[0]))
    assert np.any(lags % 1 > 0.05)  # fractional lags interpolate
    for r in range(3):
        ref = _stale_oracle(cm.with_params(theta[r]), int(STEPS[-1]), float(lags[r]))[STEPS]
        np.testing.assert_allclose(np.asarray(A[r]), ref, atol=1e-10, rtol=0)
    # a lag changes the curves (the test above would pass for a lag ignored at r = 0 only)
    assert float(jnp.max(jnp.abs(A[2] - cm.curves(theta.at[:, -1].set(1e-9))[0][2]))) > 1e-3


def test_erlang_lag_is_simulates_delayed_map():
    cfg = cal.FitConfig(
        method="laplace",
        dynamics="map",
        lag="erlang",
        lag_stages=3,
        hierarchy=cal.Hierarchy(links=(cal.Link("lag", "rl.staleness", transform="log1p"),)),
    )
    cm = cal.build_model(_data(), "C1", cfg)
    theta = _theta(cm, [1.0], 0.1).at[:, -1].multiply(4.0)  # lags of 4-24 steps
    A, _ = cm.curves(theta)
    for r in range(3):
        eta, lag = float(theta[r, -2]), float(theta[r, -1])
        base = simulate.make_model("C1", "competence", delay_stages=3, tau=eta * lag, eta=eta)
        names = [n for n in cm.layout.names if n != "lag"]
        m = simulate.set_params(base, {n: float(theta[r, cm.layout.index(n)]) for n in names})
        m = simulate.set_param(m, "b[X]", 0.0)
        sol = simulate.solve(m, method="map", steps=int(STEPS[-1]))
        np.testing.assert_allclose(np.asarray(A[r]), np.asarray(sol.states)[STEPS], atol=1e-10)
    no_lag = cm.curves(theta.at[:, -1].set(1e-3))[0]
    assert float(jnp.max(jnp.abs(A - no_lag))) > 1e-2


def test_steps_past_the_critical_size_flip_then_collapse_and_stay_at_zero():
    """X alone: ``g = eta (rho + delta)``, fixed point ``A* = rho / (rho + delta)``; the map
    converges for g < 2, flips (a period-2 cycle held in [0, 1] by the bound) for
    2 < g < 1 + rho / delta, and collapses past that: from 1 a step overshoots to 0, which
    absorbs."""
    cm = _model()
    theta = _theta(cm, [1.0])
    rho, delta = float(theta[0, cm.layout.index("rho[X]")]), float(theta[0, 5])
    assert cm.layout.names[5] == "delta[X]"
    g_flip, g_collapse = 3.0, 1.5 * (1 + rho / delta)
    etas = jnp.asarray([0.5, g_flip, g_collapse]) / (rho + delta)
    big = theta.at[:, cm.layout.index("eta")].set(etas)
    A, ok = cm.curves(big, ts=np.arange(0, 121.0))
    A = np.asarray(A)
    assert bool(jnp.all(ok)) and A.min() >= 0 and A.max() <= 1
    np.testing.assert_allclose(A[0, -1, 0], rho / (rho + delta), atol=1e-6)  # converged
    flip = A[1, -20:, 0]
    assert np.all(flip > 0.05) and np.all(np.abs(np.diff(flip)) > 0.2)  # period 2, alive
    first = int(np.argmax(A[2, :, 0] == 0))
    assert 0 < first < 60 and np.all(A[2, first:, 0] == 0)  # collapsed and stays there
    # without the bound the same steps leave [0, 1] (the bound is what keeps them)
    sol = simulate.solve(cm.with_params(big[2]), method="map", steps=120)
    assert not np.all((np.asarray(sol.states) >= 0) & (np.asarray(sol.states) <= 1))


def _stable(g: float, tau: int, steps: int = 6000) -> bool:
    """Whether ``x_{t+1} = x_t - g x_{t - tau}`` (the delayed map, no bound) decays."""
    ys = delayed_map(lambda y: -y, jnp.ones(1), steps, g, lag=float(tau), max_lag=max(tau, 1))
    amp = np.abs(np.asarray(ys[:, 0]))
    return amp[-500:].max() < amp[500:1000].max()


@pytest.mark.parametrize("tau", [0, 1, 2])
def test_delayed_map_stability_boundary(tau):
    """Stable for eta lam 2 % below 2 sin(pi / (2 (2 tau + 1))), unstable 2 % above."""
    g = 2 * math.sin(math.pi / (2 * (2 * tau + 1)))
    assert _stable(0.98 * g, tau) and not _stable(1.02 * g, tau)
    if tau:
        assert not _stable(0.98 * 2.0, tau)  # the lag moved the boundary below tau 0's


def test_config_round_trip_and_bad_values():
    cfg = cal.FitConfig(dynamics="map", lag="erlang", lag_stages=2, max_lag=8)
    assert cal.FitConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cal.FitConfig().dynamics == "ode" and cal.FitConfig().lag == "none"
    for bad in ({"dynamics": "euler"}, {"lag": "stale"}, {"dynamics": "map", "lag": "x"}):
        with pytest.raises(cal.ConfigError):
            cal.FitConfig.from_dict(bad)
    with pytest.raises(cal.ConfigError, match="unknown parameter 'eta'"):
        cal.build_model(
            _data(), "C1", cal.FitConfig(hierarchy=cal.Hierarchy(links=(cal.Link("eta", "rl.lr"),)))
        )


def test_default_links_under_the_map():
    h = {"rl.lr": LRS, "rl.staleness": [0, 2, 5]}
    ode = [(lk.param, lk.covariate) for lk in cal.default_links(h)]
    assert ("rho", "rl.lr") in ode and ("eta", "rl.lr") not in ode
    mech = [(lk.param, lk.covariate, lk.transform) for lk in cal.default_links(h, dynamics="map")]
    assert ("eta", "rl.lr", "log") in mech and ("rho", "rl.lr", "log") not in mech
    assert ("rho", "rl.staleness", "log1p") in mech  # no lag: the staleness rows stay
    lagged = cal.default_links(h, dynamics="map", lag="stale")
    assert [(lk.param, lk.covariate) for lk in lagged] == [
        ("eta", "rl.lr"),
        ("lag", "rl.staleness"),
    ]


def test_cli_fit_with_map_dynamics(tmp_path, capsys):
    data = _data(steps=np.arange(0, 101, 20))
    table = data.table.merge(data.hyper, left_on="run", right_index=True)
    table.to_csv(tmp_path / "runs.csv", index=False)
    (tmp_path / "q.json").write_text(json.dumps({"map_starts": 1, "map_steps": 30}))
    args = ["fit", str(tmp_path / "runs.csv"), "--method", "laplace", "--samples", "50",
            "--config", str(tmp_path / "q.json"), "--no-progress", "--dynamics", "map",
            "--lag", "stale"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "fit")]) in (0, 1)
    out = capsys.readouterr().out
    assert "link (default for a knob that varies): eta ~ rl.lr (log)" in out
    assert "lag ~ rl.staleness (log1p)" in out
    saved = json.loads((tmp_path / "fit" / "config.json").read_text())
    assert saved["dynamics"] == "map" and saved["lag"] == "stale"
    post = cal.load_fit(tmp_path / "fit")
    assert post.model.config.dynamics == "map" and "c[eta~rl.lr]" in post.model.link_names
    pred = cal.predict(post, [{"rl.lr": 5e-3, "rl.staleness": 1}], max_draws=20, n_points=11)
    assert np.all(np.isfinite(pred.final)) and pred.new_final is not None  # new-run forecast
    assert np.all(np.isfinite(pred.new_final))
    rec = cal.recommend(post, param="rl.lr", max_draws=10)  # recommend sweeps eta's link
    assert rec["param"] == "rl.lr" and rec["value"] > 0 and np.isfinite(rec["final_competence"])
    for bad in (["--dynamics", "euler"], ["--dynamics", "ode", "--lag", "stale"]):
        with pytest.raises(SystemExit) as ex:
            rc = main([*args[:-4], *bad, "--out", str(tmp_path / "o")])
            raise SystemExit(rc)
        assert ex.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len([e for e in err if "error:" in e]) == 1 and "error:" in err[-1], err
    assert not (tmp_path / "o").exists()
