"""The pool competence model: K = 1 is the simulate SDE, noise scaling against the
Ornstein–Uhlenbeck closed form, sigma calibration, selection mechanics, cost, bad input.

Few compiled programs: one C1 configuration (K = 1) serves the SDE comparison, the variance
statistics and the sigma fit; one single-role OU model serves K = 1 and K = 4.
"""

import jax
import numpy as np
import pytest

import simulate as sim
from simulate import compute_cost, fit_pool_sigma, pool_paths, pool_variance
from simulate.spec import NetworkSpec, SpecError

C1 = {"t1": 20.0, "dt": 0.02, "n_seeds": 100, "n_points": 21}
Z = 4.5


def _c1(sigma=0.2, delay_stages=0):
    return sim.make_model("C1", "competence", sigma=sigma, delay_stages=delay_stages, tau=2.0)


def test_single_member_pool_is_the_simulate_sde_path():
    model = _c1()
    key = jax.random.key(11)
    p = pool_paths(model, 1, key=key, **C1)
    keys = jax.random.split(key, C1["n_seeds"])
    sols = jax.vmap(
        lambda k: sim.solve(
            model, t1=20.0, options=sim.SolveOptions(n_points=21), method="sde", dt=0.02, key=k
        )
    )(keys)
    assert p.members.shape == (100, 21, 3, 1) and p.members.dtype == np.float64
    np.testing.assert_allclose(np.asarray(p.t), np.asarray(sols.t[0]), atol=1e-12)
    np.testing.assert_allclose(np.asarray(p.roles), np.asarray(sols.states), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(p.e2e), np.prod(np.asarray(sols.states), -1), atol=1e-10)
    assert np.asarray(sols.states).std(axis=0).max() > 0.02  # the noise is really there


def _ou_model(rho, delta, sigma):
    spec = NetworkSpec(nodes=("A",), edges=(), inputs=("A",))
    a_star = rho / (rho + delta)
    params = {"rho": rho, "delta": delta, "b": 1.0, "A0": a_star}
    return sim.make_model(spec, "competence", params, sigma=sigma), a_star


def test_member_mean_variance_scales_as_ornstein_uhlenbeck():
    """Single role, regulation-free drift rho (1 - A) - delta A: a linear OU process
    around A* with rate lam = rho + delta and noise g = sigma_eff sqrt(A*(1 - A*)). Its
    Euler–Maruyama stationary variance is var1 = g^2 dt / (1 - (1 - lam dt)^2) per member;
    the mean of K independent members has 1/K of a member's. split=False: members have
    var1, the role var1/K; split=True (sigma_eff = sigma sqrt(K)): members K var1, the
    role var1."""
    rho, delta, sigma, dt, K = 1.0, 1.0, 0.1, 0.01, 4
    model, a_star = _ou_model(rho, delta, sigma)
    lam = rho + delta
    var1 = sigma**2 * a_star * (1 - a_star) * dt / (1 - (1 - lam * dt) ** 2)
    kw = {"t1": 20.0, "dt": dt, "n_seeds": 400, "n_points": 41}
    # effective sample size: seeds x save times after 3 relaxation times, discounted for the
    # lag-0.5 autocorrelation r = exp(-lam 0.5) of an OU process (members: K times more)
    r = np.exp(-lam * 0.5)
    n_eff = 400 * (41 - 7) * (1 - r) / (1 + r)
    tol, tol_members = Z * np.sqrt(2 / n_eff), Z * np.sqrt(2 / (K * n_eff))
    for split, role_var, member_var in ((False, var1 / K, var1), (True, var1, K * var1)):
        p = pool_paths(model, K, split=split, key=jax.random.key(3 + split), **kw)
        members = np.asarray(p.members)[:, 7:, 0, :]  # (seeds, T, K)
        roles = np.asarray(p.roles)[:, 7:, 0]
        assert abs(roles.mean() - a_star) < 0.01
        assert roles.var(axis=0, ddof=1).mean() == pytest.approx(role_var, rel=tol)
        assert members.var(axis=0, ddof=1).mean() == pytest.approx(member_var, rel=tol_members)


