"""Edges that read each run's logged training competence (``calibrate fit --regulators
logged``, issue 29 §4): the quad solve against scipy's ``solve_ivp`` of the same ODE with the
logged series interpolated, K and n read from the runs' configs (not fitted), run folders
carrying their ``ema``, the refusals, and the wiring read back from a synthetic weight family."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy.integrate import solve_ivp

import calibrate as cal
import simulate
from calibrate.__main__ import main
from calibrate._regulators import grid_regulators, run_regulators

P = {
    "rho[X]": 0.05, "rho[Y]": 0.08, "rho[Z]": 0.07, "b[Y]": 0.2, "b[Z]": 0.15,
    "delta[X]": 0.002, "delta[Y]": 0.004, "delta[Z]": 0.003,
    "A0[X]": 0.05, "A0[Y]": 0.04, "A0[Z]": 0.06,
}  # fmt: skip
K, N_HILL = 0.5, 4.0
STEPS = np.arange(0.0, 201.0, 10.0)
WEIGHTS = (0.0, 0.45, 0.9)


def _ema(t, node: str, run: int) -> np.ndarray:
    """A made-up logged training competence: a logistic rise, later in later runs."""
    lo, hi, mid = {"X": (0.3, 0.9, 30.0), "Y": (0.45, 0.8, 80.0), "Z": (0.45, 0.75, 100.0)}[node]
    return lo + (hi - lo) / (1 + np.exp(-(t - mid - 15 * run) / 12))


def _data(motif: str = "C2", gate: str = "AND", key: int = 0, **net) -> cal.CurveData:
    nets = [{"motif": motif, "gate": gate, "default_weight": w, "K": K, "n": N_HILL, **net}
            for w in WEIGHTS]  # fmt: skip
    data = cal.synthetic_curves(
        f"{motif}-{gate}", {**P, "K": K, "n": N_HILL}, key=jax.random.key(key), steps=STEPS,
        runs=len(nets), network_configs=nets, n_eval=64,
    )  # fmt: skip
    regs = {
        run: pd.DataFrame(
            [
                {"step": int(s), "agent": a, "ema": float(_ema(s, a, r)) if s > 0 else 0.0}
                for s in STEPS
                for a in "XYZ"
            ]
        )
        for r, run in enumerate(data.runs)
    }
    return dataclasses.replace(data, regulators=regs)


def _theta(cm: cal.CurveModel) -> jax.Array:
    return jnp.asarray(np.tile([P[nm] for nm in cm.layout.names], (cm.n_runs, 1)), dtype=float)


PIPE = {"Kp[X->Y]": 0.55, "m[X->Y]": 3.0, "Kp[Y->Z]": 0.6, "m[Y->Z]": 2.0}


def _oracle(motif: str, gate: str, run: int, w: float, gates: str | None = None) -> np.ndarray:
    """``solve_ivp`` of llm_runs' coupled kinetics with the logged series (linear between
    the logged steps, the first value before them) in the Hill terms, at ``STEPS``; with
    ``gates`` the pipeline gates X -> Y and Y -> Z (``PIPE``) on the learning rate, reading
    the solved levels (``levels``) or the logged series (``logged``)."""
    spec = simulate.ffl_spec(motif, gate)
    sign = {f"{e.source}->{e.target}": e.sign for e in spec.edges}

    def logged(t, a):
        return np.interp(t, STEPS[1:], _ema(STEPS[1:], a, run))

    def u(t, a):
        return (logged(t, a) / K) ** N_HILL

    def term(t, src, dst):
        x = u(t, src)
        return x / (1 + x) if sign[f"{src}->{dst}"] > 0 else 1 / (1 + x)

    def f(t, A):
        if gate == "AND":
            gz = term(t, "X", "Z") * term(t, "Y", "Z")
        else:  # both activating (C1): Alon's competitive OR of the two occupancies
            ux, uy = u(t, "X"), u(t, "Y")
            gz = (ux + uy) / (1 + ux + uy)
        out = []
        for k, (node, g, ww) in enumerate(
            (("X", 1.0, 0.0), ("Y", term(t, "X", "Y"), w), ("Z", gz, w))
        ):
            gate_k = 1.0
            if gates is not None and node != "X":
                src = "XY"[k - 1]
                x = logged(t, src) if gates == "logged" else A[k - 1]
                kp, m = PIPE[f"Kp[{src}->{node}]"], PIPE[f"m[{src}->{node}]"]
                gate_k = x**m / (kp**m + x**m)
            drift = gate_k * P[f"rho[{node}]"] * (1 - A[k]) - P[f"delta[{node}]"] * A[k]
            out.append((1 - ww + ww * g) * drift)
        return out

    a0 = [P["A0[X]"], P["A0[Y]"], P["A0[Z]"]]
    return solve_ivp(
        f, (0, STEPS[-1]), a0, t_eval=STEPS, rtol=1e-10, atol=1e-12, method="LSODA", max_step=1.0
    ).y.T


@pytest.mark.parametrize(("motif", "gate"), [("C2", "AND"), ("I1", "AND"), ("C1", "OR")])
def test_the_quad_solve_reads_each_run_s_logged_regulators(motif, gate):
    data = _data(motif, gate)
    cfg = cal.FitConfig(method="laplace", edge_weights=True, regulators="logged")
    cm = cal.build_model(data, f"{motif}-{gate}", cfg)
    # K and n are the runs' own (read from their configs), not free parameters
    assert not any(nm.startswith(("K[", "n[")) for nm in cm.layout.names)
    assert not cm.pooled
    A, ok = cm.curves(_theta(cm))
    assert bool(jnp.all(ok))
    # the data's grid reads the regulators computed once; any other grid interpolates anew
    B, _ = cm.curves(_theta(cm), np.asarray(cm.ts))
    np.testing.assert_allclose(np.asarray(B), np.asarray(A), atol=1e-12, rtol=0)
    refs = np.stack([_oracle(motif, gate, r, w) for r, w in enumerate(WEIGHTS)])
    assert np.max(np.abs(refs[0] - refs[2])) > 0.05  # the weights (and regulators) matter
    np.testing.assert_allclose(np.asarray(A), refs, atol=2e-4, rtol=0)


@pytest.mark.parametrize("regulators", ["logged", "logged-gates"])
def test_pipeline_gates_read_the_levels_or_the_logged_series(regulators):
    data = _data("I1")
    cfg = cal.FitConfig(method="laplace", edge_weights=True, regulators=regulators,
                        pipeline="X->Y,Y->Z")  # fmt: skip
    assert cfg.logged_regulators
    cm = cal.build_model(data, "I1-AND", cfg)
    vals = {**P, **PIPE}
    theta = jnp.asarray(np.tile([vals[nm] for nm in cm.layout.names], (cm.n_runs, 1)))
    A, ok = cm.curves(theta)
    assert bool(jnp.all(ok))
    how = "logged" if regulators == "logged-gates" else "levels"
    refs = np.stack([_oracle("I1", "AND", r, w, gates=how) for r, w in enumerate(WEIGHTS)])
    other = np.stack([_oracle("I1", "AND", r, w, gates={"logged": "levels"}.get(how, "logged"))
                      for r, w in enumerate(WEIGHTS)])  # fmt: skip
    assert np.max(np.abs(refs - other)) > 0.02  # what the gates read matters
    np.testing.assert_allclose(np.asarray(A), refs, atol=2e-4, rtol=0)


def test_the_runs_thresholds_are_used_and_the_default_is_unchanged():
    data = _data("C2")
    cfg = cal.FitConfig(method="laplace", edge_weights=True, regulators="logged")
    cm = cal.build_model(data, "C2-AND", cfg)
    A, _ = cm.curves(_theta(cm))
    other = _data("C2", K=0.7)
    cm = cal.build_model(other, "C2-AND", cfg)
    B, _ = cm.curves(_theta(cm))
    assert np.max(np.abs(np.asarray(A) - np.asarray(B))) > 0.01
    plain = cal.build_model(data, "C2-AND", cal.FitConfig(method="laplace", edge_weights=True))
    assert plain.reg_values is None and "K[X->Y]" in plain.layout.names


def test_grid_regulators_interpolate_with_slopes():
    steps = np.array([10.0, 20.0, 40.0])
    vals = np.array([[0.2, 0.4, 0.8]])
    lv, sl = grid_regulators(steps, vals, np.array([0.0, 5.0, 15.0, 20.0, 30.0, 50.0]))
    np.testing.assert_allclose(lv[0], [0.2, 0.2, 0.3, 0.4, 0.6, 0.8], atol=1e-12)
    np.testing.assert_allclose(sl[0], [0.0, 0.0, 0.02, 0.02, 0.02, 0.0], atol=1e-9)


def test_a_fit_with_logged_regulators_refuses_a_new_run(tmp_path, capsys):
    from calibrate._predict._fast import compiled_model

    data = _data("C2")
    cm = cal.build_model(data, "C2-AND", cal.FitConfig(method="laplace", regulators="logged"))
    with pytest.raises(cal.ConfigError, match="cannot forecast a new run"):
        cm.curves(_theta(cm)[:1])
    with pytest.raises(cal.ConfigError, match="cannot forecast a new run"):  # every forecast
        compiled_model(cm, "float64")
    plain = cal.build_model(data, "C2-AND", cal.FitConfig(method="laplace"))
    assert compiled_model(plain, "float64")[0].reg_values is None
    # a saved fit of it is refused by predict with one error line, before anything is read
    fit = tmp_path / "fit"
    fit.mkdir()
    (fit / "config.json").write_text(json.dumps(cal.FitConfig(regulators="logged").to_dict()))
    for name in ("network.json", "data.parquet", "latent.npz"):
        (fit / name).write_text("")
    code = main(["predict", str(fit), "--set", "rl.lr=1e-3", "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "fitted with --regulators logged" in err[0]


def test_config_round_trip_and_refusals():
    cfg = cal.FitConfig(method="laplace", regulators="logged")
    assert cal.FitConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cal.FitConfig().regulators == "model"
    with pytest.raises(cal.ConfigError, match="regulators must be"):
        cal.FitConfig(regulators="ema")
    with pytest.raises(cal.ConfigError, match="need solver 'quad'"):
        cal.FitConfig(regulators="logged", solver="rk4")
    gates = cal.FitConfig(method="laplace", regulators="logged-gates", pipeline="X->Y")
    assert cal.FitConfig.from_dict(json.loads(json.dumps(gates.to_dict()))) == gates
    assert gates.logged_regulators and not cal.FitConfig().logged_regulators
    with pytest.raises(cal.ConfigError, match="need solver 'quad'"):
        cal.FitConfig(regulators="logged-gates", pipeline="X->Y", dynamics="map")
    with pytest.raises(cal.ConfigError, match="need pipeline gates"):
        cal.FitConfig(regulators="logged-gates")


def test_runs_without_logged_regulators_or_with_different_thresholds_are_refused():
    data = _data("C2")
    with pytest.raises(cal.DataError, match="no logged training competence"):
        run_regulators(dataclasses.replace(data, regulators={}), ("X", "Y", "Z"))
    mixed = dict(data.configs)
    first = data.runs[0]
    mixed[first] = {**mixed[first], "network": {**mixed[first]["network"], "K": 0.7}}
    with pytest.raises(cal.DataError, match="different edge thresholds"):
        run_regulators(dataclasses.replace(data, configs=mixed), ("X", "Y", "Z"))


def _run_folder(tmp_path, ema: bool) -> str:
    d = tmp_path / ("with" if ema else "without")
    d.mkdir()
    cfg = {"network": {"motif": "C1", "gate": "AND"}, "task": {"name": "math"}}
    manifest = {"schema": "agentmotifs.runlog", "schema_version": 1, "run": d.name, "seed": 0,
                "agents": ["X", "Y", "Z"], "spec": {"nodes": ["X", "Y", "Z"], "edges": []},
                "config": cfg}  # fmt: skip
    (d / "manifest.json").write_text(json.dumps(manifest))
    rows = [
        {
            "kind": "agent",
            "step": s,
            "agent": a,
            "competence": 0.3 + 0.002 * s,
            "n_eval": 64,
            **({"ema": 0.25 + 0.003 * s} if ema else {}),
        }
        for s in range(0, 101, 10)
        for a in "XYZ"
    ]
    (d / "competence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(d)


def test_run_folders_carry_their_ema(tmp_path):
    data = cal.load_inputs(_run_folder(tmp_path, ema=True))
    steps, values, hill = run_regulators(data, ("X", "Y", "Z"))
    np.testing.assert_allclose(steps, np.arange(10.0, 101.0, 10.0))
    np.testing.assert_allclose(values[0, 1], 0.25 + 0.003 * steps)
    assert hill == (0.5, 4.0)  # llm_runs' defaults


def test_dse_blocks_without_a_selection_exits_2(tmp_path, capsys):
    path = _run_folder(tmp_path, ema=True)
    code = main(["fit", path, "--motif", "C1", "--dse-blocks", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--dse-blocks needs a selection" in err[0]
    assert not (tmp_path / "f").exists()


def test_the_command_line_refuses_runs_without_ema(tmp_path, capsys):
    path = _run_folder(tmp_path, ema=False)
    code = main(["fit", path, "--motif", "C1", "--method", "laplace", "--regulators", "logged",
                 "--out", str(tmp_path / "fit")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error:")
    assert "no logged training competence" in err[0]


@pytest.mark.slow  # ~60 s quiet: 16 Laplace fits
def test_a_weight_family_reads_the_wiring_back_through_logged_regulators():
    """Three C2-AND runs (weights 0, 0.45, 0.9) whose edges read logged regulators: the
    selection over the 8 AND types with ``regulators="logged"`` keeps C2 first or
    indistinguishable, identifies no wrong sign and at least two signs."""
    data = _data("C2", key=3)
    truth = {f"{e.source}->{e.target}": "+" if e.sign > 0 else "-"
             for e in simulate.ffl_spec("C2", "AND").edges}  # fmt: skip
    cfg = cal.FitConfig(method="laplace", chains=1, samples=300, map_starts=2, map_steps=150,
                        dt=5.0, edge_weights=True, regulators="logged")  # fmt: skip
    s = cal.select(data, cal.candidates("auto", ["AND"]), cfg, key=jax.random.key(0), kfold=0)
    print("\n".join(s.report()))
    assert s.best["label"] == "C2-AND" or "C2-AND" in s.indistinguishable
    known = {e: v for e, v in s.identified.items() if e in truth and v is not None}
    assert known == {e: truth[e] for e in known}
    assert len(known) >= 2
    # the se of the differences by run and agent: the same fits, a wider or equal set
    b = cal.select(data, cal.candidates("auto", ["AND"]), cfg, key=jax.random.key(0), kfold=0,
                   blocks=True)  # fmt: skip
    assert b.blocks and "per run and agent" in b.to_dict()["criterion"]
    assert [r["elpd"] for r in b.ranking] == [r["elpd"] for r in s.ranking]
    assert all(r["dse_points"] == q["dse"] for r, q in zip(b.ranking, s.ranking, strict=True))
    assert b.best["label"] == "C2-AND" or "C2-AND" in b.indistinguishable
