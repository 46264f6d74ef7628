"""Trajectories agree with scipy.integrate.solve_ivp on independently written RHS."""

import numpy as np
from scipy.integrate import solve_ivp

import simulate as sim


def act(u, n):
    return u**n / (1 + u**n)


def rep(u, n):
    return 1 / (1 + u**n)


def _piecewise(rhs, y0, switches, t_eval):
    """Integrate through piecewise-constant input; switches = [(t_start, x), ...]."""
    out = np.empty((len(t_eval), len(y0)))
    y = np.asarray(y0, float)
    bounds = [s[0] for s in switches] + [t_eval[-1]]
    for (t_a, x), t_b in zip(switches, bounds[1:], strict=True):
        mask = (t_eval >= t_a) & (t_eval <= t_b)
        r = solve_ivp(
            rhs,
            (t_a, t_b),
            y,
            args=(x,),
            t_eval=t_eval[mask],
            method="DOP853",
            rtol=1e-12,
            atol=1e-14,
        )
        assert r.success
        out[mask] = r.y.T
        y = solve_ivp(rhs, (t_a, t_b), y, args=(x,), method="DOP853", rtol=1e-12, atol=1e-14).y[
            :, -1
        ]
    return out


def test_alon_c1_and_matches_scipy():
    beta, gamma, kappa, x0 = 5.0, 1.5, 0.7, 2.0
    model = sim.make_model(
        "C1-AND",
        "alon",
        {"beta": beta, "gamma": gamma, "kappa": kappa, "n_xy": 2.0, "n_xz": 3.0, "n_yz": 1.5},
    )

    def rhs(t, s, x):
        y, z = s
        return [beta * act(kappa * x, 2.0) - y, gamma * (act(x, 3.0) * act(y, 1.5) - z)]

    t = np.linspace(0, 20, 401)
    ref = _piecewise(rhs, [0.0, 0.0], [(0.0, x0), (10.0, 0.0)], t)
    sol = sim.solve(
        model, "on@0,off@10", t1=20, options=sim.SolveOptions(n_points=401, rtol=1e-10, atol=1e-12)
    )
    got = np.asarray(sol.states)
    assert np.max(np.abs(got[:, 1:] - ref)) < 1e-6
    x_expected = np.where(t < 10, x0, 0.0)
    assert np.array_equal(got[:, 0], x_expected)


def test_competence_i1_or_with_feedback_and_delay_matches_scipy():
    rho = np.array([0.3, 0.5, 0.4])
    b, delta, A0 = np.array([0.05, 0.1, 0.02]), np.array([0.02, 0.03, 0.05]), 0.05
    K, n, Kfb, tau, k = 0.4, 2.0, 0.5, 3.0, 2
    spec = sim.add_feedback(sim.ffl_spec("I1", "OR", K=K, n=n), "Z", sign=1, K=Kfb, n=n)
    params = {"A0": A0}
    for i, node in enumerate("XYZ"):
        params |= {f"rho[{node}]": rho[i], f"b[{node}]": b[i], f"delta[{node}]": delta[i]}
    model = sim.make_model(spec, "competence", params, delay_stages=k, tau=tau)

    def rhs(t, s, x):
        A, D = s[:3], s[3:].reshape(3, k)
        lag = D[:, -1]  # regulators seen through the Erlang delay
        ux, uy = (lag[0] / K) ** n, (lag[1] / K) ** n
        G = np.array(
            [
                x * act(lag[2] / Kfb, n),  # X: input, rewarded by Z
                act(lag[0] / K, n) * act(lag[2] / Kfb, n),  # Y: X AND Z-feedback
                (1 + ux) / (1 + ux + uy),  # Z: X OR not-Y (competitive)
            ]
        )
        dA = rho * (b + (1 - b) * G) * (1 - A) - delta * A
        up = np.concatenate([A[:, None], D[:, :-1]], axis=1)
        dD = (k / tau) * (up - D)
        return np.concatenate([dA, dD.ravel()])

    t = np.linspace(0, 120, 601)
    ref = _piecewise(rhs, np.full(3 * (1 + k), A0), [(0.0, 1.0), (60.0, 0.0)], t)
    sol = sim.solve(
        model, "on@0,off@60", t1=120, options=sim.SolveOptions(n_points=601, rtol=1e-10, atol=1e-12)
    )
    assert sol.message() == "ok"
    assert np.max(np.abs(np.asarray(sol.states) - ref[:, :3])) < 1e-6


def test_stiff_solver_agrees():
    model = sim.make_model("I1-AND", "alon", {"beta": 5.0, "gamma": 200.0, "n": 4.0})
    a = sim.solve(
        model, "on@0,off@5", t1=10, options=sim.SolveOptions(n_points=101, rtol=1e-9, atol=1e-11)
    )
    b = sim.solve(
        model,
        "on@0,off@5",
        t1=10,
        options=sim.SolveOptions(n_points=101, solver="kvaerno5", rtol=1e-9, atol=1e-11),
    )
    assert a.message() == b.message() == "ok"
    assert np.max(np.abs(np.asarray(a.states) - np.asarray(b.states))) < 1e-6


def test_solver_failure_is_flagged_not_nan():
    model = sim.make_model("C1-AND", "alon", {"gamma": 1e6, "n": 8.0})
    sol = sim.solve(model, "on@0,off@5", t1=10, options=sim.SolveOptions(max_steps=50))
    assert int(sol.code) == 1 and "max_steps" in sol.message()
    regime, _ = sim.classify(sol, bounded=False)
    assert int(regime) == sim.Regime.FAILED
