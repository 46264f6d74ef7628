"""``calibrate.predict``: settings through the fitted links, every draw, bands and regimes."""

from __future__ import annotations

import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

import calibrate as cal
import simulate
from calibrate._solvers import fixed_substeps
from tests.calibrate.test_fit import TRUTH, _true

LRS = [1e-4, 3e-4, 1e-3]
LR_REF = math.exp(np.mean(np.log(LRS)))  # the links' reference: the pilots' geometric mean


@pytest.fixture(scope="module")
def lr_fit(lr_family_fit):
    """The session's shared laplace fit of the 3-lr family (tests/calibrate/conftest.py)."""
    return lr_family_fit


def test_per_draw_curves_are_the_model_solved_with_the_link_applied_by_hand(lr_fit):
    """Oracle: rho_setting = rho_ref * (lr / lr_ref)^c per draw, then an accurate
    adaptive solve of the simulate model (independent of the fit's RK4/quad solver)."""
    post, _ = lr_fit
    lr = 5.5e-4
    pred = cal.predict(post, [{"rl.lr": lr}], max_draws=4, n_points=30, keep_curves=True)
    assert pred.curves is not None and pred.curves.shape == (1, 4, 30, 3)
    same = cal.predict(post, [{"rl.lr": lr}], max_draws=4, n_points=30, band="mean")
    assert same.band == "mean" and same.new_final is None  # the mean curve's old program
    np.testing.assert_allclose(same.bands, pred.bands, rtol=1e-12)
    p = {k: np.asarray(v).reshape(-1) for k, v in post.params().items()}
    cm = post.model
    for g, d in enumerate(pred.draw_index):
        theta = []
        for name in cm.layout.names:
            v = p[name][d]
            if name.startswith("rho["):
                v = v * (lr / LR_REF) ** p[f"c[{name}~rl.lr]"][d]
            theta.append(v)
        # the link, exactly: the fit's own solver at the hand-made parameters
        same, _ = cm.curves(jnp.asarray([theta]), pred.t, fixed_substeps(pred.t, cm.config.dt))
        np.testing.assert_allclose(pred.curves[0, g], np.asarray(same[0]), rtol=1e-10)
        # and the solve: simulate's adaptive solver, to the fit solver's accuracy (quad at
        # cells <= dt = 1 step: ~1e-6 here, measured 9e-7)
        model = cm.with_params(jnp.asarray(theta))
        sol = simulate.solve(
            model,
            t1=float(pred.t[-1]),
            options=simulate.SolveOptions(n_points=30, rtol=1e-11, atol=1e-13),
        )
        np.testing.assert_allclose(np.asarray(sol.t), pred.t, rtol=1e-12)
        np.testing.assert_allclose(pred.curves[0, g], np.asarray(sol.states), rtol=1e-5, atol=1e-9)
    # the summaries are those of the per-draw curves
    np.testing.assert_allclose(pred.mean[0], pred.curves[0].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pred.final[0], pred.curves[0, :, -1, :], rtol=1e-12)
    q = np.quantile(pred.curves[0], [0.05, 0.25, 0.75, 0.95], axis=0)
    np.testing.assert_allclose(pred.bands[0], q, rtol=1e-12)


@pytest.mark.slow
def test_held_out_lr_is_bracketed_and_monotone_runs_converge(lr_fit):
    """Interpolation to lr 5.5e-4 (not a pilot): the true final competences lie in the 90 %
    band; regime probabilities sum to 1, and this FFL (monotone rise) converges."""
    post, _ = lr_fit
    lr = 5.5e-4
    pred = cal.predict(post, [{"rl.lr": lr}, {"rl.lr": 3e-4}], max_draws=200)
    true = {n: _true(n) for n in post.model.layout.names}
    for n in "XYZ":
        true[f"rho[{n}]"] = TRUTH[f"rho[{n}]"] * lr / 3e-4
    model = post.model.with_params(jnp.asarray([true[n] for n in post.model.layout.names]))
    sol = simulate.solve(
        model,
        t1=float(pred.t[-1]),
        options=simulate.SolveOptions(n_points=50, rtol=1e-10, atol=1e-12),
    )
    truth_final = np.asarray(sol.states)[-1]
    q05, q95 = np.quantile(pred.final[0], [0.05, 0.95], axis=0)
    assert np.all((q05 <= truth_final) & (truth_final <= q95)), (q05, truth_final, q95)
    per, net = pred.regime_probs()
    np.testing.assert_allclose(per.sum(-1), 1.0)
    np.testing.assert_allclose(net.sum(-1), 1.0)
    gp, gn = pred.groups()
    np.testing.assert_allclose(sum(gp.values()), 1.0)
    np.testing.assert_allclose(gp["converged"], 1.0)
    np.testing.assert_allclose(gn["converged"], 1.0)
    # faster learning, higher competence at the same horizon
    assert np.all(pred.final[0].mean(0) > pred.final[1].mean(0))
    d = pred.to_dict()
    assert d["reference"] == {"rl.lr": pytest.approx(LR_REF)}
    z = d["predictions"][0]["agents"]["Z"]
    assert z["p_converged"] == pytest.approx(1.0) and len(z["curve"]["q95"]) == pred.t.size


def test_unlinked_fields_and_bad_values_are_config_errors(lr_fit):
    post, _ = lr_fit
    with pytest.raises(cal.ConfigError, match=r"no hyperparameter link for field\(s\) \['rl.kl'\]"):
        cal.predict(post, [{"rl.lr": 1e-3, "rl.kl": 0.1}])
    with pytest.raises(cal.ConfigError, match=r"linked fields: \['rl.lr'\]"):
        cal.predict(post, [{"lr": 1e-3}])
    for bad in (0.0, -1e-3, float("nan"), float("inf"), "1e-3", True):
        with pytest.raises(cal.ConfigError, match="finite number > 0"):
            cal.predict(post, [{"rl.lr": bad}])
    with pytest.raises(cal.ConfigError, match="non-empty"):
        cal.predict(post, [])
    with pytest.raises(cal.ConfigError, match="horizon"):
        cal.predict(post, [{"rl.lr": 1e-3}], steps=0)


def test_cli_table_json_out_plot_and_bad_input(lr_fit, tmp_path, capsys):
    from calibrate.__main__ import main

    _, folder = lr_fit
    args = ["predict", str(folder), "--set", "rl.lr=5e-4", "--draws", "50"]
    assert main([*args, "--out", str(tmp_path / "o"), "--plot", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert "rl.lr=0.0005" in out and "new run final [90 %]" in out
    assert "interval: 90 % of one new run's logged competence" in out
    saved = json.loads((tmp_path / "o" / "prediction.json").read_text())
    assert saved["predictions"][0]["setting"] == {"rl.lr": 5e-4}
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*args, "--json"]) == 0
    strict = json.loads(
        capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON")
    )
    assert set(strict["predictions"][0]["agents"]) == {"X", "Y", "Z"}
    (tmp_path / "file").write_text("x")
    for bad, msg in (
        ([], "at least one --set"),
        (["--set", "rl.lr"], "FIELD=VALUE"),
        (["--set", "rl.lr=fast"], "not a number"),
        (["--set", "rl.lr=-1"], "finite number > 0"),
        (["--set", "rl.lr=inf"], "finite number > 0"),
        (["--set", "rl.batch=8"], "no hyperparameter link"),
        (["--set", "rl.lr=1e-3", "--plot", str(tmp_path / "file" / "p.png")], "--plot"),
    ):
        assert main(["predict", str(folder), *bad]) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and msg in err[0], (bad, err)
