"""Exact K-fold CV of a candidate: folds, masking, a brute-force oracle; the decision to
use it where PSIS-LOO's Pareto k is high."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom

import calibrate as cal
import calibrate._select._core as sel_mod
from calibrate import build_model
from calibrate._density import batched_curves, neg_log_joint_and_grad
from calibrate._kfold import fold_ids, kfold_pointwise, masked_model
from calibrate._select._fit import laplace_candidate

TRUTH = {"rho": 0.04, "delta": 0.002, "b": 0.05, "A0": 0.05, "K": 0.5, "n": 2.0}
CFG = cal.FitConfig(method="laplace", chains=1, samples=200, map_starts=2, map_steps=100, dt=5.0)


def _data(runs=2, steps=np.arange(0, 200, 20), seed=0):
    return cal.synthetic_curves(
        "C1-AND", TRUTH, key=jax.random.key(seed), steps=steps, runs=runs, n_eval=40
    )


def test_folds_cover_each_run_and_keep_agents_together():
    cm = build_model(_data(runs=3), "C1-AND", CFG)
    f = fold_ids(cm, 5)
    assert set(f) == set(range(5))
    for r in range(3):
        for s in np.unique(cm.t_idx):
            at = (cm.run_idx == r) & (cm.t_idx == s)
            assert len(set(f[at])) == 1  # one evaluation point, all agents, one fold
        # every fold holds points of every run, spread over its steps
        for k in range(5):
            held = np.unique(cm.t_idx[(cm.run_idx == r) & (f == k)])
            assert held.size == 2 and held.max() - held.min() >= 5
    with pytest.raises(ValueError):
        fold_ids(cm, 1)


def test_masked_model_is_the_model_of_the_remaining_data():
    data = _data()
    cm = build_model(data, "C1-AND", CFG)
    held = fold_ids(cm, 5) == 2
    kept = data.table.iloc[np.flatnonzero(~held)]
    sub = build_model(cal.CurveData.from_table(kept.reset_index(drop=True)), "C1-AND", CFG)
    assert np.array_equal(sub.ts, cm.ts)  # every step stays observed in some run
    x = 0.3 * jax.random.normal(jax.random.key(1), (cm.layout.size,))
    v_mask, g_mask = neg_log_joint_and_grad(masked_model(cm, held), x)
    v_sub, g_sub = neg_log_joint_and_grad(sub, x)
    assert float(v_mask) == pytest.approx(float(v_sub), rel=1e-12)
    np.testing.assert_allclose(np.asarray(g_mask), np.asarray(g_sub), rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_kfold_matches_brute_force_leave_fold_out():
    """Each fold refitted on the data without it (a new data set, the public Laplace fit)
    and its points scored by scipy's binomial pmf on the fitted model's curves."""
    data = _data(runs=2, steps=np.arange(0, 200, 25))  # 2 folds of equal size: one compile
    cm = dataclasses.replace(build_model(data, "C1-AND", CFG), name="")
    key = jax.random.key(5)

    def draws(model, k, f):
        post, _ = laplace_candidate(model, key=k)
        return {n: v.reshape(-1, *v.shape[2:]) for n, v in post.samples.items()}

    pw, folds = kfold_pointwise(cm, draws, k=2, key=key)
    t = data.table
    for f in range(2):
        held = folds == f
        kept = cal.CurveData.from_table(t.iloc[np.flatnonzero(~held)].reset_index(drop=True))
        sub = dataclasses.replace(build_model(kept, "C1-AND", CFG), name="")
        post, _ = laplace_candidate(sub, key=jax.random.fold_in(key, f))
        theta = post.run_params()  # (S, 1, D): pooled
        A = np.asarray(batched_curves(sub, jnp.asarray(theta), sub.ts))[:, 0]  # (S, T, N)
        rows = t.iloc[np.flatnonzero(held)]
        ti = np.searchsorted(sub.ts, rows["step"].to_numpy(float))
        ni = np.array([sub.network.names.index(a) for a in rows["agent"]])
        k = np.round(rows["competence"].to_numpy() * rows["n_eval"].to_numpy()).astype(int)
        ll = np.asarray(binom.logpmf(k[None], rows["n_eval"].to_numpy()[None], A[:, ti, ni]))
        brute = logsumexp(ll, axis=0) - np.log(ll.shape[0])
        np.testing.assert_allclose(pw[held], brute, rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite(pw))


def test_high_pareto_k_switches_that_candidate_to_kfold(monkeypatch):
    """Decision logic: only a candidate with a Pareto k > 0.7 is refitted by K-fold, its
    ranked elpd is the K-fold one, and the warning names it."""
    real = sel_mod.laplace_candidate
    calls = []

    def patched(cm, **kw):
        post, loo = real(cm, **kw)
        calls.append(kw.get("x0") is not None)
        loo.pareto_k = np.full(loo.pareto_k.shape, 0.3)  # k of the decision, not of the fit
        if np.asarray(cm.network.sign)[2, 1] < 0 and kw.get("x0") is None:  # I1: Y -| Z
            loo.pareto_k[3] = 0.9
        return post, loo

    monkeypatch.setattr(sel_mod, "laplace_candidate", patched)
    data = _data(runs=2, steps=np.arange(0, 200, 25))
    s = cal.select(data, cal.candidates(["C1", "I1"], ["AND"]), CFG, key=jax.random.key(0), kfold=3)
    rows = {r["label"]: r for r in s.ranking}
    assert rows["I1-AND"]["elpd_method"] == "kfold" and rows["C1-AND"]["elpd_method"] == "psis-loo"
    assert rows["I1-AND"]["elpd"] == pytest.approx(rows["I1-AND"]["elpd_kfold"])
    assert rows["C1-AND"]["elpd"] == pytest.approx(rows["C1-AND"]["elpd_loo"])
    assert rows["I1-AND"]["n_pareto_k_high"] == 1 and rows["I1-AND"]["warning"]
    assert calls.count(True) == 3  # three warm-started fold refits
    assert len(s.warnings) == 1 and "I1-AND" in s.warnings[0] and "3-fold" in s.warnings[0]
    assert s.kfold["candidates"] == ["I1-AND"]
    off = cal.select(
        data, cal.candidates(["C1", "I1"], ["AND"]), CFG, key=jax.random.key(0), kfold=0
    )
    assert all(r["elpd_method"] == "psis-loo" for r in off.ranking) and len(off.warnings) == 1
    with pytest.raises(cal.ConfigError, match="kfold"):
        cal.select(data, cal.candidates(["C1", "I1"], ["AND"]), CFG, key=jax.random.key(0), kfold=1)
