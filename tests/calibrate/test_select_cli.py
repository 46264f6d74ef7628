"""Motif selection by PSIS-LOO and the command line."""

import json

import jax
import numpy as np
import pytest

import calibrate as cal

TRUTH = {"rho": 0.05, "delta": 0.002, "b": 0.05, "A0": 0.05, "K": 0.3, "n": 2.0}
# slow Y and a high Y->Z threshold: C1 shows a delayed Z, I1 a pulse, C4 a slowed Y
SEL_TRUTH = {
    "rho[X]": 0.05,
    "rho[Y]": 0.015,
    "rho[Z]": 0.08,
    "delta": 0.002,
    "b": 0.02,
    "A0": 0.05,
    "K": 0.5,
    "n": 2.0,
}
STEPS = np.arange(0, 300, 10)


@pytest.mark.slow
@pytest.mark.parametrize("motif", ["C1", "I1", "C4"])
def test_selection_picks_generating_motif(motif, tmp_path):
    data = cal.synthetic_curves(
        f"{motif}-AND", SEL_TRUTH, key=jax.random.key(11), steps=STEPS, runs=2
    )
    cands = cal.candidates(["C1", "I1", "C4"], ["AND"])
    cfg = cal.FitConfig(method="laplace", chains=2, samples=250, map_starts=3)
    sel = cal.select(data, cands, cfg, key=jax.random.key(0))
    print(
        motif, [(r["motif"], round(r["elpd_loo"], 1), round(r["weight"], 2)) for r in sel.ranking]
    )
    assert sel.best["motif"] == motif
    assert sel.best["weight"] > 0.5
    sel.save(tmp_path)
    saved = json.loads((tmp_path / "selection.json").read_text())
    ranking = saved["ranking"]
    assert ranking[0]["motif"] == motif and {"elpd_loo", "se", "weight"} <= set(ranking[0])
    assert saved["best"] == f"{motif}-AND" and f"{motif}-AND" in saved["indistinguishable"]
    assert (tmp_path / "selection.png").exists()


@pytest.mark.slow  # ~75 s quiet (three fits): make test-slow
def test_cli_fit_and_errors(tmp_path, capsys):
    from calibrate.__main__ import main

    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(0), steps=STEPS)
    t = data.table.copy()
    t["agent"] = t["agent"].map({"X": "solver", "Y": "refiner", "Z": "critic"})
    t.to_csv(tmp_path / "d.csv", index=False)
    rc = main(
        [
            "fit",
            str(tmp_path / "d.csv"),
            "--motif",
            "C1",
            "--gate",
            "AND",
            "--agents",
            "solver,refiner,critic",
            "--method",
            "laplace",
            "--chains",
            "1",
            "--samples",
            "200",
            "--out",
            str(tmp_path / "fit"),
            "--no-progress",
        ]
    )
    assert rc == 0
    s = json.loads((tmp_path / "fit" / "summary.json").read_text())
    assert "K[solver->refiner]" in s and "rho[critic]" in s
    assert "rho[solver]" in capsys.readouterr().out
    rc = main(["fit", str(tmp_path / "d.csv"), "--motif", "C1", "--out", str(tmp_path / "f2")])
    assert rc == 2  # agents do not match X, Y, Z
    assert "not nodes of network" in capsys.readouterr().err
    for solver, dt in (("rk4", 2.0), ("quad", 5.0)):
        out = tmp_path / solver
        args = ["--agents", "solver,refiner,critic", "--method", "map", "--solver", solver]
        rc = main(["fit", str(tmp_path / "d.csv"), *args, "--dt", str(dt), "--out", str(out)])
        assert rc == 0
        cfg = json.loads((out / "config.json").read_text())
        assert cfg["solver"] == solver and cfg["dt"] == dt
        assert json.loads((out / "diagnostics.json").read_text())["solver_error"] < 1e-3
    assert main(["fit", str(tmp_path / "d.csv"), "--dt", "-1", "--out", str(tmp_path / "x")]) == 2
    t.loc[0, "competence"] = 2.0
    t.to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "f3")]) == 2


