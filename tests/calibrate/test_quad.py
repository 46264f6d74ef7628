"""The feed-forward quadrature solver (``solver="quad"``) against closed forms and scipy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import calibrate as cal
import simulate
from calibrate._quad import Quad, QuadGrid, feedforward_order
from calibrate._solvers import RK4, solve_at
from simulate.spec import EdgeSpec, NetworkSpec

TS = np.arange(0.0, 300.0, 5.0)


def _random_params(rng, model):
    p = {}
    for node in model.network.names:
        p[f"rho[{node}]"] = float(np.exp(rng.uniform(np.log(0.005), np.log(0.15))))
        p[f"b[{node}]"] = float(rng.uniform(0.0, 0.3))
        p[f"delta[{node}]"] = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.02))))
        p[f"A0[{node}]"] = float(rng.uniform(0.01, 0.3))
    for e in model.network.edge_keys:
        p[f"K[{e}]"] = float(rng.uniform(0.2, 0.8))
        p[f"n[{e}]"] = float(rng.uniform(1.0, 4.0))
    return simulate.set_params(model, p)


@jax.jit
def _rhs(model, y):
    return model.rhs(y, model.input_value(jnp.asarray(1.0)))


def _scipy(model, ts):
    """Reference: scipy's DOP853 at rtol 1e-11 on the model's own right-hand side."""
    sol = solve_ivp(
        lambda t, y: np.asarray(_rhs(model, jnp.asarray(y))),
        (0.0, float(ts[-1])),
        np.asarray(model.initial_state()),
        t_eval=ts,
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
    )
    assert sol.success
    return sol.y.T


def test_constant_rate_node_is_exact():
    """A node without regulators has a constant rate: the solver is exact (closed form)."""
    model = simulate.make_model(
        "C1", "competence", {"rho[X]": 0.07, "delta[X]": 0.01, "A0[X]": 0.2}
    )
    ts = np.array([0.0, 1.0, 7.5, 40.0, 41.0, 300.0, 5000.0])
    A, ok = solve_at(model, ts, solver=Quad.for_steps(ts, 5.0))
    c = 0.07 + 0.01
    inf = 0.07 / c
    exact = inf + (0.2 - inf) * np.exp(-c * ts)
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(A[:, 0]), exact, rtol=0, atol=1e-13)


@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_all_ffl_presets_match_scipy(gate):
    """Every FFL type, random parameters: |quad - scipy| well inside the 1e-3 fit check."""
    rng = np.random.default_rng(0 if gate == "AND" else 1)
    worst = worst_rk4 = 0.0
    for motif in simulate.MOTIFS:
        model = simulate.with_log_hill(
            simulate.make_model(f"{motif}-{gate}", "competence"), fixed_structure=True
        )
        assert feedforward_order(model) == (0, 1, 2)
        for _ in range(3):
            m = _random_params(rng, model)
            A, ok = solve_at(m, TS, solver=Quad.for_steps(TS, 5.0))
            assert bool(ok)
            ref = _scipy(m, TS)
            worst = max(worst, float(np.abs(np.asarray(A) - ref).max()))
            A4, _ = solve_at(m, jnp.asarray(TS), solver=RK4(1))
            worst_rk4 = max(worst_rk4, float(np.abs(np.asarray(A4) - ref).max()))
    print(
        f"{gate}: max |error| over 8 motifs x 3 draws, steps of 5: quad {worst:.2e}, "
        f"RK4 {worst_rk4:.2e}"
    )
    assert worst < 1e-3


def test_fourth_order_convergence():
    model = simulate.make_model(
        "I1", "competence", {"rho[X]": 0.1, "rho[Y]": 0.08, "rho[Z]": 0.1, "n": 3.0, "K": 0.4}
    )
    ref = _scipy(model, TS)
    errs = [
        float(np.abs(np.asarray(solve_at(model, TS, solver=Quad.for_steps(TS, dt))[0]) - ref).max())
        for dt in (5.0, 2.5, 1.25)
    ]
    print("max error at cells of 5, 2.5, 1.25 steps:", errs)
    assert errs[2] < 1e-5
    assert errs[0] / errs[2] > 100  # fourth order: 256x for 4x smaller cells


def test_stiff_and_long_horizons_stay_finite_and_accurate():
    """Rates far above 1/cell (RK4 at the same step diverges) and e-folds >> 709 (the
    cumulative integrating factor would overflow without segments)."""
    stiff = simulate.make_model("C1", "competence", {"rho": 3.0, "delta": 0.5, "A0": 0.0, "K": 0.5})
    A, ok = solve_at(stiff, TS, solver=Quad.for_steps(TS, 5.0))
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(A)[1:], _scipy(stiff, TS)[1:], atol=1e-3)
    A4, ok4 = solve_at(stiff, jnp.asarray(TS), solver=RK4(1))
    assert not bool(ok4) or float(np.abs(np.asarray(A4) - _scipy(stiff, TS)).max()) > 0.1
    ts = np.linspace(0.0, 20_000.0, 201)  # rho x horizon = 4000 e-folds
    model = simulate.make_model("C1", "competence", {"rho": 0.2, "delta": 0.01, "n": 2.0})
    A, ok = solve_at(model, ts, solver=Quad.for_steps(ts, 5.0))
    assert bool(ok) and np.all(np.isfinite(np.asarray(A)))
    np.testing.assert_allclose(np.asarray(A), _scipy(model, ts), atol=1e-6)


def test_gradient_matches_finite_differences():
    model = simulate.with_log_hill(simulate.make_model("C2", "competence"), fixed_structure=True)
    quad = Quad.for_steps(TS[:20], 5.0)
    names = ["rho[Y]", "b[Z]", "K[X->Z]", "n[Y->Z]", "A0[Y]", "delta[Z]"]
    x0 = np.array([0.05, 0.1, 0.5, 2.0, 0.1, 0.01])
    w = np.random.default_rng(0).normal(size=(20, 3))

    def loss(x):
        m = model
        for k, v in zip(names, x, strict=True):
            m = simulate.set_param(m, k, v)
        return jnp.sum(w * solve_at(m, TS[:20], solver=quad)[0])

    g = np.asarray(jax.grad(loss)(jnp.asarray(x0)))
    h = 1e-6 * np.maximum(np.abs(x0), 1e-3)
    fd = np.array(
        [
            (float(loss(x0 + h * e)) - float(loss(x0 - h * e))) / (2 * h[i])
            for i, e in enumerate(np.eye(len(x0)))
        ]
    )
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


def test_grid_and_errors():
    g = QuadGrid.build(np.array([0.0, 5.0, 7.0, 20.0]), 5.0)
    nodes = np.concatenate([[0.0], np.cumsum(g.h)])
    np.testing.assert_allclose(nodes[g.obs], [0.0, 5.0, 7.0, 20.0])
    assert g.h.max() <= 5.0 and g.h[0] == 1.25  # first cell graded: 1/4, 1/4, 1/2
    with pytest.raises(ValueError, match="increasing"):
        QuadGrid.build(np.array([0.0, 5.0, 5.0]), 1.0)
    ts = np.array([0.0, 3.0, 6.0, 9.0, 12.0, 15.0])  # the first 2 gaps in cells of <= 1 step
    g = QuadGrid.build(ts, 3.0, fine=2, fine_dt=1.0)
    nodes = np.concatenate([[0.0], np.cumsum(g.h)])
    np.testing.assert_allclose(nodes[g.obs], ts, atol=1e-12)
    cells = np.diff(g.obs)  # cells per gap: 3 + the graded first cell's 2, 3, then 1 each
    assert cells.tolist() == [5, 3, 1, 1, 1] and g.h[g.obs[2] :].min() == 3.0
    np.testing.assert_array_equal(QuadGrid.build(ts, 3.0, fine=0, fine_dt=1.0).h,
                                  QuadGrid.build(ts, 3.0).h)  # fmt: skip
    with pytest.raises(ValueError, match="width > 0"):
        QuadGrid.build(ts, 3.0, fine=2)
    ring = simulate.make_model(simulate.ring_spec(3), "competence")
    assert feedforward_order(ring) is None
    assert feedforward_order(simulate.make_model("C1", "competence", delay_stages=2)) is None
    with pytest.raises(ValueError, match="acyclic"):
        solve_at(ring, TS, solver=Quad.for_steps(TS, 5.0))
    data = cal.synthetic_curves("C1", {"rho": 0.05}, key=jax.random.key(0), steps=TS)
    loop = NetworkSpec(
        ("X", "Y", "Z"),
        (EdgeSpec("X", "Y", 1), EdgeSpec("Y", "Z", 1), EdgeSpec("Z", "X", -1)),
        name="loop",
    )
    with pytest.raises(cal.ConfigError, match="feed-forward"):
        cal.build_model(data, loop, cal.FitConfig(solver="quad"))
    cal.build_model(data, loop, cal.FitConfig(solver="rk4"))  # the others solve it


@pytest.mark.slow
def test_quad_fit_matches_rk4_fit():
    """The same posterior (well within its sd) with either fixed-grid solver."""
    truth = {
        "rho[X]": 0.03,
        "rho[Y]": 0.05,
        "rho[Z]": 0.06,
        "delta": 0.002,
        "b": 0.05,
        "A0": 0.05,
        "K": 0.5,
        "n": 2.0,
    }
    data = cal.synthetic_curves("C1", truth, key=jax.random.key(1), steps=TS, runs=2)
    fits = {
        s: cal.fit(
            data,
            "C1",
            cal.FitConfig(method="laplace", solver=s, dt=5.0, samples=4000),
            key=jax.random.key(0),
        )
        for s in ("quad", "rk4")
    }
    a, b = (fits[s].summary() for s in ("quad", "rk4"))
    for name in a:
        assert abs(a[name]["mean"] - b[name]["mean"]) <= 0.1 * b[name]["sd"], name
    assert fits["quad"].diagnostics()["solver_error"] < 1e-4


def test_long_grids_join_segments_by_a_scan():
    """Thousands of cells (> 32 segments): the segment join switches to a parallel prefix
    and agrees with the matrix join (and scipy)."""
    import calibrate._quad as q

    ts = np.linspace(0.0, 3000.0, 301)
    model = simulate.make_model("C1", "competence", {"rho": 0.01, "delta": 0.001, "n": 2.0})
    grid = QuadGrid.build(ts, 1.0)  # 3002 cells, 126 segments
    A_scan, ok = solve_at(model, ts, solver=Quad(grid))
    assert bool(ok) and -(-grid.h.shape[0] // q._SEGMENT) > q._JOIN_MATRIX_MAX
    old = q._JOIN_MATRIX_MAX
    try:
        q._JOIN_MATRIX_MAX = 10_000
        A_mat, _ = solve_at(model, ts, solver=Quad(grid))
    finally:
        q._JOIN_MATRIX_MAX = old
    np.testing.assert_allclose(np.asarray(A_scan), np.asarray(A_mat), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(A_scan), _scipy(model, ts), atol=1e-7)


def test_solver_check_reference_and_its_fallback():
    """The check compares with RK4 at 1/8 of the step while every rate is slow on that
    step, and with the tight adaptive solve once one is not."""
    from calibrate._density import _adaptive_error, solver_error

    data = cal.synthetic_curves("C1", {"rho": 0.05, "n": 2.0}, key=jax.random.key(0), steps=TS)
    cm = cal.build_model(data, "C1", cal.FitConfig(solver="quad", dt=5.0))
    lay = cm.layout

    def params(rho):
        theta = np.array(
            [
                rho if b == "rho" else {"b": 0.1, "delta": 0.005, "A0": 0.05, "K": 0.5, "n": 2.0}[b]
                for b in lay.bases
            ]
        )
        return {"z": jnp.asarray((lay.to_unconstrained(theta) - lay.loc) / lay.scale)}

    slow, fast = params(0.05), params(3.0)
    e_slow, ref_slow = solver_error(cm, slow), float(_adaptive_error(cm, slow))
    assert e_slow < 1e-4 and abs(e_slow - ref_slow) < 1e-6 and e_slow != ref_slow
    assert solver_error(cm, fast) == float(_adaptive_error(cm, fast))  # fallback
