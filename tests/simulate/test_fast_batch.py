"""The lean shared-step solver behind solve(..., batch="vmap" / Sharded) and sweeps.

Reference: scipy's DOP853 at rtol 1e-12 on an independently written FFL right-hand side;
explicit tolerances. Failure masking: a blowing-up cell is flagged (code 2) and a stiff cell
that exhausts the step budget is flagged (code 1) without spoiling the other cells.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import simulate as sim
from simulate._batch import ode_shared
from simulate._batch_rhs import batched_rhs
from simulate._hill import with_integer_hill
from simulate._rk import tsit5_shared

MOTIFS = list(sim.FFL_SIGNS)


def _ffl_sets(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "motif": np.arange(n) % 8,
        "beta": rng.uniform(0.5, 5.0, n),
        "gamma": rng.uniform(0.3, 3.0, n),
        "kappa": rng.uniform(0.5, 2.0, n),
    }


def _ffl_models(ps, gates=("AND",)):
    base = sim.stack_models(
        [sim.make_model(sim.ffl_spec(m, g), "alon") for g in gates for m in MOTIFS]
    )
    idx = jnp.asarray(ps["motif"] + 8 * (np.arange(len(ps["motif"])) % len(gates)))
    models = jax.tree.map(lambda a: a[idx], base)
    return jax.vmap(lambda m, b, g, k: sim.set_params(m, {"beta": b, "gamma": g, "kappa": k}))(
        models, jnp.asarray(ps["beta"]), jnp.asarray(ps["gamma"]), jnp.asarray(ps["kappa"])
    )


def _scipy_ffl(ps, i, ts, switches):
    """DOP853 reference of set ``i`` (AND gate, n = 2) through piecewise-constant input."""
    s_xy, s_xz, s_yz = sim.FFL_SIGNS[MOTIFS[ps["motif"][i]]]
    beta, gamma, kxy = ps["beta"][i], ps["gamma"][i], 1.0 / ps["kappa"][i]

    def hill(a, K, sign):
        u = (max(a, 0.0) / K) ** 2
        return u / (1.0 + u) if sign > 0 else 1.0 / (1.0 + u)

    def rhs(t, y, x):
        gy = hill(x, kxy, s_xy)
        gz = hill(x, 1.0, s_xz) * hill(y[0], 1.0, s_yz)
        return [beta * gy - y[0], gamma * (gz - y[1])]

    out = np.empty((len(ts), 2))
    y = np.zeros(2)
    bounds = [s[0] for s in switches] + [ts[-1]]
    for (t_a, x), t_b in zip(switches, bounds[1:], strict=True):
        mask = (ts >= t_a) & (ts <= t_b)
        r = solve_ivp(
            rhs,
            (t_a, t_b),
            y,
            args=(x,),
            method="DOP853",
            rtol=1e-12,
            atol=1e-14,
            dense_output=True,
        )
        assert r.success
        out[mask] = r.sol(ts[mask]).T
        y = r.y[:, -1]
    return out


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol", "tol"),
    [("float64", 1e-6, 1e-8, 1e-5), ("float64", 1e-9, 1e-11, 1e-7), ("float32", 1e-6, 1e-8, 1e-5)],
)
def test_solve_batch_matches_dop853(dtype, rtol, atol, tol):
    ps = _ffl_sets(24, seed=3)
    models = _ffl_models(ps)
    sched = "on@0,off@10"
    ts = np.linspace(0.0, 20.0, 200)
    sol = sim.solve(
        models,
        sched,
        t1=20.0,
        options=sim.SolveOptions(n_points=200, rtol=rtol, atol=atol, dtype=dtype),
        batch="vmap",
    )
    assert sol.states.dtype == jnp.dtype(dtype)
    assert np.all(np.asarray(sol.code) == 0)
    got = np.asarray(sol.states, float)
    for i in range(len(ps["motif"])):
        ref = _scipy_ffl(ps, i, ts, [(0.0, 2.0), (10.0, 0.0)])
        assert np.max(np.abs(got[i, :, 1:] - ref)) < tol, i
        np.testing.assert_array_equal(got[i, :, 0], np.where(ts < 10, 2.0, 0.0))


def test_batched_rhs_equals_model_rhs():
    """Batch-last drift == vmap of Model.rhs: FFL AND/OR mix, non-integer Hill, competence."""
    key = jax.random.key(0)
    ps = _ffl_sets(32, seed=1)
    ffl = _ffl_models(ps, gates=("AND", "OR"))
    ffl_n = eqx.tree_at(lambda m: m.network.n, ffl, ffl.network.n * 0.85)
    ring = sim.stack_models(
        [sim.make_model(sim.ring_spec(4, n_repressors=k), "competence") for k in (0, 1, 2, 1)]
    )
    for models in (ffl, ffl_n, with_integer_hill(ffl, 2), ring):
        fast = batched_rhs(models)
        assert fast is not None
        prep, f, rows = fast
        B = int(models.tau.shape[0])
        Y = jax.random.uniform(key, (models.state_size, B), minval=0.0, maxval=3.0)
        for level in (0.0, 0.5, 1.0):
            ref = jax.vmap(
                lambda m, y, lv=level: m.rhs(y, m.input_value(lv)), in_axes=(0, -1), out_axes=-1
            )(models, Y)
            got = f(Y[rows], prep(jnp.asarray(level)))
            np.testing.assert_allclose(got, ref[rows], rtol=1e-12, atol=1e-12)
            assert np.all(np.asarray(ref)[np.setdiff1d(np.arange(len(Y)), rows)] == 0)


def test_batched_rhs_declines_policy_lag():
    m = sim.make_model("C1-AND", "alon", delay_stages=2)
    assert batched_rhs(sim.stack_models([m, m])) is None
    opts = sim.SolveOptions(n_points=11)
    sol = sim.solve(sim.stack_models([m, m]), t1=5.0, options=opts, batch="vmap")  # diffrax path
    ref = sim.solve(m, t1=5.0, options=sim.SolveOptions(n_points=11, rtol=1e-6, atol=1e-8))
    np.testing.assert_allclose(sol.states[0], ref.states, atol=1e-5)


def test_tsit5_shared_linear_with_jump():
    """y' = s(t) - k y with s = 1 on [0, 3), 0.25 after: exact solution, steps end on the jump."""
    k = jnp.asarray([0.5, 1.0, 4.0])
    ts = jnp.linspace(0.0, 6.0, 61)

    def level(t):
        return jnp.where(t < 3.0, 1.0, 0.25)

    res = tsit5_shared(
        lambda Y, s: s - k * Y, lambda s: s, jnp.zeros((1, 3)), ts, level,
        jnp.asarray([3.0]), 1e-10, 1e-12, 10_000,
    )  # fmt: skip
    assert bool(res.ok) and int(res.steps) < 2_000
    t = np.asarray(ts)[:, None]
    kk = np.asarray(k)[None, :]
    before = (1 - np.exp(-kk * t)) / kk
    y3 = (1 - np.exp(-kk * 3.0)) / kk
    after = 0.25 / kk + (y3 - 0.25 / kk) * np.exp(-kk * (t - 3.0))
    exact = np.where(t < 3.0, before, after)
    np.testing.assert_allclose(np.asarray(res.ys)[:, 0], exact, atol=1e-9)


