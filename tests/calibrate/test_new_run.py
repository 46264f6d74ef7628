"""One new run's forecast (calibrate._new_run, predict's ``band="new_run"``) against a
Monte-Carlo oracle: a synthetic posterior with a known per-run effect sd and a known probe
count, whose new runs the test simulates itself (numpy story, simulate's adaptive solver)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy.stats import norm

import calibrate as cal
import simulate
from calibrate._new_run import (
    JITTER_BASES,
    band_note,
    crps_samples,
    evaluation_noise,
    fresh_effects,
    replicate_spread,
    resolve_n_eval,
)
from calibrate._posterior import Posterior
from tests.calibrate.test_fit import STEPS, TRUTH, _true

LRS = [1e-4, 3e-4, 1e-3]
TAU = 0.3  # the per-run effect sd on log rho
N_EVAL = 64
HORIZON = 40.0  # mid-rise: the run effects move the final competences
G = 3000  # posterior draws (and new runs) compared


def _synthetic_posterior(random_effects=("rho",), hyper=None, runs=3, run_params=None, n=N_EVAL):
    """A Posterior with no fit behind it: draws z ~ truth + 0.02 N(0, 1) (transformed
    scale), link slopes 1 +- 0.02, and tau = TAU exactly."""
    hyper = hyper or {"rl.lr": LRS}
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=STEPS, runs=runs, hyper=hyper, n_eval=n,
        run_params=run_params,
    )  # fmt: skip
    cfg = cal.FitConfig(
        method="laplace",
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"),), random_effects=random_effects),
    )
    cm = cal.build_model(data, "C1", cfg)
    lay = cm.layout
    z0 = (lay.to_unconstrained([_true(n) for n in lay.names]) - lay.loc) / lay.scale
    rng = np.random.default_rng(1)
    samples = {
        "z": (z0 + 0.02 * rng.standard_normal((G, z0.size)))[None],
        "c": (1.0 + 0.02 * rng.standard_normal((G, len(cm.link_names))))[None],
    }
    if cm.re_index.size:
        pr = cm.config.priors
        tz = (math.log(TAU) - math.log(pr.re_median)) / pr.re_sd
        samples["tau_z"] = np.full((1, G, len(cm.re_bases)), tz)
        samples["eps"] = np.zeros((1, G, cm.n_runs, cm.re_index.size))
    return Posterior(cm, samples, {}, {}, data=data)


def _oracle_new_runs(post, lr, n_eval, seed):
    """The generative story, written apart: per draw, rho_run = rho * (lr / lr_ref)^c *
    exp(TAU eps), eps ~ N(0, 1) per node; the curve by simulate's adaptive solver; the
    logged final competence Binomial(n_eval, A) / n_eval."""
    cm = post.model
    lay = cm.layout
    rng = np.random.default_rng(seed)
    z, c = post.samples["z"][0], post.samples["c"][0]
    u = np.asarray(lay.loc) + np.asarray(lay.scale) * z
    theta = np.where(np.asarray(lay.logit), 1 / (1 + np.exp(-u)), np.exp(u))
    x = math.log(lr) - np.mean(np.log(LRS))
    for j, node in enumerate("XYZ"):
        i = lay.names.index(f"rho[{node}]")
        theta[:, i] *= np.exp(c[:, j] * x + TAU * rng.standard_normal(G))

    def final(th):
        sol = simulate.solve(
            cm.with_params(th),
            t1=HORIZON,
            options=simulate.SolveOptions(n_points=2, rtol=1e-9, atol=1e-11),
        )
        return sol.states[-1]

    A = np.asarray(jax.jit(jax.vmap(final))(jax.numpy.asarray(theta)))
    return rng.binomial(n_eval, A) / n_eval, A


@pytest.fixture(scope="module")
def re_post():
    return _synthetic_posterior()


def test_crps_of_samples_matches_the_gaussian_closed_form():
    rng = np.random.default_rng(0)
    mu, sd = 0.3, 0.1
    x = rng.normal(mu, sd, 200_000)
    for y in (0.3, 0.42, 0.05):
        z = (y - mu) / sd
        exact = sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / math.sqrt(math.pi))
        assert crps_samples(x, y) == pytest.approx(exact, rel=5e-3)
    # exact on a small sample: E|X - 0| = 0.5, E|X - X'| = 0.5 over {0, 1}
    assert crps_samples(np.array([0.0, 1.0]), 0.0) == pytest.approx(0.25, abs=1e-15)
    # a point forecast scores its absolute error; NaN samples are left out; batched
    np.testing.assert_allclose(
        crps_samples(np.array([[0.2, 0.2, np.nan], [0.5, 0.5, 0.5]]), [0.5, 0.1]), [0.3, 0.4]
    )
    with pytest.raises(cal.ConfigError, match="at least one sample"):
        crps_samples(np.zeros(0), 0.0)
    with pytest.raises(cal.ConfigError, match="finite"):
        crps_samples(np.zeros(3), float("nan"))


def test_evaluation_noise_is_binomial_at_n_and_keeps_failed_draws():
    rng = np.random.default_rng(0)
    A = np.full((100_000, 2), [0.3, 0.8])
    y = evaluation_noise(A, np.array([10, 400]), rng)
    np.testing.assert_allclose(y.mean(0), [0.3, 0.8], atol=3e-3)
    np.testing.assert_allclose(y.var(0), [0.3 * 0.7 / 10, 0.8 * 0.2 / 400], rtol=0.03)
    assert np.all(np.isin(np.round(y[:, 0] * 10, 9), np.arange(11)))
    assert np.isnan(evaluation_noise(np.array([[np.nan, 0.5]]), np.array([5, 5]), rng)[0, 0])


def test_new_run_matches_the_monte_carlo_oracle(re_post):
    """Quantiles, mean and sd of one new run's logged final competence, calibrate against
    the oracle (independent draws of the same story): quantiles within 0.03 (the probe
    grid is 1/64 = 0.016; each side's Monte-Carlo se of a quantile is ~0.006 here), mean
    within 0.01, sd within 10 %. Leaving out the run effects would shrink the sd by half
    (checked: the oracle without them), so this can fail."""
    lr = 5.5e-4
    pred = cal.predict(re_post, [{"rl.lr": lr}], steps=HORIZON, n_points=20, max_draws=G,
                       bands=False, key=jax.random.key(3))  # fmt: skip
    assert pred.seed_spread is not None and pred.new_final is not None
    assert pred.band == "new_run" and pred.seed_spread["source"] == "random_effects"
    assert list(pred.n_eval) == [N_EVAL] * 3
    ours = pred.new_final[0]
    oracle, A = _oracle_new_runs(re_post, lr, N_EVAL, seed=11)
    levels = [0.05, 0.25, 0.5, 0.75, 0.95]
    np.testing.assert_allclose(
        np.quantile(ours, levels, axis=0), np.quantile(oracle, levels, axis=0), atol=0.03
    )
    np.testing.assert_allclose(ours.mean(0), oracle.mean(0), atol=0.01)
    np.testing.assert_allclose(ours.std(0), oracle.std(0), rtol=0.10)
    # not vacuous: without the run effects the spread is much smaller
    no_effects = np.sqrt(pred.final[0].var(0) + (A * (1 - A)).mean(0) / N_EVAL)
    assert np.all(oracle.std(0) > 1.5 * no_effects), (oracle.std(0), no_effects)
    # a probe count set by the user: 8 probes widen the interval, as the oracle's do
    few = cal.predict(re_post, [{"rl.lr": lr}], steps=HORIZON, n_points=20, max_draws=G,
                      bands=False, n_eval=8, key=jax.random.key(3))  # fmt: skip
    oracle8, _ = _oracle_new_runs(re_post, lr, 8, seed=12)
    assert few.new_final is not None
    np.testing.assert_allclose(few.new_final[0].std(0), oracle8.std(0), rtol=0.10)
    assert np.all(few.new_final[0].std(0) > 1.2 * ours.std(0))


def test_new_run_interval_is_wider_than_the_mean_band_and_covers_new_runs(re_post):
    """The 90 % new-run interval holds ~90 % of simulated new runs (oracle runs), the
    mean-curve band far fewer; per step the new-run band contains the mean band."""
    lr = 3e-4
    pred = cal.predict(re_post, [{"rl.lr": lr}], steps=HORIZON, n_points=20, max_draws=400,
                       key=jax.random.key(4))  # fmt: skip
    assert pred.new_final is not None
    nq = np.quantile(pred.new_final[0], [0.05, 0.95], axis=0)
    mq = np.quantile(pred.final[0], [0.05, 0.95], axis=0)
    assert np.all(nq[1] - nq[0] > 3 * (mq[1] - mq[0]))
    runs, _ = _oracle_new_runs(re_post, lr, N_EVAL, seed=21)
    cover_new = np.mean((runs >= nq[0]) & (runs <= nq[1]), axis=0)
    cover_mean = np.mean((runs >= mq[0]) & (runs <= mq[1]), axis=0)
    assert np.all((cover_new > 0.85) & (cover_new < 0.96)), cover_new
    assert np.all(cover_mean < 0.5), cover_mean
    assert pred.new_bands is not None and pred.bands is not None
    nb, mb = pred.new_bands[0], pred.bands[0]  # (4, T, N), steps after the start
    assert np.all(nb[0, 5:] <= mb[0, 5:] + 1e-12) and np.all(nb[3, 5:] >= mb[3, 5:] - 1e-12)
    # the last step of the band is the new-run final (one story), bands=False the same
    np.testing.assert_allclose(nb[[0, 3], -1], nq, atol=1e-12)
    lean = cal.predict(re_post, [{"rl.lr": lr}], steps=HORIZON, n_points=20, max_draws=400,
                       key=jax.random.key(4), bands=False)  # fmt: skip
    np.testing.assert_array_equal(lean.new_final, pred.new_final)


def test_every_view_names_its_band(re_post, tmp_path):
    new = cal.predict(re_post, [{"rl.lr": 3e-4}], steps=HORIZON, n_points=20, max_draws=50)
    mean = cal.predict(re_post, [{"rl.lr": 3e-4}], steps=HORIZON, n_points=20, max_draws=50,
                       band="mean")  # fmt: skip
    d, m = new.to_dict(), mean.to_dict()
    assert d["band"] == "new_run" and m["band"] == "mean"
    assert "one new run" in d["band_note"] and "mean curve" in m["band_note"]
    x = d["predictions"][0]["agents"]["X"]
    assert x["final"]["band"] == "new_run" and x["curve"]["band"] == "new_run"
    assert len(x["final_new_run"]["samples"]) == 50 and "final_mean_curve" in x
    assert x["final"]["q05"] == x["final_new_run"]["q05"]
    assert "final_new_run" not in m["predictions"][0]["agents"]["X"]
    assert d["n_eval"] == {"X": N_EVAL, "Y": N_EVAL, "Z": N_EVAL}
    assert d["seed_spread"]["source"] == "random_effects"
    assert "new run final [90 %]" in new.table()[1]
    assert "mean curve final [90 %]" in mean.table()[1]
    assert any("seed spread: fresh per-run effects on rho" in line for line in new.table())
    with pytest.raises(cal.ConfigError, match="band must be"):
        cal.predict(re_post, [{"rl.lr": 3e-4}], band="median")
    for bad in (0, 2.5, True, {"Q": 5}):
        with pytest.raises(cal.ConfigError, match="n_eval"):
            resolve_n_eval(re_post.model, bad)
    assert list(resolve_n_eval(re_post.model, {"Z": 7})) == [N_EVAL, N_EVAL, 7]
    cal.plot_prediction(new, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_seed_spread_from_replicates_or_said_to_be_missing():
    """Without random effects: pilots that differ only by seed give the spread (their
    finals' sd beyond binomial noise, ~0 noise at 20000 probes); none: ``missing``."""
    none = _synthetic_posterior(random_effects=())
    sp = replicate_spread(none.model, none.hyper)
    assert sp.source == "missing" and "missing" in sp.note and np.all(sp.sd == 0)
    pred = cal.predict(none, [{"rl.lr": 3e-4}], steps=HORIZON, n_points=20, max_draws=50)
    assert pred.seed_spread is not None
    assert "missing" in pred.seed_spread["note"] and "missing" in "\n".join(pred.table())
    note = pred.to_dict()["band_note"]  # the interval's phrase lists no seed spread
    assert "seed spread" not in note and "spread between seeds is missing" in note
    assert note in "\n".join(pred.table())
    # four pilots: three replicates at lr 3e-4 whose rho differ (as seeds would), one apart
    scale = [0.6, 1.0, 1.5, 1.0]
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * s for n in "XYZ"} for s in scale]
    rep = _synthetic_posterior(random_effects=(), hyper={"rl.lr": [3e-4, 3e-4, 3e-4, 1e-3]},
                               runs=4, run_params=run_params, n=20_000)  # fmt: skip
    sp = replicate_spread(rep.model, rep.hyper)
    cm = rep.model
    last = cm.t_idx == cm.t_idx.max()
    finals = np.array([[cm.k[last & (cm.run_idx == r) & (cm.node_idx == j)][0] / 20_000
                        for j in range(3)] for r in range(3)])  # fmt: skip
    assert sp.source == "replicates" and sp.groups == 1
    np.testing.assert_allclose(sp.sd, finals.std(0, ddof=1), rtol=0.05)
    assert np.all(sp.sd > 0.01)
    pred = cal.predict(rep, [{"rl.lr": 3e-4}], steps=HORIZON, n_points=20, max_draws=G,
                       bands=False)  # fmt: skip
    # the new run's variance: mean curve's + replicate sd^2 + binomial (~0)
    expect = np.sqrt(pred.final[0].var(0) + sp.sd**2)
    assert pred.new_final is not None
    np.testing.assert_allclose(pred.new_final[0].std(0), expect, rtol=0.1)
    assert "seed spread from pilot replicates" in pred.to_dict()["band_note"]


