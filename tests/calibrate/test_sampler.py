"""The compiled NUTS chains: pooled warm-up moments and draws of a known Gaussian."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.hmc_util import build_adaptation_schedule

import calibrate as cal
from calibrate import _sampler
from calibrate._sampler import compile_chains, pool_moments, run_chains, window_ends


def _welford(x):
    """Per-chain Welford state (mean, m2 dense, m2 diagonal, n) of draws ``(n, P)``."""
    mu = x.mean(0)
    d = x - mu
    return mu, d.T @ d, (d * d).sum(0), len(x)


def test_pooled_moments_are_those_of_all_draws():
    rng = np.random.default_rng(0)
    chains = [rng.normal(size=(n, 3)) * (1 + c) + c for c, n in enumerate((40, 25, 60, 33))]
    states = [_welford(x) for x in chains]
    mean = jnp.asarray(np.stack([s[0] for s in states]))
    n = jnp.asarray([s[3] for s in states])
    allx = np.concatenate(chains)
    for k, ref in ((1, np.cov(allx.T, ddof=0) * len(allx)), (2, allx.var(0) * len(allx))):
        m2 = jnp.asarray(np.stack([s[k] for s in states]))
        mu, m2p, npool = jax.vmap(lambda a, b, c: pool_moments(a, b, c, "i"), axis_name="i")(
            mean, m2, n
        )
        for c in range(4):  # every chain gets the pooled moments
            np.testing.assert_allclose(mu[c], allx.mean(0), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(m2p[c], ref, rtol=1e-10)
            assert int(npool[c]) == len(allx)


def test_shared_step_size_is_the_least_or_the_median(monkeypatch):
    eps = jnp.asarray([0.1, 0.35, 0.2, 0.5])
    for how, expect in (("min", 0.1), ("median", float(np.median(eps)))):
        monkeypatch.setattr(_sampler, "SHARED_STEP_SIZE", how)
        got = jax.vmap(lambda e: _sampler.shared_step_size(e, "i"), axis_name="i")(eps)
        np.testing.assert_allclose(got, np.full(4, expect), rtol=1e-15)
    monkeypatch.setattr(_sampler, "SHARED_STEP_SIZE", "mean")
    with pytest.raises(ValueError, match="SHARED_STEP_SIZE"):
        jax.vmap(lambda e: _sampler.shared_step_size(e, "i"), axis_name="i")(eps)


def test_window_ends_are_numpyros_middle_windows():
    assert window_ends(1000).tolist() == [99, 149, 249, 449, 949]
    sched = build_adaptation_schedule(500)
    assert window_ends(500).tolist() == [w.end for w in sched[1:-1]]
    assert window_ends(10).size == 0  # one window: no mass re-estimate


@pytest.mark.parametrize(
    ("method", "pool", "share"),
    [("vectorized", True, "min"), ("vectorized", True, "median"), ("sequential", False, "min")],
)
def test_chains_draw_a_correlated_gaussian(method, pool, share, monkeypatch):
    """Draws of N(mu, S) (S with correlation 0.9 and scales 0.1-3) recover mu and S within
    Monte Carlo error, started far away with an identity mass matrix."""
    mu = np.array([1.0, -2.0, 0.5])
    sd = np.array([0.1, 3.0, 1.0])
    corr = np.array([[1, 0.9, 0], [0.9, 1, 0.3], [0, 0.3, 1]])
    S = corr * np.outer(sd, sd)
    Sinv = jnp.asarray(np.linalg.inv(S))

    def potential(w):
        d = w - mu
        return 0.5 * d @ Sinv @ d

    cfg = cal.FitConfig(chains=4, samples=1500, warmup=500, pool_adaptation=pool)
    monkeypatch.setattr(_sampler, "SHARED_STEP_SIZE", share)
    prog = compile_chains(potential, 3, cfg, method)
    w, st = run_chains(
        prog, key=jax.random.key(3), starts=np.full((4, 3), 5.0), inverse_mass=np.eye(3)
    )
    div, steps, inv = st["diverging"], st["num_steps"], st["inverse_mass"]
    w = np.asarray(w).reshape(-1, 3)
    # pooled: every chain adapted (nearly: each adds its own last draw) the same matrix
    spread = np.max(np.abs(inv - inv.mean(0)) / np.sqrt(np.outer(sd, sd)) ** 2)
    assert (spread < 0.02) if pool else (spread > 0.05)
    assert st["step_size"].shape == (4,)
    # pooled: the chains share one step size (the least or the median of theirs)
    assert (np.ptp(st["step_size"]) == 0.0) if pool else (np.ptp(st["step_size"]) > 0.0)
    assert w.shape == (6000, 3) and div.shape == (4, 1500) and not div.any()
    assert steps.mean() < 16  # adapted dense mass: short trajectories
    np.testing.assert_allclose((w.mean(0) - mu) / sd, 0.0, atol=0.15)  # >= ~700 effective draws
    np.testing.assert_allclose(np.cov(w.T) / np.outer(sd, sd), corr, atol=0.12)
    np.testing.assert_allclose(w.std(0) / sd, 1.0, atol=0.12)


def test_unknown_chain_method_is_an_error_and_missing_devices_a_warning():
    with pytest.raises(ValueError, match="chain_method"):
        compile_chains(lambda w: jnp.sum(w**2), 2, cal.FitConfig(chains=2), "threads")
    if jax.local_device_count() < 2:
        cfg = cal.FitConfig(chains=2, samples=5, warmup=5)
        with pytest.warns(UserWarning, match="sequentially"):
            prog = compile_chains(lambda w: jnp.sum(w**2), 2, cfg, "parallel")
        assert prog.chain_method == "sequential"


def test_pool_adaptation_must_be_boolean():
    with pytest.raises(cal.ConfigError, match="pool_adaptation"):
        cal.FitConfig(pool_adaptation="yes")
    assert (
        cal.FitConfig.from_dict(cal.FitConfig(pool_adaptation=False).to_dict()).pool_adaptation
        is False
    )


def test_start_energies_given_or_computed_give_the_same_chains():
    """The program starts from the energies and gradients it is given (the fit passes the
    MAP objective's): exact ones reproduce the chains it computes itself, wrong ones not."""

    def potential(w):
        return 0.5 * jnp.sum((w - 1.0) ** 2 / jnp.array([0.5, 2.0]))

    cfg = cal.FitConfig(chains=2, samples=30, warmup=30)
    prog = compile_chains(potential, 2, cfg, "vectorized")
    starts = np.array([[0.0, 3.0], [2.0, -1.0]])
    pe, grad = jax.vmap(jax.value_and_grad(potential))(jnp.asarray(starts))
    args = dict(key=jax.random.key(0), starts=starts, inverse_mass=np.eye(2))
    w_own, _ = run_chains(prog, **args)
    w_given, _ = run_chains(prog, energy=(np.asarray(pe), np.asarray(grad)), **args)
    w_wrong, _ = run_chains(prog, energy=(np.asarray(pe), np.zeros((2, 2))), **args)
    np.testing.assert_allclose(np.asarray(w_given), np.asarray(w_own), rtol=1e-12)
    assert not np.allclose(np.asarray(w_wrong), np.asarray(w_own))
