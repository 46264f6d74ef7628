"""Product covariates (``rl.lr*rl.lr_scale.X``): a link on the product fits and predicts
exactly as a link on a precomputed product column (the oracle), recovers a known slope, and
bad settings are errors."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import calibrate as cal
from calibrate._covariates import expand_settings, factors
from tests.calibrate.test_fit import STEPS, TRUTH

LR = [2e-3, 4e-3, 8e-3, 4e-3]
SCALE = [0.5, 0.25, 0.5, 1.0]
OWN = [a * b for a, b in zip(LR, SCALE, strict=True)]  # 1e-3, 1e-3, 4e-3, 4e-3
C_TRUE = 0.6  # log rho[X] = a + c (log(lr s) - mean log(lr s))
PRODUCT = "rl.lr*rl.lr_scale.X"


@pytest.fixture(scope="module")
def fits():
    """Laplace fits of the same 4 synthetic runs: one linked on the product, one on a
    precomputed column ``own`` holding it (same key)."""
    x = np.log(OWN) - np.mean(np.log(OWN))
    run_params = [{"rho[X]": TRUTH["rho[X]"] * math.exp(C_TRUE * v)} for v in x]
    hyper = {"rl.lr": LR, "rl.lr_scale.X": SCALE}
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(3), steps=STEPS, runs=len(LR),
        run_params=run_params, hyper={**hyper, "own": OWN},
    )  # fmt: skip
    out = {}
    for name, cov in (("product", PRODUCT), ("column", "own")):
        cfg = cal.FitConfig(
            method="laplace", chains=1, samples=600,
            hierarchy=cal.Hierarchy(links=(cal.Link("rho", cov, ("X",)),)),
        )  # fmt: skip
        out[name] = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    return out


def test_a_product_link_fits_as_the_precomputed_column_and_recovers_its_slope(fits):
    a, b = fits["product"], fits["column"]
    np.testing.assert_allclose(a.model.link_x, b.model.link_x, rtol=0, atol=1e-15)
    sa, sb = a.summary(), b.summary()
    c = sa[f"c[rho[X]~{PRODUCT}]"]
    np.testing.assert_allclose(c["mean"], sb["c[rho[X]~own]"]["mean"], rtol=1e-9)
    assert c["q05"] <= C_TRUE <= c["q95"] and abs(c["mean"] - C_TRUE) < 0.25, c


def test_predict_from_the_fields_is_predict_at_the_product(fits):
    a, b = fits["product"], fits["column"]
    kw = {"max_draws": 8, "n_points": 20, "key": jax.random.key(1)}
    pa = cal.predict(a, [{"rl.lr": 1e-2, "rl.lr_scale.X": 0.3}], **kw)
    pb = cal.predict(b, [{"own": 3e-3}], **kw)
    np.testing.assert_allclose(pa.mean, pb.mean, rtol=1e-10)
    # a field left out sits at the pilots' geometric mean of that field
    gm = math.exp(np.mean(np.log(SCALE)))
    pa = cal.predict(a, [{"rl.lr": 1e-2}], **kw)
    pb = cal.predict(b, [{"own": 1e-2 * gm}], **kw)
    np.testing.assert_allclose(pa.mean, pb.mean, rtol=1e-10)
    # equal products, equal forecasts; a larger product learns X faster (c > 0)
    three = [(2e-3, 1.0), (8e-3, 0.25), (8e-3, 1.0)]
    pa = cal.predict(a, [{"rl.lr": lr, "rl.lr_scale.X": s} for lr, s in three], **kw)
    np.testing.assert_allclose(pa.mean[0], pa.mean[1], rtol=1e-10)
    assert pa.mean[2, 5, 0] > pa.mean[0, 5, 0]


def test_bad_products_and_settings_are_errors(fits):
    with pytest.raises(cal.ConfigError, match="transform 'log'"):
        cal.Link("rho", PRODUCT, ("X",), "log1p")
    with pytest.raises(cal.ConfigError, match="distinct, non-empty"):
        cal.Link("rho", "rl.lr*", ("X",))
    assert factors(PRODUCT) == ("rl.lr", "rl.lr_scale.X") and factors("rl.lr") == ("rl.lr",)
    post = fits["product"]
    with pytest.raises(cal.ConfigError, match="positive number"):
        cal.predict(post, [{"rl.lr": 1e-2, "rl.lr_scale.X": -0.3}])
    with pytest.raises(cal.ConfigError, match="not both"):
        cal.predict(post, [{PRODUCT: 1e-3, "rl.lr_scale.X": 0.3}])
    with pytest.raises(cal.ConfigError, match="do not record"):
        expand_settings([{"rl.lr": 1e-2}], [PRODUCT], {"rl.lr": np.array([1e-3])})
    # a product given directly, beside a factor that is a covariate of its own, is kept
    both = expand_settings([{PRODUCT: 1e-3, "rl.lr": 1e-2}], [PRODUCT, "rl.lr"], None)
    assert both == [{PRODUCT: 1e-3, "rl.lr": 1e-2}]


def test_a_saved_product_fit_predicts_from_the_cli_and_bad_fields_exit_2(fits, tmp_path, capsys):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from calibrate.__main__ import main

    folder = tmp_path / "fit"
    fits["product"].save(folder, figure=False)
    back = cal.load_fit(folder)
    kw = {"max_draws": 8, "n_points": 20, "key": jax.random.key(1)}
    s = [{"rl.lr": 1e-2, "rl.lr_scale.X": 0.3}]
    np.testing.assert_allclose(
        cal.predict(back, s, **kw).mean, cal.predict(fits["product"], s, **kw).mean, rtol=1e-10
    )
    args = ["predict", str(folder), "--set", "rl.lr=1e-2", "--set", "rl.lr_scale.X=0.3"]
    assert main([*args, "--draws", "20"]) == 0
    assert "rl.lr_scale.X=0.3" in capsys.readouterr().out
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    cmd = [sys.executable, "-m", "calibrate", "predict", str(folder), "--set", "rl.lr_scale.X=0"]
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=600)
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(err) == 1 and err[0].startswith("error: "), res.stderr
    assert "rl.lr_scale.X" in err[0] and "Traceback" not in res.stderr


def test_recommend_searches_the_fields_of_a_product(fits):
    """A space over ``rl.lr`` x ``rl.lr_scale.X``: each candidate's utility is predict's at
    that candidate (the oracle, same key and draws); a field of the product alone, with the
    other at the pilots' value, is searchable too."""
    from calibrate._recommend._core import recommend_space
    from calibrate._space import SearchSpace

    post = fits["product"]
    fields = {"rl.lr": {"choices": [2e-3, 8e-3]}, "rl.lr_scale.X": {"choices": [0.25, 1.0]}}
    space = SearchSpace.from_dict({"fields": fields, "budget_steps": 60, "risk": 1.0,
                                   "objective": "Z"})  # fmt: skip
    key = jax.random.key(2)
    rec = recommend_space(post, space, max_draws=20, top=1, key=key)
    p = cal.predict(post, space.candidates(), steps=60, max_draws=20, key=key, bands=False,
                    band="mean")  # fmt: skip
    oracle = np.asarray(p.final)[..., 2].mean(axis=1)
    np.testing.assert_allclose(rec["_arrays"]["utility"], oracle, rtol=0, atol=1e-9)
    one = SearchSpace.from_dict({"fields": {"rl.lr_scale.X": {"choices": [0.25, 1.0]}},
                                 "budget_steps": 60, "risk": 1.0, "objective": "Z"})  # fmt: skip
    assert recommend_space(post, one, max_draws=20, top=1, key=key)["best"] in one.candidates()


