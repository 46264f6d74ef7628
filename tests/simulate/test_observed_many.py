"""The batched real-run rule agrees with the per-run rule it vectorises (the oracle)."""

import numpy as np
import pytest

import simulate
from simulate import Regime


def _curves(rng: np.random.Generator, b: int, t: int, kind: int | None = None) -> np.ndarray:
    """Measured-looking curves: rises, falls from the start, rise-then-collapse, oscillations
    and flat noise, read on 64 probes."""
    x = np.linspace(0.0, 1.0, t)
    kinds = []
    for i in range(b):
        k = i % 5 if kind is None else kind
        lo, hi = rng.uniform(0.05, 0.5), rng.uniform(0.5, 0.95)
        if k == 0:
            p = lo + (hi - lo) * (1 - np.exp(-4 * x))
        elif k == 1:
            p = hi * np.exp(-rng.uniform(0, 6) * x)
        elif k == 2:
            c = rng.uniform(0.2, 0.8)
            p = np.where(x < c, lo + (hi - lo) * x / c, hi * np.exp(-8 * (x - c)))
        elif k == 3:
            p = 0.5 + rng.uniform(0.05, 0.3) * np.sin(2 * np.pi * rng.uniform(2, 5) * x)
        else:
            p = np.full(t, rng.uniform(0.05, 0.9))
        kinds.append(np.clip(p, 0, 1))
    p = np.stack(kinds)
    return rng.binomial(64, p) / 64


@pytest.mark.parametrize("t", [4, 7, 16, 31])
def test_fall_collapse_many_matches_fall_collapse(t: int) -> None:
    rng = np.random.default_rng(t)
    y = _curves(rng, 200, t)
    n_eval = rng.choice([16.0, 64.0], size=200)
    got = simulate.fall_collapse_many(y, n_eval)
    want = [simulate.fall_collapse(y[i], float(n_eval[i])).collapsed for i in range(200)]
    assert got.dtype == bool and got.tolist() == want
    assert 0 < got.sum() < 200  # both verdicts occur, so the comparison can fail


def test_classify_observed_many_matches_classify_observed() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(0, 160, 10.0)
    runs = np.stack([_curves(rng, 3, t.size, kind=i % 5).T for i in range(60)])  # (B, T, 3)
    codes = simulate.classify_observed_many(t, runs, 64.0, names=("X", "Y", "Z"))
    want = [
        simulate.classify_observed(t, runs[i], 64.0, names=("X", "Y", "Z"))["regime"]
        for i in range(len(runs))
    ]
    assert [simulate.REGIME_NAMES[Regime(int(c))] for c in codes] == want
    assert len(set(want)) >= 3  # several regimes, so the comparison can fail


def test_many_refuses_bad_shapes() -> None:
    with pytest.raises(simulate.AgentmotifsError, match="shape"):
        simulate.classify_observed_many(np.arange(5.0), np.zeros((2, 4, 3)), 64)
    with pytest.raises(simulate.AgentmotifsError, match="finite"):
        simulate.fall_collapse_many(np.full((2, 5), np.nan), 64)
    with pytest.raises(simulate.AgentmotifsError, match="n_eval"):
        simulate.fall_collapse_many(np.zeros((2, 5)), 0)
