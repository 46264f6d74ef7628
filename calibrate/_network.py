"""What is fitted: the network a user names (simulate's one resolver, plus agent names) and
the layout of its free parameters with their priors."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import simulate
from simulate.spec import NetworkSpec

from ._config import EDGE_PARAMS, NODE_PARAMS, PIPELINE_PARAMS, ConfigError, FitConfig

__all__ = ["Layout", "make_layout", "resolve_network"]


def _rename(spec: NetworkSpec, nodes: tuple[str, ...]) -> NetworkSpec:
    """``spec`` with its nodes renamed, in order, to ``nodes``."""
    if len(nodes) != len(spec.nodes):
        raise ConfigError(
            f"network {spec.name!r} has {len(spec.nodes)} nodes {list(spec.nodes)}; "
            f"got {len(nodes)} agent names {list(nodes)}"
        )
    new = dict(zip(spec.nodes, nodes, strict=True))
    d = spec.to_dict()
    d["nodes"] = list(nodes)
    for e in d["edges"]:
        e["source"], e["target"] = new[e["source"]], new[e["target"]]
    d["gates"] = {new[k]: v for k, v in d["gates"].items()}
    d["inputs"] = [new[k] for k in d["inputs"]] or None
    return NetworkSpec.from_dict(d)


def resolve_network(
    network: simulate.Network | NetworkSpec | str,
    gate: str = "AND",
    nodes: tuple[str, ...] | None = None,
) -> tuple[simulate.Network, str]:
    """A network and its label from a preset (``C1``, ``I1-OR``), a spec, a path or a Network.

    ``nodes`` renames the network's nodes (a preset's X, Y, Z) to the agents' names, in order.

    Raises:
        ConfigError: An unknown preset or gate, an unreadable or invalid spec file, or as many
            agent names as the network has nodes not given.
    """
    if isinstance(network, simulate.AbstractNetwork):
        return network, "network"
    try:
        spec = simulate.resolve_spec(network, gate, what="network")
        if nodes is not None:
            spec = _rename(spec, tuple(nodes))
        return simulate.Network.from_spec(spec), spec.name
    except simulate.SpecError as err:
        raise ConfigError(str(err)) from None


class Layout(eqx.Module):
    """The free parameters of a network, in vector order.

    Attributes:
        names: Natural names, e.g. ``rho[X]``, ``K[X->Y]``.
        bases: Base of each (``rho``, ``b``, ``delta``, ``A0``, ``K``, ``n``, the pipeline
            gates' ``Kp``, ``m``, ``eta``, ``lag``, ``flip``, ``flip_lag``).
        targets: Node or edge of each (``""`` for ``eta``, ``lag``, ``flip_lag``).
        logit: True where the transform is sigmoid (b, A0), else exp.
        loc: Prior median on the transformed scale.
        scale: Prior sd on the transformed scale.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    bases: tuple[str, ...] = eqx.field(static=True)
    targets: tuple[str, ...] = eqx.field(static=True)
    logit: tuple[bool, ...] = eqx.field(static=True)
    loc: np.ndarray
    scale: np.ndarray

    @property
    def size(self) -> int:
        """Number of free parameters D."""
        return len(self.names)

    def to_natural(self, u: jax.Array) -> jax.Array:
        """Transformed-scale values (..., D) to natural values."""
        return jnp.where(jnp.asarray(self.logit), jax.nn.sigmoid(u), jnp.exp(u))

    def to_unconstrained(self, theta: np.ndarray) -> np.ndarray:
        """Natural values (..., D) to the transformed scale."""
        theta = np.asarray(theta, float)
        lg = np.asarray(self.logit)
        return np.where(lg, np.log(theta) - np.log1p(-np.clip(theta, 0, 1 - 1e-12)), np.log(theta))

    def index(self, name: str) -> int:
        """Position of ``name``."""
        if name not in self.names:
            raise ConfigError(f"unknown parameter {name!r}; free parameters: {list(self.names)}")
        return self.names.index(name)


def make_layout(network: simulate.Network, config: FitConfig, horizon: float) -> Layout:
    """Free parameters of ``network`` with their priors (b only for regulated nodes; the
    pipeline gates' ``Kp``, ``m`` after the edges; then ``eta`` under the map dynamics and
    ``lag`` with a policy lag, ``flip_lag`` with pulses; then, with pulses, each node's
    ``flip``; last, with the greedy readout, each node's ``mid`` and ``width``).

    Raises:
        ConfigError: A pipeline edge names a node that is not in ``network``, or a prior
            override names no free parameter.
    """
    names, bases, targets = [], [], []
    has_parents = network.has_parents
    for base in NODE_PARAMS:
        for i, node in enumerate(network.names):
            if base == "b" and not has_parents[i]:
                continue
            names.append(f"{base}[{node}]")
            bases.append(base)
            targets.append(node)
    sign = np.asarray(network.sign)
    edges = [e for e in network.edge_keys if sign[network.edge_index(e)] != 0]
    for base in EDGE_PARAMS if config.regulators == "model" else ():  # logged: K, n known
        for e in edges:
            names.append(f"{base}[{e}]")
            bases.append(base)
            targets.append(e)
    try:
        pipes = [f"{s}->{d}" for s, d in simulate.parse_pipeline(config.pipeline, network.names)]
    except simulate.SpecError as err:
        raise ConfigError(f"pipeline: {err}") from None
    for base in PIPELINE_PARAMS:
        for e in pipes:
            names.append(f"{base}[{e}]")
            bases.append(base)
            targets.append(e)
    globals_ = ("eta",) if config.dynamics == "map" else ()
    globals_ += ("lag",) if config.lag != "none" else ()
    globals_ += ("flip_lag",) if config.pulses else ()
    for g in globals_:  # one value for the whole network: named by its base, no target
        names.append(g)
        bases.append(g)
        targets.append("")
    for node in network.names if config.pulses else ():  # a flip pulse's rate, per node
        names.append(f"flip[{node}]")
        bases.append("flip")
        targets.append(node)
    for base in ("mid", "width") if config.readout == "greedy" else ():  # the greedy readout
        for node in network.names:
            names.append(f"{base}[{node}]")
            bases.append(base)
            targets.append(node)
    for key in config.priors.overrides:
        if key not in names:
            raise ConfigError(
                f"priors.overrides: {key!r} is not a free parameter; free parameters: {names}"
            )
    logit = tuple(b in ("b", "A0", "mid") for b in bases)
    loc, scale = [], []
    for name, base, lg in zip(names, bases, logit, strict=True):
        med, sd = config.priors.median_sd(base, name, horizon=horizon)
        loc.append(math.log(med / (1 - med)) if lg else math.log(med))
        scale.append(sd)
    return Layout(tuple(names), tuple(bases), tuple(targets), logit, np.array(loc), np.array(scale))
