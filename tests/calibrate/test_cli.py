"""``python -m calibrate`` end to end: every solver x chain count, float64 without
JAX_ENABLE_X64, atomic output folders, strict JSON, and one-line errors for bad input."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import numpy as np
import pytest

import calibrate as cal
from calibrate.__main__ import main
from simulate.spec import NetworkSpec

from .test_fit import TRUTH

ROOT = Path(__file__).resolve().parents[2]
STEPS = np.arange(0, 300, 25)
# a few iterations of everything: these tests check that each path runs and what it writes
QUICK = {"map_starts": 1, "map_steps": 20, "max_tree_depth": 3}


def _strict_json(path: Path):
    """Parse ``path`` as strict JSON (a bare NaN or Infinity is an error)."""

    def bad(name):
        raise AssertionError(f"{path.name}: bare {name} is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=bad)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """A tiny C1 dataset (one run, 12 steps) as CSV, and the quick config."""
    d = tmp_path_factory.mktemp("cli")
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(3), steps=STEPS, n_eval=60)
    data.table.to_csv(d / "c1.csv", index=False)
    (d / "quick.json").write_text(json.dumps(QUICK))
    return d


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64", "XLA_FLAGS")}
    env["PYTHONPATH"] = str(ROOT)
    return env


#: Every --solver × --chains the CLI offers ("auto" resolves to "quad" on C1, checked below,
#: so an explicit quad run takes the same path).
ALL_COMBOS = [(s, c) for c in (2, 1) for s in ("auto", "rk4", "tsit5")]


@pytest.mark.slow  # ~100 s quiet (the suite's slowest calibrate test): make test-slow
@pytest.mark.timeout(900)
def test_adaptive_solver_with_two_chains_through_the_cli(inputs, tmp_path):
    """The README's command that crashed (default solver of the time, tsit5, 2 chains); the
    other combinations run in the slow test below."""
    _solver_chain_matrix(inputs, tmp_path, [("tsit5", 2)])


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_solver_and_chain_count_through_the_cli(inputs, tmp_path):
    """Every combination (about 20 min on a loaded 2-core machine: six compiled fits)."""
    _solver_chain_matrix(inputs, tmp_path, ALL_COMBOS)


def _solver_chain_matrix(inputs, tmp_path, combos):
    """`fit --chains 2` with the adaptive solver crashed in the compiled chain program
    (pmap + diffrax's checkpointed adjoint); run each (solver, chains) in one fresh process
    (2 CPU devices, so 2 chains run in parallel where they can), with JAX_ENABLE_X64 unset."""
    driver = textwrap.dedent(
        f"""
        import sys
        from calibrate.__main__ import main
        rcs = []
        for solver, chains in {combos!r}:
            rcs.append(main([
                "fit", {str(inputs / "c1.csv")!r}, "--motif", "C1", "--gate", "AND",
                "--config", {str(inputs / "quick.json")!r}, "--solver", solver,
                "--chains", str(chains), "--warmup", "8", "--samples", "8",
                "--no-progress", "--out", {str(tmp_path)!r} + f"/{{solver}}-{{chains}}",
            ]))
            print("RC", solver, chains, rcs[-1], flush=True)
        sys.exit(max(rcs))
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", driver], env=_env(), capture_output=True, text=True, timeout=1700
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for solver, chains in combos:
        out = tmp_path / f"{solver}-{chains}"
        diag = _strict_json(out / "diagnostics.json")
        cfg = _strict_json(out / "config.json")
        assert diag["chains"] == chains and diag["draws"] == 8
        assert diag["dtype"] == "float64", (solver, chains)
        assert np.load(out / "latent.npz")["z"].dtype == np.float64
        # auto: the feed-forward C1 gets the quadrature solver
        assert cfg["solver"] == ("quad" if solver == "auto" else solver)
        method = "parallel" if chains == 2 and solver != "tsit5" else "vectorized"
        assert diag["chain_method"] == method, (solver, chains, diag["chain_method"])
        assert diag["solver_error"] < 1e-3
        summ = _strict_json(out / "summary.json")
        if chains == 1:  # R-hat is undefined with one chain: null, not a bare NaN
            assert summ["rho[X]"]["r_hat"] is None
        assert {p.name for p in out.iterdir()} >= {"posterior.nc", "predictive.png"}


def test_tsit5_parallel_chains_need_forward_mode():
    with pytest.raises(cal.ConfigError, match="forward_mode"):
        cal.FitConfig(solver="tsit5", chain_method="parallel")
    cal.FitConfig(solver="tsit5", chain_method="parallel", forward_mode=True)
    cal.FitConfig(solver="rk4", chain_method="parallel")


def test_auto_solver_is_quad_on_feed_forward_networks_and_rk4_on_cycles():
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(0), steps=STEPS)
    assert cal.FitConfig().solver == "auto"
    assert cal.build_model(data, "C1").config.solver == "quad"
    assert cal.build_model(data, "C1", cal.FitConfig(solver="tsit5")).config.solver == "tsit5"
    ring = {
        "nodes": ["X", "Y", "Z"],
        "edges": [
            {"source": "X", "target": "Y", "sign": 1},
            {"source": "Y", "target": "Z", "sign": 1},
            {"source": "Z", "target": "X", "sign": -1},
        ],
        "inputs": ["X"],
        "name": "ring",
    }
    spec = NetworkSpec.from_dict(ring)
    assert cal.build_model(data, spec).config.solver == "rk4"


