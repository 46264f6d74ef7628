"""Gradient noise: Wright–Fisher diffusion keeps competences in [0, 1], with the right variance."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim
from simulate.spec import NetworkSpec


def _paths(model, n_paths, t1, n_points, dt=0.01):
    keys = jax.random.split(jax.random.key(42), n_paths)
    return jax.vmap(
        lambda k: sim.solve(
            model, t1=t1, options=sim.SolveOptions(n_points=n_points), method="sde", dt=dt, key=k
        )
    )(keys)


def test_competences_stay_in_unit_interval_under_strong_noise():
    spec = sim.add_feedback(sim.ffl_spec("I1", "AND", K=0.3), "Z", sign=-1, K=0.3)
    model = sim.make_model(
        spec, "competence", {"rho": 0.5, "delta": 0.05}, sigma=1.5, delay_stages=2, tau=3.0
    )
    sols = _paths(model, 64, 100.0, 201)
    A = np.asarray(sols.states)
    assert np.all(sols.code == 0)
    assert A.min() >= 0.0 and A.max() <= 1.0
    assert A.std(axis=0).max() > 0.05  # the noise is really there


def test_neutral_wright_fisher_variance_matches_closed_form():
    """With drift off, E[A] = A0 and Var[A_t] = A0 (1 - A0) (1 - exp(-sigma^2 t))."""
    spec = NetworkSpec(nodes=("A",), edges=(), inputs=("A",))
    a0, sigma = 0.4, 0.5
    model = sim.make_model(spec, "competence", {"rho": 0.0, "delta": 0.0, "A0": a0}, sigma=sigma)
    sols = _paths(model, 4000, 4.0, 5, dt=0.005)
    A = np.asarray(sols.states[:, :, 0])
    t = np.asarray(sols.t[0])
    var_expected = a0 * (1 - a0) * (1 - np.exp(-(sigma**2) * t))
    # standard error of the mean at t = 4: sqrt(var / n) ~ 0.006; allow 4 of them
    np.testing.assert_allclose(A.mean(axis=0), a0, atol=0.025)
    # sampling sd of a variance of n=4000 draws is ~ var * sqrt(2/n) ~ 2.2% of var
    np.testing.assert_allclose(A.var(axis=0)[1:], var_expected[1:], rtol=0.08)


def test_sde_needs_a_key_and_bounded_kinetics():
    model = sim.make_model("C1", "competence", sigma=0.1)
    with pytest.raises(sim.SpecError, match="PRNG key"):
        sim.solve(model, method="sde")
    alon = sim.make_model("C1", "alon")
    with pytest.raises(sim.SpecError, match="competence"):
        sim.solve(alon, method="sde", key=jax.random.key(0))


def test_same_key_same_path():
    model = sim.make_model("C1", "competence", sigma=0.3)
    opts = sim.SolveOptions(n_points=21)
    a = sim.solve(model, t1=20, options=opts, method="sde", key=jax.random.key(3))
    b = sim.solve(model, t1=20, options=opts, method="sde", key=jax.random.key(3))
    c = sim.solve(model, t1=20, options=opts, method="sde", key=jax.random.key(4))
    assert jnp.array_equal(a.states, b.states) and not jnp.array_equal(a.states, c.states)
