"""Each run's known spurious-reward pulses in the likelihood (``calibrate fit --pulses``, issue
29 §4): the pulse windows read from llm_runs' config, the cell shares on the quadrature grid,
the quad solve of a weighted network with a flip pulse on X (X driven back toward its start
level at a share ``kappa`` of its rate) against scipy's ``solve_ivp`` of the same law, for two
``kappa``, nothing changed without the flag, and the refusals."""

from __future__ import annotations

import dataclasses
import itertools
import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.stats import norm

import calibrate as cal
from calibrate.__main__ import main
from calibrate._pulses import (
    config_pulses,
    lagged_shares,
    run_pulse_windows,
    window_array,
)
from calibrate._quad import QuadGrid

P = {
    "rho[X]": 0.05, "rho[Y]": 0.08, "rho[Z]": 0.07, "b[X]": 0.0, "b[Y]": 0.2, "b[Z]": 0.15,
    "delta[X]": 0.002, "delta[Y]": 0.004, "delta[Z]": 0.003,
    "A0[X]": 0.3, "A0[Y]": 0.04, "A0[Z]": 0.06, "K": 0.4, "n": 3.0,
}  # fmt: skip
STEPS = np.arange(0.0, 201.0, 10.0)
A0 = [P["A0[X]"], P["A0[Y]"], P["A0[Z]"]]
#: Per run: its weight and its pulse on X (None: no pulse); C2 (X -| Y, X -| Z, Y -> Z).
RUNS = [(0.0, None), (0.9, None), (0.9, (30, 60)), (0.9, (35, 52))]


def _config(w: float, pulse, steps: int = 200) -> dict:
    task: dict = {"name": "math"}
    if pulse is not None:
        a, b = pulse
        task["spurious"] = {"starts": [a], "length": b - a, "mode": "flip", "roles": ["X"]}
    net = {"motif": "C2", "gate": "AND", "default_weight": w}
    return {"task": task, "network": net, "steps": steps, "seed": 0}


def _data() -> cal.CurveData:
    nets = [_config(w, p)["network"] for w, p in RUNS]
    data = cal.synthetic_curves(
        "C2-AND", P, key=jax.random.key(0), steps=STEPS, runs=len(RUNS), n_eval=50,
        network_configs=nets,
    )  # fmt: skip
    configs = {f"r{i}": _config(w, p) for i, (w, p) in enumerate(RUNS)}
    return dataclasses.replace(data, configs=configs)


def _oracle(w: float, pulse, kappa: float, lag: float = 0.0) -> np.ndarray:
    """``solve_ivp`` of the C2-AND law with llm_runs' multiplier ``1 - w + w G`` on the whole
    rate and, inside the pulse delayed by ``lag`` steps, X's rate ``rho kappa (A0 - A) -
    delta A``, piece by piece between the pulse's edges."""
    K, n = P["K"], P["n"]

    def f(t, A, flip):
        x, y, z = A
        hx, hy = (x / K) ** n / (1 + (x / K) ** n), (y / K) ** n / (1 + (y / K) ** n)
        gs = (1.0, 1.0 - hx, (1.0 - hx) * hy)  # X: no edge; X -| Y; X -| Z AND Y -> Z
        out = []
        for k, (node, a) in enumerate((("X", x), ("Y", y), ("Z", z))):
            ww = 0.0 if k == 0 else w
            if flip and k == 0:
                rate = P[f"rho[{node}]"] * kappa * (A0[k] - a) - P[f"delta[{node}]"] * a
            else:
                rate = P[f"rho[{node}]"] * (1.0 - a) - P[f"delta[{node}]"] * a
            out.append((1 - ww + ww * gs[k]) * rate)
        return out

    edges = [0.0, *(np.asarray(pulse or ()) + lag), STEPS[-1]]
    A, out = np.asarray(A0), []
    for i, (a, b) in enumerate(itertools.pairwise(edges)):
        keep = STEPS[(STEPS >= a) & ((STEPS < b) | (b == STEPS[-1]))]
        sol = solve_ivp(f, (a, b), A, t_eval=np.union1d(keep, [b]), rtol=1e-11, atol=1e-13,
                        args=(pulse is not None and i == 1,), method="LSODA")  # fmt: skip
        out += [sol.y[:, j] for j, t in enumerate(sol.t) if t in keep]
        A = sol.y[:, -1]
    return np.stack(out)