@pytest.fixture(scope="module")
def saved_fit(inputs, tmp_path_factory) -> Path:
    """A quick MAP fit saved by the CLI (1 x 1 draws)."""
    out = tmp_path_factory.mktemp("fit") / "fit"
    quick = ["--config", str(inputs / "quick.json"), "--method", "map", "--no-progress"]
    rc = main(["fit", str(inputs / "c1.csv"), *quick, "--out", str(out)])
    assert rc == 0
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_failed_save_leaves_the_old_folder_whole(saved_fit, tmp_path, monkeypatch):
    """A save that dies after writing some files (here: the figure raises, after the JSON,
    netcdf and npz are written) must leave the previous fit folder as it was."""
    out = tmp_path / "fit"
    import shutil

    shutil.copytree(saved_fit, out)
    before = _snapshot(out)
    post = cal.load_fit(out)
    post.samples = {k: v + 0.01 for k, v in post.samples.items()}  # a different fit

    def boom(*a, **k):
        raise RuntimeError("killed mid-save")

    monkeypatch.setattr("calibrate._fit_plot.plot_predictive", boom)
    with pytest.raises(RuntimeError, match="mid-save"):
        post.save(out)
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["fit"]  # no temporary folder left
    post.save(out, figure=False)  # a whole save replaces the folder as a whole
    assert not (out / "predictive.png").exists()
    np.testing.assert_allclose(np.load(out / "latent.npz")["z"], post.samples["z"])


def test_sigkill_mid_save_leaves_the_old_folder_whole(saved_fit, tmp_path):
    out = tmp_path / "fit"
    import shutil

    shutil.copytree(saved_fit, out)
    before = _snapshot(out)
    driver = textwrap.dedent(
        f"""
        import os, signal
        import jax
        jax.config.update("jax_enable_x64", True)
        import calibrate as cal, calibrate._fit_plot as plots
        post = cal.load_fit({str(out)!r})
        post.samples = {{k: v + 0.01 for k, v in post.samples.items()}}
        plots.plot_predictive = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        post.save({str(out)!r})
        """
    )
    r = subprocess.run([sys.executable, "-c", driver], env=_env(), capture_output=True, timeout=600)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    assert _snapshot(out) == before
    assert cal.load_fit(out).samples["z"].shape == (1, 1, cal.load_fit(out).model.layout.size)


def test_unwritable_out_fails_before_the_work(inputs, tmp_path, monkeypatch, capsys):
    def no_fit(*a, **k):
        raise AssertionError("fit ran although --out cannot be written")

    monkeypatch.setattr("calibrate._fit.fit", no_fit)
    (tmp_path / "afile").write_text("x")
    for out in (tmp_path / "afile", tmp_path / "afile" / "sub"):
        t0 = time.perf_counter()
        rc = main(["fit", str(inputs / "c1.csv"), "--out", str(out)])
        assert rc == 2 and time.perf_counter() - t0 < 5
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: --out") and "afile" in err[0]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_bad_inputs_exit_2_with_one_line(inputs, tmp_path, capsys):
    csv = str(inputs / "c1.csv")
    # a CSV without any row of one agent: not fitted from its priors in silence
    import pandas as pd

    t = pd.read_csv(csv)
    t[t.agent != "Z"].to_csv(tmp_path / "noZ.csv", index=False)
    assert main(["fit", str(tmp_path / "noZ.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "no data for node(s) ['Z']" in _one_line_error(capsys)
    # a network spec file that is not UTF-8
    (tmp_path / "net.json").write_bytes(b'{"nodes": ["X\xff"]}')
    assert main(["fit", csv, "--network", str(tmp_path / "net.json")]) == 2
    assert "not UTF-8" in _one_line_error(capsys)
    # --hierarchy: missing, not UTF-8, not JSON, not an object, unknown field
    hier = tmp_path / "h.json"
    for content, says in (
        (None, "does not exist"),
        (b"\xff\xfe", "not UTF-8"),
        (b"{links: }", "not JSON"),
        (b"[1]", "JSON object"),
        (b'{"random_effects": ["rho"], "extra": 1}', "extra"),
        (b'{"links": [{"param": "rho", "covariate": "lr", "bad": 1}]}', "bad"),
    ):
        if content is not None:
            hier.write_bytes(content)
        assert main(["fit", csv, "--hierarchy", str(hier), "--out", str(tmp_path / "o")]) == 2
        assert says in _one_line_error(capsys), says
    # a non-UTF-8 --config
    (tmp_path / "c.json").write_bytes(b"\xff")
    assert main(["fit", csv, "--config", str(tmp_path / "c.json")]) == 2
    assert "not UTF-8" in _one_line_error(capsys)
    assert main(["fit", csv, "--tb-tag", "X", "--out", str(tmp_path / "o")]) == 2
    assert "--tb-tag" in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_out_with_other_files_is_refused_before_the_work(inputs, tmp_path, capsys, monkeypatch):
    """Saving replaces --out as a whole, so a folder calibrate did not write is refused."""

    def no_fit(*a, **k):
        raise AssertionError("fit ran although --out would lose files")

    monkeypatch.setattr("calibrate._fit.fit", no_fit)
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["fit", str(inputs / "c1.csv"), "--out", str(tmp_path)]) == 2
    assert "other files" in _one_line_error(capsys)
    assert (tmp_path / "notes.txt").read_text() == "mine"