def test_band_note_names_only_what_the_interval_holds():
    """The one-line description of a new-run interval lists seed spread only where the
    forecast has it, and says so where it is missing."""
    notes = {src: band_note("new_run", src) for src in ("random_effects", "replicates", "jitter")}
    assert "fresh run effects" in notes["random_effects"]
    assert "seed spread from pilot replicates" in notes["replicates"]
    assert "not learned" in notes["jitter"]
    missing = band_note("new_run", "missing")
    assert "seed spread" not in missing and "spread between seeds is missing" in missing
    assert "fresh run effects" not in missing
    for note in (*notes.values(), missing):
        assert note.startswith("one new run's logged competence")
        assert "evaluation noise" in note and "posterior uncertainty" in note
    assert "mean curve" in band_note("mean") and "no evaluation noise" in band_note("mean")
    with pytest.raises(cal.ConfigError, match="no interval note"):
        band_note("new_run", "guess")
    with pytest.raises(cal.ConfigError, match="no interval note"):
        band_note("median")


def test_fresh_effects_jitter_only_where_the_fit_has_no_run_effects(re_post):
    """The fit's run effects (tau * eps) on its random-effect columns, the jitter on the
    other columns of rho, delta, A0 only (watch's stand-in), nothing elsewhere."""
    cm = re_post.model
    tz = np.asarray(re_post._flat()["tau_z"][:4000])
    eff = fresh_effects(cm, tz, np.random.default_rng(0), jitter=0.5)
    re_cols = np.zeros(cm.layout.size, bool)
    re_cols[cm.re_index] = True
    jit = np.array([b in JITTER_BASES for b in cm.layout.bases]) & ~re_cols
    np.testing.assert_allclose(eff[:, re_cols].std(0), TAU, rtol=0.05)
    np.testing.assert_allclose(eff[:, jit].std(0), 0.5, rtol=0.05)
    assert np.all(eff[:, ~(re_cols | jit)] == 0) and jit.any()
    none = fresh_effects(cm, None, np.random.default_rng(0), draws=3)
    assert none.shape == (3, cm.layout.size) and np.all(none == 0)


def test_bands_are_the_same_whatever_the_chunk_of_settings(re_post, monkeypatch):
    """The host reduces the curves chunk by chunk of settings (memory bounded by the chunk):
    one setting per chunk gives exactly the bands and finals of one chunk for all."""
    from calibrate._predict import _new_run

    settings = [{"rl.lr": lr} for lr in (2e-4, 5.5e-4, 1.5e-3)]

    def run():
        return cal.predict(re_post, settings, steps=HORIZON, n_points=12, max_draws=40,
                           key=jax.random.key(6))  # fmt: skip

    whole = run()
    monkeypatch.setattr(_new_run, "CHUNK_VALUES", 1)  # one setting per chunk
    split = run()
    for name in ("final", "new_final", "mean", "bands", "new_mean", "new_bands"):
        np.testing.assert_array_equal(getattr(split, name), getattr(whole, name), err_msg=name)
    assert whole.new_bands is not None and whole.new_bands.shape == (3, 4, 12, 3)
