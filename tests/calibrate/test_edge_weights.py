"""Each run's known edge weights in the likelihood (``calibrate fit --edge-weights``, issue 29
§4): llm_runs' coupling factor reproduced, every likelihood solver against scipy's
``solve_ivp`` of the weighted ODE per run, the default path unchanged, the config's JSON round
trip and the command line's refusals."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import calibrate as cal
import simulate
from calibrate.__main__ import main
from calibrate._edge_weights import run_node_weights
from llm_runs._edges import EdgeController
from llm_runs.config import NetworkConfig, TrainConfig

#: Rates of a C1 network (every edge activating).
P = {
    "rho[X]": 0.05, "rho[Y]": 0.08, "rho[Z]": 0.07, "b[X]": 0.0, "b[Y]": 0.2, "b[Z]": 0.15,
    "delta[X]": 0.002, "delta[Y]": 0.004, "delta[Z]": 0.003,
    "A0[X]": 0.05, "A0[Y]": 0.04, "A0[Z]": 0.06, "K": 0.4, "n": 3.0,
}  # fmt: skip
STEPS = np.arange(0.0, 201.0, 10.0)
#: Three runs' network configs: one weight family, one run with per-edge weights.
NETS = [
    {"motif": "C1", "gate": "AND", "default_weight": 0.0},
    {"motif": "C1", "gate": "AND", "default_weight": 0.45},
    {"motif": "C1", "gate": "AND", "default_weight": 0.9, "edges": {"X->Z": {"weight": 0.2}}},
]
#: Per run, llm_runs' node weights (the max rule): w[Z] = max(0.2, 0.9) in the last run.
W = [(0.0, 0.0, 0.0), (0.0, 0.45, 0.45), (0.0, 0.9, 0.9)]


def _rhs(w: tuple[float, float, float], gate: str = "AND"):
    """The weighted competence drift of ``P`` on C1, written out in NumPy: llm_runs'
    learning-rate multiplier ``1 - w + w G`` scales the whole rate (``G`` leaves the
    bracket, so the basal ``b`` drops out: ``rho [b + (1 - b)] = rho``)."""
    K, n = P["K"], P["n"]

    def f(t, A):
        x, y, z = A
        hx, hy = (x / K) ** n / (1 + (x / K) ** n), (y / K) ** n / (1 + (y / K) ** n)
        ux, uy = (x / K) ** n, (y / K) ** n
        g_z = hx * hy if gate == "AND" else (ux + uy) / (1 + ux + uy)
        out = []
        for k, (node, a, g) in enumerate((("X", x, 1.0), ("Y", y, hx), ("Z", z, g_z))):
            factor = 1 - w[k] + w[k] * g
            out.append(factor * (P[f"rho[{node}]"] * (1 - a) - P[f"delta[{node}]"] * a))
        return out

    return f


A0 = [P["A0[X]"], P["A0[Y]"], P["A0[Z]"]]


def _oracle(w: tuple[float, float, float], gate: str = "AND") -> np.ndarray:
    """``solve_ivp`` of the weighted ODE at ``STEPS``."""
    f = _rhs(w, gate)
    return solve_ivp(
        f, (0, STEPS[-1]), A0, t_eval=STEPS, rtol=1e-10, atol=1e-12, method="LSODA"
    ).y.T


def _map_oracle(w: tuple[float, float, float], gate: str = "AND") -> np.ndarray:
    """The learning-step map ``A <- A + F(A)`` (eta 1) of the weighted drift at ``STEPS``."""
    f, A, out = _rhs(w, gate), np.asarray(A0), {}
    for t in range(int(STEPS[-1]) + 1):
        out[t] = A
        A = np.clip(A + np.asarray(f(t, A)), 0.0, 1.0)
    return np.stack([out[int(t)] for t in STEPS])


def _data(gate: str = "AND", nets=NETS, key: int = 0) -> cal.CurveData:
    nets = [{**c, "gate": gate} for c in nets]
    return cal.synthetic_curves(
        f"C1-{gate}", P, key=jax.random.key(key), steps=STEPS, runs=len(nets),
        network_configs=nets, n_eval=50,
    )  # fmt: skip


def _theta(cm: cal.CurveModel) -> jax.Array:
    """``P`` in the fit's layout (``eta`` 1), one row per run."""
    full = {**P, "eta": 1.0}
    row = [full[nm] if nm in full else full[nm.split("[")[0]] for nm in cm.layout.names]
    return jnp.asarray(np.tile(row, (cm.n_runs, 1)), dtype=float)


