"""Ranking statistics of motif selection against ArviZ and brute force; identified signs."""

import warnings

import numpy as np
import pytest

import simulate
from calibrate._compare import compare_pointwise, identified_structure, stacking_weights
from calibrate._posterior import _az


def _fake_loglik(rng, shift, n=60, s=400):
    """Pointwise log-likelihood draws (1 chain, s draws, n points) of a fake model."""
    base = -1.0 - 0.5 * rng.random(n) - shift * rng.random(n)
    return base[None, None, :] + 0.1 * rng.standard_normal((1, s, n))


def test_compare_matches_arviz_compare():
    az = _az()
    rng = np.random.default_rng(3)
    idatas = {
        name: az.from_dict(
            posterior={"a": rng.standard_normal((1, 400))},
            log_likelihood={"obs": _fake_loglik(rng, sh)},
        )
        for name, sh in (("a", 0.0), ("b", 0.05), ("c", 0.4))
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = az.compare(idatas, ic="loo", method="stacking")
        pw = {k: np.asarray(az.loo(v, pointwise=True).loo_i) for k, v in idatas.items()}
    rows = {r["label"]: r for r in compare_pointwise(pw)}
    for name, row in ref.iterrows():
        r = rows[str(name)]
        assert r["elpd"] == pytest.approx(row["elpd_loo"], abs=1e-9)
        assert r["se"] == pytest.approx(row["se"], rel=1e-9)
        assert r["d_elpd"] == pytest.approx(row["elpd_diff"], abs=1e-9)
        assert r["dse"] == pytest.approx(row["dse"], rel=1e-9, abs=1e-12)
        assert r["weight"] == pytest.approx(row["weight"], abs=0.02)
    best = compare_pointwise(pw)[0]["label"]
    assert best == ref.index[0]


def test_stacking_weights_brute_force_and_indistinguishable_band():
    rng = np.random.default_rng(0)
    a = -1.0 - rng.random(50)
    b = a + 0.3 * rng.standard_normal(50)  # each better on some points
    w = stacking_weights(np.stack([a, b]))
    grid = np.linspace(0, 1, 20001)
    score = [np.sum(np.log(g * np.exp(a) + (1 - g) * np.exp(b))) for g in grid]
    assert w[0] == pytest.approx(grid[int(np.argmax(score))], abs=2e-3)
    assert w.sum() == pytest.approx(1.0)
    # band: d_elpd <= 2 dse; a copy of the best plus noise of known size
    far = compare_pointwise({"a": a, "far": a - 0.5})[1]  # worse by 0.5 on every point
    assert far["d_elpd"] == pytest.approx(25) and far["dse"] == pytest.approx(0, abs=1e-9)
    assert not far["indistinguishable"]
    rows = {r["label"]: r for r in compare_pointwise({"a": a, "b": b})}
    top = max(rows.values(), key=lambda r: r["elpd"])
    assert top["indistinguishable"] and top["d_elpd"] == 0.0
    other = rows["b" if top["label"] == "a" else "a"]
    diff = (a - b) if top["label"] == "a" else (b - a)
    assert other["dse"] == pytest.approx(np.sqrt(50 * diff.var()))
    assert other["indistinguishable"] == (other["d_elpd"] <= 2 * other["dse"])


def _net(name):
    return simulate.Network.from_spec(simulate.ffl_spec(*name.split("-")))


def test_identified_structure():
    every = [_net(f"{m}-{g}") for m in simulate.MOTIFS for g in ("AND", "OR")]
    assert identified_structure(every) == {"X->Y": None, "X->Z": None, "Y->Z": None, "gate": None}
    c1 = identified_structure([_net("C1-AND"), _net("C1-OR")])
    assert c1 == {"X->Y": "+", "X->Z": "+", "Y->Z": "+", "gate": None}
    pair = identified_structure([_net("C1-AND"), _net("I1-AND")])  # I1: Y -| Z
    assert pair == {"X->Y": "+", "X->Z": "+", "Y->Z": None, "gate": "AND"}
    one = identified_structure([_net("I2-OR")])
    signs = np.asarray(_net("I2-OR").sign)
    assert one["X->Y"] == ("+" if signs[1, 0] > 0 else "-") and one["gate"] == "OR"


def test_blocked_se_is_the_se_of_the_blocks_summed_differences():
    """The se of a difference by blocks against a direct computation, and what it is for:
    a misfit shared by the points of one block (correlated, not independent evidence)
    widens the se and the indistinguishable set; independent noise leaves it near the
    pointwise se."""
    rng = np.random.default_rng(0)
    n_blocks, per = 12, 20
    blocks = np.repeat(np.arange(n_blocks), per)
    base = rng.normal(-2.0, 0.3, n_blocks * per)
    shared = np.repeat(rng.normal(0.0, 0.25, n_blocks), per)  # one offset per block
    pw = {"a": base, "b": base - 0.02 + shared + rng.normal(0, 0.01, base.size)}
    rows = {r["label"]: r for r in compare_pointwise(pw, blocks=blocks)}
    diff = pw["a"] - pw["b"] if rows["a"]["d_elpd"] == 0 else pw["b"] - pw["a"]
    sums = np.array([diff[blocks == b].sum() for b in range(n_blocks)])
    loser = "b" if rows["a"]["d_elpd"] == 0 else "a"
    assert rows[loser]["dse"] == pytest.approx(np.sqrt(n_blocks * sums.var()), rel=1e-12)
    assert rows[loser]["dse_points"] == pytest.approx(np.sqrt(diff.size * diff.var()), rel=1e-12)
    assert rows[loser]["dse"] > 3 * rows[loser]["dse_points"]  # the shared misfit counts once
    plain = {r["label"]: r for r in compare_pointwise(pw)}
    assert not plain[loser]["indistinguishable"] and rows[loser]["indistinguishable"]
    # independent noise: the blocked se estimates the same quantity as the pointwise one
    noise = {"a": base, "b": base - 0.01 + rng.normal(0, 0.2, base.size)}
    r = next(x for x in compare_pointwise(noise, blocks=blocks) if x["d_elpd"] > 0)
    assert 0.5 < r["dse"] / r["dse_points"] < 1.6
    with pytest.raises(ValueError, match="one block per observation"):
        compare_pointwise(pw, blocks=blocks[:-1])
    with pytest.raises(ValueError, match=">= 2 blocks"):
        compare_pointwise(pw, blocks=np.zeros(base.size))