def test_windows_and_shares_follow_llm_runs_config():
    windows, roles = config_pulses("r", _config(0.9, (30, 60)))
    assert windows == [[30, 60]] and roles == ("X",)
    assert config_pulses("r", _config(0.9, None)) == ([], ("X", "Y", "Z"))
    grid = QuadGrid.build(STEPS, 4.0)
    data = _data()
    windows = run_pulse_windows(data, ("X", "Y", "Z"))
    assert windows[2] == (((30.0, 60.0),), (), ())
    shares = np.asarray(lagged_shares(window_array(windows), grid.h))  # no lag
    assert shares.shape == (4, 3, grid.h.size)
    assert not shares[:2].any() and not shares[:, 1:].any()  # only X, only where pulsed
    mid = 0.5 * (grid.nodes[:-1] + grid.nodes[1:])
    want = ((mid > 30) & (mid < 60)).astype(float)
    np.testing.assert_allclose(shares[2, 0], want, rtol=0, atol=1e-12)
    # a window edge inside a cell (35, 52 on 10/3-step cells): the share of the cell inside
    cell = np.searchsorted(grid.nodes, 52.0) - 1
    t0, t1 = grid.nodes[cell], grid.nodes[cell + 1]
    assert shares[3, 0, cell] == pytest.approx((52.0 - t0) / (t1 - t0), abs=1e-12)
    assert 0 < shares[3, 0, cell] < 1


def test_a_lag_delays_the_shares_and_has_a_slope():
    nodes = QuadGrid.build(STEPS, 4.0).nodes
    win = window_array(((((30.0, 60.0), (100.0, 103.0)),),))[0]  # one node, two windows
    fine = np.linspace(0.0, 200.0, 200_001)  # the share by counting points: an oracle
    for lag in (0.0, 7.3):
        got = np.asarray(lagged_shares(win, np.diff(nodes), lag))[0]
        on = ((fine >= 30 + lag) & (fine < 60 + lag)) | ((fine >= 100 + lag) & (fine < 103 + lag))
        cell = np.searchsorted(nodes, fine, side="right") - 1
        want = [on[cell == j].mean() for j in range(nodes.size - 1)]
        np.testing.assert_allclose(got, want, atol=2e-4)
    # the total share-weighted time is the windows' length, whatever the lag
    h = np.diff(nodes)
    assert float(np.sum(np.asarray(lagged_shares(win, h, 7.3)) * h)) == pytest.approx(33.0)
    # the lag can be fitted: the shares move with it
    d = jax.grad(lambda x: jnp.sum(lagged_shares(win, h, x)[0] * jnp.arange(h.size)))(7.3)
    assert float(d) > 0


@pytest.mark.parametrize(("kappa", "lag"), [(1.0, 0.0), (0.3, 12.0)])
def test_the_quad_solve_follows_each_run_s_pulse(kappa, lag):
    data = _data()
    refs = np.stack([_oracle(w, p, kappa, lag) for w, p in RUNS])
    assert np.max(np.abs(refs[1] - refs[2])) > 0.1  # the pulse matters, on X and downstream
    # X falls toward its start level, not below it, and not before the (delayed) pulse
    pulsed = (STEPS > 30 + lag) & (STEPS <= 60 + lag)
    np.testing.assert_allclose(refs[2][STEPS <= 30 + lag], refs[1][STEPS <= 30 + lag], atol=1e-7)
    assert (
        refs[2][pulsed, 0].min() >= A0[0] - 1e-9
        and refs[2][pulsed, 0].min() < refs[1][pulsed, 0].min()
    )
    cfg = cal.FitConfig(method="laplace", edge_weights=True, pulses=True, dt=1.0)
    cm = cal.build_model(data, "C2-AND", cfg)
    assert cm.pulse_windows and not cm.pooled
    full = {**P, "flip[X]": kappa, "flip[Y]": 0.01, "flip[Z]": 5.0, "flip_lag": lag}
    flips = ["flip_lag", "flip[X]", "flip[Y]", "flip[Z]"]
    assert [n for n in cm.layout.names if n.startswith("flip")] == flips
    row = [full[nm] if nm in full else full[nm.split("[")[0]] for nm in cm.layout.names]
    th = jnp.asarray(np.tile(row, (cm.n_runs, 1)), dtype=float)
    A, ok = cm.curves(th)
    assert bool(jnp.all(ok))
    # the same under jit with the model's arrays traced (as the fit's likelihood is)
    Aj, _ = eqx.filter_jit(lambda m, t: m.curves(t))(cm, th)
    np.testing.assert_allclose(np.asarray(Aj), np.asarray(A), rtol=0, atol=1e-12)
    # the edges 30, 60 are grid nodes: quad's own error (1e-4 at 1-step cells); 35 and 52
    # fall inside cells, whose share is averaged: a first-order error there
    np.testing.assert_allclose(np.asarray(A)[:3], refs[:3], atol=3e-4, rtol=0)
    np.testing.assert_allclose(np.asarray(A)[3], refs[3], atol=3e-3, rtol=0)


