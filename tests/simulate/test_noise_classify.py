"""Regimes of noisy (SDE) trajectories: noise alone is not an oscillation."""

import jax
import numpy as np

import simulate as sim
from simulate._solve import Solution
from tests.simulate.test_stability import _neg_loop


def _replicates(model, sigma, *, t1, n_points, dt, n=32):
    model = sim.set_param(model, "sigma", sigma)
    keys = jax.random.split(jax.random.key(0), n)
    return jax.vmap(
        lambda k: sim.solve(model, t1=t1, n_points=n_points, method="sde", dt=dt, key=k)
    )(keys)


def _labels(sols):
    return np.asarray(jax.vmap(sim.classify)(sols)[0])


OSC = (int(sim.Regime.DAMPED), int(sim.Regime.SUSTAINED))


def test_noisy_ffl_is_not_an_oscillation():
    """A C1 FFL cannot oscillate (all eigenvalues real and negative); with gradient noise
    its replicates are labelled converged, where band crossings alone would call most of
    them oscillating."""
    sols = _replicates(
        sim.make_model("C1", "competence"), 0.05, t1=40.0, n_points=200, dt=0.01, n=64
    )
    labels = _labels(sols)
    assert np.mean(np.isin(labels, OSC)) <= 0.05
    assert np.mean(labels == int(sim.Regime.CONVERGED)) >= 0.9
    as_ode = Solution(sols.t, sols.states, sols.inputs, sols.y_final, sols.code, sols.names, "ode")
    # the noise-free rules (the ACF test replaces them here) call most replicates oscillating
    # or unsettled
    ode_labels = _labels(as_ode)
    assert np.mean(np.isin(ode_labels, (*OSC, int(sim.Regime.UNSETTLED)))) >= 0.5


def test_noisy_limit_cycle_stays_sustained():
    """The delayed negative-feedback loop past its Hopf point (tau = 10) keeps a sustained
    label under noise; below it (tau = 1) noise does not create one."""
    for tau, sustained in ((10.0, True), (1.0, False)):
        sols = _replicates(_neg_loop(tau), 0.05, t1=800.0, n_points=400, dt=0.02)
        frac = np.mean(_labels(sols) == int(sim.Regime.SUSTAINED))
        assert frac >= 0.9 if sustained else frac == 0.0, (tau, frac)
