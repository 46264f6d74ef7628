"""Motif selection made cheaper without changing its result: PSIS vectorised over points
(= ArviZ), candidates fitted in worker threads (= one at a time), and saving that draws
figures and keeps the pointwise log-likelihood only for the indistinguishable set."""

import json
import warnings

import arviz as az
import jax
import numpy as np
import pytest

import calibrate as cal
import simulate
from calibrate._select._fit import psis

T = {
    "rho[X]": 0.03,
    "rho[Y]": 0.04,
    "rho[Z]": 0.05,
    "delta": 0.002,
    "b": 0.05,
    "A0": 0.05,
    "K": 0.5,
    "n": 3.0,
}
CFG = cal.FitConfig(method="laplace", chains=1, samples=300, map_starts=2, map_steps=150, dt=5.0)
# select() before the speed-ups (commit 8c99ffc: ArviZ's psislw, one candidate at a time) on
# the data below: label -> (elpd, se, d_elpd, dse, weight, pareto_k_max, elpd_method)
BEFORE = {
    "C1-AND": (-32.3167850708281, 3.1058072138681982, 0.0, 0.0, 0.9999846880525348,
               0.5618817773165795, "psis-loo"),
    "I3-AND": (-33.36944331128644, 3.6638280354805515, 1.052658240458343, 0.8702915327501309,
               8.897025747044147e-06, 0.6652206360151421, "psis-loo"),
    "I1-AND": (-33.901829032711134, 3.736575604388445, 1.585043961883036, 1.0989347212604057,
               6.375073578315351e-06, 0.5413301367652256, "psis-loo"),
    "I4-AND": (-36.0306490103536, 3.8725204108296873, 3.7138639395254986, 1.33022529341155,
               3.984813980404708e-08, 0.8271857893659734, "kfold"),
}  # fmt: skip


@pytest.fixture(scope="module")
def sel():
    data = cal.synthetic_curves(
        "C1-AND", T, key=jax.random.key(2), steps=np.arange(0, 300, 50), runs=1, n_eval=20
    )
    cands = cal.candidates(["C1", "I1", "I3", "I4"], ["AND"])
    return cal.select(data, cands, CFG, key=jax.random.key(0), workers=2)


def test_psis_is_arviz_psislw():
    """Rows with a clean tail, ties in or at the tail, weights below the smallest float,
    near-constant weights, and too few draws for a tail fit: ArviZ's numbers."""
    rng = np.random.default_rng(0)
    for r, s in [(12, 16000), (8, 1200), (8, 300), (3, 20)]:
        x = rng.standard_t(3, size=(r, s)) * rng.uniform(0.1, 5, size=(r, 1))
        x[0, :5] = x[0].max()  # a tie at the top
        x[1] = np.round(x[1], 1)  # ties everywhere
        x[2, : s // 2] = -1e30  # half the weights underflow
        x[-1] = 1e-3 * rng.normal(size=s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, k_want = (np.asarray(a) for a in az.psislw(x))
            got, k_got = psis(x)
        assert got.shape == want.shape and k_got.shape == k_want.shape
        assert np.array_equal(np.isfinite(want), np.isfinite(got))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=0, atol=1e-12)
        np.testing.assert_allclose(k_got, k_want, rtol=0, atol=1e-12)  # inf where no fit
    one, k1 = psis(x[0])  # a single row (1-D input)
    assert one.shape == (1, x.shape[1]) and k1.shape == (1,)


def test_selection_result_as_before_the_speedups(sel):
    """Worker threads and the vectorised PSIS change no number of the elpd table."""
    assert [r["label"] for r in sel.ranking] == list(BEFORE)
    assert sel.indistinguishable == ["C1-AND", "I3-AND", "I1-AND"]
    keys = ("elpd", "se", "d_elpd", "dse", "weight", "pareto_k_max", "elpd_method")
    for r in sel.ranking:
        want = BEFORE[r["label"]]
        np.testing.assert_allclose([r[k] for k in keys[:6]], want[:6], rtol=1e-9, atol=1e-12)
        assert r["elpd_method"] == want[6]
    assert sel.timing["workers"] == 2 and sel.timing["cpu_s"] > 0


def test_save_complete_only_the_indistinguishable_set(sel, tmp_path):
    """Default: predictive.png and the pointwise log-likelihood for the set only; every
    fit keeps what predict/recommend read. ``all``: every fit complete; ``none``: no
    figure at all."""
    out = tmp_path / "best"
    sel.save(out, fits=True)
    full, light = sel.indistinguishable, ["I4-AND"]
    for lb in full + light:
        d = out / "fits" / lb
        assert (d / "predictive.png").is_file() == (lb in full)
        idata = az.from_netcdf(str(d / "posterior.nc"))
        assert ("log_likelihood" in idata.groups()) == (lb in full)
        assert "posterior" in idata.groups()
        assert json.loads((d / "network.json").read_text())["name"] == lb
        diag = json.loads((d / "diagnostics.json").read_text())
        assert diag == json.loads(json.dumps(simulate.jsonable(sel.fit_diagnostics[lb])))
        post = cal.load_fit(d)
        assert post.samples["z"].shape == sel.posteriors[lb].samples["z"].shape
    saved = json.loads((out / "selection.json").read_text())
    assert saved["timing_s"]["save_s"] > 0 and saved["timing_s"]["save_cpu_s"] > 0
    assert (out / "selection.png").is_file()

    sel.save(tmp_path / "all", fits=True, figures="all")
    assert all((tmp_path / "all" / "fits" / lb / "predictive.png").is_file() for lb in BEFORE)
    sel.save(tmp_path / "none", fits=True, figures="none")
    assert not list((tmp_path / "none").rglob("*.png"))
    nc = az.from_netcdf(str(tmp_path / "none" / "fits" / "C1-AND" / "posterior.nc"))
    assert "log_likelihood" in nc.groups()
    with pytest.raises(cal.ConfigError, match="figures must be one of"):
        sel.save(tmp_path / "bad", figures="some")
    with pytest.raises(cal.ConfigError, match="workers"):
        cal.select(None, cal.candidates(["C1", "I1"], ["AND"]), key=jax.random.key(0), workers=0)  # type: ignore[arg-type]
