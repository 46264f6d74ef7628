"""The greedy readout (``calibrate fit --readout greedy``, issue 29 §4): the readout against
its closed form (scipy's logistic), the fitted curves as the identity fit's kinetics read
out, the forecasting path's curves the same, the config and the command line, and a fit
that recovers known midpoints and widths (and, where a node's midpoint trades off with its
regulation's timing, its observed curve) from synthetic logs."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

import calibrate as cal
from calibrate.__main__ import main
from calibrate._density import solver_error
from calibrate._predict._fast import compiled_model, solve_curves
from calibrate._readout import greedy_readout

from .test_fit import TRUTH

STEPS = np.arange(0, 201, 10)
READ = {"mid[X]": 0.5, "mid[Y]": 0.7, "mid[Z]": 0.4,
        "width[X]": 0.08, "width[Y]": 0.05, "width[Z]": 0.12}  # fmt: skip


def _closed_form(a, a0, mid, width):
    """The readout written out with scipy's logistic (the module docstring's formula)."""
    u = (a - a0) / (1 - a0)
    lo, hi = expit(-mid / width), expit((1 - mid) / width)
    return a0 + (1 - a0) * (expit((u - mid) / width) - lo) / (hi - lo)


def test_the_readout_is_its_closed_form_and_keeps_start_and_ceiling():
    a = np.linspace(0.0, 1.0, 101)
    for a0, mid, width in ((0.05, 0.5, 0.1), (0.47, 0.8, 0.03), (0.3, 0.2, 2.0)):
        p = np.asarray(greedy_readout(jnp.asarray(a), a0, mid, width))
        np.testing.assert_allclose(p, _closed_form(a, a0, mid, width), atol=1e-12, rtol=0)
        np.testing.assert_allclose(greedy_readout(jnp.asarray([a0, 1.0]), a0, mid, width),
                                   [a0, 1.0], atol=1e-12)  # fmt: skip
        assert np.all(np.diff(p) >= 0)
    # flat far below the midpoint, steep across it: half the rise within +-width of mid
    a0, mid, width = 0.4, 0.6, 0.02
    u = lambda x: a0 + (1 - a0) * x  # noqa: E731
    p = np.asarray(greedy_readout(jnp.asarray([u(0.3), u(mid - width), u(mid + width)]),
                                  a0, mid, width))  # fmt: skip
    assert p[0] - a0 < 1e-6 and (p[2] - p[1]) / (1 - a0) > 0.45
    # a wide readout is nearly the identity
    wide = np.asarray(greedy_readout(jnp.asarray(a), 0.1, 0.5, 50.0))
    np.testing.assert_allclose(wide, a, atol=2e-4)


def _data(runs=3, key=0):
    hyper = {"rl.lr": [1e-3, 2e-3, 4e-3][:runs]}
    return cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(key), steps=STEPS, runs=runs, hyper=hyper, n_eval=200
    )


def _truth(name: str) -> float:
    if name in READ:
        return READ[name]
    return TRUTH[name] if name in TRUTH else TRUTH[name.split("[")[0]]


def _theta(cm) -> jax.Array:
    row = [_truth(nm) for nm in cm.layout.names]
    return jnp.asarray(np.tile(row, (cm.n_runs, 1)), dtype=float)


@pytest.mark.parametrize("solver", ["quad", "rk4"])
def test_greedy_curves_are_the_identity_fit_s_kinetics_read_out(solver):
    data = _data()
    cfg = cal.FitConfig(method="laplace", solver=solver)
    plain = cal.build_model(data, "C1", cfg)
    greedy = cal.build_model(data, "C1", dataclasses.replace(cfg, readout="greedy"))
    extra = [nm for nm in greedy.layout.names if nm not in plain.layout.names]
    assert extra == list(READ)  # after every other parameter, midpoints then widths
    assert greedy.layout.logit[greedy.layout.index("mid[Y]")]
    assert not greedy.layout.logit[greedy.layout.index("width[Y]")]
    latent, ok = plain.curves(_theta(plain))
    obs, ok2 = greedy.curves(_theta(greedy))
    assert bool(jnp.all(ok)) and bool(jnp.all(ok2))
    np.testing.assert_allclose(greedy.curves(_theta(greedy), latent=True)[0], latent, atol=1e-12)
    ref = np.stack(
        [_closed_form(np.asarray(latent)[..., i], TRUTH["A0"], READ[f"mid[{n}]"],
                      READ[f"width[{n}]"]) for i, n in enumerate("XYZ")], axis=-1,
    )  # fmt: skip
    np.testing.assert_allclose(np.asarray(obs), ref, atol=1e-10, rtol=0)
    assert float(jnp.max(jnp.abs(obs - latent))) > 0.1  # the readout changes the curves


@pytest.mark.parametrize("solver", ["tsit5", "rk4"])
def test_the_solver_error_compares_read_out_curves_with_a_read_out_reference(solver):
    cm = cal.build_model(_data(), "C1", cal.FitConfig(method="laplace", solver=solver,
                                                      readout="greedy"))  # fmt: skip
    z = jnp.asarray(cm.layout.to_unconstrained(np.asarray(_theta(cm)[0])) - cm.layout.loc)
    params = {"z": z / jnp.asarray(cm.layout.scale)}
    np.testing.assert_allclose(cm.theta(params)[0], _theta(cm)[0], rtol=1e-9)
    assert solver_error(cm, params) < 1e-3  # latent against observed would differ by > 0.1


def test_the_forecasting_path_reads_out_the_same_curves():
    cm = cal.build_model(_data(), "C1", cal.FitConfig(method="laplace", readout="greedy"))
    theta = _theta(cm)
    ref, _ = cm.curves(theta)
    fixed, cells = compiled_model(cm, "float64")
    A, ok = solve_curves(fixed, theta, STEPS.astype(float), 1, cells)
    assert bool(jnp.all(ok))
    np.testing.assert_allclose(A, ref, atol=1e-6)
    B, _ = solve_curves(fixed, theta, STEPS.astype(float), 1, cells, batch_last=True)
    np.testing.assert_allclose(jnp.transpose(B, (2, 0, 1)), ref, atol=1e-6)


def test_the_readout_config_round_trips_and_is_validated(tmp_path, capsys):
    cfg = cal.FitConfig(readout="greedy", priors=cal.Priors(mid_median=0.7, width_sd=0.5))
    assert cal.FitConfig.from_dict(cfg.to_dict()) == cfg
    assert cal.FitConfig.from_dict({}).readout == "identity"
    with pytest.raises(cal.ConfigError, match="readout must be one of"):
        cal.FitConfig(readout="sigmoid")
    with pytest.raises(cal.ConfigError, match="mid_median must be in"):
        cal.Priors(mid_median=1.5)
    csv = tmp_path / "c.csv"
    _data(runs=1).table.to_csv(csv, index=False)
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(csv), "--readout", "sigmoid", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "--readout" in err[0]
    bad = tmp_path / "cfg.json"
    bad.write_text('{"readout": "sigmoid"}')
    assert main(["fit", str(csv), "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "readout must be one of" in err[0]


@pytest.mark.slow
def test_a_fit_recovers_known_midpoints_and_widths():
    base = _data(runs=3, key=3)
    cfg = cal.FitConfig(method="laplace", readout="greedy", samples=400, chains=2)
    cm = cal.build_model(base, "C1", cfg)
    mu, _ = cm.curves(_theta(cm))
    tab = base.table.copy()
    rng = np.random.default_rng(5)
    runs, nodes = list(cm.runs), list(cm.network.names)
    steps = list(np.asarray(cm.ts))
    p = np.asarray(mu)[[runs.index(r) for r in tab["run"]],
                       [steps.index(s) for s in tab["step"]],
                       [nodes.index(a) for a in tab["agent"]]]  # fmt: skip
    tab["competence"] = rng.binomial(tab["n_eval"].to_numpy(), p) / tab["n_eval"]
    data = dataclasses.replace(base, table=tab)
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    s = post.summary()
    # an unregulated (X) and a regulated node (Y) whose rise pins its readout
    for node in "XY":
        mid, width = s[f"mid[{node}]"], s[f"width[{node}]"]
        assert abs(mid["mean"] - READ[f"mid[{node}]"]) < 0.08, node
        assert 0.5 < width["mean"] / READ[f"width[{node}]"] < 2.0, node
        assert mid["q05"] < READ[f"mid[{node}]"] < mid["q95"], node
    # Z's midpoint trades off with the timing of its regulation (K, n, b free): what the
    # data pin is its observed curve, recovered at the posterior means
    theta = jnp.asarray([[s[nm]["mean"] for nm in cm.layout.names]])
    fitted, _ = cm.curves(theta)
    rms = np.sqrt(np.mean((np.asarray(fitted[0]) - np.asarray(mu[0])) ** 2, axis=0))
    assert np.all(rms < 0.025), rms  # one steep step of Z is off by up to 0.065
