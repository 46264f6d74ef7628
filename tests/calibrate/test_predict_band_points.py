"""``calibrate.predict``'s ``band_points`` (bands at fewer steps, linear in between) and
the float32 program's wider quad cells (issue 33 §2), against the per-step float64 path."""

from __future__ import annotations

import numpy as np
import pytest

import calibrate as cal
from calibrate._predict._band_points import (
    band_steps,
    interpolate,
    interpolate_about,
    interpolation_matrix,
)

SETTINGS = [{"rl.lr": v} for v in (2e-5, 1e-4, 5.5e-4, 3e-3)]
POINTS, K = 60, 12


@pytest.fixture(scope="module")
def fit(lr_family_fit):
    """The session's shared laplace fit of the 3-lr family (tests/calibrate/conftest.py)."""
    return lr_family_fit[0]


def _interp(full: np.ndarray, t: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Oracle: ``numpy.interp`` along the step axis (-2) of the values at ``steps``."""
    moved = np.moveaxis(full, -2, -1)
    out = np.apply_along_axis(lambda v: np.interp(t, t[steps], v[steps]), -1, moved)
    return np.moveaxis(out, -1, -2)


def test_band_steps_and_interpolation():
    s = band_steps(60, 12)
    assert s is not None and s[0] == 0 and s[-1] == 59 and s.size == 12
    assert np.all(np.diff(s) > 0)
    assert band_steps(60, None) is None and band_steps(60, 60) is None
    for bad in (1, 0, 2.5, True, "4"):
        with pytest.raises(cal.ConfigError, match="band_points"):
            band_steps(60, bad)  # pyright: ignore[reportArgumentType]
    t = np.geomspace(1.0, 300.0, 40)
    k = band_steps(40, 7)
    assert k is not None
    v = np.sin(t / 50.0)
    expect = _interp(v[:, None], t, k)[:, 0]
    np.testing.assert_allclose(interpolation_matrix(t, k) @ v[k], expect, rtol=0, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interpolate_is_numpy_interp_along_any_axis(dtype):
    """The matrix product of :func:`interpolate` against ``numpy.interp`` (oracle), on the
    band axis of ``(S, 4, K, N)`` and ``(S, K, N)`` arrays, in their dtype."""
    t = np.linspace(0.0, 290.0, 50)
    k = band_steps(50, 9)
    assert k is not None
    rng = np.random.default_rng(3)
    W = interpolation_matrix(t, k)
    for shape, axis in (((5, 4, 50, 3), 2), ((5, 50, 3), 1)):
        full = rng.random(shape).astype(dtype)
        got = interpolate(W, np.take(full, k, axis=axis), axis=axis)
        expect = np.moveaxis(_interp(np.moveaxis(full, axis, -2), t, k), -2, axis)
        assert got.dtype == dtype and got.shape == shape
        tol = 1e-12 if dtype == np.float64 else 1e-6
        np.testing.assert_allclose(got, expect, rtol=0, atol=tol)
        np.testing.assert_array_equal(np.take(got, k, axis=axis), np.take(full, k, axis=axis))


def test_interpolate_about_follows_the_carrier():
    """Carrier plus ``numpy.interp`` of the distance (oracle); the band steps' values kept;
    a band that is the carrier plus a constant comes back exactly (a rise in the first
    interval that a plain linear interpolation misses)."""
    t = np.linspace(0.0, 100.0, 41)
    k = band_steps(41, 5)
    assert k is not None
    W = interpolation_matrix(t, k)
    mean = (1 - np.exp(-t / 2.0))[None, :, None] * np.ones((2, 1, 3))  # (S, T, N)
    band = mean[:, None] + np.array([-0.1, -0.05, 0.05, 0.1])[None, :, None, None]
    got = interpolate_about(W, k, band[:, :, k], mean[:, None], axis=2)
    np.testing.assert_allclose(got, band, rtol=0, atol=1e-14)
    assert np.max(np.abs(interpolate(W, band[:, :, k], axis=2) - band)) > 0.3
    rng = np.random.default_rng(0)
    other = rng.random(band.shape)
    got = interpolate_about(W, k, other[:, :, k], mean[:, None], axis=2)
    want = mean[:, None] + _interp(other - mean[:, None], t, k)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[:, :, k], other[:, :, k], rtol=0, atol=1e-15)
    # a (S, T, N) mean in float32 about a float64 carrier, the step axis counted from the end
    low = other[:, 1].astype(np.float32)
    got = interpolate_about(W, k, low[:, k], mean, axis=-2)
    assert got.dtype == np.float32
    want = mean + _interp(low - mean, t, k)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("band", ["mean", "new_run"])
def test_band_points_equal_the_per_step_band_at_their_steps(fit, band):
    """The mean-curve band at the band steps equals the per-step band (1e-12) and is
    ``numpy.interp`` of it in between; finals, regimes and the new run's finals are those of
    the per-step call (its last step too: it comes from ``new_final``)."""
    full = cal.predict(fit, SETTINGS, max_draws=32, n_points=POINTS, band=band)
    few = cal.predict(fit, SETTINGS, max_draws=32, n_points=POINTS, band=band, band_points=K)
    steps = band_steps(POINTS, K)
    assert steps is not None
    assert full.bands is not None and few.bands is not None
    assert few.mean is not None and full.mean is not None
    assert few.bands.shape == full.bands.shape
    carrier = full.mean[:, None]  # the band about the mean curve, linear in between
    want = carrier + _interp(full.bands - carrier, full.t, steps)
    np.testing.assert_allclose(few.bands, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(few.mean, full.mean, rtol=0, atol=1e-12)  # exact at every step
    # the interpolation is not the identity (the check above can fail), and following the
    # mean curve misses the per-step band by less than a plain linear interpolation
    miss = np.max(np.abs(few.bands - full.bands))
    assert 1e-4 < miss < 0.5 * np.max(np.abs(_interp(full.bands, full.t, steps) - full.bands))
    np.testing.assert_array_equal(few.codes, full.codes)
    np.testing.assert_array_equal(few.final, full.final)
    if band == "new_run":
        np.testing.assert_array_equal(few.new_final, full.new_final)
        np.testing.assert_array_equal(few.new_codes, full.new_codes)
        assert few.new_bands is not None and full.new_bands is not None
        assert few.new_bands.shape == full.new_bands.shape
        np.testing.assert_array_equal(few.new_bands[:, :, -1], full.new_bands[:, :, -1])
        # fewer noise draws, from the same stream: Monte Carlo noise of 32 draws at n_eval
        assert np.max(np.abs(few.new_bands[:, :, steps] - full.new_bands[:, :, steps])) < 0.2
        kept = cal.predict(fit, SETTINGS, max_draws=32, n_points=POINTS, band_points=K,
                           keep_curves=True)  # fmt: skip
        for name in ("bands", "mean", "new_bands", "new_mean"):
            np.testing.assert_allclose(getattr(kept, name), getattr(few, name), atol=1e-12)


def test_float32_with_band_points_agrees_with_float64_to_1e_4(fit):
    """The float32 program (wider quad cells) against float64, both at the same band steps:
    finals and the bands at the band steps within 1e-4; in between the bands follow each
    one's mean curve, so they differ by no more than the mean curves do (float32's wider
    cells miss the fastest setting's first steps by up to ~1e-3 at 60 points) plus 1e-4."""
    f64 = cal.predict(fit, SETTINGS, max_draws=32, n_points=POINTS, band="mean", band_points=K)
    f32 = cal.predict(fit, SETTINGS, max_draws=32, n_points=POINTS, band="mean", band_points=K,
                      dtype="float32")  # fmt: skip
    assert f32.bands is not None and f64.bands is not None
    assert f32.mean is not None and f64.mean is not None
    steps = band_steps(POINTS, K)
    np.testing.assert_allclose(f32.final, f64.final, rtol=0, atol=1e-4)
    np.testing.assert_allclose(f32.bands[:, :, steps], f64.bands[:, :, steps], rtol=0, atol=1e-4)
    mean_gap = np.abs(f32.mean - f64.mean)[:, None]
    assert np.all(np.abs(f32.bands - f64.bands) <= mean_gap + 1e-4)
    assert np.mean(f32.codes == f64.codes) >= 0.99


def test_float32_mean_curve_agrees_with_float64_at_every_step(fit):
    """float32's first output intervals keep the fit's quad cells (``FLOAT32_FINE_GAPS``):
    its mean curve is float64's to 1e-5 at every step, the fastest setting's first steps
    included (with the wide cells throughout they differed by ~1e-3 there)."""
    kw = {"max_draws": 32, "n_points": POINTS, "band": "mean", "band_points": K}
    f64 = cal.predict(fit, SETTINGS, **kw)
    f32 = cal.predict(fit, SETTINGS, dtype="float32", **kw)
    assert f32.mean is not None and f64.mean is not None
    np.testing.assert_allclose(f32.mean, f64.mean, rtol=0, atol=1e-5)


def test_band_points_must_be_an_integer_before_any_solve(fit):
    with pytest.raises(cal.ConfigError, match="band_points"):
        cal.predict(fit, SETTINGS[:1], max_draws=4, n_points=POINTS, band_points=1)
