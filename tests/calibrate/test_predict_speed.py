"""The compiled, sharded ``calibrate.predict`` (issue 18 §5) against the implementation it
replaced, the quad solver's scan recurrence against its segment sums, and ``bands=False``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal
import simulate
from calibrate._predict._core import (
    BAND_LEVELS,
    _draw_arrays,
    _draw_index,
    _setting_matrix,
    curve_regimes,
    predict_arrays,
)
from calibrate._quad import Quad, QuadGrid
from calibrate._solvers import fixed_substeps

LRS = [1e-4, 3e-4, 1e-3]
SETTINGS = [{"rl.lr": v} for v in (2e-5, 1e-4, 5.5e-4, 3e-3, 2e-2)]


@pytest.fixture(scope="module")
def fit(lr_family_fit):
    """The session's shared laplace fit of the 3-lr family (tests/calibrate/conftest.py)."""
    return lr_family_fit


def _previous_implementation(post, settings, draws, t):
    """``calibrate.predict``'s core before the speed work, verbatim in substance: an eager
    ``lax.map`` of 4 settings per step over ``CurveModel.curves`` (quad by segment sums)."""
    cm = post.model
    x = jnp.asarray(_setting_matrix(post, settings))
    u, slopes = (jnp.asarray(a) for a in _draw_arrays(post, _draw_index(post, draws, None)))
    tj, idx = jnp.asarray(t), jnp.asarray(cm.link_index)

    def one_setting(xs):
        A, ok = cm.curves(
            cm.layout.to_natural(u.at[:, idx].add(slopes * xs)),
            t,
            fixed_substeps(t, cm.config.dt),
        )
        ok = jnp.broadcast_to(ok, A.shape[:1])
        codes = jax.vmap(lambda s, o: curve_regimes(tj, s, o, cm.network.names))(A, ok)
        return {
            "mean": A.mean(axis=0),
            "bands": jnp.quantile(A, jnp.asarray(BAND_LEVELS), axis=0),
            "final": A[:, -1, :],
            "codes": codes.astype(jnp.int8),
        }

    return {k: np.asarray(v) for k, v in jax.lax.map(one_setting, x, batch_size=4).items()}


def test_matches_the_previous_implementation(fit):
    """Same draws, same steps: regime codes identical, finals, means and bands to 1e-12
    (the issue's bound is 1e-6); over a range of lr that reaches slow and fast learning."""
    post, _ = fit
    pred = cal.predict(post, SETTINGS, max_draws=32, n_points=60)
    old = _previous_implementation(post, SETTINGS, 32, pred.t)
    np.testing.assert_array_equal(pred.codes, old["codes"])
    assert pred.mean is not None and pred.bands is not None
    for name, new in (("final", pred.final), ("mean", pred.mean), ("bands", pred.bands)):
        np.testing.assert_allclose(new, old[name], rtol=0, atol=1e-12, err_msg=name)
    # the lr range covers more than one regime of this fit's draws (not a vacuous check)
    assert len(np.unique(pred.codes)) >= 2, np.unique(pred.codes)


def test_bands_false_keeps_finals_and_regimes_and_leaves_curves_out(fit, tmp_path):
    post, _ = fit
    full = cal.predict(post, SETTINGS[:2], max_draws=16, n_points=40)
    lean = cal.predict(post, SETTINGS[:2], max_draws=16, n_points=40, bands=False)
    assert lean.mean is None and lean.bands is None
    np.testing.assert_array_equal(lean.codes, full.codes)
    np.testing.assert_allclose(lean.final, full.final, rtol=0, atol=1e-14)
    d = lean.to_dict()
    z = d["predictions"][1]["agents"]["Z"]
    assert (
        "curve" not in z and z["final"] == full.to_dict()["predictions"][1]["agents"]["Z"]["final"]
    )
    json.dumps(d, allow_nan=False)
    assert lean.table() == full.table()
    with pytest.raises(cal.ConfigError, match="no bands to plot"):
        cal.plot_prediction(lean, tmp_path / "p.png")


def test_float32_is_an_explicit_option_close_to_float64(fit):
    post, _ = fit
    f64 = cal.predict(post, SETTINGS, max_draws=16, n_points=40, bands=False)
    f32 = cal.predict(post, SETTINGS, max_draws=16, n_points=40, bands=False, dtype="float32")
    assert f64.final.dtype == np.float64 and f32.final.dtype == np.float32
    np.testing.assert_allclose(f32.final, f64.final, rtol=0, atol=2e-5)
    assert np.mean(f32.codes == f64.codes) >= 0.95
    assert jax.config.jax_enable_x64  # switched back on after the float32 program
    with pytest.raises(cal.ConfigError, match="dtype must be"):
        cal.predict(post, SETTINGS[:1], max_draws=4, n_points=40, dtype="float16")


def test_chunking_does_not_change_results(fit):
    """One setting per ``lax.map`` step, or all at once: the same numbers."""
    post, _ = fit
    cm = post.model
    x = _setting_matrix(post, SETTINGS)
    u, slopes = _draw_arrays(post, _draw_index(post, 8, None))
    t = np.linspace(0.0, 290.0, 30)
    a = predict_arrays(cm, u, slopes, x, t, batch=1)
    b = predict_arrays(cm, u, slopes, x, t, batch=len(SETTINGS))
    assert a.keys() == b.keys() == {"final", "codes", "mean", "bands"}
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=1e-14, err_msg=k)


