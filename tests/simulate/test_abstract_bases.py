"""Abstract/final classes: the abstract bases cannot be made, the concrete ones are final."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import simulate as sim
from simulate._hill import with_integer_hill


def test_abstract_bases_cannot_be_instantiated():
    net = sim.Network.from_spec(sim.ffl_spec("C1", "AND"))
    fields = {f: getattr(net, f) for f in ("names", "wiring", "inputs", "feedback")}
    arrays = {f: getattr(net, f) for f in ("sign", "is_or", "K", "n")}
    with pytest.raises(TypeError, match="abstract"):
        sim.AbstractNetwork(**fields, **arrays)  # pyright: ignore[reportAbstractUsage, reportCallIssue]
    with pytest.raises(TypeError, match="abstract"):
        sim.Kinetics()  # pyright: ignore[reportAbstractUsage]

    class NoRates(sim.Kinetics):  # fields, but no rate law
        A0: jnp.ndarray
        x0: jnp.ndarray

    with pytest.raises(TypeError, match="rates"):
        NoRates(jnp.zeros(3), jnp.asarray(1.0))  # pyright: ignore[reportAbstractUsage]


def test_network_variants_share_the_abstract_base():
    """``Network`` is what users construct; the fast variants are networks beside it (not
    subclasses of it), with the same structure and the same regulation."""
    m = sim.make_model("I1-OR", "alon", {"n": 2.0})
    fast = with_integer_hill(m, 2).network
    log = sim.with_log_hill(m, fixed_structure=True).network
    for net in (m.network, fast, log):
        assert isinstance(net, sim.AbstractNetwork)
        assert net.edge_keys == m.network.edge_keys and net.names == m.network.names
    assert isinstance(m.network, sim.Network)
    assert not isinstance(fast, sim.Network) and not isinstance(log, sim.Network)
    assert sim.as_network(log) is log
    A = jnp.asarray([0.7, 0.4, 0.2])
    ref = np.asarray(m.network.regulation(A))
    for net in (fast, log):
        np.testing.assert_allclose(np.asarray(net.regulation(A)), ref, rtol=1e-12)
