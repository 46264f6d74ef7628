"""Stability boundaries by bisection, validated against theory:
the secant condition of cyclic negative-feedback chains and eta |lambda| = 2 of the map."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim


def _ring_loop_gain(model, beta: float, x: float, hill: float) -> float:
    """Analytic loop gain prod_i beta x |dG_i/dA_{i-1}| / gamma at the steady state."""
    m = sim.set_param(model, "beta", beta)
    st = sim.linear_stability(m, jnp.full(m.size, 0.5), x)
    A = np.asarray(st.steady)
    gain = 1.0
    for i in range(m.size):
        a = A[i - 1]
        u = a**hill
        gain *= beta * x * hill * u / (a * (1.0 + u) ** 2)  # |d/da| of u/(1+u) and 1/(1+u)
    return gain


@pytest.mark.parametrize("n_stages", [3, pytest.param(4, marks=pytest.mark.slow)])
def test_secant_condition_of_negative_feedback_ring(n_stages):
    hill = 4.0
    model = sim.make_model(sim.ring_spec(n_stages, n_repressors=1, n=hill), "alon")
    found = sim.find_boundaries(model, "beta", np.geomspace(0.3, 30, 13))
    assert len(found) == 1
    b = found[0]
    assert b.kind == "Hopf" and b.direction == "destabilising"
    x = float(model.kinetics.x0)
    gain = _ring_loop_gain(model, b.value, x, hill)
    assert gain == pytest.approx(sim.secant_threshold(n_stages), rel=1e-6)
    # at the Hopf point the critical pair is +-i gamma tan(pi/n) (gamma = 1)
    assert b.frequency == pytest.approx(math.tan(math.pi / n_stages), rel=1e-6)


def test_secant_threshold_values():
    assert sim.secant_threshold(3) == pytest.approx(8.0)
    assert sim.secant_threshold(4) == pytest.approx(4.0)
    assert sim.secant_threshold(1000) == pytest.approx(1.0, abs=1e-2)
    with pytest.raises(sim.SpecError):
        sim.secant_threshold(2)


def test_map_period_doubling_at_eta_lambda_two():
    model = sim.make_model("C1", "alon", {"gamma": 3.0})
    found = sim.find_boundaries(model, "eta", np.linspace(0.1, 1.5, 8), method="map")
    assert len(found) == 1
    b = found[0]
    assert b.kind == "period doubling"
    st = sim.linear_stability(model, jnp.asarray([2.0, 2.0, 0.5]), 2.0)
    eta_c = sim.map_threshold(np.asarray(st.eigenvalues))
    assert eta_c == pytest.approx(2.0 / 3.0, rel=1e-12)  # eigenvalues -1 (Y) and -gamma (Z)
    assert b.value == pytest.approx(eta_c, rel=1e-8)
    with pytest.raises(sim.SpecError):
        sim.map_threshold(np.asarray([-1.0 + 1j, -1.0 - 1j]))


def test_find_boundaries_input_errors():
    model = sim.make_model("C1", "alon")
    with pytest.raises(sim.SpecError):
        sim.find_boundaries(model, "eta", np.asarray([1.0, 0.5]), method="map")
    with pytest.raises(sim.SpecError):
        sim.find_boundaries(model, "beta", np.asarray([1.0, 2.0]), method="sde")