@pytest.mark.parametrize(
    ("rho", "points", "horizon"),
    [
        (1.0, 60, 290.0),  # the benchmark's rates
        (400.0, 40, 290.0),  # stiff: cells clipped at exp(-25)
        (1.0, 900, 2000.0),  # > 32 segments: the segment sums join by a parallel prefix
    ],
)
def test_quad_scan_recurrence_equals_segment_sums(rho, points, horizon):
    model = simulate.with_log_hill(simulate.make_model(simulate.as_network("I1"), "competence"))
    for node in "XYZ":
        model = simulate.set_param(model, f"rho[{node}]", 0.05 * rho)
    ts = np.linspace(0.0, horizon, points)
    grid = QuadGrid.build(ts, 1.0)
    seg, ok1 = cal.solve_at(model, ts, solver=Quad(grid))
    scan, ok2 = cal.solve_at(model, ts, solver=Quad(grid, scan=True))
    assert bool(ok1) and bool(ok2)
    np.testing.assert_allclose(np.asarray(scan), np.asarray(seg), rtol=0, atol=1e-12)
    assert float(jnp.ptp(seg[:, 2])) > 0.1  # the curves move


def test_sharded_over_two_cpu_devices_matches_one_device(fit):
    """With two CPU devices the settings are split over them (an odd count is padded):
    the same numbers as one device. A fresh process, since the device count is fixed
    before JAX starts."""
    _, folder = fit
    script = textwrap.dedent(
        f"""
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_num_cpu_devices", 2)
        import numpy as np
        import calibrate as cal
        from calibrate._posterior import load_fit
        assert len(jax.devices()) == 2
        post = load_fit({str(folder)!r})
        s = {SETTINGS[:3]!r}
        a = cal.predict(post, s, max_draws=16, n_points=40)
        from calibrate._predict import _core as _predict
        orig = _predict.predict_batch
        _predict.predict_batch = lambda *p, **k: orig(*p, **(k | dict(shard=False)))
        b = cal.predict(post, s, max_draws=16, n_points=40)
        assert a.codes.shape == (3, 16, 3)
        np.testing.assert_array_equal(a.codes, b.codes)
        for x, y in ((a.final, b.final), (a.bands, b.bands), (a.mean, b.mean)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-14)
        print("ok")
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def _batched(models):
    """``B`` models as one whose array leaves have a trailing axis of ``B``."""
    arrays = [eqx.filter(m, eqx.is_array) for m in models]
    stacked = jax.tree.map(lambda *a: jnp.stack(a, axis=-1), *arrays)
    return eqx.combine(stacked, eqx.filter(models[0], eqx.is_array, inverse=True))


@pytest.mark.parametrize("kind", ["C1-AND", "I1-OR", "weights", "pipeline", "flip"])
def test_quad_batch_last_equals_one_solve_each(kind):
    """``Quad(batch=True)`` on B models with random parameters: each one's levels as
    solved alone (to rounding), as ``(T, N, B)``; a solve with a NaN rate fails alone."""
    rng = np.random.default_rng(7)
    preset = "I1-OR" if kind == "I1-OR" else "C1-AND"
    base = simulate.make_model(preset, "competence")
    if kind == "pipeline":
        base = simulate.with_pipeline(base, "X->Y,Y->Z")
    models = []
    for _ in range(6):
        m = base
        for node in "XYZ":
            m = simulate.set_param(m, f"rho[{node}]", float(np.exp(rng.uniform(-6, -1.5))))
            m = simulate.set_param(m, f"A0[{node}]", float(rng.uniform(0.01, 0.3)))
            m = simulate.set_param(m, f"delta[{node}]", float(np.exp(rng.uniform(-9, -4))))
        for e in m.network.edge_keys:
            m = simulate.set_param(m, f"K[{e}]", float(rng.uniform(0.2, 0.8)))
            m = simulate.set_param(m, f"n[{e}]", float(rng.uniform(1.0, 4.0)))
        if kind == "weights":
            m = simulate.with_edge_weights(m, rng.uniform(0.2, 1.0, 3))
        models.append(simulate.with_log_hill(m, fixed_structure=True))
    last = models[-1].kinetics.rho
    models[-1] = eqx.tree_at(lambda m: m.kinetics.rho, models[-1], last.at[1].set(jnp.nan))
    ts = np.linspace(0.0, 200.0, 41)
    grid = QuadGrid.build(ts, 2.0)
    flip = None
    if kind == "flip":
        flip = jnp.asarray(rng.uniform(0.0, 1.0, (3, grid.h.shape[0])))
    one = Quad(grid, scan=True, flip=flip, flip_rate=0.3)
    batch = Quad(grid, scan=True, batch=True, flip=flip, flip_rate=0.3)
    A, ok = jax.jit(lambda m: batch.solve(m, ts, simulate.SolveOptions()))(_batched(models))
    assert A.shape == (ts.size, 3, len(models)) and ok.shape == (len(models),)
    for b, m in enumerate(models):
        a1, ok1 = cal.solve_at(m, ts, solver=one)
        assert bool(ok[b]) == bool(ok1)
        np.testing.assert_allclose(np.asarray(A[..., b]), np.asarray(a1), rtol=0, atol=1e-13)
    assert not bool(ok[-1]) and bool(np.all(ok[:-1]))
    assert float(jnp.max(jnp.ptp(A[:, 2, :-1], axis=0))) > 0.1  # the curves move
    with pytest.raises(ValueError, match="sign structure fixed"):
        batch.solve(_batched([base, base]), ts, simulate.SolveOptions())
