"""The alon kinetics reproduce the textbook FFL functions (Alon 2007; Mangan & Alon 2003).

Closed forms, dimensionless units (alpha_y = 1, alpha_z = gamma), steep-Hill limit:
* C1-AND: Z's ON response is delayed by ln(1/(1 - K_yz/Y_st)) (time for Y to reach K_yz = 1);
  no OFF delay.
* C1-OR: no ON delay; Z's OFF response is delayed by ln(Y_st/K_yz) (time for Y to decay to 1).
* I1: half-time ln(2F/(2F - 1))/gamma with fold repression F, and a pulse.
"""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim
from simulate.spec import FFL_SIGNS

LN2 = np.log(2.0)
STEEP = 50.0  # Hill coefficient standing in for the steep limit


def _z_metrics(model, schedule, t1, n_points=5001):
    sol = sim.solve(model, schedule, t1=t1, options=sim.SolveOptions(n_points=n_points))
    assert sol.message() == "ok"
    m = sim.metrics(sol)
    return sol, {k: float(v[2]) for k, v in m.items()}


@pytest.mark.parametrize("beta", [2.0, 5.0])
@pytest.mark.parametrize("gamma", [1.0, 3.0])
def test_c1_and_sign_sensitive_delay(beta, gamma):
    model = sim.make_model("C1-AND", "alon", {"beta": beta, "gamma": gamma, "n": STEEP})
    _, z = _z_metrics(model, "on@0,off@10", 20.0)
    y_st = beta * 2.0**STEEP / (1 + 2.0**STEEP)  # x0 = 2, kappa = 1
    delay_on = np.log(1.0 / (1.0 - 1.0 / y_st))
    assert z["t50_on"] == pytest.approx(delay_on + LN2 / gamma, rel=0.01)
    assert z["t50_off"] == pytest.approx(LN2 / gamma, rel=1e-3)  # no OFF delay
    # the delay is real: simple regulation (no Y) would give ln2/gamma for ON too
    assert z["t50_on"] - LN2 / gamma > 0.5 * delay_on


@pytest.mark.parametrize("beta", [2.0, 5.0])
def test_c1_or_delays_off_not_on(beta):
    gamma = 2.0
    model = sim.make_model("C1-OR", "alon", {"beta": beta, "gamma": gamma, "n": STEEP})
    _, z = _z_metrics(model, "on@0,off@10", 20.0)
    y_st = beta * 2.0**STEEP / (1 + 2.0**STEEP)
    assert z["t50_on"] == pytest.approx(LN2 / gamma, rel=1e-3)
    assert z["t50_off"] == pytest.approx(np.log(y_st) + LN2 / gamma, rel=0.01)


@pytest.mark.parametrize(("fold", "gamma"), [(10.0, 1.0), (4.0, 1.0), (10.0, 0.5)])
def test_i1_response_acceleration_and_pulse(fold, gamma):
    # Y saturates at beta; choose beta so that the fold repression 1 + y_st^n equals `fold`.
    beta = (fold - 1.0) ** (1.0 / STEEP)
    model = sim.make_model("I1-AND", "alon", {"beta": beta, "gamma": gamma, "n": STEEP})
    sol, z = _z_metrics(model, "on@0", 30.0 / gamma, n_points=30001)
    y_st = float(sol.node("Y")[-1])
    F = 1.0 + y_st**STEEP  # z_st(no Y) / z_st(with Y)
    assert F == pytest.approx(fold, rel=5e-3)
    assert z["t50_on"] == pytest.approx(np.log(2 * F / (2 * F - 1)) / gamma, rel=0.02)
    assert z["t50_on"] < 0.2 * LN2 / gamma  # accelerated vs simple regulation
    _, per_node = sim.classify(sol, bounded=False)
    assert int(per_node[2]) == sim.Regime.OVERSHOOT
    assert z["pulse_amplitude"] > 0.5  # rises towards 1, then falls to 1/F


def _permissive(sign, high):
    return high if sign > 0 else not high


@pytest.mark.parametrize(("motif", "gate"), list(itertools.product(FFL_SIGNS, ("AND", "OR"))))
def test_steady_state_logic_of_all_16_presets(motif, gate):
    """Z's gate over the four input combinations (X, Y in {low, high})."""
    net = sim.as_network(sim.ffl_spec(motif, gate))
    s_xz, s_yz = FFL_SIGNS[motif][1], FFL_SIGNS[motif][2]
    for x_high, y_high in itertools.product((False, True), repeat=2):
        A = jnp.array([1e3 if x_high else 0.0, 1e3 if y_high else 0.0, 0.0])
        g = float(net.regulation(A)[2])
        ok = [_permissive(s_xz, x_high), _permissive(s_yz, y_high)]
        expected = float(all(ok) if gate == "AND" else any(ok))
        if gate == "OR" and s_xz != s_yz and x_high and y_high:
            # single occupancy: a bound activator and a bound repressor compete, u_a/(u_a + u_r)
            expected = 0.5
        assert g == pytest.approx(expected, abs=1e-5), (x_high, y_high)


@pytest.mark.parametrize(("motif", "gate"), list(itertools.product(FFL_SIGNS, ("AND", "OR"))))
def test_simulated_steady_states_match_closed_form(motif, gate):
    beta, x0, n = 3.0, 2.0, 2.0
    model = sim.make_model(sim.ffl_spec(motif, gate), "alon", {"beta": beta, "gamma": 2.0})
    s_xy, s_xz, s_yz = FFL_SIGNS[motif]
    for level in (0.0, 1.0):
        sol = sim.solve(
            model,
            f"{level}@0",
            t1=60.0,
            options=sim.SolveOptions(n_points=11, rtol=1e-10, atol=1e-12),
        )
        x = x0 * level
        hill = {1: lambda u: u**n / (1 + u**n), -1: lambda u: 1 / (1 + u**n)}
        y_st = beta * hill[s_xy](x)
        ux, uy = x**n, y_st**n
        if gate == "AND":
            z_st = hill[s_xz](x) * hill[s_yz](y_st)
        else:  # single-occupancy OR forms
            forms = {
                (1, 1): (ux + uy) / (1 + ux + uy),
                (1, -1): (1 + ux) / (1 + ux + uy),
                (-1, 1): (1 + uy) / (1 + ux + uy),
                (-1, -1): 1 / (1 + ux * uy),
            }
            z_st = forms[(s_xz, s_yz)]
        assert float(sol.node("Y")[-1]) == pytest.approx(y_st, abs=1e-8)
        assert float(sol.node("Z")[-1]) == pytest.approx(z_st, abs=1e-8)
