"""Simulation-based calibration (slow): ranks of prior-drawn truths are uniform."""

import jax
import numpy as np
import pytest
from scipy import stats

import calibrate as cal

LAPLACE_OVERCONFIDENT = pytest.mark.xfail(
    strict=True,
    reason="measured 2026-11-30: Laplace + PSIS over prior-drawn truths gives a "
    "U-shaped rank histogram [202, 112, 101, 97, 168] (p = 4e-13): too narrow where the "
    "posterior is not Gaussian; use NUTS for calibrated intervals",
)


@pytest.mark.slow
@pytest.mark.parametrize("method", [pytest.param("laplace", marks=LAPLACE_OVERCONFIDENT), "nuts"])
def test_sbc_rank_uniformity(method):
    steps = np.arange(0, 300, 10)
    base = cal.synthetic_curves("C1", {}, key=jax.random.key(0), steps=steps)
    cfg = cal.FitConfig(method=method, chains=2, samples=200, warmup=200, solver="rk4", dt=5.0)
    cm = cal.build_model(base, "C1", cfg)
    lay = cm.layout
    n_rep, n_bins = (40, 5) if method == "laplace" else (20, 4)
    ranks = []
    rng = np.random.default_rng(1)
    for rep in range(n_rep):
        z = rng.standard_normal(lay.size)
        theta = np.asarray(lay.to_natural(lay.loc + lay.scale * z))
        truth = dict(zip(lay.names, theta.tolist(), strict=True))
        data = cal.synthetic_curves("C1", truth, key=jax.random.key(rep), steps=steps, runs=2)
        post = cal.fit(data, "C1", cfg, key=jax.random.key(1000 + rep))
        p = post.params()
        thin = slice(None, None, 4)  # reduce autocorrelation
        ranks.append([float(np.mean(p[n][:, thin] < truth[n])) for n in lay.names])
    ranks = np.asarray(ranks)  # (reps, D) in [0, 1]
    counts = np.histogram(ranks.ravel(), bins=n_bins, range=(0, 1))[0]
    pval = stats.chisquare(counts).pvalue
    assert pval > 0.001, f"rank histogram {counts.tolist()} not uniform (p={pval:.2g})"
