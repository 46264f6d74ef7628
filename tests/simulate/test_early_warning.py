"""Early-warning indicators (variance, autocorrelation) of the linearised noisy dynamics,
against closed forms (AR(1), AR(2), Ornstein–Uhlenbeck), scipy's Lyapunov solvers, the
delayed map's roots, simulated paths of the map and the model's SDE paths, and the sign of
the autocorrelation each instability announces itself by."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import linalg

import simulate as sim

TAUS = (0, 1, 2, 4, 8)


# -- the delayed map x' = x - g x_{t-tau} + sigma eps ------------------------------------
def test_ar1_closed_form():
    """tau = 0 is AR(1) with phi = 1 - g: variance sigma^2 / (1 - phi^2), rho_k = phi^k."""
    for g in (0.1, 0.7, 1.5, 1.95):
        phi, sigma = 1.0 - g, 0.3
        w = sim.delayed_map_warning(gain=g, lag=0, sigma=sigma, n_lags=4)
        assert float(w.variance[0]) == pytest.approx(sigma**2 / (1 - phi**2), rel=1e-10)
        np.testing.assert_allclose(
            np.asarray(w.autocorrelation[:, 0]), phi ** np.arange(1, 5), rtol=1e-9
        )
        assert float(w.distance) == pytest.approx(1 - abs(phi), abs=1e-12)


def test_ar2_closed_form_and_roots():
    """tau = 1 is AR(2) with phi1 = 1, phi2 = -g: rho_1 = phi1 / (1 - phi2), the variance
    (1 - phi2) sigma^2 / ((1 + phi2) ((1 - phi2)^2 - phi1^2)), and rho_k from the roots
    z1, z2 of z^2 - z + g: ((1 - z2^2) z1^(k+1) - (1 - z1^2) z2^(k+1)) / ((z1 - z2)(1 + z1 z2))."""
    for g in (0.05, 0.2, 0.6, 0.95):
        w = sim.delayed_map_warning(gain=g, lag=1, n_lags=6)
        p1, p2 = 1.0, -g
        var = (1 - p2) / ((1 + p2) * ((1 - p2) ** 2 - p1**2))
        assert float(w.variance[0]) == pytest.approx(var, rel=1e-9)
        assert float(w.autocorrelation[0, 0]) == pytest.approx(p1 / (1 - p2), rel=1e-9)
        z1, z2 = np.roots([1.0, -1.0, g])
        k = np.arange(1, 7)
        rho = ((1 - z2**2) * z1 ** (k + 1) - (1 - z1**2) * z2 ** (k + 1)) / (
            (z1 - z2) * (1 + z1 * z2)
        )
        np.testing.assert_allclose(np.asarray(w.autocorrelation[:, 0]), rho.real, atol=1e-9)
        np.testing.assert_allclose(
            np.sort_complex(np.asarray(w.eigenvalues)),
            np.sort_complex(np.roots([1, -1, g])),
            atol=1e-12,
        )


@pytest.mark.parametrize("tau", TAUS)
def test_delayed_map_against_scipy_lyapunov(tau):
    g, sigma = 0.8 * sim.delayed_map_boundary(tau), 0.5
    w = sim.delayed_map_warning(gain=g, lag=tau, sigma=sigma, n_lags=3)
    m = np.zeros((tau + 1, tau + 1))
    m[0, 0] += 1.0
    m[0, tau] -= g
    m[np.arange(1, tau + 1), np.arange(tau)] = 1.0
    q = np.zeros_like(m)
    q[0, 0] = sigma**2
    cov = linalg.solve_discrete_lyapunov(m, q)
    np.testing.assert_allclose(np.asarray(w.covariance), cov, rtol=1e-9, atol=1e-12)
    acf = [np.linalg.matrix_power(m, k)[0] @ cov[:, 0] / cov[0, 0] for k in (1, 2, 3)]
    np.testing.assert_allclose(np.asarray(w.autocorrelation[:, 0]), acf, rtol=1e-9, atol=1e-12)


def test_delayed_map_boundary_and_what_announces_it():
    """The lead's figures 2, 1, 0.618, 0.347, 0.185; a root on the unit circle at angle
    pi / (2 tau + 1) there; approaching it the variance grows like 1 / distance and the
    lag-k autocorrelation tends to cos(k pi / (2 tau + 1)): -1 for tau 0 (a flip),
    +0.5 for tau 1 (an oscillation a lag-1 autocorrelation alone cannot tell from a slow
    approach); far from it (g -> 0) a slow approach: rho_1 -> +1."""
    want = (2.0, 1.0, 0.618034, 0.347296, 0.184537)
    for tau, g_c in zip(TAUS, want, strict=True):
        assert sim.delayed_map_boundary(tau) == pytest.approx(g_c, abs=1e-6)
        at = sim.delayed_map_warning(gain=sim.delayed_map_boundary(tau), lag=tau)
        assert abs(float(at.distance)) < 1e-9
        beyond = sim.delayed_map_warning(gain=1.001 * sim.delayed_map_boundary(tau), lag=tau)
        assert float(beyond.distance) < 0 and bool(jnp.isnan(beyond.variance[0]))
        theta = math.pi / (2 * tau + 1)
        gains = sim.delayed_map_boundary(tau) * (1 - np.array([1e-2, 1e-3, 1e-4, 1e-5]))
        ws = [sim.delayed_map_warning(gain=g, lag=tau, n_lags=3) for g in gains]
        var = np.array([float(w.variance[0]) for w in ws])
        dist = np.array([float(w.distance) for w in ws])
        assert np.all(np.diff(var) > 0) and np.all(dist > 0)
        scaled = var * dist  # variance ~ c / distance near the boundary
        assert scaled[-1] == pytest.approx(scaled[-2], rel=1e-3)
        acf = np.asarray(ws[-1].autocorrelation[:, 0])
        np.testing.assert_allclose(acf, np.cos(theta * np.arange(1, 4)), atol=1e-3)
        assert ws[-1].kind == ("period doubling" if tau == 0 else "Neimark–Sacker")
        lead = np.asarray(ws[-1].eigenvalues)[np.argmax(np.abs(ws[-1].eigenvalues))]
        assert abs(np.angle(lead)) == pytest.approx(theta, abs=1e-3)
    slow = sim.delayed_map_warning(gain=1e-3, lag=2)
    assert float(slow.autocorrelation[0, 0]) > 0.99 and slow.kind == "fold"
    assert "towards -1" in sim.WARNING_SIGNS["period doubling"]
    assert "towards +1" in sim.WARNING_SIGNS["fold"]


def test_delayed_map_against_simulated_paths():
    rng = np.random.default_rng(0)
    for tau, g in ((0, 1.6), (2, 0.45)):
        n, sigma = 400_000, 0.2
        eps = sigma * rng.standard_normal(n)
        x = np.zeros(n)
        for t in range(tau, n - 1):
            x[t + 1] = x[t] - g * x[t - tau] + eps[t]
        x = x[1000:]
        w = sim.delayed_map_warning(gain=g, lag=tau, sigma=sigma, n_lags=2)
        rho = [np.corrcoef(x[:-k], x[k:])[0, 1] for k in (1, 2)]
        assert x.var() == pytest.approx(float(w.variance[0]), rel=0.03)
        np.testing.assert_allclose(rho, np.asarray(w.autocorrelation[:, 0]), atol=0.02)
    assert np.asarray(sim.delayed_map_warning(gain=1.6, lag=0).autocorrelation)[0, 0] < 0


# -- continuous time: Ornstein–Uhlenbeck -------------------------------------------------
def test_ou_against_closed_form_and_scipy():
    k, b = 0.3, 0.2  # d xi = -k xi dt + b dW: variance b^2 / (2k), rho(D) = exp(-k D)
    w = sim.linear_warning(drift=np.array([[-k]]), noise=np.array([b]), interval=0.5, n_lags=3)
    assert float(w.variance[0]) == pytest.approx(b**2 / (2 * k), rel=1e-12)
    np.testing.assert_allclose(
        np.asarray(w.autocorrelation[:, 0]), np.exp(-k * 0.5 * np.arange(1, 4)), rtol=1e-10
    )
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5))
    jac = a - (np.max(np.linalg.eigvals(a).real) + 0.4) * np.eye(5)
    noise = rng.normal(size=(5, 3))
    w = sim.linear_warning(drift=jac, noise=noise, interval=0.7, n_lags=2)
    cov = linalg.solve_continuous_lyapunov(jac, -noise @ noise.T)
    np.testing.assert_allclose(np.asarray(w.covariance), cov, rtol=1e-8, atol=1e-12)
    for lag in (1, 2):
        acov = linalg.expm(jac * 0.7 * lag) @ cov
        np.testing.assert_allclose(
            np.asarray(w.autocorrelation[lag - 1]), np.diag(acov) / np.diag(cov), rtol=1e-8
        )
    assert float(w.distance) == pytest.approx(0.4, abs=1e-10)


def test_bad_arguments_are_spec_errors():
    with pytest.raises(sim.SpecError, match="interval"):
        sim.linear_warning(drift=np.eye(2) * 0.5, noise=np.ones(2), discrete=True, interval=2.0)
    with pytest.raises(sim.SpecError, match="noise has 3 rows"):
        sim.linear_warning(drift=-np.eye(2), noise=np.ones(3))
    with pytest.raises(sim.SpecError, match="lag"):
        sim.delayed_map_warning(gain=0.1, lag=-1)
    with pytest.raises(sim.SpecError, match="method"):
        sim.early_warning(sim.make_model("C1", "alon"), x=1.0, method="sde")


# -- the model ---------------------------------------------------------------------------
def test_finite_steps_of_the_model_flip_the_sign_of_the_autocorrelation():
    """C1 with gamma 3 (eigenvalues -1 of Y, -3 of Z): as eta -> 2/3 the multiplier of Z
    nears -1, so Z's lag-1 autocorrelation turns from positive to -> -1 and its variance
    grows; the boundary is the one find_boundaries locates."""
    model = sim.make_model("C1", "alon", {"gamma": 3.0})
    guess = jnp.asarray([2.0, 2.0, 0.5])
    eta_c = sim.find_boundaries(model, "eta", np.linspace(0.1, 1.5, 8), method="map")[0].value
    etas = eta_c * np.array([0.2, 0.5, 0.9, 0.99, 0.999])
    ws = [
        sim.early_warning(
            sim.set_param(model, "eta", e), x=2.0, y_guess=guess, method="map", noise=0.1
        )
        for e in etas
    ]
    rho_z = np.array([float(w.autocorrelation[0, 2]) for w in ws])
    var_z = np.array([float(w.variance[2]) for w in ws])
    assert rho_z[0] > 0 and rho_z[-1] < -0.99 and np.all(np.diff(rho_z) < 0)
    assert np.all(np.diff(var_z) > 0)
    assert ws[0].kind == "fold" and ws[-1].kind == "period doubling"
    assert float(ws[-1].distance) == pytest.approx(3 * (eta_c - etas[-1]), rel=1e-6)
    x_node = ws[0]  # X is the input, held fixed
    assert float(x_node.variance[0]) == 0 and bool(jnp.isnan(x_node.autocorrelation[0, 0]))


def test_warning_scan_follows_the_fixed_point_along_a_sweep():
    """C1's map along eta: the distance is 1 - max(|1 - eta|, |1 - 3 eta|) (eigenvalues -1
    and -3), the statistics those of early_warning at each value, NaN past eta = 2/3."""
    model = sim.make_model("C1", "alon", {"gamma": 3.0})
    etas = np.linspace(0.1, 0.8, 8)
    scan = sim.warning_scan(model, "eta", etas, method="map", noise=0.1, n_lags=2)
    assert scan.variance.shape == (8, 3) and scan.autocorrelation.shape == (8, 2, 3)
    want = 1 - np.maximum(np.abs(1 - etas), np.abs(1 - 3 * etas))
    np.testing.assert_allclose(np.asarray(scan.distance), want, atol=1e-9)
    var_z = np.asarray(scan.variance[:, 2])
    assert np.all(np.diff(var_z[2:6]) > 0) and np.isnan(var_z[6:]).all()
    one = sim.early_warning(
        sim.set_param(model, "eta", etas[4]), x=2.0, y_guess=jnp.asarray([2.0, 2.0, 0.5]),
        method="map", noise=0.1, n_lags=2,
    )  # fmt: skip
    np.testing.assert_allclose(
        np.asarray(scan.autocorrelation[4]), np.asarray(one.autocorrelation), rtol=1e-8
    )


def test_feedback_hopf_the_autocorrelation_oscillates_at_the_critical_frequency():
    """A repressor ring of 3 at its Hopf point (secant condition): approaching it the
    variance grows like 1 / distance and rho(k D) -> cos(omega k D), omega = tan(pi / 3)."""
    model = sim.make_model(sim.ring_spec(3, n_repressors=1, n=4.0), "alon")
    b = sim.find_boundaries(model, "beta", np.geomspace(0.3, 30, 13))[0]
    x, guess = float(model.kinetics.x0), jnp.full(3, 0.5)
    ws = [
        sim.early_warning(
            sim.set_param(model, "beta", b.value * f),
            x=x,
            y_guess=guess,
            noise=0.1,
            interval=0.5,
            n_lags=4,
        )
        for f in (0.99, 0.999, 0.9999)
    ]
    assert all(w.kind == "Hopf" for w in ws)
    scaled = [float(w.variance[0] * w.distance) for w in ws]
    assert scaled[2] == pytest.approx(scaled[1], rel=1e-2)
    want = np.cos(b.frequency * 0.5 * np.arange(1, 5))
    np.testing.assert_allclose(np.asarray(ws[-1].autocorrelation[:, 0]), want, atol=2e-3)


@pytest.mark.slow
def test_model_indicators_match_its_sde_paths():
    """C1 with a policy lag (2 Erlang stages) under weak Wright–Fisher noise, started at
    its fixed point: variance and lag-1 autocorrelation of each agent over 800 SDE paths
    agree with the linearisation (Euler–Maruyama dt 0.01 and the noise's curvature bias
    both stay within the tolerances)."""
    model = sim.make_model(
        "C1", "competence", {"rho": 0.5, "delta": 0.1}, sigma=0.05, delay_stages=2, tau=2.0
    )
    model = sim.equilibrate(model, 1.0)
    w = sim.early_warning(model, x=model.input_value(jnp.asarray(1.0)), interval=1.0)
    keys = jax.random.split(jax.random.key(7), 800)
    opts = sim.SolveOptions(n_points=201)
    sols = jax.vmap(lambda k: sim.solve(model, t1=200.0, options=opts, method="sde", key=k))(keys)
    a = np.asarray(sols.states)[:, 50:]  # t = 50..200, one sample per time unit
    assert np.all(np.asarray(sols.code) == 0)
    for i in range(model.size):
        dev = a[:, :, i] - a[:, :, i].mean()
        var = float(dev.var())
        rho = float((dev[:, 1:] * dev[:, :-1]).mean() / var)
        assert var == pytest.approx(float(w.variance[i]), rel=0.06), i
        assert rho == pytest.approx(float(w.autocorrelation[0, i]), abs=0.03), i
