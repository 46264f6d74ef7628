"""NUTS's sampling coordinates: an exact bijection with the right Jacobian."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC, NUTS
from scipy import stats

import calibrate as cal
from calibrate._fit import _Flat
from calibrate._reparam import (
    CORNER_LEVEL,
    EDGE_LEVEL,
    SamplingCoords,
    draws_to_z,
    start_energies,
)
from tests.calibrate.test_fit import TRUTH

LR = np.array([0.01, 0.02, 0.04])


def _model(motif: str) -> cal.CurveModel:
    data = cal.synthetic_curves(
        "C1",
        TRUTH,
        key=jax.random.key(0),
        steps=np.arange(0, 200, 20),
        runs=3,
        run_params=[{"rho[X]": float(v)} for v in LR],
        hyper={"lr": LR},
    )
    cfg = cal.FitConfig(
        solver="quad", dt=5.0, hierarchy=cal.Hierarchy(links=(cal.Link("rho", "lr", ("X",)),))
    )
    return cal.build_model(data, motif, cfg)


def _numeric_jacobian(f, x, h=1e-6):
    x = np.asarray(x, float)
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("motif", ["C1", "I1-OR", "C2", "C4-OR"])
def test_round_trip_and_log_jacobian(motif):
    cm = _model(motif)
    sc = SamplingCoords.build(cm)
    size = _Flat(cm).size
    for k in range(3):
        z = 1.3 * jax.random.normal(jax.random.key(k), (size,))
        w = sc.from_z(z)
        z2, logdet = sc.to_z(w)
        np.testing.assert_allclose(np.asarray(z2), np.asarray(z), atol=1e-10)
        np.testing.assert_allclose(np.asarray(sc.from_z(z2)), np.asarray(w), atol=1e-10)
        # oracle: central differences of the whole map, independent of the 2x2 blocks
        jac = _numeric_jacobian(lambda v: sc.to_z(jnp.asarray(v))[0], w)
        np.testing.assert_allclose(float(logdet), np.linalg.slogdet(jac)[1], atol=1e-5)


def test_which_coordinates_change():
    c1 = SamplingCoords.build(_model("C1"))
    names = c1.cm.layout.names
    assert [(names[i], names[j]) for i, j in c1.corners] == [("b[Y]", "n[X->Y]")]
    assert [names[i] for i, _, _ in c1.shears] == ["rho[Y]", "rho[Z]"]
    assert [names[c1.shears[k][1]] for k in c1.basal] == ["b[Z]"]  # b[Y] is in the corner
    assert [(names[i], names[j]) for i, j in c1.edges] == [
        ("K[X->Z]", "n[X->Z]"),
        ("K[Y->Z]", "n[Y->Z]"),
    ]
    # X -| Y: Y's only edge represses, so no basal corner (its occupancy is ~1 when X is low)
    c2 = SamplingCoords.build(_model("C2"))
    assert c2.corners == () and len(c2.edges) == 3 and len(c2.basal) == 2
    off = SamplingCoords.build(_model("C1"), enabled=False)
    assert off.identity
    w = jnp.linspace(-1.0, 1.0, _Flat(off.cm).size)
    z, logdet = off.to_z(w)
    assert np.array_equal(np.asarray(z), np.asarray(w)) and float(logdet) == 0.0


def test_closed_forms_of_the_sampled_coordinates():
    """The sampled corner is (logit(2T - b), logit(b / T)) with T = b + (1 - b) c^n/(1 + c^n),
    an edge's sampled threshold is n log(K / a), the sampled rate of Y is
    log rho + log(b + (1 - b) / (1 + K^n)) (its Hill occupancy at level 1), and Z's
    sampled basal term is logit b - log G with G = h_X(1) h_Y(1) (C1's AND gate)."""
    cm = _model("C1")
    sc = SamplingCoords.build(cm)
    lay = cm.layout
    z = 0.8 * jax.random.normal(jax.random.key(5), (_Flat(cm).size,))
    w = np.asarray(sc.from_z(z))
    theta = np.asarray(lay.to_natural(lay.loc + lay.scale * np.asarray(z)[: lay.size]))
    p = dict(zip(lay.names, theta, strict=True))
    b, n, K = p["b[Y]"], p["n[X->Y]"], p["K[X->Y]"]
    c = CORNER_LEVEL
    T = b + (1 - b) * c**n / (1 + c**n)
    logit = lambda x: np.log(x / (1 - x))  # noqa: E731
    i_b, i_n = lay.index("b[Y]"), lay.index("n[X->Y]")
    np.testing.assert_allclose(w[[i_b, i_n]], [logit(2 * T - b), logit(b / T)], rtol=1e-10)
    i_k = lay.index("K[Y->Z]")
    np.testing.assert_allclose(w[i_k], p["n[Y->Z]"] * np.log(p["K[Y->Z]"] / EDGE_LEVEL), rtol=1e-10)
    i_r = lay.index("rho[Y]")
    learned = np.log(p["rho[Y]"]) + np.log(b + (1 - b) / (1 + K**n))
    np.testing.assert_allclose(lay.loc[i_r] + lay.scale[i_r] * w[i_r], learned, rtol=1e-10)
    G = 1 / (1 + p["K[X->Z]"] ** p["n[X->Z]"]) / (1 + p["K[Y->Z]"] ** p["n[Y->Z]"])
    i_bz = lay.index("b[Z]")
    np.testing.assert_allclose(
        lay.loc[i_bz] + lay.scale[i_bz] * w[i_bz], logit(p["b[Z]"]) - np.log(G), rtol=1e-10
    )
    i_rz = lay.index("rho[Z]")
    learned_z = np.log(p["rho[Z]"]) + np.log(p["b[Z]"] + (1 - p["b[Z]"]) * G)
    np.testing.assert_allclose(lay.loc[i_rz] + lay.scale[i_rz] * w[i_rz], learned_z, rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("motif", ["C1", "I1-OR"])
def test_start_energies_are_the_potential_and_its_gradient(motif):
    """The chain rule through to_z from the model's own objective gives NUTS's potential
    and its gradient (oracle: autodiff of the potential itself)."""
    from calibrate._density import neg_log_joint_and_grad

    cm = _model(motif)
    sc = SamplingCoords.build(cm)
    w = 0.5 * np.asarray(jax.random.normal(jax.random.key(2), (3, _Flat(cm).size)))
    pe, grad = start_energies(sc, w, lambda z: neg_log_joint_and_grad(cm, jnp.asarray(z)))
    ref_pe, ref_grad = jax.vmap(jax.value_and_grad(sc.potential))(jnp.asarray(w))
    np.testing.assert_allclose(pe, np.asarray(ref_pe), rtol=1e-10)
    np.testing.assert_allclose(grad, np.asarray(ref_grad), rtol=1e-7, atol=1e-8)


def test_nuts_in_sampling_coordinates_draws_the_prior():
    """With the likelihood left out, NUTS on -log N(z(w)) - log|det dz/dw| must give standard
    normal z: a wrong Jacobian would bend the corner's and the rates' marginals."""
    cm = _model("C1")
    sc = SamplingCoords.build(cm)

    def potential(w):
        z, logdet = sc.to_z(w)
        return 0.5 * jnp.sum(z**2) - logdet

    size = _Flat(cm).size
    mcmc = MCMC(
        NUTS(potential_fn=potential, dense_mass=True),
        num_warmup=500,
        num_samples=3000,
        progress_bar=False,
    )
    mcmc.run(jax.random.key(0), init_params=sc.from_z(jnp.zeros(size)))
    z = np.asarray(draws_to_z(sc, mcmc.get_samples()))
    lay = cm.layout
    for name in ("b[Y]", "n[X->Y]", "rho[Y]", "rho[Z]", "b[Z]", "K[Y->Z]", "n[Y->Z]"):
        x = z[:, lay.index(name)][::3]  # thinned: roughly independent draws for the test
        assert abs(x.mean()) < 0.15 and abs(x.std() - 1.0) < 0.12, name
        assert stats.kstest(x, "norm").pvalue > 1e-3, name


@pytest.mark.slow
def test_fit_reparam_matches_direct_sampling():
    """The same data fitted in z and in the sampling coordinates: posterior means agree
    within Monte Carlo error (the sampler changes, the posterior does not)."""
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(1), steps=np.arange(0, 300, 15))
    out = {}
    for reparam in (True, False):
        cfg = cal.FitConfig(
            chains=2,
            samples=300,
            warmup=300,
            solver="quad",
            dt=5.0,
            map_starts=2,
            reparam=reparam,
            chain_method="vectorized",
        )
        post = cal.fit(data, "C1", cfg, key=jax.random.key(3))
        out[reparam] = post.summary()
    for name in ("rho[X]", "rho[Y]", "rho[Z]", "K[X->Y]", "b[Z]"):
        a, b = out[True][name], out[False][name]
        se = np.hypot(a["sd"] / np.sqrt(a["ess_bulk"]), b["sd"] / np.sqrt(b["ess_bulk"]))
        assert abs(a["mean"] - b["mean"]) < 5 * se + 1e-12, name
