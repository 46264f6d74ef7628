"""Parameters by name: set/get, shorthands, domain errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim


def test_set_and_get_by_name():
    m = sim.make_model("C1", "competence", {"rho": 0.3, "rho[Y]": 0.7, "K[X->Z]": 0.25})
    assert float(sim.get_param(m, "rho[X]")) == pytest.approx(0.3)
    assert float(sim.get_param(m, "rho[Y]")) == pytest.approx(0.7)
    assert float(sim.get_param(m, "K[X->Z]")) == pytest.approx(0.25)
    assert float(sim.get_param(m, "K[X->Y]")) == pytest.approx(1.0)
    assert "K[Y->Z]" in sim.param_names(m) and "delta[Z]" in sim.param_names(m)


def test_alon_shorthands_are_the_textbook_parameters():
    m = sim.make_model("C1", "alon", {"beta": 5, "gamma": 3, "kappa": 4, "n_yz": 1.5})
    assert float(sim.get_param(m, "beta[Y]")) == 5 and float(sim.get_param(m, "beta[Z]")) == 1
    assert float(sim.get_param(m, "gamma[Z]")) == 3 and float(sim.get_param(m, "gamma[Y]")) == 1
    assert float(sim.get_param(m, "K[X->Y]")) == pytest.approx(0.25)
    assert float(sim.get_param(m, "n[Y->Z]")) == 1.5


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("rho[Q]", 1.0, "unknown node 'Q'"),
        ("K[Y->X]", 1.0, "no edge Y->X"),
        ("K[X->Y]", -1.0, r"outside its domain"),
        ("b[X]", 1.5, r"outside its domain \[0, 1\]"),
        ("A0", 2.0, r"outside its domain"),
        ("rho", float("nan"), "must be finite"),
        ("beta", 1.0, "unknown parameter beta"),
        ("tau", 0.0, "outside its domain"),
        ("rho[X", 1.0, "cannot read parameter name"),
    ],
)
def test_bad_parameters_raise_clear_errors(name, value, match):
    m = sim.make_model("C1", "competence")
    with pytest.raises(sim.SpecError, match=match):
        sim.set_param(m, name, value)


def test_set_param_under_vmap_and_bad_options():
    m = sim.make_model("C1", "competence")
    ks = jnp.linspace(0.1, 1.0, 4)
    batch = jax.vmap(lambda k: sim.set_param(m, "K[Y->Z]", k))(ks)
    np.testing.assert_allclose(batch.network.K[:, 2, 1], ks)
    with pytest.raises(sim.SpecError, match="delay_stages"):
        sim.make_model("C1", delay_stages=-1)
    with pytest.raises(sim.SpecError, match="kinetics"):
        sim.make_model("C1", "michaelis")
    with pytest.raises(sim.SpecError, match="solver"):
        sim.solve(m, options=sim.SolveOptions(solver="rk4"))
    with pytest.raises(sim.SpecError, match="t1 must be > t0"):
        sim.solve(m, t1=0.0)
    with pytest.raises(sim.SpecError, match="schedule"):
        sim.solve(m, "on@5,off@1")


def test_param_setter_matches_set_params_in_order():
    m = sim.make_model("C1", "competence", {"rho": 0.3})
    names = ["rho", "rho[Y]", "K[X->Z]", "n[Y->Z]", "b[Z]", "delta[X]", "K", "K[X->Y]"]
    vals = np.array([0.2, 0.7, 0.25, 3.0, 0.05, 0.01, 0.6, 0.45])
    ref = sim.set_params(m, dict(zip(names, vals, strict=True)))
    got = sim.param_setter(m, names)(m, jnp.asarray(vals))
    for name in sim.param_names(m):
        assert float(sim.get_param(got, name)) == pytest.approx(float(sim.get_param(ref, name)))
    # traced values, under vmap: one model per row
    rows = jnp.stack([jnp.asarray(vals), jnp.asarray(vals) * 0.5])
    batch = jax.vmap(lambda v: sim.param_setter(m, names)(m, v).network.K)(rows)
    half = sim.set_params(m, dict(zip(names, vals * 0.5, strict=True)))
    np.testing.assert_allclose(batch[0], got.network.K)
    np.testing.assert_allclose(batch[1], half.network.K)


def test_param_setter_rejects_unknown_names_and_kappa():
    m = sim.make_model("C1", "alon")
    with pytest.raises(sim.SpecError, match="kappa"):
        sim.param_setter(m, ["kappa"])
    with pytest.raises(sim.SpecError, match="unknown parameter"):
        sim.param_setter(m, ["rho[X]"])
