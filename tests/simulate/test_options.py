"""SolveOptions: one options object and one default for every solve entry point."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import calibrate as cal
import simulate as sim
from simulate._options import DEFAULT_OPTIONS, resolve

jax.config.update("jax_enable_x64", True)

TIGHT = sim.SolveOptions(n_points=41, rtol=1e-10, atol=1e-12)


def _models(betas=(1.5, 3.0, 6.0)) -> list[sim.Model]:
    return [sim.make_model("C1", "alon", {"beta": b}) for b in betas]


def _scipy(model: sim.Model, ts: np.ndarray) -> np.ndarray:
    """Node levels by scipy's DOP853 at rtol 1e-12 (input on from 0, constant)."""
    x = model.input_value(jnp.asarray(1.0))
    rhs = jax.jit(lambda y: model.rhs(y, x))
    out = solve_ivp(
        lambda t, y: np.asarray(rhs(jnp.asarray(y))),
        (ts[0], ts[-1]),
        np.asarray(model.initial_state()),
        t_eval=ts,
        method="DOP853",
        rtol=1e-12,
        atol=1e-14,
    )
    assert out.success
    ys = jnp.asarray(out.y.T)
    return np.asarray(jax.vmap(lambda y: model.levels(y, x))(ys))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n_points", 1),
        ("n_points", 2.5),
        ("n_points", True),
        ("rtol", 0.0),
        ("rtol", float("nan")),
        ("atol", -1e-8),
        ("atol", float("inf")),
        ("atol", "1e-8"),
        ("solver", "rk4"),
        ("dtype", "float16"),
        ("adjoint", "backward"),
        ("max_steps", 0),
        ("dt0", 0.0),
    ],
)
def test_invalid_option_names_the_field(field, value):
    with pytest.raises(sim.OptionsError, match=field if field != "solver" else "solver") as e:
        sim.SolveOptions(**{field: value})
    assert isinstance(e.value, sim.ConfigError) and isinstance(e.value, sim.SpecError)
    assert isinstance(e.value, sim.AgentmotifsError)


def test_json_round_trip_and_replace():
    opts = sim.SolveOptions(n_points=11, rtol=1e-7, dtype="float32", dt0=0.01, adjoint="forward")
    back = sim.SolveOptions.from_dict(json.loads(opts.to_json()))
    assert back == opts and hash(back) == hash(opts)
    assert sim.SolveOptions.from_dict(json.loads(DEFAULT_OPTIONS.to_json())) == DEFAULT_OPTIONS
    assert sim.SolveOptions.from_dict({"rtol": 1e-4}) == DEFAULT_OPTIONS.replace(rtol=1e-4)
    with pytest.raises(sim.OptionsError, match="rtl"):
        sim.SolveOptions.from_dict({"rtl": 1e-4})
    with pytest.raises(sim.OptionsError, match="rtl"):
        opts.replace(rtl=1.0)
    with pytest.raises(sim.OptionsError, match="n_points"):
        opts.replace(n_points=1)
    # no optional-override path is left: options are given whole (issue 30 §3)
    assert not hasattr(opts, "merged")
    with pytest.raises(TypeError):
        resolve(opts, rtol=1e-3)  # type: ignore[call-arg]


#: The solve options that once were keywords of simulate's entry points too.
OPTION_KEYWORDS = {"n_points", "solver", "rtol", "atol", "dt0", "max_steps", "dtype"}
#: One solve entry point (``batch=`` for stacked models) and the phase diagram.
ENTRY_POINTS = (sim.solve, sim.phase_diagram)


def test_one_default_everywhere():
    """Every entry point, calibrate's ``solve_at`` too, takes ``options=None`` (-> the one
    default) and no solve option as a keyword of its own."""
    assert sim.SolveOptions() == DEFAULT_OPTIONS and resolve(None) is DEFAULT_OPTIONS
    for fn in (*ENTRY_POINTS, cal.solve_at):
        params = inspect.signature(fn).parameters
        assert params["options"].default is None, fn.__name__
        # calibrate's ``solver`` is a solver object, as in diffrax (the name is options.solver)
        own = OPTION_KEYWORDS - ({"solver"} if fn is cal.solve_at else set())
        assert not set(params) & (own | {"forward"}), fn.__name__
    models = _models((2.0, 4.0))
    stacked = sim.stack_models(models)
    n = DEFAULT_OPTIONS.n_points
    assert sim.solve(models[0]).t.shape == (n,)
    assert sim.solve(stacked, batch="vmap").t.shape == (2, n)
    assert sim.solve(stacked, batch="sharded").states.shape == (2, n, 3)
    res = sim.phase_diagram(
        "C1", "AND", sim.grid("beta", 1.0, 2.0, 2), boundaries=False, progress=False
    )
    assert res.info["options"] == DEFAULT_OPTIONS.to_dict()