def test_fit_pool_sigma_recovers_a_known_sigma():
    true_sigma, window = 0.15, (10.0, 20.0)
    target = pool_variance(_c1(true_sigma), 1, key=jax.random.key(5), **C1)
    t = np.asarray(target.t)
    sel = (t >= window[0]) & (t <= window[1])
    target_var = float(np.asarray(target.role_var)[sel].mean())
    # calibrate with other random numbers, as against real runs
    fitted = fit_pool_sigma(
        _c1(0.0), target_var, window=window, bounds=(0.01, 1.0), rtol=0.01,
        key=jax.random.key(6), **C1,
    )  # fmt: skip
    assert fitted == pytest.approx(true_sigma, rel=0.10)
    # a single role and the proxy are objectives too; an unreachable target is an error
    assert fit_pool_sigma(
        _c1(0.0), float(np.asarray(target.e2e_var)[sel].mean()), window=window, role="e2e",
        bounds=(0.01, 1.0), rtol=0.02, key=jax.random.key(6), **C1,
    ) == pytest.approx(true_sigma, rel=0.15)  # fmt: skip
    with pytest.raises(SpecError, match="outside"):
        fit_pool_sigma(
            _c1(0.0), 10.0, window=window, bounds=(0.01, 1.0), key=jax.random.key(6), **C1
        )
    with pytest.raises(SpecError, match="unknown role"):
        fit_pool_sigma(_c1(0.0), 0.01, window=window, role="Q", key=jax.random.key(6), **C1)


def test_collapse_fractions_and_stats_shapes():
    st = pool_variance(_c1(), 1, collapse_threshold=0.1, key=jax.random.key(5), **C1)
    assert np.asarray(st.role_var).shape == (21, 3) and np.asarray(st.e2e_var).shape == (21,)
    assert np.all(np.asarray(st.collapsed) == 0.0)  # C1 with the input on learns
    high = pool_variance(_c1(), 1, collapse_threshold=1.01, key=jax.random.key(5), **C1)
    assert np.all(np.asarray(high.collapsed) == 1.0) and float(high.e2e_collapsed) == 1.0


def test_pbt_step_makes_the_weakest_a_copy_of_the_strongest():
    model = _c1(0.4, delay_stages=1)
    kw = {"t1": 10.0, "dt": 0.02, "n_seeds": 8, "n_points": 11, "K": 4}
    p = pool_paths(
        model, key=jax.random.key(1), sampling="fitness", temperature=0.05,
        exploit_every=1.0, exploit_frac=0.25, copy_rate=0.5, **kw,
    )  # fmt: skip
    m = np.sort(np.asarray(p.members), axis=-1)  # (seeds, T, N, K)
    assert m.min() >= 0 and m.max() <= 1
    # saved right after each PBT step: the top two members of every role coincide
    moving = m[:, 1:, :, -1] < 1.0
    np.testing.assert_array_equal(m[:, 1:, :, -1][moving], m[:, 1:, :, -2][moving])
    assert np.any(m[:, 1:, :, -1] - m[:, 1:, :, 0] > 1e-3)  # members do differ
    np.testing.assert_allclose(np.asarray(p.roles), np.asarray(p.members).mean(-1))


def test_compute_cost():
    assert compute_cost(1, False) == compute_cost(1, True)
    assert compute_cost(4, False) == {
        "forward_backward": 4.0, "adapter_memory": 4.0, "batch_per_member": 1.0,
        "noise_sd_factor": 1.0,
    }  # fmt: skip
    assert compute_cost(4, True) == {
        "forward_backward": 1.0, "adapter_memory": 4.0, "batch_per_member": 0.25,
        "noise_sd_factor": 2.0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("K", "kwargs", "match"),
    [
        (0, {}, "K must be an integer >= 1"),
        (2.0, {}, "K must be an integer"),
        (True, {}, "K must be an integer"),
        (2, {"sigma": -0.1}, "sigma must be finite and >= 0"),
        (2, {"sigma": float("nan")}, "sigma must be finite"),
        (2, {"dt": 0.0}, "dt must be"),
        (2, {"t1": -1.0}, "t1 must be"),
        (2, {"n_seeds": 0}, "n_seeds"),
        (2, {"sampling": "best"}, "sampling"),
        (2, {"temperature": 0.0}, "temperature"),
        (2, {"exploit_frac": 0.6}, "exploit_frac"),
        (2, {"exploit_every": 0.001}, "exploit_every"),
        (2, {"copy_rate": -1.0}, "copy_rate"),
        (2, {"n_points": 7}, "n_points - 1 must divide"),
    ],
)
def test_bad_inputs_raise(K, kwargs, match):
    args = {"t1": 10.0, "dt": 0.01, "n_seeds": 2, "n_points": 11, **kwargs}
    with pytest.raises(SpecError, match=match):
        pool_paths(_c1(), K, key=jax.random.key(0), **args)


def test_bad_model_and_cost_inputs_raise():
    with pytest.raises(SpecError, match="bounded competences"):
        pool_paths(sim.make_model("C1", "alon"), 2, key=jax.random.key(0))
    with pytest.raises(SpecError, match="K must be"):
        compute_cost(0, True)
    with pytest.raises(SpecError, match="target_var"):
        fit_pool_sigma(_c1(), -1.0, window=(0, 1), key=jax.random.key(0))
