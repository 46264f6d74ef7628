"""calibrate's one solve entry point, ``solve_at(model, ts, solver=..., options=...)``, and
its solver family (Adaptive, RK4, Quad) in diffrax's style."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal
import calibrate._quad as quad
import calibrate._solvers as solvers
import simulate as sim
from calibrate._quad import Quad, QuadGrid
from calibrate._solvers import RK4, AbstractCurveSolver, Adaptive, solve_at

jax.config.update("jax_enable_x64", True)

TS = np.array([0.0, 3.0, 10.0, 25.0, 60.0, 150.0, 290.0])

#: The keywords ``solve_at`` once took besides ``options`` ("kept for compatibility"),
#: the other simulate solve options, and the keywords of the solvers once called on their
#: own (``solver`` is the solver object, as in diffrax; a name such as "tsit5" is
#: ``options.solver``).
COMPAT_KEYWORDS = {
    "rtol",
    "atol",
    "max_steps",
    "forward",
    "n_points",
    "dt0",
    "dtype",
    "adjoint",
    "substeps",
    "grid",
    "scan",
}


def _model() -> sim.Model:
    return sim.make_model("C1", "competence", {"rho[X]": 0.1, "rho[Y]": 0.05, "n": 2.0})


def test_options_is_the_one_way():
    """``solve_at`` takes the model, the steps, a solver object and ``options``: a compat
    keyword coming back, or a second solve function beside it, fails here."""
    params = inspect.signature(solve_at).parameters
    assert list(params) == ["model", "ts", "solver", "options"]
    assert params["solver"].default is None and params["options"].default is None
    assert not set(params) & COMPAT_KEYWORDS
    assert cal.solve_at is solve_at
    for gone in ("solve_rk4", "solve_quad"):
        assert not hasattr(solvers, gone) and not hasattr(quad, gone), gone
    m = _model()
    for kw in ({"rtol": 1e-6}, {"atol": 1e-8}, {"max_steps": 10}, {"forward": True}):
        with pytest.raises(TypeError, match=next(iter(kw))):
            solve_at(m, TS, **kw)  # pyright: ignore[reportCallIssue]
    with pytest.raises(sim.OptionsError, match="options must be a SolveOptions"):
        solve_at(m, TS, options={"rtol": 1e-6})  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="AbstractCurveSolver"):
        solve_at(m, TS, solver="rk4")  # pyright: ignore[reportArgumentType]


def test_the_solver_family_is_abstract_and_final_kinds_validate():
    with pytest.raises(TypeError):
        AbstractCurveSolver()  # pyright: ignore[reportAbstractUsage]
    for kind in (Adaptive, RK4, Quad):
        assert issubclass(kind, AbstractCurveSolver)
    assert RK4(np.int64(3)).substeps == 3
    with pytest.raises(ValueError, match="substeps"):
        RK4(0)
    assert RK4.for_steps(TS, 10.0).substeps == solvers.fixed_substeps(TS, 10.0) == 14
    with pytest.raises(ValueError, match="7 steps"):
        solve_at(_model(), TS[:-1], solver=Quad.for_steps(TS, 5.0))


def test_one_call_three_solvers_agree():
    """Default (adaptive at the default options) = Adaptive(); RK4 and Quad agree with a
    tight adaptive solve to their fixed-grid error."""
    m = _model()
    tight = sim.SolveOptions(rtol=1e-10, atol=1e-12)
    ref, ok = solve_at(m, TS, options=tight)
    assert bool(ok)
    A, _ = solve_at(m, jnp.asarray(TS))
    B, _ = solve_at(m, jnp.asarray(TS), solver=Adaptive(), options=sim.SolveOptions())
    np.testing.assert_array_equal(np.asarray(A), np.asarray(B))
    rk4, ok4 = solve_at(m, jnp.asarray(TS), solver=RK4.for_steps(TS, 1.0), options=tight)
    q, okq = solve_at(m, TS, solver=Quad(QuadGrid.build(TS, 1.0)))
    qs, _ = solve_at(m, TS, solver=Quad.for_steps(TS, 1.0, scan=True))
    assert bool(ok4) and bool(okq)
    np.testing.assert_allclose(np.asarray(rk4), np.asarray(ref), rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(q), np.asarray(ref), rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(qs), np.asarray(q), rtol=0, atol=1e-12)


def test_curve_model_solves_through_the_one_call(monkeypatch):
    """CurveModel.curves builds the configured solver and calls ``solve_at`` once per run."""
    import calibrate._model as model_module

    data = cal.synthetic_curves("C1", {"rho": 0.05}, key=jax.random.key(0), steps=TS[1:])
    seen = []

    def spy(model, ts, *, solver=None, options=None):
        seen.append(type(solver).__name__ if solver is not None else None)
        return solve_at(model, ts, solver=solver, options=options)

    monkeypatch.setattr(model_module, "solve_at", spy)
    for name, kind in (("quad", "Quad"), ("rk4", "RK4"), ("tsit5", None)):
        cm = cal.build_model(data, "C1", cal.FitConfig(solver=name))
        theta = cm.run_params(jnp.zeros(cm.layout.size))
        A, ok = cm.curves(theta)
        assert bool(jnp.all(ok)) and A.shape == (1, TS.size - 1, 3)
        assert seen[-1] == kind, name