def _with_cell(models, which: int, gamma_z: float):
    g = models.kinetics.gamma.at[which, 2].set(gamma_z)
    return eqx.tree_at(lambda m: m.kinetics.gamma, models, g)


def test_blowing_up_cell_is_flagged_others_unaffected():
    ps = _ffl_sets(8, seed=5)
    good = _ffl_models(ps)
    bad = _with_cell(good, 3, -60.0)  # dz/dt = -60 (f - z): grows like e^(60 t), overflows
    sol = sim.solve(
        bad,
        "on@0",
        t1=20.0,
        options=sim.SolveOptions(n_points=101, rtol=1e-6, atol=1e-8),
        batch="vmap",
    )
    code = np.asarray(sol.code)
    assert code[3] == 2 and not np.all(np.isfinite(np.asarray(sol.states[3])))
    keep = np.arange(8) != 3
    assert np.all(code[keep] == 0)
    ref = sim.solve(
        good,
        "on@0",
        t1=20.0,
        options=sim.SolveOptions(n_points=101, rtol=1e-6, atol=1e-8),
        batch="vmap",
    )
    np.testing.assert_allclose(sol.states[keep], ref.states[keep], atol=1e-5)
    sh = sim.solve(
        bad,
        "on@0",
        t1=20.0,
        options=sim.SolveOptions(n_points=101),
        batch=sim.Sharded(chunk_size=4),
    )
    states, codes = sh.states, sh.code
    assert codes[3] == 2 and np.all(codes[keep] == 0)
    assert np.all(np.isfinite(states[keep]))


