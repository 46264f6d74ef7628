"""Sweeps and phase diagrams: batched solver vs the per-cell solver, classification vs
single solves, masking of failures, output folder, replicates, CLI."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import simulate as sim
from simulate._cli._core import main
from simulate._cli._phase import parse_axis
from simulate._sweep import SweepOptions, run_cells


def _ffl_batch(n_hill: float = 2.0):
    models = [
        sim.make_model(sim.ffl_spec(m, g, n=n_hill), "alon")
        for m in sim.MOTIFS
        for g in ("AND", "OR")
    ]
    batch = sim.stack_models(models)
    rng = np.random.default_rng(1)
    vals = {
        k: jnp.asarray(rng.uniform(lo, hi, 16))
        for k, (lo, hi) in {"beta": (0.5, 5), "gamma": (0.3, 3), "kappa": (0.5, 2)}.items()
    }
    return jax.vmap(lambda m, b, g, k: sim.set_params(m, {"beta": b, "gamma": g, "kappa": k}))(
        batch, vals["beta"], vals["gamma"], vals["kappa"]
    )


@pytest.mark.parametrize("n_hill", [2.0, 1.7])
def test_solve_batch_matches_per_cell_solve(n_hill):
    batch = _ffl_batch(n_hill)
    sched = "on@0,off@10"
    fast = sim.solve(
        batch,
        sched,
        t1=20.0,
        options=sim.SolveOptions(n_points=101, rtol=1e-9, atol=1e-11),
        batch="vmap",
    )
    ref = jax.vmap(
        lambda m: sim.solve(
            m, sched, t1=20.0, options=sim.SolveOptions(n_points=101, rtol=1e-9, atol=1e-11)
        )
    )(batch)
    assert np.all(np.asarray(fast.code) == 0)
    np.testing.assert_allclose(fast.states, ref.states, atol=1e-7)
    np.testing.assert_allclose(fast.inputs, ref.inputs, atol=0)


@pytest.mark.slow
def test_solve_batch_float32_close_to_float64():
    batch = _ffl_batch()
    f64 = sim.solve(
        batch, t1=20.0, options=sim.SolveOptions(n_points=101, rtol=1e-8, atol=1e-10), batch="vmap"
    )
    f32 = sim.solve(
        batch,
        t1=20.0,
        options=sim.SolveOptions(n_points=101, rtol=1e-6, atol=1e-8, dtype="float32"),
        batch="vmap",
    )
    assert f32.states.dtype == jnp.float32
    np.testing.assert_allclose(f32.states, f64.states, atol=2e-5)


def test_phase_1d_matches_single_solves():
    x = sim.grid("gamma", 0.2, 5.0, 5, "log")
    res = sim.phase_diagram(
        ["C1", "I1"],
        "AND",
        x,
        params={"beta": 3.0},
        t1=20.0,
        options=sim.SolveOptions(n_points=200),
        boundaries=False,
        progress=False,
    )
    assert res.arrays["regime"].shape == (2, 1, 5)
    for p, motif in enumerate(["C1", "I1"]):
        for i, g in enumerate(x.values):
            m = sim.make_model(motif, "alon", {"beta": 3.0, "gamma": float(g)})
            # the same options as the phase diagram's
            sol = sim.solve(m, "on@0", t1=20.0, options=sim.SolveOptions(n_points=200))
            regime, _ = sim.classify(sol, bounded=False)
            assert res.arrays["regime"][p, 0, i] == int(regime)
            np.testing.assert_allclose(res.arrays["steady"][p, 0, i], sol.states[-1], atol=1e-6)
            st = sim.linear_stability(m, sol.y_final, sol.inputs[-1])
            np.testing.assert_allclose(res.arrays["max_real"][p, 0, i], st.max_real, atol=1e-9)


def test_phase_2d_all_presets_and_output_folder(tmp_path):
    x = sim.grid("beta", 0.5, 10, 4, "log")
    y = sim.grid("K[X->Z]", 0.3, 3, 3)
    res = sim.phase_diagram("all", "both", x, y, progress=False)
    assert len(res.panels) == 16 and res.arrays["regime"].shape == (16, 3, 4)
    np.testing.assert_allclose(res.arrays["prob"].sum(-1), 1.0)
    out = res.save(tmp_path / "ph")
    for f in ("table.parquet", "table.csv", "arrays.npz", "summary.json", "phase.png"):
        assert (out / f).stat().st_size > 0
    df = pd.read_parquet(out / "table.parquet")
    assert len(df) == 16 * 12
    assert {
        "motif",
        "gate",
        "beta",
        "K[X->Z]",
        "regime",
        "p_converged",
        "steady[Z]",
        "max_real",
    } <= set(df.columns)
    csv = pd.read_csv(out / "table.csv")
    np.testing.assert_allclose(csv["beta"], df["beta"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_cells"] == 192 and len(summary["panels"]) == 16
    arrays = np.load(out / "arrays.npz")
    assert arrays["regime"].shape == (16, 3, 4)


def test_diverging_map_cells_are_masked_not_raised():
    # the discrete map diverges for large steps (values past the float range): those cells
    # are data (collapse), not errors, and never an oscillation
    res = sim.phase_diagram(
        "C1",
        "AND",
        sim.grid("eta", 0.1, 4.0, 8),
        params={"gamma": 3.0},
        boundaries=False,
        stability=False,
        progress=False,
    )
    reg = res.arrays["regime"][0, 0]
    assert reg[-1] == int(sim.Regime.COLLAPSE) and reg[0] == int(sim.Regime.CONVERGED)
    assert res.info["failed_cells"] > 0  # the solver's non-finite flag, kept in the table


@pytest.mark.slow
def test_exhausted_step_budget_falls_back_and_masks():
    # an exhausted step budget fails the shared solve: the cell-by-cell fallback masks it
    base = sim.stack_models([sim.make_model("C1", "alon")])
    opts = SweepOptions(t1=20.0, n_points=50, max_steps=3)
    cells = run_cells(
        base,
        ["beta"],
        np.zeros(4, int),
        np.linspace(1, 4, 4)[:, None],
        sim.Schedule.step(),
        opts,
        progress=False,
    )
    assert np.all(cells["code"] == 1) and not np.any(cells["shared_ok"])
    assert np.all(cells["regime"] == int(sim.Regime.FAILED))


@pytest.mark.slow
def test_noise_replicates_give_probabilities():
    res = sim.phase_diagram(
        "C1",
        "AND",
        sim.grid("sigma", 0.0, 0.3, 3),
        kinetics="competence",
        replicates=4,
        t1=20.0,
        options=sim.SolveOptions(n_points=100),
        progress=False,
    )
    assert res.info["method"] == "sde" and res.info["n_cells"] == 12
    prob = res.arrays["prob"][0, 0]
    np.testing.assert_allclose(prob.sum(-1), 1.0)
    assert np.all((prob * 4) == np.round(prob * 4))  # multiples of 1/R
    # sigma = 0: every replicate equals the deterministic Euler solution
    m = sim.make_model("C1", "competence")
    sol = sim.solve(
        m,
        t1=20.0,
        options=sim.SolveOptions(n_points=100),
        method="sde",
        dt=0.01,
        key=jax.random.key(0),
    )
    regime, _ = sim.classify(sol)
    assert prob[0, int(regime)] == 1.0


def test_input_errors_raise_spec_error():
    with pytest.raises(sim.SpecError):
        sim.grid("beta", -1, 2, 5, "log")
    with pytest.raises(sim.SpecError):
        sim.grid("beta", 1, 2, 5, "cubic")
    with pytest.raises(sim.SpecError):
        sim.phase_diagram("C1", "AND", sim.grid("beta", -2, 2, 3), progress=False)
    with pytest.raises(sim.SpecError):
        sim.phase_diagram("C1", "AND", sim.grid("tau", 1, 2, 3), progress=False)
    with pytest.raises(sim.SpecError):
        sim.phase_diagram("C9", "AND", sim.grid("beta", 1, 2, 3), progress=False)
    with pytest.raises(sim.SpecError):
        parse_axis("beta=1:2")


def test_cli_phase_writes_folder(tmp_path, capsys):
    # same grid as test_phase_2d_all_presets_and_output_folder: reuses its compilation
    rc = main(
        [
            "phase",
            "--motif",
            "all",
            "--gate",
            "both",
            "--x",
            "beta=0.5:10:4:log",
            "--y",
            "K[X->Z]=0.3:3:3",
            "--no-progress",
            "--no-cache",
            "--json",
            "--out",
            str(tmp_path / "cli"),
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_cells"] == 16 * 12
    assert (tmp_path / "cli" / "phase.png").exists()
    assert main(["phase", "--x", "beta=1:2", "--out", str(tmp_path / "bad")]) == 2


def test_solve_sharded_matches_solve_batch():
    batch = _ffl_batch()
    sh = sim.solve(
        batch,
        "on@0",
        t1=20.0,
        options=sim.SolveOptions(n_points=51),
        batch=sim.Sharded(chunk_size=8, call_size=8),
    )
    states, codes = sh.states, sh.code
    ref = sim.solve(batch, "on@0", t1=20.0, options=sim.SolveOptions(n_points=51), batch="vmap")
    assert states.shape == (16, 51, 3) and np.all(codes == 0)
    np.testing.assert_allclose(states, ref.states, atol=1e-5)  # different shared steps
