"""Regime labels tell the truth (issue 16 §6), checked against independent references:
scipy's DOP853 to a long horizon, numpy eigenvalues, and the map iterated in numpy."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import simulate as sim

OSC = (int(sim.Regime.DAMPED), int(sim.Regime.SUSTAINED))


def _c3_or_rhs(beta, gamma):
    """Alon C3-OR with the input on (x = x0 = 2, K = 1, n = 2): y' = beta x^2/(1 + x^2) - y,
    z' = gamma (G - z), G = 1 / (1 + x^2 y^2) (OR of two repressions), written independently
    of simulate."""
    x2 = 4.0

    def rhs(t, s):
        y, z = s
        return [beta * x2 / (1 + x2) - y, gamma * (1.0 / (1.0 + x2 * y**2) - z)]

    return rhs


def _jacobian(rhs, s, eps=1e-7):
    s = np.asarray(s, float)
    J = np.empty((s.size, s.size))
    for j in range(s.size):
        d = np.zeros_like(s)
        d[j] = eps
        J[:, j] = (np.asarray(rhs(0, s + d)) - np.asarray(rhs(0, s - d))) / (2 * eps)
    return J


def test_pure_ffl_sweep_has_no_oscillation_cells():
    """The issue's sweep (here 8 x 8) labelled 21 pure-FFL cells oscillating; a triangular
    Jacobian has real eigenvalues, so none may be."""
    res = sim.phase_diagram(
        "all",
        "both",
        sim.grid("beta", 0.5, 20, 8, "log"),
        sim.grid("gamma", 0.1, 10, 8, "log"),
        stability=False,
        progress=False,
    )
    reg = res.arrays["regime"]
    assert not np.isin(reg, OSC).any(), np.unique(reg, return_counts=True)
    assert (reg == int(sim.Regime.UNSETTLED)).any()  # gamma = 0.1 has not settled by t1 = 20


def test_c3_or_slow_cell_is_unsettled_at_t1_20_and_settles_without_oscillating():
    """C3-OR, beta = 20, gamma = 0.1 (the issue's cell): one turning point of Z and a real
    spectrum. The reference (DOP853 to t = 2000) is still 5 % away from its end level at
    t = 20, its Jacobian there has real eigenvalues, and Z turns once only."""
    beta, gamma = 20.0, 0.1
    rhs = _c3_or_rhs(beta, gamma)
    model = sim.make_model("C3-OR", "alon", {"beta": beta, "gamma": gamma})
    probe = np.array([3.0, 0.4])
    np.testing.assert_allclose(  # the reference writes the model's equations
        np.asarray(model.rhs(jnp.array([2.0, *probe]), jnp.asarray(2.0)))[1:],
        rhs(0, probe),
        rtol=1e-12,
    )
    t = np.linspace(0, 2000, 20001)
    ref = solve_ivp(
        rhs,
        (0, 2000),
        [0.0, 0.0],
        t_eval=t,
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
        dense_output=True,
    )
    z = ref.y[1]
    z_end, z20 = z[-1], z[200]
    assert abs(z20 - z_end) > 0.05 * np.max(np.abs(z))  # not settled by t = 20
    ev = np.linalg.eigvals(_jacobian(rhs, ref.y[:, -1]))
    assert np.all(np.abs(ev.imag) < 1e-9) and np.all(ev.real < 0)  # a stable node
    dz = np.diff(z)
    dz = dz[np.abs(dz) > 1e-9]  # below that, the integrator's rounding
    assert np.sum(np.sign(dz[1:]) != np.sign(dz[:-1])) <= 1  # one turning point at most

    for t1, allowed in ((20.0, {sim.Regime.UNSETTLED}), (400.0, {sim.Regime.OVERSHOOT})):
        sol = sim.solve(model, "on@0", t1=t1, options=sim.SolveOptions(n_points=401))
        regime, per_node = sim.classify(sol, bounded=False)
        assert sim.Regime(int(regime)) in allowed, (t1, per_node)
        assert np.max(np.abs(np.asarray(sol.states[:, 2]) - ref.sol(np.asarray(sol.t))[1])) < 1e-6


def _map_reference(model, steps):
    """Iterate A <- A + eta F(A) in numpy (float64), with the model's drift."""
    y = np.asarray(model.initial_state(), float)
    eta, x = float(model.eta), float(model.input_value(jnp.asarray(1.0)))
    out = [y]
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            y = y + eta * np.asarray(model.rhs(jnp.asarray(y), jnp.asarray(x)))
            out.append(y)
    return np.asarray(out)


def test_diverging_map_is_collapse_never_oscillation():
    """C1 map, gamma = 3: the fixed point's eigenvalues are -1 and -3, so past
    eta |lambda| = 2 (eta = 2/3) the numpy iteration blows up (no period-2 orbit). Those
    cells are collapse; the stable ones are not."""
    etas = np.array([0.3, 0.6, 0.7, 0.9, 1.5, 2.4])
    base = sim.make_model("C1", "alon", {"gamma": 3.0})
    sol0 = sim.solve(base, "on@0", t1=50)
    x = float(base.input_value(jnp.asarray(1.0)))
    ev = np.linalg.eigvals(
        _jacobian(lambda t, s: np.asarray(base.rhs(jnp.asarray(s), jnp.asarray(x))), sol0.y_final)
    )
    lam = np.max(np.abs(ev.real[np.abs(ev) > 1e-12]))
    assert lam == pytest.approx(3.0, rel=1e-6)
    for eta in etas:
        model = sim.set_param(base, "eta", float(eta))
        ref = _map_reference(model, 400)
        diverges = not np.all(np.abs(ref[np.isfinite(ref)]) < 1e6) or not np.isfinite(ref).all()
        assert diverges == (eta * lam > 2), eta
        regime, _ = sim.classify(sim.solve(model, method="map", steps=400), bounded=False)
        if diverges:
            assert int(regime) == sim.Regime.COLLAPSE, eta
        else:
            assert int(regime) in (sim.Regime.CONVERGED, sim.Regime.DAMPED), eta


def _loop_rhs(tau, k=4, K=0.3, n=4.0, delta=0.1):
    """The delayed negative loop X -> Y -| X (competence kinetics, rho = 1, b = 0, input on,
    Erlang lag of k stages), written independently of simulate."""

    def rhs(t, s):
        A, D = s[:2], s[2:].reshape(2, k)
        ux, uy = (max(D[0, -1], 0) / K) ** n, (max(D[1, -1], 0) / K) ** n
        G = np.array([1 / (1 + uy), ux / (1 + ux)])
        dA = G * (1 - A) - delta * A
        up = np.concatenate([A[:, None], D[:, :-1]], axis=1)
        return np.concatenate([dA, ((k / tau) * (up - D)).ravel()])

    return rhs


def _turning_points(x):
    dx = np.diff(x)
    dx = dx[np.abs(dx) > 1e-9]
    return int(np.sum(np.sign(dx[1:]) != np.sign(dx[:-1])))


def test_cycle_seen_for_less_than_a_period_is_unsettled_then_sustained():
    """Delayed negative feedback past its Hopf point (tau = 10; period about 55). By
    t1 = 40 the reference (DOP853) has not turned twice in the second half of the run and
    still moves by more than the 2 % band over the last quarter: unsettled (run longer), not
    converged or overshoot. By t1 = 600 its late amplitude equals the earlier one to 2 %:
    sustained."""
    from tests.simulate.test_stability import _neg_loop

    model = _neg_loop(10.0)
    rhs = _loop_rhs(10.0)
    start = np.asarray(model.initial_state())
    probe = np.linspace(0.2, 0.7, start.size)
    np.testing.assert_allclose(
        np.asarray(model.rhs(jnp.asarray(probe), jnp.asarray(1.0))), rhs(0, probe), atol=1e-12
    )
    t = np.linspace(0, 600, 2401)
    x = solve_ivp(rhs, (0, 600), start, t_eval=t, method="DOP853", rtol=1e-10, atol=1e-13).y[0]
    short = t <= 40
    assert _turning_points(x[short & (t >= 20)]) < 2
    assert np.ptp(x[short & (t >= 30)]) > 2 * 0.02 * np.max(np.abs(x[short]))
    mid, late = (t >= 150) & (t < 300), t >= 450
    assert np.ptp(x[late]) == pytest.approx(np.ptp(x[mid]), rel=0.02)
    r_short, _ = sim.classify(sim.solve(model, t1=40, options=sim.SolveOptions(n_points=161)))
    r_long, _ = sim.classify(sim.solve(model, t1=600, options=sim.SolveOptions(n_points=2401)))
    assert int(r_short) == sim.Regime.UNSETTLED
    assert int(r_long) == sim.Regime.SUSTAINED