def test_import_is_torch_free():
    import subprocess
    import sys

    code = "import calibrate, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_cli_runs_nuts_chains_in_parallel(tmp_path):
    """`fit` exposes one CPU device per chain before JAX starts, so NUTS chains run in
    parallel (a fresh process: the test process's JAX has one device and stays vectorised)."""
    import subprocess
    import sys

    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(0), steps=STEPS[::2])
    data.table.to_csv(tmp_path / "d.csv", index=False)
    cfg = cal.FitConfig(max_tree_depth=3, map_starts=1, map_steps=50, solver="quad", dt=5.0)
    (tmp_path / "cfg.json").write_text(json.dumps(cfg.to_dict()))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "calibrate",
            "fit",
            str(tmp_path / "d.csv"),
            "--config",
            str(tmp_path / "cfg.json"),
            "--chains",
            "2",
            "--samples",
            "20",
            "--warmup",
            "20",
            "--out",
            str(tmp_path / "fit"),
            "--no-progress",
        ],
        check=True,
        capture_output=True,
    )
    diag = json.loads((tmp_path / "fit" / "diagnostics.json").read_text())
    assert diag["chain_method"] == "parallel" and diag["chains"] == 2
    assert cal.FitConfig().chain_method == "auto"
    from calibrate._fit import chain_method

    assert chain_method(cal.FitConfig(chains=2)) == "vectorized"  # one device here
    assert chain_method(cal.FitConfig(chains=1)) == "vectorized"
    assert chain_method(cal.FitConfig(chain_method="sequential")) == "sequential"
    with pytest.raises(cal.ConfigError, match="chain_method"):
        cal.FitConfig(chain_method="threads")


def test_cli_selection_reports_set_identified_signs_and_kfold(tmp_path, capsys):
    """`fit --motif A,B,...`: a progress bar across the candidates, the indistinguishable
    set and identified signs on the console and in selection.json, a console warning for a
    Pareto k > 0.7 and that candidate's elpd from exact K-fold CV; the saved fits keep
    their own names (the fits share one compiled program)."""
    from calibrate.__main__ import main

    truth = {**SEL_TRUTH, "rho[X]": 0.03, "rho[Y]": 0.04, "rho[Z]": 0.05, "b": 0.05, "n": 3.0}
    data = cal.synthetic_curves(
        "C1-AND", truth, key=jax.random.key(2), steps=np.arange(0, 300, 50), runs=1, n_eval=20
    )
    data.table.to_csv(tmp_path / "d.csv", index=False)
    cfg = cal.FitConfig(chains=1, samples=300, map_starts=2, map_steps=150, dt=5.0)
    (tmp_path / "cfg.json").write_text(json.dumps(cfg.to_dict()))
    out = tmp_path / "sel"
    args = ["--motif", "C1,I3,I4", "--gate", "AND", "--method", "laplace"]
    args += ["--config", str(tmp_path / "cfg.json"), "--chains", "1", "--samples", "300"]
    rc = main(["fit", str(tmp_path / "d.csv"), *args, "--dt", "5", "--out", str(out)])
    assert rc == 0
    cap = capsys.readouterr()
    saved = json.loads((out / "selection.json").read_text())
    rows = {r["label"]: r for r in saved["ranking"]}
    high = [lb for lb, r in rows.items() if r["pareto_k_max"] > 0.7]
    assert high, "this data set has a high Pareto k (I4-AND: 0.83 when written)"
    for lb in high:
        assert rows[lb]["elpd_method"] == "kfold" and rows[lb]["elpd"] == rows[lb]["elpd_kfold"]
        assert f"WARNING: {lb}: Pareto k up to" in cap.err and "5-fold CV" in cap.err
    assert "motif selection" in cap.err  # the progress bar
    assert "C1-AND" in saved["indistinguishable"] and len(saved["indistinguishable"]) >= 2
    assert "* indistinguishable" in cap.out and "identified by the data:" in cap.out
    assert set(saved["identified"]) == {"X->Y", "X->Z", "Y->Z", "gate"}
    for lb in rows:
        net = json.loads((out / "fits" / lb / "network.json").read_text())
        assert net["name"] == lb
        # --figures best (default): figures for the indistinguishable set only
        png = (out / "fits" / lb / "predictive.png").is_file()
        assert png == (lb in saved["indistinguishable"])
    assert (out / "fits" / "C1-AND" / "predictive.png").is_file()
    # a timing line per phase, wall and CPU time
    assert "selection: 3 fits (then K-fold CV of " in cap.out and " s CPU, " in cap.out
    n_set = len(saved["indistinguishable"])
    assert f"saving: 3 fits ({n_set} complete, with figures) in " in cap.out
    assert saved["timing_s"]["save_s"] > 0 and saved["timing_s"]["cpu_s"] > 0
