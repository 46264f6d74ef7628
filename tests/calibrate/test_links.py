"""Link transforms (``log``, ``log1p``, ``linear``) and the knob table: inference, predict,
validation, JSON round trip, and the knob table against docs/model.md."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import calibrate as cal
from calibrate._knobs import KNOB_LINKS, TRANSFORMS, reference_value
from calibrate._solvers import fixed_substeps
from tests.calibrate.test_fit import STEPS, TRUTH

ROOT = Path(__file__).resolve().parents[2]
STALE = [0.0, 2.0, 6.0, 16.0]  # rl.staleness of the pilots: 0 (on-policy) is one of them
C_TRUE = -0.5  # log rho = a + c (log(1 + k) - mean log(1 + k)): lag slows learning
X_TRUE = np.log1p(STALE) - np.mean(np.log1p(STALE))


@pytest.fixture(scope="module")
def stale_fit(tmp_path_factory):
    """A laplace fit of 4 synthetic runs whose rates follow a log1p link in staleness
    (truth ``c = -0.5`` for every node, ``a`` = the TRUTH rates), and its saved folder."""
    run_params = [
        {f"rho[{n}]": TRUTH[f"rho[{n}]"] * math.exp(C_TRUE * x) for n in "XYZ"} for x in X_TRUE
    ]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(7), steps=STEPS, runs=len(STALE),
        run_params=run_params, hyper={"rl.staleness": STALE},
    )  # fmt: skip
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=800,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.staleness", (), "log1p"),)),
    )  # fmt: skip
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    folder = tmp_path_factory.mktemp("links") / "fit"
    post.save(folder, figure=False)
    return post, folder


def test_log1p_link_recovers_known_slopes(stale_fit):
    """The model's covariate is log(1 + k) centred over the runs (oracle: NumPy by hand);
    laplace recovers c = -0.5 for every node: within 0.25 of the truth and inside the
    90 % interval (the same tolerance as the log lr link's recovery in test_fit)."""
    post, _ = stale_fit
    cm = post.model
    assert cm.link_names == tuple(f"c[rho[{n}]~rl.staleness]" for n in "XYZ")
    np.testing.assert_allclose(cm.link_x, np.tile(X_TRUE, (3, 1)), rtol=0, atol=1e-15)
    s = post.summary()
    for n in "XYZ":
        c = s[f"c[rho[{n}]~rl.staleness]"]
        assert c["q05"] <= C_TRUE <= c["q95"], (n, c)
        assert abs(c["mean"] - C_TRUE) < 0.25, (n, c)


def test_predict_at_staleness_zero_is_the_link_applied_by_hand(stale_fit):
    """k = 0 (the default knob value; rejected as 'not > 0' before transforms existed):
    per draw, rho = rho_ref * exp(c (log(1 + 0) - mean log(1 + k))), solved by the fit's
    own solver at the hand-made parameters."""
    post, _ = stale_fit
    pred = cal.predict(post, [{"rl.staleness": 0}], max_draws=4, n_points=30, keep_curves=True)
    ref = math.expm1(np.mean(np.log1p(STALE)))
    assert pred.reference == {"rl.staleness": pytest.approx(ref, rel=1e-14)}
    assert pred.curves is not None
    p = {k: np.asarray(v).reshape(-1) for k, v in post.params().items()}
    cm = post.model
    x0 = math.log1p(0.0) - np.mean(np.log1p(STALE))
    for g, d in enumerate(pred.draw_index):
        theta = [
            p[nm][d] * (math.exp(p[f"c[{nm}~rl.staleness]"][d] * x0) if nm[:4] == "rho[" else 1)
            for nm in cm.layout.names
        ]
        same, _ = cm.curves(jnp.asarray([theta]), pred.t, fixed_substeps(pred.t, cm.config.dt))
        np.testing.assert_allclose(pred.curves[0, g], np.asarray(same[0]), rtol=1e-10)
    # the reference value itself is the zero-term setting: the fit's own curves
    at_ref = cal.predict(post, [{"rl.staleness": ref}], max_draws=4, n_points=30)
    from calibrate._predict._core import _setting_matrix

    np.testing.assert_allclose(_setting_matrix(post, [{"rl.staleness": ref}]), 0.0, atol=1e-14)
    assert at_ref.final.shape == (1, 4, 3)
    # more lag, slower learning (c < 0): lower mean competence midway
    two = cal.predict(post, [{"rl.staleness": 0}, {"rl.staleness": 16}], n_points=30)
    assert np.all(two.mean[0, 10] > two.mean[1, 10])


def test_bad_transform_negative_value_and_mixed_transforms_are_errors(stale_fit):
    post, _ = stale_fit
    for bad in (-1, -0.5, float("nan"), float("inf"), "0", True):
        with pytest.raises(cal.ConfigError, match=r"rl.staleness must be a finite number >= 0"):
            cal.predict(post, [{"rl.staleness": bad}])
    with pytest.raises(cal.ConfigError, match=r"link.transform must be one of"):
        cal.Link("rho", "rl.staleness", (), "sqrt")
    with pytest.raises(cal.ConfigError, match=r"link.transform"):
        cal.FitConfig.from_dict(
            {"hierarchy": {"links": [{"param": "rho", "covariate": "k", "transform": "exp"}]}}
        )
    with pytest.raises(cal.ConfigError, match=r"'rl.lr' is linked with transforms"):
        cal.Hierarchy(links=(cal.Link("rho", "rl.lr"), cal.Link("delta", "rl.lr", (), "linear")))
    # the data side: a negative count under log1p, and a 0 under log (as before)
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(1), steps=STEPS[:6], runs=2, hyper={"k": [-1.0, 2.0]}
    )
    log1p = cal.FitConfig(hierarchy=cal.Hierarchy(links=(cal.Link("rho", "k", (), "log1p"),)))
    with pytest.raises(cal.DataError, match=r"'k' must be a finite number >= 0 in every run"):
        cal.build_model(data, "C1", log1p)
    zero = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(1), steps=STEPS[:6], runs=2, hyper={"k": [0.0, 2.0]}
    )
    log = cal.FitConfig(hierarchy=cal.Hierarchy(links=(cal.Link("rho", "k"),)))
    with pytest.raises(cal.DataError, match=r"'k' must be a positive number"):
        cal.build_model(zero, "C1", log)
    # linear accepts any finite value; its covariate is h - mean (oracle by hand)
    lin = cal.FitConfig(hierarchy=cal.Hierarchy(links=(cal.Link("rho", "k", ("X",), "linear"),)))
    np.testing.assert_allclose(cal.build_model(data, "C1", lin).link_x, [[-1.5, 1.5]])