def test_entry_points_agree_with_each_other_and_scipy():
    models = _models()
    stacked = sim.stack_models(models)
    ts = np.linspace(0.0, 20.0, TIGHT.n_points)
    single = np.stack([np.asarray(sim.solve(m, "on@0", options=TIGHT).states) for m in models])
    batch = sim.solve(stacked, "on@0", options=TIGHT, batch="vmap")
    sharded = sim.solve(stacked, "on@0", options=TIGHT, batch=sim.Sharded(chunk_size=2))
    assert isinstance(sharded, sim.Solution) and isinstance(batch, sim.Solution)
    assert np.all(np.asarray(batch.code) == 0) and np.all(sharded.code == 0)
    for leaf in ("t", "inputs", "code"):
        np.testing.assert_array_equal(getattr(sharded, leaf), np.asarray(getattr(batch, leaf)))
    ref = np.stack([_scipy(m, ts) for m in models])
    for got in (single, np.asarray(batch.states), sharded.states):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-8)
    # chunks of 2 cells take other shared steps than the batch of 3: agree to the tolerance
    np.testing.assert_allclose(sharded.states, np.asarray(batch.states), rtol=0, atol=1e-9)


def test_options_is_the_one_way():
    """No entry point takes a solve option as a keyword of its own (``options=`` is the one
    way), and a bad option fails where the options are made."""
    for fn in ENTRY_POINTS:
        params = set(inspect.signature(fn).parameters)
        assert not params & OPTION_KEYWORDS, (fn.__name__, sorted(params & OPTION_KEYWORDS))
    m = _models((3.0,))[0]
    with pytest.raises(TypeError, match="n_points"):
        sim.solve(m, n_points=21)  # pyright: ignore[reportCallIssue]
    opts = sim.SolveOptions(n_points=21, rtol=1e-6, atol=1e-8)
    assert sim.solve(m, options=opts).t.shape == (21,)
    with pytest.raises(sim.SpecError, match="solver"):
        sim.SolveOptions(solver="rk4")
    with pytest.raises(sim.SpecError, match="kvaerno5"):
        sim.solve(sim.stack_models([m]), options=sim.SolveOptions(solver="kvaerno5"), batch="vmap")
    with pytest.raises(sim.SpecError, match="kvaerno5"):
        sim.solve(
            sim.stack_models([m]), options=sim.SolveOptions(solver="kvaerno5"), batch="sharded"
        )
    # the batched solvers' settings are one object too, validated where it is made
    with pytest.raises(sim.OptionsError, match="chunk_size"):
        sim.Sharded(chunk_size=0)
    with pytest.raises(sim.OptionsError, match="call_size"):
        sim.Sharded(call_size=2.5)  # type: ignore[arg-type]
    with pytest.raises(sim.OptionsError, match="batch"):
        sim.solve(m, batch="pmap")  # type: ignore[arg-type]
    with pytest.raises(sim.SpecError, match="ODE only"):
        sim.solve(sim.stack_models([m]), method="map", batch="sharded")


