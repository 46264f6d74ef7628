"""Linear stability: pure FFLs never oscillate; delayed negative feedback does; maps flip."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim
from simulate.spec import FFL_SIGNS, EdgeSpec, NetworkSpec

PRESETS = list(itertools.product(FFL_SIGNS, ("AND", "OR")))


@pytest.mark.parametrize(("motif", "gate"), PRESETS)
def test_pure_ffl_alon_eigenvalues_are_minus_decay_rates(motif, gate):
    gamma = 2.5
    model = sim.equilibrate(
        sim.make_model(sim.ffl_spec(motif, gate), "alon", {"beta": 4.0, "gamma": gamma})
    )
    sol = sim.solve(model, "on@0", t1=30, options=sim.SolveOptions(n_points=601))
    st = sim.linear_stability(model, sol.y_final, sol.inputs[-1])
    assert bool(st.found)
    ev = np.sort(np.asarray(st.eigenvalues).real)
    np.testing.assert_allclose(ev, [-gamma, -1.0], atol=1e-10)
    assert np.allclose(np.asarray(st.eigenvalues).imag, 0.0)
    regime, _ = sim.classify(sol, bounded=False)
    assert int(regime) in (sim.Regime.CONVERGED, sim.Regime.OVERSHOOT)


@pytest.mark.parametrize(("motif", "gate"), PRESETS)
def test_pure_ffl_competence_eigenvalues_are_minus_effective_decay(motif, gate):
    rho, b, delta = jnp.array([0.3, 0.5, 0.7]), jnp.array([0.1, 0.05, 0.2]), 0.04
    model = sim.make_model(
        sim.ffl_spec(motif, gate, K=0.4),
        "competence",
        {
            "delta": delta,
            "b[X]": 0.1,
            "b[Y]": 0.05,
            "b[Z]": 0.2,
            "rho[X]": 0.3,
            "rho[Y]": 0.5,
            "rho[Z]": 0.7,
        },
    )
    sol = sim.solve(model, "on@0", t1=300, options=sim.SolveOptions(n_points=301))
    st = sim.linear_stability(model, sol.y_final, 1.0)
    A = st.steady[:3]
    G = model.network.regulation(A) * jnp.array([1.0, 1.0, 1.0])  # input x = 1 on X
    expected = -(rho * (b + (1 - b) * G) + delta)
    np.testing.assert_allclose(
        np.sort(np.asarray(st.eigenvalues).real), np.sort(np.asarray(expected)), atol=1e-10
    )
    regime, _ = sim.classify(sol)
    assert int(regime) not in (sim.Regime.DAMPED, sim.Regime.SUSTAINED)


def _neg_loop(tau):
    spec = NetworkSpec(
        nodes=("X", "Y"),
        edges=(EdgeSpec("X", "Y", 1, K=0.3, n=4), EdgeSpec("Y", "X", -1, K=0.3, n=4)),
        inputs=("X",),
    )
    return sim.make_model(
        spec, "competence", {"rho": 1.0, "b": 0.0, "delta": 0.1}, delay_stages=4, tau=tau
    )


def test_negative_feedback_with_enough_delay_oscillates():
    for tau, oscillates in ((1.0, False), (10.0, True)):
        model = _neg_loop(tau)
        sol = sim.solve(model, t1=1000, options=sim.SolveOptions(n_points=4001))
        st = sim.linear_stability(model, sol.y_final, 1.0)
        regime, _ = sim.classify(sol)
        if oscillates:
            assert float(st.max_real) > 0 and float(st.leading_imag) > 0  # Hopf side
            assert int(regime) == sim.Regime.SUSTAINED
            period = np.asarray(sim.metrics(sol)["period"])
            # near the Hopf point the period is close to 2*pi/Im(lambda)
            assert period[0] == pytest.approx(2 * np.pi / float(st.leading_imag), rel=0.35)
        else:
            assert float(st.max_real) < 0
            assert int(regime) != sim.Regime.SUSTAINED


def _single_node(eta):
    spec = NetworkSpec(nodes=("A",), edges=(), inputs=("A",))
    return sim.make_model(
        spec, "competence", {"rho": 0.75, "b": 0.0, "delta": 0.25, "A0": 0.5}, eta=eta
    )


@pytest.mark.parametrize(("eta", "stable"), [(1.5, True), (1.9, True), (2.1, False), (2.5, False)])
def test_discrete_map_period_doubling_at_eta_lambda_2(eta, stable):
    model = _single_node(eta)  # lambda = -(rho + delta) = -1
    sol = sim.solve(model, steps=60, method="map")
    st = sim.linear_stability(model, sol.y_final if stable else model.initial_state(), 1.0)
    assert float(st.max_real) == pytest.approx(-1.0, abs=1e-12)
    assert float(st.spectral_radius) == pytest.approx(abs(1 - eta), abs=1e-12)
    assert (float(st.spectral_radius) < 1) == stable
    a = np.asarray(sol.states[:, 0]) - 0.75
    # period 2: the deviation flips sign every step, |dev| scales by |1 - eta|
    np.testing.assert_allclose(a[1:21] / a[:20], 1 - eta, rtol=1e-9)
    regime, _ = sim.classify(sol)
    if stable:
        assert int(regime) == sim.Regime.DAMPED
    else:
        # past eta|lambda| = 2 this linear map has no period-2 orbit: the flip grows without
        # bound — still growing (unsettled) after 60 steps, diverged (collapse) by 400
        assert int(regime) == (sim.Regime.UNSETTLED if eta < 2.2 else sim.Regime.COLLAPSE)
        long, _ = sim.classify(sim.solve(model, steps=400, method="map"))
        assert int(long) == sim.Regime.COLLAPSE


def test_discrete_map_matches_euler_of_the_ode():
    model = sim.make_model("C1-AND", "competence", {"rho": 0.2}, eta=0.5)
    sol = sim.solve(model, t1=50, method="map")
    y = np.asarray(model.initial_state())
    for _ in range(100):
        y = y + 0.5 * np.asarray(model.rhs(jnp.asarray(y), 1.0))
    np.testing.assert_allclose(np.asarray(sol.states[-1]), y, rtol=1e-12)
    assert sol.states.shape == (101, 3)


def test_classifier_is_vmappable():
    models = [_neg_loop(t) for t in (1.0, 10.0)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *models)
    sols = jax.vmap(lambda m: sim.solve(m, t1=1000, options=sim.SolveOptions(n_points=2001)))(
        stacked
    )
    regimes, _ = jax.vmap(sim.classify)(sols)
    assert int(regimes[1]) == sim.Regime.SUSTAINED and int(regimes[0]) != sim.Regime.SUSTAINED