def test_stiff_cell_fails_alone():
    """A stiff cell exhausts the shared step budget: the chunk is re-solved cell by cell."""
    ps = _ffl_sets(8, seed=6)
    models = _with_cell(_ffl_models(ps), 5, 1e6)
    opts = sim.SolveOptions(n_points=51, rtol=1e-6, atol=1e-8, max_steps=3_000)
    sol = sim.solve(models, "on@0", t1=20.0, options=opts, batch="vmap")
    code = np.asarray(sol.code)
    assert code[5] == 1 and np.all(np.delete(code, 5) == 0)
    sh = sim.solve(models, "on@0", t1=20.0, options=opts, batch=sim.Sharded(chunk_size=4))
    states, codes = sh.states, sh.code
    np.testing.assert_array_equal(codes, code)
    np.testing.assert_array_equal(sh.t, np.asarray(sol.t))  # the same kind of result
    ok = codes == 0
    np.testing.assert_allclose(states[ok], np.asarray(sol.states)[ok], atol=1e-5)


def test_ode_shared_layouts_agree():
    models = with_integer_hill(_ffl_models(_ffl_sets(6, seed=2)), 2)
    sched = sim.Schedule.parse("on@0,off@8")
    ts = jnp.linspace(0.0, 15.0, 31)
    first, ok0 = ode_shared(models, sched, ts)
    last, ok1 = ode_shared(models, sched, ts, batch_axis=-1)
    assert bool(ok0) and bool(ok1)
    np.testing.assert_array_equal(first.states, jnp.moveaxis(last.states, -1, 0))
    np.testing.assert_array_equal(first.inputs, last.inputs.T)
    np.testing.assert_array_equal(first.y_final, last.y_final.T)
    np.testing.assert_array_equal(first.code, last.code)


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_log_hill_matches_power_in_value_and_gradient(gate, fixed):
    """exp(n log r) Hill powers (with the sign structure traced or fixed): the drift and its
    gradient in K and n equal jnp.power's (relative 1e-10), at levels from 0 (the floor)
    to 1, for all eight FFL signs."""
    rng = np.random.default_rng(3)
    for motif in MOTIFS:
        m = sim.make_model(sim.ffl_spec(motif, gate), "competence")
        fast = sim.with_log_hill(m, fixed_structure=fixed)
        assert isinstance(fast.network, sim.AbstractNetwork)
        for A in (rng.uniform(0.0, 1.0, 3), np.array([0.0, 0.3, 1.0])):
            y = jnp.asarray(A)

            def drift(model, K, n, y=y):
                model = sim.set_params(model, {"K[X->Z]": K, "n[Y->Z]": n})
                return jnp.sum(model.rhs(y, jnp.asarray(1.0)) ** 2)

            ref = jax.value_and_grad(drift, argnums=(1, 2))(m, 0.4, 2.3)
            got = jax.value_and_grad(drift, argnums=(1, 2))(fast, 0.4, 2.3)
            np.testing.assert_allclose(got[0], ref[0], rtol=1e-10, atol=1e-14)
            np.testing.assert_allclose(np.array(got[1]), np.array(ref[1]), rtol=1e-10, atol=1e-12)
