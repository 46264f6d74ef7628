"""Edge weights of the competence kinetics (llm_runs' learning-rate multiplier
``1 - w + w G`` on the whole rate): the weighted ODE against scipy's ``solve_ivp`` of the
same law written out by hand, the limits w = 0 (unregulated) and w = 1 (``G`` times the
unregulated rate), the max rule per node and the refusals."""

from __future__ import annotations

import hashlib

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import simulate

#: Rates of an I1 network (X -> Y, X -> Z, Y -| Z).
P = {
    "rho[X]": 0.05, "rho[Y]": 0.08, "rho[Z]": 0.07, "b[X]": 0.0, "b[Y]": 0.2, "b[Z]": 0.15,
    "delta[X]": 0.002, "delta[Y]": 0.004, "delta[Z]": 0.003,
    "A0[X]": 0.05, "A0[Y]": 0.04, "A0[Z]": 0.06, "K": 0.4, "n": 3.0,
}  # fmt: skip
STEPS = np.arange(0.0, 201.0, 10.0)
#: Per-edge weights; per node the max: w[Y] = 0.3, w[Z] = max(0.6, 0.45) = 0.6, w[X] = 0.
EDGES = {"X->Y": 0.3, "X->Z": 0.6, "Y->Z": 0.45}


def _oracle(gate: str, wy: float, wz: float):
    """The weighted competence ODE of ``P`` on I1, written out in NumPy."""
    K, n = P["K"], P["n"]

    def f(t, A):
        x, y, z = A
        ux, uy = (max(x, 0.0) / K) ** n, (max(y, 0.0) / K) ** n
        g_y = ux / (1 + ux)
        if gate == "AND":
            g_z = ux / (1 + ux) * (1 / (1 + uy))
        else:  # OR with a repressor: (1 + act) / (1 + act + rep)
            g_z = (1 + ux) / (1 + ux + uy)
        out = []
        for node, a, g, w in (("X", x, 1.0, 0.0), ("Y", y, g_y, wy), ("Z", z, g_z, wz)):
            b = P[f"b[{node}]"]
            coupling = 1 - w + w * g  # the learning-rate multiplier scales the whole step
            learn = P[f"rho[{node}]"] * (b + (1 - b))
            out.append(coupling * (learn * (1 - a) - P[f"delta[{node}]"] * a))
        return out

    A0 = [P["A0[X]"], P["A0[Y]"], P["A0[Z]"]]
    sol = solve_ivp(f, (0, STEPS[-1]), A0, t_eval=STEPS, rtol=1e-10, atol=1e-12, method="LSODA")
    return sol.y.T


def _model(gate: str) -> simulate.Model:
    return simulate.set_params(simulate.make_model(f"I1-{gate}", "competence"), P)


def _solve(m: simulate.Model) -> np.ndarray:
    opts = simulate.SolveOptions(rtol=1e-10, atol=1e-12, n_points=len(STEPS), solver="tsit5")
    return np.asarray(simulate.solve(m, t1=float(STEPS[-1]), options=opts).states)


@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_weighted_kinetics_match_scipy(gate):
    m = simulate.with_edge_weights(_model(gate), EDGES)
    np.testing.assert_array_equal(np.asarray(m.kinetics.weight), [0.0, 0.3, 0.6])
    ref = _oracle(gate, 0.3, 0.6)
    np.testing.assert_allclose(_solve(m), ref, atol=1e-7, rtol=0)
    # the weight matters: the unweighted law differs by far more than the tolerance
    assert np.max(np.abs(_solve(_model(gate)) - ref)) > 0.02


@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_weight_0_is_unregulated_and_1_is_the_unweighted_law(gate):
    m = _model(gate)
    zero = simulate.with_edge_weights(m, {}, default=0.0)
    np.testing.assert_allclose(_solve(zero), _oracle(gate, 0.0, 0.0), atol=1e-7, rtol=0)
    # w = 0: the rate law of an unregulated node, rho [b + (1 - b)] (1 - A) - delta A
    A = jnp.asarray([0.3, 0.6, 0.2])
    kin = zero.kinetics
    rho, b, d = (np.asarray(getattr(kin, f)) for f in ("rho", "b", "delta"))
    expect = rho * (b + (1 - b)) * (1 - np.asarray(A)) - d * np.asarray(A)
    np.testing.assert_allclose(np.asarray(zero.rhs(A, jnp.asarray(1.0))), expect, rtol=1e-14)
    # w = 1 everywhere (and the per-node form): G times the unregulated rate
    one = simulate.with_edge_weights(m, {}, default=1.0)
    per_node = simulate.with_edge_weights(m, jnp.ones(3))
    base = hashlib.sha256(_solve(one).tobytes()).hexdigest()
    assert hashlib.sha256(_solve(per_node).tobytes()).hexdigest() == base
    np.testing.assert_allclose(_solve(one), _oracle(gate, 1.0, 1.0), atol=1e-7, rtol=0)
    # ... which is not the unweighted law, whose basal term escapes the regulation
    assert np.max(np.abs(_solve(m) - _solve(one))) > 0.01


def test_no_weight_leaves_the_model_as_it_was():
    m = _model("AND")
    assert m.kinetics.weight is None
    assert "weight" not in " ".join(simulate.param_names(m))
    # a stacked batch of weighted models takes the per-model drift (no batched fast path)
    w = simulate.with_edge_weights(m, EDGES)
    one = simulate.with_edge_weights(m, {}, default=1.0)
    opts = simulate.SolveOptions(rtol=1e-10, atol=1e-12, n_points=len(STEPS), solver="tsit5")
    batch = simulate.solve(
        simulate.stack_models([w, one]), t1=float(STEPS[-1]), options=opts, batch="vmap"
    )
    np.testing.assert_allclose(np.asarray(batch.states[0]), _oracle("AND", 0.3, 0.6), atol=1e-7)
    np.testing.assert_allclose(np.asarray(batch.states[1]), _oracle("AND", 1.0, 1.0), atol=1e-7)


def test_node_weights_take_the_largest_edge_weight():
    w = simulate.node_weights(("X", "Y", "Z"), {"X->Z": 0.2, " Y -> Z ": 0.7, "X->Y": 0})
    np.testing.assert_array_equal(w, [0.0, 0.0, 0.7])
    assert w.dtype == np.float64


@pytest.mark.parametrize(
    ("weights", "says"),
    [
        ({"X->Y": 1.5}, "in [0, 1]"),
        ({"X->Y": -0.1}, "in [0, 1]"),
        ({"X->Y": float("nan")}, "in [0, 1]"),
        ({"X->Y": True}, "in [0, 1]"),
        ({"Z->X": 0.5}, "name no edge"),
        ({"X-Y": 0.5}, "SRC->DST"),
        (np.ones(2), "shape (3,)"),
        (np.array([0.5, 2.0, 0.1]), "node Y"),
    ],
)
def test_bad_weights_are_refused(weights, says):
    with pytest.raises(simulate.SpecError) as err:
        simulate.with_edge_weights(_model("AND"), weights)
    assert says in str(err.value) and "\n" not in str(err.value)