def test_recommend_sweeps_one_field_of_a_product(fits):
    """``recommend(param="rl.lr_scale.X")`` on a fit linked only through the product: each
    grid value's forecast is predict's at that field (the oracle), the other field at the
    pilots' geometric mean."""
    post = fits["product"]
    rec = cal.recommend(post, param="rl.lr_scale.X", grid=[0.25, 1.0], max_draws=10, steps=60,
                        key=jax.random.key(5))  # fmt: skip
    pred = cal.predict(post, [{"rl.lr_scale.X": 0.25}, {"rl.lr_scale.X": 1.0}], steps=60,
                       max_draws=10, key=jax.random.key(5), bands=False)  # fmt: skip
    means = np.nanmean(np.asarray(pred.final)[:, :, -1], axis=1)
    np.testing.assert_allclose([r["final_mean"] for r in rec["table"]], means, rtol=1e-12)
    with pytest.raises(cal.ConfigError, match=r"no link on 'rl\.batch'"):
        cal.recommend(post, param="rl.batch")


def test_watch_reads_a_run_s_product_from_its_fields(fits):
    from calibrate._watch import run_setting

    post = fits["product"]
    setting, missing = run_setting(post, {"rl.lr": 1e-2, "rl.lr_scale.X": 0.3, "seed": 1})
    assert setting == {PRODUCT: pytest.approx(3e-3, rel=1e-12)} and missing == []
    assert run_setting(post, {"rl.lr": 1e-2}) == ({}, [PRODUCT])  # the pilots' reference