def test_cli_negative_staleness_exits_2_with_one_error_line(stale_fit):
    """As a user runs it: a fresh process, JAX_ENABLE_X64 unset."""
    _, folder = stale_fit
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    cmd = [sys.executable, "-m", "calibrate", "predict", str(folder), "--set", "rl.staleness=-1"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: rl.staleness must be"), err
    assert "Traceback" not in res.stderr and not res.stdout


def test_cli_predicts_staleness_zero_from_the_saved_fit(stale_fit, capsys):
    from calibrate.__main__ import main

    _, folder = stale_fit
    assert main(["predict", str(folder), "--set", "rl.staleness=0", "--draws", "20"]) == 0
    assert "rl.staleness=0" in capsys.readouterr().out


def test_json_round_trip_and_old_configs_read_as_log(stale_fit, tmp_path):
    links = (
        cal.Link("rho", "rl.staleness", (), "log1p"),
        cal.Link("delta", "rl.staleness", ("X",), "log1p"),
        cal.Link("rho", "rl.lr"),
        cal.Link("K", "coupling", ("X->Y",), "linear"),
    )
    cfg = cal.FitConfig(hierarchy=cal.Hierarchy(links=links))
    (tmp_path / "c.json").write_text(json.dumps(cfg.to_dict()))
    back = cal.FitConfig.load(tmp_path / "c.json")
    assert back == cfg and hash(back) == hash(cfg)
    assert [lk.transform for lk in back.hierarchy.links] == ["log1p", "log1p", "log", "linear"]
    # a fit folder written before transforms existed: links without the field are log
    old = cal.FitConfig.from_dict({"hierarchy": {"links": [{"param": "rho", "covariate": "lr"}]}})
    assert old.hierarchy.links[0].transform == "log"
    example = json.loads((ROOT / "docs/examples/lr_link.json").read_text())
    assert cal.FitConfig.from_dict({"hierarchy": example}).hierarchy.transforms == {"rl.lr": "log"}
    # the saved fit keeps its transform
    post, folder = stale_fit
    again = cal.load_fit(folder)
    assert again.model.config.hierarchy.links[0].transform == "log1p"
    np.testing.assert_allclose(again.model.link_x, post.model.link_x, rtol=0, atol=0)


def test_reference_value_inverts_the_mean_of_the_transform():
    h = np.array([0.0, 3.0, 8.0])
    assert reference_value("log1p", h) == pytest.approx(math.expm1(np.log1p(h).mean()))
    assert reference_value("log", [1e-4, 1e-2]) == pytest.approx(1e-3, rel=1e-12)
    assert reference_value("linear", h) == pytest.approx(11 / 3)


def test_default_links_cover_the_knobs_that_vary():
    fields = {
        "rl.lr": [1e-3, 3e-3, 1e-3],
        "rl.staleness": [0, 4, 16],
        "rl.kl_coef": [0.1, 0.1, 0.1],  # does not vary: no link
        "rl.weight_decay": [0.0, 0.01, 0.1],
        "rl.lr_scale.X": [1.0, 0.2, 0.5],
        "rl.temperature": [1.0, 0.7, 1.0],  # no knob of the table
        "seed": [0, 1, 2],
    }
    got = [(lk.param, lk.covariate, lk.targets, lk.transform) for lk in cal.default_links(fields)]
    assert got == [
        ("rho", "rl.lr", (), "log"),
        ("delta", "rl.lr", (), "log"),
        ("rho", "rl.staleness", (), "log1p"),
        ("delta", "rl.staleness", (), "log1p"),
        ("delta", "rl.weight_decay", (), "log1p"),
        ("rho", "rl.lr_scale.X", ("X",), "log"),
        ("delta", "rl.lr_scale.X", ("X",), "log"),  # forecast round 4: X's forgetting too
    ]
    # given the nodes, X's rates follow the learning rate X trains at (forecast round 5)
    own = [(lk.param, lk.covariate, lk.targets) for lk in cal.default_links(fields, nodes="XYZ")]
    assert own == [
        ("rho", "rl.lr", ("Y", "Z")),
        ("delta", "rl.lr", ("Y", "Z")),
        ("rho", "rl.staleness", ()),
        ("delta", "rl.staleness", ()),
        ("delta", "rl.weight_decay", ()),
        ("rho", "rl.lr*rl.lr_scale.X", ("X",)),
        ("delta", "rl.lr*rl.lr_scale.X", ("X",)),
    ]
    cal.Hierarchy(links=tuple(cal.default_links(fields, nodes="XYZ")))
    fixed_lr = {**fields, "rl.lr": [1e-3] * 3}  # rl.lr does not vary: the scale's own links
    assert cal.default_links(fixed_lr, nodes="XYZ") == cal.default_links(fixed_lr)
    mapped = cal.default_links(fields, dynamics="map", nodes="XYZ")  # rl.lr links eta
    assert mapped == cal.default_links(fields, dynamics="map")
    # a DataFrame of per-run columns (CurveData.hyper) works the same
    frame = pd.DataFrame(fields)
    assert cal.default_links(frame) == cal.default_links(fields)
    assert cal.default_links({"rl.lr": [1e-3]}) == []  # one run: nothing varies
    cal.Hierarchy(links=tuple(cal.default_links(fields)))  # one transform per covariate


def test_knob_table_is_documented_in_model_md():
    """docs/model.md's knob table lists every row of KNOB_LINKS with its transform and
    linked parameters (one table, kept in sync)."""
    text = (ROOT / "docs/model.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `rl.")]
    assert len(rows) == len(KNOB_LINKS)
    for knob, row in zip(KNOB_LINKS, rows, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"`{knob.field}`"
        assert cells[1] == f"`{knob.scale}`" and knob.scale in TRANSFORMS
        assert cells[2] == ", ".join(f"`{p}`" for p in knob.links)


def test_recommend_sweeps_a_log1p_link_over_its_domain(stale_fit):
    """The default grid of a log1p link: evenly spaced in log(1 + k) over the pilots' range
    widened by half, clipped at 0 (before: a geometric mean of [0, 2, 6, 16] = 0 made every
    candidate 0, a silent non-sweep); a grid value below 0 is a ConfigError."""
    post, _ = stale_fit
    rec = cal.recommend(post, param="rl.staleness", max_draws=10)
    values = np.array([r["value"] for r in rec["table"]])
    hi = 1.5 * math.log1p(16.0)
    np.testing.assert_allclose(values, np.expm1(np.linspace(0.0, hi, 15)), rtol=1e-12)
    with pytest.raises(cal.ConfigError, match=r"must be a finite number >= 0"):
        cal.recommend(post, param="rl.staleness", grid=[0, -1])
    assert cal.recommend(post, param="rl.staleness", grid=[0, 4], max_draws=10)["value"] in (0, 4)


def test_a_linked_model_keeps_its_network_label():
    """Regression: the link loop's variable overwrote the label, so fits with links were
    saved as 'delta[Z]' in network.json instead of 'C1-AND'."""
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(1), steps=STEPS[:6], runs=2, hyper={"k": [1.0, 2.0]}
    )
    cfg = cal.FitConfig(
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "k"), cal.Link("delta", "k")))
    )
    cm = cal.build_model(data, "C1", cfg)
    assert cm.name == "C1-AND"
    assert cm.network.to_spec(cm.name).name == "C1-AND"


def test_links_are_stored_as_records_and_old_fits_still_load(stale_fit, tmp_path):
    """A fit folder holds its links as records (links.json: parameter, covariate, transform,
    centre); predict reads them; a folder saved before the records loads the same."""
    import shutil

    from calibrate._link_rows import read_link_rows
    from calibrate._predict._core import _setting_matrix, link_covariates

    _, folder = stale_fit
    rows = read_link_rows(folder)
    assert rows is not None
    assert [(r.param, r.covariate, r.transform) for r in rows] == [
        (f"rho[{n}]", "rl.staleness", "log1p") for n in "XYZ"
    ]
    assert rows[0].center == pytest.approx(float(np.mean(np.log1p(STALE))), rel=1e-12)
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    (old / "links.json").unlink()  # as written before the records existed
    new_fit, old_fit = cal.load_fit(folder), cal.load_fit(old)
    assert new_fit.model.link_rows == old_fit.model.link_rows == rows
    assert link_covariates(new_fit) == link_covariates(old_fit)
    s = [{"rl.staleness": 3}, {"rl.staleness": 0}]
    np.testing.assert_array_equal(_setting_matrix(new_fit, s), _setting_matrix(old_fit, s))