@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_llm_runs_coupling_factor_is_reproduced(gate):
    """simulate's weighted regulation equals llm_runs' learning-rate multiplier."""
    A = {"X": 0.35, "Y": 0.6, "Z": 0.1}
    for cfg in NETS:
        net = TrainConfig.from_dict({"network": {**cfg, "gate": gate}}).network
        assert isinstance(net, NetworkConfig)
        ctl = EdgeController(net.network_spec(), net)
        ctl.update(A)  # bias-corrected after one update: the measured competences
        want = [ctl.factors()[a]["coupling"] for a in "XYZ"]
        data = _data(gate, [cfg])
        w = run_node_weights(data, ("X", "Y", "Z"))[0]
        m = simulate.make_model(f"C1-{gate}", "competence", {"K": P["K"], "n": P["n"]})
        m = simulate.set_params(m, {"K": net.K, "n": net.n})
        G = np.asarray(m.network.regulation(jnp.asarray([A[a] for a in "XYZ"])))
        np.testing.assert_allclose(1 - w + w * G, want, rtol=1e-12)


@pytest.mark.parametrize("gate", ["AND", "OR"])
def test_every_solver_gives_each_run_its_weights(gate):
    data = _data(gate)
    refs = np.stack([_oracle(w, gate) for w in W])
    assert np.max(np.abs(refs[0] - refs[2])) > 0.05  # the weights matter here
    for solver, tol in (("quad", 2e-4), ("rk4", 1e-6), ("tsit5", 1e-5)):
        cfg = cal.FitConfig(
            method="laplace", solver=solver, edge_weights=True, rtol=1e-9, atol=1e-11
        )
        cm = cal.build_model(data, f"C1-{gate}", cfg)
        np.testing.assert_array_equal(cm.run_weights, W)
        assert not cm.pooled
        A, ok = cm.curves(_theta(cm))
        assert bool(jnp.all(ok))
        np.testing.assert_allclose(np.asarray(A), refs, atol=tol, rtol=0, err_msg=solver)
    # the map dynamics read the same weighted drift
    cfg = cal.FitConfig(method="laplace", dynamics="map", edge_weights=True)
    cm = cal.build_model(data, f"C1-{gate}", cfg)
    A, _ = cm.curves(_theta(cm))
    ref = np.stack([_map_oracle(w, gate) for w in W])
    np.testing.assert_allclose(np.asarray(A), ref, atol=1e-12, rtol=0)


def test_without_the_flag_nothing_changes():
    data = _data()
    plain = cal.build_model(data, "C1-AND", cal.FitConfig(method="laplace"))
    assert plain.run_weights is None and plain.pooled
    assert plain.base.kinetics.weight is None
    weighted = cal.build_model(data, "C1-AND", cal.FitConfig(method="laplace", edge_weights=True))
    params = {k: 0.1 * jnp.ones(s) for k, s in plain.sites().items()}
    lp_plain = float(plain.log_joint_fn()(params))
    lp_weighted = float(weighted.log_joint_fn()(params))
    assert np.isfinite(lp_weighted) and lp_plain != lp_weighted
    # all weights 1 is not the unweighted law: the multiplier scales the basal term too
    ones = _data(nets=[{"motif": "C1", "default_weight": 1.0}] * 3)
    cms = [
        cal.build_model(ones, "C1-AND", cal.FitConfig(method="laplace", edge_weights=e))
        for e in (False, True)
    ]
    lps = [float(cm.log_joint_fn()(params)) for cm in cms]
    assert all(np.isfinite(lps)) and abs(lps[0] - lps[1]) > 1.0


def test_config_round_trips_through_json(tmp_path):
    cfg = cal.FitConfig(method="laplace", edge_weights=True)
    d = cfg.to_dict()
    assert d["edge_weights"] is True
    assert cal.FitConfig.from_dict(json.loads(json.dumps(d))) == cfg
    (tmp_path / "c.json").write_text(json.dumps(d))
    assert cal.FitConfig.load(tmp_path / "c.json") == cfg
    assert (
        cal.FitConfig().edge_weights is False and cal.FitConfig.from_dict({}).edge_weights is False
    )
    for bad in ("yes", 1, None):
        with pytest.raises(cal.ConfigError, match="edge_weights must be true or false"):
            cal.FitConfig.from_dict({"edge_weights": bad})


