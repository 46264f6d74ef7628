"""The predictor's batch-last kernels against their oracles: ``classify_batch`` against
``simulate.classify`` (every regime, curves on the edges of its thresholds, failed and
divergent curves) and ``band_quantiles`` against ``jnp.quantile``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from calibrate._predict._classify import classify_batch
from calibrate._predict._fast import BAND_LEVELS, band_quantiles, curve_regimes

T = 200
NAMES = ("X", "Y", "Z")


def _curves(n: int, seed: int) -> np.ndarray:
    """``(n, T, 3)`` curves of every shape the labels tell apart: rises and falls, single
    overshoots, damped, sustained and growing oscillations, slow drifts, decays to ~0, and
    amplitudes scaled to sit at the 2 % band (the classifier's threshold)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, T)[None, :, None]
    shape = (n, 1, 3)
    u = lambda lo, hi: rng.uniform(lo, hi, shape)  # noqa: E731
    base = u(0.0, 0.9) + u(-0.9, 0.9) * (1 - np.exp(-t / u(0.02, 2.0)))
    w = 2 * np.pi * u(0.5, 12.0)
    osc = u(0.0, 0.3) * np.exp(-t * u(-2.0, 12.0)) * np.sin(w * t + u(0, 6.3))
    osc *= rng.random(shape) < 0.6
    pulse = u(0.0, 0.3) * np.exp(-(((t - u(0.05, 0.6)) / u(0.02, 0.2)) ** 2))
    pulse *= rng.random(shape) < 0.4
    drift = u(-0.2, 0.2) * t * (rng.random(shape) < 0.3)
    y = base + osc + pulse + drift
    # near the band: rescale the oscillation to 1.5-2.5 % of the level
    edge = rng.random(shape) < 0.2
    y = np.where(edge, 0.5 + 0.5 * 0.04 * u(0.5, 1.5) * np.sin(w * t), y)
    collapse = rng.random(shape) < 0.1
    y = np.where(collapse, u(0.0, 0.1) * np.exp(-t * u(0.0, 20.0)), y)
    return y


def _oracle(y: np.ndarray, ok: np.ndarray) -> np.ndarray:
    tj = jnp.linspace(0.0, 290.0, T)
    f = jax.jit(jax.vmap(lambda s, o: curve_regimes(tj, s, o, NAMES)))
    return np.asarray(f(jnp.asarray(y), jnp.asarray(ok)))


def test_labels_identical_to_simulate_classify():
    y = _curves(4000, 0)
    ok = np.ones(len(y), bool)
    ok[::97] = False  # solver failures: every node failed
    y[5, 50, 1] = 1e7  # divergence
    y[6, 80, 2] = np.nan  # a non-finite level
    new = np.asarray(jax.jit(classify_batch)(jnp.asarray(np.moveaxis(y, 0, -1)), ok)).T
    old = _oracle(y, ok)
    np.testing.assert_array_equal(new, old)
    # every regime occurs (not a vacuous agreement)
    assert set(np.unique(old).tolist()) == set(range(7)), np.unique(old, return_counts=True)


def test_labels_identical_in_float32():
    y = _curves(1000, 1).astype(np.float32)
    ok = np.ones(len(y), bool)
    with jax.enable_x64(False):
        new = np.asarray(jax.jit(classify_batch)(jnp.asarray(np.moveaxis(y, 0, -1)), ok)).T
        old = _oracle(y, ok)
    np.testing.assert_array_equal(new, old)


@pytest.mark.parametrize("draws", [200, 7, 1])
def test_band_quantiles_equal_jnp_quantile(draws):
    rng = np.random.default_rng(draws)
    A = jnp.asarray(rng.random((3, draws, 11, 3)))
    A = A.at[0, :, 0, 0].set(0.25)  # ties
    got = jax.jit(jax.vmap(band_quantiles))(A)
    want = jax.vmap(lambda a: jnp.quantile(a, jnp.asarray(BAND_LEVELS), axis=0))(A)
    assert got.shape == want.shape == (3, 4, 11, 3)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-15)


def _monotone(n: int, seed: int) -> np.ndarray:
    """``(n, T, 3)`` curves without a turning point: saturating rises and decays, plateaus,
    and ones with a wiggle of two cycles whose total counter-move is under 1 % of the level
    (inside the 2 % band: no zig-zag move)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, T)[None, :, None]
    u = lambda lo, hi: rng.uniform(lo, hi, (n, 1, 3))  # noqa: E731
    y = u(0.0, 0.5) + u(-0.5, 0.5) * (1 - np.exp(-t / u(0.01, 3.0)))
    scale = np.max(np.abs(y), axis=1, keepdims=True)
    wiggle = 0.02 / 10 * scale * np.sin(2 * np.pi * 2 * t)
    return y + wiggle * (rng.random((n, 1, 3)) < 0.5)


@pytest.mark.parametrize("kind", ["mixed", "no_turns"])
def test_shortcut_labels_identical_to_simulate_classify(kind):
    """``shortcut=True``: the scan is skipped for a batch without turning points (every
    label still simulate.classify's) and taken for one with them (mixed)."""
    y = _curves(1000, 2) if kind == "mixed" else _monotone(1000, 3)
    ok = np.ones(len(y), bool)
    yb = jnp.asarray(np.moveaxis(y, 0, -1))
    f = jax.jit(lambda a, o: classify_batch(a, o, shortcut=True))
    np.testing.assert_array_equal(np.asarray(f(yb, ok)).T, _oracle(y, ok))
    from calibrate._predict._classify import _no_turns

    h = jnp.maximum(0.02 * jnp.max(jnp.abs(yb), axis=0), 1e-6)
    assert bool(_no_turns(yb, h)) is (kind == "no_turns")  # each branch is exercised
    if kind == "no_turns":  # a single dip of 3 % in one curve takes the scan again
        y2 = y.copy()
        y2[0, 100:, 0] -= 0.03 * np.abs(y2[0, -1, 0]) + 0.01
        yb2 = jnp.asarray(np.moveaxis(y2, 0, -1))
        h2 = jnp.maximum(0.02 * jnp.max(jnp.abs(yb2), axis=0), 1e-6)
        assert not bool(_no_turns(yb2, h2))
        np.testing.assert_array_equal(np.asarray(f(yb2, ok)).T, _oracle(y2, ok))
