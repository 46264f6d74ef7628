"""Model, fit, recovery (coverage), outputs, config round trip."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal

TRUTH = {
    "rho[X]": 0.03,
    "rho[Y]": 0.05,
    "rho[Z]": 0.06,
    "delta": 0.002,
    "b[Y]": 0.05,
    "b[Z]": 0.05,
    "A0": 0.05,
    "K[X->Y]": 0.4,
    "K[X->Z]": 0.5,
    "K[Y->Z]": 0.5,
    "n": 2.0,
}
STEPS = np.arange(0, 300, 10)


def _true(name: str) -> float:
    return TRUTH[name] if name in TRUTH else TRUTH[name.split("[")[0]]


def test_config_json_roundtrip(tmp_path):
    cfg = cal.FitConfig(
        likelihood="betabinomial",
        chains=2,
        priors=cal.Priors(rho_median=0.1, overrides={"K[X->Y]": (0.3, 0.2)}),
        hierarchy=cal.Hierarchy(random_effects=("rho",), links=(cal.Link("rho", "lr"),)),
    )
    (tmp_path / "c.json").write_text(json.dumps(cfg.to_dict()))
    back = cal.FitConfig.load(tmp_path / "c.json")
    assert back == cfg and hash(back) == hash(cfg)
    with pytest.raises(cal.ConfigError, match="likelihood"):
        cal.FitConfig(likelihood="poisson")
    with pytest.raises(cal.ConfigError, match="chains"):
        cal.FitConfig(chains=0)
    with pytest.raises(cal.ConfigError, match="unknown config field"):
        cal.FitConfig.from_dict({"chain": 3})
    with pytest.raises(cal.ConfigError, match="random_effects"):
        cal.Hierarchy(random_effects=("speed",))


def test_layout_and_agent_errors():
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(0), steps=STEPS)
    cm = cal.build_model(data, "C1")
    assert "b[X]" not in cm.layout.names  # not identifiable without regulators
    assert {"rho[X]", "b[Y]", "K[X->Y]", "n[Y->Z]", "A0[Z]"} <= set(cm.layout.names)
    assert cm.pooled
    with pytest.raises(cal.DataError, match="not nodes of network"):
        cal.build_model(data, "C1", nodes=("a", "b", "c"))
    with pytest.raises(cal.ConfigError, match="not a free parameter"):
        cal.build_model(data, "C1", cal.FitConfig(priors=cal.Priors(overrides={"b[X]": (0.1, 1)})))


def test_solve_at_matches_simulate():
    import simulate

    model = simulate.make_model("C1", "competence", TRUTH)
    sol = simulate.solve(model, t1=290.0, options=simulate.SolveOptions(n_points=30))
    A, ok = cal.solve_at(model, sol.t, options=simulate.SolveOptions(rtol=1e-9, atol=1e-11))
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(A), np.asarray(sol.states), atol=1e-6)


@pytest.mark.slow
def test_rk4_solver_matches_adaptive_and_is_checked():
    """Fixed-step RK4 lands on every observation; error O(dt^4) against a tight Tsit5 solve."""
    import simulate
    from calibrate._solvers import RK4, fixed_substeps

    model = simulate.make_model("C1", "competence", {**TRUTH, "rho[X]": 0.1})
    ts = np.array([0.0, 3.0, 10.0, 25.0, 60.0, 150.0, 290.0])
    ref, _ = cal.solve_at(model, ts, options=simulate.SolveOptions(rtol=1e-10, atol=1e-12))
    errs = []
    for dt in (4.0, 2.0, 1.0):
        m = fixed_substeps(ts, dt)
        assert (np.diff(np.concatenate([[0], ts])) / m).max() <= dt
        A, ok = cal.solve_at(model, ts, solver=RK4(m))
        assert bool(ok)
        errs.append(float(np.abs(np.asarray(A) - np.asarray(ref)).max()))
    assert errs[2] < 1e-6
    assert errs[0] / errs[2] > 2**4  # fourth order (>= 16x per halving, twice)
    # a fit with a coarse step is flagged by the solver check
    data = cal.synthetic_curves("C1", {**TRUTH, "rho[X]": 0.3}, key=jax.random.key(3), steps=STEPS)
    post = cal.fit(
        data, "C1", cal.FitConfig(method="map", solver="rk4", dt=40.0), key=jax.random.key(0)
    )
    d = post.diagnostics()
    assert d["solver_error"] > 1e-3 and any("lower dt" in w for w in d["warnings"])
    assert not d["ok"]
    good = cal.fit(
        data, "C1", cal.FitConfig(method="map", solver="rk4", dt=1.0), key=jax.random.key(0)
    )
    assert good.diagnostics()["solver_error"] < 1e-4
    with pytest.raises(cal.ConfigError, match="solver"):
        cal.FitConfig(solver="euler")
    with pytest.raises(cal.ConfigError, match="dt"):
        cal.FitConfig(dt=0)


@pytest.mark.slow
def test_laplace_coverage_over_datasets():
    """90% intervals cover the truth at close to the nominal rate over 8 datasets."""
    hits, total = 0, 0
    for seed in range(8):
        data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(seed), steps=STEPS, runs=2)
        post = cal.fit(
            data,
            "C1",
            cal.FitConfig(method="laplace", chains=1, samples=1000),
            key=jax.random.key(100 + seed),
        )
        s = post.summary()
        for name in post.model.layout.names:
            hits += s[name]["q05"] <= _true(name) <= s[name]["q95"]
            total += 1
    rate = hits / total
    print(f"Laplace 90% coverage: {rate:.3f} ({hits}/{total})")
    assert 0.80 <= rate <= 0.99, f"coverage {rate:.2f} of {total} intervals"


def test_map_recovers_well_identified_rates():
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(3), steps=STEPS, runs=4)
    post = cal.fit(data, "C1", cal.FitConfig(method="map"), key=jax.random.key(0))
    s = post.summary()
    # X is unregulated (sharply identified); Y, Z trade rho against b and K
    for name, tol in (("rho[X]", 0.1), ("A0[X]", 0.5), ("rho[Y]", 0.3), ("rho[Z]", 0.3)):
        rel = abs(s[name]["mean"] - _true(name)) / _true(name)
        assert rel < tol, f"{name}: {s[name]['mean']:.4f} vs {_true(name)} ({rel:.0%})"


@pytest.mark.slow
def test_nuts_tiny_pipeline():
    """NUTS with vectorised chains runs end to end (short, shallow trees: a smoke test)."""
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(1), steps=STEPS[::2])
    cfg = cal.FitConfig(chains=2, samples=40, warmup=40, max_tree_depth=4, map_starts=2)
    post = cal.fit(data, "C1", cfg, key=jax.random.key(2))
    assert post.shape == (2, 40)
    assert post.stats["num_steps"].max() <= 15
    d = post.diagnostics()
    assert {"r_hat_max", "ess_bulk_min", "divergences", "warnings"} <= set(d)
    assert len(d["step_size"]) == 2 and min(d["step_size"]) > 0


@pytest.mark.slow
def test_nuts_short_run_and_outputs(tmp_path):
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(1), steps=STEPS, runs=2)
    cfg = cal.FitConfig(chains=2, samples=150, warmup=150)
    post = cal.fit(data, "C1", cfg, key=jax.random.key(2))
    assert post.shape == (2, 150)
    diag = post.save(tmp_path)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert set(s) == set(post.model.layout.names)
    assert set(s["rho[X]"]) >= {"mean", "sd", "q05", "q95", "r_hat", "ess_bulk"}
    for name in ("rho[X]", "rho[Y]", "rho[Z]", "A0[X]"):
        assert s[name]["q05"] * 0.9 <= _true(name) <= s[name]["q95"] * 1.1, name
    assert np.isfinite(diag["r_hat_max"]) and diag["r_hat_max"] < 1.2
    assert (tmp_path / "predictive.png").stat().st_size > 1000
    import arviz as az

    idata = az.from_netcdf(tmp_path / "posterior.nc")
    assert idata.posterior["rho"].sel(node="Y").shape == (2, 150)
    assert "obs" in idata.log_likelihood


@pytest.mark.slow
def test_betabinomial_and_svi():
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(4), steps=STEPS, runs=2, phi=30.0)
    cfg = cal.FitConfig(
        method="svi", likelihood="betabinomial", svi_steps=200, chains=1, samples=200
    )
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    s = post.summary()
    assert "phi" in s and 5 < s["phi"]["mean"] < 200
    assert post.diagnostics()["warnings"]  # says it is an approximation


@pytest.mark.slow  # ~35 s quiet; test_links' slope recovery stays in make test
def test_hierarchy_links_recover_lr_slope(tmp_path, capsys):
    """log rho = a + c log lr: runs at 3 learning rates, slope c = 1 for every node."""
    lrs = [1e-4, 3e-4, 1e-3]
    base = dict(TRUTH)
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in lrs]
    data = cal.synthetic_curves(
        "C1",
        base,
        key=jax.random.key(5),
        steps=STEPS,
        runs=3,
        run_params=run_params,
        hyper={"lr": lrs},
    )
    cfg = cal.FitConfig(
        method="laplace",
        chains=1,
        samples=800,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "lr"),)),
    )
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    s = post.summary()
    for n in "XYZ":
        c = s[f"c[rho[{n}]~lr]"]
        assert c["q05"] <= 1.0 <= c["q95"], (n, c)
        assert abs(c["mean"] - 1.0) < 0.25
    # recommend: faster learning only helps here (no lag, no oscillation): top of the grid
    grid = [1e-4, 3e-4, 1e-3, 3e-3]
    rec = cal.recommend(post, param="lr", grid=grid, max_draws=50)
    assert rec["value"] == 3e-3 and rec["config"] == {"lr": 3e-3}
    assert [r["value"] for r in rec["table"]] == grid
    assert all(r["p_oscillation"] == 0 for r in rec["table"])
    finals = [r["final_mean"] for r in rec["table"]]
    assert finals == sorted(finals)
    post.save(tmp_path, figure=False)
    again = cal.recommend(cal.load_fit(tmp_path), param="lr", grid=grid, max_draws=50)
    assert again["value"] == rec["value"]
    # the same through the CLI: JSON on stdout and in recommendation.json
    from calibrate.__main__ import main

    rc = main(
        [
            "recommend",
            str(tmp_path),
            "--grid",
            ",".join(map(str, grid)),
            "--out",
            str(tmp_path / "rec"),
        ]
    )
    assert rc == 0
    out = json.loads((tmp_path / "rec" / "recommendation.json").read_text())
    assert out["param"] == "lr" and out["value"] == 3e-3
    assert [r["value"] for r in out["table"]] == grid
    # without --out, as the README shows it: recommendation.json in the fit folder
    assert main(["recommend", str(tmp_path), "--grid", ",".join(map(str, grid))]) == 0
    text = (tmp_path / "recommendation.json").read_text()
    again = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert again["value"] == 3e-3
    capsys.readouterr()
    for bad in (
        ["--grid", "1e-3,-1"],  # the link is log-linear: values > 0
        ["--grid", "1e-3,fast"],
        ["--grid", "nan,1e-3"],  # recommended "value": NaN before
        ["--grid", "1e-3,inf"],
        ["--steps", "0"],  # ignored in silence before
        ["--steps", "-10"],
        ["--param", "batch"],  # no such link
    ):
        assert main(["recommend", str(tmp_path), *bad]) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), (bad, err)
    assert main(["recommend", str(tmp_path / "rec")]) == 2  # not a fit folder
    # a shorter horizon is used, not ignored
    short = cal.recommend(cal.load_fit(tmp_path), param="lr", grid=grid, steps=5, max_draws=20)
    assert short["horizon_steps"] == 5 and short["final_competence"] < rec["final_competence"]


@pytest.mark.slow
def test_random_effects_run():
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(6), steps=STEPS, runs=3)
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=300, hierarchy=cal.Hierarchy(random_effects=("rho",))
    )
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    assert post.samples["eps"].shape == (1, 300, 3, 3)
    assert "tau[rho]" in post.summary()


def test_loglik_equals_numpyro_log_prob():
    """The binomial kernel + precomputed log C(n, k) is numpyro's Binomial log-likelihood."""
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(2), steps=STEPS, runs=2)
    for lik in ("binomial", "betabinomial"):
        cm = cal.build_model(data, "C1", cal.FitConfig(likelihood=lik))
        mu = np.random.default_rng(0).uniform(0.01, 0.99, size=cm.k.shape)
        phi = 30.0 if lik == "betabinomial" else None
        ref = float(np.sum(cm.obs_dist(mu, phi).log_prob(cm.k)))
        np.testing.assert_allclose(float(cm.loglik(mu, phi)), ref, rtol=1e-12)


def test_recommend_oscillation_is_simulates_classifier():
    """recommend's p_oscillation uses simulate.classify (one definition of oscillation):
    a decaying cosine about a level oscillates, a saturating rise or a single pulse does not."""
    import simulate
    from calibrate._predict._core import curve_regimes

    osc = {int(simulate.Regime.DAMPED), int(simulate.Regime.SUSTAINED)}

    def _oscillates(A, t, names):
        ok = jnp.asarray(True)
        codes = [np.asarray(curve_regimes(jnp.asarray(t), jnp.asarray(a), ok, names)) for a in A]
        return [bool(osc & set(c.tolist())) for c in codes]

    t = np.linspace(0.0, 300.0, 200)
    damped = 0.6 + 0.3 * np.exp(-t / 80) * np.cos(t / 6)
    rise = 1 - 0.9 * np.exp(-t / 40)
    pulse = 0.2 + 0.6 * (t / 30) * np.exp(1 - t / 30)
    A = np.stack([np.stack([c, rise, rise], -1) for c in (damped, rise, pulse)])  # (3, T, 3)
    np.testing.assert_array_equal(_oscillates(A, t, ("X", "Y", "Z")), [True, False, False])
