"""The compiled new-run path of ``calibrate.predict(band_points=K)`` (issue 33 §2): its
exact binomial sampler against scipy's binomial, its host quantiles against
``numpy.quantile``, and the quad solver's static row selection against fancy indexing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from calibrate._predict import _binomial
from calibrate._predict._banded import sorted_bands
from calibrate._predict._fast import BAND_LEVELS


@pytest.mark.parametrize("n", [1, 7, 64, 100])
def test_alias_tables_give_the_binomial_pmf_on_every_row(n):
    """Each row's keep-probabilities and aliases imply exactly scipy's pmf at ``a / GRID``."""
    prob, alias = _binomial._alias_table(n)
    implied = np.zeros((_binomial.GRID, n + 1))
    rows = np.arange(_binomial.GRID)
    for j in range(n + 1):
        implied[:, j] += prob[:, j] / (n + 1)
        np.add.at(implied, (rows, alias[:, j]), (1 - prob[:, j]) / (n + 1))
    pmf = stats.binom.pmf(np.arange(n + 1)[None], n, (rows / _binomial.GRID)[:, None])
    np.testing.assert_allclose(implied, pmf, rtol=0, atol=1e-13)
    assert np.all((prob >= 0) & (prob <= 1))


def _counts(n: np.ndarray, p: np.ndarray, draws: int, seed: int) -> np.ndarray:
    prob, alias, table = _binomial.alias_tables(n)
    bits = np.random.default_rng(seed).integers(0, 2**32, (draws, n.size), dtype=np.uint32)
    f = jax.jit(_binomial.binomial_counts)
    args = (bits, np.broadcast_to(p, (draws, n.size)), n.astype(np.int32), prob, alias, table)
    return np.asarray(f(*(jnp.asarray(a) for a in args)))


@pytest.mark.parametrize("p", [0.003, 0.05, 0.3337, 0.5, 0.97, 0.9995])
def test_binomial_counts_follow_scipy_binomial(p):
    """Chi-square goodness of fit (tails pooled below 5 expected) of 2e5 draws per agent
    at probe counts 7, 64 and 100 (one table shared by two agents), p off the grid too;
    a mean shifted by one probe in 100 fails it (the test can fail)."""
    n = np.array([7, 100, 64, 100])
    k = _counts(n, np.full(n.size, p), 200_000, seed=int(p * 1e4))
    pvals = []
    for i, ni in enumerate(n):
        obs = np.bincount(k[:, i], minlength=ni + 1)
        exp = stats.binom.pmf(np.arange(ni + 1), ni, p) * k.shape[0]
        big = exp >= 5
        o = np.append(obs[big], obs[~big].sum())
        e = np.append(exp[big], exp[~big].sum())
        keep = e > 0
        chi = float(np.sum((o[keep] - e[keep]) ** 2 / e[keep]))
        pvals.append(stats.chi2.sf(chi, max(int(keep.sum()) - 1, 1)))
        shifted = np.bincount(np.minimum(k[:, i] + 1, ni), minlength=ni + 1)
        if big.sum() > 3:  # one probe more is detected
            s = np.append(shifted[big], shifted[~big].sum())
            assert stats.chi2.sf(np.sum((s[keep] - e[keep]) ** 2 / e[keep]), 1) < 1e-6
    assert min(pvals) > 1e-4, pvals


def test_float32_inversion_stops_where_its_cdf_rounds_to_one():
    """float32, the largest uniform (1 - 2^-24: every cell kept, the word's low product
    word at its top) against 2e5 small thinning probabilities: the inversion's CDF gets
    within rounding of 1 and stops there (Y <= 3 at n q <= 0.012), no draw needs the
    whole inversion. Without the stop, 21127 of them were flagged and the whole one ran
    on to Y = n."""
    n, cells = 50, 51
    bits = (2**32 - 1) // cells  # the word times 51: high word 0 (cell 0), low word top
    p = np.geomspace(1e-7, 2.4e-4, 200_000).astype(np.float32)  # below the grid's first row
    with jax.enable_x64(False):
        prob = jnp.ones(_binomial.GRID * cells, jnp.float32)  # every cell kept: w = v
        alias = jnp.tile(jnp.arange(cells, dtype=jnp.int32), _binomial.GRID)
        args = (jnp.full(p.shape, bits, jnp.uint32), jnp.asarray(p), jnp.full(p.shape, n),
                jnp.zeros(p.shape, jnp.int32), prob, alias)  # fmt: skip
        draw = jax.jit(_binomial._draw, static_argnames=("width", "whole", "terms"))
        k, need = draw(*args, width=cells, whole=False, terms=4)
        whole, _ = draw(*args, width=cells, whole=True, terms=4)
    assert int(np.sum(need)) == 0 and int(np.max(k)) <= 3
    np.testing.assert_array_equal(np.asarray(whole), np.asarray(k))
    assert int(np.max(k)) >= 2  # the top uniform: far in the tail, not at Y = 0


def test_logged_values_are_binomial_with_the_offset_in_blocks():
    """The new run's logged finals: over more settings than one block (the last padded),
    each agent's k / n follows Binomial(n, clip(A + offset)) (chi-square), NaN stays NaN,
    float32 in gives float32 out, and the values depend only on the words (two calls
    agree; a block boundary changes nothing)."""
    n = np.array([100, 64, 7])
    s, g = _binomial.ROWS + 37, 40
    A = np.full((s, g, 3), 0.4)
    A[:, :, 1] = 0.8
    offset = np.zeros((g, 3))
    offset[:, 1] = 0.25  # clipped at 1 for agent 1: every probe passes
    offset[:, 2] = -0.1
    A[3, 5, 0] = np.nan
    words = np.random.default_rng(3).integers(0, 2**32, (s, g, 3), dtype=np.uint32)
    y = _binomial.logged_values(A, n, offset, words)
    assert y.shape == A.shape and y.dtype == np.float64
    assert np.isnan(y[3, 5, 0]) and np.isnan(y).sum() == 1
    np.testing.assert_array_equal(y[:, :, 1], 1.0)
    for i, p in ((0, 0.4), (2, 0.3)):
        v = y[:, :, i].ravel()
        k = np.round(v[np.isfinite(v)] * n[i]).astype(int)
        obs = np.bincount(k, minlength=n[i] + 1)
        exp = stats.binom.pmf(np.arange(n[i] + 1), n[i], p) * k.size
        big = exp >= 5
        o, e = np.append(obs[big], obs[~big].sum()), np.append(exp[big], exp[~big].sum())
        assert stats.chi2.sf(np.sum((o - e) ** 2 / e), big.sum()) > 1e-4
    half = _binomial.logged_values(A[:50], n, offset, words[:50])
    np.testing.assert_array_equal(half, y[:50])
    y32 = _binomial.logged_values(A.astype(np.float32), n, offset, words)
    assert y32.dtype == np.float32
    np.testing.assert_array_equal(y32, y.astype(np.float32))
    shifted = _binomial.logged_values(A + 0.1, n, offset, words)  # the test can fail
    assert np.nanmean(shifted[:, :, 0]) > np.nanmean(y[:, :, 0]) + 0.05


def test_binomial_counts_at_the_ends_and_many_agents():
    """p = 0 and 1 give 0 and n; p just below 1 (the thinning's largest q) stays within n;
    float32 gives the same counts as float64 off the grid's edges."""
    n = np.array([5, 100, 256])
    assert np.all(_counts(n, np.zeros(3), 1000, 1) == 0)
    assert np.all(_counts(n, np.ones(3), 1000, 2) == n)
    k = _counts(n, np.full(3, 1 - 1e-6), 20_000, 3)
    assert np.all(k <= n) and np.all(k >= n - 2)
    prob, alias, table = _binomial.alias_tables(n)
    bits = np.random.default_rng(4).integers(0, 2**32, (5000, 3), dtype=np.uint32)
    p = np.random.default_rng(5).uniform(0.01, 0.99, (5000, 3))
    k64 = _binomial.binomial_counts(*(jnp.asarray(a) for a in (bits, p, n, prob, alias, table)))
    with jax.enable_x64(False):
        k32 = _binomial.binomial_counts(
            *(jnp.asarray(a) for a in (bits, p.astype(np.float32), n, prob, alias, table))
        )
    assert np.mean(np.asarray(k32) == np.asarray(k64)) > 0.999
    with pytest.raises(ValueError, match="probe counts"):
        _binomial.alias_tables(np.array([0, 5]))
    with pytest.raises(ValueError, match="probe counts"):
        _binomial.alias_tables(np.array([_binomial.MAX_N + 1]))


@pytest.mark.parametrize("terms", [0, 1, _binomial.TERMS])
def test_truncated_inversion_flags_the_draws_that_need_more(terms):
    """``whole=False`` gives the counts of ``whole=True`` but ``-1`` where the thinning
    needs more than ``TERMS`` terms; with few terms there are such draws, and they are the
    ones whose count exceeds its alias stage (an independent count from ``X``: the counts
    with ``q = 0``, i.e. ``p`` on the grid)."""
    n = np.array([100, 256, 7])
    prob, alias, table = _binomial.alias_tables(n)
    rng = np.random.default_rng(terms)
    bits = rng.integers(0, 2**32, (40_000, 3), dtype=np.uint32)
    p = rng.uniform(0.0, 1.0, (40_000, 3))
    p[:5000] = 1 - rng.uniform(0, 2.0 / _binomial.GRID, (5000, 3))  # the largest q
    grid = np.floor(p * _binomial.GRID) / _binomial.GRID
    args = [jnp.asarray(a) for a in (bits, p, n, prob, alias, table)]
    whole = np.asarray(_binomial.binomial_counts(*args))
    part = np.asarray(_binomial.binomial_counts(*args, whole=False, terms=terms))
    alias_only = np.asarray(_binomial.binomial_counts(args[0], jnp.asarray(grid), *args[2:]))
    flagged = part < 0
    np.testing.assert_array_equal(part[~flagged], whole[~flagged])
    np.testing.assert_array_equal(flagged, (whole - alias_only > terms) & (p < 1))
    if terms < 2:
        assert flagged.sum() > 10


@pytest.mark.parametrize("draws", [200, 7, 1])
def test_sorted_bands_are_numpy_quantile(draws):
    """Float values (a NaN column too) and integer counts with a per-agent scale."""
    rng = np.random.default_rng(draws)
    a = rng.random((9, 5, 3, draws)).astype(np.float32)
    a[2, 1, 0, 0] = np.nan
    mean, q = sorted_bands(a)
    want = np.moveaxis(np.quantile(a.astype(float), BAND_LEVELS, axis=-1), 0, 1)
    np.testing.assert_allclose(q, want, rtol=0, atol=1e-7)
    assert np.isnan(q[2, :, 1, 0]).all() and np.isnan(mean[2, 1, 0])
    np.testing.assert_allclose(mean, a.mean(-1, dtype=float), rtol=1e-12)
    k = rng.integers(0, 65, (9, 5, 3, draws)).astype(np.int16)
    scale = np.array([64, 10, 100])
    mean, q = sorted_bands(k, scale=scale)
    y = k / scale[:, None]
    want = np.moveaxis(np.quantile(y, BAND_LEVELS, axis=-1), 0, 1)
    np.testing.assert_allclose(q, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mean, y.mean(-1), rtol=0, atol=1e-12)


def test_quad_rows_are_fancy_indexing():
    from calibrate._quad import _rows

    a = jnp.arange(40.0).reshape(20, 2)
    for index in ([0, 3, 4, 5, 9], list(range(20)), [1], [0, 2, 4, 19]):
        np.testing.assert_array_equal(_rows(a, np.asarray(index)), np.asarray(a)[index])
    traced = jax.jit(_rows)(a, jnp.asarray([0, 3, 4]))  # a traced index: a gather
    np.testing.assert_array_equal(traced, np.asarray(a)[[0, 3, 4]])


def test_band_points_forecast_does_not_depend_on_the_chunking(lr_family_fit, monkeypatch):
    """Settings solved one per chunk give the arrays of one chunk of all (the noise words
    and the new run's final noise are drawn per setting, in order): the same draws, and
    the means and bands (about the mean curve) to rounding."""
    import calibrate as cal
    from calibrate._predict import _banded, _new_run

    fit = lr_family_fit[0]
    settings = [{"rl.lr": v} for v in (2e-5, 1e-4, 5.5e-4, 3e-3)]  # test_predict_band_points'

    def call():  # its shapes too: the first call reuses its compiled program
        return cal.predict(fit, settings, max_draws=32, n_points=60, band_points=12)

    calls = []
    batch = _new_run.banded_batch
    monkeypatch.setattr(_new_run, "banded_batch", lambda *a, **k: calls.append(1) or batch(*a, **k))
    one = call()
    assert len(calls) == 1
    monkeypatch.setattr(_new_run, "CHUNK_VALUES", 1)  # one setting per chunk:
    monkeypatch.setattr(_banded, "SOLVES_PER_STEP", 1)  # one per compiled step
    many = call()
    assert len(calls) == 1 + -(-len(settings) // len(jax.devices()))
    for name in ("final", "codes", "new_final", "new_codes"):
        a, b = getattr(one, name), getattr(many, name)
        assert a is not None and b is not None
        np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ("mean", "bands", "new_bands"):  # through a sum over draws: to rounding
        a, b = getattr(one, name), getattr(many, name)
        assert a is not None and b is not None
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14, err_msg=name)
    assert one.new_bands is not None and np.all(np.isfinite(one.new_bands))


def test_a_chunk_drawn_again_gives_the_same_forecast(lr_family_fit, monkeypatch):
    """With no thinning term for every draw, each chunk has draws that need the whole
    inversion: the chunk is drawn again with it, and the forecast is the one without."""
    import calibrate as cal
    from calibrate._predict import _new_run

    fit = lr_family_fit[0]
    settings = [{"rl.lr": v} for v in (2e-5, 1e-4, 5.5e-4, 3e-3)]

    def call():
        return cal.predict(fit, settings, max_draws=32, n_points=60, band_points=12)

    one = call()
    runs = []
    batch = _new_run.banded_batch
    monkeypatch.setattr(
        _new_run, "banded_batch", lambda *a, **k: runs.append(k["whole"]) or batch(*a, **k)
    )
    monkeypatch.setattr(_binomial, "TERMS", 0)  # a static argument of the program
    again = call()
    assert runs == [False, True]
    for name in ("final", "codes", "new_final", "new_codes", "mean", "bands", "new_bands"):
        np.testing.assert_array_equal(getattr(one, name), getattr(again, name), err_msg=name)


def test_band_points_with_random_effects_keep_the_new_runs_draws():
    """A fit with per-run effects (the new run solved with fresh ones, the second half of
    the program's solves): finals, regimes and the new run's final values and regimes are
    those of the per-step path; its band at the band steps is the per-step one up to Monte
    Carlo noise and wider than the mean-curve band (the run effects act)."""
    import calibrate as cal

    from .test_new_run import _synthetic_posterior

    post = _synthetic_posterior()
    assert post.model.re_index.size
    settings = [{"rl.lr": v} for v in (1e-4, 1e-3)]
    kw = {"max_draws": 200, "n_points": 30, "steps": 40.0}
    full = cal.predict(post, settings, **kw)
    few = cal.predict(post, settings, band_points=6, **kw)
    for name in ("final", "codes", "new_final", "new_codes"):
        np.testing.assert_array_equal(getattr(few, name), getattr(full, name), err_msg=name)
    steps = np.unique(np.round(np.linspace(0, 29, 6)).astype(int))
    assert few.new_bands is not None and full.new_bands is not None and few.bands is not None
    np.testing.assert_allclose(few.new_bands[:, :, steps], full.new_bands[:, :, steps], atol=0.08)
    width = lambda b: b[:, 3] - b[:, 0]  # noqa: E731  (90 % interval)
    assert np.mean(width(few.new_bands)[:, -1]) > 1.5 * np.mean(width(few.bands)[:, -1])