def test_without_the_flag_nothing_changes():
    data = _data()
    a = cal.build_model(data, "C2-AND", cal.FitConfig(method="laplace", edge_weights=True))
    b = cal.build_model(
        data, "C2-AND", cal.FitConfig(method="laplace", edge_weights=True, pulses=True)
    )
    assert a.pulse_windows == ()
    assert "flip[X]" in b.layout.names and "flip[X]" not in a.layout.names

    def at(m):  # the log joint with every latent at 0.1
        return float(m.log_joint_fn()({k: 0.1 * jnp.ones(s) for k, s in m.sites().items()}))

    la, lb = at(a), at(b)
    assert np.isfinite(la) and np.isfinite(lb) and la != lb
    quiet_cfg = {r: _config(w, None) for r, (w, _) in zip(data.runs, RUNS, strict=True)}
    quiet = dataclasses.replace(data, configs=quiet_cfg)
    c, d = (
        cal.build_model(
            quiet, "C2-AND", cal.FitConfig(method="laplace", edge_weights=True, pulses=pl)
        )
        for pl in (False, True)
    )
    # runs without pulses: the same likelihood; the priors of the pulse rates and the lag
    # (a standard normal latent each: one per node, one for the lag) are the only change
    np.testing.assert_allclose(at(d) - at(c), 4 * norm.logpdf(0.1), rtol=1e-8)


def test_config_round_trip_and_refusals():
    cfg = cal.FitConfig(method="laplace", pulses=True)
    assert cal.FitConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(cal.ConfigError, match="pulses need solver 'quad'"):
        cal.FitConfig(method="laplace", pulses=True, solver="rk4")
    with pytest.raises(cal.ConfigError, match="pulses need solver 'quad'"):
        cal.FitConfig(method="laplace", pulses=True, dynamics="map")
    with pytest.raises(cal.ConfigError, match="pulses must be true or false"):
        cal.FitConfig.from_dict({"pulses": "yes"})
    bad = _config(0.9, (30, 60))
    bad["task"]["spurious"]["mode"] = "random"
    with pytest.raises(cal.DataError, match="'flip' pulses only"):
        config_pulses("r", bad)


def test_the_command_line_refuses_runs_without_configs(tmp_path, capsys):
    _data().table.to_csv(tmp_path / "c.csv", index=False)
    out = tmp_path / "fit"
    rc = main(["fit", str(tmp_path / "c.csv"), "--pulses", "--method", "laplace",
               "--out", str(out)])  # fmt: skip
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
    assert "has no llm_runs config" in err[0] and not out.exists()


def test_a_fit_with_pulses_reports_the_flip_rates_and_the_lag():
    cfg = cal.FitConfig(method="laplace", edge_weights=True, pulses=True)
    post = cal.fit(_data(), "C2-AND", cfg, key=jax.random.key(1))
    idata = post.to_inference_data()
    assert idata.posterior["flip"].dims[-1] == "node" and idata.posterior["flip_lag"].shape[-1] == 1
    s = post.summary()
    assert {"flip[X]", "flip[Y]", "flip[Z]", "flip_lag"} <= set(s)
    assert all(np.isfinite(s[k]["mean"]) and s[k]["mean"] > 0 for k in ("flip[X]", "flip_lag"))