def _assert_identical(got: sim.Solution, want: sim.Solution) -> None:
    assert (got.names, got.method) == (want.names, want.method)
    leaves = zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)
    for a, b in leaves:
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_solve_is_the_one_entry_point():
    """Issue 30 §3: ``solve_batch``/``solve_sharded`` left simulate's API; ``solve(...,
    batch=...)`` gives exactly what the (now private) batched solvers give."""
    from simulate._batch import _solve_batch
    from simulate._sharded import _solve_sharded

    for gone in ("solve_batch", "solve_sharded"):
        assert gone not in dir(sim)
        with pytest.raises(AttributeError):
            getattr(sim, gone)
    assert set(inspect.signature(sim.solve).parameters) >= {"options", "batch"}
    stacked = sim.stack_models(_models())
    opts = sim.SolveOptions(n_points=21)
    _assert_identical(
        sim.solve(stacked, "on@0", t1=10.0, options=opts, batch="vmap"),
        _solve_batch(stacked, "on@0", t1=10.0, options=opts),
    )
    _assert_identical(
        sim.solve(stacked, "on@0", t1=10.0, options=opts, batch="sharded"),
        _solve_sharded(stacked, "on@0", t1=10.0, options=opts),
    )
    how = sim.Sharded(chunk_size=2, call_size=2, keep_states=False)
    _assert_identical(
        sim.solve(stacked, "on@0", t1=10.0, options=opts, batch=how),
        _solve_sharded(
            stacked, "on@0", t1=10.0, options=opts, chunk_size=2, call_size=2, keep_states=False
        ),
    )
    comp = sim.stack_models([sim.make_model("C1", "competence", {"sigma": s}) for s in (0.05, 0.2)])
    key = jax.random.key(3)
    for kw in ({"method": "map", "steps": 12}, {"method": "sde", "key": key, "dt": 0.5}):
        _assert_identical(
            sim.solve(comp, t1=6.0, options=opts, batch="vmap", **kw),  # type: ignore[arg-type]
            _solve_batch(comp, t1=6.0, options=opts, **kw),  # type: ignore[arg-type]
        )
    # one model: batch=None is the single-model solver, unchanged
    one = _models((2.0,))[0]
    _assert_identical(sim.solve(one, options=opts, batch=None), sim.solve(one, options=opts))


def test_float32_option_and_lean_sharded_result():
    stacked = sim.stack_models(_models((2.0, 5.0)))
    f32 = sim.SolveOptions(n_points=21, rtol=1e-6, atol=1e-8, dtype="float32")
    sol = sim.solve(stacked, options=f32, batch="vmap")
    assert sol.states.dtype == jnp.float32
    ref = sim.solve(stacked, options=f32.replace(dtype="float64"), batch="vmap")
    np.testing.assert_allclose(sol.states, ref.states, atol=1e-5)
    lean = sim.solve(stacked, options=f32, batch=sim.Sharded(keep_states=False))
    assert lean.states.shape == (2, 0, 3) and np.all(lean.code == 0)


def test_calibrate_curves_equal_simulate_solve_at_the_same_options():
    """calibrate's adaptive (tsit5) likelihood and simulate.solve: one diffrax set-up."""
    cfg = cal.FitConfig(solver="tsit5", rtol=1e-7, atol=1e-9, forward_mode=True)
    opts = cfg.solve_options()
    assert (opts.rtol, opts.atol, opts.solver, opts.adjoint) == (1e-7, 1e-9, "tsit5", "forward")
    m = sim.make_model("C1", "competence")
    ts = jnp.linspace(0.0, 30.0, 31)
    A, ok = cal.solve_at(m, ts, options=opts)
    sol = sim.solve(m, "on@0", t1=30.0, options=opts.replace(n_points=31))
    assert bool(ok) and int(sol.code) == 0
    np.testing.assert_allclose(A, np.asarray(sol.states)[:, : m.size], rtol=0, atol=1e-12)
    # the options the old keywords (rtol, atol, forward, max_steps) made give the same curves
    old = sim.SolveOptions(rtol=1e-7, atol=1e-9, adjoint="forward", max_steps=4096)
    A_old, _ = cal.solve_at(m, ts, options=old)
    np.testing.assert_array_equal(A, A_old)
    # and forward-mode derivatives flow through the shared set-up
    rho = float(sim.get_param(m, "rho[Y]"))
    g = jax.jacfwd(lambda r: cal.solve_at(sim.set_param(m, "rho[Y]", r), ts, options=opts)[0])(
        jnp.asarray(rho)
    )
    assert np.all(np.isfinite(np.asarray(g)))


def test_options_import_without_jax():
    code = (
        "import sys, simulate; o = simulate.SolveOptions(rtol=1e-6); "
        "assert 'jax' not in sys.modules, 'jax imported'; print(o.to_json())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rtol"] == 1e-6
