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
        lambda k: sim.solve(
            model, t1=t1, options=sim.SolveOptions(n_points=n_points), method="sde", dt=dt, key=k
        )
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


def test_above_noise_matches_the_chi_square_quantile():
    """The measurement-noise test's threshold against scipy's chi-square quantile."""
    from scipy import stats

    from simulate._analysis import above_noise

    for n in (5, 10, 21, 60):
        crit = np.sqrt(stats.chi2.ppf(0.95, n - 1) / n)  # sd at which n sd^2 = quantile
        assert bool(above_noise(np.float64(crit * 1.01), np.float64(n), np.float64(1.0)))
        assert not bool(above_noise(np.float64(crit * 0.99), np.float64(n), np.float64(1.0)))


def _measured(y, noise_sd):
    t = np.arange(0, 201, 10.0)
    labels = []
    for row in y:
        sol = Solution(t, row[:, None], np.ones_like(t), row[-1:], np.int32(0), ("X",), "sde")
        labels.append(int(sim.classify(sol, noise_sd=noise_sd)[0]))
    return np.asarray(labels)


def test_known_measurement_noise_is_not_an_oscillation_but_a_cycle_is():
    """21 evaluations (a 200-step run, eval every 10) of a flat competence measured on 64
    probes: without the noise level, about 9 % of such curves were labelled oscillating;
    with it, at most 3 %. A 4-sample cycle of amplitude 0.25 in the same noise is still an
    oscillation in >= 90 % of replicates."""
    rng = np.random.default_rng(0)
    t = np.arange(0, 201, 10.0)
    flat = rng.binomial(64, 0.94, size=(200, t.size)) / 64
    sd = np.array([np.sqrt(0.94 * 0.06 / 64)])
    assert np.mean(np.isin(_measured(flat, None), OSC)) >= 0.05  # the defect, measured
    assert np.mean(np.isin(_measured(flat, sd), OSC)) <= 0.03
    cyc = 0.6 + 0.25 * np.sin(2 * np.pi * t / 40) + rng.normal(0, 0.06, (60, t.size))
    assert np.mean(np.isin(_measured(cyc, np.array([0.06])), OSC)) >= 0.9