def _run_folders(tmp_path, data: cal.CurveData, configs: dict) -> list[str]:
    """``data``'s runs as llm_runs run folders whose manifests carry ``configs``."""
    paths = []
    for run in data.runs:
        d = tmp_path / run
        d.mkdir()
        manifest = {
            "schema": "agentmotifs.runlog", "schema_version": 1, "run": run, "seed": 0,
            "agents": list(data.agents), "spec": {"nodes": list(data.agents), "edges": []},
            "config": configs[run],
        }  # fmt: skip
        (d / "manifest.json").write_text(json.dumps(manifest))
        t = data.table[data.table["run"] == run].sort_values(["step", "agent"])
        rows = [
            {"kind": "agent", "step": int(s), "agent": a, "competence": float(c), "n_eval": int(n)}
            for s, a, c, n in zip(t["step"], t["agent"], t["competence"], t["n_eval"], strict=True)
        ]
        (d / "competence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        paths.append(str(d))
    return paths


def test_run_folders_carry_their_weights(tmp_path):
    data = _data()
    loaded = cal.load_inputs(_run_folders(tmp_path, data, dict(data.configs)))
    np.testing.assert_array_equal(run_node_weights(loaded, ("X", "Y", "Z")), W)


@pytest.mark.parametrize(
    ("net", "says"),
    [
        (None, "has no network config"),
        ({"motif": "C1", "edges": {"X->Y": {"weight": 1.5}}}, "must be in [0, 1]"),
        ({"motif": "C1", "default_weight": -0.1}, "must be in [0, 1]"),
        ({"motif": "C1", "edges": {"X->Y": {"mechanism": "budget"}}}, "coupling only"),
    ],
)
def test_bad_weights_exit_2_with_one_error_line(tmp_path, capsys, net, says):
    data = _data()
    if net is None:  # a table carries no config
        data.table.to_csv(tmp_path / "c.csv", index=False)
        inputs = [str(tmp_path / "c.csv")]
    else:
        inputs = _run_folders(tmp_path, data, {r: {"network": net} for r in data.runs})
    out = tmp_path / "fit"
    rc = main(["fit", *inputs, "--edge-weights", "--method", "laplace", "--out", str(out)])
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
    assert says in err[0], err[0]
    assert not out.exists()


@pytest.mark.slow  # ~65 s quiet: 16 Laplace fits
def test_a_weight_family_reads_the_wiring_back_with_the_weights_only():
    """Three C2-AND runs behind pipeline gates X->Y, Y->Z that differ only in their edge
    weights (llm_runs' default_weight 0, 0.45, 0.9): selection over the 8 AND types with
    ``edge_weights`` ranks C2 first or indistinguishable, every sign it identifies is
    right, and it fits far better (elpd) than without, where the same data identify no
    sign. Measured at this seed (3), with the weight as llm_runs' whole-rate multiplier
    (2026-12-05): with the weights I2 first, C2 second and indistinguishable (elpd -435.1 /
    -435.3), X->Y '-' identified; without, C2 first (elpd -998.9) with three types
    indistinguishable, no sign. (Under the earlier form, the weight inside the basal
    bracket: C2 first at elpd -429.1 with X->Y and X->Z '-'; at data seeds 4 and 5 C2 second
    and indistinguishable with no sign.)"""
    T = {"rho[X]": 0.03, "rho[Y]": 0.06, "rho[Z]": 0.06, "delta": 0.002, "b": 0.15,
         "A0": 0.05, "K": 0.4, "n": 3.0, "Kp[X->Y]": 0.4, "m[X->Y]": 3.0, "Kp[Y->Z]": 0.4,
         "m[Y->Z]": 3.0}  # fmt: skip
    nets = [{"motif": "C2", "gate": "AND", "default_weight": w} for w in (0.0, 0.45, 0.9)]
    data = cal.synthetic_curves(
        "C2-AND", T, key=jax.random.key(3), steps=np.arange(0, 201, 10), runs=3, n_eval=64,
        pipeline="X->Y,Y->Z", network_configs=nets,
    )  # fmt: skip
    truth = {
        f"{e.source}->{e.target}": "+" if e.sign > 0 else "-"
        for e in simulate.ffl_spec("C2", "AND").edges
    }
    got = {}
    for weights in (True, False):
        cfg = cal.FitConfig(
            method="laplace", chains=1, samples=300, map_starts=2, map_steps=150, dt=5.0,
            pipeline=("X->Y", "Y->Z"), edge_weights=weights,
        )  # fmt: skip
        s = cal.select(data, cal.candidates("auto", ["AND"]), cfg, key=jax.random.key(0), kfold=0)
        print(weights, "\n".join(s.report()))
        got[weights] = s
    # Asserted: what held at every data seed tried (3, 4, 5); which signs are identified
    # varied with the seed (docstring), so it is recorded, not asserted.
    s = got[True]
    assert s.best["label"] == "C2-AND" or "C2-AND" in s.indistinguishable
    known = {e: v for e, v in s.identified.items() if e in truth and v is not None}
    assert known == {e: truth[e] for e in known}  # no identified sign is wrong
    plain = got[False]
    assert s.best["elpd"] > plain.best["elpd"] + 100  # the unweighted law misfits the family
    assert not any(plain.identified.get(e) for e in truth)


@pytest.mark.slow  # ~60 s quiet: one Laplace fit from the command line
def test_fit_from_run_folders_keeps_each_runs_weights(tmp_path):
    """``calibrate fit --edge-weights --pipeline`` on run folders fits, and the saved fit
    reloads with each run's weights (from its run configs)."""
    data = _data()
    paths = _run_folders(tmp_path, data, dict(data.configs))
    out = tmp_path / "fit"
    rc = main(
        ["fit", *paths, "--edge-weights", "--pipeline", "X->Y,Y->Z", "--motif", "C1",
         "--gate", "AND", "--method", "laplace", "--samples", "100", "--out", str(out),
         "--no-progress", "--figures", "none"]
    )  # fmt: skip
    assert rc == 0
    post = cal.load_fit(out)
    assert post.model.config.edge_weights
    np.testing.assert_array_equal(post.model.run_weights, W)
